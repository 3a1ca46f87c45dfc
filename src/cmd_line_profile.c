/* cmd_line_profile.c - `scope-profiler line-profile FILE`: the per-line tables. */
#include <getopt.h>
#include <stdio.h>

#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_render.h"

#define CMD "line-profile"

static void line_profile_usage(FILE *out)
{
	fprintf(out,
		"usage: scope-profiler line-profile [OPTIONS] FILE\n"
		"\n"
		"Prints the per-line timings recorded with 'scope-profiler run\n"
		"--line-profile': one table per profiled function and rank, with each\n"
		"line's hits, time, time per hit, share of the function's time and\n"
		"source, from the first executed line to the last.\n"
		"\n"
		"Options:\n"
		"  -h, --help        show this help and exit\n");
}

/* Returns 0, 1 when the file cannot be read or has no line timings, or
 * SP_EXIT_USAGE. */
int cmd_line_profile(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			line_profile_usage(stdout);
			return 0;
		default:
			sp_cmd_error(CMD, "unknown option '%s'; see 'scope-profiler line-profile --help'",
				     argv[optind - 1]);
			return SP_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		sp_cmd_error(CMD, optind >= argc ? "no file given; usage: scope-profiler line-profile FILE"
						 : "one file at a time; usage: scope-profiler line-profile FILE");
		return SP_EXIT_USAGE;
	}
	const char *path = argv[optind];
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	if (sp_h5_read(path, SP_READ_SUMMARY, &p, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		return 1;
	}
	enum sp_err rc = sp_render_lines(stdout, p, path, &err);
	sp_profile_free(p);
	if (rc == SP_EIO)
		return 1;              /* stdout failed: main says so, once */
	if (rc != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		return 1;
	}
	return 0;
}

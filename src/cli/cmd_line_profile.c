/* cmd_line_profile.c - `scope-profiler line-profile FILE`: the per-line tables. */
#include <stdio.h>

#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_render.h"

#define CMD "line-profile"

static const struct sp_cmd_help help = {
	.name = CMD,
	.usage = "scope-profiler line-profile [OPTIONS] FILE",
	.about =
		"Prints the per-line timings recorded with 'scope-profiler run\n"
		"--line-profile': one table per profiled function and rank, with each\n"
		"line's hits, time, time per hit, share of the function's time and\n"
		"source, from the first executed line to the last.\n",
};

/* Returns 0, 1 when the file cannot be read or has no line timings, or
 * SP_EXIT_USAGE. */
int cmd_line_profile(int argc, char **argv)
{
	int first = sp_opt_parse(&help, NULL, 0, argc, argv, 0, NULL);
	if (first < 0)
		return sp_opt_status(first);
	if (first != argc - 1) {
		sp_cmd_error(CMD, first >= argc ? "no file given; usage: scope-profiler line-profile FILE"
						 : "one file at a time; usage: scope-profiler line-profile FILE");
		return SP_EXIT_USAGE;
	}
	const char *path = argv[first];
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	if (sp_h5_read(path, SP_READ_SUMMARY, &p, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		return 1;
	}
	sp_cmd_partial(CMD, path, p);
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

/* cmd_summary.c - `scope-profiler summary FILE`: the call tree and the region
 * table of a profile, from its summary attributes alone when it has them. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_render.h"

#define CMD "summary"

static void summary_usage(FILE *out)
{
	fprintf(out,
		"usage: scope-profiler summary [OPTIONS] FILE\n"
		"\n"
		"Prints the call tree (nesting reconstructed by containment, with (own)\n"
		"rows for a region's self time and repeated calls collapsed as 'name (Nx)')\n"
		"and the region table (calls, total, mean, min, max, std; with several\n"
		"ranks, per-rank min/max and imbalance). Reads only the per-region\n"
		"summaries when the file has them, so its cost does not grow with events.\n"
		"\n"
		"Options:\n"
		"  --flat            print only the region table\n"
		"  --tree            print only the call tree\n"
		"  -h, --help        show this help and exit\n");
}

int cmd_summary(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"flat", no_argument, NULL, 'f'},
		{"tree", no_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int parts = SP_RENDER_ALL, c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			parts = SP_RENDER_FLAT;
			break;
		case 't':
			parts = SP_RENDER_TREE;
			break;
		case 'h':
			summary_usage(stdout);
			return 0;
		default:
			sp_cmd_error(CMD, "unknown option '%s'; see 'scope-profiler summary --help'",
				     argv[optind - 1]);
			return SP_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		sp_cmd_error(CMD, optind >= argc ? "no file given; usage: scope-profiler summary FILE"
						 : "one file at a time; usage: scope-profiler summary FILE");
		return SP_EXIT_USAGE;
	}
	const char *path = argv[optind];
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	if (sp_h5_read(path, SP_READ_SUMMARY, &p, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		return 1;
	}
	enum sp_err rc = sp_render_summary(stdout, p, path, parts, &err);
	sp_profile_free(p);
	if (rc != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		return 1;
	}
	return 0;
}

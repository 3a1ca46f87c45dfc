/* cmd_summary.c - `scope-profiler summary FILE`: the call tree and the region
 * table of a profile, from its summary attributes alone when it has them. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_render.h"
#include "sp_select.h"

#define CMD "summary"

enum { OPT_FLAT = 256, OPT_TREE, OPT_SORT, OPT_JSON };

static const struct sp_cmd_option summary_options[] = {
	{{"flat", no_argument, NULL, OPT_FLAT}, NULL, "print only the region table"},
	{{"tree", no_argument, NULL, OPT_TREE}, NULL, "print only the call tree"},
	{{"sort", required_argument, NULL, OPT_SORT}, "KEY",
	 "table order: total (default), calls, mean, max or name"},
	{{"include", required_argument, NULL, SP_SELECT_INCLUDE}, "RE",
	 "only regions whose name matches RE (repeatable)"},
	{{"exclude", required_argument, NULL, SP_SELECT_EXCLUDE}, "RE",
	 "not regions whose name matches RE (repeatable)"},
	{{"ranks", required_argument, NULL, SP_SELECT_RANKS}, "LIST",
	 "only these ranks, e.g. 0-3,5"},
	{{"json", no_argument, NULL, OPT_JSON}, NULL,
	 "print JSON (file, ranks, one object per region) instead"},
	{{"help", no_argument, NULL, 'h'}, NULL, "show this help and exit"},
};

#define NOPTS (sizeof summary_options / sizeof summary_options[0])

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
		"With several ranks the header also says which ranks ran on which host\n"
		"and, from the metadata's omp_num_threads, how many cores they used.\n"
		"\n"
		"Options:\n");
	sp_cmd_print_options(out, summary_options, NOPTS);
	fprintf(out,
		"\n"
		"Regular expressions are POSIX extended ones, searched anywhere in the\n"
		"name (anchor them with ^ and $); --exclude wins over --include. A region\n"
		"left out of the call tree hands its children to its nearest shown\n"
		"ancestor, and its own time shows in that ancestor's (own) row. --sort\n"
		"orders the region table (mean: per call; max: the longest call); the\n"
		"tree keeps the order in which calls started. --json ignores --flat and\n"
		"--tree; its times are seconds.\n");
}

static int parse_sort(const char *key, enum sp_render_sort *out)
{
	static const char *const names[] = {
		[SP_SORT_TOTAL] = "total", [SP_SORT_CALLS] = "calls", [SP_SORT_MEAN] = "mean",
		[SP_SORT_MAX] = "max", [SP_SORT_NAME] = "name",
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(key, names[i]) == 0) {
			*out = (enum sp_render_sort)i;
			return 0;
		}
	return -1;
}

/* Returns 0, 1 when the file cannot be read (or no rank of it is selected),
 * or SP_EXIT_USAGE. */
int cmd_summary(int argc, char **argv)
{
	struct option longopts[NOPTS + 1];
	sp_cmd_longopts(summary_options, NOPTS, longopts);

	struct sp_select sel = {0};
	struct sp_render_opts opts = { .parts = SP_RENDER_ALL, .select = &sel };
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	int status = SP_EXIT_USAGE, c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_FLAT:
			opts.parts = SP_RENDER_FLAT;
			break;
		case OPT_TREE:
			opts.parts = SP_RENDER_TREE;
			break;
		case OPT_SORT:
			if (parse_sort(optarg, &opts.sort) != 0) {
				sp_cmd_error(CMD, "--sort takes total, calls, mean, max or name, not '%s'",
					     optarg);
				goto out;
			}
			break;
		case SP_SELECT_INCLUDE:
		case SP_SELECT_EXCLUDE:
		case SP_SELECT_RANKS:
			if (sp_select_option(&sel, c, optarg, &err) != SP_OK) {
				sp_cmd_error(CMD, "%s", err.msg);
				goto out;
			}
			break;
		case OPT_JSON:
			opts.json = 1;
			break;
		case 'h':
			summary_usage(stdout);
			status = 0;
			goto out;
		default:
			for (size_t i = 0; optopt >= 256 && i < NOPTS; i++)
				if (summary_options[i].opt.val == optopt) {
					sp_cmd_error(CMD, "--%s %s; see 'scope-profiler summary --help'",
						     summary_options[i].opt.name,
						     summary_options[i].arg ? "needs an argument"
									    : "takes no argument");
					goto out;
				}
			sp_cmd_error(CMD, "unknown option '%s'; see 'scope-profiler summary --help'",
				     argv[optind - 1]);
			goto out;
		}
	}
	if (optind != argc - 1) {
		sp_cmd_error(CMD, optind >= argc ? "no file given; usage: scope-profiler summary FILE"
						 : "one file at a time; usage: scope-profiler summary FILE");
		goto out;
	}
	const char *path = argv[optind];
	status = 1;
	if (sp_h5_read(path, SP_READ_SUMMARY, &p, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	enum sp_err rc = sp_render_summary_opts(stdout, p, path, &opts, &err);
	if (rc == SP_EIO)
		goto out;              /* stdout failed: main says so, once */
	if (rc != SP_OK) {
		if (rc == SP_EINVAL)
			sp_cmd_error(CMD, "%s: %s", path, err.msg);
		else
			sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	status = 0;
out:
	sp_profile_free(p);
	sp_select_free(&sel);
	return status;
}

/* cmd_diff.c - `scope-profiler diff A.h5 B.h5`: the options, reading the two
 * files, and one call into the report layer (sp_diff, src/report/diff.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sp_cmd.h"
#include "sp_diff.h"
#include "sp_h5.h"
#include "sp_tree.h"
#include "sp_select.h"

#define CMD "diff"
#define EXIT_ABOVE 3                   /* --fail-above: a region grew past the bound */

static const struct sp_cmd_help help = {
	.name = CMD,
	.usage = "scope-profiler diff [OPTIONS] A.h5 B.h5",
	.about =
		"Compares two profiles region by region: calls, total and mean time in A\n"
		"and in B, the change of the total in seconds and percent, and B/A.\n"
		"Regions recorded in one file only are marked 'only in A' or 'only in B'.\n"
		"With several ranks, 'total/rank' is the mean over ranks of each rank's\n"
		"total (the change is of that), 'slowest' the largest rank's total and\n"
		"'imbalance' the slowest rank's total over the fastest's in A and in B\n"
		"(a rank without the region counts as 0 s, giving inf).\n"
		"Reads the per-region summaries; with --fail-above, also the calls of the\n"
		"regions that grew past the bound, to test them.\n",
	.notes =
		"PCT is a number of percent, '10' or '10%'. A region fails the bound when\n"
		"it is in both files, its total reaches --min-time in one of them (default:\n"
		"1 ms or 1 % of the longer run span, whichever is more), its total (with\n"
		"several ranks: its total/rank or its slowest rank's total) grew by more\n"
		"than PCT percent, and, where both files hold its calls and there are\n"
		"enough of them, a one-sided Mann-Whitney test finds B's fastest tenth\n"
		"of calls longer than A's made PCT percent longer (p < 0.01), so that\n"
		"interrupted calls do not fail it (man scope-profiler-diff: a machine slower\n"
		"for a whole run does). The worst region is named on stderr; the lines under\n"
		"the table say which regions were not judged and why. T is a time with a\n"
		"unit: 500us, 2ms, 0.5s (a bare number is seconds; 0: no floor).\n"
		SP_HELP_PATTERN
		"\n"
		"Exit status: 0; 3 when a region grew past --fail-above; 1 when a file\n"
		"cannot be read; 2 for usage errors.\n",
};

static int parse_bound(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	if (sp_diff_parse_percent(arg, o->value) == 0)
		return 0;
	snprintf(err, len, "--fail-above takes a percentage from 0, like 10 or 10%%, not '%s'", arg);
	return -1;
}

static int parse_min_time(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	if (sp_diff_parse_time(arg, o->value) == 0)
		return 0;
	snprintf(err, len, "--min-time takes a time like 1ms, 500us or 0.2s, not '%s'", arg);
	return -1;
}

static int parse_sort(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	if (strcmp(arg, "change") != 0 && strcmp(arg, "name") != 0) {
		snprintf(err, len, "--sort takes change or name, not '%s'", arg);
		return -1;
	}
	*(int *)o->value = strcmp(arg, "name") == 0;
	return 0;
}

/* Returns 0, EXIT_ABOVE when a region grew past --fail-above, 1 when a file
 * cannot be read (or no rank of it is selected), or SP_EXIT_USAGE. */
int cmd_diff(int argc, char **argv)
{
	struct sp_select sel = {0};
	struct sp_error err = {0};
	struct sp_profile *p[2] = {NULL, NULL};
	struct sp_diff d = {0};
	double bound = NAN;
	int64_t min_time = -1;
	int status = SP_EXIT_USAGE, json = 0, by_name = 0;
	const struct sp_opt options[] = {
		{0, "fail-above", SP_OPT_CALL, &bound, 0, "PCT",
		 "exit 3 when a region grew by more than PCT %", parse_bound},
		{0, "min-time", SP_OPT_CALL, &min_time, 0, "T",
		 "--fail-above judges only regions of T or more", parse_min_time},
		SP_OPT_SELECT_NAMES,
		{0, "ranks", SP_OPT_CALL, NULL, SP_SELECT_RANKS, "LIST",
		 "only these ranks of both files, e.g. 0-3,5", sp_opt_select},
		{0, "sort", SP_OPT_CALL, &by_name, 0, "KEY",
		 "change (largest change first; default) or name", parse_sort},
		{0, "json", SP_OPT_FLAG, &json, 1, NULL, "print JSON instead of the table", NULL},
	};
	int first = sp_opt_parse(&help, options, sizeof options / sizeof options[0], argc, argv, 0, &sel);
	if (first < 0) {
		status = sp_opt_status(first);
		goto out;
	}
	if (argc - first != 2) {
		sp_cmd_error(CMD, "%s; usage: scope-profiler diff [OPTIONS] A.h5 B.h5",
			     argc - first < 2 ? "two files needed" : "only two files at a time");
		goto out;
	}
	status = 1;
	for (int k = 0; k < 2; k++) {
		if (sp_report_read(argv[first + k], SP_READ_SUMMARY, &p[k], &err) != SP_OK) {
			sp_cmd_error(CMD, "%s", err.msg);
			goto out;
		}
		sp_cmd_partial(CMD, argv[first + k], p[k]);
	}
	if (sp_diff_compare(&d, p[0], argv[first], p[1], argv[first + 1], &sel, by_name, bound,
			    min_time, &err) != SP_OK ||
	    (!isnan(bound) && sp_diff_confirm(&d, &err) != SP_OK) ||
	    sp_diff_render(stdout, &d, json, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	char line[512];
	status = 0;
	if (sp_diff_worst_line(&d, line, sizeof line)) {
		sp_cmd_error(CMD, "%s", line);
		status = EXIT_ABOVE;
	}
out:
	sp_diff_free(&d);
	for (int k = 0; k < 2; k++)
		sp_profile_free(p[k]);
	sp_select_free(&sel);
	return status;
}

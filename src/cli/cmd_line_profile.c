/* cmd_line_profile.c - `scope-profiler line-profile FILE`: the per-line tables. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_render.h"
#include "sp_select.h"

#define CMD "line-profile"

static const struct sp_cmd_help help = {
	.name = CMD,
	.usage = "scope-profiler line-profile [OPTIONS] FILE",
	.about =
		"Prints the per-line timings recorded with 'scope-profiler run\n"
		"--line-profile', as kernprof does: one table per profiled function and\n"
		"rank under its total time, with each line's hits, time and time per hit\n"
		"in one timer unit (microseconds, said at the top), share of the\n"
		"function's time and source, from the first executed line to the last.\n"
		"Source lines are whole where the terminal is wide enough (COLUMNS, or\n"
		"the terminal's width; whole when writing to a pipe or file), else cut.\n",
	.notes =
		"PATTERN (--include, --exclude) is matched against the function's\n"
		"qualified name as a glob ('Mesh.*'), or re:EXPR; man scope-profiler,\n"
		"FILTERS.\n"
		"Exit status: 0, 1 when FILE cannot be read or has no (selected) line\n"
		"timings, 2 for usage errors.\n",
};

/* Returns 0, 1 when the file cannot be read or has no line timings, or
 * SP_EXIT_USAGE. */
int cmd_line_profile(int argc, char **argv)
{
	struct sp_select sel = {0};
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	int status = SP_EXIT_USAGE;
	struct sp_render_lines_opts o = {.select = &sel};
	const struct sp_opt options[] = {
		{0, "include", SP_OPT_CALL, NULL, SP_SELECT_INCLUDE, "PATTERN",
		 "only functions matching PATTERN (repeatable)", sp_opt_select},
		{0, "exclude", SP_OPT_CALL, NULL, SP_SELECT_EXCLUDE, "PATTERN",
		 "not functions matching PATTERN (repeatable)", sp_opt_select},
		{0, "ranks", SP_OPT_CALL, NULL, SP_SELECT_RANKS, "LIST", "only these ranks, e.g. 0-3,5",
		 sp_opt_select},
		{0, "json", SP_OPT_FLAG, &o.json, 1, NULL,
		 "one JSON object: every line, exact seconds", NULL},
	};
	int first = sp_opt_parse(&help, options, sizeof options / sizeof options[0], argc, argv, 0, &sel);
	if (first < 0) {
		status = sp_opt_status(first);
		goto out;
	}
	if (first != argc - 1) {
		sp_cmd_error(CMD, first >= argc ? "no file given; usage: scope-profiler line-profile FILE"
						 : "one file at a time; usage: scope-profiler line-profile FILE");
		goto out;
	}
	status = 1;
	const char *path = argv[first];
	if (sp_h5_read(path, SP_READ_SUMMARY, &p, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	sp_cmd_partial(CMD, path, p);
	o.width = sp_render_lines_width(STDOUT_FILENO);
	enum sp_err rc = sp_render_lines_opts(stdout, p, path, &o, &err);
	if (rc == SP_EIO)
		goto out;              /* stdout failed: main says so, once */
	if (rc != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	status = 0;
out:
	sp_profile_free(p);
	sp_select_free(&sel);
	return status;
}

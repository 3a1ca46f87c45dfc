/* sp_cmd.h - the commands of the scope-profiler executable and the one
 * option parser they share. Each command returns the process exit status;
 * only commands print errors (as "scope-profiler: CMD: message"). */
#ifndef SP_CMD_H
#define SP_CMD_H

#include <stddef.h>
#include <stdio.h>

/* argv[0] is the command's name; options follow. */
int cmd_run(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_line_profile(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_recover(int argc, char **argv);

#include "sp_error.h"   /* sp_cmd_error, the one printer of error lines */
#include "sp_profile.h"

/* The line every command that reads a profile prints when it is partial
 * (a run's OUT.partial: still going, or killed; sp_render_partial), on
 * stderr after flushing stdout: "scope-profiler: CMD: PATH: incomplete
 * profile ...". Nothing for a finished profile. */
void sp_cmd_partial(const char *cmd, const char *path, const struct sp_profile *p);

/* -o -: an HDF5 file or a folder cannot go to standard output (export's
 * can): says so in one line and returns -1; 0 for any other path (NULL
 * included; ./- names a file called '-'). what: "an HDF5 profile". */
int sp_cmd_not_stdout(const char *cmd, const char *path, const char *what);

/* What an option does with what follows it. */
enum sp_opt_type {
	SP_OPT_FLAG,     /* no argument: *(int *)value = set */
	SP_OPT_STRING,   /* *(const char **)value = the argument (non-empty) */
	SP_OPT_LIST,     /* repeatable: the argument appended to *(struct sp_opt_list *)value */
	SP_OPT_CALL,     /* call(opt, arg, ctx): arg is NULL when the option takes none */
	SP_OPT_STOP,     /* like SP_OPT_STRING, then option parsing ends (run -m) */
};

/* A repeatable option's arguments, in order. sp_opt_parse allocates items;
 * the caller frees it (free(list.items)). */
struct sp_opt_list {
	const char **items;
	size_t n;
};

/* One row of a command's option table: what the parser needs, the variable
 * it sets, and the line --help (and the man page, made from --help) prints. */
struct sp_opt {
	char short_name;         /* 0: none */
	const char *long_name;   /* NULL: short only */
	enum sp_opt_type type;
	void *value;             /* FLAG: int *, STRING/STOP: const char **, LIST: struct sp_opt_list * */
	int set;                 /* FLAG: the value stored */
	const char *arg;         /* the argument's name in --help; NULL: takes none */
	const char *help;        /* NULL: an alias, not listed */
	/* SP_OPT_CALL: checks and stores arg; on failure returns -1 after writing
	 * one line (without "scope-profiler: CMD: ") into err[len]. */
	int (*call)(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len);
};

/* A command's --help: "usage: " lines, the text before the options, the text
 * after them. */
struct sp_cmd_help {
	const char *name;        /* "summary" */
	const char *usage;       /* "scope-profiler summary [OPTIONS] FILE" (several lines: \n) */
	const char *about;       /* paragraphs before "Options:" */
	const char *notes;       /* paragraphs after the options, or NULL */
};

enum {
	SP_OPT_IN_ORDER = 1,     /* stop at the first operand (run: the script's own options follow) */
};

/* Parses argv[1..argc) against opts[0..n): --help and -h are added, "--"
 * ends the options, "--name=value" and "-xVALUE" work as getopt_long's.
 * Returns the index of the first operand (argc when none), or
 *   -1 after printing --help to stdout: the command exits 0;
 *   -2 after printing one error line naming the command and pointing at
 *      --help: the command exits SP_EXIT_USAGE. */
int sp_opt_parse(const struct sp_cmd_help *h, const struct sp_opt *opts, size_t n,
		 int argc, char **argv, unsigned flags, void *ctx);

/* The callback of the selection options (--include, --exclude, --ranks) of
 * the commands that read profiles: ctx is the command's struct sp_select,
 * o->set the option's SP_SELECT_* code (sp_select.h). */
int sp_opt_select(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len);

/* The --include and --exclude rows, the same in every command that reads
 * profiles (--ranks says per command which file's ranks); SP_HELP_PATTERN
 * says in --help what PATTERN is. */
#define SP_HELP_PATTERN \
	"PATTERN (--include, --exclude) is a glob matched against the whole region\n" \
	"name ('solve', '*.solve*'), or re:EXPR, a POSIX extended regular\n" \
	"expression searched anywhere in it ('re:^mesh\\.'); man scope-profiler,\n" \
	"FILTERS.\n"

#define SP_OPT_SELECT_NAMES \
	{0, "include", SP_OPT_CALL, NULL, SP_SELECT_INCLUDE, "PATTERN", \
	 "only regions matching PATTERN (repeatable)", sp_opt_select}, \
	{0, "exclude", SP_OPT_CALL, NULL, SP_SELECT_EXCLUDE, "PATTERN", \
	 "not regions matching PATTERN (repeatable)", sp_opt_select}

/* Prints the command's --help: usage, about, "Options:" with one aligned line
 * per option of the table (and -h, --help), notes. */
void sp_opt_usage(FILE *out, const struct sp_cmd_help *h, const struct sp_opt *opts, size_t n);

/* The exit status for sp_opt_parse's negative results. */
static inline int sp_opt_status(int parsed)
{
	return parsed == -1 ? 0 : SP_EXIT_USAGE;
}

#endif

/* sp_cmd.h - the subcommands of the scope-profiler executable. Each returns
 * the process exit status; only commands print errors. */
#ifndef SP_CMD_H
#define SP_CMD_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* argv[0] is the command's name; options follow. */
int cmd_run(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_line_profile(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* Prints "scope-profiler: <cmd>: <message>\n" to stderr. */
void sp_cmd_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define SP_EXIT_USAGE 2

/* A command's option: what getopt_long needs and what --help prints, from
 * one table (cmd_options.c). */
struct sp_cmd_option {
	struct option opt;            /* opt.val < 256: also the short option -x */
	const char *arg;              /* the argument's name in --help, or NULL */
	const char *help;             /* NULL: an alias, not listed */
};

/* Prints the options' lines of a --help text ("  -o, --outfile PATH  ...",
 * the descriptions aligned); returns the width of the option column. */
int sp_cmd_print_options(FILE *out, const struct sp_cmd_option *o, size_t n);

/* Fills longopts[0..n] for getopt_long, the last entry zeroed. */
void sp_cmd_longopts(const struct sp_cmd_option *o, size_t n, struct option *longopts);

#endif

/* sp_cmd.h - the subcommands of the scope-profiler executable. Each returns
 * the process exit status; only commands print errors. */
#ifndef SP_CMD_H
#define SP_CMD_H

/* argv[0] is the command's name; options follow. */
int cmd_run(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_line_profile(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* Prints "scope-profiler: <cmd>: <message>\n" to stderr. */
void sp_cmd_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define SP_EXIT_USAGE 2

#endif

/* main.c - the scope-profiler executable: global options and the table of
 * subcommands, each implemented in its own cmd_<name>.c. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sp_cmd.h"
#include "sp_grow.h"
#include "sp_h5.h"
#include "sp_mpi.h"
#include "sp_outpath.h"
#include "sp_session.h"

/* Ctrl-C, SIGTERM, SIGHUP, SIGXCPU while export, plot or recover writes:
 * the temporary file (OUT.tmp.PID) goes, then the signal ends the process
 * as its default action would (OUT keeps what it had). */
static void remove_tmp_and_die(int sig)
{
	sp_outpath_cleanup_tmp();   /* async-signal-safe: unlink */
	signal(sig, SIG_DFL);
	raise(sig);
}

/* For the commands but run (whose interpreter has its own handlers); a
 * signal ignored (nohup) stays ignored. */
static void remove_tmp_on_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGXCPU};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction old, sa;
		if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = remove_tmp_and_die;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESETHAND;
		sigaction(sigs[i], &sa, NULL);
	}
}

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{"run", cmd_run, "run a Python script with its regions recording, write the profile"},
	{"summary", cmd_summary, "print the call tree and region table of a profile"},
	{"line-profile", cmd_line_profile, "print per-line hits and times recorded with run --line-profile"},
	{"export", cmd_export, "write the calls as CSV, JSON, a Chrome trace, speedscope or folded stacks"},
	{"diff", cmd_diff, "compare two profiles region by region; --fail-above for CI"},
	{"plot", cmd_plot, "draw Gantt, flame, durations and speedup charts as SVG files"},
	{"recover", cmd_recover, "write a killed run's OUT.partial (an MPI job's rank files) as a finished profile"},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
	fprintf(out,
		"usage: scope-profiler [--version] [--help] COMMAND [OPTIONS] ...\n"
		"\n"
		"Profiles Python programs: records every call of every region with\n"
		"nanosecond timestamps and writes one HDF5 file.\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\n"
		"'scope-profiler COMMAND --help' lists a command's options;\n"
		"'man scope-profiler-COMMAND' describes it, 'man scope-profiler' them all.\n");
}

static void version(void)
{
	printf("scope-profiler %s\n", SP_VERSION);
	char py[4200];
	sp_python_library(py, sizeof py);
	printf("embedded Python: %s\n", py);
	char h5[4200];
	sp_h5_library(h5, sizeof h5);
	printf("HDF5: %s\n", h5);
	if (sp_mpi_built())
		printf("MPI: %s (used when run under mpirun or srun)\n", sp_mpi_library());
	else
		printf("MPI: not built in (under mpirun each rank writes its own file)\n");
}

/* A full disk or a closed pipe must not truncate a report silently. The one
 * place that reports a failed write to stdout, for every command (which
 * then returns nonzero without printing): "scope-profiler: CMD: cannot
 * write to standard output: REASON"; nothing for a closed pipe (its reader
 * went away). e is errno as the command left it, the failed write's, for
 * when flushing now does not say why. */
static int finish_stdout(const char *cmd, int status, int e)
{
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		e = errno ? errno : e ? e : EIO;
		if (e != EPIPE)
			fprintf(stderr, "scope-profiler: %s%scannot write to standard output: %s\n", cmd ? cmd : "",
				cmd ? ": " : "", strerror(e));
		return status ? status : 1;
	}
	return status;
}

int main(int argc, char **argv)
{
	sp_h5_no_exit_handler();
	/* A run leaves malloc as python has it (the script's memory is given
	 * back as without us) until its script reads a profile. */
	if (argc < 2 || strcmp(argv[1], "run") != 0)
		sp_malloc_for_reading();
	if (argc < 2) {
		usage(stderr);
		return SP_EXIT_USAGE;
	}
	const char *arg = argv[1];
	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0) {
		usage(stdout);
		return finish_stdout(NULL, 0, errno);
	}
	if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
		version();
		return finish_stdout(NULL, 0, errno);
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(arg, commands[i].name) == 0) {
			if (commands[i].fn != cmd_run)
				remove_tmp_on_signals();
			int status = commands[i].fn(argc - 1, argv + 1);
			return finish_stdout(commands[i].name, status, errno);
		}
	if (arg[0] == '-')
		fprintf(stderr, "scope-profiler: unknown option '%s'\n", arg);
	else
		fprintf(stderr, "scope-profiler: '%s' is not a command; see 'scope-profiler --help'\n", arg);
	return SP_EXIT_USAGE;
}

/* cmd_run.c - `scope-profiler run`: its options (rows pointing at the fields
 * of struct sp_settings), the combinations it refuses, then the session
 * (include/sp_session.h), which runs the script and returns the status. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_cmd.h"
#include "sp_json.h"
#include "sp_likwid.h"
#include "sp_mpicalls.h"
#include "sp_recorder.h"
#include "sp_session.h"

#define CMD "run"

static const struct sp_cmd_help help = {
	.name = CMD,
	.usage = "scope-profiler run [OPTIONS] script.py [ARGS...]\n"
		 "scope-profiler run [OPTIONS] -m module [ARGS...]\n"
		 "scope-profiler run [OPTIONS] -c CODE [ARGS...]",
	.about =
		"Runs the script as __main__, like `python script.py ARGS...`, with its\n"
		"regions (@scope_profiler.profile, with scope_profiler.region(...)) recording,\n"
		"and writes the profile when it ends. Options stop at the script's name:\n"
		"what follows is the script's own.\n"
		"A run longer than its flush interval, or with more calls than its memory\n"
		"budget holds, streams them to PATH.partial as it goes: a profile that\n"
		"summary, export and plot read at any moment; after a kill (SIGKILL, the\n"
		"OOM killer), `scope-profiler recover PATH.partial` finishes it. At the end\n"
		"it becomes PATH.\n",
	.notes =
		SP_HELP_PATTERN
		"Exit status: the script's own (sys.exit(n) -> n, an uncaught exception\n"
		"-> 1; Ctrl-C, SIGTERM, SIGHUP, SIGXCPU, SIGUSR1/2, SIGALRM (alarm()),\n"
		"SIGVTALRM, SIGPROF end it killed by the signal, as python: a shell shows\n"
		"128 + signal);\n"
		"2 for usage errors. The profile is written in each of these cases, and\n"
		"before os.exec*(). The interpreter is started as a virtual environment's\n"
		"python would be in one: the environment scope-profiler is installed in, else\n"
		"the activated one (VIRTUAL_ENV), else the one whose python3 comes first on PATH.\n"
		/* On a line of its own: a pyenv's or a cluster module's path is long. */
		"Interpreter: " SP_PYTHON_EXECUTABLE "\n",
};

static int parse_buffer_limit(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	char *end;
	errno = 0;
	long long v = strtoll(arg, &end, 10);
	if (errno || *end || end == arg || v < 1) {
		snprintf(err, len, "--buffer-limit takes a positive whole number, not '%s'", arg);
		return -1;
	}
	if ((unsigned long long)v > sp_buf_max_cap()) {
		snprintf(err, len, "--buffer-limit %s: that many events take 16 bytes each, more "
			 "than this machine's memory (at most %zu)", arg, sp_buf_max_cap());
		return -1;
	}
	*(long long *)o->value = v;
	return 0;
}

/* A size: a whole number of bytes, or with K, M or G (binary: KiB, MiB,
 * GiB; "MiB" and "MB" spelled out too); 0: no streaming (stored as -1). */
static int parse_budget(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	char *end;
	errno = 0;
	long long v = strtoll(arg, &end, 10);
	int shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift && (strcmp(end + 1, "") == 0 || strcmp(end + 1, "iB") == 0 || strcmp(end + 1, "B") == 0))
		end += strlen(end);
	if (strcmp(arg, "0") == 0) {
		*(long long *)o->value = -1;   /* no streaming */
		return 0;
	}
	if (errno || *end || end == arg || v < 1 || v > (LLONG_MAX >> shift)) {
		snprintf(err, len, "--memory-budget takes a size such as 64M, 512K or 2G, not '%s'", arg);
		return -1;
	}
	v <<= shift;
	if (v < SP_MEMORY_BUDGET_MIN) {
		snprintf(err, len, "--memory-budget %s is below the least budget, 1M", arg);
		return -1;
	}
	*(long long *)o->value = v;
	return 0;
}

/* Seconds, a decimal number from 0.01 to a day. */
static int parse_interval(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	char *end;
	double v;
	if (sp_parse_decimal(arg, &v, &end) != 0 || *end || !(v >= 0.01 && v <= 86400)) {
		snprintf(err, len, "--flush-interval takes seconds from 0.01 to 86400, not '%s'", arg);
		return -1;
	}
	*(long long *)o->value = (long long)(v * 1000 + 0.5);
	return 0;
}

static int parse_compression(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	if (sp_settings_compression(arg, o->value) == 0)
		return 0;
	snprintf(err, len, "--compression takes auto, gzip, gzip=LEVEL (LEVEL 1 to 9) or none, not '%s'", arg);
	return -1;
}

static char *join_args(int argc, char **argv)
{
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++)
		p += sprintf(p, i ? " %s" : "%s", argv[i]);
	*p = '\0';
	return s;
}

/* Whether s is UTF-8 text, as the names the patterns are matched with. */
static int utf8_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	for (size_t n; *p; p += n)
		if (!(n = sp_utf8_seq(p, &cp)))
			return 0;
	return 1;
}

/* The patterns into s, then the combinations run refuses: 0, or -1 after
 * saying why. */
static int check_settings(struct sp_settings *s, const struct sp_opt_list *include,
			  const struct sp_opt_list *exclude)
{
	char err[256];
	const struct sp_opt_list *lists[] = {include, exclude};
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; i < lists[l]->n; i++)
			if (!utf8_text(lists[l]->items[i])) {
				sp_cmd_error(CMD, "--%s: the pattern is not UTF-8 text (names are matched as UTF-8)",
					     l ? "exclude" : "include");
				return -1;
			}
	s->include = include->items;
	s->ninclude = include->n;
	s->exclude = exclude->items;
	s->nexclude = exclude->n;
	if (sp_settings_check(s, 0, err, sizeof err) != 0) {
		sp_cmd_error(CMD, "%s", err);
		return -1;
	}
	if (s->mpi_calls && !sp_mpicalls_built()) {
		sp_cmd_error(CMD, "--mpi-calls: this scope-profiler was built without MPI");
		return -1;
	}
	return 0;
}

/* The script, argv[first] unless -m named a module or -c gave the code,
 * and the arguments after it into t: 0, or -1 after saying that none is
 * given. */
static int set_target(struct sp_run_target *t, int argc, char **argv, int first)
{
	if (!t->module && !t->command) {
		if (first >= argc) {
			sp_cmd_error(CMD, "no script given; usage: scope-profiler run [OPTIONS] script.py [ARGS...]");
			return -1;
		}
		t->script = argv[first++];
	}
	t->argc = argc - first;
	t->argv = argv + first;
	return 0;
}

/* argv[-1] is the executable's name (main passes argv + 1). */
int cmd_run(int argc, char **argv)
{
	struct sp_settings s = { .compression = -1, .verbose = -1 };
	struct sp_opt_list include = {0}, exclude = {0};
	struct sp_run_target t = {0};
	const struct sp_opt options[] = {
		{'o', "outfile", SP_OPT_STRING, &s.outfile, 0, "PATH",
		 "write the profile to PATH (default: profiling_data.h5)", NULL},
		{0, "force", SP_OPT_FLAG, &s.force, 1, NULL,
		 "replace a PATH that is no profile (never the script)", NULL},
		{'q', "quiet", SP_OPT_FLAG, &s.quiet, 1, NULL, "print no summary after the run", NULL},
		{0, "buffer-limit", SP_OPT_CALL, &s.buffer_limit, 0, "N",
		 "buffers double from 3 events to N, then on (1024)", parse_buffer_limit},
		{0, "no-output", SP_OPT_FLAG, &s.no_output, 1, NULL, "record, but write no file", NULL},
		{0, "disable", SP_OPT_FLAG, &s.disable, 1, NULL,
		 "record nothing; decorators return the function itself", NULL},
		{0, "recursive", SP_OPT_FLAG, &s.recursive, 1, NULL,
		 "a region per function call: <module>.<qualname>", NULL},
		{0, "all", SP_OPT_FLAG, &s.trace_all, 1, NULL,
		 "--recursive: also the stdlib and installed packages", NULL},
		{0, "include", SP_OPT_LIST, &include, 0, "PATTERN",
		 "--recursive: only names matching PATTERN (repeatable)", NULL},
		{0, "exclude", SP_OPT_LIST, &exclude, 0, "PATTERN",
		 "--recursive: not names matching PATTERN (repeatable)", NULL},
		{0, "line-profile", SP_OPT_FLAG, &s.line_profile, 1, NULL,
		 "also time each line of functions under sp.profile", NULL},
		{0, "track-threads", SP_OPT_FLAG, &s.track_threads, 1, NULL,
		 "lanes from the 1st call (default: from a 2nd thread's)", NULL},
		{0, "track-async", SP_OPT_FLAG, &s.track_async, 1, NULL,
		 "task lanes from the start (default: once a loop runs)", NULL},
		{0, "aggregate", SP_OPT_FLAG, &s.aggregate, 1, NULL,
		 "keep per region only calls, total, min, max, self time", NULL},
		{0, "memory", SP_OPT_FLAG, &s.memory, 1, NULL,
		 "bytes allocated per call, peak live bytes per region", NULL},
		{0, "mpi-calls", SP_OPT_FLAG, &s.mpi_calls, 1, NULL,
		 "a region per MPI call, with the bytes it moves", NULL},
		{0, "likwid", SP_OPT_FLAG, &s.likwid, 1, NULL,
		 "each region a LIKWID marker region (likwid-perfctr -m)", NULL},
		{0, "nvtx", SP_OPT_FLAG, &s.nvtx, 1, NULL,
		 "each region call an NVTX range (Nsight Systems)", NULL},
		{0, "gpu", SP_OPT_FLAG, &s.gpu, 1, NULL,
		 "sync the CUDA device at each region entry and exit", NULL},
		{0, "subprocesses", SP_OPT_FLAG, &s.subprocesses, 1, NULL,
		 "also profile Python child processes, in the same file", NULL},
		{0, "compression", SP_OPT_CALL, &s.compression, 0, "C",
		 "auto, gzip[=LEVEL] (shuffle + deflate) or none", parse_compression},
		{0, "memory-budget", SP_OPT_CALL, &s.memory_budget, 0, "B",
		 "calls held in memory, then streamed (64M; 0: never)", parse_budget},
		{0, "flush-interval", SP_OPT_CALL, &s.flush_ms, 0, "S",
		 "seconds between flushes of PATH.partial (1)", parse_interval},
		{'m', NULL, SP_OPT_STOP, &t.module, 0, "MODULE",
		 "run a module as __main__, like `python -m MODULE`", NULL},
		{'c', NULL, SP_OPT_STOP, &t.command, 0, "CODE",
		 "run CODE as __main__, like `python -c CODE`", NULL},
	};
	char err[256], *cmdline = NULL;
	int status = SP_EXIT_USAGE;
	int first = sp_opt_parse(&help, options, sizeof options / sizeof options[0], argc, argv,
				  SP_OPT_IN_ORDER, NULL);
	if (first < 0) {
		status = sp_opt_status(first);
		goto out;
	}
	if (check_settings(&s, &include, &exclude) != 0 || set_target(&t, argc, argv, first) != 0 ||
	    sp_cmd_not_stdout(CMD, s.outfile, "an HDF5 profile") != 0)
		goto out;
	/* LIKWID's library is opened before the script runs (sp_likwid.h). */
	if (s.likwid && !s.disable && sp_likwid_load(err, sizeof err) != 0) {
		sp_cmd_error(CMD, "--likwid: %s", err);
		goto out;
	}
	cmdline = join_args(argc + 1, argv - 1);
	t.command_line = cmdline ? cmdline : "";
	status = sp_session_run(&s, &t);
out:
	free(cmdline);
	free(include.items);
	free(exclude.items);
	return status;
}

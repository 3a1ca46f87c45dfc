/* sp_session.h - the settings of a profiling session, one C name each, and
 * the entry point of `scope-profiler run`. The session itself (setup ->
 * record -> finalize -> write -> render -> exit status) lives in
 * src/python/session.c, finalize.c and run_session.c; `run` and the Python module's setup()
 * keywords both fill this one struct (the keywords through
 * sp_settings_keyword below). No Python here. */
#ifndef SP_SESSION_H
#define SP_SESSION_H

#include <stddef.h>

/* The memory budget of event buffers when none is given, and the least. */
#define SP_MEMORY_BUDGET (64LL << 20)
#define SP_MEMORY_BUDGET_MIN (1LL << 20)

/* A default-initialised struct ({0}) means "not given" for every field;
 * sp_settings_defaults() fills in what a session uses when nothing is. */
struct sp_settings {
	const char *outfile;        /* the profile's path; NULL: not given (profiling_data.h5) */
	int quiet;                  /* run: print no summary after the run */
	long long buffer_limit;     /* the capacity regions double up to from 3 events; 0: not given (1024) */
	int no_output;              /* record, write no file (deactivate_file_output) */
	int disable;                /* record nothing (deactivate_profiling) */
	int recursive;              /* a region per function call (recursive_profile) */
	int trace_all;              /* run --all: also the stdlib and installed packages */
	const char **include;       /* run --include PATTERN... (sp_filter.h), ninclude of them */
	size_t ninclude;
	const char **exclude;       /* run --exclude GLOB... */
	size_t nexclude;
	int line_profile;           /* time each line (use_line_profiler) */
	int aggregate;              /* keep only aggregates (aggregation_mode) */
	int track_threads;          /* a lane per thread */
	int track_async;            /* a lane per asyncio task */
	int compression;            /* deflate level 0..9; -1: not given (none) */
	int verbose;                /* print the summary at finalize; -1: not given (yes) */
	int likwid;                 /* LIKWID marker regions (use_likwid, run --likwid) */
	int memory;                 /* bytes allocated per call, peaks per region (use_memray) */
	int mpi_calls;              /* a region per MPI call (profile_mpi_calls) */
	int nvtx;                   /* each region call an NVTX range (use_nvtx, run --nvtx) */
	int gpu;                    /* the CUDA device synchronised at each call's entry and exit (use_gpu) */
	int force;                  /* run --force: replace an existing file that is not a profile */
	int subprocesses;           /* run --subprocesses: Python child processes profiled too */
	long long memory_budget;    /* bytes of event buffers; past them calls stream to disk
				     * (sp_spill.h); 0: not given (64 MiB); -1: no streaming
				     * (run --memory-budget 0): every call in memory to the end */
	long long flush_ms;         /* run --flush-interval: OUT.partial's flushes; 0: not given (1000) */
};

/* What `run` runs: a script or a module, and the arguments after it. */
struct sp_run_target {
	const char *script;         /* script.py or a folder with __main__.py; NULL with
				     * module or command */
	const char *module;         /* run -m MODULE */
	const char *command;        /* run -c CODE */
	int argc;                   /* the script's own arguments */
	char **argv;
	const char *command_line;   /* as the user typed it, for the file's metadata */
};

/* Runs the target as __main__ in an embedded interpreter with the session
 * of s recording (its given fields fixed: the script's setup() cannot
 * change them), writes the profile at the end and prints the summary
 * (unless quiet). Prints its own errors ("scope-profiler: run: ...").
 * Returns the process exit status: the script's own (sys.exit(n) -> n, an
 * uncaught exception -> 1), 130 after SIGINT (the process is killed by it
 * when Python would be), 143 after SIGTERM, 2 when the target or the
 * output path is unusable, 1 when the profile could not be written. */
int sp_session_run(const struct sp_settings *s, const struct sp_run_target *t);

/* The embedded interpreter, for --version: "3.13.5 (/usr/bin/python3.13),
 * linked in" (the static archive, see the Makefile's PY_STATIC) or "...,
 * shared /usr/lib/.../libpython3.13.so.1.0"; written into buf (len bytes). */
void sp_python_library(char *buf, size_t len);

/* The values a session uses for the fields s left "not given". */
void sp_settings_defaults(struct sp_settings *s);

/* A decimal number at the start of s, as strtod reads one, into *v, *end
 * after it: digits, a point, an exponent, a sign; not hex (0x10 would be
 * 16), inf, nan nor a leading space, which strtod also takes. Returns 0,
 * or -1 (none there, or out of range). */
int sp_parse_decimal(const char *s, double *v, char **end);

/* The deflate level of a compression name: "none" 0, "auto" and "gzip" 4,
 * "gzip=N" N (1 to 9). Returns 0, or -1 when text is none of these. */
int sp_settings_compression(const char *text, int *level);

/* The setup() keywords (as the seed pages spell them), one table: what a
 * keyword's value is, and which field of struct sp_settings it sets. */
enum sp_setting_kind {
	SP_SETTING_PATH,            /* const char *: a path (str, bytes or os.PathLike) */
	SP_SETTING_COUNT,           /* long long: a positive integer */
	SP_SETTING_BOOL,            /* int: its truth value */
	SP_SETTING_COMPRESSION,     /* int: a level, from a name, a bool, None or 0..9 */
	SP_SETTING_NOT_YET,         /* int: accepted, but a true value is refused */
};

struct sp_setting_key {
	const char *keyword;        /* "use_line_profiler" */
	enum sp_setting_kind kind;
	size_t offset;              /* of the field in struct sp_settings */
	const char *what;           /* SP_SETTING_NOT_YET: what the build lacks */
};

/* The row of a setup() keyword, or NULL when there is no such keyword. */
const struct sp_setting_key *sp_settings_keyword(const char *keyword);

/* Every row, in the order help shows them; *n set to their number. */
const struct sp_setting_key *sp_settings_keywords(size_t *n);

/* The setup() keywords of the original package's earlier releases, each an
 * alias of a row above: `of` names that row's keyword, and `negate` says
 * the alias means the opposite boolean (profiling_activated=False is
 * deactivate_profiling=True; time_trace=False is aggregation_mode=True:
 * counts and totals without a per-call timeline). of NULL: accepted for
 * any value and without effect (flush_to_disk: the events stay in memory
 * and the file is written once, at finalize()). */
struct sp_setting_alias {
	const char *keyword;        /* "profiling_activated" */
	const char *of;             /* "deactivate_profiling", or NULL */
	int negate;
};

/* The alias row of an earlier keyword, or NULL when keyword is none. */
const struct sp_setting_alias *sp_settings_alias(const char *keyword);

/* Whether the given field of s differs from "not given" (what `run` fixes). */
int sp_settings_given(const struct sp_settings *s, const struct sp_setting_key *k);

/* Checks the combinations a session cannot record (line timing with the
 * profile hook; aggregation with per-call data). Returns 0, or -1 with
 * one line in err[len] naming the two keywords (python: the setup()
 * keywords; else run's options). */
int sp_settings_check(const struct sp_settings *s, int python, char *err, size_t len);

#endif

/* session.c - the profiling session, owned here: setup() -> record ->
 * finalize() -> write -> render. The Python module's setup(**options),
 * finalize() and session(...) and `run` (run_session.c) all come through
 * the functions below; setup()'s keywords become struct sp_settings
 * (keywords.c), whose recording mode mode.c applies; the end of a session
 * is finalize.c's, its metadata meta.c's. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "sp_aggregate.h"
#include "sp_clock.h"
#include "sp_error.h"
#include "sp_finalize.h"
#include "sp_h5.h"
#include "sp_keywords.h"
#include "sp_linetrace.h"
#include "sp_meta.h"
#include "sp_mode.h"
#include "sp_merge.h"
#include "sp_mpi.h"
#include "sp_mpicalls.h"
#include "sp_pyedge.h"
#include "sp_outpath.h"
#include "sp_pysession.h"
#include "sp_pytext.h"
#include "sp_shim.h"
#include "sp_spill.h"
#include "sp_recorder.h"
#include "sp_region.h"
#include "sp_region_types.h"
#include "sp_standalone.h"
#include "sp_tracer.h"
#include "sp_wrapper.h"

static void spare_take(void);

static struct {
	struct sp_settings cur;      /* in force since the last setup() */
	char *outfile;               /* owns cur.outfile */
	struct sp_settings locked;   /* run's command line: its given fields win */
	char *default_outfile;       /* run: the default path, made absolute */
	int active;                  /* between setup() and finalize() */
	int64_t run_start_ns;
	pid_t pid;                   /* of setup(): a forked child never writes */
	int tracing, trace_all;      /* run --recursive: the hook in every thread */
	int traced;                  /* it did, this run (for the metadata, also after a retry) */
	int exit_failed;             /* run: sys.exit(nonzero) or SIGTERM */
	int write_failed;            /* run: the profile is not where it was asked */
	int quiet;                   /* run -q */
	char *command_line;          /* run: as typed, for the metadata */
	char *children_dir;          /* run --subprocesses: where child processes write their
				      * profiles (proc-PID.h5), merged by the run's own process */
	pid_t parent_pid;            /* this session is a child process's: its parent */
	Py_ssize_t children_merged;  /* child profiles merged by the last write (-1: none looked for) */
	Py_ssize_t children_recovered;  /* of those, the ones from a partial file (killed) */
	PyObject *module;            /* the module (sys.modules keeps it alive) */
	long long flush_ms;          /* run --flush-interval (0: the default) */
	int skip_empty;              /* run's end after a failure: sp_final's skip_if_empty */
	char *root;                  /* run --recursive: the root region's name */
	int skipped;                 /* the last finish() wrote nothing for that reason */
	int64_t calls;               /* the script's calls the last finish() saw; -1: unknown */
	int locked_writes;           /* run -o: the script's sessions written so far */
} session = { .children_merged = -1, .cur = { .compression = -1, .verbose = -1 },
	     .locked = { .compression = -1, .verbose = -1 } };   /* nothing fixed without `run` */

/* While a profile is written (the GIL released, sp_final_writing),
 * setup(), finalize() and _reset() from another thread are refused: -1
 * with RuntimeError set; else 0. */
static int session_busy(void)
{
	if (!sp_final_writing())
		return 0;
	PyErr_SetString(PyExc_RuntimeError, "scope_profiler: the profile is being written (finalize() "
			"in another thread); the session cannot change until it is done");
	return -1;
}

int sp_session_write_failed(void)
{
	return session.write_failed;
}

/* Until the next setup(), regions record nothing (decorators still wrap,
 * for that setup()). */
static void mode_off(void)
{
	sp_mode_off((size_t)session.cur.buffer_limit);
}

/* Forgets every recorded event (the regions stay registered). */
static int reset_events(void)
{
	if (session_busy())
		return -1;
	/* What was streamed goes with the events (the stream restarts at the
	 * next setup). */
	sp_spill_cancel();
	/* The hook's open calls point into the buffers cleared below. */
	sp_mode_reset();
	sp_linetrace_reset();
	sp_agg_reset();
	sp_regions_reset();
	sp_mpicalls_reset();
	return 0;
}

/* Streams the session's events to its file's .partial while it runs
 * (spill.c) when the session can: a file is written, the calls are kept
 * one by one (not --aggregate), by a run's own process (under MPI each
 * rank to its own file, OUT.rank{r}, which the end merges into OUT) or a
 * child process of run --subprocesses (to proc-PID.h5, which the run's
 * end merges into OUT, up to its last flush when the child was killed).
 * Once something was streamed, the stream goes on to the end. 0, or -1
 * with an exception. */
static int stream_update(void)
{
	const struct sp_settings *s = &session.cur;
	char buf[PATH_MAX];
	if (sp_spill_streamed())
		return 0;
	const char *path = sp_standalone_outfile(s->outfile, buf, sizeof buf);
	int mpi = sp_mpi_active();
	/* This process keeps its calls one by one for a file, within a budget
	 * (not after it aggregated some: the end folds them together, from
	 * memory). */
	int keeps = path && s->memory_budget > 0 && !s->no_output && !s->disable && !s->aggregate &&
		    !sp_agg_recorded() && getpid() == session.pid;
	int can = keeps && (mpi || sp_mpi_launch_rank() < 0);
	sp_spill_cancel();
	if (!can)
		return 0;
	char *rank_file = mpi ? sp_merge_rank_file(path, sp_mpi_rank()) : NULL;
	if (mpi && !rank_file) {
		PyErr_NoMemory();
		return -1;
	}
	int rc = sp_spill_begin(rank_file ? rank_file : path, (size_t)s->memory_budget,
				(int64_t)(session.flush_ms ? session.flush_ms : 1000) * 1000000, s->compression,
				session.run_start_ns, s->memory || s->mpi_calls, session.parent_pid,
				session.parent_pid ? NULL : session.children_dir);
	free(rank_file);
	return rc;
}

/* The settings of a setup() given `given` (its keywords in mask, but
 * not the one at index `skip`, -1: none) into *merged: the defaults, then
 * the keywords, then (`locked`) what run's command line fixed. Returns whether
 * use_memray had to stay on (see below; without `locked`, only where the
 * script turned it on, not run --memory). */
static int merge_settings(struct sp_settings *merged, const struct sp_settings *given, unsigned mask, long skip,
			  int locked)
{
	size_t n;
	const struct sp_setting_key *keys = sp_settings_keywords(&n);
	*merged = (struct sp_settings){ .compression = -1, .verbose = -1 };
	for (size_t i = 0; i < n; i++) {
		if ((mask & (1u << i)) && (long)i != skip)
			sp_keywords_copy(merged, given, &keys[i]);
		if (locked && sp_settings_given(&session.locked, &keys[i]))
			sp_keywords_copy(merged, &session.locked, &keys[i]);
	}
	if (!merged->outfile)
		merged->outfile = session.default_outfile;
	/* Like track_threads: once the calls carry allocation values, every
	 * later call needs them; use_memray stays on until the events are
	 * written or reset (the allocators stay wrapped anyway). */
	int memory_forced = sp_mode.memory_kept && !merged->memory && (locked || !session.locked.memory);
	if (memory_forced)
		merged->memory = 1;
	sp_settings_defaults(merged);
	return memory_forced;
}

/* A setup() keyword that cannot go with what run's command line fixed
 * (setup(track_async=True) under run --aggregate) is left out, with one
 * warning (why: the conflict): the command line wins, and the script runs
 * as under python, where the keyword alone is fine. 0 when that makes
 * *merged acceptable; -1 (nothing changed) when the conflict is the
 * keywords' own. */
static int command_line_wins(struct sp_settings *merged, const struct sp_settings *given, unsigned mask,
			     int *memory_forced, const char *why)
{
	size_t n;
	const struct sp_setting_key *keys = sp_settings_keywords(&n);
	char err[256];
	struct sp_settings alone;
	(void)merge_settings(&alone, given, mask, -1, 0);
	if (sp_settings_check(&alone, 1, err, sizeof err) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct sp_settings trial;
		if (!(mask & (1u << i)) || sp_settings_given(&session.locked, &keys[i]) ||
		    !sp_settings_given(given, &keys[i]))
			continue;
		int forced = merge_settings(&trial, given, mask, (long)i, 1);
		if (sp_settings_check(&trial, 1, err, sizeof err) != 0)
			continue;
		PySys_FormatStderr("scope-profiler: warning: setup(%s=...) is left out: the scope-profiler "
				   "command line's settings win (%s)\n", keys[i].keyword, why);
		*merged = trial;
		*memory_forced = forced;
		return 0;
	}
	return -1;
}

static int my_rank(void)
{
	return sp_mpi_active() ? sp_mpi_rank() : 0;
}

/* run -o FILE's name for the script's n-th session (n >= 2): FILE.h5 ->
 * FILE-n.h5, else FILE-n; 0, or -1 when it does not fit. */
static int nth_outfile(const char *file, int n, char *out, size_t len)
{
	size_t l = strlen(file);
	int ext = l > 3 && strcmp(file + l - 3, ".h5") == 0 && file[l - 4] != '/';
	int w = snprintf(out, len, "%.*s-%d%s", (int)(ext ? l - 3 : l), file, n, ext ? ".h5" : "");
	return w > 0 && (size_t)w < len ? 0 : -1;
}

/* setup(**kw): the merged settings (the running session's or the
 * defaults, then kw, then what run's command line fixed) are checked, then
 * applied; a refused setup() changes nothing. */
static int setup_kwargs(PyObject *kw)
{
	struct sp_settings given = { .compression = -1, .verbose = -1 };
	struct sp_settings merged;
	char *path = NULL, err[256], abs[PATH_MAX];
	unsigned mask;
	int rc = -1;
	/* Every setup() starts from the defaults, an open session's too (as
	 * the original package's does): what it is not given is not kept
	 * from an earlier setup(); what run's command line gave is. */
	if (sp_keywords_settings(kw, &given, &mask, &path) != 0)
		goto out;
	int memory_forced = merge_settings(&merged, &given, mask, -1, 1);
	if (sp_settings_check(&merged, 1, err, sizeof err) != 0 &&
	    command_line_wins(&merged, &given, mask, &memory_forced, err) != 0) {
		PyObject *tt = kw ? PyDict_GetItemString(kw, "time_trace") : NULL;
		PyErr_Format(PyExc_ValueError, "%s%s%s", err, memory_forced ? " (use_memray stays on once "
			     "on, until the events are written or reset)" : "",
			     tt && merged.aggregate && strstr(err, "aggregation_mode")
			     ? " (time_trace=False is aggregation_mode=True)" : "");
		goto out;
	}
	if (sp_standalone_settings(&merged, abs, sizeof abs) != 0)
		goto out;
	if ((unsigned long long)merged.buffer_limit > sp_buf_max_cap()) {
		PyErr_Format(PyExc_ValueError, "buffer_limit=%lld: that many events take 16 bytes each, "
			     "more than this machine's memory (at most %zu)", merged.buffer_limit, sp_buf_max_cap());
		goto out;
	}
	if (merged.gpu && !merged.disable && sp_wrappers_recursive()) {
		PyErr_SetString(PyExc_ValueError, "use_gpu cannot be combined with a function decorated "
				"with profile(recursive=True): the device is synchronised around explicit "
				"regions' calls");
		goto out;
	}
	if (merged.likwid && !merged.disable && sp_wrappers_recursive()) {
		/* Decorated before LIKWID was asked for: as profile(recursive=True)
		 * under it (region_types.c), refused before anything changes. */
		PyErr_SetString(PyExc_ValueError, "use_likwid cannot be combined with a function decorated "
				"with profile(recursive=True): LIKWID marker regions wrap the calls of explicit "
				"regions");
		goto out;
	}
	/* run -o FILE: a session after one the script finalize()d goes to
	 * FILE-2.h5, FILE-3.h5, ... (each with one line), not over the first
	 * (as under python each goes to its own file_path); one reconfigured
	 * keeps the file it has. */
	char nth[PATH_MAX];
	int new_file = 0;
	if (session.locked.outfile && merged.outfile == session.locked.outfile && session.locked_writes > 0) {
		if (session.active && session.cur.outfile) {
			merged.outfile = session.cur.outfile;
		} else if (nth_outfile(session.locked.outfile, session.locked_writes + 1, nth, sizeof nth) != 0) {
			PyErr_Format(PyExc_OSError, "the profile path '%s' is too long", session.locked.outfile);
			goto out;
		} else {
			merged.outfile = nth;
			new_file = 1;
		}
	}
	/* A session whose events stream to disk already keeps recording
	 * events: its end could not fold aggregates into them. */
	if (merged.aggregate && !merged.disable && session.active && !session.cur.aggregate &&
	    sp_spill_streamed()) {
		merged.aggregate = 0;
		PySys_WriteStderr("scope-profiler: warning: setup(aggregation_mode=True) is left out: this "
				  "session streams its calls to disk already, as events; finalize() it first "
				  "to aggregate\n");
	}
	if (session_busy() || sp_mode_apply(&merged) != 0)
		goto out;
	/* Under MPI rank 0 speaks for every rank; a child process of run
	 * --subprocesses is quiet (its second session is another proc file,
	 * merged as the run's). */
	if (new_file && my_rank() == 0 && !session.parent_pid)
		PySys_FormatStderr("scope-profiler: run: the script's profiling session %d is written to %s "
				   "(-o %s holds its first)\n", session.locked_writes + 1, nth,
				   session.locked.outfile);
	/* The path: kept by this session (a new one, or the one it had). */
	if (merged.outfile != session.outfile) {
		char *d = strdup(merged.outfile);
		if (!d) {
			PyErr_NoMemory();
			goto out;
		}
		free(session.outfile);
		session.outfile = d;
		merged.outfile = d;
	}
	session.cur = merged;
	if (!session.active) {
		sp_regions_keep_counts(0);
		session.active = 1;
		session.run_start_ns = sp_clock_ns();
		session.pid = getpid();
		spare_take();
	}
	rc = stream_update();
out:
	free(path);
	return rc;
}

/* ---- the end of a session ---- */

static void spare_as_give(void);

/* What a Python-level signal handler raised while the end wrote to a
 * stream (Ctrl-C's KeyboardInterrupt, taken by the stream's write): kept
 * for finish() to raise once the summary is out (it was lost). */
static PyObject *held_type, *held_value, *held_tb;

static void clear_stream_error(void)
{
	if (!held_type && !PyErr_ExceptionMatches(PyExc_Exception)) {
		PyErr_Fetch(&held_type, &held_value, &held_tb);
		return;
	}
	PyErr_Clear();
}

/* finish()'s, at its start: what an earlier write outside it kept (the
 * end's lines at exit) is not this finish's. */
static void drop_held(void)
{
	Py_CLEAR(held_type);
	Py_CLEAR(held_value);
	Py_CLEAR(held_tb);
}

/* The script's finalize(): raises what clear_stream_error kept; -1 when
 * it did. */
static int raise_held(void)
{
	if (!held_type)
		return 0;
	PyErr_Restore(held_type, held_value, held_tb);
	held_type = held_value = held_tb = NULL;
	return -1;
}

/* Writes str to the Python stream (sys.stdout or sys.stderr). */
static void stream_write(PyObject *stream, PyObject *str)
{
	if (stream && str && PyFile_WriteObject(str, stream, Py_PRINT_RAW) != 0)
		clear_stream_error();
}

/* One line of the run's own (line ends with its newline) on stream: a
 * control character a path brought (a newline in a file name) is shown as
 * '?', as sp_cmd_error and the readers show it. */
static void say_line(PyObject *stream, PyObject *line)
{
	if (!line || !stream)
		return;
	/* One line (sp_one_line), its newline kept; a path not in UTF-8
	 * (surrogates, any) as the stream writes it. */
	PyObject *b = PyUnicode_AsEncodedString(line, "utf-8", "surrogatepass");
	PyObject *clean = NULL;
	if (b) {
		char *s = PyBytes_AS_STRING(b);
		Py_ssize_t n = PyBytes_GET_SIZE(b);
		char *copy = malloc((size_t)n + 1);
		if (copy) {
			memcpy(copy, s, (size_t)n + 1);
			sp_one_line(copy, (size_t)(n > 0 && copy[n - 1] == '\n' ? n - 1 : n));
			clean = PyUnicode_DecodeUTF8(copy, n, "surrogatepass");
			free(copy);
		}
	}
	stream_write(stream, clean ? clean : line);
	if (!clean)
		PyErr_Clear();
	Py_XDECREF(clean);
	Py_XDECREF(b);
}

static void stream_flush(PyObject *stream)
{
	PyObject *r = stream ? PyObject_CallMethod(stream, "flush", NULL) : NULL;
	if (!r && stream)
		clear_stream_error();
	Py_XDECREF(r);
}

/* The read API's results of what finalize wrote (or of its snapshot). */
static PyObject *results_of(const char *path, PyObject *data, PyObject *summary)
{
	if (!data) {
		PyObject *name = PyUnicode_DecodeFSDefault(path);   /* one not UTF-8 too */
		PyObject *r = name ? PyObject_CallMethod(session.module, "read_h5", "O", name) : NULL;
		Py_XDECREF(name);
		return r;
	}
	return PyObject_CallMethod(session.module, "ProfilingResults", "OOO", data, Py_None,
				   summary ? summary : Py_None);
}

/* Where a profile goes when it cannot be written where asked:
 * TMP/scope-profiler-PID.h5, TMP the first folder for temporary files that
 * can be written ($TMPDIR, else /tmp, ... as Python's tempfile has them). */
static void fallback_path(char *buf, size_t len)
{
	const char *tmp[6];
	size_t n = sp_outpath_tmp_dirs(tmp, sizeof tmp / sizeof tmp[0]), pick = 0;
	/* the first with room (a full $TMPDIR is passed over too), else the first */
	for (size_t i = 0; i < n; i++) {
		struct statvfs v;
		if (statvfs(tmp[i], &v) == 0 && (unsigned long long)v.f_bavail * v.f_frsize >= (1u << 20)) {
			pick = i;
			break;
		}
	}
	snprintf(buf, len, "%s/scope-profiler-%d.h5", n ? tmp[pick] : "/tmp", (int)getpid());
}

/* finalize()'s work: stops the session, writes (collectively under MPI:
 * rank 0 writes and prints for every rank), prints the summary on stream
 * when verbose. Returns the results when asked (else None), with *written
 * the path written (rank 0), or NULL with an exception: a file that cannot
 * be written is an OSError, and the session goes on recording. */
static PyObject *finish(int verbose, int want_results, PyObject *stream, int verbose_lines,
			int failed, const char **written)
{
	drop_held();
	spare_as_give();   /* the write's room (a session started again takes it again) */
	const struct sp_settings *s = &session.cur;
	int forked = getpid() != session.pid, rank = my_rank();
	static char ranked[PATH_MAX];   /* *written may point here */
	const char *path = s->no_output || s->disable || forked ? NULL
		: sp_standalone_outfile(s->outfile, ranked, sizeof ranked);
	int snapshot = want_results && (!path || rank != 0);
	/* A child of run --subprocesses says nothing: its profile joins the
	 * run's, which the run shows (its own file is gone by then). */
	int show = verbose && !forked && rank == 0 && !session.parent_pid;
	int show_lines = verbose_lines && !forked && rank == 0 && !session.parent_pid;
	char fallback[PATH_MAX];
	fallback_path(fallback, sizeof fallback);
	*written = NULL;
	if (session_busy())
		return NULL;
	int traced_run = session.tracing;
	if (session.tracing) {
		/* 3.11's hook for threads started later (see _start_tracing);
		 * threading is loaded only if it was set. */
		PyObject *name = PyUnicode_FromString("threading");
		PyObject *threading = name ? PyImport_GetModule(name) : NULL;
		Py_XDECREF(name);
		/* threading.setprofile(None) without a call of Python code
		 * (the hook still records in this thread). */
		if (threading && PyObject_SetAttrString(threading, "_profile_hook", Py_None) != 0)
			PyErr_Clear();
		Py_XDECREF(threading);
		PyErr_Clear();
		session.tracing = 0;
		sp_tracer_run_tracing(0);
	}
	sp_mode_hook_stop();  /* profile(recursive=True) calls still running end now */
	struct sp_meta m = {0};
	struct sp_final f = {
		.path = path, .render = show || snapshot, .render_lines = show_lines, .snapshot = snapshot,
		.lines_width = show_lines ? sp_py_lines_width(stream) : 0,
		.failed = failed, .fallback = fallback, .compression = s->compression,
		.run_start_ns = session.run_start_ns, .parent_pid = session.parent_pid,
		/* The run's own process gathers its children's profiles. */
		.children_dir = session.parent_pid || !path ? NULL : session.children_dir,
		.root = traced_run ? session.root : NULL,
		.skip_if_empty = session.skip_empty,
	};
	/* A session that aggregated some calls is written as aggregates
	 * (finalize.c folds its events in), whatever mode it ended in. */
	struct sp_settings as_written = *s;
	as_written.aggregate |= sp_agg_recorded();
	if (sp_meta_build(&m, &as_written, session.command_line,
			  session.trace_all ? "all" : session.traced ? "true" : "false") != 0) {
		sp_meta_free(&m);
		return NULL;
	}
	f.meta = m.kv;
	f.nmeta = m.n;
	int rc = sp_final_run(&f);
	sp_meta_free(&m);
	session.children_merged = f.children_dir ? (Py_ssize_t)f.children_merged : -1;
	session.children_recovered = (Py_ssize_t)f.children_recovered;
	session.skipped = f.skipped;
	session.calls = f.calls;
	if (rc != 0) {
		PyObject *type, *value, *tb;
		PyErr_Fetch(&type, &value, &tb);
		if (sp_mode_apply(s) != 0)   /* not written, the events kept: the session records on */
			PyErr_Clear();
		PyErr_Restore(type, value, tb);
		return NULL;
	}
	session.active = 0;
	sp_regions_keep_counts(1);   /* num_calls reads them until the next setup() */
	reset_events();
	mode_off();
	if (show && f.summary)
		stream_write(stream, f.summary);
	if (show_lines && f.lines && PyUnicode_GET_LENGTH(f.lines)) {
		if (show && f.summary && PyUnicode_GET_LENGTH(f.summary))
			PyFile_WriteString("\n", stream);
		stream_write(stream, f.lines);
	}
	stream_flush(stream);
	PyObject *res = want_results ? results_of(path, f.data, f.summary) : Py_NewRef(Py_None);
	Py_XDECREF(f.summary);
	Py_XDECREF(f.lines);
	Py_XDECREF(f.data);
	if (rank == 0 && !f.skipped)
		*written = path;
	if (path && !f.skipped && session.locked.outfile)
		session.locked_writes++;
	return res;
}

/* ---- the module's functions ---- */

static PyObject *mod_setup(PyObject *m, PyObject *args, PyObject *kw)
{
	if (PyTuple_GET_SIZE(args)) {
		PyErr_SetString(PyExc_TypeError, "setup() takes keyword arguments only");
		return NULL;
	}
	if (setup_kwargs(kw) != 0)
		return NULL;
	Py_RETURN_NONE;
}

/* _check_options(**options): what setup() would refuse of them alone. */
static PyObject *mod_check_options(PyObject *m, PyObject *args, PyObject *kw)
{
	struct sp_settings s = { .compression = -1, .verbose = -1 };
	char *path = NULL;
	unsigned mask;
	int rc = sp_keywords_settings(kw, &s, &mask, &path);
	free(path);
	if (rc != 0)
		return NULL;
	Py_RETURN_NONE;
}

/* finalize(verbose=None, return_results=False, verbose_line_profiler=None,
 * failed=False): None when no session runs. The line tables are printed
 * with the summary when line timing is on (verbose_line_profiler=False:
 * not), and alone with verbose_line_profiler=True, as the original
 * package's published output shows them. */
static PyObject *mod_finalize(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"verbose", "return_results", "verbose_line_profiler", "_failed",
				 "_at_exit", NULL};
	PyObject *verbose = Py_None, *verbose_lines = Py_None;
	int want = 0, failed = 0, at_exit = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OpOpp:finalize", kwlist, &verbose, &want,
					 &verbose_lines, &failed, &at_exit))
		return NULL;
	if (!session.active)
		Py_RETURN_NONE;
	int show = verbose == Py_None ? session.cur.verbose : PyObject_IsTrue(verbose);
	if (show < 0)
		return NULL;
	/* The line tables go with the summary unless asked for alone: a
	 * finalize(verbose=False), a session(verbose=False), prints neither. */
	int lines = verbose_lines == Py_None ? show && session.cur.line_profile && !session.cur.disable
		: PyObject_IsTrue(verbose_lines);
	if (lines < 0)
		return NULL;
	const char *written;
	/* A reference of our own: finish() runs Python, which may swap it. */
	PyObject *out = Py_XNewRef(PySys_GetObject("stdout"));
	PyObject *res = finish(show, want, out, lines, failed, &written);
	Py_XDECREF(out);
	/* The script's own finalize(): a region it uses from now on is said
	 * once (not at the interpreter's exit, where daemon threads may still
	 * run). */
	if (res && !at_exit)
		sp_mode_set_finished(1);
	/* Written; Ctrl-C while it was said ends the script as under python
	 * (at the interpreter's exit the end's own signal rules hold). */
	if (res && !at_exit && raise_held() != 0)
		Py_CLEAR(res);
	return res;
}

static PyObject *mod_reset(PyObject *m, PyObject *unused)
{
	if (reset_events() != 0)
		return NULL;
	sp_regions_keep_counts(0);
	/* reset_events freed the regions' columns and took the lanes off: the
	 * regions' classes and the wrappers' calls are chosen again, for the
	 * settings in force (outside a session: the mode as it is). */
	if (session.active ? sp_mode_apply(&session.cur) != 0 : sp_mode_reapply() != 0)
		return NULL;
	Py_RETURN_NONE;
}

/* _file_path(): where the current settings write (read_results()). */
static PyObject *mod_file_path(PyObject *m, PyObject *unused)
{
	char ranked[PATH_MAX];
	const char *path = session.cur.outfile ? session.cur.outfile : "profiling_data.h5";
	return PyUnicode_DecodeFSDefault(sp_standalone_outfile(path, ranked, sizeof ranked));
}

/* _settings(): {keyword: value} of every setup() keyword, as the session in
 * force has it (the defaults where nothing was given; get_config()). */
static PyObject *mod_settings(PyObject *m, PyObject *unused)
{
	struct sp_settings cur = session.cur;
	if (!cur.outfile)
		cur.outfile = session.default_outfile;
	sp_settings_defaults(&cur);
	return sp_keywords_dict(&cur);
}

static PyObject *mod_session_active(PyObject *m, PyObject *unused)
{
	return PyBool_FromLong(session.active);
}

/* _note_exit_status(status): run's sys.exit() and SIGTERM handler say the
 * script failed, so that under MPI this rank does not wait for the others. */
void sp_session_note_exit_status(PyObject *status)
{
	/* As the process's status: python ends with the int's low byte
	 * (sys.exit(256) succeeds), 1 for another object (printed). */
	int overflow = 0;
	long v = PyLong_Check(status) ? PyLong_AsLongAndOverflow(status, &overflow) : 1;
	session.exit_failed = status != Py_None && (overflow || (v & 0xff) != 0);
	PyErr_Clear();
}

static PyObject *mod_note_exit_status(PyObject *m, PyObject *status)
{
	sp_session_note_exit_status(status);
	Py_RETURN_NONE;
}

/* A child process's session (run --subprocesses) writes its own profile,
 * quietly, as proc-PID.h5 in the folder the run merges at its end; a
 * program the same process runs after os.exec* (whose profile before it
 * is there, finished or not) as proc-PID-2.h5, then -3, ... (children.c). */
/* dir/writing-<PID> of a child session (child_outfile), which it leaves as
 * it begins to write at its end (sp_session_say_writing). */
static char writing_mark[PATH_MAX];
static pid_t writing_pid;

void sp_session_say_writing(void)
{
	if (!writing_mark[0] || getpid() != writing_pid)
		return;   /* no child session, or a fork of one that has none */
	int fd = open(writing_mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}

static int child_outfile(const char *dir)
{
	char path[PATH_MAX], partial[PATH_MAX + 16];
	struct stat st;
	writing_pid = getpid();
	if ((size_t)snprintf(writing_mark, sizeof writing_mark, "%s/writing-%d", dir, (int)writing_pid) >=
	    sizeof writing_mark)
		writing_mark[0] = 0;
	for (int k = 1;; k++) {
		int n = k == 1 ? snprintf(path, sizeof path, "%s/proc-%d.h5", dir, (int)getpid())
			       : snprintf(path, sizeof path, "%s/proc-%d-%d.h5", dir, (int)getpid(), k);
		if (n < 0 || (size_t)n >= sizeof path) {
			PyErr_SetString(PyExc_OSError, "scope_profiler: the children's folder path is too long");
			return -1;
		}
		snprintf(partial, sizeof partial, "%s.partial", path);
		if (k >= 10000 || (lstat(path, &st) != 0 && lstat(partial, &st) != 0))
			break;
	}
	char *copy = strdup(path);
	if (!copy) {
		PyErr_NoMemory();
		return -1;
	}
	free(session.outfile);
	/* Locked: a setup() of the child's own keeps it (never the parent's file). */
	session.outfile = copy;
	session.cur.outfile = session.locked.outfile = copy;
	session.locked_writes = 0;   /* a fork's count is not its parent's */
	session.quiet = 1;
	session.cur.verbose = 0;
	return 0;
}

/* The session's children_dir: folder (str). 0, or -1 with an exception. */
static int set_children_dir(PyObject *folder)
{
	PyObject *b = PyUnicode_EncodeFSDefault(folder);
	if (!b)
		return -1;
	char *copy = strdup(PyBytes_AS_STRING(b));
	Py_DECREF(b);
	if (!copy) {
		PyErr_NoMemory();
		return -1;
	}
	free(session.children_dir);
	session.children_dir = copy;
	return 0;
}

/* _children_dir(folder): run --subprocesses, in the run's own process:
 * its stream, if it has not begun, names the folder in its file (for
 * `recover` of a run that was killed). */
static PyObject *mod_children_dir(PyObject *m, PyObject *arg)
{
	if (set_children_dir(arg) != 0 || stream_update() != 0)
		return NULL;
	Py_RETURN_NONE;
}

/* _child_session(): in a process just forked from a recording one (its
 * os.register_at_fork hook), under run --subprocesses: the session goes on
 * as the child's own, from now, with none of the parent's calls (those
 * still open in the parent are not the child's). Never raises. */
static PyObject *mod_child_session(PyObject *m, PyObject *unused)
{
	if (!session.active || !session.children_dir || session.pid == getpid())
		Py_RETURN_NONE;
	sp_final_forked();   /* another thread of the parent's may have been writing */
	/* The reset freed the columns the mode's classes write (lanes,
	 * values): the mode is applied again. */
	if (reset_events() != 0 || sp_mode_apply(&session.cur) != 0 || child_outfile(session.children_dir) != 0) {
		PyErr_Clear();
		session.active = 0;   /* records, but never writes */
		Py_RETURN_NONE;
	}
	session.parent_pid = session.pid;
	session.pid = getpid();
	session.run_start_ns = sp_clock_ns();
	session.exit_failed = 0;
	if (stream_update() != 0)   /* to its own file, proc-PID.h5 */
		PyErr_Clear();
	if (session.tracing) {
		/* --recursive: the reset stopped the hook; it goes on from here,
		 * in the one thread a fork leaves. */
		PyObject *r = PyObject_CallMethod(session.module, "_tracer_start", NULL);
		Py_XDECREF(r);
		PyErr_Clear();
	}
	Py_RETURN_NONE;
}

/* The setup() keywords of the run's settings that do not reach its spawned
 * children: where and whether to write, and what to say (a child writes
 * proc-PID.h5 and says nothing), and what would cost every worker of a
 * pool a device or a library of its own (--gpu: a CUDA context; --likwid;
 * --mpi-calls, which needs run itself). The memory budget does: each child
 * streams within it. */
static int child_keyword(const char *keyword)
{
	static const char *const not_theirs[] = {"file_path", "deactivate_file_output", "verbose",
						 "profile_mpi_calls", "use_gpu", "use_likwid"};
	for (size_t i = 0; i < sizeof not_theirs / sizeof not_theirs[0]; i++)
		if (strcmp(keyword, not_theirs[i]) == 0)
			return 0;
	return 1;
}

/* _run_given()'s key for run --flush-interval (milliseconds). */
#define FLUSH_KEY "_flush_ms"

/* _run_given(): {keyword: value} of the settings that run's command line
 * gave and its spawned children take (run --subprocesses). */
static PyObject *mod_run_given(PyObject *m, PyObject *unused)
{
	struct sp_settings cur = session.locked;
	cur.outfile = "";   /* not passed on: never NULL for the dict below */
	PyObject *all = sp_keywords_dict(&cur), *given = all ? PyDict_New() : NULL;
	size_t n;
	const struct sp_setting_key *keys = sp_settings_keywords(&n);
	for (size_t i = 0; given && i < n; i++) {
		if (!sp_settings_given(&session.locked, &keys[i]) || !child_keyword(keys[i].keyword))
			continue;
		PyObject *v = PyDict_GetItemString(all, keys[i].keyword);   /* borrowed */
		/* --memory-budget 0 (no budget, kept as -1), which setup() has no
		 * value for, goes as 0 (_child_setup). */
		PyObject *none = strcmp(keys[i].keyword, "memory_budget") == 0 && cur.memory_budget < 0
				 ? PyLong_FromLong(0) : NULL;
		if (!v || PyDict_SetItemString(given, keys[i].keyword, none ? none : v) != 0)
			Py_CLEAR(given);
		Py_XDECREF(none);
	}
	/* run --flush-interval, which is no setup() keyword: under a key
	 * _child_setup takes out before the others. */
	PyObject *flush = given && session.flush_ms ? PyLong_FromLongLong(session.flush_ms) : NULL;
	if (flush && PyDict_SetItemString(given, FLUSH_KEY, flush) != 0)
		Py_CLEAR(given);
	Py_XDECREF(flush);
	Py_XDECREF(all);
	return given;
}

/* _child_setup(folder, given=None): plain python started by a run
 * --subprocesses (the shim folder's scope_profiler loads this module and
 * calls this): a session of its own from now, written at exit as
 * proc-PID.h5 in folder, on the settings the run's command line gave
 * (given, from _run_given: the child's setup() cannot change them). */
static PyObject *mod_child_setup(PyObject *m, PyObject *args)
{
	PyObject *folder, *given = Py_None;
	if (!PyArg_ParseTuple(args, "O|O:_child_setup", &folder, &given))
		return NULL;
	if (given != Py_None) {
		struct sp_settings locked = { .compression = -1, .verbose = -1 };
		unsigned mask;
		char *path = NULL;
		PyObject *kw = PyDict_Check(given) ? PyDict_Copy(given) : NULL;
		/* memory_budget 0: the run's --memory-budget 0, no budget (_run_given). */
		PyObject *budget = kw ? PyDict_GetItemString(kw, "memory_budget") : NULL;   /* borrowed */
		int unbounded = budget && PyLong_Check(budget) && PyLong_AsLong(budget) == 0;
		PyObject *flush = kw ? PyDict_GetItemString(kw, FLUSH_KEY) : NULL;   /* borrowed */
		long long flush_ms = flush && PyLong_Check(flush) ? PyLong_AsLongLong(flush) : 0;
		if (flush_ms < 0) {
			PyErr_Clear();
			flush_ms = 0;
		}
		int rc = kw && (!unbounded || PyDict_DelItemString(kw, "memory_budget") == 0) &&
			 (!flush || PyDict_DelItemString(kw, FLUSH_KEY) == 0)
			 ? sp_keywords_settings(kw, &locked, &mask, &path) : -1;
		Py_XDECREF(kw);
		free(path);
		if (rc != 0) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "_child_setup: given is not a dict");
			return NULL;
		}
		if (unbounded)
			locked.memory_budget = -1;
		session.locked = locked;
		session.flush_ms = flush_ms;
	}
	if (set_children_dir(folder) != 0 || setup_kwargs(NULL) != 0 ||
	    child_outfile(session.children_dir) != 0)
		return NULL;
	session.parent_pid = getppid();
	if (stream_update() != 0)   /* to its own file, proc-PID.h5 */
		return NULL;
	Py_RETURN_NONE;
}

/* _child_tracing(trace_all): a spawned child's --recursive hook is on
 * (_child_begin): its forks go on with it, its end stops it. */
static PyObject *mod_child_tracing(PyObject *m, PyObject *arg)
{
	int all = PyObject_IsTrue(arg);
	if (all < 0)
		return NULL;
	session.tracing = session.traced = 1;
	sp_tracer_run_tracing(1);
	session.trace_all = all;
	Py_RETURN_NONE;
}

static PyObject *mod_session_is_child(PyObject *m, PyObject *unused)
{
	return PyBool_FromLong(session.active && session.parent_pid);
}

static void child_write_failed(void);

/* _child_write_failed(exc): a child's profile failed at its exit in plain
 * python (_finalize_at_exit): said as a child of the run says it. */
static PyObject *mod_child_write_failed(PyObject *m, PyObject *exc)
{
	PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
	child_write_failed();
	Py_RETURN_NONE;
}

static PyObject *mod_run_tracing(PyObject *m, PyObject *unused)
{
	return PyBool_FromLong(session.tracing);
}

static PyObject *mod_clock_ns(PyObject *m, PyObject *unused)
{
	return PyLong_FromLongLong(sp_clock_ns());
}

/* _async_lanes_auto(): an event loop started running (the Python layer's
 * watch of asyncio.events._set_running_loop). Task lanes by default: the
 * session records as with track_async from now on, so that tasks never
 * nest in each other nor close each other's `with` blocks; not in the
 * modes that keep no per-call lanes (disabled, aggregation, LIKWID), nor
 * with --gpu (whose calls synchronise the device on their thread). */
static PyObject *mod_async_lanes_auto(PyObject *m, PyObject *unused)
{
	struct sp_settings *s = &session.cur;
	static int said;
	if (session.active && s->aggregate && !s->disable && !said) {
		/* Its calls nest on one stack per thread, which cannot tell
		 * tasks apart. Once a process. */
		said = 1;
		PySys_WriteStderr("scope-profiler: warning: an asyncio event loop runs under aggregation "
				  "mode, which nests calls on one stack per thread: where its tasks interleave "
				  "in regions they nest in each other, and the totals and tree mix them (record "
				  "events, without --aggregate / aggregation_mode, for a lane per task)\n");
	}
	if (!session.active || sp_final_writing() || s->track_async || s->disable || s->aggregate || s->likwid ||
	    s->gpu)
		Py_RETURN_NONE;
	s->track_async = 1;
	if (sp_mode_apply(s) != 0) {
		s->track_async = 0;
		return NULL;
	}
	Py_RETURN_NONE;
}

/* _watch_loops(asyncio.events): its _set_running_loop, which asyncio looks
 * up at each start of a loop, calls _async_lanes_auto after the original.
 * A builtin of the original's module (_asyncio), as the original is: no
 * frame of ours in a profiler's or a tracer's view of the loop, which
 * cProfile names as python's. */
static PyObject *running_loop_orig;

static PyObject *set_running_loop(PyObject *m, PyObject *loop)
{
	PyObject *r = PyObject_CallOneArg(running_loop_orig, loop);
	if (r && loop != Py_None) {
		PyObject *a = mod_async_lanes_auto(NULL, NULL);
		if (!a)
			Py_CLEAR(r);
		Py_XDECREF(a);
	}
	return r;
}

static PyMethodDef set_running_loop_def = {
	"_set_running_loop", set_running_loop, METH_O,
	"_set_running_loop($module, loop, /)\n--\n\nSet the running event loop (scope-profiler run "
	"gives its tasks lanes of their own once a loop runs)."};

static PyObject *mod_watch_loops(PyObject *m, PyObject *events)
{
	PyObject *orig = PyObject_GetAttrString(events, "_set_running_loop");
	if (!orig) {
		PyErr_Clear();
		Py_RETURN_NONE;
	}
	if (PyCFunction_Check(orig) && PyCFunction_GET_FUNCTION(orig) == (PyCFunction)set_running_loop) {
		Py_DECREF(orig);   /* watched already */
		Py_RETURN_NONE;
	}
	/* _asyncio's own, whose self is its module; else (the pure Python
	 * one) asyncio.events' */
	PyObject *home = PyCFunction_Check(orig) ? PyCFunction_GET_SELF(orig) : NULL;
	if (home && !PyModule_Check(home))
		home = NULL;
	PyObject *modname = PyObject_GetAttrString(home ? home : events, "__name__");
	PyObject *w = modname ? PyCFunction_NewEx(&set_running_loop_def, home, modname) : NULL;
	Py_XDECREF(modname);
	if (!w || PyObject_SetAttrString(events, "_set_running_loop", w) != 0) {
		Py_XDECREF(w);
		Py_DECREF(orig);
		return NULL;
	}
	Py_DECREF(w);
	Py_XSETREF(running_loop_orig, orig);
	Py_RETURN_NONE;
}

PyMethodDef sp_session_methods[] = {
	{"_watch_loops", mod_watch_loops, METH_O, NULL},
	{"setup", (PyCFunction)(void (*)(void))mod_setup, METH_VARARGS | METH_KEYWORDS,
	 "setup(**options)\n--\n\nConfigure profiling and start a session. Calling it again "
	 "before finalize() reconfigures the running session and keeps what was recorded. "
	 "Options given on the scope-profiler command line take precedence."},
	{"finalize", (PyCFunction)(void (*)(void))mod_finalize, METH_VARARGS | METH_KEYWORDS,
	 "finalize(verbose=None, return_results=False, verbose_line_profiler=None)\n--\n\n"
	 "End the session: write the profile (unless file output is off) and print its "
	 "summary when verbose, with the line tables when line timing is on (unless "
	 "verbose_line_profiler=False; verbose_line_profiler=True: the tables even when not "
	 "verbose). Returns the results when asked to."},
	{"_check_options", (PyCFunction)(void (*)(void))mod_check_options, METH_VARARGS | METH_KEYWORDS, NULL},
	{"_reset", mod_reset, METH_NOARGS, NULL},
	{"_file_path", mod_file_path, METH_NOARGS, NULL},
	{"_session_active", mod_session_active, METH_NOARGS, NULL},
	{"_settings", mod_settings, METH_NOARGS, NULL},
	{"_note_exit_status", mod_note_exit_status, METH_O, NULL},
	{"_children_dir", mod_children_dir, METH_O, NULL},
	{"_child_session", mod_child_session, METH_NOARGS, NULL},
	{"_child_setup", mod_child_setup, METH_VARARGS, NULL},
	{"_run_given", mod_run_given, METH_NOARGS, NULL},
	{"_child_tracing", mod_child_tracing, METH_O, NULL},
	{"_session_is_child", mod_session_is_child, METH_NOARGS, NULL},
	{"_child_write_failed", mod_child_write_failed, METH_O, NULL},
	{"_run_tracing", mod_run_tracing, METH_NOARGS, NULL},
	{"_async_lanes_auto", mod_async_lanes_auto, METH_NOARGS, NULL},
	{"_clock_ns", mod_clock_ns, METH_NOARGS,
	 "The profiler's clock in ns (same as time.perf_counter_ns())."},
	{NULL},
};

/* ---- `run`: its start and its end ---- */

/* _run_hooks' last argument: (kind, the script's path, the module's name or -c's code). */
struct own_of {
	const char *kind, *what;
};

static PyObject *own_of(void *arg)
{
	const struct own_of *o = arg;
	PyObject *what = PyUnicode_DecodeFSDefault(o->what);
	PyObject *r = what ? Py_BuildValue("(sO)", o->kind, what) : NULL;
	Py_XDECREF(what);
	return r;
}

int sp_session_begin_run(const struct sp_settings *s, const char *outfile, const char *target,
			 const struct sp_run_target *t)
{
	const char *command_line = t->command_line;
	/* What --recursive takes for the user's own code, even installed
	 * (scope_profiler._own_prefixes). */
	const char *kind = t->module ? "module" : t->command ? "command" : "script";
	const char *what = t->module ? t->module : t->command ? t->command : t->script;
	PyObject *mod = PyImport_ImportModule("scope_profiler"), *res = NULL;
	session.locked = *s;
	/* --recursive is the hook _run_hooks starts below, not the script's
	 * recursive_profile keyword: the script's setup() keeps it free. */
	session.locked.recursive = session.locked.trace_all = 0;
	if (s->outfile)
		session.locked.outfile = outfile;
	free(session.default_outfile);
	if (!(session.default_outfile = strdup(outfile)))
		goto out;
	session.quiet = s->quiet;
	session.flush_ms = s->flush_ms;
	free(session.command_line);
	session.command_line = strdup(command_line);
	if (!mod || !session.command_line || setup_kwargs(NULL) != 0)
		goto out;
	PyObject *inc = PyTuple_New((Py_ssize_t)s->ninclude), *exc = PyTuple_New((Py_ssize_t)s->nexclude);
	for (size_t i = 0; inc && i < s->ninclude; i++)
		PyTuple_SET_ITEM(inc, i, PyUnicode_DecodeFSDefault(s->include[i]));
	for (size_t i = 0; exc && i < s->nexclude; i++)
		PyTuple_SET_ITEM(exc, i, PyUnicode_DecodeFSDefault(s->exclude[i]));
	int trace = s->recursive && !session.cur.disable;
	/* The Python-level hooks: threading and sys.setprofile, sys.exit, the
	 * SIGTERM handler, atexit, the shim folder (scope_profiler_py.py). */
	/* The root region: any bytes, as python names files, stored escaped
	 * where UTF-8 cannot hold them (the name is the tool's, not said). */
	PyObject *fsname = PyUnicode_DecodeFSDefault(target);
	PyObject *root = fsname ? sp_text_storable(fsname) : NULL;
	Py_XDECREF(fsname);
	/* The tests' Ctrl-C before the script's start (its handler runs in
	 * _run_hooks' first lines). */
	sp_test_pause("SCOPE_PROFILER_TEST_START_PAUSE_MS", "starting");
	if (root && inc && exc && !PyErr_Occurred())
		res = PyObject_CallMethod(mod, "_run_hooks", "OiiOOiO&i", root, trace, s->trace_all, inc, exc,
					  s->subprocesses && !session.cur.disable, own_of, &(struct own_of){kind, what},
					  (trace || s->line_profile) && !session.cur.disable);
	if (res && trace) {
		const char *u = PyUnicode_AsUTF8(root);
		free(session.root);
		session.root = u ? strdup(u) : NULL;
		PyErr_Clear();
	}
	Py_XDECREF(root);
	Py_XDECREF(inc);
	Py_XDECREF(exc);
	if (res && trace) {
		session.tracing = session.traced = 1;
		sp_tracer_run_tracing(1);
		session.trace_all = s->trace_all;
	}
out:
	Py_XDECREF(mod);
	if (!res) {
		/* Ctrl-C before the script's start: python's words for it,
		 * without the frames of the profiler's own start */
		int interrupted = PyErr_ExceptionMatches(PyExc_KeyboardInterrupt);
		if (interrupted) {
			PyObject *type, *value, *tb;
			PyErr_Fetch(&type, &value, &tb);
			Py_XDECREF(tb);
			PyErr_NormalizeException(&type, &value, &tb);
			if (value)
				PyException_SetTraceback(value, Py_None);
			Py_XDECREF(tb);
			PyErr_Restore(type, value, NULL);
		}
		PyErr_Print();
		if (interrupted)
			return -2;
		sp_cmd_error("run", "cannot start the profiling session");
		return -1;
	}
	Py_DECREF(res);
	return 0;
}

/* "scope-profiler: run: <exc>" parts: the exception's text. */
static PyObject *exc_text(void)
{
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	PyObject *s = value ? PyObject_Str(value) : NULL;
	if (s && PyUnicode_GetLength(s) == 0 && type && PyType_Check(type)) {
		Py_DECREF(s);   /* MemoryError(): its name says what happened */
		s = PyUnicode_FromString(((PyTypeObject *)type)->tp_name);
	}
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
	PyErr_Clear();
	return s ? s : PyUnicode_FromString("unknown error");
}

/* The run failed before recording a call of its own: the output path keeps
 * the profile it had (one line says so, even under -q). */
static void say_skipped(PyObject *err)
{
	if (session.cur.no_output || session.locked.no_output)
		return;   /* run --no-output: there is no file to speak of */
	const char *out = session.cur.outfile ? session.cur.outfile : session.default_outfile;
	char ranked[PATH_MAX];
	out = sp_standalone_outfile(out, ranked, sizeof ranked);
	int had = out && sp_h5_is_profile(out);   /* an empty file there is no profile */
	PyObject *line = had ? PyUnicode_FromFormat("scope-profiler: run: the script failed before "
						    "recording anything: %s keeps its previous profile\n", out)
		: PyUnicode_FromFormat("scope-profiler: run: the script failed before recording anything: "
				       "no profile written to %s\n", out ? out : "");
	say_line(err, line);
	stream_flush(err);
	Py_XDECREF(line);
}

/* A script that ends with as many descriptors open as its limit allows
 * (a leak that met "Too many open files"): the end's write needs a few of
 * its own (the output, its temporary file, HDF5's, the children's files).
 * The soft limit is raised by END_FDS (up to the hard one) for the end and
 * put back after it (an os.exec*'d program inherits it). The descriptors
 * it adds (0: none). */
#define END_FDS 32
static int more_fds(struct rlimit *was)
{
	if (getrlimit(RLIMIT_NOFILE, was) != 0 || was->rlim_cur == RLIM_INFINITY || was->rlim_cur >= was->rlim_max)
		return 0;
	struct rlimit more = *was;
	more.rlim_cur = more.rlim_max == RLIM_INFINITY || more.rlim_max - more.rlim_cur > END_FDS
		? more.rlim_cur + END_FDS : more.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &more) == 0 ? (int)(more.rlim_cur - was->rlim_cur) : 0;
}

/* Where the limit cannot be raised (the hard one reached: `ulimit -n N`
 * sets both), descriptors kept since the session's start are given up for
 * the end: memfds, each its own inode (never mistaken for one the script
 * opened after closing ours), at the top of the limit, so the script's
 * descriptors are numbered as under python. Only under a hard limit of
 * SPARE_MAX_LIMIT at most: a descriptor at the top of a larger one would
 * grow the process's descriptor table to it (8 MiB of the kernel's at a
 * million, copied at every fork), and a leak rarely gets there. Not under
 * one below 16 either, whose few descriptors the script needs more. */
#define SPARE_FDS 2
#define SPARE_MAX_LIMIT 16384
static struct spare_fd {
	int fd;
	dev_t dev;
	ino_t ino;
} spare[SPARE_FDS] = {{-1, 0, 0}, {-1, 0, 0}};

/* Under an address-space limit (ulimit -v, a batch system's virtual
 * memory limit), a script that ends with all of it taken (its MemoryError
 * caught, its objects kept) left the end none: HDF5 exits the process when
 * its start cannot allocate, the profile lost without a word. An eighth of
 * the limit (at most SPARE_AS_MAX), reserved at the session's start as
 * addresses only (PROT_NONE: no memory), is given back for the end. */
#define SPARE_AS_MAX ((size_t)64 << 20)
static void *spare_as;
static size_t spare_as_len;

static void spare_as_take(void)
{
	struct rlimit lim;
	if (spare_as || getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
		return;
	size_t len = lim.rlim_cur / 8 < SPARE_AS_MAX ? (size_t)(lim.rlim_cur / 8) & ~(size_t)0xfff : SPARE_AS_MAX;
	void *p = len ? mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) : MAP_FAILED;
	if (p != MAP_FAILED) {
		spare_as = p;
		spare_as_len = len;
	}
}

static void spare_as_give(void)
{
	if (spare_as)
		munmap(spare_as, spare_as_len);
	spare_as = NULL;
}

static void spare_take(void)
{
	struct rlimit lim;
	spare_as_take();
	if (spare[0].fd >= 0 || getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur != lim.rlim_max ||
	    lim.rlim_cur < 16 || lim.rlim_cur > SPARE_MAX_LIMIT)
		return;
	for (int i = 0; i < SPARE_FDS; i++) {
		int m = memfd_create("scope-profiler-spare", MFD_CLOEXEC);
		int fd = m < 0 ? -1 : fcntl(m, F_DUPFD_CLOEXEC, (int)lim.rlim_cur - SPARE_FDS);
		struct stat st;
		if (m >= 0)
			close(m);
		if (fd >= 0 && fstat(fd, &st) == 0)
			spare[i] = (struct spare_fd){fd, st.st_dev, st.st_ino};
		else if (fd >= 0)
			close(fd);
	}
}

static void spare_give(void)
{
	for (int i = 0; i < SPARE_FDS; i++) {
		struct stat st;
		if (spare[i].fd >= 0 && fstat(spare[i].fd, &st) == 0 && st.st_dev == spare[i].dev &&
		    st.st_ino == spare[i].ino)
			close(spare[i].fd);
		spare[i].fd = -1;
	}
}

/* The end's descriptors: the raised limit, or the spares where it could
 * not be raised by END_FDS; end_fds_back puts the limit back. The spare
 * address space goes too. */
struct end_fds {
	struct rlimit was;
	int raised;
};

static void end_fds_take(struct end_fds *e)
{
	spare_as_give();
	e->raised = more_fds(&e->was);
	if (e->raised < END_FDS)
		spare_give();
}

static void end_fds_back(const struct end_fds *e)
{
	if (e->raised)
		setrlimit(RLIMIT_NOFILE, &e->was);
}

static void write_profile_at_exit(void);

/* Writes what the script did not finalize itself. */
static void write_at_exit(void)
{
	struct end_fds fds;
	end_fds_take(&fds);
	write_profile_at_exit();
	end_fds_back(&fds);
}

static void write_profile_at_exit(void)
{
	if (!session.active || getpid() != session.pid)
		return;   /* a forked child never writes into its parent's file */
	/* An uncaught exception was printed (and kept in sys.last_value), or
	 * the script exited with a failure status. */
	PyObject *last = PySys_GetObject("last_value");
	int failed = (last && last != Py_None) || session.exit_failed;
	int talk = my_rank() == 0;   /* under MPI rank 0 speaks for every rank */
	/* A reference of our own: finish() runs Python, which may swap it. */
	PyObject *err = Py_XNewRef(PySys_GetObject("stderr"));
	const char *path;
	if (session.parent_pid)
		sp_session_say_writing();   /* a child's normal end (Ctrl-C to the group included) */
	session.skip_empty = failed && !session.parent_pid;   /* a child is always accounted for */
	PyObject *res = finish(!session.quiet, 0, err, !session.quiet && session.cur.line_profile, failed, &path);
	session.skip_empty = 0;
	sp_mode_set_finished(2);   /* a region used in Python's shutdown from here on is said once */
	if (res) {
		Py_DECREF(res);
		if (session.skipped && talk) {
			say_skipped(err);
		} else if (path && !session.quiet && session.calls == 0 && !session.traced) {
			PyObject *line = PyUnicode_FromString(
				"scope-profiler: hint: the script has no regions: `run --recursive` records "
				"every function of an unmodified program, `run --line-profile` each line of its "
				"@profile functions (kernprof's)\n");
			stream_write(err, line);
			Py_XDECREF(line);
		}
		if (path && !session.quiet) {
			PyObject *line = PyUnicode_FromFormat("scope-profiler: profile written to %s\n", path);
			say_line(err, line);
			Py_XDECREF(line);
			stream_flush(err);
		}
		Py_XDECREF(err);
		return;
	}
	if (!PyErr_ExceptionMatches(PyExc_OSError)) {
		Py_XDECREF(err);
		return;   /* run_exit says it */
	}
	if (session.parent_pid) {
		child_write_failed();
		Py_XDECREF(err);
		return;
	}
	session.write_failed = 1;
	if (sp_spill_finish_failed() || sp_final_files_kept()) {
		/* A streamed run: its calls are in the partial file (under MPI,
		 * the ranks' files), said so (by rank 0 for every rank); those
		 * a failed stream lost are counted. */
		uint64_t lost = sp_spill_lost();
		/* Under MPI each rank its own (rank 0 spoke for every rank
		 * with its own count alone). */
		char who[32] = "";
		if (sp_mpi_active())
			snprintf(who, sizeof who, "rank %d: ", my_rank());
		if (lost && (talk || who[0]))
			PySys_WriteStderr("scope-profiler: warning: %s%llu call%s not recorded: the stream to the "
					  "profile had failed\n", who, (unsigned long long)lost,
					  lost == 1 ? " was" : "s were");
		PyObject *first = exc_text();
		PyObject *line = talk ? PyUnicode_FromFormat("scope-profiler: run: %S\n", first) : NULL;
		say_line(err, line);
		stream_flush(err);
		Py_XDECREF(line);
		Py_XDECREF(first);
		Py_XDECREF(err);
		return;
	}
	/* Under MPI every rank gets rank 0's error and retries with it. One
	 * line says what failed and where the profile went. */
	PyObject *first = exc_text(), *line = NULL;
	char fallback[PATH_MAX];
	fallback_path(fallback, sizeof fallback);
	session.cur.outfile = fallback;
	session.cur.verbose = 0;
	res = finish(0, 0, err, 0, failed, &path);
	session.cur.outfile = session.outfile;
	if (res) {
		Py_DECREF(res);
		if (talk)
			line = PyUnicode_FromFormat("scope-profiler: run: %S; profile saved to %s instead\n",
						    first, path ? path : fallback);
	} else {
		PyObject *second = exc_text();
		if (talk)
			line = PyUnicode_FromFormat("scope-profiler: run: %S; %S; the profile is lost\n", first, second);
		Py_XDECREF(second);
	}
	say_line(err, line);
	stream_flush(err);
	Py_XDECREF(line);
	Py_XDECREF(first);
	Py_XDECREF(err);
}

void sp_session_note_failed(void)
{
	session.exit_failed = 1;
}

/* What end_run says of an error that write_at_exit left. */
static void say_end_error(void)
{
	if (PyErr_Occurred()) {
		PyObject *s = exc_text();
		const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
		sp_cmd_error("run", "cannot finish the profile: %s", text ? text : "unknown error");
		PyErr_Clear();
		Py_XDECREF(s);
		session.write_failed = 1;
	}
}

int sp_session_end_before_exec(void)
{
	if (!session.active || getpid() != session.pid)
		return 0;
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	if (!session.quiet) {
		PyObject *err = PySys_GetObject("stderr");
		PyObject *line = PyUnicode_FromString("scope-profiler: run: the script calls os.exec*(): "
						      "the profile is written before the process is replaced\n");
		stream_write(err, line);
		Py_XDECREF(line);
	}
	write_at_exit();
	say_end_error();
	PyErr_Restore(type, value, tb);
	return !session.active;
}

/* A child of --subprocesses whose profile failed (the exception set): the
 * run counts it and can only guess why ("killed"); the child says why (a
 * full $TMPDIR), unless it outlived the run (its folder is gone: the run
 * counted it, and ended). The exception is cleared. */
static void child_write_failed(void)
{
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	const char *out = session.cur.outfile;
	const char *slash = out ? strrchr(out, '/') : NULL;
	char dir[PATH_MAX];
	int alive = slash && (size_t)(slash - out) < sizeof dir &&
		    snprintf(dir, sizeof dir, "%.*s", (int)(slash - out), out) > 0 && access(dir, F_OK) == 0;
	PyObject *why = alive && value ? PyObject_Str(value) : NULL;
	PyObject *b = why ? PyUnicode_AsEncodedString(why, "utf-8", "backslashreplace") : NULL;
	/* The cause alone: what the message goes on to say of where the calls
	 * stay ("; the calls flushed before it stay in ...") is the run's to
	 * take care of, and it does. */
	const char *msg = b ? PyBytes_AsString(b) : NULL;
	if (!msg)
		msg = "its profile failed";
	const char *cut = strstr(msg, "; ");
	if (alive)
		fprintf(stderr, "scope-profiler: run: child process %ld: %.*s; its calls after its last flush are "
			"not in the run's profile\n", (long)getpid(), (int)(cut ? (size_t)(cut - msg) : strlen(msg)), msg);
	PyErr_Clear();
	Py_XDECREF(b);
	Py_XDECREF(why);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
}

void sp_session_end_child(void)
{
	if (!session.active || !session.parent_pid || getpid() != session.pid)
		return;
	sp_session_say_writing();
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	const char *path;
	struct end_fds fds;
	end_fds_take(&fds);
	PyObject *res = finish(0, 0, NULL, 0, 0, &path);
	end_fds_back(&fds);
	Py_XDECREF(res);
	if (!res && PyErr_ExceptionMatches(PyExc_OSError))
		child_write_failed();
	PyErr_Clear();
	PyErr_Restore(type, value, tb);
}

int sp_session_ends_at_exit(void)
{
	/* Under an MPI launcher the other ranks wait on this one's profile at
	 * their own end: os._exit ends this rank as it ends python's. */
	return session.active && !session.parent_pid && getpid() == session.pid && sp_mpi_launch_rank() < 0;
}

int sp_session_end_at_exit(PyObject *status)
{
	if (!sp_session_ends_at_exit())
		return 0;
	sp_session_note_exit_status(status);
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	sp_session_end_run();
	PyErr_Restore(type, value, tb);
	return 1;
}

void sp_session_exec_failed(void)
{
	sp_mode_set_finished(0);
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PySys_WriteStderr("scope-profiler: run: os.exec*() failed after the profile was written: "
			  "what the script does from here on is not recorded\n");
	PyErr_Restore(type, value, tb);
}

void sp_session_end_run(void)
{
	write_at_exit();
	say_end_error();
	/* in the process that made the folder */
	struct end_fds fds;
	end_fds_take(&fds);
	sp_shim_end(session.children_merged, session.children_recovered);
	end_fds_back(&fds);
}

void sp_session_bind(PyObject *mod)
{
	session.module = mod;
}

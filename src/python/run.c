/* cmd_run.c - `scope-profiler run`: runs a script (or -m module) as __main__
 * in the embedded interpreter, exactly as `python script.py` would, with the
 * explicit regions recording; the profile is written when the interpreter
 * exits (normal end, sys.exit, an uncaught exception, SIGINT or SIGTERM). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sp_cmd.h"
#include "sp_mpi.h"
#include "sp_outpath.h"
#include "sp_pymodule.h"
#include "sp_recorder.h"

#define CMD "run"

enum { OPT_BUFFER_LIMIT = 256, OPT_NO_OUTPUT, OPT_DISABLE, OPT_RECURSIVE, OPT_ALL, OPT_INCLUDE,
       OPT_EXCLUDE, OPT_TRACK_THREADS, OPT_LINE_PROFILE, OPT_AGGREGATE, OPT_TRACK_ASYNC,
       OPT_COMPRESSION };

static const struct sp_cmd_option run_options[] = {
	{{"outfile", required_argument, NULL, 'o'}, "PATH",
	 "write the profile to PATH (default: profiling_data.h5)"},
	{{"quiet", no_argument, NULL, 'q'}, NULL, "print no summary after the run"},
	{{"buffer-limit", required_argument, NULL, OPT_BUFFER_LIMIT}, "N",
	 "first event capacity per region (default 1024; doubles)"},
	{{"no-output", no_argument, NULL, OPT_NO_OUTPUT}, NULL,
	 "record, but write no file"},
	{{"disable", no_argument, NULL, OPT_DISABLE}, NULL,
	 "record nothing; decorators return the function itself"},
	{{"recursive", no_argument, NULL, OPT_RECURSIVE}, NULL,
	 "a region per function call: <module>.<qualname>"},
	{{"all", no_argument, NULL, OPT_ALL}, NULL,
	 "with --recursive: also the stdlib and installed packages"},
	{{"include", required_argument, NULL, OPT_INCLUDE}, "GLOB",
	 "with --recursive: only names matching GLOB (repeatable)"},
	{{"exclude", required_argument, NULL, OPT_EXCLUDE}, "GLOB",
	 "with --recursive: not names matching GLOB (repeatable)"},
	{{"line-profile", no_argument, NULL, OPT_LINE_PROFILE}, NULL,
	 "also time each line of functions under sp.profile"},
	{{"track-threads", no_argument, NULL, OPT_TRACK_THREADS}, NULL,
	 "a lane per thread: threads' calls never nest"},
	{{"track-async", no_argument, NULL, OPT_TRACK_ASYNC}, NULL,
	 "a lane per asyncio task: tasks' calls never nest"},
	{{"aggregate", no_argument, NULL, OPT_AGGREGATE}, NULL,
	 "keep per region only calls, total, min, max, self time"},
	{{"compression", required_argument, NULL, OPT_COMPRESSION}, "C",
	 "auto, gzip[=LEVEL] (shuffle + deflate) or none"},
	{{"help", no_argument, NULL, 'h'}, NULL, "show this help and exit"},
};

#define NOPTS (sizeof run_options / sizeof run_options[0])

static void run_usage(FILE *out)
{
	fprintf(out,
		"usage: scope-profiler run [OPTIONS] script.py [ARGS...]\n"
		"       scope-profiler run [OPTIONS] -m module [ARGS...]\n"
		"\n"
		"Runs the script as __main__, like `python script.py ARGS...`, with its\n"
		"regions (@scope_profiler.profile, with scope_profiler.region(...)) recording,\n"
		"and writes the profile when it ends. Options stop at the script's name:\n"
		"what follows is the script's own.\n"
		"\n"
		"Options:\n");
	int width = sp_cmd_print_options(out, run_options, NOPTS);
	fprintf(out,
		"  %-*s  %s\n"
		"\n"
		"Exit status: the script's own (sys.exit(n) -> n, an uncaught exception\n"
		"-> 1, Ctrl-C -> 130, SIGTERM -> 143); 2 for usage errors. The profile is\n"
		"written in each of these cases. The interpreter is %s.\n",
		width, "-m MODULE", "run a module as __main__, like `python -m MODULE`",
		SP_PYTHON_EXECUTABLE);
}

struct run_args {
	const char *outfile;       /* NULL: the default */
	int outfile_given;
	int quiet;
	long long buffer_limit;    /* 0: the default */
	int no_output;
	int disable;
	int recursive, all, track_threads, line_profile;
	int aggregate, track_async;
	const char *compression;   /* NULL: the default (none) */
	int ninclude, nexclude;
	char **include, **exclude; /* argc entries each, filled in order */
	const char *module;        /* -m MODULE */
	const char *script;
	int script_argc;           /* arguments after the script or module */
	char **script_argv;
};

static int parse_args(int argc, char **argv, struct run_args *a)
{
	struct option longopts[NOPTS + 1];
	sp_cmd_longopts(run_options, NOPTS, longopts);

	memset(a, 0, sizeof *a);
	a->include = calloc((size_t)argc + 1, sizeof(char *));
	a->exclude = calloc((size_t)argc + 1, sizeof(char *));
	if (!a->include || !a->exclude) {
		sp_cmd_error(CMD, "out of memory");
		return -1;
	}
	opterr = 0;
	optind = 1;
	int c;
	/* '+': stop at the first non-option, the script's name. */
	while (!a->module && (c = getopt_long(argc, argv, "+o:qm:h", longopts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'o':
			if (!*optarg) {
				sp_cmd_error(CMD, "--outfile needs a path");
				return -1;
			}
			a->outfile = optarg;
			a->outfile_given = 1;
			break;
		case 'q':
			a->quiet = 1;
			break;
		case 'm':
			a->module = optarg;
			break;
		case OPT_BUFFER_LIMIT:
			errno = 0;
			a->buffer_limit = strtoll(optarg, &end, 10);
			if (errno || *end || end == optarg || a->buffer_limit < 1) {
				sp_cmd_error(CMD, "--buffer-limit takes a positive whole number, not '%s'", optarg);
				return -1;
			}
			if ((unsigned long long)a->buffer_limit > sp_buf_max_cap()) {
				sp_cmd_error(CMD, "--buffer-limit %s: that many events take 16 bytes each, more "
					     "than this machine's memory (at most %zu)", optarg, sp_buf_max_cap());
				return -1;
			}
			break;
		case OPT_NO_OUTPUT:
			a->no_output = 1;
			break;
		case OPT_DISABLE:
			a->disable = 1;
			break;
		case OPT_RECURSIVE:
			a->recursive = 1;
			break;
		case OPT_ALL:
			a->all = 1;
			break;
		case OPT_TRACK_THREADS:
			a->track_threads = 1;
			break;
		case OPT_LINE_PROFILE:
			a->line_profile = 1;
			break;
		case OPT_AGGREGATE:
			a->aggregate = 1;
			break;
		case OPT_TRACK_ASYNC:
			a->track_async = 1;
			break;
		case OPT_COMPRESSION:
			if (strcmp(optarg, "auto") && strcmp(optarg, "none") && strcmp(optarg, "gzip") &&
			    !(strncmp(optarg, "gzip=", 5) == 0 && optarg[5] >= '1' && optarg[5] <= '9' &&
			      !optarg[6])) {
				sp_cmd_error(CMD, "--compression takes auto, gzip, gzip=LEVEL (LEVEL 1 to 9) "
					     "or none, not '%s'", optarg);
				return -1;
			}
			a->compression = optarg;
			break;
		case OPT_INCLUDE:
			a->include[a->ninclude++] = optarg;
			break;
		case OPT_EXCLUDE:
			a->exclude[a->nexclude++] = optarg;
			break;
		case 'h':
			run_usage(stdout);
			return 1;
		case ':':
		case '?':
		default:
			if (optopt && optopt < 256 && strchr("om", optopt))
				sp_cmd_error(CMD, "option -%c needs an argument; see 'scope-profiler run --help'", optopt);
			else if (optopt && optopt < 256)
				sp_cmd_error(CMD, "unknown option -%c; see 'scope-profiler run --help'", optopt);
			else
				sp_cmd_error(CMD, "unknown or incomplete option '%s'; see 'scope-profiler run --help'",
					     argv[optind - 1]);
			return -1;
		}
	}
	if (a->recursive && a->line_profile) {
		sp_cmd_error(CMD, "--line-profile and --recursive cannot be combined: time the lines of "
			     "the functions you decorate, or the calls of every function");
		return -1;
	}
	if (a->aggregate && (a->recursive || a->line_profile || a->track_async)) {
		sp_cmd_error(CMD, "--aggregate cannot be combined with %s: aggregates keep no per-call data",
			     a->recursive ? "--recursive" : a->line_profile ? "--line-profile" : "--track-async");
		return -1;
	}
	if (!a->recursive && (a->all || a->ninclude || a->nexclude)) {
		sp_cmd_error(CMD, "--all, --include and --exclude go with --recursive");
		return -1;
	}
	if (!a->module) {
		if (optind >= argc) {
			sp_cmd_error(CMD, "no script given; usage: scope-profiler run [OPTIONS] script.py [ARGS...]");
			return -1;
		}
		a->script = argv[optind++];
	}
	a->script_argc = argc - optind;
	a->script_argv = argv + optind;
	return 0;
}

/* The script must be a readable file, or a folder with __main__.py (which
 * Python runs like `python folder`). */
static int check_script(const char *script)
{
	struct stat st;
	if (stat(script, &st) != 0) {
		sp_cmd_error(CMD, "cannot open script '%s': %s", script, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		char main_py[PATH_MAX];
		snprintf(main_py, sizeof main_py, "%s/__main__.py", script);
		if (access(main_py, R_OK) != 0) {
			sp_cmd_error(CMD, "'%s' is a directory with no __main__.py", script);
			return -1;
		}
		return 0;
	}
	if (access(script, R_OK) != 0) {
		sp_cmd_error(CMD, "cannot read script '%s': %s", script, strerror(errno));
		return -1;
	}
	return 0;
}

/* Resolves path against the current folder, so a script's chdir does not
 * move the profile; checks now, before the script runs for hours, that the
 * profile can be written there (sp_outpath_check: a symlink is followed; a
 * directory, a device, a FIFO or a socket is refused, never replaced). */
static int check_outfile(const char *path, char *abs, size_t len)
{
	if (path[0] == '/') {
		snprintf(abs, len, "%s", path);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd)) {
			sp_cmd_error(CMD, "cannot resolve '%s': %s", path, strerror(errno));
			return -1;
		}
		if ((size_t)snprintf(abs, len, "%s/%s", cwd, path) >= len) {
			sp_cmd_error(CMD, "output path '%s' is too long", path);
			return -1;
		}
	}
	struct sp_error err = {0};
	enum sp_outpath_kind kind;
	if (sp_outpath_check(path, 0, &kind, &err) != SP_OK) {
		/* -o /dev/null is refused and --no-output named (man
		 * scope-profiler-run, "Before the script runs"): saying so is
		 * clearer than guessing. */
		sp_cmd_error(CMD, "cannot write the profile to %s%s", err.msg,
			     kind == SP_OUTPATH_NULL ? "; use --no-output to record without writing a file" : "");
		return -1;
	}
	return 0;
}

/* Compiles the script once before running it, so a syntax error is one
 * clear line and no profile is written. Returns 0 when it compiles. */
static int precompile(const char *script)
{
	struct stat st;
	if (stat(script, &st) != 0 || S_ISDIR(st.st_mode))
		return 0;  /* a folder: Python reports its own errors */
	FILE *f = fopen(script, "rb");
	if (!f) {
		sp_cmd_error(CMD, "cannot read script '%s': %s", script, strerror(errno));
		return -1;
	}
	PyObject *src = NULL;
	char *buf = malloc((size_t)st.st_size + 1);
	size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	if (buf)
		src = PyBytes_FromStringAndSize(buf, (Py_ssize_t)n);
	free(buf);
	if (!src) {
		PyErr_Clear();
		sp_cmd_error(CMD, "cannot read script '%s': out of memory", script);
		return -1;
	}
	PyObject *builtins = PyEval_GetBuiltins();
	PyObject *compile = builtins ? PyDict_GetItemString(builtins, "compile") : NULL;
	PyObject *code = compile ? PyObject_CallFunction(compile, "Oss", src, script, "exec") : NULL;
	Py_DECREF(src);
	if (code) {
		Py_DECREF(code);
		return 0;
	}
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	PyObject *s = value ? PyObject_Str(value) : NULL;
	const char *name = type ? ((PyTypeObject *)type)->tp_name : "error";
	const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
	sp_cmd_error(CMD, "%s: %s: %s", script, name, text ? text : "cannot compile");
	PyErr_Clear();
	Py_XDECREF(s);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
	return -1;
}

/* `run -m MODULE`: the module must be found, as python -m would find it,
 * before the session starts, so a mistyped name is one line, status 1 (as
 * python's), and no profile is written. Returns 0 when it is found. */
static int check_module(const char *module)
{
	PyObject *mod = PyImport_ImportModule("scope_profiler");
	PyObject *res = mod ? PyObject_CallMethod(mod, "_module_error", "s", module) : NULL;
	Py_XDECREF(mod);
	if (!res) {
		PyErr_Clear();
		sp_cmd_error(CMD, "cannot look up module '%s'", module);
		return -1;
	}
	int rc = 0;
	if (res != Py_None) {
		const char *msg = PyUnicode_Check(res) ? PyUnicode_AsUTF8(res) : NULL;
		sp_cmd_error(CMD, "%s", msg ? msg : "module not found");
		PyErr_Clear();
		rc = -1;
	}
	Py_DECREF(res);
	return rc;
}

static int init_python(const struct run_args *a)
{
	PyConfig config;
	PyStatus status;
	PyConfig_InitPythonConfig(&config);
	config.parse_argv = 0;
	/* sys.argv: [script, ARGS...] or ["-m", ARGS...] as python sets it
	 * before runpy replaces it with the module's path. */
	int n = a->script_argc + 1;
	char **argv = malloc(sizeof(char *) * (size_t)(n + 1));
	if (!argv) {
		sp_cmd_error(CMD, "out of memory");
		return -1;
	}
	argv[0] = (char *)(a->module ? "-m" : a->script);
	for (int i = 0; i < a->script_argc; i++)
		argv[i + 1] = a->script_argv[i];
	argv[n] = NULL;
	status = PyConfig_SetBytesArgv(&config, n, argv);
	free(argv);
	if (PyStatus_Exception(status))
		goto fail;
	if (a->module)
		status = PyConfig_SetBytesString(&config, &config.run_module, a->module);
	else
		status = PyConfig_SetBytesString(&config, &config.run_filename, a->script);
	if (PyStatus_Exception(status))
		goto fail;
	/* sys.executable is the real interpreter, so subprocesses and
	 * multiprocessing's spawn start plain Python, not this tool. */
	if (access(SP_PYTHON_EXECUTABLE, X_OK) == 0) {
		status = PyConfig_SetBytesString(&config, &config.program_name, SP_PYTHON_EXECUTABLE);
		if (!PyStatus_Exception(status))
			status = PyConfig_SetBytesString(&config, &config.executable, SP_PYTHON_EXECUTABLE);
		if (PyStatus_Exception(status))
			goto fail;
	}
	status = Py_InitializeFromConfig(&config);
	if (PyStatus_Exception(status))
		goto fail;
	PyConfig_Clear(&config);
	return 0;
fail:
	PyConfig_Clear(&config);
	sp_cmd_error(CMD, "cannot start the Python interpreter: %s",
		     status.err_msg ? status.err_msg : "unknown error");
	return -1;
}

static PyObject *str_tuple(char **v, int n)
{
	PyObject *t = PyTuple_New(n);
	for (int i = 0; t && i < n; i++) {
		PyObject *s = PyUnicode_DecodeFSDefault(v[i]);
		if (!s) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, i, s);
	}
	return t;
}

/* The root region of --recursive: the script's file name, or the module. */
static const char *run_target(const struct run_args *a)
{
	if (a->module)
		return a->module;
	const char *slash = strrchr(a->script, '/');
	return slash && slash[1] ? slash + 1 : a->script;
}

static PyObject *run_begin_call(PyObject *mod, const struct run_args *a, PyObject *opts,
				PyObject *locked, const char *cmdline)
{
	PyObject *inc = str_tuple(a->include, a->ninclude);
	PyObject *exc = str_tuple(a->exclude, a->nexclude);
	PyObject *fn = PyObject_GetAttrString(mod, "_run_begin");
	PyObject *args = NULL, *kw = NULL, *res = NULL;
	if (inc && exc && fn) {
		args = Py_BuildValue("(OOis)", opts, locked, a->quiet, cmdline);
		kw = Py_BuildValue("{s:s,s:O,s:O,s:O,s:O}", "target", run_target(a),
				   "recursive", a->recursive ? Py_True : Py_False,
				   "trace_all", a->all ? Py_True : Py_False,
				   "include", inc, "exclude", exc);
	}
	if (args && kw)
		res = PyObject_Call(fn, args, kw);
	Py_XDECREF(inc);
	Py_XDECREF(exc);
	Py_XDECREF(fn);
	Py_XDECREF(args);
	Py_XDECREF(kw);
	return res;
}

/* Starts the implicit session: scope_profiler._run_begin(...). */
static int begin_session(const struct run_args *a, const char *outfile, const char *cmdline)
{
	PyObject *mod = PyImport_ImportModule("scope_profiler");
	PyObject *opts = PyDict_New(), *locked = PyDict_New(), *res = NULL;
	if (!mod || !opts || !locked)
		goto out;
	PyObject *path = PyUnicode_DecodeFSDefault(outfile);
	int bad = !path || PyDict_SetItemString(opts, "file_path", path) != 0;
	if (!bad && a->outfile_given)
		bad = PyDict_SetItemString(locked, "file_path", path) != 0;
	Py_XDECREF(path);
	if (bad)
		goto out;
	if (a->buffer_limit) {
		PyObject *v = PyLong_FromLongLong(a->buffer_limit);
		bad = !v || PyDict_SetItemString(opts, "buffer_limit", v) != 0 ||
		      PyDict_SetItemString(locked, "buffer_limit", v) != 0;
		Py_XDECREF(v);
		if (bad)
			goto out;
	}
	if ((a->line_profile && (PyDict_SetItemString(opts, "use_line_profiler", Py_True) ||
				 PyDict_SetItemString(locked, "use_line_profiler", Py_True))) ||
	    (a->track_threads && (PyDict_SetItemString(opts, "track_threads", Py_True) ||
				  PyDict_SetItemString(locked, "track_threads", Py_True))) ||
	    (a->no_output && (PyDict_SetItemString(opts, "deactivate_file_output", Py_True) ||
			      PyDict_SetItemString(locked, "deactivate_file_output", Py_True))) ||
	    (a->disable && (PyDict_SetItemString(opts, "deactivate_profiling", Py_True) ||
			    PyDict_SetItemString(locked, "deactivate_profiling", Py_True))) ||
	    (a->aggregate && (PyDict_SetItemString(opts, "aggregation_mode", Py_True) ||
			      PyDict_SetItemString(locked, "aggregation_mode", Py_True))) ||
	    (a->track_async && (PyDict_SetItemString(opts, "track_async", Py_True) ||
				PyDict_SetItemString(locked, "track_async", Py_True))))
		goto out;
	if (a->compression) {
		/* Checked by setup() like the script's own value would be. */
		PyObject *v = PyUnicode_DecodeFSDefault(a->compression);
		bad = !v || PyDict_SetItemString(opts, "hdf5_compression", v) != 0 ||
		      PyDict_SetItemString(locked, "hdf5_compression", v) != 0;
		Py_XDECREF(v);
		if (bad)
			goto out;
	}
	res = run_begin_call(mod, a, opts, locked, cmdline);
out:
	Py_XDECREF(mod);
	Py_XDECREF(opts);
	Py_XDECREF(locked);
	if (!res) {
		PyErr_Print();
		sp_cmd_error(CMD, "cannot start the profiling session");
		return -1;
	}
	Py_DECREF(res);
	return 0;
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

/* Runs the script; returns its exit status (see run_usage). */
static int run(int argc, char **argv, struct run_args *a)
{
	if (a->script && check_script(a->script) != 0)
		return SP_EXIT_USAGE;
	char outfile[PATH_MAX];
	const char *out = a->outfile ? a->outfile : "profiling_data.h5";
	/* Under an MPI launcher only rank 0 writes: only it checks the path. */
	int launch_rank = sp_mpi_launch_rank();
	char ranked[PATH_MAX];
	if (launch_rank >= 0 && !sp_mpi_built()) {
		if (launch_rank == 0)
			fprintf(stderr, "scope-profiler: run: warning: built without MPI: each rank writes "
					"its own file, named <outfile>.rank<N>\n");
		snprintf(ranked, sizeof ranked, "%s.rank%d", out, launch_rank);
		out = ranked;
	}
	if (a->no_output || a->disable || (launch_rank > 0 && sp_mpi_built()))
		snprintf(outfile, sizeof outfile, "%s", out);
	else if (check_outfile(out, outfile, sizeof outfile) != 0)
		return SP_EXIT_USAGE;
	double wait_s;
	if (launch_rank >= 0 && sp_mpi_wait_seconds(&wait_s) != 0) {
		sp_cmd_error(CMD, "SCOPE_PROFILER_MPI_WAIT must be a number of seconds, not '%s'",
			     getenv("SCOPE_PROFILER_MPI_WAIT"));
		return SP_EXIT_USAGE;
	}
	if (launch_rank >= 0 && sp_mpi_built()) {
		struct sp_error err = {0};
		if (sp_mpi_start(&err) != SP_OK) {
			sp_cmd_error(CMD, "%s", err.msg);
			return 1;
		}
	}

	if (sp_pymodule_register() != 0) {
		sp_cmd_error(CMD, "cannot register the scope_profiler module");
		return 1;
	}
	if (init_python(a) != 0)
		return 1;
	if ((a->script && precompile(a->script) != 0) || (a->module && check_module(a->module) != 0)) {
		Py_FinalizeEx();
		return 1;
	}
	/* The command line as the user typed it, for the file's metadata. */
	char *cmdline = join_args(argc + 1, argv - 1);
	int rc = begin_session(a, outfile, cmdline ? cmdline : "");
	free(cmdline);
	if (rc != 0) {
		Py_FinalizeEx();
		return 1;
	}
	/* Runs the script, then Py_FinalizeEx, whose atexit stage writes the
	 * profile. On an unhandled KeyboardInterrupt it ends this process with
	 * SIGINT, as python does. */
	rc = Py_RunMain();
	if (rc == 0 && sp_run_write_failed)
		rc = 1;
	/* A signal received while the run ended: the profile is complete;
	 * end as that signal asks, as during the script. */
	switch (sp_run_exit_signal()) {
	case SIGINT:
		fflush(NULL);
		signal(SIGINT, SIG_DFL);
		raise(SIGINT);
		break;
	case SIGTERM:
		rc = 128 + SIGTERM;
		break;
	}
	return rc;
}

int cmd_run(int argc, char **argv)
{
	struct run_args a;
	int rc = parse_args(argc, argv, &a);
	if (rc == 0) {
		rc = run(argc, argv, &a);
		sp_mpi_end();
	} else
		rc = rc > 0 ? 0 : SP_EXIT_USAGE;
	free(a.include);
	free(a.exclude);
	return rc;
}

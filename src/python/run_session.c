/* run_session.c - `scope-profiler run` after its options: the checks that
 * need no interpreter (the script, the output path, MPI), the embedded
 * interpreter, the session of the command line's settings (session.c),
 * the script as __main__, and the exit status. The profile is written when
 * the interpreter exits (normal end, sys.exit, an uncaught exception,
 * SIGINT or SIGTERM), by the exit phase (exitphase.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sp_exitphase.h"
#include "sp_memory.h"
#include "sp_mpi.h"
#include "sp_outpath.h"
#include "sp_pymodule.h"
#include "sp_pysession.h"
#include "sp_session.h"
#include "sp_venv.h"

#define CMD "run"

/* Whether the script is "-": python reads it from standard input. */
static int from_stdin(const char *script)
{
	return script && strcmp(script, "-") == 0;
}

/* The script must be a readable file, or a folder with __main__.py (which
 * Python runs like `python folder`), or standard input ("-"). 0, or the
 * status python gives: 2 (cannot open it), 1 (a folder without one). */
static int check_script(const char *script)
{
	struct stat st;
	if (from_stdin(script))
		return 0;
	if (stat(script, &st) != 0) {
		sp_cmd_error(CMD, "cannot open script '%s': %s", script, strerror(errno));
		return SP_EXIT_USAGE;
	}
	if (S_ISDIR(st.st_mode)) {
		char main_py[PATH_MAX];
		snprintf(main_py, sizeof main_py, "%s/__main__.py", script);
		if (access(main_py, R_OK) != 0) {
			sp_cmd_error(CMD, "'%s' is a directory with no __main__.py", script);
			return 1;
		}
		return 0;
	}
	if (access(script, R_OK) != 0) {
		sp_cmd_error(CMD, "cannot read script '%s': %s", script, strerror(errno));
		return SP_EXIT_USAGE;
	}
	return 0;
}

/* Whether the output path out names the file being run: the script (a
 * folder's __main__.py too), symlinks followed. */
static int is_script(const char *out, const char *script)
{
	char main_py[PATH_MAX];
	struct stat st;
	if (sp_outpath_same_file(out, script))
		return 1;
	return stat(script, &st) == 0 && S_ISDIR(st.st_mode) &&
	       (size_t)snprintf(main_py, sizeof main_py, "%s/__main__.py", script) < sizeof main_py &&
	       sp_outpath_same_file(out, main_py);
}

/* Resolves path against the current folder, so a script's chdir does not
 * move the profile; checks now, before the script runs for hours, that the
 * profile can be written there (sp_outpath_check: a symlink is followed; a
 * directory, a device, a FIFO or a socket is refused, never replaced), that
 * it is not the script itself, and that an existing file there is a profile
 * (a scope-profiler profile) unless force. */
static int check_outfile(const char *path, const struct sp_run_target *t, int force, char *abs, size_t len)
{
	struct sp_error err = {0};
	if (sp_outpath_absolute(path, abs, len, &err) != SP_OK) {
		sp_cmd_error(CMD, "cannot write the profile: %s%s", err.msg,
			     err.code == SP_EIO ? "" : path[0] == '/' ? "; give -o a shorter path"
			     : "; give -o an absolute path or run from a shorter folder");
		return -1;
	}
	if (t->script && is_script(path, t->script)) {
		sp_cmd_error(CMD, "-o '%s' is the script being run; the profile would overwrite it: "
			     "choose another output path", path);
		return -1;
	}
	enum sp_outpath_kind kind;
	enum sp_err rc = sp_outpath_check(path, force ? 0 : SP_OUTPATH_PROFILE_ONLY, &kind, &err);
	/* --force: the end (which checks again) may replace what is there,
	 * never the script */
	char main_py[PATH_MAX];
	struct stat st;
	const char *never = t->script;
	if (never && stat(never, &st) == 0 && S_ISDIR(st.st_mode) &&
	    (size_t)snprintf(main_py, sizeof main_py, "%s/__main__.py", never) < sizeof main_py)
		never = main_py;
	if (rc == SP_OK && force)
		rc = sp_outpath_allow(path, never, &err);
	if (rc != SP_OK) {
		/* -o /dev/null is refused and --no-output named (man
		 * scope-profiler-run, "Before the script runs"): saying so is
		 * clearer than guessing. */
		sp_cmd_error(CMD, "cannot write the profile to %s%s", err.msg,
			     kind == SP_OUTPATH_NULL ? "; use --no-output to record without writing a file"
			     : rc == SP_EEXIST ? "; use --force to replace it" : "");
		return -1;
	}
	return 0;
}

/* Compiles the script (or -c's code, as "<string>") once before running
 * it, so a syntax error is one clear line and no profile is written.
 * Returns 0 when it compiles, or when it is not source. */
static int precompile(const char *script, const char *command)
{
	struct stat st;
	PyObject *src = NULL;
	if (command) {
		src = PyBytes_FromString(command);
		script = "<string>";
	} else {
		if (from_stdin(script) || stat(script, &st) != 0 || !S_ISREG(st.st_mode))
			return 0;  /* standard input, a named pipe, <(...): read once, by
				    * python (a read here left it nothing); a folder: Python
				    * reports its own errors */
		FILE *f = fopen(script, "rb");
		if (!f) {
			sp_cmd_error(CMD, "cannot read script '%s': %s", script, strerror(errno));
			return -1;
		}
		char *buf = malloc((size_t)st.st_size + 1);
		size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
		fclose(f);
		/* A file with NUL bytes is no source: a zipapp (.pyz), a zip
		 * or a .pyc, which python runs as such; python says what it
		 * makes of anything else. */
		if (buf && memchr(buf, 0, n)) {
			free(buf);
			return 0;
		}
		if (buf)
			src = PyBytes_FromStringAndSize(buf, (Py_ssize_t)n);
		free(buf);
	}
	if (!src) {
		PyErr_Clear();
		sp_cmd_error(CMD, "cannot read script '%s': out of memory", script);
		return -1;
	}
	/* Quietly (scope_profiler._compile_quietly): the run compiles it again
	 * and says its warnings once, as python does. The file name as python
	 * names it (os.fsdecode: any bytes). */
	PyObject *mod = PyImport_ImportModule("scope_profiler");
	PyObject *fname = PyUnicode_DecodeFSDefault(script);
	PyObject *code = mod && fname ? PyObject_CallMethod(mod, "_compile_quietly", "OO", src, fname) : NULL;
	Py_XDECREF(fname);
	Py_XDECREF(mod);
	Py_DECREF(src);
	if (code) {
		Py_DECREF(code);
		return 0;
	}
	if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
		/* Ctrl-C while it compiled: python's words, without the frame
		 * of the profiler's compile */
		PyObject *type, *value, *tb;
		PyErr_Fetch(&type, &value, &tb);
		Py_XDECREF(tb);
		PyErr_Restore(type, value, NULL);
		PyErr_Print();
		return -2;
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

/* -m's MODULE as python -m names it: the file system's encoding, any
 * bytes (a module file whose name is not UTF-8). */
static PyObject *module_name(const char *module)
{
	return PyUnicode_DecodeFSDefault(module);
}

/* `run -m MODULE`: the module must be found, as python -m would find it,
 * before the session starts, so a mistyped name is one line, status 1 (as
 * python's), and no profile is written. Returns 0 when it is found. */
static int check_module(const char *module)
{
	PyObject *mod = PyImport_ImportModule("scope_profiler");
	PyObject *name = module_name(module);
	PyObject *res = mod && name ? PyObject_CallMethod(mod, "_module_error", "O", name) : NULL;
	Py_XDECREF(name);
	Py_XDECREF(mod);
	if (!res) {
		PyErr_Clear();
		sp_cmd_error(CMD, "cannot look up module '%s'", module);
		return -1;
	}
	int rc = 0;
	if (res != Py_None) {
		/* As python's stderr writes it: a name's undecodable bytes escaped */
		PyObject *b = PyUnicode_Check(res) ? PyUnicode_AsEncodedString(res, "utf-8", "backslashreplace") : NULL;
		const char *msg = b ? PyBytes_AsString(b) : NULL;
		sp_cmd_error(CMD, "%s", msg ? msg : "module not found");
		Py_XDECREF(b);
		PyErr_Clear();
		rc = -1;
	}
	Py_DECREF(res);
	return rc;
}

/* `run -m MODULE -o OUT`: OUT must not be a file the module's run would
 * read (scope_profiler._module_files): the profile would replace the
 * module. Checked once the interpreter has started, before the module runs.
 * Returns 0 when OUT is none of them. */
static int check_module_outfile(const char *module, const char *out)
{
	PyObject *mod = PyImport_ImportModule("scope_profiler");
	PyObject *name = module_name(module);
	PyObject *files = mod && name ? PyObject_CallMethod(mod, "_module_files", "O", name) : NULL;
	Py_XDECREF(name);
	Py_XDECREF(mod);
	if (!files || !PyList_Check(files)) {
		PyErr_Clear();
		Py_XDECREF(files);
		sp_cmd_error(CMD, "cannot look up module '%s'", module);
		return -1;
	}
	int rc = 0;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(files) && rc == 0; i++) {
		PyObject *fs = PyUnicode_EncodeFSDefault(PyList_GET_ITEM(files, i));
		const char *file = fs ? PyBytes_AsString(fs) : NULL;
		if (file && sp_outpath_same_file(out, file)) {
			sp_cmd_error(CMD, "-o is '%s', which `-m %s` runs; the profile would overwrite it: "
				     "choose another output path", file, module);
			rc = -1;
		}
		Py_XDECREF(fs);
		PyErr_Clear();
	}
	Py_DECREF(files);
	return rc;
}

/* --memory: the allocator wrappers with a size header per block (exact
 * live bytes, sp_memory.h) go in before the first block is allocated, but
 * after the preinitialization, which may choose the allocators itself
 * (PYTHONMALLOC). */
static int install_memory(void)
{
	PyPreConfig pre;
	PyPreConfig_InitPythonConfig(&pre);
	PyStatus status = Py_PreInitialize(&pre);
	if (PyStatus_Exception(status)) {
		sp_cmd_error(CMD, "cannot start the Python interpreter: %s",
			     status.err_msg ? status.err_msg : "unknown error");
		return -1;
	}
	if (sp_mem_install(1) != 0) {
		sp_cmd_error(CMD, "--memory: the Python allocators cannot be read");
		return -1;
	}
	return 0;
}

/* The virtual environment the run starts in (sp_venv_find), into *v;
 * 0 (v->python empty: none), or -1 when there is one that cannot be used
 * (said). */
static int find_venv(struct sp_venv *v)
{
	char self[PATH_MAX], err[4 * PATH_MAX + 512];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	struct sp_venv_where w = {.self = n > 0 ? self : NULL, .virtual_env = getenv("VIRTUAL_ENV"),
				  .path = getenv("PATH"), .embedded = SP_PYTHON_EXECUTABLE};
	if (n > 0)
		self[n] = '\0';
	v->python[0] = '\0';
	switch (sp_venv_find(&w, PY_MAJOR_VERSION, PY_MINOR_VERSION, v, err, sizeof err)) {
	case SP_VENV_WRONG:
		sp_cmd_error(CMD, "%s", err);
		return -1;
	case SP_VENV_NONE:
		v->python[0] = '\0';
		return 0;
	case SP_VENV_FOUND:
		return 0;
	}
	return 0;
}

/* sys.orig_argv as python's command line for the same run would be:
 * [PYTHON, SCRIPT | -m MODULE | -c CODE | -, ARGS...], so that a script
 * restarting itself (os.execv(sys.executable, sys.orig_argv)) runs what
 * it ran. 0, or -1 (out of memory). */
static int orig_argv(PyConfig *config, const struct sp_run_target *a, const char *executable)
{
	const char *head[3] = {executable ? executable : "python3", NULL, NULL};
	if (a->module) {
		head[1] = "-m";
		head[2] = a->module;
	} else if (a->command) {
		head[1] = "-c";
		head[2] = a->command;
	} else {
		head[1] = a->script;
	}
	PyWideStringList list = {0, NULL};
	for (int i = 0; i < 3 + a->argc; i++) {
		const char *arg = i < 3 ? head[i] : a->argv[i - 3];
		if (!arg)
			continue;
		wchar_t *w = Py_DecodeLocale(arg, NULL);
		PyStatus st = w ? PyWideStringList_Append(&list, w) : PyStatus_NoMemory();
		PyMem_RawFree(w);
		if (PyStatus_Exception(st))
			goto fail;
	}
	PyStatus st = PyConfig_SetWideStringList(config, &config->orig_argv, list.length, list.items);
	for (Py_ssize_t i = 0; i < list.length; i++)
		PyMem_RawFree(list.items[i]);
	PyMem_RawFree(list.items);
	return PyStatus_Exception(st) ? -1 : 0;
fail:
	for (Py_ssize_t i = 0; i < list.length; i++)
		PyMem_RawFree(list.items[i]);
	PyMem_RawFree(list.items);
	return -1;
}

/* executable: the environment's python (a virtual environment's), or
 * NULL: the one the executable was built with. */
static int init_python(const struct sp_run_target *a, int memory, const char *executable)
{
	PyConfig config;
	PyStatus status;
	if (memory && install_memory() != 0)
		return -1;
	PyConfig_InitPythonConfig(&config);
	config.parse_argv = 0;
	/* sys.argv: [script, ARGS...], ["-c", ARGS...], or ["-m", ARGS...] as
	 * python sets it before runpy replaces it with the module's path. */
	int n = a->argc + 1;
	char **argv = malloc(sizeof(char *) * (size_t)(n + 1));
	if (!argv) {
		sp_cmd_error(CMD, "out of memory");
		return -1;
	}
	argv[0] = (char *)(a->module ? "-m" : a->command ? "-c" : a->script);
	for (int i = 0; i < a->argc; i++)
		argv[i + 1] = a->argv[i];
	argv[n] = NULL;
	status = PyConfig_SetBytesArgv(&config, n, argv);
	free(argv);
	if (PyStatus_Exception(status))
		goto fail;
	if (a->module) {
		status = PyConfig_SetBytesString(&config, &config.run_module, a->module);
	} else if (a->command) {
		/* As python's -c: the code and a newline. */
		size_t len = strlen(a->command);
		char *code = malloc(len + 2);
		if (!code) {
			PyConfig_Clear(&config);
			sp_cmd_error(CMD, "out of memory");
			return -1;
		}
		memcpy(code, a->command, len);
		memcpy(code + len, "\n", 2);
		status = PyConfig_SetBytesString(&config, &config.run_command, code);
		free(code);
	} else if (!from_stdin(a->script)) {
		status = PyConfig_SetBytesString(&config, &config.run_filename, a->script);
	}   /* else "-": python runs standard input, as `python -` does */
	if (PyStatus_Exception(status))
		goto fail;
	/* sys.executable is the real interpreter, so subprocesses and
	 * multiprocessing's spawn start plain Python, not this tool. In a
	 * virtual environment it is the environment's python: CPython's path
	 * configuration finds its pyvenv.cfg from there, as when that python
	 * starts (sys.prefix, site-packages, .pth files, system site).
	 * Outside one, named as python names itself started as `python3`: the
	 * first python3 on PATH when that is this interpreter (/usr/bin/python3
	 * rather than /usr/bin/python3.11). */
	char on_path[PATH_MAX];
	if (!executable && access(SP_PYTHON_EXECUTABLE, X_OK) == 0)
		executable = sp_venv_python_on_path(getenv("PATH"), SP_PYTHON_EXECUTABLE, on_path,
						    sizeof on_path) == 0 ? on_path : SP_PYTHON_EXECUTABLE;
	if (executable) {
		status = PyConfig_SetBytesString(&config, &config.program_name, executable);
		if (!PyStatus_Exception(status))
			status = PyConfig_SetBytesString(&config, &config.executable, executable);
		if (PyStatus_Exception(status))
			goto fail;
	}
	if (orig_argv(&config, a, executable) != 0) {
		PyConfig_Clear(&config);
		sp_cmd_error(CMD, "out of memory");
		return -1;
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

/* The root region of --recursive: the script's file name, the module,
 * "-c", or "<stdin>". */
static const char *root_name(const struct sp_run_target *t)
{
	if (t->module)
		return t->module;
	if (t->command)
		return "-c";
	if (from_stdin(t->script))
		return "<stdin>";
	const char *slash = strrchr(t->script, '/');
	return slash && slash[1] ? slash + 1 : t->script;
}

/* Before the interpreter: the script, the output path (only where this
 * process writes: *checked set then), MPI. Returns 0, or the exit status. */
static int check_before(const struct sp_settings *s, const struct sp_run_target *t,
			char *outfile, size_t len, int *checked, struct sp_venv *venv)
{
	int rc = t->script ? check_script(t->script) : 0;
	if (rc != 0)
		return rc;
	if (find_venv(venv) != 0)
		return SP_EXIT_USAGE;
	const char *out = s->outfile ? s->outfile : "profiling_data.h5";
	/* Under an MPI launcher only rank 0 writes: only it checks the path. */
	int launch_rank = sp_mpi_launch_rank();
	char ranked[PATH_MAX];
	if (launch_rank >= 0 && s->subprocesses) {
		sp_cmd_error(CMD, "--subprocesses cannot be used under an MPI launcher yet: "
			     "each rank's child processes would need ranks of their own");
		return SP_EXIT_USAGE;
	}
	if (launch_rank >= 0 && !sp_mpi_built()) {
		if (launch_rank == 0)
			fprintf(stderr, "scope-profiler: run: warning: built without MPI: each rank writes "
					"its own file, named <outfile>.rank<N>\n");
		snprintf(ranked, sizeof ranked, "%s.rank%d", out, launch_rank);
		out = ranked;
	}
	if (s->no_output || s->disable || (launch_rank > 0 && sp_mpi_built()))
		snprintf(outfile, len, "%s", out);
	else if (check_outfile(out, t, s->force, outfile, len) != 0)
		return SP_EXIT_USAGE;
	else
		*checked = 1;
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
	return 0;
}

/* Ends the process killed by SIGINT, as python ends at an unhandled
 * KeyboardInterrupt (a shell shows 130). */
static void die_by_sigint(void)
{
	fflush(NULL);
	signal(SIGINT, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(SIGINT);
}

static int run(const struct sp_settings *settings, const struct sp_run_target *t)
{
	char outfile[PATH_MAX];
	/* outfile: absolute, so that a script's chdir does not move it. */
	int checked = 0;
	static struct sp_venv venv;   /* two paths: not on the stack */
	int rc = check_before(settings, t, outfile, sizeof outfile, &checked, &venv);
	if (rc != 0)
		return rc;
	if (sp_pymodule_register() != 0) {
		sp_cmd_error(CMD, "cannot register the scope_profiler module");
		return 1;
	}
	if (init_python(t, settings->memory && !settings->disable, venv.python[0] ? venv.python : NULL) != 0)
		return 1;
	/* -m: the module found (status 1, as python's), then not the output
	 * (a usage error, 2), both before it runs */
	rc = t->module ? check_module(t->module) != 0 : 0;
	if (!rc && t->module && checked && check_module_outfile(t->module, outfile) != 0)
		rc = SP_EXIT_USAGE;
	int failed = rc ? 0 : (t->script || t->command) ? precompile(t->script, t->command) : 0;
	if (!rc && !failed)
		failed = sp_session_begin_run(settings, outfile, root_name(t), t);
	if (rc || failed) {
		Py_FinalizeEx();
		if (failed == -2)
			die_by_sigint();   /* Ctrl-C before the script started: as python ends then */
		return rc ? rc : 1;
	}
	/* Runs the script, then Py_FinalizeEx, whose atexit stage ends the
	 * session (exitphase.c). On an unhandled KeyboardInterrupt it ends this
	 * process with SIGINT, as python does. */
	rc = Py_RunMain();
	if (rc == 0 && sp_session_write_failed())
		rc = 1;
	/* A signal received while the run ended: the profile is complete;
	 * the process ends killed by it, as during the script and as python
	 * is (a shell shows 128 + sig). */
	int sig = sp_run_exit_signal_last();
	if (sig) {
		fflush(NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		signal(sig, SIG_DFL);
		raise(sig);   /* delivered when let through, below */
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		rc = 128 + sig;   /* should it not end the process */
	}
	return rc;
}

int sp_session_run(const struct sp_settings *s, const struct sp_run_target *t)
{
	int rc = run(s, t);
	sp_mpi_end();
	return rc;
}

/* shim.c - `run`'s folder for the script's Python subprocesses: they run
 * plain python (multiprocessing's spawn and forkserver children,
 * subprocess.run([sys.executable, ...])), which has no built-in
 * scope_profiler, so the folder holds a no-op one (scope_profiler_shim.py,
 * frozen here) and goes first on their PYTHONPATH (and last on the script's
 * sys.path, which spawn hands on; the built-in module is found first there).
 * Each process that imports it, and each fork of the run, leaves a mark in
 * the folder, so that the end of the run can say how many were not
 * profiled. Under --subprocesses the shim loads this module built as an
 * extension module instead and records: each child writes proc-PID.h5 into
 * the folder, which the run merges at its end (session.c, finalize.c).
 *
 * The folder is $TMPDIR/scope-profiler-shim-HOST-PID-RANDOM, mode 0700,
 * removed at the end by the process that made it, or by the next run on
 * this host when that process died without it (os._exit, SIGKILL), once
 * none of its children runs and a day after the last profile of theirs
 * was written there (for `recover`, which merges them: the run's partial
 * file names the folder). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "sp_outpath.h"
#include "sp_pyshim.h"
#include "sp_shim.h"

/* Where `run --subprocesses` finds this module for spawned children (the
 * Makefile's; the extension module itself needs neither). */
#ifndef SP_EXTENSION_NAME
#define SP_EXTENSION_NAME ""
#endif
#ifndef SP_EXTENSION_DIR
#define SP_EXTENSION_DIR ""
#endif

#define SHIM_PREFIX "scope-profiler-shim-"

static char shim[PATH_MAX];        /* the folder; "" when there is none */
static pid_t shim_pid;             /* the process that made it, and removes it */

/* Empties the open folder fd (closed here), never following a symlink:
 * each level is opened relative to its parent with O_NOFOLLOW. */
static void clear_folder(int fd)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			clear_folder(sub);
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd(d), e->d_name, 0);
		}
	}
	closedir(d);
}

static void remove_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	clear_folder(fd);
	rmdir(path);
}

/* How long a dead run's folder that holds its children's profiles is kept
 * for `recover` (its own partial file names the folder). */
#define KEEP_SECONDS (24 * 3600)

/* When process pid started (seconds since the epoch, from /proc), or -1
 * when that cannot be told. */
static double started(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	/* Field 22, starttime, in clock ticks since boot; the fields count
	 * from after the command's ")" (field 2, which may hold spaces). */
	char *at = strrchr(buf, ')');
	unsigned long long ticks = 0;
	for (int field = 2; at && field < 22; field++)
		at = strchr(at + 1, ' ');
	if (!at || sscanf(at + 1, "%llu", &ticks) != 1)
		return -1;
	f = fopen("/proc/stat", "re");
	unsigned long long boot = 0;
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "btime %llu", &boot) == 1)
			break;
	if (f)
		fclose(f);
	long hz = sysconf(_SC_CLK_TCK);
	return boot && hz > 0 ? (double)boot + (double)ticks / (double)hz : -1;
}

/* Whether the folder at path of a run that died is still wanted: a child
 * process of it still runs (its mark names it: a process of this user of
 * that pid, started before the mark was made, not one that took the pid
 * over since), or it holds a child's profile written less than
 * KEEP_SECONDS ago. */
static int still_wanted(const char *path)
{
	DIR *d = opendir(path);
	int wanted = 0;
	time_t now = time(NULL);
	for (struct dirent *e; d && !wanted && (e = readdir(d));) {
		struct stat st;
		char *end;
		if (strncmp(e->d_name, "child-", 6) == 0) {
			long pid = strtol(e->d_name + 6, &end, 10);
			double since;
			wanted = !*end && pid > 0 && pid <= INT_MAX && kill((pid_t)pid, 0) == 0 &&
				 fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				 ((since = started(pid)) < 0 || since <= (double)st.st_mtime + 2);
		} else if (strncmp(e->d_name, "proc-", 5) == 0) {
			wanted = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				 now - st.st_mtime < KEEP_SECONDS;
		}
	}
	if (d)
		closedir(d);
	return wanted;
}

/* This user's folders of runs on this host that died without removing
 * theirs: their process is gone, and the folder is not still wanted. */
static void remove_stale(const char *tmp, const char *host)
{
	char mine[PATH_MAX], path[PATH_MAX];
	int n = snprintf(mine, sizeof mine, SHIM_PREFIX "%s-", host);
	DIR *d = opendir(tmp);
	if (!d || n < 0 || (size_t)n >= sizeof mine) {
		if (d)
			closedir(d);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *pid = e->d_name + n;
		struct stat st;
		char *end;
		if (strncmp(e->d_name, mine, (size_t)n) != 0 || *pid < '0' || *pid > '9')
			continue;
		long p = strtol(pid, &end, 10);
		if ((*end != '-' && *end) || p <= 0 || p > INT_MAX ||
		    (size_t)snprintf(path, sizeof path, "%s/%s", tmp, e->d_name) >= sizeof path ||
		    lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (kill((pid_t)p, 0) != 0 && errno == ESRCH && !still_wanted(path))
			remove_tree(path);
	}
	closedir(d);
}

static int write_module(void);

/* Makes the folder (name into shim) in tmp, the module in it: 0, or -1. */
static int make_folder_in(const char *tmp)
{
	struct utsname u;
	char host[sizeof u.nodename], abs_tmp[PATH_MAX];
	/* Absolute: children that change folder find it, and so does
	 * `recover` (the run's partial file names it). */
	if (realpath(tmp, abs_tmp))
		tmp = abs_tmp;
	if (uname(&u) != 0)
		snprintf(u.nodename, sizeof u.nodename, "localhost");
	snprintf(host, sizeof host, "%s", u.nodename);
	for (char *c = host; *c; c++)
		*c = *c == '/' ? '_' : *c;
	remove_stale(tmp, host);
	for (int tries = 0; tries < 8; tries++) {
		unsigned char r[4] = {0};
		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
			return -1;
		if ((size_t)snprintf(shim, sizeof shim, "%s/" SHIM_PREFIX "%s-%d-%02x%02x%02x%02x", tmp, host,
				     (int)getpid(), r[0], r[1], r[2], r[3]) >= sizeof shim)
			break;
		if (mkdir(shim, 0700) == 0) {
			if (write_module() == 0) {
				shim_pid = getpid();   /* ours from here on: removed after the profile */
				return 0;
			}
			remove_tree(shim);   /* a full disk: the next folder */
			break;
		}
		if (errno != EEXIST)
			break;
	}
	shim[0] = '\0';
	return -1;
}

/* Makes the folder and its module in the first folder for temporary files
 * where they can be made ($TMPDIR, else /tmp, ..., as Python's tempfile
 * tries them: a $TMPDIR that is missing, read-only or full left the
 * subprocesses without the module): 0, or -1 when none can (they then lack
 * it). */
static int make_folder(void)
{
	const char *dirs[6];
	size_t n = sp_outpath_tmp_dirs(dirs, sizeof dirs / sizeof dirs[0]);
	for (size_t i = 0; i < n; i++)
		if (make_folder_in(dirs[i]) == 0)
			return 0;
	return -1;
}

/* Writes the no-op module, its version and the run's Python's (X.Y)
 * filled in. */
static int write_module(void)
{
	static const char *const marks[][2] = {
		{"@VERSION@", SP_VERSION},
		{"@PYTHON@", Py_STRINGIFY(PY_MAJOR_VERSION) "." Py_STRINGIFY(PY_MINOR_VERSION)},
	};
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/scope_profiler.py", shim);
	FILE *f = fopen(path, "wxe");
	if (!f)
		return -1;
	const char *src = (const char *)scope_profiler_shim_py, *end = src + scope_profiler_shim_py_len;
	for (;;) {
		const char *at = NULL;
		size_t k = 0;
		for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
			const char *m = memmem(src, (size_t)(end - src), marks[i][0], strlen(marks[i][0]));
			if (m && (!at || m < at)) {
				at = m;
				k = i;
			}
		}
		if (!at)
			break;
		fwrite(src, 1, (size_t)(at - src), f);
		fputs(marks[k][1], f);
		src = at + strlen(marks[k][0]);
	}
	fwrite(src, 1, (size_t)(end - src), f);
	return fclose(f) == 0 ? 0 : -1;
}

/* This module built for plain python, for spawned children: beside the
 * executable (a build tree: scope_profiler<EXT_SUFFIX>), else installed as
 * the package scope_profiler/ (its __init__<EXT_SUFFIX>) where pip or `make
 * install` puts it beside the executable's PREFIX/bin
 * (PREFIX/lib/python3.X/site-packages: a venv, ~/.local; dist-packages:
 * Debian's /usr/local), else in SP_EXTENSION_DIR (make install's folder).
 * Into path; 0, or -1 when none has it. */
static int extension_path(char *path, size_t len)
{
	static const char pkg[] = "scope_profiler";
	char exe[PATH_MAX], init[128], cand[4][PATH_MAX + 160];
	const char *name = SP_EXTENSION_NAME;
	size_t k = 0;
	struct stat st;
	if (!*name || strncmp(name, pkg, sizeof pkg - 1) != 0)
		return -1;
	snprintf(init, sizeof init, "%s/__init__%s", pkg, name + sizeof pkg - 1);
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';             /* its folder: PREFIX/bin */
		char *up = strrchr(exe, '/');
		snprintf(cand[k++], sizeof cand[0], "%s/%s", exe, name);
		if (up) {
			*up = '\0';
			snprintf(cand[k++], sizeof cand[0], "%s/lib/python%d.%d/site-packages/%s", exe,
				 PY_MAJOR_VERSION, PY_MINOR_VERSION, init);
			snprintf(cand[k++], sizeof cand[0], "%s/lib/python%d.%d/dist-packages/%s", exe,
				 PY_MAJOR_VERSION, PY_MINOR_VERSION, init);
		}
	}
	if (*SP_EXTENSION_DIR)
		snprintf(cand[k++], sizeof cand[0], "%s/%s", SP_EXTENSION_DIR, init);
	for (size_t i = 0; i < k; i++)
		if (stat(cand[i], &st) == 0 && S_ISREG(st.st_mode) && strlen(cand[i]) < len) {
			snprintf(path, len, "%s", cand[i]);
			return 0;
		}
	return -1;
}

/* os.environ[key] = value (so that the script and its children see it). */
static int set_env(PyObject *environ, const char *key, const char *value)
{
	PyObject *v = PyUnicode_DecodeFSDefault(value);
	int rc = v ? PyMapping_SetItemString(environ, key, v) : -1;
	Py_XDECREF(v);
	return rc;
}

/* --subprocesses: the children's profiles go into the folder
 * (_children_dir, session.c), and the shim loads this module, when it is
 * to be had. */
static int offer_module(PyObject *m, PyObject *environ)
{
	char path[PATH_MAX];
	PyObject *folder = PyUnicode_DecodeFSDefault(shim);   /* a $TMPDIR that is not UTF-8 too */
	PyObject *r = folder ? PyObject_CallMethod(m, "_children_dir", "O", folder) : NULL;
	Py_XDECREF(folder);
	if (!r)
		return -1;
	Py_DECREF(r);
	if (extension_path(path, sizeof path) == 0)
		return set_env(environ, "SCOPE_PROFILER_MODULE", path) != 0 ||
		       set_env(environ, "SCOPE_PROFILER_CHILDREN", shim) != 0 ? -1 : 0;
	PySys_FormatStderr("scope-profiler: run: warning: --subprocesses: %s is neither beside the executable "
			   "nor installed with it (nor in %s): spawned Python children are not profiled "
			   "(forked ones are); `make module` builds it\n", SP_EXTENSION_NAME,
			   *SP_EXTENSION_DIR ? SP_EXTENSION_DIR : "the install folder");
	return 0;
}

/* _shim_offer(subprocesses) -> whether the folder holds the module (the
 * run's hooks then mark its forks, _shim_mark). */
static PyObject *shim_offer(PyObject *m, PyObject *arg)
{
	int subprocesses = PyObject_IsTrue(arg);
	if (subprocesses < 0)
		return NULL;
	if (make_folder() != 0)
		Py_RETURN_FALSE;
	PyObject *os = PyImport_ImportModule("os");
	PyObject *environ = os ? PyObject_GetAttrString(os, "environ") : NULL;
	PyObject *old = environ ? PyMapping_GetItemString(environ, "PYTHONPATH") : NULL;
	PyObject *folder = PyUnicode_DecodeFSDefault(shim), *path = NULL, *res = NULL;
	if (!old && environ && PyErr_ExceptionMatches(PyExc_KeyError))
		PyErr_Clear();
	if (!environ || !folder || PyErr_Occurred() || (subprocesses && offer_module(m, environ) != 0))
		goto out;
	path = old && PyUnicode_GetLength(old) ? PyUnicode_FromFormat("%U:%U", folder, old) : Py_NewRef(folder);
	if (path && PyMapping_SetItemString(environ, "PYTHONPATH", path) == 0 &&
	    PyList_Append(PySys_GetObject("path"), folder) == 0)
		res = Py_NewRef(Py_True);
out:
	Py_XDECREF(os);
	Py_XDECREF(environ);
	Py_XDECREF(old);
	Py_XDECREF(folder);
	Py_XDECREF(path);
	return res;
}

int sp_shim_unmarked;

void sp_shim_mark_now(void)
{
	char path[PATH_MAX + 32];
	sp_shim_unmarked = 0;
	if (*shim) {
		snprintf(path, sizeof path, "%s/child-%d", shim, (int)getpid());
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
	}
}

/* _shim_mark(): in a fork of the run (its os.register_at_fork hook), its
 * mark, to be counted at the end as a subprocess that imported the shim. */
static PyObject *shim_mark(PyObject *m, PyObject *unused)
{
	sp_shim_mark_now();
	Py_RETURN_NONE;
}

/* _shim_mark_when_used(any_region): in a fork of the run that is not
 * profiled, the mark once it can record: now if the run had made a region,
 * else at its first (a Pool's worker of a script that never used
 * scope_profiler is no child that lost calls). */
static PyObject *shim_mark_when_used(PyObject *m, PyObject *any_region)
{
	int any = PyObject_IsTrue(any_region);
	if (any < 0)
		return NULL;
	if (any)
		sp_shim_mark_now();
	else
		sp_shim_unmarked = 1;
	Py_RETURN_NONE;
}

void sp_shim_end(Py_ssize_t merged, Py_ssize_t recovered)
{
	if (!*shim || getpid() != shim_pid)
		return;
	long children = 0;
	DIR *d = opendir(shim);
	for (struct dirent *e; d && (e = readdir(d));)
		children += strncmp(e->d_name, "child-", 6) == 0;
	if (d)
		closedir(d);
	if (merged >= 0 && recovered > 0)
		PySys_FormatStderr("scope-profiler: run: warning: %ld of %ld profiled child processes did not "
				   "finish their profile (killed, still running at the end, or it failed): their calls up to "
				   "their last flush are in this profile\n", (long)recovered,
				   children > merged ? children : (long)merged);
	if (merged >= 0 && children > merged)
		PySys_FormatStderr("scope-profiler: run: warning: %ld of %ld profiled child processes wrote no "
				   "profile (killed, still running at the end, or it failed): their calls are not in this "
				   "profile\n", children - (long)merged, children);
	else if (merged < 0 && children)
		PySys_FormatStderr("scope-profiler: run: warning: %ld child process%s imported scope_profiler "
				   "and %s not profiled: %s calls are not in this profile\n", children,
				   children > 1 ? "es" : "", children > 1 ? "were" : "was",
				   children > 1 ? "their" : "its");
	PyErr_Clear();
	remove_tree(shim);
	shim[0] = '\0';
}

PyMethodDef sp_shim_methods[] = {
	{"_shim_offer", shim_offer, METH_O, NULL},
	{"_shim_mark", shim_mark, METH_NOARGS, NULL},
	{"_shim_mark_when_used", shim_mark_when_used, METH_O, NULL},
	{NULL},
};

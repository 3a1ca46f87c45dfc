/* venv.c - the virtual environment a run starts in, as its own python
 * would start: the one whose bin/ holds this executable (pip installed it
 * there), else the activated one (VIRTUAL_ENV), else the one whose python3
 * is the first on PATH. The interpreter is then given that python as its
 * executable, and CPython's own path configuration does the rest from the
 * environment's pyvenv.cfg (getpath: the base installation from `home`;
 * site: sys.prefix, site-packages, .pth files, system site packages, the
 * user site rules). No Python API here: run_session.c passes the embedded
 * version in. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sp_venv.h"

/* Whether dir/pyvenv.cfg is a file. */
static int has_cfg(const char *dir)
{
	char cfg[PATH_MAX];
	struct stat st;
	if (snprintf(cfg, sizeof cfg, "%s/pyvenv.cfg", dir) >= (int)sizeof cfg)
		return 0;
	return stat(cfg, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folder above the folder of path ("/v/bin/x" -> "/v") into out; 0,
 * or -1 when path has no such folder. */
static int grandparent(const char *path, char *out, size_t len)
{
	if (snprintf(out, len, "%s", path) >= (int)len)
		return -1;
	for (int i = 0; i < 2; i++) {
		char *slash = strrchr(out, '/');
		if (!slash)
			return -1;
		*slash = '\0';
	}
	return out[0] ? 0 : -1;
}

/* The first executable NAME on path (a PATH value) into out; 0 or -1. */
static int on_path(const char *path, const char *name, char *out, size_t len)
{
	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		/* An empty entry is the current folder, as for execvp. */
		int w = n ? snprintf(out, len, "%.*s/%s", (int)n, path, name) : snprintf(out, len, "./%s", name);
		if (w > 0 && (size_t)w < len && access(out, X_OK) == 0)
			return 0;
		path = end ? end + 1 : NULL;
	}
	return -1;
}

int sp_venv_python_on_path(const char *path, const char *real, char *out, size_t len)
{
	char resolved[PATH_MAX];
	return on_path(path, "python3", out, len) == 0 && out[0] == '/' && realpath(out, resolved) &&
	       strcmp(resolved, real) == 0 ? 0 : -1;
}

/* The value of key in dir's pyvenv.cfg, its blanks trimmed, into out; 0,
 * or -1 when it has none. */
static int cfg_value(const char *dir, const char *key, char *out, size_t len)
{
	char cfg[PATH_MAX], line[PATH_MAX + 64];
	if (snprintf(cfg, sizeof cfg, "%s/pyvenv.cfg", dir) >= (int)sizeof cfg)
		return -1;
	FILE *f = fopen(cfg, "r");
	if (!f)
		return -1;
	int rc = -1;
	size_t klen = strlen(key);
	while (rc != 0 && fgets(line, sizeof line, f)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		char *k = line, *ke = eq, *v = eq + 1, *ve = v + strlen(v);
		while (*k == ' ' || *k == '\t')
			k++;
		while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
			ke--;
		if ((size_t)(ke - k) != klen || strncmp(k, key, klen) != 0)
			continue;
		while (*v == ' ' || *v == '\t')
			v++;
		while (ve > v && (ve[-1] == '\n' || ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if ((size_t)(ve - v) < len) {
			snprintf(out, len, "%.*s", (int)(ve - v), v);
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

/* Whether path resolves to the file at resolved. */
static int resolves_to(const char *path, const char *resolved)
{
	char a[PATH_MAX];
	return realpath(path, a) && strcmp(a, resolved) == 0;
}

/* Whether the environment dir was made from the installation of the
 * embedded python (a resolved path, .../pythonX.Y): the python its
 * pyvenv.cfg names (`executable`, python -m venv's from 3.11;
 * `base-executable`, virtualenv's) resolves to it, or its `home` is that
 * python's folder (as resolved) or holds a python3, pythonX.Y or python
 * that resolves to it, or the embedded python is the environment's own (a
 * copy, made with --copies). An environment that names no home is taken. */
static int same_installation(const char *dir, const char *embedded)
{
	char home[PATH_MAX], exe[PATH_MAX], folder[PATH_MAX], p[PATH_MAX + 32];
	if (!embedded || cfg_value(dir, "home", home, sizeof home) != 0)
		return 1;
	if ((cfg_value(dir, "executable", exe, sizeof exe) == 0 && resolves_to(exe, embedded)) ||
	    (cfg_value(dir, "base-executable", exe, sizeof exe) == 0 && resolves_to(exe, embedded)))
		return 1;
	snprintf(folder, sizeof folder, "%s", embedded);
	char *slash = strrchr(folder, '/');
	if (!slash)
		return 1;
	*slash = '\0';           /* the embedded python's folder */
	char a[PATH_MAX];
	if (realpath(home, a) && strcmp(a, folder) == 0)
		return 1;
	snprintf(p, sizeof p, "%s/bin", dir);
	if (realpath(p, a) && strcmp(a, folder) == 0)
		return 1;
	const char *names[] = {"python3", slash + 1, "python"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		snprintf(p, sizeof p, "%s/%s", home, names[i]);
		if (resolves_to(p, embedded))
			return 1;
	}
	return 0;
}

/* Reads "major.minor" from the pyvenv.cfg of dir (key `version`, written
 * by python -m venv, or `version_info`, by virtualenv) into *major,
 * *minor; 0, or -1 when it says none. */
static int cfg_version(const char *dir, int *major, int *minor)
{
	char v[64];
	return (cfg_value(dir, "version", v, sizeof v) == 0 || cfg_value(dir, "version_info", v, sizeof v) == 0) &&
	       sscanf(v, "%d.%d", major, minor) == 2 ? 0 : -1;
}

enum sp_venv_found sp_venv_find(const struct sp_venv_where *w, int major, int minor, struct sp_venv *v,
				char *err, size_t len)
{
	char dir[PATH_MAX], py[PATH_MAX];
	const char *how = NULL;
	/* 1. The executable's own environment (pip installed it in its bin/). */
	if (w->self && grandparent(w->self, dir, sizeof dir) == 0 && has_cfg(dir))
		how = "the one scope-profiler is installed in";
	/* 2. The activated one. */
	if (!how && w->virtual_env && w->virtual_env[0]) {
		if (snprintf(dir, sizeof dir, "%s", w->virtual_env) >= (int)sizeof dir || !has_cfg(dir)) {
			snprintf(err, len, "VIRTUAL_ENV is '%s', which is no virtual environment (it has no "
				 "pyvenv.cfg): deactivate it, or unset VIRTUAL_ENV", w->virtual_env);
			return SP_VENV_WRONG;
		}
		how = "VIRTUAL_ENV";
	}
	/* 3. The one whose python3 comes first on PATH. */
	if (!how && on_path(w->path, "python3", py, sizeof py) == 0 &&
	    grandparent(py, dir, sizeof dir) == 0 && has_cfg(dir))
		how = "its python3 is the first on PATH";
	if (!how)
		return SP_VENV_NONE;
	int vmaj, vmin;
	if (cfg_version(dir, &vmaj, &vmin) == 0 && (vmaj != major || vmin != minor)) {
		snprintf(err, len, "the virtual environment %s (%s) is Python %d.%d, and this scope-profiler "
			 "embeds Python %d.%d: install scope-profiler into it (%s/bin/python -m pip install "
			 "SCOPE-PROFILER-SOURCE), or build it for that Python (make PYTHON=%s/bin/python3)",
			 dir, how, vmaj, vmin, major, minor, dir, dir);
		return SP_VENV_WRONG;
	}
	if (!same_installation(dir, w->embedded)) {
		char home[PATH_MAX];
		if (cfg_value(dir, "home", home, sizeof home) != 0)
			home[0] = '\0';
		snprintf(err, len, "the virtual environment %s (%s) was made from the Python in %s, and this "
			 "scope-profiler embeds %s, whose standard library differs: install scope-profiler "
			 "into it (%s/bin/python -m pip install SCOPE-PROFILER-SOURCE), or build it for that "
			 "Python (make PYTHON=%s/bin/python3)", dir, how, home, w->embedded, dir, dir);
		return SP_VENV_WRONG;
	}
	/* Its python, as a user of the environment starts it. */
	static const char *const names[] = {"python3", "python"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		int n = snprintf(v->python, sizeof v->python, "%s/bin/%s", dir, names[i]);
		if (n > 0 && (size_t)n < sizeof v->python && access(v->python, X_OK) == 0) {
			snprintf(v->dir, sizeof v->dir, "%s", dir);
			v->how = how;
			return SP_VENV_FOUND;
		}
	}
	snprintf(err, len, "the virtual environment %s (%s) has no working bin/python3 (is the Python "
		 "it was made from still installed?)", dir, how);
	return SP_VENV_WRONG;
}

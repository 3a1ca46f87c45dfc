/* sp_venv.h - the virtual environment a run starts in (venv.c). */
#ifndef SP_VENV_H
#define SP_VENV_H

#include <limits.h>
#include <stddef.h>

/* Where to look: the executable's own path (/proc/self/exe), and the
 * environment's VIRTUAL_ENV and PATH (each may be NULL). */
struct sp_venv_where {
	const char *self;
	const char *virtual_env;
	const char *path;
	/* The embedded interpreter's python (a resolved path), or NULL: an
	 * environment made from another installation is refused. */
	const char *embedded;
};

struct sp_venv {
	char dir[PATH_MAX];      /* the environment (its pyvenv.cfg is there) */
	char python[PATH_MAX];   /* its bin/python3 (or bin/python): sys.executable */
	const char *how;         /* why this one, for messages */
};

enum sp_venv_found {
	SP_VENV_NONE,            /* no virtual environment: the embedded Python's own */
	SP_VENV_FOUND,           /* *v filled */
	SP_VENV_WRONG,           /* one that cannot be used: err says why and what to do */
};

/* The first python3 on path (a PATH value) into out when it is the
 * interpreter at `real` (a resolved path): what python names itself,
 * started as `python3`. 0, or -1 when it is another program. */
int sp_venv_python_on_path(const char *path, const char *real, char *out, size_t len);

/* The environment the run starts in: the one whose bin/ holds w->self,
 * else w->virtual_env (activated; one that is not an environment is an
 * error), else the one whose python3 is the first on w->path. An
 * environment of another Python than major.minor (its pyvenv.cfg's
 * version), one made from another installation than w->embedded's (its
 * `home`: another standard library), or one without a python in bin/, is
 * SP_VENV_WRONG. */
enum sp_venv_found sp_venv_find(const struct sp_venv_where *w, int major, int minor, struct sp_venv *v,
				char *err, size_t len);

#endif

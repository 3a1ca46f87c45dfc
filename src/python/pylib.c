/* pylib.c - how the interpreter is linked into this program, for --version
 * and the benchmarks: the static archive (scripts/py-static-probe.sh, the
 * Makefile's PY_STATIC) or a shared libpython, found where the dynamic
 * loader found Py_Initialize. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdio.h>

#include "sp_session.h"

void sp_python_library(char *buf, size_t len)
{
	Dl_info where = {0}, self = {0};
	if (!dladdr((void *)Py_Initialize, &where) || !where.dli_fname)
		snprintf(buf, len, "%s", SP_PYTHON_VERSION);
	else if (dladdr((void *)sp_python_library, &self) && self.dli_fbase == where.dli_fbase)
		snprintf(buf, len, "%s, linked in", SP_PYTHON_VERSION);
	else
		snprintf(buf, len, "%s, shared %s", SP_PYTHON_VERSION, where.dli_fname);
}

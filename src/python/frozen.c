/* frozen.c - the module's submodules written in Python, frozen at build
 * time (marshalled bytecode of the interpreter linked in, as the module's
 * own layer and scope_profiler._charts are): scope_profiler.ipython_magics
 * (%load_ext scope_profiler), .plotting_scripts and .post_processing (the
 * original package's plot functions and its post-processing command line).
 * The Python layer's importer (_Submodules) runs one on its first import. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include <string.h>

#include "sp_frozen.h"
#include "sp_pymod_ipython_magics.h"
#include "sp_pymod_plotting_scripts.h"
#include "sp_pymod_post_processing.h"

static const struct {
	const char *name;
	const unsigned char *code;
	unsigned int len;
} frozen[] = {
	{"ipython_magics", scope_profiler_ipython_magics_pyc, sizeof scope_profiler_ipython_magics_pyc},
	{"plotting_scripts", scope_profiler_plotting_scripts_pyc, sizeof scope_profiler_plotting_scripts_pyc},
	{"post_processing", scope_profiler_post_processing_pyc, sizeof scope_profiler_post_processing_pyc},
};

/* _frozen_code(short name) -> that submodule's code object; KeyError for a
 * name that is not one of them. */
static PyObject *fr_code(PyObject *m, PyObject *name)
{
	const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	if (!s) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "_frozen_code() takes a str");
		return NULL;
	}
	for (size_t i = 0; i < sizeof frozen / sizeof frozen[0]; i++)
		if (strcmp(frozen[i].name, s) == 0)
			return PyMarshal_ReadObjectFromString((const char *)frozen[i].code,
							      (Py_ssize_t)frozen[i].len);
	PyErr_SetObject(PyExc_KeyError, name);
	return NULL;
}

PyMethodDef sp_frozen_methods[] = {
	{"_frozen_code", fr_code, METH_O, NULL},
	{NULL},
};

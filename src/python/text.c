/* text.c - Python text as the profile stores it: UTF-8, where a character
 * UTF-8 cannot hold (a lone surrogate, as os.fsdecode makes of file names
 * that are not UTF-8) becomes a backslash escape instead of an error that
 * would lose the whole profile at the end of the run. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "sp_pytext.h"

PyObject *sp_text_storable(PyObject *s)
{
	if (PyUnicode_AsUTF8(s))
		return Py_NewRef(s);
	PyErr_Clear();
	PyObject *b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
	if (!b)
		return NULL;
	PyObject *t = PyUnicode_FromStringAndSize(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b));
	Py_DECREF(b);
	return t;
}

char *sp_text_dup(PyObject *s)
{
	PyObject *t = sp_text_storable(s);
	const char *u = t ? PyUnicode_AsUTF8(t) : NULL;
	char *d = u ? strdup(u) : NULL;
	if (u && !d)
		PyErr_NoMemory();
	Py_XDECREF(t);
	return d;
}

/* sp_pyedge.h - the built-in module's edge to the C library (pyedge.c):
 * what every file of the module that hands the library's results to
 * Python shares. Include <Python.h> first. */
#ifndef SP_PYEDGE_H
#define SP_PYEDGE_H

#include "sp_error.h"
#include "sp_profile.h"

/* Raises the Python exception of an sp_err (the one mapping of the module):
 * SP_ENOENT FileNotFoundError, SP_ENOMEM MemoryError, anything else
 * OSError, with msg. Returns NULL, for `return sp_py_err(...)`. */
PyObject *sp_py_err(enum sp_err code, const char *msg);

/* The rendered summary of p as a str (lines 0), or its line tables that
 * many columns wide (-1: whole source lines; sp_py_lines_width), titled
 * title (a path, or "(in memory)"); "" for line tables when there are
 * none; NULL with an exception set. */
PyObject *sp_py_render(const struct sp_profile *p, const char *title, int lines);

/* sp_render_lines_width of a Python stream (its fileno; none: -1). */
int sp_py_lines_width(PyObject *stream);

#endif

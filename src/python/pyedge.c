/* pyedge.c - the built-in module's edge to the C library (sp_pyedge.h):
 * its one sp_err -> exception mapper, and a profile rendered into a str. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_error.h"
#include "sp_profile.h"
#include "sp_pyedge.h"
#include "sp_render.h"

PyObject *sp_py_err(enum sp_err code, const char *msg)
{
	PyObject *type = code == SP_ENOENT ? PyExc_FileNotFoundError
		: code == SP_ENOMEM ? PyExc_MemoryError : PyExc_OSError;
	PyErr_SetString(type, msg && *msg ? msg : sp_strerror(code));
	return NULL;
}

PyObject *sp_py_render(const struct sp_profile *p, const char *title, int lines)
{
	char *text = NULL;
	size_t len = 0;
	struct sp_error err = {0};
	/* The summary fits a screen; its last line says how to see all. */
	char hint[PATH_MAX + 64];
	if (strcmp(title, "(in memory)") == 0)
		snprintf(hint, sizeof hint, "a run with `-o FILE`, then `scope-profiler summary --all FILE`,");
	else
		snprintf(hint, sizeof hint, "`scope-profiler summary --all %s`", title);
	struct sp_render_opts opts = { .parts = SP_RENDER_ALL, .more_hint = hint };
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return PyErr_NoMemory();
	struct sp_render_lines_opts lo = { .width = lines };
	enum sp_err rc = lines ? sp_render_lines_opts(f, p, title, &lo, &err)
			       : sp_render_summary_opts(f, p, title, &opts, &err);
	fclose(f);
	PyObject *s = NULL;
	if (lines && rc == SP_ENOTPROF)
		s = PyUnicode_FromString("");
	else if (rc != SP_OK)
		PyErr_SetString(PyExc_RuntimeError, err.msg);
	else
		s = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace");
	free(text);
	return s;
}

int sp_py_lines_width(PyObject *stream)
{
	int fd = stream && stream != Py_None ? PyObject_AsFileDescriptor(stream) : -1;
	if (fd < 0)
		PyErr_Clear();   /* no file (a StringIO): COLUMNS, or whole lines */
	return sp_render_lines_width(fd);
}

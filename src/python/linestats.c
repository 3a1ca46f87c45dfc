/* linestats.c - a region's line timings while its session runs: the
 * regions' get_stats() and print_stats() (what the earlier releases'
 * LineProfilerRegion offered), from linetrace.c's tables, printed by the
 * report layer's line renderer as finalize() prints them. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_linestats.h"
#include "sp_linetrace.h"
#include "sp_profile.h"
#include "sp_pyedge.h"
#include "sp_region.h"

/* A one-rank profile holding the line tables of the functions timed under
 * region `name` (those with hits); 0, or -1 with an exception set. */
static int region_lines(PyObject *name, struct sp_profile **out)
{
	const char *want = PyUnicode_AsUTF8(name);
	struct sp_profile *p = want ? calloc(1, sizeof *p) : NULL;
	struct sp_rank *rk = p ? calloc(1, sizeof *rk) : NULL;
	if (!rk) {
		free(p);
		if (want)
			PyErr_NoMemory();
		return -1;
	}
	p->ranks = rk;
	p->nranks = 1;
	rk->run_start_ns = rk->run_end_ns = SP_NO_TIME;
	if (sp_linetrace_collect(rk, name) != 0) {
		sp_profile_free(p);
		return -1;
	}
	*out = p;
	return 0;
}

/* {(filename, first line, function): [(line, hits, time_ns), ...]} of p's
 * tables, lines with hits only; a new reference or NULL. */
static PyObject *timings(const struct sp_rank *rk)
{
	PyObject *d = PyDict_New();
	for (size_t i = 0; d && i < rk->nlines; i++) {
		const struct sp_line_table *t = &rk->lines[i];
		PyObject *rows = PyList_New(0);
		PyObject *key = rows ? Py_BuildValue("(sis)", t->filename, (int)t->first_line, t->function) : NULL;
		for (size_t j = 0; key && j < t->n; j++) {
			if (!t->hits[j])
				continue;
			PyObject *row = Py_BuildValue("(iLL)", (int)(t->first_line + (int32_t)j),
						      (long long)t->hits[j], (long long)t->time_ns[j]);
			if (!row || PyList_Append(rows, row) != 0)
				Py_CLEAR(key);
			Py_XDECREF(row);
		}
		if (!key || PyDict_SetItem(d, key, rows) != 0)
			Py_CLEAR(d);
		Py_XDECREF(key);
		Py_XDECREF(rows);
	}
	return d;
}

PyObject *sp_region_get_stats(PyObject *self, PyObject *unused)
{
	struct sp_profile *p;
	if (region_lines(((RegionObject *)self)->name, &p) != 0)
		return NULL;
	PyObject *t = timings(&p->ranks[0]), *res = NULL;
	sp_profile_free(p);
	PyObject *types = t ? PyImport_ImportModule("types") : NULL;
	PyObject *ns = types ? PyObject_GetAttrString(types, "SimpleNamespace") : NULL;
	PyObject *kw = ns ? Py_BuildValue("{sOsdsO}", "timings", t, "unit", 1e-9, "region",
					  ((RegionObject *)self)->name) : NULL;
	PyObject *args = kw ? PyTuple_New(0) : NULL;
	if (args)
		res = PyObject_Call(ns, args, kw);
	Py_XDECREF(args);
	Py_XDECREF(kw);
	Py_XDECREF(ns);
	Py_XDECREF(types);
	Py_XDECREF(t);
	return res;
}

PyObject *sp_region_print_stats(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"stream", NULL};
	PyObject *stream = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:print_stats", kwlist, &stream))
		return NULL;
	RegionObject *r = (RegionObject *)self;
	struct sp_profile *p;
	if (region_lines(r->name, &p) != 0)
		return NULL;
	PyObject *title = PyUnicode_FromFormat("region %R", r->name);
	const char *t = title ? PyUnicode_AsUTF8(title) : NULL;
	PyObject *out = stream != Py_None ? Py_NewRef(stream) : Py_XNewRef(PySys_GetObject("stdout"));
	PyObject *text = !t ? NULL : p->ranks[0].nlines ? sp_py_render(p, t, sp_py_lines_width(out))
		: PyUnicode_FromFormat("Line profile: region %R has no timed lines (line timing is off, "
				       "or its functions have not run)\n", r->name);
	sp_profile_free(p);
	Py_XDECREF(title);
	if (!text) {
		Py_XDECREF(out);
		return NULL;
	}
	int rc = out ? PyFile_WriteObject(text, out, Py_PRINT_RAW) : 0;
	Py_XDECREF(out);
	Py_DECREF(text);
	if (rc != 0)
		return NULL;
	Py_RETURN_NONE;
}

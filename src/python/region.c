/* region.c - the region object (sp_region.h): its creation in the class
 * of the mode, its buffer and columns as the mode asks, the registry of
 * regions by name, and what a session's reset and end do to them. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "sp_likwid.h"
#include "sp_nvtx.h"
#include "sp_mode.h"
#include "sp_pytext.h"
#include "sp_recorder.h"
#include "sp_shim.h"
#include "sp_region.h"
#include "sp_spill.h"

PyObject *sp_registry;                /* dict: name -> RegionObject, creation order */
size_t sp_unmatched_exits;
RegionObject *sp_unmatched_region;

/* The class new regions take: the mode's (region_types.c sets it). */
static PyTypeObject *new_class;

void sp_regions_set_class(PyTypeObject *type)
{
	new_class = type;
}

/* A region of the --likwid mode: registered with LIKWID once (by name). */
static int likwid_register(RegionObject *r)
{
	if (r->likwid_id >= 0)
		return 0;
	const char *tag = PyUnicode_AsUTF8(r->name);
	if (!tag)
		return -1;
	if ((r->likwid_id = sp_likwid_register(tag)) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

int sp_region_fit(RegionObject *r)
{
	/* An empty buffer past the new limit is freed first (it grows again
	 * from a few events): freeing forgets which columns it keeps, set
	 * just below. */
	r->buf.limit = sp_mode.buffer_limit;
	if (r->buf.n == 0 && r->buf.cap > sp_mode.buffer_limit)
		sp_buf_free(&r->buf);
	if ((sp_mode.threads && sp_buf_keep_lanes(&r->buf) != 0) ||
	    (sp_mode.memory && sp_buf_keep_values(&r->buf, SP_VALUES_ALLOC_BYTES) != 0)) {
		PyErr_NoMemory();
		return -1;
	}
	if (sp_mode.nvtx && !r->nvtx_name) {
		/* Registered once, for the process (sp_nvtx.h). */
		const char *u = PyUnicode_AsUTF8(r->name);
		if (!u)
			return -1;
		r->nvtx_name = sp_nvtx_name(u);
	}
	return sp_mode.likwid ? likwid_register(r) : 0;
}

/* The names that regions stand for in the file in place of their own (an
 * invalid name's escaped form, or a name such a form had taken): created
 * with the first. */
static PyObject *stand_ins;

/* A name as a warning shows it: its repr, or for a long one its first 40
 * and last 20 characters' and its length (a line, not kilobytes). */
static PyObject *shown_name(PyObject *name)
{
	Py_ssize_t n = PyUnicode_GetLength(name);
	if (n <= 80)
		return PyObject_Repr(name);
	PyObject *head = PyUnicode_Substring(name, 0, 40), *tail = PyUnicode_Substring(name, n - 20, n);
	PyObject *r = head && tail ? PyUnicode_FromFormat("%R...%R (%zd characters)", head, tail, n) : NULL;
	Py_XDECREF(head);
	Py_XDECREF(tail);
	return r;
}
/* The name region `name` is stored under: its own, or (an invalid name)
 * its escaped form; either with " [2]", " [3]"... when another region is
 * stored under it already, so that no two regions share a name in the
 * file. A new reference, said on stderr when it is not the name; NULL on
 * error. */
static PyObject *stored_name(PyObject *name)
{
	PyObject *base = sp_text_storable(name);
	if (!base || (base == name && !stand_ins))
		return base;
	if (!stand_ins && !(stand_ins = PySet_New(NULL))) {
		Py_DECREF(base);
		return NULL;
	}
	PyObject *stored = Py_NewRef(base);
	for (long k = 2;; k++) {
		int taken = PySet_Contains(stand_ins, stored);
		if (!taken && stored != name)
			taken = PyDict_Contains(sp_registry, stored);
		if (taken <= 0) {
			if (taken < 0 || (stored != name && PySet_Add(stand_ins, stored) != 0))
				Py_CLEAR(stored);
			break;
		}
		Py_DECREF(stored);
		if (!(stored = PyUnicode_FromFormat("%U [%ld]", base, k)))
			break;
	}
	if (stored && stored != name) {
		PyObject *a = shown_name(name), *b = shown_name(stored);
		if (a && b && base != name)
			PySys_FormatStderr("scope-profiler: warning: the region name %U is not valid text "
					   "(UTF-8 cannot hold it); it is recorded as %U\n", a, b);
		else if (a && b)
			PySys_FormatStderr("scope-profiler: warning: the region name %U is taken by an "
					   "invalid name's escaped form; it is recorded as %U\n", a, b);
		Py_XDECREF(a);
		Py_XDECREF(b);
		PyErr_Clear();
	}
	Py_DECREF(base);
	return stored;
}

static PyObject *region_create(PyObject *name)
{
	Py_ssize_t len = PyUnicode_GetLength(name);
	if (len < 0)
		return NULL;
	if (len == 0) {
		PyErr_SetString(PyExc_ValueError, "a region name must not be empty");
		return NULL;
	}
	if (PyUnicode_FindChar(name, 0, 0, len, 1) >= 0) {
		PyErr_SetString(PyExc_ValueError, "a region name must not contain NUL characters");
		return NULL;
	}
	/* A name UTF-8 cannot hold (a lone surrogate) would fail the file at
	 * the end of the run: the region goes by its escaped form, said once;
	 * it is found by its own name, never by that form's text. */
	PyObject *stored = stored_name(name);
	if (!stored)
		return NULL;
	RegionObject *r = PyObject_New(RegionObject, new_class);
	if (!r) {
		Py_DECREF(stored);
		return NULL;
	}
	r->name = stored;
	sp_buf_init(&r->buf, sp_mode.buffer_limit);
	r->buf.spillable = 1;
	sp_spill_region_init(r);
	sp_agg_region_init(&r->agg);
	sp_stats_acc_init(&r->acc);
	r->index = -1;
	r->likwid_id = -1;
	r->nvtx_name = NULL;
	r->gpu_wait_ns = 0;
	r->kept_calls = 0;
	r->holds_functions = 0;
	r->peak_bytes = SP_NO_PEAK;
	r->gen = 0;
	if (__builtin_expect(sp_shim_unmarked, 0))
		sp_shim_mark_now();   /* a fork of the run that now can record */
	if (sp_region_fit(r) != 0 || PyDict_SetItem(sp_registry, name, (PyObject *)r) != 0) {
		Py_DECREF(r);
		return NULL;
	}
	return (PyObject *)r;
}

RegionObject *sp_region_lookup(PyObject *name)
{
	PyObject *r = PyDict_GetItemWithError(sp_registry, name);
	if (r)
		return (RegionObject *)r;
	if (PyErr_Occurred())
		return NULL;
	r = region_create(name);
	Py_XDECREF(r);   /* the sp_registry holds it */
	return (RegionObject *)r;
}

sp_region_exit_fn sp_region_enter_with(RegionObject *r)
{
	/* Every region is of a region class: __enter__ first, __exit__ next. */
	const PyMethodDef *m = Py_TYPE(r)->tp_methods;
	PyObject *res = m[0].ml_meth((PyObject *)r, NULL);
	if (!res)
		return NULL;
	Py_DECREF(res);
	return (sp_region_exit_fn)(void (*)(void))m[1].ml_meth;
}

void sp_regions_reset(void)
{
	sp_unmatched_exits = 0;
	sp_unmatched_region = NULL;
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	while (PyDict_Next(sp_registry, &pos, &k, &v)) {
		RegionObject *r = (RegionObject *)v;
		if (r->buf.cap > sp_mode.buffer_limit || r->buf.keep_lanes || r->buf.keep_values)
			sp_buf_free(&r->buf);
		sp_buf_clear(&r->buf);
		r->peak_bytes = SP_NO_PEAK;
		r->gpu_wait_ns = 0;
		sp_agg_region_init(&r->agg);
		sp_stats_acc_init(&r->acc);
		r->buf.limit = sp_mode.buffer_limit;
		sp_spill_region_reset(r);
		r->gen++;
	}
}

void sp_regions_release_empty(void)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	while (sp_registry && PyDict_Next(sp_registry, &pos, &k, &v))
		sp_buf_release(&((RegionObject *)v)->buf);
}

int sp_regions_init(void)
{
	if (!sp_registry && !(sp_registry = PyDict_New()))
		return -1;
	return 0;
}

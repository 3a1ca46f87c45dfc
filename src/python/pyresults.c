/* pyresults.c - profiles into Python: the read API's _read() turns a file
 * into plain Python data whose event columns reach numpy without a copy;
 * the end of a session (finalize.c) hands over its profile through the
 * same function (sp_results_data). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sp_analysis.h"
#include "sp_clock.h"
#include "sp_grow.h"
#include "sp_h5.h"
#include "sp_mpi.h"
#include "sp_nest.h"
#include "sp_profile.h"
#include "sp_pyedge.h"
#include "sp_pyresults.h"
#include "sp_render.h"
#include "sp_stream.h"
#include "sp_tree.h"

/* A column read from a file, handed to Python without a copy: the object
 * owns the malloc'd array and lends it through the buffer protocol
 * (numpy.frombuffer gives a writable array over it). */
typedef struct {
	PyObject_HEAD
	void *data;
	Py_ssize_t len;
	Py_ssize_t exports;
} ColumnObject;

static void column_dealloc(PyObject *self)
{
	free(((ColumnObject *)self)->data);
	Py_TYPE(self)->tp_free(self);
}

static int column_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	ColumnObject *c = (ColumnObject *)self;
	if (PyBuffer_FillInfo(view, self, c->data, c->len, 0, flags) != 0)
		return -1;
	c->exports++;
	return 0;
}

static void column_releasebuffer(PyObject *self, Py_buffer *view)
{
	((ColumnObject *)self)->exports--;
}

static PyBufferProcs column_as_buffer = {column_getbuffer, column_releasebuffer};

static PyTypeObject ColumnType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler._Column",
	.tp_basicsize = sizeof(ColumnObject),
	.tp_dealloc = column_dealloc,
	.tp_as_buffer = &column_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A stored column's bytes, owned here and lent to numpy.",
};

/* A column for the read API: None when not loaded; taken over without a
 * copy when *v is owned (owned set: *v becomes NULL), else copied. */
static PyObject *column_bytes(void **v, int64_t n, size_t size, int owned)
{
	if (!*v)
		Py_RETURN_NONE;
	Py_ssize_t len = (Py_ssize_t)(n * (int64_t)size);
	if (!owned)
		return PyByteArray_FromStringAndSize((const char *)*v, len);
	ColumnObject *c = PyObject_New(ColumnObject, &ColumnType);
	if (!c)
		return NULL;
	c->data = *v;
	c->len = len;
	c->exports = 0;
	*v = NULL;
	return (PyObject *)c;
}

static PyObject *time_or_none(int64_t t)
{
	if (t == SP_NO_TIME)
		Py_RETURN_NONE;
	return PyLong_FromLongLong(t);
}

/* Each region's load imbalance (sp_imbalance_of) over the ranks that
 * recorded it, as {name: float}: MPIRegion.imbalance() reads it. */
static PyObject *region_imbalances(const struct sp_profile *p)
{
	struct span { int64_t lo, hi; } *sp = NULL;
	size_t n = 0, cap = 0;
	PyObject *index = PyDict_New(), *out = NULL, *res = NULL;
	if (!index || !(res = PyDict_New()))
		goto out;
	for (size_t r = 0; r < p->nranks; r++)
		for (size_t i = 0; i < p->ranks[r].nregions; i++) {
			const struct sp_region_data *rd = &p->ranks[r].regions[i];
			int64_t t = rd->stats.total_ns;
			PyObject *k = PyDict_GetItemString(index, rd->name);   /* borrowed */
			if (k) {
				struct span *e = &sp[PyLong_AsSsize_t(k)];
				e->lo = t < e->lo ? t : e->lo;
				e->hi = t > e->hi ? t : e->hi;
				continue;
			}
			if (SP_GROW(&sp, &cap, n + 1) != 0) {
				PyErr_NoMemory();
				goto out;
			}
			sp[n] = (struct span){ t, t };
			PyObject *v = PyLong_FromSsize_t((Py_ssize_t)n++);
			if (!v || PyDict_SetItemString(index, rd->name, v) != 0) {
				Py_XDECREF(v);
				goto out;
			}
			Py_DECREF(v);
		}
	PyObject *name, *k;
	Py_ssize_t pos = 0;
	while (PyDict_Next(index, &pos, &name, &k)) {
		const struct span *e = &sp[PyLong_AsSsize_t(k)];
		PyObject *v = PyFloat_FromDouble(sp_imbalance_of(e->hi, e->lo));
		if (!v || PyDict_SetItem(res, name, v) != 0) {
			Py_XDECREF(v);
			goto out;
		}
		Py_DECREF(v);
	}
	out = res;
	res = NULL;
out:
	free(sp);
	Py_XDECREF(index);
	Py_XDECREF(res);
	return out;
}

/* p's metadata as {key: str, or int for an integer attribute} (strings
 * decoded with "replace"); a new reference, or NULL with an exception set. */
static PyObject *meta_to_py(const struct sp_profile *p)
{
	PyObject *meta = PyDict_New();
	if (!meta)
		return NULL;
	for (size_t i = 0; i < p->nmeta; i++) {
		PyObject *v = p->meta[i].type == SP_KV_INT ? PyLong_FromString(p->meta[i].value, NULL, 10) : NULL;
		if (!v) {
			PyErr_Clear();
			v = PyUnicode_DecodeUTF8(p->meta[i].value, (Py_ssize_t)strlen(p->meta[i].value), "replace");
		}
		if (!v || PyDict_SetItemString(meta, p->meta[i].key, v) != 0) {
			Py_XDECREF(v);
			Py_DECREF(meta);
			return NULL;
		}
		Py_DECREF(v);
	}
	return meta;
}

/* d[key] = v as an int; 0, or -1 with an exception set. */
static int set_ll(PyObject *d, const char *key, long long v)
{
	PyObject *o = PyLong_FromLongLong(v);
	int rc = o ? PyDict_SetItemString(d, key, o) : -1;
	Py_XDECREF(o);
	return rc;
}

/* One region's statistics and event columns as a dict (a new reference);
 * event columns rd owns are taken over (rd's pointers become NULL), others
 * copied; cum and self its total counting recursion once and its self time
 * (sp_rank_region_times), or -1 when not known. NULL with an exception
 * set. */
static PyObject *region_to_py(struct sp_region_data *rd, int64_t cum, int64_t self)
{
	const struct sp_stats *st = &rd->stats;
	int own = rd->owns_events;
	PyObject *lanes = column_bytes((void **)&rd->lanes, st->num_calls, sizeof(int32_t), own);
	PyObject *values = column_bytes((void **)&rd->values, st->num_calls, sizeof(int64_t), own);
	PyObject *starts = column_bytes((void **)&rd->starts, st->num_calls, sizeof(int64_t), own);
	PyObject *ends = column_bytes((void **)&rd->ends, st->num_calls, sizeof(int64_t), own);
	PyObject *first = time_or_none(st->first_start_ns);
	PyObject *last = time_or_none(st->last_end_ns);
	PyObject *self_ns = self >= 0 ? PyLong_FromLongLong(self) : Py_NewRef(Py_None);
	PyObject *cum_ns = cum >= 0 ? PyLong_FromLongLong(cum) : Py_NewRef(Py_None);
	PyObject *d = (starts && ends && first && last && lanes && self_ns && cum_ns)
		? Py_BuildValue("{s:L,s:L,s:L,s:L,s:d,s:d,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O}",
				"num_calls", (long long)st->num_calls,
				"total_ns", (long long)st->total_ns,
				"min_ns", (long long)st->min_ns,
				"max_ns", (long long)st->max_ns,
				"mean_ns", st->mean_ns, "std_ns", st->std_ns,
				"first_start_ns", first, "last_end_ns", last,
				"starts", starts, "ends", ends, "lanes", lanes,
				"aggregate", rd->aggregate ? Py_True : Py_False,
				"self_ns", self_ns, "cumulative_ns", cum_ns)
		: NULL;
	Py_XDECREF(cum_ns);
	Py_XDECREF(lanes);
	Py_XDECREF(starts);
	Py_XDECREF(ends);
	Py_XDECREF(first);
	Py_XDECREF(last);
	Py_XDECREF(self_ns);
	/* The per-call values (run --memory, --mpi-calls), under their
	 * dataset's name, with their total; the peak of live bytes. */
	const char *vname = sp_value_kind_name(rd->value_kind);
	if (d && (!values || (vname && PyDict_SetItemString(d, vname, values) != 0) ||
		  (vname && set_ll(d, "values_total", rd->values_total) != 0) ||
		  (rd->peak_bytes > 0 && set_ll(d, "peak_live_bytes", rd->peak_bytes) != 0)))
		Py_CLEAR(d);
	/* run --gpu: what the calls' exits waited for the device. */
	if (d && rd->gpu_waited && set_ll(d, "gpu_wait_ns", rd->gpu_wait_ns) != 0)
		Py_CLEAR(d);
	Py_XDECREF(values);
	return d;
}

/* nrows x ncols doubles as a list of lists (a new reference). */
static PyObject *rows_to_py(const double *v, size_t nrows, size_t ncols)
{
	PyObject *rows = PyList_New((Py_ssize_t)nrows);
	for (size_t i = 0; rows && i < nrows; i++) {
		PyObject *row = PyList_New((Py_ssize_t)ncols);
		for (size_t k = 0; row && k < ncols; k++) {
			PyObject *x = PyFloat_FromDouble(v[i * ncols + k]);
			if (!x) {
				Py_CLEAR(row);
				break;
			}
			PyList_SET_ITEM(row, (Py_ssize_t)k, x);
		}
		if (!row) {
			Py_CLEAR(rows);
			break;
		}
		PyList_SET_ITEM(rows, (Py_ssize_t)i, row);
	}
	return rows;
}

/* The rank's LIKWID tables as {region: (events rows, counts, times,
 * metric rows)}, plain lists (a new reference); NULL with an exception
 * set. */
static PyObject *likwid_to_py(const struct sp_rank *rk)
{
	PyObject *d = PyDict_New();
	for (size_t i = 0; d && i < rk->nlikwid; i++) {
		const struct sp_likwid_region *t = &rk->likwid[i];
		PyObject *rows = rows_to_py(t->events, t->nthreads, t->nevents);
		PyObject *count = PyList_New((Py_ssize_t)t->nthreads);
		PyObject *time = PyList_New((Py_ssize_t)t->nthreads);
		int ok = rows && count && time;
		for (size_t th = 0; ok && th < t->nthreads; th++) {
			PyObject *c = PyLong_FromLongLong((long long)t->count[th]);
			PyObject *s = PyFloat_FromDouble(t->time[th]);
			ok = c && s;
			if (c)
				PyList_SET_ITEM(count, (Py_ssize_t)th, c);
			if (s)
				PyList_SET_ITEM(time, (Py_ssize_t)th, s);
		}
		PyObject *metrics = ok ? rows_to_py(t->metrics, t->nmetrics ? t->nmrows : 0, t->nmetrics) : NULL;
		PyObject *tup = metrics ? PyTuple_Pack(4, rows, count, time, metrics) : NULL;
		Py_XDECREF(metrics);
		Py_XDECREF(rows);
		Py_XDECREF(count);
		Py_XDECREF(time);
		if (!tup || PyDict_SetItemString(d, t->region, tup) != 0)
			Py_CLEAR(d);
		Py_XDECREF(tup);
	}
	return d;
}

/* One rank as a dict with its regions by name (a new reference; columns
 * taken over as region_to_py does); NULL with an exception set. */
static PyObject *rank_to_py(struct sp_rank *rk)
{
	size_t nr = rk->nregions ? rk->nregions : 1;
	int64_t *cum = malloc(nr * sizeof *cum), *self = malloc(nr * sizeof *self);
	int exact = cum && self ? sp_rank_region_times(rk, cum, self) : -1;
	PyObject *regions = exact >= 0 ? PyDict_New() : PyErr_NoMemory();
	for (size_t i = 0; regions && i < rk->nregions; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		/* Without a tree only an aggregate's self time is known. */
		PyObject *d = region_to_py(rd, exact ? cum[i] : -1,
					   exact || rd->aggregate ? self[i] : -1);
		if (!d || PyDict_SetItemString(regions, rd->name, d) != 0)
			Py_CLEAR(regions);
		Py_XDECREF(d);
	}
	free(cum);
	free(self);
	if (!regions)
		return NULL;
	PyObject *start = time_or_none(rk->run_start_ns), *end = time_or_none(rk->run_end_ns);
	PyObject *likwid = likwid_to_py(rk);
	PyObject *rd = (start && end && likwid)
		? Py_BuildValue("{s:i,s:O,s:O,s:L,s:L,s:s,s:N,s:N}", "rank", rk->rank,
				"run_start_ns", start, "run_end_ns", end,
				"pid", (long long)rk->pid, "parent_pid", (long long)rk->parent_pid,
				"hostname", rk->hostname,
				"regions", regions, "likwid", likwid)
		: NULL;
	Py_XDECREF(start);
	Py_XDECREF(end);
	if (!rd && (!start || !end || !likwid)) {
		Py_DECREF(regions);
		Py_XDECREF(likwid);
	}
	return rd;
}

/* The profile as plain Python data for the read API's classes (a new
 * reference; event columns p owns are taken over); NULL with an exception
 * set. */
static PyObject *profile_to_py(struct sp_profile *p)
{
	PyObject *ranks = PyList_New(0), *meta = NULL, *out = NULL;
	PyObject *imbalance = NULL, *origin = NULL, *startup = NULL;
	if (!ranks || !(meta = meta_to_py(p)))
		goto out;
	for (size_t r = 0; r < p->nranks; r++) {
		PyObject *rd = rank_to_py(&p->ranks[r]);
		if (!rd)
			goto out;
		int bad = PyList_Append(ranks, rd);
		Py_DECREF(rd);
		if (bad)
			goto out;
	}
	/* The time axis and imbalance from the analysis module (sp_analysis.h),
	 * so the read API does not define them a second time. */
	imbalance = region_imbalances(p);
	origin = time_or_none(sp_profile_time_origin(p));
	startup = time_or_none(sp_profile_startup(p));
	if (!imbalance || !origin || !startup)
		goto out;
	out = Py_BuildValue("{s:i,s:O,s:O,s:O,s:O,s:L,s:O}", "format_version", p->format_version,
			    "meta", meta, "ranks", ranks, "time_origin_ns", origin, "startup_ns", startup,
			    "time_span_ns", (long long)sp_profile_time_span(p), "imbalance", imbalance);
out:
	Py_XDECREF(ranks);
	Py_XDECREF(meta);
	Py_XDECREF(imbalance);
	Py_XDECREF(origin);
	Py_XDECREF(startup);
	return out;
}

/* _mpi_info() -> (rank, size, library or None): (0, 1, None) outside MPI. */
static PyObject *res_mpi_info(PyObject *m, PyObject *unused)
{
	if (!sp_mpi_active())
		return Py_BuildValue("(iiO)", 0, 1, Py_None);
	return Py_BuildValue("(iis)", sp_mpi_rank(), sp_mpi_size(), sp_mpi_library());
}

/* _nest(columns) -> (call_ids, parent_ids): the nesting of one rank's calls
 * (sp_nest.h, the one rule), computed when the read API first asks for it
 * (call_stack(), events()), not at every read. columns: a sequence of
 * (starts, ends, lanes or None) buffers, one per region with calls, in the
 * rank's region order. Both results are int64 columns over all calls,
 * region after region: each call's place in call_stack() and its parent's
 * (-1: a root). */
static PyObject *res_nest(PyObject *m, PyObject *columns)
{
	PyObject *seq = PySequence_Fast(columns, "_nest() takes a sequence of columns");
	if (!seq)
		return NULL;
	Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
	struct sp_region_data *rd = calloc(n ? (size_t)n : 1, sizeof *rd);
	Py_buffer *views = calloc(n ? 3 * (size_t)n : 1, sizeof *views);
	struct sp_nest nest = {0};
	struct sp_error err = {0};
	PyObject *res = NULL;
	Py_ssize_t held = 0;
	if (!rd || !views) {
		PyErr_NoMemory();
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++, held++) {
		PyObject *item = PySequence_Fast_GET_ITEM(seq, i), *lanes = Py_None;
		Py_buffer *v = &views[3 * i];
		if (!PyArg_ParseTuple(item, "y*y*|O:_nest", &v[0], &v[1], &lanes))
			goto out;
		if (lanes != Py_None && PyObject_GetBuffer(lanes, &v[2], PyBUF_SIMPLE) != 0) {
			PyBuffer_Release(&v[0]);
			PyBuffer_Release(&v[1]);
			goto out;
		}
		size_t calls = (size_t)v[0].len / sizeof(int64_t);
		if ((size_t)v[1].len != calls * sizeof(int64_t) ||
		    (v[2].obj && (size_t)v[2].len != calls * sizeof(int32_t))) {
			PyErr_SetString(PyExc_ValueError, "_nest(): columns of different lengths");
			held++;
			goto out;
		}
		rd[i].starts = v[0].buf;
		rd[i].ends = v[1].buf;
		rd[i].lanes = v[2].obj ? v[2].buf : NULL;
		rd[i].stats.num_calls = (int64_t)calls;
	}
	struct sp_rank rk = { .regions = rd, .nregions = (size_t)n };
	enum sp_err rc;
	Py_BEGIN_ALLOW_THREADS
	rc = sp_nest_rank(&rk, &nest, &err);
	Py_END_ALLOW_THREADS
	if (rc != SP_OK) {
		sp_py_err(rc, err.msg);
		goto out;
	}
	PyObject *ids = column_bytes((void **)&nest.id, (int64_t)nest.n, sizeof(int64_t), 1);
	PyObject *parents = ids ? column_bytes((void **)&nest.parent, (int64_t)nest.n, sizeof(int64_t), 1) : NULL;
	if (ids && parents)
		res = PyTuple_Pack(2, ids, parents);
	Py_XDECREF(ids);
	Py_XDECREF(parents);
out:
	for (Py_ssize_t i = 0; i < held; i++)
		for (int k = 0; k < 3; k++)
			if (views[3 * i + k].obj)
				PyBuffer_Release(&views[3 * i + k]);
	sp_nest_free(&nest);
	free(views);
	free(rd);
	Py_DECREF(seq);
	return res;
}

/* _read(path, events: bool) -> (data, summary str). */
static PyObject *res_read(PyObject *m, PyObject *args)
{
	PyObject *path_obj, *path_bytes = NULL, *res = NULL;
	int events, render = 1;
	if (!PyArg_ParseTuple(args, "Op|p:_read", &path_obj, &events, &render))
		return NULL;
	if (!PyUnicode_FSConverter(path_obj, &path_bytes))
		return NULL;
	const char *path = PyBytes_AS_STRING(path_bytes);
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	enum sp_err rc;
	sp_malloc_for_reading();   /* a read in a loop: glibc's thresholds where they end */
	Py_BEGIN_ALLOW_THREADS
	/* The stream's writer may be in HDF5 now (a run reading a profile). */
	sp_h5_lock();
	rc = sp_report_read(path, events ? SP_READ_EVENTS : SP_READ_SUMMARY, &p, &err);
	sp_h5_unlock();
	Py_END_ALLOW_THREADS
	if (rc != SP_OK) {
		sp_py_err(rc, err.msg);
		goto out;
	}
	/* A partial profile (a run's OUT.partial) reads as it stands, said once:
	 * at the read, not again when print_summary renders it. */
	char note[1024];
	if (!render && sp_render_partial(note, sizeof note, p, path) &&
	    PyErr_WarnFormat(PyExc_UserWarning, 2, "scope_profiler: %s", note) < 0)
		goto out;
	PyObject *data = profile_to_py(p);
	PyObject *summary = !data ? NULL : render ? sp_py_render(p, path, 0) : Py_NewRef(Py_None);
	if (data && summary)
		res = PyTuple_Pack(2, data, summary);
	Py_XDECREF(data);
	Py_XDECREF(summary);
out:
	sp_profile_free(p);
	Py_XDECREF(path_bytes);
	return res;
}

int sp_results_init(void)
{
	return PyType_Ready(&ColumnType);
}

PyMethodDef sp_results_methods[] = {
	{"_read", res_read, METH_VARARGS, NULL},
	{"_nest", res_nest, METH_O, NULL},
	{"_mpi_info", res_mpi_info, METH_NOARGS, NULL},
	{NULL},
};

/* For the end of a session (finalize.c). */
PyObject *sp_results_data(struct sp_profile *p)
{
	return profile_to_py(p);
}

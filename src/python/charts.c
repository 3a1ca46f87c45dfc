/* charts.c - the read API's charts and region filter, drawn and decided by
 * the report layer: the same pattern dialect as every command (sp_select.h)
 * and the same bars, lanes, axis, rows and tables as `scope-profiler plot`
 * (sp_plot.h), which the matplotlib charts (scope_profiler_charts.py, the
 * module scope_profiler._charts, frozen here) only draw.
 *
 * A profile read back lives in Python as the read API holds it (pyresults.c:
 * per rank a dict, per region its statistics and event columns); each call
 * here lays a struct sp_profile over that (the columns borrowed through the
 * buffer protocol, nothing copied) for the one call. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <marshal.h>
#include <stdlib.h>
#include <string.h>

#include "sp_charts.h"
#include "sp_clock.h"
#include "sp_plot.h"
#include "sp_pycharts.h"
#include "sp_select.h"

/* ---- a profile over the read API's data --------------------------------- */

struct view {
	struct sp_plot_file f;
	struct sp_profile p;
	Py_buffer *bufs;               /* the borrowed columns, held until view_free */
	size_t nbufs;
	PyObject *values;              /* the metadata's values as str (kept alive) */
};

static void view_free(struct view *v)
{
	for (size_t i = 0; i < v->nbufs; i++)
		PyBuffer_Release(&v->bufs[i]);
	free(v->bufs);
	if (v->p.ranks)
		free(v->p.ranks[0].regions);   /* one block for every rank's regions */
	free(v->p.ranks);
	free(v->p.meta);
	Py_XDECREF(v->values);
	*v = (struct view){0};
}

/* d[key] as an int64 into *out (None: SP_NO_TIME); -1 with an exception. */
static int get_i64(PyObject *d, const char *key, int64_t *out)
{
	PyObject *o = PyDict_GetItemString(d, key);
	if (!o || o == Py_None) {
		*out = SP_NO_TIME;
		return 0;
	}
	long long x = PyLong_AsLongLong(o);
	if (x == -1 && PyErr_Occurred())
		return -1;
	*out = x;
	return 0;
}

/* Borrows the column d[key] (None or absent: NULL), n items of size bytes. */
static int get_column(struct view *v, PyObject *d, const char *key, int64_t n, size_t size, void **out)
{
	PyObject *o = PyDict_GetItemString(d, key);
	*out = NULL;
	if (!o || o == Py_None)
		return 0;
	Py_buffer *b = &v->bufs[v->nbufs];
	if (PyObject_GetBuffer(o, b, PyBUF_SIMPLE) != 0)
		return -1;
	v->nbufs++;
	if ((size_t)b->len != (size_t)n * size) {
		PyErr_Format(PyExc_ValueError, "column %s: %zd bytes for %lld calls", key, b->len, (long long)n);
		return -1;
	}
	*out = b->buf;
	return 0;
}

/* One region from its dict (pyresults.c's region_to_py). */
static int view_region(struct view *v, struct sp_region_data *rd, PyObject *name, PyObject *d)
{
	struct sp_stats *st = &rd->stats;
	if (!PyDict_Check(d)) {
		PyErr_SetString(PyExc_TypeError, "a region is a dict");
		return -1;
	}
	if (!(rd->name = (char *)PyUnicode_AsUTF8(name)))
		return -1;
	PyObject *mean = PyDict_GetItemString(d, "mean_ns"), *std = PyDict_GetItemString(d, "std_ns");
	PyObject *agg = PyDict_GetItemString(d, "aggregate");
	st->mean_ns = mean ? PyFloat_AsDouble(mean) : 0;
	st->std_ns = std ? PyFloat_AsDouble(std) : 0;
	rd->aggregate = agg && PyObject_IsTrue(agg) == 1;
	if (PyErr_Occurred() || get_i64(d, "num_calls", &st->num_calls) || get_i64(d, "total_ns", &st->total_ns) ||
	    get_i64(d, "min_ns", &st->min_ns) || get_i64(d, "max_ns", &st->max_ns) ||
	    get_i64(d, "first_start_ns", &st->first_start_ns) || get_i64(d, "last_end_ns", &st->last_end_ns))
		return -1;
	if (st->num_calls < 0 || st->num_calls == SP_NO_TIME) {
		PyErr_SetString(PyExc_ValueError, "a region without num_calls");
		return -1;
	}
	if (get_column(v, d, "starts", st->num_calls, sizeof(int64_t), (void **)&rd->starts) ||
	    get_column(v, d, "ends", st->num_calls, sizeof(int64_t), (void **)&rd->ends) ||
	    get_column(v, d, "lanes", st->num_calls, sizeof(int32_t), (void **)&rd->lanes))
		return -1;
	if (!rd->starts != !rd->ends)
		rd->starts = rd->ends = NULL;   /* half a pair of columns is none */
	return 0;
}

/* The metadata (str values, others as str()) for sp_profile_meta. */
static int view_meta(struct view *v, PyObject *meta)
{
	Py_ssize_t n = PyDict_Size(meta), pos = 0, i = 0;
	PyObject *key, *value;
	if (!(v->values = PyList_New(0)))
		return -1;
	if (!(v->p.meta = calloc(n ? (size_t)n : 1, sizeof *v->p.meta))) {
		PyErr_NoMemory();
		return -1;
	}
	while (PyDict_Next(meta, &pos, &key, &value)) {
		PyObject *s = PyObject_Str(value);
		if (!s || PyList_Append(v->values, s) != 0) {
			Py_XDECREF(s);
			return -1;
		}
		Py_DECREF(s);
		v->p.meta[i].key = (char *)PyUnicode_AsUTF8(key);
		v->p.meta[i].value = (char *)PyUnicode_AsUTF8(s);
		if (!v->p.meta[i].key || !v->p.meta[i].value)
			return -1;
		v->p.nmeta = (size_t)++i;
	}
	return 0;
}

/* file: (name, ranks, metadata) as ProfilingResults holds them (its label,
 * _ranks, metadata). 0, or -1 with an exception (v then empty). */
static int view_build(struct view *v, PyObject *file)
{
	PyObject *ranks, *meta;
	*v = (struct view){0};
	v->f.p = &v->p;
	if (!PyArg_ParseTuple(file, "sO!O!:chart file", &v->f.name, &PyList_Type, &ranks, &PyDict_Type, &meta))
		return -1;
	size_t nr = (size_t)PyList_GET_SIZE(ranks), nregions = 0;
	for (size_t r = 0; r < nr; r++) {
		PyObject *rk = PyList_GET_ITEM(ranks, (Py_ssize_t)r), *regs;
		if (!PyDict_Check(rk) || !(regs = PyDict_GetItemString(rk, "regions")) || !PyDict_Check(regs)) {
			PyErr_SetString(PyExc_TypeError, "a rank is a dict with its regions");
			return -1;
		}
		nregions += (size_t)PyDict_Size(regs);
	}
	v->p.ranks = calloc(nr ? nr : 1, sizeof *v->p.ranks);
	struct sp_region_data *rd = calloc(nregions ? nregions : 1, sizeof *rd);
	v->bufs = calloc(nregions ? 3 * nregions : 1, sizeof *v->bufs);
	if (!v->p.ranks || !rd || !v->bufs) {
		free(rd);
		view_free(v);
		PyErr_NoMemory();
		return -1;
	}
	v->p.ranks[0].regions = rd;
	v->p.nranks = nr;
	for (size_t r = 0; r < nr; r++) {
		PyObject *rk = PyList_GET_ITEM(ranks, (Py_ssize_t)r), *regs = PyDict_GetItemString(rk, "regions");
		PyObject *num = PyDict_GetItemString(rk, "rank"), *name, *d;
		struct sp_rank *k = &v->p.ranks[r];
		k->regions = rd;
		k->rank = num ? (int)PyLong_AsLong(num) : (int)r;
		for (Py_ssize_t pos = 0; PyDict_Next(regs, &pos, &name, &d); rd++, k->nregions++) {
			if (rd == v->p.ranks[0].regions + nregions) {
				PyErr_SetString(PyExc_RuntimeError, "the profile changed while it was drawn");
				goto fail;
			}
			if (view_region(v, rd, name, d) != 0)
				goto fail;
		}
		if (PyErr_Occurred())
			goto fail;
	}
	if (view_meta(v, meta) == 0)
		return 0;
fail:
	view_free(v);
	return -1;
}

/* ---- the selection -------------------------------------------------------- */

/* A pattern's UTF-8 (a new bytes object): a lone surrogate in it, which
 * UTF-8 cannot hold, as the stored escaped name has it (bad\udcff), its
 * backslash escaped for the glob or the expression, so that it matches. */
static PyObject *pattern_bytes(PyObject *s)
{
	PyObject *b = PyUnicode_AsUTF8String(s);
	if (b || !PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
		return b;
	PyErr_Clear();
	Py_ssize_t n = PyUnicode_GET_LENGTH(s), k = 0;
	Py_UCS4 *buf = PyMem_Malloc(((size_t)n * 7 + 1) * sizeof *buf);
	if (!buf)
		return PyErr_NoMemory();
	for (Py_ssize_t i = 0; i < n; i++) {
		Py_UCS4 c = PyUnicode_READ_CHAR(s, i);
		if (c < 0xd800 || c > 0xdfff) {
			buf[k++] = c;
			continue;
		}
		char esc[8];
		snprintf(esc, sizeof esc, "\\\\u%04x", (unsigned)c);
		for (const char *e = esc; *e; e++)
			buf[k++] = (Py_UCS4)*e;
	}
	PyObject *u = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, k);
	PyMem_Free(buf);
	b = u ? PyUnicode_AsUTF8String(u) : NULL;
	Py_XDECREF(u);
	return b;
}

/* Adds the patterns of spec (None, a str, or an iterable of str) with add. */
static int add_patterns(struct sp_select *s, PyObject *spec, const char *what,
			enum sp_err (*add)(struct sp_select *, const char *, struct sp_error *))
{
	if (spec == Py_None)
		return 0;
	PyObject *seq = PyUnicode_Check(spec) ? PyTuple_Pack(1, spec)
			: PyBytes_Check(spec) || PyByteArray_Check(spec) ? NULL : PySequence_Fast(spec, "");
	if (!seq) {
		PyErr_Format(PyExc_TypeError, "%s: a pattern (str) or a list of them, not %.100s", what,
			     Py_TYPE(spec)->tp_name);
		return -1;
	}
	int rc = 0;
	for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
		PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
		/* A name UTF-8 cannot hold is stored escaped (bad\udcff): so is
		 * a pattern, which then matches it. */
		PyObject *b = PyUnicode_Check(item) ? pattern_bytes(item) : NULL;
		const char *text = b ? PyBytes_AS_STRING(b) : NULL;
		struct sp_error err = {0};
		enum sp_err e;
		if (text && strlen(text) != (size_t)PyBytes_GET_SIZE(b)) {
			PyErr_Format(PyExc_ValueError, "%s: a pattern holds a NUL character, which no region "
				     "name has", what);
			rc = -1;
		} else if (!text) {
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_TypeError, "%s: a pattern is a str (a glob, or re:EXPR), not %.100s",
					     what, Py_TYPE(item)->tp_name);
			rc = -1;
		} else if ((e = add(s, text, &err)) != SP_OK) {
			PyErr_Format(e == SP_ENOMEM ? PyExc_MemoryError : PyExc_ValueError, "%s: %s", what, err.msg);
			rc = -1;
		}
		Py_XDECREF(b);
	}
	Py_DECREF(seq);
	return rc;
}

/* ranks: None (all), an int or an iterable of ints. */
static int add_ranks(struct sp_select *s, PyObject *ranks)
{
	if (ranks == Py_None)
		return 0;
	PyObject *seq = PyIndex_Check(ranks) ? PyTuple_Pack(1, ranks)
					      : PySequence_Fast(ranks, "ranks: an int or a list");
	if (!seq)
		return -1;
	Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
	/* An empty list selects no rank: -1, which no rank is. */
	s->ranks = malloc((n ? (size_t)n : 1) * sizeof *s->ranks);
	s->nranks = n ? (size_t)n : 1;
	if (!s->ranks) {
		Py_DECREF(seq);
		PyErr_NoMemory();
		return -1;
	}
	s->ranks[0] = -1;
	for (Py_ssize_t i = 0; i < n; i++) {
		long r = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
		if (r == -1 && PyErr_Occurred()) {
			Py_DECREF(seq);
			return -1;
		}
		s->ranks[i] = r < -1 ? -1 : r > INT32_MAX ? -1 : (int)r;
	}
	Py_DECREF(seq);
	/* sorted, as sp_select_rank searches them */
	for (size_t i = 1; i < s->nranks; i++)
		for (size_t j = i; j > 0 && s->ranks[j - 1] > s->ranks[j]; j--) {
			int t = s->ranks[j];
			s->ranks[j] = s->ranks[j - 1];
			s->ranks[j - 1] = t;
		}
	return 0;
}

static int select_build(struct sp_select *s, PyObject *ranks, PyObject *include, PyObject *exclude)
{
	*s = (struct sp_select){0};
	if (add_patterns(s, include, "include", sp_select_include) == 0 &&
	    add_patterns(s, exclude, "exclude", sp_select_exclude) == 0 && add_ranks(s, ranks) == 0)
		return 0;
	sp_select_free(s);
	return -1;
}

/* _select_names(names, include, exclude) -> the names kept, in order. */
static PyObject *ch_select_names(PyObject *m, PyObject *args)
{
	PyObject *names, *include, *exclude, *out = NULL;
	struct sp_select s;
	if (!PyArg_ParseTuple(args, "OOO:_select_names", &names, &include, &exclude) ||
	    select_build(&s, Py_None, include, exclude) != 0)
		return NULL;
	PyObject *seq = PySequence_Fast(names, "_select_names: a list of names");
	if (seq && (out = PyList_New(0)))
		for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
			PyObject *name = PySequence_Fast_GET_ITEM(seq, i);
			const char *text = PyUnicode_AsUTF8(name);
			if (!text || (sp_select_region(&s, text) && PyList_Append(out, name) != 0)) {
				Py_CLEAR(out);
				break;
			}
		}
	Py_XDECREF(seq);
	sp_select_free(&s);
	return out;
}

/* ---- the charts ----------------------------------------------------------- */

/* Raises what the report layer said; SP_EINVAL is ValueError. */
static PyObject *chart_err(enum sp_err rc, const struct sp_error *err)
{
	PyErr_SetString(rc == SP_ENOMEM ? PyExc_MemoryError : PyExc_ValueError, err->msg);
	return NULL;
}

/* The bars a merge emits, as growing columns. */
struct bars {
	double *x0, *x1;               /* seconds from the axis' origin */
	int64_t *calls;
	int32_t *region;               /* flame: the region's index on its rank, -1: several */
	int32_t *lane, *depth;
	size_t n, cap;
	const struct sp_plot_axis *a;
	const int64_t *starts, *ends;  /* gantt: the lane's columns */
	const struct sp_plot_fcall *c; /* flame: the calls */
	int failed;
};

static int bars_grow(struct bars *b)
{
	if (b->n < b->cap)
		return 0;
	size_t cap = b->cap ? 2 * b->cap : 64;
	double *x0 = realloc(b->x0, cap * sizeof *x0);
	if (x0)
		b->x0 = x0;
	double *x1 = realloc(b->x1, cap * sizeof *x1);
	if (x1)
		b->x1 = x1;
	int64_t *calls = realloc(b->calls, cap * sizeof *calls);
	if (calls)
		b->calls = calls;
	int32_t *region = realloc(b->region, cap * sizeof *region);
	if (region)
		b->region = region;
	int32_t *lane = realloc(b->lane, cap * sizeof *lane);
	if (lane)
		b->lane = lane;
	int32_t *depth = realloc(b->depth, cap * sizeof *depth);
	if (depth)
		b->depth = depth;
	if (!x0 || !x1 || !calls || !region || !lane || !depth)
		return b->failed = -1;
	b->cap = cap;
	return 0;
}

static void bars_free(struct bars *b)
{
	free(b->x0);
	free(b->x1);
	free(b->calls);
	free(b->region);
	free(b->lane);
	free(b->depth);
}

static double secs(const struct bars *b, int64_t t)
{
	return (double)(t - b->a->t0) / 1e9;
}

/* A Gantt bar: from its first call's start to the latest end of its calls. */
static void gantt_bar(void *ctx, const struct sp_plot_bar *bar)
{
	struct bars *b = ctx;
	if (bars_grow(b) != 0)
		return;
	int64_t end = b->ends[bar->first];
	for (int64_t i = 1; i < bar->calls; i++)
		end = b->ends[bar->first + (size_t)i] > end ? b->ends[bar->first + (size_t)i] : end;
	b->x0[b->n] = secs(b, b->starts[bar->first]);
	b->x1[b->n] = secs(b, end);
	b->calls[b->n++] = bar->calls;
}

/* A flame box: its calls' region (-1 when they are of several), row and span. */
static void flame_bar(void *ctx, const struct sp_plot_bar *bar)
{
	struct bars *b = ctx;
	if (bars_grow(b) != 0)
		return;
	const struct sp_plot_fcall *c = &b->c[bar->first];
	int64_t end = c->end;
	int32_t region = c->region;
	for (int64_t i = 1; i < bar->calls; i++) {
		end = c[i].end > end ? c[i].end : end;
		region = c[i].region == region ? region : -1;
	}
	b->x0[b->n] = secs(b, c->start);
	b->x1[b->n] = secs(b, end);
	b->region[b->n] = region;
	b->lane[b->n] = c->lane;
	b->depth[b->n] = (int32_t)c->depth;
	b->calls[b->n++] = bar->calls;
}

/* The column v[0..n) as bytes (numpy.frombuffer reads it). */
static PyObject *column(const void *v, size_t n, size_t size)
{
	return PyBytes_FromStringAndSize(v ? (const char *)v : "", (Py_ssize_t)(n * size));
}

/* Parses (file, ranks, include, exclude, columns): the view, the selection,
 * and the axis of `columns` columns (0: none, every call a bar). Returns 1,
 * 0 when the selection has no per-call events (nothing built), -1 with an
 * exception. */
static int chart_begin(PyObject *args, const char *fmt, struct view *v, struct sp_select *s,
		       struct sp_plot_axis *a, double *colw)
{
	PyObject *file, *ranks, *include, *exclude, *columns;
	if (!PyArg_ParseTuple(args, fmt, &file, &ranks, &include, &exclude, &columns))
		return -1;
	double width = columns == Py_None ? 0 : PyFloat_AsDouble(columns);
	if (width == -1 && PyErr_Occurred())
		return -1;
	/* None, 0 or less: every call a bar of its own. */
	*colw = width > 0 ? 1 : 0;
	width = width > 0 ? width : 1;
	if (view_build(v, file) != 0)
		return -1;
	if (select_build(s, ranks, include, exclude) != 0) {
		view_free(v);
		return -1;
	}
	int ok = sp_plot_has_events(&v->p, s) ? sp_plot_axis_init(a, &v->p, s, 0, width) : 0;
	if (ok > 0)
		return 1;
	if (ok < 0)
		PyErr_Format(PyExc_ValueError, "%s: its calls span more than 2^63 ns", v->f.name);
	sp_select_free(s);
	view_free(v);
	return ok < 0 ? -1 : 0;
}

/* _chart_gantt(file, ranks, include, exclude, columns) -> None when the
 * selection has no per-call events, else (span_ns, [(rank, region, calls,
 * x0, x1, bar_calls)]): per lane (sp_plot_lanes' order) its bars, merged in
 * columns of 1/columns of the axis (sp_plot_merge), as float64 seconds from
 * the file's first region entry and int64 counts. */
static PyObject *ch_gantt(PyObject *m, PyObject *args)
{
	struct view v;
	struct sp_select s;
	struct sp_plot_axis a;
	struct sp_plot_lane *l = NULL;
	struct sp_error err = {0};
	size_t nl = 0;
	double colw;
	int ok = chart_begin(args, "OOOOO:_chart_gantt", &v, &s, &a, &colw);
	if (ok <= 0)
		return ok < 0 ? NULL : Py_NewRef(Py_None);
	PyObject *lanes = NULL, *out = NULL;
	enum sp_err rc = sp_plot_lanes(&v.f, &s, &l, &nl, &err);
	if (rc != SP_OK) {
		chart_err(rc, &err);
		goto done;
	}
	if (!(lanes = PyList_New(0)))
		goto done;
	for (size_t i = 0; i < nl; i++) {
		struct bars b = {.a = &a, .starts = l[i].rd->starts, .ends = l[i].rd->ends};
		struct sp_plot_merge mg = {.colw = colw, .emit = gantt_bar, .ctx = &b};
		sp_plot_gantt_lane(&mg, &a, l[i].rd);
		PyObject *lane = b.failed ? PyErr_NoMemory()
			: Py_BuildValue("(isLNNN)", l[i].rk->rank, l[i].rd->name, (long long)l[i].rd->stats.num_calls,
					column(b.x0, b.n, sizeof *b.x0), column(b.x1, b.n, sizeof *b.x1),
					column(b.calls, b.n, sizeof *b.calls));
		bars_free(&b);
		if (!lane || PyList_Append(lanes, lane) != 0) {
			Py_XDECREF(lane);
			goto done;
		}
		Py_DECREF(lane);
	}
	out = Py_BuildValue("(LO)", (long long)a.span, lanes);
done:
	Py_XDECREF(lanes);
	free(l);
	sp_select_free(&s);
	view_free(&v);
	return out;
}

/* _chart_flame(file, rank, include, exclude, columns) -> None when the
 * selection has no per-call events, else (span_ns, names, calls, x0, x1,
 * bar_calls, region, lane, depth): the rank's boxes, row by row (lane, then
 * depth; sp_plot_flame_merge), nested among the selected regions; region
 * indexes names (the rank's regions), -1 for a box of several regions. */
static PyObject *ch_flame(PyObject *m, PyObject *args)
{
	struct view v;
	struct sp_select s;
	struct sp_plot_axis a;
	struct sp_plot_fcall *c = NULL;
	struct sp_error err = {0};
	size_t n = 0;
	double colw;
	int ok = chart_begin(args, "OOOOO:_chart_flame", &v, &s, &a, &colw);
	if (ok <= 0)
		return ok < 0 ? NULL : Py_NewRef(Py_None);
	PyObject *names = NULL, *out = NULL;
	struct bars b = {.a = &a};
	enum sp_err rc = sp_plot_flame_calls(&v.f, &s, &c, &n, &err);
	if (rc != SP_OK) {
		chart_err(rc, &err);
		goto done;
	}
	b.c = c;
	struct sp_plot_merge mg = {.colw = colw, .emit = flame_bar, .ctx = &b};
	sp_plot_flame_merge(&mg, &a, c, n);
	if (b.failed) {
		PyErr_NoMemory();
		goto done;
	}
	/* One rank is selected: every call is of c[0]'s. */
	const struct sp_rank *rk = &v.p.ranks[c[0].rank];
	if (!(names = PyList_New((Py_ssize_t)rk->nregions)))
		goto done;
	for (size_t i = 0; i < rk->nregions; i++) {
		PyObject *name = PyUnicode_FromString(rk->regions[i].name);
		if (!name)
			goto done;
		PyList_SET_ITEM(names, (Py_ssize_t)i, name);
	}
	out = Py_BuildValue("(LOnNNNNNN)", (long long)a.span, names, (Py_ssize_t)n,
			    column(b.x0, b.n, sizeof *b.x0), column(b.x1, b.n, sizeof *b.x1),
			    column(b.calls, b.n, sizeof *b.calls), column(b.region, b.n, sizeof *b.region),
			    column(b.lane, b.n, sizeof *b.lane), column(b.depth, b.n, sizeof *b.depth));
done:
	bars_free(&b);
	Py_XDECREF(names);
	free(c);
	sp_select_free(&s);
	view_free(&v);
	return out;
}

/* The views of files (a sequence of chart files) into *vs; -1 with an
 * exception (none left to free). */
static int views_build(PyObject *files, struct view **vs, struct sp_plot_file **fs, size_t *n)
{
	PyObject *seq = PySequence_Fast(files, "a list of files");
	if (!seq)
		return -1;
	size_t nf = (size_t)PySequence_Fast_GET_SIZE(seq), i = 0;
	*vs = calloc(nf ? nf : 1, sizeof **vs);
	*fs = calloc(nf ? nf : 1, sizeof **fs);
	if (!*vs || !*fs)
		PyErr_NoMemory();
	for (; *vs && *fs && i < nf; i++) {
		if (view_build(&(*vs)[i], PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)i)) != 0)
			break;
		(*fs)[i] = (*vs)[i].f;
		(*fs)[i].p = &(*vs)[i].p;
	}
	Py_DECREF(seq);
	*n = i;
	if (*vs && *fs && i == nf)
		return 0;
	for (size_t k = 0; *vs && k < i; k++)
		view_free(&(*vs)[k]);
	free(*vs);
	free(*fs);
	return -1;
}

static void views_free(struct view *vs, struct sp_plot_file *fs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		view_free(&vs[i]);
	free(vs);
	free(fs);
}

/* _chart_table(files, ranks, include, exclude) -> [(region, [None or (avg,
 * min, max, total, slowest_ns) per file])], the regions joined by name
 * across ranks and files, heaviest first (sp_plot_table_build); [] when no
 * selected region has calls. Seconds but slowest_ns. */
static PyObject *ch_table(PyObject *m, PyObject *args)
{
	PyObject *files, *ranks, *include, *exclude, *out = NULL;
	struct view *vs;
	struct sp_plot_file *fs;
	struct sp_select s;
	struct sp_plot_table t = {0};
	struct sp_error err = {0};
	size_t nf;
	if (!PyArg_ParseTuple(args, "OOOO:_chart_table", &files, &ranks, &include, &exclude) ||
	    views_build(files, &vs, &fs, &nf) != 0)
		return NULL;
	if (select_build(&s, ranks, include, exclude) != 0) {
		views_free(vs, fs, nf);
		return NULL;
	}
	enum sp_err rc = sp_plot_table_build(&t, fs, nf, &s, &err);
	if (rc != SP_OK && rc != SP_EINVAL)
		chart_err(rc, &err);
	else
		out = PyList_New(0);
	for (size_t r = 0; out && r < t.n; r++) {
		PyObject *vals = PyList_New((Py_ssize_t)nf), *row = NULL;
		for (size_t i = 0; vals && i < nf; i++) {
			const struct sp_plot_value *v = &t.rows[r].v[i];
			PyObject *o = !v->present ? Py_NewRef(Py_None)
				: Py_BuildValue("(ddddL)", sp_plot_value_of(v, SP_PLOT_AVG), sp_plot_value_of(v, SP_PLOT_MIN),
						sp_plot_value_of(v, SP_PLOT_MAX), sp_plot_value_of(v, SP_PLOT_TOTAL),
						(long long)v->slowest);
			if (!o)
				Py_CLEAR(vals);
			else
				PyList_SET_ITEM(vals, (Py_ssize_t)i, o);
		}
		if (!vals || !(row = Py_BuildValue("(sN)", t.rows[r].name, vals)) || PyList_Append(out, row) != 0)
			Py_CLEAR(out);
		Py_XDECREF(row);
	}
	sp_plot_table_free(&t);
	sp_select_free(&s);
	views_free(vs, fs, nf);
	return out;
}

/* _chart_sizes(files, x_field) -> each file's size on the speedup chart's
 * x axis (sp_plot_speedup_xs), None where unknown. x_field: "num_ranks",
 * "omp_num_threads" or "total_cores". */
static PyObject *ch_sizes(PyObject *m, PyObject *args)
{
	static const char *const fields[] = {"num_ranks", "omp_num_threads", "total_cores"};
	static const enum sp_plot_xfield xfs[] = {SP_PLOT_X_RANKS, SP_PLOT_X_OMP, SP_PLOT_X_CORES};
	PyObject *files, *out = NULL;
	const char *field;
	struct view *vs;
	struct sp_plot_file *fs;
	size_t nf, k = 0;
	if (!PyArg_ParseTuple(args, "Os:_chart_sizes", &files, &field))
		return NULL;
	while (k < 3 && strcmp(field, fields[k]) != 0)
		k++;
	if (k == 3) {
		PyErr_Format(PyExc_ValueError, "unknown x field %.100s", field);
		return NULL;
	}
	if (views_build(files, &vs, &fs, &nf) != 0)
		return NULL;
	double *x = malloc((nf ? nf : 1) * sizeof *x);
	if (x) {
		sp_plot_speedup_xs(fs, nf, xfs[k], x);
		out = PyList_New((Py_ssize_t)nf);
	} else {
		PyErr_NoMemory();
	}
	for (size_t i = 0; out && i < nf; i++) {
		PyObject *o = x[i] == x[i] ? PyFloat_FromDouble(x[i]) : Py_NewRef(Py_None);
		if (!o)
			Py_CLEAR(out);
		else
			PyList_SET_ITEM(out, (Py_ssize_t)i, o);
	}
	free(x);
	views_free(vs, fs, nf);
	return out;
}

/* _chart_colours(files, ranks, include, exclude, names) -> {name: "#rrggbb"}
 * for each of names: the colours every chart of `scope-profiler plot` gives
 * them (sp_plot_colours_build over the files and selection: the heaviest
 * regions the palette in order, the others a hash of their names). */
static PyObject *ch_colours(PyObject *m, PyObject *args)
{
	PyObject *files, *ranks, *include, *exclude, *names, *out = NULL;
	struct view *vs;
	struct sp_plot_file *fs;
	struct sp_select s;
	struct sp_plot_colours c;
	struct sp_error err = {0};
	size_t nf;
	if (!PyArg_ParseTuple(args, "OOOOO:_chart_colours", &files, &ranks, &include, &exclude, &names) ||
	    views_build(files, &vs, &fs, &nf) != 0)
		return NULL;
	if (select_build(&s, ranks, include, exclude) != 0) {
		views_free(vs, fs, nf);
		return NULL;
	}
	enum sp_err rc = sp_plot_colours_build(&c, fs, nf, &s, &err);
	PyObject *it = rc == SP_OK ? PyObject_GetIter(names) : NULL;
	if (rc != SP_OK)
		chart_err(rc, &err);
	else if (it)
		out = PyDict_New();
	for (PyObject *name; out && (name = PyIter_Next(it));) {
		const char *utf8 = PyUnicode_AsUTF8(name);
		PyObject *hex = utf8 ? PyUnicode_FromString(sp_plot_colour(&c, utf8)) : NULL;
		if (!hex || PyDict_SetItem(out, name, hex) != 0)
			Py_CLEAR(out);
		Py_XDECREF(hex);
		Py_DECREF(name);
	}
	if (PyErr_Occurred())
		Py_CLEAR(out);
	Py_XDECREF(it);
	sp_select_free(&s);
	views_free(vs, fs, nf);
	return out;
}

/* _charts_code() -> the code of scope_profiler._charts (frozen at build
 * time by the interpreter linked in, as the module's own layer). */
static PyObject *ch_code(PyObject *m, PyObject *unused)
{
	return PyMarshal_ReadObjectFromString((const char *)scope_profiler_charts_pyc,
					      (Py_ssize_t)scope_profiler_charts_pyc_len);
}

PyMethodDef sp_charts_methods[] = {
	{"_select_names", ch_select_names, METH_VARARGS, NULL},
	{"_chart_gantt", ch_gantt, METH_VARARGS, NULL},
	{"_chart_flame", ch_flame, METH_VARARGS, NULL},
	{"_chart_table", ch_table, METH_VARARGS, NULL},
	{"_chart_sizes", ch_sizes, METH_VARARGS, NULL},
	{"_chart_colours", ch_colours, METH_VARARGS, NULL},
	{"_charts_code", ch_code, METH_NOARGS, NULL},
	{NULL},
};

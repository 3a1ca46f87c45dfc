/* h5write_table.c - a rank's regions as format version 2 writes them
 * (scope-profiler-format(5)): one table with a row per region that has
 * calls, its columns in group regions; every region's events one region
 * after the other in the columns of group events (row i's calls are
 * first_event[i] .. first_event[i] + num_calls[i] - 1); the call tree with
 * its regions by row. A rank is a dozen datasets however many regions it
 * has: HDF5 spends tens of thousands of instructions on each object it
 * creates (a group, a dataset, an attribute), which version 1 paid a dozen
 * times per region. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_h5write.h"
#include "sp_h5write_table.h"

/* Names are fixed-length strings as wide as the longest, unless that would
 * take more than NAMES_FIXED_MAX bytes (very long names among many): then
 * variable-length ones. */
#define NAMES_FIXED_MAX ((size_t)8 << 20)

/* The rows of a rank's table: its regions that have calls, in its order. */
struct table {
	size_t n;                          /* rows */
	const struct sp_region_data **rd;  /* per row */
	int32_t *row_of;                   /* per region of the rank: its row, or -1 */
	uint64_t events;                   /* calls in the event columns */
	int lanes;                         /* a region has lanes: the lanes column is written */
	int kinds[SP_VALUE_KINDS];         /* a row has values of this kind: its column is written */
	int values;                        /* a row has values: the value columns are written */
	int peak;                          /* a row has a known peak: peak_live_bytes is written */
	int gpu;                           /* a row was timed with --gpu: gpu_wait_ns is written */
};

static void table_free(struct table *t)
{
	free(t->rd);
	free(t->row_of);
}

static int name_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Chooses the rows and checks what the reader would refuse: a region
 * without a name, events not loaded, two regions of one name. */
static enum sp_err plan(struct sp_h5_writer *w, const struct sp_rank *rk, struct table *t)
{
	size_t nr = rk->nregions;
	const char **names = NULL;
	enum sp_err rc = SP_OK;

	if (nr > INT32_MAX)
		return sp_h5w_fail(w, SP_EINVAL, "rank %d: too many regions (%zu)", rk->rank, nr);
	if (!(t->rd = malloc((nr ? nr : 1) * sizeof *t->rd)) ||
	    !(t->row_of = malloc((nr ? nr : 1) * sizeof *t->row_of)))
		return sp_h5w_fail(w, SP_ENOMEM, "out of memory");
	for (size_t i = 0; i < nr; i++) {
		const struct sp_region_data *rd = &rk->regions[i];
		t->row_of[i] = -1;
		if (rd->stats.num_calls <= 0)
			continue;
		if (!rd->name || !rd->name[0])
			return sp_h5w_fail(w, SP_EINVAL, "rank %d has a region without a name", rk->rank);
		if (!rd->aggregate) {
			if (w->version != 3 && (!rd->starts || !rd->ends))
				return sp_h5w_fail(w, SP_EINVAL, "rank %d region '%s': events not loaded", rk->rank,
						   rd->name);
			if ((uint64_t)rd->stats.num_calls > (uint64_t)INT64_MAX - t->events)
				return sp_h5w_fail(w, SP_EINVAL, "rank %d: too many events", rk->rank);
			t->events += (uint64_t)rd->stats.num_calls;
			t->lanes |= rd->lanes != NULL;
		}
		if (rd->value_kind) {
			/* Version 3: the values are in the file already. */
			if (!sp_value_kind_name(rd->value_kind) ||
			    (!rd->aggregate && !rd->values && w->version != 3))
				return sp_h5w_fail(w, SP_EINVAL, "rank %d region '%s': values of kind %d not loaded",
						   rk->rank, rd->name, rd->value_kind);
			t->kinds[rd->value_kind] = 1;
			t->values = 1;
		}
		t->peak |= rd->peak_bytes > 0;
		t->gpu |= rd->gpu_waited;
		t->row_of[i] = (int32_t)t->n;
		t->rd[t->n++] = rd;
	}
	if (t->n > 1) {
		if (!(names = malloc(t->n * sizeof *names)))
			return sp_h5w_fail(w, SP_ENOMEM, "out of memory");
		for (size_t i = 0; i < t->n; i++)
			names[i] = t->rd[i]->name;
		qsort(names, t->n, sizeof *names, name_ptr_cmp);
		for (size_t i = 1; i < t->n && rc == SP_OK; i++)
			if (strcmp(names[i - 1], names[i]) == 0)
				rc = sp_h5w_fail(w, SP_EINVAL, "rank %d has two regions named '%s'", rk->rank,
						 names[i]);
		free(names);
	}
	return rc;
}

/* The name column: fixed-length strings, or variable-length ones when
 * those would be too large. */
static int write_names(struct sp_h5_writer *w, hid_t g, const struct table *t)
{
	size_t width = 1;
	for (size_t i = 0; i < t->n; i++) {
		size_t len = strlen(t->rd[i]->name) + 1;
		width = len > width ? len : width;
	}
	int vlen = t->n > NAMES_FIXED_MAX / width;
	void *buf = vlen ? malloc((t->n ? t->n : 1) * sizeof(char *)) : calloc(t->n ? t->n : 1, width);
	hid_t st = sp_h5w_str_type(vlen ? H5T_VARIABLE : width);
	int rc = -1;
	if (buf && st >= 0) {
		for (size_t i = 0; i < t->n; i++) {
			if (vlen)
				((const char **)buf)[i] = t->rd[i]->name;
			else
				strcpy((char *)buf + i * width, t->rd[i]->name);
		}
		if (!vlen) {
			rc = sp_h5w_column(w, g, "name", st, st, t->n, buf);
		} else {
			/* HDF5 refuses variable-length data in a dataset whose
			 * fill value is never written: its defaults then. */
			hsize_t dims[1] = {(hsize_t)t->n};
			hid_t sp = H5Screate_simple(1, dims, NULL);
			hid_t d = sp < 0 ? -1 : H5Dcreate2(g, "name", st, sp, w->lcpl, H5P_DEFAULT, H5P_DEFAULT);
			if (d >= 0 && (t->n == 0 || H5Dwrite(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0))
				rc = 0;
			if (d >= 0 && H5Dclose(d) < 0)
				rc = -1;
			if (sp >= 0)
				H5Sclose(sp);
		}
	}
	if (st >= 0)
		H5Tclose(st);
	free(buf);
	return rc;
}

/* The optional columns of the regions table: value_kind, values_total
 * (when a row has values), peak_live_bytes (when a row has a peak; -1
 * where not known) and gpu_wait_ns (run --gpu; -1 where not timed so), in
 * the caller's scratch arrays of t->n rows. */
static enum sp_err write_value_table(struct sp_h5_writer *w, hid_t g, const struct sp_rank *rk,
				     const struct table *t, int64_t *i64, int8_t *i8)
{
	size_t n = t->n;
	if (t->values) {
		for (size_t i = 0; i < n; i++) {
			i8[i] = (int8_t)t->rd[i]->value_kind;
			i64[i] = t->rd[i]->values_total;
		}
		if (sp_h5w_column(w, g, "value_kind", H5T_STD_I8LE, H5T_NATIVE_INT8, n, i8) < 0 ||
		    sp_h5w_column(w, g, "values_total", H5T_STD_I64LE, H5T_NATIVE_INT64, n, i64) < 0)
			return sp_h5w_fail(w, SP_EIO, "cannot write the regions of rank %d", rk->rank);
	}
	if (t->peak) {
		for (size_t i = 0; i < n; i++)
			i64[i] = t->rd[i]->peak_bytes > 0 ? t->rd[i]->peak_bytes : SP_NO_PEAK;
		if (sp_h5w_column(w, g, "peak_live_bytes", H5T_STD_I64LE, H5T_NATIVE_INT64, n, i64) < 0)
			return sp_h5w_fail(w, SP_EIO, "cannot write the regions of rank %d", rk->rank);
	}
	if (t->gpu) {
		for (size_t i = 0; i < n; i++)
			i64[i] = t->rd[i]->gpu_waited ? t->rd[i]->gpu_wait_ns : -1;
		if (sp_h5w_column(w, g, "gpu_wait_ns", H5T_STD_I64LE, H5T_NATIVE_INT64, n, i64) < 0)
			return sp_h5w_fail(w, SP_EIO, "cannot write the regions of rank %d", rk->rank);
	}
	return SP_OK;
}

/* The cumulative_ns column: each row's total counting a recursive region
 * once (sp_rank_region_times, from the rank's call tree), in the caller's
 * scratch array of t->n rows. */
static enum sp_err write_cumulative(struct sp_h5_writer *w, hid_t g, const struct sp_rank *rk,
				    const struct table *t, int64_t *i64)
{
	int64_t *cum = malloc((rk->nregions ? rk->nregions : 1) * sizeof *cum);
	if (!cum || sp_rank_region_times(rk, cum, NULL) < 0) {
		free(cum);
		return sp_h5w_fail(w, SP_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < t->n; i++)
		i64[i] = cum[t->rd[i] - rk->regions];
	free(cum);
	if (sp_h5w_column(w, g, "cumulative_ns", H5T_STD_I64LE, H5T_NATIVE_INT64, t->n, i64) < 0)
		return sp_h5w_fail(w, SP_EIO, "cannot write the regions of rank %d", rk->rank);
	return SP_OK;
}

/* The table's columns in group regions of rank_g. */
static enum sp_err write_table(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk,
			       const struct table *t)
{
	enum { NUM_CALLS, TOTAL, MIN, MAX, FIRST_START, LAST_END, DROPPED, SELF, FIRST_EVENT, NI64 };
	static const char *const i64_names[NI64] = {"num_calls", "total_ns", "min_ns", "max_ns",
		"first_start_ns", "last_end_ns", "dropped_events", "self_ns", "first_event"};
	size_t n = t->n, rows = n ? n : 1;
	enum sp_err rc = SP_OK;
	int64_t *i64 = malloc(rows * NI64 * sizeof *i64);
	double *f64 = malloc(rows * 2 * sizeof *f64);
	int8_t *agg = malloc(rows * sizeof *agg);
	hid_t g = H5I_INVALID_HID;

	if (!i64 || !f64 || !agg) {
		rc = sp_h5w_fail(w, SP_ENOMEM, "out of memory");
		goto out;
	}
	int64_t at = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sp_region_data *rd = t->rd[i];
		const struct sp_stats *st = &rd->stats;
		const int64_t v[NI64] = {st->num_calls, st->total_ns, st->min_ns, st->max_ns, st->first_start_ns,
					 st->last_end_ns, rd->dropped, rd->aggregate ? rd->self_ns : 0, at};
		for (int c = 0; c < NI64; c++)
			i64[c * n + i] = v[c];
		f64[i] = st->mean_ns;
		f64[n + i] = st->std_ns;
		agg[i] = rd->aggregate ? 1 : 0;
		if (!rd->aggregate)
			at += st->num_calls;
	}
	if ((g = H5Gcreate2(rank_g, "regions", w->lcpl, w->gcpl, H5P_DEFAULT)) < 0 || write_names(w, g, t) < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot write the regions of rank %d", rk->rank);
		goto out;
	}
	/* Version 3 (streamed) finds a region's calls through its blocks. */
	for (int c = 0; c < (w->version == 3 ? FIRST_EVENT : NI64) && rc == SP_OK; c++)
		if (sp_h5w_column(w, g, i64_names[c], H5T_STD_I64LE, H5T_NATIVE_INT64, n, i64 + c * n) < 0)
			rc = sp_h5w_fail(w, SP_EIO, "cannot write the regions of rank %d", rk->rank);
	if (rc == SP_OK &&
	    (sp_h5w_column(w, g, "mean_ns", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, f64) < 0 ||
	     sp_h5w_column(w, g, "std_ns", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, f64 + n) < 0 ||
	     sp_h5w_column(w, g, "aggregate", H5T_STD_I8LE, H5T_NATIVE_INT8, n, agg) < 0))
		rc = sp_h5w_fail(w, SP_EIO, "cannot write the regions of rank %d", rk->rank);
	/* Version 3 without a call tree: the reader computes it. */
	if (rc == SP_OK && (w->version != 3 || rk->tree))
		rc = write_cumulative(w, g, rk, t, i64);
	if (rc == SP_OK && (t->values || t->peak || t->gpu))
		rc = write_value_table(w, g, rk, t, i64, agg);
out:
	if (g >= 0 && H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank%d/regions", rk->rank);
	free(i64);
	free(f64);
	free(agg);
	return rc;
}

/* The event columns being written: small regions gathered in a buffer of
 * cap calls and written a buffer at a time (a compressed column's chunks
 * are written whole that way), large ones straight from their columns
 * (uncompressed only). */
struct stage {
	hid_t ds[3];                   /* start_times, end_times, lanes (-1: none) */
	int64_t *starts, *ends;
	int32_t *lanes;                /* NULL unless the lanes column is written */
	hid_t vds[SP_VALUE_KINDS];     /* each kind's values column (-1: none) */
	int64_t *vals[SP_VALUE_KINDS]; /* NULL unless that column is written */
	size_t n, cap;                 /* calls in the buffer, its size */
	uint64_t at;                   /* the buffer's first call in the columns */
	int direct;                    /* large regions are written in place */
};

static int stage_flush(struct sp_h5_writer *w, struct stage *s)
{
	if (s->n == 0)
		return 0;
	if (sp_h5w_span(w, s->ds[0], H5T_NATIVE_INT64, s->at, s->n, s->starts) < 0 ||
	    sp_h5w_span(w, s->ds[1], H5T_NATIVE_INT64, s->at, s->n, s->ends) < 0 ||
	    (s->lanes && sp_h5w_span(w, s->ds[2], H5T_NATIVE_INT32, s->at, s->n, s->lanes) < 0))
		return -1;
	for (int k = 1; k < SP_VALUE_KINDS; k++)
		if (s->vals[k] && sp_h5w_span(w, s->vds[k], H5T_NATIVE_INT64, s->at, s->n, s->vals[k]) < 0)
			return -1;
	s->at += s->n;
	s->n = 0;
	return 0;
}

/* Adds region rd's calls to the columns. */
static int stage_region(struct sp_h5_writer *w, struct stage *s, const struct sp_region_data *rd)
{
	size_t n = (size_t)rd->stats.num_calls, done = 0;
	int others = 0;                /* value columns this region has no values for */
	for (int k = 1; k < SP_VALUE_KINDS; k++)
		others |= s->vals[k] && k != rd->value_kind;
	if (s->direct && n >= s->cap && (rd->lanes || !s->lanes) && !others) {
		if (stage_flush(w, s) < 0 || sp_h5w_span(w, s->ds[0], H5T_NATIVE_INT64, s->at, n, rd->starts) < 0 ||
		    sp_h5w_span(w, s->ds[1], H5T_NATIVE_INT64, s->at, n, rd->ends) < 0 ||
		    (s->lanes && sp_h5w_span(w, s->ds[2], H5T_NATIVE_INT32, s->at, n, rd->lanes) < 0) ||
		    (rd->value_kind && sp_h5w_span(w, s->vds[rd->value_kind], H5T_NATIVE_INT64, s->at, n,
						   rd->values) < 0))
			return -1;
		s->at += n;
		return 0;
	}
	while (done < n) {
		size_t k = n - done < s->cap - s->n ? n - done : s->cap - s->n;
		memcpy(s->starts + s->n, rd->starts + done, k * sizeof *s->starts);
		memcpy(s->ends + s->n, rd->ends + done, k * sizeof *s->ends);
		if (s->lanes && rd->lanes)
			memcpy(s->lanes + s->n, rd->lanes + done, k * sizeof *s->lanes);
		else if (s->lanes)
			memset(s->lanes + s->n, 0, k * sizeof *s->lanes);
		for (int c = 1; c < SP_VALUE_KINDS; c++) {
			if (!s->vals[c])
				continue;
			if (c == rd->value_kind)
				memcpy(s->vals[c] + s->n, rd->values + done, k * sizeof *rd->values);
			else
				memset(s->vals[c] + s->n, 0, k * sizeof *rd->values);
		}
		s->n += k;
		done += k;
		if (s->n == s->cap && stage_flush(w, s) < 0)
			return -1;
	}
	return 0;
}

/* Every row's events in the columns of group events of rank_g. */
static enum sp_err write_events(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk,
				const struct table *t)
{
	static const char *const names[3] = {"start_times", "end_times", "lanes"};
	struct stage s = {.ds = {H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID},
			  .vds = {H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID}};
	enum sp_err rc = SP_OK;
	size_t e = (size_t)t->events;
	hid_t g = H5I_INVALID_HID;

	if ((uint64_t)e != t->events)
		return sp_h5w_fail(w, SP_ENOMEM, "rank %d: too many events", rk->rank);
	/* Compressed columns have chunks of cap calls: each buffer fills one.
	 * Uncompressed ones take small regions a few pages at a time (the
	 * buffer is memory held at the run's peak) and large ones in place. */
	s.direct = w->level == 0 || e < SP_H5W_COMPRESS_MIN;
	size_t most = s.direct ? SP_H5W_STAGE_DIRECT : SP_H5W_CHUNK_MAX;
	s.cap = e < most ? (e ? e : 1) : most;
	if (!(s.starts = malloc(s.cap * sizeof *s.starts)) || !(s.ends = malloc(s.cap * sizeof *s.ends)) ||
	    (t->lanes && !(s.lanes = malloc(s.cap * sizeof *s.lanes)))) {
		rc = sp_h5w_fail(w, SP_ENOMEM, "out of memory");
		goto out;
	}
	_Static_assert(SP_VALUE_KINDS == 3, "vds is initialised for three kinds");
	for (int k = 1; k < SP_VALUE_KINDS; k++) {
		if (t->kinds[k] && !(s.vals[k] = malloc(s.cap * sizeof *s.vals[k]))) {
			rc = sp_h5w_fail(w, SP_ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((g = H5Gcreate2(rank_g, "events", w->lcpl, w->gcpl, H5P_DEFAULT)) < 0) {
		rc = sp_h5w_fail(w, SP_EIO, "cannot create group rank%d/events", rk->rank);
		goto out;
	}
	for (int c = 0; c < (t->lanes ? 3 : 2); c++)
		if ((s.ds[c] = sp_h5w_dataset(w, g, names[c], c < 2 ? H5T_STD_I64LE : H5T_STD_I32LE, e,
					      w->level)) < 0) {
			rc = sp_h5w_fail(w, SP_EIO, "cannot write the events of rank %d", rk->rank);
			goto out;
		}
	for (int k = 1; k < SP_VALUE_KINDS; k++)
		if (s.vals[k] && (s.vds[k] = sp_h5w_dataset(w, g, sp_value_kind_name(k), H5T_STD_I64LE, e,
							    w->level)) < 0) {
			rc = sp_h5w_fail(w, SP_EIO, "cannot write the events of rank %d", rk->rank);
			goto out;
		}
	for (size_t i = 0; i < t->n && rc == SP_OK; i++)
		if (!t->rd[i]->aggregate && stage_region(w, &s, t->rd[i]) < 0)
			rc = sp_h5w_fail(w, SP_EIO, "cannot write the events of rank %d", rk->rank);
	if (rc == SP_OK && stage_flush(w, &s) < 0)
		rc = sp_h5w_fail(w, SP_EIO, "cannot write the events of rank %d", rk->rank);
out:
	for (int c = 0; c < 3; c++)
		if (s.ds[c] >= 0 && sp_h5w_dataset_close(w, s.ds[c]) < 0 && rc == SP_OK)
			rc = sp_h5w_fail(w, SP_EIO, "cannot write the events of rank %d", rk->rank);
	for (int k = 1; k < SP_VALUE_KINDS; k++) {
		if (s.vds[k] >= 0 && sp_h5w_dataset_close(w, s.vds[k]) < 0 && rc == SP_OK)
			rc = sp_h5w_fail(w, SP_EIO, "cannot write the events of rank %d", rk->rank);
		free(s.vals[k]);
	}
	if (g >= 0 && H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close rank%d/events", rk->rank);
	free(s.starts);
	free(s.ends);
	free(s.lanes);
	return rc;
}

/* The call tree as four columns, its regions by row. */
static enum sp_err write_tree(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk,
			      const struct table *t)
{
	size_t n = rk->ntree, rows = n ? n : 1;
	enum sp_err rc = SP_OK;
	int32_t *parent = malloc(rows * sizeof *parent), *region = malloc(rows * sizeof *region);
	int64_t *calls = malloc(rows * sizeof *calls), *total = malloc(rows * sizeof *total);
	hid_t g = H5I_INVALID_HID;

	if (n > INT32_MAX) {
		rc = sp_h5w_fail(w, SP_EINVAL, "rank %d: tree too large", rk->rank);
		goto out;
	}
	if (!parent || !region || !calls || !total) {
		rc = sp_h5w_fail(w, SP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct sp_tree_node *nd = &rk->tree[i];
		if (nd->region < 0 || (size_t)nd->region >= rk->nregions || t->row_of[nd->region] < 0) {
			rc = sp_h5w_fail(w, SP_EINVAL, "rank %d: tree node %zu names no written region", rk->rank, i);
			goto out;
		}
		if (nd->parent < -1 || (nd->parent >= 0 && (size_t)nd->parent >= i)) {
			rc = sp_h5w_fail(w, SP_EINVAL, "rank %d: tree node %zu has a bad parent", rk->rank, i);
			goto out;
		}
		parent[i] = nd->parent;
		region[i] = t->row_of[nd->region];
		calls[i] = nd->calls;
		total[i] = nd->total_ns;
	}
	if ((g = H5Gcreate2(rank_g, "tree", w->lcpl, w->gcpl, H5P_DEFAULT)) < 0 ||
	    sp_h5w_column(w, g, "parent", H5T_STD_I32LE, H5T_NATIVE_INT32, n, parent) < 0 ||
	    sp_h5w_column(w, g, "region", H5T_STD_I32LE, H5T_NATIVE_INT32, n, region) < 0 ||
	    sp_h5w_column(w, g, "calls", H5T_STD_I64LE, H5T_NATIVE_INT64, n, calls) < 0 ||
	    sp_h5w_column(w, g, "total_ns", H5T_STD_I64LE, H5T_NATIVE_INT64, n, total) < 0 ||
	    (rk->tree_overlaps > 0 && sp_h5w_attr_i64(g, "overlaps", rk->tree_overlaps) < 0))
		rc = sp_h5w_fail(w, SP_EIO, "cannot write the call tree of rank %d", rk->rank);
out:
	if (g >= 0 && H5Gclose(g) < 0 && rc == SP_OK)
		rc = sp_h5w_fail(w, SP_EIO, "cannot close the call tree of rank %d", rk->rank);
	free(parent);
	free(region);
	free(calls);
	free(total);
	return rc;
}

enum sp_err sp_h5w_regions_v2(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk)
{
	struct table t = {0};
	enum sp_err rc = plan(w, rk, &t);
	if (rc == SP_OK)
		rc = write_table(w, rank_g, rk, &t);
	if (rc == SP_OK)
		rc = write_events(w, rank_g, rk, &t);
	if (rc == SP_OK && rk->tree)
		rc = write_tree(w, rank_g, rk, &t);
	table_free(&t);
	return rc;
}

enum sp_err sp_h5w_regions_v3(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk)
{
	struct table t = {0};
	enum sp_err rc = plan(w, rk, &t);
	if (rc == SP_OK && t.n != rk->nregions)
		rc = sp_h5w_fail(w, SP_EINVAL, "rank %d: a streamed region without calls", rk->rank);
	if (rc == SP_OK)
		rc = write_table(w, rank_g, rk, &t);
	if (rc == SP_OK && rk->tree)
		rc = write_tree(w, rank_g, rk, &t);
	table_free(&t);
	return rc;
}

/* h5read_table.c - reading a rank of format version 2 (h5write_table.c
 * writes it): the regions table, every row checked as version 1's summary
 * attributes are and its first_event against the rows before it; the event
 * columns, read many small regions at a time into each region's own
 * columns; the call tree by row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_h5read.h"
#include "sp_h5read_table.h"
#include "sp_h5read_tree.h"

/* Small regions' calls are read SPAN_MAX at a time through a buffer; a
 * larger region straight into its columns. */
#define SPAN_MAX ((size_t)1 << 16)

enum { NUM_CALLS, TOTAL, MIN, MAX, FIRST_START, LAST_END, DROPPED, SELF, FIRST_EVENT, NI64 };
static const char *const i64_names[NI64] = {"num_calls", "total_ns", "min_ns", "max_ns", "first_start_ns",
	"last_end_ns", "dropped_events", "self_ns", "first_event"};
enum { MEAN, STD, AGG, NOTHER };
static const char *const other_names[NOTHER] = {"mean_ns", "std_ns", "aggregate"};

static int name_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fills rk's regions from the columns read (n rows), checking each. */
static enum sp_err fill_rows(struct reader *r, const char *ctx, const struct sp_h5r_strings *names,
			     const int64_t *i64, const double *f64, const int32_t *agg, size_t n,
			     struct sp_rank *rk, int64_t *first, uint64_t *total)
{
	uint64_t at = 0;
	enum sp_err rc;
	for (size_t i = 0; i < n; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		struct sp_stats *st = &rd->stats;
		const char *name = sp_h5r_string(names, i);
		char rctx[256];
		if (!name || !name[0])
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: row %zu has no name", ctx, i);
		if (!(rd->name = strdup(name)))
			return sp_h5r_fail(r, SP_ENOMEM, "out of memory");
		rk->nregions = i + 1;
		snprintf(rctx, sizeof rctx, "%s/%.200s", ctx, name);
		*st = (struct sp_stats){
			.num_calls = i64[NUM_CALLS * n + i], .total_ns = i64[TOTAL * n + i],
			.min_ns = i64[MIN * n + i], .max_ns = i64[MAX * n + i],
			.mean_ns = f64[MEAN * n + i], .std_ns = f64[STD * n + i],
			.first_start_ns = i64[FIRST_START * n + i], .last_end_ns = i64[LAST_END * n + i],
		};
		if ((rc = sp_h5r_stats_ok(r, rctx, st)) != SP_OK)
			return rc;
		if (agg[i] != 0 && agg[i] != 1)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: aggregate is %d, not 0 or 1", rctx, (int)agg[i]);
		if ((rd->dropped = i64[DROPPED * n + i]) < 0)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: negative dropped_events", rctx);
		/* Version 3 has no first_event: its blocks say where calls are. */
		first[i] = r->version == 3 ? -1 : i64[FIRST_EVENT * n + i];
		if (r->version != 3 && (uint64_t)first[i] != at)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: first_event is %lld, but the rows before it "
					   "hold %llu calls", rctx, (long long)first[i], (unsigned long long)at);
		rd->aggregate = agg[i];
		rd->self_ns = agg[i] ? i64[SELF * n + i] : 0;
		if (!agg[i]) {
			if ((uint64_t)st->num_calls > (uint64_t)INT64_MAX - at)
				return sp_h5r_fail(r, SP_ECORRUPT, "%s: too many calls", ctx);
			at += (uint64_t)st->num_calls;
		}
	}
	*total = at;
	return SP_OK;
}

enum sp_err sp_h5r_names_unique(struct reader *r, const char *gname, const struct sp_rank *rk)
{
	enum sp_err rc = SP_OK;
	const char **v;
	if (rk->nregions < 2)
		return SP_OK;
	if (!(v = malloc(rk->nregions * sizeof *v)))
		return sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, rk->nregions);
	for (size_t i = 0; i < rk->nregions; i++)
		v[i] = rk->regions[i].name;
	qsort(v, rk->nregions, sizeof *v, name_ptr_cmp);
	for (size_t i = 1; i < rk->nregions && rc == SP_OK; i++)
		if (strcmp(v[i - 1], v[i]) == 0)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s has two regions named '%s'", gname, v[i]);
	free(v);
	return rc;
}

/* The regions table's cumulative_ns column, when the file has it (files
 * written before it lack it: the total is then recomputed from the tree):
 * each row's total counting a recursive region once, never above its raw
 * total. */
static enum sp_err read_cumulative(struct reader *r, hid_t tg, const char *ctx, size_t rows,
				   struct sp_rank *rk)
{
	hid_t ds = -1;
	hsize_t len = 0;
	int64_t *v = NULL;
	enum sp_err rc = SP_OK;
	int hl = sp_h5r_hard_link(tg, "cumulative_ns");
	if (hl <= 0)
		return hl < 0 ? sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up cumulative_ns", ctx) : SP_OK;
	if ((rc = sp_h5r_column_open(r, tg, ctx, "cumulative_ns", H5T_INTEGER, 1, &ds, &len)) != SP_OK)
		return rc;
	if (len != rows)
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cumulative_ns holds %llu rows, name %zu", ctx,
				 (unsigned long long)len, rows);
	else if (!(v = sp_h5r_alloc_n(rows, sizeof *v)))
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu regions", ctx, rows);
	else if (rows && H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read cumulative_ns", ctx);
	sp_h5r_close(ds);
	for (size_t i = 0; i < rows && rc == SP_OK; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		if (v[i] < 0 || v[i] > rd->stats.total_ns)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s/%.200s: cumulative_ns %lld is not between 0 and "
					 "total_ns %lld", ctx, rd->name, (long long)v[i],
					 (long long)rd->stats.total_ns);
		else
			rd->cumulative_ns = v[i];
	}
	free(v);
	return rc;
}

/* The regions table's optional columns (h5write_table.c's
 * write_value_table), each of the table's rows rows, into rk's regions. */
static enum sp_err read_value_table(struct reader *r, hid_t tg, const char *ctx, size_t rows,
				    struct sp_rank *rk)
{
	static const char *const names[4] = {"value_kind", "values_total", "peak_live_bytes", "gpu_wait_ns"};
	int64_t *v = NULL;
	int kinds = 0;                 /* a row has values */
	enum sp_err rc = SP_OK;
	for (int c = 0; c < 4 && rc == SP_OK; c++) {
		hid_t ds = -1;
		hsize_t len = 0;
		int hl = sp_h5r_hard_link(tg, names[c]);
		if (hl < 0) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up %s", ctx, names[c]);
			break;
		}
		if (hl == 0) {
			if (c == 1 && kinds)
				rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: value_kind without values_total", ctx);
			continue;
		}
		if ((rc = sp_h5r_column_open(r, tg, ctx, names[c], H5T_INTEGER, 1, &ds, &len)) != SP_OK)
			break;
		if (len != rows)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: %s holds %llu rows, name %zu", ctx, names[c],
					 (unsigned long long)len, rows);
		else if (!v && !(v = sp_h5r_alloc_n(rows, sizeof *v)))
			rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu regions", ctx, rows);
		else if (rows && H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read %s", ctx, names[c]);
		sp_h5r_close(ds);
		for (size_t i = 0; i < rows && rc == SP_OK; i++) {
			struct sp_region_data *rd = &rk->regions[i];
			if (c == 0 && (v[i] < 0 || v[i] >= SP_VALUE_KINDS))
				rc = sp_h5r_fail(r, SP_ECORRUPT, "%s/%.200s: value_kind %lld is unknown", ctx,
						 rd->name, (long long)v[i]);
			else if (c == 0)
				kinds |= (rd->value_kind = (int)v[i]) != 0;
			else if (c == 1 && rd->value_kind)
				rd->values_total = v[i];
			else if (c == 2 && v[i] != SP_NO_PEAK && v[i] <= 0)
				rc = sp_h5r_fail(r, SP_ECORRUPT, "%s/%.200s: peak_live_bytes %lld", ctx, rd->name,
						 (long long)v[i]);
			else if (c == 2)
				rd->peak_bytes = v[i];
			else if (c == 3 && v[i] < -1)
				rc = sp_h5r_fail(r, SP_ECORRUPT, "%s/%.200s: gpu_wait_ns %lld", ctx, rd->name,
						 (long long)v[i]);
			else if (c == 3 && v[i] >= 0) {
				rd->gpu_waited = 1;
				rd->gpu_wait_ns = v[i];
			}
		}
	}
	free(v);
	return rc;
}

enum sp_err sp_h5r_read_table(struct reader *r, hid_t g, const char *gname, struct sp_rank *rk,
			      int64_t **first, uint64_t *total)
{
	hid_t tg = -1, dn = -1, di[NI64], dother[NOTHER];
	struct sp_h5r_strings names = {.mt = -1, .space = -1};
	int64_t *i64 = NULL;
	double *f64 = NULL;
	int32_t *agg = NULL;
	enum sp_err rc = SP_OK;
	hsize_t n = 0, len = 0;
	char ctx[48];

	*first = NULL;
	for (int c = 0; c < NI64; c++)
		di[c] = -1;
	for (int c = 0; c < NOTHER; c++)
		dother[c] = -1;
	snprintf(ctx, sizeof ctx, "%s/regions", gname);
	if (sp_h5r_hard_link(g, "regions") != 1 || (tg = sp_h5r_open_group(r, g, "regions")) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s has no regions group", gname);
	if ((rc = sp_h5r_column_open(r, tg, ctx, "name", H5T_STRING, 1, &dn, &n)) != SP_OK)
		goto out;
	if (n > INT32_MAX) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: %llu rows", ctx, (unsigned long long)n);
		goto out;
	}
	for (int c = 0; c < NI64 + NOTHER; c++) {
		const char *cname = c < NI64 ? i64_names[c] : other_names[c - NI64];
		hid_t *ds = c < NI64 ? &di[c] : &dother[c - NI64];
		if (c == FIRST_EVENT && r->version == 3)
			continue;
		if ((rc = sp_h5r_column_open(r, tg, ctx, cname, H5T_INTEGER, 1, ds, &len)) != SP_OK)
			goto out;
		if (len != n) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: %s holds %llu rows, name %llu", ctx, cname,
					 (unsigned long long)len, (unsigned long long)n);
			goto out;
		}
	}
	size_t rows = (size_t)n;
	i64 = sp_h5r_alloc_n(rows, NI64 * sizeof *i64);
	f64 = sp_h5r_alloc_n(rows, 2 * sizeof *f64);
	agg = sp_h5r_alloc_n(rows, sizeof *agg);
	*first = sp_h5r_alloc_n(rows, sizeof **first);
	if (!i64 || !f64 || !agg || !*first || !(rk->regions = calloc(rows ? rows : 1, sizeof *rk->regions))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, rows);
		goto out;
	}
	if ((rc = sp_h5r_strings_read(r, dn, ctx, "name", rows, &names)) != SP_OK)
		goto out;
	int bad = 0;
	for (int c = 0; rows && c < NI64; c++)
		bad |= di[c] >= 0 && H5Dread(di[c], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, i64 + c * rows) < 0;
	if (rows && (bad || H5Dread(dother[MEAN], H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, f64) < 0 ||
		     H5Dread(dother[STD], H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, f64 + rows) < 0 ||
		     H5Dread(dother[AGG], H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, agg) < 0)) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read the table's columns", ctx);
		goto out;
	}
	if ((rc = fill_rows(r, ctx, &names, i64, f64, agg, rows, rk, *first, total)) == SP_OK &&
	    (rc = sp_h5r_names_unique(r, gname, rk)) == SP_OK &&
	    (rc = read_cumulative(r, tg, ctx, rows, rk)) == SP_OK)
		rc = read_value_table(r, tg, ctx, rows, rk);
out:
	if (rc != SP_OK) {
		free(*first);
		*first = NULL;
	}
	sp_h5r_strings_free(&names);
	free(i64);
	free(f64);
	free(agg);
	sp_h5r_close(dn);
	for (int c = 0; c < NI64; c++)
		sp_h5r_close(di[c]);
	for (int c = 0; c < NOTHER; c++)
		sp_h5r_close(dother[c]);
	sp_h5r_close(tg);
	return rc;
}

enum sp_err sp_h5r_events_open(struct reader *r, hid_t g, const char *gname, uint64_t total, int deep,
			       hid_t cols[3])
{
	static const char *const names[3] = {"start_times", "end_times", "lanes"};
	enum sp_err rc = SP_OK;
	hid_t eg = -1;
	char ctx[48];

	cols[0] = cols[1] = cols[2] = -1;
	snprintf(ctx, sizeof ctx, "%s/events", gname);
	/* Deep: the group's header checked too (a stream opens the group
	 * again later, as it was checked at open, with the file's checks done). */
	if (sp_h5r_hard_link(g, "events") != 1 ||
	    (eg = deep ? sp_h5r_open_group(r, g, "events") : H5Gopen2(g, "events", H5P_DEFAULT)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s has no events group", gname);
	for (int c = 0; c < 3 && rc == SP_OK; c++) {
		hsize_t len = 0;
		int hl = c < 2 ? 1 : sp_h5r_hard_link(eg, names[c]);
		if (hl < 0)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up the lanes", ctx);
		else if (hl == 0)
			break;
		else if ((rc = sp_h5r_column_open(r, eg, ctx, names[c], H5T_INTEGER, deep > 1, &cols[c], &len)) ==
			 SP_OK &&
			 len != (hsize_t)total)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: %s holds %llu calls, the regions %llu", ctx, names[c],
					 (unsigned long long)len, (unsigned long long)total);
	}
	sp_h5r_close(eg);
	if (rc != SP_OK)
		for (int c = 0; c < 3; c++) {
			sp_h5r_close(cols[c]);
			cols[c] = -1;
		}
	return rc;
}

enum sp_err sp_h5r_alloc_region(struct reader *r, const char *gname, struct sp_region_data *rd, size_t n,
				int lanes)
{
	rd->owns_events = 1;
	if (!(rd->starts = sp_h5r_alloc_column(n, sizeof *rd->starts)) ||
	    !(rd->ends = sp_h5r_alloc_column(n, sizeof *rd->ends)) ||
	    (lanes && !(rd->lanes = sp_h5r_alloc_column(n, sizeof *rd->lanes))) ||
	    (rd->value_kind && !(rd->values = sp_h5r_alloc_column(n, sizeof *rd->values))))
		return sp_h5r_fail(r, SP_ENOMEM, "%s/regions/%.200s: out of memory for %zu events", gname,
				   rd->name, n);
	return SP_OK;
}

/* Reads calls first .. first + n - 1 of the columns into starts, ends and
 * (when the rank has them) lanes. */
static enum sp_err read_calls(struct reader *r, const char *gname, const hid_t cols[3], uint64_t first,
			      size_t n, int64_t *starts, int64_t *ends, int32_t *lanes)
{
	if (sp_h5r_span(cols[0], H5T_NATIVE_INT64, first, n, starts) < 0 ||
	    sp_h5r_span(cols[1], H5T_NATIVE_INT64, first, n, ends) < 0 ||
	    (cols[2] >= 0 && sp_h5r_span(cols[2], H5T_NATIVE_INT32, first, n, lanes) < 0))
		return sp_h5r_fail(r, SP_ECORRUPT, "%s/events: cannot read the event columns", gname);
	return SP_OK;
}

static size_t calls_of(const struct sp_region_data *rd)
{
	return rd->aggregate ? 0 : (size_t)rd->stats.num_calls;
}

enum sp_err sp_h5r_values_open(struct reader *r, hid_t g, const char *gname, const struct sp_rank *rk,
			       uint64_t total, hid_t vcols[SP_VALUE_KINDS])
{
	int need[SP_VALUE_KINDS] = {0};
	enum sp_err rc = SP_OK;
	char ctx[48];
	hid_t eg;

	for (size_t i = 0; i < rk->nregions; i++)
		need[rk->regions[i].aggregate ? 0 : rk->regions[i].value_kind] = 1;
	if (!need[SP_VALUES_ALLOC_BYTES] && !need[SP_VALUES_BYTES])
		return SP_OK;
	snprintf(ctx, sizeof ctx, "%s/events", gname);
	if ((eg = H5Gopen2(g, "events", H5P_DEFAULT)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s has no events group", gname);
	for (int k = 1; k < SP_VALUE_KINDS && rc == SP_OK; k++) {
		hsize_t len = 0;
		if (!need[k])
			continue;
		if (sp_h5r_hard_link(eg, sp_value_kind_name(k)) != 1)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: a region has %s but the column is missing", ctx,
					 sp_value_kind_name(k));
		else if ((rc = sp_h5r_column_open(r, eg, ctx, sp_value_kind_name(k), H5T_INTEGER, 1, &vcols[k],
						  &len)) == SP_OK && len != (hsize_t)total)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: %s holds %llu calls, the regions %llu", ctx,
					 sp_value_kind_name(k), (unsigned long long)len, (unsigned long long)total);
	}
	sp_h5r_close(eg);
	return rc;
}

/* Reads calls first .. first + n - 1 of every open value column into v. */
static enum sp_err read_values(struct reader *r, const char *gname, const hid_t vcols[SP_VALUE_KINDS],
			       uint64_t first, size_t n, int64_t *const v[SP_VALUE_KINDS])
{
	for (int k = 1; k < SP_VALUE_KINDS; k++)
		if (vcols[k] >= 0 && sp_h5r_span(vcols[k], H5T_NATIVE_INT64, first, n, v[k]) < 0)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s/events: cannot read %s", gname,
					   sp_value_kind_name(k));
	return SP_OK;
}

enum sp_err sp_h5r_values_match(struct reader *r, const char *ctx, const struct sp_region_data *rd, size_t n)
{
	uint64_t sum = 0;
	if (!rd->value_kind)
		return SP_OK;
	for (size_t i = 0; i < n; i++)
		sum += (uint64_t)rd->values[i];
	if ((int64_t)sum != rd->values_total)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: its %s sum to %lld, values_total says %lld", ctx,
				   sp_value_kind_name(rd->value_kind), (long long)(int64_t)sum,
				   (long long)rd->values_total);
	return SP_OK;
}

/* Every region's events into its own columns, each region checked as
 * version 1's are (sp_h5r_events_ok). */
static enum sp_err read_all_events(struct reader *r, const char *gname, struct sp_rank *rk,
				   const int64_t *first, uint64_t total, const hid_t cols[3],
				   const hid_t vcols[SP_VALUE_KINDS])
{
	size_t cap = total < SPAN_MAX ? (size_t)(total ? total : 1) : SPAN_MAX, i = 0;
	int lanes = cols[2] >= 0;
	int64_t *s = malloc(cap * sizeof *s), *e = malloc(cap * sizeof *e);
	int32_t *l = lanes ? malloc(cap * sizeof *l) : NULL;
	int64_t *v[SP_VALUE_KINDS] = {NULL};
	enum sp_err rc = SP_OK;
	char ctx[256];

	if (!s || !e || (lanes && !l)) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory", gname);
		goto out;
	}
	for (int k = 1; k < SP_VALUE_KINDS; k++)
		if (vcols[k] >= 0 && !(v[k] = malloc(cap * sizeof *v[k]))) {
			rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory", gname);
			goto out;
		}
	while (i < rk->nregions && rc == SP_OK) {
		struct sp_region_data *rd = &rk->regions[i];
		size_t n = calls_of(rd);
		if (n == 0) {
			i++;
			continue;
		}
		if (n >= cap) {                /* alone, straight into its columns */
			snprintf(ctx, sizeof ctx, "%s/regions/%.200s", gname, rd->name);
			if ((rc = sp_h5r_alloc_region(r, gname, rd, n, lanes)) == SP_OK &&
			    (rc = read_calls(r, gname, cols, (uint64_t)first[i], n, rd->starts, rd->ends,
					     rd->lanes)) == SP_OK &&
			    (!rd->value_kind ||
			     (rc = sp_h5r_span(vcols[rd->value_kind], H5T_NATIVE_INT64, (uint64_t)first[i], n,
					       rd->values) < 0
				   ? sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read its values", ctx)
				   : SP_OK) == SP_OK) &&
			    (rc = sp_h5r_values_match(r, ctx, rd, n)) == SP_OK)
				rc = sp_h5r_events_ok(r, ctx, rd->starts, rd->ends, n);
			i++;
			continue;
		}
		/* Regions i .. j - 1: as many as the buffer holds. */
		size_t j = i, sum = 0;
		while (j < rk->nregions && sum + calls_of(&rk->regions[j]) <= cap)
			sum += calls_of(&rk->regions[j++]);
		if ((rc = read_calls(r, gname, cols, (uint64_t)first[i], sum, s, e, l)) != SP_OK ||
		    (rc = read_values(r, gname, vcols, (uint64_t)first[i], sum, v)) != SP_OK)
			break;
		for (size_t at = 0; i < j && rc == SP_OK; i++) {
			rd = &rk->regions[i];
			if ((n = calls_of(rd)) == 0)
				continue;
			snprintf(ctx, sizeof ctx, "%s/regions/%.200s", gname, rd->name);
			if ((rc = sp_h5r_alloc_region(r, gname, rd, n, lanes)) != SP_OK)
				break;
			memcpy(rd->starts, s + at, n * sizeof *s);
			memcpy(rd->ends, e + at, n * sizeof *e);
			if (lanes)
				memcpy(rd->lanes, l + at, n * sizeof *l);
			if (rd->value_kind)
				memcpy(rd->values, v[rd->value_kind] + at, n * sizeof *rd->values);
			at += n;
			if ((rc = sp_h5r_values_match(r, ctx, rd, n)) == SP_OK)
				rc = sp_h5r_events_ok(r, ctx, rd->starts, rd->ends, n);
		}
	}
out:
	free(s);
	free(e);
	free(l);
	for (int k = 1; k < SP_VALUE_KINDS; k++)
		free(v[k]);
	return rc;
}

enum sp_err sp_h5r_read_rank_v2(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk)
{
	hid_t g = -1, cols[3] = {-1, -1, -1}, vcols[SP_VALUE_KINDS] = {-1, -1, -1};
	int64_t *first = NULL;
	uint64_t total = 0;
	enum sp_err rc;
	int has_tree;

	if ((g = sp_h5r_open_group(r, file, gname)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", gname);
	if ((rc = sp_h5r_rank_attrs(r, g, gname, rk)) != SP_OK ||
	    (rc = sp_h5r_read_table(r, g, gname, rk, &first, &total)) != SP_OK)
		goto out;
	if ((has_tree = sp_h5r_hard_link(g, "tree")) < 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up the tree", gname);
		goto out;
	}
	/* A summary read checks the columns' extents; a full one (or one that
	 * builds the tree) their storage too, and reads them. */
	int need_events = (r->flags & SP_READ_EVENTS) || !has_tree;
	if ((rc = sp_h5r_events_open(r, g, gname, total, need_events ? 2 : 1, cols)) != SP_OK ||
	    (need_events && ((rc = sp_h5r_values_open(r, g, gname, rk, total, vcols)) != SP_OK ||
			     (rc = read_all_events(r, gname, rk, first, total, cols, vcols)) != SP_OK)))
		goto out;
	rc = sp_h5r_tree_and_lines(r, g, gname, has_tree, NULL, 0, rk);
out:
	for (int c = 0; c < 3; c++)
		sp_h5r_close(cols[c]);
	for (int k = 0; k < SP_VALUE_KINDS; k++)
		sp_h5r_close(vcols[k]);
	free(first);
	sp_h5r_close(g);
	return rc;
}

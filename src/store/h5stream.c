/* h5stream.c - a profile open for streaming its event columns a slice at
 * a time (sp_h5_stream_*, for export): the structure is read and every
 * region's columns checked at open; a slice reads only its hyperslab (of
 * the region's own columns in version 1, of the rank's in version 2, of
 * the region's blocks in the rank's in version 3, whose partial files have
 * their stats computed at open, in one pass over the columns a slice at a
 * time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_h5read.h"
#include "sp_h5read_file.h"
#include "sp_h5read_table.h"
#include "sp_h5read_v3.h"

/* A profile open for streaming its events (sp_h5_stream_open). */
struct sp_h5_stream {
	struct reader r;
	char *path;
	hid_t file;
	struct sp_profile *p;
	char **groups;                 /* per rank: the rank group's link name */
	char ***links;                 /* version 1: per rank, per region: the region's link name */
	int64_t **first;               /* version 2: per rank, per region: its first call */
	uint64_t *total;               /* version 2: per rank: the calls in its columns */
	struct sp_h5r_v3 *v3;          /* version 3: per rank: its blocks and open columns */
	size_t ri, gi;                 /* the region (version 2: rank) whose columns are open */
	hid_t cols[3];                 /* its start_times, end_times, lanes; -1: none */
	size_t vri;                    /* version 2: the rank whose value columns are open */
	hid_t vcols[SP_VALUE_KINDS];   /* its value columns by kind; -1: none */
};

static void close_values(struct sp_h5_stream *s)
{
	for (int k = 0; k < SP_VALUE_KINDS; k++) {
		sp_h5r_close(s->vcols[k]);
		s->vcols[k] = -1;
	}
	s->vri = SIZE_MAX;
}

static void close_columns(hid_t cols[3])
{
	for (int i = 0; i < 3; i++) {
		sp_h5r_close(cols[i]);
		cols[i] = -1;
	}
}

/* Opens the event columns of region group g (start_times, end_times, and
 * lanes when present) into cols, each of exactly n events; deep: checks
 * their storage too (done once, at open, for every region). */
static enum sp_err stream_columns(struct reader *r, hid_t g, const char *ctx, int64_t n, hid_t cols[3],
				  int deep)
{
	static const char *const names[3] = {"start_times", "end_times", "lanes"};
	enum sp_err rc = SP_OK;
	for (int i = 0; i < 3 && rc == SP_OK; i++) {
		hsize_t len = 0;
		int hl = i < 2 ? 1 : sp_h5r_hard_link(g, names[i]);
		if (hl < 0)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up the lanes", ctx);
		else if (hl == 0)
			break;
		else if ((rc = sp_h5r_column_open(r, g, ctx, names[i], H5T_INTEGER, deep, &cols[i], &len)) == SP_OK &&
			 len != (hsize_t)n)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: %s holds %llu calls, num_calls says %lld", ctx, names[i],
				   (unsigned long long)len, (long long)n);
	}
	if (rc != SP_OK)
		close_columns(cols);
	return rc;
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A version 2 rank for a stream: attributes, the regions table, the event
 * columns checked; keeps each region's first call. */
static enum sp_err stream_rank_v2(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk,
				  size_t ri)
{
	struct sp_h5_stream *s = r->stream;
	hid_t g = -1, cols[3] = {-1, -1, -1}, vcols[SP_VALUE_KINDS] = {-1, -1, -1};
	enum sp_err rc;

	if ((g = sp_h5r_open_group(r, file, gname)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", gname);
	if ((rc = sp_h5r_rank_attrs(r, g, gname, rk)) == SP_OK &&
	    (rc = sp_h5r_read_table(r, g, gname, rk, &s->first[ri], &s->total[ri])) == SP_OK &&
	    (rc = sp_h5r_events_open(r, g, gname, s->total[ri], 2, cols)) == SP_OK)
		rc = sp_h5r_values_open(r, g, gname, rk, s->total[ri], vcols);
	close_columns(cols);
	for (int k = 0; k < SP_VALUE_KINDS; k++)
		sp_h5r_close(vcols[k]);
	sp_h5r_close(g);
	return rc;
}

/* A partial rank's stats, added up a run of calls at a time (sp_h5r_v3_scan). */
struct v3_stats {
	const char *gname;
	struct sp_stats_acc *acc;
	int64_t *first;                /* per region: its earliest start */
	uint64_t *values;              /* per region: the sum of its values, wrapping */
};

static enum sp_err add_run(struct reader *r, void *ctx, const struct sp_h5r_v3_run *run)
{
	struct v3_stats *t = ctx;
	struct sp_stats_acc *a = &t->acc[run->region];
	int64_t *first = &t->first[run->region];
	for (size_t i = 0; i < run->n; i++) {
		uint64_t d = (uint64_t)run->ends[i] - (uint64_t)run->starts[i];
		if (d > INT64_MAX)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: durations overflow 64 bits", t->gname);
		sp_stats_acc_add(a, (int64_t)d, run->ends[i]);
		if (run->starts[i] < *first)
			*first = run->starts[i];
	}
	for (int k = 1; k < SP_VALUE_KINDS; k++)
		for (size_t i = 0; run->values[k] && i < run->n; i++)
			t->values[run->region] += (uint64_t)run->values[k][i];
	return SP_OK;
}

/* A partial rank's stats, from one pass over its calls (bounded memory). */
static enum sp_err partial_stats(struct reader *r, const char *gname, struct sp_rank *rk,
				 const struct sp_h5r_v3 *v)
{
	size_t n = rk->nregions ? rk->nregions : 1;
	struct v3_stats t = {gname, malloc(n * sizeof *t.acc), malloc(n * sizeof *t.first),
			     calloc(n, sizeof *t.values)};
	enum sp_err rc = SP_OK;
	if (!t.acc || !t.first || !t.values) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, rk->nregions);
		goto out;
	}
	for (size_t i = 0; i < rk->nregions; i++) {
		sp_stats_acc_init(&t.acc[i]);
		t.first[i] = INT64_MAX;
	}
	/* Lanes are not needed here; the values are when regions have them. */
	int values = rk->nregions && rk->regions[0].value_kind;
	if ((rc = sp_h5r_v3_scan(r, gname, v, rk->nregions, values, add_run, &t)) != SP_OK)
		goto out;
	for (size_t i = 0; i < rk->nregions && rc == SP_OK; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		if (sp_stats_from_acc(&rd->stats, &t.acc[i], t.first[i]) < 0)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s/regions/%.200s: durations overflow 64 bits", gname,
					 rd->name);
		rd->values_total = (int64_t)t.values[i];
	}
out:
	free(t.acc);
	free(t.first);
	free(t.values);
	return rc;
}

/* A version 3 rank for a stream: attributes, regions, blocks, the columns
 * checked and kept open, each region's blocks indexed; a partial rank's
 * stats computed. */
static enum sp_err stream_rank_v3(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk,
				  struct sp_h5r_v3 *v)
{
	enum sp_err rc;
	hid_t g = sp_h5r_open_group(r, file, gname);
	if (g < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", gname);
	if ((rc = sp_h5r_v3_open(r, g, gname, rk, 1, v)) == SP_OK &&
	    (!v->partial || (rc = partial_stats(r, gname, rk, v)) == SP_OK))
		rc = sp_h5r_v3_index(r, v, rk->nregions);
	sp_h5r_close(g);
	return rc;
}

/* Reads a rank's structure for a stream: attributes, region names and stats,
 * and checks every region's columns; keeps the link names for reading. */
static enum sp_err stream_rank(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk)
{
	struct sp_h5_stream *s = r->stream;
	size_t ri = (size_t)(rk - s->p->ranks);
	hid_t g = -1, regions = -1, cols[3] = {-1, -1, -1};
	struct names nl = {0};
	const char **sorted = NULL;
	enum sp_err rc = SP_OK;

	if (!s->groups && (!(s->groups = calloc(s->p->nranks, sizeof *s->groups)) ||
			   !(s->links = calloc(s->p->nranks, sizeof *s->links)) ||
			   !(s->first = calloc(s->p->nranks, sizeof *s->first)) ||
			   !(s->total = calloc(s->p->nranks, sizeof *s->total)) ||
			   !(s->v3 = calloc(s->p->nranks, sizeof *s->v3))))
		return sp_h5r_fail(r, SP_ENOMEM, "out of memory");
	if (ri == 0)
		for (size_t i = 0; i < s->p->nranks; i++)
			sp_h5r_v3_init(&s->v3[i]);
	if (!(s->groups[ri] = strdup(gname)))
		return sp_h5r_fail(r, SP_ENOMEM, "out of memory");
	if (r->version == 2)
		return stream_rank_v2(r, file, gname, rk, ri);
	if (r->version == 3)
		return stream_rank_v3(r, file, gname, rk, &s->v3[ri]);
	if ((g = sp_h5r_open_group(r, file, gname)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", gname);
	if ((rc = sp_h5r_rank_attrs(r, g, gname, rk)) != SP_OK)
		goto out;
	if ((rc = sp_h5r_open_regions(r, g, gname, &regions, &nl, rk)) != SP_OK)
		goto out;
	if (!(sorted = sp_h5r_alloc_n(nl.n, sizeof *sorted))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, nl.n);
		goto out;
	}
	rk->nregions = nl.n;
	for (size_t i = 0; i < nl.n; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		char ctx[256];
		if ((rc = sp_h5r_read_region(r, regions, nl.v[i], rk->rank, 0, rd)) != SP_OK)
			goto out;
		sorted[i] = rd->name;
		if (rd->owns_events) {
			/* No summary attributes: the columns were read for the
			 * stats and checked; only the stats are kept. */
			sp_region_drop_events(rd);
			continue;
		}
		if (rd->stats.num_calls == 0 || rd->aggregate)
			continue;
		snprintf(ctx, sizeof ctx, "rank%d/regions/%s", rk->rank, nl.v[i]);
		hid_t rg = sp_h5r_open_group(r, regions, nl.v[i]);
		rc = rg < 0 ? sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", ctx)
			    : stream_columns(r, rg, ctx, rd->stats.num_calls, cols, 1);
		close_columns(cols);
		sp_h5r_close(rg);
		if (rc != SP_OK)
			goto out;
	}
	qsort(sorted, nl.n, sizeof *sorted, str_ptr_cmp);
	for (size_t i = 1; i < nl.n; i++)
		if (strcmp(sorted[i - 1], sorted[i]) == 0) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s has two regions named '%s'", gname, sorted[i]);
			goto out;
		}
	s->links[ri] = nl.v;           /* nl.n == rk->nregions from here on */
	nl = (struct names){0};
out:
	free(sorted);
	sp_h5r_names_free(&nl);
	sp_h5r_close(regions);
	H5Gclose(g);
	return rc;
}

/* Opens path for sp_h5_stream_read. Returns the codes of sp_h5_read; on
 * failure *out is NULL and nothing is left allocated or open. */
enum sp_err sp_h5_stream_open(const char *path, struct sp_h5_stream **out, struct sp_error *err)
{
	struct sp_h5_stream *s = NULL;
	hid_t fapl = -1;
	enum sp_err rc = SP_OK;

	if (!out || !path)
		return sp_error_set(err, SP_EINVAL, "sp_h5_stream_open: bad arguments");
	*out = NULL;
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (!(s = calloc(1, sizeof *s)) || !(s->path = strdup(path)) || !(s->p = calloc(1, sizeof *s->p))) {
		rc = sp_error_set(err, SP_ENOMEM, "cannot read '%s': out of memory", path);
		goto out;
	}
	s->file = -1;
	s->ri = s->gi = SIZE_MAX;
	s->cols[0] = s->cols[1] = s->cols[2] = -1;
	for (int k = 0; k < SP_VALUE_KINDS; k++)
		s->vcols[k] = -1;
	s->vri = SIZE_MAX;
	s->r = (struct reader){.path = s->path, .err = err, .flags = SP_READ_SUMMARY, .stream = s,
			       .file = -1, .fd = -1};
	if ((rc = sp_h5r_check_path(&s->r)) != SP_OK)
		goto out;
	/* A chunk cache that holds a compressed column's chunk (up to 16 MiB)
	 * while it is read a slice at a time, instead of inflating it again
	 * for every slice. */
	if ((fapl = sp_h5_fapl()) < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 ||
	    H5Pset_cache(fapl, 0, 521, 16u << 20, 0.75) < 0) {
		rc = sp_h5r_fail(&s->r, SP_EIO, "cannot set up HDF5");
		goto out;
	}
	if ((rc = sp_h5r_open_file(&s->r, fapl, &s->file)) != SP_OK)
		goto out;
	s->r.file = s->file;
	rc = sp_h5r_read_file(&s->r, s->file, s->p, stream_rank);
	sp_h5r_release(&s->r);
out:
	sp_h5r_close(fapl);
	if (rc != SP_OK)
		sp_h5_stream_close(s);
	else
		*out = s;
	return rc;
}

const struct sp_profile *sp_h5_stream_profile(const struct sp_h5_stream *s)
{
	return s->p;
}

/* A slice of a version 3 region: its blocks' hyperslabs. */
static enum sp_err stream_read_v3(struct sp_h5_stream *s, size_t ri, size_t gi, const char *ctx, uint64_t first,
				  size_t n, int64_t *starts, int64_t *ends, int32_t *lanes)
{
	const struct sp_h5r_v3 *v = &s->v3[ri];
	if (sp_h5r_v3_span(v, gi, v->cols[0], H5T_NATIVE_INT64, sizeof *starts, first, n, starts) < 0 ||
	    sp_h5r_v3_span(v, gi, v->cols[1], H5T_NATIVE_INT64, sizeof *ends, first, n, ends) < 0 ||
	    (lanes && v->cols[2] >= 0 &&
	     sp_h5r_v3_span(v, gi, v->cols[2], H5T_NATIVE_INT32, sizeof *lanes, first, n, lanes) < 0))
		return sp_h5r_fail(&s->r, SP_ECORRUPT, "%s: cannot read the event columns", ctx);
	if (lanes && v->cols[2] < 0)
		memset(lanes, 0, n * sizeof *lanes);
	sp_h5r_v3_close_calls(v, starts, ends, n);
	for (size_t i = 0; i < n; i++)
		if (ends[i] < starts[i])
			return sp_h5r_fail(&s->r, SP_ECORRUPT, "%s: call %llu ends before it starts", ctx,
					   (unsigned long long)(first + i));
	return SP_OK;
}

/* Reads a slice of a region's columns; see sp_h5.h. The region's datasets
 * stay open until another region is read. */
enum sp_err sp_h5_stream_read(struct sp_h5_stream *s, size_t ri, size_t gi, uint64_t first, size_t n,
			      int64_t *starts, int64_t *ends, int32_t *lanes, struct sp_error *err)
{
	enum sp_err rc = SP_OK;
	char ctx[256];

	if (!s || !starts || !ends || ri >= s->p->nranks || gi >= s->p->ranks[ri].nregions)
		return sp_error_set(err, SP_EINVAL, "sp_h5_stream_read: bad arguments");
	const struct sp_rank *rk = &s->p->ranks[ri];
	const struct sp_region_data *rd = &rk->regions[gi];
	if (rd->aggregate)
		return sp_error_set(err, SP_EINVAL, "region '%s' holds aggregates only, no calls", rd->name);
	uint64_t calls = rd->stats.num_calls > 0 ? (uint64_t)rd->stats.num_calls : 0;
	if (first > calls || n > calls - first)
		return sp_error_set(err, SP_EINVAL, "sp_h5_stream_read: calls %llu + %zu of region '%s' "
				    "are not among its %llu", (unsigned long long)first, n, rd->name,
				    (unsigned long long)calls);
	if (n == 0)
		return SP_OK;
	s->r.err = err;
	int v2 = s->p->format_version == 2;
	snprintf(ctx, sizeof ctx, "rank%d/regions/%.200s", rk->rank, s->links[ri] ? s->links[ri][gi] : rd->name);
	if (s->p->format_version == 3)
		return stream_read_v3(s, ri, gi, ctx, first, n, starts, ends, lanes);
	if (v2 ? s->ri != ri : s->ri != ri || s->gi != gi) {
		close_columns(s->cols);
		s->ri = s->gi = SIZE_MAX;
		hid_t rg = H5Gopen2(s->file, s->groups[ri], H5P_DEFAULT);
		if (v2) {
			/* The rank's columns, checked at open: opened again as they were. */
			rc = rg < 0 ? sp_h5r_fail(&s->r, SP_ECORRUPT, "%s is not a group", s->groups[ri])
				    : sp_h5r_events_open(&s->r, rg, s->groups[ri], s->total[ri], 0, s->cols);
		} else {
			hid_t regions = rg >= 0 ? H5Gopen2(rg, "regions", H5P_DEFAULT) : -1;
			hid_t g = regions >= 0 ? H5Gopen2(regions, s->links[ri][gi], H5P_DEFAULT) : -1;
			rc = g < 0 ? sp_h5r_fail(&s->r, SP_ECORRUPT, "%s is not a group", ctx)
				   : stream_columns(&s->r, g, ctx, rd->stats.num_calls, s->cols, 0);
			sp_h5r_close(g);
			sp_h5r_close(regions);
		}
		sp_h5r_close(rg);
		if (rc != SP_OK)
			return rc;
		s->ri = ri;
		s->gi = gi;
	}
	uint64_t at = v2 ? (uint64_t)s->first[ri][gi] + first : first;
	for (int i = 0; i < 3 && rc == SP_OK; i++) {
		void *buf = i == 0 ? (void *)starts : i == 1 ? (void *)ends : (void *)lanes;
		if (i == 2 && (!lanes || s->cols[2] < 0)) {
			if (lanes)
				memset(lanes, 0, n * sizeof *lanes);
			break;
		}
		if (sp_h5r_span(s->cols[i], i == 2 ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64, at, n, buf) < 0)
			rc = sp_h5r_fail(&s->r, SP_ECORRUPT, "%s: cannot read the event columns", ctx);
	}
	for (size_t i = 0; rc == SP_OK && i < n; i++)
		if (ends[i] < starts[i])
			rc = sp_h5r_fail(&s->r, SP_ECORRUPT, "%s: call %llu ends before it starts", ctx,
				   (unsigned long long)(first + i));
	return rc;
}

enum sp_err sp_h5_stream_values(struct sp_h5_stream *s, size_t ri, size_t gi, uint64_t first, size_t n,
				int64_t *values, struct sp_error *err)
{
	if (!s || !values || ri >= s->p->nranks || gi >= s->p->ranks[ri].nregions)
		return sp_error_set(err, SP_EINVAL, "sp_h5_stream_values: bad arguments");
	const struct sp_rank *rk = &s->p->ranks[ri];
	const struct sp_region_data *rd = &rk->regions[gi];
	uint64_t calls = rd->stats.num_calls > 0 && !rd->aggregate ? (uint64_t)rd->stats.num_calls : 0;
	if (!rd->value_kind || first > calls || n > calls - first)
		return sp_error_set(err, SP_EINVAL, "sp_h5_stream_values: region '%s' has no values %llu + %zu",
				    rd->name, (unsigned long long)first, n);
	if (n == 0)
		return SP_OK;
	s->r.err = err;
	enum sp_err rc = SP_OK;
	if (s->p->format_version == 3) {
		const struct sp_h5r_v3 *v = &s->v3[ri];
		if (sp_h5r_v3_span(v, gi, v->vcols[rd->value_kind], H5T_NATIVE_INT64, sizeof *values, first, n,
				   values) < 0)
			rc = sp_h5r_fail(&s->r, SP_ECORRUPT, "rank%d/regions/%.200s: cannot read its values",
					 rk->rank, rd->name);
		return rc;
	}
	if (s->vri != ri) {
		/* The rank's value columns, checked at open (stream_rank_v2):
		 * opened again as they were, kept open until another rank's. */
		close_values(s);
		hid_t rg = H5Gopen2(s->file, s->groups[ri], H5P_DEFAULT);
		rc = rg < 0 ? sp_h5r_fail(&s->r, SP_ECORRUPT, "%s is not a group", s->groups[ri])
			    : sp_h5r_values_open(&s->r, rg, s->groups[ri], rk, s->total[ri], s->vcols);
		sp_h5r_close(rg);
		if (rc != SP_OK) {
			close_values(s);
			return rc;
		}
		s->vri = ri;
	}
	if (sp_h5r_span(s->vcols[rd->value_kind], H5T_NATIVE_INT64, (uint64_t)s->first[ri][gi] + first, n,
			values) < 0)
		rc = sp_h5r_fail(&s->r, SP_ECORRUPT, "rank%d/regions/%.200s: cannot read its values", rk->rank,
				 rd->name);
	return rc;
}

void sp_h5_stream_close(struct sp_h5_stream *s)
{
	if (!s)
		return;
	close_columns(s->cols);
	close_values(s);
	if (s->r.path)                 /* the reader was set up: fd is valid */
		sp_h5r_release(&s->r);
	if (s->file >= 0)
		H5Fclose(s->file);
	for (size_t i = 0; s->p && i < s->p->nranks; i++) {
		if (s->groups)
			free(s->groups[i]);
		if (s->links && s->links[i]) {
			for (size_t j = 0; j < s->p->ranks[i].nregions; j++)
				free(s->links[i][j]);
			free(s->links[i]);
		}
		if (s->first)
			free(s->first[i]);
		if (s->v3)
			sp_h5r_v3_free(&s->v3[i]);
	}
	free(s->v3);
	free(s->groups);
	free(s->links);
	free(s->first);
	free(s->total);
	sp_profile_free(s->p);
	free(s->path);
	free(s);
}

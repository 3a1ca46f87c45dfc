/* h5read_v3.c - reading a rank of format version 3, a streamed profile
 * (the run wrote its calls as it went, in blocks; man 5
 * scope-profiler-format): finished (version 2's regions table less
 * first_event, the calls found through the blocks table), or partial
 * (OUT.partial, still being written or left by a killed run: the region
 * names of group stream and the blocks, cut to the prefix that is
 * consistent, since a reader of a live file sees each dataset as of its
 * own last flush). Each region's calls are gathered, in call order, into
 * its own columns: the usual model. Nothing is trusted: a block names a
 * region that exists and holds a count of calls that is not negative and
 * lies inside the columns; a finished file's blocks add up to the table.
 * On the primitives of h5read_util.c and h5read_check.c and the table and
 * tree readers (see sp_h5read.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_h5read.h"
#include "sp_h5read_table.h"
#include "sp_h5read_tree.h"
#include "sp_h5read_v3.h"

/* The columns are read SPAN calls at a time (a chunk of the writer's). */
#define SPAN ((size_t)1 << 16)

void sp_h5r_v3_init(struct sp_h5r_v3 *v)
{
	*v = (struct sp_h5r_v3){.cols = {-1, -1, -1}};
	for (int k = 0; k < SP_VALUE_KINDS; k++)
		v->vcols[k] = -1;
}

void sp_h5r_v3_free(struct sp_h5r_v3 *v)
{
	for (int c = 0; c < 3; c++)
		sp_h5r_close(v->cols[c]);
	for (int k = 0; k < SP_VALUE_KINDS; k++)
		sp_h5r_close(v->vcols[k]);
	free(v->region);
	free(v->calls);
	free(v->at);
	free(v->first);
	free(v->blocks);
	free(v->before);
	sp_h5r_v3_init(v);
}

void sp_h5r_v3_close_calls(const struct sp_h5r_v3 *v, const int64_t *starts, int64_t *ends, size_t n)
{
	if (!v->partial)
		return;
	for (size_t i = 0; i < n; i++)
		if (ends[i] < starts[i])
			ends[i] = v->flushed_ns > starts[i] ? v->flushed_ns : starts[i];
}

/* A partial rank's group stream: flushed_ns, and the region names into
 * rk->regions (the NUL-terminated names of names, up to the first empty
 * one: bytes not written yet read as zeros). */
static enum sp_err read_stream(struct reader *r, hid_t g, const char *gname, struct sp_rank *rk,
			       struct sp_h5r_v3 *v)
{
	hid_t sg = -1, dn = -1, df = -1;
	hsize_t nb = 0, nf = 0;
	unsigned char *bytes = NULL;
	enum sp_err rc;
	char ctx[48];

	snprintf(ctx, sizeof ctx, "%s/stream", gname);
	if ((sg = sp_h5r_open_group(r, g, "stream")) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", ctx);
	if ((rc = sp_h5r_column_open(r, sg, ctx, "names", H5T_INTEGER, 1, &dn, &nb)) != SP_OK ||
	    (rc = sp_h5r_column_open(r, sg, ctx, "flushed_ns", H5T_INTEGER, 1, &df, &nf)) != SP_OK)
		goto out;
	if (nf == 0 || sp_h5r_span(df, H5T_NATIVE_INT64, 0, 1, &v->flushed_ns) < 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: %s flushed_ns", ctx, nf ? "cannot read" : "empty");
		goto out;
	}
	size_t n = (size_t)nb, k = 0;
	if ((hsize_t)n != nb || !(bytes = sp_h5r_alloc_n(n, 1))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %llu bytes of names", ctx,
				 (unsigned long long)nb);
		goto out;
	}
	if (n && H5Dread(dn, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes) < 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read the names", ctx);
		goto out;
	}
	for (size_t at = 0; at < n && bytes[at];) {
		const unsigned char *end = memchr(bytes + at, 0, n - at);
		if (!end)
			break;         /* a name not wholly written yet */
		k++;
		at = (size_t)(end - bytes) + 1;
	}
	if (k > INT32_MAX || !(rk->regions = calloc(k ? k : 1, sizeof *rk->regions))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu regions", gname, k);
		goto out;
	}
	for (size_t i = 0, at = 0; i < k; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		if (!(rd->name = strdup((const char *)bytes + at))) {
			rc = sp_h5r_fail(r, SP_ENOMEM, "out of memory");
			goto out;
		}
		rk->nregions = i + 1;
		rd->stats.first_start_ns = rd->stats.last_end_ns = SP_NO_TIME;
		at += strlen(rd->name) + 1;
	}
	rc = sp_h5r_names_unique(r, gname, rk);
out:
	free(bytes);
	sp_h5r_close(dn);
	sp_h5r_close(df);
	sp_h5r_close(sg);
	return rc;
}

/* Reads the 1-D integer column name of eg whole as mtype (size bytes each)
 * into *out, its length in *n. */
static enum sp_err read_whole(struct reader *r, hid_t eg, const char *ctx, const char *name, hid_t mtype,
			      size_t size, void **out, size_t *n)
{
	hid_t ds = -1;
	hsize_t len = 0;
	enum sp_err rc = sp_h5r_column_open(r, eg, ctx, name, H5T_INTEGER, 1, &ds, &len);
	if (rc != SP_OK)
		return rc;
	*n = (size_t)len;
	if ((hsize_t)*n != len || !(*out = sp_h5r_alloc_n(*n, size)))
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %llu blocks", ctx, (unsigned long long)len);
	else if (*n && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read %s", ctx, name);
	sp_h5r_close(ds);
	return rc;
}

/* The calls of a finished rank's blocks against its table: region i's
 * blocks hold its num_calls (none for an aggregate row), all of them the
 * columns' e calls. */
static enum sp_err blocks_match_table(struct reader *r, const char *gname, const struct sp_rank *rk,
				      const uint64_t *count, uint64_t sum, uint64_t e)
{
	if (sum != e)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s/events: the blocks hold %llu calls, start_times %llu",
				   gname, (unsigned long long)sum, (unsigned long long)e);
	for (size_t i = 0; i < rk->nregions; i++) {
		const struct sp_region_data *rd = &rk->regions[i];
		uint64_t want = rd->aggregate ? 0 : (uint64_t)rd->stats.num_calls;
		if (count[i] != want)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s/regions/%.200s: its blocks hold %llu calls, "
					   "num_calls says %llu", gname, rd->name, (unsigned long long)count[i],
					   (unsigned long long)want);
	}
	return SP_OK;
}

/* A partial rank keeps the regions with calls: rk's regions are packed and
 * the blocks' regions renumbered (count: each region's calls). */
static void drop_empty_regions(struct sp_rank *rk, struct sp_h5r_v3 *v, const uint64_t *count, int32_t *map)
{
	size_t k = 0;
	for (size_t i = 0; i < rk->nregions; i++) {
		if (!count[i]) {
			free(rk->regions[i].name);
			map[i] = -1;
			continue;
		}
		rk->regions[k] = rk->regions[i];
		rk->regions[k].stats.num_calls = (int64_t)count[i];
		map[i] = (int32_t)k++;
	}
	memset(rk->regions + k, 0, (rk->nregions - k) * sizeof *rk->regions);
	rk->nregions = k;
	for (size_t b = 0; b < v->nblocks; b++)
		v->region[b] = map[v->region[b]];
}

/* Reads the blocks table of events group eg: the blocks kept into v (those
 * with calls), e the calls the columns hold. A partial rank keeps blocks
 * while they lie inside the columns and name a region known (the rest were
 * written after what the reader sees of the columns or the names); a
 * finished one must have them all so. */
static enum sp_err read_blocks(struct reader *r, hid_t eg, const char *gname, struct sp_rank *rk,
			       struct sp_h5r_v3 *v, uint64_t e)
{
	size_t nr = 0, nc = 0, kept = 0;
	uint64_t sum = 0, *count = NULL;
	int32_t *map = NULL;
	void *region = NULL, *calls = NULL;
	enum sp_err rc;
	char ctx[48];

	snprintf(ctx, sizeof ctx, "%s/events", gname);
	rc = read_whole(r, eg, ctx, "block_region", H5T_NATIVE_INT32, sizeof *v->region, &region, &nr);
	if (rc == SP_OK)
		rc = read_whole(r, eg, ctx, "block_calls", H5T_NATIVE_INT64, sizeof *v->calls, &calls, &nc);
	v->region = region;            /* freed with v whatever happened */
	v->calls = calls;
	if (rc != SP_OK)
		goto out;
	if (nr != nc && !v->partial) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: block_region holds %zu blocks, block_calls %zu", ctx, nr, nc);
		goto out;
	}
	size_t nb = nr < nc ? nr : nc;
	if (!(v->at = sp_h5r_alloc_n(nb, sizeof *v->at)) ||
	    !(count = calloc(rk->nregions ? rk->nregions : 1, sizeof *count)) ||
	    !(map = sp_h5r_alloc_n(rk->nregions, sizeof *map))) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu blocks", ctx, nb);
		goto out;
	}
	for (size_t b = 0; b < nb; b++) {
		int32_t g = v->region[b];
		int64_t c = v->calls[b];
		if (c < 0 || g < 0) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: block %zu has %s %lld", ctx, b,
					 c < 0 ? "calls" : "region", c < 0 ? (long long)c : (long long)g);
			goto out;
		}
		if ((size_t)g >= rk->nregions || (uint64_t)c > e - sum) {
			if (v->partial)
				break;
			rc = (size_t)g >= rk->nregions
				     ? sp_h5r_fail(r, SP_ECORRUPT, "%s: block %zu names region %d of %zu", ctx, b,
						   (int)g, rk->nregions)
				     : sp_h5r_fail(r, SP_ECORRUPT, "%s: block %zu ends past the %llu calls of the "
						   "columns", ctx, b, (unsigned long long)e);
			goto out;
		}
		count[g] += (uint64_t)c;
		if (c) {
			v->region[kept] = g;
			v->calls[kept] = c;
			v->at[kept++] = sum;
		}
		sum += (uint64_t)c;
	}
	v->nblocks = kept;
	v->total = sum;
	if (!v->partial)
		rc = blocks_match_table(r, gname, rk, count, sum, e);
	else
		drop_empty_regions(rk, v, count, map);
out:
	free(count);
	free(map);
	return rc;
}

/* Opens the optional column name of eg into *ds when it is there with the
 * calls: a finished rank's holds e calls or none (then it is absent); a
 * partial rank's is absent while it holds fewer than e. */
static enum sp_err optional_column(struct reader *r, hid_t eg, const char *ctx, const char *name, int partial,
				   uint64_t e, int deep, hid_t *ds)
{
	hsize_t len = 0;
	int hl = sp_h5r_hard_link(eg, name);
	enum sp_err rc;
	*ds = -1;
	if (hl <= 0)
		return hl < 0 ? sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up %s", ctx, name) : SP_OK;
	if ((rc = sp_h5r_column_open(r, eg, ctx, name, H5T_INTEGER, deep, ds, &len)) != SP_OK)
		return rc;
	if (len == 0 || (partial && len < e)) {
		sp_h5r_close(*ds);
		*ds = -1;
	} else if (!partial && len != e) {
		sp_h5r_close(*ds);
		*ds = -1;
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: %s holds %llu calls, start_times %llu", ctx, name,
				   (unsigned long long)len, (unsigned long long)e);
	}
	return SP_OK;
}

/* The event columns of events group eg, e calls each (a partial rank's
 * start_times and end_times may differ: e is the shorter). */
static enum sp_err open_columns(struct reader *r, hid_t eg, const char *gname, struct sp_rank *rk,
				struct sp_h5r_v3 *v, int deep, uint64_t *e)
{
	hsize_t ns = 0, ne = 0;
	enum sp_err rc;
	char ctx[48];

	snprintf(ctx, sizeof ctx, "%s/events", gname);
	if ((rc = sp_h5r_column_open(r, eg, ctx, "start_times", H5T_INTEGER, deep, &v->cols[0], &ns)) != SP_OK ||
	    (rc = sp_h5r_column_open(r, eg, ctx, "end_times", H5T_INTEGER, deep, &v->cols[1], &ne)) != SP_OK)
		return rc;
	if (ns != ne && !v->partial)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: start_times and end_times differ in length (%llu vs %llu)",
				   ctx, (unsigned long long)ns, (unsigned long long)ne);
	*e = ns < ne ? ns : ne;
	if ((rc = optional_column(r, eg, ctx, "lanes", v->partial, *e, deep, &v->cols[2])) != SP_OK)
		return rc;
	if (!v->partial)
		return SP_OK;
	/* A partial file has no table to say which regions have values:
	 * every region has those of the first value column filled. */
	int kind = 0;
	for (int k = 1; k < SP_VALUE_KINDS && !kind; k++) {
		if ((rc = optional_column(r, eg, ctx, sp_value_kind_name(k), 1, *e, deep, &v->vcols[k])) != SP_OK)
			return rc;
		if (v->vcols[k] >= 0)
			kind = k;
	}
	for (size_t i = 0; i < rk->nregions; i++)
		rk->regions[i].value_kind = kind;
	return SP_OK;
}

enum sp_err sp_h5r_v3_open(struct reader *r, hid_t g, const char *gname, struct sp_rank *rk, int deep,
			   struct sp_h5r_v3 *v)
{
	hid_t eg = -1;
	int64_t *first = NULL;
	uint64_t rows_total = 0, e = 0;
	enum sp_err rc;
	int a;

	sp_h5r_v3_init(v);
	if ((rc = sp_h5r_rank_attrs(r, g, gname, rk)) != SP_OK)
		return rc;
	if ((a = sp_h5r_hard_link(g, "regions")) == 1) {
		if ((rc = sp_h5r_read_table(r, g, gname, rk, &first, &rows_total)) != SP_OK)
			return rc;
		free(first);
	} else if (a == 0 && sp_h5r_hard_link(g, "stream") == 1) {
		v->partial = 1;
		if ((rc = read_stream(r, g, gname, rk, v)) != SP_OK)
			return rc;
	} else {
		return sp_h5r_fail(r, SP_ECORRUPT, "%s has neither a regions table nor a stream group", gname);
	}
	if (sp_h5r_hard_link(g, "events") != 1 || (eg = sp_h5r_open_group(r, g, "events")) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s has no events group", gname);
	if ((rc = open_columns(r, eg, gname, rk, v, deep, &e)) == SP_OK &&
	    (rc = read_blocks(r, eg, gname, rk, v, e)) == SP_OK && !v->partial)
		rc = sp_h5r_values_open(r, g, gname, rk, e, v->vcols);
	sp_h5r_close(eg);
	if (rc == SP_OK && v->partial) {
		if (!r->partial || v->flushed_ns < r->partial_until_ns)
			r->partial_until_ns = v->flushed_ns;
		r->partial = 1;
	}
	return rc;
}

enum sp_err sp_h5r_v3_scan(struct reader *r, const char *gname, const struct sp_h5r_v3 *v, size_t nregions,
			   int all, sp_h5r_v3_fn fn, void *ctx)
{
	size_t cap = v->total < SPAN ? (size_t)(v->total ? v->total : 1) : SPAN, b = 0;
	int64_t *s = malloc(cap * sizeof *s), *e = malloc(cap * sizeof *e), *vals[SP_VALUE_KINDS] = {NULL};
	int32_t *l = all && v->cols[2] >= 0 ? malloc(cap * sizeof *l) : NULL;
	uint64_t *index = calloc(nregions ? nregions : 1, sizeof *index), in_block = 0;
	enum sp_err rc = SP_OK;
	int oom = !s || !e || !index || (all && v->cols[2] >= 0 && !l);

	for (int k = 1; k < SP_VALUE_KINDS; k++)
		if (all && v->vcols[k] >= 0 && !(vals[k] = malloc(cap * sizeof *vals[k])))
			oom = 1;
	if (oom) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory", gname);
		goto out;
	}
	for (uint64_t at = 0; at < v->total && rc == SP_OK;) {
		size_t m = v->total - at < cap ? (size_t)(v->total - at) : cap;
		int bad = sp_h5r_span(v->cols[0], H5T_NATIVE_INT64, at, m, s) < 0 ||
			  sp_h5r_span(v->cols[1], H5T_NATIVE_INT64, at, m, e) < 0 ||
			  (l && sp_h5r_span(v->cols[2], H5T_NATIVE_INT32, at, m, l) < 0);
		for (int k = 1; k < SP_VALUE_KINDS; k++)
			bad |= vals[k] && sp_h5r_span(v->vcols[k], H5T_NATIVE_INT64, at, m, vals[k]) < 0;
		if (bad) {
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s/events: cannot read the event columns", gname);
			break;
		}
		sp_h5r_v3_close_calls(v, s, e, m);
		/* The slice in runs of one block each (blocks are consecutive
		 * and hold calls: their sum is v->total). */
		for (size_t i = 0; i < m && rc == SP_OK;) {
			uint64_t left = (uint64_t)v->calls[b] - in_block;
			size_t take = left < m - i ? (size_t)left : m - i;
			struct sp_h5r_v3_run run = {v->region[b], index[v->region[b]], take, s + i, e + i,
						    l ? l + i : NULL, {NULL}};
			for (int k = 1; k < SP_VALUE_KINDS; k++)
				run.values[k] = vals[k] ? vals[k] + i : NULL;
			rc = fn(r, ctx, &run);
			index[v->region[b]] += take;
			i += take;
			if ((in_block += take) == (uint64_t)v->calls[b]) {
				b++;
				in_block = 0;
			}
		}
		at += m;
	}
out:
	free(s);
	free(e);
	free(l);
	free(index);
	for (int k = 1; k < SP_VALUE_KINDS; k++)
		free(vals[k]);
	return rc;
}

enum sp_err sp_h5r_v3_index(struct reader *r, struct sp_h5r_v3 *v, size_t nregions)
{
	if (!(v->first = calloc(nregions + 1, sizeof *v->first)) ||
	    !(v->blocks = sp_h5r_alloc_n(v->nblocks, sizeof *v->blocks)) ||
	    !(v->before = sp_h5r_alloc_n(v->nblocks, sizeof *v->before)))
		return sp_h5r_fail(r, SP_ENOMEM, "out of memory for %zu blocks", v->nblocks);
	for (size_t b = 0; b < v->nblocks; b++)
		v->first[v->region[b] + 1]++;
	for (size_t g = 0; g < nregions; g++)
		v->first[g + 1] += v->first[g];
	size_t *next = malloc((nregions ? nregions : 1) * sizeof *next);
	uint64_t *seen = calloc(nregions ? nregions : 1, sizeof *seen);
	if (!next || !seen) {
		free(next);
		free(seen);
		return sp_h5r_fail(r, SP_ENOMEM, "out of memory for %zu regions", nregions);
	}
	memcpy(next, v->first, nregions * sizeof *next);
	for (size_t b = 0; b < v->nblocks; b++) {
		size_t g = (size_t)v->region[b], k = next[g]++;
		v->blocks[k] = b;
		v->before[k] = seen[g];
		seen[g] += (uint64_t)v->calls[b];
	}
	free(next);
	free(seen);
	return SP_OK;
}

int sp_h5r_v3_span(const struct sp_h5r_v3 *v, size_t g, hid_t ds, hid_t mtype, size_t size, uint64_t first,
		   size_t n, void *buf)
{
	size_t lo = v->first[g], hi = v->first[g + 1];
	char *out = buf;
	if (n == 0)
		return 0;
	if (lo == hi || v->before[lo] > first)
		return -1;
	/* The last of the region's blocks that starts at or before call first. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->before[mid] <= first)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t k = lo; n > 0; k++) {
		if (k >= v->first[g + 1])
			return -1;
		size_t b = v->blocks[k];
		uint64_t off = first - v->before[k], calls = (uint64_t)v->calls[b];
		if (off >= calls)
			return -1;
		size_t take = calls - off < n ? (size_t)(calls - off) : n;
		if (sp_h5r_span(ds, mtype, v->at[b] + off, take, out) < 0)
			return -1;
		out += take * size;
		first += take;
		n -= take;
	}
	return 0;
}

/* Copies a run of calls into its region's columns (sp_h5r_v3_scan). */
static enum sp_err copy_run(struct reader *r, void *ctx, const struct sp_h5r_v3_run *run)
{
	struct sp_region_data *rd = &((struct sp_rank *)ctx)->regions[run->region];
	size_t n = run->n, at = (size_t)run->index;
	memcpy(rd->starts + at, run->starts, n * sizeof *rd->starts);
	memcpy(rd->ends + at, run->ends, n * sizeof *rd->ends);
	if (rd->lanes && run->lanes)
		memcpy(rd->lanes + at, run->lanes, n * sizeof *rd->lanes);
	if (rd->values && run->values[rd->value_kind])
		memcpy(rd->values + at, run->values[rd->value_kind], n * sizeof *rd->values);
	return SP_OK;
}

/* Every region's calls into its own columns, then checked as version 2's
 * are; a partial rank's stats and values' sums computed from them. */
static enum sp_err read_events(struct reader *r, const char *gname, struct sp_rank *rk, const struct sp_h5r_v3 *v)
{
	enum sp_err rc = SP_OK;
	char ctx[256];
	for (size_t i = 0; i < rk->nregions && rc == SP_OK; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		if (!rd->aggregate && rd->stats.num_calls > 0)
			rc = sp_h5r_alloc_region(r, gname, rd, (size_t)rd->stats.num_calls, v->cols[2] >= 0);
	}
	if (rc != SP_OK || (rc = sp_h5r_v3_scan(r, gname, v, rk->nregions, 1, copy_run, rk)) != SP_OK)
		return rc;
	for (size_t i = 0; i < rk->nregions && rc == SP_OK; i++) {
		struct sp_region_data *rd = &rk->regions[i];
		size_t n = rd->aggregate ? 0 : (size_t)rd->stats.num_calls;
		if (n == 0)
			continue;
		snprintf(ctx, sizeof ctx, "%s/regions/%.200s", gname, rd->name);
		if ((rc = sp_h5r_events_ok(r, ctx, rd->starts, rd->ends, n)) != SP_OK)
			break;
		if (!v->partial) {
			rc = sp_h5r_values_match(r, ctx, rd, n);
			continue;
		}
		sp_stats_compute(&rd->stats, rd->starts, rd->ends, n);
		uint64_t sum = 0;      /* wrapping, as the end of a run sums them */
		for (size_t k = 0; rd->values && k < n; k++)
			sum += (uint64_t)rd->values[k];
		rd->values_total = (int64_t)sum;
	}
	return rc;
}

enum sp_err sp_h5r_read_rank_v3(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk)
{
	struct sp_h5r_v3 v;
	enum sp_err rc;
	hid_t g;
	int has_tree;

	sp_h5r_v3_init(&v);
	if ((g = sp_h5r_open_group(r, file, gname)) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", gname);
	if ((has_tree = sp_h5r_hard_link(g, "tree")) < 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up the tree", gname);
		goto out;
	}
	/* No tree is written in version 3: the events are read, and the
	 * report layer builds it from them. A partial file's stats are its
	 * events'. */
	int need_events = (r->flags & SP_READ_EVENTS) || !has_tree || sp_h5r_hard_link(g, "regions") != 1;
	if ((rc = sp_h5r_v3_open(r, g, gname, rk, need_events ? 1 : 0, &v)) != SP_OK ||
	    (need_events && (rc = read_events(r, gname, rk, &v)) != SP_OK))
		goto out;
	rc = sp_h5r_tree_and_lines(r, g, gname, has_tree && !v.partial, NULL, 0, rk);
out:
	sp_h5r_v3_free(&v);
	sp_h5r_close(g);
	return rc;
}

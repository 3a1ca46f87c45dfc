/* unpack.c - a rank's profile back from the flat byte buffer sp_rank_pack
 * made (sp_rank_unpack, include/sp_pack.h; the layout in
 * sp_pack_layout.h), item by item in pack.c's order, through a cursor
 * that checks every length and offset against what is left: a damaged
 * buffer is SP_ECORRUPT, never a read outside it. */
#include <limits.h>
#include <math.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp_error.h"
#include "sp_pack.h"
#include "sp_pack_layout.h"
#include "sp_profile.h"

/* A bounds-checked cursor over the buffer; pos is always <= len. */
struct cursor {
	const unsigned char *b;
	size_t len, pos;
	struct sp_error *err;
};

static enum sp_err damaged(struct cursor *c, const char *what)
{
	return sp_error_set(c->err, SP_ECORRUPT, "damaged rank buffer: %s (at byte %zu of %zu)", what,
			    c->pos, c->len);
}

static size_t left(const struct cursor *c)
{
	return c->len - c->pos;
}

static enum sp_err get_u64(struct cursor *c, uint64_t *v, const char *what)
{
	if (left(c) < 8u)
		return damaged(c, what);
	memcpy(v, c->b + c->pos, 8);
	c->pos += 8u;
	return SP_OK;
}

static enum sp_err get_i64(struct cursor *c, int64_t *v, const char *what)
{
	if (left(c) < 8u)
		return damaged(c, what);
	memcpy(v, c->b + c->pos, 8);
	c->pos += 8u;
	return SP_OK;
}

/* A count of items of at least `min` bytes each, checked against what is
 * left (so that no allocation is sized by a damaged count). */
static enum sp_err get_count(struct cursor *c, size_t min, size_t *n, const char *what)
{
	uint64_t v = 0;
	enum sp_err rc = get_u64(c, &v, what);
	if (rc != SP_OK)
		return rc;
	if (v > left(c) / min)
		return damaged(c, what);
	*n = (size_t)v;
	return SP_OK;
}

/* Reads a string into a malloc'd copy. */
static enum sp_err get_string(struct cursor *c, char **out, const char *what)
{
	uint64_t len = 0;
	enum sp_err rc = get_u64(c, &len, what);
	if (rc != SP_OK)
		return rc;
	if (len >= left(c) || pad8((size_t)len + 1u) > left(c))
		return damaged(c, what);
	const unsigned char *s = c->b + c->pos;
	if (s[len] != '\0' || memchr(s, '\0', (size_t)len))
		return damaged(c, what);
	if (!(*out = malloc((size_t)len + 1u)))
		return sp_error_set(c->err, SP_ENOMEM, "no memory for a %llu-byte string",
				    (unsigned long long)len);
	memcpy(*out, s, (size_t)len + 1u);
	c->pos += pad8((size_t)len + 1u);
	return SP_OK;
}

/* The position of a column of n elements of size sz (8-byte padded). */
static enum sp_err get_column(struct cursor *c, size_t n, size_t sz, const unsigned char **at,
			      const char *what)
{
	if (n > left(c) / sz || pad8(n * sz) > left(c))
		return damaged(c, what);
	*at = c->b + c->pos;
	c->pos += pad8(n * sz);
	return SP_OK;
}

/* A column as a pointer into buf when aligned, else a malloc'd copy. */
static enum sp_err event_column(struct cursor *c, const unsigned char *at, size_t bytes, int copy,
				void **out)
{
	if (!copy) {
		*out = (void *)(uintptr_t)at;   /* the caller owns buf: see sp_pack.h */
		return SP_OK;
	}
	if (!(*out = malloc(bytes ? bytes : 1)))
		return sp_error_set(c->err, SP_ENOMEM, "no memory for a %zu-byte event column", bytes);
	if (bytes)
		memcpy(*out, at, bytes);
	return SP_OK;
}

static enum sp_err unpack_region(struct cursor *c, int with_events, int copy,
				 struct sp_region_data *rd)
{
	uint64_t rflags = 0;
	enum sp_err rc;

	if ((rc = get_string(c, &rd->name, "a region name runs past the end")) != SP_OK)
		return rc;
	if (left(c) < STATS_BYTES)
		return damaged(c, "region statistics run past the end");
	memcpy(&rd->stats, c->b + c->pos, STATS_BYTES);
	c->pos += STATS_BYTES;
	if (rd->stats.num_calls < 0)
		return damaged(c, "a region has a negative number of calls");
	if ((rc = get_u64(c, &rflags, "region flags run past the end")) != SP_OK)
		return rc;
	if (rflags & ~(uint64_t)(SP_PK_LANES | SP_PK_AGG | SP_PK_DROPPED | SP_PK_VALUES | SP_PK_PEAK | SP_PK_GPU) ||
	    (!with_events && (rflags & SP_PK_LANES)) || (rflags & SP_PK_LANES && rflags & SP_PK_AGG))
		return damaged(c, "unknown region flags");
	if ((rflags & SP_PK_DROPPED) &&
	    ((rc = get_i64(c, &rd->dropped, "a region's dropped count runs past the end")) != SP_OK ||
	     rd->dropped < 0))
		return rc != SP_OK ? rc : damaged(c, "a region has a negative dropped count");
	if ((rflags & SP_PK_PEAK) &&
	    ((rc = get_i64(c, &rd->peak_bytes, "a region's peak bytes run past the end")) != SP_OK ||
	     rd->peak_bytes <= 0))
		return rc != SP_OK ? rc : damaged(c, "a region has a peak of no bytes");
	if ((rflags & SP_PK_GPU) &&
	    ((rc = get_i64(c, &rd->gpu_wait_ns, "a region's GPU wait runs past the end")) != SP_OK ||
	     rd->gpu_wait_ns < 0))
		return rc != SP_OK ? rc : damaged(c, "a region has a negative GPU wait");
	rd->gpu_waited = (rflags & SP_PK_GPU) != 0;
	if (rflags & SP_PK_VALUES) {
		int64_t kind = 0;
		if ((rc = get_i64(c, &kind, "a region's value kind runs past the end")) != SP_OK ||
		    (rc = get_i64(c, &rd->values_total, "a region's values total runs past the end")) != SP_OK)
			return rc;
		if (!sp_value_kind_name((int)kind) || kind != (int)kind)
			return damaged(c, "a region has an unknown value kind");
		rd->value_kind = (int)kind;
	}
	if (rflags & SP_PK_AGG) {
		uint64_t self = 0;
		if ((rc = get_u64(c, &self, "a region's self time runs past the end")) != SP_OK)
			return rc;
		rd->aggregate = 1;
		rd->self_ns = (int64_t)self;
		return SP_OK;
	}
	if (!with_events)
		return SP_OK;
	if ((uint64_t)rd->stats.num_calls > left(c) / 16u)
		return damaged(c, "a region's calls exceed the buffer");
	size_t n = (size_t)rd->stats.num_calls;
	const unsigned char *s, *e, *v = NULL, *l = NULL;
	if ((rc = get_column(c, n, 8u, &s, "event starts run past the end")) != SP_OK ||
	    (rc = get_column(c, n, 8u, &e, "event ends run past the end")) != SP_OK ||
	    ((rflags & SP_PK_VALUES) &&
	     (rc = get_column(c, n, 8u, &v, "event values run past the end")) != SP_OK) ||
	    ((rflags & SP_PK_LANES) &&
	     (rc = get_column(c, n, 4u, &l, "event lanes run past the end")) != SP_OK))
		return rc;
	rd->owns_events = copy;
	void *ps = NULL, *pe = NULL, *pv = NULL, *pl = NULL;
	rc = event_column(c, s, n * 8u, copy, &ps);
	rd->starts = ps;
	if (rc == SP_OK)
		rc = event_column(c, e, n * 8u, copy, &pe);
	rd->ends = pe;
	if (rc == SP_OK && v)
		rc = event_column(c, v, n * 8u, copy, &pv);
	rd->values = pv;
	if (rc == SP_OK && l)
		rc = event_column(c, l, n * 4u, copy, &pl);
	rd->lanes = pl;
	return rc;
}

static enum sp_err unpack_table(struct cursor *c, struct sp_line_table *t)
{
	int64_t first = 0;
	size_t n = 0;
	enum sp_err rc;
	const unsigned char *hits, *times;

	if ((rc = get_string(c, &t->function, "a line table's function runs past the end")) != SP_OK ||
	    (rc = get_string(c, &t->region, "a line table's region runs past the end")) != SP_OK ||
	    (rc = get_string(c, &t->filename, "a line table's filename runs past the end")) != SP_OK ||
	    (rc = get_i64(c, &first, "a line table's first line runs past the end")) != SP_OK)
		return rc;
	if (first < INT32_MIN || first > INT32_MAX)
		return damaged(c, "a line table's first line is out of range");
	t->first_line = (int32_t)first;
	if ((rc = get_count(c, MIN_LINE, &n, "a line table's size exceeds the buffer")) != SP_OK ||
	    (rc = get_column(c, n, 8u, &hits, "line hits run past the end")) != SP_OK ||
	    (rc = get_column(c, n, 8u, &times, "line times run past the end")) != SP_OK)
		return rc;
	/* n is bounded by the buffer's length, so these sizes do not overflow. */
	if (!(t->hits = malloc(n ? n * 8u : 1)) || !(t->time_ns = malloc(n ? n * 8u : 1)) ||
	    !(t->source = calloc(n ? n : 1, sizeof *t->source)))
		return sp_error_set(c->err, SP_ENOMEM, "no memory for a line table of %zu lines", n);
	t->n = n;   /* source[0..n) is calloc'd: sp_line_table_clear may free it */
	if (n) {
		memcpy(t->hits, hits, n * 8u);
		memcpy(t->time_ns, times, n * 8u);
	}
	for (size_t i = 0; i < n; i++)
		if ((rc = get_string(c, &t->source[i], "a source line runs past the end")) != SP_OK)
			return rc;
	return SP_OK;
}

/* One LIKWID table; the caller clears it on failure. */
static enum sp_err unpack_likwid(struct cursor *c, struct sp_likwid_region *t)
{
	size_t nt = 0, ne = 0, nr = 0, nm = 0;
	enum sp_err rc;
	const unsigned char *events, *count, *time, *metrics;

	if ((rc = get_string(c, &t->region, "a LIKWID table's region runs past the end")) != SP_OK ||
	    (rc = get_count(c, 16u, &nt, "a LIKWID table's threads exceed the buffer")) != SP_OK ||
	    (rc = get_count(c, 1u, &ne, "a LIKWID table's events exceed the buffer")) != SP_OK)
		return rc;
	if (!nt)
		return damaged(c, "a LIKWID table without threads");
	if (ne && nt > left(c) / 8u / ne)
		return damaged(c, "a LIKWID table's events run past the end");
	if ((rc = get_column(c, nt * ne, 8u, &events, "LIKWID events run past the end")) != SP_OK ||
	    (rc = get_column(c, nt, 8u, &count, "LIKWID counts run past the end")) != SP_OK ||
	    (rc = get_column(c, nt, 8u, &time, "LIKWID times run past the end")) != SP_OK)
		return rc;
	if (!(t->events = malloc(ne ? nt * ne * 8u : 1)) || !(t->count = malloc(nt * 8u)) ||
	    !(t->time = malloc(nt * 8u)))
		return sp_error_set(c->err, SP_ENOMEM, "no memory for a LIKWID table");
	if (ne)
		memcpy(t->events, events, nt * ne * 8u);
	memcpy(t->count, count, nt * 8u);
	memcpy(t->time, time, nt * 8u);
	t->nthreads = nt;
	t->nevents = ne;
	/* The checks of the file's reader (h5read_likwid.c). */
	for (size_t i = 0; i < nt * ne; i++)
		if (!isfinite(t->events[i]))
			return damaged(c, "a LIKWID event is not finite");
	for (size_t i = 0; i < nt; i++)
		if (t->count[i] < 0 || !isfinite(t->time[i]) || t->time[i] < 0)
			return damaged(c, "a LIKWID count or time is negative or not finite");
	if ((rc = get_count(c, 8u, &nr, "a LIKWID table's metric rows exceed the buffer")) != SP_OK ||
	    (rc = get_count(c, 1u, &nm, "a LIKWID table's metrics exceed the buffer")) != SP_OK)
		return rc;
	if (nm && (!nr || nr > left(c) / 8u / nm))
		return damaged(c, "a LIKWID table's metrics run past the end");
	if (!nm)
		return nr ? damaged(c, "LIKWID metric rows without metrics") : SP_OK;
	if ((rc = get_column(c, nr * nm, 8u, &metrics, "LIKWID metrics run past the end")) != SP_OK)
		return rc;
	if (!(t->metrics = malloc(nr * nm * 8u)))
		return sp_error_set(c->err, SP_ENOMEM, "no memory for a LIKWID table");
	memcpy(t->metrics, metrics, nr * nm * 8u);
	t->nmrows = nr;
	t->nmetrics = nm;
	for (size_t i = 0; i < nr * nm; i++)
		if (isinf(t->metrics[i]))
			return damaged(c, "a LIKWID metric is infinite");
	return SP_OK;
}

/* The LIKWID section: its count, then each table. */
static enum sp_err unpack_likwids(struct cursor *c, struct sp_rank *out)
{
	size_t n = 0;
	enum sp_err rc;
	if ((rc = get_count(c, MIN_LIKWID, &n, "LIKWID table count exceeds the buffer")) != SP_OK)
		return rc;
	if (!n)
		return damaged(c, "a LIKWID section without tables");
	if (!(out->likwid = calloc(n, sizeof *out->likwid)))
		return sp_error_set(c->err, SP_ENOMEM, "no memory for %zu LIKWID tables", n);
	for (size_t k = 0; k < n; k++) {
		out->nlikwid = k + 1;   /* cleared with the rank from here on */
		if ((rc = unpack_likwid(c, &out->likwid[k])) != SP_OK)
			return rc;
	}
	return SP_OK;
}

/* The call tree's ntree nodes into out->tree: each node's parent before
 * it, its region one of the nregions. */
static enum sp_err unpack_tree(struct cursor *c, size_t ntree, size_t nregions, struct sp_rank *out)
{
	const unsigned char *nodes = NULL;
	enum sp_err rc;
	if ((rc = get_column(c, ntree, NODE_BYTES, &nodes, "tree runs past the end")) != SP_OK)
		return rc;
	if (!(out->tree = malloc(ntree ? ntree * NODE_BYTES : 1)))
		return sp_error_set(c->err, SP_ENOMEM, "no memory for %zu tree nodes", ntree);
	if (ntree)
		memcpy(out->tree, nodes, ntree * NODE_BYTES);
	out->ntree = ntree;
	for (size_t i = 0; i < ntree; i++) {
		const struct sp_tree_node *nd = &out->tree[i];
		if (nd->parent < -1 || (nd->parent >= 0 && (size_t)nd->parent >= i))
			return damaged(c, "a tree node's parent does not come before it");
		if (nd->region < 0 || (size_t)nd->region >= nregions)
			return damaged(c, "a tree node's region is out of range");
	}
	return SP_OK;
}

/* The header and the rank's attributes (up to its hostname) into out; the
 * flags and the counts of regions, tree nodes and line tables. */
static enum sp_err unpack_header(struct cursor *c, struct sp_rank *out, uint64_t *flags, size_t *nregions,
				 size_t *ntree, size_t *nlines)
{
	uint32_t magic, version;
	uint64_t total = 0;
	int64_t rank = 0;
	enum sp_err rc;

	if (c->len < HEADER_BYTES + ATTR_BYTES)
		return damaged(c, "shorter than its header");
	memcpy(&magic, c->b, 4);
	memcpy(&version, c->b + 4, 4);
	if (magic != SP_PK_MAGIC)
		return damaged(c, "bad magic number");
	if (version != SP_PK_VERSION)
		return damaged(c, "unknown version");
	c->pos = 8;
	if ((rc = get_u64(c, &total, "no length")) != SP_OK ||
	    (rc = get_u64(c, flags, "no flags")) != SP_OK)
		return rc;
	if (total != c->len)
		return damaged(c, "its length field disagrees with its size");
	if (*flags & ~(uint64_t)(SP_PK_EVENTS | SP_PK_HOSTNAME | SP_PK_TREE | SP_PK_LIKWID))
		return damaged(c, "unknown flags");
	if ((rc = get_i64(c, &rank, "no rank")) != SP_OK)
		return rc;
	if (rank < INT_MIN || rank > INT_MAX)
		return damaged(c, "rank number out of range");
	out->rank = (int)rank;
	if ((rc = get_i64(c, &out->run_start_ns, "no run start")) != SP_OK ||
	    (rc = get_i64(c, &out->run_end_ns, "no run end")) != SP_OK ||
	    (rc = get_i64(c, &out->pid, "no pid")) != SP_OK ||
	    (rc = get_i64(c, &out->parent_pid, "no parent pid")) != SP_OK ||
	    (rc = get_i64(c, &out->clock_offset_ns, "no clock offset")) != SP_OK ||
	    (rc = get_i64(c, &out->dropped, "no dropped count")) != SP_OK ||
	    (rc = get_count(c, MIN_REGION, nregions, "region count exceeds the buffer")) != SP_OK ||
	    (rc = get_count(c, NODE_BYTES, ntree, "tree size exceeds the buffer")) != SP_OK ||
	    (rc = get_count(c, MIN_TABLE, nlines, "line table count exceeds the buffer")) != SP_OK ||
	    (rc = get_i64(c, &out->tree_overlaps, "no overlap count")) != SP_OK)
		return rc;
	if (out->dropped < 0)
		return damaged(c, "a negative dropped count");
	if (out->tree_overlaps < 0)
		return damaged(c, "a negative overlap count");
	if (*ntree && !(*flags & SP_PK_TREE))
		return damaged(c, "tree nodes without a tree");
	if ((*flags & SP_PK_HOSTNAME) &&
	    (rc = get_string(c, &out->hostname, "hostname runs past the end")) != SP_OK)
		return rc;
	return SP_OK;
}

static enum sp_err unpack(struct cursor *c, struct sp_rank *out)
{
	uint64_t flags = 0;
	size_t nregions = 0, ntree = 0, nlines = 0;
	enum sp_err rc;

	if ((rc = unpack_header(c, out, &flags, &nregions, &ntree, &nlines)) != SP_OK)
		return rc;
	if (nregions) {
		if (!(out->regions = calloc(nregions, sizeof *out->regions)))
			return sp_error_set(c->err, SP_ENOMEM, "no memory for %zu regions", nregions);
		out->nregions = nregions;
	}
	int with_events = (flags & SP_PK_EVENTS) != 0;
	int copy = ((uintptr_t)c->b % alignof(int64_t)) != 0;
	for (size_t i = 0; i < nregions; i++)
		if ((rc = unpack_region(c, with_events, copy, &out->regions[i])) != SP_OK)
			return rc;

	if ((flags & SP_PK_TREE) && (rc = unpack_tree(c, ntree, nregions, out)) != SP_OK)
		return rc;

	if (nlines) {
		if (!(out->lines = calloc(nlines, sizeof *out->lines)))
			return sp_error_set(c->err, SP_ENOMEM, "no memory for %zu line tables", nlines);
		out->nlines = nlines;
	}
	for (size_t k = 0; k < nlines; k++)
		if ((rc = unpack_table(c, &out->lines[k])) != SP_OK)
			return rc;
	if ((flags & SP_PK_LIKWID) && (rc = unpack_likwids(c, out)) != SP_OK)
		return rc;
	if (c->pos != c->len)
		return damaged(c, "trailing bytes");
	return SP_OK;
}

enum sp_err sp_rank_unpack(const void *buf, size_t len, struct sp_rank *out, struct sp_error *err)
{
	if (!out)
		return sp_error_set(err, SP_EINVAL, "sp_rank_unpack: NULL output");
	memset(out, 0, sizeof *out);
	if (!buf)
		return sp_error_set(err, SP_EINVAL, "sp_rank_unpack: NULL buffer");
	struct cursor c = { .b = buf, .len = len, .pos = 0, .err = err };
	enum sp_err rc = unpack(&c, out);
	if (rc != SP_OK)
		sp_rank_clear(out);
	return rc;
}

/* pack.c - one rank's profile as one flat byte buffer (sp_pack.h).
 *
 * The layout (native byte order, both ends run the same executable). Every
 * item starts at an offset that is a multiple of 8 from the buffer's start,
 * so the event columns are 8-byte aligned whenever the buffer is:
 *
 *   header      u32 magic "SPPK", u32 version, u64 total length in bytes,
 *               u64 flags (SP_PK_EVENTS, SP_PK_HOSTNAME, SP_PK_TREE)
 *   attributes  i64 rank, run_start_ns, run_end_ns, pid, parent_pid, clock_offset_ns,
 *               dropped, u64 nregions, ntree, nlines
 *   hostname    a string, present only with SP_PK_HOSTNAME
 *   regions     nregions times: name (string), struct sp_stats (64 bytes),
 *               u64 region flags (SP_PK_LANES, SP_PK_AGG, SP_PK_DROPPED,
 *               SP_PK_VALUES, SP_PK_PEAK), i64 dropped with SP_PK_DROPPED,
 *               i64 peak_bytes with SP_PK_PEAK, i64 value_kind and i64
 *               values_total with SP_PK_VALUES; with SP_PK_EVENTS:
 *               i64 starts[num_calls], i64 ends[num_calls], with
 *               SP_PK_VALUES i64 values[num_calls], and with
 *               SP_PK_LANES, i32 lanes[num_calls] zero-padded to 8 bytes
 *   tree        ntree struct sp_tree_node (24 bytes each)
 *   line tables nlines times: function, region, filename (strings),
 *               i64 first_line, u64 n, i64 hits[n], i64 time_ns[n], then
 *               n source strings (a NULL source, or a NULL line, packs as "")
 *   LIKWID      only with SP_PK_LIKWID: u64 nlikwid, then nlikwid times:
 *               region (string), u64 nthreads, nevents, f64
 *               events[nthreads * nevents], i64 count[nthreads],
 *               f64 time[nthreads], u64 nmrows, nmetrics, f64
 *               metrics[nmrows * nmetrics]
 *
 *   string      u64 length (without the NUL), the bytes, a NUL, zero padding
 *               to the next multiple of 8.
 *
 * What unpacking gives: hostname NULL when it was NULL; tree NULL when it was
 * NULL (an empty non-NULL tree stays non-NULL); with events, non-NULL starts
 * and ends for every region (zero calls too), lanes and values only where
 * packed;
 * without, NULL columns. Line tables always have non-NULL hits, time_ns and
 * source, every source line a string ("" where the rank had none).
 */
#include <limits.h>
#include <math.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_error.h"
#include "sp_pack.h"
#include "sp_profile.h"

#define SP_PK_MAGIC 0x4b505053u      /* "SPPK" read little-endian */
#define SP_PK_VERSION 5u

#define SP_PK_EVENTS 1u              /* header: event columns follow each region */
#define SP_PK_HOSTNAME 2u            /* header: a hostname string follows */
#define SP_PK_TREE 4u                /* header: rk->tree was non-NULL */
#define SP_PK_LIKWID 8u              /* header: LIKWID tables follow the line tables */
#define SP_PK_LANES 1u               /* region: a lanes column follows */
#define SP_PK_AGG 2u                 /* region: aggregates; i64 self_ns follows, no columns */
#define SP_PK_DROPPED 4u             /* region: i64 dropped follows the flags */
#define SP_PK_VALUES 8u              /* region: i64 kind and total follow; a values column */
#define SP_PK_PEAK 16u               /* region: i64 peak_bytes follows */

#define HEADER_BYTES 24u
#define ATTR_BYTES 80u
#define STATS_BYTES ((size_t)sizeof(struct sp_stats))
#define NODE_BYTES ((size_t)sizeof(struct sp_tree_node))

_Static_assert(sizeof(struct sp_stats) == 64, "sp_stats is packed as 64 bytes");
_Static_assert(sizeof(struct sp_tree_node) == 24, "sp_tree_node is packed as 24 bytes");

/* The smallest encodings, for bounding counts by the bytes left. */
#define MIN_STRING 16u                               /* length + NUL padded */
#define MIN_REGION (MIN_STRING + 64u + 8u)
#define MIN_TABLE (3u * MIN_STRING + 16u)
#define MIN_LINE (16u + MIN_STRING)                  /* hits, time_ns, source */
#define MIN_LIKWID (MIN_STRING + 16u + 16u)           /* name, sizes, a thread's count and time */

static size_t pad8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

/* ---------------------------------------------------------------- packing */

/* Adds b to *a; 0 on size_t overflow. */
static int add_size(size_t *a, size_t b)
{
	if (*a > SIZE_MAX - b)
		return 0;
	*a += b;
	return 1;
}

/* The packed size of a string of length len, or 0 on overflow. */
static size_t string_bytes(size_t len)
{
	if (len > SIZE_MAX - 16u)
		return 0;
	return 8u + pad8(len + 1u);
}

static int add_string(size_t *a, const char *s)
{
	size_t b = string_bytes(s ? strlen(s) : 0);
	return b && add_size(a, b);
}

/* n elements of size sz padded to 8, added to *a; 0 on overflow. */
static int add_column(size_t *a, size_t n, size_t sz)
{
	if (n > (SIZE_MAX - 8u) / sz)
		return 0;
	return add_size(a, pad8(n * sz));
}

static unsigned char *put_u64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

static unsigned char *put_i64(unsigned char *p, int64_t v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

static unsigned char *put_string(unsigned char *p, const char *s)
{
	size_t len = s ? strlen(s) : 0, padded = pad8(len + 1u);
	p = put_u64(p, len);
	if (len)
		memcpy(p, s, len);
	memset(p + len, 0, padded - len);
	return p + padded;
}

/* t - shift, SP_NO_TIME kept, wrapping like the hardware (no UB). */
static int64_t shifted(int64_t t, uint64_t shift)
{
	return t == SP_NO_TIME ? t : (int64_t)((uint64_t)t - shift);
}

/* t - shift, or t when t is SP_NO_TIME, without a 64-bit compare (SSE2 has
 * none): keep is all ones unless x, t xor INT64_MIN, is zero. */
static inline uint64_t shift_lane(uint64_t u, uint64_t shift)
{
	uint64_t x = u ^ ((uint64_t)1 << 63);
	uint64_t keep = 0 - ((x | (0 - x)) >> 63);
	return u - (shift & keep);
}

/* One event column, shifted: a memcpy when there is nothing to subtract,
 * else blocks of 8 that -O2 vectorises (its cost model wants a trip count
 * that needs no scalar epilogue), then the tail. */
static unsigned char *put_times(unsigned char *p, const int64_t *restrict src, size_t n,
				uint64_t shift)
{
	if (shift == 0) {
		if (n)
			memcpy(p, src, n * 8u);
		return p + n * 8u;
	}
	int64_t *restrict dst = (int64_t *)(void *)p;   /* 8-aligned: see sp_rank_pack */
	size_t i = 0;
	for (; i + 8u <= n; i += 8u)
		for (size_t j = 0; j < 8u; j++)
			dst[i + j] = (int64_t)shift_lane((uint64_t)src[i + j], shift);
	for (; i < n; i++)
		dst[i] = (int64_t)shift_lane((uint64_t)src[i], shift);
	return p + n * 8u;
}

/* Checks rk can be packed and returns its packed size in *size. */
static enum sp_err pack_size(const struct sp_rank *rk, int with_events, size_t *size,
			     struct sp_error *err)
{
	size_t s = HEADER_BYTES + ATTR_BYTES;

	if (rk->nregions && !rk->regions)
		return sp_error_set(err, SP_EINVAL, "rank %d: %zu regions but no region array",
				    rk->rank, rk->nregions);
	if (rk->ntree && !rk->tree)
		return sp_error_set(err, SP_EINVAL, "rank %d: %zu tree nodes but no tree", rk->rank,
				    rk->ntree);
	if (rk->nlines && !rk->lines)
		return sp_error_set(err, SP_EINVAL, "rank %d: %zu line tables but no table array",
				    rk->rank, rk->nlines);
	if (rk->hostname && !add_string(&s, rk->hostname))
		goto overflow;
	for (size_t i = 0; i < rk->nregions; i++) {
		const struct sp_region_data *rd = &rk->regions[i];
		int64_t calls = rd->stats.num_calls;
		if (!rd->name)
			return sp_error_set(err, SP_EINVAL, "rank %d: region %zu has no name", rk->rank, i);
		if (calls < 0)
			return sp_error_set(err, SP_EINVAL, "rank %d: region '%s' has %lld calls",
					    rk->rank, rd->name, (long long)calls);
		if (!add_string(&s, rd->name) || !add_size(&s, STATS_BYTES + 8u) ||
		    (rd->dropped && !add_size(&s, 8u)) || (rd->peak_bytes > 0 && !add_size(&s, 8u)) ||
		    (rd->value_kind && !add_size(&s, 16u)))
			goto overflow;
		if (rd->aggregate) {
			if (!add_size(&s, 8u))
				goto overflow;
			continue;
		}
		if (!with_events)
			continue;
		if (calls > 0 && (!rd->starts || !rd->ends))
			return sp_error_set(err, SP_EINVAL,
					    "rank %d: region '%s' has %lld calls but no event columns",
					    rk->rank, rd->name, (long long)calls);
		if ((uint64_t)calls > SIZE_MAX / 16u)
			goto overflow;
		size_t n = (size_t)calls;
		if (rd->value_kind && calls > 0 && !rd->values)
			return sp_error_set(err, SP_EINVAL, "rank %d: region '%s' has a value kind but no values",
					    rk->rank, rd->name);
		if (!add_column(&s, n, 8u) || !add_column(&s, n, 8u) ||
		    (rd->value_kind && !add_column(&s, n, 8u)) || (rd->lanes && !add_column(&s, n, 4u)))
			goto overflow;
	}
	for (size_t i = 0; i < rk->ntree; i++) {
		const struct sp_tree_node *nd = &rk->tree[i];
		if (nd->parent < -1 || (nd->parent >= 0 && (size_t)nd->parent >= i) ||
		    nd->region < 0 || (size_t)nd->region >= rk->nregions)
			return sp_error_set(err, SP_EINVAL,
					    "rank %d: tree node %zu has parent %d and region %d (of %zu)",
					    rk->rank, i, (int)nd->parent, (int)nd->region, rk->nregions);
	}
	if (!add_column(&s, rk->ntree, NODE_BYTES))
		goto overflow;
	for (size_t k = 0; k < rk->nlines; k++) {
		const struct sp_line_table *t = &rk->lines[k];
		if (!t->function || !t->region || !t->filename)
			return sp_error_set(err, SP_EINVAL,
					    "rank %d: line table %zu lacks its function, region or file",
					    rk->rank, k);
		if (t->n && (!t->hits || !t->time_ns))
			return sp_error_set(err, SP_EINVAL, "rank %d: line table '%s' has %zu lines but no hits or times",
					    rk->rank, t->function, t->n);
		if (!add_string(&s, t->function) || !add_string(&s, t->region) ||
		    !add_string(&s, t->filename) || !add_size(&s, 16u) ||
		    !add_column(&s, t->n, 8u) || !add_column(&s, t->n, 8u))
			goto overflow;
		for (size_t i = 0; i < t->n; i++)
			if (!add_string(&s, t->source ? t->source[i] : NULL))
				goto overflow;
	}
	if (rk->nlikwid && !rk->likwid)
		return sp_error_set(err, SP_EINVAL, "rank %d: %zu LIKWID tables but no array", rk->rank,
				    rk->nlikwid);
	if (rk->nlikwid && !add_size(&s, 8u))
		goto overflow;
	for (size_t k = 0; k < rk->nlikwid; k++) {
		const struct sp_likwid_region *t = &rk->likwid[k];
		if (!t->region || !t->nthreads || !t->count || !t->time || (t->nevents && !t->events))
			return sp_error_set(err, SP_EINVAL, "rank %d: LIKWID table %zu is incomplete",
					    rk->rank, k);
		if ((t->nevents && t->nthreads > SIZE_MAX / 8u / t->nevents) ||
		    (t->nmetrics && t->nmrows > SIZE_MAX / 8u / t->nmetrics))
			goto overflow;
		if (t->nmetrics && (!t->nmrows || !t->metrics))
			return sp_error_set(err, SP_EINVAL, "rank %d: LIKWID table %zu has metrics but no rows",
					    rk->rank, k);
		if (!add_string(&s, t->region) || !add_size(&s, 16u) ||
		    !add_column(&s, t->nthreads * t->nevents, 8u) || !add_column(&s, t->nthreads, 8u) ||
		    !add_column(&s, t->nthreads, 8u) || !add_size(&s, 16u) ||
		    !add_column(&s, t->nmetrics ? t->nmrows * t->nmetrics : 0, 8u))
			goto overflow;
	}
	*size = s;
	return SP_OK;
overflow:
	return sp_error_set(err, SP_ENOMEM, "rank %d: the packed profile's size overflows", rk->rank);
}

/* Packs one region (its stats' times shifted by ush; its events when
 * with_events); returns the end of what was written. */
static unsigned char *put_region(unsigned char *p, const struct sp_region_data *rd, int with_events,
				 uint64_t ush)
{
	struct sp_stats st = rd->stats;
	size_t n = (size_t)st.num_calls;
	int lanes = with_events && rd->lanes && !rd->aggregate;
	st.first_start_ns = shifted(st.first_start_ns, ush);
	st.last_end_ns = shifted(st.last_end_ns, ush);
	p = put_string(p, rd->name);
	memcpy(p, &st, STATS_BYTES);
	p = put_u64(p + STATS_BYTES, (lanes ? SP_PK_LANES : 0u) | (rd->aggregate ? SP_PK_AGG : 0u) |
				     (rd->dropped ? SP_PK_DROPPED : 0u) | (rd->value_kind ? SP_PK_VALUES : 0u) |
				     (rd->peak_bytes > 0 ? SP_PK_PEAK : 0u));
	if (rd->dropped)
		p = put_i64(p, rd->dropped);
	if (rd->peak_bytes > 0)
		p = put_i64(p, rd->peak_bytes);
	if (rd->value_kind) {
		p = put_i64(p, rd->value_kind);
		p = put_i64(p, rd->values_total);
	}
	if (rd->aggregate)
		return put_u64(p, (uint64_t)rd->self_ns);
	if (!with_events)
		return p;
	p = put_times(p, rd->starts, n, ush);
	p = put_times(p, rd->ends, n, ush);
	if (rd->value_kind) {
		if (n)
			memcpy(p, rd->values, n * 8u);
		p += n * 8u;
	}
	if (lanes) {
		if (n)
			memcpy(p, rd->lanes, n * 4u);
		memset(p + n * 4u, 0, pad8(n * 4u) - n * 4u);
		p += pad8(n * 4u);
	}
	return p;
}

/* Packs one line table; returns the end of what was written. */
static unsigned char *put_line_table(unsigned char *p, const struct sp_line_table *t)
{
	p = put_string(p, t->function);
	p = put_string(p, t->region);
	p = put_string(p, t->filename);
	p = put_i64(p, t->first_line);
	p = put_u64(p, t->n);
	if (t->n) {
		memcpy(p, t->hits, t->n * 8u);
		memcpy(p + t->n * 8u, t->time_ns, t->n * 8u);
	}
	p += t->n * 16u;
	for (size_t i = 0; i < t->n; i++)
		p = put_string(p, t->source ? t->source[i] : NULL);
	return p;
}

enum sp_err sp_rank_pack(const struct sp_rank *rk, int with_events, int64_t shift, void **buf,
			 size_t *len, struct sp_error *err)
{
	size_t size = 0;
	enum sp_err rc;

	if (!rk || !buf || !len)
		return sp_error_set(err, SP_EINVAL, "sp_rank_pack: NULL argument");
	*buf = NULL;
	*len = 0;
	if ((rc = pack_size(rk, with_events, &size, err)) != SP_OK)
		return rc;
	unsigned char *b = malloc(size), *p = b;
	if (!b)
		return sp_error_set(err, SP_ENOMEM, "rank %d: no memory for a %zu-byte packed profile",
				    rk->rank, size);
	uint64_t ush = (uint64_t)shift;
	uint32_t magic = SP_PK_MAGIC, version = SP_PK_VERSION;
	uint64_t flags = (with_events ? SP_PK_EVENTS : 0u) | (rk->hostname ? SP_PK_HOSTNAME : 0u) |
			 (rk->tree ? SP_PK_TREE : 0u) | (rk->nlikwid ? SP_PK_LIKWID : 0u);

	memcpy(p, &magic, 4);
	memcpy(p + 4, &version, 4);
	p = put_u64(p + 8, size);
	p = put_u64(p, flags);
	p = put_i64(p, rk->rank);
	p = put_i64(p, shifted(rk->run_start_ns, ush));
	p = put_i64(p, shifted(rk->run_end_ns, ush));
	p = put_i64(p, rk->pid);
	p = put_i64(p, rk->parent_pid);
	p = put_i64(p, rk->clock_offset_ns);
	p = put_i64(p, rk->dropped);
	p = put_u64(p, rk->nregions);
	p = put_u64(p, rk->ntree);
	p = put_u64(p, rk->nlines);
	if (rk->hostname)
		p = put_string(p, rk->hostname);

	for (size_t i = 0; i < rk->nregions; i++)
		p = put_region(p, &rk->regions[i], with_events, ush);
	if (rk->ntree)
		memcpy(p, rk->tree, rk->ntree * NODE_BYTES);
	p += rk->ntree * NODE_BYTES;
	for (size_t k = 0; k < rk->nlines; k++)
		p = put_line_table(p, &rk->lines[k]);
	if (rk->nlikwid)
		p = put_u64(p, rk->nlikwid);
	for (size_t k = 0; k < rk->nlikwid; k++) {
		const struct sp_likwid_region *t = &rk->likwid[k];
		size_t ne = t->nthreads * t->nevents;
		p = put_string(p, t->region);
		p = put_u64(p, t->nthreads);
		p = put_u64(p, t->nevents);
		if (ne)
			memcpy(p, t->events, ne * 8u);
		memcpy(p + ne * 8u, t->count, t->nthreads * 8u);
		memcpy(p + ne * 8u + t->nthreads * 8u, t->time, t->nthreads * 8u);
		p += ne * 8u + t->nthreads * 16u;
		size_t nm = t->nmetrics ? t->nmrows * t->nmetrics : 0;
		p = put_u64(p, t->nmetrics ? t->nmrows : 0);
		p = put_u64(p, t->nmetrics);
		if (nm)
			memcpy(p, t->metrics, nm * 8u);
		p += nm * 8u;
	}
	size_t packed = (size_t)(p - b);
	if (packed != size) {   /* the two passes disagree: a bug here */
		free(b);
		return sp_error_set(err, SP_EINVAL, "rank %d: packed %zu bytes, expected %zu",
				    rk->rank, packed, size);
	}
	*buf = b;
	*len = size;
	return SP_OK;
}

/* -------------------------------------------------------------- unpacking */

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
	if (rflags & ~(uint64_t)(SP_PK_LANES | SP_PK_AGG | SP_PK_DROPPED | SP_PK_VALUES | SP_PK_PEAK) ||
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

static enum sp_err unpack(struct cursor *c, struct sp_rank *out)
{
	uint32_t magic, version;
	uint64_t total = 0, flags = 0;
	int64_t rank = 0;
	size_t nregions = 0, ntree = 0, nlines = 0;
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
	    (rc = get_u64(c, &flags, "no flags")) != SP_OK)
		return rc;
	if (total != c->len)
		return damaged(c, "its length field disagrees with its size");
	if (flags & ~(uint64_t)(SP_PK_EVENTS | SP_PK_HOSTNAME | SP_PK_TREE | SP_PK_LIKWID))
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
	    (rc = get_count(c, MIN_REGION, &nregions, "region count exceeds the buffer")) != SP_OK ||
	    (rc = get_count(c, NODE_BYTES, &ntree, "tree size exceeds the buffer")) != SP_OK ||
	    (rc = get_count(c, MIN_TABLE, &nlines, "line table count exceeds the buffer")) != SP_OK)
		return rc;
	if (out->dropped < 0)
		return damaged(c, "a negative dropped count");
	if (ntree && !(flags & SP_PK_TREE))
		return damaged(c, "tree nodes without a tree");
	if ((flags & SP_PK_HOSTNAME) &&
	    (rc = get_string(c, &out->hostname, "hostname runs past the end")) != SP_OK)
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
	if (flags & SP_PK_LIKWID) {
		size_t n = 0;
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
	}
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

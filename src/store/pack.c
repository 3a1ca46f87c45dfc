/* pack.c - packing one rank's profile into one flat byte buffer
 * (sp_rank_pack, include/sp_pack.h) in the layout of sp_pack_layout.h:
 * first its size, every count and pointer checked, then each item in the
 * layout's order. unpack.c reads it back, item by item in the same order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_error.h"
#include "sp_pack.h"
#include "sp_pack_layout.h"

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

static enum sp_err overflow(const struct sp_rank *rk, struct sp_error *err)
{
	return sp_error_set(err, SP_ENOMEM, "rank %d: the packed profile's size overflows", rk->rank);
}

/* Checks region i of rk can be packed and adds its packed size to *s. */
static enum sp_err region_size(const struct sp_rank *rk, size_t i, int with_events, size_t *s,
			       struct sp_error *err)
{
	const struct sp_region_data *rd = &rk->regions[i];
	int64_t calls = rd->stats.num_calls;
	if (!rd->name)
		return sp_error_set(err, SP_EINVAL, "rank %d: region %zu has no name", rk->rank, i);
	if (calls < 0)
		return sp_error_set(err, SP_EINVAL, "rank %d: region '%s' has %lld calls",
				    rk->rank, rd->name, (long long)calls);
	if (!add_string(s, rd->name) || !add_size(s, STATS_BYTES + 8u) ||
	    (rd->dropped && !add_size(s, 8u)) || (rd->peak_bytes > 0 && !add_size(s, 8u)) ||
	    (rd->gpu_waited && !add_size(s, 8u)) ||
	    (rd->value_kind && !add_size(s, 16u)))
		return overflow(rk, err);
	if (rd->aggregate)
		return add_size(s, 8u) ? SP_OK : overflow(rk, err);
	if (!with_events)
		return SP_OK;
	if (calls > 0 && (!rd->starts || !rd->ends))
		return sp_error_set(err, SP_EINVAL,
				    "rank %d: region '%s' has %lld calls but no event columns",
				    rk->rank, rd->name, (long long)calls);
	if ((uint64_t)calls > SIZE_MAX / 16u)
		return overflow(rk, err);
	size_t n = (size_t)calls;
	if (rd->value_kind && calls > 0 && !rd->values)
		return sp_error_set(err, SP_EINVAL, "rank %d: region '%s' has a value kind but no values",
				    rk->rank, rd->name);
	if (!add_column(s, n, 8u) || !add_column(s, n, 8u) ||
	    (rd->value_kind && !add_column(s, n, 8u)) || (rd->lanes && !add_column(s, n, 4u)))
		return overflow(rk, err);
	return SP_OK;
}

/* Checks rk's line tables can be packed and adds their size to *s. */
static enum sp_err lines_size(const struct sp_rank *rk, size_t *s, struct sp_error *err)
{
	for (size_t k = 0; k < rk->nlines; k++) {
		const struct sp_line_table *t = &rk->lines[k];
		if (!t->function || !t->region || !t->filename)
			return sp_error_set(err, SP_EINVAL,
					    "rank %d: line table %zu lacks its function, region or file",
					    rk->rank, k);
		if (t->n && (!t->hits || !t->time_ns))
			return sp_error_set(err, SP_EINVAL, "rank %d: line table '%s' has %zu lines but no hits or times",
					    rk->rank, t->function, t->n);
		if (!add_string(s, t->function) || !add_string(s, t->region) ||
		    !add_string(s, t->filename) || !add_size(s, 16u) ||
		    !add_column(s, t->n, 8u) || !add_column(s, t->n, 8u))
			return overflow(rk, err);
		for (size_t i = 0; i < t->n; i++)
			if (!add_string(s, t->source ? t->source[i] : NULL))
				return overflow(rk, err);
	}
	return SP_OK;
}

/* Checks rk's LIKWID tables can be packed and adds their size to *s. */
static enum sp_err likwid_size(const struct sp_rank *rk, size_t *s, struct sp_error *err)
{
	if (rk->nlikwid && !rk->likwid)
		return sp_error_set(err, SP_EINVAL, "rank %d: %zu LIKWID tables but no array", rk->rank,
				    rk->nlikwid);
	if (rk->nlikwid && !add_size(s, 8u))
		return overflow(rk, err);
	for (size_t k = 0; k < rk->nlikwid; k++) {
		const struct sp_likwid_region *t = &rk->likwid[k];
		if (!t->region || !t->nthreads || !t->count || !t->time || (t->nevents && !t->events))
			return sp_error_set(err, SP_EINVAL, "rank %d: LIKWID table %zu is incomplete",
					    rk->rank, k);
		if ((t->nevents && t->nthreads > SIZE_MAX / 8u / t->nevents) ||
		    (t->nmetrics && t->nmrows > SIZE_MAX / 8u / t->nmetrics))
			return overflow(rk, err);
		if (t->nmetrics && (!t->nmrows || !t->metrics))
			return sp_error_set(err, SP_EINVAL, "rank %d: LIKWID table %zu has metrics but no rows",
					    rk->rank, k);
		if (!add_string(s, t->region) || !add_size(s, 16u) ||
		    !add_column(s, t->nthreads * t->nevents, 8u) || !add_column(s, t->nthreads, 8u) ||
		    !add_column(s, t->nthreads, 8u) || !add_size(s, 16u) ||
		    !add_column(s, t->nmetrics ? t->nmrows * t->nmetrics : 0, 8u))
			return overflow(rk, err);
	}
	return SP_OK;
}

/* Checks rk can be packed and returns its packed size in *size. */
static enum sp_err pack_size(const struct sp_rank *rk, int with_events, size_t *size,
			     struct sp_error *err)
{
	size_t s = HEADER_BYTES + ATTR_BYTES;
	enum sp_err rc;

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
		return overflow(rk, err);
	for (size_t i = 0; i < rk->nregions; i++)
		if ((rc = region_size(rk, i, with_events, &s, err)) != SP_OK)
			return rc;
	for (size_t i = 0; i < rk->ntree; i++) {
		const struct sp_tree_node *nd = &rk->tree[i];
		if (nd->parent < -1 || (nd->parent >= 0 && (size_t)nd->parent >= i) ||
		    nd->region < 0 || (size_t)nd->region >= rk->nregions)
			return sp_error_set(err, SP_EINVAL,
					    "rank %d: tree node %zu has parent %d and region %d (of %zu)",
					    rk->rank, i, (int)nd->parent, (int)nd->region, rk->nregions);
	}
	if (!add_column(&s, rk->ntree, NODE_BYTES))
		return overflow(rk, err);
	if ((rc = lines_size(rk, &s, err)) != SP_OK || (rc = likwid_size(rk, &s, err)) != SP_OK)
		return rc;
	*size = s;
	return SP_OK;
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
				     (rd->peak_bytes > 0 ? SP_PK_PEAK : 0u) | (rd->gpu_waited ? SP_PK_GPU : 0u));
	if (rd->dropped)
		p = put_i64(p, rd->dropped);
	if (rd->peak_bytes > 0)
		p = put_i64(p, rd->peak_bytes);
	if (rd->gpu_waited)
		p = put_i64(p, rd->gpu_wait_ns);
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

/* Packs one LIKWID table; returns the end of what was written. */
static unsigned char *put_likwid(unsigned char *p, const struct sp_likwid_region *t)
{
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
	return p + nm * 8u;
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
	p = put_i64(p, rk->tree_overlaps);
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
	for (size_t k = 0; k < rk->nlikwid; k++)
		p = put_likwid(p, &rk->likwid[k]);
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

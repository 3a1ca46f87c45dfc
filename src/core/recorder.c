/* recorder.c - growth of the per-region event columns (see sp_recorder.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sp_grow.h"
#include "sp_recorder.h"

int (*sp_buf_spill)(struct sp_buf *b);
size_t sp_buf_bytes;

/* Bytes per entry of b's columns. */
static size_t entry_bytes(const struct sp_buf *b)
{
	return 2 * sizeof(int64_t) + (b->keep_lanes ? sizeof(int32_t) : 0) + (b->keep_values ? sizeof(int64_t) : 0);
}

void sp_buf_init(struct sp_buf *b, size_t limit)
{
	memset(b, 0, sizeof *b);
	b->limit = limit ? limit : 1;
}

size_t sp_buf_next_cap(size_t cap, size_t limit)
{
	size_t first = limit < SP_BUF_FIRST_CAP ? (limit ? limit : 1) : SP_BUF_FIRST_CAP;
	size_t ncap = sp_grow_cap(cap, first, cap + 1, sizeof(int64_t));
	return cap < limit && ncap > limit ? limit : ncap;
}

size_t sp_buf_max_cap(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || page <= 0)
		return SIZE_MAX / 16;
	return (size_t)pages / 16 * (size_t)page;
}

static void *map_new(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The columns and their element sizes, for the loops below. */
#define NCOLS 4
static void **col_ptr(struct sp_buf *b, int i)
{
	return i == 0 ? (void **)&b->starts : i == 1 ? (void **)&b->ends
		: i == 2 ? (void **)&b->lanes : (void **)&b->values;
}

static size_t col_elem(int i)
{
	return i == 2 ? sizeof(int32_t) : sizeof(int64_t);
}

static int col_used(const struct sp_buf *b, int i)
{
	return i < 2 || (i == 2 ? b->keep_lanes : b->keep_values != 0);
}

/* Moves every column from malloc to new mmaps of cap entries: all or none. */
static int grow_to_maps(struct sp_buf *b, size_t cap)
{
	void *fresh[NCOLS] = {NULL, NULL, NULL, NULL};
	for (int i = 0; i < NCOLS; i++)
		if (col_used(b, i) && !(fresh[i] = map_new(cap * col_elem(i)))) {
			for (int j = 0; j < i; j++)
				if (fresh[j])
					munmap(fresh[j], cap * col_elem(j));
			return -1;
		}
	for (int i = 0; i < NCOLS; i++) {
		if (!col_used(b, i))
			continue;
		void **p = col_ptr(b, i);
		if (*p && b->cap)
			memcpy(fresh[i], *p, b->cap * col_elem(i));
		free(*p);
		*p = fresh[i];
	}
	b->mapped = 1;
	return 0;
}

/* Grows every mapped column to cap entries: all or none (a column already
 * grown shrinks back in place when a later one fails). */
static int grow_maps(struct sp_buf *b, size_t cap)
{
	for (int i = 0; i < NCOLS; i++) {
		if (!col_used(b, i))
			continue;
		void **p = col_ptr(b, i);
		void *q = mremap(*p, b->cap * col_elem(i), cap * col_elem(i), MREMAP_MAYMOVE);
		if (q == MAP_FAILED) {
			for (int j = 0; j < i; j++)
				if (col_used(b, j)) {
					void **pj = col_ptr(b, j);
					*pj = mremap(*pj, cap * col_elem(j), b->cap * col_elem(j), 0);
				}
			return -1;
		}
		*p = q;
	}
	return 0;
}

/* A growth that failed: the next is tried once the calls dropped since
 * have doubled (memory may come back; a failed attempt, mremap's system
 * calls, would otherwise cost every dropped call 20 times its recording). */
static int grow_failed(struct sp_buf *b)
{
	b->retry_at = 2 * b->dropped + 1;
	return -1;
}

int sp_buf_grow(struct sp_buf *b)
{
	if (b->spillable && sp_buf_spill && b->n) {
		int spilled = sp_buf_spill(b);
		if (spilled <= 0)
			return spilled;   /* emptied, or over the budget: the call is dropped */
	}
	if (b->dropped < b->retry_at)
		return -1;
	size_t cap = sp_buf_next_cap(b->cap, b->limit);
	if (!cap)
		return grow_failed(b);
	if (b->mapped) {
		if (grow_maps(b, cap) != 0)
			return grow_failed(b);
	} else if (cap * sizeof(int64_t) >= SP_BUF_MAP_BYTES) {
		if (grow_to_maps(b, cap) != 0)
			return grow_failed(b);
	} else {
		/* Grow both columns before publishing either, so a failure
		 * leaves the buffer exactly as it was. */
		int64_t *st = realloc(b->starts, cap * sizeof(int64_t));
		if (!st)
			return grow_failed(b);
		b->starts = st;
		int64_t *e = realloc(b->ends, cap * sizeof(int64_t));
		if (!e)
			return grow_failed(b);   /* starts is larger now, harmlessly; cap is unchanged */
		b->ends = e;
		if (b->keep_lanes) {
			int32_t *l = realloc(b->lanes, cap * sizeof(int32_t));
			if (!l)
				return grow_failed(b);
			b->lanes = l;
		}
		if (b->keep_values) {
			int64_t *v = realloc(b->values, cap * sizeof(int64_t));
			if (!v)
				return grow_failed(b);
			b->values = v;
		}
	}
	sp_buf_bytes += (cap - b->cap) * entry_bytes(b);
	b->cap = cap;
	return 0;
}

int sp_buf_keep_lanes(struct sp_buf *b)
{
	if (b->keep_lanes)
		return 0;
	if (b->cap) {
		/* Zeroed either way: events already recorded get lane 0. */
		int32_t *l = b->mapped ? map_new(b->cap * sizeof(int32_t)) : calloc(b->cap, sizeof(int32_t));
		if (!l)
			return -1;
		b->lanes = l;
		sp_buf_bytes += b->cap * sizeof(int32_t);
	}
	b->keep_lanes = 1;
	return 0;
}

int sp_buf_keep_values(struct sp_buf *b, int kind)
{
	if (kind <= 0)
		return -1;
	if (!b->keep_values && b->cap) {
		/* Zeroed either way: events already recorded get 0. */
		int64_t *v = b->mapped ? map_new(b->cap * sizeof(int64_t)) : calloc(b->cap, sizeof(int64_t));
		if (!v)
			return -1;
		b->values = v;
		sp_buf_bytes += b->cap * sizeof(int64_t);
	}
	b->keep_values = kind;
	return 0;
}

void sp_buf_clear(struct sp_buf *b)
{
	b->n = 0;
	b->dropped = 0;
	b->retry_at = 0;
}

void sp_buf_release(struct sp_buf *b)
{
	if (b->n || !b->cap)
		return;
	int lanes = b->keep_lanes, values = b->keep_values;
	size_t dropped = b->dropped, retry_at = b->retry_at;
	sp_buf_free(b);
	b->keep_lanes = lanes;
	b->keep_values = values;
	b->dropped = dropped;
	b->retry_at = retry_at;
}

/* Frees b's columns (NULL after), nothing else. */
static void free_columns(struct sp_buf *b)
{
	for (int i = 0; i < NCOLS; i++) {
		void **p = col_ptr(b, i);
		if (b->mapped && *p)
			munmap(*p, b->cap * col_elem(i));
		else
			free(*p);
		*p = NULL;
	}
}

/* b's columns leave sp_buf_bytes' count. */
static void uncount(const struct sp_buf *b)
{
	size_t held = b->cap * entry_bytes(b);
	sp_buf_bytes -= held < sp_buf_bytes ? held : sp_buf_bytes;
}

void sp_buf_take(struct sp_buf *b, struct sp_buf *to)
{
	uncount(b);
	*to = *b;
	b->starts = b->ends = b->values = NULL;
	b->lanes = NULL;
	b->n = b->cap = 0;
	b->mapped = 0;
}

void sp_buf_untake(struct sp_buf *b, const struct sp_buf *to)
{
	b->starts = to->starts;
	b->ends = to->ends;
	b->lanes = to->lanes;
	b->values = to->values;
	b->n = to->n;
	b->cap = to->cap;
	b->mapped = to->mapped;
	sp_buf_bytes += b->cap * entry_bytes(b);
}

void sp_buf_free_taken(struct sp_buf *to)
{
	free_columns(to);
	to->n = to->cap = 0;
}

void sp_buf_free(struct sp_buf *b)
{
	uncount(b);
	free_columns(b);
	b->keep_lanes = 0;
	b->keep_values = 0;
	b->mapped = 0;
	b->n = b->cap = 0;
	b->dropped = 0;
	b->retry_at = 0;
}

/* recorder.c - growth of the per-region event columns (see sp_recorder.h). */
#include <stdlib.h>
#include <string.h>

#include "sp_recorder.h"

void sp_buf_init(struct sp_buf *b, size_t initial_cap)
{
	memset(b, 0, sizeof *b);
	b->initial_cap = initial_cap ? initial_cap : 1;
}

int sp_buf_grow(struct sp_buf *b)
{
	size_t cap = b->cap ? b->cap : b->initial_cap;
	if (b->cap) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	if (cap > SIZE_MAX / sizeof(int64_t))
		return -1;
	/* Grow both columns before publishing either, so a failure leaves the
	 * buffer exactly as it was. */
	int64_t *s = realloc(b->starts, cap * sizeof(int64_t));
	if (!s)
		return -1;
	b->starts = s;
	int64_t *e = realloc(b->ends, cap * sizeof(int64_t));
	if (!e)
		return -1;   /* starts is larger now, harmlessly; cap is unchanged */
	b->ends = e;
	if (b->keep_lanes) {
		int32_t *l = realloc(b->lanes, cap * sizeof(int32_t));
		if (!l)
			return -1;
		b->lanes = l;
	}
	b->cap = cap;
	return 0;
}

int sp_buf_keep_lanes(struct sp_buf *b)
{
	if (b->keep_lanes)
		return 0;
	if (b->cap) {
		int32_t *l = calloc(b->cap, sizeof(int32_t));
		if (!l)
			return -1;
		b->lanes = l;
	}
	b->keep_lanes = 1;
	return 0;
}

void sp_buf_clear(struct sp_buf *b)
{
	b->n = 0;
	b->dropped = 0;
}

void sp_buf_free(struct sp_buf *b)
{
	free(b->starts);
	free(b->ends);
	free(b->lanes);
	b->starts = b->ends = NULL;
	b->lanes = NULL;
	b->keep_lanes = 0;
	b->n = b->cap = 0;
	b->dropped = 0;
}

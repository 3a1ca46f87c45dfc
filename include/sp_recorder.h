/* sp_recorder.h - per-region growable event columns (int64 start/end ns).
 * The recording path is sp_buf_reserve(): one compare and an increment;
 * growth (doubling, overflow-checked) is the only slow path. */
#ifndef SP_RECORDER_H
#define SP_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#define SP_DEFAULT_BUFFER_LIMIT 1024
/* A region's first events: 3 a column, 24 bytes, take glibc's smallest
 * block (32 bytes), where 4 would take 48; most regions of a --recursive
 * run are called once or twice. */
#define SP_BUF_FIRST_CAP 3
#define SP_BUF_MAP_BYTES ((size_t)1 << 20)

struct sp_buf {
	int64_t *starts, *ends;   /* cap entries each; NULL until the first event */
	int32_t *lanes;           /* cap entries when lanes are kept, else NULL */
	int keep_lanes;           /* grow (and allocate) the lanes column too */
	int64_t *values;          /* cap entries when keep_values, else NULL */
	int keep_values;          /* 0, or the enum sp_value_kind (sp_profile.h) of values */
	size_t n;                 /* events reserved so far */
	size_t cap;               /* allocated entries */
	size_t limit;             /* buffer_limit: the capacity the first growths double
				   * up to (from SP_BUF_FIRST_CAP); past it, doubling */
	size_t dropped;           /* events lost because memory ran out */
	size_t retry_at;          /* after a failed growth: tried again once dropped reaches it */
	int mapped;               /* columns are mmaps of their own (large buffers) */
	int spillable;            /* a full buffer is offered to sp_buf_spill before it grows */
};

/* Streaming (sp_stream.h): when set, a full spillable buffer is offered to
 * it before growing; it returns 0 when it emptied the buffer (its events
 * handed over), 1 to let the buffer grow as usual, -1 when it may not grow
 * (the memory budget: sp_buf_reserve then drops the call, counted). */
extern int (*sp_buf_spill)(struct sp_buf *b);

/* The bytes that every buffer's columns hold allocated (their capacity). */
extern size_t sp_buf_bytes;

/* An empty buffer (nothing allocated) growing up to limit (0: 1) by
 * doubling from SP_BUF_FIRST_CAP entries, then by doubling past it: a region
 * with few calls holds a few events, not limit (sp_buf_next_cap). */
void sp_buf_init(struct sp_buf *b, size_t limit);

/* The capacity a buffer of cap entries (0: none yet) grows to under limit:
 * min(SP_BUF_FIRST_CAP, limit) first, then doubled, but never past limit
 * while below it (so a buffer reaches limit exactly), then doubled; 0 when
 * that overflows (16 bytes per entry). */
size_t sp_buf_next_cap(size_t cap, size_t limit);

/* The largest buffer_limit worth asking for: the events whose columns
 * (16 bytes each) fit in this machine's physical memory. */
size_t sp_buf_max_cap(void);

/* Grows the capacity to sp_buf_next_cap (the first time: allocates).
 * Returns 0, or -1 when the
 * new size overflows or memory runs out; the buffer is then unchanged.
 * Columns of SP_BUF_MAP_BYTES or more are anonymous mmaps that grow by
 * mremap: no copy, and no freed block left behind in the heap, so a long
 * run's memory is its events' 16 bytes each whatever malloc's settings. */
int sp_buf_grow(struct sp_buf *b);

/* Forgets all events; keeps the allocation. */
void sp_buf_clear(struct sp_buf *b);

/* Frees the columns; the buffer is empty again (same limit). */
void sp_buf_free(struct sp_buf *b);

/* An empty buffer (its events handed over) gives its columns' memory back
 * and keeps its settings and counts (lanes, values, calls dropped): it
 * grows again from nothing at its next event. Nothing when it holds any. */
void sp_buf_release(struct sp_buf *b);

/* Moves b's columns and events into *to (a buffer of its own, outside
 * sp_buf_bytes' count) and leaves b as sp_buf_release would once emptied:
 * its calls handed over without a copy. sp_buf_free_taken frees *to's
 * columns, from any thread. */
void sp_buf_take(struct sp_buf *b, struct sp_buf *to);
void sp_buf_free_taken(struct sp_buf *to);

/* Gives b (as sp_buf_take left it, unchanged since) the columns and events
 * taken into *to back. */
void sp_buf_untake(struct sp_buf *b, const struct sp_buf *to);

/* From now on, keep a lane per event; events already recorded get lane 0.
 * Returns 0, or -1 when out of memory (lanes stay off). */
int sp_buf_keep_lanes(struct sp_buf *b);

/* From now on, keep a value per event (bytes allocated or moved; kind, an
 * enum sp_value_kind > 0, says which); events already recorded get 0.
 * Returns 0, or -1 when out of memory (values stay off) or kind <= 0. */
int sp_buf_keep_values(struct sp_buf *b, int kind);

/* Reserves the next slot and returns its index, or -1 (counted in dropped)
 * when the buffer could not grow. */
static inline ptrdiff_t sp_buf_reserve(struct sp_buf *b)
{
	if (__builtin_expect(b->n == b->cap, 0) && sp_buf_grow(b) != 0) {
		b->dropped++;
		return -1;
	}
	return (ptrdiff_t)b->n++;
}

#endif

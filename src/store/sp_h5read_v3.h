/* sp_h5read_v3.h - h5read_v3.c: the ranks of format version 3, a streamed
 * profile (man 5 scope-profiler-format), finished or partial, for
 * sp_h5_read and the stream. A rank's calls lie in its event columns in
 * blocks: block b holds calls[b] consecutive calls of one region, and a
 * region's calls are those of its blocks in block order. */
#ifndef SP_H5READ_V3_H
#define SP_H5READ_V3_H

#include "sp_h5read.h"

/* A version 3 rank's blocks and open columns (sp_h5r_v3_open). */
struct sp_h5r_v3 {
	int partial;                   /* OUT.partial: no regions table, a stream group */
	int64_t flushed_ns;            /* partial: every call up to this time is in the file */
	size_t nblocks;                /* the blocks kept (a partial file's consistent prefix) */
	int32_t *region;               /* per block: its region, an index into rk->regions */
	int64_t *calls;                /* per block: its calls (>= 0) */
	uint64_t *at;                  /* per block: where its calls start in the columns */
	uint64_t total;                /* the calls of the blocks kept (columns read up to it) */
	hid_t cols[3];                 /* start_times, end_times, lanes (-1: none, lane 0) */
	hid_t vcols[SP_VALUE_KINDS];   /* the value columns the regions' kinds need, -1 where none */
	/* sp_h5r_v3_index: region g's blocks are blocks[first[g] .. first[g+1]),
	 * before[k] the region's calls in the blocks before blocks[k]. */
	size_t *first, *blocks;
	uint64_t *before;
};

/* Makes v empty: nothing allocated, every column -1. */
void sp_h5r_v3_init(struct sp_h5r_v3 *v);
/* Reads rank group g's structure into rk and v (made empty first):
 * the rank's attributes; finished, the regions table (stats from it);
 * partial, the region names of group stream (each region's num_calls set
 * to its calls kept, the rest of its stats left for the events; regions
 * without calls left out) and flushed_ns (r->partial set); the blocks, cut
 * in a partial file to what is consistent and checked against the table in
 * a finished one; the event columns opened (their storage checked when
 * deep), optional ones that a partial file has not filled treated as
 * absent. On failure v still holds what it opened (sp_h5r_v3_free). */
enum sp_err sp_h5r_v3_open(struct reader *r, hid_t g, const char *gname, struct sp_rank *rk, int deep,
			   struct sp_h5r_v3 *v);
/* Closes v's columns and frees its arrays; v is empty again. */
void sp_h5r_v3_free(struct sp_h5r_v3 *v);

/* The columns of calls read from a partial file: a call whose end is
 * before its start (INT64_MIN: open when its block was written) ends at
 * flushed_ns, or at its start when that is later. Nothing for a finished
 * file. */
void sp_h5r_v3_close_calls(const struct sp_h5r_v3 *v, const int64_t *starts, int64_t *ends, size_t n);

/* One run of calls of one block met by sp_h5r_v3_scan: n calls of region
 * `region`, from its call `index` on (in its call order); columns not
 * asked for are NULL. */
struct sp_h5r_v3_run {
	int32_t region;
	uint64_t index;
	size_t n;
	const int64_t *starts, *ends;  /* ends closed (sp_h5r_v3_close_calls) */
	const int32_t *lanes;
	const int64_t *values[SP_VALUE_KINDS];
};
typedef enum sp_err (*sp_h5r_v3_fn)(struct reader *r, void *ctx, const struct sp_h5r_v3_run *run);
/* Reads the columns once, in order, a slice at a time (starts and ends;
 * lanes and the open value columns too when all), and calls fn for each
 * run of one block's calls in a slice; stops at fn's first failure.
 * SP_ECORRUPT when a column cannot be read, SP_ENOMEM. */
enum sp_err sp_h5r_v3_scan(struct reader *r, const char *gname, const struct sp_h5r_v3 *v, size_t nregions,
			   int all, sp_h5r_v3_fn fn, void *ctx);

/* Builds v's per-region index of blocks (first, blocks, before) for
 * nregions regions. SP_OK or SP_ENOMEM. */
enum sp_err sp_h5r_v3_index(struct reader *r, struct sp_h5r_v3 *v, size_t nregions);
/* Reads calls first .. first + n - 1 of region g (sp_h5r_v3_index built)
 * from column ds (one of v's) as mtype into buf. 0, or -1 when the column
 * cannot be read or the region has fewer calls. */
int sp_h5r_v3_span(const struct sp_h5r_v3 *v, size_t g, hid_t ds, hid_t mtype, size_t size, uint64_t first,
		   size_t n, void *buf);

/* A version 3 rank in full (sp_h5_read): attributes, regions, the events
 * (always for a partial file, whose stats come from them; for a finished
 * one when r->flags asks or the file holds no tree), the line tables. */
enum sp_err sp_h5r_read_rank_v3(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk);

#endif

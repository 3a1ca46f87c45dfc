/* sp_h5write_table.h - h5write_table.c: a rank's regions as format version
 * 2 writes them (the regions table, the event columns, the call tree). */
#ifndef SP_H5WRITE_TABLE_H
#define SP_H5WRITE_TABLE_H

#include "sp_h5write.h"

/* A rank's regions, events and call tree in group rank_g. SP_OK, or the
 * failure (set). */
enum sp_err sp_h5w_regions_v2(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk);

/* A streamed rank's table (format version 3): every region of rk, in its
 * order (row i is region id i), has calls; no first_event column, no event
 * columns (already in the file); the call tree and cumulative_ns when rk
 * has a tree (a run short enough for the end to build it). */
enum sp_err sp_h5w_regions_v3(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk);

#endif

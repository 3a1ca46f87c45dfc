/* sp_h5write_v1.h - h5write_v1.c: a rank's regions as format version 1
 * wrote them, when the profile's format_version is 1. No run writes it
 * (finalize sets version 2): the unit tests and the fuzz seeds do, through
 * sp_h5_write, so that the reader of version 1 files, which earlier
 * releases wrote and which it still reads, stays covered by files the
 * writer makes rather than by binary fixtures. */
#ifndef SP_H5WRITE_V1_H
#define SP_H5WRITE_V1_H

#include "sp_h5write.h"

/* A rank's regions (a group each), events and call tree in group rank_g.
 * SP_OK, or the failure (set). */
enum sp_err sp_h5w_regions_v1(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk);

#endif

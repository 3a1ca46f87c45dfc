/* sp_h5write_likwid.h - h5write_likwid.c: a rank's LIKWID counters. */
#ifndef SP_H5WRITE_LIKWID_H
#define SP_H5WRITE_LIKWID_H

#include "sp_h5write.h"

/* The rank's LIKWID counters as group likwid. SP_OK, or the failure (set). */
enum sp_err sp_h5w_likwid(struct sp_h5_writer *w, hid_t rank_g, const struct sp_rank *rk);

#endif

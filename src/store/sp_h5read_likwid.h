/* sp_h5read_likwid.h - h5read_likwid.c: a rank's LIKWID counters. */
#ifndef SP_H5READ_LIKWID_H
#define SP_H5READ_LIKWID_H

#include "sp_h5read.h"

/* Reads the rank's LIKWID counters (group likwid), after its regions. */
enum sp_err sp_h5r_read_likwid(struct reader *r, hid_t rank_g, struct sp_rank *rk);

#endif

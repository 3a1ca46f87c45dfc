/* sp_h5read_lines.h - h5read_lines.c: a rank's per-line tables (--line-profile). */
#ifndef SP_H5READ_LINES_H
#define SP_H5READ_LINES_H

#include "sp_h5read.h"

/* Reads the rank's line tables (group lines) into rk->lines. */
enum sp_err sp_h5r_read_lines(struct reader *r, hid_t rank_g, struct sp_rank *rk);

#endif

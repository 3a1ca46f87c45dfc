/* sp_h5read_file.h - what h5read.c shares with the stream (h5stream.c): the
 * file's structure with each rank read by a function given, and a region
 * group of format version 1 or of the plain layout. */
#ifndef SP_H5READ_FILE_H
#define SP_H5READ_FILE_H

#include "sp_h5read.h"

/* Reads one rank group gname of file into rk. */
typedef enum sp_err (*sp_h5r_rank_fn)(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk);
/* Reads the file's structure into p: its attributes, each rank group
 * through read_one (sp_h5_read's reads a rank in full, the stream's its
 * structure), the metadata; the caller frees p on failure. */
enum sp_err sp_h5r_read_file(struct reader *r, hid_t file, struct sp_profile *p, sp_h5r_rank_fn read_one);
/* Reads region group link of regions into rd: name, summary, and the events
 * when need_events (or when the summary attributes are missing). */
enum sp_err sp_h5r_read_region(struct reader *r, hid_t regions, const char *link, int rankno,
			       int need_events, struct sp_region_data *rd);

#endif

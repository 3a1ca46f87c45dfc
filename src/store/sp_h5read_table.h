/* sp_h5read_table.h - h5read_table.c: the ranks of format version 2 (the
 * regions table, the event and value columns), for sp_h5_read and the
 * stream. */
#ifndef SP_H5READ_TABLE_H
#define SP_H5READ_TABLE_H

#include "sp_h5read.h"

/* Reads the regions table of rank group g into rk->regions (names, stats,
 * aggregates, calls lost), each row checked; *first (malloc'd, one entry
 * per region) gets each region's first call in the event columns (-1 in
 * format version 3, whose table has no first_event: its blocks say where
 * the calls are), *total the calls of them all. */
enum sp_err sp_h5r_read_table(struct reader *r, hid_t g, const char *gname, struct sp_rank *rk,
			      int64_t **first, uint64_t *total);
/* Opens rank group g's event columns into cols (start_times, end_times and
 * lanes, -1 when there is none), each of exactly total calls. deep 0: the
 * group opened again as an earlier call checked it (no file checks); 1:
 * the group's header checked; 2: the columns' storage too
 * (sp_h5r_column_open's deep). */
enum sp_err sp_h5r_events_open(struct reader *r, hid_t g, const char *gname, uint64_t total, int deep,
			       hid_t cols[3]);

/* Opens the value columns of group events of rank group g (gname) that rk's
 * regions' kinds need: vcols[kind] (-1 where none is needed; the caller
 * sets them to -1 first and closes them), each checked to hold total
 * calls; a kind whose column is missing is damage. */
enum sp_err sp_h5r_values_open(struct reader *r, hid_t g, const char *gname, const struct sp_rank *rk,
			       uint64_t total, hid_t vcols[SP_VALUE_KINDS]);
/* SP_OK when no two of rk's regions have one name, else SP_ECORRUPT
 * "<gname> has two regions named '<name>'". */
enum sp_err sp_h5r_names_unique(struct reader *r, const char *gname, const struct sp_rank *rk);
/* Allocates region rd's columns for its n calls: starts, ends, lanes when
 * lanes, values when rd->value_kind; owned by rd even on failure. */
enum sp_err sp_h5r_alloc_region(struct reader *r, const char *gname, struct sp_region_data *rd, size_t n,
				int lanes);
/* A region's n loaded values against its values_total, summed as the end
 * of a run sums them (wrapping, finalize.c); ctx names the region. */
enum sp_err sp_h5r_values_match(struct reader *r, const char *ctx, const struct sp_region_data *rd, size_t n);
/* A version 2 rank in full (sp_h5_read): attributes, table, the events
 * when r->flags asks or there is no tree, the tree, the line tables. */
enum sp_err sp_h5r_read_rank_v2(struct reader *r, hid_t file, const char *gname, struct sp_rank *rk);

#endif

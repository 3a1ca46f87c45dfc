/* sp_h5read_tree.h - h5read_tree.c: the end of a rank's read (its call
 * tree, then its line tables and LIKWID counters), for format versions 1
 * and 2. */
#ifndef SP_H5READ_TREE_H
#define SP_H5READ_TREE_H

#include "sp_h5read.h"

/* Reads rank group rank_g's call tree into rk->tree: its regions by name,
 * looked up in idx (nidx entries sorted by name: version 1), or with idx
 * NULL by index into rk->regions (version 2). */
enum sp_err sp_h5r_read_tree(struct reader *r, hid_t rank_g, const struct sp_h5r_name_ref *idx, size_t nidx,
			     struct sp_rank *rk);
/* The end of a rank's read: its tree when has_tree (sp_h5r_read_tree;
 * else tree stays NULL and the events, loaded, are what the report layer
 * builds it from), then its line tables and counters. */
enum sp_err sp_h5r_tree_and_lines(struct reader *r, hid_t g, const char *gname, int has_tree,
				  const struct sp_h5r_name_ref *idx, size_t nidx, struct sp_rank *rk);

#endif

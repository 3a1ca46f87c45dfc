/* h5read_tree.c - the end of a rank's read, in either format version: its
 * call tree as the file stores it (regions by name in version 1, by row in
 * version 2), then its line tables and LIKWID counters (h5read_lines.c,
 * h5read_likwid.c). On the primitives of h5read_util.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_h5read.h"
#include "sp_h5read_tree.h"
#include "sp_h5read_lines.h"
#include "sp_h5read_likwid.h"

/* The tree's columns as read: a node's region by name (names, looked up in
 * idx: version 1) or by row (version 2). */
struct tree_cols {
	const int32_t *parent, *row;
	const int64_t *calls, *total;
	const struct sp_h5r_strings *names;
	const struct sp_h5r_name_ref *idx;
	size_t nidx;
};

/* Checks the n nodes of c (each names a region of rk, has a parent before
 * it, no negative calls or time) into tree[n]. SP_OK or SP_ECORRUPT. */
static enum sp_err fill_nodes(struct reader *r, const char *ctx, const struct tree_cols *c, size_t n,
			      const struct sp_rank *rk, struct sp_tree_node *tree)
{
	for (size_t i = 0; i < n; i++) {
		struct sp_h5r_name_ref key = {c->idx ? sp_h5r_string(c->names, i) : NULL, 0};
		const struct sp_h5r_name_ref *hit = NULL;
		int32_t region = -1;
		if (c->idx && key.name &&
		    (hit = bsearch(&key, c->idx, c->nidx, sizeof *c->idx, sp_h5r_name_ref_cmp)))
			region = hit->idx;
		else if (!c->idx && c->row[i] >= 0 && (size_t)c->row[i] < rk->nregions)
			region = c->row[i];
		if (region < 0)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: node %zu names no region of this rank", ctx, i);
		if (c->parent[i] < -1 || (c->parent[i] >= 0 && (size_t)c->parent[i] >= i))
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: node %zu has a bad parent %d", ctx, i,
					   (int)c->parent[i]);
		if (c->calls[i] < 0 || c->total[i] < 0)
			return sp_h5r_fail(r, SP_ECORRUPT, "%s: node %zu has a negative number of calls or time",
					   ctx, i);
		tree[i] = (struct sp_tree_node){c->parent[i], region, c->calls[i], c->total[i]};
	}
	return SP_OK;
}

enum sp_err sp_h5r_read_tree(struct reader *r, hid_t rank_g, const struct sp_h5r_name_ref *idx, size_t nidx,
			     struct sp_rank *rk)
{
	int rankno = rk->rank;
	static const char *const cols[4] = {"parent", "region", "calls", "total_ns"};
	hid_t tg = -1, ds[4] = {-1, -1, -1, -1};
	hsize_t len[4];
	int32_t *parent = NULL;
	int64_t *calls = NULL, *total = NULL;
	int32_t *row = NULL;
	struct sp_h5r_strings names = {.mt = -1, .space = -1};
	size_t n = 0;
	struct sp_tree_node *tree = NULL;
	enum sp_err rc = SP_OK;
	char ctx[32];

	snprintf(ctx, sizeof ctx, "rank%d/tree", rankno);
	if ((tg = sp_h5r_open_group(r, rank_g, "tree")) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s is not a group", ctx);
	for (int i = 0; i < 4; i++)
		if ((rc = sp_h5r_column_open(r, tg, ctx, cols[i], i == 1 && idx ? H5T_STRING : H5T_INTEGER, 1,
					     &ds[i], &len[i])) != SP_OK)
			goto out;
	if (len[1] != len[0] || len[2] != len[0] || len[3] != len[0] || len[0] > INT32_MAX) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: columns of different lengths", ctx);
		goto out;
	}
	n = (size_t)len[0];
	parent = sp_h5r_alloc_n(n, sizeof *parent);
	calls = sp_h5r_alloc_n(n, sizeof *calls);
	total = sp_h5r_alloc_n(n, sizeof *total);
	tree = sp_h5r_alloc_n(n, sizeof *tree);
	if (!idx)
		row = sp_h5r_alloc_n(n, sizeof *row);
	if (!parent || !calls || !total || !tree || (!idx && !row)) {
		rc = sp_h5r_fail(r, SP_ENOMEM, "%s: out of memory for %zu nodes", ctx, n);
		goto out;
	}
	if (idx ? (rc = sp_h5r_strings_read(r, ds[1], ctx, "region", n, &names)) != SP_OK
		: n && H5Dread(ds[1], H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, row) < 0) {
		if (!idx)
			rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read the tree columns", ctx);
		goto out;
	}
	if (n && (H5Dread(ds[0], H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, parent) < 0 ||
		  H5Dread(ds[2], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, calls) < 0 ||
		  H5Dread(ds[3], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, total) < 0)) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot read the tree columns", ctx);
		goto out;
	}
	struct tree_cols c = { parent, idx ? NULL : row, calls, total, idx ? &names : NULL, idx, nidx };
	if ((rc = fill_nodes(r, ctx, &c, n, rk, tree)) != SP_OK)
		goto out;
	int64_t overlaps = 0;
	if (sp_h5r_attr_num(tg, "overlaps", H5T_NATIVE_INT64, &overlaps) < 0 || overlaps < 0) {
		rc = sp_h5r_fail(r, SP_ECORRUPT, "%s: its overlaps attribute is not a count", ctx);
		goto out;
	}
	free(rk->tree);
	rk->tree = tree;
	rk->ntree = n;
	rk->tree_overlaps = overlaps;
	tree = NULL;
out:
	sp_h5r_strings_free(&names);
	free(row);
	free(parent);
	free(calls);
	free(total);
	free(tree);
	for (int i = 0; i < 4; i++)
		sp_h5r_close(ds[i]);
	H5Gclose(tg);
	return rc;
}

enum sp_err sp_h5r_tree_and_lines(struct reader *r, hid_t g, const char *gname, int has_tree,
				  const struct sp_h5r_name_ref *idx, size_t nidx, struct sp_rank *rk)
{
	enum sp_err rc;
	int a;
	if (has_tree && (rc = sp_h5r_read_tree(r, g, idx, nidx, rk)) != SP_OK)
		return rc;
	if ((a = sp_h5r_hard_link(g, "lines")) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up the line tables", gname);
	if (a == 1 && (rc = sp_h5r_read_lines(r, g, rk)) != SP_OK)
		return rc;
	if ((a = sp_h5r_hard_link(g, "likwid")) < 0)
		return sp_h5r_fail(r, SP_ECORRUPT, "%s: cannot look up the LIKWID tables", gname);
	return a == 1 ? sp_h5r_read_likwid(r, g, rk) : SP_OK;
}

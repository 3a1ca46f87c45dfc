/* nest.c - call nesting by containment (the rule is in sp_nest.h; the
 * merge that applies it is nest_int.h's): the walk, and one rank's
 * nesting per call. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nest_int.h"

enum sp_err sp_nest_walk(const struct sp_nest_column *cols, size_t ncols, unsigned flags,
			 sp_nest_fn fn, void *ctx, struct sp_error *err)
{
	return nest_walk_inline(cols, ncols, flags, fn, ctx, err);
}

/* ---- one rank's nesting, per call ---------------------------------------- */

struct rank_nest {
	const size_t *base;            /* each region's first call in the rank's order */
	int64_t *seq;                  /* per call: its place within its lane; then its id */
	int64_t *parent;               /* per call: its parent's index in the rank's order */
	int32_t *lane;                 /* per call: its lane id, or NULL: one lane */
	int64_t *lane_count;           /* per lane index, while walking */
	int32_t *lane_id;
	size_t nlanes, lanes_cap;
	struct sp_keytab lane_ix;
};

static int rank_visit(void *ctx, const struct sp_nest_call *c, int64_t parent_tag, int64_t *tag)
{
	struct rank_nest *rn = ctx;
	size_t k = rn->base[c->region] + c->call;
	int added;
	int32_t li = sp_keytab_get(&rn->lane_ix, c->lane, 0, &added);
	if (li < 0)
		return -1;
	if (added) {
		size_t cap = rn->lanes_cap;
		if (SP_GROW(&rn->lane_count, &cap, rn->nlanes + 1) != 0 ||
		    SP_GROW(&rn->lane_id, &rn->lanes_cap, rn->nlanes + 1) != 0)
			return -1;
		rn->lane_count[rn->nlanes] = 0;
		rn->lane_id[rn->nlanes++] = c->lane;
	}
	rn->seq[k] = rn->lane_count[li]++;
	rn->parent[k] = parent_tag;
	if (rn->lane)
		rn->lane[k] = li;
	*tag = (int64_t)k;
	return 0;
}

static int lane_cmp(const void *a, const void *b, void *ctx)
{
	const int32_t *id = ctx;
	int32_t x = id[*(const int32_t *)a], y = id[*(const int32_t *)b];
	return (x > y) - (x < y);
}

enum sp_err sp_nest_rank(const struct sp_rank *rk, struct sp_nest *out, struct sp_error *err)
{
	size_t n = 0, nr = rk->nregions;
	int lanes = 0;
	for (size_t r = 0; r < nr; r++) {
		const struct sp_region_data *rd = &rk->regions[r];
		if (rd->stats.num_calls > 0 && (!rd->starts || !rd->ends))
			return sp_error_set(err, SP_EINVAL, "rank %d: region '%s': events not loaded",
					    rk->rank, rd->name);
		n += rd->stats.num_calls > 0 ? (size_t)rd->stats.num_calls : 0;
		lanes |= rd->stats.num_calls > 0 && rd->lanes;
	}
	enum sp_err rc = SP_ENOMEM;
	struct sp_nest_column *cols = malloc((nr ? nr : 1) * sizeof *cols);
	size_t *base = malloc((nr ? nr : 1) * sizeof *base);
	int32_t *order = NULL;
	int64_t *off = NULL;
	struct rank_nest rn = { .base = base };
	*out = (struct sp_nest){ 0 };
	rn.seq = malloc((n ? n : 1) * sizeof *rn.seq);
	rn.parent = malloc((n ? n : 1) * sizeof *rn.parent);
	if (lanes)
		rn.lane = malloc((n ? n : 1) * sizeof *rn.lane);
	if (!cols || !base || !rn.seq || !rn.parent || (lanes && !rn.lane))
		goto out;
	for (size_t r = 0, k = 0; r < nr; r++) {
		const struct sp_region_data *rd = &rk->regions[r];
		size_t calls = rd->stats.num_calls > 0 ? (size_t)rd->stats.num_calls : 0;
		base[r] = k;
		k += calls;
		cols[r] = (struct sp_nest_column){ rd->starts, rd->ends, rd->lanes, calls };
	}
	if ((rc = sp_nest_walk(cols, nr, 0, rank_visit, &rn, err)) != SP_OK)
		goto out;
	rc = SP_ENOMEM;
	if (lanes && rn.nlanes > 1) {
		/* Ids in lane order: each lane's calls after those of the lower
		 * lanes. */
		order = malloc(rn.nlanes * sizeof *order);
		off = malloc(rn.nlanes * sizeof *off);
		if (!order || !off)
			goto out;
		for (size_t i = 0; i < rn.nlanes; i++)
			order[i] = (int32_t)i;
		qsort_r(order, rn.nlanes, sizeof *order, lane_cmp, rn.lane_id);
		int64_t sum = 0;
		for (size_t i = 0; i < rn.nlanes; i++) {
			off[order[i]] = sum;
			sum += rn.lane_count[order[i]];
		}
		for (size_t k = 0; k < n; k++)
			rn.seq[k] += off[rn.lane[k]];
	}
	/* Parents from indices in the rank's order to ids (final by now). */
	for (size_t k = 0; k < n; k++)
		if (rn.parent[k] >= 0)
			rn.parent[k] = rn.seq[rn.parent[k]];
	out->n = n;
	out->id = rn.seq;
	out->parent = rn.parent;
	rn.seq = rn.parent = NULL;
	rc = SP_OK;
out:
	free(cols);
	free(base);
	free(order);
	free(off);
	free(rn.seq);
	free(rn.parent);
	free(rn.lane);
	free(rn.lane_count);
	free(rn.lane_id);
	sp_keytab_free(&rn.lane_ix);
	if (rc == SP_ENOMEM)
		return sp_error_set(err, rc, "rank %d: out of memory nesting %zu calls", rk->rank, n);
	return rc;
}

void sp_nest_free(struct sp_nest *nest)
{
	free(nest->id);
	free(nest->parent);
	*nest = (struct sp_nest){ 0 };
}

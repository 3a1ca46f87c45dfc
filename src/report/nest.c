/* nest.c - call nesting by containment, the one implementation (the rule is
 * in sp_nest.h).
 *
 * A region's calls are recorded in entry order, so its columns are normally
 * in the rule's order already. The calls are then visited by a k-way merge
 * of the columns (a binary heap of one cursor per column), read in place. A
 * column out of order is visited through a sorted permutation of its call
 * indices. The merge visits all lanes at once in time order, each lane with
 * its own stack of open calls: within one lane that is the rule's order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp_grow.h"
#include "sp_keytab.h"
#include "sp_nest.h"

/* A call still open, and the tag its visitor gave it. */
struct open_call {
	int64_t end;
	int64_t tag;
};

/* One lane (thread): its stack of open calls. */
struct lane {
	int32_t id;
	struct open_call *stack;
	size_t depth, cap;
};

struct walk {
	struct lane *lanes;
	size_t nlanes, lanes_cap;
	struct sp_keytab lane_ids;     /* lane id -> index in lanes */
};

/* The current call of one column during the merge. */
struct cursor {
	int64_t start, end;            /* the current call's */
	const int64_t *starts, *ends;
	const int32_t *lanes;
	size_t *perm;                  /* call indices in order, or NULL: in order as stored */
	size_t pos, n;                 /* position in the column's order, calls */
	int32_t region;
};

/* Returns the index of lane id in w->lanes, adding it if new; -1 on out of
 * memory. */
static ptrdiff_t lane_get(struct walk *w, int32_t id)
{
	int added;
	int32_t i = sp_keytab_get(&w->lane_ids, id, 0, &added);
	if (i < 0 || !added)
		return i;
	if (SP_GROW(&w->lanes, &w->lanes_cap, w->nlanes + 1) != 0)
		return -1;
	w->lanes[w->nlanes++] = (struct lane){ .id = id };
	return i;
}

/* The merge order between two columns' current calls: start ascending, the
 * longer first, then the lower region index (the calls of one column come
 * from its own cursor, in call order on ties). */
static inline int cursor_less(const struct cursor *x, const struct cursor *y)
{
	if (x->start != y->start)
		return x->start < y->start;
	if (x->end != y->end)
		return x->end > y->end;
	return x->region < y->region;
}

static inline size_t cursor_call(const struct cursor *c)
{
	return c->perm ? c->perm[c->pos] : c->pos;
}

static inline void cursor_load(struct cursor *c)
{
	size_t i = cursor_call(c);
	c->start = c->starts[i];
	c->end = c->ends[i];
}

static void sift_down(struct cursor *h, size_t n, size_t i)
{
	struct cursor x = h[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && cursor_less(&h[c + 1], &h[c]))
			c++;
		if (!cursor_less(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* Whether the calls are in the rule's order as stored. */
static int in_order(const int64_t *starts, const int64_t *ends, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (starts[i] < starts[i - 1] || (starts[i] == starts[i - 1] && ends[i] > ends[i - 1]))
			return 0;
	return 1;
}

static int call_cmp(const void *a, const void *b, void *ctx)
{
	const struct cursor *c = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	if (c->starts[i] != c->starts[j])
		return c->starts[i] < c->starts[j] ? -1 : 1;
	if (c->ends[i] != c->ends[j])
		return c->ends[i] > c->ends[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Visits every call of the heap's cursors in merge order; 0, or -1 on out
 * of memory or when the visitor stops. */
static int merge(struct walk *w, struct cursor *heap, size_t nh, sp_nest_fn fn, void *ctx)
{
	for (size_t i = nh / 2; i-- > 0;)
		sift_down(heap, nh, i);
	ptrdiff_t li = lane_get(w, 0);
	if (li < 0)
		return -1;
	uint64_t pos = 0;
	while (nh > 0) {
		struct cursor *c = &heap[0];
		size_t call = cursor_call(c);
		if (c->lanes) {
			int32_t id = c->lanes[call];
			if (id != w->lanes[li].id && (li = lane_get(w, id)) < 0)
				return -1;
		} else if (w->lanes[li].id != 0) {
			li = lane_get(w, 0);   /* present already: cannot fail */
		}
		struct lane *ln = &w->lanes[li];
		int64_t start = c->start, end = c->end;
		/* Every open call of the lane started no later than this one:
		 * close those it is not inside. */
		while (ln->depth > 0) {
			const struct open_call *top = &ln->stack[ln->depth - 1];
			if (end <= top->end && start < top->end)
				break;
			ln->depth--;
		}
		struct sp_nest_call v = { .start = start, .end = end, .region = c->region, .lane = ln->id,
					  .call = call, .pos = pos++, .depth = ln->depth };
		int64_t tag = -1;
		if (fn(ctx, &v, ln->depth > 0 ? ln->stack[ln->depth - 1].tag : -1, &tag) != 0)
			return -1;
		if (SP_GROW(&ln->stack, &ln->cap, ln->depth + 1) != 0)
			return -1;
		ln->stack[ln->depth++] = (struct open_call){ .end = end, .tag = tag };
		if (++c->pos < c->n) {
			cursor_load(c);
		} else {
			/* Done: it goes past the heap's end (its permutation is
			 * freed from there). */
			struct cursor t = heap[0];
			heap[0] = heap[--nh];
			heap[nh] = t;
		}
		if (nh > 1)
			sift_down(heap, nh, 0);
	}
	return 0;
}

enum sp_err sp_nest_walk(const struct sp_nest_column *cols, size_t ncols, unsigned flags,
			 sp_nest_fn fn, void *ctx, struct sp_error *err)
{
	if (ncols > INT32_MAX)
		return sp_error_set(err, SP_EINVAL, "too many regions (%zu)", ncols);
	size_t ncur = 0;
	for (size_t r = 0; r < ncols; r++)
		ncur += cols[r].n > 0;
	enum sp_err rc = SP_ENOMEM;
	struct walk w = { 0 };
	struct cursor *heap = calloc(ncur ? ncur : 1, sizeof *heap);
	size_t nh = 0;
	if (!heap)
		goto out;
	for (size_t r = 0; r < ncols; r++) {
		size_t calls = cols[r].n;
		if (calls == 0)
			continue;
		struct cursor *c = &heap[nh++];
		*c = (struct cursor){ .starts = cols[r].starts, .ends = cols[r].ends,
				      .lanes = cols[r].lanes, .n = calls, .region = (int32_t)r };
		if ((flags & SP_NEST_ALWAYS_SORT) || !in_order(c->starts, c->ends, calls)) {
			if (calls > SIZE_MAX / sizeof *c->perm || !(c->perm = malloc(calls * sizeof *c->perm)))
				goto out;
			for (size_t i = 0; i < calls; i++)
				c->perm[i] = i;
			qsort_r(c->perm, calls, sizeof *c->perm, call_cmp, c);
		}
		cursor_load(c);
	}
	if (merge(&w, heap, nh, fn, ctx) == 0)
		rc = SP_OK;
out:
	/* The cursors moved in the heap, but each keeps its own permutation. */
	for (size_t i = 0; heap && i < nh; i++)
		free(heap[i].perm);
	free(heap);
	for (size_t i = 0; i < w.nlanes; i++)
		free(w.lanes[i].stack);
	free(w.lanes);
	sp_keytab_free(&w.lane_ids);
	if (rc != SP_OK)
		return sp_error_set(err, rc, "out of memory nesting the calls");
	return SP_OK;
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

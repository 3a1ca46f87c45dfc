/* nest_int.h - the merge behind sp_nest_walk (report-private): nest.c's
 * sp_nest_walk, and tree.c's call tree, which includes it so that its
 * visitor is inlined into the loop over every call (the one place where
 * the nesting rule of sp_nest.h is decided is this file).
 *
 * A region's calls are recorded in entry order, so its columns are normally
 * in the rule's order already. The calls are then visited by a k-way merge
 * of the columns (a binary heap of each column's current call), read in
 * place. A column out of order is visited through a sorted permutation of
 * its call indices. The merge visits all lanes at once in time order, each
 * lane with its own stack of open calls: within one lane that is the
 * rule's order. */
#ifndef NEST_INT_H
#define NEST_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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

/* Returns the index of lane id in w->lanes, adding it if new; -1 on out of
 * memory. */
static inline ptrdiff_t lane_get(struct walk *w, int32_t id)
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

/* One column during the merge: where it is, how its calls are ordered. */
struct cursor {
	const int64_t *starts, *ends;
	const int32_t *lanes;
	size_t *perm;                  /* call indices in order, or NULL: in order as stored */
	size_t pos, n;                 /* position in the column's order, calls */
	int32_t region;
};

/* A heap entry: a column's current call. Small, so that the sift moves
 * 24 bytes a level; cursor indices follow the region order, so the cursor
 * breaks ties as the region index would. */
struct key {
	int64_t start, end;
	int32_t cur;                   /* index into the cursors */
};

/* The merge order between two columns' current calls: start ascending, the
 * longer first, then the lower region index (the calls of one column come
 * from its own cursor, in call order on ties). */
static inline int key_less(const struct key *x, const struct key *y)
{
	if (x->start != y->start)
		return x->start < y->start;
	if (x->end != y->end)
		return x->end > y->end;
	return x->cur < y->cur;
}

static inline size_t cursor_call(const struct cursor *c)
{
	return c->perm ? c->perm[c->pos] : c->pos;
}

/* The key of cursor i's current call. */
static inline struct key cursor_key(const struct cursor *c, int32_t i)
{
	size_t k = cursor_call(c);
	return (struct key){ c->starts[k], c->ends[k], i };
}

/* Puts x at place i of the heap (of n keys) and sifts it down. */
static inline void sift_from(struct key *h, size_t n, size_t i, struct key x)
{
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && key_less(&h[c + 1], &h[c]))
			c++;
		if (!key_less(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* Puts x at the top of the heap and sifts it down. */
static inline void sift_top(struct key *h, size_t n, struct key x)
{
	sift_from(h, n, 0, x);
}

static inline void sift_down(struct key *h, size_t n, size_t i)
{
	sift_from(h, n, i, h[i]);
}

/* Whether the calls are in the rule's order as stored. */
static inline int in_order(const int64_t *starts, const int64_t *ends, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (starts[i] < starts[i - 1] || (starts[i] == starts[i - 1] && ends[i] > ends[i - 1]))
			return 0;
	return 1;
}

static inline int call_cmp(const void *a, const void *b, void *ctx)
{
	const struct cursor *c = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	if (c->starts[i] != c->starts[j])
		return c->starts[i] < c->starts[j] ? -1 : 1;
	if (c->ends[i] != c->ends[j])
		return c->ends[i] > c->ends[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Pushes an open call on a lane's stack; 0, or -1 on out of memory. */
static inline int lane_push(struct lane *ln, int64_t end, int64_t tag)
{
	if (ln->depth == ln->cap && SP_GROW(&ln->stack, &ln->cap, ln->depth + 1) != 0)
		return -1;
	ln->stack[ln->depth++] = (struct open_call){ .end = end, .tag = tag };
	return 0;
}

/* Visits every call of the cursors (nh of them, in heap order in keys) in
 * merge order; 0, or -1 on out of memory or when the visitor stops. */
static inline __attribute__((always_inline)) int merge(struct walk *w, struct cursor *cur,
							    struct key *heap, size_t nh, int any_lanes,
							    sp_nest_fn fn, void *ctx)
{
	for (size_t i = nh / 2; i-- > 0;)
		sift_down(heap, nh, i);
	ptrdiff_t li = lane_get(w, 0);
	if (li < 0)
		return -1;
	struct lane *ln = &w->lanes[li];
	uint64_t pos = 0;
	while (nh > 0) {
		const struct key top = heap[0];
		struct cursor *c = &cur[top.cur];
		size_t call = cursor_call(c);
		if (any_lanes) {
			int32_t id = c->lanes ? c->lanes[call] : 0;
			if (id != w->lanes[li].id && (li = lane_get(w, id)) < 0)
				return -1;
			ln = &w->lanes[li];
		}
		/* Every open call of the lane started no later than this one:
		 * close those it is not inside. */
		while (ln->depth > 0) {
			const struct open_call *t = &ln->stack[ln->depth - 1];
			if (top.end <= t->end && top.start < t->end)
				break;
			ln->depth--;
		}
		struct sp_nest_call v = { .start = top.start, .end = top.end, .region = c->region,
					  .lane = ln->id, .call = call, .pos = pos++, .depth = ln->depth };
		int64_t tag = -1;
		if (fn(ctx, &v, ln->depth > 0 ? ln->stack[ln->depth - 1].tag : -1, &tag) != 0 ||
		    lane_push(ln, top.end, tag) != 0)
			return -1;
		if (++c->pos < c->n)
			sift_top(heap, nh, cursor_key(c, top.cur));
		else if (--nh > 0)
			sift_top(heap, nh, heap[nh]);
	}
	return 0;
}

/* sp_nest_walk, inlined where it is called: with a visitor the compiler
 * can see (tree.c's), the visit is inlined into the merge too. */
static inline __attribute__((always_inline)) enum sp_err
nest_walk_inline(const struct sp_nest_column *cols, size_t ncols, unsigned flags, sp_nest_fn fn, void *ctx,
		 struct sp_error *err)
{
	if (ncols > INT32_MAX)
		return sp_error_set(err, SP_EINVAL, "too many regions (%zu)", ncols);
	size_t ncur = 0;
	int any_lanes = 0;
	for (size_t r = 0; r < ncols; r++) {
		ncur += cols[r].n > 0;
		any_lanes |= cols[r].n > 0 && cols[r].lanes;
	}
	enum sp_err rc = SP_ENOMEM;
	struct walk w = { 0 };
	struct cursor *cur = calloc(ncur ? ncur : 1, sizeof *cur);
	struct key *heap = malloc((ncur ? ncur : 1) * sizeof *heap);
	size_t nh = 0;
	if (!cur || !heap)
		goto out;
	for (size_t r = 0; r < ncols; r++) {
		size_t calls = cols[r].n;
		if (calls == 0)
			continue;
		struct cursor *c = &cur[nh];
		*c = (struct cursor){ .starts = cols[r].starts, .ends = cols[r].ends,
				      .lanes = cols[r].lanes, .n = calls, .region = (int32_t)r };
		if ((flags & SP_NEST_ALWAYS_SORT) || !in_order(c->starts, c->ends, calls)) {
			if (calls > SIZE_MAX / sizeof *c->perm || !(c->perm = malloc(calls * sizeof *c->perm)))
				goto out;
			for (size_t i = 0; i < calls; i++)
				c->perm[i] = i;
			qsort_r(c->perm, calls, sizeof *c->perm, call_cmp, c);
		}
		heap[nh] = cursor_key(c, (int32_t)nh);
		nh++;
	}
	if (merge(&w, cur, heap, nh, any_lanes, fn, ctx) == 0)
		rc = SP_OK;
out:
	for (size_t i = 0; cur && i < nh; i++)
		free(cur[i].perm);
	free(cur);
	free(heap);
	for (size_t i = 0; i < w.nlanes; i++)
		free(w.lanes[i].stack);
	free(w.lanes);
	sp_keytab_free(&w.lane_ids);
	if (rc != SP_OK)
		return sp_error_set(err, rc, "out of memory nesting the calls");
	return SP_OK;
}

#endif

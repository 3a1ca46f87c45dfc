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
	size_t call;                   /* the current call (at pos), */
	int64_t end;                   /* and its end */
	int32_t region;
};

/* A heap entry: a column's current call, 16 bytes (moved at every level
 * of a sift). Cursor indices follow the region order, so the cursor breaks
 * ties as the region index would. */
struct key {
	int64_t start;
	int32_t cur;                   /* index into the cursors; INT32_MAX: none */
};

/* The key of an exhausted cursor, and of the heap's places past the last
 * cursor's: after every real key. */
static const struct key key_done = { INT64_MAX, INT32_MAX };

/* Reads cursor i's current call (at pos) into it; returns its key. */
static inline struct key cursor_key(struct cursor *c, int32_t i)
{
	c->call = c->perm ? c->perm[c->pos] : c->pos;
	c->end = c->ends[c->call];
	return (struct key){ c->starts[c->call], i };
}

/* The merge order between the current calls of cursors a and b (in the
 * heap: key_done, none, after every call) that start at the same time:
 * the longer first, then the lower region index (the calls of one column
 * come from its own cursor, in call order on ties). */
static int tie_less(const struct cursor *cur, int32_t a, int32_t b)
{
	if (a == key_done.cur || b == key_done.cur)
		return b == key_done.cur && a != key_done.cur;
	return cur[a].end > cur[b].end || (cur[a].end == cur[b].end && a < b);
}

/* The merge order between two cursors' current calls: start ascending,
 * then as tie_less. */
static inline int key_less(const struct cursor *cur, const struct key *x, const struct key *y)
{
	return x->start < y->start || (x->start == y->start && tie_less(cur, x->cur, y->cur));
}

/* Puts x at place i of the heap h[1..] (the children of place i are 2i and
 * 2i + 1) and sifts it down. The places past the cursors' hold key_done, so
 * that every place in use has two children. The place is kept as a byte
 * offset: its children's is twice its own. */
static inline void sift_from(struct key *h, const struct cursor *cur, size_t i, struct key x)
{
	char *base = (char *)h;
	size_t at = i * sizeof *h;
	for (;;) {
		struct key *c = (struct key *)(base + 2 * at);
		if (key_less(cur, &c[1], &c[0]))
			c++;
		if (!key_less(cur, c, &x))
			break;
		*(struct key *)(base + at) = *c;
		at = (size_t)((char *)c - base);
	}
	*(struct key *)(base + at) = x;
}

/* Whether the calls are in the rule's order as stored. */
static inline int in_order(const int64_t *starts, const int64_t *ends, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (starts[i] <= starts[i - 1] && (starts[i] < starts[i - 1] || ends[i] > ends[i - 1]))
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

/* Makes room for a call on a lane's stack above depth d; 0, or -1 on out
 * of memory. */
static inline int lane_room(struct lane *ln, size_t d)
{
	return d == ln->cap ? SP_GROW(&ln->stack, &ln->cap, d + 1) : 0;
}

/* Visits every call of the cursors (nh of them, their keys in heap[1..nh],
 * key_done after them) in merge order; 0, or -1 on out of memory or when
 * the visitor stops. */
static inline __attribute__((always_inline)) int merge(struct walk *w, struct cursor *cur,
							    struct key *heap, size_t nh, int any_lanes,
							    sp_nest_fn fn, void *ctx)
{
	for (size_t i = nh / 2; i > 0; i--)
		sift_from(heap, cur, i, heap[i]);
	ptrdiff_t li = lane_get(w, 0);
	if (li < 0)
		return -1;
	struct lane *ln = &w->lanes[li];
	uint64_t pos = 0;
	while (heap[1].cur != key_done.cur) {
		const struct key top = heap[1];
		struct cursor *c = &cur[top.cur];
		const size_t call = c->call;
		const int64_t end = c->end;
		if (any_lanes) {
			int32_t id = c->lanes ? c->lanes[call] : 0;
			if (id != w->lanes[li].id && (li = lane_get(w, id)) < 0)
				return -1;
			ln = &w->lanes[li];
		}
		/* Every open call of the lane started no later than this one:
		 * close those it is not inside. */
		size_t d = ln->depth;
		int overlapped = 0;
		while (d > 0 && !(end <= ln->stack[d - 1].end && top.start < ln->stack[d - 1].end)) {
			overlapped |= top.start < ln->stack[d - 1].end;   /* it outlives an open one */
			d--;
		}
		struct sp_nest_call v = { .start = top.start, .end = end, .region = c->region,
					  .lane = ln->id, .call = call, .pos = pos++, .depth = d,
					  .overlapped = overlapped };
		int64_t tag = -1;
		if (fn(ctx, &v, d > 0 ? ln->stack[d - 1].tag : -1, &tag) != 0 || lane_room(ln, d) != 0)
			return -1;
		ln->stack[d] = (struct open_call){ .end = end, .tag = tag };
		ln->depth = d + 1;
		sift_from(heap, cur, 1, ++c->pos < c->n ? cursor_key(c, top.cur) : key_done);
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
	/* The heap's places: 1..ncur, and key_done in the children of the
	 * last one (place 0 is unused). */
	struct key *heap = ncur < SIZE_MAX / sizeof *heap / 2 - 1 ? malloc((2 * ncur + 2) * sizeof *heap) : NULL;
	size_t nh = 0;
	if (!cur || !heap)
		goto out;
	for (size_t i = ncur + 1; i < 2 * ncur + 2; i++)
		heap[i] = key_done;
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
		heap[nh + 1] = cursor_key(c, (int32_t)nh);
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

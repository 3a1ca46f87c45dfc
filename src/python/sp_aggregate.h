/* sp_aggregate.h - aggregation mode (setup(aggregation_mode=True), run
 * --aggregate): a region keeps only its number of calls, total, minimum,
 * maximum and exclusive (self) time, in constant memory however hot it is.
 * With no events to nest by containment (the timeline mode's one rule,
 * src/report/nest.c), the call tree is the recording's: the one tree kept
 * while recording.
 *
 * Calls are nested on a stack per thread; each call also counts in a node of
 * the call tree, found through a one-entry cache in the region (the same
 * parent as last time: no lookup), so the tree is built while recording and
 * no per-call data is kept. What a region keeps (struct sp_agg) is part of
 * the region object (sp_region.h). Include <Python.h> first. */
#ifndef SP_AGGREGATE_H
#define SP_AGGREGATE_H

#include <stdint.h>

#include "sp_clock.h"
#include "sp_profile.h"
#include "sp_region.h"

/* One open `with` block. */
struct sp_agg_entry {
	RegionObject *r;
	int64_t start;
	int32_t node;                  /* its node of the call tree */
	int32_t parent;                /* the thread's current node before it */
};

/* The calling thread's open `with` blocks, innermost last, and its current
 * node (the innermost open call of either kind; -1: none). Every thread's
 * stack is registered (aggregate.c), so a reset empties them all. */
struct sp_agg_stack {
	struct sp_agg_entry *v;
	size_t depth, cap;
	int32_t cur;
};
extern _Thread_local struct sp_agg_stack sp_agg_stack;

/* A node of the call tree recorded so far. */
struct sp_agg_node {
	int32_t parent;                /* -1: a root */
	RegionObject *r;               /* borrowed: the registry keeps it */
	int64_t calls, total;
};
extern struct sp_agg_node *sp_agg_nodes;

/* The slow paths of push and pop (aggregate.c). */
int sp_agg_grow(void);
int32_t sp_agg_node_get(int32_t parent, RegionObject *r);
void sp_agg_exit_below(RegionObject *r, int64_t t);

/* Forgets the call tree and every thread's open calls (the regions'
 * aggregates are reset one by one by the caller). */
void sp_agg_reset(void);

/* Whether this session aggregated any call (its tree has a node). */
int sp_agg_recorded(void);

/* Closes the calling thread's open calls at t (finalize). */
void sp_agg_close_all(int64_t t);

/* Sums every region's calls and total over its tree nodes into its
 * sp_agg count and total (finalize, num_calls). */
void sp_agg_sum(void);

/* Fills rk->tree from the recorded nodes; region_index maps a region to its
 * index in rk->regions, -1 when it has no completed call (its node is then
 * left out and its children move up to the nearest kept ancestor). Returns
 * SP_OK or SP_ENOMEM. */
enum sp_err sp_agg_tree(struct sp_rank *rk, int32_t (*region_index)(RegionObject *r, void *ctx),
			void *ctx, struct sp_error *err);

/* The region's stats and self time from its aggregates. */
void sp_agg_stats(const struct sp_agg *a, struct sp_stats *st, int64_t *self_ns);

/* The node of r under the thread's current node: the region's one-entry
 * cache, else the table. */
static inline int32_t sp_agg_node_of(RegionObject *r, int32_t parent)
{
	return r->agg.node_parent == parent ? r->agg.node : sp_agg_node_get(parent, r);
}

/* Counts one call of r in node, from start to t. Its calls and total go to
 * the node only: a region's calls, total and self time (its nodes' totals
 * minus their children's) are summed from the tree at the end. */
static inline void sp_agg_count(RegionObject *r, int32_t node, int64_t start, int64_t t)
{
	int64_t d = t - start;
	struct sp_agg *a = &r->agg;
	struct sp_agg_node *n = &sp_agg_nodes[node];
	n->calls++;
	n->total += d;
	if (__builtin_expect(d < a->min, 0))
		a->min = d;
	if (__builtin_expect(d > a->max, 0))
		a->max = d;
	a->last = t;           /* calls end in time order */
}

/* `with region:` entry. */
static inline int sp_agg_push(RegionObject *r)
{
	struct sp_agg_stack *s = &sp_agg_stack;
	if (__builtin_expect(s->depth == s->cap, 0) && sp_agg_grow() != 0)
		return -1;
	int32_t parent = s->cur;
	int32_t node = sp_agg_node_of(r, parent);
	if (__builtin_expect(node < 0, 0))
		return -1;
	struct sp_agg_entry *e = &s->v[s->depth++];
	e->r = r;
	e->node = node;
	e->parent = parent;
	s->cur = node;
	e->start = sp_clock_ns();
	return 0;
}

/* `with region:` exit. A reset empties every thread's stack, so an entry
 * found here belongs to this session. */
static inline void sp_agg_pop(RegionObject *r)
{
	int64_t t = sp_clock_ns();
	struct sp_agg_stack *s = &sp_agg_stack;
	size_t d = s->depth;
	if (__builtin_expect(d && s->v[d - 1].r == r, 1)) {
		const struct sp_agg_entry *e = &s->v[d - 1];
		s->depth = d - 1;
		s->cur = e->parent;
		sp_agg_count(r, e->node, e->start, t);
	} else {
		sp_agg_exit_below(r, t);
	}
}

#endif

/* sp_aggregate.h - the call trees kept while recording: aggregation mode
 * (setup(aggregation_mode=True), run --aggregate), where a region keeps only
 * its number of calls, total, minimum, maximum and exclusive (self) time, in
 * constant memory however hot it is; and the timeline mode's live tree
 * (below), which spares the end of the run rebuilding the tree.
 *
 * Calls are nested on a stack per thread; each call also counts in a node of
 * the call tree, found through a one-entry cache in the region (the same
 * parent as last time: no lookup), so the tree is built while recording and
 * no per-call data is kept. Include <Python.h> and sp_pyregion.h first. */
#ifndef SP_AGGREGATE_H
#define SP_AGGREGATE_H

#include <stdint.h>

#include "sp_clock.h"
#include "sp_profile.h"

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
	int32_t parent;                /* -1: a root (the live tree: -2 - lane with lanes) */
	int32_t lane;                  /* the live tree with lanes: its lane; else 0 */
	RegionObject *r;               /* borrowed: the registry keeps it */
	int64_t calls, total;
	RegionObject *last_r;          /* the live tree: the region of the last child looked */
	int32_t last_child;            /* up under it, and that child (a second cache) */
};
extern struct sp_agg_node *sp_agg_nodes;

/* The slow paths of push and pop (aggregate.c). */
int sp_agg_grow(void);
int32_t sp_agg_node_get(int32_t parent, RegionObject *r);
void sp_agg_exit_below(RegionObject *r, int64_t t);

/* Empties a region's aggregates (at creation and at each session's reset). */
void sp_agg_region_init(struct sp_agg *a);

/* Forgets the call tree and every thread's open calls (the regions'
 * aggregates are reset one by one by the caller). */
void sp_agg_reset(void);

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

/* ---- The timeline mode's call tree, known while recording -------------
 *
 * In the default mode (events kept) each call is also counted in a node of
 * a call tree the recorder keeps as it goes, so that the end of the run
 * need not rebuild the tree from the timestamps (sp_tree_build, ~200
 * instructions per event). A call's node is (its thread's current node,
 * its region), found through a one-entry cache in the region as in
 * aggregation mode (the node table is the same code: aggregate.c); a node
 * is allocated only when it appears. With lanes (--track-threads) each
 * lane has roots of its own (parent -2 - lane), so the lanes' trees are
 * merged at the end in the order sp_tree_build numbers them.
 *
 * The recorded nesting is the stack's; sp_tree_build's is containment of
 * the timestamps. They agree when every lane's calls come from one thread,
 * nest as a stack (each exit is the innermost open call's) and no two of
 * the thread's timestamps that containment compares are equal (a
 * zero-length call, or a parent and child with the same start and end,
 * are ordered by region index there). Whatever the recorder cannot vouch
 * for marks the tree unknown, and the end of the run rebuilds it by
 * containment (sp_live_tree says which): see sp_live.unknown. */

/* The calling thread's place in the tree. */
struct sp_live_thread {
	int32_t cur;                   /* current node; -1 or -2 - lane: none (a root is next) */
	uint32_t gen;                  /* sp_live.gen when cur was set */
	uint32_t reset;                /* sp_live.reset when the thread was counted */
};
extern _Thread_local struct sp_live_thread sp_live_me;

extern struct sp_live {
	struct sp_agg_node *nodes;     /* parents first, in order of first call; [-1]: see aggregate.c */
	int64_t last;                  /* the latest start (or close) counted */
	uint32_t gen;                  /* moves on when every thread starts again at a root */
	uint32_t reset;                /* moves on when the tree is emptied */
	int unknown;                   /* the tree may differ from containment's */
	int lanes;                     /* roots per lane (--track-threads) */
	int auto_lanes;                /* lanes go on when a thread other than lane 0's
					* records (lanes.c: sp_lanes_auto_on) */
	int async_mode;                /* --track-async now; async_seen: since the reset */
	int async_seen;
	int32_t threads;               /* threads that recorded (without lanes, 1 at most) */
} sp_live;

/* Allocates the node table's first block (module init); -1 when out of
 * memory. */
int sp_live_init(void);

/* Empties a region's caches of the live tree (at creation and at each
 * session's reset). */
static inline void sp_live_region_init(RegionObject *r)
{
	r->live_parent = INT32_MIN;
	r->live_node = -1;
}

/* The slow paths (aggregate.c). sp_live_thread_start returns 1 when it
 * turned the lanes on instead (sp_live.auto_lanes, a thread other than lane
 * 0's): the caller records this call as the lanes mode does, from its start
 * (the thread's start is then done there). */
int sp_live_thread_start(struct sp_live_thread *m);
int32_t sp_live_node_get(int32_t parent, RegionObject *r);
void sp_live_odd(int32_t node, int64_t start, int64_t t);

/* First on a recording path, before its event slot is reserved (the slow
 * path may run Python code, which may let another thread run): the calling
 * thread's place in the tree is current. Returns 1 when the lanes were
 * turned on just now (sp_live_thread_start): a path without lanes then
 * records the call with them. */
static inline int sp_live_check(void)
{
	struct sp_live_thread *m = &sp_live_me;
	if (__builtin_expect(m->gen != sp_live.gen, 0))
		return sp_live_thread_start(m);
	return 0;
}

/* A call of r starts in the calling thread (before its start is read;
 * after sp_live_check, with no Python code run in between): its node, now
 * the thread's current one; -1 when out of memory (a node of no region,
 * sp_live.nodes[-1]; the tree is then unknown). Then sp_live_started(its
 * start). */
static inline int32_t sp_live_enter(RegionObject *r)
{
	struct sp_live_thread *m = &sp_live_me;
	int32_t parent = m->cur;
	int32_t node = r->live_parent == parent ? r->live_node : sp_live_node_get(parent, r);
	m->cur = node;
	return node;
}

/* A call's start t, after sp_live_enter: not after the latest start, it
 * may be its parent's, and a parent and child with the same start and end
 * are ordered by region index by containment: the tree is then unknown.
 * (Starts are taken holding the GIL, so in time order; zero-length calls,
 * the other ties containment orders otherwise, are found at the end by
 * their region's minimum.) */
static inline void sp_live_started(int64_t t)
{
	if (__builtin_expect(t <= sp_live.last, 0))
		sp_live.unknown = 1;
	sp_live.last = t;
}

/* The call of node that started at `start` ends at t: counted, and the
 * thread's current node is its parent again. An exit that is not the
 * innermost open call's makes the tree unknown. */
static inline void sp_live_leave(int32_t node, int64_t start, int64_t t)
{
	struct sp_live_thread *m = &sp_live_me;
	if (__builtin_expect(m->cur != node, 0)) {
		sp_live_odd(node, start, t);
		return;
	}
	struct sp_agg_node *n = &sp_live.nodes[node];
	m->cur = n->parent;
	n->calls++;
	/* Two adds to memory: not packed into a vector (six instructions more). */
	__asm__("" : "+m"(n->calls));
	n->total += t - start;
}

/* A call still open at `now` ends there (the hook stops): counted in its
 * node. below_start: the start of the open call under it on the same
 * stack (INT64_MIN: none); own: the calling thread's call (its current
 * node goes back to the parent). */
void sp_live_close(int32_t node, int64_t start, int64_t below_start, int64_t now, int own);
/* After the calls of a stack are closed at now. */
void sp_live_closed(int64_t now);

/* The recording mode, at every setup (sp_tracer_set_mode). */
void sp_live_mode(int lanes, int async_mode);

/* Every thread starts again at a root from its next call (the hook stopped
 * everywhere). */
void sp_live_restart(void);

/* Fills rk->tree from the recorded tree when it is containment's: every
 * region of rk is a live region whose `index` field is its place in
 * rk->regions (-1 for the others), with its statistics computed. Returns
 * 1 when done, 0 when the caller must rebuild it by containment (the
 * reasons are a comment in aggregate.c), -1 when out of memory (err set). */
int sp_live_tree(struct sp_rank *rk, struct sp_error *err);

#endif

/* aggregate.c - aggregation mode's slow paths and its call tree (see
 * sp_aggregate.h). Every function runs with the GIL held. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sp_pyregion.h"
#include "sp_aggregate.h"
#include "sp_grow.h"
#include "sp_keytab.h"

_Thread_local struct sp_agg_stack sp_agg_stack;
struct sp_agg_node *sp_agg_nodes;

/* The module's state: the call tree's nodes (sp_agg_nodes, exported for
 * the hot path), and every thread's stack, so that a reset empties them
 * all; a thread's entry goes (and its stack is freed) when the thread ends,
 * possibly without the GIL: hence the lock. */
static struct {
	size_t nnodes, nodes_cap;
	struct sp_keytab node_ids;     /* (parent, region) -> node */
	pthread_mutex_t stacks_lock;
	struct sp_agg_stack **stacks;
	size_t nstacks, stacks_cap;
	pthread_key_t stack_key;
	pthread_once_t stack_key_once;
} agg = { .stacks_lock = PTHREAD_MUTEX_INITIALIZER, .stack_key_once = PTHREAD_ONCE_INIT };

void sp_agg_region_init(struct sp_agg *a)
{
	memset(a, 0, sizeof *a);
	a->min = INT64_MAX;
	a->max = INT64_MIN;
	a->first = INT64_MAX;
	a->last = INT64_MIN;
	a->node_parent = -2;
	a->node = -1;
}


static void stack_gone(void *v)
{
	pthread_mutex_lock(&agg.stacks_lock);
	for (size_t i = 0; i < agg.nstacks; i++)
		if (agg.stacks[i]->v == v) {
			agg.stacks[i] = agg.stacks[--agg.nstacks];
			break;
		}
	pthread_mutex_unlock(&agg.stacks_lock);
	free(v);
}

static void stack_key_create(void)
{
	pthread_key_create(&agg.stack_key, stack_gone);
}

/* Registers the calling thread's stack; -1 when out of memory. */
static int stack_register(struct sp_agg_stack *s)
{
	int rc = 0;
	pthread_mutex_lock(&agg.stacks_lock);
	if (SP_GROW(&agg.stacks, &agg.stacks_cap, agg.nstacks + 1) != 0)
		rc = -1;
	else
		agg.stacks[agg.nstacks++] = s;
	pthread_mutex_unlock(&agg.stacks_lock);
	return rc;
}

int sp_agg_grow(void)
{
	struct sp_agg_stack *s = &sp_agg_stack;
	pthread_once(&agg.stack_key_once, stack_key_create);
	if (s->cap == 0) {
		if (stack_register(s) != 0) {
			PyErr_NoMemory();
			return -1;
		}
		s->cur = -1;
	}
	size_t cap = s->cap;
	struct sp_agg_entry *v = sp_grow(s->v, &cap, s->cap + 1, sizeof *v);
	if (!v) {
		PyErr_NoMemory();
		return -1;
	}
	if (v != s->v)
		pthread_setspecific(agg.stack_key, v);
	s->v = v;
	s->cap = cap;
	return 0;
}

/* The one node table of both trees (aggregation mode's and the live one):
 * the id of node (parent, r) in ids, added to *nodes (lane: its lane) when
 * new (*added set), node id at (*nodes)[skip + id]. -1 when out of memory
 * (nothing added). */
static int32_t node_find(struct sp_agg_node **nodes, size_t skip, size_t *n, size_t *cap,
			 struct sp_keytab *ids, int32_t parent, int32_t lane, RegionObject *r, int *added)
{
	/* Room for a new node first: ids and nodes must stay in step. */
	if (SP_GROW(nodes, cap, skip + *n + 1) != 0)
		return -1;
	int32_t id = sp_keytab_get(ids, parent, (uint64_t)(uintptr_t)r, added);
	if (id >= 0 && *added)
		(*nodes)[skip + (*n)++] = (struct sp_agg_node){.parent = parent, .lane = lane, .r = r};
	return id;
}

int32_t sp_agg_node_get(int32_t parent, RegionObject *r)
{
	int added;
	int32_t id = node_find(&sp_agg_nodes, 0, &agg.nnodes, &agg.nodes_cap, &agg.node_ids, parent, 0, r,
			       &added);
	if (id < 0) {
		PyErr_NoMemory();
		return -1;
	}
	/* The region's first call starts now (calls start in time order). */
	if (added && r->agg.first == INT64_MAX)
		r->agg.first = sp_clock_ns();
	r->agg.node_parent = parent;
	r->agg.node = id;
	return id;
}

/* An exit whose entry is not the innermost (a generator left a block, or
 * the block was entered before the session was reset): close the innermost
 * entry of r; the time counts in the entry below it. */
void sp_agg_exit_below(RegionObject *r, int64_t t)
{
	struct sp_agg_stack *s = &sp_agg_stack;
	for (size_t k = s->depth; k-- > 0;) {
		if (s->v[k].r != r)
			continue;
		struct sp_agg_entry e = s->v[k];
		/* The block above it now nests in what e nested in. */
		if (k + 1 < s->depth)
			s->v[k + 1].parent = e.parent;
		memmove(&s->v[k], &s->v[k + 1], (s->depth - k - 1) * sizeof s->v[0]);
		s->depth--;
		sp_agg_count(r, e.node, e.start, t);
		return;
	}
}

static void live_reset(void);

void sp_agg_reset(void)
{
	live_reset();
	agg.nnodes = 0;
	sp_keytab_clear(&agg.node_ids);
	pthread_mutex_lock(&agg.stacks_lock);
	for (size_t i = 0; i < agg.nstacks; i++) {
		agg.stacks[i]->depth = 0;
		agg.stacks[i]->cur = -1;
	}
	pthread_mutex_unlock(&agg.stacks_lock);
}

void sp_agg_close_all(int64_t t)
{
	struct sp_agg_stack *s = &sp_agg_stack;
	while (s->depth > 0) {
		const struct sp_agg_entry *e = &s->v[--s->depth];
		s->cur = e->parent;
		sp_agg_count(e->r, e->node, e->start, t);
	}
}

void sp_agg_sum(void)
{
	for (size_t i = 0; i < agg.nnodes; i++) {
		struct sp_agg *a = &sp_agg_nodes[i].r->agg;
		a->count = a->total = a->self = 0;
	}
	for (size_t i = 0; i < agg.nnodes; i++) {
		const struct sp_agg_node *n = &sp_agg_nodes[i];
		struct sp_agg *a = &n->r->agg;
		a->count += n->calls;
		a->total += n->total;
		a->self += n->total;
		/* A call's time in a region inside it is not its own. */
		if (n->parent >= 0)
			sp_agg_nodes[n->parent].r->agg.self -= n->total;
	}
}

void sp_agg_stats(const struct sp_agg *a, struct sp_stats *st, int64_t *self_ns)
{
	memset(st, 0, sizeof *st);
	st->first_start_ns = SP_NO_TIME;
	st->last_end_ns = SP_NO_TIME;
	*self_ns = 0;
	if (a->count <= 0)
		return;
	st->num_calls = a->count;
	st->total_ns = a->total;
	st->min_ns = a->min;
	st->max_ns = a->max;
	st->mean_ns = (double)a->total / (double)a->count;
	st->std_ns = NAN;              /* not kept: a square per call */
	st->first_start_ns = a->first;
	st->last_end_ns = a->last;
	*self_ns = a->self;
}

enum sp_err sp_agg_tree(struct sp_rank *rk, int32_t (*region_index)(RegionObject *r, void *ctx),
			void *ctx, struct sp_error *err)
{
	int32_t *map = malloc((agg.nnodes ? agg.nnodes : 1) * sizeof *map);
	struct sp_tree_node *out = malloc((agg.nnodes ? agg.nnodes : 1) * sizeof *out);
	if (!map || !out) {
		free(map);
		free(out);
		return sp_error_set(err, SP_ENOMEM, "out of memory for the call tree (%zu nodes)", agg.nnodes);
	}
	size_t n = 0;
	int collapsed = 0;
	/* Nodes are stored parents first. A node without a completed call (or
	 * whose region has none) is left out: map sends it to its parent's
	 * output node, so its children move up. */
	for (size_t i = 0; i < agg.nnodes; i++) {
		const struct sp_agg_node *nd = &sp_agg_nodes[i];
		int32_t parent = nd->parent >= 0 ? map[nd->parent] : -1;
		int32_t region = nd->calls > 0 ? region_index(nd->r, ctx) : -1;
		if (region < 0) {
			map[i] = parent;
			collapsed = 1;
			continue;
		}
		int32_t found = -1;
		if (collapsed)   /* a moved child may meet a sibling of its name */
			for (size_t j = 0; j < n && found < 0; j++)
				if (out[j].parent == parent && out[j].region == region)
					found = (int32_t)j;
		if (found >= 0) {
			out[found].calls += nd->calls;
			out[found].total_ns += nd->total;
			map[i] = found;
			continue;
		}
		out[n] = (struct sp_tree_node){parent, region, nd->calls, nd->total};
		map[i] = (int32_t)n++;
	}
	free(map);
	free(rk->tree);
	rk->tree = out;
	rk->ntree = n;
	return SP_OK;
}

/* ---- the live call tree of the timeline mode (sp_aggregate.h) ---------- */

_Thread_local struct sp_live_thread sp_live_me;
struct sp_live sp_live = { .last = INT64_MIN, .gen = 1, .reset = 1 };

/* Its node table: base[0] is a node of no region that a call goes to when
 * memory runs out (node -1, so the hot paths need no check: the tree is
 * then unknown), node id is base[1 + id] = sp_live.nodes[id]. */
static struct {
	struct sp_agg_node *base;
	size_t n, cap;
	struct sp_keytab ids;          /* (parent, region) -> node */
} live;

int sp_live_init(void)
{
	if (live.base)
		return 0;
	if (SP_GROW(&live.base, &live.cap, 16) != 0)
		return -1;
	live.base[0] = (struct sp_agg_node){ .parent = -1 };
	sp_live.nodes = live.base + 1;
	return 0;
}

static void live_reset(void)
{
	live.n = 0;
	sp_keytab_clear(&live.ids);
	sp_live.unknown = 0;
	sp_live.threads = 0;
	sp_live.reset++;
	sp_live.gen++;
	sp_live.async_seen = sp_live.async_mode;
}

int sp_live_thread_start(struct sp_live_thread *m)
{
	/* Until now only lane 0's thread recorded (the thread that imported
	 * the module: the main thread under `run`); another one: lanes on. */
	if (!sp_live.lanes && sp_live.auto_lanes && sp_my_lane != 0 && sp_lanes_auto_on() == 0)
		return 1;
	m->gen = sp_live.gen;
	m->cur = sp_live.lanes ? -2 - sp_current_lane() : -1;
	if (m->reset != sp_live.reset) {
		m->reset = sp_live.reset;
		/* Without lanes, the calls of every thread are in lane 0, where
		 * containment may nest one thread's call in another's: the stacks
		 * cannot say that. */
		if (!sp_live.lanes && sp_live.threads++ > 0)
			sp_live.unknown = 1;
	}
	return 0;
}

int32_t sp_live_node_get(int32_t parent, RegionObject *r)
{
	int32_t id;
	if (parent >= 0 && sp_live.nodes[parent].last_r == r) {
		/* The region's cache missed (it was last called under another
		 * parent), the parent's did not (a parent calling it again after
		 * a call of the region under another parent). */
		id = sp_live.nodes[parent].last_child;
	} else {
		int32_t lane = parent >= 0 ? sp_live.nodes[parent].lane : parent == -1 ? 0 : -2 - parent;
		int added;
		id = node_find(&live.base, 1, &live.n, &live.cap, &live.ids, parent, lane, r, &added);
		sp_live.nodes = live.base + 1;
		if (id < 0) {
			sp_live.unknown = 1;   /* the call is in no node; the hook raises nothing */
			return -1;
		}
		if (parent >= 0) {
			sp_live.nodes[parent].last_r = r;
			sp_live.nodes[parent].last_child = id;
		}
	}
	r->live_parent = parent;
	r->live_node = id;
	return id;
}

void sp_live_odd(int32_t node, int64_t start, int64_t t)
{
	sp_live.unknown = 1;
	struct sp_agg_node *n = &sp_live.nodes[node];
	n->calls++;
	n->total += t - start;
	sp_live_me.cur = n->parent;
}

void sp_live_close(int32_t node, int64_t start, int64_t below_start, int64_t now, int own)
{
	/* The calls closed together all end at now: containment orders them
	 * by their starts, which must then differ (as sp_live_started saw). */
	if (node < 0 || now <= start || start <= below_start || (own && sp_live_me.cur != node))
		sp_live.unknown = 1;
	struct sp_agg_node *n = &sp_live.nodes[node];
	n->calls++;
	n->total += now - start;
	if (own)
		sp_live_me.cur = n->parent;
}

void sp_live_closed(int64_t now)
{
	if (now > sp_live.last)
		sp_live.last = now;
}

void sp_live_mode(int lanes, int async_mode)
{
	if (lanes != sp_live.lanes) {
		/* Calls recorded already have their roots in the old mode's. */
		if (live.n)
			sp_live.unknown = 1;
		sp_live.lanes = lanes;
		sp_live.gen++;
	}
	sp_live.async_mode = async_mode;
	sp_live.async_seen |= async_mode;
}

void sp_live_restart(void)
{
	sp_live.gen++;
}

int sp_live_tree(struct sp_rank *rk, struct sp_error *err)
{
	/* Rebuilt by containment instead: when the recorder saw what it cannot
	 * vouch for (sp_live.unknown: a `with` block or call exited while
	 * another was open above it, threads sharing lane 0, two timestamps
	 * that containment would have to order by region index, a call left
	 * open at the end outside the hook, a tree node memory could not hold,
	 * a coroutine timed across its awaits); with --track-async, whose
	 * lanes are tasks that interleave on one thread's stack; and when calls
	 * were dropped (the tree would count calls the file does not have). */
	if (sp_live.unknown || sp_live.async_seen || rk->dropped)
		return 0;
	size_t n = live.n, nr = rk->nregions;
	int32_t maxlane = 0;
	int rc = -1;
	int64_t *calls = calloc(nr ? nr : 1, sizeof *calls), *total = calloc(nr ? nr : 1, sizeof *total);
	if (!calls || !total)
		goto sums;
	rc = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sp_agg_node *nd = &sp_live.nodes[i];
		/* Every node had a call, and in a region of the rank. */
		if (nd->calls <= 0 || nd->r->index < 0 || (size_t)nd->r->index >= nr)
			goto sums;
		calls[nd->r->index] += nd->calls;
		total[nd->r->index] += nd->total;
		if (nd->lane > maxlane)
			maxlane = nd->lane;
	}
	/* Each region's calls and time are its nodes': the tree and the
	 * events describe the same calls. And none lasts zero ns (a tie that
	 * containment breaks by region index). */
	for (size_t r = 0; r < nr; r++) {
		const struct sp_stats *st = &rk->regions[r].stats;
		if (calls[r] != st->num_calls || total[r] != st->total_ns || (st->num_calls && st->min_ns <= 0))
			goto sums;
	}
	rc = 1;
sums:
	free(calls);
	free(total);
	if (rc <= 0) {
		if (rc < 0)
			sp_error_set(err, SP_ENOMEM, "rank %d: out of memory for the call tree", rk->rank);
		return rc;
	}

	/* sp_tree_build numbers the nodes as a sweep of the lanes one by one
	 * would create them; within a lane, live nodes are in the order of
	 * their first call. One lane: the live tree as it is. */
	struct sp_tree_node *out;
	if (maxlane == 0) {
		if (!(out = malloc((n ? n : 1) * sizeof *out))) {
			sp_error_set(err, SP_ENOMEM, "rank %d: out of memory for the call tree", rk->rank);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			const struct sp_agg_node *nd = &sp_live.nodes[i];
			out[i] = (struct sp_tree_node){ nd->parent >= 0 ? nd->parent : -1, nd->r->index,
							nd->calls, nd->total };
		}
		free(rk->tree);
		rk->tree = out;
		rk->ntree = n;
		return 1;
	}
	/* Else the lanes' trees are merged lane by lane, each in its own
	 * order, roots shared. */
	size_t *at = calloc((size_t)maxlane + 2, sizeof *at);
	int32_t *order = malloc((n ? n : 1) * sizeof *order), *map = malloc((n ? n : 1) * sizeof *map);
	out = malloc((n ? n : 1) * sizeof *out);
	struct sp_keytab ids = {0};
	rc = -1;
	if (!at || !order || !map || !out)
		goto out;
	for (size_t i = 0; i < n; i++)
		at[sp_live.nodes[i].lane + 1]++;
	for (int32_t l = 0; l <= maxlane; l++)
		at[l + 1] += at[l];
	for (size_t i = 0; i < n; i++)
		order[at[sp_live.nodes[i].lane]++] = (int32_t)i;
	for (size_t k = 0; k < n; k++) {
		const struct sp_agg_node *nd = &sp_live.nodes[order[k]];
		int32_t parent = nd->parent >= 0 ? map[nd->parent] : -1;
		int added;
		int32_t id = sp_keytab_get(&ids, parent, (uint64_t)nd->r->index, &added);
		if (id < 0)
			goto out;
		if (added)
			out[id] = (struct sp_tree_node){ parent, nd->r->index, 0, 0 };
		out[id].calls += nd->calls;
		out[id].total_ns = sp_add_sat(out[id].total_ns, nd->total);
		map[order[k]] = id;
	}
	free(rk->tree);
	rk->tree = out;
	rk->ntree = ids.n;
	out = NULL;
	rc = 1;
out:
	free(at);
	free(order);
	free(map);
	free(out);
	sp_keytab_free(&ids);
	if (rc < 0)
		sp_error_set(err, SP_ENOMEM, "rank %d: out of memory for the call tree (%zu nodes)", rk->rank, n);
	return rc;
}

/* aggregate.c - aggregation mode's slow paths and its call tree (see
 * sp_aggregate.h). Every function runs with the GIL held. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sp_aggregate.h"
#include "sp_grow.h"
#include "sp_keytab.h"
#include "sp_region.h"

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

int32_t sp_agg_node_get(int32_t parent, RegionObject *r)
{
	int added;
	/* Room for a new node first: ids and nodes must stay in step. */
	int32_t id = SP_GROW(&sp_agg_nodes, &agg.nodes_cap, agg.nnodes + 1) != 0 ? -1
		: sp_keytab_get(&agg.node_ids, parent, (uint64_t)(uintptr_t)r, &added);
	if (id < 0) {
		PyErr_NoMemory();
		return -1;
	}
	if (added) {
		sp_agg_nodes[agg.nnodes++] = (struct sp_agg_node){.parent = parent, .r = r};
		/* The region's first call starts now (calls start in time order). */
		if (r->agg.first == INT64_MAX)
			r->agg.first = sp_clock_ns();
	}
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
	static int said;
	for (size_t k = s->depth; k-- > 0;) {
		if (s->v[k].r != r)
			continue;
		if (!said) {
			/* Generators (or asyncio tasks) interleaving in one
			 * thread: their calls share its stack. Once a process. */
			said = 1;
			PySys_WriteStderr("scope-profiler: warning: calls in one thread ended out of their "
					  "nesting order (generators or asyncio tasks interleaving): aggregation "
					  "mode nests them on one stack per thread, so its tree and totals do not "
					  "keep them apart (record events, without --aggregate / aggregation_mode, "
					  "to keep them apart)\n");
		}
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

void sp_agg_reset(void)
{
	agg.nnodes = 0;
	sp_keytab_clear(&agg.node_ids);
	pthread_mutex_lock(&agg.stacks_lock);
	for (size_t i = 0; i < agg.nstacks; i++) {
		agg.stacks[i]->depth = 0;
		agg.stacks[i]->cur = -1;
	}
	pthread_mutex_unlock(&agg.stacks_lock);
}

int sp_agg_recorded(void)
{
	return agg.nnodes > 0;
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

/* tree.c - one rank's call tree, reconstructed from its events by containment.
 *
 * The events are visited lane by lane (threads nest only within their lane),
 * each lane's in one order: start ascending; on a tie the longer event first
 * (it is the parent), then the lower region index, then the earlier call. A
 * sweep keeps a stack of the open events and counts each event in the node
 * (parent, region) under the innermost open event that contains it.
 *
 * A region's calls are recorded in entry order, so its columns are normally
 * in that order already. The events are then visited by a k-way merge of the
 * regions' columns (a binary heap of one cursor per region), read in place:
 * memory in O(regions + nodes + lanes + nesting depth), none per event. A
 * region whose columns are not in order is visited through a sorted
 * permutation of its call indices (one size_t per call of that region only).
 *
 * The merge visits all lanes at once in time order, each lane with its own
 * stack: within one lane that is the same order as a lane-by-lane sweep, so
 * every event lands in the same node. Node numbering is the lane-by-lane
 * sweep's creation order (parents first, siblings by first start): with
 * lanes the nodes are renumbered at the end by their first event in that
 * order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp_grow.h"
#include "sp_keytab.h"
#include "sp_profile.h"

/* An event still open during the sweep, and the node it was counted in. */
struct open_event {
	int64_t end;
	int32_t node;
};

/* One lane (thread): its stack of open events. */
struct lane {
	int32_t id;
	struct open_event *stack;
	size_t depth, cap;
};

/* With lanes: where a node's first event falls in the lane-by-lane order,
 * which is (lane, position in the merge). */
struct first_seen {
	int32_t lane;
	uint64_t pos;
};

struct builder {
	struct sp_tree_node *nodes;
	size_t nnodes, nodes_cap;
	struct first_seen *first;      /* nodes_cap entries when tracking lanes, else NULL */
	size_t first_cap;
	struct sp_keytab node_ids;     /* (parent, region) -> node */
	struct lane *lanes;
	size_t nlanes, lanes_cap;
	struct sp_keytab lane_ids;     /* lane id -> index in lanes */
};

/* The current call of one region during the merge. */
struct cursor {
	int64_t start, end;            /* the current call's */
	const int64_t *starts, *ends;
	const int32_t *lanes;          /* NULL: every call in lane 0 */
	size_t *perm;                  /* call indices in order, or NULL: in order as stored */
	size_t pos, n;                 /* position in the region's order, calls */
	int32_t region;
};

/* Returns the node of region under parent, adding it if new; -1 on out of
 * memory or when the node count would not fit an int32_t. */
static int32_t node_get(struct builder *b, int32_t parent, int32_t region)
{
	int added;
	int32_t id = sp_keytab_get(&b->node_ids, parent, (uint32_t)region, &added);
	if (id < 0 || !added)
		return id;
	struct sp_tree_node *nodes = sp_grow(b->nodes, &b->nodes_cap, b->nnodes + 1, sizeof *nodes);
	struct first_seen *first = nodes && b->first
		? sp_grow(b->first, &b->first_cap, b->nnodes + 1, sizeof *first) : NULL;
	if (nodes)
		b->nodes = nodes;
	if (first)
		b->first = first;
	if (!nodes || (b->first && !first)) {
		/* The id is taken but has no node: the build fails anyway. */
		return -1;
	}
	b->nodes[b->nnodes++] = (struct sp_tree_node){ .parent = parent, .region = region };
	return id;
}

/* Returns the index of lane id in b->lanes, adding it if new; -1 on out of
 * memory. */
static ptrdiff_t lane_get(struct builder *b, int32_t id)
{
	int added;
	int32_t i = sp_keytab_get(&b->lane_ids, id, 0, &added);
	if (i < 0 || !added)
		return i;
	struct lane *lanes = sp_grow(b->lanes, &b->lanes_cap, b->nlanes + 1, sizeof *lanes);
	if (!lanes)
		return -1;
	b->lanes = lanes;
	lanes[b->nlanes++] = (struct lane){ .id = id };
	return i;
}

/* Adds b to a, saturating instead of overflowing on absurd timestamps. */
static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t duration(int64_t start, int64_t end)
{
	int64_t d;
	if (__builtin_sub_overflow(end, start, &d))
		return end > start ? INT64_MAX : INT64_MIN;
	return d;
}

/* Counts one event in its lane, the pos-th of the merge; returns 0, or -1 on
 * out of memory. */
static int visit(struct builder *b, struct lane *ln, int64_t start, int64_t end, int32_t region,
		 uint64_t pos)
{
	/* In order of start, so every open event of the lane started no later
	 * than this one: pop those that end before it does or that it merely
	 * overlaps. */
	while (ln->depth > 0) {
		const struct open_event *top = &ln->stack[ln->depth - 1];
		if (end <= top->end && start < top->end)
			break;
		ln->depth--;
	}
	int32_t parent = ln->depth > 0 ? ln->stack[ln->depth - 1].node : -1;
	size_t before = b->nnodes;
	int32_t id = node_get(b, parent, region);
	if (id < 0)
		return -1;
	if (b->first && ((size_t)id >= before || ln->id < b->first[id].lane))
		b->first[id] = (struct first_seen){ ln->id, pos };
	b->nodes[id].calls++;
	b->nodes[id].total_ns = add_sat(b->nodes[id].total_ns, duration(start, end));
	struct open_event *stack = sp_grow(ln->stack, &ln->cap, ln->depth + 1, sizeof *stack);
	if (!stack)
		return -1;
	ln->stack = stack;
	stack[ln->depth++] = (struct open_event){ .end = end, .node = id };
	return 0;
}

/* The merge order between two regions' current calls: start ascending, the
 * longer first, then the lower region index (the calls of one region come
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

/* Whether the calls are in visiting order as stored. */
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

/* Visits every event of the heap's cursors in merge order; 0, or -1 on out
 * of memory. */
static int merge(struct builder *b, struct cursor *heap, size_t nh)
{
	for (size_t i = nh / 2; i-- > 0;)
		sift_down(heap, nh, i);
	ptrdiff_t li = lane_get(b, 0);
	if (li < 0)
		return -1;
	uint64_t pos = 0;
	while (nh > 0) {
		struct cursor *c = &heap[0];
		if (c->lanes) {
			int32_t lane = c->lanes[cursor_call(c)];
			if (lane != b->lanes[li].id && (li = lane_get(b, lane)) < 0)
				return -1;
		} else if (b->lanes[li].id != 0) {
			li = lane_get(b, 0);   /* present already: cannot fail */
		}
		if (visit(b, &b->lanes[li], c->start, c->end, c->region, pos++) != 0)
			return -1;
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

static int first_less(const struct first_seen *x, const struct first_seen *y)
{
	return x->lane != y->lane ? x->lane < y->lane : x->pos < y->pos;
}

static int first_cmp(const void *a, const void *b, void *ctx)
{
	const struct first_seen *f = ctx;
	const struct first_seen *x = &f[*(const int32_t *)a], *y = &f[*(const int32_t *)b];
	return first_less(x, y) ? -1 : first_less(y, x);
}

/* With lanes: renumbers the nodes in the order of their first event in the
 * lane-by-lane order (a parent's first event precedes its children's).
 * Returns 0, or -1 on out of memory. */
static int renumber(struct builder *b)
{
	size_t n = b->nnodes;
	size_t i = 1;
	while (i < n && first_less(&b->first[i - 1], &b->first[i]))
		i++;
	if (i >= n)
		return 0;          /* already in that order */
	int32_t *order = malloc(n * sizeof *order), *newid = malloc(n * sizeof *newid);
	struct sp_tree_node *nodes = malloc(n * sizeof *nodes);
	if (!order || !newid || !nodes) {
		free(order);
		free(newid);
		free(nodes);
		return -1;
	}
	for (i = 0; i < n; i++)
		order[i] = (int32_t)i;
	qsort_r(order, n, sizeof *order, first_cmp, b->first);
	for (i = 0; i < n; i++)
		newid[order[i]] = (int32_t)i;
	for (i = 0; i < n; i++) {
		nodes[i] = b->nodes[order[i]];
		if (nodes[i].parent >= 0)
			nodes[i].parent = newid[nodes[i].parent];
	}
	free(order);
	free(newid);
	free(b->nodes);
	b->nodes = nodes;
	b->nodes_cap = n;
	return 0;
}

/* sp_tree_build; with always_sort, every region is visited through a sorted
 * permutation as if it were out of order (the unit tests compare both). */
enum sp_err sp_tree_build_opt(struct sp_rank *rank, int always_sort, struct sp_error *err);

enum sp_err sp_tree_build_opt(struct sp_rank *rank, int always_sort, struct sp_error *err)
{
	if (rank->nregions > INT32_MAX)
		return sp_error_set(err, SP_ENOMEM, "rank %d: too many regions (%zu)",
				    rank->rank, rank->nregions);
	size_t n = 0, ncur = 0;
	int lanes = 0;
	for (size_t r = 0; r < rank->nregions; r++) {
		const struct sp_region_data *rd = &rank->regions[r];
		int64_t calls = rd->stats.num_calls;
		if (calls < 0)
			return sp_error_set(err, SP_EINVAL, "rank %d: region '%s' has %lld calls",
					    rank->rank, rd->name, (long long)calls);
		if (calls > 0 && (!rd->starts || !rd->ends))
			return sp_error_set(err, SP_EINVAL, "rank %d: region '%s': events not loaded",
					    rank->rank, rd->name);
		if ((uint64_t)calls > SIZE_MAX - n)
			return sp_error_set(err, SP_ENOMEM, "rank %d: too many events", rank->rank);
		n += (size_t)calls;
		ncur += calls > 0;
		lanes |= calls > 0 && rd->lanes;
	}

	enum sp_err rc = SP_ENOMEM;
	struct builder b = { 0 };
	struct cursor *heap = calloc(ncur ? ncur : 1, sizeof *heap);
	if (!heap)
		goto out;
	if (lanes && !(b.first = malloc(16 * sizeof *b.first)))
		goto out;
	b.first_cap = lanes ? 16 : 0;
	size_t nh = 0;
	for (size_t r = 0; r < rank->nregions; r++) {
		const struct sp_region_data *rd = &rank->regions[r];
		size_t calls = (size_t)rd->stats.num_calls;
		if (calls == 0)
			continue;
		struct cursor *c = &heap[nh++];
		*c = (struct cursor){ .starts = rd->starts, .ends = rd->ends, .lanes = rd->lanes,
				      .n = calls, .region = (int32_t)r };
		if (always_sort || !in_order(rd->starts, rd->ends, calls)) {
			if (calls > SIZE_MAX / sizeof *c->perm || !(c->perm = malloc(calls * sizeof *c->perm)))
				goto out;
			for (size_t i = 0; i < calls; i++)
				c->perm[i] = i;
			qsort_r(c->perm, calls, sizeof *c->perm, call_cmp, c);
		}
		cursor_load(c);
	}
	if (merge(&b, heap, nh) != 0 || (lanes && renumber(&b) != 0))
		goto out;

	/* Shrink to fit; if even that fails, keep the larger block. */
	struct sp_tree_node *tree = b.nodes;
	if (b.nnodes == 0)
		tree = malloc(1);
	else if ((tree = realloc(b.nodes, b.nnodes * sizeof *tree)) == NULL)
		tree = b.nodes;
	if (!tree)
		goto out;
	b.nodes = NULL;
	free(rank->tree);
	rank->tree = tree;
	rank->ntree = b.nnodes;
	rc = SP_OK;
out:
	/* The cursors moved in the heap, but each keeps its own permutation. */
	for (size_t i = 0; heap && i < ncur; i++)
		free(heap[i].perm);
	free(heap);
	free(b.nodes);
	free(b.first);
	sp_keytab_free(&b.node_ids);
	for (size_t i = 0; i < b.nlanes; i++)
		free(b.lanes[i].stack);
	free(b.lanes);
	sp_keytab_free(&b.lane_ids);
	if (rc != SP_OK)
		return sp_error_set(err, rc, "rank %d: out of memory building the call tree (%zu events)",
				    rank->rank, n);
	return SP_OK;
}

/* Builds rank->tree by containment. Fails with SP_EINVAL when a region with
 * calls has no event columns loaded, SP_ENOMEM on out of memory or size
 * overflow; on failure the rank is left as it was. */
enum sp_err sp_tree_build(struct sp_rank *rank, struct sp_error *err)
{
	return sp_tree_build_opt(rank, 0, err);
}

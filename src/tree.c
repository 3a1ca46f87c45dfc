/* tree.c - one rank's call tree, reconstructed from its events by containment. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp_profile.h"

/* One call of one region. seq numbers the calls region by region, so it orders
 * them by (region index, call index) in a single comparison. */
struct event {
	int64_t start, end;
	size_t seq;
	int32_t region;
	int32_t lane;                  /* threads nest only within their lane */
};

/* An event still open during the sweep, and the node it was counted in. */
struct open_event {
	int64_t end;
	int32_t node;
};

struct builder {
	struct sp_tree_node *nodes;
	size_t nnodes, nodes_cap;
	int32_t *slots;                /* open addressing on (parent, region); -1 empty */
	size_t nslots;                 /* a power of two, at least twice nnodes */
	struct open_event *stack;
	size_t depth, stack_cap;
};

/* Returns p grown to hold at least need elements (capacity doubled), or NULL
 * on out of memory or size overflow, leaving p as it was. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return NULL;
	void *np = realloc(p, ncap * elem);
	if (np)
		*cap = ncap;
	return np;
}

static size_t key_hash(int32_t parent, int32_t region)
{
	uint64_t k = (uint64_t)(uint32_t)parent << 32 | (uint32_t)region;
	k ^= k >> 33;                  /* the murmur3 64-bit finaliser */
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return (size_t)k;
}

/* Lane, then start ascending; on a tie the longer event first (it is the
 * parent), then the lower region index, then the earlier call. */
static inline int event_less(const struct event *x, const struct event *y)
{
	if (x->lane != y->lane)
		return x->lane < y->lane;
	if (x->start != y->start)
		return x->start < y->start;
	if (x->end != y->end)
		return x->end > y->end;
	return x->seq < y->seq;
}

static int event_cmp(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	return event_less(x, y) ? -1 : event_less(y, x) ? 1 : 0;
}

/* Sorts ev[n], made of nruns runs (run r is ev[bounds[r] .. bounds[r+1]]).
 * A region's calls are recorded in entry order, so each run is normally
 * sorted already: runs that are not get qsort'ed, then the runs are merged
 * pairwise, log2(nruns) linear passes, instead of one O(n log n) qsort.
 * tmp holds n events; bounds is overwritten. Returns the sorted array (ev or
 * tmp). */
static struct event *sort_runs(struct event *ev, struct event *tmp, size_t n, size_t *bounds, size_t nruns)
{
	for (size_t r = 0; r < nruns; r++) {
		size_t lo = bounds[r], hi = bounds[r + 1];
		for (size_t i = lo + 1; i < hi; i++)
			if (event_less(&ev[i], &ev[i - 1])) {
				qsort(ev + lo, hi - lo, sizeof *ev, event_cmp);
				break;
			}
	}
	struct event *src = ev, *dst = tmp;
	while (nruns > 1) {
		size_t out = 0;
		for (size_t r = 0; r < nruns; r += 2) {
			size_t a = bounds[r], am = bounds[r + 1];
			size_t bm = r + 1 < nruns ? bounds[r + 2] : am, b = am, k = a;
			while (a < am && b < bm)
				dst[k++] = event_less(&src[b], &src[a]) ? src[b++] : src[a++];
			while (a < am)
				dst[k++] = src[a++];
			while (b < bm)
				dst[k++] = src[b++];
			bounds[out++] = bounds[r];
		}
		bounds[out] = n;
		nruns = out;
		struct event *t = src;
		src = dst;
		dst = t;
	}
	return src;
}

/* Replaces the slot table by one of nslots slots holding every node. */
static int rehash(struct builder *b, size_t nslots)
{
	int32_t *slots = malloc(nslots * sizeof *slots);
	if (!slots)
		return -1;
	memset(slots, 0xff, nslots * sizeof *slots);
	for (size_t i = 0; i < b->nnodes; i++) {
		size_t h = key_hash(b->nodes[i].parent, b->nodes[i].region) & (nslots - 1);
		while (slots[h] != -1)
			h = (h + 1) & (nslots - 1);
		slots[h] = (int32_t)i;
	}
	free(b->slots);
	b->slots = slots;
	b->nslots = nslots;
	return 0;
}

/* Returns the node of region under parent, adding it if new; -1 on out of
 * memory or when the node count would not fit an int32_t. */
static int32_t node_get(struct builder *b, int32_t parent, int32_t region)
{
	size_t mask = b->nslots - 1, h = key_hash(parent, region) & mask;
	for (int32_t i; (i = b->slots[h]) != -1; h = (h + 1) & mask)
		if (b->nodes[i].parent == parent && b->nodes[i].region == region)
			return i;
	if (b->nnodes >= INT32_MAX)
		return -1;
	struct sp_tree_node *nodes = grow(b->nodes, &b->nodes_cap, b->nnodes + 1, sizeof *nodes);
	if (!nodes)
		return -1;
	b->nodes = nodes;
	int32_t id = (int32_t)b->nnodes++;
	nodes[id] = (struct sp_tree_node){ .parent = parent, .region = region };
	b->slots[h] = id;
	if (b->nnodes * 2 > b->nslots && (b->nslots > SIZE_MAX / 2 / sizeof *b->slots ||
					  rehash(b, b->nslots * 2) != 0)) {
		/* The node is stored but the table is full: undo it and fail. */
		b->slots[h] = -1;
		b->nnodes--;
		return -1;
	}
	return id;
}

/* Adds b to a, saturating instead of overflowing on absurd timestamps. */
static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t duration(const struct event *e)
{
	int64_t d;
	if (__builtin_sub_overflow(e->end, e->start, &d))
		return e->end > e->start ? INT64_MAX : INT64_MIN;
	return d;
}

/* Sweeps the sorted events; returns 0, or -1 on out of memory. */
static int sweep(struct builder *b, const struct event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct event *e = &ev[i];
		/* A new lane (thread) starts at the roots; the same paths in
		 * several lanes merge into one node. */
		if (i > 0 && e->lane != ev[i - 1].lane)
			b->depth = 0;
		/* Sorted by start, so every open event started no later than e:
		 * pop those that end before e does or that e merely overlaps. */
		while (b->depth > 0) {
			const struct open_event *top = &b->stack[b->depth - 1];
			if (e->end <= top->end && e->start < top->end)
				break;
			b->depth--;
		}
		int32_t parent = b->depth > 0 ? b->stack[b->depth - 1].node : -1;
		int32_t id = node_get(b, parent, e->region);
		if (id < 0)
			return -1;
		b->nodes[id].calls++;
		b->nodes[id].total_ns = add_sat(b->nodes[id].total_ns, duration(e));
		struct open_event *stack = grow(b->stack, &b->stack_cap, b->depth + 1, sizeof *stack);
		if (!stack)
			return -1;
		b->stack = stack;
		stack[b->depth++] = (struct open_event){ .end = e->end, .node = id };
	}
	return 0;
}

/* Builds rank->tree by containment. Fails with SP_EINVAL when a region with
 * calls has no event columns loaded, SP_ENOMEM on out of memory or size
 * overflow; on failure the rank is left as it was. */
enum sp_err sp_tree_build(struct sp_rank *rank, struct sp_error *err)
{
	if (rank->nregions > INT32_MAX)
		return sp_error_set(err, SP_ENOMEM, "rank %d: too many regions (%zu)",
				    rank->rank, rank->nregions);
	size_t n = 0;
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
	}
	if (n > SIZE_MAX / sizeof(struct event))
		return sp_error_set(err, SP_ENOMEM, "rank %d: too many events (%zu)", rank->rank, n);

	enum sp_err rc = SP_ENOMEM;
	struct builder b = { 0 };
	struct event *ev = malloc(n ? n * sizeof *ev : 1);
	struct event *tmp = malloc(n ? n * sizeof *tmp : 1);
	size_t *bounds = malloc((rank->nregions + 1) * sizeof *bounds);
	if (!ev || !tmp || !bounds || rehash(&b, 64) != 0)
		goto out;
	size_t k = 0;
	for (size_t r = 0; r < rank->nregions; r++) {
		const struct sp_region_data *rd = &rank->regions[r];
		bounds[r] = k;
		for (int64_t c = 0; c < rd->stats.num_calls; c++, k++)
			ev[k] = (struct event){ rd->starts[c], rd->ends[c], k, (int32_t)r,
						rd->lanes ? rd->lanes[c] : 0 };
	}
	bounds[rank->nregions] = n;
	struct event *sorted = sort_runs(ev, tmp, n, bounds, rank->nregions);
	if (sweep(&b, sorted, n) != 0)
		goto out;

	/* Creation order is already parents first, siblings by first start.
	 * Shrink to fit; if even that fails, keep the larger block. */
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
	free(ev);
	free(tmp);
	free(bounds);
	free(b.nodes);
	free(b.slots);
	free(b.stack);
	if (rc != SP_OK)
		return sp_error_set(err, rc, "rank %d: out of memory building the call tree (%zu events)",
				    rank->rank, n);
	return SP_OK;
}

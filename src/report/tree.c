/* tree.c - one rank's call tree, from the nesting of its calls (nest.c, the
 * one place that decides each call's parent): each call is counted in the
 * node (parent node, region) under its parent's node.
 *
 * The walk visits all lanes at once in time order; within one lane that is
 * the rule's order, so every call lands in the node a lane-by-lane sweep
 * would put it in. Node numbering is the lane-by-lane sweep's creation order
 * (parents first, siblings by first start): with lanes the nodes are
 * renumbered at the end by their first call in that order. Memory: O(nodes
 * + lanes + nesting depth), none per call (nest.c reads the columns in
 * place). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_grow.h"
#include "sp_keytab.h"
#include "nest_int.h"
#include "sp_h5.h"
#include "sp_tree.h"

/* With lanes: where a node's first event falls in the lane-by-lane order,
 * which is (lane, position in the merge). */
struct first_seen {
	int32_t lane;
	uint64_t pos;
};

/* Per region: the nodes its last calls were counted in (the latest first),
 * and their parents. A region's next call is most often under the parent
 * of one of its last two (a loop's body, a callee of one or two callers),
 * found here without a lookup. */
struct last_node {
	int32_t parent, node;          /* node -1: none yet */
};

struct builder {
	struct sp_tree_node *nodes;
	size_t nnodes, nodes_cap;
	struct first_seen *first;      /* nodes_cap entries when tracking lanes, else NULL */
	size_t first_cap;
	struct sp_keytab node_ids;     /* (parent, region) -> node */
	struct last_node (*last)[2];   /* per region */
	int64_t overlaps;              /* calls that overlapped without nesting */
};

/* Returns the node of region under parent, adding it if new; -1 on out of
 * memory or when the node count would not fit an int32_t. */
static int32_t node_get(struct builder *b, int32_t parent, int32_t region)
{
	int added;
	int32_t id = sp_keytab_get(&b->node_ids, parent, (uint32_t)region, &added);
	if (id < 0 || !added)
		return id;
	if (b->nnodes == b->nodes_cap || (b->first && b->nnodes == b->first_cap)) {
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
	}
	b->nodes[b->nnodes++] = (struct sp_tree_node){ .parent = parent, .region = region };
	return id;
}

static int64_t duration(int64_t start, int64_t end)
{
	int64_t d;
	if (__builtin_sub_overflow(end, start, &d))
		return end > start ? INT64_MAX : INT64_MIN;
	return d;
}

/* The walk's visitor: counts call c in its node (tag: the node). */
static int visit(void *ctx, const struct sp_nest_call *c, int64_t parent_tag, int64_t *tag)
{
	struct builder *b = ctx;
	size_t before = b->nnodes;
	struct last_node *last = b->last[c->region];
	int32_t id = last[0].node;
	if (id < 0 || last[0].parent != (int32_t)parent_tag) {
		struct last_node prev = last[0];
		if ((id = last[1].node) < 0 || last[1].parent != (int32_t)parent_tag) {
			if ((id = node_get(b, (int32_t)parent_tag, c->region)) < 0)
				return -1;
		}
		last[0] = (struct last_node){ (int32_t)parent_tag, id };
		last[1] = prev;
	}
	if (b->first && ((size_t)id >= before || c->lane < b->first[id].lane))
		b->first[id] = (struct first_seen){ c->lane, c->pos };
	b->overlaps += c->overlapped;
	b->nodes[id].calls++;
	b->nodes[id].total_ns = sp_add_sat(b->nodes[id].total_ns, duration(c->start, c->end));
	*tag = id;
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
	size_t n = 0;
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
		lanes |= calls > 0 && rd->lanes;
	}

	enum sp_err rc = SP_ENOMEM;
	struct builder b = { 0 };
	struct sp_nest_column *cols = malloc((rank->nregions ? rank->nregions : 1) * sizeof *cols);
	b.last = malloc((rank->nregions ? rank->nregions : 1) * sizeof *b.last);
	if (!cols || !b.last || (lanes && !(b.first = malloc(16 * sizeof *b.first))))
		goto out;
	b.first_cap = lanes ? 16 : 0;
	for (size_t r = 0; r < rank->nregions; r++) {
		const struct sp_region_data *rd = &rank->regions[r];
		cols[r] = (struct sp_nest_column){ rd->starts, rd->ends, rd->lanes,
						   (size_t)rd->stats.num_calls };
		b.last[r][0] = b.last[r][1] = (struct last_node){ -1, -1 };
	}
	if (nest_walk_inline(cols, rank->nregions, always_sort ? SP_NEST_ALWAYS_SORT : 0, visit, &b,
			     err) != SP_OK || (lanes && renumber(&b) != 0))
		goto out;

	/* Shrink to fit; if even that fails, keep the larger block. */
	struct sp_tree_node *tree = b.nodes;
	if (b.nnodes == 0)
		tree = malloc(sizeof *tree);   /* not NULL: "no nodes" is not "no memory" */
	else if ((tree = realloc(b.nodes, b.nnodes * sizeof *tree)) == NULL)
		tree = b.nodes;
	if (!tree)
		goto out;
	b.nodes = NULL;
	free(rank->tree);
	rank->tree = tree;
	rank->ntree = b.nnodes;
	rank->tree_overlaps = b.overlaps;
	rc = SP_OK;
out:
	free(cols);
	free(b.last);
	free(b.nodes);
	free(b.first);
	sp_keytab_free(&b.node_ids);
	if (rc != SP_OK)
		return sp_error_set(err, rc, "rank %d: out of memory building the call tree (%zu events)",
				    rank->rank, n);
	return SP_OK;
}

enum sp_err sp_tree_build(struct sp_rank *rank, struct sp_error *err)
{
	return sp_tree_build_opt(rank, 0, err);
}

enum sp_err sp_profile_trees(struct sp_profile *p, struct sp_error *err)
{
	for (size_t r = 0; r < p->nranks; r++) {
		enum sp_err rc;
		if (!p->ranks[r].tree && (rc = sp_tree_build(&p->ranks[r], err)) != SP_OK)
			return rc;
	}
	return SP_OK;
}

enum sp_err sp_report_read(const char *path, int flags, struct sp_profile **out, struct sp_error *err)
{
	struct sp_profile *p = NULL;
	enum sp_err rc = sp_h5_read(path, flags, &p, err);
	if (rc != SP_OK || (rc = sp_profile_trees(p, err)) == SP_OK) {
		*out = p;
		return rc;
	}
	char why[sizeof err->msg];
	snprintf(why, sizeof why, "%s", err ? err->msg : "cannot build the call tree");
	sp_error_set(err, rc, "cannot read '%s': %s", path, why);
	if (err)
		for (char *c = err->msg; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	sp_profile_free(p);
	*out = NULL;
	return rc;
}

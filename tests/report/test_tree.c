/* test_tree.c - unit tests of sp_tree_build(): call trees by containment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "sp_clock.h"
#include "sp_tree.h"
#include "sp_profile.h"

/* A one-rank profile; sp_profile_free() releases all of it. */
static struct sp_profile *profile_new(void)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	assert_non_null(p);
	p->nranks = 1;
	p->ranks = calloc(1, sizeof *p->ranks);
	assert_non_null(p->ranks);
	p->ranks[0].run_start_ns = p->ranks[0].run_end_ns = SP_NO_TIME;
	return p;
}

static size_t add_region(struct sp_rank *rk, const char *name)
{
	rk->regions = realloc(rk->regions, (rk->nregions + 1) * sizeof *rk->regions);
	assert_non_null(rk->regions);
	struct sp_region_data *rd = &rk->regions[rk->nregions];
	memset(rd, 0, sizeof *rd);
	rd->name = strdup(name);
	rd->owns_events = 1;
	return rk->nregions++;
}

static void add_event(struct sp_rank *rk, size_t r, int64_t start, int64_t end)
{
	struct sp_region_data *rd = &rk->regions[r];
	size_t n = (size_t)rd->stats.num_calls;
	rd->starts = realloc(rd->starts, (n + 1) * sizeof *rd->starts);
	rd->ends = realloc(rd->ends, (n + 1) * sizeof *rd->ends);
	assert_true(rd->starts && rd->ends);
	rd->starts[n] = start;
	rd->ends[n] = end;
	rd->stats.num_calls++;
}

/* Declared here only: sp_tree_build with every region visited through a
 * sorted permutation, as a region whose columns are out of order is. */
enum sp_err sp_tree_build_opt(struct sp_rank *rank, int always_sort, struct sp_error *err);

/* The reference: the original algorithm, which materialises every event,
 * sorts them all (lane, start ascending, longer first, region, call) and
 * sweeps them lane by lane. sp_tree_build must give the same tree, node for
 * node, without the per-event copy. */
struct ref_event {
	int64_t start, end;
	size_t seq;
	int32_t region, lane;
};

static int ref_less(const struct ref_event *x, const struct ref_event *y)
{
	if (x->lane != y->lane)
		return x->lane < y->lane;
	if (x->start != y->start)
		return x->start < y->start;
	if (x->end != y->end)
		return x->end > y->end;
	return x->seq < y->seq;
}

static int ref_cmp(const void *a, const void *b)
{
	return ref_less(a, b) ? -1 : ref_less(b, a) ? 1 : 0;
}

static int64_t ref_add_sat(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t ref_duration(const struct ref_event *e)
{
	int64_t d;
	if (__builtin_sub_overflow(e->end, e->start, &d))
		return e->end > e->start ? INT64_MAX : INT64_MIN;
	return d;
}

/* The reference tree of rk (a linear node lookup: small inputs only). */
static struct sp_tree_node *reference_tree(const struct sp_rank *rk, size_t *nnodes)
{
	size_t n = 0, k = 0, nn = 0, depth = 0;
	for (size_t r = 0; r < rk->nregions; r++)
		n += (size_t)rk->regions[r].stats.num_calls;
	struct ref_event *ev = malloc((n ? n : 1) * sizeof *ev);
	struct sp_tree_node *nodes = malloc((n ? n : 1) * sizeof *nodes);
	int64_t *open_end = malloc((n ? n : 1) * sizeof *open_end);
	int32_t *open_node = malloc((n ? n : 1) * sizeof *open_node);
	assert_true(ev && nodes && open_end && open_node);
	for (size_t r = 0; r < rk->nregions; r++) {
		const struct sp_region_data *rd = &rk->regions[r];
		for (int64_t c = 0; c < rd->stats.num_calls; c++, k++)
			ev[k] = (struct ref_event){ rd->starts[c], rd->ends[c], k, (int32_t)r,
						    rd->lanes ? rd->lanes[c] : 0 };
	}
	qsort(ev, n, sizeof *ev, ref_cmp);
	for (size_t i = 0; i < n; i++) {
		const struct ref_event *e = &ev[i];
		if (i > 0 && e->lane != ev[i - 1].lane)
			depth = 0;
		while (depth > 0 && !(e->end <= open_end[depth - 1] && e->start < open_end[depth - 1]))
			depth--;
		int32_t parent = depth > 0 ? open_node[depth - 1] : -1;
		size_t id = 0;
		while (id < nn && !(nodes[id].parent == parent && nodes[id].region == e->region))
			id++;
		if (id == nn)
			nodes[nn++] = (struct sp_tree_node){ .parent = parent, .region = e->region };
		nodes[id].calls++;
		nodes[id].total_ns = ref_add_sat(nodes[id].total_ns, ref_duration(e));
		open_end[depth] = e->end;
		open_node[depth++] = (int32_t)id;
	}
	free(ev);
	free(open_end);
	free(open_node);
	*nnodes = nn;
	return nodes;
}

/* rk's tree equals the reference, node by node. */
static void assert_reference(const struct sp_rank *rk)
{
	size_t nn;
	struct sp_tree_node *ref = reference_tree(rk, &nn);
	assert_int_equal(rk->ntree, nn);
	for (size_t i = 0; i < nn; i++) {
		assert_int_equal(rk->tree[i].parent, ref[i].parent);
		assert_int_equal(rk->tree[i].region, ref[i].region);
		assert_int_equal(rk->tree[i].calls, ref[i].calls);
		assert_int_equal(rk->tree[i].total_ns, ref[i].total_ns);
	}
	free(ref);
}

/* Checks what holds for every tree: parents first, one node per (parent,
 * region), every event counted once. */
static void check_invariants(const struct sp_rank *rk)
{
	assert_non_null(rk->tree);
	int64_t calls = 0, events = 0;
	for (size_t i = 0; i < rk->ntree; i++) {
		const struct sp_tree_node *nd = &rk->tree[i];
		assert_true(nd->parent >= -1 && nd->parent < (int32_t)i);
		assert_true(nd->region >= 0 && (size_t)nd->region < rk->nregions);
		assert_true(nd->calls > 0);
		calls += nd->calls;
	}
	for (size_t r = 0; r < rk->nregions; r++)
		events += rk->regions[r].stats.num_calls;
	assert_int_equal(calls, events);
}

/* Builds the tree both ways (the merge of the regions' columns as stored,
 * and every region through a sorted permutation), checks the invariants,
 * and below reference_max events that both equal the original algorithm's
 * tree node by node. Leaves the merge's tree in rk. */
static const size_t reference_max = 100000;

static void build(struct sp_rank *rk)
{
	struct sp_error err = { 0 };
	size_t events = 0;
	for (size_t r = 0; r < rk->nregions; r++)
		events += (size_t)rk->regions[r].stats.num_calls;
	assert_int_equal(sp_tree_build_opt(rk, 1, &err), SP_OK);
	check_invariants(rk);
	if (events <= reference_max)
		assert_reference(rk);
	assert_int_equal(sp_tree_build(rk, &err), SP_OK);
	check_invariants(rk);
	if (events <= reference_max)
		assert_reference(rk);
}

/* The node of region `name` under parent, or -1. */
static int find(const struct sp_rank *rk, int32_t parent, const char *name)
{
	int found = -1;
	for (size_t i = 0; i < rk->ntree; i++)
		if (rk->tree[i].parent == parent && strcmp(rk->regions[rk->tree[i].region].name, name) == 0) {
			assert_int_equal(found, -1);   /* (parent, region) is unique */
			found = (int)i;
		}
	return found;
}

static const char *name_of(const struct sp_rank *rk, size_t node)
{
	return rk->regions[rk->tree[node].region].name;
}

/* The shape of seed 003: setup, then 6 timesteps of assemble + solve, with a
 * checkpoint after every third. Regions are listed in an order unlike their
 * start order, so that sibling order must come from the timestamps. */
static void test_timestep_loop(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	size_t ck = add_region(rk, "checkpoint"), sv = add_region(rk, "solve");
	size_t ts = add_region(rk, "timestep"), as = add_region(rk, "assemble");
	size_t su = add_region(rk, "setup");
	int64_t tot_ts = 0, tot_as = 0, tot_sv = 0, tot_ck = 0;
	add_event(rk, su, 1959806, 12039456);
	int64_t t = 12221036;
	for (int step = 0; step < 6; step++) {
		int64_t a0 = t + 2000, a1 = a0 + 2068768, s0 = a1 + 1000, s1 = s0 + 2068768 + 1000000 * step;
		add_event(rk, ts, t, s1 + 2000);
		add_event(rk, as, a0, a1);
		add_event(rk, sv, s0, s1);
		tot_ts += s1 + 2000 - t, tot_as += a1 - a0, tot_sv += s1 - s0;
		t = s1 + 5000;
		if (step % 3 == 2) {
			add_event(rk, ck, t, t + 4069000);
			tot_ck += 4069000;
			t += 4070000;
		}
	}
	build(rk);
	assert_int_equal(rk->ntree, 5);
	const char *order[] = { "setup", "timestep", "assemble", "solve", "checkpoint" };
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(name_of(rk, i), order[i]);
	int n_ts = find(rk, -1, "timestep"), n_as = find(rk, n_ts, "assemble");
	int n_sv = find(rk, n_ts, "solve"), n_ck = find(rk, -1, "checkpoint");
	assert_int_equal(find(rk, -1, "setup"), 0);
	assert_true(n_as > 0 && n_sv > 0 && n_ck > 0);
	assert_int_equal(rk->tree[0].calls, 1);
	assert_int_equal(rk->tree[0].total_ns, 12039456 - 1959806);
	assert_int_equal(rk->tree[n_ts].calls, 6);
	assert_int_equal(rk->tree[n_ts].total_ns, tot_ts);
	assert_int_equal(rk->tree[n_as].calls, 6);
	assert_int_equal(rk->tree[n_as].total_ns, tot_as);
	assert_int_equal(rk->tree[n_sv].calls, 6);
	assert_int_equal(rk->tree[n_sv].total_ns, tot_sv);
	assert_int_equal(rk->tree[n_ck].calls, 2);
	assert_int_equal(rk->tree[n_ck].total_ns, tot_ck);
	sp_profile_free(p);
}

/* A region nested in itself 100 deep is a chain of 100 nodes. */
static void test_recursion_chain(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	size_t f = add_region(rk, "f");
	for (int64_t i = 0; i < 100; i++)
		add_event(rk, f, 10 * i, 10000 - 10 * i);
	build(rk);
	assert_int_equal(rk->ntree, 100);
	for (int32_t i = 0; i < 100; i++) {
		assert_int_equal(rk->tree[i].parent, i - 1);
		assert_int_equal(rk->tree[i].calls, 1);
		assert_int_equal(rk->tree[i].total_ns, 10000 - 20 * i);
	}
	sp_profile_free(p);
}

/* Mutual recursion a -> b -> a -> ... alternates along one chain. */
static void test_mutual_recursion(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	size_t a = add_region(rk, "a"), b = add_region(rk, "b");
	for (int64_t i = 0; i < 40; i++)
		add_event(rk, i % 2 ? b : a, 10 * i, 1000 - 10 * i);
	build(rk);
	assert_int_equal(rk->ntree, 40);
	for (int32_t i = 0; i < 40; i++) {
		assert_int_equal(rk->tree[i].parent, i - 1);
		assert_string_equal(name_of(rk, (size_t)i), i % 2 ? "b" : "a");
	}
	sp_profile_free(p);
}

/* Siblings come in the order of their first start, not of region index;
 * repeated calls aggregate into the first node. */
static void test_sibling_order(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	size_t a = add_region(rk, "a"), b = add_region(rk, "b"), c = add_region(rk, "c");
	size_t par = add_region(rk, "parent");
	add_event(rk, par, 0, 100);
	add_event(rk, c, 10, 20);
	add_event(rk, a, 30, 40);
	add_event(rk, c, 50, 60);
	add_event(rk, b, 70, 71);
	add_event(rk, a, 80, 90);
	build(rk);
	assert_int_equal(rk->ntree, 4);
	const char *order[] = { "parent", "c", "a", "b" };
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(name_of(rk, i), order[i]);
	assert_int_equal(rk->tree[1].calls, 2);
	assert_int_equal(rk->tree[1].total_ns, 20);
	assert_int_equal(rk->tree[2].calls, 2);
	assert_int_equal(rk->tree[2].total_ns, 20);
	assert_int_equal(rk->tree[3].total_ns, 1);
	sp_profile_free(p);
}

/* Equal starts: the longer event is the parent; equal start and end: the
 * lower region index is; an event ending where another starts is no child. */
static void test_ties(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	size_t x = add_region(rk, "x"), y = add_region(rk, "y");
	add_event(rk, y, 0, 10);
	add_event(rk, x, 0, 10);       /* same span: x (index 0) is y's parent */
	add_event(rk, x, 100, 105);
	add_event(rk, y, 100, 120);    /* longer: y is x's parent */
	add_event(rk, x, 120, 130);    /* starts where y ends: a root */
	build(rk);
	int rx = find(rk, -1, "x"), ry = find(rk, -1, "y");
	assert_true(rx >= 0 && ry >= 0);
	assert_int_equal(rx, 0);
	assert_int_equal(rk->tree[rx].calls, 2);
	assert_int_equal(rk->tree[rx].total_ns, 20);
	int xy = find(rk, rx, "y"), yx = find(rk, ry, "x");
	assert_true(xy >= 0 && yx >= 0);
	assert_int_equal(rk->tree[xy].total_ns, 10);
	assert_int_equal(rk->tree[yx].total_ns, 5);
	assert_int_equal(rk->ntree, 4);
	sp_profile_free(p);
}

/* Interleaved threads: b starts inside a and ends after it. b becomes a's
 * sibling, and c, inside b only, b's child. */
static void test_partial_overlap(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	size_t a = add_region(rk, "a"), b = add_region(rk, "b"), c = add_region(rk, "c");
	add_event(rk, a, 0, 10);
	add_event(rk, b, 5, 15);
	add_event(rk, c, 6, 8);
	build(rk);
	assert_int_equal(rk->ntree, 3);
	assert_int_equal(find(rk, -1, "a"), 0);
	assert_int_equal(find(rk, -1, "b"), 1);
	assert_int_equal(find(rk, 1, "c"), 2);
	sp_profile_free(p);
}

/* Random overlapping events, zero lengths and repeats included: no crash,
 * and the invariants of build() hold. */
static void test_random_overlaps(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	char name[16];
	for (int r = 0; r < 20; r++) {
		snprintf(name, sizeof name, "r%d", r);
		add_region(rk, name);
	}
	srand(12345);
	int64_t dur = 0;
	for (int i = 0; i < 20000; i++) {
		int64_t s = rand() % 1000, d = rand() % 50;
		add_event(rk, (size_t)(rand() % 20), s, s + d);
		dur += d;
	}
	build(rk);
	int64_t total = 0;
	for (size_t i = 0; i < rk->ntree; i++)
		total += rk->tree[i].total_ns;
	assert_int_equal(total, dur);
	sp_profile_free(p);
}

/* One parent with thousands of distinct children. */
static void test_wide(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	char name[16];
	size_t root = add_region(rk, "root");
	add_event(rk, root, 0, 1000000);
	for (int r = 1; r <= 5000; r++) {
		snprintf(name, sizeof name, "f%d", r);
		add_event(rk, add_region(rk, name), 10 * (5001 - r), 10 * (5001 - r) + 5);
	}
	build(rk);
	assert_int_equal(rk->ntree, 5001);
	for (int32_t i = 1; i <= 5000; i++) {
		assert_int_equal(rk->tree[i].parent, 0);
		assert_int_equal(rk->tree[i].region, 5001 - i);
	}
	sp_profile_free(p);
}

/* No events: an empty, non-NULL tree. */
static void test_empty(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	build(rk);
	assert_int_equal(rk->ntree, 0);
	add_region(rk, "never");       /* no calls, no columns */
	build(rk);
	assert_int_equal(rk->ntree, 0);
	sp_profile_free(p);
}

/* Columns not loaded: SP_EINVAL and the rank untouched. A rebuild replaces
 * the previous tree (ASan checks that nothing leaks). */
static void test_errors_and_rebuild(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	size_t a = add_region(rk, "a");
	add_event(rk, a, 0, 10);
	build(rk);
	build(rk);
	struct sp_tree_node *old = rk->tree;
	assert_int_equal(rk->ntree, 1);
	size_t b = add_region(rk, "b");
	rk->regions[b].stats.num_calls = 3;
	struct sp_error err = { 0 };
	assert_int_equal(sp_tree_build(rk, &err), SP_EINVAL);
	assert_int_equal(err.code, SP_EINVAL);
	assert_non_null(strstr(err.msg, "'b'"));
	assert_ptr_equal(rk->tree, old);
	assert_int_equal(rk->ntree, 1);
	sp_profile_free(p);
}

static double now_s(void)
{
	return (double)sp_clock_ns() / 1e9;
}

/* 1e6 events of a timestep loop (8 per step), then a 1e6-deep chain: both
 * complete. Times are printed, not asserted. */
static void test_million(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	const char *names[] = { "step", "a", "a1", "a2", "b", "b1", "c", "c1" };
	const int64_t off[8][2] = { { 0, 100 }, { 1, 40 }, { 2, 10 }, { 11, 30 },
				    { 41, 70 }, { 42, 69 }, { 71, 99 }, { 72, 98 } };
	const size_t steps = 125000;
	for (size_t r = 0; r < 8; r++) {
		add_region(rk, names[r]);
		struct sp_region_data *rd = &rk->regions[r];
		rd->starts = malloc(steps * sizeof *rd->starts);
		rd->ends = malloc(steps * sizeof *rd->ends);
		assert_true(rd->starts && rd->ends);
		for (size_t s = 0; s < steps; s++) {
			rd->starts[s] = (int64_t)s * 100 + off[r][0];
			rd->ends[s] = (int64_t)s * 100 + off[r][1];
		}
		rd->stats.num_calls = (int64_t)steps;
	}
	double t0 = now_s();
	build(rk);
	double t1 = now_s();
	assert_int_equal(rk->ntree, 8);
	assert_int_equal(rk->tree[0].calls, (int64_t)steps);
	assert_int_equal(find(rk, find(rk, find(rk, -1, "step"), "b"), "b1"), 5);
	sp_profile_free(p);

	p = profile_new();
	rk = &p->ranks[0];
	size_t f = add_region(rk, "f");
	struct sp_region_data *rd = &rk->regions[f];
	const int64_t n = 1000000;
	rd->starts = malloc((size_t)n * sizeof *rd->starts);
	rd->ends = malloc((size_t)n * sizeof *rd->ends);
	assert_true(rd->starts && rd->ends);
	for (int64_t i = 0; i < n; i++) {
		rd->starts[i] = i;
		rd->ends[i] = 2 * n - i;
	}
	rd->stats.num_calls = n;
	double t2 = now_s();
	build(rk);
	double t3 = now_s();
	assert_int_equal(rk->ntree, (size_t)n);
	assert_int_equal(rk->tree[n - 1].parent, n - 2);
	printf("    1e6 events: timestep loop %.3f s, 1e6-deep chain %.3f s\n", t1 - t0, t3 - t2);
	sp_profile_free(p);
}

/* Two threads whose calls overlap in time: with lanes each nests only in its
 * own thread, and the same path in both lanes is one node. */
static void test_lanes_keep_threads_apart(void **state)
{
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	size_t outer = add_region(rk, "outer"), inner = add_region(rk, "inner"),
	       other = add_region(rk, "other");
	add_event(rk, outer, 0, 100);    /* lane 1 */
	add_event(rk, inner, 90, 95);    /* lane 1 */
	add_event(rk, other, 10, 20);    /* lane 0, inside outer's span */
	add_event(rk, outer, 30, 40);    /* lane 0 */
	int32_t lane_outer[] = {1, 0}, lane_inner[] = {1}, lane_other[] = {0};
	rk->regions[outer].lanes = malloc(sizeof lane_outer);
	rk->regions[inner].lanes = malloc(sizeof lane_inner);
	rk->regions[other].lanes = malloc(sizeof lane_other);
	memcpy(rk->regions[outer].lanes, lane_outer, sizeof lane_outer);
	memcpy(rk->regions[inner].lanes, lane_inner, sizeof lane_inner);
	memcpy(rk->regions[other].lanes, lane_other, sizeof lane_other);
	build(rk);
	int o = find(rk, -1, "outer");
	assert_true(o >= 0);
	assert_int_equal(rk->tree[o].calls, 2);          /* both lanes, one node */
	assert_int_equal(rk->tree[o].total_ns, 110);
	assert_true(find(rk, -1, "other") >= 0);           /* not under outer */
	assert_int_equal(find(rk, o, "other"), -1);
	assert_true(find(rk, o, "inner") >= 0);
	/* Without lanes, the same events nest across threads. */
	for (size_t r = 0; r < rk->nregions; r++) {
		free(rk->regions[r].lanes);
		rk->regions[r].lanes = NULL;
	}
	build(rk);
	o = find(rk, -1, "outer");
	assert_true(find(rk, o, "other") >= 0);
	sp_profile_free(p);
}

/* Node numbering with lanes is the lane-by-lane order's, though the events
 * are visited in time order: lane 1's calls come first in time, lane 0's
 * first in the tree. */
static void test_lanes_numbering(void **state)
{
	(void)state;
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	size_t a = add_region(rk, "a"), b = add_region(rk, "b");
	add_event(rk, a, 0, 10);       /* lane 1 */
	add_event(rk, b, 2, 4);        /* lane 1: a/b */
	add_event(rk, b, 5, 8);        /* lane 0: a root */
	add_event(rk, a, 20, 30);      /* lane 0 */
	add_event(rk, a, 22, 24);      /* lane 0: a/a */
	int32_t la[] = { 1, 0, 0 }, lb[] = { 1, 0 };
	rk->regions[a].lanes = malloc(sizeof la);
	rk->regions[b].lanes = malloc(sizeof lb);
	memcpy(rk->regions[a].lanes, la, sizeof la);
	memcpy(rk->regions[b].lanes, lb, sizeof lb);
	build(rk);
	assert_int_equal(rk->ntree, 4);
	const char *order[] = { "b", "a", "a", "b" };
	const int32_t parents[] = { -1, -1, 1, 1 };
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(name_of(rk, i), order[i]);
		assert_int_equal(rk->tree[i].parent, parents[i]);
	}
	sp_profile_free(p);
}

/* Random properly nested calls, as a recorder sees them. */
struct gen_event {
	int64_t start, end;
	int32_t region, lane;
	size_t order;                  /* generation order: entry order within a lane */
};

struct gen {
	struct gen_event *ev;
	size_t n, cap;
	unsigned seed;
	int nregions;
};

static unsigned gen_rand(struct gen *g, unsigned below)
{
	return (unsigned)rand_r(&g->seed) % below;
}

/* Calls inside [lo, hi] of one lane, in entry order, nested depth deep:
 * ties with the parent's start and end, zero lengths, calls that touch, and
 * the same region nested in itself all occur. */
static void gen_nest(struct gen *g, int32_t lane, int64_t lo, int64_t hi, int depth)
{
	int64_t t = lo;
	while (t <= hi && g->n < 4000 && gen_rand(g, 5) != 0) {
		int64_t s = t + (gen_rand(g, 3) == 0 ? 0 : gen_rand(g, 6));
		if (s > hi)
			break;
		int64_t e = gen_rand(g, 4) == 0 ? s : s + gen_rand(g, (unsigned)(hi - s) + 1);
		if (g->n == g->cap) {
			g->cap = g->cap ? 2 * g->cap : 256;
			g->ev = realloc(g->ev, g->cap * sizeof *g->ev);
			assert_non_null(g->ev);
		}
		g->ev[g->n] = (struct gen_event){ s, e, (int32_t)gen_rand(g, (unsigned)g->nregions), lane, g->n };
		g->n++;
		if (depth < 7)
			gen_nest(g, lane, s, e, depth + 1);
		t = e + gen_rand(g, 3);
	}
}

/* Entry order across lanes: by start, the longer first (a parent is entered
 * before its children), then as generated. */
static int gen_cmp(const void *a, const void *b)
{
	const struct gen_event *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* A rank of random nested calls in nlanes lanes (lane ids from lane_ids;
 * no lanes columns when nlanes is 0), recorded in entry order; with
 * shuffle, one region's calls are put out of order. */
static struct sp_profile *random_profile(unsigned seed, int nregions, int nlanes, const int32_t *lane_ids,
					 int shuffle)
{
	struct sp_profile *p = profile_new();
	struct sp_rank *rk = &p->ranks[0];
	struct gen g = { .seed = seed, .nregions = nregions };
	char name[16];
	for (int r = 0; r < nregions; r++) {
		snprintf(name, sizeof name, "r%d", r);
		add_region(rk, name);
	}
	for (int l = 0; l < (nlanes ? nlanes : 1); l++)
		gen_nest(&g, nlanes ? lane_ids[l] : 0, 0, 1000 + gen_rand(&g, 1000), 0);
	if (g.n)
		qsort(g.ev, g.n, sizeof *g.ev, gen_cmp);
	for (size_t i = 0; i < g.n; i++) {
		struct sp_region_data *rd = &rk->regions[g.ev[i].region];
		size_t c = (size_t)rd->stats.num_calls;
		add_event(rk, (size_t)g.ev[i].region, g.ev[i].start, g.ev[i].end);
		if (nlanes) {
			rd->lanes = realloc(rd->lanes, (c + 1) * sizeof *rd->lanes);
			assert_non_null(rd->lanes);
			rd->lanes[c] = g.ev[i].lane;
		}
	}
	if (shuffle) {
		struct sp_region_data *rd = &rk->regions[gen_rand(&g, (unsigned)nregions)];
		for (size_t i = (size_t)rd->stats.num_calls; i > 1; i--) {
			size_t j = gen_rand(&g, (unsigned)i);
			int64_t s = rd->starts[i - 1], e = rd->ends[i - 1];
			rd->starts[i - 1] = rd->starts[j], rd->ends[i - 1] = rd->ends[j];
			rd->starts[j] = s, rd->ends[j] = e;
			if (rd->lanes) {
				int32_t l = rd->lanes[i - 1];
				rd->lanes[i - 1] = rd->lanes[j];
				rd->lanes[j] = l;
			}
		}
	}
	free(g.ev);
	return p;
}

/* The merge of the regions' columns, the permutation path and the original
 * algorithm agree node by node on random nested calls: one lane or several
 * (ids out of order, one negative), regions in order or one shuffled. */
static void test_random_nested(void **state)
{
	(void)state;
	const int32_t lane_ids[] = { 0, 3, 1, -2, 7 };
	for (unsigned seed = 1; seed <= 300; seed++) {
		int nregions = 1 + (int)(seed % 7);
		int nlanes = (int)(seed % 6);  /* 0: no lanes columns */
		struct sp_profile *p = random_profile(seed, nregions, nlanes, lane_ids, seed % 3 == 0);
		build(&p->ranks[0]);
		sp_profile_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timestep_loop),
		cmocka_unit_test(test_lanes_keep_threads_apart),
		cmocka_unit_test(test_recursion_chain),
		cmocka_unit_test(test_mutual_recursion),
		cmocka_unit_test(test_sibling_order),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_partial_overlap),
		cmocka_unit_test(test_random_overlaps),
		cmocka_unit_test(test_wide),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_errors_and_rebuild),
		cmocka_unit_test(test_million),
		cmocka_unit_test(test_lanes_numbering),
		cmocka_unit_test(test_random_nested),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

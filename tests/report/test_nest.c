/* test_nest.c - unit tests of the one nesting rule (sp_nest.h): each call's
 * parent and its place in lane order on tricky inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_nest.h"

static struct sp_region_data region(const char *name, int64_t *starts, int64_t *ends, int32_t *lanes,
				    int64_t n)
{
	struct sp_region_data rd = {0};
	rd.name = (char *)name;
	rd.stats.num_calls = n;
	rd.starts = starts;
	rd.ends = ends;
	rd.lanes = lanes;
	return rd;
}

/* Checks nest's ids and parents (in the rank's call order). */
static void check(const struct sp_nest *nest, const int64_t *ids, const int64_t *parents, size_t n)
{
	assert_int_equal(nest->n, n);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(nest->id[k], ids[k]);
		assert_int_equal(nest->parent[k], parents[k]);
	}
}

static void test_equal_starts_longer_is_parent(void **state)
{
	/* a [0,10] and b [0,10] tie: the lower region index (a) is the parent;
	 * c [0,4] starts with them but is shorter: inside b; d [4,10] ends at
	 * b's end: inside b, after c closed (c ends where d starts). */
	int64_t as[] = {0}, ae[] = {10}, bs[] = {0}, be[] = {10};
	int64_t cs[] = {0, 4}, ce[] = {4, 10};
	struct sp_region_data r[] = {region("a", as, ae, NULL, 1), region("b", bs, be, NULL, 1),
				     region("c", cs, ce, NULL, 2)};
	struct sp_rank rk = {.rank = 0, .nregions = 3, .regions = r};
	struct sp_nest nest;
	struct sp_error err = {0};
	assert_int_equal(sp_nest_rank(&rk, &nest, &err), SP_OK);
	check(&nest, (int64_t[]){0, 1, 2, 3}, (int64_t[]){-1, 0, 1, 1}, 4);
	sp_nest_free(&nest);
}

static void test_zero_length_calls(void **state)
{
	/* p [0,10]; z1 [0,0] at its start is inside it; z2 [10,10] at its end
	 * is not (it starts at p's end); z3 [5,5] inside; a second [5,5] is not
	 * inside the first (it starts at the first's end), so both hang under p. */
	int64_t ps[] = {0}, pe[] = {10};
	int64_t zs[] = {0, 5, 5, 10}, ze[] = {0, 5, 5, 10};
	struct sp_region_data r[] = {region("p", ps, pe, NULL, 1), region("z", zs, ze, NULL, 4)};
	struct sp_rank rk = {.rank = 0, .nregions = 2, .regions = r};
	struct sp_nest nest;
	struct sp_error err = {0};
	assert_int_equal(sp_nest_rank(&rk, &nest, &err), SP_OK);
	check(&nest, (int64_t[]){0, 1, 2, 3, 4}, (int64_t[]){-1, 0, 0, 0, -1}, 5);
	sp_nest_free(&nest);
}

static void test_partial_overlap_is_a_sibling(void **state)
{
	int64_t as[] = {0}, ae[] = {10}, bs[] = {5}, be[] = {15}, cs[] = {6}, ce[] = {7};
	struct sp_region_data r[] = {region("a", as, ae, NULL, 1), region("b", bs, be, NULL, 1),
				     region("c", cs, ce, NULL, 1)};
	struct sp_rank rk = {.rank = 0, .nregions = 3, .regions = r};
	struct sp_nest nest;
	struct sp_error err = {0};
	assert_int_equal(sp_nest_rank(&rk, &nest, &err), SP_OK);
	/* b overlaps a: a root; c is inside b (a is closed by then). */
	check(&nest, (int64_t[]){0, 1, 2}, (int64_t[]){-1, -1, 1}, 3);
	sp_nest_free(&nest);
}

static void test_lanes_nest_apart(void **state)
{
	/* Lane 1's outer [0,100] does not contain lane 0's calls; ids put lane
	 * 0's calls first, then lane 1's, each in start order. */
	int64_t os[] = {0, 1}, oe[] = {100, 50};
	int32_t ol[] = {1, 0};
	int64_t is[] = {2, 10}, ie[] = {3, 20};
	int32_t il[] = {0, 1};
	struct sp_region_data r[] = {region("outer", os, oe, ol, 2), region("inner", is, ie, il, 2)};
	struct sp_rank rk = {.rank = 0, .nregions = 2, .regions = r};
	struct sp_nest nest;
	struct sp_error err = {0};
	assert_int_equal(sp_nest_rank(&rk, &nest, &err), SP_OK);
	/* rank order: outer#0 (lane 1), outer#1 (lane 0), inner#0 (lane 0),
	 * inner#1 (lane 1). Lane 0: outer#1 (id 0) > inner#0 (id 1); lane 1:
	 * outer#0 (id 2) > inner#1 (id 3). */
	check(&nest, (int64_t[]){2, 0, 1, 3}, (int64_t[]){-1, -1, 0, 2}, 4);
	sp_nest_free(&nest);
}

static void test_out_of_order_columns(void **state)
{
	/* A region stored out of start order is visited sorted. */
	int64_t as[] = {20, 0}, ae[] = {30, 40};
	int64_t bs[] = {25}, be[] = {26};
	struct sp_region_data r[] = {region("a", as, ae, NULL, 2), region("b", bs, be, NULL, 1)};
	struct sp_rank rk = {.rank = 0, .nregions = 2, .regions = r};
	struct sp_nest nest;
	struct sp_error err = {0};
	assert_int_equal(sp_nest_rank(&rk, &nest, &err), SP_OK);
	/* a#1 [0,40] > a#0 [20,30] > b [25,26] */
	check(&nest, (int64_t[]){1, 0, 2}, (int64_t[]){0, -1, 1}, 3);
	sp_nest_free(&nest);
}

static void test_events_not_loaded(void **state)
{
	struct sp_region_data r[] = {region("a", NULL, NULL, NULL, 3)};
	struct sp_rank rk = {.rank = 0, .nregions = 1, .regions = r};
	struct sp_nest nest;
	struct sp_error err = {0};
	assert_int_equal(sp_nest_rank(&rk, &nest, &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "'a'"));
}

/* The walk's visitor: records the depth of each call. */
static int depth_visit(void *ctx, const struct sp_nest_call *c, int64_t parent_tag, int64_t *tag)
{
	size_t *depths = ctx;
	depths[c->pos] = c->depth;
	*tag = (int64_t)c->pos;
	return 0;
}

static void test_walk_depth_and_sorted_copy(void **state)
{
	int64_t s[] = {0, 1, 2, 3}, e[] = {10, 9, 8, 4};
	struct sp_nest_column col = {s, e, NULL, 4};
	size_t d1[4], d2[4];
	struct sp_error err = {0};
	assert_int_equal(sp_nest_walk(&col, 1, 0, depth_visit, d1, &err), SP_OK);
	assert_int_equal(sp_nest_walk(&col, 1, SP_NEST_ALWAYS_SORT, depth_visit, d2, &err), SP_OK);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(d1[i], i);
		assert_int_equal(d2[i], i);
	}
}

/* The walk's order, recorded: (region, call) by pos. */
struct order {
	int32_t *region;
	size_t *call, n;
};

static int order_visit(void *ctx, const struct sp_nest_call *c, int64_t parent_tag, int64_t *tag)
{
	struct order *o = ctx;
	assert_int_equal(c->pos, o->n);
	o->region[o->n] = c->region;
	o->call[o->n++] = c->call;
	*tag = (int64_t)c->pos;
	return 0;
}

/* Walks cols both ways (columns as stored, and every one through a sorted
 * copy) and checks that both visit exactly (region, call) = want. */
static void check_order(const struct sp_nest_column *cols, size_t ncols, const int32_t *want_region,
			const size_t *want_call, size_t n)
{
	for (unsigned flags = 0; flags <= SP_NEST_ALWAYS_SORT; flags += SP_NEST_ALWAYS_SORT) {
		struct order o = {malloc((n ? n : 1) * sizeof *o.region), malloc((n ? n : 1) * sizeof *o.call), 0};
		struct sp_error err = {0};
		assert_true(o.region && o.call);
		assert_int_equal(sp_nest_walk(cols, ncols, flags, order_visit, &o, &err), SP_OK);
		assert_int_equal(o.n, n);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(o.region[i], want_region[i]);
			assert_int_equal(o.call[i], want_call[i]);
		}
		free(o.region);
		free(o.call);
	}
}

static void test_walk_tie_order(void **state)
{
	/* Equal starts: the longer first; equal start and end, across regions
	 * and within one: the lower region, then the earlier call; an empty
	 * column does not shift the regions' order; lanes do not change the
	 * order of the visits; calls at either end of time. */
	int64_t s0[] = {0, 5, 5, INT64_MAX}, e0[] = {10, 9, 9, INT64_MAX};
	int64_t s1[] = {0, 5}, e1[] = {10, 9};
	int32_t l1[] = {1, 0};
	int64_t s2[] = {0, 5, INT64_MAX}, e2[] = {20, 7, INT64_MAX};
	int64_t s4[] = {INT64_MIN, 5, INT64_MAX}, e4[] = {0, 9, INT64_MAX};
	int32_t l4[] = {2, 1, 2};
	struct sp_nest_column cols[] = {{s0, e0, NULL, 4}, {s1, e1, l1, 2}, {s2, e2, NULL, 3}, {NULL, NULL, NULL, 0},
					{s4, e4, l4, 3}};
	const int32_t region[] = {4, 2, 0, 1, 0, 0, 1, 4, 2, 0, 2, 4};
	const size_t call[] = {0, 0, 0, 0, 1, 2, 1, 1, 1, 3, 2, 2};
	check_order(cols, 5, region, call, 12);
}

/* One call of the reference order. */
struct ref_call {
	int64_t start, end;
	int32_t region;
	size_t call;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref_call *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	if (x->region != y->region)
		return x->region < y->region ? -1 : 1;
	return x->call < y->call ? -1 : x->call > y->call;
}

static int start_cmp(const void *a, const void *b)
{
	const struct ref_call *x = a, *y = b;
	return x->start != y->start ? (x->start < y->start ? -1 : 1) : (x->end > y->end ? -1 : x->end < y->end);
}

/* Many columns with ties everywhere (a few timestamps, many equal spans),
 * some empty, some out of order, some with lanes: the walk's order is the
 * rule's, start, the longer first, region, call, over all lanes at once. */
static void test_walk_order_random(void **state)
{
	unsigned seed = 7;
	for (int round = 0; round < 40; round++) {
		size_t ncols = 1 + (size_t)(rand_r(&seed) % 60), n = 0;
		struct sp_nest_column *cols = calloc(ncols, sizeof *cols);
		struct ref_call *ref = malloc(ncols * 40 * sizeof *ref);
		assert_true(cols && ref);
		for (size_t r = 0; r < ncols; r++) {
			size_t calls = (size_t)(rand_r(&seed) % 5 == 0 ? 0 : rand_r(&seed) % 40);
			struct ref_call *rc = &ref[n];
			for (size_t k = 0; k < calls; k++) {
				int64_t start = rand_r(&seed) % 30;
				rc[k] = (struct ref_call){start, start + rand_r(&seed) % 4, (int32_t)r, 0};
				if (rand_r(&seed) % 20 == 0)   /* at the end of time */
					rc[k].start = INT64_MAX, rc[k].end = INT64_MAX - rand_r(&seed) % 2;
			}
			if (rand_r(&seed) % 3 != 0)  /* else left out of order */
				qsort(rc, calls, sizeof *rc, start_cmp);
			int64_t *s = malloc((calls ? calls : 1) * sizeof *s), *e = malloc((calls ? calls : 1) * sizeof *e);
			int32_t *l = rand_r(&seed) % 2 ? malloc((calls ? calls : 1) * sizeof *l) : NULL;
			assert_true(s && e);
			for (size_t k = 0; k < calls; k++) {
				s[k] = rc[k].start;
				e[k] = rc[k].end;
				rc[k].call = k;
				if (l)
					l[k] = rand_r(&seed) % 3;
			}
			cols[r] = (struct sp_nest_column){s, e, l, calls};
			n += calls;
		}
		qsort(ref, n, sizeof *ref, ref_cmp);
		int32_t *region = malloc((n ? n : 1) * sizeof *region);
		size_t *call = malloc((n ? n : 1) * sizeof *call);
		assert_true(region && call);
		for (size_t i = 0; i < n; i++) {
			region[i] = ref[i].region;
			call[i] = ref[i].call;
		}
		check_order(cols, ncols, region, call, n);
		for (size_t r = 0; r < ncols; r++) {
			free((void *)cols[r].starts);
			free((void *)cols[r].ends);
			free((void *)cols[r].lanes);
		}
		free(cols);
		free(ref);
		free(region);
		free(call);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_starts_longer_is_parent),
		cmocka_unit_test(test_zero_length_calls),
		cmocka_unit_test(test_partial_overlap_is_a_sibling),
		cmocka_unit_test(test_lanes_nest_apart),
		cmocka_unit_test(test_out_of_order_columns),
		cmocka_unit_test(test_events_not_loaded),
		cmocka_unit_test(test_walk_depth_and_sorted_copy),
		cmocka_unit_test(test_walk_tie_order),
		cmocka_unit_test(test_walk_order_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_analysis.c - unit tests of the time axis, per-rank totals, imbalance
 * and self time (sp_analysis.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_analysis.h"
#include "sp_clock.h"
#include "sp_tree.h"

static struct sp_region_data region(const char *name, int64_t calls, int64_t total, int64_t first,
				    int64_t last)
{
	struct sp_region_data rd = {0};
	rd.name = (char *)name;
	rd.stats.num_calls = calls;
	rd.stats.total_ns = total;
	rd.stats.first_start_ns = first;
	rd.stats.last_end_ns = last;
	return rd;
}

static void test_time_axis(void **state)
{
	struct sp_region_data r0[] = {region("solve", 3, 650, 1000, 2200), region("io", 1, 50, 900, 950)};
	struct sp_region_data r1[] = {region("solve", 3, 1040, 1100, 2500)};
	struct sp_rank ranks[] = {
		{.rank = 0, .run_start_ns = 500, .run_end_ns = 3000, .nregions = 2, .regions = r0},
		{.rank = 1, .run_start_ns = 450, .run_end_ns = 2900, .nregions = 1, .regions = r1},
	};
	struct sp_profile p = {.format_version = 1, .nranks = 2, .ranks = ranks};
	assert_int_equal(sp_rank_first_start(&ranks[0]), 900);
	assert_int_equal(sp_rank_last_end(&ranks[0]), 2200);
	assert_int_equal(sp_rank_span(&ranks[0]), 2500);          /* the recorded run */
	assert_int_equal(sp_profile_time_origin(&p), 450);        /* earliest run start */
	assert_int_equal(sp_profile_time_span(&p), 2500 - 900);   /* first entry to last exit */
	assert_int_equal(sp_profile_startup(&p), 900 - 450);
	/* Without run starts: the first region entry is the origin. */
	ranks[0].run_start_ns = ranks[1].run_start_ns = SP_NO_TIME;
	ranks[0].run_end_ns = ranks[1].run_end_ns = SP_NO_TIME;
	assert_int_equal(sp_profile_time_origin(&p), 900);
	assert_int_equal(sp_profile_startup(&p), SP_NO_TIME);
	assert_int_equal(sp_rank_span(&ranks[0]), 2200 - 900);
	/* An empty profile. */
	struct sp_profile empty = {0};
	assert_int_equal(sp_profile_time_origin(&empty), SP_NO_TIME);
	assert_int_equal(sp_profile_time_span(&empty), 0);
}

static void test_hostile_times_do_not_overflow(void **state)
{
	struct sp_region_data r[] = {region("x", 1, 0, INT64_MIN + 1, INT64_MAX)};
	struct sp_rank rk = {.run_start_ns = SP_NO_TIME, .run_end_ns = SP_NO_TIME, .nregions = 1, .regions = r};
	assert_int_equal(sp_rank_span(&rk), 0);
}

static void test_rank_totals_and_imbalance(void **state)
{
	/* The two-rank file of the seed page: 0.65 s and 1.04 s, 1.60x. */
	struct sp_region_data r0[] = {region("solve", 3, 650000000, 0, 1), region("io", 1, 5, 0, 1)};
	struct sp_region_data r1[] = {region("solve", 3, 1040000000, 0, 1)};
	struct sp_rank ranks[] = {{.rank = 0, .nregions = 2, .regions = r0},
				  {.rank = 1, .nregions = 1, .regions = r1}};
	struct sp_profile p = {.nranks = 2, .ranks = ranks};
	int64_t totals[2];
	assert_int_equal(sp_region_rank_totals(&p, "solve", totals), 2);
	assert_int_equal(totals[0], 650000000);
	assert_int_equal(totals[1], 1040000000);
	assert_true(fabs(sp_imbalance(totals, 2) - 1.6) < 1e-12);
	assert_int_equal(sp_region_rank_totals(&p, "io", totals), 1);
	assert_int_equal(totals[1], 0);
	assert_true(isinf(sp_imbalance(totals, 2)));
	assert_int_equal(sp_region_rank_totals(&p, "absent", totals), 0);
	/* Nothing recorded anywhere: not defined (diff prints "-", JSON null). */
	int64_t zeros[] = {0, 0};
	assert_true(isnan(sp_imbalance(zeros, 2)));
	assert_true(isnan(sp_imbalance(NULL, 0)));
	int64_t same[] = {7, 7, 7};
	assert_true(sp_imbalance(same, 3) == 1.0);
}

/* The one definition every report uses: slowest over fastest. */
static void test_imbalance_of(void **state)
{
	assert_true(fabs(sp_imbalance_of(1040000000, 650000000) - 1.6) < 1e-12);
	assert_true(sp_imbalance_of(5, 5) == 1.0);
	assert_true(isinf(sp_imbalance_of(5, 0)));          /* a rank without it: 0 s */
	assert_true(isnan(sp_imbalance_of(0, 0)));
	assert_true(isnan(sp_imbalance_of(-1, -1)));        /* hostile totals */
	assert_true(sp_imbalance_of(INT64_MAX, 1) > 9e18);
}

static void test_self_time(void **state)
{
	struct sp_tree_node tree[] = {
		{.parent = -1, .region = 0, .calls = 6, .total_ns = 1000},
		{.parent = 0, .region = 1, .calls = 6, .total_ns = 300},
		{.parent = 0, .region = 2, .calls = 6, .total_ns = 650},
		{.parent = 2, .region = 1, .calls = 1, .total_ns = 700},   /* inconsistent: clamps */
	};
	struct sp_rank rk = {.ntree = 4, .tree = tree};
	assert_int_equal(sp_tree_self_ns(&rk, 0), 50);
	assert_int_equal(sp_tree_self_ns(&rk, 1), 300);
	assert_int_equal(sp_tree_self_ns(&rk, 2), 0);
}

/* A region with the given calls (columns borrowed, stats computed). */
static struct sp_region_data with_calls(const char *name, int64_t *starts, int64_t *ends,
					int32_t *lanes, size_t n)
{
	struct sp_region_data rd = {0};
	rd.name = (char *)name;
	rd.starts = starts;
	rd.ends = ends;
	rd.lanes = lanes;
	sp_stats_compute(&rd.stats, starts, ends, n);
	return rd;
}

/* A recursive fib under main: the total counts the outermost call only,
 * the self time is every call less its direct children; calls still count
 * every call. */
static void test_region_times_recursion(void **state)
{
	int64_t ms[] = {0}, me[] = {1000};
	int64_t fs[] = {100, 200, 300, 500, 550}, fe[] = {900, 800, 400, 700, 600};
	struct sp_region_data r[] = {with_calls("main", ms, me, NULL, 1), with_calls("fib", fs, fe, NULL, 5)};
	struct sp_rank rk = {.nregions = 2, .regions = r};
	assert_int_equal(sp_tree_build(&rk, NULL), SP_OK);
	int64_t cum[2], self[2];
	assert_int_equal(sp_rank_region_times(&rk, cum, self), 1);
	assert_int_equal(r[1].stats.total_ns, 800 + 600 + 100 + 200 + 50);   /* the raw sum */
	assert_int_equal(cum[1], 800);                                        /* the outermost call */
	assert_int_equal(self[1], 200 + 300 + 100 + 150 + 50);
	assert_int_equal(cum[0], 1000);
	assert_int_equal(self[0], 200);
	assert_int_equal(r[1].stats.num_calls, 5);
	/* Without self wanted. */
	cum[1] = 0;
	assert_int_equal(sp_rank_region_times(&rk, cum, NULL), 1);
	assert_int_equal(cum[1], 800);
	free(rk.tree);
}

/* a -> b -> a -> b: each region counted once at its outermost call; self
 * times add up to the run. */
static void test_region_times_mutual(void **state)
{
	int64_t as[] = {0, 20}, ae[] = {100, 80}, bs[] = {10, 30}, be[] = {90, 40};
	struct sp_region_data r[] = {with_calls("a", as, ae, NULL, 2), with_calls("b", bs, be, NULL, 2)};
	struct sp_rank rk = {.nregions = 2, .regions = r};
	assert_int_equal(sp_tree_build(&rk, NULL), SP_OK);
	int64_t cum[2], self[2];
	assert_int_equal(sp_rank_region_times(&rk, cum, self), 1);
	assert_int_equal(cum[0], 100);
	assert_int_equal(cum[1], 80);
	assert_int_equal(self[0], (100 - 80) + (60 - 10));
	assert_int_equal(self[1], (80 - 60) + 10);
	assert_int_equal(self[0] + self[1], 100);
	free(rk.tree);
}

/* Calls of one region in two lanes (threads) at once do not nest: both
 * count. */
static void test_region_times_lanes(void **state)
{
	int64_t fs[] = {0, 10}, fe[] = {100, 50};
	int32_t lanes[] = {0, 1};
	struct sp_region_data r[] = {with_calls("f", fs, fe, lanes, 2)};
	struct sp_rank rk = {.nregions = 1, .regions = r};
	assert_int_equal(sp_tree_build(&rk, NULL), SP_OK);
	int64_t cum[1], self[1];
	assert_int_equal(sp_rank_region_times(&rk, cum, self), 1);
	assert_int_equal(cum[0], 140);
	assert_int_equal(self[0], 140);
	/* One lane: the second call is inside the first. */
	lanes[1] = 0;
	assert_int_equal(sp_tree_build(&rk, NULL), SP_OK);
	assert_int_equal(sp_rank_region_times(&rk, cum, self), 1);
	assert_int_equal(cum[0], 100);
	assert_int_equal(self[0], 100);
	free(rk.tree);
}

/* No tree: the file's cumulative_ns where known, else the raw sum (and the
 * answer says so); an aggregate's recorded self time; a damaged tree's bad
 * nodes are passed over. */
static void test_region_times_fallbacks(void **state)
{
	struct sp_region_data r[] = {region("rec", 3, 300, 0, 200), region("agg", 4, 40, 0, 10)};
	r[1].aggregate = 1;
	r[1].self_ns = 7;
	struct sp_rank rk = {.nregions = 2, .regions = r};
	int64_t cum[2], self[2];
	assert_int_equal(sp_rank_region_times(&rk, cum, self), 0);
	assert_int_equal(cum[0], 300);
	assert_int_equal(self[0], 300);
	assert_int_equal(self[1], 7);
	r[0].cumulative_ns = 200;
	r[1].cumulative_ns = 40;
	assert_int_equal(sp_rank_region_times(&rk, cum, self), 1);
	assert_int_equal(cum[0], 200);
	assert_int_equal(cum[1], 40);
	/* A tree with a node naming no region and one whose parent follows it. */
	struct sp_tree_node tree[] = {
		{.parent = -1, .region = 0, .calls = 1, .total_ns = 200},
		{.parent = 0, .region = 0, .calls = 1, .total_ns = 100},
		{.parent = 1, .region = 9, .calls = 1, .total_ns = 50},
		{.parent = 5, .region = 1, .calls = 1, .total_ns = 5},
		{.parent = -1, .region = 1, .calls = 4, .total_ns = 40},
	};
	rk.tree = tree;
	rk.ntree = 5;
	assert_int_equal(sp_rank_region_times(&rk, cum, self), 1);
	assert_int_equal(cum[0], 300 - 100);
	assert_int_equal(self[0], 300 - 100);   /* the outer call's child: the inner one */
	assert_int_equal(cum[1], 40);
	assert_int_equal(self[1], 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_axis),
		cmocka_unit_test(test_hostile_times_do_not_overflow),
		cmocka_unit_test(test_rank_totals_and_imbalance),
		cmocka_unit_test(test_imbalance_of),
		cmocka_unit_test(test_self_time),
		cmocka_unit_test(test_region_times_recursion),
		cmocka_unit_test(test_region_times_mutual),
		cmocka_unit_test(test_region_times_lanes),
		cmocka_unit_test(test_region_times_fallbacks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

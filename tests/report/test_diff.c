/* test_diff.c - unit tests of the diff statistics (sp_diff.h): the merge
 * over ranks, imbalance, the change, the --fail-above bound and its line. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_clock.h"
#include "sp_diff.h"

static struct sp_region_data region(const char *name, int64_t calls, int64_t total)
{
	struct sp_region_data rd = {0};
	rd.name = (char *)name;
	rd.stats.num_calls = calls;
	rd.stats.total_ns = total;
	rd.stats.first_start_ns = 0;
	rd.stats.last_end_ns = total;
	return rd;
}

static struct sp_rank rank(int n, struct sp_region_data *r, size_t nr)
{
	return (struct sp_rank){.rank = n, .run_start_ns = SP_NO_TIME, .run_end_ns = SP_NO_TIME,
				.nregions = nr, .regions = r};
}

static const struct sp_diff_row *row(const struct sp_diff *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->rows[i].name, name) == 0)
			return &d->rows[i];
	fail_msg("no row %s", name);
	return NULL;
}

/* One rank each: change, percent, ratio, only-in rows, sort by change. */
static void test_one_rank(void **state)
{
	struct sp_region_data a[] = {region("solve", 2, 1000), region("io", 1, 100), region("old", 1, 5)};
	struct sp_region_data b[] = {region("solve", 2, 1250), region("io", 1, 50), region("new", 1, 7)};
	struct sp_rank ra = rank(0, a, 3), rb = rank(0, b, 3);
	struct sp_profile pa = {.nranks = 1, .ranks = &ra}, pb = {.nranks = 1, .ranks = &rb};
	struct sp_diff d;
	struct sp_error err = {0};
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", NULL, 0, NAN, 0, &err), SP_OK);
	assert_int_equal(d.n, 4);
	assert_false(d.several);
	assert_string_equal(d.rows[0].name, "solve");    /* largest |change| first */
	const struct sp_diff_row *s = row(&d, "solve");
	assert_true(s->change == 250.0);
	assert_true(fabs(s->pct - 25.0) < 1e-12);
	assert_true(fabs(s->ratio - 1.25) < 1e-12);
	assert_true(fabs(row(&d, "io")->pct + 50.0) < 1e-12);
	assert_null(row(&d, "old")->b);
	assert_null(row(&d, "new")->a);
	assert_true(isnan(row(&d, "new")->pct));
	assert_null(d.worst);
	char line[256];
	assert_null(sp_diff_worst_line(&d, line, sizeof line));
	sp_diff_free(&d);

	/* The bound: solve grew 25 %, past 10 %; sorted by name. */
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", NULL, 1, 10.0, 0, &err), SP_OK);
	assert_string_equal(d.rows[0].name, "io");
	assert_int_equal(d.nabove, 1);
	assert_ptr_equal(d.worst, row(&d, "solve"));
	assert_non_null(sp_diff_worst_line(&d, line, sizeof line));
	assert_non_null(strstr(line, "'solve' grew by 25.0%"));
	assert_non_null(strstr(line, "more than --fail-above 10%; 1 region above the bound"));
	sp_diff_free(&d);
	/* Exactly at the bound is not above it. */
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", NULL, 0, 25.0, 0, &err), SP_OK);
	assert_null(d.worst);
	sp_diff_free(&d);
}

/* Several ranks: total/rank, slowest, imbalance with a missing rank. */
static void test_ranks_and_imbalance(void **state)
{
	struct sp_region_data a0[] = {region("solve", 1, 600), region("halo", 1, 10)};
	struct sp_region_data a1[] = {region("solve", 1, 960)};
	struct sp_region_data b0[] = {region("solve", 1, 600), region("halo", 1, 10)};
	struct sp_region_data b1[] = {region("solve", 1, 1200), region("halo", 1, 10)};
	struct sp_rank ra[] = {rank(0, a0, 2), rank(1, a1, 1)}, rb[] = {rank(0, b0, 2), rank(1, b1, 2)};
	struct sp_profile pa = {.nranks = 2, .ranks = ra}, pb = {.nranks = 2, .ranks = rb};
	struct sp_diff d;
	struct sp_error err = {0};
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", NULL, 0, 15.0, 0, &err), SP_OK);
	assert_true(d.several);
	const struct sp_diff_row *s = row(&d, "solve");
	assert_true(s->a->per_rank == 780.0);
	assert_int_equal(s->a->slowest, 960);
	assert_int_equal(s->a->fastest, 600);
	assert_true(fabs(s->a->imbalance - 1.6) < 1e-12);
	assert_true(fabs(s->b->imbalance - 2.0) < 1e-12);
	/* total/rank grew 15.4 %, the slowest rank 25 %: the bound sees 25. */
	assert_true(fabs(s->slow_pct - 25.0) < 1e-12);
	assert_true(s->above);
	/* halo's total/rank doubled (5 -> 10): the worst, by total/rank. */
	assert_int_equal(d.nabove, 2);
	assert_ptr_equal(d.worst, row(&d, "halo"));
	assert_true(fabs(d.worst_pct - 100.0) < 1e-12);
	char line[256];
	assert_non_null(strstr(sp_diff_worst_line(&d, line, sizeof line), "'halo' (total/rank) grew by 100.0%"));
	sp_diff_free(&d);
	/* Without halo, solve is the worst, by its slowest rank. */
	struct sp_select sel = {0};
	assert_int_equal(sp_select_option(&sel, SP_SELECT_EXCLUDE, "halo", &err), SP_OK);
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", &sel, 0, 15.0, 0, &err), SP_OK);
	assert_true(fabs(d.worst_pct - 25.0) < 1e-12);
	assert_non_null(strstr(sp_diff_worst_line(&d, line, sizeof line), "'solve' (slowest rank) grew by 25.0%"));
	sp_diff_free(&d);
	sp_select_free(&sel);
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", NULL, 0, 15.0, 0, &err), SP_OK);
	const struct sp_diff_row *h = row(&d, "halo");
	assert_int_equal(h->a->present, 1);
	assert_int_equal(h->a->fastest, 0);             /* rank 1 lacks it: 0 s */
	assert_true(isinf(h->a->imbalance));
	assert_true(h->b->imbalance == 1.0);
	sp_diff_free(&d);
}

/* No rank selected, and a region of 0 s on every rank. */
static void test_no_rank_and_zero(void **state)
{
	struct sp_region_data a0[] = {region("idle", 3, 0)};
	struct sp_rank ra[] = {rank(0, a0, 1), rank(1, a0, 1)};
	struct sp_profile pa = {.nranks = 2, .ranks = ra};
	struct sp_select sel = {0};
	struct sp_diff d;
	struct sp_error err = {0};
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pa, "a.h5", NULL, 0, NAN, 0, &err), SP_OK);
	assert_true(isnan(d.rows[0].a->imbalance));
	assert_true(isnan(d.rows[0].pct));
	sp_diff_free(&d);
	assert_int_equal(sp_select_option(&sel, SP_SELECT_RANKS, "5", &err), SP_OK);
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pa, "a.h5", &sel, 0, NAN, 0, &err), SP_EINVAL);
	assert_string_equal(err.msg, "a.h5: no rank selected: the profile has ranks 0,1");
	sp_diff_free(&d);
	sp_select_free(&sel);
}

static void test_parse_percent(void **state)
{
	double v = -1;
	assert_int_equal(sp_diff_parse_percent("10", &v), 0);
	assert_true(v == 10.0);
	assert_int_equal(sp_diff_parse_percent("2.5%", &v), 0);
	assert_true(v == 2.5);
	const char *bad[] = {"-1", "abc", "", "10%%", "nan", "inf", "5x", "1e999"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(sp_diff_parse_percent(bad[i], &v), -1);
}

/* The rendered table and JSON, through a memory stream. */
static void test_render(void **state)
{
	struct sp_region_data a[] = {region("solve", 2, 1000000000)};
	struct sp_region_data b[] = {region("solve", 2, 1500000000)};
	struct sp_rank ra = rank(0, a, 1), rb = rank(0, b, 1);
	struct sp_profile pa = {.nranks = 1, .ranks = &ra}, pb = {.nranks = 1, .ranks = &rb};
	struct sp_diff d;
	struct sp_error err = {0};
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", NULL, 0, NAN, 0, &err), SP_OK);
	FILE *f = open_memstream(&text, &len);
	assert_int_equal(sp_diff_render(f, &d, 0, &err), SP_OK);
	fclose(f);
	assert_non_null(strstr(text, "A: a.h5 (1 rank, run span 1.000000 s)\n"));
	assert_non_null(strstr(text, "solve   2   2  1.000000 1.500000  0.500000 0.750000  +0.500000 +50.0%  1.50x\n"));
	assert_non_null(strstr(text, "1 region in both (1 slower, 0 faster), 0 only in A, 0 only in B\n"));
	free(text);
	f = open_memstream(&text, &len);
	assert_int_equal(sp_diff_render(f, &d, 1, &err), SP_OK);
	fclose(f);
	assert_non_null(strstr(text, "\"change_pct\": 50.000000"));
	assert_non_null(strstr(text, "\"fail_above_pct\": null"));
	free(text);
	sp_diff_free(&d);
}

/* The one-sided Mann-Whitney test against known values (scipy.stats.
 * mannwhitneyu(b, a * scale, alternative="greater", method="asymptotic",
 * use_continuity=True)). */
static void test_mann_whitney(void **state)
{
	const double a5[] = {1, 2, 3, 4, 5}, b5[] = {6, 7, 8, 9, 10};
	const double a6[] = {1, 2, 2, 3, 5, 8}, b7[] = {2, 3, 5, 5, 9, 10, 12};
	const double same[] = {2, 1, 3}, same2[] = {1, 2, 3}, flat[] = {4, 4, 4};
	double p;
	assert_int_equal(sp_diff_mann_whitney(a5, 5, b5, 5, 1.0, &p), 0);
	assert_true(fabs(p - 0.006092890177672406) < 1e-12);
	/* Ties share their mean rank and shrink the variance. */
	assert_int_equal(sp_diff_mann_whitney(a6, 6, b7, 7, 1.0, &p), 0);
	assert_true(fabs(p - 0.0557796527253911) < 1e-12);
	/* A's values made 1.5 times larger first. */
	assert_int_equal(sp_diff_mann_whitney(a6, 6, b7, 7, 1.5, &p), 0);
	assert_true(fabs(p - 0.23568662617229846) < 1e-12);
	assert_int_equal(sp_diff_mann_whitney(same2, 3, same, 3, 1.0, &p), 0);
	assert_true(fabs(p - 0.5902615116112394) < 1e-12);
	/* B below A: p near 1; every value tied or nothing to compare: 1. */
	assert_int_equal(sp_diff_mann_whitney(b5, 5, a5, 5, 1.0, &p), 0);
	assert_true(p > 0.99);
	assert_int_equal(sp_diff_mann_whitney(flat, 3, flat, 3, 1.0, &p), 0);
	assert_true(p == 1.0);
	assert_int_equal(sp_diff_mann_whitney(a5, 0, b5, 5, 1.0, &p), 0);
	assert_true(p == 1.0);
	/* The smallest p: every b above every a. */
	assert_true(fabs(sp_diff_min_p(5, 5) - 0.006092890177672406) < 1e-12);
	assert_true(fabs(sp_diff_min_p(3, 3) - 0.04042779918502612) < 1e-12);
	assert_true(fabs(sp_diff_min_p(3, 20) - 0.0035409401089347985) < 1e-12);
	assert_true(sp_diff_min_p(4, 4) > SP_DIFF_ALPHA && sp_diff_min_p(5, 5) < SP_DIFF_ALPHA);
	assert_true(sp_diff_min_p(0, 9) == 1.0);
}

static void test_parse_time(void **state)
{
	int64_t ns = -7;
	assert_int_equal(sp_diff_parse_time("1ms", &ns), 0);
	assert_int_equal(ns, 1000000);
	assert_int_equal(sp_diff_parse_time("500us", &ns), 0);
	assert_int_equal(ns, 500000);
	assert_int_equal(sp_diff_parse_time("250µs", &ns), 0);
	assert_int_equal(ns, 250000);
	assert_int_equal(sp_diff_parse_time("0.2s", &ns), 0);
	assert_int_equal(ns, 200000000);
	assert_int_equal(sp_diff_parse_time("2", &ns), 0);
	assert_int_equal(ns, 2000000000);
	assert_int_equal(sp_diff_parse_time("40ns", &ns), 0);
	assert_int_equal(ns, 40);
	assert_int_equal(sp_diff_parse_time("0", &ns), 0);
	assert_int_equal(ns, 0);
	ns = 5;
	const char *bad[] = {"", " 1ms", "-1ms", "1 ms", "1m", "ms", "nan", "inf", "1e300s", "1msx", "1S"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(sp_diff_parse_time(bad[i], &ns), -1);
	assert_int_equal(ns, 5);
}

/* The floor: a row under it in both files is never judged; the default is
 * 1 ms or 1 % of the longer span. */
static void test_floor(void **state)
{
	const int64_t ms = 1000000;
	struct sp_region_data a[] = {region("tiny", 4, 10000), region("big", 2, 50 * ms),
				     region("grows", 2, ms / 2), region("soars", 2, ms / 2)};
	struct sp_region_data b[] = {region("tiny", 4, 20000), region("big", 2, 60 * ms),
				     region("grows", 2, 18 * ms / 10), region("soars", 2, 30 * ms)};
	struct sp_rank ra = rank(0, a, 4), rb = rank(0, b, 4);
	struct sp_profile pa = {.nranks = 1, .ranks = &ra}, pb = {.nranks = 1, .ranks = &rb};
	struct sp_diff d;
	struct sp_error err = {0};
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", NULL, 0, 10.0, ms, &err), SP_OK);
	assert_int_equal(row(&d, "tiny")->verdict, SP_DIFF_BELOW_FLOOR);
	assert_false(row(&d, "tiny")->above);
	/* Over the floor in one file is enough to be judged on the totals. */
	assert_int_equal(row(&d, "grows")->verdict, SP_DIFF_ABOVE);
	assert_int_equal(row(&d, "big")->verdict, SP_DIFF_ABOVE);
	assert_int_equal(d.nabove, 3);
	assert_ptr_equal(d.worst, row(&d, "soars"));
	assert_true(d.min_time == ms);
	/* Two calls a side: no p can reach the level, so the totals decide
	 * and no file is opened (these paths do not exist); but only for a
	 * region over the floor in A, or far over it in B ("soars": twice the
	 * floor and grown by more than it): "grows", a little over it in B,
	 * may be one interrupted call. */
	assert_int_equal(sp_diff_confirm(&d, &err), SP_OK);
	assert_int_equal(d.nabove, 2);
	assert_ptr_equal(d.worst, row(&d, "soars"));
	assert_int_equal(row(&d, "soars")->verdict, SP_DIFF_ABOVE);
	assert_int_equal(row(&d, "grows")->verdict, SP_DIFF_FEW_CALLS);
	assert_false(row(&d, "big")->tested);
	assert_true(isnan(row(&d, "big")->p));
	sp_diff_free(&d);
	/* The default floor (min_time < 0): these files span 50 and 60 ms, so
	 * 1 ms. */
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", NULL, 0, 10.0, -1, &err), SP_OK);
	assert_true(d.min_time == ms);
	assert_int_equal(row(&d, "tiny")->verdict, SP_DIFF_BELOW_FLOOR);
	sp_diff_free(&d);
	assert_true(sp_diff_default_floor(0, 0) == ms);
	assert_true(sp_diff_default_floor(3000 * ms, 200 * ms) == 30 * ms);
	/* Without a bound nothing is judged. */
	assert_int_equal(sp_diff_compare(&d, &pa, "a.h5", &pb, "b.h5", NULL, 0, NAN, ms, &err), SP_OK);
	assert_int_equal(row(&d, "tiny")->verdict, SP_DIFF_UNJUDGED);
	assert_null(d.worst);
	sp_diff_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_rank),
		cmocka_unit_test(test_ranks_and_imbalance),
		cmocka_unit_test(test_no_rank_and_zero),
		cmocka_unit_test(test_parse_percent),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_mann_whitney),
		cmocka_unit_test(test_parse_time),
		cmocka_unit_test(test_floor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

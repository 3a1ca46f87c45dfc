/* test_stats.c - the statistics as sums (sp_stats_acc), added a call at
 * a time or a column at a time (sp_stats_acc_columns: the end of a run's
 * pass over each region's events), give what sp_stats_compute gives from
 * the same events. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sp_clock.h"
#include "sp_profile.h"

/* The same sums, field by field. */
static void assert_same_acc(const struct sp_stats_acc *x, const struct sp_stats_acc *y)
{
	assert_int_equal(x->n, y->n);
	assert_int_equal(x->total, y->total);
	assert_int_equal(x->min, y->min);
	assert_int_equal(x->max, y->max);
	assert_int_equal(x->last_end, y->last_end);
	assert_true(x->squares == y->squares);
	assert_int_equal(x->overflow, y->overflow);
}

/* The calls added a column at a time, whole and in two parts (the second
 * added to sums that hold the first), give the sums of one call at a time. */
static void check_columns(const struct sp_stats_acc *want, const int64_t *starts, const int64_t *ends,
			  size_t n)
{
	struct sp_stats_acc whole, parts;
	sp_stats_acc_init(&whole);
	sp_stats_acc_columns(&whole, starts, ends, n);
	assert_same_acc(&whole, want);
	sp_stats_acc_init(&parts);
	sp_stats_acc_columns(&parts, starts, ends, n / 3);
	sp_stats_acc_columns(&parts, starts + n / 3, ends + n / 3, n - n / 3);
	assert_same_acc(&parts, want);
}

/* The stats of n calls both ways; they must agree. */
static void check_same(const int64_t *starts, const int64_t *ends, size_t n)
{
	struct sp_stats_acc a;
	sp_stats_acc_init(&a);
	for (size_t i = 0; i < n; i++)
		sp_stats_acc_add(&a, ends[i] - starts[i], ends[i]);
	check_columns(&a, starts, ends, n);
	struct sp_stats want, got;
	sp_stats_compute(&want, starts, ends, n);
	assert_int_equal(sp_stats_from_acc(&got, &a, n ? starts[0] : 0), 0);
	assert_int_equal(got.num_calls, want.num_calls);
	assert_int_equal(got.total_ns, want.total_ns);
	assert_int_equal(got.min_ns, want.min_ns);
	assert_int_equal(got.max_ns, want.max_ns);
	assert_int_equal(got.first_start_ns, want.first_start_ns);
	assert_int_equal(got.last_end_ns, want.last_end_ns);
	assert_true(got.mean_ns == want.mean_ns);
	assert_true(fabs(got.std_ns - want.std_ns) <= 1e-9 * want.std_ns + 1e-9);
}

static void test_empty(void **state)
{
	struct sp_stats_acc a;
	sp_stats_acc_init(&a);
	struct sp_stats st;
	assert_int_equal(sp_stats_from_acc(&st, &a, 0), 0);
	assert_int_equal(st.num_calls, 0);
	assert_int_equal(st.first_start_ns, SP_NO_TIME);
	assert_int_equal(st.last_end_ns, SP_NO_TIME);
	check_same(NULL, NULL, 0);
}

/* Nested calls (a recursion: later starts, earlier ends), zero-length
 * calls and one slow first call (warm-up: the mean far from most). */
static void test_same_as_from_events(void **state)
{
	enum { N = 5000 };
	static int64_t starts[N], ends[N];
	srand(7);
	int64_t t = 1000000;
	for (size_t i = 0; i < N; i++) {
		starts[i] = t;
		int64_t d = i == 0 ? 50000000 : i % 97 == 0 ? 0 : 900 + rand() % 300;
		ends[i] = starts[i] + d;
		t += 1 + rand() % 2000;
	}
	check_same(starts, ends, N);
	/* A recursion of depth 50: every call contains the next. */
	for (size_t i = 0; i < 50; i++) {
		starts[i] = 100 + (int64_t)i;
		ends[i] = 100000 - (int64_t)i * 3;
	}
	check_same(starts, ends, 50);
	check_same(starts, ends, 1);
}

/* One call of months among 1023 empty ones: n sum(d^2) no longer fits 128
 * bits, the variance comes from long double; still the events' figure. */
static void test_long_calls(void **state)
{
	enum { N = 1024 };
	static int64_t starts[N], ends[N];
	for (size_t i = 0; i < N; i++)
		starts[i] = ends[i] = (int64_t)i;
	ends[0] = INT64_C(1) << 62;
	struct sp_stats_acc a;
	sp_stats_acc_init(&a);
	for (size_t i = 0; i < N; i++)
		sp_stats_acc_add(&a, ends[i] - starts[i], ends[i]);
	assert_int_equal(a.overflow, 0);
	check_columns(&a, starts, ends, N);   /* past the columns' bounds: summed a call at a time */
	struct sp_stats want, got;
	sp_stats_compute(&want, starts, ends, N);
	assert_int_equal(sp_stats_from_acc(&got, &a, starts[0]), 0);
	assert_true(fabs(got.std_ns - want.std_ns) <= 1e-9 * want.std_ns);
	assert_int_equal(got.total_ns, want.total_ns);
	assert_int_equal(got.last_end_ns, want.last_end_ns);
}

/* Sums that wrap are flagged: the caller computes from the events. */
static void test_overflow_is_refused(void **state)
{
	struct sp_stats_acc a;
	sp_stats_acc_init(&a);
	for (int i = 0; i < 3; i++)   /* the total passes 2^63 */
		sp_stats_acc_add(&a, INT64_MAX / 2, INT64_MAX / 2);
	assert_int_equal(a.overflow, 1);
	int64_t starts[3] = {0, 0, 0}, ends[3] = {INT64_MAX / 2, INT64_MAX / 2, INT64_MAX / 2};
	struct sp_stats_acc c;
	sp_stats_acc_init(&c);
	sp_stats_acc_columns(&c, starts, ends, 3);
	assert_int_equal(c.overflow, 1);
	struct sp_stats st = {.num_calls = 42};
	assert_int_equal(sp_stats_from_acc(&st, &a, 0), -1);
	assert_int_equal(st.num_calls, 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_same_as_from_events),
		cmocka_unit_test(test_long_calls),
		cmocka_unit_test(test_overflow_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

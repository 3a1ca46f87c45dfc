/* test_recorder.c - unit tests of the event columns (growth, overflow,
 * out-of-memory behaviour) and of the clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "sp_clock.h"
#include "sp_recorder.h"

static void test_first_use_allocates_a_few_events(void **state)
{
	struct sp_buf b;
	sp_buf_init(&b, 1024);
	assert_int_equal(b.cap, 0);
	assert_null(b.starts);
	assert_int_equal(sp_buf_reserve(&b), 0);
	assert_int_equal(b.cap, SP_BUF_FIRST_CAP);   /* not the limit: one call, a few events */
	sp_buf_free(&b);
	sp_buf_init(&b, 2);                          /* a limit below the first capacity */
	assert_int_equal(sp_buf_reserve(&b), 0);
	assert_int_equal(b.cap, 2);
	sp_buf_free(&b);
}

/* The capacities a buffer goes through: doubling from SP_BUF_FIRST_CAP up
 * to the limit, which it takes exactly, then doubling past it. */
static void test_grows_to_the_limit_then_doubles(void **state)
{
	static const struct {
		size_t limit, caps[16];
	} cases[] = {
		{1024, {3, 6, 12, 24, 48, 96, 192, 384, 768, 1024, 2048, 4096}},
		{1000, {3, 6, 12, 24, 48, 96, 192, 384, 768, 1000, 2000, 4000}},
		{5, {3, 5, 10, 20}},
		{4, {3, 4, 8, 16}},
		{3, {3, 6, 12}},
		{2, {2, 4, 8}},
		{1, {1, 2, 4, 8}},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		size_t cap = 0;
		for (size_t i = 0; i < 16 && cases[c].caps[i]; i++) {
			cap = sp_buf_next_cap(cap, cases[c].limit);
			assert_int_equal(cap, cases[c].caps[i]);
		}
		/* The buffer itself: limit events fit, the capacity true. */
		struct sp_buf b;
		sp_buf_init(&b, cases[c].limit);
		for (size_t i = 0; i < cases[c].limit; i++) {
			assert_int_equal(sp_buf_reserve(&b), (ptrdiff_t)i);
			assert_true(b.cap >= b.n && b.cap <= cases[c].limit);
		}
		assert_int_equal(b.cap, cases[c].limit);
		assert_int_equal(b.dropped, 0);
		sp_buf_free(&b);
	}
	assert_int_equal(sp_buf_next_cap(SIZE_MAX / 2 + 1, 1024), 0);   /* overflow */
}

static void test_doubles_when_full_and_keeps_events(void **state)
{
	struct sp_buf b;
	sp_buf_init(&b, 4);
	for (int64_t i = 0; i < 10; i++) {
		ptrdiff_t k = sp_buf_reserve(&b);
		assert_int_equal(k, i);
		b.starts[k] = i * 10;
		b.ends[k] = i * 10 + 1;
	}
	assert_int_equal(b.n, 10);
	assert_int_equal(b.cap, 16);   /* 4 -> 8 -> 16, as the seed shows */
	for (int64_t i = 0; i < 10; i++) {
		assert_int_equal(b.starts[i], i * 10);
		assert_int_equal(b.ends[i], i * 10 + 1);
	}
	sp_buf_clear(&b);
	assert_int_equal(b.n, 0);
	assert_int_equal(b.cap, 16);   /* clearing keeps the allocation */
	sp_buf_free(&b);
	assert_int_equal(b.cap, 0);
}

static void test_zero_initial_capacity_means_one(void **state)
{
	struct sp_buf b;
	sp_buf_init(&b, 0);
	assert_int_equal(sp_buf_reserve(&b), 0);
	assert_int_equal(b.cap, 1);
	assert_int_equal(sp_buf_reserve(&b), 1);
	assert_int_equal(b.cap, 2);
	sp_buf_free(&b);
}

static void test_large_columns_are_mapped_and_keep_events(void **state)
{
	struct sp_buf b;
	sp_buf_init(&b, 1000);
	size_t n = 3 * SP_BUF_MAP_BYTES / sizeof(int64_t);   /* crosses into mmap, then mremap */
	for (size_t i = 0; i < n; i++) {
		ptrdiff_t k = sp_buf_reserve(&b);
		assert_int_equal(k, (ptrdiff_t)i);
		b.starts[k] = (int64_t)i;
		b.ends[k] = (int64_t)i + 7;
		if (i == n / 2) {
			assert_int_equal(b.mapped, 1);
			/* Lanes turned on once mapped: zero for the calls so far. */
			assert_int_equal(sp_buf_keep_lanes(&b), 0);
			for (size_t j = 0; j <= i; j++)
				assert_int_equal(b.lanes[j], 0);
		}
		if (b.lanes)
			b.lanes[k] = (int32_t)(i & 7);
	}
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(b.starts[i], (int64_t)i);
		assert_int_equal(b.ends[i], (int64_t)i + 7);
		if (i > n / 2)
			assert_int_equal(b.lanes[i], (int32_t)(i & 7));
	}
	sp_buf_free(&b);
	assert_int_equal(b.mapped, 0);
	assert_null(b.starts);
}

static void test_overflowing_growth_fails_cleanly(void **state)
{
	struct sp_buf b;
	sp_buf_init(&b, 4);
	assert_int_equal(sp_buf_reserve(&b), 0);
	int64_t *starts = b.starts;
	/* Pretend the buffer is so large that doubling overflows size_t. */
	size_t real_cap = b.cap;
	b.cap = b.n = SIZE_MAX / 2 + 1;
	assert_int_equal(sp_buf_grow(&b), -1);
	assert_ptr_equal(b.starts, starts);         /* unchanged on failure */
	assert_int_equal(sp_buf_reserve(&b), -1);   /* the event is dropped... */
	assert_int_equal(b.dropped, 1);             /* ...and counted */
	/* Doubling that fits size_t but not size_t / 8 bytes also fails. */
	b.cap = b.n = SIZE_MAX / 16;
	assert_int_equal(sp_buf_grow(&b), -1);
	b.cap = real_cap;
	b.n = 1;
	sp_buf_free(&b);
}

/* After a failed growth the next is tried only once the calls dropped since
 * have doubled: a run whose memory ran out does not pay a failing mremap
 * for every call it drops, and grows again when memory comes back. */
static void test_growth_after_a_failure_waits_for_the_drops_to_double(void **state)
{
	struct sp_buf b;
	sp_buf_init(&b, 4);
	assert_int_equal(sp_buf_reserve(&b), 0);
	size_t real_cap = b.cap;
	b.cap = b.n = SIZE_MAX / 2 + 1;   /* doubling overflows: every growth fails */
	for (int i = 0; i < 4; i++)
		assert_int_equal(sp_buf_reserve(&b), -1);
	assert_int_equal(b.dropped, 4);   /* tried at 0, 1 and 3 dropped: next at 7 */
	assert_int_equal(b.retry_at, 7);
	b.cap = b.n = real_cap;           /* memory is back: a growth would work */
	for (int i = 4; i < 7; i++)
		assert_int_equal(sp_buf_reserve(&b), -1);
	assert_int_equal(b.dropped, 7);
	assert_int_equal(sp_buf_reserve(&b), (ptrdiff_t)real_cap);   /* tried: grown */
	assert_true(b.cap > real_cap);
	sp_buf_free(&b);
	assert_int_equal(b.retry_at, 0);
}

static void test_out_of_memory_is_an_error(void **state)
{
	struct sp_buf b;
	sp_buf_init(&b, 1024);
	assert_int_equal(sp_buf_reserve(&b), 0);
	b.starts[0] = 42;
	/* A full buffer whose next size no allocator can satisfy. */
	size_t real_cap = b.cap;
	b.cap = b.n = SIZE_MAX / sizeof(int64_t) / 4;
	assert_int_equal(sp_buf_reserve(&b), -1);
	assert_int_equal(b.dropped, 1);
	assert_int_equal(b.cap, SIZE_MAX / sizeof(int64_t) / 4);   /* unchanged */
	assert_int_equal(b.starts[0], 42);
	b.cap = real_cap;
	b.n = 1;
	sp_buf_free(&b);
}

static void test_lanes_follow_growth_and_backfill_zero(void **state)
{
	struct sp_buf b;
	sp_buf_init(&b, 2);
	for (int i = 0; i < 3; i++)
		assert_true(sp_buf_reserve(&b) >= 0);   /* before lanes: cap 4 */
	assert_null(b.lanes);
	assert_int_equal(sp_buf_keep_lanes(&b), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(b.lanes[i], 0);        /* earlier events: lane 0 */
	for (int32_t i = 3; i < 40; i++) {
		ptrdiff_t k = sp_buf_reserve(&b);
		assert_int_equal(k, i);
		b.lanes[k] = i;                        /* the column grows too */
	}
	assert_int_equal(b.cap, 64);
	for (int32_t i = 3; i < 40; i++)
		assert_int_equal(b.lanes[i], i);
	sp_buf_free(&b);
	assert_null(b.lanes);
	assert_false(b.keep_lanes);
	/* Lanes asked for before the first event: allocated with it. */
	sp_buf_init(&b, 4);
	assert_int_equal(sp_buf_keep_lanes(&b), 0);
	assert_int_equal(sp_buf_reserve(&b), 0);
	assert_non_null(b.lanes);
	sp_buf_free(&b);
}

/* The values column (run --memory, --mpi-calls): zero for the events
 * before it was asked for, grown with the others on the heap and once
 * mapped, its kind kept until the buffer is freed; kind 0 refused. */
static void test_values_follow_growth_and_backfill_zero(void **state)
{
	(void)state;
	struct sp_buf b;
	sp_buf_init(&b, 4);
	assert_int_equal(sp_buf_keep_values(&b, 0), -1);
	assert_int_equal(b.keep_values, 0);
	for (int i = 0; i < 3; i++)
		assert_true(sp_buf_reserve(&b) >= 0);
	assert_int_equal(sp_buf_keep_values(&b, 2), 0);
	assert_int_equal(b.keep_values, 2);
	for (int i = 0; i < 3; i++)
		assert_true(b.values[i] == 0);
	/* Past SP_BUF_MAP_BYTES: the columns move to maps, the values too. */
	size_t n = SP_BUF_MAP_BYTES / sizeof(int64_t) * 2;
	for (size_t i = 3; i < n; i++) {
		ptrdiff_t k = sp_buf_reserve(&b);
		assert_true(k == (ptrdiff_t)i);
		b.values[k] = (int64_t)i * 3;
	}
	assert_int_equal(b.mapped, 1);
	for (size_t i = 3; i < n; i++)
		assert_true(b.values[i] == (int64_t)i * 3);
	sp_buf_free(&b);
	assert_null(b.values);
	assert_int_equal(b.keep_values, 0);
	/* Asked for once mapped, before any event with values. */
	sp_buf_init(&b, SP_BUF_MAP_BYTES / sizeof(int64_t));
	while (!b.mapped)
		assert_true(sp_buf_reserve(&b) >= 0);
	assert_int_equal(sp_buf_keep_values(&b, 1), 0);
	assert_true(b.values[0] == 0 && b.values[b.cap - 1] == 0);
	sp_buf_free(&b);
}

static void test_clock_is_monotonic_and_matches_clock_monotonic(void **state)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t before = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	int64_t prev = sp_clock_ns();
	assert_true(prev >= before);
	for (int i = 0; i < 100000; i++) {
		int64_t t = sp_clock_ns();
		assert_true(t >= prev);
		prev = t;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t after = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	assert_true(prev <= after);
}

/* Streaming: a full spillable buffer is offered to sp_buf_spill first. */
static int spill_answer, spilled;

static int spill_hook(struct sp_buf *b)
{
	spilled++;
	if (spill_answer == 0)
		b->n = 0;   /* handed over */
	return spill_answer;
}

static void test_a_full_buffer_is_spilled_kept_or_dropped(void **state)
{
	(void)state;
	struct sp_buf b;
	sp_buf_init(&b, SP_BUF_FIRST_CAP);         /* the first growth takes the limit */
	b.spillable = 1;
	size_t before = sp_buf_bytes, first = SP_BUF_FIRST_CAP;
	sp_buf_spill = spill_hook;
	for (size_t i = 0; i < first; i++)
		assert_int_equal(sp_buf_reserve(&b), i);
	assert_int_equal(spilled, 0);              /* the first growth: nothing to spill */
	assert_int_equal(sp_buf_bytes - before, first * 16);
	spill_answer = 0;                          /* emptied: the next call takes slot 0 */
	assert_int_equal(sp_buf_reserve(&b), 0);
	assert_int_equal(spilled, 1);
	assert_int_equal(b.cap, first);
	for (size_t i = 1; i < first; i++)
		assert_int_equal(sp_buf_reserve(&b), i);
	spill_answer = 1;                          /* grow as usual */
	assert_int_equal(sp_buf_reserve(&b), first);
	assert_int_equal(b.cap, 2 * first);
	assert_int_equal(sp_buf_bytes - before, 2 * first * 16);
	for (size_t i = first + 1; i < 2 * first; i++)
		assert_int_equal(sp_buf_reserve(&b), i);
	spill_answer = -1;                         /* over the budget: dropped, counted */
	assert_int_equal(sp_buf_reserve(&b), -1);
	assert_int_equal(b.dropped, 1);
	assert_int_equal(b.cap, 2 * first);
	/* A buffer that is not spillable never asks. */
	struct sp_buf other;
	sp_buf_init(&other, 1);
	int asked = spilled;
	assert_int_equal(sp_buf_reserve(&other), 0);
	assert_int_equal(sp_buf_reserve(&other), 1);
	assert_int_equal(spilled, asked);
	sp_buf_spill = NULL;
	sp_buf_free(&b);
	sp_buf_free(&other);
	assert_int_equal(sp_buf_bytes, before);
}

/* A buffer's columns handed over as they are (a streamed flush): the
 * buffer is left empty with its settings, out of sp_buf_bytes' count, and
 * grows again from nothing; given back on a refusal, it is as it was. Both
 * kinds of columns: malloc'd (small) and mapped (large). */
static void test_columns_taken_leave_the_buffer_empty_with_its_settings(void **state)
{
	(void)state;
	const size_t sizes[] = {100, 2 * SP_BUF_MAP_BYTES / sizeof(int64_t)};
	for (size_t k = 0; k < 2; k++) {
		size_t before = sp_buf_bytes, n = sizes[k];
		struct sp_buf b, taken;
		sp_buf_init(&b, 4);
		assert_int_equal(sp_buf_keep_lanes(&b), 0);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(sp_buf_reserve(&b), i);
			b.starts[i] = (int64_t)i;
			b.ends[i] = (int64_t)i + 1;
			b.lanes[i] = (int32_t)(i % 3);
		}
		b.dropped = 7;
		size_t cap = b.cap;
		int mapped = b.mapped;
		assert_int_equal(mapped, k == 1);
		sp_buf_take(&b, &taken);
		assert_int_equal(sp_buf_bytes, before);
		assert_null(b.starts);
		assert_null(b.ends);
		assert_null(b.lanes);
		assert_int_equal(b.n, 0);
		assert_int_equal(b.cap, 0);
		assert_int_equal(b.keep_lanes, 1);
		assert_int_equal(b.dropped, 7);
		assert_int_equal(taken.n, n);
		assert_int_equal(taken.cap, cap);
		assert_int_equal(taken.mapped, mapped);
		assert_int_equal(taken.starts[n - 1], (int64_t)n - 1);
		assert_int_equal(taken.lanes[n - 1], (int32_t)((n - 1) % 3));
		/* Refused: given back whole. */
		sp_buf_untake(&b, &taken);
		assert_int_equal(sp_buf_bytes - before, cap * 20);
		assert_int_equal(b.n, n);
		assert_int_equal(b.cap, cap);
		assert_int_equal(b.ends[n - 1], (int64_t)n);
		/* Taken for good: freed by its new owner; the buffer grows again,
		 * its lanes with it. */
		sp_buf_take(&b, &taken);
		sp_buf_free_taken(&taken);
		assert_null(taken.starts);
		assert_int_equal(sp_buf_reserve(&b), 0);
		assert_non_null(b.lanes);
		assert_int_equal(b.cap, SP_BUF_FIRST_CAP);
		sp_buf_free(&b);
		assert_int_equal(sp_buf_bytes, before);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_use_allocates_a_few_events),
		cmocka_unit_test(test_grows_to_the_limit_then_doubles),
		cmocka_unit_test(test_doubles_when_full_and_keeps_events),
		cmocka_unit_test(test_zero_initial_capacity_means_one),
		cmocka_unit_test(test_large_columns_are_mapped_and_keep_events),
		cmocka_unit_test(test_overflowing_growth_fails_cleanly),
		cmocka_unit_test(test_growth_after_a_failure_waits_for_the_drops_to_double),
		cmocka_unit_test(test_out_of_memory_is_an_error),
		cmocka_unit_test(test_lanes_follow_growth_and_backfill_zero),
		cmocka_unit_test(test_values_follow_growth_and_backfill_zero),
		cmocka_unit_test(test_clock_is_monotonic_and_matches_clock_monotonic),
		cmocka_unit_test(test_a_full_buffer_is_spilled_kept_or_dropped),
		cmocka_unit_test(test_columns_taken_leave_the_buffer_empty_with_its_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

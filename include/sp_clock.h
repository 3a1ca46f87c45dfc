/* sp_clock.h - the one clock: CLOCK_MONOTONIC nanoseconds, the same origin as
 * Python's time.perf_counter_ns() on Linux. */
#ifndef SP_CLOCK_H
#define SP_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Sentinel for "no timestamp" (e.g. a run start that was never recorded). */
#define SP_NO_TIME INT64_MIN

static inline int64_t sp_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* a + b for nanosecond sums, saturating at INT64_MAX / INT64_MIN instead
 * of overflowing (absurd timestamps in a damaged file). */
static inline int64_t sp_add_sat(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* a - b, saturating at INT64_MAX / INT64_MIN (a damaged file's times may
 * be anything). */
static inline int64_t sp_sub_sat(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* The tests' hook into a moment of the end (env: SCOPE_PROFILER_TEST_*_MS):
 * where the variable is set, "scope-profiler: test: WHAT" on stderr, then
 * its milliseconds asleep, whatever signal comes meanwhile. */
static inline void sp_test_pause(const char *env, const char *what)
{
	const char *v = getenv(env);
	if (!v)
		return;
	fprintf(stderr, "scope-profiler: test: %s\n", what);
	unsigned long ms = strtoul(v, NULL, 10);
	struct timespec left = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

#endif

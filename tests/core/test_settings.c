/* test_settings.c - the settings of a session: one table from setup()
 * keywords to the fields of struct sp_settings, compression names, the
 * "given" rule `run` fixes settings by, and the refused combinations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "sp_session.h"

static void test_every_seed_keyword_has_one_field(void **state)
{
	static const struct { const char *kw; size_t offset; } want[] = {
		{"file_path", offsetof(struct sp_settings, outfile)},
		{"buffer_limit", offsetof(struct sp_settings, buffer_limit)},
		{"deactivate_profiling", offsetof(struct sp_settings, disable)},
		{"deactivate_file_output", offsetof(struct sp_settings, no_output)},
		{"recursive_profile", offsetof(struct sp_settings, recursive)},
		{"use_line_profiler", offsetof(struct sp_settings, line_profile)},
		{"aggregation_mode", offsetof(struct sp_settings, aggregate)},
		{"track_threads", offsetof(struct sp_settings, track_threads)},
		{"track_async", offsetof(struct sp_settings, track_async)},
		{"hdf5_compression", offsetof(struct sp_settings, compression)},
		{"verbose", offsetof(struct sp_settings, verbose)},
		{"use_likwid", offsetof(struct sp_settings, likwid)},
		{"use_memray", offsetof(struct sp_settings, memory)},
		{"profile_mpi_calls", offsetof(struct sp_settings, mpi_calls)},
		{"use_nvtx", offsetof(struct sp_settings, nvtx)},
		{"use_gpu", offsetof(struct sp_settings, gpu)},
		{"memory_budget", offsetof(struct sp_settings, memory_budget)},   /* ours (streaming) */
	};
	size_t n;
	const struct sp_setting_key *keys = sp_settings_keywords(&n);
	assert_int_equal(n, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < n; i++) {
		const struct sp_setting_key *k = sp_settings_keyword(want[i].kw);
		assert_non_null(k);
		assert_int_equal(k->offset, want[i].offset);
		for (size_t j = 0; j < i; j++)   /* one keyword per field */
			assert_int_not_equal(keys[j].offset, keys[i].offset);
	}
	assert_null(sp_settings_keyword("lines"));
	assert_null(sp_settings_keyword("line_profile"));
	assert_int_equal(sp_settings_keyword("use_likwid")->kind, SP_SETTING_BOOL);
}

/* The earlier releases' keywords: each names a current row (of the same
 * boolean kind) or nothing, and none is a current keyword itself. */
static void test_earlier_keywords(void **state)
{
	const struct sp_setting_alias *a = sp_settings_alias("profiling_activated");
	assert_non_null(a);
	assert_string_equal(a->of, "deactivate_profiling");
	assert_true(a->negate);
	a = sp_settings_alias("time_trace");
	assert_non_null(a);
	assert_string_equal(a->of, "aggregation_mode");
	assert_true(a->negate);
	a = sp_settings_alias("flush_to_disk");
	assert_non_null(a);
	assert_null(a->of);
	assert_null(sp_settings_alias("deactivate_profiling"));
	assert_null(sp_settings_alias("flush"));
	const char *names[] = {"profiling_activated", "time_trace", "flush_to_disk"};
	for (size_t i = 0; i < 3; i++) {
		assert_null(sp_settings_keyword(names[i]));
		a = sp_settings_alias(names[i]);
		if (a->of)
			assert_int_equal(sp_settings_keyword(a->of)->kind, SP_SETTING_BOOL);
	}
}

static void test_compression_names(void **state)
{
	int level = -1;
	assert_int_equal(sp_settings_compression("none", &level), 0);
	assert_int_equal(level, 0);
	assert_int_equal(sp_settings_compression("auto", &level), 0);
	assert_int_equal(level, 4);
	assert_int_equal(sp_settings_compression("gzip", &level), 0);
	assert_int_equal(level, 4);
	assert_int_equal(sp_settings_compression("gzip=9", &level), 0);
	assert_int_equal(level, 9);
	assert_int_equal(sp_settings_compression("gzip=0", &level), -1);
	assert_int_equal(sp_settings_compression("gzip=10", &level), -1);
	assert_int_equal(sp_settings_compression("zstd", &level), -1);
}

static void test_given_and_defaults(void **state)
{
	struct sp_settings s = { .compression = -1, .verbose = -1 };
	size_t n;
	const struct sp_setting_key *keys = sp_settings_keywords(&n);
	for (size_t i = 0; i < n; i++)
		assert_false(sp_settings_given(&s, &keys[i]));
	s.compression = 0;   /* --compression none fixes "none" */
	assert_true(sp_settings_given(&s, sp_settings_keyword("hdf5_compression")));
	s.outfile = "x.h5";
	assert_true(sp_settings_given(&s, sp_settings_keyword("file_path")));
	struct sp_settings d = { .compression = -1, .verbose = -1 };
	sp_settings_defaults(&d);
	assert_string_equal(d.outfile, "profiling_data.h5");
	assert_int_equal(d.buffer_limit, 1024);
	assert_int_equal(d.compression, 0);
	assert_int_equal(d.verbose, 1);
}

static void test_refused_combinations(void **state)
{
	char err[256];
	struct sp_settings s = { .line_profile = 1, .recursive = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "--line-profile and --recursive cannot be combined"));
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "use_line_profiler and recursive_profile cannot be combined"));
	s = (struct sp_settings){ .aggregate = 1, .track_async = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_string_equal(err, "--aggregate cannot be combined with --track-async: aggregates keep no "
			    "per-call data");
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), -1);
	s.disable = 1;   /* setup(): nothing is recorded, nothing to refuse */
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), 0);
	/* --recursive --aggregate: the hook counts calls in the call tree. */
	s = (struct sp_settings){ .aggregate = 1, .recursive = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), 0);
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), 0);
	/* MPI calls are kept per call, per thread. */
	s = (struct sp_settings){ .mpi_calls = 1, .aggregate = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_string_equal(err, "--mpi-calls cannot be combined with --aggregate: MPI calls are kept per call");
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), -1);
	assert_string_equal(err, "profile_mpi_calls cannot be combined with aggregation_mode: MPI calls are "
			    "kept per call");
	s = (struct sp_settings){ .mpi_calls = 1, .track_async = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_string_equal(err, "--mpi-calls cannot be combined with --track-async: MPI calls are timed per "
			    "thread, not per task");
	s.disable = 1;
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), 0);
	s = (struct sp_settings){ .mpi_calls = 1, .track_threads = 1, .recursive = 1, .line_profile = 0 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), 0);
	const char *inc[] = {"__main__.*"}, *bad[] = {"*_io", "re:solve("};
	s = (struct sp_settings){ .include = inc, .ninclude = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_string_equal(err, "--all, --include and --exclude go with --recursive");
	s.recursive = 1;
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), 0);
	/* Patterns compile before anything runs (man scope-profiler, FILTERS). */
	s.exclude = bad;
	s.nexclude = 2;
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "--exclude: invalid regular expression 're:solve('"));
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "exclude: invalid regular expression"));
	s.nexclude = 1;
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), 0);
	/* Allocations are counted per call: not in aggregates, not with line
	 * timing; with the profile hook and lanes they are. */
	s = (struct sp_settings){ .memory = 1, .aggregate = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "--memory cannot be combined with --aggregate"));
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "use_memray cannot be combined with aggregation_mode"));
	s = (struct sp_settings){ .memory = 1, .track_async = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), 0);
	s = (struct sp_settings){ .memory = 1, .line_profile = 1 };
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "use_memray cannot be combined with use_line_profiler"));
	s.disable = 1;
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), 0);
	s = (struct sp_settings){ .memory = 1, .recursive = 1, .track_threads = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), 0);
	/* LIKWID's marker regions go with explicit regions, threads included. */
	s = (struct sp_settings){ .likwid = 1, .track_threads = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), 0);
	s.aggregate = 1;
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "--likwid cannot be combined with --aggregate"));
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "use_likwid cannot be combined with aggregation_mode"));
	s = (struct sp_settings){ .likwid = 1, .recursive = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "--likwid cannot be combined with --recursive"));
	s = (struct sp_settings){ .likwid = 1, .track_async = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	s = (struct sp_settings){ .likwid = 1, .line_profile = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	s = (struct sp_settings){ .likwid = 1, .memory = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "--likwid cannot be combined with --memory"));
	/* NVTX ranges: explicit regions, threads, tasks, --recursive; as the
	 * original, never with aggregates. */
	s = (struct sp_settings){ .nvtx = 1, .recursive = 1, .track_async = 1, .gpu = 0 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), 0);
	s = (struct sp_settings){ .nvtx = 1, .aggregate = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "--nvtx cannot be combined with --aggregate"));
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "use_nvtx cannot be combined with aggregation_mode"));
	s.disable = 1;
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), 0);
	/* The device synchronised around explicit regions' calls, with NVTX too. */
	s = (struct sp_settings){ .gpu = 1, .nvtx = 1, .track_threads = 1 };
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), 0);
	s.recursive = 1;
	assert_int_equal(sp_settings_check(&s, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "--gpu cannot be combined with --recursive"));
	s = (struct sp_settings){ .gpu = 1, .aggregate = 1 };
	assert_int_equal(sp_settings_check(&s, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "use_gpu cannot be combined with aggregation_mode"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_seed_keyword_has_one_field),
		cmocka_unit_test(test_earlier_keywords),
		cmocka_unit_test(test_compression_names),
		cmocka_unit_test(test_given_and_defaults),
		cmocka_unit_test(test_refused_combinations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

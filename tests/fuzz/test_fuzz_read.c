/* test_fuzz_read.c - the reader against damaged files: a real profile
 * (two ranks, events, call trees, lanes, a line table; and a streamed one
 * of format version 3, finished and partial, the partial one left open for
 * SWMR writing as a killed run leaves it) is mutated thousands of times
 * with a fixed seed (flipped and overwritten bytes, truncations,
 * copied spans) and read back in both modes. Every read must succeed or
 * fail with a one-line error, leaving no HDF5 object open; never crash
 * (run under ASan by `make asan`, where HDF5's own allocations for damaged
 * metadata are not counted as leaks: tests/fuzz/lsan-hdf5.supp). Deterministic:
 * the same mutations every run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>
#include <sys/wait.h>

#include "sp_clock.h"
#include "sp_tree.h"
#include "sp_h5.h"
#include "sp_render.h"

#define V3_CHECK(cond) assert_true(cond)
#include "../store/h5_v3.h"

#define MUTANTS 1500

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char dir[64];

static void add(struct sp_rank *rk, const char *name, size_t n, int64_t t0, int64_t step,
		int64_t len, int lanes)
{
	struct sp_region_data *rd = &rk->regions[rk->nregions++];
	rd->name = strdup(name);
	rd->starts = malloc(n * sizeof *rd->starts);
	rd->ends = malloc(n * sizeof *rd->ends);
	rd->lanes = lanes ? malloc(n * sizeof *rd->lanes) : NULL;
	for (size_t i = 0; i < n; i++) {
		rd->starts[i] = t0 + (int64_t)i * step;
		rd->ends[i] = rd->starts[i] + len;
		if (lanes)
			rd->lanes[i] = (int32_t)(i % 2);
	}
	rd->owns_events = 1;
	sp_stats_compute(&rd->stats, rd->starts, rd->ends, n);
}

/* A profile like a real run's, written to path in format version. */
static void write_seed(const char *path, int version)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	p->format_version = version;
	p->nranks = 2;
	p->ranks = calloc(2, sizeof *p->ranks);
	for (int r = 0; r < 2; r++) {
		struct sp_rank *rk = &p->ranks[r];
		rk->rank = r;
		rk->run_start_ns = 100;
		rk->run_end_ns = 100000;
		rk->pid = 4000 + r;
		rk->hostname = strdup("node-1");
		rk->regions = calloc(3, sizeof *rk->regions);
		add(rk, "timestep", 40, 1000, 2000, 1800, r == 1);
		add(rk, "solve/lin", 40, 1100, 2000, 900, r == 1);
		add(rk, "löser", 3, 90000, 100, 50, r == 1);
		struct sp_error err = {0};
		assert_int_equal(sp_tree_build(rk, &err), SP_OK);
	}
	struct sp_rank *rk = &p->ranks[0];
	rk->nlines = 1;
	rk->lines = calloc(1, sizeof *rk->lines);
	struct sp_line_table *lt = &rk->lines[0];
	lt->function = strdup("solve");
	lt->region = strdup("solve/lin");
	lt->filename = strdup("/src/s.py");
	lt->first_line = 10;
	lt->n = 3;
	lt->hits = calloc(3, sizeof *lt->hits);
	lt->time_ns = calloc(3, sizeof *lt->time_ns);
	lt->source = calloc(3, sizeof *lt->source);
	for (int i = 0; i < 3; i++) {
		lt->hits[i] = i;
		lt->time_ns[i] = 100 * i;
		lt->source[i] = strdup(i ? "    x += 1" : "def solve():");
	}
	p->nmeta = 1;
	p->meta = calloc(1, sizeof *p->meta);
	p->meta[0] = (struct sp_kv){strdup("hostname"), strdup("node-1"), SP_KV_FIXED};
	struct sp_error err = {0};
	assert_int_equal(sp_h5_write(p, path, &err), SP_OK);
	sp_profile_free(p);
}

/* A format version 3 file (tests/store/h5_v3.h): finished, or partial and
 * left open for SWMR writing by a child that exits without closing it, as a
 * run killed while it streams leaves it (read through H5F_ACC_SWMR_READ). */
static void write_v3_seed(const char *path, int finished)
{
	struct v3_file f = v3_good(finished);
	if (finished) {
		v3_write(path, &f, 0);
		return;
	}
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		v3_write(path, &f, 1);
		_exit(0);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void damaged_files_never_crash(int version);

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(*len);
	assert_int_equal(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

static void mutate(unsigned char *b, size_t *len)
{
	int k = 1 + (int)(next_rand() % 4);
	for (int m = 0; m < k && *len > 0; m++) {
		size_t at = (size_t)(next_rand() % *len);
		switch (next_rand() % 6) {
		case 0: b[at] ^= (unsigned char)(1u << (next_rand() % 8)); break;
		case 1: b[at] = 0; break;
		case 2: b[at] = 0xff; break;
		case 3: b[at] = (unsigned char)next_rand(); break;
		case 4: *len = at; break;                                  /* truncate */
		case 5: {                                                  /* copy a span */
			size_t from = (size_t)(next_rand() % *len), n = 1 + (size_t)(next_rand() % 64);
			if (from + n <= *len && at + n <= *len)
				memmove(b + at, b + from, n);
			break;
		}
		}
	}
}

/* Mutants of a file of each format version: 2, 1, 3 finished, 3 partial
 * (written as 4 here). */
static void test_damaged_files_never_crash(void **state)
{
	static const int versions[] = {2, 1, 3, 4};
	for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
		damaged_files_never_crash(versions[i]);
}

static void damaged_files_never_crash(int version)
{
	char seed[128], path[128];
	snprintf(seed, sizeof seed, "%s/seed.h5", dir);
	snprintf(path, sizeof path, "%s/mutant.h5", dir);
	if (version >= 3)
		write_v3_seed(seed, version == 3);
	else
		write_seed(seed, version);
	size_t len0;
	unsigned char *orig = slurp(seed, &len0);
	unsigned char *b = malloc(len0);
	FILE *devnull = fopen("/dev/null", "w");
	int ok = 0, failed = 0;
	for (int i = 0; i < MUTANTS; i++) {
		size_t len = len0;
		memcpy(b, orig, len0);
		mutate(b, &len);
		FILE *f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(b, 1, len, f), len);
		fclose(f);
		for (int mode = 0; mode < 2; mode++) {
			struct sp_profile *p = NULL;
			struct sp_error err = {0};
			enum sp_err rc = sp_report_read(path, mode ? SP_READ_EVENTS : SP_READ_SUMMARY, &p, &err);
			if (rc == SP_OK) {
				ok++;
				assert_non_null(p);
				/* What was read is usable: it renders. */
				sp_render_summary(devnull, p, path, SP_RENDER_ALL, &err);
				sp_render_lines(devnull, p, path, &err);
				sp_profile_free(p);
			} else {
				failed++;
				assert_null(p);
				assert_true(err.msg[0] != '\0');
				assert_null(strchr(err.msg, '\n'));   /* one line */
			}
			/* Every identifier the reader opened is closed again. */
			assert_int_equal(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
		}
	}
	fclose(devnull);
	/* The mutations hit both outcomes: a test that never fails a read
	 * (or never succeeds) would not be testing the reader. */
	assert_true(ok > 0 && failed > 0);
	print_message("format version %s: %d reads succeeded, %d failed cleanly\n",
		      version == 4 ? "3 (partial)" : version == 3 ? "3 (finished)" : version == 2 ? "2" : "1", ok,
		      failed);
	free(b);
	free(orig);
	remove(seed);
	remove(path);
}

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/sp-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");  /* mkdtemp fills the X */
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_damaged_files_never_crash),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_h5stream.c - unit tests of the streaming reader (sp_h5_stream_*, in
 * src/store/h5stream.c) that export uses to read a profile a slice at a
 * time: format version 2, then version 1. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_clock.h"
#include "sp_tree.h"
#include "sp_h5.h"

#define assert_ok(call, err) do { \
	if ((call) != SP_OK) \
		fail_msg("%s", (err)->msg); \
} while (0)

static char path[64];
static int fmt_version = 2;     /* what write_profile writes */

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof path, "/tmp/test_h5stream.%ld.h5", (long)getpid());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	remove(path);
	return 0;
}

/* A region of rk: n calls, call c from base + 10c to base + 10c + 5,
 * lanes c % 3 when with_lanes. */
static void add_region(struct sp_rank *rk, const char *name, size_t n, int64_t base, int with_lanes)
{
	struct sp_region_data *rd = &rk->regions[rk->nregions++];
	rd->name = strdup(name);
	rd->starts = malloc(n * sizeof *rd->starts);
	rd->ends = malloc(n * sizeof *rd->ends);
	rd->lanes = with_lanes ? malloc(n * sizeof *rd->lanes) : NULL;
	rd->owns_events = 1;
	for (size_t c = 0; c < n; c++) {
		rd->starts[c] = base + 10 * (int64_t)c;
		rd->ends[c] = rd->starts[c] + 5;
		if (with_lanes)
			rd->lanes[c] = (int32_t)(c % 3);
	}
	sp_stats_compute(&rd->stats, rd->starts, rd->ends, n);
}

/* Two ranks: rank 0 has "big" (100000 calls, lanes) and "a/b" (3 calls);
 * rank 3 has "big" (7 calls, no lanes). */
static void write_profile(void)
{
	struct sp_profile *p = calloc(1, sizeof *p);
	struct sp_error err = {0};
	p->format_version = fmt_version;
	p->nranks = 2;
	p->ranks = calloc(2, sizeof *p->ranks);
	for (int r = 0; r < 2; r++) {
		p->ranks[r] = (struct sp_rank){.rank = r * 3, .run_start_ns = 1000 + r,
					       .run_end_ns = SP_NO_TIME};
		p->ranks[r].regions = calloc(2, sizeof *p->ranks[r].regions);
	}
	add_region(&p->ranks[0], "big", 100000, 5000, 1);
	add_region(&p->ranks[0], "a/b", 3, 2000, 0);
	add_region(&p->ranks[1], "big", 7, 3000, 0);
	for (int r = 0; r < 2; r++)
		assert_ok(sp_tree_build(&p->ranks[r], &err), &err);
	assert_ok(sp_h5_write(p, path, &err), &err);
	sp_profile_free(p);
}

static void test_structure_and_slices(void **state)
{
	(void)state;
	struct sp_h5_stream *s = NULL;
	struct sp_error err = {0};
	int64_t st[1000], en[1000];
	int32_t ln[1000];
	write_profile();
	assert_ok(sp_h5_stream_open(path, &s, &err), &err);
	const struct sp_profile *p = sp_h5_stream_profile(s);
	assert_int_equal(p->nranks, 2);
	assert_int_equal(p->ranks[1].rank, 3);
	assert_int_equal(p->ranks[1].run_start_ns, 1001);
	assert_int_equal(p->ranks[0].nregions, 2);
	assert_string_equal(p->ranks[0].regions[1].name, "a/b");
	assert_int_equal(p->ranks[0].regions[0].stats.num_calls, 100000);
	assert_int_equal(p->ranks[0].regions[0].stats.first_start_ns, 5000);
	for (size_t r = 0; r < p->nranks; r++)
		for (size_t g = 0; g < p->ranks[r].nregions; g++)
			assert_true(!p->ranks[r].regions[g].starts && !p->ranks[r].regions[g].lanes);
	assert_null(p->ranks[0].tree);

	/* A slice in the middle, then another region, then back. */
	assert_ok(sp_h5_stream_read(s, 0, 0, 99000, 1000, st, en, ln, &err), &err);
	for (int c = 0; c < 1000; c++) {
		assert_int_equal(st[c], 5000 + 10 * (99000 + c));
		assert_int_equal(en[c], st[c] + 5);
		assert_int_equal(ln[c], (99000 + c) % 3);
	}
	memset(ln, 0x55, sizeof ln);
	assert_ok(sp_h5_stream_read(s, 1, 0, 2, 5, st, en, ln, &err), &err);
	assert_int_equal(st[0], 3020);
	assert_int_equal(en[4], 3065);
	for (int c = 0; c < 5; c++)
		assert_int_equal(ln[c], 0);     /* no lanes column: lane 0 */
	assert_ok(sp_h5_stream_read(s, 0, 1, 0, 3, st, en, NULL, &err), &err);
	assert_int_equal(st[2], 2020);
	assert_ok(sp_h5_stream_read(s, 0, 0, 0, 1, st, en, ln, &err), &err);
	assert_int_equal(st[0], 5000);
	assert_ok(sp_h5_stream_read(s, 0, 1, 3, 0, st, en, ln, &err), &err);

	/* Outside the region or the profile. */
	assert_int_equal(sp_h5_stream_read(s, 0, 1, 2, 2, st, en, ln, &err), SP_EINVAL);
	assert_int_equal(sp_h5_stream_read(s, 0, 1, 4, 0, st, en, ln, &err), SP_EINVAL);
	assert_int_equal(sp_h5_stream_read(s, 2, 0, 0, 1, st, en, ln, &err), SP_EINVAL);
	assert_int_equal(sp_h5_stream_read(s, 0, 2, 0, 1, st, en, ln, &err), SP_EINVAL);
	sp_h5_stream_close(s);
	sp_h5_stream_close(NULL);
}

/* The plain layout (no attributes): stats come from the columns at open. */
static void test_plain_layout(void **state)
{
	(void)state;
	static const int64_t starts[] = {40, 10, 20}, ends[] = {45, 30, 21};
	struct sp_h5_stream *s = NULL;
	struct sp_error err = {0};
	int64_t st[3], en[3];
	hsize_t n = 3;
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
	H5Pset_create_intermediate_group(lcpl, 1);
	hid_t g = H5Gcreate2(f, "rank0/regions/x%2Fy", lcpl, H5P_DEFAULT, H5P_DEFAULT);
	H5Pclose(lcpl);
	hid_t sp = H5Screate_simple(1, &n, NULL);
	for (int i = 0; i < 2; i++) {
		hid_t d = H5Dcreate2(g, i ? "end_times" : "start_times", H5T_STD_I64LE, sp, H5P_DEFAULT,
				     H5P_DEFAULT, H5P_DEFAULT);
		H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, i ? ends : starts);
		H5Dclose(d);
	}
	H5Sclose(sp);
	H5Gclose(g);
	H5Fclose(f);
	assert_ok(sp_h5_stream_open(path, &s, &err), &err);
	const struct sp_profile *p = sp_h5_stream_profile(s);
	const struct sp_region_data *rd = &p->ranks[0].regions[0];
	assert_string_equal(rd->name, "x/y");
	assert_null(rd->starts);
	assert_int_equal(rd->stats.num_calls, 3);
	assert_int_equal(rd->stats.first_start_ns, 10);
	assert_int_equal(rd->stats.total_ns, 5 + 20 + 1);
	assert_int_equal(p->ranks[0].run_start_ns, SP_NO_TIME);
	assert_ok(sp_h5_stream_read(s, 0, 0, 0, 3, st, en, NULL, &err), &err);
	assert_memory_equal(st, starts, sizeof st);
	assert_memory_equal(en, ends, sizeof en);
	sp_h5_stream_close(s);
}

/* Opens path read-write and applies one damage to the columns of
 * rank0/regions/big (version 2: rank0/events, where big's calls come
 * first). */
static void damage(int how)
{
	hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
	hid_t g = H5Gopen2(f, fmt_version == 2 ? "rank0/events" : "rank0/regions/big", H5P_DEFAULT);
	if (how == 0) {
		H5Ldelete(g, "end_times", H5P_DEFAULT);   /* a summary without events */
	} else if (how == 1) {
		H5Ldelete(g, "lanes", H5P_DEFAULT);       /* lanes of the wrong length */
		hsize_t n = 4;
		int32_t v[4] = {0};
		hid_t sp = H5Screate_simple(1, &n, NULL);
		hid_t d = H5Dcreate2(g, "lanes", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
		H5Dclose(d);
		H5Sclose(sp);
	} else {
		hsize_t off = 70000, cnt = 1;            /* call 70000 ends before it starts */
		int64_t v = 0;
		hid_t d = H5Dopen2(g, "end_times", H5P_DEFAULT), fs = H5Dget_space(d);
		hid_t ms = H5Screate_simple(1, &cnt, NULL);
		H5Sselect_hyperslab(fs, H5S_SELECT_SET, &off, NULL, &cnt, NULL);
		H5Dwrite(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &v);
		H5Sclose(ms);
		H5Sclose(fs);
		H5Dclose(d);
	}
	H5Gclose(g);
	H5Fclose(f);
}

static void test_errors(void **state)
{
	(void)state;
	struct sp_h5_stream *s = (struct sp_h5_stream *)(uintptr_t)1;   /* must become NULL */
	struct sp_error err = {0};
	int64_t st[1000], en[1000];
	assert_int_equal(sp_h5_stream_open("/nonexistent/x.h5", &s, &err), SP_ENOENT);
	assert_null(s);
	assert_non_null(strstr(err.msg, "/nonexistent/x.h5"));

	write_profile();
	damage(0);
	assert_int_equal(sp_h5_stream_open(path, &s, &err), SP_ECORRUPT);
	assert_null(s);
	assert_non_null(strstr(err.msg, fmt_version == 2 ? "rank0/events" : "rank0/regions/big"));
	assert_non_null(strstr(err.msg, "end_times"));

	write_profile();
	damage(1);
	assert_int_equal(sp_h5_stream_open(path, &s, &err), SP_ECORRUPT);
	assert_non_null(strstr(err.msg, "lanes"));

	write_profile();
	damage(2);
	assert_ok(sp_h5_stream_open(path, &s, &err), &err);   /* the summary is intact */
	assert_ok(sp_h5_stream_read(s, 0, 0, 0, 1000, st, en, NULL, &err), &err);
	assert_int_equal(sp_h5_stream_read(s, 0, 0, 69500, 1000, st, en, NULL, &err), SP_ECORRUPT);
	assert_non_null(strstr(err.msg, "rank0/regions/big: call 70000 ends before it starts"));
	sp_h5_stream_close(s);
}

/* Open datasets of every file (HDF5's own count). */
static ssize_t open_datasets(void)
{
	return H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_DATASET);
}

/* Per-call values (format version 2): read a slice at a time, across
 * regions and ranks; a rank's value columns stay open while its slices are
 * read (not opened again per slice) and are closed with the stream. */
static void test_values(void **state)
{
	(void)state;
	struct sp_profile *p = calloc(1, sizeof *p);
	struct sp_error err = {0};
	p->format_version = 2;
	p->nranks = 2;
	p->ranks = calloc(2, sizeof *p->ranks);
	for (int r = 0; r < 2; r++) {
		p->ranks[r] = (struct sp_rank){.rank = r, .run_start_ns = 1000, .run_end_ns = SP_NO_TIME};
		p->ranks[r].regions = calloc(2, sizeof *p->ranks[r].regions);
		add_region(&p->ranks[r], "alloc", 5000, 5000, 0);
		add_region(&p->ranks[r], "send", 40, 2000, 0);
		for (size_t g = 0; g < 2; g++) {
			struct sp_region_data *rd = &p->ranks[r].regions[g];
			size_t n = (size_t)rd->stats.num_calls;
			rd->value_kind = g == 0 ? SP_VALUES_ALLOC_BYTES : SP_VALUES_BYTES;
			rd->values = malloc(n * sizeof *rd->values);
			assert_non_null(rd->values);
			rd->values_total = 0;
			for (size_t c = 0; c < n; c++)
				rd->values_total += rd->values[c] = 1000 * (int64_t)r + 7 * (int64_t)c + (int64_t)g;
		}
		assert_ok(sp_tree_build(&p->ranks[r], &err), &err);
	}
	assert_ok(sp_h5_write(p, path, &err), &err);
	sp_profile_free(p);

	struct sp_h5_stream *s = NULL;
	int64_t v[100];
	assert_ok(sp_h5_stream_open(path, &s, &err), &err);
	ssize_t before = open_datasets();
	assert_true(before >= 0);
	assert_ok(sp_h5_stream_values(s, 0, 0, 4900, 100, v, &err), &err);
	for (int c = 0; c < 100; c++)
		assert_int_equal(v[c], 7 * (4900 + c));
	ssize_t open = open_datasets();
	assert_true(open > before);                 /* rank 0's value columns, kept */
	assert_ok(sp_h5_stream_values(s, 0, 1, 10, 30, v, &err), &err);
	assert_int_equal(v[0], 71);
	assert_int_equal(v[29], 7 * 39 + 1);
	assert_int_equal(open_datasets(), open);    /* the same columns, not opened again */
	assert_ok(sp_h5_stream_values(s, 1, 0, 0, 2, v, &err), &err);
	assert_int_equal(v[1], 1007);
	assert_int_equal(open_datasets(), open);    /* rank 1's instead of rank 0's */
	assert_ok(sp_h5_stream_values(s, 0, 0, 0, 1, v, &err), &err);
	assert_int_equal(v[0], 0);
	assert_int_equal(sp_h5_stream_values(s, 0, 1, 39, 2, v, &err), SP_EINVAL);
	sp_h5_stream_close(s);
	assert_int_equal(open_datasets(), 0);
}

int main(void)
{
	const struct CMUnitTest both[] = {
		cmocka_unit_test(test_structure_and_slices),
		cmocka_unit_test(test_errors),
	};
	const struct CMUnitTest once[] = {
		cmocka_unit_test(test_plain_layout),
		cmocka_unit_test(test_values),
	};
	int rc = cmocka_run_group_tests_name("format version 2", both, setup, teardown);
	rc |= cmocka_run_group_tests_name("the plain layout", once, setup, teardown);
	fmt_version = 1;
	rc |= cmocka_run_group_tests_name("format version 1", both, setup, teardown);
	return rc;
}

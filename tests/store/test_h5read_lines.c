/* test_h5read_lines.c - per-line tables in HDF5 (src/store/h5read_lines.c
 * and the writer): the documented layout, damaged tables, variable-length
 * strings. */
#include "h5_fixtures.h"

/* ---- line tables ---- */

/* The layout scope-profiler-format(5) documents: rank{N}/lines/{k}, tracked creation
 * order, fixed-length UTF-8 source as wide as the longest line + 1. */
static void test_lines_layout(void **state)
{
	(void)state;
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	const char *path = tpath("lines.h5");
	assert_ok(sp_h5_write(p, path, &err), &err);
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	hid_t g = H5Gopen2(f, "rank0/lines", H5P_DEFAULT), gcpl = H5Gget_create_plist(g);
	unsigned crt = 0;
	assert_true(H5Pget_link_creation_order(gcpl, &crt) >= 0);
	assert_true(crt & H5P_CRT_ORDER_TRACKED);
	H5Pclose(gcpl);
	H5G_info_t info;
	assert_true(H5Gget_info(g, &info) >= 0);
	assert_int_equal(info.nlinks, 2);
	hid_t ds = H5Dopen2(g, "0/source", H5P_DEFAULT), t = H5Dget_type(ds);
	assert_int_equal(H5Tget_class(t), H5T_STRING);
	assert_int_equal(H5Tget_cset(t), H5T_CSET_UTF8);
	assert_int_equal(H5Tis_variable_str(t), 0);
	assert_int_equal(H5Tget_size(t), strlen("    \"\"\"Grüße, 日本\"\"\"") + 1);
	H5Tclose(t);
	H5Dclose(ds);
	int32_t first = 0;
	hid_t a = H5Aopen_by_name(g, "0", "first_line", H5P_DEFAULT, H5P_DEFAULT);
	assert_true(a >= 0 && H5Aread(a, H5T_NATIVE_INT32, &first) >= 0);
	assert_int_equal(first, 41);
	H5Aclose(a);
	ds = H5Dopen2(g, "1/hits", H5P_DEFAULT);   /* the empty table */
	hid_t sp = H5Dget_space(ds);
	assert_int_equal(H5Sget_simple_extent_npoints(sp), 0);
	H5Sclose(sp);
	H5Dclose(ds);
	H5Gclose(g);
	assert_int_equal(H5Lexists(f, "rank5/lines", H5P_DEFAULT), 0);   /* no tables, no group */
	assert_int_equal(H5Fget_obj_count(f, H5F_OBJ_ALL), 1);
	H5Fclose(f);
	sp_profile_free(p);
	remove(path);
}

/* Writes a good profile to path, then lets damage() change its file f or its
 * first line table g. */
static void damaged(const char *path, void (*damage)(hid_t f, hid_t g))
{
	struct sp_profile *p = make_profile();
	struct sp_error err = {0};
	assert_ok(sp_h5_write(p, path, &err), &err);
	sp_profile_free(p);
	hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
	hid_t g = H5Gopen2(f, "rank0/lines/0", H5P_DEFAULT);
	assert_true(f >= 0 && g >= 0);
	damage(f, g);
	H5Gclose(g);
	assert_true(H5Fclose(f) >= 0);
}

static void i64_column(hid_t g, const char *name, const int64_t *v, size_t n)
{
	hsize_t dims[1] = {n};
	if (H5Lexists(g, name, H5P_DEFAULT) > 0)
		assert_true(H5Ldelete(g, name, H5P_DEFAULT) >= 0);
	hid_t sp = H5Screate_simple(1, dims, NULL);
	hid_t ds = H5Dcreate2(g, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	assert_true(ds >= 0);
	assert_true(n == 0 || H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
	H5Dclose(ds);
	H5Sclose(sp);
}

static void no_function(hid_t f, hid_t g)
{
	assert_true(H5Adelete(g, "function") >= 0);
}

static void no_first_line(hid_t f, hid_t g)
{
	assert_true(H5Adelete(g, "first_line") >= 0);
}

static void no_source(hid_t f, hid_t g)
{
	assert_true(H5Ldelete(g, "source", H5P_DEFAULT) >= 0);
}

static void short_hits(hid_t f, hid_t g)
{
	static const int64_t v[5] = {0};
	i64_column(g, "hits", v, 5);
}

static void negative_time(hid_t f, hid_t g)
{
	static const int64_t v[6] = {0, 1, 0, -3, 1, 1};
	i64_column(g, "time_ns", v, 6);
}

static void negative_first_line(hid_t f, hid_t g)
{
	int32_t v = -1;
	hid_t a = H5Aopen(g, "first_line", H5P_DEFAULT);
	assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT32, &v) >= 0);
	H5Aclose(a);
}

static void numeric_function(hid_t f, hid_t g)
{
	int64_t v = 7;
	hid_t sp = H5Screate(H5S_SCALAR);
	assert_true(H5Adelete(g, "function") >= 0);
	hid_t a = H5Acreate2(g, "function", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
	assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
	H5Aclose(a);
	H5Sclose(sp);
}

static void lines_not_a_group(hid_t f, hid_t g)
{
	static const int64_t v[1] = {1};
	hid_t rank = H5Gopen2(f, "rank0", H5P_DEFAULT);
	assert_true(rank >= 0 && H5Ldelete(rank, "lines", H5P_DEFAULT) >= 0);
	i64_column(rank, "lines", v, 1);
	H5Gclose(rank);
}

static void test_lines_corrupt(void **state)
{
	(void)state;
	const char *path = tpath("corrupt_lines.h5");
	static const struct {
		void (*damage)(hid_t, hid_t);
		const char *needle;
	} cases[] = {
		{no_function, "rank0/lines/0 has no 'function' attribute"},
		{no_first_line, "rank0/lines/0 has no 'first_line' attribute"},
		{numeric_function, "rank0/lines/0: bad 'function' attribute"},
		{no_source, "rank0/lines/0 has no source dataset"},
		{short_hits, "rank0/lines/0: hits, time_ns and source differ in length"},
		{negative_time, "rank0/lines/0: negative time at line 44"},
		{negative_first_line, "rank0/lines/0: first_line -1 out of range"},
		{lines_not_a_group, "rank0/lines is not a group"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		damaged(path, cases[i].damage);
		expect_read(path, SP_ECORRUPT, cases[i].needle);
	}
	remove(path);
}

/* h5py-style tables: variable-length strings, int32/float columns, links
 * named 0..10 without tracked creation order (read in numeric order). */
static void vlen_str_attr(hid_t g, const char *name, const char *value)
{
	hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
	H5Tset_size(t, H5T_VARIABLE);
	H5Tset_cset(t, H5T_CSET_UTF8);
	hid_t a = H5Acreate2(g, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
	assert_true(a >= 0 && H5Awrite(a, t, &value) >= 0);
	H5Aclose(a);
	H5Sclose(sp);
	H5Tclose(t);
}

static void test_lines_vlen(void **state)
{
	(void)state;
	static const double outer[] = {100, 200};
	static const char *src[] = {"def f():", "    return 'ü'", NULL};
	static const int32_t hits[] = {0, 2, 1};
	static const double ns[] = {0, 40, 5};
	const char *path = tpath("vlen.h5");
	struct sp_profile *q = NULL;
	struct sp_error err = {0};
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hid_t rg = plain_rank(f, "rank0");
	plain_region(rg, "outer", H5T_STD_I64LE, outer, 1, 1);
	H5Gclose(rg);
	hid_t lines = H5Gcreate2(f, "rank0/lines", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	for (int k = 10; k >= 0; k--) {
		char name[16], fn[16];
		snprintf(name, sizeof name, "%d", k);
		snprintf(fn, sizeof fn, "f%d", k);
		hid_t g = H5Gcreate2(lines, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		vlen_str_attr(g, "function", fn);
		vlen_str_attr(g, "region", "outer");
		vlen_str_attr(g, "filename", "/x/f.py");
		hid_t sp = H5Screate(H5S_SCALAR);
		hid_t a = H5Acreate2(g, "first_line", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
		int64_t first = 3 + k;
		H5Awrite(a, H5T_NATIVE_INT64, &first);
		H5Aclose(a);
		H5Sclose(sp);
		hsize_t dims[1] = {3};
		sp = H5Screate_simple(1, dims, NULL);
		hid_t st = H5Tcopy(H5T_C_S1);
		H5Tset_size(st, H5T_VARIABLE);
		H5Tset_cset(st, H5T_CSET_UTF8);
		hid_t d = H5Dcreate2(g, "source", st, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		assert_true(H5Dwrite(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, src) >= 0);
		H5Dclose(d);
		H5Tclose(st);
		d = H5Dcreate2(g, "hits", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, hits);
		H5Dclose(d);
		d = H5Dcreate2(g, "time_ns", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ns);
		H5Dclose(d);
		H5Sclose(sp);
		H5Gclose(g);
	}
	H5Gclose(lines);
	H5Fclose(f);

	for (int flags = 0; flags < 2; flags++) {
		assert_ok(sp_h5_read(path, flags, &q, &err), &err);
		const struct sp_rank *rk = &q->ranks[0];
		assert_int_equal(rk->nlines, 11);
		for (size_t k = 0; k < 11; k++) {
			const struct sp_line_table *t = &rk->lines[k];
			char fn[16];
			snprintf(fn, sizeof fn, "f%zu", k);
			assert_string_equal(t->function, fn);
			assert_string_equal(t->region, "outer");
			assert_string_equal(t->filename, "/x/f.py");
			assert_int_equal(t->first_line, 3 + (int)k);
			assert_int_equal(t->n, 3);
			assert_string_equal(t->source[1], "    return 'ü'");
			assert_string_equal(t->source[2], "");
			assert_true(t->hits[1] == 2 && t->time_ns[1] == 40 && t->time_ns[2] == 5);
		}
		sp_profile_free(q);
	}
	remove(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_layout),
		cmocka_unit_test(test_lines_corrupt),
		cmocka_unit_test(test_lines_vlen),
	};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	return cmocka_run_group_tests(tests, setup, teardown);
}

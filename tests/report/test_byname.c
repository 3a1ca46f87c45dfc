/* test_byname.c - unit tests of the join of regions by name across ranks
 * and files (src/report/byname.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "byname.h"

/* A rank holding the regions named by names[0 .. n). */
static struct sp_rank rank_of(int no, struct sp_region_data *rd, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rd[i] = (struct sp_region_data){ .name = (char *)names[i] };
	return (struct sp_rank){ .rank = no, .nregions = n, .regions = rd };
}

static void assert_ref(const struct sp_byname_ref *r, uint32_t file, uint32_t ri, uint32_t gi)
{
	assert_int_equal(r->file, file);
	assert_int_equal(r->ri, ri);
	assert_int_equal(r->gi, gi);
}

/* Names numbered by first appearance; each name's regions by rank. */
static void test_one_file(void **state)
{
	(void)state;
	static const char *const r0[] = {"solve", "main"}, *const r1[] = {"halo", "main", "solve"};
	struct sp_region_data d0[2], d1[3];
	struct sp_rank ranks[2] = { rank_of(0, d0, r0, 2), rank_of(1, d1, r1, 3) };
	struct sp_profile p = { .nranks = 2, .ranks = ranks };
	const struct sp_profile *files[] = { &p };
	struct sp_byname b;
	struct sp_error err = {0};
	assert_int_equal(sp_byname_build(&b, files, 1, NULL, &err), SP_OK);
	assert_int_equal(b.n, 3);
	assert_string_equal(b.names[0], "solve");
	assert_string_equal(b.names[1], "main");
	assert_string_equal(b.names[2], "halo");
	assert_int_equal(b.first[0], 0);
	assert_int_equal(b.first[1], 2);
	assert_int_equal(b.first[2], 4);
	assert_int_equal(b.first[3], 5);
	assert_ref(&b.refs[0], 0, 0, 0);       /* solve: rank 0's, then rank 1's */
	assert_ref(&b.refs[1], 0, 1, 2);
	assert_ref(&b.refs[2], 0, 0, 1);       /* main */
	assert_ref(&b.refs[3], 0, 1, 1);
	assert_ref(&b.refs[4], 0, 1, 0);       /* halo */
	assert_int_equal(sp_byname_id(&b, 0, 1, 0), 2);
	assert_int_equal(sp_byname_id(&b, 0, 1, 2), 0);
	assert_int_equal(sp_byname_find(&b, "main"), 1);
	assert_int_equal(sp_byname_find(&b, "mai"), -1);
	assert_int_equal(sp_byname_find(&b, ""), -1);
	sp_byname_free(&b);
	assert_null(b.refs);
}

/* Across files; a rank the selection leaves out takes no part. */
static void test_files_and_selection(void **state)
{
	(void)state;
	static const char *const a0[] = {"x"}, *const b0[] = {"y", "x"}, *const b3[] = {"only3"};
	struct sp_region_data da[1], db0[2], db3[1];
	struct sp_rank ra[1] = { rank_of(0, da, a0, 1) };
	struct sp_rank rb[2] = { rank_of(0, db0, b0, 2), rank_of(3, db3, b3, 1) };
	struct sp_profile pa = { .nranks = 1, .ranks = ra }, pb = { .nranks = 2, .ranks = rb };
	const struct sp_profile *files[] = { &pa, &pb };
	struct sp_select sel = {0};
	struct sp_error err = {0};
	struct sp_byname b;
	assert_int_equal(sp_select_ranks(&sel, "0", &err), SP_OK);
	assert_int_equal(sp_byname_build(&b, files, 2, &sel, &err), SP_OK);
	assert_int_equal(b.n, 2);
	assert_string_equal(b.names[0], "x");
	assert_ref(&b.refs[b.first[0]], 0, 0, 0);
	assert_ref(&b.refs[b.first[0] + 1], 1, 0, 1);
	assert_int_equal(b.first[2] - b.first[1], 1);
	assert_int_equal(sp_byname_id(&b, 1, 1, 0), -1);   /* rank 3, left out */
	assert_int_equal(sp_byname_find(&b, "only3"), -1);
	sp_byname_free(&b);
	sp_select_free(&sel);

	/* No files, no regions: an empty join. */
	assert_int_equal(sp_byname_build(&b, files, 0, NULL, &err), SP_OK);
	assert_int_equal(b.n, 0);
	assert_int_equal(b.first[0], 0);
	sp_byname_free(&b);
}

/* Many names, so the table grows several times: each keeps its id. */
static void test_many(void **state)
{
	(void)state;
	enum { N = 5000 };
	static char text[N][16];
	static const char *names[N];
	static struct sp_region_data rd[N];
	for (size_t i = 0; i < N; i++) {
		snprintf(text[i], sizeof text[i], "r%zu", i);
		names[i] = text[i];
	}
	struct sp_rank rk = rank_of(0, rd, names, N);
	struct sp_profile p = { .nranks = 1, .ranks = &rk };
	const struct sp_profile *files[] = { &p };
	struct sp_byname b;
	assert_int_equal(sp_byname_build(&b, files, 1, NULL, NULL), SP_OK);
	assert_int_equal(b.n, N);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(sp_byname_find(&b, text[i]), (int32_t)i);
		assert_int_equal(b.first[i], i);
	}
	sp_byname_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_file),
		cmocka_unit_test(test_files_and_selection),
		cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

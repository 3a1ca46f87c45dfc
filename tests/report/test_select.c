/* test_select.c - unit tests of the region and rank selection (sp_select). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_select.h"

static void test_empty_selects_everything(void **state)
{
	struct sp_select s = {0};
	assert_true(sp_select_region(&s, "anything"));
	assert_true(sp_select_region(&s, ""));
	assert_true(sp_select_rank(&s, 0));
	assert_true(sp_select_rank(&s, 12345));
	assert_true(sp_select_region(NULL, "x"));
	assert_true(sp_select_rank(NULL, 3));
	sp_select_free(&s);
	sp_select_free(NULL);
}

static void test_include_searches_anywhere(void **state)
{
	struct sp_select s = {0};
	struct sp_error err = {0};
	/* A glob matches the whole name. */
	assert_int_equal(sp_select_include(&s, "solve", &err), SP_OK);
	assert_true(sp_select_region(&s, "solve"));
	assert_false(sp_select_region(&s, "__main__.solve_linear"));
	sp_select_free(&s);
	assert_int_equal(sp_select_include(&s, "re:solve", &err), SP_OK);
	/* re: has re.search semantics: anywhere in the name, unless anchored. */
	assert_true(sp_select_region(&s, "solve"));
	assert_true(sp_select_region(&s, "__main__.solve_linear"));
	assert_false(sp_select_region(&s, "assemble"));
	assert_int_equal(sp_select_include(&s, "re:^mesh\\.(refine|coarsen)$", &err), SP_OK);
	assert_true(sp_select_region(&s, "mesh.refine"));
	assert_true(sp_select_region(&s, "mesh.coarsen"));
	assert_false(sp_select_region(&s, "mesh.refine2"));
	assert_false(sp_select_region(&s, "xmesh.refine"));
	/* Case matters, as in Python. */
	assert_false(sp_select_region(&s, "SOLVE"));
	assert_int_equal(s.ninclude, 2);
	sp_select_free(&s);
	assert_int_equal(s.ninclude, 0);
	assert_null(s.include);
	assert_true(sp_select_region(&s, "assemble"));
}

static void test_exclude_wins(void **state)
{
	struct sp_select s = {0};
	struct sp_error err = {0};
	assert_int_equal(sp_select_exclude(&s, "*._helper*", &err), SP_OK);
	assert_true(sp_select_region(&s, "solve"));
	assert_false(sp_select_region(&s, "__main__._helper_x"));
	assert_int_equal(sp_select_include(&s, "__main__.*", &err), SP_OK);
	assert_false(sp_select_region(&s, "solve"));
	assert_true(sp_select_region(&s, "__main__.solve"));
	assert_false(sp_select_region(&s, "__main__._helper"));
	/* Many patterns: the array grows and every one still matches. */
	for (int i = 0; i < 40; i++) {
		char re[32];
		snprintf(re, sizeof re, i % 2 ? "re:^r%d$" : "r%d", i);
		assert_int_equal(sp_select_exclude(&s, re, &err), SP_OK);
	}
	assert_false(sp_select_region(&s, "__main__._helper"));
	assert_true(sp_select_region(&s, "__main__.r3"));
	sp_select_free(&s);
}

static void test_bad_pattern(void **state)
{
	struct sp_select s = {0};
	struct sp_error err = {0};
	assert_int_equal(sp_select_include(&s, "re:solve(", &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "'re:solve('"));
	assert_null(strchr(err.msg, '\n'));
	assert_int_equal(s.ninclude, 0);
	assert_int_equal(sp_select_exclude(&s, "re:[a-", &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "[a-"));
	assert_int_equal(s.nexclude, 0);
	/* The same text as a glob is fine: it names itself. */
	assert_int_equal(sp_select_include(&s, "solve(", &err), SP_OK);
	assert_true(sp_select_region(&s, "solve("));
	assert_false(sp_select_region(&s, "solve"));
	sp_select_free(&s);
	/* A good pattern after a bad one is fine. */
	assert_int_equal(sp_select_include(&s, "ok", &err), SP_OK);
	assert_int_equal(s.ninclude, 1);
	assert_true(sp_select_region(&s, "ok"));
	/* A very long bad pattern still gives one line that fits. */
	char long_re[2000] = "re:";
	memset(long_re + 3, 'a', sizeof long_re - 5);
	long_re[sizeof long_re - 2] = '(';
	long_re[sizeof long_re - 1] = '\0';
	assert_int_equal(sp_select_include(&s, long_re, &err), SP_EINVAL);
	assert_null(strchr(err.msg, '\n'));
	sp_select_free(&s);
}

static void assert_ranks(const struct sp_select *s, const int *want, size_t n)
{
	assert_int_equal(s->nranks, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(s->ranks[i], want[i]);
}

static void test_ranks_parse(void **state)
{
	struct sp_select s = {0};
	struct sp_error err = {0};
	assert_int_equal(sp_select_ranks(&s, "0-3,5", &err), SP_OK);
	assert_ranks(&s, (int[]){0, 1, 2, 3, 5}, 5);
	assert_true(sp_select_rank(&s, 0));
	assert_true(sp_select_rank(&s, 3));
	assert_false(sp_select_rank(&s, 4));
	assert_true(sp_select_rank(&s, 5));
	assert_false(sp_select_rank(&s, 6));
	assert_false(sp_select_rank(&s, -1));
	/* Adding merges: sorted, unique. */
	assert_int_equal(sp_select_ranks(&s, "9,2,4-4,5", &err), SP_OK);
	assert_ranks(&s, (int[]){0, 1, 2, 3, 4, 5, 9}, 7);
	sp_select_free(&s);
	assert_int_equal(sp_select_ranks(&s, "7", &err), SP_OK);
	assert_ranks(&s, (int[]){7}, 1);
	assert_int_equal(sp_select_ranks(&s, "2147483647", &err), SP_OK);
	assert_true(sp_select_rank(&s, 2147483647));
	sp_select_free(&s);
	assert_int_equal(sp_select_ranks(&s, "007,3-3", &err), SP_OK);
	assert_ranks(&s, (int[]){3, 7}, 2);
	sp_select_free(&s);
}

/* spec fails with SP_EINVAL, a one-line message containing `part`, and the
 * selection keeps the ranks it had. */
static void assert_bad_ranks(const char *spec, const char *part)
{
	struct sp_select s = {0};
	struct sp_error err = {0};
	assert_int_equal(sp_select_ranks(&s, "1", &err), SP_OK);
	assert_int_equal(sp_select_ranks(&s, spec, &err), SP_EINVAL);
	if (!strstr(err.msg, part))
		fail_msg("'%s': message '%s' does not name '%s'", spec, err.msg, part);
	assert_null(strchr(err.msg, '\n'));
	assert_ranks(&s, (int[]){1}, 1);
	sp_select_free(&s);
}

static void test_ranks_errors(void **state)
{
	assert_bad_ranks("3-1", "backwards");
	assert_bad_ranks("3-1", "'3-1'");
	assert_bad_ranks("x", "'x'");
	assert_bad_ranks("0-3,x", "'x'");
	assert_bad_ranks("", "empty");
	assert_bad_ranks("1,,2", "empty");
	assert_bad_ranks("1,", "empty");
	assert_bad_ranks(",1", "empty");
	assert_bad_ranks("-1", "'-1'");
	assert_bad_ranks("0--1", "'0--1'");
	assert_bad_ranks("+1", "'+1'");
	assert_bad_ranks("2147483648", "too large");
	assert_bad_ranks("99999999999999999999999", "too large");
	assert_bad_ranks("0-99999999999", "too large");
	assert_bad_ranks("3-", "'3-'");
	assert_bad_ranks("1 ,2", "'1 '");
	assert_bad_ranks("1.5", "'1.5'");
	assert_bad_ranks("0-3-5", "'0-3-5'");
	/* Huge but valid ranges would take gigabytes: refused. */
	assert_bad_ranks("0-2000000000", "more than");
	struct sp_select s = {0};
	struct sp_error err = {0};
	assert_int_equal(sp_select_ranks(&s, NULL, &err), SP_EINVAL);
	assert_int_equal(sp_select_ranks(&s, "0-1048575", &err), SP_OK);
	assert_int_equal(s.nranks, 1048576);
	assert_int_equal(sp_select_ranks(&s, "2000000", &err), SP_EINVAL);
	sp_select_free(&s);
}

/* The command-line form names the option in its message. */
static void test_select_option(void **state)
{
	struct sp_select s = {0};
	struct sp_error err = {0};
	assert_int_equal(sp_select_option(&s, SP_SELECT_INCLUDE, "re:^solve", &err), SP_OK);
	assert_int_equal(sp_select_option(&s, SP_SELECT_EXCLUDE, "*_b", &err), SP_OK);
	assert_int_equal(sp_select_option(&s, SP_SELECT_RANKS, "0-1", &err), SP_OK);
	assert_true(sp_select_region(&s, "solve_a"));
	assert_false(sp_select_region(&s, "solve_b"));
	assert_false(sp_select_region(&s, "io"));
	assert_true(sp_select_rank(&s, 1));
	assert_false(sp_select_rank(&s, 2));
	assert_int_equal(sp_select_option(&s, SP_SELECT_RANKS, "3-1", &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "--ranks: "));
	assert_int_equal(sp_select_option(&s, SP_SELECT_INCLUDE, "re:(", &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "--include: "));
	sp_select_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_selects_everything),
		cmocka_unit_test(test_include_searches_anywhere),
		cmocka_unit_test(test_exclude_wins),
		cmocka_unit_test(test_bad_pattern),
		cmocka_unit_test(test_ranks_parse),
		cmocka_unit_test(test_ranks_errors),
		cmocka_unit_test(test_select_option),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_filter.c - unit tests of the --recursive own-code and name filters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_filter.h"

static char *foreign[] = {"/usr/lib/python3.11/", "/opt/venv/lib/"};

static void test_own_code_is_the_users_files(void **state)
{
	struct sp_filter f = {.foreign = foreign, .nforeign = 2};
	assert_true(sp_filter_own_code(&f, "/home/me/sim/main.py"));
	assert_true(sp_filter_own_code(&f, "relative/script.py"));
	/* The stdlib and other configured prefixes are not own code. */
	assert_false(sp_filter_own_code(&f, "/usr/lib/python3.11/json/encoder.py"));
	assert_false(sp_filter_own_code(&f, "/opt/venv/lib/thing.py"));
	/* A prefix must match at the start, as a folder. */
	assert_true(sp_filter_own_code(&f, "/home/usr/lib/python3.11/x.py"));
	/* Installed packages, wherever they are. */
	assert_false(sp_filter_own_code(&f, "/usr/lib/python3/dist-packages/numpy/core.py"));
	assert_false(sp_filter_own_code(&f, "/home/me/.local/lib/python3.11/site-packages/a.py"));
	/* Frozen modules, exec'd strings, the interactive prompt. */
	assert_false(sp_filter_own_code(&f, "<frozen importlib._bootstrap>"));
	assert_false(sp_filter_own_code(&f, "<string>"));
	assert_false(sp_filter_own_code(&f, ""));
}

static void test_all_traces_everything(void **state)
{
	struct sp_filter f = {.all = 1, .foreign = foreign, .nforeign = 2};
	assert_true(sp_filter_own_code(&f, "/usr/lib/python3.11/json/encoder.py"));
	assert_true(sp_filter_own_code(&f, "<frozen importlib._bootstrap>"));
	assert_true(sp_filter_own_code(&f, "/x/site-packages/y.py"));
}

static void test_include_and_exclude_globs(void **state)
{
	char *inc[] = {"__main__.solve*", "mesh.*"};
	char *exc[] = {"*._private*"};
	struct sp_filter f = {.include = inc, .ninclude = 2, .exclude = exc, .nexclude = 1};
	assert_true(sp_filter_name(&f, "__main__.solve"));
	assert_true(sp_filter_name(&f, "__main__.solve_linear"));
	assert_true(sp_filter_name(&f, "mesh.refine"));
	assert_false(sp_filter_name(&f, "__main__.assemble"));
	assert_false(sp_filter_name(&f, "mesh._private_helper"));
	/* No include globs: everything not excluded passes. */
	struct sp_filter g = {.exclude = exc, .nexclude = 1};
	assert_true(sp_filter_name(&g, "anything.at.all"));
	assert_false(sp_filter_name(&g, "a._private"));
	struct sp_filter none = {0};
	assert_true(sp_filter_name(&none, "x"));
}

static void test_clear_frees_and_empties(void **state)
{
	struct sp_filter f = {.all = 1};
	f.include = calloc(1, sizeof(char *));
	f.include[0] = strdup("a*");
	f.ninclude = 1;
	f.foreign = calloc(1, sizeof(char *));
	f.foreign[0] = strdup("/usr/");
	f.nforeign = 1;
	sp_filter_clear(&f);
	assert_null(f.include);
	assert_int_equal(f.ninclude, 0);
	assert_int_equal(f.nforeign, 0);
	assert_false(f.all);
	assert_true(sp_filter_name(&f, "b"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_code_is_the_users_files),
		cmocka_unit_test(test_all_traces_everything),
		cmocka_unit_test(test_include_and_exclude_globs),
		cmocka_unit_test(test_clear_frees_and_empties),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

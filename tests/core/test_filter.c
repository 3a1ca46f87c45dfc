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
	assert_false(sp_filter_own_code(&f, "<ipython-input"));
	/* An IPython cell is the user's code, as the script is. */
	assert_true(sp_filter_own_code(&f, "<ipython-input-3-0123456789ab>"));
}

static void test_the_program_run_is_own_code(void **state)
{
	/* -m pkg installed, -c's code: own before the installed and foreign
	 * checks; a virtual environment inside the own folder is not. */
	char *own[] = {"/env/lib/python3.11/site-packages/pkg/", "<string>", "/home/me/proj/"};
	struct sp_filter f = {.foreign = foreign, .nforeign = 2, .own = own, .nown = 3};
	assert_true(sp_filter_own_code(&f, "/env/lib/python3.11/site-packages/pkg/core.py"));
	assert_true(sp_filter_own_code(&f, "/env/lib/python3.11/site-packages/pkg/sub/x.py"));
	assert_false(sp_filter_own_code(&f, "/env/lib/python3.11/site-packages/other/x.py"));
	assert_true(sp_filter_own_code(&f, "<string>"));
	assert_false(sp_filter_own_code(&f, "<frozen importlib._bootstrap>"));
	assert_true(sp_filter_own_code(&f, "/home/me/proj/main.py"));
	assert_false(sp_filter_own_code(&f, "/home/me/proj/.venv/lib/python3.11/site-packages/a.py"));
}

static void test_all_traces_everything(void **state)
{
	struct sp_filter f = {.all = 1, .foreign = foreign, .nforeign = 2};
	assert_true(sp_filter_own_code(&f, "/usr/lib/python3.11/json/encoder.py"));
	assert_true(sp_filter_own_code(&f, "<frozen importlib._bootstrap>"));
	assert_true(sp_filter_own_code(&f, "/x/site-packages/y.py"));
}

/* A filter from pattern specs, as run builds it. */
static struct sp_filter with(const char **inc, size_t ni, const char **exc, size_t ne)
{
	struct sp_filter f = {0};
	for (size_t i = 0; i < ni; i++)
		assert_int_equal(sp_pattern_push(&f.include, &f.ninclude, inc[i], NULL), SP_OK);
	for (size_t i = 0; i < ne; i++)
		assert_int_equal(sp_pattern_push(&f.exclude, &f.nexclude, exc[i], NULL), SP_OK);
	return f;
}

static void test_include_and_exclude_globs(void **state)
{
	const char *inc[] = {"__main__.solve*", "mesh.*"};
	const char *exc[] = {"*._private*"};
	struct sp_filter f = with(inc, 2, exc, 1);
	assert_true(sp_filter_name(&f, "__main__.solve"));
	assert_true(sp_filter_name(&f, "__main__.solve_linear"));
	assert_true(sp_filter_name(&f, "mesh.refine"));
	assert_false(sp_filter_name(&f, "__main__.assemble"));
	assert_false(sp_filter_name(&f, "mesh._private_helper"));
	/* A glob matches the whole name. */
	assert_false(sp_filter_name(&f, "x.mesh.refine"));
	sp_filter_clear(&f);
	/* No include patterns: everything not excluded passes. */
	struct sp_filter g = with(NULL, 0, exc, 1);
	assert_true(sp_filter_name(&g, "anything.at.all"));
	assert_false(sp_filter_name(&g, "a._private"));
	sp_filter_clear(&g);
	struct sp_filter none = {0};
	assert_true(sp_filter_name(&none, "x"));
}

/* The one dialect: globs against the whole name, re: expressions searched. */
static void test_patterns(void **state)
{
	struct sp_pattern p;
	struct sp_error err = {0};
	assert_int_equal(sp_pattern_init(&p, "solve", &err), SP_OK);
	assert_false(p.regex);
	assert_true(sp_pattern_match(&p, "solve"));
	assert_false(sp_pattern_match(&p, "solver"));        /* the whole name */
	assert_false(sp_pattern_match(&p, "__main__.solve"));
	sp_pattern_free(&p);
	assert_int_equal(sp_pattern_init(&p, "*.sol?e", &err), SP_OK);
	assert_true(sp_pattern_match(&p, "__main__.solve"));
	assert_false(sp_pattern_match(&p, "solve"));
	sp_pattern_free(&p);
	/* Characters special to regular expressions are plain in a glob. */
	assert_int_equal(sp_pattern_init(&p, "f(x)+", &err), SP_OK);
	assert_true(sp_pattern_match(&p, "f(x)+"));
	assert_false(sp_pattern_match(&p, "fxx"));
	sp_pattern_free(&p);
	assert_int_equal(sp_pattern_init(&p, "[ab]_*", &err), SP_OK);
	assert_true(sp_pattern_match(&p, "b_1"));
	assert_false(sp_pattern_match(&p, "c_1"));
	sp_pattern_free(&p);
	/* re: searches anywhere, POSIX extended. */
	assert_int_equal(sp_pattern_init(&p, "re:sol(ve|ver)$", &err), SP_OK);
	assert_true(p.regex);
	assert_string_equal(p.text, "sol(ve|ver)$");
	assert_true(sp_pattern_match(&p, "__main__.solve"));
	assert_true(sp_pattern_match(&p, "solver"));
	assert_false(sp_pattern_match(&p, "solved"));
	sp_pattern_free(&p);
	assert_int_equal(sp_pattern_init(&p, "re:^s", &err), SP_OK);
	assert_true(sp_pattern_match(&p, "step"));
	assert_false(sp_pattern_match(&p, "x.step"));
	sp_pattern_free(&p);
	/* "re:" alone is the empty expression: it matches every name. */
	assert_int_equal(sp_pattern_init(&p, "re:", &err), SP_OK);
	assert_true(sp_pattern_match(&p, "anything"));
	sp_pattern_free(&p);
	/* A bad expression: one line naming it; nothing to free. */
	assert_int_equal(sp_pattern_init(&p, "re:solve(", &err), SP_EINVAL);
	assert_non_null(strstr(err.msg, "invalid regular expression 're:solve('"));
	assert_null(strchr(err.msg, '\n'));
	assert_null(p.text);
	struct sp_pattern *v = NULL;
	size_t n = 0;
	assert_int_equal(sp_pattern_push(&v, &n, "a*", &err), SP_OK);
	assert_int_equal(sp_pattern_push(&v, &n, "re:[a-", &err), SP_EINVAL);
	assert_int_equal(n, 1);
	assert_int_equal(sp_pattern_push(&v, &n, "re:z$", &err), SP_OK);
	assert_true(sp_pattern_any(v, n, "abc"));
	assert_true(sp_pattern_any(v, n, "xyz"));
	assert_false(sp_pattern_any(v, n, "xyzw"));
	sp_pattern_clear(&v, &n);
	assert_null(v);
	assert_int_equal(n, 0);
}

static void test_clear_frees_and_empties(void **state)
{
	struct sp_filter f = {.all = 1};
	assert_int_equal(sp_pattern_push(&f.include, &f.ninclude, "a*", NULL), SP_OK);
	assert_int_equal(sp_pattern_push(&f.exclude, &f.nexclude, "re:b", NULL), SP_OK);
	f.foreign = calloc(1, sizeof(char *));
	f.foreign[0] = strdup("/usr/");
	f.nforeign = 1;
	sp_filter_clear(&f);
	assert_null(f.include);
	assert_int_equal(f.ninclude, 0);
	assert_int_equal(f.nexclude, 0);
	assert_int_equal(f.nforeign, 0);
	assert_false(f.all);
	assert_true(sp_filter_name(&f, "b"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_code_is_the_users_files),
		cmocka_unit_test(test_the_program_run_is_own_code),
		cmocka_unit_test(test_all_traces_everything),
		cmocka_unit_test(test_include_and_exclude_globs),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_clear_frees_and_empties),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

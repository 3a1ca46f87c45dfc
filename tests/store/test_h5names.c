/* test_h5names.c - region names as HDF5 link names and back
 * (src/store/h5names.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sp_h5.h"

static void check_escape(const char *name, const char *link)
{
	char *e = sp_h5_escape(name), *u = sp_h5_unescape(link);
	assert_string_equal(e, link);
	assert_string_equal(u, name);
	free(e);
	free(u);
}

static void check_unescape(const char *link, const char *name)
{
	char *u = sp_h5_unescape(link);
	assert_string_equal(u, name);
	free(u);
}

static void test_escape(void **state)
{
	(void)state;
	check_escape("plain", "plain");
	check_escape("a/b", "a%2Fb");
	check_escape("100%", "100%25");
	check_escape(".", "%2E");
	check_escape("..", "..");
	check_escape("x.y", "x.y");
	check_escape("with space", "with space");
	check_escape("löser/ß", "löser%2Fß");
	check_escape("%2F", "%252F");
	check_escape("/", "%2F");
	check_escape("", "");
	check_unescape("a%2fb", "a/b");
	check_unescape("%2e", ".");
	check_unescape("%41%4a", "AJ");
	check_unescape("%zz", "%zz");
	check_unescape("%2", "%2");
	check_unescape("%", "%");
	check_unescape("100%", "100%");
	check_unescape("%%2F", "%/");
	check_unescape("%00x", "%00x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

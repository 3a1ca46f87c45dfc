/* test_json.c - unit tests of the one JSON string writer and UTF-8 check
 * (sp_json.h): control characters, bad UTF-8, CSV fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_json.h"

static void expect_json(const char *in, const char *want)
{
	struct sp_str b = {0};
	sp_json_string(&b, in);
	assert_false(b.oom);
	assert_string_equal(b.p, want);
	/* The FILE writer encodes the same. */
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);
	assert_non_null(f);
	sp_json_fputs(f, in);
	fclose(f);
	assert_string_equal(mem, want);
	free(mem);
	sp_str_free(&b);
}

static void test_control_characters(void **state)
{
	expect_json("a\"b\\c", "\"a\\\"b\\\\c\"");
	expect_json("\n\t\r", "\"\\n\\t\\r\"");
	expect_json("\x01\x1f" "x", "\"\\u0001\\u001fx\"");
	expect_json("", "\"\"");
	expect_json("\x7f", "\"\x7f\"");            /* DEL is legal JSON */
}

static void test_bad_utf8(void **state)
{
	expect_json("caf\xc3\xa9", "\"caf\xc3\xa9\"");                 /* kept */
	expect_json("\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xe2\x82\xac\xf0\x9f\x98\x80\"");
	expect_json("a\xffz", "\"a\\ufffdz\"");                        /* stray byte */
	expect_json("\xc3", "\"\\ufffd\"");                            /* cut short */
	expect_json("\xc0\xaf", "\"\\ufffd\\ufffd\"");                 /* overlong */
	expect_json("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");      /* surrogate */
	expect_json("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
}

static void test_utf8_seq(void **state)
{
	uint32_t cp;
	assert_int_equal(sp_utf8_seq((const unsigned char *)"A", &cp), 1);
	assert_int_equal(cp, 'A');
	assert_int_equal(sp_utf8_seq((const unsigned char *)"\xe2\x82\xac", &cp), 3);
	assert_int_equal(cp, 0x20ac);
	assert_int_equal(sp_utf8_seq((const unsigned char *)"\x80", &cp), 0);
	assert_int_equal(sp_utf8_seq((const unsigned char *)"\xe0\x80\x80", &cp), 0);
}

static void test_csv_field(void **state)
{
	struct sp_str b = {0};
	sp_csv_field(&b, "plain");
	sp_csv_field(&b, "|a,b \"q\"|");
	assert_string_equal(b.p, "plain\"|a,b \"\"q\"\"|\"");
	sp_str_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_control_characters),
		cmocka_unit_test(test_bad_utf8),
		cmocka_unit_test(test_utf8_seq),
		cmocka_unit_test(test_csv_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

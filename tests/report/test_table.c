/* test_table.c - unit tests of the column-fitted table renderer (sp_table.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sp_table.h"

static void test_fit_and_rows(void **state)
{
	struct sp_table_col c[3] = {{NULL, SP_TABLE_LEFT, 0}, {"  ", SP_TABLE_RIGHT, 0},
				    {" ", SP_TABLE_RIGHT, 0}};
	const char *const head[] = {"region", "calls", "B/A"};
	const char *const r1[] = {"solve", "12", "1.50x"};
	const char *const r2[] = {"é€", "123456", NULL};
	sp_table_fit(c, 3, head);
	sp_table_fit(c, 3, r1);
	sp_table_fit(c, 3, r2);
	assert_int_equal(c[0].w, 6);
	assert_int_equal(c[1].w, 6);
	assert_int_equal(c[2].w, 5);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	sp_table_row(f, c, 3, head, "\n");
	sp_table_row(f, c, 3, r1, "\n");
	sp_table_row(f, c, 3, r2, "|\n");
	fclose(f);
	assert_string_equal(text, "region   calls   B/A\n"
				  "solve       12 1.50x\n"
				  "é€      123456      |\n");   /* é€: 2 columns, 5 bytes */
	free(text);
}

/* Left cells are cut with an ellipsis; right cells are never cut. */
static void test_cut_and_overflow(void **state)
{
	struct sp_table_col c[2] = {{"│ ", SP_TABLE_LEFT, 5}, {" │ ", SP_TABLE_RIGHT, 2}};
	const char *const r[] = {"abcdefgh", "12345"};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	sp_table_row(f, c, 2, r, " │\n");
	fclose(f);
	assert_string_equal(text, "│ abcd… │ 12345 │\n");
	free(text);
}

/* Right cells are measured in columns ("µs" is one column of two bytes), so
 * durations line up; names lose their middle, keeping their end. */
static void test_units_and_names(void **state)
{
	struct sp_table_col c[2] = {{NULL, SP_TABLE_NAME, 0}, {"  ", SP_TABLE_RIGHT, 0}};
	const char *const r1[] = {"importlib._bootstrap_external._LoaderBasics.exec_module", "472 µs"};
	const char *const r2[] = {"main", "12.3 ms"};
	sp_table_fit(c, 2, r1);
	sp_table_fit(c, 2, r2);
	assert_int_equal(c[1].w, 7);
	c[0].w = 32;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	sp_table_row(f, c, 2, r1, "|\n");
	sp_table_row(f, c, 2, r2, "|\n");
	fclose(f);
	assert_string_equal(text, "importlib.…derBasics.exec_module   472 µs|\n"
				  "main                              12.3 ms|\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fit_and_rows),
		cmocka_unit_test(test_cut_and_overflow),
		cmocka_unit_test(test_units_and_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_grow.c - the one growable-array idiom: doubling, the first capacity,
 * overflow refused with the array left as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sp_grow.h"

static void test_cap_doubles_from_first(void **state)
{
	assert_int_equal(sp_grow_cap(0, 16, 1, 8), 16);
	assert_int_equal(sp_grow_cap(0, 16, 17, 8), 32);
	assert_int_equal(sp_grow_cap(0, 0, 1, 8), 1);       /* no first: 1 */
	assert_int_equal(sp_grow_cap(16, 1024, 17, 8), 32); /* first only when empty */
	assert_int_equal(sp_grow_cap(32, 16, 20, 8), 32);   /* already big enough */
	assert_int_equal(sp_grow_cap(3, 16, 13, 1), 24);
}

static void test_cap_overflow(void **state)
{
	assert_int_equal(sp_grow_cap(SIZE_MAX / 2 + 1, 16, SIZE_MAX, 1), 0);
	assert_int_equal(sp_grow_cap(SIZE_MAX / 16, 16, SIZE_MAX / 16 + 1, 16), 0);
	assert_int_equal(sp_grow_cap(0, SIZE_MAX / 4, 1, 8), 0);
}

static void test_grow_array(void **state)
{
	int *v = NULL;
	size_t cap = 0;
	for (size_t n = 0; n < 1000; n++) {
		if (n == cap)
			assert_int_equal(SP_GROW(&v, &cap, n + 1), 0);
		v[n] = (int)n;
	}
	assert_int_equal(cap, 1024);
	for (size_t n = 0; n < 1000; n++)
		assert_int_equal(v[n], (int)n);
	/* Too large: refused, the array and its capacity untouched. */
	int *before = v;
	assert_int_equal(SP_GROW(&v, &cap, SIZE_MAX / 2), -1);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 1024);
	assert_ptr_equal(sp_grow(v, &cap, 10, sizeof *v), v);   /* nothing to do */
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_doubles_from_first),
		cmocka_unit_test(test_cap_overflow),
		cmocka_unit_test(test_grow_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

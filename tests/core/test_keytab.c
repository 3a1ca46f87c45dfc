/* test_keytab.c - the (parent, key) -> dense id table behind every call tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sp_keytab.h"

static void test_ids_are_dense_and_stable(void **state)
{
	struct sp_keytab t = {0};
	int added = -1;
	assert_int_equal(sp_keytab_get(&t, -1, 7, &added), 0);
	assert_int_equal(added, 1);
	assert_int_equal(sp_keytab_get(&t, 0, 7, &added), 1);   /* another parent */
	assert_int_equal(added, 1);
	assert_int_equal(sp_keytab_get(&t, -1, 7, &added), 0);  /* found again */
	assert_int_equal(added, 0);
	/* Keys use all 64 bits: pointers differ above bit 32. */
	assert_int_equal(sp_keytab_get(&t, -1, 7 | (UINT64_C(1) << 40), NULL), 2);
	assert_int_equal(t.n, 3);
	sp_keytab_free(&t);
	assert_null(t.keys);
}

static void test_many_keys_survive_growth(void **state)
{
	struct sp_keytab t = {0};
	const int n = 100000;
	for (int i = 0; i < n; i++)
		assert_int_equal(sp_keytab_get(&t, i % 97 - 1, (uint64_t)i * 2654435761u, NULL), i);
	assert_true(t.nslots >= 2 * t.n);
	for (int i = n; i-- > 0;) {
		int added = -1;
		assert_int_equal(sp_keytab_get(&t, i % 97 - 1, (uint64_t)i * 2654435761u, &added), i);
		assert_int_equal(added, 0);
	}
	sp_keytab_free(&t);
}

static void test_clear_forgets_and_reuses(void **state)
{
	struct sp_keytab t = {0};
	for (int i = 0; i < 1000; i++)
		sp_keytab_get(&t, 0, (uint64_t)i, NULL);
	size_t slots = t.nslots;
	sp_keytab_clear(&t);
	assert_int_equal(t.n, 0);
	assert_int_equal(t.nslots, slots);           /* the memory stays */
	int added = 0;
	assert_int_equal(sp_keytab_get(&t, 0, 999, &added), 0);
	assert_int_equal(added, 1);
	sp_keytab_free(&t);
}

/* find looks up without adding: absent before, the get's id after. */
static void test_find_does_not_add(void **state)
{
	struct sp_keytab t = {0};
	assert_int_equal(sp_keytab_find(&t, -1, 5), -1);       /* empty, no slots yet */
	assert_int_equal(sp_keytab_get(&t, -1, 5, NULL), 0);
	assert_int_equal(sp_keytab_get(&t, -2, 5, NULL), 1);
	assert_int_equal(sp_keytab_find(&t, -1, 5), 0);
	assert_int_equal(sp_keytab_find(&t, -2, 5), 1);
	assert_int_equal(sp_keytab_find(&t, -3, 5), -1);
	assert_int_equal(sp_keytab_find(&t, -1, 6), -1);
	assert_int_equal(t.n, 2);
	sp_keytab_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids_are_dense_and_stable),
		cmocka_unit_test(test_many_keys_survive_growth),
		cmocka_unit_test(test_clear_forgets_and_reuses),
		cmocka_unit_test(test_find_does_not_add),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/test_get_ref.c - ut_get_ref in a long read transaction: every
 * value it handed out stays valid until the transaction ends (untorn.h),
 * and the transaction holds one pin per page it read, not one per call
 * (issue 31: a reader calling it in a loop grew its pins, and the pinned
 * versions' references, without bound).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "untorn.h"
#include "db.h"
#include "txn.h"
#include "ut_simdisk.h"

#define NKEYS 300
#define CALLS 100000

static ut_db *open_db(ut_simdisk *d)
{
	ut_options o;
	ut_db *db = NULL;

	ut_options_init(&o, sizeof(o));
	o.cache_bytes = 1u << 20;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), "/r.db", &o, &db), UT_OK);
	return db;
}

static void key_of(int i, char *k, size_t n)
{
	snprintf(k, n, "key%05d", i);
}

/* NKEYS keys, key i's 200-byte value all 'a' + i % 26, in one commit. */
static void put_keys(ut_db *db)
{
	char k[16], v[200];
	ut_txn *t;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = 0; i < NKEYS; i++) {
		key_of(i, k, sizeof(k));
		memset(v, 'a' + i % 26, sizeof(v));
		assert_int_equal(ut_put(t, k, strlen(k), v, sizeof(v)), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
}

static void test_pins_bounded_values_valid(void **s)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_db *db = open_db(d);
	const void *first[NKEYS];
	char k[16], v[200];
	ut_txn *t;

	(void)s;
	put_keys(db);

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int c = 0; c < CALLS; c++) {
		const void *val;
		size_t vl;
		int i = (int)((unsigned)c * 7919u % NKEYS);

		key_of(i, k, sizeof(k));
		assert_int_equal(ut_get_ref(t, k, strlen(k), &val, &vl), UT_OK);
		assert_int_equal(vl, sizeof(v));
		if (c < NKEYS)
			first[i] = val;
		else
			assert_ptr_equal(val, first[i]); /* one version per page */
	}
	/* 300 values of 200 bytes: a few leaves; one pin each */
	print_message("%d calls: %zu pins held\n", CALLS, t->nheld);
	assert_true(t->nheld <= 16);
	/* every value handed out is still there, unchanged */
	for (int i = 0; i < NKEYS; i++) {
		const uint8_t *b = first[i];

		for (size_t j = 0; j < sizeof(v); j++)
			assert_int_equal(b[j], 'a' + i % 26);
	}
	ut_abort(t);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* A read transaction's object is reused by the next one (db.c), with its
 * held list and pin set emptied: the next transaction pins the pages it
 * reads again (a stale pin set would take them for held and drop the
 * pin, leaving its values unpinned). */
static void test_reused_txn_pins_again(void **s)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_db *db = open_db(d);
	char k[16];
	ut_txn *t;

	(void)s;
	put_keys(db);
	for (int round = 0; round < 3; round++) {
		size_t first;

		assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
		assert_int_equal(t->nheld, 0);
		for (int i = 0; i < NKEYS; i++) {
			const void *val;
			size_t vl;

			key_of(i, k, sizeof(k));
			assert_int_equal(ut_get_ref(t, k, strlen(k), &val, &vl), UT_OK);
			assert_int_equal(((const uint8_t *)val)[0], 'a' + i % 26);
			if (i == 0)
				assert_int_equal(t->nheld, 1); /* pinned, not taken for held */
		}
		first = t->nheld;
		assert_true(first >= 2);
		ut_abort(t);
	}
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pins_bounded_values_valid),
		cmocka_unit_test(test_reused_txn_pins_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

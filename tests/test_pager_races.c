/*
 * tests/test_pager_races.c - the pager's handle and locks hold up under
 * the sanitizers: the handle is allocated at its (cache-line) alignment,
 * and readers hitting the page table while the writer grows it race on
 * nothing (run under ThreadSanitizer: the race was a reader computing its
 * stripe from the table's size, which the growth changes).
 */
#include <pthread.h>
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
#include "pager_int.h"
#include "ut_simdisk.h"

static ut_db *open_db(ut_simdisk *d, const char *path, size_t cache)
{
	ut_options o;
	ut_db *db = NULL;

	ut_options_init(&o, sizeof(o));
	o.cache_bytes = cache;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), path, &o, &db), UT_OK);
	return db;
}

/* calloc gives 16 bytes; the handle asks for 64 (its stripes). */
static void test_handle_aligned(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_db *db[8];

	(void)state;
	assert_true(_Alignof(ut_pager) >= 64);
	for (int i = 0; i < 8; i++) {
		char path[16];

		snprintf(path, sizeof(path), "/a%d.db", i);
		db[i] = open_db(d, path, 1u << 20);
		assert_int_equal((uintptr_t)ut_db_pager(db[i]) % _Alignof(ut_pager), 0);
	}
	for (int i = 0; i < 8; i++)
		assert_int_equal(ut_close(db[i]), UT_OK);
	ut_simdisk_free(d);
}

struct reader_arg {
	ut_db *db;
	int stop, errors;
	long gets;
};

static void *reader(void *arg)
{
	struct reader_arg *r = arg;
	char k[16];

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		ut_txn *t;

		if (ut_begin(r->db, UT_RDONLY, &t)) {
			r->errors++;
			continue;
		}
		for (int i = 0; i < 64; i++) {
			void *v = NULL;
			size_t vl;
			int rc;

			snprintf(k, sizeof(k), "k%05d", (int)(r->gets * 7 % 6000));
			rc = ut_get(t, k, strlen(k), &v, &vl);
			r->errors += rc != UT_OK && rc != UT_NOTFOUND;
			free(v);
			r->gets++;
		}
		ut_abort(t);
	}
	return NULL;
}

/* A small cache (64 buckets), readers hitting pages, and write
 * transactions touching hundreds of pages (frames past the bound: the
 * table doubles, again and again across reopen-free rounds). */
static void test_readers_while_table_grows(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_db *db = open_db(d, "/g.db", 8 * UT_PAGE_SIZE);
	struct reader_arg r[2] = { { db, 0, 0, 0 }, { db, 0, 0, 0 } };
	pthread_t th[2];
	char k[16], v[1000];
	size_t before;
	ut_txn *t;

	(void)state;
	memset(v, 'v', sizeof(v));
	before = ut_db_pager(db)->nbuckets;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, reader, &r[i]), 0);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int i = 0; i < 6000; i++) {
			snprintf(k, sizeof(k), "k%05d", i);
			v[0] = (char)('a' + round);
			assert_int_equal(ut_put(t, k, strlen(k), v, sizeof(v)), UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
	}
	for (int i = 0; i < 2; i++) {
		__atomic_store_n(&r[i].stop, 1, __ATOMIC_RELEASE);
		pthread_join(th[i], NULL);
	}
	pthread_mutex_lock(&ut_db_pager(db)->mu);
	print_message("buckets %zu -> %zu, %ld gets\n", before,
		      ut_db_pager(db)->nbuckets, r[0].gets + r[1].gets);
	assert_true(ut_db_pager(db)->nbuckets > before);
	pthread_mutex_unlock(&ut_db_pager(db)->mu);
	assert_int_equal(r[0].errors + r[1].errors, 0);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handle_aligned),
		cmocka_unit_test(test_readers_while_table_grows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

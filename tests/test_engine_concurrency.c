/*
 * tests/test_engine_concurrency.c - several threads on one handle: writers
 * are serialized (no lost updates), readers see a consistent committed
 * state while writers commit and the small pool evicts underneath them.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "helper_fs.h"
#include "untorn.h"

#define ACCOUNTS 2000
#define TOTAL ((int64_t)ACCOUNTS * 1000)

static ut_db *db;
static _Atomic int stop;
static int reader_errors, reader_rounds;
static pthread_mutex_t stat_mu = PTHREAD_MUTEX_INITIALIZER;

static void akey(char *k, int i)
{
	snprintf(k, 16, "acct%06d", i);
}

static int64_t get_bal(ut_txn *t, int i, int *err)
{
	char k[16];
	void *v;
	size_t vl;
	int64_t b = 0;

	akey(k, i);
	if (ut_get(t, k, 10, &v, &vl) != UT_OK || vl != 200) {
		(*err)++;
		return 0;
	}
	memcpy(&b, v, 8);
	free(v);
	return b;
}

static void put_bal(ut_txn *t, int i, int64_t b)
{
	char k[16], v[200];

	memset(v, 'p', sizeof(v));
	memcpy(v, &b, 8);
	akey(k, i);
	assert_int_equal(ut_put(t, k, 10, v, sizeof(v)), UT_OK);
}

static void *writer(void *arg)
{
	uint32_t x = (uint32_t)(uintptr_t)arg;
	for (int n = 0; n < 300; n++) {
		ut_txn *t;
		int err = 0;
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int j = 0; j < 10; j++) {
			x = x * 1103515245u + 12345u;
			int a = (int)((x >> 8) % ACCOUNTS), b = (int)((x >> 3) % ACCOUNTS);
			int64_t ba = get_bal(t, a, &err), bb;
			put_bal(t, a, ba - 7);
			bb = get_bal(t, b, &err);
			put_bal(t, b, bb + 7);
		}
		assert_int_equal(err, 0);
		if (n % 10 == 9)
			ut_abort(t); /* aborted transfers leave no trace */
		else
			assert_int_equal(ut_commit(t), UT_OK);
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!stop) {
		ut_txn *t;
		ut_cursor *c;
		int64_t sum = 0;
		int n = 0, err = 0, rc;
		if (ut_begin(db, UT_RDONLY, &t) != UT_OK) {
			err++;
			break;
		}
		if (ut_cursor_open(t, &c) == UT_OK) {
			for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
				const void *v;
				size_t vl;
				int64_t b;
				if (ut_cursor_get(c, NULL, NULL, &v, &vl) != UT_OK || vl != 200) {
					err++;
					break;
				}
				memcpy(&b, v, 8);
				sum += b;
				n++;
			}
			if (rc != UT_NOTFOUND) {
				fprintf(stderr, "reader: scan ended with %d (%s) after %d keys\n",
					rc, ut_errdetail(), n);
				err++;
			}
			ut_cursor_close(c);
		}
		if (sum != TOTAL || n != ACCOUNTS) {
			fprintf(stderr, "reader: %d keys, sum %lld\n", n, (long long)sum);
			err++;
		}
		ut_commit(t);
		pthread_mutex_lock(&stat_mu);
		reader_errors += err;
		reader_rounds++;
		pthread_mutex_unlock(&stat_mu);
	}
	return NULL;
}

static void test_readers_and_writers(void **s)
{
	(void)s;
	char *path = tmp_db_path("conc", "rw");
	ut_options o;
	pthread_t w[2], r[2];

	ut_options_default(&o);
	o.sync = 0;
	o.protect = UT_PROTECT_UNSAFE;
	o.cache_bytes = 12 * UT_PAGE_SIZE; /* far smaller than the data */
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	ut_txn *t;
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = 0; i < ACCOUNTS; i++)
		put_bal(t, i, 1000);
	assert_int_equal(ut_commit(t), UT_OK);

	stop = 0;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&r[i], NULL, reader, NULL), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&w[i], NULL, writer, (void *)(uintptr_t)(i + 1)), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	assert_int_equal(reader_errors, 0);
	assert_true(reader_rounds > 0);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);

	/* the sum survived, and so did every account */
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	int64_t sum = 0;
	int err = 0;
	for (int i = 0; i < ACCOUNTS; i++)
		sum += get_bal(t, i, &err);
	assert_int_equal(err, 0);
	assert_true(sum == TOTAL);
	ut_commit(t);
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
}

static void *incr(void *arg)
{
	(void)arg;
	for (int n = 0; n < 500; n++) {
		ut_txn *t;
		void *v;
		size_t vl;
		uint64_t c = 0;
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		if (ut_get(t, "counter", 7, &v, &vl) == UT_OK) {
			memcpy(&c, v, 8);
			free(v);
		}
		c++;
		assert_int_equal(ut_put(t, "counter", 7, &c, 8), UT_OK);
		assert_int_equal(ut_commit(t), UT_OK);
	}
	return NULL;
}

static void test_writers_serialized(void **s)
{
	(void)s;
	char *path = tmp_db_path("conc", "ser");
	ut_options o;
	pthread_t th[3];

	ut_options_default(&o);
	o.sync = 0;
	o.protect = UT_PROTECT_UNSAFE;
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, incr, NULL), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ut_txn *t;
	void *v;
	size_t vl;
	uint64_t c;
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_get(t, "counter", 7, &v, &vl), UT_OK);
	memcpy(&c, v, 8);
	free(v);
	assert_true(c == 1500); /* no lost update */
	ut_commit(t);
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readers_and_writers),
		cmocka_unit_test(test_writers_serialized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/test_open_refusal.c - what ut_open does with a database whose
 * companions are lost or contradict it (include/untorn.h, "Files" and
 * "Damaged files"): a lost "-wal" is refused, and opened -- the loss
 * reported -- once the user creates it empty as documented; a refused
 * recovery leaves every file byte-identical.  On the simulated disk.
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
#include "ut_simdisk.h"

#define DB "/r.db"

static ut_options opts(size_t cache)
{
	ut_options o;

	ut_options_init(&o, sizeof(o));
	o.cache_bytes = cache;
	o.sync = 1;
	return o;
}

static void key_of(char *k, int i)
{
	snprintf(k, 16, "key%05d", i);
}

static void commit_keys(ut_db *db, int from, int to)
{
	char k[16], v[200];
	ut_txn *t;

	for (int i = from; i < to; i++) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		key_of(k, i);
		memset(v, 'a' + i % 26, sizeof(v));
		assert_int_equal(ut_put(t, k, strlen(k), v, sizeof(v)), UT_OK);
		assert_int_equal(ut_commit(t), UT_OK);
	}
}

/* 1 if key i is in the database. */
static int has_key(ut_db *db, int i)
{
	char k[16];
	void *v = NULL;
	size_t vlen;
	ut_txn *t;
	int rc;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	key_of(k, i);
	rc = ut_get(t, k, strlen(k), &v, &vlen);
	ut_abort(t);
	free(v);
	assert_true(rc == UT_OK || rc == UT_NOTFOUND);
	return rc == UT_OK;
}

static void make_empty(ut_vfs *v, const char *path)
{
	ut_file *f;

	assert_int_equal(v->open(v, path, UT_OPEN_CREATE, &f), UT_OK);
	ut_file_close(f);
}

/* A database not closed cleanly after a checkpoint, its log lost: refused
 * (the commits since the checkpoint may live only there); with the log
 * created as an empty file, as the header says, it opens at its last
 * checkpoint, ut_errdetail reporting the loss, and checks clean. */
static void test_empty_log_opens_with_loss_reported(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(8u << 20); /* no page leaves the cache unasked */
	ut_check_result cr;
	ut_db *db;

	(void)state;
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	commit_keys(db, 0, 100);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	commit_keys(db, 100, 150); /* in the log only */
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db); /* frees the handle of the dead disk */

	assert_int_equal(v->remove(v, DB "-wal"), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "create it empty"));

	make_empty(v, DB "-wal");
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	print_message("open with the log lost: %s\n", ut_errdetail());
	assert_non_null(strstr(ut_errdetail(), "-wal"));
	assert_non_null(strstr(ut_errdetail(), "lost"));
	assert_true(has_key(db, 0) && has_key(db, 99));
	assert_false(has_key(db, 100) || has_key(db, 149));
	assert_int_equal(ut_check(db, NULL, &cr), UT_OK);
	commit_keys(db, 100, 110); /* the new log works */
	assert_int_equal(ut_simdisk_reboot_policy(d, 2, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);

	/* a later open recovers from the new log and reports no loss */
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_string_equal(ut_errdetail(), "");
	assert_true(has_key(db, 109));
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_log_opens_with_loss_reported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

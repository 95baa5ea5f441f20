/*
 * tests/test_backup.c - ut_backup's promises about the files around it
 * (engine/backup.c): it never writes or removes a file it did not create
 * (its destination is created exclusively), and the copy holds no commit
 * that a crash of the source could still lose.  On the simulated disk.
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

#define DB "/b.db"
#define DEST "/copy.db"

static ut_db *open_db(ut_simdisk *d, const char *path, int sync)
{
	ut_options o;
	ut_db *db = NULL;

	ut_options_init(&o, sizeof(o));
	o.cache_bytes = 1u << 20;
	o.sync = sync;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), path, &o, &db), UT_OK);
	return db;
}

static void put_keys(ut_db *db, int from, int to)
{
	char k[16];
	ut_txn *t;

	for (int i = from; i < to; i++) {
		snprintf(k, sizeof(k), "key%05d", i);
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		assert_int_equal(ut_put(t, k, strlen(k), k, strlen(k)), UT_OK);
		assert_int_equal(ut_commit(t), UT_OK);
	}
}

static int count_keys(ut_db *db)
{
	ut_txn *t;
	ut_cursor *c;
	int n = 0;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	for (int rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK;
	     rc = ut_cursor_next(c))
		n++;
	ut_cursor_close(c);
	ut_abort(t);
	return n;
}

/* The fault hook makes DEST appear between ut_backup's check that it is
 * absent and its open: at the first sync of the source's log. */
struct racer {
	ut_simdisk *d;
	int armed, done;
};

static int racer_fn(void *ctx, enum ut_simdisk_op op, const char *path)
{
	struct racer *r = ctx;
	ut_vfs *v = ut_simdisk_vfs(r->d);
	ut_file *f;

	if (!r->armed || r->done || op != UT_SIMDISK_OP_SYNC ||
	    strcmp(path, DB "-wal"))
		return 0;
	r->done = 1;
	if (v->open(v, DEST, UT_OPEN_CREATE, &f) == UT_OK) {
		(void)ut_file_write(f, "someone else's", 14, 0, 0);
		ut_file_close(f);
	}
	return 0;
}

/* A file that appears at the destination after the check is neither
 * overwritten nor removed: the backup fails with UT_EINVAL. */
static void test_backup_dest_created_exclusively(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	struct racer r = { d, 0, 0 };
	char buf[32];
	ut_db *db;
	int rc;

	(void)state;
	ut_simdisk_set_fault_hook(d, racer_fn, &r);
	db = open_db(d, DB, 0);
	put_keys(db, 0, 50); /* sync=0: the backup syncs the log itself */
	r.armed = 1;
	rc = ut_backup(db, DEST);
	assert_true(r.done);
	assert_int_equal(rc, UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "exists"));
	assert_int_equal(ut_simdisk_peek(d, DEST, 0, buf, sizeof(buf)), 14);
	assert_memory_equal(buf, "someone else's", 14);
	ut_simdisk_set_fault_hook(d, NULL, NULL);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* sync=0 commits are not durable when they return; a backup taken then
 * makes the log durable up to its snapshot first, so after a power cut
 * that keeps only synced data the source still has every commit the copy
 * has. */
static void test_backup_holds_no_commit_the_source_may_lose(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_db *db, *copy;
	int in_copy, in_source;

	(void)state;
	db = open_db(d, DB, 0);
	put_keys(db, 0, 200);
	assert_int_equal(ut_backup(db, DEST), UT_OK);
	put_keys(db, 200, 210); /* after the snapshot: may be lost */
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_DROP_ALL), UT_OK);
	(void)ut_close(db);

	copy = open_db(d, DEST, 1);
	in_copy = count_keys(copy);
	assert_int_equal(ut_close(copy), UT_OK);
	db = open_db(d, DB, 1);
	in_source = count_keys(db);
	assert_int_equal(ut_close(db), UT_OK);
	print_message("keys in the copy %d, in the source after the cut %d\n",
		      in_copy, in_source);
	assert_int_equal(in_copy, 200);
	assert_true(in_source >= in_copy);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backup_dest_created_exclusively),
		cmocka_unit_test(test_backup_holds_no_commit_the_source_may_lose),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

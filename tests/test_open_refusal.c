/*
 * tests/test_open_refusal.c - what ut_open does with a database whose
 * companions are lost or contradict it (include/untorn.h, "Files" and
 * "Damaged files"): a lost "-wal" is refused, and opened -- the loss
 * reported -- once the user creates it empty as documented; a refused
 * recovery leaves every file byte-identical, a torn page it would have
 * repaired from "-dw" included.  On the simulated disk.
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
#include "flush_doublewrite.h"
#include "helper_fs.h"
#include "page.h"
#include "ut_simdisk.h"
#include "wal.h"

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

/* Keys from..to, per keys a commit, the values of generation gen. */
static void commit_n(ut_db *db, int from, int to, int gen, int per)
{
	char k[16], v[200];
	ut_txn *t;

	for (int i = from; i < to;) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int j = 0; j < per && i < to; j++, i++) {
			key_of(k, i);
			memset(v, 'a' + (i + gen) % 26, sizeof(v));
			assert_int_equal(ut_put(t, k, strlen(k), v, sizeof(v)),
					 UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
	}
}

static void commit_keys(ut_db *db, int from, int to, int gen)
{
	commit_n(db, from, to, gen, 1);
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
	commit_keys(db, 0, 100, 0);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	commit_keys(db, 100, 150, 0); /* in the log only */
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db); /* frees the handle of the dead disk */

	assert_int_equal(v->remove(v, DB "-wal"), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "create it empty"));

	vfs_create_file(v, DB "-wal");
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	print_message("open with the log lost: %s\n", ut_errdetail());
	assert_non_null(strstr(ut_errdetail(), "-wal"));
	assert_non_null(strstr(ut_errdetail(), "lost"));
	assert_true(has_key(db, 0) && has_key(db, 99));
	assert_false(has_key(db, 100) || has_key(db, 149));
	assert_int_equal(ut_check(db, NULL, &cr), UT_OK);
	commit_keys(db, 100, 110, 0); /* the new log works */
	assert_int_equal(ut_simdisk_reboot_policy(d, 2, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);

	/* a later open recovers from the new log and reports no loss */
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_string_equal(ut_errdetail(), "");
	assert_true(has_key(db, 109));
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* ---- a refused recovery changes no file ------------------------------ */

/* A file's size and a hash of its bytes (size UINT64_MAX: no such file). */
struct fileprint {
	uint64_t size, hash;
};

static struct fileprint print_of(ut_simdisk *d, const char *path)
{
	struct fileprint fp = { UINT64_MAX, 1469598103934665603ull };
	uint64_t size;
	static unsigned char buf[1 << 16];

	if (ut_simdisk_file_size(d, path, &size) != UT_OK)
		return fp;
	fp.size = size;
	for (uint64_t off = 0; off < size;) {
		int64_t n = ut_simdisk_peek(d, path, off, buf, sizeof(buf));

		assert_true(n > 0);
		for (int64_t i = 0; i < n; i++)
			fp.hash = (fp.hash ^ buf[i]) * 1099511628211ull;
		off += (uint64_t)n;
	}
	return fp;
}

static void prints(ut_simdisk *d, struct fileprint fp[3])
{
	fp[0] = print_of(d, DB);
	fp[1] = print_of(d, DB "-wal");
	fp[2] = print_of(d, DB "-dw");
}

/* Damage that recovery finds only after it replayed much of the log;
 * TORN_AND_DAMAGED: RECORD_WITH_LATER, and a page torn in place whose
 * copy in "-dw" is whole (the torn-page repair must wait for the log's
 * verdict). */
enum damage { CUT_BELOW_BOUND, RECORD_WITH_LATER, TORN_AND_DAMAGED };

/* Tear, in the data file, the page of the newest valid copy in "-dw":
 * its first sector is overwritten (so it fails its checksum and has a
 * whole copy).  Returns its page number. */
static uint32_t tear_page_with_copy(ut_simdisk *d)
{
	static uint8_t h[UT_DW_HDR];
	uint64_t best = 0;
	uint32_t pgno = 0;

	for (uint32_t s = 0; s < UT_DW_SLOTS; s++) {
		if (ut_simdisk_peek(d, DB "-dw", UT_DW_SLOT_OFF(s), h,
				    sizeof(h)) != (int64_t)sizeof(h))
			break;
		if (ut_ld64(h) == UT_DW_MAGIC && ut_ld64(h + 8) >= best &&
		    ut_ld32(h + 16) != 0) {
			best = ut_ld64(h + 8);
			pgno = ut_ld32(h + 16);
		}
	}
	assert_true(pgno != 0);
	assert_int_equal(ut_simdisk_corrupt(d, DB, (uint64_t)pgno * UT_PAGE_SIZE +
					    100, 64), UT_OK);
	return pgno;
}

/* A database after a power cut whose log since the checkpoint touches
 * many more pages than the cache recovery runs with holds (redo must evict
 * pages it rebuilt to go on), damaged so that recovery refuses it: the
 * open is refused and every file keeps every byte. */
static void refusal_changes_nothing(int protect, enum damage dmg)
{
	enum { NKEYS = 5000 };
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(64 * UT_PAGE_SIZE);
	struct fileprint before[3], after[3];
	ut_wal_stats ws;
	uint64_t size, ev, redo_off;
	ut_db *db;
	int rc;

	o.protect = protect;
	if (protect == UT_PROTECT_DOUBLEWRITE)
		ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	commit_n(db, 0, NKEYS, 0, 250);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	commit_n(db, 0, NKEYS, 1, 4); /* every leaf again */
	ut_wal_stats_get(ut_db_wal(db), &ws);
	/* where the records since the checkpoint start and how long */
	redo_off = UT_WAL_DATA_OFF + ws.log_bytes - ws.bytes_since_checkpoint;
	size = ws.bytes_since_checkpoint;
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);

	if (dmg == CUT_BELOW_BOUND) {
		/* the last third of the log goes: pages and the header's
		 * bound vouch for commits past the cut */
		vfs_truncate_file(v, DB "-wal", redo_off + size * 2 / 3);
	} else {
		/* a record two thirds in is damaged; valid ones follow */
		assert_int_equal(ut_simdisk_corrupt(d, DB "-wal",
				 redo_off + size * 2 / 3, 64), UT_OK);
	}
	if (dmg == TORN_AND_DAMAGED)
		print_message("page %u torn in place, whole in -dw\n",
			      tear_page_with_copy(d));
	prints(d, before);
	/* recovery in a smaller cache: it must evict pages it rebuilt */
	o.cache_bytes = 8 * UT_PAGE_SIZE;
	ev = ut_simdisk_event_count(d);
	rc = ut_db_open_vfs(v, DB, &o, &db);
	print_message("events during the open: %llu\n",
		      (unsigned long long)(ut_simdisk_event_count(d) - ev));
	print_message("%s, %s: %s\n", ut_protect_name(protect),
		      dmg == CUT_BELOW_BOUND ? "cut" : "damaged", ut_errdetail());
	assert_int_equal(rc, UT_ECORRUPT);
	prints(d, after);
	for (int i = 0; i < 3; i++) {
		if (after[i].size != before[i].size ||
		    after[i].hash != before[i].hash)
			fail_msg("the refused open changed %s (size %llu -> %llu)",
				 i == 0 ? DB : i == 1 ? DB "-wal" : DB "-dw",
				 (unsigned long long)before[i].size,
				 (unsigned long long)after[i].size);
	}
	ut_simdisk_free(d);
}

static void test_refusal_changes_nothing_atomic(void **state)
{
	(void)state;
	refusal_changes_nothing(UT_PROTECT_ATOMIC, CUT_BELOW_BOUND);
	refusal_changes_nothing(UT_PROTECT_ATOMIC, RECORD_WITH_LATER);
}

static void test_refusal_changes_nothing_doublewrite(void **state)
{
	(void)state;
	refusal_changes_nothing(UT_PROTECT_DOUBLEWRITE, CUT_BELOW_BOUND);
	refusal_changes_nothing(UT_PROTECT_DOUBLEWRITE, RECORD_WITH_LATER);
	/* the repair of a torn page from its copy waits for the log's
	 * verdict too (it was written at open, before the log was read) */
	refusal_changes_nothing(UT_PROTECT_DOUBLEWRITE, TORN_AND_DAMAGED);
}

/* A page the last checkpoint counted (below its page count) reads as
 * zeroes after a power cut: damage, not a new page.  Recovery refuses it,
 * naming the page, rather than replay the log's deltas onto zeroes. */
static void test_zeroed_page_below_checkpoint_refused(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(8u << 20);
	static unsigned char zero[UT_PAGE_SIZE];
	unsigned char pg[UT_PAGE_SIZE];
	uint32_t victim = 0;
	uint64_t size;
	ut_db *db;

	(void)state;
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	commit_n(db, 0, 2000, 0, 100);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	commit_n(db, 0, 2000, 1, 10); /* every leaf changed, in the log only */
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	/* the last leaf page in the file goes to zeroes */
	assert_int_equal(ut_simdisk_file_size(d, DB, &size), UT_OK);
	for (uint32_t n = (uint32_t)(size / UT_PAGE_SIZE); n-- > 2 && !victim;) {
		assert_int_equal(ut_simdisk_peek(d, DB, (uint64_t)n * UT_PAGE_SIZE,
						 pg, UT_PAGE_SIZE), UT_PAGE_SIZE);
		if (pg[4] == UT_PT_LEAF)
			victim = n;
	}
	assert_true(victim > 1);
	assert_int_equal(ut_simdisk_poke(d, DB, (uint64_t)victim * UT_PAGE_SIZE,
					 zero, UT_PAGE_SIZE), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	print_message("zeroed page %u: %s\n", victim, ut_errdetail());
	{
		char want[32];

		snprintf(want, sizeof(want), "page %u", victim);
		assert_non_null(strstr(ut_errdetail(), want));
		assert_non_null(strstr(ut_errdetail(), "zero"));
	}
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_log_opens_with_loss_reported),
		cmocka_unit_test(test_refusal_changes_nothing_atomic),
		cmocka_unit_test(test_refusal_changes_nothing_doublewrite),
		cmocka_unit_test(test_zeroed_page_below_checkpoint_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/test_durability.c - the engine made crash-safe: WAL commit, redo at
 * open, checkpoints, protection-mode selection, loud runtime failures.
 *
 * Most tests run on the simulated disk (io/ut_simdisk.h) through
 * ut_db_open_vfs, "crashing" by rebooting the disk without ut_close.
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

#include "untorn.h"
#include "btree.h"
#include "db.h"
#include "flush_doublewrite.h"
#include "page.h"
#include "pager.h"
#include "ut_simdisk.h"
#include "wal.h"
#include "helper_fs.h"

#define DB "/db"

static ut_options opts(int protect, size_t cache, int sync)
{
	ut_options o;

	ut_options_default(&o);
	o.protect = protect;
	o.cache_bytes = cache;
	o.sync = sync;
	return o;
}

static void key_of(char *k, int i) { snprintf(k, 16, "k%06d", i); }

/* Value of key i in generation g: long enough to split pages. */
static size_t val_of(char *v, int i, int g)
{
	size_t n = 100 + (size_t)(i * 37 % 400);

	for (size_t j = 0; j < n; j++)
		v[j] = (char)('a' + (i + g + (int)j) % 26);
	return n;
}

/* Transaction i: put key i (generation 0), overwrite key i/2 (generation
 * i), set "n" = i + 1.  After it, keys 0..i exist. */
static int run_txn(ut_db *db, int i)
{
	char k[16], v[600];
	ut_txn *t;
	int rc;
	uint32_t n = (uint32_t)i + 1;

	if ((rc = ut_begin(db, 0, &t)))
		return rc;
	key_of(k, i);
	if ((rc = ut_put(t, k, 7, v, val_of(v, i, 0))))
		goto fail;
	if (i / 2 != i) {
		key_of(k, i / 2);
		if ((rc = ut_put(t, k, 7, v, val_of(v, i / 2, i))))
			goto fail;
	}
	if ((rc = ut_put(t, "n", 1, &n, sizeof(n))))
		goto fail;
	return ut_commit(t);
fail:
	ut_abort(t);
	return rc;
}

/* The database must hold exactly the state after m transactions, with
 * acked <= m <= acked + 1 (the last one in doubt).  Returns m. */
static int verify(ut_db *db, int acked)
{
	char k[16], v[600];
	ut_txn *t;
	void *val;
	size_t vlen;
	uint32_t n = 0;
	int rc;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	rc = ut_get(t, "n", 1, &val, &vlen);
	if (rc == UT_NOTFOUND) {
		n = 0;
	} else {
		assert_int_equal(rc, UT_OK);
		assert_int_equal(vlen, sizeof(n));
		memcpy(&n, val, sizeof(n));
		free(val);
	}
	if ((int)n < acked || (int)n > acked + 1)
		fail_msg("n = %u, acknowledged %d", n, acked);
	for (int i = 0; i < (int)n + 2; i++) {
		int g = 0;

		key_of(k, i);
		rc = ut_get(t, k, 7, &val, &vlen);
		if (i >= (int)n) {
			if (rc != UT_NOTFOUND)
				fail_msg("key %d present beyond n = %u", i, n);
			continue;
		}
		if (rc != UT_OK)
			fail_msg("key %d: rc %d (n = %u): %s", i, rc, n, ut_errdetail());
		/* last overwrite of key i: by txn 2i+1 or 2i (if < n) */
		if (2 * i + 1 < (int)n)
			g = 2 * i + 1;
		else if (2 * i < (int)n && 2 * i != i)
			g = 2 * i;
		size_t el = val_of(v, i, g);
		if (vlen != el || memcmp(val, v, el))
			fail_msg("key %d: wrong value (n = %u, generation %d)", i, n, g);
		free(val);
	}
	ut_abort(t);
	/* and the whole database passes the integrity check */
	ut_check_result cr;
	rc = ut_check(db, stderr, &cr);
	if (rc != UT_OK)
		fail_msg("ut_check: %s (%llu bad checksums, %llu invariant errors)",
			 ut_strerror(rc), (unsigned long long)cr.bad_checksums,
			 (unsigned long long)cr.invariant_errors);
	assert_true(cr.keys >= n);
	return (int)n;
}

/* Open (recovering), verify at least acked commits, close cleanly. */
static int reopen_verify(ut_vfs *v, const ut_options *o, int acked)
{
	ut_db *db;
	int n;

	assert_int_equal(ut_db_open_vfs(v, DB, o, &db), UT_OK);
	n = verify(db, acked);
	assert_int_equal(ut_close(db), UT_OK);
	return n;
}

/* ---- reopen after a crash, every pending write kept / dropped ---------- */

static void crash_reopen(enum ut_simdisk_policy pol, int protect, int sync)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(protect, 8 * UT_PAGE_SIZE, sync);
	ut_db *db;
	int acked = 0;

	if (protect == UT_PROTECT_DOUBLEWRITE)
		ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	ut_db_set_checkpoint_bytes(db, 64 << 10);
	for (int i = 0; i < 300; i++) {
		assert_int_equal(run_txn(db, i), UT_OK);
		acked = i + 1;
	}
	/* sync=0: after a power cut only what a checkpoint made durable is
	 * owed; after a process crash (every write kept) all of it */
	if (!sync && pol != UT_SIMDISK_KEEP_ALL)
		assert_int_equal(ut_checkpoint(db), UT_OK), acked = 300;
	for (int i = 300; i < 320 && sync; i++)
		assert_int_equal(run_txn(db, i), UT_OK), acked = i + 1;
	assert_int_equal(ut_simdisk_reboot_policy(d, 7, pol), UT_OK);
	(void)ut_close(db); /* dead handle: just frees */
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	int n = verify(db, acked);
	if (pol == UT_SIMDISK_KEEP_ALL)
		assert_int_equal(n, acked);
	/* and it keeps working */
	assert_int_equal(run_txn(db, n), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	reopen_verify(v, &o, n + 1);
	ut_simdisk_free(d);
}

static void test_crash_reopen(void **s)
{
	(void)s;
	crash_reopen(UT_SIMDISK_KEEP_ALL, UT_PROTECT_AUTO, 1);
	crash_reopen(UT_SIMDISK_DROP_ALL, UT_PROTECT_AUTO, 1);
	crash_reopen(UT_SIMDISK_RANDOM, UT_PROTECT_AUTO, 1);
	crash_reopen(UT_SIMDISK_KEEP_ALL, UT_PROTECT_DOUBLEWRITE, 1);
	crash_reopen(UT_SIMDISK_DROP_ALL, UT_PROTECT_DOUBLEWRITE, 1);
	crash_reopen(UT_SIMDISK_RANDOM, UT_PROTECT_DOUBLEWRITE, 1);
	crash_reopen(UT_SIMDISK_DROP_ALL, UT_PROTECT_AUTO, 0);
	/* sync=0 and a process crash: every commit was handed to the OS */
	crash_reopen(UT_SIMDISK_KEEP_ALL, UT_PROTECT_AUTO, 0);
	crash_reopen(UT_SIMDISK_KEEP_ALL, UT_PROTECT_DOUBLEWRITE, 0);
}

/* ---- redo rebuilds every change the tree made -------------------------- */

enum { RD_KEYS = 2500 };

/* Key i: 8 to 607 bytes, so that interior pages fill and split too. */
static size_t rd_key(uint8_t *k, int i)
{
	size_t n = 8 + (size_t)(i % 7 == 0 ? i * 13 % 600 : i % 40);

	snprintf((char *)k, 9, "%08d", i);
	for (size_t j = 8; j < n; j++)
		k[j] = (uint8_t)(i * 31 + (int)j);
	return n;
}

/* Value of key i in generation g: mostly a leaf cell, now and then an
 * overflow chain, now and then the size of a leaf's free tail. */
static size_t rd_val(uint8_t *v, int i, int g)
{
	unsigned r = (unsigned)(i * 2654435761u + (unsigned)g * 40503u) >> 7;
	size_t n = r % 10 == 0 ? 3000 + r % 3000 : r % 10 == 1 ? 1200 + r % 900 : r % 300;

	for (size_t j = 0; j < n; j++)
		v[j] = (uint8_t)(i + g * 7 + (int)j);
	return n;
}

/* Puts (inserts and replaces, cells of many sizes, overflow values) and
 * deletes in small sync transactions; then a power cut that loses every
 * unsynced write.  Recovery must rebuild exactly the model from the data
 * file and the log: a byte a page writer changed but did not record for
 * the log (pager.h, ut_pager_write_tracked) would come back wrong. */
static void redo_restores_every_change(int always_rebuild)
{
	static int gen[RD_KEYS]; /* 0: absent, else the live generation */
	static uint8_t k[UT_MAX_KEY], v[8192];
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *vfs = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_AUTO, 2048 * UT_PAGE_SIZE, 1);
	unsigned r = 12345;
	ut_check_result cr;
	ut_db *db;
	ut_txn *t;
	int live = 0;

	memset(gen, 0, sizeof(gen));
	ut_bt_set_always_rebuild(always_rebuild);
	assert_int_equal(ut_db_open_vfs(vfs, DB, &o, &db), UT_OK);
	ut_db_set_checkpoint_bytes(db, 1 << 20); /* some pages on disk, older */
	for (int txn = 0; txn < 600; txn++) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int op = 0; op < 25; op++) {
			int i = (int)((r = r * 1103515245u + 12345u) >> 8) % RD_KEYS;
			size_t kl = rd_key(k, i);

			if ((r >> 4) % 4 == 0 && gen[i]) {
				assert_int_equal(ut_del(t, k, kl), UT_OK);
				gen[i] = 0;
				live--;
			} else {
				live += !gen[i];
				gen[i] = txn * 25 + op + 1;
				assert_int_equal(ut_put(t, k, kl, v, rd_val(v, i, gen[i])),
						 UT_OK);
			}
		}
		assert_int_equal(ut_commit(t), UT_OK);
	}
	assert_int_equal(ut_simdisk_reboot_policy(d, 3, UT_SIMDISK_DROP_ALL), UT_OK);
	(void)ut_close(db); /* dead handle: just frees */
	assert_int_equal(ut_db_open_vfs(vfs, DB, &o, &db), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int i = 0; i < RD_KEYS; i++) {
		size_t kl = rd_key(k, i), vl;
		void *val;
		int rc = ut_get(t, k, kl, &val, &vl);

		if (!gen[i]) {
			if (rc != UT_NOTFOUND)
				fail_msg("key %d: deleted, but found (rc %d)", i, rc);
			continue;
		}
		if (rc != UT_OK)
			fail_msg("key %d: rc %d: %s", i, rc, ut_errdetail());
		size_t el = rd_val(v, i, gen[i]);
		if (vl != el || memcmp(val, v, el))
			fail_msg("key %d: wrong value after redo", i);
		free(val);
	}
	ut_abort(t);
	assert_int_equal(ut_check(db, NULL, &cr), UT_OK);
	assert_int_equal(cr.keys, (uint64_t)live);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
	ut_bt_set_always_rebuild(0);
}

static void test_redo_restores_every_change(void **s)
{
	(void)s;
	redo_restores_every_change(0);
	redo_restores_every_change(1); /* and the rebuilding redistribution */
}

/* ---- power cut at every k-th I/O event, random tears ------------------- */

/* The page-write bound's invariant on disk: no page of the data file and
 * no copy in -dw that passes its checksum carries an LSN above the bound
 * in the header (when the header passes its own and has one: a torn
 * header is double-write's to repair).  Returns the newest such LSN. */
static uint64_t bound_holds_on_disk(ut_simdisk *d)
{
	uint8_t *pg = malloc(UT_PAGE_SIZE);
	uint64_t len, b = UT_BOUND_UNKNOWN, newest = 0;

	assert_int_equal(ut_simdisk_file_size(d, DB, &len), UT_OK);
	for (uint64_t off = 0; off + UT_PAGE_SIZE <= len; off += UT_PAGE_SIZE) {
		assert_int_equal(ut_simdisk_peek(d, DB, off, pg, UT_PAGE_SIZE),
				 UT_PAGE_SIZE);
		if (!ut_page_checksum_ok(pg))
			continue;
		if (off == 0 && ut_ld32(pg + UT_META_VERSION) >= 2)
			b = ut_ld64(pg + UT_META_PAGEBOUND);
		if (ut_page_lsn(pg) > newest)
			newest = ut_page_lsn(pg);
	}
	if (ut_simdisk_file_size(d, DB "-dw", &len) == UT_OK)
		for (uint64_t off = UT_DW_SLOT_OFF(0) + UT_DW_HDR;
		     off + UT_PAGE_SIZE <= len; off += UT_DW_SLOT_BYTES) {
			assert_int_equal(ut_simdisk_peek(d, DB "-dw", off, pg,
							 UT_PAGE_SIZE), UT_PAGE_SIZE);
			if (ut_page_checksum_ok(pg) && ut_page_lsn(pg) > newest)
				newest = ut_page_lsn(pg);
		}
	free(pg);
	if (b != UT_BOUND_UNKNOWN && newest > b)
		fail_msg("a page on disk carries LSN %llu, above the bound %llu",
			 (unsigned long long)newest, (unsigned long long)b);
	return newest;
}

/* With flush_inline the run is deterministic, so every crash point the
 * dry run counted is reached.  With the cleaner thread the I/O order varies
 * from run to run: a point past the run's own end is skipped (counted). */
static void sweep(int protect, uint64_t step, int ntxn, int flush_inline)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(protect, 8 * UT_PAGE_SIZE, 1);
	uint64_t base, end, points = 0, skipped = 0;
	ut_db *db;

	o.flush_inline = flush_inline;
	if (protect == UT_PROTECT_DOUBLEWRITE)
		ut_simdisk_set_atomic(d, 0, 0);
	/* a dry run measures the events of the workload */
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	base = ut_simdisk_event_count(d);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	ut_db_set_checkpoint_bytes(db, 16 << 10);
	for (int i = 0; i < ntxn; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	end = ut_simdisk_event_count(d);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);

	print_message("sweep %s: %llu events, crash every %llu\n",
		      ut_protect_name(protect), (unsigned long long)(end - base),
		      (unsigned long long)step);
	for (uint64_t at = 0; at < end - base; at += step) {
		int acked = 0, rc = UT_OK;

		d = ut_simdisk_new();
		v = ut_simdisk_vfs(d);
		if (protect == UT_PROTECT_DOUBLEWRITE)
			ut_simdisk_set_atomic(d, 0, 0);
		assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
		assert_int_equal(ut_close(db), UT_OK);
		ut_simdisk_crash_at(d, ut_simdisk_event_count(d) + at);
		rc = ut_db_open_vfs(v, DB, &o, &db);
		if (rc == UT_OK)
			ut_db_set_checkpoint_bytes(db, 16 << 10);
		else
			db = NULL;
		for (int i = 0; i < ntxn && rc == UT_OK; i++) {
			rc = run_txn(db, i);
			if (rc == UT_OK)
				acked = i + 1;
		}
		points++;
		if (!flush_inline && !ut_simdisk_crashed(d) && db) {
			/* the point lies in the close (final checkpoint) */
			if (ut_close(db) == UT_OK) {
				skipped++;
				ut_simdisk_free(d);
				continue;
			}
			db = NULL;
		}
		assert_true(ut_simdisk_crashed(d));
		assert_int_equal(ut_simdisk_reboot(d, at * 7919 + 1), UT_OK);
		if (db)
			(void)ut_close(db);
		bound_holds_on_disk(d);
		/* recovery itself may be cut short: crash during it too */
		for (uint64_t k = 1;; k += 3) {
			ut_simdisk_crash_at(d, ut_simdisk_event_count(d) + (at % 5 ? k : 1000000));
			rc = ut_db_open_vfs(v, DB, &o, &db);
			if (rc == UT_OK)
				break;
			if (!ut_simdisk_crashed(d))
				fail_msg("reopen after crash at %llu: %s: %s",
					 (unsigned long long)at, ut_strerror(rc),
					 ut_errdetail());
			assert_int_equal(ut_simdisk_reboot(d, k), UT_OK);
		}
		ut_simdisk_crash_at(d, UT_SIMDISK_NEVER);
		ut_stats st;
		assert_int_equal(ut_stats_get(db, &st), UT_OK);
		assert_int_equal(st.corrupt_pages, 0);
		verify(db, acked);
		assert_int_equal(ut_close(db), UT_OK);
		ut_simdisk_free(d);
	}
	print_message("sweep %s (%s): %llu crash points, %llu past the run's end\n",
		      ut_protect_name(protect), flush_inline ? "inline" : "cleaner thread",
		      (unsigned long long)points, (unsigned long long)skipped);
	/* most points must be real crashes; how many fall past the end
	 * depends on the cleaner's timing (180 of 582 seen on a loaded
	 * machine, 0-42 on a quiet one) */
	assert_true(skipped * 2 < points);
}

static void test_crash_sweep_atomic(void **s)
{
	(void)s;
	sweep(UT_PROTECT_AUTO, 1, 150, 1);
}

static void test_crash_sweep_doublewrite(void **s)
{
	(void)s;
	sweep(UT_PROTECT_DOUBLEWRITE, 1, 150, 1);
}

/* The same with the page cleaner thread: crash points land while it writes
 * a batch or runs a checkpoint beside the committing thread. */
static void test_crash_sweep_atomic_cleaner(void **s)
{
	(void)s;
	sweep(UT_PROTECT_AUTO, 1, 150, 0);
}

static void test_crash_sweep_doublewrite_cleaner(void **s)
{
	(void)s;
	sweep(UT_PROTECT_DOUBLEWRITE, 1, 150, 0);
}

/* fullpage: the page images in the log repair what the random reboots
 * tear; with the cleaner, checkpoints (every 16 KiB of log) run beside
 * the commits that decide which change is a page's first since one. */
static void test_crash_sweep_fullpage(void **s)
{
	(void)s;
	sweep(UT_PROTECT_FULLPAGE, 1, 150, 1);
}

static void test_crash_sweep_fullpage_cleaner(void **s)
{
	(void)s;
	sweep(UT_PROTECT_FULLPAGE, 1, 150, 0);
}

/* ---- a checkpoint that starts while the cleaner writes an older copy ---- */

struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int entered, open;
};

/* The cleaner's first batch waits here, copied but not yet written. */
static void gate_hook(void *ctx)
{
	struct gate *g = ctx;

	pthread_mutex_lock(&g->mu);
	if (!g->entered) {
		g->entered = 1;
		pthread_cond_broadcast(&g->cv);
		while (!g->open)
			pthread_cond_wait(&g->cv, &g->mu);
	}
	pthread_mutex_unlock(&g->mu);
}

static void put_gen(ut_db *db, int first, int step, int n, char fill)
{
	char k[16], v[3000];
	ut_txn *t;

	memset(v, fill, sizeof(v));
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = first; i < n; i += step) {
		key_of(k, i);
		assert_int_equal(ut_put(t, k, 7, v, sizeof(v)), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
}

static uint64_t checkpoints_done(ut_db *db)
{
	ut_stats st;

	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	return st.checkpoints;
}

/* The cleaner copies a batch (generation 'A' of every leaf), a commit
 * changes key 0 ('B') while the copy is in flight, and a checkpoint starts
 * before the copy lands.  The copy predates the checkpoint: the page must
 * still be written for it, or the header's redo start skips the commit
 * that only the log has, and a power cut loses it. */
static void test_checkpoint_during_batch(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	/* room for the second commit while the cleaner is held */
	ut_options o = opts(UT_PROTECT_AUTO, 64 * UT_PAGE_SIZE, 1);
	struct gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	ut_pager *p;
	ut_db *db;
	uint64_t before;
	char k[16], *val;
	size_t vlen;
	ut_txn *t;
	int started;

	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 400; i += 10)
		put_gen(db, i, 1, i + 10, 'a');
	p = ut_db_pager(db);
	/* start the cleaner thread with a first checkpoint, and wait for it */
	before = checkpoints_done(db);
	assert_int_equal(ut_pager_checkpoint_async(p, &started), UT_OK);
	assert_int_equal(started, 1);
	for (int i = 0; i < 10000 && checkpoints_done(db) == before; i++)
		usleep(1000);
	assert_true(checkpoints_done(db) > before);

	ut_pager_set_batch_hook(p, gate_hook, &g);
	/* about 55 leaves: more than three quarters of the cache dirty (the
	 * cleaner's mark), not all of it */
	put_gen(db, 0, 5, 275, 'A');
	pthread_mutex_lock(&g.mu);
	while (!g.entered)
		pthread_cond_wait(&g.cv, &g.mu);
	pthread_mutex_unlock(&g.mu);

	put_gen(db, 0, 60, 1, 'B'); /* key 0 again, its copy in flight */
	before = checkpoints_done(db);
	assert_int_equal(ut_pager_checkpoint_async(p, &started), UT_OK);
	assert_int_equal(started, 1);
	pthread_mutex_lock(&g.mu);
	g.open = 1;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	for (int i = 0; i < 10000 && checkpoints_done(db) == before; i++)
		usleep(1000);
	assert_true(checkpoints_done(db) > before);

	/* power cut: only what was synced survives */
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_DROP_ALL), UT_OK);
	(void)ut_close(db);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	key_of(k, 0);
	assert_int_equal(ut_get(t, k, 7, (void **)&val, &vlen), UT_OK);
	assert_int_equal(vlen, 3000);
	assert_int_equal(val[0], 'B');
	free(val);
	ut_abort(t);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* ---- redo is idempotent: recover twice ---------------------------------- */

static void test_redo_twice(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_AUTO, 8 * UT_PAGE_SIZE, 1);
	ut_db *db;

	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 200; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	/* first recovery: cut after its page writes, before the header */
	uint64_t ev0 = ut_simdisk_event_count(d);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	uint64_t evs = ut_simdisk_event_count(d) - ev0;
	verify(db, 200);
	assert_int_equal(ut_simdisk_reboot_policy(d, 2, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	/* replay again over pages that already carry the changes */
	for (uint64_t cut = 1; cut < evs; cut++) {
		ut_simdisk_crash_at(d, ut_simdisk_event_count(d) + cut);
		int rc = ut_db_open_vfs(v, DB, &o, &db);
		if (rc == UT_OK) {
			ut_simdisk_crash_at(d, UT_SIMDISK_NEVER);
			verify(db, 200);
			break;
		}
		assert_int_equal(ut_simdisk_reboot_policy(d, cut, UT_SIMDISK_KEEP_ALL), UT_OK);
	}
	ut_simdisk_crash_at(d, UT_SIMDISK_NEVER);
	if (ut_simdisk_crashed(d))
		assert_int_equal(ut_simdisk_reboot(d, 3), UT_OK);
	(void)ut_close(db);
	reopen_verify(v, &o, 200);
	reopen_verify(v, &o, 200);
	ut_simdisk_free(d);
}

/* ---- the log stays bounded under steady updates ------------------------- */

/* Checkpoints start on their own as the log grows and keep it small.  With
 * the cleaner thread, how many start depends on how often it gets the CPU
 * (2 of 8 once, on a loaded machine): only the bound is asserted there;
 * inline, the count is deterministic. */
static void log_bounded(int flush_inline)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_AUTO, 32 * UT_PAGE_SIZE, 0);
	uint64_t size, maxsize = 0;
	ut_stats st;
	ut_db *db;

	o.flush_inline = flush_inline;
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	ut_db_set_checkpoint_bytes(db, 256 << 10);
	for (int r = 0; r < 40; r++) {
		for (int i = 0; i < 100; i++)
			assert_int_equal(run_txn(db, i), UT_OK);
		assert_int_equal(ut_simdisk_file_size(d, DB "-wal", &size), UT_OK);
		if (size > maxsize)
			maxsize = size;
	}
	ut_stats_get(db, &st);
	print_message("log bounded (%s): %llu auto checkpoints, log %llu bytes "
		      "appended, max log file %llu\n",
		      flush_inline ? "inline" : "cleaner thread",
		      (unsigned long long)ut_db_auto_checkpoints(db),
		      (unsigned long long)st.log_bytes, (unsigned long long)maxsize);
	if (flush_inline)
		assert_true(ut_db_auto_checkpoints(db) * (256 << 10) >= st.log_bytes / 2);
	assert_true(ut_db_auto_checkpoints(db) >= 1);
	/* threshold 256 KiB + append buffer bound (4 MiB) + headers */
	assert_true(maxsize < (6u << 20));
	verify(db, 100);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

static void test_log_bounded(void **s)
{
	(void)s;
	log_bounded(1);
	log_bounded(0);
}

/* ---- checkpoints end under steady eviction pressure -------------------- */

static void slow_batch(void *ctx)
{
	(void)ctx;
	usleep(2000);
}

/* Data several times the cache, written by big sync=0 transactions to a
 * disk slow enough (2 ms a batch) that the cleaner always has frames to
 * free: each checkpoint must still end, so that the log is reclaimed (and
 * evictions may skip the protection copy again).  Then every key reads
 * back as last written. */
static void test_checkpoint_ends_under_pressure(void **s)
{
	(void)s;
	enum { KEYS = 60000, ROUNDS = 40, PUTS = 1500 };
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_DOUBLEWRITE, 512 * UT_PAGE_SIZE, 0);
	static int last[KEYS];
	char k[16], val[600];
	uint64_t behind = 0;
	ut_wal_stats ws;
	ut_stats st;
	ut_db *db;

	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	ut_db_set_checkpoint_bytes(db, 1 << 20);
	ut_pager_set_batch_hook(ut_db_pager(db), slow_batch, NULL);
	memset(last, -1, sizeof(last));
	for (int r = 0; r < ROUNDS; r++) {
		ut_txn *t;

		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int i = 0; i < PUTS; i++) {
			int key = (int)((r * PUTS + i) * 7919ull % KEYS);

			key_of(k, key);
			assert_int_equal(ut_put(t, k, 7, val, val_of(val, key, r)), UT_OK);
			last[key] = r;
		}
		assert_int_equal(ut_commit(t), UT_OK);
		ut_wal_stats_get(ut_db_wal(db), &ws);
		if (ws.bytes_since_checkpoint > behind)
			behind = ws.bytes_since_checkpoint;
	}
	ut_stats_get(db, &st);
	print_message("under pressure: %llu checkpoints, log at most %llu bytes "
		      "past one, %llu of %llu page writes with a copy\n",
		      (unsigned long long)st.checkpoints, (unsigned long long)behind,
		      (unsigned long long)st.dw_page_writes,
		      (unsigned long long)st.page_writes);
	/* starved, the checkpoints ended 4 times and the log ran 65 MB past
	 * one; waiting for frames in transactions, 11 times and 40 MB */
	assert_true(st.checkpoints >= ROUNDS / 4);
	assert_true(behind < (32u << 20));
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int key = 0; key < KEYS; key++) {
		ut_txn *t;
		void *got;
		size_t n;

		key_of(k, key);
		assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
		if (last[key] < 0) {
			assert_int_equal(ut_get(t, k, 7, &got, &n), UT_NOTFOUND);
		} else {
			assert_int_equal(ut_get(t, k, 7, &got, &n), UT_OK);
			assert_int_equal(n, val_of(val, key, last[key]));
			assert_memory_equal(got, val, n);
			free(got);
		}
		ut_abort(t);
	}
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* ---- group commit: concurrent committers share fdatasyncs --------------- */

struct gc_arg {
	ut_db *db;
	int id;
	int n;
};

static void *gc_thread(void *p)
{
	struct gc_arg *a = p;
	char k[32];

	for (int i = 0; i < a->n; i++) {
		ut_txn *t;

		snprintf(k, sizeof(k), "t%02d-%05d", a->id, i);
		if (ut_begin(a->db, 0, &t) || ut_put(t, k, strlen(k), k, strlen(k)) ||
		    ut_commit(t))
			return (void *)1;
	}
	return NULL;
}

static void test_group_commit(void **s)
{
	(void)s;
	char *path = tmp_seq_path("dur", "group");
	ut_options o = opts(UT_PROTECT_AUTO, 4 << 20, 1);
	pthread_t th[16];
	struct gc_arg a[16];
	ut_wal_stats w0, w1;
	ut_db *db;

	remove_db_files(path);
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	ut_wal_stats_get(ut_db_wal(db), &w0);
	for (int i = 0; i < 16; i++) {
		a[i] = (struct gc_arg){ db, i, 40 };
		assert_int_equal(pthread_create(&th[i], NULL, gc_thread, &a[i]), 0);
	}
	for (int i = 0; i < 16; i++) {
		void *r;
		pthread_join(th[i], &r);
		assert_null(r);
	}
	ut_wal_stats_get(ut_db_wal(db), &w1);
	uint64_t commits = w1.commits - w0.commits, syncs = w1.syncs - w0.syncs;
	print_message("group commit: %llu commits, %llu log syncs\n",
		      (unsigned long long)commits, (unsigned long long)syncs);
	assert_int_equal(commits, 16 * 40);
	assert_true(syncs < commits);
	assert_int_equal(ut_close(db), UT_OK);
	/* everything is there */
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	ut_txn *t;
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int i = 0; i < 16; i++) {
		char k[32];
		void *val;
		size_t vlen;
		snprintf(k, sizeof(k), "t%02d-%05d", i, 39);
		assert_int_equal(ut_get(t, k, strlen(k), &val, &vlen), UT_OK);
		free(val);
	}
	ut_abort(t);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* ---- protection mode selection on the simulated disk -------------------- */

static void test_mode_selection(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_AUTO, 1 << 20, 1);
	ut_stats st;
	ut_db *db;

	/* default simdisk: 4096..65536, O_DIRECT -> atomic */
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.protect, UT_PROTECT_ATOMIC);
	assert_int_equal(st.direct_io, 1);
	assert_non_null(strstr(ut_protect_reason(db), "auto"));
	assert_non_null(strstr(ut_protect_reason(db), "4096..65536"));
	assert_int_equal(run_txn(db, 0), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);

	/* unsupported -> doublewrite, and the reason says why */
	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.protect, UT_PROTECT_DOUBLEWRITE);
	assert_non_null(strstr(ut_protect_reason(db), "supported=0"));
	/* only atomic writes need O_DIRECT: the others keep the OS cache */
	assert_int_equal(st.direct_io, 0);
	assert_non_null(strstr(ut_direct_note(db), "OS page cache"));
	assert_int_equal(run_txn(db, 0), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);

	/* a unit range without 16384 -> doublewrite */
	ut_simdisk_set_atomic(d, 32768, 65536);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.protect, UT_PROTECT_DOUBLEWRITE);
	assert_non_null(strstr(ut_protect_reason(db), "32768..65536"));
	assert_int_equal(ut_close(db), UT_OK);

	/* 6.16+: 16384 inside the unit range but above unit_max_opt, i.e.
	 * on the filesystem's slow software path -> doublewrite */
	ut_simdisk_set_atomic(d, 4096, 1 << 20);
	ut_simdisk_set_atomic_opt(d, 4096);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.protect, UT_PROTECT_DOUBLEWRITE);
	assert_non_null(strstr(ut_protect_reason(db), "unit_max_opt 4096"));
	assert_int_equal(ut_close(db), UT_OK);
	/* unit_max_opt covering the page -> atomic again */
	ut_simdisk_set_atomic_opt(d, UT_PAGE_SIZE);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.protect, UT_PROTECT_ATOMIC);
	assert_non_null(strstr(ut_protect_reason(db), "opt 16384"));
	verify(db, 1);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_set_atomic_opt(d, 0);

	/* explicit atomic where unsupported: refused at open, detail names
	 * what statx said */
	ut_simdisk_set_atomic(d, 0, 0);
	o.protect = UT_PROTECT_ATOMIC;
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ENOTSUP);
	assert_non_null(strstr(ut_errdetail(), "supported=0"));
	/* unsafe only by name */
	o.protect = UT_PROTECT_UNSAFE;
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.protect, UT_PROTECT_UNSAFE);
	verify(db, 1);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* ---- runtime failures: atomic write refused, ENOSPC --------------------- */

static void test_atomic_einval_fatal(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_ATOMIC, 1 << 20, 1);
	ut_txn *t;
	ut_db *db;

	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 20; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	/* the stack stops accepting 16 KiB atomic writes */
	ut_simdisk_set_atomic(d, 32768, 65536);
	assert_int_equal(ut_checkpoint(db), UT_EINVAL);
	assert_int_equal(ut_begin(db, 0, &t), UT_EFATAL);
	assert_int_equal(ut_checkpoint(db), UT_EFATAL);
	assert_int_equal(ut_close(db), UT_EFATAL);
	/* nothing was written without RWF_ATOMIC; the log has it all */
	ut_simdisk_set_atomic(d, 4096, 65536);
	reopen_verify(v, &o, 20);
	ut_simdisk_free(d);
}

/* ---- a transaction bigger than the log's buffer ---------------------- */

enum { BIG_KEYS = 20000 }; /* about 13 MiB of pages: written out early */

static int big_txn(ut_db *db)
{
	char k[16], v[600];
	ut_txn *t;
	int rc;

	if ((rc = ut_begin(db, 0, &t)))
		return rc;
	for (int i = 0; i < BIG_KEYS; i++) {
		snprintf(k, sizeof(k), "b%06d", i);
		memset(v, 'a' + i % 26, sizeof(v));
		if ((rc = ut_put(t, k, 7, v, sizeof(v)))) {
			ut_abort(t);
			return rc;
		}
	}
	return ut_commit(t);
}

/* How many of the big transaction's keys the database holds, all with
 * their values. */
static int big_keys_present(ut_db *db)
{
	char k[16], v[600];
	ut_txn *t;
	void *val;
	size_t vlen;
	int present = 0;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int i = 0; i < BIG_KEYS; i++) {
		snprintf(k, sizeof(k), "b%06d", i);
		if (ut_get(t, k, 7, &val, &vlen) != UT_OK)
			continue;
		memset(v, 'a' + i % 26, sizeof(v));
		assert_int_equal(vlen, sizeof(v));
		assert_memory_equal(val, v, sizeof(v));
		free(val);
		present++;
	}
	ut_abort(t);
	return present;
}

/* The log writes a big transaction's records out before its COMMIT.  A
 * full disk during the commit fails the handle and loses nothing
 * acknowledged; a power cut among them, with every write kept, must bring
 * back none of it; once acknowledged, a power cut dropping every unsynced
 * write must keep all of it. */
static void test_large_txn(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_DOUBLEWRITE, 64 << 20, 1);
	ut_db *db;
	ut_txn *t;

	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 10; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	/* the disk fills during the commit: the handle fails */
	ut_simdisk_set_capacity(d, ut_simdisk_used(d) + (4u << 20));
	assert_int_equal(big_txn(db), UT_ENOSPC);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_EFATAL);
	assert_int_equal(ut_begin(db, 0, &t), UT_EFATAL);
	(void)ut_close(db);
	ut_simdisk_set_capacity(d, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	verify(db, 10);
	assert_int_equal(big_keys_present(db), 0);
	/* the second write of the commit: the first streamed chunk is out */
	ut_simdisk_crash_at(d, ut_simdisk_event_count(d) + 1);
	assert_int_not_equal(big_txn(db), UT_OK);
	assert_int_equal(ut_simdisk_reboot_policy(d, 3, UT_SIMDISK_KEEP_ALL),
			 UT_OK);
	(void)ut_close(db);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	verify(db, 10);
	assert_int_equal(big_keys_present(db), 0);

	assert_int_equal(big_txn(db), UT_OK);
	assert_int_equal(ut_simdisk_reboot_policy(d, 4, UT_SIMDISK_DROP_ALL),
			 UT_OK);
	(void)ut_close(db);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	verify(db, 10);
	assert_int_equal(big_keys_present(db), BIG_KEYS);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

static void test_enospc(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_AUTO, 1 << 20, 1);
	static char big[200000];
	ut_txn *t;
	ut_db *db;
	int rc;

	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 30; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	ut_simdisk_set_capacity(d, ut_simdisk_used(d) + 64 * 1024);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	memset(big, 'x', sizeof(big));
	assert_int_equal(ut_put(t, "big", 3, big, sizeof(big)), UT_OK);
	rc = ut_commit(t);
	assert_int_equal(rc, UT_ENOSPC);
	/* the handle refuses writes and reads of the cache */
	assert_int_equal(ut_begin(db, 0, &t), UT_EFATAL);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_EFATAL);
	(void)ut_close(db);
	/* space freed: reopen recovers every acknowledged commit */
	ut_simdisk_set_capacity(d, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	verify(db, 30);
	assert_int_equal(run_txn(db, 30), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* Recovery on a full disk says how much space it needs, and that much
 * is enough. */
static void test_enospc_recovery_need(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_DOUBLEWRITE, 1 << 20, 1);
	unsigned long long need = 0;
	const char *at;
	ut_db *db;

	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	for (int i = 0; i < 60; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	/* crash: the 60 commits are only in the log */
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	/* an empty -dw: recovery's copies must grow it, so the estimate
	 * has to cover the double-write file too */
	v->remove(v, DB "-dw");
	vfs_create_file(v, DB "-dw");
	ut_simdisk_set_capacity(d, ut_simdisk_used(d));
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ENOSPC);
	at = strstr(ut_errdetail(), "recovery needs up to ");
	if (!at)
		fail_msg("no space need in: %s", ut_errdetail());
	need = strtoull(at + strlen("recovery needs up to "), NULL, 10);
	assert_true(need > 0);
	ut_simdisk_set_capacity(d, ut_simdisk_used(d) + need);
	assert_int_equal(reopen_verify(v, &o, 60), 60);
	ut_simdisk_free(d);
}

/* ---- the double-write file: missing, foreign ---------------------------- */

static void test_dw_file(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_DOUBLEWRITE, 8 * UT_PAGE_SIZE, 1);
	ut_db *db;

	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 100; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	/* after a clean close the dw file is not needed */
	assert_int_equal(v->remove(v, DB "-dw"), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	verify(db, 100);
	for (int i = 100; i < 150; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	/* crash: the database needs its dw file now */
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	assert_int_equal(v->remove(v, DB "-dw"), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "double-write file"));
	/* and the failed open did not leave an empty one behind */
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	ut_simdisk_free(d);

	/* a foreign file in the dw's place */
	d = ut_simdisk_new();
	v = ut_simdisk_vfs(d);
	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(run_txn(db, 0), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(v->remove(v, DB "-dw"), UT_OK);
	{
		static char junk[4096] = "not a dw file, really";

		vfs_write_file(v, DB "-dw", junk, sizeof(junk));
	}
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ENOTDB);
	assert_non_null(strstr(ut_errdetail(), "double-write"));
	ut_simdisk_free(d);
}

/* One damaged slot header in -dw: harmless when its copy is not needed,
 * UT_ECORRUPT naming the page when it is (the page fails in place and
 * the damaged slot holds its only copy). */
static void test_dw_damaged_header(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_DOUBLEWRITE, 8 * UT_PAGE_SIZE, 1);
	uint8_t h[64], zero[UT_DW_HDR];
	uint32_t copies[4096] = { 0 }, pgno = 0, slot = UT_DW_SLOTS;
	uint64_t off;
	ut_db *db;

	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 100; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);

	/* every copy is below the floor now: a damaged header is harmless */
	assert_int_equal(ut_simdisk_corrupt(d, DB "-dw", UT_DW_SLOT_OFF(3), 1),
			 UT_OK);
	reopen_verify(v, &o, 100);

	/* a page whose one copy is in a slot with a valid header */
	for (uint32_t i = 0; i < UT_DW_SLOTS; i++) {
		off = UT_DW_SLOT_OFF(i);
		if (ut_simdisk_peek(d, DB "-dw", off, h, sizeof(h)) != sizeof(h))
			break;
		if (ut_ld64(h) == UT_DW_MAGIC && ut_ld32(h + 16) < 4096)
			copies[ut_ld32(h + 16)]++;
	}
	for (uint32_t i = 0; i < UT_DW_SLOTS && slot == UT_DW_SLOTS; i++) {
		off = UT_DW_SLOT_OFF(i);
		if (ut_simdisk_peek(d, DB "-dw", off, h, sizeof(h)) != sizeof(h))
			break;
		if (ut_ld64(h) == UT_DW_MAGIC && ut_ld32(h + 16) != 0 &&
		    ut_ld32(h + 16) < 4096 && copies[ut_ld32(h + 16)] == 1) {
			slot = i;
			pgno = ut_ld32(h + 16);
		}
	}
	assert_true(slot < UT_DW_SLOTS);
	/* no floor (as after a crash before it was raised), the page torn */
	memset(zero, 0, sizeof(zero));
	assert_int_equal(ut_simdisk_poke(d, DB "-dw", UT_DW_FLOOR_OFF, zero,
					 sizeof(zero)), UT_OK);
	assert_int_equal(ut_simdisk_corrupt(d, DB, (uint64_t)pgno * UT_PAGE_SIZE +
					    8192, 16), UT_OK);
	/* its copy's header damaged: the copy is needed and cannot be used */
	assert_int_equal(ut_simdisk_corrupt(d, DB "-dw", UT_DW_SLOT_OFF(slot) + 8,
					    1), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	{
		char want[32];

		snprintf(want, sizeof(want), "page %u ", pgno);
		if (!strstr(ut_errdetail(), want))
			fail_msg("detail does not name %s: %s", want, ut_errdetail());
		assert_non_null(strstr(ut_errdetail(), "damaged header"));
	}
	/* the header repaired, the same open restores the page */
	assert_int_equal(ut_simdisk_corrupt(d, DB "-dw", UT_DW_SLOT_OFF(slot) + 8,
					    1), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	{
		ut_stats st;

		assert_int_equal(ut_stats_get(db, &st), UT_OK);
		assert_int_equal(st.torn_repaired, 1);
	}
	verify(db, 100);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* A partial last page past the last checkpoint's pages (a page write cut
 * short by a full disk) is a torn extension: recovery rebuilds it from the
 * log.  A partial page the checkpoint vouched for is still corruption. */
static void test_torn_extension(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	/* sync=0: no dirty-page checkpoints, so evictions extend the file
	 * past the header's page count (the crash keeps every write) */
	ut_options o = opts(UT_PROTECT_DOUBLEWRITE, 8 * UT_PAGE_SIZE, 0);
	uint8_t meta[64];
	uint64_t size;
	uint32_t pc;
	ut_db *db;

	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 50; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	/* grow the file after the checkpoint: evictions append pages */
	for (int i = 50; i < 600; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	assert_int_equal(ut_simdisk_peek(d, DB, 0, meta, sizeof(meta)),
			 (int64_t)sizeof(meta));
	pc = ut_ld32(meta + UT_META_PAGECOUNT);
	assert_int_equal(ut_simdisk_file_size(d, DB, &size), UT_OK);
	assert_true(size / UT_PAGE_SIZE > pc); /* pages past the checkpoint */

	/* the last page cut to its first 4 KiB */
	vfs_truncate_file(v, DB, size - UT_PAGE_SIZE + 4096);
	assert_int_equal(reopen_verify(v, &o, 600), 600);
	assert_int_equal(ut_simdisk_file_size(d, DB, &size), UT_OK);
	assert_int_equal(size % UT_PAGE_SIZE, 0);
	ut_simdisk_free(d);

	/* the same cut inside the checkpoint's pages: refused */
	d = ut_simdisk_new();
	v = ut_simdisk_vfs(d);
	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 50; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(ut_simdisk_peek(d, DB, 0, meta, sizeof(meta)),
			 (int64_t)sizeof(meta));
	pc = ut_ld32(meta + UT_META_PAGECOUNT);
	vfs_truncate_file(v, DB, (uint64_t)(pc - 1) * UT_PAGE_SIZE + 4096);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "last checkpoint"));
	ut_simdisk_free(d);
}

/* ---- atomic mode: a bad checksum is corruption, reported ---------------- */

static void test_atomic_corruption_reported(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_ATOMIC, 8 * UT_PAGE_SIZE, 1);
	ut_stats st;
	ut_txn *t;
	ut_db *db;
	int bad = 0;

	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 100; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(ut_simdisk_corrupt(d, DB, 2 * UT_PAGE_SIZE + 5000, 8), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int i = 0; i < 100; i++) {
		char k[16];
		void *val;
		size_t vlen;
		key_of(k, i);
		int rc = ut_get(t, k, 7, &val, &vlen);
		if (rc == UT_OK)
			free(val);
		else if (rc == UT_ECORRUPT) {
			bad++;
			assert_non_null(strstr(ut_errdetail(), "page 2"));
		} else
			fail_msg("rc %d", rc);
	}
	ut_abort(t);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_true(bad > 0);
	assert_true(st.corrupt_pages > 0);
	ut_check_result cr;
	assert_int_equal(ut_check(db, NULL, &cr), UT_ECORRUPT);
	assert_true(cr.bad_checksums >= 1);
	(void)ut_close(db);
	ut_simdisk_free(d);
}

/* ---- negative control: unprotected in-place writes do tear ------------- */

static void test_unsafe_tears_detected(void **s)
{
	(void)s;
	ut_options o = opts(UT_PROTECT_UNSAFE, 8 * UT_PAGE_SIZE, 1);
	int detected = 0, runs = 0;

	o.flush_inline = 1; /* every crash point is reached */
	for (uint64_t at = 0; at < 400 && detected < 3; at += 3) {
		ut_simdisk *d = ut_simdisk_new();
		ut_vfs *v = ut_simdisk_vfs(d);
		ut_db *db;
		int rc = UT_OK;

		assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
		ut_db_set_checkpoint_bytes(db, 16 << 10);
		ut_simdisk_crash_at(d, ut_simdisk_event_count(d) + at);
		for (int i = 0; i < 150 && rc == UT_OK; i++)
			rc = run_txn(db, i);
		if (!ut_simdisk_crashed(d)) {
			(void)ut_close(db);
			ut_simdisk_free(d);
			break;
		}
		runs++;
		assert_int_equal(ut_simdisk_reboot_policy(d, at, UT_SIMDISK_TEAR_ALL),
				 UT_OK);
		(void)ut_close(db);
		rc = ut_db_open_vfs(v, DB, &o, &db);
		if (rc == UT_ECORRUPT) {
			detected++;
		} else {
			ut_check_result cr;
			assert_int_equal(rc, UT_OK);
			if (ut_check(db, NULL, &cr) == UT_ECORRUPT)
				detected++;
			(void)ut_close(db);
		}
		ut_simdisk_free(d);
	}
	print_message("unsafe + torn sectors: corruption detected in %d of %d "
		      "crashes\n", detected, runs);
	assert_true(detected > 0);
}

/* ---- a new database ignores a stale log / dw file at its path ----------- */

static void test_stale_companions(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_DOUBLEWRITE, 8 * UT_PAGE_SIZE, 1);
	ut_db *db;

	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 100; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	/* the database file is deleted, its -wal and -dw stay */
	assert_int_equal(v->remove(v, DB), UT_OK);
	assert_int_equal(reopen_verify(v, &o, 0), 0);
	assert_int_equal(reopen_verify(v, &o, 0), 0);
	ut_simdisk_free(d);
}

/* ---- the log file is lost: recreated above every page LSN --------------- */

static void test_log_missing(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_AUTO, 8 * UT_PAGE_SIZE, 1);
	ut_wal_stats ws;
	ut_db *db;

	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 100; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	ut_wal_stats_get(ut_db_wal(db), &ws);
	uint64_t end = ws.next_lsn;
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(v->remove(v, DB "-wal"), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	ut_wal_stats_get(ut_db_wal(db), &ws);
	assert_true(ws.next_lsn > end);
	verify(db, 100);
	assert_int_equal(run_txn(db, 100), UT_OK);
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_DROP_ALL), UT_OK);
	(void)ut_close(db);
	reopen_verify(v, &o, 101);
	ut_simdisk_free(d);
}

/* ---- corruption found at open is reported, never hidden ---------------- */

static void test_open_corruption(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_ATOMIC, 8 * UT_PAGE_SIZE, 1);
	ut_db *db;

	/* a damaged header page in atomic mode */
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 50; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(ut_simdisk_corrupt(d, DB, 200, 4), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "page 0"));
	ut_simdisk_free(d);

	/* a damaged record in the middle of the synced log */
	d = ut_simdisk_new();
	v = ut_simdisk_vfs(d);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 50; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	assert_int_equal(ut_simdisk_corrupt(d, DB "-wal", UT_WAL_DATA_OFF + 64, 4),
			 UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	print_message("log corruption: %s\n", ut_errdetail());
	assert_non_null(strstr(ut_errdetail(), "-wal"));
	ut_simdisk_free(d);
}

/* ---- a power cut while the database is being created -------------------- */

static void test_crash_during_create(void **s)
{
	(void)s;
	for (int mode = 0; mode < 2; mode++) {
		for (uint64_t at = 0; at < 40; at++) {
			ut_simdisk *d = ut_simdisk_new();
			ut_vfs *v = ut_simdisk_vfs(d);
			ut_options o = opts(UT_PROTECT_AUTO, 8 * UT_PAGE_SIZE, 1);
			ut_db *db;
			int rc;

			if (mode)
				ut_simdisk_set_atomic(d, 0, 0);
			ut_simdisk_crash_at(d, at);
			rc = ut_db_open_vfs(v, DB, &o, &db);
			if (rc == UT_OK) {
				rc = ut_close(db); /* the cut may come in close */
				if (!ut_simdisk_crashed(d)) {
					assert_int_equal(rc, UT_OK);
					ut_simdisk_free(d);
					break;
				}
			}
			assert_true(ut_simdisk_crashed(d));
			assert_int_equal(ut_simdisk_reboot(d, at), UT_OK);
			rc = ut_db_open_vfs(v, DB, &o, &db);
			if (rc != UT_OK)
				fail_msg("mode %d, crash at %llu: reopen: %s: %s", mode,
					 (unsigned long long)at, ut_strerror(rc),
					 ut_errdetail());
			verify(db, 0);
			assert_int_equal(run_txn(db, 0), UT_OK);
			assert_int_equal(ut_close(db), UT_OK);
			ut_simdisk_free(d);
		}
	}
}

/* ---- damaged files never lose acknowledged commits silently ------------
 *
 * Database A: 3000 keys (a few 40-300 KB values), a checkpoint, then 40
 * sync=1 commits (50 KB updates, deletes, inserts) that are only in the
 * log, and the process exits without closing.  B: the same with a 160 KiB
 * cache in doublewrite mode, so pages newer than the checkpoint are in the
 * data file and -dw holds copies.  After damage, open either recovers all
 * 40 commits or refuses with UT_ECORRUPT and a detail; never 0 with data
 * missing. */

#define DMG_KEYS 3000
#define DMG_COMMITS 40
#define DMG_ALL (DMG_KEYS + DMG_COMMITS)

struct dmg_model {
	int gen[DMG_ALL];    /* -1: absent */
	size_t len[DMG_ALL];
};

static void dmg_key(char *k, int i) { snprintf(k, 16, "d%06d", i); }

static void dmg_val(uint8_t *v, int i, int gen, size_t len)
{
	uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull + (uint64_t)gen + 1;

	for (size_t j = 0; j < len; j++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v[j] = (uint8_t)x;
	}
}

static int dmg_put(ut_txn *t, struct dmg_model *m, int i, int gen, size_t len)
{
	char k[16];
	uint8_t *v = malloc(len ? len : 1);
	int rc;

	dmg_key(k, i);
	dmg_val(v, i, gen, len);
	rc = ut_put(t, k, strlen(k), v, len);
	free(v);
	if (rc == UT_OK) {
		m->gen[i] = gen;
		m->len[i] = len;
	}
	return rc;
}

/* Build A (small = 0) or B on a fresh disk; the handle is left dead. */
static ut_simdisk *dmg_build(int small, ut_options *o, struct dmg_model *m)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_db *db;
	ut_txn *t;

	*o = small ? opts(UT_PROTECT_DOUBLEWRITE, 160 << 10, 1)
		   : opts(UT_PROTECT_AUTO, 64 << 20, 1);
	if (small)
		ut_simdisk_set_atomic(d, 0, 0);
	for (int i = 0; i < DMG_ALL; i++)
		m->gen[i] = -1;
	assert_int_equal(ut_db_open_vfs(v, DB, o, &db), UT_OK);
	for (int i = 0; i < DMG_KEYS; i += 500) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int j = i; j < i + 500; j++) {
			size_t len = j % 750 == 0 ? 40000 + (size_t)j * 85 : 100 + (size_t)(j % 300);
			assert_int_equal(dmg_put(t, m, j, 0, len), UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
	}
	assert_int_equal(ut_checkpoint(db), UT_OK);
	for (int c = 0; c < DMG_COMMITS; c++) {
		char k[16];

		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		assert_int_equal(dmg_put(t, m, (c * 73) % DMG_KEYS, c + 1, 50000), UT_OK);
		dmg_key(k, DMG_KEYS - 1 - c * 5);
		assert_int_equal(ut_del(t, k, strlen(k)), UT_OK);
		m->gen[DMG_KEYS - 1 - c * 5] = -1;
		assert_int_equal(dmg_put(t, m, DMG_KEYS + c, c + 1, 200), UT_OK);
		assert_int_equal(ut_commit(t), UT_OK);
	}
	/* the process exits: every write it made is kept, nothing closed */
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	return d;
}

/* Every key as the model has it, and a clean check. */
static void dmg_verify(ut_db *db, const struct dmg_model *m)
{
	uint8_t *want = malloc(UT_MAX_VALUE);
	ut_check_result cr;
	ut_txn *t;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int i = 0; i < DMG_ALL; i++) {
		char k[16];
		void *val;
		size_t vlen;
		int rc;

		dmg_key(k, i);
		rc = ut_get(t, k, strlen(k), &val, &vlen);
		if (m->gen[i] < 0) {
			if (rc != UT_NOTFOUND)
				fail_msg("key %d: present (rc %d), deleted by a commit", i, rc);
			continue;
		}
		if (rc != UT_OK)
			fail_msg("key %d: rc %d: %s", i, rc, ut_errdetail());
		dmg_val(want, i, m->gen[i], m->len[i]);
		if (vlen != m->len[i] || memcmp(val, want, vlen))
			fail_msg("key %d: not generation %d", i, m->gen[i]);
		free(val);
	}
	ut_abort(t);
	assert_int_equal(ut_check(db, stderr, &cr), UT_OK);
	free(want);
}

/* Open the damaged database: all 40 commits there (returns 1) or
 * UT_ECORRUPT with a detail (returns 0). */
static int dmg_open(ut_simdisk *d, const ut_options *o, const struct dmg_model *m,
		    const char *what)
{
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_db *db;
	int rc = ut_db_open_vfs(v, DB, o, &db);

	if (rc != UT_OK) {
		if (rc != UT_ECORRUPT)
			fail_msg("%s: open: %s: %s", what, ut_strerror(rc), ut_errdetail());
		assert_true(strlen(ut_errdetail()) > 20);
		print_message("%s: refused: %s\n", what, ut_errdetail());
		return 0;
	}
	dmg_verify(db, m);
	assert_int_equal(ut_close(db), UT_OK);
	print_message("%s: recovered all %d commits\n", what, DMG_COMMITS);
	return 1;
}

static uint8_t *dmg_slurp(ut_simdisk *d, const char *path, uint64_t *len)
{
	uint8_t *b;

	assert_int_equal(ut_simdisk_file_size(d, path, len), UT_OK);
	b = malloc(*len + 1);
	assert_int_equal(ut_simdisk_peek(d, path, 0, b, *len), (int64_t)*len);
	return b;
}

static struct dmg_model *dmg_m;

/* Item 1: one bit of the current -wal header slot flipped. */
static void test_damage_header_slot(void **s)
{
	(void)s;
	for (int small = 0; small < 2; small++) {
		ut_options o;
		ut_simdisk *d = dmg_build(small, &o, dmg_m);
		uint8_t h[2][64];
		int cur;

		for (int k = 0; k < 2; k++)
			assert_int_equal(ut_simdisk_peek(d, DB "-wal", k * 4096u, h[k], 64), 64);
		cur = ut_ld64(h[1] + 16) > ut_ld64(h[0] + 16);
		assert_int_equal(ut_simdisk_corrupt(d, DB "-wal", cur * 4096u + 20, 1), UT_OK);
		/* rebuilt from the records: everything is there */
		assert_int_equal(dmg_open(d, &o, dmg_m, small ? "B header slot" : "A header slot"), 1);
		/* and the header was rewritten: the next open is ordinary */
		assert_int_equal(dmg_open(d, &o, dmg_m, "reopen"), 1);
		ut_simdisk_free(d);
	}
}

/* Item 2a: bytes inserted into or removed from the middle of the log. */
static void test_damage_log_shift(void **s)
{
	(void)s;
	for (int small = 0; small < 2; small++) {
		for (int kind = 0; kind < 3; kind++) {
			static const char *names[] = { "insert 13", "remove 1000",
						       "duplicate 4096" };
			ut_options o;
			ut_simdisk *d = dmg_build(small, &o, dmg_m);
			uint64_t len, mid;
			uint8_t *b = dmg_slurp(d, DB "-wal", &len), *n;
			char what[64];

			assert_true(len > UT_WAL_DATA_OFF + 100000);
			mid = UT_WAL_DATA_OFF + (len - UT_WAL_DATA_OFF) / 2;
			n = malloc(len + 4096);
			memcpy(n, b, mid);
			if (kind == 0) {
				memset(n + mid, 0x5a, 13);
				memcpy(n + mid + 13, b + mid, len - mid);
				len += 13;
			} else if (kind == 1) {
				memcpy(n + mid, b + mid + 1000, len - mid - 1000);
				len -= 1000;
			} else {
				memcpy(n + mid, b + mid - 4096, 4096);
				memcpy(n + mid + 4096, b + mid, len - mid);
				len += 4096;
			}
			vfs_write_file(ut_simdisk_vfs(d), DB "-wal", n, len);
			snprintf(what, sizeof(what), "%s: %s", small ? "B" : "A",
				 names[kind]);
			assert_int_equal(dmg_open(d, &o, dmg_m, what), 0);
			assert_non_null(strstr(ut_errdetail(), "LSN range"));
			/* refused, and nothing was cut: still refused */
			assert_int_equal(dmg_open(d, &o, dmg_m, what), 0);
			free(n);
			free(b);
			ut_simdisk_free(d);
		}
	}
}

/* Item 2b: B's log cut short while the data file holds newer pages. */
static void test_damage_log_cut_newer_pages(void **s)
{
	(void)s;
	ut_options o;
	ut_simdisk *d = dmg_build(1, &o, dmg_m);
	uint64_t len, dlen, mid, newest = 0, redo, start;
	uint8_t *b = dmg_slurp(d, DB "-wal", &len), *data = dmg_slurp(d, DB, &dlen);
	int cur = ut_ld64(b + 4096 + 16) > ut_ld64(b + 16);

	/* the newest page in the data file, past the checkpoint */
	for (uint64_t off = 0; off < dlen; off += UT_PAGE_SIZE)
		if (ut_page_checksum_ok(data + off) && ut_page_lsn(data + off) > newest)
			newest = ut_page_lsn(data + off);
	redo = ut_ld64(data + UT_META_CKPT_LSN);
	start = ut_ld64(b + cur * 4096 + 32);
	assert_true(newest > redo && redo >= start);
	/* cut the log inside the commit that page belongs to */
	mid = UT_WAL_DATA_OFF + (newest - start) - 8;
	assert_true(mid < len);
	vfs_write_file(ut_simdisk_vfs(d), DB "-wal", b, mid);
	free(data);
	assert_int_equal(dmg_open(d, &o, dmg_m, "B: log cut below a page LSN"), 0);
	assert_non_null(strstr(ut_errdetail(), "are missing"));
	/* nothing was repaired behind the refusal */
	uint64_t after;
	assert_int_equal(ut_simdisk_file_size(d, DB "-wal", &after), UT_OK);
	assert_int_equal(after, mid);
	free(b);
	ut_simdisk_free(d);
}

/* Item 3: -wal deleted beside a header that says "not closed cleanly". */
static void test_damage_log_deleted(void **s)
{
	(void)s;
	for (int small = 0; small < 2; small++) {
		ut_options o;
		ut_simdisk *d = dmg_build(small, &o, dmg_m);
		ut_vfs *v = ut_simdisk_vfs(d);

		assert_int_equal(v->remove(v, DB "-wal"), UT_OK);
		assert_int_equal(dmg_open(d, &o, dmg_m, small ? "B: -wal deleted"
							      : "A: -wal deleted"), 0);
		assert_non_null(strstr(ut_errdetail(), "is missing"));
		assert_int_equal(v->exists(v, DB "-wal"), 0); /* not recreated */
		ut_simdisk_free(d);
	}
}

/* Item 4: page 0 zeroed, in A, B and a two-page database. */
static void test_damage_header_zeroed(void **s)
{
	(void)s;
	static uint8_t zero[UT_PAGE_SIZE];

	for (int small = 0; small < 2; small++) {
		ut_options o;
		ut_simdisk *d = dmg_build(small, &o, dmg_m);

		assert_int_equal(ut_simdisk_poke(d, DB, 0, zero, sizeof(zero)), UT_OK);
		(void)dmg_open(d, &o, dmg_m, small ? "B: page 0 zeroed" : "A: page 0 zeroed");
		if (!small)
			assert_non_null(strstr(ut_errdetail(), "all zeroes"));
		ut_simdisk_free(d);
	}
	/* a two-page database, cleanly closed, keys in page 1 */
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_AUTO, 8 * UT_PAGE_SIZE, 1);
	ut_db *db;
	uint64_t size;

	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 5; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(ut_simdisk_file_size(d, DB, &size), UT_OK);
	assert_int_equal(size, 2 * UT_PAGE_SIZE);
	assert_int_equal(ut_simdisk_poke(d, DB, 0, zero, sizeof(zero)), UT_OK);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_ECORRUPT);
	print_message("two pages, page 0 zeroed: %s\n", ut_errdetail());
	/* and the keys are still in page 1 (nothing was re-initialised) */
	uint8_t pg[UT_PAGE_SIZE];
	assert_int_equal(ut_simdisk_peek(d, DB, UT_PAGE_SIZE, pg, sizeof(pg)),
			 UT_PAGE_SIZE);
	assert_true(ut_page_nslots(pg) >= 5);
	ut_simdisk_free(d);
}

/* ---- the page-write bound (issue 23 part 2) ----------------------------- */

static uint64_t hdr_bound_of(ut_simdisk *d)
{
	uint8_t h[UT_PAGE_SIZE];

	assert_int_equal(ut_simdisk_peek(d, DB, 0, h, sizeof(h)), UT_PAGE_SIZE);
	assert_true(ut_page_checksum_ok(h));
	assert_int_equal(ut_ld32(h + UT_META_VERSION), UT_FORMAT_NO_TABLES);
	return ut_ld64(h + UT_META_PAGEBOUND);
}

static ut_io_counters open_counters(ut_db *db)
{
	ut_io_counters c;

	ut_pager_counters_copy(ut_db_pager(db), &c);
	return c;
}

/* An unclean open with an intact log reads no page for its evidence (the
 * full read is what UT_RECOVERY_FULL_SCAN=1 brings back) and the data
 * equals the model; in B the cleaner wrote pages newer than the checkpoint,
 * so the bound was raised past it and still covers every page on disk. */
static void test_bound_fast_path(void **s)
{
	(void)s;
	for (int small = 0; small < 2; small++) {
		for (int full = 0; full < 2; full++) {
			ut_options o;
			ut_simdisk *d = dmg_build(small, &o, dmg_m);
			uint64_t newest = bound_holds_on_disk(d), pages;
			ut_io_counters c;
			ut_db *db;

			assert_int_equal(ut_simdisk_file_size(d, DB, &pages), UT_OK);
			pages /= UT_PAGE_SIZE;
			if (small)
				assert_true(hdr_bound_of(d) >= newest && newest > 0);
			if (full)
				setenv("UT_RECOVERY_FULL_SCAN", "1", 1);
			assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
			unsetenv("UT_RECOVERY_FULL_SCAN");
			c = open_counters(db);
			print_message("%s%s: %llu pages, evidence read %llu, redo read %llu "
				      "(%llu hinted ahead)\n",
				      small ? "B" : "A", full ? " (full scan)" : "",
				      (unsigned long long)pages,
				      (unsigned long long)c.scan_reads,
				      (unsigned long long)c.page_reads,
				      (unsigned long long)c.prefetches);
			if (full)
				assert_true(c.scan_reads >= pages);
			else
				assert_int_equal(c.scan_reads, 0);
			/* redo named its pages ahead, each once, none new */
			assert_true(c.prefetches > 0 && c.prefetches <= pages);
			dmg_verify(db, dmg_m);
			assert_int_equal(ut_close(db), UT_OK);
			bound_holds_on_disk(d);
			ut_simdisk_free(d);
		}
	}
}

/* The log cut below the bound: durable commits are missing, refused, even
 * where no page in the data file is newer than the cut (the full read
 * could not tell). */
static void test_bound_log_cut(void **s)
{
	(void)s;
	ut_options o;
	ut_simdisk *d = dmg_build(1, &o, dmg_m);
	uint64_t len, mid, b = hdr_bound_of(d), start;
	uint8_t *w = dmg_slurp(d, DB "-wal", &len);
	int cur = ut_ld64(w + 4096 + 16) > ut_ld64(w + 16);

	start = ut_ld64(w + cur * 4096 + 32);
	assert_true(b > start);
	mid = UT_WAL_DATA_OFF + (b - start) - 8;
	assert_true(mid < len);
	vfs_write_file(ut_simdisk_vfs(d), DB "-wal", w, mid);
	assert_int_equal(dmg_open(d, &o, dmg_m, "B: log cut below the bound"), 0);
	assert_non_null(strstr(ut_errdetail(), "page-write bound"));
	assert_non_null(strstr(ut_errdetail(), "are missing"));
	/* refused, nothing cut: refused again */
	assert_int_equal(dmg_open(d, &o, dmg_m, "again"), 0);
	free(w);
	ut_simdisk_free(d);
}

/* A header lying about the bound (checksum resealed) beside a log cut
 * below the newest page: a bound below the header's own checkpoint is not
 * trusted (the full read finds the page, refused); a plausible one is
 * caught by the pages read, at open or by a check, never wrong data. */
static void test_bound_lie(void **s)
{
	(void)s;
	for (int plausible = 0; plausible < 2; plausible++) {
		ut_options o;
		ut_simdisk *d = dmg_build(1, &o, dmg_m);
		uint64_t len, newest = bound_holds_on_disk(d), start;
		uint8_t *w = dmg_slurp(d, DB "-wal", &len), h[UT_PAGE_SIZE];
		int cur = ut_ld64(w + 4096 + 16) > ut_ld64(w + 16);
		ut_check_result cr;
		ut_db *db;
		int rc;

		start = ut_ld64(w + cur * 4096 + 32);
		vfs_write_file(ut_simdisk_vfs(d), DB "-wal", w,
			       UT_WAL_DATA_OFF + (newest - start) - 8);
		free(w);
		assert_int_equal(ut_simdisk_peek(d, DB, 0, h, sizeof(h)), UT_PAGE_SIZE);
		ut_st64(h + UT_META_PAGEBOUND,
			plausible ? ut_ld64(h + UT_META_CKPT_LSN) : 1);
		ut_page_seal(h);
		assert_int_equal(ut_simdisk_poke(d, DB, 0, h, sizeof(h)), UT_OK);
		rc = ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db);
		print_message("bound %s: %s: %s\n", plausible ? "= checkpoint" : "= 1",
			      ut_strerror(rc), ut_errdetail());
		if (!plausible) {
			assert_int_equal(rc, UT_ECORRUPT);
			assert_non_null(strstr(ut_errdetail(), "are missing"));
			assert_null(strstr(ut_errdetail(), "page-write bound"));
		} else if (rc == UT_OK) {
			assert_int_equal(ut_check(db, NULL, &cr), UT_ECORRUPT);
			(void)ut_close(db);
		} else {
			assert_int_equal(rc, UT_ECORRUPT);
		}
		ut_simdisk_free(d);
	}
}

/* A format-1 file (no bound) after a crash: the full read, every commit,
 * and the header is format 2 with a bound from then on. */
static void test_bound_format1_upgrade(void **s)
{
	(void)s;
	ut_options o;
	ut_simdisk *d = dmg_build(1, &o, dmg_m);
	uint8_t h[UT_PAGE_SIZE];
	ut_io_counters c;
	ut_db *db;

	assert_int_equal(ut_simdisk_peek(d, DB, 0, h, sizeof(h)), UT_PAGE_SIZE);
	ut_st32(h + UT_META_VERSION, 1);
	ut_st64(h + UT_META_PAGEBOUND, 0); /* format 1 had zeroes there */
	ut_page_seal(h);
	assert_int_equal(ut_simdisk_poke(d, DB, 0, h, sizeof(h)), UT_OK);
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
	c = open_counters(db);
	assert_true(c.scan_reads > 0);
	dmg_verify(db, dmg_m);
	/* upgraded by open's checkpoint, before any commit */
	assert_true(hdr_bound_of(d) != UT_BOUND_UNKNOWN);
	bound_holds_on_disk(d);
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
	assert_int_equal(open_counters(db).scan_reads, 0);
	dmg_verify(db, dmg_m);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* sync=0: lazy writes make the bound unknown (the log may not hold their
 * LSNs), so a crash brings the full read back; a checkpoint sets it. */
static void test_bound_lazy_unknown(void **s)
{
	(void)s;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_options o = opts(UT_PROTECT_DOUBLEWRITE, 160 << 10, 0);
	ut_db *db;

	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(ut_db_open_vfs(v, DB, &o, &db), UT_OK);
	for (int i = 0; i < 3000; i++)
		assert_int_equal(run_txn(db, i), UT_OK);
	assert_true(open_counters(db).page_writes > 0);
	assert_int_equal(hdr_bound_of(d), UT_BOUND_UNKNOWN);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	assert_true(hdr_bound_of(d) != UT_BOUND_UNKNOWN);
	bound_holds_on_disk(d);
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	(void)ut_close(db);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode_selection),
		cmocka_unit_test(test_crash_reopen),
		cmocka_unit_test(test_redo_restores_every_change),
		cmocka_unit_test(test_redo_twice),
		cmocka_unit_test(test_log_bounded),
		cmocka_unit_test(test_checkpoint_ends_under_pressure),
		cmocka_unit_test(test_atomic_einval_fatal),
		cmocka_unit_test(test_enospc),
		cmocka_unit_test(test_large_txn),
		cmocka_unit_test(test_dw_file),
		cmocka_unit_test(test_dw_damaged_header),
		cmocka_unit_test(test_torn_extension),
		cmocka_unit_test(test_enospc_recovery_need),
		cmocka_unit_test(test_atomic_corruption_reported),
		cmocka_unit_test(test_group_commit),
		cmocka_unit_test(test_crash_sweep_atomic),
		cmocka_unit_test(test_crash_sweep_doublewrite),
		cmocka_unit_test(test_crash_sweep_atomic_cleaner),
		cmocka_unit_test(test_crash_sweep_doublewrite_cleaner),
		cmocka_unit_test(test_crash_sweep_fullpage),
		cmocka_unit_test(test_crash_sweep_fullpage_cleaner),
		cmocka_unit_test(test_checkpoint_during_batch),
		cmocka_unit_test(test_unsafe_tears_detected),
		cmocka_unit_test(test_stale_companions),
		cmocka_unit_test(test_log_missing),
		cmocka_unit_test(test_open_corruption),
		cmocka_unit_test(test_crash_during_create),
		cmocka_unit_test(test_damage_header_slot),
		cmocka_unit_test(test_damage_log_shift),
		cmocka_unit_test(test_damage_log_cut_newer_pages),
		cmocka_unit_test(test_damage_log_deleted),
		cmocka_unit_test(test_damage_header_zeroed),
		cmocka_unit_test(test_bound_fast_path),
		cmocka_unit_test(test_bound_log_cut),
		cmocka_unit_test(test_bound_lie),
		cmocka_unit_test(test_bound_format1_upgrade),
		cmocka_unit_test(test_bound_lazy_unknown),
	};
	dmg_m = malloc(sizeof(*dmg_m));
	return cmocka_run_group_tests(tests, NULL, NULL);
}

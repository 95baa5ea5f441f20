/*
 * tests/test_pager_races.c - the pager's handle and locks hold up under
 * the sanitizers: the handle is allocated at its (cache-line) alignment,
 * and readers hitting the page table while the writer grows it race on
 * nothing (run under ThreadSanitizer: once a reader computed its lock
 * stripe from the table's size, which the growth changes; now the hit
 * reads the table with no lock, pool.c); a checkpoint
 * on a fresh handle, before its page cleaner ran, and the pool's shrink
 * after a transaction bigger than the cache do not hold the pool mutex
 * over their page writes (a reader beginning meanwhile does not wait).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "untorn.h"
#include "db.h"
#include "page.h"
#include "pager_int.h"
#include "ut_simdisk.h"
#include "helper_log.h"

static ut_db *open_db(ut_simdisk *d, const char *path, size_t cache)
{
	ut_options o;
	ut_db *db = NULL;

	ut_options_init(&o, sizeof(o));
	o.cache_bytes = cache;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), path, &o, &db), UT_OK);
	return db;
}

/* calloc gives 16 bytes; the handle asks for 64 (its reader slots). */
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

/* The fault hook holds the first page write to the data file. */
struct hold {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int armed, entered, released;
};

static int hold_fn(void *ctx, enum ut_simdisk_op op, const char *path)
{
	struct hold *h = ctx;

	if (op != UT_SIMDISK_OP_WRITE || strcmp(path, "/c.db"))
		return 0;
	pthread_mutex_lock(&h->mu);
	if (h->armed) {
		h->armed = 0;
		h->entered = 1;
		pthread_cond_broadcast(&h->cv);
		while (!h->released)
			pthread_cond_wait(&h->cv, &h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return 0;
}

/* While h holds a page write: wait up to a second for *done (set by a
 * reader thread), then let the write go.  Returns whether the reader got
 * in while the write was held. */
static int reader_done_while_held(struct hold *h, const int *done)
{
	int waited_ms = 0;

	while (!__atomic_load_n(done, __ATOMIC_ACQUIRE) && waited_ms < 1000) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
		waited_ms += 2;
	}
	pthread_mutex_lock(&h->mu);
	h->released = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return waited_ms < 1000;
}

/* What runs in its own thread while the page write is held. */
static void *checkpointer(void *arg)
{
	return (void *)(intptr_t)ut_checkpoint(arg);
}

/* One transaction of n 500-byte values, committed. */
static int put_some(ut_db *db, int n)
{
	char k[16], v[500];
	ut_txn *t;
	int rc;

	memset(v, 'c', sizeof(v));
	if ((rc = ut_begin(db, 0, &t)))
		return rc;
	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "c%04d", i);
		if ((rc = ut_put(t, k, strlen(k), v, sizeof(v)))) {
			ut_abort(t);
			return rc;
		}
	}
	return ut_commit(t);
}

struct beginner {
	ut_db *db;
	int rc, done;
};

static void *begin_read(void *arg)
{
	struct beginner *b = arg;
	ut_txn *t;

	b->rc = ut_begin(b->db, UT_RDONLY, &t);
	if (b->rc == UT_OK)
		ut_abort(t);
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* op(db) in a thread on a fresh handle (before the fix no cleaner thread
 * had started there: open's and every later checkpoint, and the shrink,
 * wrote in the calling thread under the pool mutex): while the first
 * page write to the data file is held (whoever issues it), a read
 * transaction begins -- it needs the pool mutex for a moment -- within a
 * second. */
static void held_write_lets_reader_in(size_t cache, int prefill,
				      void *(*op)(void *), const char *what)
{
	ut_simdisk *d = ut_simdisk_new();
	struct hold h = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			  0, 0, 0 };
	struct beginner b;
	pthread_t ck, rd;
	void *crc;
	ut_db *db;
	int got_in;

	ut_simdisk_set_fault_hook(d, hold_fn, &h);
	db = open_db(d, "/c.db", cache);
	if (prefill)
		assert_int_equal(put_some(db, prefill), UT_OK);
	pthread_mutex_lock(&h.mu);
	h.armed = 1;
	pthread_mutex_unlock(&h.mu);
	assert_int_equal(pthread_create(&ck, NULL, op, db), 0);
	pthread_mutex_lock(&h.mu);
	while (!h.entered)
		pthread_cond_wait(&h.cv, &h.mu);
	pthread_mutex_unlock(&h.mu);

	b = (struct beginner){ db, -1, 0 };
	assert_int_equal(pthread_create(&rd, NULL, begin_read, &b), 0);
	got_in = reader_done_while_held(&h, &b.done);
	pthread_join(rd, NULL);
	pthread_join(ck, &crc);
	if (!got_in)
		fail_msg("a read transaction waited for %s's page write (the "
			 "pool mutex held over it)", what);
	assert_int_equal(b.rc, UT_OK);
	assert_int_equal((int)(intptr_t)crc, UT_OK);
	ut_simdisk_set_fault_hook(d, NULL, NULL);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* ut_checkpoint before the cleaner ever ran (a cache big enough that no
 * eviction started it). */
static void test_checkpoint_before_cleaner_frees_mutex(void **state)
{
	(void)state;
	held_write_lets_reader_in(4u << 20, 200, checkpointer, "a checkpoint");
}

/* Pager level (no open checkpoint starts a cleaner there; the log is
 * helper_log.h's stand-in, LSNs only).  A transaction of 24 new pages in
 * a cache of 8: at its end the pool is past its bound with dirty frames,
 * which must be written before it shrinks. */
static void *big_pager_txn(void *arg)
{
	ut_pager *p = arg;
	int rc = ut_pager_begin(p);

	for (int i = 0; rc == UT_OK && i < 24; i++) {
		ut_pg *pg;

		if ((rc = ut_pager_alloc(p, UT_PT_LEAF, &pg)) == UT_OK)
			ut_pager_release(p, pg);
	}
	if (rc == UT_OK)
		rc = ut_pager_commit(p, 0);
	return (void *)(intptr_t)rc;
}

struct snapper {
	ut_pager *p;
	int rc, done;
};

static void *snap_read(void *arg)
{
	struct snapper *b = arg;
	ut_snap s;

	b->rc = ut_pager_snap_begin(b->p, &s);
	if (b->rc == UT_OK)
		ut_pager_snap_end(b->p, &s);
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A commit whose transaction outgrew the cache, on a pager whose cleaner
 * never ran: the pool's shrink back to the bound needs its dirty frames
 * written (it wrote them itself, under the pool mutex); while that write
 * is held a snapshot begins within a second, and the pool is back within
 * its bound once the write is let go. */
static void test_shrink_before_cleaner_frees_mutex(void **state)
{
	static const ut_log_hooks hooks = { .log_commit = stub_log_commit };
	ut_pager_config cfg = { .cache_bytes = 8 * UT_PAGE_SIZE,
				.protect = UT_PROTECT_UNSAFE, .create = 1,
				.hooks = &hooks };
	ut_simdisk *d = ut_simdisk_new();
	struct hold h = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			  0, 0, 0 };
	struct snapper b = { NULL, -1, 0 };
	pthread_t ck, rd;
	void *crc;
	ut_pager *p;
	int got_in;

	(void)state;
	assert_int_equal(ut_pager_open(ut_simdisk_vfs(d), "/c.db", &cfg, &p),
			 UT_OK);
	ut_simdisk_set_fault_hook(d, hold_fn, &h);
	pthread_mutex_lock(&h.mu);
	h.armed = 1;
	pthread_mutex_unlock(&h.mu);
	assert_int_equal(pthread_create(&ck, NULL, big_pager_txn, p), 0);
	pthread_mutex_lock(&h.mu);
	while (!h.entered)
		pthread_cond_wait(&h.cv, &h.mu);
	pthread_mutex_unlock(&h.mu);

	b.p = p;
	assert_int_equal(pthread_create(&rd, NULL, snap_read, &b), 0);
	got_in = reader_done_while_held(&h, &b.done);
	pthread_join(rd, NULL);
	pthread_join(ck, &crc);
	if (!got_in)
		fail_msg("a snapshot waited for the pool shrink's page write "
			 "(the pool mutex held over it)");
	assert_int_equal(b.rc, UT_OK);
	assert_int_equal((int)(intptr_t)crc, UT_OK);
	/* the cleaner frees the frames once it wrote them */
	for (int i = 0; i < 5000 && ut_pager_frames(p) > 8; i++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	assert_true(ut_pager_frames(p) <= 8);
	ut_simdisk_set_fault_hook(d, NULL, NULL);
	assert_int_equal(ut_pager_close(p), UT_OK);
	ut_simdisk_free(d);
}

/* ---- formal races, for ThreadSanitizer ------------------------------- */

static uint32_t rbase; /* the first of a rig's pages */

/* A pager over d (unsafe: page writes are plain data-file writes), with
 * npages overflow pages committed and checkpointed. */
static ut_pager *race_rig(ut_simdisk *d, const char *path, size_t frames,
			  int inline_flush, int npages)
{
	static const ut_log_hooks hooks = { .log_commit = stub_log_commit };
	ut_pager_config cfg = { .cache_bytes = frames * UT_PAGE_SIZE,
				.protect = UT_PROTECT_UNSAFE, .create = 1,
				.inline_flush = inline_flush, .hooks = &hooks };
	ut_pager *p;

	assert_int_equal(ut_pager_open(ut_simdisk_vfs(d), path, &cfg, &p), UT_OK);
	assert_int_equal(ut_pager_begin(p), UT_OK);
	for (int i = 0; i < npages; i++) {
		ut_pg *pg;

		assert_int_equal(ut_pager_alloc(p, UT_PT_OVERFLOW, &pg), UT_OK);
		if (i == 0)
			rbase = pg->pgno;
		ut_page_set_aux(pg->data, 1);
		ut_pager_release(p, pg);
	}
	assert_int_equal(ut_pager_commit(p, 0), UT_OK);
	assert_int_equal(ut_pager_checkpoint(p), UT_OK);
	return p;
}

static void touch_pages(ut_pager *p, int from, int n)
{
	assert_int_equal(ut_pager_begin(p), UT_OK);
	for (int i = from; i < from + n; i++) {
		ut_pg *pg;

		assert_int_equal(ut_pager_get(p, rbase + (uint32_t)i, &pg), UT_OK);
		assert_int_equal(ut_pager_write(p, pg), UT_OK);
		pg->data[UT_PG_HDR]++;
		ut_pager_release(p, pg);
	}
	assert_int_equal(ut_pager_commit(p, 0), UT_OK);
}

/* Handshakes between the two threads of a race test must not order
 * their accesses for ThreadSanitizer (a mutex would: it would hide the
 * race): relaxed atomics and polling. */
static int relaxed_get(const int *x)
{
	return __atomic_load_n(x, __ATOMIC_RELAXED);
}

static void relaxed_set(int *x, int v)
{
	__atomic_store_n(x, v, __ATOMIC_RELAXED);
}

static void relaxed_wait(const int *x)
{
	while (!relaxed_get(x)) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
}

/* Holds the data file's second write from when it is armed. */
struct nth_hold {
	int armed, seen, entered, released;
};

static int nth_fn(void *ctx, enum ut_simdisk_op op, const char *path)
{
	struct nth_hold *n = ctx;

	if (op != UT_SIMDISK_OP_WRITE || strcmp(path, "/r.db") ||
	    !relaxed_get(&n->armed))
		return 0;
	if (__atomic_add_fetch(&n->seen, 1, __ATOMIC_RELAXED) == 2) {
		relaxed_set(&n->entered, 1);
		relaxed_wait(&n->released);
	}
	return 0;
}

/* A checkpoint starts (the writer, under the pool mutex) while the
 * cleaner, having just raised the page-write bound (the header it
 * remembers as on disk rewritten under flush_mu alone), writes its batch:
 * the start reads what it needs of that header without racing (the race
 * was ckpt_request reading hdr_disk; ThreadSanitizer sees it). */
static void test_checkpoint_start_during_bound_raise(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	struct nth_hold n = { 0, 0, 0, 0 };
	ut_pager *p = race_rig(d, "/r.db", 16, 0, 14);
	uint64_t ticket;
	int again, started;

	(void)state;
	/* the cleaner thread runs (a checkpoint through it, nothing dirty) */
	assert_int_equal(ut_pager_checkpoint_async(p, &started), UT_OK);
	assert_int_equal(ut_pager_checkpoint(p), UT_OK);
	ut_simdisk_set_fault_hook(d, nth_fn, &n);
	relaxed_set(&n.armed, 1);
	/* past the dirty mark, every page newer than the bound: the cleaner
	 * raises it (write 1) and writes the batch (write 2, held) */
	touch_pages(p, 0, 14);
	relaxed_wait(&n.entered);
	assert_int_equal(ut_pager_checkpoint_start(p, &ticket, &again), UT_OK);
	relaxed_set(&n.released, 1);
	if (ticket)
		assert_int_equal(ut_pager_checkpoint_wait(p, ticket), UT_OK);
	ut_simdisk_set_fault_hook(d, NULL, NULL);
	assert_int_equal(ut_pager_close(p), UT_OK);
	ut_simdisk_free(d);
}

struct crc_reader {
	ut_pager *p;
	int ready, go, rc;
	unsigned sum;
};

/* Pins page 0 of the rig as its snapshot sees it and reads all of it, the
 * CRC field included (as a backup copying a page does), before and after
 * the writer's next commit. */
static void *crc_reader_main(void *arg)
{
	struct crc_reader *r = arg;
	ut_snap s;
	ut_pg *pg;

	if ((r->rc = ut_pager_snap_begin(r->p, &s)))
		return NULL;
	if ((r->rc = ut_pager_get_at(r->p, &s, rbase, &pg)) == UT_OK) {
		r->sum += ut_page_checksum_ok(pg->data);
		relaxed_set(&r->ready, 1);
		relaxed_wait(&r->go);
		r->sum += ut_page_checksum_ok(pg->data);
		ut_pager_release(r->p, pg);
	}
	ut_pager_snap_end(r->p, &s);
	return NULL;
}

/* inline_flush (no cleaner thread): page 0 of the rig is changed by a
 * small transaction (dirty, published), a reader reads it, then a
 * transaction bigger than the cache ends and the pool's shrink writes the
 * dirty frames, the reader's page among them.  It seals a copy (the race
 * was sealing the published page in place: its CRC changed under the
 * reader). */
static void test_inline_shrink_seals_copies(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_pager *p = race_rig(d, "/s.db", 8, 1, 24);
	struct crc_reader r = { p, 0, 0, 0, 0 };
	pthread_t th;

	(void)state;
	touch_pages(p, 0, 1);
	assert_int_equal(pthread_create(&th, NULL, crc_reader_main, &r), 0);
	relaxed_wait(&r.ready);
	touch_pages(p, 1, 23); /* the shrink writes page 0 too */
	relaxed_set(&r.go, 1);
	pthread_join(th, NULL);
	assert_int_equal(r.rc, UT_OK);
	assert_int_equal(ut_pager_close(p), UT_OK);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handle_aligned),
		cmocka_unit_test(test_readers_while_table_grows),
		cmocka_unit_test(test_checkpoint_before_cleaner_frees_mutex),
		cmocka_unit_test(test_shrink_before_cleaner_frees_mutex),
		cmocka_unit_test(test_checkpoint_start_during_bound_raise),
		cmocka_unit_test(test_inline_shrink_seals_copies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

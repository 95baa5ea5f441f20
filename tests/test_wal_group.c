/*
 * tests/test_wal_group.c - group commit: concurrent committers share syncs.
 *
 * Each thread commits N transactions the way the engine does: append under
 * a writer lock, release it, flush_to(lsn) outside it.  Every commit must be
 * durable when flush_to returns; with many threads, one fdatasync must
 * serve several commits.  ut_wal_sync_waiting names the LSN a committer
 * in flush_to waits for, for the page cleaner to let it go first.
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

#include "helper_shim.h"
#include "ut_io.h"
#include "ut_simdisk.h"
#include "wal.h"

typedef struct run {
	ut_wal *w;
	pthread_mutex_t writer;
	unsigned per_thread;
	int errors;
	int not_durable;
	int order_errors;
} run;

/* A fresh log path in $UT_TMPDIR (build/tmp by default). */
static void tmp_log(char *path, size_t size, const char *name)
{
	const char *dir = getenv("UT_TMPDIR");

	if (!dir)
		dir = "build/tmp";
	mkdir(dir, 0755);
	snprintf(path, size, "%s/wal_%s_%d.log", dir, name, (int)getpid());
	unlink(path);
}

static void *committer(void *arg)
{
	run *r = arg;
	unsigned char buf[100];
	uint64_t prev = 0;

	for (unsigned i = 0; i < r->per_thread; i++) {
		ut_wal_delta d = { .pgno = (uint32_t)(i % 64), .offset = i % 1000,
				   .len = sizeof(buf), .data = buf };
		uint64_t lsn;
		int rc;

		memset(buf, (int)i, sizeof(buf));
		pthread_mutex_lock(&r->writer);
		rc = ut_wal_append_txn(r->w, &d, 1, &lsn);
		pthread_mutex_unlock(&r->writer);
		if (rc == UT_OK)
			rc = ut_wal_flush_to(r->w, lsn);
		if (rc != UT_OK) {
			__atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (ut_wal_durable_lsn(r->w) < lsn)
			__atomic_add_fetch(&r->not_durable, 1, __ATOMIC_RELAXED);
		if (lsn <= prev)
			__atomic_add_fetch(&r->order_errors, 1, __ATOMIC_RELAXED);
		prev = lsn;
	}
	return NULL;
}

static double run_threads(unsigned nthreads, unsigned per_thread)
{
	char path[512], name[32];
	pthread_t th[64];
	run r = { .per_thread = per_thread };
	ut_wal_stats st;
	ut_wal_recovery_info info;
	double spc;

	snprintf(name, sizeof(name), "group_%u", nthreads);
	tmp_log(path, sizeof(path), name);
	pthread_mutex_init(&r.writer, NULL);
	assert_int_equal(ut_wal_open(ut_vfs_posix(), path, NULL, &r.w), UT_OK);
	for (unsigned t = 0; t < nthreads; t++)
		assert_int_equal(pthread_create(&th[t], NULL, committer, &r), 0);
	for (unsigned t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.not_durable, 0);
	assert_int_equal(r.order_errors, 0);
	ut_wal_stats_get(r.w, &st);
	assert_int_equal(st.commits, (uint64_t)nthreads * per_thread);
	assert_int_equal(st.durable_lsn, st.next_lsn);
	/* syncs of the commits only (creation synced the header once) */
	spc = (double)(st.syncs - 1) / (double)st.commits;
	printf("group commit: %2u threads x %u commits: %llu syncs, "
	       "%.3f syncs/commit\n", nthreads, per_thread,
	       (unsigned long long)(st.syncs - 1), spc);
	ut_wal_close(r.w);

	/* every acknowledged commit is in the log */
	assert_int_equal(ut_wal_open(ut_vfs_posix(), path, NULL, &r.w), UT_OK);
	assert_int_equal(ut_wal_recover(r.w, 0, NULL, NULL, &info), UT_OK);
	assert_int_equal(info.txns_replayed, (uint64_t)nthreads * per_thread);
	assert_int_equal(info.stop_reason, UT_WAL_STOP_END);
	ut_wal_close(r.w);
	unlink(path);
	pthread_mutex_destroy(&r.writer);
	return spc;
}

/* Committers and a checkpointer at once: resets happen under load, no
 * commit is lost, LSNs keep rising. */
typedef struct crun {
	ut_wal *w;
	pthread_mutex_t writer;
	uint64_t acked; /* highest acknowledged commit LSN */
	uint64_t lsn[4][300];
	int stop, errors;
} crun;

typedef struct carg {
	crun *r;
	int id;
} carg;

/* Raise the highest acknowledged commit LSN to lsn. */
static void ack(crun *r, uint64_t lsn)
{
	uint64_t cur = __atomic_load_n(&r->acked, __ATOMIC_ACQUIRE);

	while (cur < lsn &&
	       !__atomic_compare_exchange_n(&r->acked, &cur, lsn, 0,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

static void *ccommitter(void *arg)
{
	carg *a = arg;
	crun *r = a->r;
	unsigned char buf[700];

	for (unsigned i = 0; i < 300; i++) {
		ut_wal_delta d = { .pgno = i, .offset = 0, .len = sizeof(buf),
				   .data = buf };
		uint64_t lsn;

		memset(buf, a->id, sizeof(buf));
		pthread_mutex_lock(&r->writer);
		int rc = ut_wal_append_txn(r->w, &d, 1, &lsn);
		pthread_mutex_unlock(&r->writer);
		if (rc == UT_OK)
			rc = ut_wal_flush_to(r->w, lsn);
		if (rc != UT_OK || (i && lsn <= r->lsn[a->id][i - 1]))
			__atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
		r->lsn[a->id][i] = lsn;
		ack(r, lsn);
	}
	return NULL;
}

/* Checkpoint at the highest acknowledged commit, if it moved: an
 * acknowledged commit LSN is a transaction boundary. */
static void checkpoint_acked(crun *r, uint64_t *redo)
{
	uint64_t a = __atomic_load_n(&r->acked, __ATOMIC_ACQUIRE);

	if (a > *redo) {
		assert_int_equal(ut_wal_checkpoint_done(r->w, a), UT_OK);
		*redo = a;
	}
}

static void test_checkpoint_under_load(void **state)
{
	char path[512];
	static crun r;
	carg args[4];
	pthread_t th[4];
	ut_wal_config cfg = { .reset_min_bytes = 16 * 1024 };
	ut_wal_stats st;
	ut_wal_recovery_info info;
	uint64_t redo = 0;

	(void)state;
	tmp_log(path, sizeof(path), "ckload");
	memset(&r, 0, sizeof(r));
	pthread_mutex_init(&r.writer, NULL);
	assert_int_equal(ut_wal_open(ut_vfs_posix(), path, &cfg, &r.w), UT_OK);
	for (int t = 0; t < 4; t++) {
		args[t] = (carg){ &r, t };
		assert_int_equal(pthread_create(&th[t], NULL, ccommitter, &args[t]), 0);
	}
	for (int k = 0; k < 200; k++) {
		checkpoint_acked(&r, &redo);
		usleep(2000);
	}
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	assert_int_equal(r.errors, 0);
	ut_wal_stats_get(r.w, &st);
	printf("checkpoint under load: %llu commits, %llu resets, %llu syncs\n",
	       (unsigned long long)st.commits, (unsigned long long)st.resets,
	       (unsigned long long)st.syncs);
	assert_true(st.resets > 0);
	ut_wal_close(r.w);

	unsigned later = 0;
	for (int t = 0; t < 4; t++)
		for (int i = 0; i < 300; i++)
			later += r.lsn[t][i] > redo;
	assert_int_equal(ut_wal_open(ut_vfs_posix(), path, &cfg, &r.w), UT_OK);
	assert_int_equal(ut_wal_recover(r.w, redo, NULL, NULL, &info), UT_OK);
	assert_int_equal(info.txns_replayed, later);
	ut_wal_close(r.w);
	unlink(path);
	pthread_mutex_destroy(&r.writer);
}

/* A transaction big enough to be written out before its COMMIT, appended
 * while other threads commit small ones and a checkpointer resets the log
 * (the big one without the writer lock: the log alone must keep each
 * transaction's records together, and must not reset under them). */
enum { BIG_TXNS = 3, BIG_DELTAS = 800 }; /* 12.5 MiB of records each */

static int count_delta(void *ctx, uint64_t lsn, const ut_wal_delta *d)
{
	(void)lsn;
	(void)d;
	++*(uint64_t *)ctx;
	return 0;
}

/* Give the checkpointer a reset between two big transactions (up to 2 s);
 * the small committers' checkpoints then land during the next stream. */
static void wait_for_reset(ut_wal *w)
{
	ut_wal_stats before, now;

	ut_wal_stats_get(w, &before);
	for (int i = 0; i < 2000; i++) {
		ut_wal_stats_get(w, &now);
		if (now.resets > before.resets)
			return;
		usleep(1000);
	}
}

static void *big_committer(void *arg)
{
	crun *r = arg;
	static unsigned char page[UT_PAGE_SIZE];
	static ut_wal_delta d[BIG_DELTAS];

	for (unsigned i = 0; i < BIG_DELTAS; i++)
		d[i] = (ut_wal_delta){ 100 + i, 0, UT_PAGE_SIZE, page, 0 };
	for (int k = 0; k < BIG_TXNS; k++) {
		uint64_t lsn = 0;
		int rc;

		memset(page, k + 1, sizeof(page));
		rc = ut_wal_append_txn(r->w, d, BIG_DELTAS, &lsn);
		if (rc == UT_OK)
			rc = ut_wal_flush_to(r->w, lsn);
		if (rc != UT_OK)
			__atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
		r->lsn[3][k] = lsn;
		ack(r, lsn);
		wait_for_reset(r->w);
	}
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_big_txn_among_small(void **state)
{
	char path[512];
	static crun r;
	carg args[3];
	pthread_t th[4];
	ut_wal_config cfg = { .reset_min_bytes = 16 * 1024 };
	ut_wal_stats st;
	ut_wal_recovery_info info;
	uint64_t redo = 0, deltas = 0, later = 0, later_deltas = 0;

	(void)state;
	tmp_log(path, sizeof(path), "big");
	memset(&r, 0, sizeof(r));
	pthread_mutex_init(&r.writer, NULL);
	assert_int_equal(ut_wal_open(ut_vfs_posix(), path, &cfg, &r.w), UT_OK);
	assert_int_equal(pthread_create(&th[3], NULL, big_committer, &r), 0);
	for (int t = 0; t < 3; t++) {
		args[t] = (carg){ &r, t };
		assert_int_equal(pthread_create(&th[t], NULL, ccommitter, &args[t]), 0);
	}
	/* checkpoint until the big transactions are in */
	while (!__atomic_load_n(&r.stop, __ATOMIC_ACQUIRE)) {
		checkpoint_acked(&r, &redo);
		usleep(200);
	}
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	assert_int_equal(r.errors, 0);
	ut_wal_stats_get(r.w, &st);
	assert_int_equal(st.commits, 3 * 300 + BIG_TXNS);
	assert_true(st.resets > 0);
	assert_true(st.buffer_bytes <= 32u << 20);
	ut_wal_close(r.w);

	for (int t = 0; t < 3; t++)
		for (int i = 0; i < 300; i++)
			later += r.lsn[t][i] > redo, later_deltas += r.lsn[t][i] > redo;
	for (int k = 0; k < BIG_TXNS; k++)
		if (r.lsn[3][k] > redo)
			later++, later_deltas += BIG_DELTAS;
	assert_int_equal(ut_wal_open(ut_vfs_posix(), path, &cfg, &r.w), UT_OK);
	assert_int_equal(ut_wal_recover(r.w, redo, count_delta, &deltas, &info),
			 UT_OK);
	assert_int_equal(info.txns_replayed, later);
	assert_int_equal(deltas, later_deltas);
	ut_wal_close(r.w);
	unlink(path);
	pthread_mutex_destroy(&r.writer);
}

static void test_group_commit(void **state)
{
	double s1, s4, s16;

	(void)state;
	s1 = run_threads(1, 200);
	s4 = run_threads(4, 200);
	s16 = run_threads(16, 200);
	/* one thread: one sync per commit, nothing to share */
	assert_true(s1 > 0.99 && s1 <= 1.0);
	assert_true(s4 <= 1.0);
	assert_true(s16 < 0.5);
}

/* ---- a committer waiting in flush_to is visible ------------------------ */

/* A vfs over the simulated disk whose syncs wait at a gate. */
struct gated {
	shim_vfs s;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int closed;
};

static int gf_sync(ut_file *f)
{
	struct gated *g = (struct gated *)shim_of(f);

	pthread_mutex_lock(&g->mu);
	while (g->closed)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
	return ut_file_sync(shim_in(f));
}

static const struct ut_file_ops gated_ops = {
	shim_read, shim_write, shim_write_batch, gf_sync, shim_size, shim_truncate,
	shim_atomic_info, shim_close, NULL, /* no prefetch */
};

struct flusher_arg {
	ut_wal *w;
	uint64_t lsn;
	int rc;
};

static void *flusher(void *arg)
{
	struct flusher_arg *a = arg;

	a->rc = ut_wal_flush_to(a->w, a->lsn);
	return NULL;
}

static void test_sync_waiting(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	struct gated g = { .mu = PTHREAD_MUTEX_INITIALIZER,
			   .cv = PTHREAD_COND_INITIALIZER, .closed = 0 };
	uint8_t bytes[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	ut_wal_delta delta = { 1, 0, sizeof(bytes), bytes, 0 };
	struct flusher_arg a;
	pthread_t t;
	uint64_t lsn, seen = 0;
	ut_wal *w;

	(void)state;
	shim_init(&g.s, ut_simdisk_vfs(d), &gated_ops);
	assert_int_equal(ut_wal_open(&g.s.v, "/gated-wal", NULL, &w), UT_OK);
	assert_int_equal(ut_wal_recover(w, 0, NULL, NULL, NULL), UT_OK);
	assert_int_equal(ut_wal_append_txn(w, &delta, 1, &lsn), UT_OK);
	assert_int_equal(ut_wal_sync_waiting(w), 0); /* appended, nobody waits */
	/* sync=0's write_to is no committer waiting for the device's sync */
	assert_int_equal(ut_wal_write_to(w, lsn), UT_OK);
	assert_int_equal(ut_wal_sync_waiting(w), 0);

	g.closed = 1;
	a = (struct flusher_arg){ w, lsn, -1 };
	assert_int_equal(pthread_create(&t, NULL, flusher, &a), 0);
	for (int i = 0; i < 10000 && !seen; i++) {
		seen = ut_wal_sync_waiting(w);
		usleep(1000);
	}
	assert_int_equal(seen, lsn); /* its sync is held at the gate */
	pthread_mutex_lock(&g.mu);
	g.closed = 0;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	pthread_join(t, NULL);
	assert_int_equal(a.rc, UT_OK);
	assert_int_equal(ut_wal_sync_waiting(w), 0); /* durable: gone */
	assert_int_equal(ut_wal_close(w), UT_OK);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_commit),
		cmocka_unit_test(test_checkpoint_under_load),
		cmocka_unit_test(test_big_txn_among_small),
		cmocka_unit_test(test_sync_waiting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

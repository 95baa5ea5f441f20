/*
 * tests/test_pace.c - the page cleaner's pacing (issue 23): the batch size
 * from measured bandwidth and a latency target (engine/pace.h), and the
 * property it serves: a commit waiting for the log while the cleaner has
 * many dirty pages to write gets its log write issued after at most the
 * one small batch already on the device.
 *
 * The second test runs the real cleaner thread over a simulated disk
 * whose data-file writes take a fixed time per page (a device of known
 * bandwidth), with log hooks that stand for a committer.  Sleeps only
 * ever last longer than asked, so the measured bandwidth, hence the
 * bound on a batch, can only come out lower: the assertions hold on any
 * machine, however loaded.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "untorn.h"
#include "helper_shim.h"
#include "pace.h"
#include "page.h"
#include "pager.h"
#include "ut_simdisk.h"

#define MAXB 128 /* the cleaner's batch capacity (pager_int.h) */

/* n pages written at bw bytes per second, in ns */
static uint64_t at_bw(size_t n, double bw)
{
	return (uint64_t)((double)n * UT_PAGE_SIZE * 1e9 / bw);
}

static void test_pace_arithmetic(void **s)
{
	(void)s;
	ut_pace pc;

	ut_pace_init(&pc, MAXB);
	assert_int_equal(pc.pages, UT_PACE_FIRST);
	/* the VM benchmark's device, 1.5 MB/s: 20 ms is one page */
	ut_pace_done(&pc, pc.pages, at_bw(pc.pages, 1.5e6), 1);
	assert_int_equal(pc.pages, 1);
	ut_pace_done(&pc, 1, at_bw(1, 1.5e6), 0);
	assert_int_equal(pc.pages, 1); /* no commit waits: still the bound */

	/* a fast device: doubling while no commit waits, up to the capacity */
	ut_pace_init(&pc, MAXB);
	for (size_t want = 2 * UT_PACE_FIRST; want <= MAXB; want *= 2) {
		ut_pace_done(&pc, pc.pages, at_bw(pc.pages, 1e9), 0);
		assert_int_equal(pc.pages, want);
	}
	ut_pace_done(&pc, pc.pages, at_bw(pc.pages, 1e9), 0);
	assert_int_equal(pc.pages, MAXB);

	/* ... and while commits wait, as long as a batch takes under half
	 * the target */
	ut_pace_init(&pc, MAXB);
	ut_pace_done(&pc, pc.pages, at_bw(pc.pages, 1e9), 1);
	assert_int_equal(pc.pages, 2 * UT_PACE_FIRST);

	/* near the target (5.46 MB/s: 4 pages take 12 ms, the bound is 6),
	 * one page a batch while commits wait, at once to the bound else */
	ut_pace_init(&pc, MAXB);
	ut_pace_done(&pc, 4, at_bw(4, 5.46e6), 1);
	assert_int_equal(pc.pages, 5);
	ut_pace_done(&pc, 5, at_bw(5, 5.46e6), 1);
	assert_int_equal(pc.pages, 6);
	ut_pace_done(&pc, 6, at_bw(6, 5.46e6), 1);
	assert_int_equal(pc.pages, 6);
	ut_pace_init(&pc, MAXB);
	ut_pace_done(&pc, 4, at_bw(4, 5.46e6), 0);
	assert_int_equal(pc.pages, 6);

	/* the device slows down (throttled, 3.2 MB/s: 3.9 pages in 20 ms):
	 * believed at once */
	ut_pace_init(&pc, MAXB);
	for (int i = 0; i < 8; i++)
		ut_pace_done(&pc, pc.pages, at_bw(pc.pages, 1e9), 0);
	assert_int_equal(pc.pages, MAXB);
	ut_pace_done(&pc, MAXB, at_bw(MAXB, 3.2e6), 0);
	assert_int_equal(pc.pages, 3);

	/* one fast batch on a slow device (1.5 MB/s; a 150 KB burst that a
	 * throttle lets through at once) moves the bound by little, and
	 * while commits wait the size grows by one page at most */
	ut_pace_init(&pc, MAXB);
	ut_pace_done(&pc, pc.pages, at_bw(pc.pages, 1.5e6), 1);
	assert_int_equal(pc.pages, 1);
	ut_pace_done(&pc, 1, at_bw(1, 15e6), 1);
	assert_int_equal(pc.pages, 2);
	ut_pace_done(&pc, 2, at_bw(2, 1.5e6), 1);
	assert_int_equal(pc.pages, 1);
}

/* ---- the cleaner lets a waiting commit go first ----------------------- */

#define DATA "/pace.db"
#define PAGE_NS 4000000L /* 4 ms a page: 4 MB/s, a bound of at most 5 */
#define BOUND 5
#define NPAGES 100

struct dev {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int armed;            /* set the committer waiting in the next batch */
	uint64_t waiting;     /* the LSN the committer waits for, 0: none */
	uint64_t next_lsn;
	size_t written;       /* data pages whose write completed */
	size_t biggest;       /* largest batch of data pages */
	size_t batches;
	size_t mark_end;      /* written at the end of the batch in flight
			       * when the committer began to wait */
	int flushed;          /* its log flush was issued */
	size_t flushed_at;    /* written then */
};

/* The simulated disk, its data-page writes slow (sf_write_batch). */
struct slowvfs {
	shim_vfs s;
	struct dev *dev;
};

/* A file's tag: 1 for the data file (not PATH "-dw"). */
static int is_data(const char *path) { return strcmp(path, DATA) == 0; }

/* Data-page writes take PAGE_NS each; the armed committer starts to wait
 * while such a batch is on the device. */
static int sf_write_batch(ut_file *f, const ut_iowrite *w, size_t n,
			  unsigned wflags)
{
	struct dev *d = ((struct slowvfs *)shim_of(f))->dev;
	struct timespec ts = { 0, PAGE_NS };
	int rc;

	if (!((shim_file *)f)->tag)
		return ut_file_write_batch(shim_in(f), w, n, wflags);
	pthread_mutex_lock(&d->mu);
	if (d->armed) {
		d->armed = 0;
		d->waiting = d->next_lsn + 1000; /* a commit not yet durable */
		d->mark_end = d->written + n;
	}
	pthread_mutex_unlock(&d->mu);
	for (size_t i = 0; i < n; i++)
		nanosleep(&ts, NULL);
	rc = ut_file_write_batch(shim_in(f), w, n, wflags);
	pthread_mutex_lock(&d->mu);
	d->written += n;
	d->batches++;
	if (n > d->biggest)
		d->biggest = n;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static const struct ut_file_ops slow_ops = {
	shim_read, shim_write, sf_write_batch, shim_sync, shim_size, shim_truncate,
	shim_atomic_info, shim_close, NULL, /* no prefetch */
};

/* The log: commits get increasing LSNs; a flush to the LSN the committer
 * waits for is its log write, issued by the cleaner (nothing else in this
 * test asks for that LSN). */
static int log_commit(void *ctx, const ut_log_page *pages, size_t n, int sync,
		      uint64_t *lsn)
{
	struct dev *d = ctx;

	(void)pages;
	(void)n;
	(void)sync;
	pthread_mutex_lock(&d->mu);
	*lsn = ++d->next_lsn;
	pthread_mutex_unlock(&d->mu);
	return UT_OK;
}

static int log_flush_to(void *ctx, uint64_t lsn)
{
	struct dev *d = ctx;

	pthread_mutex_lock(&d->mu);
	if (d->waiting && lsn >= d->waiting) {
		d->waiting = 0;
		d->flushed = 1;
		d->flushed_at = d->written;
		pthread_cond_broadcast(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	return UT_OK;
}

static uint64_t log_waiting(void *ctx)
{
	struct dev *d = ctx;
	uint64_t lsn;

	pthread_mutex_lock(&d->mu);
	lsn = d->waiting;
	pthread_mutex_unlock(&d->mu);
	return lsn;
}

static void wait_checkpoint(ut_pager *p)
{
	uint64_t b, c = 0, w;

	for (int i = 0; i < 10000 && !c; i++) {
		ut_pager_cleaner_stats(p, &b, &c, &w);
		usleep(1000);
	}
	assert_true(c > 0);
}

/* One transaction of n new pages: all dirty, committed at once. */
static void dirty_pages(ut_pager *p, int n)
{
	assert_int_equal(ut_pager_begin(p), UT_OK);
	for (int i = 0; i < n; i++) {
		ut_pg *pg;

		assert_int_equal(ut_pager_alloc(p, UT_PT_OVERFLOW, &pg), UT_OK);
		pg->data[UT_PG_HDR] = (uint8_t)i;
		ut_page_set_aux(pg->data, 1); /* bytes used: a valid overflow page */
		ut_pager_release(p, pg);
	}
	assert_int_equal(ut_pager_commit(p, 0), UT_OK);
}

/* A pager of 64 frames on the slow device, its cleaner thread running. */
struct rig {
	ut_simdisk *disk;
	struct dev d;
	struct slowvfs sv;
	ut_log_hooks hooks;
	ut_pager *p;
};

static void rig_open(struct rig *r)
{
	ut_pager_config cfg = { .cache_bytes = 64 * UT_PAGE_SIZE,
				.protect = UT_PROTECT_UNSAFE, .create = 1,
				.hooks = &r->hooks };
	int started;

	memset(r, 0, sizeof(*r));
	r->disk = ut_simdisk_new();
	shim_init(&r->sv.s, ut_simdisk_vfs(r->disk), &slow_ops);
	r->sv.s.tag_of = is_data;
	r->sv.dev = &r->d;
	r->hooks = (ut_log_hooks){ .ctx = &r->d, .log_commit = log_commit,
				   .log_flush_to = log_flush_to,
				   .log_waiting = log_waiting };
	pthread_mutex_init(&r->d.mu, NULL);
	pthread_cond_init(&r->d.cv, NULL);
	assert_int_equal(ut_pager_open(&r->sv.s.v, DATA, &cfg, &r->p), UT_OK);
	assert_int_equal(ut_pager_checkpoint_async(r->p, &started), UT_OK);
	wait_checkpoint(r->p); /* the cleaner thread runs */
}

static void rig_close(struct rig *r)
{
	assert_int_equal(ut_pager_close(r->p), UT_OK);
	ut_simdisk_free(r->disk);
}

/* Batches the cleaner completes within 25 pages' device time: none
 * once it has nothing above its mark to write.  d->mu held. */
static void wait_quiet(struct dev *d)
{
	for (size_t seen = SIZE_MAX; seen != d->batches;) {
		seen = d->batches;
		pthread_mutex_unlock(&d->mu);
		usleep(25 * PAGE_NS / 1000);
		pthread_mutex_lock(&d->mu);
	}
}

static void test_commit_goes_first(void **s)
{
	(void)s;
	struct rig r;
	struct dev *dv = &r.d;
	struct timespec until;

	rig_open(&r);

	/* far more dirty pages than the cleaner's mark: it writes them
	 * all, in batches the device's 4 MB/s bounds at 5 pages; a committer
	 * starts to wait in the third */
	pthread_mutex_lock(&dv->mu);
	dv->written = dv->batches = dv->biggest = 0;
	pthread_mutex_unlock(&dv->mu);
	dirty_pages(r.p, NPAGES);
	pthread_mutex_lock(&dv->mu);
	while (dv->batches < 2)
		pthread_cond_wait(&dv->cv, &dv->mu);
	dv->armed = 1;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	while (!dv->flushed &&
	       pthread_cond_timedwait(&dv->cv, &dv->mu, &until) == 0)
		;
	/* the log write went out as soon as the batch in flight was done */
	assert_true(dv->flushed);
	assert_int_equal(dv->flushed_at, dv->mark_end);
	assert_true(dv->flushed_at < NPAGES / 2);

	/* every batch of the cleaner, the one the commit waited for among
	 * them, within the bound (it stops at its mark) */
	wait_quiet(dv);
	assert_true(dv->written >= NPAGES / 2);
	assert_true(dv->biggest <= BOUND);
	pthread_mutex_unlock(&dv->mu);
	rig_close(&r);
}

/* The cleaner leaves the cache up to three quarters dirty: a page written
 * while commits still change it is written twice.  Past the mark it
 * writes down to it, not the whole cache. */
static void test_dirty_mark(void **s)
{
	(void)s;
	struct rig r;
	struct dev *dv = &r.d;

	rig_open(&r);
	pthread_mutex_lock(&dv->mu);
	wait_quiet(dv);
	dv->written = dv->batches = 0;
	pthread_mutex_unlock(&dv->mu);

	/* 40 of 64 frames dirty: more than half, not three quarters */
	dirty_pages(r.p, 40);
	pthread_mutex_lock(&dv->mu);
	wait_quiet(dv);
	assert_int_equal(dv->written, 0);
	pthread_mutex_unlock(&dv->mu);

	/* 60 dirty: written down to 48, within a batch of the mark */
	dirty_pages(r.p, 20);
	pthread_mutex_lock(&dv->mu);
	while (!dv->batches)
		pthread_cond_wait(&dv->cv, &dv->mu);
	wait_quiet(dv);
	assert_true(dv->written >= 60 - 48);
	assert_true(dv->written <= 60 - 48 + BOUND);
	pthread_mutex_unlock(&dv->mu);
	rig_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pace_arithmetic),
		cmocka_unit_test(test_commit_goes_first),
		cmocka_unit_test(test_dirty_mark),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

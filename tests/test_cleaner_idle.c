/*
 * tests/test_cleaner_idle.c - the page cleaner works only when it has
 * something to do, and a thread that needs a frame waits for it only when
 * a write can free one (issue 31: the cleaner busy-looped in the soak,
 * 26 M batches against 188 K page writes).
 *
 * Contract under test (engine/pager.h, "Page cleaner"; engine/pool.c):
 *  - a thread waiting for a frame asks the cleaner for one batch; once a
 *    batch has ended after it asked, the cleaner owes it nothing more
 *    until it asks again, even while it has not yet run to see the result
 *    (descheduled: here a signal handler holds it);
 *  - a dirty frame a reader pins is no reason to wait: writing it frees
 *    nothing, so a miss takes a frame past the bound at once;
 *  - a waiter gets UT_EFATAL, with the reason in ut_errdetail(), when the
 *    handle goes fatal, though the cleaner is stuck in a batch.
 *
 * The pager runs its real cleaner thread over the simulated disk, with log
 * hooks that only hand out LSNs; the batch hook holds a batch in flight
 * where a test needs a thread to be waiting.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "untorn.h"
#include "page.h"
#include "pager.h"
#include "ut_io.h"
#include "ut_simdisk.h"
#include "helper_log.h"

#define DATA "/idle.db"
#define FRAMES 16  /* the cache: its dirty mark is 12 */
#define NPAGES 48  /* the data: three times the cache */
#define NDIRTY 24  /* pages a test dirties: past the mark, past the cache */
#define FAR 40     /* a page none of those: a miss */

static uint32_t base; /* the first of the NPAGES pages; page i is base + i - 1 */
#define PG(i) (base + (uint32_t)(i) - 1)


static int log_flush_to(void *ctx, uint64_t lsn)
{
	(void)ctx;
	(void)lsn;
	return UT_OK;
}

static const ut_log_hooks hooks = { .log_commit = stub_log_commit,
				    .log_flush_to = log_flush_to };

/* The batch hook: when armed, the next batch waits in it until let go. */
static pthread_mutex_t hk_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hk_cv = PTHREAD_COND_INITIALIZER;
static int hk_armed, hk_inside, hk_go;

static void batch_hook(void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&hk_mu);
	if (hk_armed) {
		hk_armed = 0;
		hk_inside = 1;
		pthread_cond_broadcast(&hk_cv);
		while (!hk_go)
			pthread_cond_wait(&hk_cv, &hk_mu);
	}
	pthread_mutex_unlock(&hk_mu);
}

static void hook_arm(void)
{
	pthread_mutex_lock(&hk_mu);
	hk_armed = 1;
	hk_inside = hk_go = 0;
	pthread_mutex_unlock(&hk_mu);
}

static void hook_wait_inside(void)
{
	pthread_mutex_lock(&hk_mu);
	while (!hk_inside)
		pthread_cond_wait(&hk_cv, &hk_mu);
	pthread_mutex_unlock(&hk_mu);
}

static void hook_release(void)
{
	pthread_mutex_lock(&hk_mu);
	hk_go = 1;
	pthread_cond_broadcast(&hk_cv);
	pthread_mutex_unlock(&hk_mu);
}

static void stats(ut_pager *p, uint64_t *batches, uint64_t *waits)
{
	uint64_t c;

	ut_pager_cleaner_stats(p, batches, &c, waits);
}

/* A pager of FRAMES frames holding NPAGES clean overflow pages (byte
 * UT_PG_HDR of PG(i) is i), its cleaner thread running. */
static ut_pager *rig_open(ut_simdisk **disk)
{
	ut_pager_config cfg = { .cache_bytes = FRAMES * UT_PAGE_SIZE,
				.protect = UT_PROTECT_UNSAFE, .create = 1,
				.hooks = &hooks };
	ut_pager *p;
	uint64_t b, c = 0, w;
	int started;

	*disk = ut_simdisk_new();
	assert_non_null(*disk);
	assert_int_equal(ut_pager_open(ut_simdisk_vfs(*disk), DATA, &cfg, &p), UT_OK);
	assert_int_equal(ut_pager_begin(p), UT_OK);
	for (int i = 1; i <= NPAGES; i++) {
		ut_pg *pg;

		assert_int_equal(ut_pager_alloc(p, UT_PT_OVERFLOW, &pg), UT_OK);
		if (i == 1)
			base = pg->pgno;
		assert_int_equal(pg->pgno, PG(i));
		pg->data[UT_PG_HDR] = (uint8_t)i;
		ut_page_set_aux(pg->data, 1); /* bytes used: a valid overflow page */
		ut_pager_release(p, pg);
	}
	assert_int_equal(ut_pager_commit(p, 0), UT_OK);
	/* the checkpoint starts the cleaner thread and cleans every page */
	assert_int_equal(ut_pager_checkpoint_async(p, &started), UT_OK);
	for (int i = 0; i < 10000 && !c; i++) {
		ut_pager_cleaner_stats(p, &b, &c, &w);
		usleep(1000);
	}
	assert_true(c > 0);
	assert_int_equal(ut_pager_dirty_frames(p), 0);
	ut_pager_set_batch_hook(p, batch_hook, NULL);
	return p;
}

/* Change PG(1..n) in one transaction: n dirty frames. */
static void dirty_pages(ut_pager *p, int n)
{
	assert_int_equal(ut_pager_begin(p), UT_OK);
	for (int i = 1; i <= n; i++) {
		ut_pg *pg;

		assert_int_equal(ut_pager_get(p, PG(i), &pg), UT_OK);
		assert_int_equal(ut_pager_write(p, pg), UT_OK);
		pg->data[UT_PG_HDR + 1]++;
		ut_pager_release(p, pg);
	}
	assert_int_equal(ut_pager_commit(p, 0), UT_OK);
}

/* ---- a reader that waits for a frame --------------------------------- */

struct waiter {
	ut_pager *p;
	pthread_t th;
	int rc;
	uint8_t byte; /* the page's byte UT_PG_HDR */
	char detail[512];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	ut_snap s;
	ut_pg *pg;

	memset(&s, 0, sizeof(s));
	w->rc = ut_pager_snap_begin(w->p, &s);
	if (w->rc == UT_OK) {
		w->rc = ut_pager_get_at(w->p, &s, PG(FAR), &pg);
		if (w->rc == UT_OK) {
			w->byte = pg->data[UT_PG_HDR];
			ut_pager_release(w->p, pg);
		}
		ut_pager_snap_end(w->p, &s);
	}
	snprintf(w->detail, sizeof(w->detail), "%s", ut_errdetail());
	pthread_mutex_lock(&w->mu);
	w->done = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Dirty NDIRTY pages with the cleaner's first batch held in the hook,
 * then start a reader whose miss finds no clean frame: it waits for the
 * cleaner.  Returns once it does. */
static void start_waiter(ut_pager *p, struct waiter *w)
{
	uint64_t b, w0, w1;

	hook_arm();
	dirty_pages(p, NDIRTY); /* past the mark: the cleaner starts */
	hook_wait_inside();
	stats(p, &b, &w0);
	memset(w, 0, sizeof(*w));
	w->p = p;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	assert_int_equal(pthread_create(&w->th, NULL, waiter_main, w), 0);
	/* the count goes up under the pool mutex just before the wait */
	do {
		usleep(1000);
		stats(p, &b, &w1);
	} while (w1 == w0);
}

/* w ended within ms milliseconds? */
static int waiter_done_within(struct waiter *w, int ms)
{
	struct timespec until;
	int done;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->mu);
	while (!w->done && pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0)
		;
	done = w->done;
	pthread_mutex_unlock(&w->mu);
	return done;
}

static void waiter_join(struct waiter *w)
{
	assert_int_equal(pthread_join(w->th, NULL), 0);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

/* A signal handler that holds its thread, as a busy machine's scheduler
 * may hold a woken waiter: it has not yet looked at what the cleaner
 * did. */
static int sig_in, sig_go;

static void hold_thread(int sig)
{
	int e = errno;
	struct timespec ms = { 0, 1000000 };

	(void)sig;
	__atomic_store_n(&sig_in, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&sig_go, __ATOMIC_ACQUIRE))
		nanosleep(&ms, NULL);
	errno = e;
}

/* The soak's busy loop: a frame waiter, woken by a batch, that has not
 * yet run.  The cleaner did what it was asked: it writes down to its mark
 * and sleeps, where it used to run empty batches back to back (each
 * waking the waiter again) until the waiter ran: 26 M of them in 300 s of
 * the soak. */
static void test_woken_waiter_not_yet_run(void **s)
{
	(void)s;
	ut_simdisk *disk;
	ut_pager *p = rig_open(&disk);
	struct sigaction sa, old;
	struct waiter w;
	uint64_t b0, b1, waits;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = hold_thread;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	__atomic_store_n(&sig_in, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sig_go, 0, __ATOMIC_RELAXED);

	start_waiter(p, &w);
	assert_int_equal(pthread_kill(w.th, SIGUSR1), 0);
	while (!__atomic_load_n(&sig_in, __ATOMIC_ACQUIRE))
		usleep(1000);
	stats(p, &b0, &waits);
	hook_release(); /* the batch the waiter waits for ends */
	usleep(1000 * 1000);
	stats(p, &b1, &waits);
	__atomic_store_n(&sig_go, 1, __ATOMIC_RELEASE);

	/* the waiter goes on with a frame the cleaner freed */
	assert_true(waiter_done_within(&w, 30000));
	waiter_join(&w);
	assert_int_equal(w.rc, UT_OK);
	assert_int_equal(w.byte, FAR);
	print_message("cleaner batches in the second: %llu\n",
		      (unsigned long long)(b1 - b0));
	/* the batch it waited for, then down to the mark (at least 4 pages a
	 * batch), then nothing: 4 batches here; 2.9 M before the fix */
	assert_true(b1 - b0 <= 1 + (NDIRTY - FRAMES * 3 / 4) / 4);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
	assert_int_equal(ut_pager_close(p), UT_OK);
	ut_simdisk_free(disk);
}

/* Every frame pinned by a long reader, some of them dirty: writing them
 * frees no frame, so the reader's next miss takes one past the bound at
 * once instead of waiting for the cleaner.  Once the reader ends the
 * cache comes back within its bound. */
static void test_reader_pins_no_wait(void **s)
{
	(void)s;
	ut_simdisk *disk;
	ut_pager *p = rig_open(&disk);
	ut_pg *pins[NPAGES + 1];
	uint64_t b0, b1, w0, w1;
	ut_snap snap;
	int n = 0;

	dirty_pages(p, FRAMES * 3 / 4 - 2); /* under the mark: no cleaning */
	stats(p, &b0, &w0);
	memset(&snap, 0, sizeof(snap));
	assert_int_equal(ut_pager_snap_begin(p, &snap), UT_OK);
	for (int i = 1; i <= 2 * FRAMES; i++) {
		assert_int_equal(ut_pager_get_at(p, &snap, PG(i), &pins[n]),
				 UT_OK);
		assert_int_equal(pins[n]->data[UT_PG_HDR], i);
		n++;
	}
	stats(p, &b1, &w1);
	assert_int_equal(w1 - w0, 0); /* no miss waited for the cleaner */
	assert_int_equal(b1 - b0, 0); /* which wrote nothing for it */
	assert_true(ut_pager_frames(p) > FRAMES);

	/* the exact bound while pinned: every frame the reader pins, plus
	 * page 0 and the dirty ones (unpinned: a miss evicts a clean one) */
	print_message("%zu frames for %d pinned pages\n", ut_pager_frames(p), n);
	assert_true(ut_pager_frames(p) <= (size_t)n + 1 + FRAMES * 3 / 4);
	while (n)
		ut_pager_release(p, pins[--n]);
	ut_pager_snap_end(p, &snap);
	/* the reader's end gives back what is past the bound, without
	 * waiting for a write (issue 31: it waited for the next commit) */
	assert_true(ut_pager_frames(p) <= FRAMES);
	assert_int_equal(ut_pager_close(p), UT_OK);
	ut_simdisk_free(disk);
}

/* The handle goes fatal (a failed commit) while a reader waits for a
 * frame and the cleaner is stuck in a batch: the reader gets UT_EFATAL at
 * once, and ut_errdetail says why the handle failed. */
static void test_waiter_fails_when_fatal(void **s)
{
	(void)s;
	ut_simdisk *disk;
	ut_pager *p = rig_open(&disk);
	struct waiter w;

	start_waiter(p, &w);
	ut_set_errdetail("%s-wal: log sync failed (simulated)", DATA);
	ut_pager_set_fatal(p, 1);
	assert_true(waiter_done_within(&w, 1000));
	hook_release();
	waiter_join(&w);
	assert_int_equal(w.rc, UT_EFATAL);
	assert_non_null(strstr(w.detail, "log sync failed (simulated)"));
	assert_non_null(strstr(w.detail, "refuses further use"));
	(void)ut_pager_close(p);
	ut_simdisk_free(disk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_woken_waiter_not_yet_run),
		cmocka_unit_test(test_reader_pins_no_wait),
		cmocka_unit_test(test_waiter_fails_when_fatal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/test_lazy_protect.c - with sync=0 the pager writes pages lazily
 * (in place, no double-write copy, no sync) only where no checkpoint
 * needs them and never during redo (issue 31).
 *
 * Contract under test (engine/pager.h "Page cleaner", engine/cleaner.c):
 *  - whether a batch is lazy is decided under the pool mutex with its
 *    copies: a checkpoint that began before (here: while the cleaner let a
 *    waiting commit's log flush go first, the mutex let go) gets the
 *    batch written through the protection;
 *  - a checkpoint that begins while a lazy batch is in flight gets those
 *    pages written again, protected, before it ends;
 *  - redo's evictions are protected whatever sync says: a crash during
 *    recovery must find every page it wrote whole.
 *
 * Counted with the double-write strategy on the simulated disk: every
 * protected in-place page write (data pages and headers alike) has its
 * copy (dw_page_writes), a lazy one has none, so page_writes -
 * dw_page_writes over an interval is the pages written unprotected in it.
 * The log hooks only hand out LSNs; log_waiting and the batch hook hold
 * the cleaner at the two points of the race.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "untorn.h"
#include "page.h"
#include "pager.h"
#include "ut_io.h"
#include "ut_simdisk.h"
#include "helper_log.h"

#define DATA "/lazy.db"
#define FRAMES 16 /* the cache: its dirty mark is 12 */
#define NPAGES 14 /* pages a test dirties: past the mark, within the cache */

static uint32_t base; /* the first of the NPAGES pages */

static int log_to(void *ctx, uint64_t lsn)
{
	(void)ctx;
	(void)lsn;
	return UT_OK;
}

/* A hold point: armed, the next thread through waits until let go. */
struct hold {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int armed, inside, go;
};

static struct hold at_log = { PTHREAD_MUTEX_INITIALIZER,
			      PTHREAD_COND_INITIALIZER, 0, 0, 0 };
static struct hold at_batch = { PTHREAD_MUTEX_INITIALIZER,
				PTHREAD_COND_INITIALIZER, 0, 0, 0 };

static void hold_here(struct hold *h)
{
	pthread_mutex_lock(&h->mu);
	if (h->armed) {
		h->armed = 0;
		h->inside = 1;
		pthread_cond_broadcast(&h->cv);
		while (!h->go)
			pthread_cond_wait(&h->cv, &h->mu);
	}
	pthread_mutex_unlock(&h->mu);
}

static void hold_arm(struct hold *h)
{
	pthread_mutex_lock(&h->mu);
	h->armed = 1;
	h->inside = h->go = 0;
	pthread_mutex_unlock(&h->mu);
}

static void hold_wait_inside(struct hold *h)
{
	pthread_mutex_lock(&h->mu);
	while (!h->inside)
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
}

static void hold_release(struct hold *h)
{
	pthread_mutex_lock(&h->mu);
	h->go = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* A committer always waits (so the cleaner, paced, asks before each
 * batch): where the first race window opens, with the pool mutex let go. */
static uint64_t log_waiting(void *ctx)
{
	(void)ctx;
	hold_here(&at_log);
	return stub_log_last();
}

static void batch_hook(void *ctx)
{
	(void)ctx;
	hold_here(&at_batch);
}

static const ut_log_hooks hooks = { .log_commit = stub_log_commit,
				    .log_flush_to = log_to,
				    .log_write_to = log_to,
				    .log_waiting = log_waiting };

/* Pages written unprotected so far (see the top). */
static uint64_t unprotected(ut_pager *p)
{
	ut_io_counters c;

	ut_pager_counters_copy(p, &c);
	return c.page_writes - c.dw_page_writes;
}

static uint64_t protected_writes(ut_pager *p)
{
	ut_io_counters c;

	ut_pager_counters_copy(p, &c);
	return c.dw_page_writes;
}

static ut_pager *reopen(ut_simdisk *disk, size_t frames)
{
	ut_pager_config cfg = { .cache_bytes = frames * UT_PAGE_SIZE,
				.protect = UT_PROTECT_DOUBLEWRITE, .create = 1,
				.lazy = 1, .hooks = &hooks };
	ut_pager *p;

	assert_int_equal(ut_pager_open(ut_simdisk_vfs(disk), DATA, &cfg, &p),
			 UT_OK);
	return p;
}

/* A lazy doublewrite pager of frames frames holding npages (at most
 * frames - 2) clean overflow pages, no cleaner thread yet. */
static ut_pager *rig_open(ut_simdisk **disk, size_t frames, int npages)
{
	ut_pager *p;

	*disk = ut_simdisk_new();
	assert_non_null(*disk);
	p = reopen(*disk, frames);
	assert_int_equal(ut_pager_begin(p), UT_OK);
	for (int i = 0; i < npages; i++) {
		ut_pg *pg;

		assert_int_equal(ut_pager_alloc(p, UT_PT_OVERFLOW, &pg), UT_OK);
		if (i == 0)
			base = pg->pgno;
		assert_int_equal(pg->pgno, base + (uint32_t)i);
		ut_page_set_aux(pg->data, 1); /* bytes used: a valid overflow page */
		ut_pager_release(p, pg);
	}
	assert_int_equal(ut_pager_commit(p, 0), UT_OK);
	assert_int_equal(ut_pager_checkpoint(p), UT_OK);
	assert_int_equal(ut_pager_dirty_frames(p), 0);
	ut_pager_set_batch_hook(p, batch_hook, NULL);
	return p;
}

/* Change every rig page in one transaction: past the dirty mark, so the
 * cleaner starts a batch at the commit's end. */
static void dirty_all(ut_pager *p, int npages)
{
	assert_int_equal(ut_pager_begin(p), UT_OK);
	for (int i = 0; i < npages; i++) {
		ut_pg *pg;

		assert_int_equal(ut_pager_get(p, base + (uint32_t)i, &pg), UT_OK);
		assert_int_equal(ut_pager_write(p, pg), UT_OK);
		pg->data[UT_PG_HDR]++;
		ut_pager_release(p, pg);
	}
	assert_int_equal(ut_pager_commit(p, 0), UT_OK);
}

/* Start the cleaner thread (a checkpoint_async does) with nothing dirty,
 * and wait until it has finished that checkpoint: counted from the count
 * before it, since rig_open's own checkpoint already counted one (waiting
 * for "more than 0" returned at once, and a test's checkpoint_start then
 * found this one still pending on a slow machine: again = 1). */
static void start_cleaner(ut_pager *p)
{
	int started;
	uint64_t b, c0, c, w;

	ut_pager_cleaner_stats(p, &b, &c0, &w);
	c = c0;
	assert_int_equal(ut_pager_checkpoint_async(p, &started), UT_OK);
	assert_int_equal(started, 1);
	for (int i = 0; i < 10000 && c == c0; i++) {
		ut_pager_cleaner_stats(p, &b, &c, &w);
		usleep(1000);
	}
	assert_true(c > c0);
}

/* A checkpoint begins while the cleaner, about to copy a batch it had
 * (before the fix) already decided to write lazily, lets a commit's log
 * flush go first: the batch and the rest are written protected. */
static void test_checkpoint_before_copies(void **s)
{
	ut_simdisk *disk;
	ut_pager *p = rig_open(&disk, FRAMES, NPAGES);
	uint64_t ticket, u0, u1;
	int again;

	(void)s;
	start_cleaner(p);
	hold_arm(&at_log);
	dirty_all(p, NPAGES); /* the cleaner starts a batch, held */
	hold_wait_inside(&at_log);
	u0 = unprotected(p);
	assert_int_equal(ut_pager_checkpoint_start(p, &ticket, &again), UT_OK);
	assert_int_equal(again, 0);
	hold_release(&at_log);
	assert_int_equal(ut_pager_checkpoint_wait(p, ticket), UT_OK);
	u1 = unprotected(p);
	print_message("pages written unprotected after the checkpoint began: "
		      "%llu\n", (unsigned long long)(u1 - u0));
	assert_int_equal(u1 - u0, 0);
	assert_int_equal(ut_pager_dirty_frames(p), 0);
	assert_int_equal(ut_pager_close(p), UT_OK);
	ut_simdisk_free(disk);
}

/* A checkpoint begins while a lazy batch (rightly lazy: decided before
 * it) is in flight: the checkpoint writes those pages again, protected --
 * every one of the NPAGES pages it needs, and its header. */
static void test_checkpoint_during_lazy_batch(void **s)
{
	ut_simdisk *disk;
	ut_pager *p = rig_open(&disk, FRAMES, NPAGES);
	uint64_t ticket, d0, d1, u0, u1;
	int again;

	(void)s;
	start_cleaner(p);
	hold_arm(&at_batch);
	dirty_all(p, NPAGES);
	hold_wait_inside(&at_batch);
	u0 = unprotected(p);
	d0 = protected_writes(p);
	assert_int_equal(ut_pager_checkpoint_start(p, &ticket, &again), UT_OK);
	assert_int_equal(again, 0);
	hold_release(&at_batch);
	assert_int_equal(ut_pager_checkpoint_wait(p, ticket), UT_OK);
	u1 = unprotected(p);
	d1 = protected_writes(p);
	print_message("in flight, unprotected: %llu; written protected since "
		      "the checkpoint began: %llu\n",
		      (unsigned long long)(u1 - u0), (unsigned long long)(d1 - d0));
	assert_true(u1 - u0 > 0); /* the held batch was lazy */
	assert_true(d1 - d0 >= NPAGES + 1);
	assert_int_equal(ut_pager_dirty_frames(p), 0);
	assert_int_equal(ut_pager_close(p), UT_OK);
	ut_simdisk_free(disk);
}

/* Redo of a change to each of 40 pages in a cache of 8 frames (evictions
 * write inline, redo having no cleaner thread) on a sync=0 pager: none
 * of its writes is lazy. */
static void test_redo_evictions_protected(void **s)
{
	ut_simdisk *disk;
	ut_pager *p = rig_open(&disk, 64, 40);
	uint64_t u0, lsn;
	uint8_t b = 0x5a;

	(void)s;
	assert_int_equal(ut_pager_close(p), UT_OK);
	p = reopen(disk, 8); /* as recovery's open: no cleaner thread */
	lsn = ut_pager_lsn(p);
	u0 = unprotected(p);
	assert_int_equal(ut_pager_redo_begin(p), UT_OK);
	for (int i = 0; i < 40; i++)
		assert_int_equal(ut_pager_redo(p, ++lsn, base + (uint32_t)i,
					       UT_PG_HDR, 1, &b), UT_OK);
	assert_int_equal(ut_pager_redo_end(p), UT_OK);
	print_message("redo wrote %llu pages unprotected\n",
		      (unsigned long long)(unprotected(p) - u0));
	assert_int_equal(unprotected(p) - u0, 0);
	assert_true(protected_writes(p) > 0);
	ut_pager_set_lsn(p, lsn);
	assert_int_equal(ut_pager_checkpoint(p), UT_OK);
	assert_int_equal(ut_pager_close(p), UT_OK);
	ut_simdisk_free(disk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoint_before_copies),
		cmocka_unit_test(test_checkpoint_during_lazy_batch),
		cmocka_unit_test(test_redo_evictions_protected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * engine/cleaner.c - writing dirty pages: the WAL rule, page-write
 * batches, and the page-cleaner thread.
 *
 * Contract (pager.h, "Page cleaner" and "WAL rule"): a batch copies up to
 * CLEAN_BATCH committed versions under p->mu (the thread: as many as its
 * pacer allows, pace.h), then (the thread) writes them through the flush
 * strategy without it, after the log is durable (or, lazily, written) up
 * to their LSNs and the page-write bound covers them (bound.c); a frame
 * becomes clean only if no commit replaced its version meanwhile.  Before
 * a paced batch the thread lets a log flush that a committer waits for go
 * first.  Inline batches are neither paced nor timed: their I/O order
 * stays deterministic (the crash tests).  A failed write makes the handle
 * fatal, its error returned once.  flush_mu serializes strategy calls and
 * is always taken before p->mu.
 */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pager_int.h"

static int ensure_fpages(ut_pager *p, size_t n)
{
	if (n <= p->capfpages)
		return UT_OK;
	size_t c = p->capfpages ? p->capfpages : 64;
	while (c < n)
		c *= 2;
	ut_flush_page *np = realloc(p->fpages, c * sizeof(*np));
	if (!np)
		return UT_ENOMEM;
	p->fpages = np;
	p->capfpages = c;
	return UT_OK;
}

/* WAL rule: the log must be durable up to maxlsn before a page stamped
 * with it is written; for a lazy write, handed to the OS is enough
 * (sync=0).  Called by whoever holds the right to flush (flush_mu once the
 * cleaner runs, else the pool mutex). */
int pager_wal_rule(ut_pager *p, uint64_t maxlsn, unsigned flags)
{
	int rc;

	if (!p->hooks.log_flush_to || p->recovering || maxlsn <= p->durable_lsn)
		return UT_OK;
	if ((flags & UT_FLUSH_LAZY) && p->hooks.log_write_to) {
		if (maxlsn <= p->written_lsn)
			return UT_OK;
		rc = p->hooks.log_write_to(p->hooks.ctx, maxlsn);
		if (rc == UT_OK)
			p->written_lsn = maxlsn;
		return rc;
	}
	rc = p->hooks.log_flush_to(p->hooks.ctx, maxlsn);
	if (rc == UT_OK)
		p->durable_lsn = maxlsn;
	return rc;
}

/* A page write failed: the handle refuses writes from now on.  Its code
 * is returned once (then UT_EFATAL), as for any failed call: to the caller
 * that hit it, or -- when the cleaner thread hit it -- to the first thread
 * that waits for the cleaner, with the cleaner's detail. */
void pager_note_fatal(ut_pager *p, int rc)
{
	if (!fatal_now(p)) {
		pager_record_fatal(p, rc);
		p->pager_fatal_rc = pthread_equal(pthread_self(), p->cleaner) &&
			      p->cleaner_running ? rc : 0;
	}
	__atomic_store_n(&p->fatal, UT_EFATAL, __ATOMIC_RELEASE);
	pager_wake_all(p);
}

/* The handle just became fatal: wake every thread that waits on the pager
 * (for a frame or a checkpoint: done_cv; a page load: load_cv; the
 * cleaner: work_cv), each of which looks at fatal_now when it wakes.
 * Whoever sets fatal calls this with p->mu held, so no waiter can check
 * fatal_now before the store and sleep after the broadcast. */
void pager_wake_all(ut_pager *p)
{
	pthread_cond_broadcast(&p->done_cv);
	pthread_cond_broadcast(&p->load_cv);
	pthread_cond_broadcast(&p->work_cv);
}

/* The handle is about to go fatal (first time only, p->mu held): keep
 * why -- the calling thread's detail of the failure (rc), which every
 * later UT_EFATAL repeats. */
void pager_record_fatal(ut_pager *p, int rc)
{
	const char *d = ut_errdetail();

	if (d && d[0])
		snprintf(p->fatal_detail, sizeof(p->fatal_detail), "%s", d);
	else
		snprintf(p->fatal_detail, sizeof(p->fatal_detail), "%s: %s",
			 p->path, ut_strerror(rc));
}

/* ut_errdetail for a UT_EFATAL: the handle refuses, and why.  p->mu held,
 * or poisoned seen set (fatal_detail no longer changes). */
void pager_fatal_errdetail(ut_pager *p)
{
	ut_set_errdetail("%s: the handle refuses further use until reopened: "
			 "it failed earlier: %s", p->path,
			 p->fatal_detail[0] ? p->fatal_detail : "cause unknown");
}

/* The error that made the handle fatal, once (with its own detail), then
 * UT_EFATAL; p->mu held (the cleaner sets it under the mutex). */
int pager_fatal_rc(ut_pager *p)
{
	int rc = p->pager_fatal_rc ? p->pager_fatal_rc : UT_EFATAL;

	if (rc == UT_EFATAL)
		pager_fatal_errdetail(p);
	else if (p->fatal_detail[0])
		ut_set_errdetail("%s", p->fatal_detail);
	p->pager_fatal_rc = 0;
	return rc;
}

/* Write frames fs[0..n) through the strategy; they become clean.  Used
 * where the caller itself must see the pages written (a log-less sync
 * commit: the writer's private copies; the inline shrink: at most
 * EVICT_BATCH published ones); everything else goes through
 * pager_clean_batch.  A published version never changes, its CRC
 * included (readers read it without p->mu): such a page is sealed and
 * written as a copy.  p->mu held. */
int pager_flush_frames(ut_pager *p, struct frame **fs, size_t n, unsigned flags)
{
	uint64_t maxlsn = 0;
	size_t ncopy = 0;
	int rc;

	if (fatal_now(p)) {
		pager_fatal_errdetail(p);
		return UT_EFATAL;
	}
	if ((rc = ensure_fpages(p, n)))
		return rc;
	if (!p->sealbuf &&
	    !(p->sealbuf = ut_io_alloc((size_t)EVICT_BATCH * UT_PAGE_SIZE)))
		return UT_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t l = ut_page_lsn(fs[i]->pg.data);
		if (l > maxlsn)
			maxlsn = l;
	}
	if ((rc = pager_bound_before_write(p, maxlsn, maxlsn, flags)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		uint8_t *b = fs[i]->pg.data;

		if (fs[i]->cur && b == fs[i]->cur->pg.data) {
			assert(ncopy < EVICT_BATCH);
			b = memcpy(p->sealbuf + ncopy++ * (size_t)UT_PAGE_SIZE,
				   b, UT_PAGE_SIZE);
		}
		ut_page_seal(b);
		p->fpages[i].pgno = fs[i]->pg.pgno;
		p->fpages[i].buf = b;
	}
	rc = p->fl->ops->write_pages(p->fl, p->wfile, p->fpages, n, flags);
	if (rc) {
		pager_note_fatal(p, rc);
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		fs[i]->dirty = 0;
	return UT_OK;
}

/* ---- the page cleaner ------------------------------------------------- */

/* Above this many dirty frames the cleaner writes in the background:
 * three quarters of the cache, leaving a quarter clean for eviction to
 * take without waiting.  A page written while commits still change it is
 * written again before it leaves the cache: the more dirty pages the
 * cache holds, the more changes each write carries.  With half, the VM's
 * bandwidth-bound workload 1 (bench/RESULTS.md) wrote 14.5 KiB of pages
 * per commit in atomic mode, with three quarters 13.5 KiB, for 5% more
 * commits/s and no worse a p99. */
size_t pager_dirty_high(const ut_pager *p)
{
	return p->maxframes - p->maxframes / 4;
}

/* The cleaner writes cur, the last committed version, so a page the
 * running transaction changed is flushable too: no-steal holds by
 * construction (the private copy never reaches the file before commit). */
static int flushable(const ut_pager *p, const struct frame *f)
{
	/* (but redo changes cur in place: not before its transaction ends) */
	return f->valid && f->dirty && !f->flushing && f != p->meta &&
	       !(p->recovering && f->txn);
}

/* A frame the pending checkpoint needs and may write now. */
static int ckpt_flushable(const ut_pager *p, const struct frame *f)
{
	return f->ckpt && flushable(p, f);
}

/* Up to max flushable frames (only those the pending checkpoint needs,
 * with ckpt_only) whose committed version's LSN is at most limit, in clock
 * order from the eviction hand: the frames eviction reaches next are
 * cleaned first.  *newer: flushable frames passed over for limit. */
static size_t pick_some(ut_pager *p, int ckpt_only, size_t max,
			uint64_t limit, size_t *newer)
{
	size_t n = 0, at = p->hand < p->nframes ? p->hand : 0;

	assert(max <= CLEAN_BATCH);
	*newer = 0;
	for (size_t i = 0; i < p->nframes && n < max;
	     i++, at = (at + 1) % p->nframes) {
		struct frame *f = p->frames[at];

		if (!(ckpt_only ? ckpt_flushable(p, f) : flushable(p, f)))
			continue;
		if (ut_page_lsn(f->cur->pg.data) > limit)
			(*newer)++;
		else
			p->snapf[n++] = f;
	}
	return n;
}

/* Pages newer than the page-write bound wait while at least this many
 * older ones make a batch: then raising the bound (a header write and a
 * sync, bound.c) comes once per several batches, not before each. */
#define BOUND_MIN_BATCH (CLEAN_BATCH / 4)

/* The batch to write, up to max pages (the pacer's size): pages the bound
 * on disk covers, or, when they are too few for a batch, any (and the
 * bound is raised before they are written).  Lazy batches make the bound
 * unknown once, whatever their pages. */
static size_t pick_batch(ut_pager *p, int ckpt_only, unsigned flags, size_t max)
{
	uint64_t limit = p->bound_disk;
	size_t newer, n;

	if (flags & UT_FLUSH_LAZY)
		limit = UT_BOUND_UNKNOWN;
	n = pick_some(p, ckpt_only, max, limit, &newer);
	if (newer && n < (max < BOUND_MIN_BATCH ? max : BOUND_MIN_BATCH))
		n = pick_some(p, ckpt_only, max, UT_BOUND_UNKNOWN, &newer);
	return n;
}

static int by_pgno(const void *a, const void *b)
{
	uint32_t x = ((const ut_flush_page *)a)->pgno;
	uint32_t y = ((const ut_flush_page *)b)->pgno;

	return x < y ? -1 : x > y;
}

static int snap_alloc(ut_pager *p)
{
	if (p->snap)
		return UT_OK;
	if (ensure_fpages(p, CLEAN_BATCH))
		return UT_ENOMEM;
	p->snap = ut_io_alloc((size_t)CLEAN_BATCH * UT_PAGE_SIZE);
	return p->snap ? UT_OK : UT_ENOMEM;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t log_waiting(const ut_pager *p)
{
	return p->hooks.log_waiting ? p->hooks.log_waiting(p->hooks.ctx) : 0;
}

/* A committer waits for the log: have its flush reach the device before
 * the next batch does, when batches are held below CLEAN_BATCH (a device
 * that writes a whole batch within the target delays no commit by more
 * than the target; there the wait would only slow the cleaner).  A
 * failure is the committer's to report: the batch's own WAL rule follows
 * and fails the same way.  Cleaner thread, without p->mu. */
static void let_commit_first(ut_pager *p)
{
	uint64_t lsn;

	if (p->pace.pages >= CLEAN_BATCH)
		return;
	lsn = log_waiting(p);
	if (lsn) {
		assert(p->hooks.log_flush_to);
		(void)p->hooks.log_flush_to(p->hooks.ctx, lsn);
	}
}

/* sync=0 (p->lazy) writes skip the protection copy and the sync, but not
 * while a checkpoint is pending (its pages must reach the file protected)
 * nor during redo.  p->mu held. */
static unsigned lazy_now(const ut_pager *p)
{
	return p->lazy && !p->ckpt_pending && !p->recovering ? UT_FLUSH_LAZY
							     : 0;
}

/* Write one batch of dirty frames through the strategy.  The pages are
 * copied first, so the writer may change a frame while its copy is being
 * written: a frame becomes clean only if it was not written to since
 * (wgen).  With CLEAN_UNLOCKED (the caller holds flush_mu) the pool mutex
 * is released during the I/O; with CLEAN_PACED (the cleaner thread) the
 * batch is paced too; inline (0), the caller keeps the mutex.  *done =
 * pages written (0: nothing to flush).  Called with p->mu held. */
int pager_clean_batch(ut_pager *p, int ckpt_only, unsigned how, size_t *done)
{
	unsigned flags;
	uint64_t maxlsn = 0, last, req, t0 = 0, ns = 0;
	int drop_lock = (how & CLEAN_UNLOCKED) != 0;
	int paced = (how & CLEAN_PACED) != 0;
	size_t n;
	int rc, waited = 0;

	*done = 0;
	if (paced) {
		/* before the copies, which are then as fresh as can be */
		pthread_mutex_unlock(&p->mu);
		let_commit_first(p);
		pthread_mutex_lock(&p->mu);
	}
	if (fatal_now(p)) {
		/* a round all the same: whoever waits for one looks again,
		 * and sees the handle fatal */
		p->batches++;
		pthread_cond_broadcast(&p->done_cv);
		return pager_fatal_rc(p);
	}
	if ((rc = snap_alloc(p)))
		return rc;
	/* Lazy or protected: decided here, under p->mu with the copies, not
	 * before let_commit_first let the mutex go (a checkpoint begun in
	 * that window had its pages written unprotected).  A checkpoint
	 * that begins while a lazy batch is in flight gets its pages again
	 * (below).  Redo never writes lazily: a crash during recovery must
	 * find every page it wrote whole (the log before it was durable). */
	flags = lazy_now(p);
	req = p->ckpt_req;
	n = pick_batch(p, ckpt_only, flags, paced ? p->pace.pages : CLEAN_BATCH);
	if (!n)
		return UT_OK;
	last = p->lsn;
	for (size_t i = 0; i < n; i++) {
		struct frame *f = p->snapf[i];
		uint8_t *copy = p->snap + i * (size_t)UT_PAGE_SIZE;

		memcpy(copy, f->cur->pg.data, UT_PAGE_SIZE);
		p->snapgen[i] = f->wgen;
		f->flushing = 1;
		if (ut_page_lsn(copy) > maxlsn)
			maxlsn = ut_page_lsn(copy);
		p->fpages[i].pgno = f->pg.pgno;
		p->fpages[i].buf = copy;
	}
	if (drop_lock)
		pthread_mutex_unlock(&p->mu);
	if (paced && p->batch_hook)
		p->batch_hook(p->batch_hook_ctx);
	rc = pager_bound_before_write(p, maxlsn, last, flags);
	if (rc == UT_OK) {
		for (size_t i = 0; i < n; i++)
			ut_page_seal((uint8_t *)p->fpages[i].buf);
		qsort(p->fpages, n, sizeof(*p->fpages), by_pgno);
		if (paced)
			t0 = now_ns();
		rc = p->fl->ops->write_pages(p->fl, p->wfile, p->fpages, n, flags);
		if (paced) {
			ns = now_ns() - t0;
			waited = log_waiting(p) != 0;
		}
	}
	if (drop_lock)
		pthread_mutex_lock(&p->mu);
	if (paced && rc == UT_OK)
		ut_pace_done(&p->pace, n, ns, waited);
	for (size_t i = 0; i < n; i++) {
		struct frame *f = p->snapf[i];

		f->flushing = 0;
		if (rc != UT_OK)
			continue;
		if ((flags & UT_FLUSH_LAZY) && req != p->ckpt_req && f->ckpt) {
			/* written unprotected, and a checkpoint that began
			 * meanwhile needs it: it stays dirty, for the
			 * checkpoint to write through the protection */
			continue;
		}
		if (f->wgen == p->snapgen[i]) {
			f->dirty = 0;
			f->ckpt = 0;
		} else if (req == p->ckpt_req) {
			/* changed since the copy, but the copy is newer than
			 * the checkpoint's start: the checkpoint has its page */
			f->ckpt = 0;
		}
	}
	p->batches++;
	if (rc)
		pager_note_fatal(p, rc);
	*done = n;
	pthread_cond_broadcast(&p->done_cv);
	return rc;
}

static size_t count_dirty(const ut_pager *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nframes; i++)
		n += flushable(p, p->frames[i]);
	return n;
}

/* A thread waits for a batch the cleaner has not yet ended. */
static int batch_owed(const ut_pager *p)
{
	return p->clean_want > p->batches;
}

/* Work the cleaner sleeps until: a waiter's batch, a checkpoint, dirty
 * frames past the mark.  Each is signalled on work_cv by whoever makes it
 * so (pager_make_clean, the checkpoint's start, a commit's end), under
 * p->mu, so none is missed.  Once fatal nothing is to be written, and
 * every waiter was woken by pager_wake_all (each looks at fatal_now). */
static int cleaner_has_work(const ut_pager *p)
{
	if (p->cleaner_stop || fatal_now(p))
		return 0;
	return batch_owed(p) || p->ckpt_pending ||
	       p->ndirty_est > pager_dirty_high(p);
}

/* A batch of n pages was written: the pool, past its bound since a big
 * transaction, gives back the frames it made clean (pool.c pager_shrink,
 * which owes itself another batch while dirty frames keep it past the
 * bound).  Not while a transaction runs: its end shrinks.  Nothing
 * written, nothing freed: no shrink, so frames that stay dirty (in
 * flight, pinned) cannot make batches run back to back.  p->mu held. */
static void shrink_after(ut_pager *p, size_t n)
{
	if (n && !p->in_txn && p->nframes > p->maxframes)
		pager_shrink(p);
}

/* One unit of the cleaner's work: a batch of the pending checkpoint, or
 * its end; else a batch for a waiting thread or over the dirty mark.  The
 * checkpoint goes first: under steady eviction pressure it would otherwise
 * never end, and until it does the log cannot be reclaimed and, with
 * sync=0, no batch may skip the protection copy.  Its batches free frames
 * as well.  flush_mu and p->mu held. */
static void cleaner_step(ut_pager *p)
{
	size_t n, dirty = count_dirty(p);
	int pressed = batch_owed(p) || dirty > pager_dirty_high(p);

	p->ndirty_est = dirty;
	if (p->ckpt_pending) {
		/* every frame it needs is flushable (the cleaner writes the
		 * committed version of a page in a transaction too) */
		if (pager_clean_batch(p, 1, CLEAN_UNLOCKED | CLEAN_PACED,
				      &n) == UT_OK && !n)
			pager_finish_checkpoint(p, 1);
		else
			shrink_after(p, n);
		return;
	}
	if (pressed && pager_clean_batch(p, 0, CLEAN_UNLOCKED | CLEAN_PACED,
					 &n) == UT_OK && n == 0) {
		/* nothing flushable: the round the waiters asked for, so
		 * they look again (and, finding nothing a write frees, take
		 * a frame past the bound: pool.c) */
		p->batches++;
		p->ndirty_est = 0;
		pthread_cond_broadcast(&p->done_cv);
	} else if (pressed) {
		shrink_after(p, n);
	}
}

static void *cleaner_main(void *arg)
{
	ut_pager *p = arg;

	pthread_mutex_lock(&p->mu);
	while (!p->cleaner_stop) {
		if (!cleaner_has_work(p)) {
			pthread_cond_wait(&p->work_cv, &p->mu);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		pthread_mutex_lock(&p->flush_mu);
		pthread_mutex_lock(&p->mu);
		cleaner_step(p);
		pthread_mutex_unlock(&p->flush_mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Is there (or can there now be) a cleaner thread?  Never during redo
 * (the log hooks are off and redo runs without the pool mutex), for a
 * read-only handle, or when the caller asked for inline flushing.
 * p->mu held. */
int pager_cleaner_usable(ut_pager *p)
{
	if (p->cleaner_running)
		return 1;
	if (p->cleaner_inline || p->recovering || p->readonly || fatal_now(p))
		return 0;
	if (snap_alloc(p))
		return 0;
	ut_pace_init(&p->pace, CLEAN_BATCH);
	p->cleaner_stop = 0;
	if (pthread_create(&p->cleaner, NULL, cleaner_main, p)) {
		p->cleaner_inline = 1; /* no thread to be had: flush inline */
		return 0;
	}
	p->cleaner_running = 1;
	return 1;
}

void pager_stop_cleaner(ut_pager *p)
{
	if (!p->cleaner_running)
		return;
	pthread_mutex_lock(&p->mu);
	p->cleaner_stop = 1;
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->cleaner, NULL);
	p->cleaner_running = 0;
}

/* No frame is clean and evictable: have some written.  With the cleaner
 * thread, ask for its next batch -- one that ends after now, so the one
 * in flight (its pages were picked before) will do -- and wait for it
 * (the pool mutex is released meanwhile); inline, write a batch here.
 * The caller looks again afterwards, and asks again if need be.
 * p->mu held. */
int pager_make_clean(ut_pager *p)
{
	size_t n;
	int rc;

	/* Redo writes pages only once recovery knows it will not refuse:
	 * a refused recovery changes no file. */
	if (p->recovering && p->redo_gate && !p->redo_decided) {
		if ((rc = p->redo_gate(p->redo_gate_ctx)))
			return rc;
		p->redo_decided = 1;
	}

	if (fatal_now(p))
		return pager_fatal_rc(p); /* no write will free a frame */
	if (pager_cleaner_usable(p)) {
		uint64_t b = p->batches;

		if (p->clean_want < b + 1)
			p->clean_want = b + 1;
		p->frame_waits++;
		pthread_cond_signal(&p->work_cv);
		while (p->batches == b && !fatal_now(p))
			pthread_cond_wait(&p->done_cv, &p->mu);
		return fatal_now(p) ? pager_fatal_rc(p) : UT_OK;
	}
	if (p->ckpt_unlocked) {
		/* a checkpoint writes without the mutex (checkpoint.c): one
		 * of its batches, then the caller looks again */
		pthread_cond_wait(&p->done_cv, &p->mu);
		return UT_OK;
	}
	return pager_clean_batch(p, 0, 0, &n);
}

void ut_pager_set_batch_hook(ut_pager *p, void (*hook)(void *), void *ctx)
{
	pthread_mutex_lock(&p->mu);
	p->batch_hook = hook;
	p->batch_hook_ctx = ctx;
	pthread_mutex_unlock(&p->mu);
}

void ut_pager_cleaner_stats(ut_pager *p, uint64_t *batches, uint64_t *checkpoints,
			    uint64_t *waits)
{
	pthread_mutex_lock(&p->mu);
	*batches = p->batches;
	*checkpoints = p->checkpoints;
	*waits = p->frame_waits;
	pthread_mutex_unlock(&p->mu);
}

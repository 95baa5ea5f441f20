/*
 * engine/checkpoint.c - checkpoints.
 *
 * Contract (pager.h, "Checkpoint"): a checkpoint starts at the last commit
 * (the writer's lock held, no transaction running): every frame dirty then
 * is marked, and the header image it will write is taken with redo start =
 * that LSN.  Its batches are written by the cleaner (or the caller without
 * one), then made durable, then the log up to the redo point, then the
 * header on its own, then the log may reclaim space.  The header's
 * checkpoint fields live in the pager (hdr_ckpt), not in any version of
 * page 0; the header it writes carries the page-write bound (bound.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pager_int.h"

/* Begin a checkpoint at the last commit: mark every dirty frame as needed
 * by it and take the header image it will write, with redo start = that
 * LSN.  Taken now, under the writer's exclusion (no transaction is
 * running), the image describes the database exactly at the redo point;
 * later commits are in the log after it.  p->mu held. */
static void ckpt_request(ut_pager *p)
{
	uint8_t *h = p->ckpt_hdr;
	uint64_t redo = p->lsn;
	uint32_t clean = p->closing ? 1u : 0u, mode = (uint32_t)ut_pager_protect(p);

	for (size_t i = 0; i < p->nframes; i++) {
		struct frame *f = p->frames[i];

		f->ckpt = f->valid && f->dirty && f != p->meta;
	}
	memcpy(h, p->meta->cur->pg.data, UT_PAGE_SIZE);
	memcpy(h + UT_META_CKPT_LSN, p->hdr_ckpt, sizeof(p->hdr_ckpt));
	p->ckpt_write_hdr = p->meta->dirty || ut_ld64(h + UT_META_CKPT_LSN) != redo ||
			    __atomic_load_n(&p->disk_format, __ATOMIC_ACQUIRE) !=
				    pager_hdr_format(p, h) ||
			    ut_ld64(h + UT_META_MAXLSN) != redo ||
			    ut_ld32(h + UT_META_MODE) != mode ||
			    ut_ld32(h + UT_META_CLEAN) != clean;
	ut_st64(h + UT_META_CKPT_LSN, redo);
	ut_st64(h + UT_META_MAXLSN, redo);
	ut_st32(h + UT_META_MODE, mode);
	ut_st32(h + UT_META_CLEAN, clean);
	/* a format-1 header becomes format 2 (the bound is set at the end),
	 * or 3 with a catalog (pager.h) */
	ut_st32(h + UT_META_VERSION, pager_hdr_format(p, h));
	p->ckpt_meta_gen = p->meta->wgen;
	p->ckpt_redo = redo;
	/* from here every page's next change is its first since this
	 * checkpoint's redo point: logged whole in fullpage mode */
	__atomic_store_n(&p->fpi_redo, redo, __ATOMIC_RELEASE);
	p->ckpt_pending = 1;
	p->ckpt_req++;
}

/* The header's checkpoint fields are durable on disk: remember them (the
 * versions of page 0 keep what they had, so the fields never differ
 * between a transaction's pre- and post-image and are never logged). */
static void meta_set_ckpt_fields(ut_pager *p)
{
	memcpy(p->hdr_ckpt, p->ckpt_hdr + UT_META_CKPT_LSN, sizeof(p->hdr_ckpt));
	if (p->meta->wgen == p->ckpt_meta_gen)
		p->meta->dirty = 0;
}

/* Every page the checkpoint needed is written: make them durable, then
 * the log up to the redo point, then the header image on its own (it must
 * never be durable before the pages it vouches for), then let the log
 * reclaim space.  p->mu held (released during the I/O with drop_lock). */
int pager_finish_checkpoint(ut_pager *p, int drop_lock)
{
	ut_flush_page hp = { 0, p->ckpt_hdr };
	uint64_t redo = p->ckpt_redo;
	int rc;

	if (drop_lock)
		pthread_mutex_unlock(&p->mu);
	rc = p->fl->ops->write_pages(p->fl, p->wfile, NULL, 0, UT_FLUSH_DURABLE);
	if (rc == UT_OK)
		rc = pager_wal_rule(p, redo, 0);
	if (rc == UT_OK) {
		/* Every page written so far is durable and so is the log up
		 * to redo: the bound is known again (lazy writes made it
		 * unknown), and taken now, not at the request, so that it
		 * covers the batches written since. */
		uint64_t b = pager_bound_for_checkpoint(p, redo);

		ut_st64(p->ckpt_hdr + UT_META_PAGEBOUND, b);
		if (b != p->bound_disk)
			p->ckpt_write_hdr = 1;
	}
	/* a format raise since the request (its image said 2): never
	 * write the header back below it */
	if (ut_ld32(p->ckpt_hdr + UT_META_VERSION) < p->format_floor) {
		ut_st32(p->ckpt_hdr + UT_META_VERSION, p->format_floor);
		p->ckpt_write_hdr = 1;
	}
	if (rc == UT_OK && p->ckpt_write_hdr) {
		ut_page_seal(p->ckpt_hdr);
		rc = p->fl->ops->write_pages(p->fl, p->wfile, &hp, 1, UT_FLUSH_DURABLE);
		if (rc == UT_OK)
			pager_bound_header_written(p, p->ckpt_hdr);
	}
	if (drop_lock)
		pthread_mutex_lock(&p->mu);
	if (rc == UT_OK)
		meta_set_ckpt_fields(p);
	if (rc == UT_OK && p->hooks.log_checkpoint_done) {
		if (drop_lock)
			pthread_mutex_unlock(&p->mu);
		rc = p->hooks.log_checkpoint_done(p->hooks.ctx, redo);
		if (drop_lock)
			pthread_mutex_lock(&p->mu);
	}
	if (rc)
		pager_note_fatal(p, rc);
	else
		p->checkpoints++;
	p->ckpt_pending = 0;
	p->ckpt_rc = rc;
	p->ckpt_done = p->ckpt_req;
	pthread_cond_broadcast(&p->done_cv);
	return rc;
}

/* The checkpoint, run to its end by the calling thread (no cleaner
 * thread), in whole batches: no commit runs meanwhile (the caller is the
 * writer), so nothing is to be paced.  With how = CLEAN_UNLOCKED the
 * caller holds flush_mu and the pool mutex is let go over every write
 * and sync, so readers never wait for them (pager.h); a thread that would
 * write inline meanwhile waits (ckpt_unlocked).  Else (inline_flush,
 * redo) p->mu is held throughout.  p->mu held. */
static int run_checkpoint_here(ut_pager *p, unsigned how)
{
	size_t n;
	int rc;

	p->ckpt_unlocked = how == CLEAN_UNLOCKED;
	do {
		rc = pager_clean_batch(p, 1, how, &n);
	} while (rc == UT_OK && n);
	if (rc)
		p->ckpt_pending = 0;
	else
		rc = pager_finish_checkpoint(p, how == CLEAN_UNLOCKED);
	p->ckpt_unlocked = 0;
	pthread_cond_broadcast(&p->done_cv);
	return rc;
}

/* May a checkpoint run here write without the pool mutex?  Only when no
 * one writes pages but under flush_mu: a cleaner thread, if one starts
 * meanwhile, takes it; inline_flush and redo write under p->mu alone. */
static int may_unlock(const ut_pager *p)
{
	return !p->cleaner_inline && !p->recovering && !p->readonly;
}

static int ckpt_check(ut_pager *p)
{
	if (p->in_txn)
		return UT_EBUSY;
	if (p->readonly) {
		ut_set_errdetail("%s: opened read-only", p->path);
		return UT_EREADONLY;
	}
	return UT_OK; /* (callers check fatal_now under the mutex) */
}

/* Checkpoint order: (1) every page dirty at the last commit (p->lsn)
 * written through the strategy, each batch after the log is durable up to
 * its pages' LSNs, then made durable, (2) the log durable up to p->lsn,
 * (3) the header image taken at the start, with redo_lsn = p->lsn (and
 * max LSN, mode, clean flag), DURABLE, as a separate write so it can never
 * be durable before the pages it vouches for, (4)
 * hooks.log_checkpoint_done(redo_lsn).  With the cleaner thread it does
 * the work and this waits; without one, this thread does it, without
 * the pool mutex during its I/O (but for inline_flush and redo). */
int ut_pager_checkpoint_start(ut_pager *p, uint64_t *ticket, int *again)
{
	int rc, have_flush = 0;

	*ticket = 0;
	*again = 0;
	if ((rc = ckpt_check(p)))
		return rc;
	/* open's checkpoint comes after recovery accepted the log: write its
	 * torn-page repairs now (single-threaded then), even when no batch
	 * follows */
	if ((rc = pager_apply_repairs(p)))
		return rc;
	pthread_mutex_lock(&p->mu);
	if (!p->cleaner_running && may_unlock(p)) {
		/* flush_mu comes before p->mu: take both in order, then look
		 * again (a thread may have started the cleaner meanwhile) */
		pthread_mutex_unlock(&p->mu);
		pthread_mutex_lock(&p->flush_mu);
		pthread_mutex_lock(&p->mu);
		have_flush = 1;
	}
	if (fatal_now(p)) {
		rc = pager_fatal_rc(p);
	} else if (!p->cleaner_running) {
		ckpt_request(p);
		rc = run_checkpoint_here(p, have_flush ? CLEAN_UNLOCKED : 0);
	} else if (p->ckpt_pending) {
		*ticket = p->ckpt_req; /* an older one: wait, then again */
		*again = 1;
	} else {
		ckpt_request(p);
		*ticket = p->ckpt_req;
		pthread_cond_signal(&p->work_cv);
	}
	pthread_mutex_unlock(&p->mu);
	if (have_flush)
		pthread_mutex_unlock(&p->flush_mu);
	return rc;
}

int ut_pager_checkpoint_wait(ut_pager *p, uint64_t ticket)
{
	int rc;

	pthread_mutex_lock(&p->mu);
	while (p->ckpt_done < ticket && !fatal_now(p))
		pthread_cond_wait(&p->done_cv, &p->mu);
	rc = fatal_now(p) ? pager_fatal_rc(p) : p->ckpt_rc;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int ut_pager_checkpoint(ut_pager *p)
{
	uint64_t ticket;
	int rc, again;

	do {
		rc = ut_pager_checkpoint_start(p, &ticket, &again);
		if (rc == UT_OK && ticket)
			rc = ut_pager_checkpoint_wait(p, ticket);
	} while (rc == UT_OK && again);
	return rc;
}

int ut_pager_checkpoint_async(ut_pager *p, int *started)
{
	int rc;

	*started = 0;
	if ((rc = ckpt_check(p)))
		return rc;
	pthread_mutex_lock(&p->mu);
	if (fatal_now(p)) {
		rc = pager_fatal_rc(p);
		pthread_mutex_unlock(&p->mu);
		return rc;
	}
	if (!pager_cleaner_usable(p)) {
		pthread_mutex_unlock(&p->mu);
		*started = 1;
		return ut_pager_checkpoint(p);
	}
	if (!p->ckpt_pending) {
		ckpt_request(p);
		*started = 1;
		pthread_cond_signal(&p->work_cv);
	}
	pthread_mutex_unlock(&p->mu);
	return UT_OK;
}

uint64_t ut_pager_redo_lsn(ut_pager *p)
{
	return hdr_field64(p, UT_META_CKPT_LSN);
}
uint64_t ut_pager_header_max_lsn(ut_pager *p)
{
	uint64_t a = hdr_field64(p, UT_META_CKPT_LSN),
		 b = hdr_field64(p, UT_META_MAXLSN);
	return a > b ? a : b;
}

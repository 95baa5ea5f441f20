/*
 * engine/bound.c - the page-write bound B in the database header (pager.h,
 * "Page-write bound"): the durable promise that no page in the data file
 * or the -dw file carries an LSN above B, so that recovery's evidence of
 * how far the log was durable is one number, not a read of every page.
 *
 * Contract: whoever writes pages (the cleaner under flush_mu, else the
 * caller under p->mu) calls pager_bound_before_write before handing a
 * batch to the strategy; it raises B durably first when the batch needs
 * it.  B is raised to a commit LSN the log is made durable to first, so an
 * intact log never ends below B.  Lazy (sync=0) writes hand the log to the
 * OS only: they set B unknown first (recovery then reads every page), and
 * the next checkpoint, which makes both files durable, sets it again.
 * Raises cost a header write and a sync: the cleaner holds back pages newer
 * than B while enough older ones are dirty (cleaner.c), so that raises come
 * once per several batches, not with each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pager_int.h"

static uint64_t hi_now(const ut_pager *p)
{
	return __atomic_load_n(&p->bound_hi, __ATOMIC_ACQUIRE);
}

static void hi_raise(ut_pager *p, uint64_t lsn)
{
	if (lsn > hi_now(p))
		__atomic_store_n(&p->bound_hi, lsn, __ATOMIC_RELEASE);
}

/* bound_known: read by page loads without a lock */
static void set_known(ut_pager *p, int known)
{
	__atomic_store_n(&p->bound_known, known, __ATOMIC_RELEASE);
}

/* The header's bound, or UNKNOWN for format 1 and for a bound below what
 * the header itself shows was written (its checkpoint's LSNs, its own
 * page LSN): every checkpoint writes a bound at least as high, so such a
 * header was changed by someone else, and recovery reads every page
 * rather than trust it. */
static uint64_t hdr_bound(const uint8_t *hdr)
{
	uint64_t b = ut_ld64(hdr + UT_META_PAGEBOUND);

	if (ut_ld32(hdr + UT_META_VERSION) < 2 ||
	    b < ut_ld64(hdr + UT_META_CKPT_LSN) ||
	    b < ut_ld64(hdr + UT_META_MAXLSN) || b < ut_page_lsn(hdr))
		return UT_BOUND_UNKNOWN;
	return b;
}

/* hdr_disk becomes hdr (the page writer, or open). */
static void set_disk_hdr(ut_pager *p, const uint8_t *hdr)
{
	if (hdr != p->hdr_disk)
		memcpy(p->hdr_disk, hdr, UT_PAGE_SIZE);
	__atomic_store_n(&p->disk_format, ut_ld32(hdr + UT_META_VERSION),
			 __ATOMIC_RELEASE);
}

void pager_bound_open(ut_pager *p, const uint8_t *hdr)
{
	set_disk_hdr(p, hdr);
	p->bound_disk = p->bound_open = hdr_bound(hdr);
	/* A clean close left no page newer than its checkpoint; after a
	 * crash recovery supplies the evidence (ut_pager_bound_evidence). */
	if (ut_ld32(hdr + UT_META_CLEAN) || p->created) {
		int known = p->bound_disk != UT_BOUND_UNKNOWN;

		hi_raise(p, known ? p->bound_disk : ut_ld64(hdr + UT_META_MAXLSN));
		set_known(p, known);
	}
}

uint64_t ut_pager_page_bound(ut_pager *p) { return p->bound_open; }

void ut_pager_bound_evidence(ut_pager *p, uint64_t lsn)
{
	hi_raise(p, lsn);
	set_known(p, 1);
}

int pager_bound_check_read(ut_pager *p, const uint8_t *page, uint32_t pgno)
{
	uint64_t hi = hi_now(p);

	if (!__atomic_load_n(&p->bound_known, __ATOMIC_ACQUIRE) ||
	    ut_page_lsn(page) <= hi)
		return UT_OK;
	ut_set_errdetail("%s: page %u carries LSN %llu, above the page-write "
			 "bound %llu the database header vouches for: the "
			 "header or the page is damaged", p->path, pgno,
			 (unsigned long long)ut_page_lsn(page),
			 (unsigned long long)hi);
	return UT_ECORRUPT;
}

/* Page 0 as the disk has it, with bound b, made durable: it must be on
 * disk before any page it covers is written. */
static int write_bound(ut_pager *p, uint64_t b)
{
	ut_flush_page hp = { 0, p->bound_buf };
	int rc;

	memcpy(p->bound_buf, p->hdr_disk, UT_PAGE_SIZE);
	ut_st32(p->bound_buf + UT_META_VERSION, pager_hdr_format(p, p->bound_buf));
	ut_st64(p->bound_buf + UT_META_PAGEBOUND, b);
	ut_page_seal(p->bound_buf);
	/* OWN: unsafe need not write back the pages it defers (the
	 * data-file sync did: -13..-27% commits/s in bench_durable) */
	rc = p->fl->ops->write_pages(p->fl, p->wfile, &hp, 1,
				     UT_FLUSH_DURABLE | UT_FLUSH_OWN);
	if (rc == UT_OK) {
		pager_bound_header_written(p, p->bound_buf);
		ut_ctr_add(&p->ctr.bound_writes, 1);
	}
	return rc;
}

/* B is unknown (format 1 before its upgrade, or lazy writes since the
 * last checkpoint): recovery reads every page, so any write is covered. */
static int covered(const ut_pager *p, uint64_t maxlsn, unsigned flags)
{
	if (p->bound_disk == UT_BOUND_UNKNOWN)
		return 1;
	return !(flags & UT_FLUSH_LAZY) && maxlsn <= p->bound_disk;
}

/* The batch's pages reach up to maxlsn; last is the last commit's LSN.
 * The WAL rule first (the log durable, or for a lazy batch written, up to
 * what the batch needs), then B: raised to last rather than to maxlsn,
 * with the log made durable that far, so that the next batches' pages are
 * covered too. */
int pager_bound_before_write(ut_pager *p, uint64_t maxlsn, uint64_t last,
			     unsigned flags)
{
	uint64_t target = last > maxlsn ? last : maxlsn;
	int rc;

	/* open's torn-page repairs go first (their copies' slots in -dw are
	 * about to be reused); by now recovery's gate has passed */
	if ((rc = pager_apply_repairs(p)))
		return rc;
	hi_raise(p, maxlsn);
	if (covered(p, maxlsn, flags))
		return pager_wal_rule(p, maxlsn, flags);
	if (flags & UT_FLUSH_LAZY) {
		if ((rc = pager_wal_rule(p, maxlsn, flags)) == UT_OK)
			rc = write_bound(p, UT_BOUND_UNKNOWN);
	} else if ((rc = pager_wal_rule(p, target, flags)) == UT_OK) {
		rc = write_bound(p, target);
	}
	assert(rc || covered(p, maxlsn, flags));
	return rc;
}

/* The bound a checkpoint's header carries: every page written since open
 * and the evidence recovery had (bound_hi), and the redo point the
 * checkpoint makes the log durable to.  Never below a B already durable. */
uint64_t pager_bound_for_checkpoint(ut_pager *p, uint64_t redo)
{
	uint64_t b = hi_now(p);

	if (redo > b)
		b = redo;
	if (p->bound_disk != UT_BOUND_UNKNOWN && p->bound_disk > b)
		b = p->bound_disk;
	return b;
}

/* Format 3 reaches the log only with the header durable as 3 first, so
 * that a build of format 2 never opens a file whose log holds catalog
 * changes (pager.h, "Format 3").  The header is rewritten as the disk has
 * it, with only its version raised. */
int ut_pager_raise_format(ut_pager *p)
{
	ut_flush_page hp = { 0, p->bound_buf };
	int rc = UT_OK;

	pthread_mutex_lock(&p->flush_mu);
	pthread_mutex_lock(&p->mu);
	if (ut_ld32(p->hdr_disk + UT_META_VERSION) < UT_FORMAT_VERSION) {
		memcpy(p->bound_buf, p->hdr_disk, UT_PAGE_SIZE);
		ut_st32(p->bound_buf + UT_META_VERSION, UT_FORMAT_VERSION);
		ut_page_seal(p->bound_buf);
		rc = p->fl->ops->write_pages(p->fl, p->wfile, &hp, 1,
					     UT_FLUSH_DURABLE | UT_FLUSH_OWN);
		if (rc == UT_OK)
			pager_bound_header_written(p, p->bound_buf);
	}
	if (rc == UT_OK)
		p->format_floor = UT_FORMAT_VERSION;
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->flush_mu);
	return rc;
}

void pager_bound_header_written(ut_pager *p, const uint8_t *hdr)
{
	set_disk_hdr(p, hdr);
	p->bound_disk = hdr_bound(hdr);
	if (p->bound_disk != UT_BOUND_UNKNOWN)
		set_known(p, 1);
}

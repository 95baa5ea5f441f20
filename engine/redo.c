/*
 * engine/redo.c - recovery's side of the pager: the highest page LSN in
 * the files (the full read, where the page-write bound is unknown:
 * bound.c), redo of committed deltas, and their pages read ahead.
 *
 * Contract (pager.h, "Redo"): redo runs at open, on one thread, before the
 * handle exists for any other; deltas change the pages' frames in place
 * and are stamped with their LSN when their transaction ends.  A page redo
 * reads is checked against recovery's evidence (bound.c) as well as its
 * checksum.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flush_doublewrite.h"
#include "pager_int.h"

/* Raise *max to the LSN of every page of f that passes its checksum: pages
 * in place (off 0, stride one page) or double-write copies. */
static int max_lsn_in(ut_pager *p, ut_file *f, uint64_t first, uint64_t stride,
		      uint64_t count, uint8_t *buf, uint64_t *max, uint64_t *where)
{
	for (uint64_t i = 0; i < count; i++) {
		int64_t n = ut_file_read(f, buf, UT_PAGE_SIZE, first + i * stride);

		if (n < 0)
			return (int)n;
		ut_ctr_add(&p->ctr.scan_reads, 1);
		if (n == UT_PAGE_SIZE && ut_page_checksum_ok(buf) &&
		    ut_page_lsn(buf) > *max) {
			*max = ut_page_lsn(buf);
			*where = i;
		}
	}
	return UT_OK;
}

int ut_pager_max_page_lsn(ut_pager *p, uint64_t *max, char *what, size_t wn)
{
	uint8_t *buf = ut_io_alloc(UT_PAGE_SIZE);
	uint64_t size, dmax = 0, dpg = 0, cmax = 0, cslot = 0;
	ut_file *dw = NULL;
	char *dwpath = NULL;
	int rc;

	*max = 0;
	if (!buf)
		return UT_ENOMEM;
	rc = ut_file_size(p->rfile, &size);
	if (rc == UT_OK)
		rc = max_lsn_in(p, p->rfile, 0, UT_PAGE_SIZE, size / UT_PAGE_SIZE, buf,
				&dmax, &dpg);
	if (rc == UT_OK)
		rc = pager_dw_name(p->path, &dwpath);
	if (rc == UT_OK && p->vfs->exists(p->vfs, dwpath) == 1 &&
	    p->vfs->open(p->vfs, dwpath, UT_OPEN_RDONLY, &dw) == UT_OK) {
		if ((rc = ut_file_size(dw, &size)) == UT_OK && size > UT_DW_HDR) {
			uint64_t slots = (size - UT_DW_HDR) / UT_DW_SLOT_BYTES;

			rc = max_lsn_in(p, dw, UT_DW_SLOT_OFF(0) + UT_DW_HDR,
					UT_DW_SLOT_BYTES,
					slots > UT_DW_SLOTS ? UT_DW_SLOTS : slots, buf,
					&cmax, &cslot);
		}
		ut_file_close(dw);
	}
	if (rc == UT_OK && dmax >= cmax) {
		*max = dmax;
		snprintf(what, wn, "page %llu of %s", (unsigned long long)dpg,
			 p->path);
	} else if (rc == UT_OK) {
		*max = cmax;
		snprintf(what, wn, "the copy in slot %llu of %s",
			 (unsigned long long)cslot, dwpath);
	}
	free(dwpath);
	free(buf);
	return rc;
}
ut_file *ut_pager_file(ut_pager *p) { return p->wfile; }
const char *ut_pager_direct_note(ut_pager *p)
{
	if (p->wfile != p->file)
		return "page writes go through the OS page cache (only atomic "
		       "writes need O_DIRECT), made durable by fdatasync";
	return ut_file_direct_note(p->file);
}
ut_file *ut_pager_read_file(ut_pager *p) { return p->rfile; }
const char *ut_pager_protect_reason(ut_pager *p)
{
	return p->readonly ? "read-only open: no page writes (the mode is the "
			     "one the database last ran in)" : p->fl->reason;
}
int ut_pager_readonly(ut_pager *p) { return p->readonly; }

void ut_pager_set_redo_gate(ut_pager *p, int (*gate)(void *ctx), void *ctx)
{
	p->redo_gate = gate;
	p->redo_gate_ctx = ctx;
	p->redo_decided = 0;
}

int ut_pager_redo_begin(ut_pager *p)
{
	uint64_t size;

	if (p->in_txn)
		return UT_EBUSY;
	p->recovering = 1;
	p->ntx = 0;
	/* one bit per page in the file: each is hinted once */
	free(p->hinted);
	p->hinted = NULL;
	p->nhinted = 0;
	if (ut_file_size(p->rfile, &size) == UT_OK && size >= UT_PAGE_SIZE &&
	    (p->hinted = calloc(size / UT_PAGE_SIZE / 8 + 1, 1)))
		p->nhinted = size / UT_PAGE_SIZE;
	return UT_OK;
}

/* Redo reads its pages one at a time, each a random read of a cold file:
 * the log names them ahead (ut_wal_set_prefetch), so many are read at
 * once.  Pages past the file's end are new (zero), not read. */
void ut_pager_redo_hint(void *ctx, uint32_t pgno)
{
	ut_pager *p = ctx;

	if (pgno >= p->nhinted || (p->hinted[pgno / 8] & (1u << (pgno % 8))))
		return;
	p->hinted[pgno / 8] |= (uint8_t)(1u << (pgno % 8));
	if (!pager_hfind(p, pgno)) {
		ut_file_prefetch(p->rfile, (uint64_t)pgno * UT_PAGE_SIZE,
				 UT_PAGE_SIZE);
		ut_ctr_add(&p->ctr.prefetches, 1);
	}
}

/* The transaction being replayed is complete: stamp its LSN on the pages it
 * changed; they become ordinary dirty (evictable) frames.  A log record
 * whose checksum passes may still carry bytes that break a page, or name a
 * page the database does not have: each page is checked whole
 * (ut_page_check) as a page read from the file is, and against the page
 * count the header has after the transaction. */
static int redo_finish_txn(ut_pager *p)
{
	int rc = UT_OK;

	for (size_t i = 0; i < p->ntx; i++) {
		struct frame *f = p->tx[i];
		ut_page_set_lsn(f->pg.data, p->lsn);
		f->txn = 0;
		if (rc == UT_OK)
			rc = ut_page_check(f->pg.data, f->pg.pgno, p->path);
		/* a committed transaction's pages are all below its page count */
		if (rc == UT_OK && f->pg.pgno >= meta32(p, UT_META_PAGECOUNT)) {
			ut_set_errdetail("%s: page %u: changed by the log record of "
					 "LSN %llu, beyond the page count %u", p->path,
					 f->pg.pgno, (unsigned long long)p->lsn,
					 meta32(p, UT_META_PAGECOUNT));
			rc = UT_ECORRUPT;
		}
	}
	p->ntx = 0;
	return rc;
}

/* The frame of pgno as the data file has it (a page beyond the end of the
 * file, or never written -- all zeroes -- is a zero page, LSN 0).  For an
 * image (image = 1) what the file holds is replaced whole: a page failing
 * its checksum there is a torn write the image repairs (counted), not an
 * error; one that passes is still checked against recovery's evidence.
 * p->mu held. */
static int redo_get(ut_pager *p, uint32_t pgno, int image, struct frame **out)
{
	struct frame *f = pager_hfind(p, pgno);
	int64_t n;
	int rc;

	if (f) {
		*out = f;
		return UT_OK;
	}
	if ((rc = pager_get_frame(p, &f)))
		return rc;
	n = pager_read_page(p, pgno, f->pg.data);
	if (n < 0)
		return (int)n;
	ut_ctr_add(&p->ctr.page_reads, 1);
	if (n < (int64_t)UT_PAGE_SIZE && n > 0 && pgno >= p->durable_pages)
		n = 0; /* a torn extension: redo rebuilds it whole */
	if (n < (int64_t)UT_PAGE_SIZE)
		memset(f->pg.data + n, 0, UT_PAGE_SIZE - (size_t)n);
	if (image && !ut_page_is_zero(f->pg.data) &&
	    !ut_page_checksum_ok(f->pg.data)) {
		ut_ctr_add(&p->ctr.torn_repaired, 1);
		memset(f->pg.data, 0, UT_PAGE_SIZE);
	} else if (image && ut_page_is_zero(f->pg.data)) {
		/* a page lost whole is as good as torn: the image has it */
	} else if (pgno < p->durable_pages && ut_page_is_zero(f->pg.data)) {
		/* the last checkpoint wrote this page: zeroes are damage (a
		 * lost or zeroed block), not a page new since */
		ut_set_errdetail("%s: page %u: all zeroes (or missing), but the "
				 "last checkpoint counted %u pages: damaged",
				 p->path, pgno, p->durable_pages);
		p->ctr.corrupt_pages++;
		return UT_ECORRUPT;
	}
	if (!ut_page_is_zero(f->pg.data) &&
	    ((rc = ut_page_verify(f->pg.data, pgno, p->path)) != UT_OK ||
	     (rc = pager_bound_check_read(p, f->pg.data, pgno)) != UT_OK)) {
		if (rc == UT_ECORRUPT && !ut_page_checksum_ok(f->pg.data) &&
		    p->last_mode == UT_PROTECT_FULLPAGE) {
			/* fullpage wrote it in place after imaging it in the
			 * log, which redo would have met first */
			char was[256];

			snprintf(was, sizeof(was), "%s", ut_errdetail());
			ut_set_errdetail("%s; the log has no image of it since the "
					 "redo start (LSN %llu), which fullpage mode "
					 "logs before any in-place write of a page: "
					 "damaged, not torn", was,
					 (unsigned long long)ut_pager_redo_lsn(p));
		}
		ut_ctr_add(&p->ctr.corrupt_pages, 1);
		memset(f->pg.data, 0, UT_PAGE_SIZE);
		return rc;
	}
	struct pver *v = pager_pver_get(p, f->pg.data, pgno);

	if (!v)
		return UT_ENOMEM;
	pager_frame_set_cur(p, f, v);
	frame_set_pgno(f, pgno);
	f->valid = 1;
	f->dirty = f->txn = 0;
	frame_set_pins(f, 0);
	__atomic_store_n(&f->ref, 1, __ATOMIC_RELAXED);
	pager_hinsert(p, f);
	*out = f;
	return UT_OK;
}

int ut_pager_redo(ut_pager *p, uint64_t lsn, uint32_t pgno, uint32_t off,
		  uint32_t len, const void *data)
{
	struct frame *f = NULL;
	int rc;

	if (!p->recovering || off + (uint64_t)len > UT_PAGE_SIZE)
		return UT_EINVAL;
	/* No pool mutex: redo runs inside ut_wal_recover (under the log's
	 * mutex) at open, before the handle exists for any other thread;
	 * taking p->mu here would invert the p->mu -> log order of commit. */
	if (lsn != p->lsn) {
		if ((rc = redo_finish_txn(p)))
			return rc;
		if (lsn > p->lsn)
			p->lsn = lsn;
	}
	rc = redo_get(p, pgno, 0, &f);
	if (rc)
		goto out;
	/* The page LSN is the one read from the file: deltas never cover the
	 * LSN field, and the LSN is stamped only when the transaction ends. */
	if (ut_page_lsn(f->pg.data) < lsn) {
		if (!f->txn) {
			if ((rc = pager_tx_add(p, f)))
				goto out;
			f->txn = 1;
		}
		memcpy(f->pg.data + off, data, len);
		f->dirty = 1;
	}
out:
	return rc;
}

int ut_pager_redo_image(ut_pager *p, uint64_t lsn, uint32_t pgno,
			const void *img)
{
	struct frame *f = NULL;
	int rc;

	if (!p->recovering)
		return UT_EINVAL;
	/* The log's checksum passed; what the image claims is checked as a
	 * page read from a file is (design.md, "Untrusted files"). */
	if (pgno == 0) {
		ut_set_errdetail("%s: log image record (transaction of commit LSN "
				 "%llu): an image of the header page (page 0), "
				 "which is never imaged", p->path,
				 (unsigned long long)lsn);
		return UT_ECORRUPT;
	}
	if (ut_page_pgno(img) != pgno) {
		ut_set_errdetail("%s: log image record (transaction of commit LSN "
				 "%llu): names page %u but holds page %u",
				 p->path, (unsigned long long)lsn, pgno,
				 ut_page_pgno(img));
		return UT_ECORRUPT;
	}
	if (ut_page_check(img, pgno, p->path) != UT_OK) {
		char d[512];

		snprintf(d, sizeof(d), "%s (the page image a log record holds, in "
			 "the transaction of commit LSN %llu)", ut_errdetail(),
			 (unsigned long long)lsn);
		ut_set_errdetail("%s", d);
		return UT_ECORRUPT;
	}
	if (lsn != p->lsn) {
		if ((rc = redo_finish_txn(p)))
			return rc;
		if (lsn > p->lsn)
			p->lsn = lsn;
	}
	if ((rc = redo_get(p, pgno, 1, &f)))
		return rc;
	if (!f->txn) {
		if ((rc = pager_tx_add(p, f)))
			return rc;
		f->txn = 1;
	}
	memcpy(f->pg.data, img, UT_PAGE_SIZE);
	/* older than its transaction, which stamps it at its end: deltas of
	 * later transactions compare with that */
	ut_page_set_lsn(f->pg.data, 0);
	f->dirty = 1;
	return UT_OK;
}

int ut_pager_redo_end(ut_pager *p)
{
	int rc;

	pthread_mutex_lock(&p->mu);
	rc = redo_finish_txn(p);
	p->recovering = 0;
	free(p->hinted);
	p->hinted = NULL;
	p->nhinted = 0;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/*
 * engine/flush_fullpage.c - the "fullpage" flush strategy (flush.h):
 * PostgreSQL's full_page_writes.  Pages are written in place with no
 * copy, as unsafe writes them; what makes a torn page repairable is the
 * log, not this file.
 *
 * Contract (the three parts of the mode, and who does each):
 *
 *  1. The pager (journal.c) logs the committed content of a page whole
 *     (an IMAGE record, wal.h) instead of its deltas when the change is
 *     the page's first since the latest checkpoint request: its committed
 *     LSN is at or below that checkpoint's redo LSN, or the page is new.
 *     Later changes until the next request log deltas.  Page 0 is never
 *     imaged: see (3).
 *  2. This strategy writes in place: groups of UT_FLUSH_INFLIGHT_PAGES
 *     on the device one after another (the pacing double-write's in-place
 *     half has, so commits' log writes do not queue behind a burst), the
 *     data file synced for UT_FLUSH_DURABLE only.  The WAL rule (every
 *     batch after the log is durable up to its pages' LSNs) already makes
 *     a page's image durable before the page can be written, since the
 *     image is part of a commit at or below the page's LSN.
 *  3. Recovery (redo.c) restores a page from each image it replays, what
 *     the file holds ignored (a torn page is counted in torn_repaired),
 *     and redoes the deltas after it.  A page written since the redo
 *     start had its first change since then logged as an image, so a page
 *     that fails its checksum when a delta reaches it has no image: that
 *     cannot happen, and redo reports it (UT_ECORRUPT) if it does.  The
 *     header page is the exception to (1): it holds under 128 bytes of
 *     fields and zeros after them, so two versions differ only in its
 *     first 4 KiB sector and a write torn at a sector boundary leaves it
 *     whole, old or new.  write_pages refuses (UT_EINVAL) a header with a
 *     byte set past that sector rather than write it unprotected.  A log
 *     written in another mode has no images: a fullpage open that must
 *     recover it writes through double-write until recovery's checkpoint
 *     is done (pager.c, fullpage_recovery_via_dw).
 *
 * Why the image goes with the commit, not with the first write-back:
 * logged at write-back, the image would add a log write and sync to the
 * cleaner's path before every first in-place write of a page (the log
 * syncing for the cleaner, not for commits), and it would carry an LSN
 * above the page's, so redo's "apply iff page LSN < record LSN" would need
 * a second rule for it.  Logged with the commit, it rides on the commit's
 * own log write and sync, the WAL rule orders it before the page write
 * with no new code, and a page changed several times between checkpoints
 * costs one image however often it is evicted (at write-back, one per
 * write, as double-write pays).  The price: a page changed but never
 * written before the next checkpoint is imaged all the same -- every
 * dirty page is written by that checkpoint anyway.
 *
 * UT_FLUSH_LAZY (sync=0 evictions): in place through the OS page cache,
 * like the others; UT_FLUSH_OWN (the page-write bound's header): each
 * page written with UT_WRITE_DSYNC, as unsafe does.
 */
#include "flush.h"

/* Page 0 must be untearable by a 4 KiB-sector tear: zeros past the first
 * sector (see (3) above). */
#define HDR_SECTOR 4096u

static int header_fits_sector(const uint8_t *pg)
{
	for (size_t i = HDR_SECTOR; i < UT_PAGE_SIZE; i++)
		if (pg[i])
			return 0;
	return 1;
}

static int fullpage_write_pages(ut_flusher *fl, ut_file *data,
				const ut_flush_page *pages, size_t n,
				unsigned flags)
{
	for (size_t i = 0; i < n; i++) {
		if (pages[i].pgno == 0 && !header_fits_sector(pages[i].buf)) {
			ut_set_errdetail("%s: page 0: the header has bytes past its "
					 "first %u-byte sector, which fullpage mode "
					 "neither images nor copies", fl->path,
					 HDR_SECTOR);
			return UT_EINVAL;
		}
	}
	if (flags & UT_FLUSH_OWN) {
		for (size_t i = 0; i < n; i++) {
			int rc = ut_file_write(data, pages[i].buf, UT_PAGE_SIZE,
					       (uint64_t)pages[i].pgno * UT_PAGE_SIZE,
					       UT_WRITE_DSYNC);
			if (rc)
				return rc;
			ut_ctr_add(&fl->ctr->page_writes, 1);
			ut_ctr_add(&fl->ctr->syncs, 1);
		}
		return UT_OK;
	}
	if (flags & UT_FLUSH_LAZY)
		return ut_flush_in_place(fl, data, pages, n, flags, 0);
	return ut_flush_in_place(fl, data, pages, n, flags, UT_WRITE_WRITEBACK);
}

const struct ut_flusher_ops ut_flush_fullpage_ops = {
	.name = "fullpage",
	.protect = UT_PROTECT_FULLPAGE,
	.log_images = 1,
	.write_pages = fullpage_write_pages,
};

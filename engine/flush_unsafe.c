/*
 * engine/flush_unsafe.c - the "unsafe" flush strategy (flush.h): pages are
 * written in place (ut_flush_in_place) and made durable with one sync.  A
 * crash during the batch may leave a page torn (4 KiB sectors old, others
 * new): the crash tests' negative control.  UT_FLUSH_OWN: each page
 * written durably on its own (UT_WRITE_DSYNC).
 */
#include "flush.h"

static int unsafe_write_pages(ut_flusher *fl, ut_file *data,
			      const ut_flush_page *pages, size_t n,
			      unsigned flags)
{
	if (!(flags & UT_FLUSH_OWN))
		return ut_flush_in_place(fl, data, pages, n, flags, 0);
	/* (the page-write bound's header: durable now, the rest of the
	 * deferred pages left to the checkpoint) */
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

const struct ut_flusher_ops ut_flush_unsafe_ops = {
	.name = "unsafe",
	.protect = UT_PROTECT_UNSAFE,
	.write_pages = unsafe_write_pages,
};

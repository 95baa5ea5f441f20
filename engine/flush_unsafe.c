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
	return ut_flush_each_durably(fl, data, pages, n);
}

const struct ut_flusher_ops ut_flush_unsafe_ops = {
	.name = "unsafe",
	.protect = UT_PROTECT_UNSAFE,
	.write_pages = unsafe_write_pages,
};

/*
 * engine/flush_unsafe.c - the "unsafe" flush strategy (flush.h): pages are
 * written in place (ut_flush_in_place) and made durable with one sync.  A
 * crash during the batch may leave a page torn (4 KiB sectors old, others
 * new): the crash tests' negative control.
 */
#include "flush.h"

static int unsafe_write_pages(ut_flusher *fl, ut_file *data,
			      const ut_flush_page *pages, size_t n,
			      unsigned flags)
{
	return ut_flush_in_place(fl, data, pages, n, flags, 0);
}

const struct ut_flusher_ops ut_flush_unsafe_ops = {
	.name = "unsafe",
	.protect = UT_PROTECT_UNSAFE,
	.write_pages = unsafe_write_pages,
};

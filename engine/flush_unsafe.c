/*
 * engine/flush_unsafe.c - the "unsafe" flush strategy (flush.h): pages are
 * written in place with one ut_file_write_batch and made durable with one
 * ut_file_sync.  A crash during the batch may leave a page torn (4 KiB
 * sectors old, others new): the crash tests' negative control, and the
 * only strategy until atomic/doublewrite land.
 */
#include <stdlib.h>

#include "flush.h"

#define BATCH 64

static int unsafe_write_pages(ut_flusher *fl, ut_file *data,
			      const ut_flush_page *pages, size_t n,
			      unsigned flags)
{
	ut_iowrite w[BATCH];
	int rc;

	for (size_t i = 0; i < n;) {
		size_t k = 0;
		for (; k < BATCH && i < n; k++, i++) {
			w[k].buf = pages[i].buf;
			w[k].len = UT_PAGE_SIZE;
			w[k].off = (uint64_t)pages[i].pgno * UT_PAGE_SIZE;
		}
		rc = ut_file_write_batch(data, w, k, 0);
		if (rc)
			return rc;
		fl->ctr->page_writes += k;
		fl->unsynced = 1;
	}
	if ((flags & UT_FLUSH_DURABLE) && fl->unsynced) {
		rc = ut_file_sync(data);
		if (rc)
			return rc;
		fl->ctr->syncs++;
		fl->unsynced = 0;
	}
	return UT_OK;
}

const struct ut_flusher_ops ut_flush_unsafe_ops = {
	.name = "unsafe",
	.protect = UT_PROTECT_UNSAFE,
	.write_pages = unsafe_write_pages,
};

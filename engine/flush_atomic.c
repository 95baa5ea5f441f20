/*
 * engine/flush_atomic.c - the "atomic" flush strategy (flush.h): every page
 * is written in place with RWF_ATOMIC (UT_WRITE_ATOMIC), one aligned 16 KiB
 * iovec each, through ut_file_write_batch (io_uring where available), then
 * made durable with one sync.  No copy: the stack promises each page lands
 * whole or not at all.
 *
 * Loud failures: probe refuses (UT_ENOTSUP, detail says why) unless the data
 * file is O_DIRECT and statx reports an atomic unit range containing 16384.
 * A write refused at run time (UT_ENOTSUP / UT_EINVAL from the kernel) is
 * returned as is; nothing is ever retried without the flag, since a plain
 * write could tear.
 *
 * Deferred durability (no UT_FLUSH_DURABLE) is safe here: a page not yet
 * synced is, after a crash, old or new, never mixed.
 */
#include <stdint.h>

#include "flush.h"
#include "flush_atomic.h"

int ut_flush_atomic_check(ut_file *data, const char *path)
{
	ut_atomic_info ai;
	int rc;

	if (!data->direct) {
		const char *note = ut_file_direct_note(data);

		ut_set_errdetail("%s: atomic page writes need O_DIRECT: "
				 "O_DIRECT refused: %s", path,
				 note ? note : "not in effect");
		return UT_ENOTSUP;
	}
	rc = ut_file_atomic_info(data, &ai);
	if (rc)
		return rc;
	if (!ut_atomic_fits(&ai, UT_PAGE_SIZE) || ai.segments_max < 1) {
		if (ai.mask_missing)
			ut_set_errdetail("%s: statx did not report atomic write "
					 "limits (kernel or filesystem without "
					 "STATX_WRITE_ATOMIC%s%s)", path,
					 ai.statx_errno ? ", statx failed: " : "",
					 ai.statx_errno ? "see errno" : "");
		else if (!ai.supported)
			ut_set_errdetail("%s: statx: STATX_ATTR_WRITE_ATOMIC not "
					 "set (supported=0, unit %u..%u): atomic "
					 "writes unsupported by this file's stack",
					 path, ai.unit_min, ai.unit_max);
		else
			ut_set_errdetail("%s: statx: supported=1 but atomic write unit %u..%u "
					 "(segments %u) does not fit a %u-byte "
					 "page", path, ai.unit_min, ai.unit_max,
					 ai.segments_max, UT_PAGE_SIZE);
		return UT_ENOTSUP;
	}
	return UT_OK;
}

static int atomic_probe(ut_vfs *vfs, ut_file *data, const char *path)
{
	(void)vfs;
	return ut_flush_atomic_check(data, path);
}

static int atomic_write_pages(ut_flusher *fl, ut_file *data,
			      const ut_flush_page *pages, size_t n,
			      unsigned flags)
{
	for (size_t i = 0; i < n; i++) {
		if ((uintptr_t)pages[i].buf % UT_IO_ALIGN) {
			ut_set_errdetail("%s: page %u: buffer %p not aligned "
					 "for an atomic write", fl->path,
					 pages[i].pgno, pages[i].buf);
			return UT_EINVAL;
		}
	}
	/* A failure goes up unchanged, never retried without the flag. */
	return ut_flush_in_place(fl, data, pages, n, flags, UT_WRITE_ATOMIC);
}

const struct ut_flusher_ops ut_flush_atomic_ops = {
	.name = "atomic",
	.protect = UT_PROTECT_ATOMIC,
	.probe = atomic_probe,
	.write_pages = atomic_write_pages,
};

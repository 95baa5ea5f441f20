/*
 * engine/flush.h - the page-flush strategy interface (torn-page protection).
 *
 * Contract: EVERY write of a page to the data file goes through
 * ops->write_pages of the strategy chosen at open.  The pager hands over a
 * batch of whole, checksummed (ut_page_seal'd) 16 KiB pages in
 * UT_IO_ALIGN-aligned buffers (suitable for O_DIRECT); the strategy writes them to their home offsets (pgno * 16384) in
 * whatever protected way it implements.  Strategies never look inside pages
 * and never call back into the pager.
 *
 *  - unsafe      (flush_unsafe.c): ut_file_write_batch in place, then
 *                ut_file_sync.  No torn-page protection: tests' negative
 *                control only.
 *  - atomic      (to come, flush_atomic.c): in place with UT_WRITE_ATOMIC.
 *  - doublewrite (to come, flush_doublewrite.c): copy the batch to
 *                PATH "-dw", sync it, then in place, sync; ops->recover
 *                restores torn pages at open.
 *
 * A new strategy plugs in by defining one of the weak symbols declared at
 * the bottom (ut_flush_atomic_ops, ut_flush_doublewrite_ops) in its own .c
 * file; ut_flusher_create() picks it up with no other edit.
 *
 * Counters: a strategy increments fl->ctr (page_writes for in-place page
 * writes, dw_page_writes, syncs, torn_repaired, corrupt_pages) where the
 * I/O happens.  Calls are serialized by the pager (never concurrent).
 */
#ifndef UT_FLUSH_H
#define UT_FLUSH_H

#include <stddef.h>
#include <stdint.h>

#include "untorn.h"
#include "ut_io.h"

/* I/O counters, the source of ut_stats.  Owned by the pager, incremented by
 * whoever does the I/O (pager, flusher, later the WAL). */
typedef struct ut_io_counters {
	uint64_t page_writes;    /* in-place data page writes */
	uint64_t dw_page_writes; /* pages written to the double-write file */
	uint64_t log_bytes;      /* bytes appended to the WAL */
	uint64_t syncs;          /* fsync/fdatasync calls */
	uint64_t torn_repaired;  /* pages restored from the double-write file */
	uint64_t corrupt_pages;  /* pages failing their checksum, not repaired */
	uint64_t page_reads;     /* data page reads (not in ut_stats) */
} ut_io_counters;

typedef struct ut_flush_page {
	uint32_t pgno;   /* written at offset pgno * UT_PAGE_SIZE */
	const void *buf; /* UT_PAGE_SIZE bytes, UT_IO_ALIGN-aligned, sealed */
} ut_flush_page;

/* write_pages flags */
#define UT_FLUSH_DURABLE 1u /* pages must be durable on return (checkpoint,
			     * close, sync commit).  Without it (eviction)
			     * the final data-file sync may be deferred to
			     * the next DURABLE call, but the protection
			     * invariant must still hold: after a crash each
			     * page is whole, old or new. */

typedef struct ut_flusher ut_flusher;

struct ut_flusher_ops {
	const char *name; /* "unsafe", "atomic", "doublewrite" */
	int protect;      /* enum ut_protect value this strategy implements */
	/* Can this strategy run on this data file?  UT_OK or UT_ENOTSUP (with
	 * ut_set_errdetail saying why).  NULL = always. */
	int (*probe)(ut_vfs *vfs, ut_file *data, const char *path);
	/* Set up (fl->priv) after probe succeeded.  NULL = nothing to do. */
	int (*init)(ut_flusher *fl);
	/* At open, before the pager reads any page: repair what an interrupted
	 * earlier write_pages may have left (double-write restore).  NULL = no
	 * recovery needed. */
	int (*recover)(ut_flusher *fl, ut_file *data);
	/* Write pages[0..n) to their home offsets.  n may be 0 with
	 * UT_FLUSH_DURABLE: make earlier deferred writes durable. */
	int (*write_pages)(ut_flusher *fl, ut_file *data,
			   const ut_flush_page *pages, size_t n, unsigned flags);
	/* Release fl->priv (files it opened).  NULL = nothing. */
	void (*fini)(ut_flusher *fl);
};

struct ut_flusher {
	const struct ut_flusher_ops *ops;
	ut_vfs *vfs;
	char *path;          /* the data file's path (PATH "-dw" etc. derive from it) */
	ut_io_counters *ctr; /* the pager's counters */
	int unsynced;        /* a deferred write awaits a sync (strategy's own use) */
	void *priv;          /* strategy state */
};

/* Choose and set up the strategy for protect (UT_PROTECT_AUTO: atomic if its
 * probe accepts the file, else doublewrite, else -- while neither is built
 * in -- unsafe).  Explicit ATOMIC/DOUBLEWRITE that is not built in or not
 * supported gives UT_ENOTSUP. */
int ut_flusher_create(int protect, ut_vfs *vfs, const char *path,
		      ut_file *data, ut_io_counters *ctr, ut_flusher **out);
void ut_flusher_destroy(ut_flusher *fl);

extern const struct ut_flusher_ops ut_flush_unsafe_ops;
extern const struct ut_flusher_ops ut_flush_atomic_ops __attribute__((weak));
extern const struct ut_flusher_ops ut_flush_doublewrite_ops __attribute__((weak));

#endif /* UT_FLUSH_H */

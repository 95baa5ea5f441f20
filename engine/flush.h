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
 *  - atomic      (flush_atomic.c): in place with UT_WRITE_ATOMIC.
 *  - doublewrite (flush_doublewrite.c): copy the batch to
 *                PATH "-dw", sync it, then in place, sync; ops->recover
 *                restores torn pages at open.
 *  - fullpage    (flush_fullpage.c): in place, no copy; log_images asks
 *                the pager to log each page's first change after a
 *                checkpoint as a whole image, and redo repairs a torn
 *                page from it.
 *
 * The strategies are plain (strong) symbols in a table in flush.c, so a
 * static link (libuntorn.a) always pulls them in.  (They used to be weak
 * references, which the linker does not resolve from archive members: the
 * CLI and the tests silently ran without them.)
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
	uint64_t scan_reads;     /* pages read by recovery's full LSN scan
				  * (not in ut_stats) */
	uint64_t bound_writes;   /* header writes raising the page-write
				  * bound (not in ut_stats) */
	uint64_t prefetches;     /* pages redo asked the OS to read ahead
				  * (not in ut_stats) */
	uint64_t page_images;    /* whole-page images logged (fullpage) */
} ut_io_counters;

/* The counters are bumped by whoever does the I/O (the page cleaner under
 * its flush lock, readers and the writer under the pool mutex) and copied
 * for ut_stats by any thread holding neither: relaxed atomics, each field
 * on its own (a copy is not a snapshot across fields). */
static inline void ut_ctr_add(uint64_t *c, uint64_t n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

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
#define UT_FLUSH_LAZY 2u    /* sync=0 eviction: write in place through the
			     * OS page cache, no sync, no protection copy.
			     * Safe against a process crash; a power failure
			     * before the next DURABLE call may tear these
			     * pages (sync=0 promises nothing then: untorn.h).
			     * The atomic strategy still writes atomically. */

#define UT_FLUSH_OWN 4u     /* with DURABLE: these pages must be durable on
			     * return, earlier deferred writes need not be.
			     * unsafe writes each with UT_WRITE_DSYNC, so
			     * the pages it defers to a checkpoint are not
			     * written back; the others do a DURABLE call. */

/* Double-write hands its in-place pages to the device this many at a time
 * (256 KiB), each group on the device before the next.  They are buffered,
 * so a batch otherwise reached the device in one burst at the data sync,
 * and a commit's log write queued behind all of it: the 16-thread p99 of
 * bench_durable --threads was 11-17 ms, in groups of 16 7-11 ms.  Smaller
 * groups left the cleaner behind its committers; grouping the copies too
 * (one sequential direct write) cost 4 threads 10-25% of their commits/s.
 * unsafe does not pace: its pages wait in the page cache until a
 * checkpoint, where rewrites of a page coalesce. */
#define UT_FLUSH_INFLIGHT_PAGES 16u

typedef struct ut_flusher ut_flusher;
struct ut_dw_pending; /* flush_doublewrite.h */

struct ut_flusher_ops {
	const char *name; /* "unsafe", "atomic", "doublewrite", "fullpage" */
	int protect;      /* enum ut_protect value this strategy implements */
	/* 1: the strategy relies on the log for torn pages: a page's first
	 * change after each checkpoint request goes to the log whole (an
	 * image), so the WAL rule makes the image durable before the page
	 * is written in place. */
	int log_images;
	/* Can this strategy run on this data file?  UT_OK or UT_ENOTSUP (with
	 * ut_set_errdetail saying why).  NULL = always. */
	int (*probe)(ut_vfs *vfs, ut_file *data, const char *path);
	/* Set up (fl->priv) after probe succeeded.  NULL = nothing to do. */
	int (*init)(ut_flusher *fl);
	/* At open, before the pager reads any page: find what an interrupted
	 * earlier write_pages may have left torn (double-write restore), and
	 * add the repairs to *pend for the pager to write once the open is
	 * sure to go through (flush_doublewrite.h ut_dw_apply); pend NULL:
	 * write them now.  NULL = no recovery needed. */
	int (*recover)(ut_flusher *fl, ut_file *data, struct ut_dw_pending *pend);
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
	char reason[320];    /* why this strategy: "auto: ..." or "requested" */
};

/* Choose and set up the strategy for protect.  UT_PROTECT_AUTO: atomic when
 * the data file is O_DIRECT and its atomic_info says supported with
 * unit_min <= 16384 <= unit_max and, when reported, 16384 <= unit_max_opt
 * (ut_atomic_fast), else doublewrite; never
 * unsafe.  Explicit ATOMIC that the file cannot do gives UT_ENOTSUP with a
 * detail naming what statx reported (or "O_DIRECT refused: <note>").
 * UNSAFE only when asked by name.  fl->reason records why. */
int ut_flusher_create(int protect, ut_vfs *vfs, const char *path,
		      ut_file *data, ut_io_counters *ctr, ut_flusher **out);
void ut_flusher_destroy(ut_flusher *fl);

/* For strategies: write pages[0..n) in place (write flags wflags, e.g.
 * UT_WRITE_ATOMIC) in batches, counting page_writes, and sync the data
 * file when flags has UT_FLUSH_DURABLE (also for writes deferred by
 * earlier calls).  With UT_WRITE_WRITEBACK the batches are of
 * UT_FLUSH_INFLIGHT_PAGES, each on the device before the next.  Pages of
 * a batch up to a failure may have landed. */
int ut_flush_in_place(ut_flusher *fl, ut_file *data, const ut_flush_page *pages,
		      size_t n, unsigned flags, unsigned wflags);
/* For strategies whose in-place write is unprotected (unsafe, fullpage):
 * UT_FLUSH_OWN's form, each page of pages[0..n) written durably on its own
 * (UT_WRITE_DSYNC), counting page_writes and syncs. */
int ut_flush_each_durably(ut_flusher *fl, ut_file *data,
			  const ut_flush_page *pages, size_t n);
/* Sync the data file if a deferred write awaits it. */
int ut_flush_sync_data(ut_flusher *fl, ut_file *data);

extern const struct ut_flusher_ops ut_flush_unsafe_ops;
extern const struct ut_flusher_ops ut_flush_atomic_ops;
extern const struct ut_flusher_ops ut_flush_doublewrite_ops;
extern const struct ut_flusher_ops ut_flush_fullpage_ops;

#endif /* UT_FLUSH_H */

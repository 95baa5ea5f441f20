/*
 * engine/pager.h - the pager: data file, buffer pool, free list, write
 * transaction page journal, and the hooks the write-ahead log plugs into.
 *
 * Contract:
 *  - Pages are reached only through ut_pager_get (pinned until
 *    ut_pager_release).  A page read from the file that fails
 *    ut_page_verify is never returned: UT_ECORRUPT, errdetail names file and
 *    page.  All file I/O goes through io/ (ut_file) and the flush strategy
 *    (flush.h); every page write goes through ut_flusher ops->write_pages.
 *  - Buffer pool: at most cache_bytes / 16384 frames (minimum
 *    UT_PAGER_MIN_FRAMES), a hash table pgno -> frame, clock eviction.
 *    The write transaction's pre-images beyond 24 MiB count against the
 *    bound too.  The buffers of replaced versions nobody needs stay with
 *    their frames as the next private copies (journal.c, shadows) in the
 *    room frames and pre-images leave below the bound + 24 MiB, and are
 *    the first to go when a frame needs it.  Pinned frames and frames dirtied by the running write
 *    transaction are never evicted; when no frame is evictable the pool
 *    grows past the bound (a big transaction may exceed cache_bytes
 *    temporarily) and shrinks back as frames become evictable (dirty
 *    ones once the cleaner thread wrote them: the committing thread does
 *    not write them under the pool mutex).  Readers' pins count as well:
 *    while readers pin every frame the pool holds the pages they pin,
 *    page 0 and the dirty ones, and it is back within the bound when the
 *    last pinning snapshot ends (no write needed).
 *  - Page cleaner: a background thread (started on first need, never
 *    during redo or for a read-only handle) writes dirty pages in batches
 *    of up to 128 (one strategy call: for doublewrite one copy write and
 *    one sync for the whole batch) whenever more than half the bound is
 *    dirty, or a thread needs a frame and none is clean.  The thread's
 *    batches are paced (pace.h): as many pages as the device's measured
 *    bandwidth writes in a latency target, and before each batch, when
 *    the batch is smaller than 128 (the bound binds), a log flush a
 *    committer waits for (hooks.log_waiting) goes first, so a commit's
 *    log write waits for at most one such batch.  It writes copies
 *    taken under the pool mutex, so the pool is never locked during page
 *    I/O and the writer may change a page while its copy is written (the
 *    frame then stays dirty).  A thread that needs a frame when every
 *    candidate is dirty waits for the cleaner's next batch (one batch per
 *    wait: the cleaner sleeps when it owes nobody one and has nothing
 *    past its mark); when every dirty frame is pinned (a reader's pin
 *    too), a write would free none: it takes a frame past the bound.  With
 *    cfg->inline_flush there is no thread: the thread that needs a frame
 *    writes a batch itself (deterministic I/O order, for tests).  A
 *    cleaner write that fails makes the handle fatal; waiters get its
 *    error and detail.
 *  - Versions: a frame holds its page's last committed version (cur),
 *    which never changes once published.  Before the writer's first change
 *    to a page in a transaction, ut_pager_write gives it a private copy to
 *    change (the writer's ut_pg then points at the copy); cur stays what
 *    readers see, what the cleaner writes (so a page dirtied by the running
 *    transaction never reaches the data file before it commits: no-steal)
 *    and the log's pre-image.  ut_pager_rollback drops the copies, so abort
 *    leaves no trace.  Commit publishes every copy as its page's new cur at
 *    once (under the pool mutex); a replaced version is kept, tagged with
 *    the commit LSN that replaced it, exactly while a live snapshot sees it
 *    (one begun after the version's commit and before the one that
 *    replaced it; version.c), bounded by cfg->snapshot_bytes: beyond it the
 *    versions only the oldest snapshots see are dropped, and a snapshot that
 *    then needs one gets UT_ESNAPSHOT.  A version is freed once no snapshot
 *    sees it and no reader pins it.  Old versions never reach the data file
 *    or the log.
 *  - Commit: ut_pager_commit hands the transaction's pages (pgno, pre-image
 *    or NULL for a page new to the file, post-image) to hooks.log_commit,
 *    which appends them to the log (not necessarily durably: the caller
 *    makes the commit durable after releasing its writer lock -- group
 *    commit) and returns the commit LSN; the pager stamps that LSN in every
 *    page and writes no data page at commit.  Without a log
 *    (hooks.log_commit NULL: pager-level tests) the LSN is a counter and,
 *    with sync, the pages are flushed through the strategy -- not
 *    crash-atomic across pages.
 *  - Data file handles: the pager opens the data file twice.  A direct
 *    handle (UT_OPEN_DIRECT | UT_OPEN_LOCK) holds the lock and carries the
 *    page writes of atomic mode (RWF_ATOMIC requires O_DIRECT); a buffered
 *    handle (no lock) carries page reads, and the page writes of every
 *    other mode, so a cache smaller than the database is backed by the OS
 *    page cache as SQLite's is.  Reads stay coherent: the kernel
 *    invalidates cached pages of a range written with O_DIRECT.  When the
 *    filesystem refuses O_DIRECT (ut_file_direct_note says why) there is
 *    one buffered handle for both.
 *  - Checkpoint (ut_pager_checkpoint): taken at the last commit LSN
 *    (no transaction running): every page dirty then is written through
 *    the flusher in cleaner batches and made durable, the log made durable
 *    up to that LSN, then the header image taken at the start (redo_lsn =
 *    that LSN) written DURABLE on its own, then
 *    hooks.log_checkpoint_done(redo_lsn).  Commits may go on meanwhile
 *    (ut_pager_checkpoint_async: the cleaner does it all); their changes
 *    are in the log after redo_lsn.
 *  - Redo (recovery, driven by the engine): ut_pager_redo_begin, then
 *    ut_pager_redo for each committed delta in log order (applied iff the
 *    page's LSN as read from the data file < lsn; a page beyond the end of
 *    the file or all zeroes is a new page, LSN 0), ut_pager_redo_end, then a
 *    checkpoint.  During redo the WAL rule is off: the log being replayed is
 *    already durable.  Redo writes no page (an eviction that needs one)
 *    before its gate (ut_pager_set_redo_gate) said recovery will accept
 *    the log's end: a refused recovery changes no file.
 *  - WAL rule: before any dirty page whose LSN > durable LSN is written,
 *    hooks.log_flush_to(lsn) is called.
 *  - Page 0 is the database header (UT_PT_META); its fields live in the
 *    buffer pool like any page, so changing them inside a write transaction
 *    is journaled/rolled back like any page.
 *  - Thread safety: the pool is guarded by an internal mutex, held for
 *    bookkeeping only: a page read on a pool miss runs without it (the
 *    frame is marked loading; a second thread wanting that page waits for
 *    it), and so does the cleaner's I/O (but for cfg->inline_flush) and the
 *    commit's log append.  A reader's pool hit takes no lock (atomic
 *    loads of the page table, a pin on the version, pool.c), nor does
 *    one whose snapshot is older than the page's current version (the
 *    kept version it sees, reached through the versions' older links,
 *    pinned and checked), and a page its snapshot holds already (an
 *    interior page it read) not even a pin; a snapshot's begin and
 *    end take no lock in the common case (reader slots, version.c).
 *    Readers on any threads call snap_begin/get_at/release/snap_end at
 *    any time.  Everything that changes pages (write,
 *    alloc, free, begin/commit/rollback, checkpoint start) must be called
 *    by the single writer (db.c's writer lock); ut_pager_get and
 *    ut_pager_root are the writer's view.
 *
 * Database header, page 0, after the 32-byte page header:
 *   32 magic[8] "untornDB"   40 u32 format version (UT_FORMAT_VERSION)
 *   44 u32 page size         48 u32 root page
 *   52 u32 free-list head    56 u32 page count
 *   60 u32 free-page count   64 u64 checkpoint LSN (redo start)
 *   72 u64 max LSN at the last checkpoint (a recreated log starts above it)
 *   80 u32 protection mode the database last ran in (0: unknown)
 *   84 u32 clean: 1 when the last close checkpointed (no recovery needed)
 *   88 u64 page-write bound B (format 2): no page in the data file or
 *          the -dw file carries a larger LSN; UT_BOUND_UNKNOWN after
 *          lazy (sync=0) writes, whose LSNs the log may not hold.
 *   96 u32 catalog root (format 3): the root page of the B+tree of named
 *          tables (catalog.h); 0 = no table was ever created
 *  100 u32 reserved, 0
 *  104 u64 the id the next created table gets (format 3)
 *  112 u64 keys in the default table (format 3): counted once by the
 *          create that makes the file format 3, then kept by every
 *          commit that adds or deletes default-table keys
 * The fields from 64 to 95 are written only by checkpoints and bound
 * raises, outside transactions, so they never appear in the log; the
 * fields from 96 on change in transactions, like the root, and are
 * logged and recovered like it.
 *
 * Format 3 = format 2 with named tables: the header's version says 3 once
 * a catalog root is set (the first ut_table_open with UT_CREATE commits
 * it), and 2 while it is 0, so a database without tables stays readable
 * by builds of format 2; those refuse format 3 (UT_EVERSION) rather than
 * see the catalog's pages as leaked.  The commit that first sets the
 * catalog root makes the header on disk say 3 durably before its log
 * records are written (ut_pager_raise_format), and every header this
 * handle writes after says 3: so after a crash before the next
 * checkpoint, when the catalog is only in the log, a format-2 build
 * still refuses the file instead of replaying the log and writing the
 * header back as 2.  (A first create that aborts after the raise leaves
 * a header saying 3 without a catalog until the next open's checkpoint
 * writes 2 again.)  ut_meta_format says which a header
 * image is written as (checkpoints, bound raises, backups).
 *
 * Page-write bound (bound.c): B is made durable before any page write it
 * must cover is issued, and B is a commit LSN the log was durable to when
 * B was written.  So after a crash an intact log ends at or past B:
 * recovery compares that one number with the log's end (a log ending
 * below B lost durable records: refused) instead of reading every page
 * for the highest LSN.  B unknown, a format-1 file, or
 * UT_RECOVERY_FULL_SCAN=1 in the environment: the full read as before.
 * Format-1 files open (the full read once) and are rewritten as format 2
 * by open's checkpoint; older builds refuse format 2 (UT_EVERSION).
 * Free pages are UT_PT_FREE pages (trunks) chained through the header's
 * "right"; in format 3 a trunk also lists up to UT_FREE_CAP other free
 * pages by number (page.h), which were put on the list without being
 * rewritten: a drop of N pages logs about 4N bytes of trunk entries
 * instead of N whole pages, and holds none of them.  ut_pager_free lists
 * a page in the head trunk while it has room, else the page becomes the
 * new head trunk; ut_pager_alloc takes the head trunk's last listed page
 * first (rewritten whole: its old content is not read for anything but
 * the snapshots that still see it), the trunk itself once it lists none.
 * The header's free count counts trunks and listed pages.  Format 2 files
 * (no table) keep trunks that list nothing, as older builds write them.
 * No free page is reused before the free list was checked against every
 * tree (freecheck.c: once per handle, at the first write transaction that
 * finds the list non-empty; until then allocations append); a free list
 * naming a live page makes such an allocation UT_ECORRUPT.
 */
#ifndef UT_PAGER_H
#define UT_PAGER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flush.h"
#include "page.h"
#include "ut_io.h"

#define UT_FORMAT_VERSION 3u    /* the newest format read: named tables */
#define UT_FORMAT_NO_TABLES 2u  /* a header without a catalog is written as 2 */
#define UT_FORMAT_VERSION_MIN 1u /* format 1: no page-write bound */
#define UT_BOUND_UNKNOWN UINT64_MAX
#define UT_MAGIC "untornDB"
#define UT_PAGER_MIN_FRAMES 8u
#define UT_SNAPSHOT_BYTES_MIN (64u << 20)

/* Reserved companion files: PATH UT_WAL_SUFFIX (write-ahead log) and
 * PATH UT_DW_SUFFIX (double-write buffer). */
#define UT_WAL_SUFFIX "-wal"
#define UT_DW_SUFFIX "-dw"

/* Database header field offsets in page 0. */
#define UT_META_MAGIC 32
#define UT_META_VERSION 40
#define UT_META_PAGESIZE 44
#define UT_META_ROOT 48
#define UT_META_FREEHEAD 52
#define UT_META_PAGECOUNT 56
#define UT_META_FREECOUNT 60
#define UT_META_CKPT_LSN 64
#define UT_META_MAXLSN 72
#define UT_META_MODE 80
#define UT_META_CLEAN 84
#define UT_META_PAGEBOUND 88
#define UT_META_CATROOT 96
#define UT_META_TABLEID 104
#define UT_META_DEFKEYS 112

/* The format a header image m is written as: 3 with a catalog, else 2. */
static inline uint32_t ut_meta_format(const uint8_t *m)
{
	uint32_t root;

	memcpy(&root, m + UT_META_CATROOT, 4);
	return root ? UT_FORMAT_VERSION : UT_FORMAT_NO_TABLES;
}

/* ---- log hooks: where the write-ahead log plugs in ------------------- */

typedef struct ut_log_page {
	uint32_t pgno;
	const void *pre;  /* content before the transaction; NULL: new page */
	const void *post; /* content at commit (LSN field not yet stamped) */
	uint64_t touched; /* UT_TOUCH_BLOCKs where post may differ from pre */
	int image;        /* log post whole (the strategy's log_images: the
			   * page's first change since the latest checkpoint
			   * request), not its deltas */
} ut_log_page;

typedef struct ut_log_hooks {
	void *ctx;
	/* Called once per committing write transaction with its pages; logs
	 * them (durably when sync) and returns 0 with *lsn = the commit LSN,
	 * or a negative code (the transaction is then rolled back). */
	int (*log_commit)(void *ctx, const ut_log_page *pages, size_t n,
			  int sync, uint64_t *lsn);
	/* Make the log durable up to lsn; called before any page with a
	 * larger LSN than the durable LSN reaches the data file. */
	int (*log_flush_to)(void *ctx, uint64_t lsn);
	/* Hand the log to the OS up to lsn, no sync: called instead of
	 * log_flush_to before a lazy (sync=0) eviction write.  NULL: use
	 * log_flush_to. */
	int (*log_write_to)(void *ctx, uint64_t lsn);
	/* The largest LSN a committer now waits to be durable, 0 when none
	 * waits: the cleaner thread, when paced, lets that log write reach
	 * the device before its next batch.  NULL: never. */
	uint64_t (*log_waiting)(void *ctx);
	/* Every change up to redo_lsn is durable in the data file and
	 * redo_lsn is durably recorded in the header: the log may reclaim
	 * space.  NULL = nothing to do. */
	int (*log_checkpoint_done)(void *ctx, uint64_t redo_lsn);
} ut_log_hooks;

/* ---- pager ----------------------------------------------------------- */

typedef struct ut_pager ut_pager;
struct pver; /* a committed page version (pager_int.h) */

/* A pinned page in the pool.  data is UT_PAGE_SIZE bytes; it may be changed
 * only after ut_pager_write (or when the page came from ut_pager_alloc). */
typedef struct ut_pg {
	uint8_t *data;
	uint32_t pgno;
	/* 0: the writer's frame; UT_PG_PINNED: a reader's pin on a committed
	 * version (read-only); UT_PG_HELD: a committed version the reader's
	 * snapshot holds until it ends (ut_snap's memo): read-only, and its
	 * release does nothing. */
	int snap;
} ut_pg;
#define UT_PG_PINNED 1
#define UT_PG_HELD 2

/* A reader's snapshot: the database as of the last commit published
 * before ut_pager_snap_begin.  The caller owns the storage; the pager
 * knows it by its reader slot until ut_pager_snap_end. */
struct snapgrp;
#define UT_SNAP_MEMO 64      /* a power of two */
#define UT_SNAP_MEMO_MAX 48  /* the set at most 3/4 full */
typedef struct ut_snap {
	uint64_t lsn;          /* commits with an LSN <= lsn are visible */
	uint32_t root, npages; /* the header's root and page count then */
	uint32_t catroot;      /* and its catalog root (0: no tables) */
	uint64_t defkeys;      /* and its default-table key count (format 3) */
	int64_t began_ms;      /* CLOCK_MONOTONIC_COARSE, for the too-old detail */
	/* Its reader slot (version.c), or -1: registered in grp under the
	 * pool mutex (every slot was taken). */
	int slot;
	struct snapgrp *grp;
	/* Interior pages this snapshot read (an open-addressing set by page
	 * number, memo_key 0: empty; at most UT_SNAP_MEMO_MAX of them), each
	 * pinned once (memo_v) until the snapshot ends.  The version a
	 * snapshot sees of a page never changes, and a pinned version is
	 * never freed, so a later get of the page hands out the memo's view
	 * (UT_PG_HELD) without a pin, a lock or a shared write. */
	uint32_t memo_key[UT_SNAP_MEMO];
	unsigned nmemo;
	uint8_t memo_used[UT_SNAP_MEMO_MAX]; /* the slots taken, in order */
	ut_pg memo[UT_SNAP_MEMO];
	struct pver *memo_v[UT_SNAP_MEMO];
} ut_snap;

typedef struct ut_pager_config {
	size_t cache_bytes;
	int protect; /* enum ut_protect */
	int create;
	/* sync=0: evictions write pages with UT_FLUSH_LAZY (no sync, no
	 * protection copy) through the OS page cache, after the log is
	 * written (not synced) up to them.  Checkpoints stay DURABLE: no
	 * batch is lazy while one is pending (decided under the pool mutex
	 * with the batch's copies; a page a lazy batch in flight wrote is
	 * written again for a checkpoint begun meanwhile), nor during redo. */
	int lazy;
	const ut_log_hooks *hooks; /* NULL: no log */
	unsigned lock_wait_ms; /* wait this long for a live holder's lock */
	/* Open O_RDONLY under a shared lock, write and create nothing; a
	 * header not marked clean (recovery needed) is UT_EREADONLY. */
	int readonly;
	/* No cleaner thread: a thread that needs a frame writes the batch
	 * itself, and checkpoints run in the caller. */
	int inline_flush;
	/* Bound on the memory of page versions kept for snapshots (0: as
	 * cache_bytes, at least UT_SNAPSHOT_BYTES_MIN). */
	size_t snapshot_bytes;
} ut_pager_config;

/* Open the data file (UT_OPEN_DIRECT | UT_OPEN_LOCK) and check its header:
 * UT_ENOTDB not an untorn file, UT_EVERSION other version or page size,
 * UT_ECORRUPT checksum failure or truncated file, UT_ELOCKED second opener,
 * UT_EIO (detail: No such file or directory) when missing and !create.  An
 * empty (zero-length) file with create is initialised. */
int ut_pager_open(ut_vfs *vfs, const char *path, const ut_pager_config *cfg,
		  ut_pager **out);
/* Flush every dirty page (DURABLE), record the checkpoint, close. */
int ut_pager_close(ut_pager *p);

int ut_pager_get(ut_pager *p, uint32_t pgno, ut_pg **out);
/* The page as snapshot s sees it (s NULL: ut_pager_get).  The page is
 * read-only.  UT_ECORRUPT for a page number at or past the snapshot's page
 * count; UT_ESNAPSHOT when the version s needs was dropped for the
 * snapshot memory budget (then for every later call with s). */
int ut_pager_get_at(ut_pager *p, ut_snap *s, uint32_t pgno, ut_pg **out);
/* Release a page from ut_pager_get, _get_at or _alloc. */
void ut_pager_release(ut_pager *p, ut_pg *pg);
/* Data a reader derived from a page it got from ut_pager_get_at(p, s, ..)
 * (btree.c: an interior page's search index), kept with the committed
 * version the page is -- which never changes -- for every reader of it
 * until the version is freed (free()).  _aux: the kept data, or NULL.
 * _set_aux: aux (malloc'ed) is kept unless another reader's came first:
 * then aux is freed; returns the kept one.  Pages of the writer (s NULL)
 * keep nothing: NULL, and aux is freed. */
void *ut_pager_aux(ut_snap *s, const ut_pg *pg);
void *ut_pager_set_aux(ut_snap *s, ut_pg *pg, void *aux);

/* Begin and end a reader's snapshot.  Neither waits for the writer nor
 * takes a lock, but for the first begin after open, a begin that finds
 * every one of the RSLOTS reader slots taken, and an end after a commit
 * (which hands the versions the snapshot kept on): those take the pool
 * mutex for a moment (never held during page I/O, but by flush_inline's
 * writes).  Begin fails with UT_EFATAL when the cache may hold a failed
 * commit's changes. */
int ut_pager_snap_begin(ut_pager *p, ut_snap *s);
void ut_pager_snap_end(ut_pager *p, ut_snap *s);
typedef struct ut_snap_stats {
	uint64_t snapshots;      /* live snapshots */
	uint64_t versions;       /* superseded versions kept for them */
	uint64_t version_bytes;  /* their memory */
	uint64_t dropped;        /* versions dropped for the budget since open */
} ut_snap_stats;
void ut_pager_snap_stats(ut_pager *p, ut_snap_stats *out);
/* Journal pg into the write transaction (pre-image on first change).
 * The log will compare the whole page with its pre-image at commit. */
int ut_pager_write(ut_pager *p, ut_pg *pg);
/* The same, but the log compares only the blocks the caller records in
 * *touched (ut_page_touch, page.h): every byte the caller changes from
 * now to the commit must be recorded, or goes unlogged.  A later
 * ut_pager_write in the transaction marks the whole page again.  Builds
 * with UT_CHECK_TOUCHED (the sanitizer build) verify it at commit.  A
 * page new to the file in this transaction has no pre-image and is logged
 * whole: *touched is then NULL (page.h: nothing to record). */
int ut_pager_write_tracked(ut_pager *p, ut_pg *pg, uint64_t **touched);
/* The same as ut_pager_write for a caller that will rewrite every byte
 * of the page (ut_page_init first): its old content is not copied, so
 * read it before (pg->data) if needed.  Debug builds fill the page with
 * 0xa5 meanwhile. */
int ut_pager_write_whole(ut_pager *p, ut_pg *pg);
/* A fresh writable page (from the free list, else at the file's end),
 * initialised with ut_page_init(type), pinned. */
int ut_pager_alloc(ut_pager *p, int type, ut_pg **out);
/* Put pg on the free list and release it. */
int ut_pager_free(ut_pager *p, ut_pg *pg);

/* Header fields (page 0, through the pool). */
uint32_t ut_pager_root(ut_pager *p);
int ut_pager_set_root(ut_pager *p, uint32_t root);
/* The catalog's root (0: none yet) and setting it, in the write
 * transaction; a non-zero root makes the header format 3. */
uint32_t ut_pager_catalog_root(ut_pager *p);
int ut_pager_set_catalog_root(ut_pager *p, uint32_t root);
/* The header's default-table key count (UT_META_DEFKEYS; meaningful in
 * format 3 only), the writer's view, and its change in the transaction. */
uint64_t ut_pager_default_keys(ut_pager *p);
/* Before the first commit that sets the catalog root: make the header on
 * disk say format 3 (durably), and every header written by this handle
 * from now on (bound.c).  A no-op when the disk's header says 3. */
int ut_pager_raise_format(ut_pager *p);
int ut_pager_set_default_keys(ut_pager *p, uint64_t keys);
/* A new table's id, above the header's counter and above floor (the
 * handle's last id: an aborted create's id rolls back with the header,
 * but a handle given out for it must not come to name another table);
 * the counter is raised in the transaction. */
int ut_pager_new_table_id(ut_pager *p, uint64_t floor, uint64_t *id);
uint32_t ut_pager_page_count(ut_pager *p);
uint32_t ut_pager_free_count(ut_pager *p);
/* The free list's first trunk (0: empty), the writer's view. */
uint32_t ut_pager_free_head(ut_pager *p);

int ut_pager_begin(ut_pager *p);
/* Commit the write transaction; on failure it is rolled back. */
int ut_pager_commit(ut_pager *p, int sync);
void ut_pager_rollback(ut_pager *p);

/* Write all dirty pages durably and record the checkpoint LSN; returns
 * when done.  _async starts one in the cleaner thread and returns at once
 * (*started = 0: one was already under way; without a thread it is the
 * synchronous one). */
int ut_pager_checkpoint(ut_pager *p);
/* The same in two steps, so that the caller may hold the writer lock only
 * for the first: start one at the last commit and return its *ticket for
 * _wait (0: done already, without a cleaner thread: run here).  *again:
 * an older checkpoint was under way; *ticket is its own: wait for it,
 * then start again. */
int ut_pager_checkpoint_start(ut_pager *p, uint64_t *ticket, int *again);
int ut_pager_checkpoint_wait(ut_pager *p, uint64_t ticket);
int ut_pager_checkpoint_async(ut_pager *p, int *started);
/* Tests: the cleaner thread calls hook(ctx) after copying a batch and
 * before writing it, without the pool mutex (to hold a batch in flight). */
void ut_pager_set_batch_hook(ut_pager *p, void (*hook)(void *), void *ctx);
/* Since open: page-write batches, checkpoints completed, and the times a
 * thread had to wait for the cleaner to free a frame. */
void ut_pager_cleaner_stats(ut_pager *p, uint64_t *batches, uint64_t *checkpoints,
			    uint64_t *waits);

const char *ut_pager_path(ut_pager *p);
ut_vfs *ut_pager_vfs(ut_pager *p);
ut_io_counters *ut_pager_counters(ut_pager *p);
/* A copy of the counters, from any thread, without a lock (each field
 * read atomically; flush.h ut_ctr_add). */
void ut_pager_counters_copy(ut_pager *p, ut_io_counters *out);
int ut_pager_protect(ut_pager *p);
/* Commits of this handle log page images (fullpage), now or once
 * recovery is done: the log must take them (wal.h format 2). */
int ut_pager_logs_images(ut_pager *p);
/* Recovery's checkpoint is done: a fullpage open whose recovery wrote
 * through double-write (the crash happened in another mode, so its log
 * has no page images) switches to fullpage.  No-op otherwise. */
int ut_pager_recovered(ut_pager *p);
int ut_pager_readonly(ut_pager *p);
/* Frames currently allocated / pinned by callers (tests; the pins the
 * writer's memo of interior pages holds for itself are not counted). */
size_t ut_pager_frames(ut_pager *p);
size_t ut_pager_pinned(ut_pager *p);
/* UT_EFATAL once a page write failed; writes are refused afterwards. */
int ut_pager_fatal(ut_pager *p);
/* Make the handle refuse writes (UT_EFATAL); with poison_reads also reads
 * (ut_pager_get), because the cache may hold changes whose commit failed.
 * The calling thread's ut_errdetail (the failure) is kept, the first
 * time: every later UT_EFATAL's detail says the handle failed, and why. */
void ut_pager_set_fatal(ut_pager *p, int poison_reads);
int ut_pager_poisoned(ut_pager *p);
/* 1 when this open initialised an empty data file (a new database; stale
 * PATH "-dw" was removed, and the engine removes a stale PATH "-wal"). */
int ut_pager_created(ut_pager *p);
/* 1 when the header found at open said the last close was clean (no
 * recovery needed); 0 after a crash or for a database created now. */
int ut_pager_was_clean(ut_pager *p);
/* The largest LSN of any page in the data file or among the copies in
 * PATH "-dw" that passes its checksum (a full read of both: for recovery
 * after a crash, where such a page proves the log was durable that far),
 * and in what (wn bytes) which page or copy carries it. */
int ut_pager_max_page_lsn(ut_pager *p, uint64_t *max, char *what, size_t wn);
/* The page-write bound the header had at open (UT_BOUND_UNKNOWN: none,
 * or lazy writes since; format 1 has none). */
uint64_t ut_pager_page_bound(ut_pager *p);
/* Recovery's evidence (the bound, or the full read's highest LSN) of how
 * new the pages on disk are: from now on a page read from the file with a
 * larger LSN is UT_ECORRUPT (a header lying about B is caught where it
 * matters), and the next bound written is at least lsn. */
void ut_pager_bound_evidence(ut_pager *p, uint64_t lsn);
/* Frames holding dirty pages. */
size_t ut_pager_dirty_frames(ut_pager *p);
/* LSN of the last commit (or of the checkpoint at open). */
uint64_t ut_pager_lsn(ut_pager *p);
/* Raise the last-commit and durable LSN (after log recovery). */
void ut_pager_set_lsn(ut_pager *p, uint64_t lsn);
/* The header's redo start, and the largest LSN it vouches for. */
uint64_t ut_pager_redo_lsn(ut_pager *p);
uint64_t ut_pager_header_max_lsn(ut_pager *p);
/* The page-write handle (direct where allowed; the buffered handle for
 * lazy non-atomic pagers) and the buffered (read) handle; the same handle
 * when O_DIRECT was refused.  Why page writes are not direct, or NULL. */
ut_file *ut_pager_file(ut_pager *p);
ut_file *ut_pager_read_file(ut_pager *p);
const char *ut_pager_direct_note(ut_pager *p);
/* Why the flush strategy in use was chosen (static text of the handle). */
const char *ut_pager_protect_reason(ut_pager *p);

/* Install (or, NULL, remove) the log hooks after open. */
void ut_pager_set_hooks(ut_pager *p, const ut_log_hooks *hooks);

/* Redo (see the contract above).  Each replayed transaction's pages are
 * checked whole when it ends (ut_page_check): a violation is UT_ECORRUPT
 * from the next ut_pager_redo or from ut_pager_redo_end. */
int ut_pager_redo_begin(ut_pager *p);
int ut_pager_redo(ut_pager *p, uint64_t lsn, uint32_t pgno, uint32_t off,
		  uint32_t len, const void *data);
/* A whole page image logged by the transaction of commit LSN lsn: the
 * page becomes img whatever the data file holds (a page there failing its
 * checksum was torn: counted in torn_repaired); the deltas after it apply
 * on top.  img's own page number must be pgno, and it is checked whole
 * like any page (UT_ECORRUPT naming the LSN).  Page 0 is never imaged. */
int ut_pager_redo_image(ut_pager *p, uint64_t lsn, uint32_t pgno,
			const void *img);
/* Tests only: nonzero plants a bug, the pager logs no page image (deltas
 * instead) in a mode whose strategy needs them; the crash tests must
 * catch it.  Process-wide. */
extern int ut_pager_sabotage_images;
/* Tests only: nonzero plants a bug, the writer's incremental private copy
 * (journal.c, shadows) misses the lowest block its last commit changed
 * above block 0.  Builds that check every such copy against a full one
 * (UT_DEBUG_COPY: Debug builds and the sanitizer build) abort at the first
 * miss; others return the stale block.  Process-wide. */
extern int ut_pager_sabotage_shadow;
/* Tests only: nonzero when a pager opens, its pre-image slack (PRE_SLACK,
 * 24 MiB, the room shadows share with pre-images above the cache bound)
 * is this many pages instead, so that a small database makes shadows go
 * for want of room.  Process-wide. */
extern size_t ut_pager_test_pre_slack;
/* Tests: shadows held now, and dropped for room since open (journal.c). */
void ut_pager_shadows(ut_pager *p, size_t *held, uint64_t *dropped);
/* Tests: version objects made since open (none is freed before close:
 * spares are reused), so the most ever in use at once (version.c). */
size_t ut_pager_version_objects(ut_pager *p);
int ut_pager_redo_end(ut_pager *p);
/* Before redo first writes a page: gate(ctx) is UT_OK if recovery will
 * not refuse, else its code, which the redo call that needed the write
 * returns.  NULL: no gate.  Call before ut_pager_redo_begin. */
void ut_pager_set_redo_gate(ut_pager *p, int (*gate)(void *ctx), void *ctx);
/* During redo: the log will change page pgno (ctx: the pager), so the
 * page may be read ahead (ut_wal_set_prefetch's hint). */
void ut_pager_redo_hint(void *ctx, uint32_t pgno);

#endif /* UT_PAGER_H */

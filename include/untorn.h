/*
 * untorn.h - the public API of libuntorn, an embedded ordered key-value store
 * that keeps its 16 KiB pages untorn.
 *
 * This is the only header a user includes.  The API is deliberately small:
 * open a database, begin a transaction, put/get/del, walk a cursor, commit or
 * abort.  Every call that can fail returns an int: 0 on success, UT_NOTFOUND
 * (positive) when a key or the end of a cursor is not there, a negative UT_E*
 * code for every error.  ut_strerror() explains a code; ut_errdetail() gives
 * the calling thread's last error with the file and page it concerns.
 *
 * Keys are byte strings of 1..UT_MAX_KEY bytes ordered by memcmp, then length.
 * Values are 0..UT_MAX_VALUE bytes; larger ones give UT_ETOOBIG.
 *
 * ABI: the shared library's soname (libuntorn.so.UT_ABI_VERSION) changes
 * only when a program built against an older header could break.  The two
 * structs that grow, ut_options and ut_stats, begin with their size as the
 * caller compiled it (set by ut_options_default, passed by ut_stats_get),
 * and new fields are only ever appended: a program built against an older
 * header gets defaults for the fields it does not know, and one built
 * against a newer header is told (UT_EVERSION) instead of being misread.
 *
 * Concurrency: one process opens a database at a time (a second waits up to
 * lock_timeout_ms, then gets UT_ELOCKED).  The lock goes with the process:
 * a restart right after a crash (even SIGKILL with writes in
 * flight; ut_open waits for those writes to land) opens at once.  Inside
 * it, any number of threads may use one ut_db.  Write transactions are
 * serialized (ut_begin of a second writer waits for the first to end).
 * A read-only transaction reads a snapshot: the database as of the last
 * commit published before its ut_begin (every commit whose ut_commit
 * returned, and possibly one whose ut_commit is still making its log
 * durable), for every get, cursor and scan, for its whole life, whatever
 * commits, checkpoints and evictions happen meanwhile.  Readers never
 * wait for the writer and the writer never waits for readers (a reader's
 * cache hit takes one of 32 page-table locks for a moment; misses, the
 * writer and snapshot begin/end take the buffer pool's mutex for moments,
 * never across page I/O -- except with flush_inline, a test mode, where
 * the writer writes pages under it); ut_checkpoint waits for the writer only to start.  A write
 * transaction sees its own changes.  A thread may hold read transactions
 * and begin a write transaction.  A ut_txn and its cursors belong to one
 * thread at a time.
 *
 * Snapshot memory: a page the writer changes while read transactions
 * that see it are open keeps its replaced version in memory exactly as
 * long as one of them is open (short read transactions coming and going
 * beside a long one keep nothing once they end: the long one holds at
 * most one version of each page changed since it began).  These versions
 * are bounded by snapshot_bytes; past it those only the oldest read
 * transactions see are dropped, and a read transaction that then needs
 * one gets UT_ESNAPSHOT ("snapshot too old", detail: how long it ran and
 * what was kept) for that call and may be retried as a new transaction:
 * never wrong data, and the writer never waits.  ut_stats reports what is
 * kept.
 *
 * Memory: the buffer pool holds about cache_bytes of pages, plus a bounded
 * allowance for the running write transaction's private page copies (beyond it
 * they count against cache_bytes).  Pages a write transaction changed stay
 * in memory until it commits (no-steal), so one very large transaction may
 * exceed cache_bytes until it ends; the pool shrinks back afterwards.
 * Budget for a process doing ordinary transactions, no long readers:
 * resident memory <= cache_bytes + 41 MiB.  That is 24 MiB of allowance
 * (the copies; between transactions the same room keeps the writer's
 * shadow copies, so a page changed again copies only what the last commit
 * touched), 2 MiB of spare buffers (64 kept resident, one slab mapped
 * ahead) and ~14 MiB of the rest (code, log buffers, the page table,
 * version objects, threads): measured 104.1 MiB at 64 MiB of cache
 * (bench_kv -n 1000000).  The allowance stays 24 MiB rather than 16: a
 * 1000-update transaction over a million keys changes ~950 of the ~9,000
 * leaves plus their parents, ~15.5 MiB of copies, so 16 MiB would leave
 * next to no room for the shadows between transactions and put a bigger
 * transaction's copies against the cache; and 16 MiB still measured 96.0
 * MiB, no margin under a cache + 32 MiB line.
 *
 * Files: the data file is the path given to ut_open; PATH "-wal" (log) and
 * PATH "-dw" (double-write buffer) are reserved for the engine.  Creating a
 * new database (missing or empty data file) removes a stale "-wal"/"-dw"
 * left at that path by a deleted one.  Do not delete "-wal" (it holds
 * committed transactions not yet checkpointed) or, for a database in
 * doublewrite mode that was not closed cleanly, "-dw" (ut_open then refuses
 * with UT_ECORRUPT naming the missing file).  A missing "-wal" is likewise
 * refused (UT_ECORRUPT) when the database was not closed cleanly after a
 * checkpoint, since commits may live only there; to open anyway, accepting
 * their loss, create "-wal" as an empty file (a new log is then started
 * above every LSN in the data file and "-dw"; ut_open returns UT_OK with
 * ut_errdetail reporting the loss) and run `untorn check`.  A
 * missing "-wal" beside a cleanly closed database is recreated that way.
 *
 * Damaged files: ut_open recovers every acknowledged commit or refuses with
 * UT_ECORRUPT and an ut_errdetail saying what is missing; it never opens
 * with acknowledged commits silently gone when the files hold evidence of
 * them.  Evidence is: valid log records past a damaged one (at any offset:
 * bytes inserted into or removed from the log shift them), a page in the
 * data file or a "-dw" copy whose LSN lies beyond the end of the log (read
 * as one number: the header's page-write bound, which no page on disk
 * exceeds and which the log had durably reached when it was written), a
 * header that was not closed cleanly without its log, a zeroed or damaged
 * database header (page 0) beside pages or a log (only a file that never
 * held data -- at most two pages, no keys, no log -- is initialised again).
 * A damaged header slot of the log is rebuilt from the log's own records.
 * Refusing changes no file: the log is truncated (its torn tail cut) only
 * after recovery decided the log ends there.
 *
 * The one undetectable case: a log cut short (truncated, at a record
 * boundary or inside the last records) past the page-write bound, with no
 * page in the data file or "-dw" newer than the cut, looks exactly like a log whose last writes a
 * power cut prevented; the commits after the cut are lost.  As in SQLite,
 * keep the log with its database (copy, back up and move them together).
 *
 * Durability: a commit appends the transaction's page changes (byte-range
 * deltas) to the write-ahead log; with sync=1 ut_commit returns once the log
 * is durable up to the commit (fdatasync shared by concurrent committers:
 * group commit).  Commits write no data pages: checkpoints and cache
 * eviction write them through the protection mode, after the log covering
 * them is durable.  A checkpoint runs automatically when the log since the
 * last one grows past a threshold (by default 64 MiB, 256 MiB with sync=0;
 * defaults that may change) or, with sync=1, when dirty pages pass half
 * the cache.
 *
 * sync=0 is like SQLite's synchronous=OFF: commits and evictions do not wait
 * for the disk (checkpoints still do).  ut_commit hands the commit's log
 * records to the OS (written, not synced) before it returns; a committing
 * thread syncs the log about once a second; evicted pages are written
 * through the OS page cache (in atomic mode still O_DIRECT + RWF_ATOMIC)
 * with no sync and no double-write copy, after the log covering them is
 * written.  A crash of the process loses nothing committed.  A power failure
 * or OS crash, as with SQLite's OFF, may lose recent commits and may leave
 * the database inconsistent: a page evicted since the last checkpoint may be
 * torn (caught by its checksum: UT_ECORRUPT, never served) or ahead of the
 * log (ut_open then refuses with UT_ECORRUPT: the log that page needs is
 * gone).  Use sync=1 where power failures matter.
 * ut_checkpoint and ut_close make everything durable with full protection.
 *
 * ut_open recovers: torn-page repair (doublewrite), then redo of the log
 * from the header's checkpoint, then a checkpoint.  After a crash every
 * transaction whose sync=1 commit returned is there, no uncommitted one
 * leaves a trace, and no page is half old, half new.
 *
 * Protection: UT_PROTECT_AUTO picks atomic when the data file is O_DIRECT
 * and statx reports an atomic write unit range containing 16384 (on the
 * device's fast path), else doublewrite (never unsafe; fullpage only when
 * asked by name); ut_stats.protect tells which, ut_protect_reason why.
 * Why doublewrite is the fallback: the one three-way figure so far (QEMU,
 * XFS 16 KiB, throttled NVMe, durable single-key updates over data 4x the
 * cache, the default 64 MiB checkpoint interval, a quiet host; 3 rounds,
 * bench/RESULTS.md 2026-12-07 07:17) gave fullpage 34.1-35.3 commits/s
 * against doublewrite's 43.3-43.7 (0.79-0.81x): nearly every commit there
 * changes a page for the first time since the checkpoint, so it logs a
 * 16 KiB image (10.1 KiB of log a commit against 0.2 KiB) and writes
 * 42.3 KiB to the device against 33.7 KiB, which its fewer flushes (1.01
 * against 1.82 a commit) do not pay for.  Full-page writes cost per page
 * first changed in a checkpoint interval, double-write per page written
 * back, so fullpage can only win where few distinct pages change many
 * times between checkpoints (a small hot set, a long interval).  The
 * checkpoint-interval sweeps found no interval where it is ahead: in the
 * VM (vm-bench.sh --ckpt-sweep 1M,4M,16M,64M, 2 rounds, quiet host,
 * bench/RESULTS.md 2026-12-07 15:31) fullpage made 27-34 commits/s
 * against doublewrite's 43-44 (0.62-0.80x) with 1.25-1.62x its device
 * bytes a commit; on a host disk without atomic writes (bench_durable
 * --ckpt-sweep 4M..256M, 2026-12-07 09:50) the two were within each
 * other's spread at every interval.  So AUTO stays atomic else
 * doublewrite; choose fullpage by name (it logs more but recovers a
 * torn page from the log alone, with no second copy of the file).
 *
 * Full-page images (UT_PROTECT_FULLPAGE, PostgreSQL's full_page_writes):
 * the first change to a page after each checkpoint logs the whole page
 * (with the commit that changes it), later changes until the next
 * checkpoint log deltas; pages are written in place with no "-dw" copy.
 * Recovery rebuilds a torn page from its image and redoes the deltas
 * after it.  Cost: a commit that touches a page for the first time since
 * the checkpoint logs 16 KiB for it (ut_stats.page_images), so the log
 * grows with the number of distinct pages changed per checkpoint
 * interval; a longer interval means fewer images.  The log written in
 * this mode has format 2 (builds before fullpage refuse it with
 * UT_EVERSION).  The header page is not imaged: its fields fit in its
 * first 4 KiB sector and the rest is zeros in every version, so a write
 * torn at a sector boundary leaves it old or new (the premise PostgreSQL
 * makes for pg_control).  A database that crashed in another mode has no
 * images in its log: opened in fullpage mode, its recovery writes pages
 * through the "-dw" file, and fullpage takes over after recovery's
 * checkpoint.  In atomic mode a page failing its
 * checksum is corruption: it is counted (corrupt_pages), named in
 * ut_errdetail, and UT_ECORRUPT is returned instead of its data.
 *
 * Write failures: if the log cannot be written or synced (UT_ENOSPC when the
 * filesystem is full, UT_EIO), the commit that needed it returns that code
 * and is not acknowledged (it may or may not survive a reopen: "in doubt",
 * never half).  The handle then fails: ut_begin (read-only too, since the
 * cache may hold the failed commit's changes), ut_checkpoint and the rest
 * return UT_EFATAL; ut_close releases it (returning UT_EFATAL).  A page
 * read failing with UT_EIO in a write transaction (the device failing)
 * fails the handle for writes the same way, the read named as the cause
 * in the detail; read-only transactions go on with what can be read.
 * Reopen,
 * after freeing space, recovers a consistent state with every acknowledged
 * commit.  Recovery writes too: if it finds the disk full, ut_open returns
 * UT_ENOSPC, and its detail says "recovery needs up to N bytes free" (in
 * doublewrite mode up to the whole double-write file besides the pages).
 * A page write cut short by the full disk past the last checkpoint's pages
 * (a partial last page) is rebuilt from the log.  Likewise a page write
 * refused by the stack (an RWF_ATOMIC write failing with EINVAL/EOPNOTSUPP:
 * UT_EINVAL/UT_ENOTSUP is returned once, never retried without RWF_ATOMIC)
 * makes further writes UT_EFATAL.
 */
#ifndef UNTORN_H
#define UNTORN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions the shared library exports; everything else in it is
 * hidden.  A program that compiles the sources into itself (the Python
 * module does) may define UT_API empty to export none of them. */
#ifndef UT_API
#if defined(__GNUC__)
#define UT_API __attribute__((visibility("default")))
#else
#define UT_API
#endif
#endif

#define UT_VERSION_STRING "0.3.0"
/* The shared library's soname number: libuntorn.so.UT_ABI_VERSION. */
#define UT_ABI_VERSION 1

#define UT_PAGE_SIZE 16384u
#define UT_MAX_KEY 1024u
#define UT_MAX_VALUE (4u * 1024u * 1024u)

/* Return codes.  0 = success. */
#define UT_OK 0
#define UT_NOTFOUND 1 /* key absent, or cursor past the last key */

#define UT_EINVAL -1     /* bad argument (NULL, empty key, wrong flags, a
			  * ut_options whose size was never set) */
#define UT_ENOMEM -2     /* out of memory */
#define UT_EIO -3        /* I/O error from the operating system */
#define UT_ECORRUPT -4   /* a page or log record failed its checksum or invariants */
#define UT_ELOCKED -5    /* another process has the database open */
#define UT_ETOOBIG -6    /* key or value larger than the limits above */
#define UT_ENOSPC -7     /* the filesystem is full */
#define UT_EREADONLY -8  /* write through a read-only transaction */
#define UT_ENOTDB -9     /* the file is not an untorn database */
#define UT_EVERSION -10  /* a database of another format version or page
			  * size, or a ut_options from a newer untorn.h */
#define UT_ENOTSUP -11   /* requested protection not supported by this file's stack */
#define UT_EFATAL -12    /* an earlier write failed; the handle refuses further writes */
#define UT_EBUSY -13     /* the operation conflicts with open transactions */
#define UT_ESNAPSHOT -14 /* a read transaction outlived the snapshot memory budget */

/* How pages are protected against torn writes. */
enum ut_protect {
	UT_PROTECT_AUTO = 0,    /* atomic if statx says the stack can, else double-write */
	UT_PROTECT_ATOMIC,      /* RWF_ATOMIC in-place page writes; error at open if unsupported */
	UT_PROTECT_DOUBLEWRITE, /* copy to a double-write file first, then in place */
	UT_PROTECT_UNSAFE,      /* in place, unprotected: crash tests' negative control only */
	/* appended in 0.3: */
	UT_PROTECT_FULLPAGE     /* in place, each page's first change after a
				 * checkpoint logged whole (see "Full-page
				 * images" above) */
};

/* ut_begin flags */
#define UT_RDONLY 1u

typedef struct ut_db ut_db;
typedef struct ut_txn ut_txn;
typedef struct ut_cursor ut_cursor;

/* Options for ut_open.  Fill with ut_options_default, then change fields:
 * never build one from scratch, since size must be set.  Fields are only
 * appended, never moved. */
typedef struct ut_options {
	size_t size;           /* sizeof(ut_options) as the caller compiled it */
	size_t cache_bytes;    /* buffer pool bound; default 64 MiB, minimum a few pages */
	enum ut_protect protect; /* default UT_PROTECT_AUTO */
	int create;            /* create the database if missing (default 1) */
	int sync;              /* 1: commit durable on return (default); 0: "OFF" above */
	unsigned lock_timeout_ms; /* wait for another opener, see ut_open
				   * (default UT_DEFAULT_LOCK_TIMEOUT_MS) */
	int readonly;          /* 1: read-only open, see ut_open (default 0) */
	int flush_inline;      /* 0 (default): a background page-cleaner thread
				* writes dirty pages in batches and runs
				* checkpoints while commits go on; 1: no
				* thread: the thread that needs a cache frame
				* writes pages itself and checkpoints run in the
				* committing thread (deterministic I/O order) */
	/* appended in 0.3: */
	size_t snapshot_bytes; /* bound on the memory of page versions kept
				* for read transactions (0, the default: as
				* cache_bytes, at least 64 MiB);
				* see "Concurrency" */
} ut_options;

/* The smallest ut_options ut_open accepts: size and the four fields before
 * lock_timeout_ms.  A struct that ends after any field is accepted; the
 * fields it does not hold take their defaults. */
#define UT_OPTIONS_SIZE_MIN (offsetof(ut_options, sync) + sizeof(int))

#define UT_DEFAULT_LOCK_TIMEOUT_MS 500u

/* What an open handle did so far.  Fields are only appended, never moved. */
typedef struct ut_stats {
	size_t size;               /* bytes filled in by ut_stats_get */
	int protect;               /* enum ut_protect actually in use (never AUTO) */
	uint64_t page_writes;      /* in-place data page writes */
	uint64_t dw_page_writes;   /* pages written to the double-write file */
	uint64_t log_bytes;        /* bytes appended to the write-ahead log */
	uint64_t syncs;            /* fsync/fdatasync calls issued */
	uint64_t torn_repaired;    /* torn pages restored at open from the
				    * double-write file, or (fullpage) from
				    * their image in the log */
	uint64_t corrupt_pages;    /* pages found failing their checksum and not repairable */
	int direct_io;             /* 1: data page writes use O_DIRECT */
	int uring;                 /* 1: page write batches go through io_uring */
	uint64_t flush_batches;    /* page-write batches (cleaner or inline) */
	uint64_t checkpoints;      /* checkpoints completed */
	uint64_t frame_waits;      /* a thread needed a cache frame and waited
				    * for the page cleaner (it fell behind) */
	/* appended in 0.3: */
	uint64_t snapshots;         /* read transactions open now */
	uint64_t snapshot_versions; /* superseded page versions kept for them */
	uint64_t snapshot_bytes;    /* their memory */
	uint64_t snapshot_dropped;  /* versions dropped for the budget
				     * (snapshot_bytes) since open */
	uint64_t page_images;       /* whole-page images logged since open
				     * (fullpage mode; in log_bytes too) */
} ut_stats;

/* The smallest ut_stats ut_stats_get fills: its size field. */
#define UT_STATS_SIZE_MIN (sizeof(size_t))

/* Fill o with the defaults (64 MiB cache, UT_PROTECT_AUTO, create=1,
 * sync=1, lock_timeout_ms = UT_DEFAULT_LOCK_TIMEOUT_MS, the rest 0) and
 * set o->size to the caller's sizeof(*o).  ut_options_init is the
 * function behind it: it writes at most size bytes; returns UT_EINVAL when
 * size is below UT_OPTIONS_SIZE_MIN (nothing written), UT_EVERSION when it
 * is larger than this library's ut_options (the known fields are filled,
 * the rest zeroed; ut_open will refuse it). */
#define ut_options_default(o) ut_options_init((o), sizeof(*(o)))
UT_API int ut_options_init(ut_options *o, size_t size);

/* Open (or create) the database at path.  o may be NULL for defaults.
 * On success *db is a handle to close with ut_close.  Errors, each with
 * ut_errdetail naming the file: UT_ENOTDB not an untorn file (or an empty
 * file with create=0; with create=1 an empty file is initialised),
 * UT_EVERSION other format version or page size (of a header page that
 * passes its checksum), UT_ECORRUPT header page checksum failure, zeroed
 * header of a database, truncated file, or a damaged or missing log that
 * held acknowledged commits (see "Damaged files" above), UT_ELOCKED opened
 * already (by another process or another ut_open in this one) and still so
 * after o->lock_timeout_ms (like SQLite's busy timeout; 0 = do not wait, at
 * most 65535), UT_EIO with detail "No such file or directory" when the file
 * is missing and create=0, UT_ENOTSUP for a protection mode this build or
 * file cannot do.
 *
 * ut_open reads only o->size bytes of *o.  o->size below
 * UT_OPTIONS_SIZE_MIN (0: not filled by ut_options_default) is UT_EINVAL;
 * above this library's sizeof(ut_options) (a program built against a newer
 * untorn.h than the library it runs with) is UT_EVERSION; the detail names
 * both sizes.
 *
 * Read-only open (o->readonly = 1): no file is written or created (no
 * "-dw", no "-wal", no checkpoint, no log truncation), so files without
 * write permission can be read, and several read-only openers may share
 * the database (a read-write one excludes them).  Only write transactions
 * are refused (UT_EREADONLY), and ut_checkpoint.  A database that was not
 * closed cleanly needs recovery, and recovery writes: such an open fails
 * with UT_EREADONLY (detail: "not closed cleanly ...") -- open it
 * read-write once to recover.  ut_stats.protect is the mode the database
 * last ran in. */
UT_API int ut_open(const char *path, const ut_options *o, ut_db **db);

/* Flush, checkpoint and close.  Open transactions must have ended
 * (UT_EBUSY otherwise, and the handle stays open). */
UT_API int ut_close(ut_db *db);

/* Begin a transaction; flags 0 (read-write) or UT_RDONLY. */
UT_API int ut_begin(ut_db *db, unsigned flags, ut_txn **txn);

/* Commit and free txn.  With sync=1 the changes are durable on return.
 * On failure the transaction is aborted and freed all the same. */
UT_API int ut_commit(ut_txn *txn);

/* End any transaction (read-only ones included) and free it; its changes
 * leave no trace. */
UT_API void ut_abort(ut_txn *txn);

/* Insert or overwrite key. */
UT_API int ut_put(ut_txn *t, const void *key, size_t klen, const void *val,
		  size_t vlen);

/* Look key up.  On success *val is malloc'd (caller frees; NULL when vlen
 * is 0 is allowed) and *vlen its length.  UT_NOTFOUND when absent. */
UT_API int ut_get(ut_txn *t, const void *key, size_t klen, void **val,
		  size_t *vlen);

/* Look key up without copying (as LMDB's mdb_get): *val points at the
 * value inside the database's page, valid until the transaction ends (not
 * only until the next call), and must not be written to.  In a read-only
 * transaction the page stays pinned in memory until then, once however
 * many values are taken from it (a long read transaction holds at most a
 * pin per page it read); in a write transaction, or for a value too big
 * for one page, *val is a copy the transaction owns and frees when it
 * ends (one per call: use ut_get for those in a long transaction). */
UT_API int ut_get_ref(ut_txn *t, const void *key, size_t klen, const void **val,
	       size_t *vlen);

/* Copy the database as of one snapshot (a read transaction's) to a new
 * file dest_path while writers go on, like LMDB's mdb_env_copy or
 * SQLite's backup API.  The copy is a complete, cleanly closed database
 * that opens without a log.  dest_path and its "-wal"/"-dw" must not
 * exist (UT_EINVAL, detail names the file).  Cost to writers: none waits
 * for it; the pages it reads go through the buffer pool (it evicts what
 * the writer would have kept), and the versions the writer replaces
 * meanwhile are kept for it, within snapshot_bytes (beyond that the
 * backup fails with UT_ESNAPSHOT and removes the partial copy). */
UT_API int ut_backup(ut_db *db, const char *dest_path);

/* Delete key; UT_NOTFOUND when absent. */
UT_API int ut_del(ut_txn *t, const void *key, size_t klen);

/* Cursors walk keys in order.  A cursor lives inside its transaction and is
 * invalidated by ut_put/ut_del through the same transaction (re-seek;
 * until then next/get return UT_EINVAL).  Ending the transaction detaches
 * its cursors (every call but ut_cursor_close then gives UT_EINVAL); they
 * must still be freed with ut_cursor_close.  A page failing its checksum
 * makes get/seek/next return UT_ECORRUPT, never the data. */
UT_API int ut_cursor_open(ut_txn *t, ut_cursor **c);
/* Position at the first key >= key; klen 0 = the first key.
 * UT_NOTFOUND when there is no such key. */
UT_API int ut_cursor_seek(ut_cursor *c, const void *key, size_t klen);
/* Advance; UT_NOTFOUND past the last key. */
UT_API int ut_cursor_next(ut_cursor *c);
/* Current entry; pointers valid until the cursor moves or closes. */
UT_API int ut_cursor_get(ut_cursor *c, const void **key, size_t *klen,
			 const void **val, size_t *vlen);
UT_API void ut_cursor_close(ut_cursor *c);

/* ---- Named tables -------------------------------------------------------
 *
 * A database holds the default, unnamed table (what ut_put, ut_get,
 * ut_del and ut_cursor_open use, and all a database made before tables
 * existed holds) and any number of named tables, each its own ordered
 * keyspace with the same key and value limits.  Names are C strings of
 * 1..UT_TABLE_NAME_MAX bytes (no NUL inside).
 *
 * Tables are created, emptied and dropped inside write transactions, and
 * one transaction may change any number of tables: its commit (one log
 * commit) is atomic across all of them, crash recovery brings back all of
 * it or none, and ut_abort leaves no trace of it, creates and drops
 * included.  A read transaction's snapshot covers every table and the
 * list of tables: it never sees a table half created or a drop half done.
 * A drop puts every page of the table (leaves, interior pages, overflow
 * chains) on the free list in the same transaction, so later writes
 * reuse the space without a compaction.
 *
 * A ut_table handle belongs to the ut_db it was opened in (not to the
 * transaction): it stays valid in later transactions of that handle until
 * ut_close frees it, and opening the same table again returns the same
 * handle.  In a transaction it refers to the table of its name as that
 * transaction sees it, so a reader that began before a drop still reads
 * the dropped table.  Errors of the calls below, beside those of the
 * matching default-table calls: UT_EINVAL (ut_errdetail says which) for a
 * bad name (empty, longer than UT_TABLE_NAME_MAX), a handle of another
 * ut_db, a handle of a table dropped (by this transaction, or before its
 * snapshot), or a handle whose creating transaction aborted;
 * UT_ECORRUPT naming the table when its catalog entry is damaged.
 *
 * Format: a database gets format 3 when its first table is created (its
 * header then holds the catalog's root); until then nothing changes on
 * disk, so format 1 and 2 files open and work unchanged (their keys in
 * the default table), and a database without tables stays readable by
 * older builds, which refuse format 3 with UT_EVERSION. */
typedef struct ut_table ut_table;

#define UT_TABLE_NAME_MAX 255u
/* ut_table_open flags */
#define UT_CREATE 1u /* create the table when it does not exist */

/* What ut_table_stat and ut_table_next report: counts kept in the
 * catalog, so no scan is needed. */
typedef struct ut_table_info {
	char name[UT_TABLE_NAME_MAX + 1]; /* NUL-terminated */
	uint64_t keys;  /* keys in the table */
	uint64_t pages; /* its pages (leaves, interior, overflow), each 16 KiB */
	uint64_t reserved[4]; /* 0 */
} ut_table_info;

/* Open the table called name in transaction t; *tbl is its handle.
 * UT_NOTFOUND when there is none and flags lack UT_CREATE; with
 * UT_CREATE a missing table is created empty (a write transaction only:
 * UT_EREADONLY in a read-only one).  The lookup is one catalog search
 * plus a check of the entry (its root page, and no other entry naming
 * that page: a walk of the catalog, O(tables)) the first time a
 * transaction opens the table. */
UT_API int ut_table_open(ut_txn *t, const char *name, unsigned flags,
			 ut_table **tbl);
/* Drop the table: its pages go to the free list and its name is free for
 * a new table; the handle is refused (UT_EINVAL) from then on in this
 * transaction and, once committed, in later ones.  Cursors on it must
 * not be used again.  Cost: every page of the table is read and rewritten
 * as a free page in this transaction, so until it commits the table's
 * pages are held in memory (as any transaction's changed pages are), and
 * the commit logs about the table's size (bench/RESULTS.md, "Named
 * tables"). */
UT_API int ut_table_drop(ut_txn *t, ut_table *tbl);
/* Delete every key of the table (its pages to the free list but one, an
 * empty root); the table and its handle remain. */
UT_API int ut_table_clear(ut_txn *t, ut_table *tbl);
/* The table's name and counts as t sees them.  tbl NULL: the default
 * table (name ""); its key count is kept in the header from the first
 * table's create on (format 3), and counted by a walk of its tree in a
 * database that never had a table; its pages are the pages in use less
 * the catalog's and the named tables' (a walk of the catalog, not of the
 * table). */
UT_API int ut_table_stat(ut_txn *t, ut_table *tbl, ut_table_info *info);
/* List tables in name order: the first table whose name sorts above
 * after (memcmp, then length; NULL or "" = the first table) into *info.
 * UT_NOTFOUND past the last.  The default table is not listed. */
UT_API int ut_table_next(ut_txn *t, const char *after, ut_table_info *info);
/* The handle's table name (valid while the handle is), or NULL. */
UT_API const char *ut_table_name(ut_table *tbl);

/* ut_put, ut_get, ut_get_ref, ut_del and ut_cursor_open on table tbl
 * (NULL: the default table, exactly as the calls without t).  A cursor
 * walks its own table only. */
UT_API int ut_tput(ut_txn *t, ut_table *tbl, const void *key, size_t klen,
		   const void *val, size_t vlen);
UT_API int ut_tget(ut_txn *t, ut_table *tbl, const void *key, size_t klen,
		   void **val, size_t *vlen);
UT_API int ut_tget_ref(ut_txn *t, ut_table *tbl, const void *key, size_t klen,
		       const void **val, size_t *vlen);
UT_API int ut_tdel(ut_txn *t, ut_table *tbl, const void *key, size_t klen);
UT_API int ut_tcursor_open(ut_txn *t, ut_table *tbl, ut_cursor **c);

/* Write every dirty page through the protection mode and record a
 * checkpoint, so the log can be reclaimed.  Waits for running transactions
 * to end: do not call it while holding one. */
UT_API int ut_checkpoint(ut_db *db);

/* Fill *st with the handle's statistics.  ut_stats_read is the function
 * behind it: it writes at most size bytes (the caller's sizeof(ut_stats))
 * and sets st->size to the bytes it filled, min(size, this library's
 * sizeof(ut_stats)): fields past st->size are zero (a library older than
 * the caller's header does not know them).  UT_EINVAL when size is below
 * UT_STATS_SIZE_MIN. */
#define ut_stats_get(db, st) ut_stats_read((db), (st), sizeof(*(st)))
UT_API int ut_stats_read(ut_db *db, ut_stats *st, size_t size);

/* Why the protection mode in use was chosen, e.g. "auto: O_DIRECT and
 * statx atomic write unit 4096..65536 (opt 0) covers a 16384-byte page",
 * "auto: not atomic (<the statx or O_DIRECT reason>)" or "requested by
 * name".  Valid while db is open. */
UT_API const char *ut_protect_reason(ut_db *db);

/* Why the data file is not written with O_DIRECT (e.g. the filesystem
 * refused it, as tmpfs does), or NULL when it is.  Valid while db is open. */
UT_API const char *ut_direct_note(ut_db *db);

/* ut_check verifies the whole database as it is on disk plus in the cache:
 * every page's checksum, and every B+tree invariant (keys sorted within and
 * across pages, separator keys bounding their subtrees, equal leaf depth,
 * sibling links, overflow chains, free-list pages unreferenced by the tree,
 * every page reachable exactly once), and with named tables the catalog
 * and every table the same way, each table's key and page counts against
 * its catalog entry.  It takes a read transaction, so it
 * must not be called while this thread holds a write transaction.
 * One line per problem goes to report (may be NULL), prefixed "page N: ".
 * Returns UT_OK when clean, UT_ECORRUPT when any problem was found, another
 * negative code when the check itself could not run.  res may be NULL. */
typedef struct ut_check_result {
	uint64_t pages_total;      /* pages in the file */
	uint64_t pages_checked;    /* pages whose checksum was verified */
	uint64_t bad_checksums;    /* pages failing their checksum */
	uint64_t invariant_errors; /* B+tree / free-list problems found */
	uint64_t keys;             /* keys found in leaves (of every table) */
	uint32_t depth;            /* the default table's tree height (1 = the
				    * root is a leaf) */
} ut_check_result;

UT_API int ut_check(ut_db *db, FILE *report, ut_check_result *res);

/* What the file layer reports for a path and what UT_PROTECT_AUTO would
 * choose there, without opening a database (`untorn info` prints it).
 * Fields are only appended, never moved. */
typedef struct ut_probe_info {
	size_t size;               /* bytes filled in by ut_probe */
	int exists;                /* path exists */
	int probed;                /* UT_PROBED_*: what the fields describe */
	uint64_t file_size;        /* path's size, when it exists */
	int statx_errno;           /* 0, or the errno statx failed with */
	int statx_atomic_reported; /* statx filled in STATX_WRITE_ATOMIC */
	int atomic_supported;      /* STATX_ATTR_WRITE_ATOMIC was set */
	uint32_t atomic_unit_min;  /* stx_atomic_write_unit_min, bytes */
	uint32_t atomic_unit_max;  /* stx_atomic_write_unit_max, bytes */
	uint32_t atomic_segments_max;
	uint32_t atomic_unit_max_opt; /* largest on the fast path; 0 = no limit reported */
	int atomic_fits_page;      /* one UT_PAGE_SIZE write can be RWF_ATOMIC */
	int open_rc;               /* the trial open with O_DIRECT: 0 or UT_E* */
	int direct_io;             /* it got O_DIRECT */
	int uring;                 /* page write batches would use io_uring */
	int auto_protect;          /* what UT_PROTECT_AUTO would choose */
	char auto_reason[160];     /* why */
	char direct_note[160];     /* why no O_DIRECT; "" when it was accepted */
	char open_detail[256];     /* why the trial open failed, when it did */
} ut_probe_info;

#define UT_PROBED_FILE 0    /* path itself */
#define UT_PROBED_SCRATCH 1 /* a scratch file made (and removed) in path's directory */
#define UT_PROBED_DIR 2     /* path's directory: no file could be created there */

/* Probe path (an existing file, or where one would be created).  Writes at
 * most size bytes of *pi and sets pi->size to the bytes filled.  UT_OK when
 * *pi describes the path, even when statx or the trial open failed (their
 * fields say so); UT_EIO when neither path nor its directory exists;
 * UT_EINVAL for a NULL or empty argument or size below sizeof(size_t). */
#define ut_probe(path, pi) ut_probe_read((path), (pi), sizeof(*(pi)))
UT_API int ut_probe_read(const char *path, ut_probe_info *pi, size_t size);

/* A static English explanation of rc. */
UT_API const char *ut_strerror(int rc);

/* The calling thread's last error in detail (file, page, errno), or "".
 * Every call above clears it first, so it describes the latest call only
 * (ut_abort, ut_cursor_get/close, ut_stats_get, ut_protect_reason,
 * ut_direct_note and the name functions leave it as it was).  A successful
 * ut_open leaves it "" unless it accepted a loss (an empty "-wal", see
 * Files), which it then reports. */
UT_API const char *ut_errdetail(void);

/* Name of a protection mode: "auto", "atomic", "doublewrite", "unsafe",
 * "fullpage". */
UT_API const char *ut_protect_name(int protect);

#ifdef __cplusplus
}
#endif

#endif /* UNTORN_H */

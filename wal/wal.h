/*
 * wal/wal.h - the write-ahead log: format, append + group commit, recovery.
 *
 * Contract (what the engine may rely on, and what it must do):
 *
 *  - Redo-only.  The engine hands the log the changes of one COMMITTED
 *    transaction at a time (ut_wal_append_txn) as byte-range deltas of 16 KiB
 *    pages, under its writer lock; the log encodes them as DELTA records
 *    (and whole page images, ut_wal_delta.image, as IMAGE records)
 *    followed by one COMMIT record, contiguously.  Nothing of an aborted
 *    transaction ever reaches the log.
 *
 *  - LSNs are byte positions in an endless logical log.  A record's LSN is
 *    where it starts; the LSN returned for a transaction (its "commit LSN")
 *    is where its COMMIT record ENDS, i.e. the log position after it.  The
 *    engine stamps every page the transaction changed with that LSN and, at
 *    redo, applies a delta iff page_lsn < lsn (idempotent replay).  All
 *    deltas of one transaction carry the same lsn, and one page may get
 *    several: compare lsn with the page LSN as it was read from the data
 *    file, not with one stamped during this replay.  LSNs never go
 *    backwards, also across log resets and reopens (a log created anew
 *    starts at cfg.initial_lsn, which the engine sets above its page LSNs).
 *    LSN 0 is never used.
 *
 *  - ut_wal_append_txn only buffers (a transaction of more than 8 MiB of
 *    records also writes them out, unsynced, 8 MiB at a time, before its
 *    COMMIT: the log's memory is bounded, and records without their COMMIT
 *    are never replayed); nothing is durable until
 *    ut_wal_flush_to(lsn) returns UT_OK, which makes every byte below lsn
 *    durable (write + fdatasync; ut_wal_write_to only writes).  Concurrent
 *    flush_to calls share one
 *    fdatasync (group commit, leader/follower): the engine appends under its
 *    writer lock, releases it, then calls flush_to outside it.  All calls are
 *    thread-safe (one internal mutex); I/O is done without the mutex held,
 *    except during a log reset (ut_wal_checkpoint_done), which is rare.
 *
 *  - Failure: if a write or fdatasync fails (UT_ENOSPC, UT_EIO), no commit in
 *    the failed batch is acknowledged: every flush_to waiting for it returns
 *    that code, the log tries to truncate the file back to the last durable
 *    byte, and the handle FAILS: later appends return UT_EFATAL and
 *    flush_to returns the original code for any lsn above durable_lsn.  The
 *    engine must then refuse writes and reopen; recovery after reopen
 *    replays every acknowledged commit.  (A failed commit whose bytes reached
 *    the disk before the error may still be replayed after a reopen if the
 *    truncation also failed: its outcome is "in doubt", never half.)  A
 *    big transaction's append, which writes, fails the same way and
 *    returns the write's code; ut_wal_failed tells the caller the handle
 *    is failed.
 *
 *  - Open/recover: ut_wal_open validates the log header (a foreign file is
 *    UT_ENOTDB, a damaged header UT_ECORRUPT, another version UT_EVERSION;
 *    a missing or empty file is created).  Before the first append on an
 *    existing log the engine must call ut_wal_recover(from_lsn = the redo
 *    start its data-file header records, or 0 for the log start).  Recovery
 *    calls apply() for the deltas of committed transactions only, in log
 *    order, with their commit LSN.  It stops at the first record that fails
 *    validation (length, CRC32C, LSN = position, salt of the current log
 *    epoch, delta bounds, COMMIT naming its transaction's first record):
 *      * corruption in the middle: a valid record of this epoch lies past
 *        the bad one, at ANY byte offset, and either (a) not at the position
 *        its LSN gives -- bytes were inserted or removed, which no crash
 *        does, since records are only written at their own position -- or
 *        (b) with a "durable floor" (the durable LSN when it was appended)
 *        beyond the bad record, i.e. the bad bytes had been fsynced before
 *        later commits were written.  Replay stops before the bad record
 *        (what precedes it has been applied), nothing is truncated, the
 *        handle refuses appends, and UT_ECORRUPT is returned with
 *        info->stop_reason = UT_WAL_STOP_CORRUPT and ut_errdetail() naming
 *        the file offset and the LSN range lost.
 *      * outside evidence: the end found is below the LSN given to
 *        ut_wal_require_end (a data page newer than the log): UT_ECORRUPT
 *        the same way, nothing truncated.
 *      * torn tail: none of the above -> the log is cut at the end of the
 *        last COMMIT (an unfinished transaction is discarded too), the file
 *        is truncated there and synced, so stale bytes can never be read as
 *        records later.  Returns UT_OK; info->stop_reason =
 *        UT_WAL_STOP_TAIL, bytes_discarded says how much.  The truncation
 *        is the only repair, and it comes after that decision.
 *    A corrupted or cut last synced batch with no later commit and no newer
 *    page cannot be told from a torn tail; it is cut like one (as in every
 *    log without a side channel).
 *
 *  - Damaged header slot: with only one slot valid at open, recovery looks
 *    for records of a NEWER epoch (another salt, at positions implying a
 *    start above the valid slot's); if their chain from from_lsn reaches
 *    further than the valid epoch's, the current slot was damaged: that
 *    epoch is used (info->header_rebuilt) and its header rewritten once
 *    recovery succeeded.  A reset cut short after its tail copy leaves a
 *    copy that never reaches further, so it is not taken.
 *
 *  - Reclaim: ut_wal_checkpoint_done(redo_lsn) tells the log that every page
 *    change below redo_lsn is durable in the data file and redo_lsn is durably
 *    recorded as the redo start.  When at least cfg.reset_min_bytes are
 *    reclaimable and the live tail [redo_lsn, end) is no longer than the
 *    reclaimable prefix, the log resets: it copies the live tail to the start
 *    of the data area re-stamped with a new random salt, syncs, then writes a
 *    new header (epoch + 1, new salt, start_lsn = redo_lsn) into the other of
 *    two header slots and syncs.  When everything is checkpointed
 *    (redo_lsn = end of log) the reset is just the header write, done
 *    whatever the amount.  A crash at any point leaves either the old or
 *    the new epoch whole (recover from the redo start the engine recorded:
 *    the reclaimed prefix of the old epoch may have been overwritten).
 *    Records of older epochs that remain in the file have another salt and
 *    an LSN that does not match their position; they are never replayed.
 *    So the file stays bounded by the log volume between checkpoints (plus
 *    the live tail).  The stats give bytes_since_checkpoint so the engine
 *    can checkpoint when the log passes a threshold.
 *
 *  - A failure during a reset (write/sync of the copy or the header) also
 *    fails the handle: the on-disk state is one whole epoch, but which one is
 *    ambiguous until a reopen.
 *
 *  - File I/O goes only through the ut_vfs given to ut_wal_open.  With
 *    cfg.direct the file is opened for direct I/O where the file layer
 *    allows it (else buffered): writes then cover whole device blocks
 *    (f->dio_align), the partial block before a batch rewritten with its
 *    own bytes, the rest of its last block zeroed, and the file is kept
 *    ahead of small batches (under 64 KiB) by zero-filled growth
 *    (64 KiB of room, zeroed at most 16 KiB a batch, best effort), so
 *    their fdatasync has no metadata to write but once per 16 KiB, and no
 *    batch waits on the device behind a large write of zeros; a larger
 *    batch extends the file itself.
 *    Recovery takes zeros after the last commit for that room, not for a
 *    torn tail: it keeps them and reports a clean end.  Buffered, a batch
 *    write rewrites the last partial 4 KiB sector of the durable log with
 *    the same bytes.  Either way a torn block or sector never damages
 *    durable records.  Locking the log file against other processes is the
 *    engine's business.
 *
 * File format (little-endian, every record 8-byte aligned):
 *
 *   [0, 4096)     header slot 0    \  64 bytes used each; the valid slot with
 *   [4096, 8192)  header slot 1    /  the higher epoch is current
 *   [8192, ...)   records; the record with LSN l is at 8192 + (l - start_lsn)
 *
 *   header: magic "UTORNWAL" | u32 version | u32 header bytes=64 |
 *           u64 epoch | u64 salt | u64 start_lsn | u32 page size |
 *           u32 data offset | u64 0 | u32 0 | u32 crc32c(bytes 0..59)
 *   version 1: DELTA and COMMIT records; version 2 (cfg.images): IMAGE
 *   records too.  Both are read; a log stays version 2 once it is (its
 *   live tail may hold images), and builds that know only version 1
 *   refuse it (UT_EVERSION) instead of taking an image for damage.
 *
 *   record header (40 bytes):
 *     0  u32 crc32c of bytes [4, padded length)   (header rest + payload + pad)
 *     4  u8  type (1 DELTA, 2 COMMIT, 3 IMAGE)   5 u8 0   6 u16 0
 *     8  u32 length, unpadded, header included
 *     12 u32 count (DELTA: entries; IMAGE: 1; COMMIT: deltas and images
 *            in the transaction)
 *     16 u64 lsn (= its position)       24 u64 salt of the epoch
 *     32 u64 durable floor (durable LSN when the record was appended)
 *   DELTA payload: count x { u32 pgno | u16 offset | u16 len | len bytes }
 *   COMMIT payload: u64 txn id | u64 LSN of the transaction's first record
 *   IMAGE payload: u32 pgno | u32 0 | UT_PAGE_SIZE bytes, the page as the
 *     transaction left it (its CRC and LSN fields not stamped); length
 *     exactly 40 + 8 + UT_PAGE_SIZE, anything else is not a record.  It is
 *     a change of its transaction like a DELTA (and, like any valid
 *     record, evidence of durable commits past a damaged one).
 *   padding: zeros up to a multiple of 8.
 */
#ifndef UT_WAL_H
#define UT_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "ut_io.h"

typedef struct ut_wal ut_wal;

/* One byte range of one page: bytes [offset, offset + len) of page pgno
 * become data.  offset + len <= UT_PAGE_SIZE, len >= 1. */
typedef struct ut_wal_delta {
	uint32_t pgno;
	uint32_t offset;
	uint32_t len;
	const void *data;
	/* 1: a whole page image (offset 0, len UT_PAGE_SIZE), logged as an
	 * IMAGE record; recovery hands it back with image = 1 and the page
	 * number it was logged with (the engine checks it against the
	 * image's own header: the log does not look inside pages) */
	int image;
} ut_wal_delta;

typedef struct ut_wal_config {
	uint64_t initial_lsn;     /* first LSN of a newly created log (0 -> 1); pass
				     above every page LSN if the data file exists */
	uint64_t reset_min_bytes; /* reclaim only when this much is reclaimable
				     (0 -> 1 MiB) */
	int direct;               /* ask for direct I/O (see "File I/O") */
	int images;               /* the engine will append page images: the
				     header says format 2 (written at creation,
				     or rewritten once recovery of a format-1
				     log succeeded) */
} ut_wal_config;

enum ut_wal_stop {
	UT_WAL_STOP_END = 0, /* clean end of file at a transaction boundary */
	UT_WAL_STOP_TAIL,    /* torn/garbage/stale tail or unfinished txn, cut */
	UT_WAL_STOP_CORRUPT, /* bad record followed by provably durable ones */
	UT_WAL_STOP_APPLY    /* apply() returned an error */
};

typedef struct ut_wal_recovery_info {
	uint64_t start_lsn;       /* where the scan began */
	uint64_t end_lsn;         /* end of the last replayable commit = next LSN */
	uint64_t records;         /* valid records scanned */
	uint64_t txns_replayed;   /* committed transactions passed to apply */
	uint64_t deltas_applied;  /* apply() calls */
	uint64_t txns_discarded;  /* unfinished trailing transactions dropped */
	uint64_t txns_reread;     /* replayed by reading their records again:
				     over 8 MiB, not held in memory */
	uint64_t bytes_discarded; /* bytes cut off the end of the file */
	int stop_reason;          /* enum ut_wal_stop */
	uint64_t bad_offset;      /* file offset of the record that stopped it */
	uint64_t bad_lsn;         /* its LSN */
	int header_rebuilt;       /* the current header slot was damaged; the
				     epoch was taken from its records */
} ut_wal_recovery_info;

typedef struct ut_wal_stats {
	uint64_t bytes_appended;   /* record bytes appended since open */
	uint64_t commits;          /* transactions appended since open */
	uint64_t writes;           /* batch writes issued */
	uint64_t syncs;            /* fdatasyncs issued */
	uint64_t resets;           /* log resets (space reclaimed) */
	uint64_t bytes_since_checkpoint; /* next LSN - last checkpoint redo LSN */
	uint64_t log_bytes;        /* next LSN - start LSN of the current epoch */
	uint64_t next_lsn;
	uint64_t durable_lsn;
	uint64_t written_lsn;      /* handed to the OS, maybe not synced */
	uint64_t epoch;
	uint64_t buffer_bytes;     /* held by the log's append buffers */
} ut_wal_stats;

/* Open the log at path, creating it if missing or empty.  cfg may be NULL. */
int ut_wal_open(ut_vfs *vfs, const char *path, const ut_wal_config *cfg,
		ut_wal **out);

/* Replay committed transactions from from_lsn (0 = log start) through
 * apply, cut a torn tail, and make the handle ready for appends.  apply may
 * be NULL (just find the end).  A nonzero return of apply stops recovery and
 * is returned.  info may be NULL.  See the contract above. */
int ut_wal_recover(ut_wal *w, uint64_t from_lsn,
		   int (*apply)(void *ctx, uint64_t lsn, const ut_wal_delta *d),
		   void *ctx, ut_wal_recovery_info *info);

/* Before ut_wal_recover: name each page the log's deltas will change to
 * hint(ctx, pgno) while replay is up to UT_WAL_PREFETCH_AHEAD bytes of log
 * behind, so that the caller may start reading those pages (a hint only:
 * the walk ahead stops at the first record that does not check, and the
 * same page may be named more than once). */
#define UT_WAL_PREFETCH_AHEAD (2u << 20)
void ut_wal_set_prefetch(ut_wal *w, void (*hint)(void *ctx, uint32_t pgno),
			 void *ctx);

/* From inside ut_wal_recover's apply callback only (the log's mutex is
 * held): will recovery accept where the log ends?  Walks the rest of the
 * log, from the transaction being replayed, as recovery will, applying
 * nothing: UT_OK (remembered: later calls are free), or UT_ECORRUPT with
 * the ut_errdetail recovery would give (or an I/O error).  The caller
 * asks before it changes any file with what it replayed, so that a
 * refused recovery changes nothing. */
int ut_wal_recover_decide(ut_wal *w);

/* Evidence from outside the log (what: e.g. "page 7 of PATH") that the log
 * was durable up to lsn: ut_wal_recover then refuses (UT_ECORRUPT) to end
 * below it instead of cutting a tail.  Call before ut_wal_recover; the
 * largest lsn given counts. */
void ut_wal_require_end(ut_wal *w, uint64_t lsn, const char *what);

/* Buffer n deltas and a COMMIT; *commit_lsn = the LSN that flush_to must
 * reach for this transaction to be durable.  Does not write or sync. */
int ut_wal_append_txn(ut_wal *w, const ut_wal_delta *d, size_t n,
		      uint64_t *commit_lsn);

/* Make everything below lsn durable (lsn beyond the end = everything). */
int ut_wal_flush_to(ut_wal *w, uint64_t lsn);
/* Hand everything below lsn to the OS (write, no fdatasync): enough for a
 * process crash, not for a power failure.  sync=0 databases write data
 * pages after this instead of ut_wal_flush_to.  Failure as for flush_to. */
int ut_wal_write_to(ut_wal *w, uint64_t lsn);

uint64_t ut_wal_durable_lsn(ut_wal *w);
/* The largest LSN a thread now in ut_wal_flush_to waits to be durable
 * (a committer, usually), or 0 when none waits: the page cleaner lets
 * that flush go to the device before its next batch. */
uint64_t ut_wal_sync_waiting(ut_wal *w);
uint64_t ut_wal_next_lsn(ut_wal *w);
/* 0, or the code that failed the handle (see "Failure" above). */
int ut_wal_failed(ut_wal *w);
/* 1 when ut_wal_open started a new log: the file was missing, empty, or
 * held only the zeros of a creation cut short (nothing to replay). */
int ut_wal_created(ut_wal *w);

/* The engine has made every change below redo_lsn durable in the data file
 * and recorded redo_lsn durably; redo_lsn must be a commit LSN (or the log
 * start/end).  May reset the log to reclaim space. */
int ut_wal_checkpoint_done(ut_wal *w, uint64_t redo_lsn);

void ut_wal_stats_get(ut_wal *w, ut_wal_stats *st);

/* Flush what is buffered (unless the handle failed or was never recovered)
 * and free w, whatever the flush returns; returns the flush's code.  A log
 * with nothing live (fully checkpointed and reset) is truncated to its
 * header slots. */
int ut_wal_close(ut_wal *w);

const char *ut_wal_stop_name(int stop_reason);

#define UT_WAL_DATA_OFF 8192u
#define UT_WAL_REC_HDR 40u
#define UT_WAL_MAX_REC (1u << 20) /* upper bound on one record's length */

#endif /* UT_WAL_H */

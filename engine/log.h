/*
 * engine/log.h - glue between the pager's log hooks (pager.h) and the
 * write-ahead log (wal/wal.h): page diffs become WAL deltas, the WAL rule
 * and checkpoints reach the log, and recovery replays the log into the
 * pager.  Engine-internal.
 *
 * Images: a page marked image (the fullpage strategy's first change after
 * a checkpoint) is logged whole, one IMAGE record, instead of its deltas;
 * recovery hands it to ut_pager_redo_image.
 *
 * Deltas: for each page of a committing transaction, the byte ranges where
 * the post-image differs from the pre-image (a new page: from zeroes),
 * skipping the page header's CRC (bytes 0..3) and LSN (8..15), which are
 * stamped when the page is sealed; ranges closer than UT_LOG_MERGE_GAP
 * bytes are merged so records stay compact.
 *
 * Appends never sync (group commit: the engine calls ut_log_flush_to, or
 * for sync=0 ut_log_write_to, after releasing its writer lock).  When more
 * than UT_LOG_BUF_MAX bytes are buffered the append path writes them out,
 * so the buffer stays bounded while committers queue for a flush.
 */
#ifndef UT_LOG_H
#define UT_LOG_H

#include <stdint.h>

#include "pager.h"
#include "wal.h"

#define UT_LOG_MERGE_GAP 16u
#define UT_LOG_BUF_MAX (1u << 20)

typedef struct ut_log ut_log;

/* Open PATH "-wal" on vfs.  initial_lsn: first LSN if the log is created.
 * images: commits will log page images (ut_log_page.image; the log's
 * format 2).  *existed tells whether the file was there before. */
int ut_log_open(ut_vfs *vfs, const char *dbpath, uint64_t initial_lsn,
		int images, ut_log **out, int *existed);
/* Replay committed transactions from redo_lsn (0: log start) into the
 * pager (ut_pager_redo_*), then raise the pager's LSN to the log's end. */
int ut_log_recover(ut_log *lg, ut_pager *p, uint64_t redo_lsn,
		   ut_wal_recovery_info *info);
/* The hooks for ut_pager_config.hooks (ctx = lg). */
const ut_log_hooks *ut_log_hooks_of(ut_log *lg);
int ut_log_flush_to(ut_log *lg, uint64_t lsn);
/* Hand the log to the OS up to lsn, no sync (sync=0 commits). */
int ut_log_write_to(ut_log *lg, uint64_t lsn);
/* A write or sync of the log failed: the engine must refuse writes. */
int ut_log_failed(ut_log *lg);
ut_wal *ut_log_wal(ut_log *lg);
int ut_log_close(ut_log *lg);

#endif /* UT_LOG_H */

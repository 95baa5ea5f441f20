/*
 * engine/db.h - engine-internal view of a ut_db, for tests and tools that
 * need to look below the public API (tree depth, free pages).  Not part of
 * the public API; untorn.h users never need it.
 */
#ifndef UT_DB_H
#define UT_DB_H

#include "untorn.h"
#include "pager.h"
#include "ut_io.h"

/* The pager behind an open handle. */
ut_pager *ut_db_pager(ut_db *db);

/* ut_open on any vfs (ut_open = this with ut_vfs_posix()); the crash tests
 * open databases on the simulated disk (io/ut_simdisk.h) with it. */
int ut_db_open_vfs(ut_vfs *vfs, const char *path, const ut_options *o,
		   ut_db **db);

/* The options the handle runs with, as ut_open imported them (the
 * caller's struct over the defaults; size is this library's). */
const ut_options *ut_db_options(ut_db *db);

/* Automatic checkpoint threshold in log bytes since the last checkpoint
 * (0: the default, 64 MiB; 256 MiB with sync=0), and how many automatic
 * checkpoints ran. */
void ut_db_set_checkpoint_bytes(ut_db *db, uint64_t bytes);
uint64_t ut_db_auto_checkpoints(ut_db *db);

/* The snapshot a read-only transaction reads (NULL for a write one). */
ut_snap *ut_txn_snap(ut_txn *t);

/* The write-ahead log behind the handle (tests: ut_wal_stats_get). */
struct ut_wal;
struct ut_wal *ut_db_wal(ut_db *db);

#endif /* UT_DB_H */

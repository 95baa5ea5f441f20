/*
 * bench/count_vfs.h - SQLite's writes and syncs, counted: a VFS shim named
 * "count" over the default VFS, for bench_durable's SQLite figures (its
 * checkpoints' main-file bytes as page bytes, the -wal's as log bytes,
 * xSync calls as syncs).
 *
 * Contract: the counters are process-wide, shared by every connection
 * opened through "count" (threads add to them atomically) and never
 * reset: a run takes the difference of two readings.
 */
#ifndef BENCH_COUNT_VFS_H
#define BENCH_COUNT_VFS_H

#include <stdint.h>
#include <sqlite3.h>

/* Register "count" (not as the default VFS); a second call does nothing. */
void register_count_vfs(void);
/* The totals so far: bytes written to main database files and to -wal
 * files, and xSync calls. */
void count_vfs_totals(uint64_t *main_bytes, uint64_t *wal_bytes, uint64_t *syncs);

#endif /* BENCH_COUNT_VFS_H */

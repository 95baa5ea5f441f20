/*
 * bench/tables_part.h - the named-table figures (issue 33), shared by
 * bench_tables and bench_kv -T.
 *
 *   open   ntables tables named "table%05d" with 10 keys each; then
 *          opens times: a read transaction begins, opens a random table
 *          by name (ut_table_open: the catalog search and the entry's
 *          check), gets one key, ends.  The open alone is timed; p50,
 *          p99 and p99.9 are printed, with the whole begin..end.
 *   drop   a table of bytes bytes of 1000-byte values is loaded (sync
 *          off, one commit per 1000 puts), checkpointed, then dropped in
 *          one transaction: the drop call, its commit and the checkpoint
 *          after it are timed, the drop commit's log bytes and the
 *          process's peak RSS printed, and the data file's size after
 *          the load, after the drop, and after loading the same bytes
 *          into a new table (which reuses the freed pages: the file does
 *          not grow).
 *   check  a 1000-key table created and dropped (the free list is not
 *          empty), the handle closed and opened again: the open, the
 *          first write transaction's begin (which checks the free list
 *          against every tree: engine/freecheck.c) and a second begin
 *          are timed.
 * The database is DIR/bench-tables.db (removed before and after).
 * Prints markdown tables to stdout; exits the process on an error.
 */
#ifndef BENCH_TABLES_PART_H
#define BENCH_TABLES_PART_H

#include <stddef.h>

int bench_tables_run(const char *dir, size_t cache_mib, long ntables,
		     long opens, long long bytes);

#endif

/*
 * io/ut_simdisk.h - a simulated disk for in-process crash tests.
 *
 * ut_simdisk_vfs() gives a ut_vfs whose files live in memory.  Each file has
 * a durable image (what survives power loss for sure) and, since its last
 * sync, an ordered list of pending operations (writes with their flags,
 * truncates); reads see the durable image with the pending operations
 * applied, as a page cache would.
 *
 * I/O events.  Every write (each member of a write_batch counts as one),
 * truncate, sync and sync_dir that passes its argument checks is an event,
 * numbered from 0 in the order the disk sees them.  ut_simdisk_crash_at(d, N)
 * arms a power cut at event N: that operation is not performed and returns
 * UT_EIO with the detail "simulated power loss", and every later call on the
 * disk (open, read, write, sync, size, exists, ... on any file) fails the
 * same way, until ut_simdisk_reboot().  Only close always works.  Calls that
 * fail their checks (misaligned direct I/O, atomic write that does not fit,
 * read-only handle, capacity) are not events and change nothing.
 *
 * Reboot.  ut_simdisk_reboot(d, seed) makes the post-crash state, file by
 * file: each pending operation, in order, is independently kept, dropped,
 * or - a write without UT_WRITE_ATOMIC only - kept in part, sector by sector
 * (4 KiB sectors at file offsets multiple of 4096, each kept or dropped
 * independently).  A UT_WRITE_ATOMIC write is kept whole or dropped; a
 * truncate is kept or dropped; synced data always survives.  UT_WRITE_WRITEBACK
 * changes nothing here: until a sync the bytes may sit in a device's
 * volatile cache, so a crash may still drop or tear them.  A kept piece of
 * a write beyond the end of file extends the file (zero-filled gap).  The
 * result is a function of the seed and the operations only.  Reboot may be
 * called without an armed crash (power cut "now").  After it the disk works
 * normally; the event counter CONTINUES (it is not reset), the armed crash is
 * cleared, every lock is released, and handles opened before the reboot are
 * dead (every call but close fails with UT_EIO).  Files unlinked while open
 * are gone.
 *
 * Namespace operations (create, remove) are durable at once; sync_dir is an
 * event but otherwise does nothing.
 *
 * Other behaviour:
 *  - capacity (ut_simdisk_set_capacity, 0 = unlimited): a write that would
 *    make the sum of all files' sizes exceed it fails with UT_ENOSPC and
 *    writes nothing.  Truncate is not limited (sparse).
 *  - atomic writes: atomic_info reports supported with unit_min..unit_max
 *    (default 4096..65536, segments_max 1); ut_simdisk_set_atomic(d, 0, 0)
 *    makes it unsupported.  Like the kernel, a UT_WRITE_ATOMIC write needs a
 *    direct handle (else UT_ENOTSUP), is UT_ENOTSUP when unsupported, and is
 *    UT_EINVAL unless its length is a power of two within the unit range and
 *    its offset a multiple of its length.
 *  - UT_OPEN_DIRECT always gives f->direct = 1 with dio_align 512, and then
 *    buffers must be aligned to UT_IO_ALIGN and lengths and offsets be
 *    multiples of 512 (else UT_EINVAL): this catches engine bugs that a
 *    buffered filesystem would hide.
 *  - UT_OPEN_LOCK: flock-like, one exclusive holder per file within a disk;
 *    a second open with UT_OPEN_LOCK gets UT_ELOCKED until the holder closes.
 *  - fault hook (ut_simdisk_set_fault_hook): called before every write,
 *    write batch, truncate and sync, on the calling thread and without the
 *    disk's mutex, so it may sleep (a slow device) or block (to hold a
 *    thread at an I/O); a non-zero return fails that one operation with
 *    that code -- no power cut, nothing changes, not an event -- as a
 *    device error (EIO on a log's fdatasync) would.
 *  - thread-safe: one mutex per disk.
 */
#ifndef UT_SIMDISK_H
#define UT_SIMDISK_H

#include <stddef.h>
#include <stdint.h>

#include "ut_io.h"

typedef struct ut_simdisk ut_simdisk;

/* A new, empty, powered-on disk; NULL on out of memory. */
ut_simdisk *ut_simdisk_new(void);
/* Free the disk and its files.  Close every handle first. */
void ut_simdisk_free(ut_simdisk *d);
/* The vfs of this disk (valid until ut_simdisk_free). */
ut_vfs *ut_simdisk_vfs(ut_simdisk *d);

/* Arm a power cut at event n (see above); replaces any earlier arming.
 * UT_SIMDISK_NEVER disarms. */
#define UT_SIMDISK_NEVER UINT64_MAX
void ut_simdisk_crash_at(ut_simdisk *d, uint64_t n);
/* Events so far (the number the next event will get). */
uint64_t ut_simdisk_event_count(ut_simdisk *d);
/* 1 when the power is off (a crash happened and no reboot yet). */
int ut_simdisk_crashed(ut_simdisk *d);

/* How reboot treats pending operations. */
enum ut_simdisk_policy {
	UT_SIMDISK_RANDOM = 0, /* keep / drop / tear, from the seed */
	UT_SIMDISK_KEEP_ALL,   /* every pending operation survives whole */
	UT_SIMDISK_DROP_ALL,   /* only synced data survives */
	UT_SIMDISK_TEAR_ALL    /* non-atomic writes keep their even-numbered
				* sector pieces only (0, 2, ...); atomic writes
				* and truncates are kept: the negative control */
};
/* Power cut now (if not already) and boot again; UT_SIMDISK_RANDOM policy. */
int ut_simdisk_reboot(ut_simdisk *d, uint64_t seed);
int ut_simdisk_reboot_policy(ut_simdisk *d, uint64_t seed,
			     enum ut_simdisk_policy policy);

/* What the last reboot did with pending operations, over all files. */
typedef struct ut_simdisk_reboot_stats {
	uint64_t ops_kept;        /* writes and truncates kept whole */
	uint64_t ops_dropped;     /* dropped whole */
	uint64_t ops_torn;        /* non-atomic writes kept in part: some
				   * sector pieces kept and some dropped */
	uint64_t sectors_kept;    /* sector pieces of torn writes */
	uint64_t sectors_dropped;
} ut_simdisk_reboot_stats;
void ut_simdisk_last_reboot(ut_simdisk *d, ut_simdisk_reboot_stats *st);

/* Capacity in bytes over all files; 0 = unlimited (default). */
void ut_simdisk_set_capacity(ut_simdisk *d, uint64_t bytes);
/* Sum of all files' current sizes. */
uint64_t ut_simdisk_used(ut_simdisk *d);
/* Atomic write unit reported for every file; (0, 0) = unsupported. */
void ut_simdisk_set_atomic(ut_simdisk *d, uint32_t unit_min, uint32_t unit_max);
/* stx_atomic_write_unit_max_opt to report with it (default 0 = none); only
 * reported, writes up to unit_max behave the same either way. */
void ut_simdisk_set_atomic_opt(ut_simdisk *d, uint32_t unit_max_opt);

/* The operations a fault hook sees. */
enum ut_simdisk_op {
	UT_SIMDISK_OP_WRITE = 1, /* write or write_batch (one call each) */
	UT_SIMDISK_OP_TRUNCATE,
	UT_SIMDISK_OP_SYNC
};
/* path: the file's path as opened.  Return 0 to go ahead, or a negative
 * UT_E* code to fail the operation with it. */
typedef int (*ut_simdisk_fault_fn)(void *ctx, enum ut_simdisk_op op,
				   const char *path);
/* Install (fn NULL: remove) the fault hook. */
void ut_simdisk_set_fault_hook(ut_simdisk *d, ut_simdisk_fault_fn fn, void *ctx);

/* Test helpers; they work whether or not the power is on, are not events,
 * and return UT_NOTFOUND for a missing file. */
/* Copy up to len bytes of the file's current view (what reads see) at off;
 * returns the count (short at end of file) or a negative code. */
int64_t ut_simdisk_peek(ut_simdisk *d, const char *path, uint64_t off,
			void *buf, size_t len);
/* The same from the durable image (what a reboot is sure to keep). */
int64_t ut_simdisk_peek_durable(ut_simdisk *d, const char *path, uint64_t off,
				void *buf, size_t len);
/* Current size of the file. */
int ut_simdisk_file_size(ut_simdisk *d, const char *path, uint64_t *size);
/* Pending (unsynced) operations of the file, or a negative code. */
int64_t ut_simdisk_pending(ut_simdisk *d, const char *path);
/* Overwrite bytes in both the current view and the durable image, as the
 * medium would (extends the file if needed; ignores capacity). */
int ut_simdisk_poke(ut_simdisk *d, const char *path, uint64_t off,
		    const void *buf, size_t len);
/* Flip every bit of len bytes at off (within the file) in both images. */
int ut_simdisk_corrupt(ut_simdisk *d, const char *path, uint64_t off,
		       size_t len);

#endif /* UT_SIMDISK_H */

/*
 * io/ut_io.h - the file layer contract.
 *
 * Everything above io/ (pager, flush strategies, write-ahead log) reaches
 * files only through a ut_vfs and the ut_file handles it opens.  There are two
 * implementations: the POSIX one (io/file_posix.c: O_DIRECT where the
 * filesystem allows it, RWF_ATOMIC, io_uring batches) and the simulated disk
 * (io/simdisk.c) that in-process crash tests use to cut power at any write or
 * sync.
 *
 * Contract:
 *  - Every call returns UT_OK (or a byte count for read) or a negative UT_E*
 *    code.  The errno behind a failure is kept in ut_file.last_errno and is
 *    described through ut_set_errdetail() so ut_errdetail() names the file.
 *  - Writes are whole: a short write is retried; ENOSPC is UT_ENOSPC.
 *  - A write is durable only after sync() returns UT_OK.  Until then a crash
 *    may drop it, keep it, or (unless UT_WRITE_ATOMIC) keep it in part, in
 *    4 KiB sectors.
 *  - UT_WRITE_WRITEBACK changes when bytes reach the device, never what a
 *    crash may keep: a write is durable only after sync().
 *  - UT_WRITE_ATOMIC writes land whole or not at all, or fail with
 *    UT_ENOTSUP/UT_EINVAL without writing anything.  The caller must pass one
 *    buffer whose length and offset suit ut_atomic_info.
 *  - When f->direct is 1, buffers must be aligned to UT_IO_ALIGN
 *    (ut_io_alloc() returns such buffers) and lengths and offsets must be
 *    multiples of f->dio_align, a power of two no larger than UT_IO_ALIGN.
 *    A write of dio_align bytes at a multiple of it lands whole or not at
 *    all (the device's logical block).
 */
#ifndef UT_IO_H
#define UT_IO_H

#include <stddef.h>
#include <stdint.h>

#include "untorn.h"

#define UT_IO_ALIGN 4096u

/* ut_vfs.open flags */
#define UT_OPEN_CREATE 1u /* create if missing */
#define UT_OPEN_DIRECT 2u /* try O_DIRECT; fall back to buffered, f->direct = 0 */
#define UT_OPEN_LOCK 4u   /* exclusive lock for this handle; UT_ELOCKED if held */
#define UT_OPEN_RDONLY 8u /* read only; with UT_OPEN_LOCK the lock is shared */
#define UT_OPEN_EXCL 16u  /* with UT_OPEN_CREATE: the file must not exist
			   * (else UT_EINVAL, nothing opened) */
/* With UT_OPEN_LOCK: wait up to ms (at most 65535) for a live holder to let
 * go before UT_ELOCKED.  The lock of a holder that has exited is free at
 * once (the POSIX vfs still waits for that process's writes in flight). */
#define UT_OPEN_WAIT(ms) (((unsigned)(ms) > 0xffffu ? 0xffffu : (unsigned)(ms)) << 16)
#define UT_OPEN_WAIT_MS(oflags) ((unsigned)(oflags) >> 16)

/* write flags */
#define UT_WRITE_ATOMIC 1u    /* RWF_ATOMIC */
#define UT_WRITE_WRITEBACK 2u /* buffered handle: also hand the bytes to the
			       * device and wait for that before returning
			       * (sync_file_range).  A pacing hint, not a
			       * durability promise: the device may still hold
			       * them in its volatile cache until sync().
			       * Without it a buffered batch reaches the device
			       * all at once at the next sync, and a log write
			       * queued behind that burst waits for all of it.
			       * No effect on a direct handle, whose writes are
			       * on the device when they return. */

#define UT_WRITE_DSYNC 4u     /* ut_file_write only, alone: durable when it
			       * returns (RWF_DSYNC), as if sync() followed,
			       * but only this range is written back, not
			       * the file's other unsynced writes (the
			       * simulated disk makes them durable too) */
/* What statx(STATX_WRITE_ATOMIC) reported for a file. */
typedef struct ut_atomic_info {
	int supported;           /* STATX_ATTR_WRITE_ATOMIC was set */
	uint32_t unit_min;       /* stx_atomic_write_unit_min, bytes */
	uint32_t unit_max;       /* stx_atomic_write_unit_max, bytes */
	uint32_t segments_max;   /* stx_atomic_write_segments_max */
	uint32_t unit_max_opt;   /* stx_atomic_write_unit_max_opt (6.16+): the
				  * largest write on the fast (hardware) path;
				  * longer ones up to unit_max are emulated by
				  * the filesystem, slowly.  0 = no such limit */
	int statx_errno;         /* 0, or the errno statx failed with */
	int mask_missing;        /* kernel did not fill STATX_WRITE_ATOMIC */
} ut_atomic_info;

typedef struct ut_iowrite {
	const void *buf;
	size_t len;
	uint64_t off;
} ut_iowrite;

typedef struct ut_file ut_file;

struct ut_file_ops {
	/* Read up to len bytes at off; returns the count (short only at end of
	 * file) or a negative code. */
	int64_t (*read)(ut_file *f, void *buf, size_t len, uint64_t off);
	int (*write)(ut_file *f, const void *buf, size_t len, uint64_t off,
		     unsigned wflags);
	/* Several writes submitted together (io_uring where available); all
	 * complete before return.  Same flags for each. */
	int (*write_batch)(ut_file *f, const ut_iowrite *w, size_t n,
			   unsigned wflags);
	int (*sync)(ut_file *f); /* fdatasync */
	int (*size)(ut_file *f, uint64_t *bytes);
	int (*truncate)(ut_file *f, uint64_t bytes);
	int (*atomic_info)(ut_file *f, ut_atomic_info *out);
	void (*close)(ut_file *f);
	/* Start reading [off, off+len) into the OS page cache without waiting
	 * (posix_fadvise WILLNEED): a hint, which may do nothing.  NULL:
	 * nothing to do (the simulated disk). */
	void (*prefetch)(ut_file *f, uint64_t off, size_t len);
};

struct ut_file {
	const struct ut_file_ops *ops;
	char *path;
	int direct;     /* O_DIRECT in effect */
	uint32_t dio_align; /* direct: offset/length granularity, else 1 */
	int last_errno; /* errno of the last failed call, 0 if none */
};

typedef struct ut_vfs ut_vfs;
struct ut_vfs {
	int (*open)(ut_vfs *v, const char *path, unsigned oflags, ut_file **out);
	int (*remove)(ut_vfs *v, const char *path);  /* UT_NOTFOUND if absent */
	int (*exists)(ut_vfs *v, const char *path);  /* 1, 0, or negative code */
	int (*sync_dir)(ut_vfs *v, const char *path); /* make path's dirent durable */
};

/* The process-wide POSIX vfs. */
ut_vfs *ut_vfs_posix(void);

/* 4096-aligned, zeroed buffer for direct I/O; free with free(). */
void *ut_io_alloc(size_t len);

/* Record the calling thread's error detail (printf-style) for ut_errdetail. */
void ut_set_errdetail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Forget it: each public call starts with this, so a detail never
 * outlives the call it describes. */
void ut_clear_errdetail(void);

/* Map an errno to a UT_E* code. */
int ut_errno_to_rc(int err);

/*
 * Atomic-write probe (io/probe.c).
 *
 * ut_probe_atomic: statx(STATX_WRITE_ATOMIC) on path, or on its parent
 * directory when path does not exist yet.  Fills *out: supported is 1 only
 * when the kernel returned the STATX_WRITE_ATOMIC mask bit AND set
 * STATX_ATTR_WRITE_ATOMIC; mask_missing is 1 when the kernel did not return
 * the mask bit (kernel older than 6.11, or a filesystem/file type that does
 * not report it - ext4 and XFS report it for regular files only, so a probe
 * of a parent directory is indicative at best: re-check with the file's
 * atomic_info once it exists).  Returns UT_OK whenever *out describes the
 * situation (statx_errno set if statx itself failed, e.g. ENOSYS under a
 * sandbox), UT_NOTFOUND when neither path nor its parent exists, else a
 * negative code.
 */
int ut_probe_atomic(const char *path, ut_atomic_info *out);
/* The same on an open descriptor (statx with AT_EMPTY_PATH). */
int ut_probe_atomic_fd(int fd, ut_atomic_info *out);
/* 1 when one write of len bytes can be RWF_ATOMIC on a file with *ai:
 * supported && unit_min <= len <= unit_max && len is a power of two (the
 * kernel requires the last, and an offset aligned to len). */
int ut_atomic_fits(const ut_atomic_info *ai, uint32_t len);
/* 1 when such a write also takes the fast path: ut_atomic_fits and, when
 * unit_max_opt is reported (non-zero), len <= unit_max_opt.  AUTO chooses
 * atomic only then; a software-emulated atomic write is correct but slower
 * than a double write. */
int ut_atomic_fast(const ut_atomic_info *ai, uint32_t len);
/* The statx reply *sx as ut_atomic_info (what the probes above fill in). */
struct ut_statx;
void ut_atomic_info_from_statx(const struct ut_statx *sx, ut_atomic_info *out);

/*
 * POSIX file introspection (io/file_posix.c), for `untorn info` and stats.
 * ut_file_uses_uring: 1 when write_batch goes through io_uring, 0 when it
 * uses the pwrite loop (io_uring_queue_init failed, UT_IO_NO_URING=1 in the
 * environment, or f is not a POSIX file).  Creates the ring if not yet done.
 * ut_file_direct_note: why O_DIRECT is not in effect when it was asked for
 * (e.g. "tmpfs: no direct I/O"), NULL when direct or not requested.
 */
int ut_file_uses_uring(ut_file *f);
const char *ut_file_direct_note(ut_file *f);

static inline int64_t ut_file_read(ut_file *f, void *buf, size_t len, uint64_t off)
{
	return f->ops->read(f, buf, len, off);
}
static inline int ut_file_write(ut_file *f, const void *buf, size_t len,
				uint64_t off, unsigned wflags)
{
	return f->ops->write(f, buf, len, off, wflags);
}
static inline int ut_file_write_batch(ut_file *f, const ut_iowrite *w, size_t n,
				      unsigned wflags)
{
	return f->ops->write_batch(f, w, n, wflags);
}
static inline int ut_file_sync(ut_file *f) { return f->ops->sync(f); }
static inline int ut_file_size(ut_file *f, uint64_t *b) { return f->ops->size(f, b); }
static inline int ut_file_truncate(ut_file *f, uint64_t b) { return f->ops->truncate(f, b); }
static inline int ut_file_atomic_info(ut_file *f, ut_atomic_info *ai)
{
	return f->ops->atomic_info(f, ai);
}
static inline void ut_file_close(ut_file *f) { if (f) f->ops->close(f); }
static inline void ut_file_prefetch(ut_file *f, uint64_t off, size_t len)
{
	if (f->ops->prefetch)
		f->ops->prefetch(f, off, len);
}

#endif /* UT_IO_H */

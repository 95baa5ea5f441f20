/*
 * io/file_posix.c - the POSIX implementation of the file layer (ut_io.h).
 *
 *  - open: O_DIRECT when asked for and the filesystem really does direct I/O
 *    with alignment UT_IO_ALIGN or finer (statx STATX_DIOALIGN; tmpfs accepts
 *    the flag since 6.6 but still buffers, so it counts as "no").  Otherwise
 *    buffered, f->direct = 0, and ut_file_direct_note() says why.
 *  - write with UT_WRITE_ATOMIC: one pwritev2(RWF_ATOMIC) of one iovec.  A
 *    refusal (EOPNOTSUPP, EINVAL) is returned as UT_ENOTSUP/UT_EINVAL with a
 *    detail naming file, offset, length and errno; it is never retried
 *    without the flag.
 *  - write_batch: on an O_DIRECT file, io_uring (liburing), one ring per
 *    file, created on first use under the file's mutex (threads may share a
 *    file).  If the ring cannot be created (ENOSYS/EPERM in a sandbox,
 *    UT_IO_NO_URING=1), a pwrite loop does the same job;
 *    ut_file_uses_uring() tells which.  Buffered files always use the
 *    loop: io_uring punts buffered writes to one io-wq worker per inode,
 *    which only adds a thread hop to a memory copy.
 *  - UT_WRITE_WRITEBACK on a buffered file: sync_file_range, which starts
 *    the writeback of every range of the call, then waits for each.
 *  - lock (UT_OPEN_LOCK): two locks, exclusive (shared with UT_OPEN_RDONLY).
 *     1. The holder lock: flock() on a descriptor of its own that never
 *        enters an io_uring ring, so it is released the moment its process
 *        is gone.  A live holder makes the opener wait up to
 *        UT_OPEN_WAIT_MS(oflags), then fail with UT_ELOCKED.  flock() locks
 *        belong to the open file description, so a second open in the same
 *        process conflicts too.
 *     2. The I/O lock: an OFD record lock (F_OFD_SETLK, a namespace apart
 *        from flock) on the data descriptor itself.  An io_uring request
 *        holds a reference to the file it writes, so when a process is
 *        killed with writes in flight its data descriptor, and this lock,
 *        outlive it until those writes complete.  A new opener that has the
 *        holder lock waits for them (up to IO_DRAIN_WAIT_MS): recovery must
 *        not read pages that a dead process is still writing.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "ut_atomic_compat.h"
#include "ut_io.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

#define RING_DEPTH 64u
/* How long to wait for an exited holder's in-flight writes (they finish in
 * milliseconds; this only bounds a hung device). */
#define IO_DRAIN_WAIT_MS 5000u
#define LOCK_POLL_US 1000u

enum { URING_UNKNOWN = -1, URING_OFF = 0, URING_ON = 1 };

struct posix_file {
	ut_file base;
	int fd;
	int holder_fd; /* UT_OPEN_LOCK: the holder lock's descriptor, else -1 */
	pthread_mutex_t lock; /* protects ring and uring_state */
	int uring_state;
	struct io_uring ring;
	const char *direct_note;
};

static const struct ut_file_ops posix_ops;

static struct posix_file *pf_of(ut_file *f)
{
	return (struct posix_file *)f;
}

static int fd_of(ut_file *f)
{
	return pf_of(f)->fd;
}

static int fail_err(ut_file *f, int err, const char *what)
{
	f->last_errno = err;
	ut_set_errdetail("%s: %s: %s", f->path, what, strerror(err));
	return ut_errno_to_rc(err);
}

static int fail(ut_file *f, const char *what)
{
	return fail_err(f, errno, what);
}

static int fail_at(ut_file *f, int err, const char *what, uint64_t off,
		   size_t len)
{
	f->last_errno = err;
	ut_set_errdetail("%s: %s of %zu bytes at offset %llu: %s (errno %d)",
			 f->path, what, len, (unsigned long long)off,
			 strerror(err), err);
	return ut_errno_to_rc(err);
}

static int64_t posix_read(ut_file *f, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd_of(f), (char *)buf + done, len - done,
				  (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail_at(f, errno, "read", off, len);
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (int64_t)done;
}

static int write_atomic(ut_file *f, const void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	ssize_t n;

	do
		n = pwritev2(fd_of(f), &iov, 1, (off_t)off, RWF_ATOMIC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail_at(f, errno, "RWF_ATOMIC write", off, len);
	if ((size_t)n != len) {
		/* The kernel promises all or nothing; a short atomic write is
		 * a broken promise, not something to patch up. */
		f->last_errno = EIO;
		ut_set_errdetail("%s: RWF_ATOMIC write of %zu bytes at offset "
				 "%llu was short (%zd bytes)", f->path, len,
				 (unsigned long long)off, n);
		return UT_EIO;
	}
	return UT_OK;
}

static int write_plain(ut_file *f, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd_of(f), (const char *)buf + done,
				   len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail_at(f, errno, "write", off + done,
				       len - done);
		}
		if (n == 0)
			return fail_at(f, EIO, "write (no progress)",
				       off + done, len - done);
		done += (size_t)n;
	}
	return UT_OK;
}

#define KNOWN_WFLAGS (UT_WRITE_ATOMIC | UT_WRITE_WRITEBACK)

/* As after a failed fdatasync (posix_sync), drop the cached pages that
 * failed writeback, so that reads serve what the disk holds. */
static int writeback_failed(ut_file *f, int err, const ut_iowrite *w)
{
	(void)posix_fadvise(fd_of(f), (off_t)w->off, (off_t)w->len,
			    POSIX_FADV_DONTNEED);
	return fail_at(f, err, "writeback (sync_file_range)", w->off, w->len);
}

/* UT_WRITE_WRITEBACK: start the writeback of every range, then wait for
 * each, so the ranges go to the device together but no later than now. */
static int write_back(ut_file *f, const ut_iowrite *w, size_t n)
{
	static const unsigned wait = SYNC_FILE_RANGE_WAIT_BEFORE |
		SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;

	if (f->direct)
		return UT_OK;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			if (sync_file_range(fd_of(f), (off_t)w[i].off,
					    (off_t)w[i].len,
					    pass ? wait : SYNC_FILE_RANGE_WRITE))
				return writeback_failed(f, errno, &w[i]);
		}
	}
	return UT_OK;
}

/* RWF_DSYNC: the range is written back and made durable before return,
 * without the rest of the file's dirty pages that fdatasync would take. */
static int write_dsync(ut_file *f, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		struct iovec iov = { .iov_base = (char *)buf + done,
				     .iov_len = len - done };
		ssize_t n = pwritev2(fd_of(f), &iov, 1, (off_t)(off + done),
				     RWF_DSYNC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail_at(f, errno, "RWF_DSYNC write", off + done,
				       len - done);
		}
		done += (size_t)n;
	}
	return UT_OK;
}

static int posix_write(ut_file *f, const void *buf, size_t len, uint64_t off,
		       unsigned wflags)
{
	ut_iowrite one = { buf, len, off };
	int rc;

	if (wflags == UT_WRITE_DSYNC)
		return write_dsync(f, buf, len, off);
	if (wflags & ~KNOWN_WFLAGS) {
		ut_set_errdetail("%s: unknown write flags %#x", f->path, wflags);
		return UT_EINVAL;
	}
	if (wflags & UT_WRITE_ATOMIC)
		rc = write_atomic(f, buf, len, off);
	else
		rc = write_plain(f, buf, len, off);
	if (rc == UT_OK && (wflags & UT_WRITE_WRITEBACK))
		rc = write_back(f, &one, 1);
	return rc;
}

/* Decide once per file whether batches use io_uring.  Caller holds lock. */
static int uring_ready(struct posix_file *pf)
{
	if (pf->uring_state == URING_UNKNOWN) {
		const char *no = getenv("UT_IO_NO_URING");

		if (!pf->base.direct || (no && *no && strcmp(no, "0") != 0))
			pf->uring_state = URING_OFF;
		else if (io_uring_queue_init(RING_DEPTH, &pf->ring, 0) == 0)
			pf->uring_state = URING_ON;
		else
			pf->uring_state = URING_OFF;
	}
	return pf->uring_state == URING_ON;
}

static void ring_abandon(struct posix_file *pf, unsigned inflight)
{
	while (inflight) {
		struct io_uring_cqe *cqe;
		int e = io_uring_wait_cqe(&pf->ring, &cqe);

		if (e == -EINTR)
			continue;
		if (e < 0)
			break;
		io_uring_cqe_seen(&pf->ring, cqe);
		inflight--;
	}
	io_uring_queue_exit(&pf->ring);
	pf->uring_state = URING_OFF;
}

struct slot {
	size_t done; /* bytes of w[i] completed */
	int inflight;
};

/* One chunk of at most RING_DEPTH writes through the ring; returns UT_OK or
 * the first error, always after every submitted write has completed. */
static int uring_chunk(struct posix_file *pf, const ut_iowrite *w, size_t n,
		       int atomic)
{
	ut_file *f = &pf->base;
	struct slot slots[RING_DEPTH];
	size_t pending = n; /* writes not yet fully done or failed */
	int rc = UT_OK;

	memset(slots, 0, sizeof(slots));
	while (pending) {
		unsigned queued = 0, inflight = 0;

		for (size_t i = 0; i < n; i++) {
			struct io_uring_sqe *sqe;

			if (slots[i].inflight || slots[i].done == w[i].len ||
			    slots[i].done == SIZE_MAX)
				continue;
			if (rc != UT_OK) {
				/* An earlier write failed: do not start more. */
				slots[i].done = SIZE_MAX;
				pending--;
				continue;
			}
			sqe = io_uring_get_sqe(&pf->ring);
			if (!sqe)
				break;
			io_uring_prep_write(sqe, pf->fd,
					    (const char *)w[i].buf + slots[i].done,
					    (unsigned)(w[i].len - slots[i].done),
					    w[i].off + slots[i].done);
			sqe->rw_flags = atomic ? RWF_ATOMIC : 0;
			io_uring_sqe_set_data64(sqe, i);
			slots[i].inflight = 1;
			queued++;
		}
		for (size_t i = 0; i < n; i++)
			inflight += (unsigned)slots[i].inflight;
		if (!inflight)
			break;
		if (queued) {
			unsigned submitted = 0;

			while (submitted < queued) {
				int s = io_uring_submit(&pf->ring);

				if (s == -EINTR || s == -EAGAIN)
					continue;
				if (s <= 0) {
					/* Reap what did go in, then give up on
					 * the ring: entries still in its queue
					 * point at the caller's buffers. */
					int err = s < 0 ? -s : EIO;

					ring_abandon(pf, submitted);
					return fail_err(f, err, "io_uring_submit");
				}
				submitted += (unsigned)s;
			}
		}
		while (inflight) {
			struct io_uring_cqe *cqe;
			size_t i;
			int res, e;

			e = io_uring_wait_cqe(&pf->ring, &cqe);
			if (e == -EINTR)
				continue;
			if (e < 0) {
				/* Cannot reap: the ring is unusable.  Nothing
				 * sane remains; report loudly. */
				f->last_errno = -e;
				ut_set_errdetail("%s: io_uring_wait_cqe: %s",
						 f->path, strerror(-e));
				return UT_EIO;
			}
			i = (size_t)io_uring_cqe_get_data64(cqe);
			res = cqe->res;
			io_uring_cqe_seen(&pf->ring, cqe);
			if (i >= n)
				continue;
			slots[i].inflight = 0;
			inflight--;
			if (res == -EINTR || res == -EAGAIN)
				continue; /* resubmit as is */
			if (res < 0) {
				if (!rc)
					rc = fail_at(f, -res,
						     atomic ? "RWF_ATOMIC write (io_uring)"
							    : "write (io_uring)",
						     w[i].off, w[i].len);
				slots[i].done = SIZE_MAX;
				pending--;
				continue;
			}
			if (atomic && (size_t)res != w[i].len) {
				if (!rc) {
					f->last_errno = EIO;
					ut_set_errdetail(
						"%s: RWF_ATOMIC write of %zu bytes at "
						"offset %llu was short (%d bytes)",
						f->path, w[i].len,
						(unsigned long long)w[i].off, res);
					rc = UT_EIO;
				}
				slots[i].done = SIZE_MAX;
				pending--;
				continue;
			}
			if (res == 0) {
				if (!rc)
					rc = fail_at(f, EIO, "write (io_uring, no progress)",
						     w[i].off + slots[i].done,
						     w[i].len - slots[i].done);
				slots[i].done = SIZE_MAX;
				pending--;
				continue;
			}
			slots[i].done += (size_t)res;
			if (slots[i].done == w[i].len)
				pending--;
			/* else: short write, the rest goes in the next round */
		}
	}
	return rc;
}

static int posix_write_batch(ut_file *f, const ut_iowrite *w, size_t n,
			     unsigned wflags)
{
	struct posix_file *pf = pf_of(f);
	int atomic = (wflags & UT_WRITE_ATOMIC) != 0;
	int rc = UT_OK;

	if (wflags & ~KNOWN_WFLAGS) {
		ut_set_errdetail("%s: unknown write flags %#x", f->path, wflags);
		return UT_EINVAL;
	}
	if (n == 0)
		return UT_OK;
	for (size_t i = 0; i < n; i++) {
		if (w[i].len > UINT32_MAX / 2) {
			ut_set_errdetail("%s: batch write %zu too large (%zu)",
					 f->path, i, w[i].len);
			return UT_EINVAL;
		}
	}
	pthread_mutex_lock(&pf->lock);
	if (uring_ready(pf)) {
		for (size_t at = 0; at < n && rc == UT_OK; at += RING_DEPTH) {
			size_t k = n - at < RING_DEPTH ? n - at : RING_DEPTH;
			rc = uring_chunk(pf, w + at, k, atomic);
		}
	} else {
		for (size_t i = 0; i < n && rc == UT_OK; i++)
			rc = posix_write(f, w[i].buf, w[i].len, w[i].off,
					 wflags & ~UT_WRITE_WRITEBACK);
	}
	if (rc == UT_OK && (wflags & UT_WRITE_WRITEBACK))
		rc = write_back(f, w, n);
	pthread_mutex_unlock(&pf->lock);
	return rc;
}

static int posix_sync(ut_file *f)
{
	int r, e;

	do
		r = fdatasync(fd_of(f));
	while (r && errno == EINTR);
	if (!r)
		return UT_OK;
	/* After a failed writeback Linux marks the pages clean but keeps
	 * them cached: reads would serve bytes the disk never got.  Drop
	 * them, so that what recovery reads is what the disk holds. */
	e = errno;
	if (!f->direct)
		(void)posix_fadvise(fd_of(f), 0, 0, POSIX_FADV_DONTNEED);
	return fail_err(f, e, "fdatasync");
}

static int posix_size(ut_file *f, uint64_t *bytes)
{
	struct stat st;

	if (fstat(fd_of(f), &st))
		return fail(f, "fstat");
	*bytes = (uint64_t)st.st_size;
	return UT_OK;
}

static int posix_truncate(ut_file *f, uint64_t bytes)
{
	return ftruncate(fd_of(f), (off_t)bytes) ? fail(f, "ftruncate") : UT_OK;
}

static int posix_atomic_info(ut_file *f, ut_atomic_info *out)
{
	int rc = ut_probe_atomic_fd(fd_of(f), out);

	if (rc < 0)
		f->last_errno = out->statx_errno;
	return rc;
}

static void posix_close(ut_file *f)
{
	struct posix_file *pf = pf_of(f);

	if (pf->uring_state == URING_ON)
		io_uring_queue_exit(&pf->ring);
	pthread_mutex_destroy(&pf->lock);
	close(pf->fd);
	if (pf->holder_fd >= 0)
		close(pf->holder_fd);
	free(f->path);
	free(pf);
}

static void posix_prefetch(ut_file *f, uint64_t off, size_t len)
{
	(void)posix_fadvise(fd_of(f), (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

static const struct ut_file_ops posix_ops = {
	.read = posix_read,
	.write = posix_write,
	.write_batch = posix_write_batch,
	.sync = posix_sync,
	.size = posix_size,
	.truncate = posix_truncate,
	.atomic_info = posix_atomic_info,
	.close = posix_close,
	.prefetch = posix_prefetch,
};

/* Does this O_DIRECT descriptor really do direct I/O at our alignment?
 * Returns NULL if yes, else a note saying why not. */
static const char *direct_refusal(int fd, uint32_t *align)
{
	struct ut_statx sx;
	struct statfs sfs;

	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC)
		return "tmpfs: O_DIRECT accepted but buffered; using buffered I/O";
	*align = UT_IO_ALIGN; /* unknown: the coarsest we accept */
	memset(&sx, 0, sizeof(sx));
	if (ut_statx_call(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
	    (sx.stx_mask & STATX_DIOALIGN)) {
		if (sx.stx_dio_offset_align == 0)
			return "filesystem reports no direct I/O support for "
			       "this file; using buffered I/O";
		if (sx.stx_dio_offset_align > UT_IO_ALIGN ||
		    sx.stx_dio_mem_align > UT_IO_ALIGN)
			return "direct I/O alignment coarser than 4096; "
			       "using buffered I/O";
		if (sx.stx_dio_offset_align >= 512 &&
		    !(sx.stx_dio_offset_align & (sx.stx_dio_offset_align - 1)))
			*align = sx.stx_dio_offset_align;
	}
	return NULL;
}

static int open_fd(const char *path, unsigned oflags, int *direct,
		   uint32_t *align, const char **note)
{
	int flags = O_CLOEXEC | ((oflags & UT_OPEN_RDONLY) ? O_RDONLY : O_RDWR);
	int fd;

	if (oflags & UT_OPEN_CREATE)
		flags |= O_CREAT | ((oflags & UT_OPEN_EXCL) ? O_EXCL : 0);
	*direct = 0;
	*align = 1;
	*note = NULL;
	if (oflags & UT_OPEN_DIRECT) {
		fd = open(path, flags | O_DIRECT, 0644);
		if (fd >= 0) {
			*note = direct_refusal(fd, align);
			if (!*note) {
				*direct = 1;
				return fd;
			}
			close(fd);
			*align = 1;
			flags &= ~O_EXCL; /* the file is the one just made */
		} else if (errno == EINVAL) {
			*note = "open(O_DIRECT) refused (EINVAL); using "
				"buffered I/O";
		} else {
			return -1;
		}
	}
	return open(path, flags, 0644);
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* One attempt at lock `which` (0: holder flock, 1: I/O OFD lock) on fd;
 * 0 or an errno (EWOULDBLOCK when held elsewhere). */
static int try_lock(int fd, int which, int shared)
{
	struct flock fl = { .l_type = shared ? F_RDLCK : F_WRLCK,
			    .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	int r;

	if (which == 0)
		r = flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB);
	else
		r = fcntl(fd, F_OFD_SETLK, &fl);
	if (r == 0)
		return 0;
	return errno == EAGAIN || errno == EACCES ? EWOULDBLOCK : errno;
}

/* try_lock, retried until wait_ms have passed. */
static int lock_wait(int fd, int which, int shared, unsigned wait_ms)
{
	uint64_t deadline = ms_now() + wait_ms;
	int err;

	while ((err = try_lock(fd, which, shared)) == EWOULDBLOCK ||
	       err == EINTR) {
		if (err == EWOULDBLOCK && ms_now() >= deadline)
			break;
		usleep(LOCK_POLL_US);
	}
	return err;
}

/* The two locks of UT_OPEN_LOCK (see the top of this file) for data
 * descriptor fd; *holder_fd gets the holder lock's descriptor. */
static int take_locks(const char *path, int fd, unsigned oflags,
		      int *holder_fd)
{
	int shared = (oflags & UT_OPEN_RDONLY) != 0;
	int hfd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (hfd < 0) {
		err = errno;
		ut_set_errdetail("%s: open for the lock: %s", path, strerror(err));
		return ut_errno_to_rc(err);
	}
	err = lock_wait(hfd, 0, shared, UT_OPEN_WAIT_MS(oflags));
	if (err == EWOULDBLOCK) {
		close(hfd);
		ut_set_errdetail("%s: locked by another process or handle (still "
				 "held after %u ms)", path, UT_OPEN_WAIT_MS(oflags));
		return UT_ELOCKED;
	}
	if (err == 0)
		err = lock_wait(fd, 1, shared, IO_DRAIN_WAIT_MS);
	if (err) {
		close(hfd);
		if (err == EWOULDBLOCK) {
			ut_set_errdetail("%s: writes of a process that had it open "
					 "are still in flight after %u ms", path,
					 IO_DRAIN_WAIT_MS);
			return UT_ELOCKED;
		}
		ut_set_errdetail("%s: lock: %s", path, strerror(err));
		return ut_errno_to_rc(err);
	}
	*holder_fd = hfd;
	return UT_OK;
}

static int posix_open(ut_vfs *v, const char *path, unsigned oflags,
		      ut_file **out)
{
	struct posix_file *pf;
	const char *note;
	int direct, fd, holder_fd = -1, rc;
	uint32_t align;

	(void)v;
	if (!path || !out)
		return UT_EINVAL;
	fd = open_fd(path, oflags, &direct, &align, &note);
	if (fd < 0) {
		int err = errno;
		ut_set_errdetail("%s: open: %s", path, strerror(err));
		if (err == EEXIST)
			return UT_EINVAL; /* UT_OPEN_EXCL */
		return err == ENOENT ? UT_NOTFOUND : ut_errno_to_rc(err);
	}
	if ((oflags & UT_OPEN_LOCK) &&
	    (rc = take_locks(path, fd, oflags, &holder_fd))) {
		close(fd);
		return rc;
	}
	pf = calloc(1, sizeof(*pf));
	if (!pf || !(pf->base.path = strdup(path))) {
		free(pf);
		close(fd);
		if (holder_fd >= 0)
			close(holder_fd);
		return UT_ENOMEM;
	}
	pf->fd = fd;
	pf->holder_fd = holder_fd;
	pf->base.ops = &posix_ops;
	pf->base.direct = direct;
	pf->base.dio_align = align;
	pf->uring_state = URING_UNKNOWN;
	pf->direct_note = (oflags & UT_OPEN_DIRECT) ? note : NULL;
	pthread_mutex_init(&pf->lock, NULL);
	*out = &pf->base;
	return UT_OK;
}

int ut_file_uses_uring(ut_file *f)
{
	struct posix_file *pf;
	int on;

	if (!f || f->ops != &posix_ops)
		return 0;
	pf = pf_of(f);
	pthread_mutex_lock(&pf->lock);
	on = uring_ready(pf);
	pthread_mutex_unlock(&pf->lock);
	return on;
}

const char *ut_file_direct_note(ut_file *f)
{
	if (!f || f->ops != &posix_ops)
		return NULL;
	return pf_of(f)->direct_note;
}

static int posix_remove(ut_vfs *v, const char *path)
{
	(void)v;
	if (unlink(path) == 0)
		return UT_OK;
	if (errno == ENOENT)
		return UT_NOTFOUND;
	ut_set_errdetail("%s: unlink: %s", path, strerror(errno));
	return ut_errno_to_rc(errno);
}

static int posix_exists(ut_vfs *v, const char *path)
{
	(void)v;
	if (access(path, F_OK) == 0)
		return 1;
	return errno == ENOENT ? 0 : ut_errno_to_rc(errno);
}

static int posix_sync_dir(ut_vfs *v, const char *path)
{
	char *copy = strdup(path);
	int fd, rc = UT_OK;

	(void)v;
	if (!copy)
		return UT_ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd)) {
		ut_set_errdetail("%s: fsync of directory: %s", path,
				 strerror(errno));
		rc = ut_errno_to_rc(errno);
	}
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

static ut_vfs posix_vfs = {
	.open = posix_open,
	.remove = posix_remove,
	.exists = posix_exists,
	.sync_dir = posix_sync_dir,
};

ut_vfs *ut_vfs_posix(void)
{
	return &posix_vfs;
}

void *ut_io_alloc(size_t len)
{
	size_t rounded = (len + UT_IO_ALIGN - 1) / UT_IO_ALIGN * UT_IO_ALIGN;
	void *p = NULL;

	if (posix_memalign(&p, UT_IO_ALIGN, rounded ? rounded : UT_IO_ALIGN))
		return NULL;
	memset(p, 0, rounded ? rounded : UT_IO_ALIGN);
	return p;
}

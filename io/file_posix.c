/*
 * io/file_posix.c - the POSIX implementation of the file layer (ut_io.h).
 *
 * Plain pread/pwrite/fdatasync with an flock()-based exclusive lock, O_DIRECT
 * when asked for and the filesystem accepts it.  flock() locks belong to the
 * open file description, so a second open in the same process conflicts too.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ut_io.h"

struct posix_file {
	ut_file base;
	int fd;
};

static int fail(ut_file *f, const char *what)
{
	int err = errno;

	f->last_errno = err;
	ut_set_errdetail("%s: %s: %s", f->path, what, strerror(err));
	return ut_errno_to_rc(err);
}

static int fd_of(ut_file *f)
{
	return ((struct posix_file *)f)->fd;
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
			return fail(f, "read");
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (int64_t)done;
}

static int posix_write(ut_file *f, const void *buf, size_t len, uint64_t off,
		       unsigned wflags)
{
	size_t done = 0;

	if (wflags & UT_WRITE_ATOMIC) {
		f->last_errno = EOPNOTSUPP;
		ut_set_errdetail("%s: atomic writes not implemented", f->path);
		return UT_ENOTSUP;
	}
	while (done < len) {
		ssize_t n = pwrite(fd_of(f), (const char *)buf + done,
				   len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail(f, "write");
		}
		done += (size_t)n;
	}
	return UT_OK;
}

static int posix_write_batch(ut_file *f, const ut_iowrite *w, size_t n,
			     unsigned wflags)
{
	for (size_t i = 0; i < n; i++) {
		int rc = posix_write(f, w[i].buf, w[i].len, w[i].off, wflags);
		if (rc)
			return rc;
	}
	return UT_OK;
}

static int posix_sync(ut_file *f)
{
	return fdatasync(fd_of(f)) ? fail(f, "fdatasync") : UT_OK;
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
	(void)f;
	memset(out, 0, sizeof(*out));
	out->mask_missing = 1;
	return UT_OK;
}

static void posix_close(ut_file *f)
{
	close(fd_of(f));
	free(f->path);
	free(f);
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
};

static int open_fd(const char *path, unsigned oflags, int *direct)
{
	int flags = O_CLOEXEC | ((oflags & UT_OPEN_RDONLY) ? O_RDONLY : O_RDWR);
	int fd;

	if (oflags & UT_OPEN_CREATE)
		flags |= O_CREAT;
	*direct = 0;
	if (oflags & UT_OPEN_DIRECT) {
		fd = open(path, flags | O_DIRECT, 0644);
		if (fd >= 0) {
			*direct = 1;
			return fd;
		}
		if (errno != EINVAL)
			return -1;
	}
	return open(path, flags, 0644);
}

static int posix_open(ut_vfs *v, const char *path, unsigned oflags,
		      ut_file **out)
{
	struct posix_file *pf;
	int direct, fd;

	(void)v;
	fd = open_fd(path, oflags, &direct);
	if (fd < 0) {
		int err = errno;
		ut_set_errdetail("%s: open: %s", path, strerror(err));
		return err == ENOENT ? UT_NOTFOUND : ut_errno_to_rc(err);
	}
	if ((oflags & UT_OPEN_LOCK) && flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno;
		close(fd);
		ut_set_errdetail("%s: locked by another process or handle (%s)",
				 path, strerror(err));
		return err == EWOULDBLOCK ? UT_ELOCKED : ut_errno_to_rc(err);
	}
	pf = calloc(1, sizeof(*pf));
	if (!pf || !(pf->base.path = strdup(path))) {
		free(pf);
		close(fd);
		return UT_ENOMEM;
	}
	pf->fd = fd;
	pf->base.ops = &posix_ops;
	pf->base.direct = direct;
	*out = &pf->base;
	return UT_OK;
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

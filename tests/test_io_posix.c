/*
 * tests/test_io_posix.c - the POSIX file layer: O_DIRECT where the
 * filesystem does it, buffered fallback on tmpfs, io_uring batches (and the
 * pwrite fallback), RWF_ATOMIC refused cleanly where unsupported, locks,
 * ENOSPC.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "ut_atomic_compat.h"
#include "ut_io.h"

#define PG UT_PAGE_SIZE
#define TMPFS_MAGIC_ 0x01021994

static char dir[512];
static char mnt[600]; /* a small tmpfs we mounted, or "" */

static void sh(const char *fmt, const char *arg)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), fmt, arg);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	const char *t = getenv("UT_TMPDIR");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/io_posix.%d", t && *t ? t : "build/tmp",
		 (int)getpid());
	sh("mkdir -p '%s'", dir);
	/* A tiny tmpfs: tmpfs has no direct I/O, and 256 KiB fills fast. */
	snprintf(mnt, sizeof(mnt), "%s/tmpfs", dir);
	sh("mkdir -p '%s'", mnt);
	if (geteuid() != 0 || mount("untorn-test", mnt, "tmpfs", 0, "size=256k"))
		mnt[0] = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (mnt[0])
		umount2(mnt, MNT_DETACH);
	sh("rm -rf '%s'", dir);
	return 0;
}

static ut_file *xopen(const char *path, unsigned fl)
{
	ut_file *f = NULL;

	assert_int_equal(ut_vfs_posix()->open(ut_vfs_posix(), path, fl, &f), UT_OK);
	return f;
}

static void path_in(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static void *pattern(size_t len, unsigned seed)
{
	unsigned char *p = ut_io_alloc(len);

	assert_non_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 12));
	return p;
}

/* Would this fd's filesystem do real direct I/O at 4096? */
static int fs_does_direct(const char *path)
{
	struct ut_statx sx;
	struct statfs sfs;

	if (statfs(path, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC_)
		return 0;
	memset(&sx, 0, sizeof(sx));
	if (ut_statx_call(AT_FDCWD, path, 0, STATX_DIOALIGN, &sx) ||
	    !(sx.stx_mask & STATX_DIOALIGN))
		return -1; /* cannot tell */
	return sx.stx_dio_offset_align && sx.stx_dio_offset_align <= 4096 &&
	       sx.stx_dio_mem_align <= 4096;
}

static void test_open_missing(void **state)
{
	char path[700];
	ut_file *f = NULL;

	(void)state;
	path_in(path, sizeof(path), "missing");
	assert_int_equal(ut_vfs_posix()->open(ut_vfs_posix(), path, 0, &f),
			 UT_NOTFOUND);
	assert_int_equal(ut_vfs_posix()->exists(ut_vfs_posix(), path), 0);
	assert_int_equal(ut_vfs_posix()->remove(ut_vfs_posix(), path), UT_NOTFOUND);
}

static void test_direct_on_real_fs(void **state)
{
	char path[700];
	ut_file *f;
	void *w = pattern(2 * PG, 1), *r = ut_io_alloc(2 * PG);
	int expect;
	uint64_t sz;

	(void)state;
	path_in(path, sizeof(path), "direct");
	f = xopen(path, UT_OPEN_CREATE | UT_OPEN_DIRECT);
	expect = fs_does_direct(path);
	print_message("direct=%d (filesystem says %d) note=%s\n", f->direct,
		      expect, ut_file_direct_note(f) ? ut_file_direct_note(f) : "-");
	if (expect >= 0)
		assert_int_equal(f->direct, expect);
	if (f->direct) {
		assert_null(ut_file_direct_note(f));
		/* The kernel enforces alignment on a direct descriptor. */
		assert_int_equal(ut_file_write(f, (char *)w + 1, PG, 0, 0), UT_EINVAL);
		assert_non_null(strstr(ut_errdetail(), path));
	}
	assert_int_equal(ut_file_write(f, w, 2 * PG, PG, 0), UT_OK);
	assert_int_equal(ut_file_sync(f), UT_OK);
	assert_int_equal(ut_file_read(f, r, 2 * PG, PG), 2 * PG);
	assert_memory_equal(r, w, 2 * PG);
	assert_int_equal(ut_file_size(f, &sz), UT_OK);
	assert_int_equal(sz, 3 * PG);
	assert_int_equal(ut_file_truncate(f, PG), UT_OK);
	assert_int_equal(ut_file_read(f, r, 2 * PG, 0), PG);
	ut_file_close(f);
	/* Without UT_OPEN_DIRECT: buffered, no note. */
	f = xopen(path, 0);
	assert_int_equal(f->direct, 0);
	assert_null(ut_file_direct_note(f));
	ut_file_close(f);
	free(w);
	free(r);
}

static const char *tmpfs_dir(void)
{
	struct statfs sfs;

	if (mnt[0])
		return mnt;
	if (statfs("/dev/shm", &sfs) == 0 && sfs.f_type == TMPFS_MAGIC_ &&
	    access("/dev/shm", W_OK) == 0)
		return "/dev/shm";
	return NULL;
}

static void test_tmpfs_falls_back(void **state)
{
	const char *td = tmpfs_dir();
	char path[700];
	char buf[16];
	ut_file *f;

	(void)state;
	if (!td)
		skip();
	snprintf(path, sizeof(path), "%s/untorn-fallback.%d", td, (int)getpid());
	f = xopen(path, UT_OPEN_CREATE | UT_OPEN_DIRECT);
	assert_int_equal(f->direct, 0);
	assert_non_null(ut_file_direct_note(f));
	print_message("tmpfs: %s\n", ut_file_direct_note(f));
	/* Buffered: unaligned I/O works. */
	assert_int_equal(ut_file_write(f, "hello world", 11, 3, 0), UT_OK);
	assert_int_equal(ut_file_read(f, buf, 11, 3), 11);
	assert_memory_equal(buf, "hello world", 11);
	ut_file_close(f);
	assert_int_equal(ut_vfs_posix()->remove(ut_vfs_posix(), path), UT_OK);
}

static void batch_roundtrip(const char *name, int want_uring)
{
	enum { N = 150 }; /* more than one ring's worth */
	char path[700];
	ut_iowrite w[N];
	void *bufs[N], *r = ut_io_alloc(PG);
	ut_file *f;

	path_in(path, sizeof(path), name);
	f = xopen(path, UT_OPEN_CREATE | UT_OPEN_DIRECT);
	for (int i = 0; i < N; i++) {
		bufs[i] = pattern(PG, (unsigned)i + 7);
		/* scattered order, not sequential */
		w[i] = (ut_iowrite){ bufs[i], PG, (uint64_t)((i * 37) % N) * PG };
	}
	assert_int_equal(ut_file_write_batch(f, w, N, 0), UT_OK);
	/* io_uring carries O_DIRECT batches only (buffered: pwrite loop) */
	assert_int_equal(ut_file_uses_uring(f), want_uring && f->direct);
	assert_int_equal(ut_file_sync(f), UT_OK);
	for (int i = 0; i < N; i++) {
		assert_int_equal(ut_file_read(f, r, PG, w[i].off), PG);
		assert_memory_equal(r, bufs[i], PG);
	}
	assert_int_equal(ut_file_write_batch(f, w, 0, 0), UT_OK);
	assert_int_equal(ut_file_write_batch(f, w, 1, 0x80), UT_EINVAL);
	ut_file_close(f);
	for (int i = 0; i < N; i++)
		free(bufs[i]);
	free(r);
}

#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
struct page_counts { /* struct cachestat (Linux 6.5) */
	uint64_t cache, dirty, writeback, evicted, recently_evicted;
};

/* Dirty (or under writeback) cached bytes of path's first len bytes, from
 * cachestat(2); -1 when the kernel has no cachestat. */
static long long unwritten_pages(const char *path, uint64_t len)
{
	struct { uint64_t off, len; } range = { 0, len };
	struct page_counts c;
	int fd = open(path, O_RDONLY);
	long r;

	assert_true(fd >= 0);
	r = syscall(SYS_cachestat, fd, &range, &c, 0);
	close(fd);
	return r ? -1 : (long long)(c.dirty + c.writeback);
}

/* UT_WRITE_WRITEBACK: a buffered batch is on the device when the call
 * returns (no page of it left dirty), without the flag it is not; the
 * bytes are the same either way.  An unknown flag is still refused. */
static void test_writeback(void **state)
{
	enum { N = 16 };
	char path[700];
	ut_iowrite w[N];
	void *b = pattern(PG, 3), *r = ut_io_alloc(PG);
	ut_file *f;

	(void)state;
	path_in(path, sizeof(path), "writeback");
	f = xopen(path, UT_OPEN_CREATE);
	assert_int_equal(f->direct, 0);
	for (int i = 0; i < N; i++)
		w[i] = (ut_iowrite){ b, PG, (uint64_t)((i * 5) % N) * PG };
	assert_int_equal(ut_file_write_batch(f, w, N, 0), UT_OK);
	if (unwritten_pages(path, N * PG) < 0) {
		print_message("no cachestat(2): only the bytes are checked\n");
	} else {
		assert_true(unwritten_pages(path, N * PG) > 0);
		assert_int_equal(ut_file_write_batch(f, w, N, UT_WRITE_WRITEBACK),
				 UT_OK);
		assert_int_equal(unwritten_pages(path, N * PG), 0);
		assert_int_equal(ut_file_write(f, b, PG, 0, UT_WRITE_WRITEBACK),
				 UT_OK);
		assert_int_equal(unwritten_pages(path, N * PG), 0);
	}
	assert_int_equal(ut_file_write_batch(f, w, N, UT_WRITE_WRITEBACK), UT_OK);
	for (int i = 0; i < N; i++) {
		assert_int_equal(ut_file_read(f, r, PG, (uint64_t)i * PG), PG);
		assert_memory_equal(r, b, PG);
	}
	assert_int_equal(ut_file_write_batch(f, w, 1, UT_WRITE_WRITEBACK | 0x80),
			 UT_EINVAL);
	ut_file_close(f);
	assert_int_equal(ut_vfs_posix()->remove(ut_vfs_posix(), path), UT_OK);
	free(b);
	free(r);
}

/* UT_WRITE_DSYNC writes back its own range only: the file's other dirty
 * pages stay unwritten (fdatasync would take them all). */
static void test_dsync_own_range(void **state)
{
	enum { N = 16 };
	char path[700];
	void *b = pattern(PG, 5), *r = ut_io_alloc(PG);
	ut_file *f;

	(void)state;
	path_in(path, sizeof(path), "dsync");
	f = xopen(path, UT_OPEN_CREATE);
	assert_int_equal(f->direct, 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(ut_file_write(f, b, PG, (uint64_t)i * PG, 0), UT_OK);
	assert_int_equal(ut_file_write(f, b, PG, (uint64_t)N * PG, UT_WRITE_DSYNC),
			 UT_OK);
	if (unwritten_pages(path, N * PG) < 0) {
		print_message("no cachestat(2): only the bytes are checked\n");
	} else {
		assert_true(unwritten_pages(path, N * PG) > 0);
		assert_int_equal(unwritten_pages(path, (N + 1) * PG),
				 unwritten_pages(path, N * PG));
	}
	assert_int_equal(ut_file_read(f, r, PG, (uint64_t)N * PG), PG);
	assert_memory_equal(r, b, PG);
	ut_file_close(f);
	assert_int_equal(ut_vfs_posix()->remove(ut_vfs_posix(), path), UT_OK);
	free(b);
	free(r);
}

static int host_has_uring(void)
{
	struct io_uring ring;

	if (io_uring_queue_init(4, &ring, 0))
		return 0;
	io_uring_queue_exit(&ring);
	return 1;
}

static void test_batch_uring(void **state)
{
	(void)state;
	unsetenv("UT_IO_NO_URING");
	print_message("io_uring on this host: %d\n", host_has_uring());
	batch_roundtrip("batch-uring", host_has_uring());
}

static void test_batch_pwrite_fallback(void **state)
{
	(void)state;
	setenv("UT_IO_NO_URING", "1", 1);
	batch_roundtrip("batch-pwrite", 0);
	unsetenv("UT_IO_NO_URING");
}

struct thr {
	ut_file *f;
	int id;
	int rc;
};

static void *batch_thread(void *arg)
{
	struct thr *t = arg;
	ut_iowrite w[8];
	void *b[8];

	t->rc = UT_OK;
	for (int round = 0; round < 20 && t->rc == UT_OK; round++) {
		for (int i = 0; i < 8; i++) {
			b[i] = pattern(PG, (unsigned)(t->id * 1000 + round * 8 + i));
			w[i] = (ut_iowrite){ b[i], PG, (uint64_t)(t->id * 8 + i) * PG };
		}
		t->rc = ut_file_write_batch(t->f, w, 8, 0);
		for (int i = 0; i < 8; i++)
			free(b[i]);
	}
	return NULL;
}

/* Threads share one file (and its ring). */
static void test_batch_threads(void **state)
{
	char path[700];
	pthread_t th[3];
	struct thr t[3];
	ut_file *f;
	void *r = ut_io_alloc(PG);

	(void)state;
	path_in(path, sizeof(path), "batch-threads");
	f = xopen(path, UT_OPEN_CREATE | UT_OPEN_DIRECT);
	for (int i = 0; i < 3; i++) {
		t[i] = (struct thr){ f, i, -100 };
		assert_int_equal(pthread_create(&th[i], NULL, batch_thread, &t[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].rc, UT_OK);
	}
	for (int id = 0; id < 3; id++)
		for (int i = 0; i < 8; i++) {
			void *e = pattern(PG, (unsigned)(id * 1000 + 19 * 8 + i));
			assert_int_equal(ut_file_read(f, r, PG, (uint64_t)(id * 8 + i) * PG),
					 PG);
			assert_memory_equal(r, e, PG);
			free(e);
		}
	ut_file_close(f);
	free(r);
}

/* RWF_ATOMIC: where statx says no, the write fails cleanly, names the file,
 * and changes nothing - through write and through write_batch, on both
 * batch paths.  Where statx says yes, it works. */
static void atomic_case(int no_uring)
{
	char path[700];
	ut_atomic_info ai;
	void *old = pattern(2 * PG, 3), *neu = pattern(PG, 4), *r = ut_io_alloc(2 * PG);
	ut_iowrite w[2] = { { neu, PG, 0 }, { neu, PG, PG } };
	ut_file *f;
	int rc;

	if (no_uring)
		setenv("UT_IO_NO_URING", "1", 1);
	else
		unsetenv("UT_IO_NO_URING");
	path_in(path, sizeof(path), no_uring ? "atomic-pw" : "atomic-ur");
	f = xopen(path, UT_OPEN_CREATE | UT_OPEN_DIRECT);
	assert_int_equal(ut_file_write(f, old, 2 * PG, 0, 0), UT_OK);
	assert_int_equal(ut_file_sync(f), UT_OK);
	assert_int_equal(ut_file_atomic_info(f, &ai), UT_OK);
	assert_int_equal(ut_file_uses_uring(f), no_uring ? 0 : host_has_uring());
	rc = ut_file_write(f, neu, PG, 0, UT_WRITE_ATOMIC);
	print_message("atomic supported=%d unit %u..%u direct=%d: write rc=%d "
		      "errno=%d (%s)\n", ai.supported, ai.unit_min, ai.unit_max,
		      f->direct, rc, f->last_errno, ut_errdetail());
	if (ut_atomic_fits(&ai, PG) && f->direct) {
		assert_int_equal(rc, UT_OK);
		assert_int_equal(ut_file_write_batch(f, w, 2, UT_WRITE_ATOMIC), UT_OK);
		assert_int_equal(ut_file_read(f, r, PG, PG), PG);
		assert_memory_equal(r, neu, PG);
	} else {
		assert_true(rc == UT_ENOTSUP || rc == UT_EINVAL);
		assert_true(f->last_errno == EOPNOTSUPP || f->last_errno == EINVAL);
		assert_non_null(strstr(ut_errdetail(), path));
		assert_non_null(strstr(ut_errdetail(), "RWF_ATOMIC"));
		assert_non_null(strstr(ut_errdetail(), "offset 0"));
		assert_non_null(strstr(ut_errdetail(), "16384 bytes"));
		f->last_errno = 0;
		rc = ut_file_write_batch(f, w, 2, UT_WRITE_ATOMIC);
		assert_true(rc == UT_ENOTSUP || rc == UT_EINVAL);
		assert_true(f->last_errno == EOPNOTSUPP || f->last_errno == EINVAL);
		assert_non_null(strstr(ut_errdetail(), "RWF_ATOMIC"));
		/* Nothing was written, not even without the flag. */
		assert_int_equal(ut_file_read(f, r, 2 * PG, 0), 2 * PG);
		assert_memory_equal(r, old, 2 * PG);
	}
	ut_file_close(f);
	unsetenv("UT_IO_NO_URING");
	free(old);
	free(neu);
	free(r);
}

static void test_atomic_uring(void **state)
{
	(void)state;
	atomic_case(0);
}

static void test_atomic_pwritev2(void **state)
{
	(void)state;
	atomic_case(1);
}

static void test_lock_conflict(void **state)
{
	char path[700];
	ut_file *f, *g = NULL;

	(void)state;
	path_in(path, sizeof(path), "locked");
	f = xopen(path, UT_OPEN_CREATE | UT_OPEN_LOCK);
	assert_int_equal(ut_vfs_posix()->open(ut_vfs_posix(), path, UT_OPEN_LOCK, &g),
			 UT_ELOCKED);
	assert_null(g);
	assert_non_null(strstr(ut_errdetail(), path));
	g = xopen(path, 0);
	ut_file_close(g);
	ut_file_close(f);
	g = xopen(path, UT_OPEN_LOCK);
	ut_file_close(g);
}

static void enospc_case(int no_uring)
{
	char path[700];
	enum { N = 32 }; /* 512 KiB into a 256 KiB tmpfs */
	ut_iowrite w[N];
	void *b = pattern(PG, 9);
	ut_file *f;

	if (!mnt[0])
		skip();
	if (no_uring)
		setenv("UT_IO_NO_URING", "1", 1);
	snprintf(path, sizeof(path), "%s/full%d", mnt, no_uring);
	f = xopen(path, UT_OPEN_CREATE);
	for (int i = 0; i < N; i++)
		w[i] = (ut_iowrite){ b, PG, (uint64_t)i * PG };
	assert_int_equal(ut_file_write_batch(f, w, N, 0), UT_ENOSPC);
	assert_int_equal(f->last_errno, ENOSPC);
	assert_int_equal(ut_file_write(f, b, PG, (uint64_t)(N + 1) * PG, 0),
			 UT_ENOSPC);
	ut_file_close(f);
	assert_int_equal(ut_vfs_posix()->remove(ut_vfs_posix(), path), UT_OK);
	unsetenv("UT_IO_NO_URING");
	free(b);
}

static void test_enospc_uring(void **state)
{
	(void)state;
	enospc_case(0);
}

static void test_enospc_pwrite(void **state)
{
	(void)state;
	enospc_case(1);
}

static void test_sync_dir_remove(void **state)
{
	char path[700];
	ut_file *f;

	(void)state;
	path_in(path, sizeof(path), "dirent");
	f = xopen(path, UT_OPEN_CREATE);
	ut_file_close(f);
	assert_int_equal(ut_vfs_posix()->sync_dir(ut_vfs_posix(), path), UT_OK);
	assert_int_equal(ut_vfs_posix()->exists(ut_vfs_posix(), path), 1);
	assert_int_equal(ut_vfs_posix()->remove(ut_vfs_posix(), path), UT_OK);
	assert_int_equal(ut_vfs_posix()->exists(ut_vfs_posix(), path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_missing),
		cmocka_unit_test(test_direct_on_real_fs),
		cmocka_unit_test(test_tmpfs_falls_back),
		cmocka_unit_test(test_batch_uring),
		cmocka_unit_test(test_batch_pwrite_fallback),
		cmocka_unit_test(test_batch_threads),
		cmocka_unit_test(test_writeback),
		cmocka_unit_test(test_dsync_own_range),
		cmocka_unit_test(test_atomic_uring),
		cmocka_unit_test(test_atomic_pwritev2),
		cmocka_unit_test(test_lock_conflict),
		cmocka_unit_test(test_enospc_uring),
		cmocka_unit_test(test_enospc_pwrite),
		cmocka_unit_test(test_sync_dir_remove),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

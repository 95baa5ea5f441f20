// SPDX-License-Identifier: MIT
/*
 * atomic_tests - in-guest functional checks for RWF_ATOMIC on block devices,
 * XFS and ext4 (untorn kernel series).
 *
 * Output: one line per check, parseable:
 *     <check>: PASS got=<v> want=<v>
 *     <check>: FAIL got=<v> want=<v>
 *     <check>: INFO got=<v>
 *     <check>: SKIP why=<reason>
 * and a final line "atomic_tests: done pass=N fail=M".
 * Exit status: 0 if no FAIL, 1 otherwise, 2 on usage error.
 *
 * "want" depends on --expect (patched|unpatched) and --aid (on|off): on the
 * unpatched kernel (or with the NVMe atomic-unit test parameter off) files
 * must NOT advertise atomic writes and RWF_ATOMIC on a file must be rejected;
 * that is the negative control for the patched run.
 *
 * Want values may list alternatives separated by '|'.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <sys/syscall.h>

#include "ut_atomic_compat.h" /* io/: the one place for the uapi bits */
#include "guest_common.h"

static int g_patched;	/* --expect patched */
static int g_aid;	/* --aid on (only meaningful when patched) */

/* ------------------------------------------------------------------ helpers */

static int do_statx(const char *path, struct ut_statx *stx)
{
	memset(stx, 0, sizeof(*stx));
	return ut_statx_call(AT_FDCWD, path, 0,
			     STATX_BASIC_STATS | STATX_WRITE_ATOMIC, stx);
}

static long long read_sysfs_ll(const char *fmt, const char *dev)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), fmt, dev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int write_sysfs(const char *dev, const char *attr, const char *val)
{
	char path[256];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "/sys/block/%s/queue/%s", dev, attr);
	f = fopen(path, "w");
	if (!f)
		return -1;
	rc = fputs(val, f) < 0 ? -1 : 0;
	if (fclose(f))
		rc = -1;
	return rc;
}

/* Field 5 of /sys/block/X/stat: write I/Os completed. */
static long long dev_write_ios(const char *dev)
{
	char path[256];
	unsigned long long f[5];
	FILE *fp;

	snprintf(path, sizeof(path), "/sys/block/%s/stat", dev);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	if (fscanf(fp, "%llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4]) != 5) {
		fclose(fp);
		return -1;
	}
	fclose(fp);
	return (long long)f[4];
}

/*
 * pwritev2 with nio equal iovecs; returns "ok", "short:N" or an errno name.
 * If readback is set and the write succeeded, read the range back and
 * compare ("readback_mismatch" / "readback_<errno>").
 */
static char result_buf[64];

static const char *xwrite(int fd, size_t len, off_t off, int flags, int nio,
			  int pattern, int readback)
{
	struct iovec iov[4];
	char *buf = abuf(len, pattern);
	ssize_t r;
	int i;

	for (i = 0; i < nio; i++) {
		iov[i].iov_base = buf + i * (len / nio);
		iov[i].iov_len = len / nio;
	}
	r = pwritev2(fd, iov, nio, off, flags);
	if (r < 0) {
		snprintf(result_buf, sizeof(result_buf), "%s", errname(errno));
	} else if ((size_t)r != len) {
		snprintf(result_buf, sizeof(result_buf), "short:%zd", r);
	} else if (readback) {
		char *rb = abuf(len, 0);

		r = pread(fd, rb, len, off);
		if (r < 0)
			snprintf(result_buf, sizeof(result_buf), "readback_%s", errname(errno));
		else if ((size_t)r != len || memcmp(rb, buf, len))
			snprintf(result_buf, sizeof(result_buf), "readback_mismatch");
		else
			snprintf(result_buf, sizeof(result_buf), "ok");
		free(rb);
	} else {
		snprintf(result_buf, sizeof(result_buf), "ok");
	}
	free(buf);
	return result_buf;
}

/*
 * Number of write requests the device completes for one 16 KiB write with
 * max_sectors_kb = 4.  Noise (log writes etc.) can only add requests, so
 * take the minimum of 3 tries.  Returns a static string: a count or errno.
 */
static char split_buf[64];

static const char *count_reqs(const char *dev, int fd, off_t off, int flags)
{
	long long best = -1;
	int t;

	for (t = 0; t < 3; t++) {
		long long a, b;
		const char *r;

		/*
		 * A request is counted only after its bio completed and woke
		 * the writer: let the counters settle before each read.
		 */
		usleep(20000);
		a = dev_write_ios(dev);
		r = xwrite(fd, 16 * KiB, off, flags, 1, 0x40 + t, 0);
		usleep(20000);
		b = dev_write_ios(dev);
		if (strcmp(r, "ok")) {
			snprintf(split_buf, sizeof(split_buf), "%s", r);
			return split_buf;
		}
		if (a < 0 || b < 0) {
			snprintf(split_buf, sizeof(split_buf), "no_stat");
			return split_buf;
		}
		if (best < 0 || b - a < best)
			best = b - a;
	}
	snprintf(split_buf, sizeof(split_buf), "%lld", best);
	return split_buf;
}

/*
 * Requests for a 16 KiB untorn write to a fresh unit that must first be
 * allocated (a hole) or made one written extent (mixed: 4 KiB written,
 * 12 KiB unwritten): the minimum over 3 units at off, off + 64 KiB, ...
 * of the device's write count delta.  Returns a count or an errno name.
 */
static const char *count_reqs_fresh(const char *dev, int fd, off_t off, int mixed)
{
	long long best = -1;
	int t;

	for (t = 0; t < 3; t++, off += 64 * KiB) {
		long long a, b;
		const char *r;

		if (mixed) {
			if (fallocate(fd, 0, off, 16 * KiB))
				return errname(errno);
			r = xwrite(fd, 4 * KiB, off, 0, 1, 0x50, 0);
			if (strcmp(r, "ok"))
				return r;
			if (fdatasync(fd))
				return errname(errno);
		}
		usleep(20000);
		a = dev_write_ios(dev);
		r = xwrite(fd, 16 * KiB, off, RWF_ATOMIC, 1, 0x51 + t, 0);
		usleep(20000);
		b = dev_write_ios(dev);
		if (strcmp(r, "ok")) {
			snprintf(split_buf, sizeof(split_buf), "%s", r);
			return split_buf;
		}
		if (a < 0 || b < 0)
			return "no_stat";
		if (best < 0 || b - a < best)
			best = b - a;
	}
	snprintf(split_buf, sizeof(split_buf), "%lld", best);
	return split_buf;
}

/*
 * The one-request check where the filesystem has work to do first, with
 * max_sectors_kb=4 (a split write would be 4 requests):
 *  - a hole: allocation is logged, not written in the write call (XFS-rt's
 *    log is on the data device, dev is the rt device; ext4 commits later),
 *    so the device sees the data request alone: 1;
 *  - mixed, XFS-rt: the unwritten 12 KiB are zeroed on the rt device first,
 *    in 1 to 3 requests (seen: 2), then the data: at most 4, where a split
 *    data write would make at least 5;
 *  - mixed, ext4 bigalloc: the zeroing, a forced journal commit and the
 *    data share one device, and the commit's size varies: reported only.
 */
static void fresh_split_checks(const char *tag, const char *mnt, const char *dev,
			       int is_xfs)
{
	long long old = read_sysfs_ll("/sys/block/%s/queue/max_sectors_kb", dev);
	char name[128], path[256], oldv[32];
	int fd;

	if (old < 0 || write_sysfs(dev, "max_sectors_kb", "4")) {
		snprintf(name, sizeof(name), "split.%s.fresh", tag);
		skip(name, "cannot_set_max_sectors_kb");
		return;
	}
	fd = open_test_file(mnt, "split.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	snprintf(name, sizeof(name), "split.%s.hole_reqs", tag);
	if (fd < 0) {
		check(name, errname(errno), "ok");
	} else {
		check(name, count_reqs_fresh(dev, fd, 0, 0), "1");
		snprintf(name, sizeof(name), "split.%s.mixed_reqs", tag);
		if (is_xfs) {
			const char *n = count_reqs_fresh(dev, fd, 1024 * KiB, 1);
			char *end;
			long v = strtol(n, &end, 10);

			info(name, "%s", n);
			snprintf(name, sizeof(name), "split.%s.mixed_not_split", tag);
			check(name, *end || end == n ? n : v <= 4 ? "le4" : "gt4", "le4");
		} else {
			info(name, "%s", count_reqs_fresh(dev, fd, 1024 * KiB, 1));
		}
		close(fd);
		unlink(path);
	}
	snprintf(oldv, sizeof(oldv), "%lld", old);
	write_sysfs(dev, "max_sectors_kb", oldv);
}

/* Run count_reqs with max_sectors_kb=4 on dev, restoring the old value. */
static void split_checks(const char *prefix, const char *dev, int fd, off_t off,
			 const char *want_atomic)
{
	char name[128];
	long long old = read_sysfs_ll("/sys/block/%s/queue/max_sectors_kb", dev);
	char oldv[32];

	if (old < 0 || write_sysfs(dev, "max_sectors_kb", "4")) {
		snprintf(name, sizeof(name), "split.%s", prefix);
		skip(name, "cannot_set_max_sectors_kb");
		return;
	}
	snprintf(name, sizeof(name), "split.%s.max_sectors_kb", prefix);
	checku(name, (unsigned long long)read_sysfs_ll("/sys/block/%s/queue/max_sectors_kb", dev), 4);

	snprintf(name, sizeof(name), "split.%s.plain16k_reqs", prefix);
	check(name, count_reqs(dev, fd, off, 0), "4");
	snprintf(name, sizeof(name), "split.%s.atomic16k_reqs", prefix);
	check(name, count_reqs(dev, fd, off, RWF_ATOMIC), want_atomic);

	snprintf(oldv, sizeof(oldv), "%lld", old);
	write_sysfs(dev, "max_sectors_kb", oldv);
}

/* ------------------------------------------------------------ device checks */

/*
 * sysfs vs statx on /dev/<dev>.  kind: "nvme" (want unit max by aid) or
 * "scsi" (informational sizes, but atomic support required).
 * Returns sysfs unit min and max through umin and umax.
 */
static void dev_limits(const char *tag, const char *dev, int is_nvme,
		       long long *umin, long long *umax)
{
	char name[128], node[128], got[96], want[96];
	struct ut_statx stx;
	long long smin, smax, amax, bnd;
	int have;

	smin = read_sysfs_ll("/sys/block/%s/queue/atomic_write_unit_min_bytes", dev);
	smax = read_sysfs_ll("/sys/block/%s/queue/atomic_write_unit_max_bytes", dev);
	amax = read_sysfs_ll("/sys/block/%s/queue/atomic_write_max_bytes", dev);
	bnd = read_sysfs_ll("/sys/block/%s/queue/atomic_write_boundary_bytes", dev);
	*umin = smin;
	*umax = smax;

	snprintf(name, sizeof(name), "dev.%s.sysfs", tag);
	info(name, "min=%lld,max=%lld,wmax=%lld,bnd=%lld,lbs=%lld,pbs=%lld",
	     smin, smax, amax, bnd,
	     read_sysfs_ll("/sys/block/%s/queue/logical_block_size", dev),
	     read_sysfs_ll("/sys/block/%s/queue/physical_block_size", dev));

	if (is_nvme) {
		/* max hardware >= atomic max >= unit max >= unit min > 0 */
		long long hw = read_sysfs_ll("/sys/block/%s/queue/max_hw_sectors_kb", dev);

		snprintf(name, sizeof(name), "dev.%s.sysfs_hw_max", tag);
		info(name, "%lld", hw * 1024);
		snprintf(name, sizeof(name), "dev.%s.sysfs_order", tag);
		check(name, (hw * 1024 >= amax && amax >= smax && smax >= smin && smin > 0) ?
		      "ordered" : "unordered", "ordered");
	}
	snprintf(name, sizeof(name), "dev.%s.sysfs_unit_max", tag);
	if (is_nvme) {
		checku(name, (unsigned long long)smax, g_aid ? 16384 : 4096);
		snprintf(name, sizeof(name), "dev.%s.sysfs_unit_min", tag);
		checku(name, (unsigned long long)smin, 4096);
	} else {
		check(name, smax > 0 ? "nonzero" : "0", "nonzero");
	}

	snprintf(node, sizeof(node), "/dev/%s", dev);
	snprintf(name, sizeof(name), "dev.%s.statx_vs_sysfs", tag);
	if (do_statx(node, &stx)) {
		check(name, errname(errno), "agree");
		return;
	}
	have = !!(stx.stx_mask & STATX_WRITE_ATOMIC);
	if ((have && stx.stx_atomic_write_unit_min == smin &&
	     stx.stx_atomic_write_unit_max == smax) || (!have && smax == 0))
		snprintf(got, sizeof(got), "agree");
	else
		snprintf(got, sizeof(got), "statx(%d:%u/%u)!=sysfs(%lld/%lld)", have,
			 stx.stx_atomic_write_unit_min, stx.stx_atomic_write_unit_max,
			 smin, smax);
	check(name, got, "agree");

	snprintf(name, sizeof(name), "dev.%s.statx_segments_max", tag);
	snprintf(want, sizeof(want), "%d", smax > 0 ? 1 : 0);
	snprintf(got, sizeof(got), "%u", stx.stx_atomic_write_segments_max);
	check(name, got, want);
}

static void raw_nvme_checks(const char *dev)
{
	char node[128];
	long long umin, umax;
	int fd;

	dev_limits("raw", dev, 1, &umin, &umax);
	snprintf(node, sizeof(node), "/dev/%s", dev);
	fd = open(node, O_RDWR | O_DIRECT);
	if (fd < 0) {
		check("dev.raw.open", errname(errno), "ok");
		return;
	}
	check("dev.raw.atomic4k", xwrite(fd, 4 * KiB, 0, RWF_ATOMIC, 1, 0x11, 1), "ok");
	check("dev.raw.atomic16k", xwrite(fd, 16 * KiB, 64 * KiB, RWF_ATOMIC, 1, 0x12, 1),
	      g_aid ? "ok" : "EINVAL");
	check("dev.raw.atomic16k_misaligned", xwrite(fd, 16 * KiB, 4 * KiB, RWF_ATOMIC, 1, 0x13, 0),
	      "EINVAL");
	check("dev.raw.atomic32k", xwrite(fd, 32 * KiB, 128 * KiB, RWF_ATOMIC, 1, 0x14, 0),
	      "EINVAL");
	split_checks("raw", dev, fd, 256 * KiB, g_aid ? "1" : "EINVAL");
	close(fd);
}

static void scsi_checks(const char *dev)
{
	char node[128];
	long long umin, umax;
	int fd;

	dev_limits("scsi", dev, 0, &umin, &umax);
	snprintf(node, sizeof(node), "/dev/%s", dev);
	fd = open(node, O_RDWR | O_DIRECT);
	if (fd < 0) {
		check("dev.scsi.open", errname(errno), "ok");
		return;
	}
	if (umin <= 0 || umax <= 0) {
		skip("dev.scsi.atomic_write", "no_atomic_limits");
		close(fd);
		return;
	}
	check("dev.scsi.atomic_unit_min", xwrite(fd, (size_t)umin, 0, RWF_ATOMIC, 1, 0x21, 1), "ok");
	check("dev.scsi.atomic16k", xwrite(fd, 16 * KiB, 64 * KiB, RWF_ATOMIC, 1, 0x22, 1),
	      (umin <= 16 * KiB && 16 * KiB <= umax) ? "ok" : "EINVAL");
	if (umax <= 4096 * KiB)
		check("dev.scsi.atomic_2x_unit_max",
		      xwrite(fd, (size_t)umax * 2, 0, RWF_ATOMIC, 1, 0x23, 0), "EINVAL");
	else
		skip("dev.scsi.atomic_2x_unit_max", "unit_max_too_large");
	close(fd);
}

/* ------------------------------------------------------------ file checks */


static void fs_statx_range_checks(const char *tag, const char *path, int supported,
				  unsigned umin, unsigned umax)
{
	char name[128], got[32];
	struct ut_statx stx;

	snprintf(name, sizeof(name), "fs.%s.statx", tag);
	if (do_statx(path, &stx)) {
		check(name, errname(errno), "ok");
		return;
	}
	info(name, "mask=%d,attr=%d,amask=%d,min=%u,max=%u,seg=%u,bs=%u",
	     !!(stx.stx_mask & STATX_WRITE_ATOMIC),
	     !!(stx.stx_attributes & STATX_ATTR_WRITE_ATOMIC),
	     !!(stx.stx_attributes_mask & STATX_ATTR_WRITE_ATOMIC),
	     stx.stx_atomic_write_unit_min, stx.stx_atomic_write_unit_max,
	     stx.stx_atomic_write_segments_max, stx.stx_blksize);

	/*
	 * A filesystem that knows STATX_WRITE_ATOMIC answers it (mask) and
	 * says the attribute is meaningful (attributes_mask) for every
	 * regular file, whether or not that file can take atomic writes.
	 */
	snprintf(name, sizeof(name), "fs.%s.statx_mask", tag);
	checku(name, !!(stx.stx_mask & STATX_WRITE_ATOMIC), g_patched ? 1 : 0);
	snprintf(name, sizeof(name), "fs.%s.statx_attr_mask", tag);
	checku(name, !!(stx.stx_attributes_mask & STATX_ATTR_WRITE_ATOMIC), g_patched ? 1 : 0);
	snprintf(name, sizeof(name), "fs.%s.statx_attr_write_atomic", tag);
	snprintf(got, sizeof(got), "%d", !!(stx.stx_attributes & STATX_ATTR_WRITE_ATOMIC));
	check(name, got, supported ? "1" : "0");
	snprintf(name, sizeof(name), "fs.%s.statx_unit_min", tag);
	checku(name, stx.stx_atomic_write_unit_min, supported ? umin : 0);
	snprintf(name, sizeof(name), "fs.%s.statx_unit_max", tag);
	checku(name, stx.stx_atomic_write_unit_max, supported ? umax : 0);
	snprintf(name, sizeof(name), "fs.%s.statx_segments_max", tag);
	checku(name, stx.stx_atomic_write_segments_max, supported ? 1 : 0);
}

static void fs_statx_checks(const char *tag, const char *path, int supported, unsigned unit)
{
	fs_statx_range_checks(tag, path, supported, unit, unit);
}

/* ------------------------------------------------ refused writes lose nothing */

/* pwritev2 of one caller-supplied buffer; "ok", "short:N" or an errno name. */
static const char *write_buf(int fd, void *buf, size_t len, off_t off, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	ssize_t r = pwritev2(fd, &iov, 1, off, flags);

	if (r < 0)
		snprintf(result_buf, sizeof(result_buf), "%s", errname(errno));
	else if ((size_t)r != len)
		snprintf(result_buf, sizeof(result_buf), "short:%zd", r);
	else
		snprintf(result_buf, sizeof(result_buf), "ok");
	return result_buf;
}

/* Does [off, off+len) hold `pattern` bytes?  "intact", "changed" or errno. */
static const char *holds(int fd, off_t off, size_t len, int pattern)
{
	static char buf[64];
	unsigned char *rb = abuf(len, ~pattern & 0xff);
	ssize_t r = pread(fd, rb, len, off);
	size_t i;

	if (r < 0) {
		snprintf(buf, sizeof(buf), "read_%s", errname(errno));
	} else if ((size_t)r != len) {
		snprintf(buf, sizeof(buf), "short_read:%zd", r);
	} else {
		snprintf(buf, sizeof(buf), "intact");
		for (i = 0; i < len; i++)
			if (rb[i] != (unsigned char)pattern) {
				snprintf(buf, sizeof(buf), "changed@%zu", i);
				break;
			}
	}
	free(rb);
	return buf;
}

/* Write `pattern` over the range with a plain write and make it durable. */
static void prefill(const char *name, int fd, off_t off, size_t len, int pattern)
{
	char n[160];

	snprintf(n, sizeof(n), "%s.prefill", name);
	check(n, xwrite(fd, len, off, 0, 1, pattern, 0), "ok");
	fdatasync(fd);
}

/* check `name` = result, and `name.intact` = the old data still there. */
static void check_refused(const char *name, const char *result, const char *want,
			  int fd, off_t off, size_t len, int pattern)
{
	char n[160], r[64];

	snprintf(r, sizeof(r), "%s", result);	/* holds() may reuse buffers */
	check(name, r, want);
	snprintf(n, sizeof(n), "%s.intact", name);
	check(n, holds(fd, off, len, pattern), "intact");
}

/*
 * A refused write must leave the inode as it was: file_modified() (mtime,
 * ctime, and setuid/setgid for a caller without CAP_FSETID) is for a write
 * that goes ahead.  The mtime is set into the past before the write and
 * read after it: "kept" or "changed".  The series refuses both writes
 * checked here in the filesystem's write checks, before file_modified() /
 * kiocb_modified(): the O_APPEND alignment (0008 for ext4, 0005 for XFS)
 * and the straddling write's EFAULT (0011, 0010).
 */
#define PAST_MTIME 1577836800	/* 2020-01-01 00:00:00 UTC */

static void set_past_mtime(int fd)
{
	const struct timespec ts[2] = { { PAST_MTIME, 0 }, { PAST_MTIME, 0 } };

	futimens(fd, ts);
}

static void check_times(const char *name, int fd)
{
	char n[160];
	struct stat st;
	const char *got;

	got = fstat(fd, &st) ? errname(errno) :
	      st.st_mtim.tv_sec == PAST_MTIME ? "kept" : "changed";
	snprintf(n, sizeof(n), "%s.times", name);
	check(n, got, "kept");
}

/*
 * An O_APPEND (or RWF_APPEND) atomic write is validated at the offset the
 * caller passes (0 here), then moved to EOF.  With EOF at unit + 4 KiB
 * inside a preallocated range, the write would straddle two units: it must
 * fail and leave size and contents as they were.  Needs unit >= 8 KiB
 * (below that the EOF cannot be unaligned for direct I/O on 4 KiB LBAs).
 */
static void append_checks(const char *tag, const char *mnt, unsigned unit, const char *want)
{
	static const struct { const char *name; int oflag, rwf; } how[] = {
		{ "o_append", O_APPEND, 0 },
		{ "rwf_append", 0, RWF_APPEND },
	};
	off_t eof = unit + 4 * KiB;
	char path[256], name[128];
	struct stat st;
	size_t i;
	int fd;

	for (i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		snprintf(name, sizeof(name), "fs.%s.%s", tag, how[i].name);
		fd = open_test_file(mnt, "append.dat", O_DIRECT | O_TRUNC | how[i].oflag,
				    path, sizeof(path));
		if (fd < 0) {
			check(name, errname(errno), want);
			continue;
		}
		if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4 * unit))
			check(name, errname(errno), "fallocate_ok");
		prefill(name, fd, 0, unit, 0x61);
		if (ftruncate(fd, eof))
			check(name, errname(errno), "ftruncate_ok");
		set_past_mtime(fd);
		check_refused(name, xwrite(fd, unit, 0, RWF_ATOMIC | how[i].rwf, 1, 0x62, 0),
			      want, fd, 0, unit, 0x61);
		check_times(name, fd);
		snprintf(name, sizeof(name), "fs.%s.%s.size", tag, how[i].name);
		if (fstat(fd, &st))
			st.st_size = -1;
		checku(name, (unsigned long long)st.st_size, (unsigned long long)eof);
		snprintf(name, sizeof(name), "fs.%s.%s.tail_zero", tag, how[i].name);
		check(name, holds(fd, unit, eof - unit, 0), "intact");
		close(fd);
	}
}

/*
 * The part-1 review cases on a file `fd` of a filesystem with untorn unit
 * `unit`, in the written range [base, base + 2 * unit).  want_inval is the
 * errno expected for a well-formed but impossible write (EINVAL when the
 * file takes atomic writes, EOPNOTSUPP when it does not).
 */
static void refusal_checks(const char *tag, int fd, off_t base, unsigned unit,
			   int supported)
{
	const char *want_inval = supported ? "EINVAL" : "EOPNOTSUPP";
	long pg = sysconf(_SC_PAGESIZE);
	size_t maplen = (unit / pg + 2) * pg;
	struct rlimit old, lim;
	char name[128];
	unsigned char *map;
	char *buf;

	/* RLIMIT_FSIZE ends half-way through the unit: no short atomic write. */
	snprintf(name, sizeof(name), "fs.%s.rlimit_fsize_straddle", tag);
	prefill(name, fd, base, unit, 0x71);
	if (getrlimit(RLIMIT_FSIZE, &old)) {
		check(name, errname(errno), "getrlimit_ok");
	} else {
		signal(SIGXFSZ, SIG_IGN);
		lim = old;
		lim.rlim_cur = base + unit / 2;
		if (setrlimit(RLIMIT_FSIZE, &lim)) {
			check(name, errname(errno), "setrlimit_ok");
		} else {
			const char *r = xwrite(fd, unit, base, RWF_ATOMIC, 1, 0x72, 0);
			char rc[64];

			snprintf(rc, sizeof(rc), "%s", r);
			setrlimit(RLIMIT_FSIZE, &old);
			check_refused(name, rc, want_inval, fd, base, unit, 0x71);
		}
		signal(SIGXFSZ, SIG_DFL);
	}

	/* The buffer's last page is PROT_NONE: EFAULT, and no WARN (guest.sh). */
	snprintf(name, sizeof(name), "fs.%s.buffer_partly_unmapped", tag);
	prefill(name, fd, base + unit, unit, 0x73);
	map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		check(name, errname(errno), "mmap_ok");
	} else {
		memset(map, 0x74, maplen);
		mprotect(map + maplen - pg, pg, PROT_NONE);
		/* ends 2 KiB into the inaccessible page */
		buf = (char *)map + maplen - pg + 2 * KiB - unit;
		check_refused(name, write_buf(fd, buf, unit, base + unit, RWF_ATOMIC),
			      supported ? "EFAULT" : "EOPNOTSUPP", fd, base + unit, unit, 0x73);

		/* A buffer one byte off the DMA alignment: EINVAL. */
		snprintf(name, sizeof(name), "fs.%s.buffer_misaligned", tag);
		buf = (char *)map + 1;
		check_refused(name, write_buf(fd, buf, unit, base + unit, RWF_ATOMIC),
			      want_inval, fd, base + unit, unit, 0x73);
		munmap(map, maplen);
	}
}

/*
 * Well-formed files, ill-formed untorn writes: each is refused with the
 * documented errno and leaves the 64 KiB written range at `off` as it was.
 * w_inval is EINVAL when the file takes atomic writes, else EOPNOTSUPP.
 */
static void refused_shapes(const char *tag, int fd, const char *path, off_t off,
			   unsigned umin, unsigned umax, const char *w_inval)
{
	/* two iovecs of a length that is otherwise valid */
	const size_t len2 = 2 * umin <= umax ? 2 * umin : umax;
	char name[128];
	int fdb;

	snprintf(name, sizeof(name), "fs.%s.refused", tag);
	prefill(name, fd, off, 64 * KiB, 0x82);
	snprintf(name, sizeof(name), "fs.%s.len_2x_unit_max", tag);
	check_refused(name, xwrite(fd, 2 * umax, off, RWF_ATOMIC, 1, 0x83, 0), w_inval,
		      fd, off, 64 * KiB, 0x82);
	snprintf(name, sizeof(name), "fs.%s.len_half_unit_min", tag);
	check_refused(name, xwrite(fd, umin / 2, off, RWF_ATOMIC, 1, 0x84, 0), w_inval,
		      fd, off, 64 * KiB, 0x82);
	snprintf(name, sizeof(name), "fs.%s.len12k_not_pow2", tag);
	check_refused(name, xwrite(fd, 12 * KiB, off, RWF_ATOMIC, 1, 0x85, 0), w_inval,
		      fd, off, 64 * KiB, 0x82);
	snprintf(name, sizeof(name), "fs.%s.len16k_off4k_misaligned", tag);
	check_refused(name, xwrite(fd, 16 * KiB, off + 4 * KiB, RWF_ATOMIC, 1, 0x86, 0), w_inval,
		      fd, off, 64 * KiB, 0x82);
	/* a valid length at half its own alignment */
	snprintf(name, sizeof(name), "fs.%s.len_unit_max_off_half", tag);
	check_refused(name, xwrite(fd, umax, off + umax / 2, RWF_ATOMIC, 1, 0x8a, 0), w_inval,
		      fd, off, 64 * KiB, 0x82);
	snprintf(name, sizeof(name), "fs.%s.len8k_crosses_16k", tag);
	check_refused(name, xwrite(fd, 8 * KiB, off + 12 * KiB, RWF_ATOMIC, 1, 0x87, 0), w_inval,
		      fd, off, 64 * KiB, 0x82);
	snprintf(name, sizeof(name), "fs.%s.two_iovecs", tag);
	check_refused(name, xwrite(fd, len2, off, RWF_ATOMIC, 2, 0x88, 0), w_inval,
		      fd, off, 64 * KiB, 0x82);
	fdb = open(path, O_RDWR);
	snprintf(name, sizeof(name), "fs.%s.no_odirect", tag);
	if (fdb < 0) {
		check(name, errname(errno), "open_ok");
	} else {
		check_refused(name, xwrite(fdb, umin, off, RWF_ATOMIC, 1, 0x89, 0), "EOPNOTSUPP",
			      fd, off, 64 * KiB, 0x82);
		close(fdb);
	}
}

/* ------------------------------------------------ io_uring and native AIO */

/* Result of a write that returned r (bytes or -errno), checked by reading back. */
static const char *judge(int fd, long long r, size_t len, off_t off, int pattern)
{
	if (r < 0)
		snprintf(result_buf, sizeof(result_buf), "%s", errname((int)-r));
	else if ((size_t)r != len)
		snprintf(result_buf, sizeof(result_buf), "short:%lld", r);
	else if (strcmp(holds(fd, off, len, pattern), "intact"))
		snprintf(result_buf, sizeof(result_buf), "readback_mismatch");
	else
		snprintf(result_buf, sizeof(result_buf), "ok");
	return result_buf;
}

/* One RWF_ATOMIC write through io_uring: op WRITE, WRITEV (one iovec) or WRITE_FIXED. */
static const char *uring_write(int fd, int op, size_t len, off_t off, int pattern)
{
	struct iovec iov = { .iov_base = abuf(len, pattern), .iov_len = len };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	long long r;

	r = io_uring_queue_init(4, &ring, 0);
	if (r < 0) {
		snprintf(result_buf, sizeof(result_buf), "uring_init_%s", errname((int)-r));
		free(iov.iov_base);
		return result_buf;
	}
	if (op == IORING_OP_WRITE_FIXED && (r = io_uring_register_buffers(&ring, &iov, 1)) < 0)
		goto out;
	sqe = io_uring_get_sqe(&ring);
	if (op == IORING_OP_WRITE)
		io_uring_prep_write(sqe, fd, iov.iov_base, len, off);
	else if (op == IORING_OP_WRITEV)
		io_uring_prep_writev(sqe, fd, &iov, 1, off);
	else
		io_uring_prep_write_fixed(sqe, fd, iov.iov_base, len, off, 0);
	sqe->rw_flags = RWF_ATOMIC;
	r = io_uring_submit(&ring);
	if (r == 1) {
		r = io_uring_wait_cqe(&ring, &cqe);
		if (r == 0) {
			r = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		}
	} else if (r >= 0) {
		r = -EIO;
	}
out:
	io_uring_queue_exit(&ring);
	free(iov.iov_base);
	return judge(fd, r, len, off, pattern);
}

/* One RWF_ATOMIC write through native AIO (io_submit, what libaio wraps). */
static const char *aio_write(int fd, size_t len, off_t off, int pattern)
{
	char *buf = abuf(len, pattern);
	aio_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	long long r;

	if (syscall(SYS_io_setup, 1, &ctx) < 0) {
		snprintf(result_buf, sizeof(result_buf), "io_setup_%s", errname(errno));
		free(buf);
		return result_buf;
	}
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_buf = (unsigned long)buf;
	cb.aio_nbytes = len;
	cb.aio_offset = off;
	cb.aio_rw_flags = RWF_ATOMIC;
	r = syscall(SYS_io_submit, ctx, 1, cbs);
	if (r < 0) {
		r = -errno;
	} else {
		long n;

		do	/* a signal may interrupt the wait, not the write */
			n = syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL);
		while (n < 0 && errno == EINTR);
		if (n != 1) {
			snprintf(result_buf, sizeof(result_buf), "getevents_%s",
				 n < 0 ? errname(errno) : "none");
			syscall(SYS_io_destroy, ctx);
			free(buf);
			return result_buf;
		}
		r = ev.res;
	}
	syscall(SYS_io_destroy, ctx);
	free(buf);
	return judge(fd, r, len, off, pattern);
}

/*
 * Untorn writes of len bytes (16 KiB, or the unit of a 4 KiB-unit file) at
 * base (written range) through each interface.
 */
static void interface_checks(const char *tag, int fd, off_t base, size_t len,
			     const char *want_ok, const char *want_inval)
{
	const off_t mis = len > 4 * KiB ? 4 * KiB : (off_t)len / 2;
	static const struct { const char *name; int op; } ops[] = {
		{ "uring_write", IORING_OP_WRITE },
		{ "uring_writev1", IORING_OP_WRITEV },
		{ "uring_write_fixed", IORING_OP_WRITE_FIXED },
	};
	char name[128];
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		snprintf(name, sizeof(name), "fs.%s.%s", tag, ops[i].name);
		prefill(name, fd, base, len, 0xa0);
		/*
		 * 6.12's generic_atomic_write_valid() takes only a single user
		 * buffer (ITER_UBUF); a registered buffer is a bvec: EINVAL.
		 */
		if (ops[i].op == IORING_OP_WRITE_FIXED)
			check_refused(name, uring_write(fd, ops[i].op, len, base, 0xa1 + (int)i),
				      want_inval, fd, base, len, 0xa0);
		else
			check(name, uring_write(fd, ops[i].op, len, base, 0xa1 + (int)i),
			      want_ok);
	}
	snprintf(name, sizeof(name), "fs.%s.aio_pwrite", tag);
	prefill(name, fd, base, len, 0xa0);
	check(name, aio_write(fd, len, base, 0xa5), want_ok);

	snprintf(name, sizeof(name), "fs.%s.uring_write_misaligned", tag);
	prefill(name, fd, base, 2 * len, 0xa6);
	check_refused(name, uring_write(fd, IORING_OP_WRITE, len, base + mis, 0xa7),
		      want_inval, fd, base, 2 * len, 0xa6);
}

/*
 * A reflinked (shared) block: the untorn write goes through copy on write
 * and must leave the other file's data unchanged.  An unpatched kernel
 * (or no aid) refuses the write with EOPNOTSUPP.
 */
static void reflink_checks(const char *tag, const char *mnt, unsigned unit, const char *want)
{
	char pa[256], pb[256], name[128];
	int a, b;

	snprintf(name, sizeof(name), "fs.%s.reflink", tag);
	a = open_test_file(mnt, "reflink_a.dat", O_DIRECT | O_TRUNC, pa, sizeof(pa));
	b = open_test_file(mnt, "reflink_b.dat", O_DIRECT | O_TRUNC, pb, sizeof(pb));
	if (a < 0 || b < 0) {
		check(name, errname(errno), "open_ok");
		goto out;
	}
	prefill(name, a, 0, 4 * unit, 0xc1);
	if (ioctl(b, FICLONE, a)) {
		check(name, errname(errno), "ficlone_ok");
		goto out;
	}
	check(name, xwrite(b, unit, unit, RWF_ATOMIC, 1, 0xc2, 1), want);
	snprintf(name, sizeof(name), "fs.%s.reflink_other_file", tag);
	check(name, holds(a, 0, 4 * unit, 0xc1), "intact");
out:
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
}

/*
 * RWF_ATOMIC | RWF_DSYNC: the write is durable when it returns, through
 * the FUA or generic_write_sync() completion path, over a hole, an
 * unwritten extent, a written one and (mixed) a unit partly written.
 */
static void dsync_checks(const char *tag, const char *mnt, size_t len, int mixed,
			 const char *want)
{
	const int flags = RWF_ATOMIC | RWF_DSYNC, rb = !strcmp(want, "ok");
	char path[256], name[160];
	int fd;

	snprintf(name, sizeof(name), "fs.%s.dsync", tag);
	fd = open_test_file(mnt, "dsync.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check(name, errname(errno), "open_ok");
		return;
	}
	if (ftruncate(fd, 1024 * KiB))
		perror("ftruncate");
	snprintf(name, sizeof(name), "fs.%s.dsync_hole", tag);
	check(name, xwrite(fd, len, 0, flags, 1, 0xe4, rb), want);
	snprintf(name, sizeof(name), "fs.%s.dsync_unwritten", tag);
	if (fallocate(fd, 0, 64 * KiB, len))
		check(name, errname(errno), "fallocate_ok");
	check(name, xwrite(fd, len, 64 * KiB, flags, 1, 0xe5, rb), want);
	snprintf(name, sizeof(name), "fs.%s.dsync_written", tag);
	prefill(name, fd, 128 * KiB, len, 0xe6);
	check(name, xwrite(fd, len, 128 * KiB, flags, 1, 0xe7, rb), want);
	if (mixed) {
		snprintf(name, sizeof(name), "fs.%s.dsync_mixed", tag);
		if (fallocate(fd, 0, 192 * KiB, len))
			check(name, errname(errno), "fallocate_ok");
		prefill(name, fd, 192 * KiB + 4 * KiB, 4 * KiB, 0xe8);
		check(name, xwrite(fd, len, 192 * KiB, flags, 1, 0xe9, rb), want);
	}
	close(fd);
}

static void xfs16k_checks(const char *mnt, const char *dev)
{
	char path[256];
	long long umin, umax;
	int ok = g_patched && g_aid;
	const char *w_ok = ok ? "ok" : "EOPNOTSUPP";
	const char *w_inval = ok ? "EINVAL" : "EOPNOTSUPP";
	int fd, fdb;

	dev_limits("xfs16k", dev, 1, &umin, &umax);

	fd = open_test_file(mnt, "atomic.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check("fs.xfs16k.open", errname(errno), "ok");
		return;
	}
	if (ftruncate(fd, 1024 * KiB))
		check("fs.xfs16k.ftruncate", errname(errno), "ok");
	fs_statx_checks("xfs16k", path, ok, 16384);

	/* hole at 0 */
	check("fs.xfs16k.write_hole", xwrite(fd, 16 * KiB, 0, RWF_ATOMIC, 1, 0x31, 1), w_ok);
	/* unwritten extent at 64K */
	if (fallocate(fd, 0, 64 * KiB, 16 * KiB))
		check("fs.xfs16k.fallocate", errname(errno), "ok");
	check("fs.xfs16k.write_unwritten", xwrite(fd, 16 * KiB, 64 * KiB, RWF_ATOMIC, 1, 0x32, 1),
	      w_ok);
	/* written extent at 128K */
	check("fs.xfs16k.prewrite_plain", xwrite(fd, 16 * KiB, 128 * KiB, 0, 1, 0x33, 1), "ok");
	fdatasync(fd);
	check("fs.xfs16k.write_written", xwrite(fd, 16 * KiB, 128 * KiB, RWF_ATOMIC, 1, 0x34, 1),
	      w_ok);

	check("fs.xfs16k.misaligned_off4k", xwrite(fd, 16 * KiB, 132 * KiB, RWF_ATOMIC, 1, 0x35, 0),
	      w_inval);
	check("fs.xfs16k.len8k", xwrite(fd, 8 * KiB, 128 * KiB, RWF_ATOMIC, 1, 0x36, 0), w_inval);
	check("fs.xfs16k.len32k", xwrite(fd, 32 * KiB, 128 * KiB, RWF_ATOMIC, 1, 0x37, 0), w_inval);
	check("fs.xfs16k.len20k", xwrite(fd, 20 * KiB, 128 * KiB, RWF_ATOMIC, 1, 0x38, 0), w_inval);
	check("fs.xfs16k.two_iovecs", xwrite(fd, 16 * KiB, 128 * KiB, RWF_ATOMIC, 2, 0x39, 0),
	      w_inval);

	fdb = open(path, O_RDWR);
	if (fdb < 0) {
		check("fs.xfs16k.no_odirect", errname(errno), "EOPNOTSUPP");
	} else {
		check("fs.xfs16k.no_odirect", xwrite(fdb, 16 * KiB, 192 * KiB, RWF_ATOMIC, 1, 0x3a, 0),
		      "EOPNOTSUPP");
		close(fdb);
	}

	/* Not split: 16 KiB overwrite of a written extent, max_sectors_kb=4. */
	xwrite(fd, 16 * KiB, 256 * KiB, 0, 1, 0x3b, 0);
	fsync(fd);
	sync();
	split_checks("xfs16k", dev, fd, 256 * KiB, ok ? "1" : "EOPNOTSUPP");
	refusal_checks("xfs16k", fd, 384 * KiB, 16 * KiB, ok);
	refused_shapes("xfs16k", fd, path, 640 * KiB, 16 * KiB, 16 * KiB, w_inval);
	interface_checks("xfs16k", fd, 512 * KiB, 16 * KiB, w_ok, w_inval);
	close(fd);
	dsync_checks("xfs16k", mnt, 16 * KiB, 0, w_ok);
	append_checks("xfs16k", mnt, 16 * KiB, w_inval);
	reflink_checks("xfs16k", mnt, 16 * KiB, w_ok);
}

/* FS_IOC_GETFLAGS / SETFLAGS: set `set` and clear `clear`; "ok" or errno. */
static const char *change_flags(int fd, int set, int clear)
{
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		return errname(errno);
	flags = (flags | set) & ~clear;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags))
		return errname(errno);
	return "ok";
}

/*
 * ext4 files that cannot take untorn writes although the filesystem can:
 * a file with per-file data journalling (chattr +j) and a file mapped by
 * indirect blocks (extents flag cleared on the empty file, which migrates
 * it).  statx must not advertise a unit, and a write through a descriptor
 * opened while the file still qualified is refused (EOPNOTSUPP, the
 * capability check at write time), old data intact.
 *
 * ext4 ignores the per-file journal flag on a delalloc mount (the default:
 * ext4_inode_journal_mode()), so there the +j file keeps doing direct I/O
 * and statx and the write must both still say yes; guest.sh remounts a
 * disk with nodelalloc (tag ext4nd) for the case that matters.
 */
static void ext4_flag_checks(const char *tag, const char *mnt, int delalloc)
{
	static const struct { const char *name, *file; int set, clear; } how[] = {
		{ "chattr_j", "journal.dat", FS_JOURNAL_DATA_FL, 0 },
		{ "no_extents", "noextent.dat", 0, FS_EXTENT_FL },
	};
	char path[256], name[160], stag[64];
	size_t i;
	int fd, ok;

	for (i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		snprintf(name, sizeof(name), "fs.%s.%s", tag, how[i].name);
		fd = open_test_file(mnt, how[i].file, O_DIRECT | O_TRUNC, path, sizeof(path));
		if (fd < 0) {
			check(name, errname(errno), "open_ok");
			continue;
		}
		snprintf(name, sizeof(name), "fs.%s.%s.setflags", tag, how[i].name);
		check(name, change_flags(fd, how[i].set, how[i].clear), "ok");
		/* +j on a delalloc mount is ignored: the file still qualifies */
		ok = g_patched && delalloc && how[i].set == FS_JOURNAL_DATA_FL;
		snprintf(stag, sizeof(stag), "%s_%s", tag, how[i].name);
		fs_statx_checks(stag, path, ok, 4096);
		snprintf(name, sizeof(name), "fs.%s.%s.atomic4k", tag, how[i].name);
		prefill(name, fd, 0, 4 * KiB, 0xd1);
		if (ok)
			check(name, xwrite(fd, 4 * KiB, 0, RWF_ATOMIC, 1, 0xd2, 1), "ok");
		else
			check_refused(name, xwrite(fd, 4 * KiB, 0, RWF_ATOMIC, 1, 0xd2, 0),
				      "EOPNOTSUPP", fd, 0, 4 * KiB, 0xd1);
		close(fd);
	}
}

/*
 * XFS: the realtime flag of an empty open file can be cleared; the file's
 * data then goes to the data device, whose unit is one block.  A write
 * through the descriptor opened while it was a realtime file must be
 * judged on what the file is now: 16 KiB refused, one block accepted,
 * and statx follows.
 */
static void xfs_rtflag_checks(const char *tag, const char *mnt, int ok)
{
	char path[256], name[160], stag[64];
	struct fsxattr fsx;
	int fd;

	snprintf(name, sizeof(name), "fs.%s.rtflag_cleared", tag);
	fd = open_test_file(mnt, "rtflag.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check(name, errname(errno), "open_ok");
		return;
	}
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fsx)) {
		check(name, errname(errno), "fsgetxattr_ok");
		goto out;
	}
	snprintf(name, sizeof(name), "fs.%s.rtflag_cleared.was_rt", tag);
	checku(name, !!(fsx.fsx_xflags & FS_XFLAG_REALTIME), 1);
	fsx.fsx_xflags &= ~FS_XFLAG_REALTIME;
	snprintf(name, sizeof(name), "fs.%s.rtflag_cleared.fssetxattr", tag);
	check(name, ioctl(fd, FS_IOC_FSSETXATTR, &fsx) ? errname(errno) : "ok", "ok");
	snprintf(stag, sizeof(stag), "%s_rtflag_cleared", tag);
	fs_statx_range_checks(stag, path, ok, 4 * KiB, 4 * KiB);
	if (ftruncate(fd, 256 * KiB))
		perror("ftruncate");
	snprintf(name, sizeof(name), "fs.%s.rtflag_cleared.atomic16k", tag);
	check(name, xwrite(fd, 16 * KiB, 64 * KiB, RWF_ATOMIC, 1, 0xe1, 0),
	      ok ? "EINVAL" : "EOPNOTSUPP");
	snprintf(name, sizeof(name), "fs.%s.rtflag_cleared.atomic4k", tag);
	check(name, xwrite(fd, 4 * KiB, 128 * KiB, RWF_ATOMIC, 1, 0xe2, 1),
	      ok ? "ok" : "EOPNOTSUPP");
out:
	close(fd);
}

static void fs4k_checks(const char *tag, const char *mnt, const char *dev, int is_xfs)
{
	char path[256], name[128];
	int ok = g_patched;
	const char *w_ok = ok ? "ok" : "EOPNOTSUPP";
	const char *w_inval = ok ? "EINVAL" : "EOPNOTSUPP";
	long long dmin, dmax;
	int fd;

	dev_limits(tag, dev, 1, &dmin, &dmax);

	fd = open_test_file(mnt, "atomic.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		snprintf(name, sizeof(name), "fs.%s.open", tag);
		check(name, errname(errno), "ok");
		return;
	}
	if (ftruncate(fd, 1024 * KiB))
		perror("ftruncate");
	fs_statx_checks(tag, path, ok, 4096);
	snprintf(name, sizeof(name), "fs.%s.atomic4k_hole", tag);
	check(name, xwrite(fd, 4 * KiB, 0, RWF_ATOMIC, 1, 0x41, 1), ok ? "ok" : "EOPNOTSUPP");
	xwrite(fd, 4 * KiB, 64 * KiB, 0, 1, 0x42, 0);
	fdatasync(fd);
	snprintf(name, sizeof(name), "fs.%s.atomic4k_written", tag);
	check(name, xwrite(fd, 4 * KiB, 64 * KiB, RWF_ATOMIC, 1, 0x43, 1), ok ? "ok" : "EOPNOTSUPP");
	snprintf(name, sizeof(name), "fs.%s.atomic16k", tag);
	check(name, xwrite(fd, 16 * KiB, 128 * KiB, RWF_ATOMIC, 1, 0x44, 0),
	      ok ? "EINVAL" : "EOPNOTSUPP");
	refusal_checks(tag, fd, 256 * KiB, 4 * KiB, ok);
	refused_shapes(tag, fd, path, 512 * KiB, 4 * KiB, 4 * KiB, w_inval);
	interface_checks(tag, fd, 640 * KiB, 4 * KiB, w_ok, w_inval);
	close(fd);
	dsync_checks(tag, mnt, 4 * KiB, 0, w_ok);
	if (is_xfs)
		reflink_checks(tag, mnt, 4 * KiB, w_ok);
	else
		ext4_flag_checks(tag, mnt, 1);
}

/* ------------------------------------------- large units: layouts, EOF, races */

/*
 * A file region and the contents it must have: every operation the tests
 * make is applied to the model only once it is known to have happened, and
 * the file is compared with the model at the end.  "match" or where they
 * first differ.
 */
struct model {
	int fd;
	off_t base;
	size_t len;
	unsigned char *want;
};

static void model_open(struct model *m, int fd, off_t base, size_t len)
{
	m->fd = fd;
	m->base = base;
	m->len = len;
	m->want = calloc(1, len);
	if (!m->want) {
		perror("calloc");
		exit(2);
	}
}

static void model_set(struct model *m, off_t off, size_t len, int pattern)
{
	memset(m->want + (off - m->base), pattern, len);
}

static const char *model_compare(struct model *m)
{
	static char buf[64];
	unsigned char *rb = abuf(m->len, 0);
	ssize_t r = pread(m->fd, rb, m->len, m->base);
	size_t i;

	if (r < 0) {
		snprintf(buf, sizeof(buf), "read_%s", errname(errno));
	} else if ((size_t)r != m->len) {
		snprintf(buf, sizeof(buf), "short_read:%zd", r);
	} else {
		snprintf(buf, sizeof(buf), "match");
		for (i = 0; i < m->len; i++)
			if (rb[i] != m->want[i]) {
				snprintf(buf, sizeof(buf), "differs@%zu:%02x!=%02x",
					 i, rb[i], m->want[i]);
				break;
			}
	}
	free(rb);
	return buf;
}

/*
 * The block layouts of xfstests generic/770, over a 64 KiB region of four
 * 16 KiB units, 4 KiB per letter: W written (a plain write), U unwritten
 * (fallocate), H hole.  Each layout is repeated in every unit unless it
 * spells all 16 blocks.  16 KiB atomic writes (RWF_DSYNC on every other
 * one) go to units 0 and 2 first, then units 1 and 3 are checked to be
 * untouched, then written too.  A unit "eof" layout puts the end of file
 * at the end of the region.
 */
static void layout_checks(const char *tag, const char *mnt, const char *w_16k)
{
	static const struct { const char *name, *blocks; int eof; } layouts[] = {
		{ "hole_written_hole", "HWWH", 0 },
		{ "written_hole", "WWHH", 0 },
		{ "written_hole_written", "WHHW", 0 },
		{ "unwritten_written_unwritten", "UWWU", 0 },
		{ "written_unwritten_written", "WUUW", 0 },
		{ "interleaved_64k", "WUHWUHWUHWUHWUHW", 0 },
		{ "written_unwritten_at_eof", "WUUW", 1 },
	};
	const off_t region = 64 * KiB, rlen = 64 * KiB, unit = 16 * KiB;
	char path[256], name[160];
	struct model m;
	size_t i;
	int u, b, fd;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const char *bl = layouts[i].blocks;
		size_t nb = strlen(bl);
		char got[64] = "ok";

		snprintf(name, sizeof(name), "fs.%s.layout.%s", tag, layouts[i].name);
		fd = open_test_file(mnt, "layout.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
		if (fd < 0) {
			check(name, errname(errno), "open_ok");
			continue;
		}
		/* guards around the region: one written unit on each side */
		model_open(&m, fd, region - unit, rlen + (layouts[i].eof ? 1 : 2) * unit);
		if (ftruncate(fd, layouts[i].eof ? region + rlen : region + rlen + unit))
			snprintf(got, sizeof(got), "ftruncate_%s", errname(errno));
		for (b = 0; b < 16; b++) {
			off_t off = region + b * 4 * KiB;
			char c = bl[b % nb];

			if (c == 'W' && strcmp(xwrite(fd, 4 * KiB, off, 0, 1, 0x20 + b, 0), "ok"))
				snprintf(got, sizeof(got), "prewrite_failed");
			if (c == 'W')
				model_set(&m, off, 4 * KiB, 0x20 + b);
			if (c == 'U' && fallocate(fd, FALLOC_FL_KEEP_SIZE, off, 4 * KiB))
				snprintf(got, sizeof(got), "fallocate_%s", errname(errno));
		}
		if (strcmp(xwrite(fd, unit, region - unit, 0, 1, 0x5a, 0), "ok"))
			snprintf(got, sizeof(got), "guard_failed");
		model_set(&m, region - unit, unit, 0x5a);
		if (!layouts[i].eof) {
			if (strcmp(xwrite(fd, unit, region + rlen, 0, 1, 0x5b, 0), "ok"))
				snprintf(got, sizeof(got), "guard_failed");
			model_set(&m, region + rlen, unit, 0x5b);
		}
		fdatasync(fd);
		snprintf(name, sizeof(name), "fs.%s.layout.%s.setup", tag, layouts[i].name);
		check(name, got, "ok");

		for (u = 0; u < 4; u++) {
			static const int order[4] = { 0, 2, 1, 3 };
			off_t off = region + order[u] * unit;
			int flags = RWF_ATOMIC | (u % 2 ? RWF_DSYNC : 0);
			const char *r = xwrite(fd, unit, off, flags, 1, 0x70 + order[u], 0);

			snprintf(name, sizeof(name), "fs.%s.layout.%s.unit%d", tag,
				 layouts[i].name, order[u]);
			check(name, r, w_16k);
			if (!strcmp(r, "ok"))
				model_set(&m, off, unit, 0x70 + order[u]);
			if (u == 1) {
				/* units 1 and 3 not written yet: unchanged */
				snprintf(name, sizeof(name), "fs.%s.layout.%s.others_unchanged",
					 tag, layouts[i].name);
				check(name, model_compare(&m), "match");
			}
		}
		snprintf(name, sizeof(name), "fs.%s.layout.%s.contents", tag, layouts[i].name);
		check(name, model_compare(&m), "match");
		free(m.want);
		close(fd);
	}
}

/*
 * End of file and a 16 KiB atomic write (w_16k: what one over a hole
 * gets), as upstream 6.16 has it: every such write is accepted.  The file
 * holds 20 KiB.  A write at 16 KiB straddles the end of file over a unit
 * partly written; one at the new end of file extends it; then, with the
 * end of file moved 4 KiB into the next unit by a plain write there, a
 * write over that unit straddles it again.  Size and contents follow each
 * write.  (That the new size is committed before data written in place is
 * checked across a shutdown by race_tests --eof-shutdown-*.)
 */
static void eof_checks(const char *tag, const char *mnt, const char *w_16k)
{
	const int ok16 = !strcmp(w_16k, "ok");
	char path[256], name[160];
	unsigned long long size = 20 * KiB;
	struct model m;
	struct stat st;
	const char *r;
	int fd;

	snprintf(name, sizeof(name), "fs.%s.eof_straddle", tag);
	fd = open_test_file(mnt, "eof.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check(name, errname(errno), "open_ok");
		return;
	}
	model_open(&m, fd, 0, 64 * KiB);
	prefill(name, fd, 0, 20 * KiB, 0x51);
	model_set(&m, 0, 20 * KiB, 0x51);
	r = xwrite(fd, 16 * KiB, 16 * KiB, RWF_ATOMIC | RWF_DSYNC, 1, 0x52, 0);
	check(name, r, w_16k);
	if (!strcmp(r, "ok")) {
		model_set(&m, 16 * KiB, 16 * KiB, 0x52);
		size = 32 * KiB;
	}
	snprintf(name, sizeof(name), "fs.%s.eof_straddle.size", tag);
	checku(name, fstat(fd, &st) ? 0 : (unsigned long long)st.st_size, ok16 ? 32 * KiB : size);

	snprintf(name, sizeof(name), "fs.%s.eof_extend", tag);
	r = xwrite(fd, 16 * KiB, size, RWF_ATOMIC | RWF_DSYNC, 1, 0x54, 0);
	check(name, r, w_16k);
	if (!strcmp(r, "ok")) {
		model_set(&m, size, 16 * KiB, 0x54);
		size += 16 * KiB;
	}
	snprintf(name, sizeof(name), "fs.%s.eof_extend.size", tag);
	checku(name, fstat(fd, &st) ? 0 : (unsigned long long)st.st_size, ok16 ? 48 * KiB : size);

	/* end of file 4 KiB into the unit [48, 64): written, then a hole */
	if (size == 48 * KiB) {
		snprintf(name, sizeof(name), "fs.%s.eof_straddle_mixed", tag);
		prefill(name, fd, 48 * KiB, 4 * KiB, 0x55);
		model_set(&m, 48 * KiB, 4 * KiB, 0x55);
		r = xwrite(fd, 16 * KiB, 48 * KiB, RWF_ATOMIC, 1, 0x56, 0);
		check(name, r, w_16k);
		if (!strcmp(r, "ok"))
			model_set(&m, 48 * KiB, 16 * KiB, 0x56);
		snprintf(name, sizeof(name), "fs.%s.eof_straddle_mixed.size", tag);
		checku(name, fstat(fd, &st) ? 0 : (unsigned long long)st.st_size,
		       !strcmp(r, "ok") ? 64 * KiB : 52 * KiB);
		size = !strcmp(r, "ok") ? 64 * KiB : 52 * KiB;
	}
	m.len = size;
	snprintf(name, sizeof(name), "fs.%s.eof.contents", tag);
	check(name, model_compare(&m), "match");
	free(m.want);
	close(fd);
}

/*
 * A 16 KiB atomic write straddling the end of file (20 KiB) from a buffer
 * whose last page cannot be read.  ext4 and XFS-rt commit such a write's
 * new size before its data write, so they fault the buffer in first: the
 * write fails with EFAULT and leaves size, contents and mtime as they were.
 */
static void straddle_efault_checks(const char *tag, const char *mnt, const char *w_16k)
{
	const int ok16 = !strcmp(w_16k, "ok");
	long pg = sysconf(_SC_PAGESIZE);
	char path[256], name[160];
	unsigned char *map;
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "fs.%s.eof_straddle_efault", tag);
	fd = open_test_file(mnt, "efault.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check(name, errname(errno), "open_ok");
		return;
	}
	map = mmap(NULL, 16 * KiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		check(name, errname(errno), "mmap_ok");
		close(fd);
		return;
	}
	memset(map, 0x5b, 16 * KiB);
	mprotect(map + 16 * KiB - pg, pg, PROT_NONE);
	prefill(name, fd, 0, 20 * KiB, 0x5a);
	set_past_mtime(fd);
	check_refused(name, write_buf(fd, map, 16 * KiB, 16 * KiB, RWF_ATOMIC),
		      ok16 ? "EFAULT" : w_16k, fd, 0, 20 * KiB, 0x5a);
	check_times(name, fd);
	snprintf(name, sizeof(name), "fs.%s.eof_straddle_efault.size", tag);
	checku(name, fstat(fd, &st) ? 0 : (unsigned long long)st.st_size, 20 * KiB);
	munmap(map, 16 * KiB);
	close(fd);
}

/*
 * ext4 bigalloc mounted without its journal (noload): a partly written
 * cluster cannot be converted and committed before the data write, so the
 * unit is one block, and statx, open and write agree on it.
 */
static void ext4_nojournal_checks(const char *mnt)
{
	const int ok = g_patched;
	char path[256];
	int fd;

	fd = open_test_file(mnt, "atomic.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check("fs.ext4nojournal.open", errname(errno), "ok");
		return;
	}
	if (ftruncate(fd, 256 * KiB))
		perror("ftruncate");
	fs_statx_checks("ext4nojournal", path, ok, 4 * KiB);
	check("fs.ext4nojournal.atomic4k", xwrite(fd, 4 * KiB, 0, RWF_ATOMIC, 1, 0xf1, 1),
	      ok ? "ok" : "EOPNOTSUPP");
	if (fallocate(fd, 0, 64 * KiB, 16 * KiB))
		check("fs.ext4nojournal.fallocate", errname(errno), "ok");
	prefill("fs.ext4nojournal.atomic16k_mixed", fd, 64 * KiB, 4 * KiB, 0xf2);
	check_refused("fs.ext4nojournal.atomic16k_mixed",
		      xwrite(fd, 16 * KiB, 64 * KiB, RWF_ATOMIC, 1, 0xf3, 0),
		      ok ? "EINVAL" : "EOPNOTSUPP", fd, 64 * KiB, 4 * KiB, 0xf2);
	close(fd);
}

/*
 * Concurrent writers (as xfstests generic/773-774, ext4/061-062).  A file
 * of 64 units of 16 KiB, all preallocated (unwritten).  Atomic thread t
 * owns the even units u with (u / 2) % ATOMIC_THREADS == t and writes
 * them with RWF_ATOMIC (every other write also RWF_DSYNC), each write
 * filling the unit with a record of (unit, sequence).  Before one write in
 * four it punches the unit, preallocates it again and writes one 4 KiB
 * block of it plainly, so that the atomic write meets a mixed unit and
 * takes the zero-and-convert path.  Meanwhile plain writers write random
 * 4 KiB blocks of the odd units, unwritten until written: their direct
 * writes race with the conversions next to them (the lost-write race).
 * Every thread records the contents it expects; after all have joined the
 * file must hold exactly them: each atomic unit its last acknowledged
 * record whole, each plain block its last acknowledged write.
 */
#define CONC_UNITS 64
#define CONC_UNIT (16 * KiB)
#define ATOMIC_THREADS 2
#define PLAIN_THREADS 2
#define CONC_ATOMIC_WRITES 150
#define CONC_PLAIN_WRITES 400

struct conc {
	int fd;
	const char *w_16k;		/* what each atomic write must return */
	unsigned char *want;		/* expected file contents */
	int bad_results;		/* atomic writes that returned otherwise */
	char first_bad[64];
	pthread_mutex_t lock;
};

struct conc_thread {
	struct conc *c;
	int id;
	unsigned int rng;
};

static unsigned int conc_rand(unsigned int *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* The bytes of record (unit, seq): recognisable, different per 8 bytes. */
static void conc_fill(unsigned char *buf, size_t len, unsigned int unit, unsigned int seq)
{
	unsigned long long *w = (unsigned long long *)buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = ((unsigned long long)unit << 48) ^ ((unsigned long long)seq << 24) ^
		       (i * 0x9e3779b97f4a7c15ULL);
}

static void conc_bad(struct conc *c, const char *what)
{
	pthread_mutex_lock(&c->lock);
	if (!c->bad_results++)
		snprintf(c->first_bad, sizeof(c->first_bad), "%s", what);
	pthread_mutex_unlock(&c->lock);
}

static void *conc_atomic_thread(void *arg)
{
	struct conc_thread *t = arg;
	struct conc *c = t->c;
	unsigned char *buf = abuf(CONC_UNIT, 0);
	unsigned char *blk = abuf(4 * KiB, 0);
	int n;

	for (n = 0; n < CONC_ATOMIC_WRITES; n++) {
		unsigned int k = conc_rand(&t->rng) % (CONC_UNITS / 2 / ATOMIC_THREADS);
		unsigned int unit = 2 * (k * ATOMIC_THREADS + t->id);
		off_t off = (off_t)unit * CONC_UNIT;
		int flags = RWF_ATOMIC | (n % 2 ? RWF_DSYNC : 0);
		struct iovec iov = { .iov_base = buf, .iov_len = CONC_UNIT };
		char res[64];
		ssize_t r;

		if (n % 4 == 0) {
			off_t b = (conc_rand(&t->rng) % 4) * 4 * KiB;

			if (fallocate(c->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      off, CONC_UNIT) ||
			    fallocate(c->fd, FALLOC_FL_KEEP_SIZE, off, CONC_UNIT)) {
				conc_bad(c, "fallocate_failed");
				continue;
			}
			memset(c->want + off, 0, CONC_UNIT);
			conc_fill(blk, 4 * KiB, unit, 1000000 + n);
			if (pwrite(c->fd, blk, 4 * KiB, off + b) != 4 * KiB) {
				conc_bad(c, "plain_in_unit_failed");
				continue;
			}
			memcpy(c->want + off + b, blk, 4 * KiB);
		}
		conc_fill(buf, CONC_UNIT, unit, n);
		r = pwritev2(c->fd, &iov, 1, off, flags);
		if (r == CONC_UNIT)
			snprintf(res, sizeof(res), "ok");
		else if (r < 0)
			snprintf(res, sizeof(res), "%s", errname(errno));
		else
			snprintf(res, sizeof(res), "short:%zd", r);
		if (strcmp(res, c->w_16k))
			conc_bad(c, res);
		if (r == CONC_UNIT)
			memcpy(c->want + off, buf, CONC_UNIT);
	}
	free(buf);
	free(blk);
	return NULL;
}

static void *conc_plain_thread(void *arg)
{
	struct conc_thread *t = arg;
	struct conc *c = t->c;
	unsigned char *blk = abuf(4 * KiB, 0);
	int n;

	for (n = 0; n < CONC_PLAIN_WRITES; n++) {
		/* odd units; the blocks of thread id are those = id mod PLAIN_THREADS */
		unsigned int unit = 2 * (conc_rand(&t->rng) % (CONC_UNITS / 2)) + 1;
		unsigned int b = 2 * (conc_rand(&t->rng) % (4 / PLAIN_THREADS)) + t->id;
		off_t off = (off_t)unit * CONC_UNIT + b * 4 * KiB;

		conc_fill(blk, 4 * KiB, unit * 4 + b, 2000000 + n);
		if (pwrite(c->fd, blk, 4 * KiB, off) != 4 * KiB) {
			conc_bad(c, "plain_write_failed");
			continue;
		}
		memcpy(c->want + off, blk, 4 * KiB);
	}
	free(blk);
	return NULL;
}

static void concurrent_checks(const char *tag, const char *mnt, const char *w_16k)
{
	struct conc_thread th[ATOMIC_THREADS + PLAIN_THREADS];
	pthread_t tid[ATOMIC_THREADS + PLAIN_THREADS];
	const size_t flen = CONC_UNITS * CONC_UNIT;
	char path[256], name[160], got[96];
	struct model m;
	struct conc c;
	int i, fd;

	snprintf(name, sizeof(name), "fs.%s.concurrent", tag);
	fd = open_test_file(mnt, "concurrent.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check(name, errname(errno), "open_ok");
		return;
	}
	if (fallocate(fd, 0, 0, flen)) {
		check(name, errname(errno), "fallocate_ok");
		close(fd);
		return;
	}
	model_open(&m, fd, 0, flen);
	memset(&c, 0, sizeof(c));
	c.fd = fd;
	c.w_16k = w_16k;
	c.want = m.want;
	pthread_mutex_init(&c.lock, NULL);
	for (i = 0; i < ATOMIC_THREADS + PLAIN_THREADS; i++) {
		th[i].c = &c;
		th[i].id = i < ATOMIC_THREADS ? i : i - ATOMIC_THREADS;
		th[i].rng = 0x2545f491u * (i + 1);
		if (pthread_create(&tid[i], NULL,
				   i < ATOMIC_THREADS ? conc_atomic_thread : conc_plain_thread,
				   &th[i])) {
			check(name, "pthread_create_failed", "ok");
			exit(2);
		}
	}
	for (i = 0; i < ATOMIC_THREADS + PLAIN_THREADS; i++)
		pthread_join(tid[i], NULL);
	snprintf(name, sizeof(name), "fs.%s.concurrent.results", tag);
	if (c.bad_results)
		snprintf(got, sizeof(got), "%d_unexpected(first:%s)", c.bad_results, c.first_bad);
	else
		snprintf(got, sizeof(got), "all_%s", w_16k);
	snprintf(path, sizeof(path), "all_%s", w_16k);
	check(name, got, path);
	snprintf(name, sizeof(name), "fs.%s.concurrent.contents", tag);
	check(name, model_compare(&m), "match");
	pthread_mutex_destroy(&c.lock);
	free(m.want);
	close(fd);
}

/*
 * RWF_NOWAIT: a 16 KiB atomic write into one preallocated (unwritten)
 * unit must not block on ext4 (it runs under the shared inode lock, like
 * any direct write into unwritten blocks); XFS-rt may still say EAGAIN
 * there.  Into a mixed unit it would have to zero, convert and commit
 * first, which blocks: EAGAIN on both, with the unit left as it was.
 */
static void nowait_checks(const char *tag, const char *mnt, const char *w_16k, int is_xfs)
{
	const int ok16 = !strcmp(w_16k, "ok");
	char path[256], name[160];
	int fd;

	snprintf(name, sizeof(name), "fs.%s.nowait_prealloc", tag);
	fd = open_test_file(mnt, "nowait.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check(name, errname(errno), "open_ok");
		return;
	}
	if (fallocate(fd, 0, 0, 64 * KiB) || fsync(fd))
		check(name, errname(errno), "fallocate_ok");
	check(name, xwrite(fd, 16 * KiB, 0, RWF_ATOMIC | RWF_NOWAIT, 1, 0x5c, ok16),
	      !ok16 ? w_16k : is_xfs ? "ok|EAGAIN" : "ok");

	snprintf(name, sizeof(name), "fs.%s.nowait_mixed", tag);
	prefill(name, fd, 32 * KiB, 4 * KiB, 0x5d);
	check_refused(name, xwrite(fd, 16 * KiB, 32 * KiB, RWF_ATOMIC | RWF_NOWAIT, 1, 0x5e, 0),
		      ok16 ? "EAGAIN" : w_16k, fd, 32 * KiB, 4 * KiB, 0x5d);
	close(fd);
}

/*
 * Large untorn writes: XFS realtime (4 KiB blocks, 16 KiB rt extents) and
 * ext4 bigalloc (4 KiB blocks, 16 KiB clusters).  unit min is one block;
 * unit max is 16 KiB with the NVMe aid, 4 KiB (the device's) without.
 * A range mapped partly written, partly unwritten (or, on ext4, partly a
 * hole) is written like any other, by both.
 */
static void large_checks(const char *tag, const char *mnt, const char *dev, int is_xfs)
{
	const unsigned umin = 4 * KiB, umax = g_aid ? 16 * KiB : 4 * KiB;
	const int ok = g_patched;
	const char *w_inval = ok ? "EINVAL" : "EOPNOTSUPP";
	const char *w_16k = !ok ? "EOPNOTSUPP" : umax < 16 * KiB ? "EINVAL" : "ok";
	char path[256], name[128];
	long long dmin, dmax;
	unsigned len;
	off_t off;
	int fd;

	dev_limits(tag, dev, 1, &dmin, &dmax);

	fd = open_test_file(mnt, "atomic.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		snprintf(name, sizeof(name), "fs.%s.open", tag);
		check(name, errname(errno), "ok");
		return;
	}
	if (ftruncate(fd, 2048 * KiB))
		perror("ftruncate");
	fs_statx_range_checks(tag, path, ok, umin, umax);

	/* every power of two from unit min to unit max, into holes */
	for (len = umin, off = 0; len <= umax; len *= 2, off += 64 * KiB) {
		snprintf(name, sizeof(name), "fs.%s.len%uk_hole", tag, len / KiB);
		check(name, xwrite(fd, len, off, RWF_ATOMIC, 1, 0x81, 1), ok ? "ok" : "EOPNOTSUPP");
	}

	/* refused shapes, old data intact after each */
	refused_shapes(tag, fd, path, 512 * KiB, umin, umax, w_inval);

	/* 16 KiB over each kind of mapping */
	off = 1024 * KiB;
	snprintf(name, sizeof(name), "fs.%s.map_unwritten", tag);
	if (fallocate(fd, 0, off, 16 * KiB))
		check(name, errname(errno), "fallocate_ok");
	check(name, xwrite(fd, 16 * KiB, off, RWF_ATOMIC, 1, 0x91, 1), w_16k);

	off += 64 * KiB;
	snprintf(name, sizeof(name), "fs.%s.map_written", tag);
	prefill(name, fd, off, 16 * KiB, 0x92);
	check(name, xwrite(fd, 16 * KiB, off, RWF_ATOMIC, 1, 0x93, 1), w_16k);

	off += 64 * KiB;
	snprintf(name, sizeof(name), "fs.%s.map_punched", tag);
	prefill(name, fd, off, 16 * KiB, 0x94);
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off + 4 * KiB, 4 * KiB))
		check(name, errname(errno), "punch_ok");
	/* XFS-rt cannot free part of an rt extent: it writes zeroes instead */
	check(name, xwrite(fd, 16 * KiB, off, RWF_ATOMIC, 1, 0x95, 1), w_16k);

	off += 64 * KiB;
	snprintf(name, sizeof(name), "fs.%s.map_unwritten_part_written", tag);
	if (fallocate(fd, 0, off, 16 * KiB))
		check(name, errname(errno), "fallocate_ok");
	prefill(name, fd, off, 4 * KiB, 0x96);
	check(name, xwrite(fd, 16 * KiB, off, RWF_ATOMIC, 1, 0x97, !strcmp(w_16k, "ok")),
	      w_16k);
	if (strcmp(w_16k, "ok")) {
		snprintf(name, sizeof(name), "fs.%s.map_unwritten_part_written.intact", tag);
		check(name, holds(fd, off, 4 * KiB, 0x96), "intact");
	}

	off += 64 * KiB;
	snprintf(name, sizeof(name), "fs.%s.map_hole_part_written", tag);
	prefill(name, fd, off + 8 * KiB, 4 * KiB, 0x98);
	check(name, xwrite(fd, 16 * KiB, off, RWF_ATOMIC, 1, 0x99, !strcmp(w_16k, "ok")),
	      w_16k);

	/* not split: 16 KiB atomic overwrite with max_sectors_kb=4 */
	off += 64 * KiB;
	xwrite(fd, 16 * KiB, off, 0, 1, 0x9a, 0);
	fsync(fd);
	sync();
	split_checks(tag, dev, fd, off, !ok ? "EOPNOTSUPP" : umax < 16 * KiB ? "EINVAL" : "1");
	if (!strcmp(w_16k, "ok"))
		fresh_split_checks(tag, mnt, dev, is_xfs);

	refusal_checks(tag, fd, 1536 * KiB, umax, ok);
	interface_checks(tag, fd, 1664 * KiB, 16 * KiB, w_16k, w_inval);
	close(fd);
	append_checks(tag, mnt, 16 * KiB, w_inval);
	dsync_checks(tag, mnt, 16 * KiB, 1, w_16k);
	layout_checks(tag, mnt, w_16k);
	eof_checks(tag, mnt, w_16k);
	straddle_efault_checks(tag, mnt, w_16k);
	nowait_checks(tag, mnt, w_16k, is_xfs);
	concurrent_checks(tag, mnt, w_16k);
	if (is_xfs)
		xfs_rtflag_checks(tag, mnt, ok);
}

/*
 * ext4 mounted data=journal: no direct I/O, so no untorn writes.  statx
 * must not advertise them (the capability test statx, open and write
 * share), and a write is refused; a plain O_DIRECT write still works (it
 * falls back to buffered I/O, as ext4 always did).
 */
/*
 * A filesystem on a scsi_debug disk with atomic write limits (upstream
 * generic/767's setup, which fstests cannot build here: it loads
 * scsi_debug as a module, and the guest kernel has it built in, its limits
 * set on the kernel command line).  guest.sh makes ext4 bigalloc (16 KiB
 * clusters) on it.  The unit is the device's, so the NVMe test parameter
 * does not matter: patched, statx says 4 KiB .. 16 KiB; as 767: half the
 * unit min and twice the unit max are EINVAL, every power of two between
 * them works, a buffered one is EOPNOTSUPP, an unaligned one EINVAL; and a
 * 16 KiB write into a hole, a mixed cluster and written blocks, each one
 * device request with max_sectors_kb=4 where the device sees nothing else.
 */
static void scsifs_checks(const char *mnt, const char *dev)
{
	const char *tag = "scsifs", *w = g_patched ? "ok" : "EOPNOTSUPP";
	const char *w_inval = g_patched ? "EINVAL" : "EOPNOTSUPP";
	char path[256], name[128];
	unsigned len;
	off_t off;
	int fd, bfd;

	fd = open_test_file(mnt, "atomic.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check("fs.scsifs.open", errname(errno), "ok");
		return;
	}
	fs_statx_range_checks(tag, path, g_patched, 4 * KiB, 16 * KiB);
	if (fallocate(fd, 0, 0, 64 * KiB))
		check("fs.scsifs.fallocate", errname(errno), "ok");
	fsync(fd);
	check("fs.scsifs.len2k", xwrite(fd, 2 * KiB, 0, RWF_ATOMIC, 1, 0x61, 0), w_inval);
	check("fs.scsifs.len32k", xwrite(fd, 32 * KiB, 0, RWF_ATOMIC, 1, 0x62, 0), w_inval);
	for (len = 4 * KiB; len <= 16 * KiB; len *= 2) {
		snprintf(name, sizeof(name), "fs.%s.len%uk_prealloc", tag, len / KiB);
		check(name, xwrite(fd, len, 0, RWF_ATOMIC, 1, 0x63, 1), w);
	}
	check("fs.scsifs.unaligned16k", xwrite(fd, 16 * KiB, 4 * KiB, RWF_ATOMIC, 1, 0x64, 0),
	      w_inval);
	bfd = open(path, O_RDWR);
	check("fs.scsifs.buffered", bfd < 0 ? errname(errno) :
	      xwrite(bfd, 4 * KiB, 0, RWF_ATOMIC, 1, 0x65, 0), "EOPNOTSUPP");
	if (bfd >= 0)
		close(bfd);

	off = 256 * KiB;
	check("fs.scsifs.hole16k", xwrite(fd, 16 * KiB, off, RWF_ATOMIC, 1, 0x66, 1), w);
	off += 64 * KiB;
	if (fallocate(fd, 0, off, 16 * KiB))
		check("fs.scsifs.mixed16k.fallocate", errname(errno), "ok");
	prefill("fs.scsifs.mixed16k", fd, off + 4 * KiB, 4 * KiB, 0x67);
	check("fs.scsifs.mixed16k", xwrite(fd, 16 * KiB, off, RWF_ATOMIC, 1, 0x68, 1), w);
	off += 64 * KiB;
	xwrite(fd, 16 * KiB, off, 0, 1, 0x69, 0);
	fsync(fd);
	sync();
	split_checks(tag, dev, fd, off, g_patched ? "1" : "EOPNOTSUPP");
	close(fd);
	unlink(path);
	if (g_patched)
		fresh_split_checks(tag, mnt, dev, 0);
}

static void ext4_journal_checks(const char *mnt)
{
	char path[256];
	int fd;

	fd = open_test_file(mnt, "atomic.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (fd < 0) {
		check("fs.ext4j.open", errname(errno), "ok");
		return;
	}
	if (ftruncate(fd, 256 * KiB))
		perror("ftruncate");
	fs_statx_checks("ext4j", path, 0, 0);
	prefill("fs.ext4j.atomic4k", fd, 64 * KiB, 4 * KiB, 0xb1);
	check_refused("fs.ext4j.atomic4k", xwrite(fd, 4 * KiB, 64 * KiB, RWF_ATOMIC, 1, 0xb2, 0),
		      "EOPNOTSUPP", fd, 64 * KiB, 4 * KiB, 0xb1);
	check("fs.ext4j.plain_odirect", xwrite(fd, 4 * KiB, 128 * KiB, 0, 1, 0xb3, 1), "ok");
	close(fd);
}

/* ------------------------------------------------ shutdown mid-write */

/*
 * A filesystem shut down mid-write (as xfstests generic/775 and 778).
 * Phase one (--shutdown-write) lays out SD_UNITS units of 16 KiB, each a
 * hole, unwritten, written or mixed (unwritten with one written 4 KiB
 * block), the first SD_EOF_UNITS below the end of file and the rest
 * beyond it, and makes that durable.  One thread then writes records of
 * (unit, sequence) to random units with RWF_ATOMIC | RWF_DSYNC while
 * another shuts the filesystem down (FS_IOC_GOINGDOWN, without flushing
 * the log) after a while.  The state file in /tmp says how each unit was
 * laid out, the last write acknowledged for it and the one that failed.
 * guest.sh then unmounts and mounts again (log recovery), and phase two
 * (--shutdown-verify) checks that every unit holds exactly one whole
 * record or its layout, and at least its last acknowledged write: the
 * acknowledged one, or the one in flight when the shutdown came.
 */
#define SD_UNITS 64
#define SD_EOF_UNITS 48
#define SD_UNIT (16 * KiB)
#define SD_DELAY_US 1000000	/* --shutdown-delay-us: when the shutdown comes */
#define SD_MAX_HOGS 8

/*
 * A longer developer pass (guest.sh untorn.shutdown_rounds=N) runs the test
 * in rounds with different delays, so the shutdown meets each step of a
 * write (data, conversion, log force) at some point, and may add CPU-hog
 * threads (--shutdown-hogs) that delay the log's workers and so widen the
 * windows between those steps.
 */
static long g_sd_delay_us = SD_DELAY_US;
/*
 * The negative control (a tag ending in ".control"): the same writes made
 * plain, without RWF_ATOMIC or RWF_DSYNC, which a shutdown without log flush
 * must be seen to lose (the conversions and sizes they left in the log):
 * shows that the check can see a loss at all.
 */
static int sd_is_control(const char *tag)
{
	size_t n = strlen(tag);

	return n > 8 && !strcmp(tag + n - 8, ".control");
}
static int g_sd_hogs;
static volatile int g_sd_hog_stop;
/*
 * --shutdown-appenders N: N more threads, each appending 16 KiB units with
 * RWF_ATOMIC | RWF_DSYNC to a file of its own (shutdown-append<K>.dat)
 * until the shutdown stops it.  More writers keep the log busier, so the
 * shutdown more often meets a log force in progress; each appender's
 * acknowledged units are checked after recovery like the others.
 */
#define SD_MAX_APPENDERS 8
#define SD_APPEND_MAX 4096
static int g_sd_appenders;

struct sd_appender {
	char path[256];
	long acked;	/* units 0 .. acked - 1 acknowledged */
};


enum { SD_HOLE, SD_UNWRITTEN, SD_WRITTEN, SD_MIXED };

struct sd_unit {
	int kind;
	long acked;	/* last acknowledged sequence, 0: none */
	long failed;	/* sequence of the write that failed, 0: none */
};

struct sd_state {
	struct sd_unit u[SD_UNITS];
	int fd;
	long writes;
	char first_error[32];
};

/* The initial contents of a unit with this layout (0 = zeroes). */
static void sd_layout_fill(unsigned char *buf, int unit, int kind)
{
	memset(buf, 0, SD_UNIT);
	if (kind == SD_WRITTEN)
		conc_fill(buf, SD_UNIT, unit, 0);
	else if (kind == SD_MIXED)
		conc_fill(buf + 4 * KiB, 4 * KiB, unit, 0);
}

static void *sd_shutdown_thread(void *arg)
{
	struct sd_state *s = arg;
	__u32 how = GOINGDOWN_NOLOGFLUSH;

	usleep((useconds_t)g_sd_delay_us);
	if (ioctl(s->fd, FS_IOC_GOINGDOWN, &how))
		perror("FS_IOC_GOINGDOWN");
	return NULL;
}

static void *sd_hog_thread(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	while (!g_sd_hog_stop)
		n++;
	return NULL;
}

static int sd_unit_is(const unsigned char *got, ssize_t have, const unsigned char *want);

static void *sd_append_thread(void *arg)
{
	struct sd_appender *a = arg;
	unsigned char *buf = abuf(SD_UNIT, 0);
	struct iovec iov = { .iov_base = buf, .iov_len = SD_UNIT };
	int fd = open(a->path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);

	while (fd >= 0 && a->acked < SD_APPEND_MAX) {
		conc_fill(buf, SD_UNIT, (unsigned int)(1000 + a->acked), 7);
		if (pwritev2(fd, &iov, 1, (off_t)a->acked * SD_UNIT,
			     RWF_ATOMIC | RWF_DSYNC) != SD_UNIT)
			break;
		a->acked++;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static void shutdown_write(const char *tag, const char *mnt)
{
	/* how the writes end: EIO once shut down, if the 16 KiB unit is offered
	 * (a round's tag is the filesystem's, then ".rN") */
	const int control = sd_is_control(tag);
	/*
	 * ext4: a write that passed its shutdown check before the shutdown
	 * may meet it in its RWF_DSYNC sync, which says EROFS (the shutdown
	 * left the superblock read-only, ext4_sync_file()).
	 */
	const char *want_io = !strncmp(tag, "ext4", 4) ? "EIO|EROFS" : "EIO";
	const char *want_stop = g_aid || control ? want_io : !g_patched ? "EOPNOTSUPP" :
				!strncmp(tag, "xfs16k", 6) ? "EOPNOTSUPP" : "EINVAL";
	pthread_t hogs[SD_MAX_HOGS], apt[SD_MAX_APPENDERS];
	struct sd_appender ap[SD_MAX_APPENDERS];
	int nhogs = 0, nap = 0;
	unsigned char *buf = abuf(SD_UNIT, 0);
	char path[256], name[160], state[160];
	unsigned int rng = 0x9e3779b9u;
	struct sd_state s;
	pthread_t tid;
	FILE *f;
	long seq;
	int i;

	memset(&s, 0, sizeof(s));
	snprintf(name, sizeof(name), "shutdown.%s.setup", tag);
	s.fd = open_test_file(mnt, "shutdown.dat", O_DIRECT | O_TRUNC, path, sizeof(path));
	if (s.fd < 0) {
		check(name, errname(errno), "ok");
		return;
	}
	if (ftruncate(s.fd, (off_t)SD_EOF_UNITS * SD_UNIT))
		check(name, errname(errno), "ftruncate_ok");
	for (i = 0; i < SD_UNITS; i++) {
		off_t off = (off_t)i * SD_UNIT;

		s.u[i].kind = i < SD_EOF_UNITS ? (int)(conc_rand(&rng) % 4) : SD_HOLE;
		if (s.u[i].kind == SD_UNWRITTEN || s.u[i].kind == SD_MIXED)
			if (fallocate(s.fd, 0, off, SD_UNIT))
				check(name, errname(errno), "fallocate_ok");
		sd_layout_fill(buf, i, s.u[i].kind);
		if (s.u[i].kind == SD_WRITTEN &&
		    pwrite(s.fd, buf, SD_UNIT, off) != SD_UNIT)
			check(name, errname(errno), "write_ok");
		if (s.u[i].kind == SD_MIXED &&
		    pwrite(s.fd, buf + 4 * KiB, 4 * KiB, off + 4 * KiB) != 4 * KiB)
			check(name, errname(errno), "write_ok");
	}
	check(name, fsync(s.fd) ? errname(errno) : "ok", "ok");
	sync();

	g_sd_hog_stop = 0;
	while (nhogs < g_sd_hogs && nhogs < SD_MAX_HOGS &&
	       !pthread_create(&hogs[nhogs], NULL, sd_hog_thread, NULL))
		nhogs++;
	memset(ap, 0, sizeof(ap));
	for (; nap < g_sd_appenders && nap < SD_MAX_APPENDERS; nap++) {
		snprintf(ap[nap].path, sizeof(ap[nap].path), "%s/shutdown-append%d.dat",
			 mnt, nap);
		if (pthread_create(&apt[nap], NULL, sd_append_thread, &ap[nap]))
			break;
	}
	if (pthread_create(&tid, NULL, sd_shutdown_thread, &s)) {
		check(name, "pthread_create_failed", "ok");
		exit(2);
	}
	for (seq = 1;; seq++) {
		/* units beyond EOF one after another, so the file grows */
		int unit = seq % 4 == 0 && SD_EOF_UNITS + seq / 4 <= SD_UNITS ?
			   SD_EOF_UNITS + (int)(seq / 4) - 1 :
			   (int)(conc_rand(&rng) % SD_EOF_UNITS);
		struct iovec iov = { .iov_base = buf, .iov_len = SD_UNIT };

		conc_fill(buf, SD_UNIT, unit, seq);
		if (pwritev2(s.fd, &iov, 1, (off_t)unit * SD_UNIT,
			     control ? 0 : RWF_ATOMIC | RWF_DSYNC) == SD_UNIT) {
			s.u[unit].acked = seq;
			s.writes++;
			continue;
		}
		snprintf(s.first_error, sizeof(s.first_error), "%s", errname(errno));
		s.u[unit].failed = seq;
		break;
	}
	pthread_join(tid, NULL);
	for (i = 0; i < nap; i++)
		pthread_join(apt[i], NULL);
	g_sd_hog_stop = 1;
	while (nhogs > 0)
		pthread_join(hogs[--nhogs], NULL);
	close(s.fd);

	snprintf(name, sizeof(name), "shutdown.%s.acked_writes", tag);
	info(name, "%ld", s.writes);
	snprintf(name, sizeof(name), "shutdown.%s.stopped_by", tag);
	check(name, s.first_error, want_stop);
	snprintf(state, sizeof(state), "/tmp/shutdown-%s.state", tag);
	f = fopen(state, "w");
	if (!f) {
		check(name, errname(errno), "state_saved");
		return;
	}
	for (i = 0; i < SD_UNITS; i++)
		fprintf(f, "%d %ld %ld\n", s.u[i].kind, s.u[i].acked, s.u[i].failed);
	fprintf(f, "%d\n", nap);
	for (i = 0; i < nap; i++) {
		fprintf(f, "%ld\n", ap[i].acked);
		s.writes += ap[i].acked;
	}
	fclose(f);
	free(buf);
	if (nap) {
		snprintf(name, sizeof(name), "shutdown.%s.acked_with_appenders", tag);
		info(name, "%ld", s.writes);
	}
}

/*
 * Units of appender k that were acknowledged but did not come back whole
 * after recovery (see sd_append_thread()).
 */
static int sd_append_lost(const char *mnt, int k, long acked,
			  unsigned char *got, unsigned char *want, char *res, size_t rlen)
{
	char path[256];
	int fd, lost = 0;
	long u;

	snprintf(path, sizeof(path), "%s/shutdown-append%d.dat", mnt, k);
	fd = open(path, O_RDONLY | O_DIRECT);
	for (u = 0; u < acked; u++) {
		ssize_t have = fd < 0 ? -1 : pread(fd, got, SD_UNIT, (off_t)u * SD_UNIT);

		conc_fill(want, SD_UNIT, (unsigned int)(1000 + u), 7);
		if (sd_unit_is(got, have, want))
			continue;
		if (!lost++ && !strcmp(res, "ok"))
			snprintf(res, rlen, "append%d.unit%ld(acked%ld,read%zd)", k, u, acked, have);
	}
	if (fd >= 0)
		close(fd);
	unlink(path);
	return lost;
}

/* Does the unit hold exactly `want`?  The file may end before or inside it. */
static int sd_unit_is(const unsigned char *got, ssize_t have, const unsigned char *want)
{
	return have == SD_UNIT && !memcmp(got, want, SD_UNIT);
}

static void shutdown_verify(const char *tag, const char *mnt)
{
	unsigned char *got = abuf(SD_UNIT, 0), *want = abuf(SD_UNIT, 0);
	char path[256], name[160], state[160], res[96] = "ok";
	struct sd_unit u[SD_UNITS];
	long ap_acked[SD_MAX_APPENDERS];
	int i, fd, lost = 0, torn = 0, nap = 0;
	FILE *f;

	snprintf(name, sizeof(name), "shutdown.%s.after_recovery", tag);
	snprintf(state, sizeof(state), "/tmp/shutdown-%s.state", tag);
	f = fopen(state, "r");
	if (!f) {
		check(name, "no_state", "ok");
		return;
	}
	for (i = 0; i < SD_UNITS; i++)
		if (fscanf(f, "%d %ld %ld", &u[i].kind, &u[i].acked, &u[i].failed) != 3) {
			check(name, "bad_state", "ok");
			fclose(f);
			return;
		}
	if (fscanf(f, "%d", &nap) != 1 || nap < 0 || nap > SD_MAX_APPENDERS)
		nap = 0;
	for (i = 0; i < nap; i++)
		if (fscanf(f, "%ld", &ap_acked[i]) != 1)
			ap_acked[i] = 0;
	fclose(f);
	snprintf(path, sizeof(path), "%s/shutdown.dat", mnt);
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		check(name, errname(errno), "ok");
		return;
	}
	for (i = 0; i < SD_UNITS; i++) {
		ssize_t have = pread(fd, got, SD_UNIT, (off_t)i * SD_UNIT);
		int ok = 0;

		/* the last acknowledged write, or the one in flight after it */
		if (u[i].acked) {
			conc_fill(want, SD_UNIT, i, u[i].acked);
			ok = sd_unit_is(got, have, want);
		} else {
			/* beyond the first end of file: a hole, or past the end */
			sd_layout_fill(want, i, u[i].kind);
			ok = sd_unit_is(got, have, want) ||
			     (i >= SD_EOF_UNITS && have == 0);
		}
		if (!ok && u[i].failed) {
			conc_fill(want, SD_UNIT, i, u[i].failed);
			ok = sd_unit_is(got, have, want);
		}
		if (ok)
			continue;
		if (u[i].acked)
			lost++;
		else
			torn++;
		if (!strcmp(res, "ok"))
			snprintf(res, sizeof(res), "unit%d(kind%d,acked%ld,failed%ld,read%zd)",
				 i, u[i].kind, u[i].acked, u[i].failed, have);
	}
	close(fd);
	for (i = 0; i < nap; i++)
		lost += sd_append_lost(mnt, i, ap_acked[i], got, want, res, sizeof(res));
	if (sd_is_control(tag)) {
		/* plain writes, no sync: the check must see some lost */
		info(name, "%s", res);
		snprintf(name, sizeof(name), "shutdown.%s.lost_or_torn", tag);
		info(name, "%d,%d", lost, torn);
		snprintf(name, sizeof(name), "shutdown.%s.loss_seen", tag);
		check(name, lost + torn ? "yes" : "no", "yes");
		free(got);
		free(want);
		return;
	}
	check(name, res, "ok");
	snprintf(name, sizeof(name), "shutdown.%s.lost_or_torn", tag);
	snprintf(res, sizeof(res), "%d,%d", lost, torn);
	check(name, res, "0,0");
	free(got);
	free(want);
}

/* ------------------------------------------------------------------ main */

static int split_mnt_dev(char *arg, char **mnt, char **dev)
{
	char *c = strchr(arg, ':');

	if (!c)
		return -1;
	*c = 0;
	*mnt = arg;
	*dev = c + 1;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: atomic_tests --expect patched|unpatched [--aid on|off]\n"
		"       [--xfs16k MNT:DEV] [--xfs4k MNT:DEV] [--ext4 MNT:DEV]\n"
		"       [--xfsrt MNT:RTDEV] [--ext4bigalloc MNT:DEV] [--ext4j MNT:DEV]\n"
		"       [--ext4nd MNT:DEV]   (ext4 mounted nodelalloc: per-file flags only)\n"
		"       [--ext4nojournal MNT:DEV]   (ext4 bigalloc mounted noload)\n"
		"       [--shutdown-write TAG:MNT | --shutdown-verify TAG:MNT]\n"
		"                            (before and after a shutdown and remount)\n"
		"       [--shutdown-delay-us N] [--shutdown-hogs N] [--shutdown-appenders N]\n"
		"                            (with --shutdown-write)\n"
		"       [--raw DEV] [--scsi DEV]      (DEV = name under /sys/block)\n"
		"       [--scsifs MNT:DEV]   (ext4 bigalloc on the scsi_debug disk)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "expect", required_argument, 0, 'e' },
		{ "aid", required_argument, 0, 'a' },
		{ "xfs16k", required_argument, 0, '1' },
		{ "xfs4k", required_argument, 0, '4' },
		{ "ext4", required_argument, 0, 'x' },
		{ "xfsrt", required_argument, 0, 'r' },
		{ "ext4bigalloc", required_argument, 0, 'b' },
		{ "ext4j", required_argument, 0, 'j' },
		{ "ext4nd", required_argument, 0, 'n' },
		{ "ext4nojournal", required_argument, 0, 'J' },
		{ "shutdown-write", required_argument, 0, 'W' },
		{ "shutdown-verify", required_argument, 0, 'V' },
		{ "scsifs", required_argument, 0, 'S' },
		{ "shutdown-delay-us", required_argument, 0, 'D' },
		{ "shutdown-hogs", required_argument, 0, 'H' },
		{ "shutdown-appenders", required_argument, 0, 'A' },
		{ "raw", required_argument, 0, 'w' },
		{ "scsi", required_argument, 0, 's' },
		{ 0, 0, 0, 0 },
	};
	char *xfs16k = NULL, *xfs4k = NULL, *ext4 = NULL, *xfsrt = NULL, *bigalloc = NULL;
	char *ext4j = NULL, *ext4nd = NULL, *nojournal = NULL, *raw = NULL, *scsi = NULL;
	char *sd_write = NULL, *sd_verify = NULL, *scsifs = NULL;
	const char *expect = NULL;
	int aid_on = 1, c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'e': expect = optarg; break;
		case 'a': aid_on = strcmp(optarg, "off") != 0; break;
		case '1': xfs16k = optarg; break;
		case '4': xfs4k = optarg; break;
		case 'x': ext4 = optarg; break;
		case 'r': xfsrt = optarg; break;
		case 'b': bigalloc = optarg; break;
		case 'j': ext4j = optarg; break;
		case 'n': ext4nd = optarg; break;
		case 'J': nojournal = optarg; break;
		case 'W': sd_write = optarg; break;
		case 'V': sd_verify = optarg; break;
		case 'S': scsifs = optarg; break;
		case 'D': g_sd_delay_us = atol(optarg); break;
		case 'H': g_sd_hogs = atoi(optarg); break;
		case 'A': g_sd_appenders = atoi(optarg); break;
		case 'w': raw = optarg; break;
		case 's': scsi = optarg; break;
		default: usage();
		}
	}
	if (!expect || (strcmp(expect, "patched") && strcmp(expect, "unpatched")))
		usage();
	g_patched = !strcmp(expect, "patched");
	g_aid = g_patched && aid_on;
	printf("atomic_tests: start expect=%s aid=%s\n", expect, aid_on ? "on" : "off");

	if (raw)
		raw_nvme_checks(raw);
	else
		skip("dev.raw", "not_given");
	if (scsi)
		scsi_checks(scsi);
	else
		skip("dev.scsi", "not_given");
	if (xfs16k) {
		char *mnt, *dev;

		if (split_mnt_dev(xfs16k, &mnt, &dev))
			usage();
		xfs16k_checks(mnt, dev);
	} else {
		skip("fs.xfs16k", "not_given");
	}
	if (xfs4k) {
		char *mnt, *dev;

		if (split_mnt_dev(xfs4k, &mnt, &dev))
			usage();
		fs4k_checks("xfs4k", mnt, dev, 1);
	} else {
		skip("fs.xfs4k", "not_given");
	}
	if (ext4) {
		char *mnt, *dev;

		if (split_mnt_dev(ext4, &mnt, &dev))
			usage();
		fs4k_checks("ext4", mnt, dev, 0);
	} else {
		skip("fs.ext4", "not_given");
	}
	if (xfsrt) {
		char *mnt, *dev;

		if (split_mnt_dev(xfsrt, &mnt, &dev))
			usage();
		large_checks("xfsrt", mnt, dev, 1);
	} else {
		skip("fs.xfsrt", "not_given");
	}
	if (bigalloc) {
		char *mnt, *dev;

		if (split_mnt_dev(bigalloc, &mnt, &dev))
			usage();
		large_checks("ext4bigalloc", mnt, dev, 0);
	} else {
		skip("fs.ext4bigalloc", "not_given");
	}
	if (ext4j) {
		char *mnt, *dev;

		if (split_mnt_dev(ext4j, &mnt, &dev))
			usage();
		ext4_journal_checks(mnt);
	} else {
		skip("fs.ext4j", "not_given");
	}
	if (ext4nd) {
		char *mnt, *dev;

		if (split_mnt_dev(ext4nd, &mnt, &dev))
			usage();
		ext4_flag_checks("ext4nd", mnt, 0);
	}
	if (nojournal) {
		char *mnt, *dev;

		if (split_mnt_dev(nojournal, &mnt, &dev))
			usage();
		ext4_nojournal_checks(mnt);
	}
	if (scsifs) {
		char *mnt, *dev;

		if (split_mnt_dev(scsifs, &mnt, &dev))
			usage();
		scsifs_checks(mnt, dev);
	}
	if (sd_write || sd_verify) {
		char *tag, *mnt;

		if (split_mnt_dev(sd_write ? sd_write : sd_verify, &tag, &mnt))
			usage();
		if (sd_write)
			shutdown_write(tag, mnt);
		else
			shutdown_verify(tag, mnt);
	}
	printf("atomic_tests: done pass=%d fail=%d\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}

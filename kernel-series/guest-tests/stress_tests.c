// SPDX-License-Identifier: MIT
/*
 * stress_tests - in-guest checks of multi-block untorn writes under
 * conditions upstream fstests builds and the other guest tests do not:
 *
 *   --fragmented TAG:MNT
 *       (generic/770's idea) fill the filesystem with preallocated space,
 *       punch every other 16 KiB unit of its first 2 MiB, so that free
 *       space is only 16 KiB pieces, then append 16 KiB RWF_ATOMIC writes
 *       (every other one RWF_DSYNC) until the space runs out.  Each write
 *       must succeed whole -- its data read back, its four blocks one
 *       physically contiguous run (FIEMAP): not split -- or fail with
 *       ENOSPC leaving the file as it was.
 *   --fsx TAG:MNT [--ops N] [--seed S]
 *       (generic/776's idea, fsx-style) N random operations on one file --
 *       plain O_DIRECT writes, 16 KiB and 4 KiB RWF_ATOMIC writes (some
 *       RWF_DSYNC), truncates, preallocation, hole punches, zero ranges,
 *       fsyncs -- checked against an in-memory model of the file after
 *       every read and at the end.  Every atomic write must succeed.
 *
 * Needs 16 KiB atomic writes on MNT (the patched kernel, NVMe unit 16 KiB):
 * guest.sh runs it only where race_tests --probe says so.
 * Output: the check line format of guest_common.h.  Exit status: 0 if no
 * FAIL, 1 otherwise, 2 on usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>

#include "ut_atomic_compat.h" /* io/: the one place for the uapi bits */
#include "guest_common.h"

#define UNIT (16 * KiB)
#define BLK (4 * KiB)

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static ssize_t pwrite_flags(int fd, const void *buf, size_t len, off_t off, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return pwritev2(fd, &iov, 1, off, flags);
}

/* ------------------------------------------------------------ fragmented */

/*
 * Is [off, off + UNIT) mapped to one physically contiguous run?  Returns
 * "ok", "split", "unmapped" or an errno name.
 */
static const char *unit_contiguous(int fd, off_t off)
{
	static __thread char res[48];
	struct {
		struct fiemap fm;
		struct fiemap_extent fe[8];
	} m;
	unsigned long long phys0 = 0;
	unsigned int b, i;

	memset(&m, 0, sizeof(m));
	m.fm.fm_start = (unsigned long long)off;
	m.fm.fm_length = UNIT;
	m.fm.fm_flags = FIEMAP_FLAG_SYNC;
	m.fm.fm_extent_count = 8;
	if (ioctl(fd, FS_IOC_FIEMAP, &m.fm)) {
		snprintf(res, sizeof(res), "fiemap_%s", errname(errno));
		return res;
	}
	for (b = 0; b < UNIT / BLK; b++) {
		unsigned long long l = (unsigned long long)off + b * BLK, p = 0;
		int found = 0;

		for (i = 0; i < m.fm.fm_mapped_extents && !found; i++) {
			struct fiemap_extent *e = &m.fm.fm_extents[i];

			if (l >= e->fe_logical && l < e->fe_logical + e->fe_length &&
			    !(e->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC))) {
				p = e->fe_physical + (l - e->fe_logical);
				found = 1;
			}
		}
		if (!found)
			return "unmapped";
		if (b == 0)
			phys0 = p;
		else if (p != phys0 + b * BLK)
			return "split";
	}
	return "ok";
}

/* Preallocate everything free on MNT's data (or rt) volume into fd. */
static off_t fill_space(int fd)
{
	static const off_t steps[] = { 4096 * KiB, 256 * KiB, UNIT };
	off_t size = 0;
	unsigned int i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		while (!fallocate(fd, 0, size, steps[i]))
			size += steps[i];
	return size;
}

static void fragmented_checks(const char *tag, const char *mnt)
{
	char name[160], path[256], fpath[256];
	unsigned char *buf = abuf(UNIT, 0), *rb = abuf(UNIT, 0);
	int ffd, fd, ok = 0, enospc = 0, split = 0, torn = 0, other = 0;
	struct statvfs sv;
	off_t filled, off;
	unsigned int i;

	snprintf(name, sizeof(name), "stress.%s.fragmented.setup", tag);
	ffd = open_test_file(mnt, "frag-filler.dat", O_TRUNC, fpath, sizeof(fpath));
	fd = open_test_file(mnt, "frag-target.dat", O_TRUNC | O_DIRECT, path, sizeof(path));
	if (ffd < 0 || fd < 0) {
		check(name, errname(errno), "ok");
		goto out;
	}
	filled = fill_space(ffd);
	/* every other unit of the filler's first 2 MiB goes back to free space */
	for (off = 0; off < 2048 * KiB && off < filled; off += 2 * UNIT)
		if (fallocate(ffd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, UNIT)) {
			check(name, errname(errno), "punch_ok");
			goto out;
		}
	fsync(ffd);
	check(name, filled >= 4096 * KiB ? "ok" : "filled_too_little", "ok");
	if (!fstatvfs(fd, &sv)) {
		snprintf(name, sizeof(name), "stress.%s.fragmented.free_kib", tag);
		info(name, "%llu", (unsigned long long)sv.f_bavail * sv.f_frsize / KiB);
	}

	/* 2 MiB punched in 16 KiB pieces: at most 64 units, then ENOSPC */
	for (i = 0; i < 96; i++) {
		const char *c;

		off = (off_t)i * UNIT;
		memset(buf, 0xa0 + (i & 15), UNIT);
		buf[0] = (unsigned char)i;
		if (pwrite_flags(fd, buf, UNIT, off, RWF_ATOMIC | (i & 1 ? RWF_DSYNC : 0)) != UNIT) {
			struct stat st;

			if (errno == ENOSPC)
				enospc++;
			else if (!other++)
				fprintf(stderr, "fragmented: unit %u: %s\n", i, errname(errno));
			/* refused: the file still ends before the unit */
			if (fstat(fd, &st) || st.st_size > off)
				torn++;
			continue;
		}
		ok++;
		if (pread(fd, rb, UNIT, off) != UNIT || memcmp(rb, buf, UNIT))
			torn++;
		c = unit_contiguous(fd, off);
		if (strcmp(c, "ok") && !split++)
			fprintf(stderr, "fragmented: unit %u: %s\n", i, c);
	}
	snprintf(name, sizeof(name), "stress.%s.fragmented.written_enospc", tag);
	info(name, "%d,%d", ok, enospc);
	snprintf(name, sizeof(name), "stress.%s.fragmented.some_written", tag);
	check(name, ok > 0 ? "yes" : "no", "yes");
	snprintf(name, sizeof(name), "stress.%s.fragmented.ran_out", tag);
	check(name, enospc > 0 ? "yes" : "no", "yes");
	snprintf(name, sizeof(name), "stress.%s.fragmented.split_torn_othererr", tag);
	snprintf(path, sizeof(path), "%d,%d,%d", split, torn, other);
	check(name, path, "0,0,0");
out:
	if (ffd >= 0)
		close(ffd);
	if (fd >= 0)
		close(fd);
	unlink(fpath);
	snprintf(path, sizeof(path), "%s/frag-target.dat", mnt);
	unlink(path);
	free(buf);
	free(rb);
}

/* ------------------------------------------------------------------ fsx */

#define FSX_MAX (1024 * KiB)

struct fsx {
	int fd;
	unsigned char *model;	/* FSX_MAX bytes: the file's expected contents */
	off_t size;		/* its expected size */
	unsigned char *buf, *rb;
	unsigned int rng;
	long op;
	char failure[160];
};

static void fsx_fail(struct fsx *x, const char *what)
{
	if (!x->failure[0])
		snprintf(x->failure, sizeof(x->failure), "op%ld:%s", x->op, what);
}

static void model_write(struct fsx *x, off_t off, size_t len)
{
	memcpy(x->model + off, x->buf, len);
	if (off + (off_t)len > x->size)
		x->size = off + (off_t)len;
}

static void model_zero(struct fsx *x, off_t off, off_t len)
{
	if (off >= x->size)
		return;
	if (off + len > x->size)
		len = x->size - off;
	memset(x->model + off, 0, (size_t)len);
}

static void fsx_verify(struct fsx *x, off_t off, size_t len)
{
	ssize_t want = off >= x->size ? 0 :
		       (ssize_t)(off + (off_t)len > x->size ? x->size - off : (off_t)len);
	ssize_t got = pread(x->fd, x->rb, len, off);
	char what[96];

	if (got != want) {
		snprintf(what, sizeof(what), "read_%lld+%zu=%zd_want%zd",
			 (long long)off, len, got, want);
		fsx_fail(x, what);
	} else if (want > 0 && memcmp(x->rb, x->model + off, (size_t)want)) {
		snprintf(what, sizeof(what), "mismatch_at_%lld+%zu", (long long)off, len);
		fsx_fail(x, what);
	}
}

static void fsx_step(struct fsx *x)
{
	unsigned int r = rnd(&x->rng), op = r % 16;
	off_t off = (off_t)(rnd(&x->rng) % (FSX_MAX / BLK)) * BLK;
	size_t len = (size_t)(1 + rnd(&x->rng) % 8) * BLK;
	char what[64];
	int flags;

	if (off + (off_t)len > FSX_MAX)
		len = (size_t)(FSX_MAX - off);
	memset(x->buf, 0, UNIT * 2);
	snprintf((char *)x->buf, 32, "op%ld", x->op);
	memset(x->buf + 16, (int)(x->op & 0xff) | 1, len - 16);

	switch (op) {
	case 0: case 1: case 2:		/* plain direct write, 4-32 KiB */
		if (pwrite_flags(x->fd, x->buf, len, off, 0) != (ssize_t)len) {
			snprintf(what, sizeof(what), "plain_write_%s", errname(errno));
			fsx_fail(x, what);
			return;
		}
		model_write(x, off, len);
		break;
	case 3: case 4: case 5: case 6:	/* 16 KiB atomic, aligned */
	case 7:				/* 4 KiB atomic (the unit min) */
		len = op == 7 ? BLK : UNIT;
		off = off / (off_t)len * (off_t)len;
		if (off + (off_t)len > FSX_MAX)
			off = FSX_MAX - (off_t)len;
		flags = RWF_ATOMIC | (r & 0x100 ? RWF_DSYNC : 0);
		if (pwrite_flags(x->fd, x->buf, len, off, flags) != (ssize_t)len) {
			snprintf(what, sizeof(what), "atomic%zuk_at_%lld_%s", len / KiB,
				 (long long)off, errname(errno));
			fsx_fail(x, what);
			return;
		}
		model_write(x, off, len);
		break;
	case 8:				/* truncate, down or up */
		if (ftruncate(x->fd, off)) {
			fsx_fail(x, "truncate");
			return;
		}
		if (off < x->size)
			memset(x->model + off, 0, (size_t)(x->size - off));
		x->size = off;
		break;
	case 9:				/* preallocate, maybe extending */
		if (fallocate(x->fd, r & 0x200 ? FALLOC_FL_KEEP_SIZE : 0, off, (off_t)len)) {
			fsx_fail(x, "fallocate");
			return;
		}
		if (!(r & 0x200) && off + (off_t)len > x->size)
			x->size = off + (off_t)len;
		break;
	case 10:			/* punch a hole */
		if (fallocate(x->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, (off_t)len)) {
			fsx_fail(x, "punch");
			return;
		}
		model_zero(x, off, (off_t)len);
		break;
	case 11:			/* zero a range */
		if (fallocate(x->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, off, (off_t)len)) {
			fsx_fail(x, "zero_range");
			return;
		}
		model_zero(x, off, (off_t)len);
		break;
	case 12:
		if (fsync(x->fd))
			fsx_fail(x, "fsync");
		break;
	default:			/* read and compare */
		fsx_verify(x, off, len);
		break;
	}
}

static void fsx_checks(const char *tag, const char *mnt, long ops, unsigned int seed)
{
	char name[160], path[256];
	struct fsx x;
	off_t off;

	memset(&x, 0, sizeof(x));
	x.model = calloc(1, FSX_MAX);
	x.buf = abuf(UNIT * 2, 0);
	x.rb = abuf(UNIT * 2, 0);
	x.rng = seed;
	snprintf(name, sizeof(name), "stress.%s.fsx", tag);
	x.fd = open_test_file(mnt, "fsx.dat", O_TRUNC | O_DIRECT, path, sizeof(path));
	if (x.fd < 0 || !x.model) {
		check(name, errname(errno), "ok");
		return;
	}
	for (x.op = 0; x.op < ops && !x.failure[0]; x.op++)
		fsx_step(&x);
	/* the whole file, 32 KiB at a time, and its size */
	for (off = 0; off < FSX_MAX && !x.failure[0]; off += 2 * UNIT)
		fsx_verify(&x, off, 2 * UNIT);
	if (!x.failure[0]) {
		struct stat st;

		if (fstat(x.fd, &st) || st.st_size != x.size)
			fsx_fail(&x, "final_size");
	}
	snprintf(path, sizeof(path), "%ld_ops_seed%u", ops, seed);
	info(name, "%s", path);
	snprintf(name, sizeof(name), "stress.%s.fsx.model", tag);
	check(name, x.failure[0] ? x.failure : "match", "match");
	close(x.fd);
	snprintf(path, sizeof(path), "%s/fsx.dat", mnt);
	unlink(path);
	free(x.model);
	free(x.buf);
	free(x.rb);
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr, "usage: stress_tests (--fragmented TAG:MNT | --fsx TAG:MNT"
		" [--ops N] [--seed S])\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "fragmented", required_argument, 0, 'f' },
		{ "fsx", required_argument, 0, 'x' },
		{ "ops", required_argument, 0, 'n' },
		{ "seed", required_argument, 0, 's' },
		{ 0, 0, 0, 0 },
	};
	char *arg = NULL, *mnt;
	int mode = 0, c;
	long ops = 400;
	unsigned int seed = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'f': case 'x': mode = c; arg = optarg; break;
		case 'n': ops = atol(optarg); break;
		case 's': seed = (unsigned int)strtoul(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (!arg || !(mnt = strchr(arg, ':')))
		usage();
	*mnt++ = 0;
	if (mode == 'f')
		fragmented_checks(arg, mnt);
	else
		fsx_checks(arg, mnt, ops, seed);
	return n_fail ? 1 : 0;
}

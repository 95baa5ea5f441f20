// SPDX-License-Identifier: MIT
/*
 * race_tests - in-guest checks that a multi-block untorn write never
 * destroys acknowledged data and is crash-atomic at the end of file, on
 * XFS realtime (16 KiB rt extents) and ext4 bigalloc (16 KiB clusters).
 * Needs the patched kernel with the NVMe atomic unit of 16 KiB; anywhere
 * else every check is SKIP (atomic_tests covers what is refused there).
 *
 * Output: the line format of atomic_tests (one line per check):
 *     <check>: PASS got=<v> want=<v>   /  FAIL ...  /  INFO got=<v>  /  SKIP why=<r>
 * Exit status: 0 if no FAIL, 1 otherwise, 2 on usage error.
 *
 * Modes (TAG names the filesystem in check names, MNT is its mount point):
 *   --race TAG:MNT [--iters N]
 *       Conversion races, N iterations each (default 300), every iteration
 *       on a fresh 16 KiB unit mapped 4 KiB written + 12 KiB unwritten, two
 *       racers released together by a barrier while CPU-hog threads run:
 *        plain:         a plain O_DIRECT 4 KiB write (then fdatasync) into
 *                       the unwritten part vs a 16 KiB RWF_ATOMIC write;
 *        plain_efault:  the same, the atomic write's buffer ending in a
 *                       PROT_NONE page so that it always fails (EFAULT);
 *        atomic_efault: a 16 KiB RWF_ATOMIC|RWF_DSYNC write vs a failing
 *                       atomic one as above.
 *       An acknowledged write must read back (at once and after both
 *       racers are done) as its own data or as that of the atomic write
 *       that succeeded after it, never zeroes; a unit written by a
 *       successful atomic write holds it whole.
 *        aio_efault:    (one thread, no barrier) a plain 4 KiB write into
 *                       the unwritten part submitted with io_submit, so
 *                       that it is still in flight, holding no inode lock,
 *                       when a failing atomic write (as above) converts
 *                       the unit; the plain write, reaped and fdatasync'd,
 *                       must read back as its data.
 *        shared_convert: (two threads) the unit is one unwritten extent
 *                       with block 0 written through the page cache and
 *                       still dirty, so that a failing atomic write (as
 *                       above) finds it unwritten when it checks the
 *                       unit under the shared inode lock, and mixed when
 *                       it maps it (its own flush of the range converts
 *                       block 0); a plain 4 KiB write into block 2 is
 *                       submitted with io_submit in that window (a
 *                       delay that varies by iteration) and, reaped and
 *                       fdatasync'd, must read back as its data.
 *   --race-shutdown-write TAG:MNT, then --race-shutdown-verify TAG:MNT
 *       after a remount: one "plain" race in which the plain writer shuts
 *       the filesystem down (FS_IOC_GOINGDOWN, no log flush) right after
 *       its fdatasync returned; after log recovery its block must hold its
 *       data (or the atomic write's whole unit).
 *   --eof-shutdown-write TAG:MNT, then --eof-shutdown-verify TAG:MNT
 *       (a) a 14 KiB file written through the page cache and fsynced, then
 *           a 16 KiB atomic write at 0, straddling the end of file;
 *       (b) 4 KiB written and fsynced, 12 KiB appended with O_DIRECT and
 *           not synced (the in-core size ahead of the committed one), then
 *           a 16 KiB atomic write at 0;
 *       then a shutdown without log flush.  Each atomic write must succeed
 *       (as upstream 6.16 accepts it) and after recovery each file must
 *       show a state it had: never new data under a size that cuts it.
 *   --mixed-shutdown-write TAG:MNT [--delay-us D], then
 *   --mixed-shutdown-verify TAG:MNT after a remount
 *       MIX_WRITERS threads, each with a file of its own, turn unit after
 *       unit into a mixed unit (fallocate, 4 KiB written, fdatasync) and
 *       write it with a 16 KiB RWF_ATOMIC write (no RWF_DSYNC), so that
 *       most of the time some writer is inside the conversion's commit;
 *       the filesystem is shut down (no log flush) D microseconds in.
 *       After recovery every unit must be whole: the atomic write, the
 *       mixed unit it started from, or never touched.  A unit that holds
 *       the atomic write's data in its written block and zeroes in the
 *       converted ones is torn: the write went in place on a conversion
 *       the shutdown had discarded.
 *   --shared-convert TAG:MNT [--iters N]
 *       the shared_convert scenario of --race alone.
 *   --probe TAG:MNT
 *       exit 0 if 16 KiB atomic writes work on MNT, 3 if not (no output).
 * Phase-one state for the verify step lives in /tmp/race-<TAG>.state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <sys/syscall.h>

#include "ut_atomic_compat.h" /* io/: the one place for the uapi bits */
#include "guest_common.h"

#define UNIT (16 * KiB)
#define BLK (4 * KiB)


/* ------------------------------------------------------------------ data */

/*
 * Recognisable contents, 4 KiB block by block: who wrote it (tag), for
 * which iteration, and which block of the unit (block, block + 1, ...).
 */
static void fill(unsigned char *buf, size_t len, unsigned int tag, unsigned int iter,
		 unsigned int block)
{
	unsigned long long *w = (unsigned long long *)buf;
	size_t i, per = BLK / 8;

	for (i = 0; i < len / 8; i++)
		w[i] = ((unsigned long long)tag << 56) ^ ((unsigned long long)iter << 32) ^
		       ((unsigned long long)(block + i / per) << 24) ^
		       ((i % per) * 0x9e3779b97f4a7c15ULL) ^ 1;
}

/* Does buf hold what fill(tag, iter, first_block...) would write? */
static int holds(const unsigned char *buf, size_t len, unsigned int tag, unsigned int iter,
		 unsigned int first_block)
{
	unsigned char *want = abuf(BLK, 0);
	size_t b;
	int ok = 1;

	for (b = 0; b < len / BLK && ok; b++) {
		fill(want, BLK, tag, iter, first_block + b);
		ok = !memcmp(buf + b * BLK, want, BLK);
	}
	free(want);
	return ok;
}

static int is_zero(const unsigned char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i])
			return 0;
	return 1;
}

/* A 16 KiB unit buffer: whole, or its last 4 KiB page PROT_NONE. */
static unsigned char *unit_buf(int efault)
{
	unsigned char *p = mmap(NULL, UNIT, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	if (efault && mprotect(p + UNIT - BLK, BLK, PROT_NONE)) {
		perror("mprotect");
		exit(2);
	}
	return p;
}

static ssize_t atomic_write(int fd, void *buf, off_t off, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = UNIT };

	return pwritev2(fd, &iov, 1, off, RWF_ATOMIC | flags);
}

/* Do 16 KiB atomic writes work here (patched kernel, 16 KiB unit)? */
static int atomic16k_supported(const char *mnt)
{
	char path[256];
	struct ut_statx stx;
	int fd, ok;

	snprintf(path, sizeof(path), "%s/race-probe.dat", mnt);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 0;
	close(fd);
	memset(&stx, 0, sizeof(stx));
	ok = !ut_statx_call(AT_FDCWD, path, 0, STATX_WRITE_ATOMIC, &stx) &&
	     (stx.stx_mask & STATX_WRITE_ATOMIC) && stx.stx_atomic_write_unit_max >= UNIT;
	unlink(path);
	return ok;
}

/* ------------------------------------------------------------------ races */

enum { PLAIN, PLAIN_EFAULT, ATOMIC_EFAULT, N_SCENARIOS };
static const char *const scenario_name[] = { "plain", "plain_efault", "atomic_efault" };

/* Data tags: who wrote a block. */
enum { T_OLD = 1, T_PLAIN, T_ATOMIC, T_LOSER };

struct race {
	int fd;
	int scenario;
	int shutdown;			/* the acknowledged writer shuts down */
	unsigned int iter;
	off_t off;
	pthread_barrier_t start, done;
	volatile int stop;
	/* results of one iteration */
	int ack_ok;			/* the acknowledged write returned */
	int ack_readback;		/* 1 ok, 0 lost, -1 not read */
	int other_res;			/* the other racer: 0 or errno */
	unsigned char *abuf_ok, *abuf_fail;
	unsigned char *blk;
};

/* Block 2 after the race: the plain write, or the winning atomic write. */
static int block2_ok(struct race *r, const unsigned char *b, int atomic_ok)
{
	if (holds(b, BLK, T_PLAIN, r->iter, 2))
		return 1;
	return atomic_ok && holds(b, BLK, T_ATOMIC, r->iter, 2);
}

/* The acknowledged racer: a plain write, or (atomic_efault) an atomic one. */
static void ack_racer(struct race *r)
{
	unsigned char *rb = abuf(UNIT, 0);

	r->ack_ok = 0;
	r->ack_readback = -1;
	if (r->scenario == ATOMIC_EFAULT) {
		r->ack_ok = atomic_write(r->fd, r->abuf_ok, r->off, RWF_DSYNC) == UNIT;
		if (r->ack_ok && pread(r->fd, rb, UNIT, r->off) == UNIT)
			r->ack_readback = holds(rb, UNIT, T_ATOMIC, r->iter, 0);
		else if (r->ack_ok)
			r->ack_readback = 0;
	} else {
		r->ack_ok = pwrite(r->fd, r->blk, BLK, r->off + 2 * BLK) == BLK &&
			    !fdatasync(r->fd);
		if (r->ack_ok && r->shutdown) {
			__u32 how = GOINGDOWN_NOLOGFLUSH;

			if (ioctl(r->fd, FS_IOC_GOINGDOWN, &how))
				perror("FS_IOC_GOINGDOWN");
		} else if (r->ack_ok) {
			/* the atomic write may have replaced it: that is fine */
			r->ack_readback = pread(r->fd, rb, BLK, r->off + 2 * BLK) == BLK &&
					  block2_ok(r, rb, 1);
		}
	}
	free(rb);
}

static void *other_thread(void *arg)
{
	struct race *r = arg;

	for (;;) {
		pthread_barrier_wait(&r->start);
		if (r->stop)
			break;
		if (r->scenario == PLAIN)
			r->other_res = atomic_write(r->fd, r->abuf_ok, r->off, 0) == UNIT ?
				       0 : errno;
		else
			r->other_res = atomic_write(r->fd, r->abuf_fail, r->off, 0) == UNIT ?
				       0 : errno;
		pthread_barrier_wait(&r->done);
	}
	return NULL;
}

static volatile int hog_stop;

static void *hog_thread(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	while (!hog_stop)
		n++;
	return NULL;
}

/* A fresh unit at r->off: block 0 written (T_OLD), blocks 1-3 unwritten. */
static int prepare_unit(struct race *r, int sync)
{
	unsigned char *b = abuf(BLK, 0);
	int ok;

	fill(b, BLK, T_OLD, r->iter, 0);
	ok = !fallocate(r->fd, FALLOC_FL_KEEP_SIZE, r->off, UNIT) &&
	     pwrite(r->fd, b, BLK, r->off) == BLK && (!sync || !fdatasync(r->fd));
	free(b);
	return ok;
}

/*
 * Check the whole unit after a race: "ok", "lost" (the acknowledged data
 * is not there) or "torn" (neither a whole atomic write nor the unit as
 * the other writes left it).
 */
static const char *judge_unit(struct race *r, const unsigned char *u)
{
	int atomic_ok = r->scenario == PLAIN ? r->other_res == 0 : r->ack_ok;

	if (r->scenario == ATOMIC_EFAULT) {
		if (r->ack_ok)
			return holds(u, UNIT, T_ATOMIC, r->iter, 0) ? "ok" : "lost";
		return holds(u, BLK, T_OLD, r->iter, 0) && is_zero(u + BLK, 3 * BLK) ?
		       "ok" : "torn";
	}
	if (r->ack_ok && !block2_ok(r, u + 2 * BLK, atomic_ok))
		return "lost";
	if (atomic_ok && holds(u, 2 * BLK, T_ATOMIC, r->iter, 0) &&
	    holds(u + 3 * BLK, BLK, T_ATOMIC, r->iter, 3))
		return "ok";
	if (holds(u, BLK, T_OLD, r->iter, 0) && is_zero(u + BLK, BLK) &&
	    is_zero(u + 3 * BLK, BLK))
		return "ok";
	return "torn";
}

static void set_buffers(struct race *r)
{
	fill(r->abuf_ok, UNIT, T_ATOMIC, r->iter, 0);
	fill(r->abuf_fail, UNIT - BLK, T_LOSER, r->iter, 0);
	fill(r->blk, BLK, r->scenario == ATOMIC_EFAULT ? T_LOSER : T_PLAIN, r->iter, 2);
}

static void race_scenario(const char *tag, const char *mnt, int scenario, unsigned int iters)
{
	const char *want_other = scenario == PLAIN ? "ok" : "EFAULT";
	char path[256], name[160], got[160];
	unsigned int lost_now = 0, lost = 0, torn = 0, bad_other = 0, bad_ack = 0, setup = 0;
	unsigned int other_ok = 0;
	char first_bad[64] = "";
	unsigned char *u = abuf(UNIT, 0);
	pthread_t tid, hogs[2];
	struct race r;
	int i;

	memset(&r, 0, sizeof(r));
	r.scenario = scenario;
	r.abuf_ok = unit_buf(0);
	r.abuf_fail = unit_buf(1);
	r.blk = abuf(BLK, 0);
	snprintf(path, sizeof(path), "%s/race-%s.dat", mnt, scenario_name[scenario]);
	r.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	snprintf(name, sizeof(name), "race.%s.%s.setup", tag, scenario_name[scenario]);
	if (r.fd < 0 || ftruncate(r.fd, (off_t)(iters + 1) * UNIT)) {
		check(name, errname(errno), "ok");
		return;
	}
	pthread_barrier_init(&r.start, NULL, 2);
	pthread_barrier_init(&r.done, NULL, 2);
	hog_stop = 0;
	for (i = 0; i < 2; i++)
		pthread_create(&hogs[i], NULL, hog_thread, NULL);
	pthread_create(&tid, NULL, other_thread, &r);

	for (r.iter = 0; r.iter < iters; r.iter++) {
		const char *v;

		r.off = (off_t)r.iter * UNIT;
		set_buffers(&r);
		if (!prepare_unit(&r, 0)) {
			setup++;
			continue;
		}
		pthread_barrier_wait(&r.start);
		ack_racer(&r);
		pthread_barrier_wait(&r.done);

		if (!r.ack_ok)
			bad_ack++;
		if (r.ack_readback == 0)
			lost_now++;
		if (r.other_res == 0)
			other_ok++;
		if (strcmp(r.other_res ? errname(r.other_res) : "ok", want_other)) {
			if (!bad_other++)
				snprintf(first_bad, sizeof(first_bad), "%s",
					 r.other_res ? errname(r.other_res) : "ok");
		}
		if (pread(r.fd, u, UNIT, r.off) != UNIT) {
			torn++;
			continue;
		}
		v = judge_unit(&r, u);
		if (!strcmp(v, "lost"))
			lost++;
		else if (strcmp(v, "ok"))
			torn++;
	}
	r.stop = 1;
	pthread_barrier_wait(&r.start);
	pthread_join(tid, NULL);
	hog_stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(hogs[i], NULL);

	check(name, setup ? "failed" : "ok", "ok");
	snprintf(name, sizeof(name), "race.%s.%s.other_writer", tag, scenario_name[scenario]);
	if (bad_other)
		snprintf(got, sizeof(got), "%u_unexpected(first:%s)", bad_other, first_bad);
	else
		snprintf(got, sizeof(got), "all_%s", want_other);
	snprintf(path, sizeof(path), "all_%s", want_other);
	check(name, got, path);
	snprintf(name, sizeof(name), "race.%s.%s.acked_writes", tag, scenario_name[scenario]);
	snprintf(got, sizeof(got), "%u", bad_ack);
	check(name, got, "0");
	/* the counts of the issue: acknowledged data read back as zeroes */
	snprintf(name, sizeof(name), "race.%s.%s.lost_at_once", tag, scenario_name[scenario]);
	snprintf(got, sizeof(got), "%u/%u", lost_now, iters);
	snprintf(path, sizeof(path), "0/%u", iters);
	check(name, got, path);
	snprintf(name, sizeof(name), "race.%s.%s.lost_or_torn_after", tag,
		 scenario_name[scenario]);
	snprintf(got, sizeof(got), "%u,%u/%u", lost, torn, iters);
	snprintf(path, sizeof(path), "0,0/%u", iters);
	check(name, got, path);
	snprintf(name, sizeof(name), "race.%s.%s.atomic_ok", tag, scenario_name[scenario]);
	snprintf(got, sizeof(got), "%u/%u", scenario == ATOMIC_EFAULT ? iters - bad_ack : other_ok,
		 iters);
	info(name, "%s", got);
	pthread_barrier_destroy(&r.start);
	pthread_barrier_destroy(&r.done);
	close(r.fd);
	free(u);
	free(r.blk);
	munmap(r.abuf_ok, UNIT);
	munmap(r.abuf_fail, UNIT);
}

/*
 * aio_efault: the conversion of a mixed unit must wait for direct I/O in
 * flight (ext4: inode_dio_wait(); XFS: the exclusive IOLOCK's drain).  An
 * exclusive inode lock alone does not wait for it: an asynchronous direct
 * write drops the lock once submitted.  If the conversion zeroes the
 * plain write's block after that write reached the disk, and the atomic
 * write then fails (EFAULT after mapping), the acknowledged block is zero.
 */
static void race_aio(const char *tag, const char *mnt, unsigned int iters)
{
	unsigned int lost = 0, bad_other = 0, bad_ack = 0, setup = 0;
	char path[256], name[160], got[96], first_bad[32] = "";
	unsigned char *rb = abuf(BLK, 0);
	struct iocb cb, *cbs[1] = { &cb };
	aio_context_t ctx = 0;
	struct io_event ev;
	struct race r;

	memset(&r, 0, sizeof(r));
	r.scenario = PLAIN_EFAULT;
	r.abuf_ok = unit_buf(0);
	r.abuf_fail = unit_buf(1);
	r.blk = abuf(BLK, 0);
	snprintf(name, sizeof(name), "race.%s.aio_efault.setup", tag);
	snprintf(path, sizeof(path), "%s/race-aio.dat", mnt);
	r.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (r.fd < 0 || ftruncate(r.fd, (off_t)(iters + 1) * UNIT) ||
	    syscall(SYS_io_setup, 1, &ctx) < 0) {
		check(name, errname(errno), "ok");
		return;
	}
	for (r.iter = 0; r.iter < iters; r.iter++) {
		long long res;
		long n;
		int err;

		r.off = (off_t)r.iter * UNIT;
		set_buffers(&r);
		if (!prepare_unit(&r, 0)) {
			setup++;
			continue;
		}
		memset(&cb, 0, sizeof(cb));
		cb.aio_fildes = r.fd;
		cb.aio_lio_opcode = IOCB_CMD_PWRITE;
		cb.aio_buf = (unsigned long)r.blk;
		cb.aio_nbytes = BLK;
		cb.aio_offset = r.off + 2 * BLK;
		if (syscall(SYS_io_submit, ctx, 1, cbs) != 1) {
			setup++;
			continue;
		}
		err = atomic_write(r.fd, r.abuf_fail, r.off, 0) == UNIT ? 0 : errno;
		if (err != EFAULT && !bad_other++)
			snprintf(first_bad, sizeof(first_bad), "%s", err ? errname(err) : "ok");
		do	/* a signal may interrupt the wait, not the write */
			n = syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL);
		while (n < 0 && errno == EINTR);
		res = n == 1 ? (long long)ev.res : -1;
		if (res != BLK || fdatasync(r.fd)) {
			bad_ack++;
			continue;
		}
		if (pread(r.fd, rb, BLK, r.off + 2 * BLK) != BLK ||
		    !holds(rb, BLK, T_PLAIN, r.iter, 2))
			lost++;
	}
	syscall(SYS_io_destroy, ctx);
	check(name, setup ? "failed" : "ok", "ok");
	snprintf(name, sizeof(name), "race.%s.aio_efault.other_writer", tag);
	if (bad_other)
		snprintf(got, sizeof(got), "%u_unexpected(first:%s)", bad_other, first_bad);
	else
		snprintf(got, sizeof(got), "all_EFAULT");
	check(name, got, "all_EFAULT");
	snprintf(name, sizeof(name), "race.%s.aio_efault.acked_writes", tag);
	checku(name, bad_ack, 0);
	snprintf(name, sizeof(name), "race.%s.aio_efault.lost", tag);
	snprintf(got, sizeof(got), "%u/%u", lost, iters);
	snprintf(path, sizeof(path), "0/%u", iters);
	check(name, got, path);
	close(r.fd);
	free(rb);
	free(r.blk);
	munmap(r.abuf_ok, UNIT);
	munmap(r.abuf_fail, UNIT);
}

/*
 * shared_convert: the drain before zeroing a mixed unit must not rest on
 * what the atomic write saw when it chose its inode lock.  ext4 lets an
 * atomic write into one unwritten extent (a preallocated file) run under
 * the shared lock, beside other direct writes; the unit can become mixed
 * before ->iomap_begin maps it, and zeroing it then, without the drain,
 * would destroy a plain write in flight to it.  Block 0 is written through
 * the page cache and left dirty: the atomic write sees one unwritten
 * extent, then its own flush of the range (iomap_dio_rw) writes block 0
 * back and converts it, so the unit it maps is mixed.  A second thread
 * submits the plain write into block 2 a few microseconds after the
 * atomic write starts (0-1.5 ms, by iteration), so that in some
 * iterations it is in flight, past its own mapping, while the atomic write
 * would zero the unit.  The atomic write fails with EFAULT after mapping.
 */
struct shconv {
	int fd;
	aio_context_t ctx;
	unsigned int delay_us;
	off_t off;
	unsigned char *blk;
	pthread_barrier_t start, done;
	volatile int stop;
	int submitted;
};

static void spin_us(unsigned int us)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < (long)us);
}

static void *shconv_thread(void *arg)
{
	struct shconv *s = arg;
	struct iocb cb, *cbs[1] = { &cb };

	for (;;) {
		pthread_barrier_wait(&s->start);
		if (s->stop)
			break;
		spin_us(s->delay_us);
		memset(&cb, 0, sizeof(cb));
		cb.aio_fildes = s->fd;
		cb.aio_lio_opcode = IOCB_CMD_PWRITE;
		cb.aio_buf = (unsigned long)s->blk;
		cb.aio_nbytes = BLK;
		cb.aio_offset = s->off + 2 * BLK;
		s->submitted = syscall(SYS_io_submit, s->ctx, 1, cbs) == 1;
		pthread_barrier_wait(&s->done);
	}
	return NULL;
}

static void race_shared_convert(const char *tag, const char *mnt, unsigned int iters)
{
	unsigned int lost = 0, old_lost = 0, bad_other = 0, bad_ack = 0, setup = 0;
	char path[256], name[160], got[96], first_bad[32] = "";
	unsigned char *rb = abuf(BLK, 0), *old = abuf(BLK, 0);
	unsigned char *afail = unit_buf(1);
	struct shconv s;
	struct io_event ev;
	pthread_t tid;
	unsigned int iter;
	int bfd;

	memset(&s, 0, sizeof(s));
	s.blk = abuf(BLK, 0);
	snprintf(name, sizeof(name), "race.%s.shared_convert.setup", tag);
	snprintf(path, sizeof(path), "%s/race-shconv.dat", mnt);
	s.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	bfd = open(path, O_RDWR);
	if (s.fd < 0 || bfd < 0 || ftruncate(s.fd, (off_t)(iters + 1) * UNIT) ||
	    syscall(SYS_io_setup, 1, &s.ctx) < 0) {
		check(name, errname(errno), "ok");
		return;
	}
	pthread_barrier_init(&s.start, NULL, 2);
	pthread_barrier_init(&s.done, NULL, 2);
	pthread_create(&tid, NULL, shconv_thread, &s);
	for (iter = 0; iter < iters; iter++) {
		long long res;
		long n;
		int err;

		s.off = (off_t)iter * UNIT;
		s.delay_us = (iter % 16) * 100;
		fill(afail, UNIT - BLK, T_LOSER, iter, 0);
		fill(s.blk, BLK, T_PLAIN, iter, 2);
		fill(old, BLK, T_OLD, iter, 0);
		/* one unwritten extent, block 0 dirty in the page cache */
		if (fallocate(s.fd, FALLOC_FL_KEEP_SIZE, s.off, UNIT) ||
		    pwrite(bfd, old, BLK, s.off) != BLK) {
			setup++;
			continue;
		}
		pthread_barrier_wait(&s.start);
		err = atomic_write(s.fd, afail, s.off, 0) == UNIT ? 0 : errno;
		pthread_barrier_wait(&s.done);
		if (err != EFAULT && !bad_other++)
			snprintf(first_bad, sizeof(first_bad), "%s", err ? errname(err) : "ok");
		if (!s.submitted) {
			setup++;
			continue;
		}
		do	/* a signal may interrupt the wait, not the write */
			n = syscall(SYS_io_getevents, s.ctx, 1, 1, &ev, NULL);
		while (n < 0 && errno == EINTR);
		res = n == 1 ? (long long)ev.res : -1;
		if (res != BLK || fdatasync(s.fd)) {
			bad_ack++;
			continue;
		}
		if (pread(s.fd, rb, BLK, s.off + 2 * BLK) != BLK ||
		    !holds(rb, BLK, T_PLAIN, iter, 2))
			lost++;
		if (pread(s.fd, rb, BLK, s.off) != BLK || !holds(rb, BLK, T_OLD, iter, 0))
			old_lost++;
	}
	s.stop = 1;
	pthread_barrier_wait(&s.start);
	pthread_join(tid, NULL);
	syscall(SYS_io_destroy, s.ctx);
	check(name, setup ? "failed" : "ok", "ok");
	snprintf(name, sizeof(name), "race.%s.shared_convert.other_writer", tag);
	if (bad_other)
		snprintf(got, sizeof(got), "%u_unexpected(first:%s)", bad_other, first_bad);
	else
		snprintf(got, sizeof(got), "all_EFAULT");
	check(name, got, "all_EFAULT");
	snprintf(name, sizeof(name), "race.%s.shared_convert.acked_writes", tag);
	checku(name, bad_ack, 0);
	snprintf(name, sizeof(name), "race.%s.shared_convert.lost", tag);
	snprintf(got, sizeof(got), "%u,%u/%u", lost, old_lost, iters);
	snprintf(path, sizeof(path), "0,0/%u", iters);
	check(name, got, path);
	pthread_barrier_destroy(&s.start);
	pthread_barrier_destroy(&s.done);
	close(bfd);
	close(s.fd);
	free(rb);
	free(old);
	free(s.blk);
	munmap(afail, UNIT);
}

/* --shared-convert: that scenario alone, for a long loop (guest.sh). */
static void shared_convert_only(const char *tag, const char *mnt, unsigned int iters)
{
	char name[96];

	if (!atomic16k_supported(mnt)) {
		snprintf(name, sizeof(name), "race.%s", tag);
		skip(name, "no_16k_atomic_unit");
		return;
	}
	race_shared_convert(tag, mnt, iters);
}

static void race_checks(const char *tag, const char *mnt, unsigned int iters)
{
	char name[96];
	int s;

	if (!atomic16k_supported(mnt)) {
		snprintf(name, sizeof(name), "race.%s", tag);
		skip(name, "no_16k_atomic_unit");
		return;
	}
	for (s = 0; s < N_SCENARIOS; s++)
		race_scenario(tag, mnt, s, iters);
	race_aio(tag, mnt, iters);
	race_shared_convert(tag, mnt, iters);
}

/* ------------------------------------------------ race, then shutdown */

static void state_path(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "/tmp/race-%s.state", tag);
}

static void race_shutdown_write(const char *tag, const char *mnt)
{
	char path[256], name[160];
	pthread_t tid;
	struct race r;
	FILE *f;

	snprintf(name, sizeof(name), "race_shutdown.%s", tag);
	if (!atomic16k_supported(mnt)) {
		skip(name, "no_16k_atomic_unit");
		return;
	}
	memset(&r, 0, sizeof(r));
	r.scenario = PLAIN;
	r.shutdown = 1;
	r.abuf_ok = unit_buf(0);
	r.abuf_fail = unit_buf(1);
	r.blk = abuf(BLK, 0);
	r.iter = (unsigned int)getpid();
	r.off = UNIT;
	snprintf(path, sizeof(path), "%s/race-shutdown.dat", mnt);
	r.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	snprintf(name, sizeof(name), "race_shutdown.%s.setup", tag);
	set_buffers(&r);
	if (r.fd < 0 || ftruncate(r.fd, 4 * UNIT) || !prepare_unit(&r, 1) || fsync(r.fd)) {
		check(name, errname(errno), "ok");
		return;
	}
	check(name, "ok", "ok");
	pthread_barrier_init(&r.start, NULL, 2);
	pthread_barrier_init(&r.done, NULL, 2);
	hog_stop = 0;
	pthread_create(&tid, NULL, other_thread, &r);
	pthread_barrier_wait(&r.start);
	ack_racer(&r);
	pthread_barrier_wait(&r.done);
	r.stop = 1;
	pthread_barrier_wait(&r.start);
	pthread_join(tid, NULL);
	close(r.fd);
	snprintf(name, sizeof(name), "race_shutdown.%s.acked", tag);
	check(name, r.ack_ok ? "yes" : "no", "yes");
	snprintf(name, sizeof(name), "race_shutdown.%s.atomic_write", tag);
	info(name, "%s", r.other_res ? errname(r.other_res) : "ok");
	state_path(path, sizeof(path), tag);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%u %d %d\n", r.iter, r.ack_ok, r.other_res);
		fclose(f);
	}
}

/*
 * What each 4 KiB block of a unit holds, for the record: O old, P the
 * plain write, A the atomic write, Z zeroes, ? anything else.
 */
static const char *unit_blocks(struct race *r, const unsigned char *u)
{
	static char s[8];
	unsigned int b;

	for (b = 0; b < UNIT / BLK; b++) {
		const unsigned char *p = u + b * BLK;

		s[b] = holds(p, BLK, T_ATOMIC, r->iter, b) ? 'A' :
		       b == 0 && holds(p, BLK, T_OLD, r->iter, 0) ? 'O' :
		       b == 2 && holds(p, BLK, T_PLAIN, r->iter, 2) ? 'P' :
		       is_zero(p, BLK) ? 'Z' : '?';
	}
	s[b] = 0;
	return s;
}

static void race_shutdown_verify(const char *tag, const char *mnt)
{
	char path[256], name[160];
	unsigned char *u = abuf(UNIT, 0);
	struct race r;
	FILE *f;
	int fd;

	snprintf(name, sizeof(name), "race_shutdown.%s.after_recovery", tag);
	state_path(path, sizeof(path), tag);
	f = fopen(path, "r");
	if (!f) {
		skip(name, "no_state");
		return;
	}
	memset(&r, 0, sizeof(r));
	r.scenario = PLAIN;
	if (fscanf(f, "%u %d %d", &r.iter, &r.ack_ok, &r.other_res) != 3) {
		fclose(f);
		check(name, "bad_state", "ok");
		return;
	}
	fclose(f);
	/* the atomic write was not acknowledged: whole, or not at all */
	r.other_res = 0;
	snprintf(path, sizeof(path), "%s/race-shutdown.dat", mnt);
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0 || pread(fd, u, UNIT, UNIT) != UNIT) {
		check(name, errname(errno), "ok");
		return;
	}
	close(fd);
	check(name, judge_unit(&r, u), "ok");
	snprintf(name, sizeof(name), "race_shutdown.%s.blocks", tag);
	info(name, "%s", unit_blocks(&r, u));
	free(u);
}

/* ------------------------------------------------ end of file, shutdown */

/*
 * File a: 14 KiB through the page cache + fsync (on XFS-rt this writes the
 * whole rt extent, on ext4 bigalloc four blocks of one cluster), then a
 * 16 KiB atomic write at 0, straddling the end of file.
 * File b: 4 KiB O_DIRECT + fsync, then 12 KiB O_DIRECT appended, not
 * synced, then a 16 KiB atomic write at 0 over what the in-core size says
 * is written.  Neither atomic write is synced; the shutdown follows.
 */
static const char *eof_prepare_a(const char *mnt, int *fdp)
{
	unsigned char *b = abuf(UNIT, 0);
	char path[256];
	int fd;

	fill(b, UNIT, T_OLD, 0xa, 0);
	snprintf(path, sizeof(path), "%s/eof-a.dat", mnt);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || pwrite(fd, b, 14 * KiB, 0) != 14 * KiB || fsync(fd))
		return "setup_failed";
	close(fd);
	*fdp = open(path, O_RDWR | O_DIRECT);
	free(b);
	return *fdp < 0 ? "open_failed" : "ok";
}

static const char *eof_prepare_b(const char *mnt, int *fdp)
{
	unsigned char *b = abuf(UNIT, 0);
	char path[256];
	int fd;

	fill(b, UNIT, T_OLD, 0xb, 0);
	snprintf(path, sizeof(path), "%s/eof-b.dat", mnt);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0 || pwrite(fd, b, BLK, 0) != BLK || fsync(fd))
		return "setup_failed";
	fill(b, UNIT, T_PLAIN, 0xb, 0);
	if (pwrite(fd, b + BLK, 3 * BLK, BLK) != 3 * BLK)
		return "append_failed";
	*fdp = fd;
	free(b);
	return "ok";
}

static void eof_shutdown_write(const char *tag, const char *mnt)
{
	unsigned char *buf = unit_buf(0);
	char name[160], path[256];
	const char *r;
	int fda = -1, fdb = -1, ra, rb;
	__u32 how = GOINGDOWN_NOLOGFLUSH;
	FILE *f;

	snprintf(name, sizeof(name), "eof_shutdown.%s", tag);
	if (!atomic16k_supported(mnt)) {
		skip(name, "no_16k_atomic_unit");
		return;
	}
	snprintf(name, sizeof(name), "eof_shutdown.%s.a_setup", tag);
	r = eof_prepare_a(mnt, &fda);
	check(name, r, "ok");
	snprintf(name, sizeof(name), "eof_shutdown.%s.b_setup", tag);
	r = eof_prepare_b(mnt, &fdb);
	check(name, r, "ok");
	if (fda < 0 || fdb < 0)
		return;
	fill(buf, UNIT, T_ATOMIC, 0xa, 0);
	ra = atomic_write(fda, buf, 0, 0) == UNIT ? 0 : errno;
	fill(buf, UNIT, T_ATOMIC, 0xb, 0);
	rb = atomic_write(fdb, buf, 0, 0) == UNIT ? 0 : errno;
	if (ioctl(fda, FS_IOC_GOINGDOWN, &how))
		perror("FS_IOC_GOINGDOWN");
	/* as upstream: a straddling write and one below the in-core size work */
	snprintf(name, sizeof(name), "eof_shutdown.%s.a_straddle_write", tag);
	check(name, ra ? errname(ra) : "ok", "ok");
	snprintf(name, sizeof(name), "eof_shutdown.%s.b_incore_size_write", tag);
	check(name, rb ? errname(rb) : "ok", "ok");
	close(fda);
	close(fdb);
	state_path(path, sizeof(path), tag);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%d %d\n", ra, rb);
		fclose(f);
	}
	munmap(buf, UNIT);
}

/*
 * The state after recovery: "old", "new", or what is wrong.  old_len/old
 * tags describe the states the file had before the atomic write.
 */
static const char *eof_state(const char *path, unsigned int file, int b_file)
{
	static char res[96];
	unsigned char *u = abuf(UNIT, 0);
	struct stat st;
	ssize_t have;
	int fd = open(path, O_RDONLY | O_DIRECT);

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(res, sizeof(res), "open_%s", errname(errno));
		return res;
	}
	have = pread(fd, u, UNIT, 0);
	close(fd);
	if (st.st_size == UNIT && have == UNIT && holds(u, UNIT, T_ATOMIC, file, 0))
		snprintf(res, sizeof(res), "new");
	else if (!b_file && st.st_size == 14 * KiB && have == 14 * KiB &&
		 holds(u, 12 * KiB, T_OLD, file, 0))
		snprintf(res, sizeof(res), "old");
	else if (b_file && st.st_size == BLK && have == BLK && holds(u, BLK, T_OLD, file, 0))
		snprintf(res, sizeof(res), "old_synced");
	else if (b_file && st.st_size == UNIT && have == UNIT && holds(u, BLK, T_OLD, file, 0) &&
		 holds(u + BLK, 3 * BLK, T_PLAIN, file, 1))
		snprintf(res, sizeof(res), "old_appended");
	else if (have > 0 && holds(u, BLK, T_ATOMIC, file, 0))
		snprintf(res, sizeof(res), "torn(size=%lld,new_data_cut)", (long long)st.st_size);
	else
		snprintf(res, sizeof(res), "other(size=%lld)", (long long)st.st_size);
	free(u);
	return res;
}

static void eof_shutdown_verify(const char *tag, const char *mnt)
{
	char name[160], path[256];
	const char *s;
	int ra, rb;
	FILE *f;

	state_path(path, sizeof(path), tag);
	f = fopen(path, "r");
	snprintf(name, sizeof(name), "eof_shutdown.%s.after_recovery", tag);
	if (!f) {
		skip(name, "no_state");
		return;
	}
	if (fscanf(f, "%d %d", &ra, &rb) != 2) {
		fclose(f);
		check(name, "bad_state", "ok");
		return;
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/eof-a.dat", mnt);
	s = eof_state(path, 0xa, 0);
	snprintf(name, sizeof(name), "eof_shutdown.%s.a_straddle_state", tag);
	info(name, "%s", s);
	snprintf(name, sizeof(name), "eof_shutdown.%s.a_straddle_untorn", tag);
	check(name, !strcmp(s, "old") || !strcmp(s, "new") ? "yes" : s, "yes");
	snprintf(path, sizeof(path), "%s/eof-b.dat", mnt);
	s = eof_state(path, 0xb, 1);
	snprintf(name, sizeof(name), "eof_shutdown.%s.b_incore_size_state", tag);
	info(name, "%s", s);
	snprintf(name, sizeof(name), "eof_shutdown.%s.b_incore_size_untorn", tag);
	check(name, !strncmp(s, "old", 3) || !strcmp(s, "new") ? "yes" : s, "yes");
}

/* ------------------------------------- mixed units, shutdown mid-commit */

#define MIX_WRITERS 3
#define MIX_UNITS 1024		/* per writer file: 16 MiB, more than a round needs */
#define MIX_DELAY_US 250000

struct mix_writer {
	int fd;
	unsigned int id;
	volatile int *stop;
	unsigned int started;		/* units begun (prepared or being prepared) */
	unsigned int atomic_ok, atomic_err;
	int first_err;
};

/* The tag of writer w's unit k: fill()'s iteration number. */
static unsigned int mix_iter(unsigned int w, unsigned int k)
{
	return (w << 16) | k;
}

static void *mix_writer_thread(void *arg)
{
	struct mix_writer *m = arg;
	unsigned char *old = abuf(BLK, 0), *buf = unit_buf(0);
	unsigned int k;

	for (k = 0; k < MIX_UNITS && !*m->stop; k++) {
		off_t off = (off_t)k * UNIT;

		m->started = k + 1;
		fill(old, BLK, T_OLD, mix_iter(m->id, k), 0);
		fill(buf, UNIT, T_ATOMIC, mix_iter(m->id, k), 0);
		/* block 0 written and committed, blocks 1-3 unwritten */
		if (fallocate(m->fd, FALLOC_FL_KEEP_SIZE, off, UNIT) ||
		    pwrite(m->fd, old, BLK, off) != BLK || fdatasync(m->fd))
			break;
		if (atomic_write(m->fd, buf, off, 0) == UNIT) {
			m->atomic_ok++;
		} else {
			if (!m->atomic_err++)
				m->first_err = errno;
			break;
		}
	}
	free(old);
	munmap(buf, UNIT);
	return NULL;
}

static void mix_path(char *buf, size_t len, const char *mnt, unsigned int w)
{
	snprintf(buf, len, "%s/mixsd-%u.dat", mnt, w);
}

static void mixed_shutdown_write(const char *tag, const char *mnt, unsigned int delay_us)
{
	struct mix_writer m[MIX_WRITERS];
	pthread_t tid[MIX_WRITERS];
	volatile int stop = 0;
	__u32 how = GOINGDOWN_NOLOGFLUSH;
	unsigned int w, units = 0, ok = 0, err = 0;
	char path[256], name[160];
	int started = 0, sd;
	FILE *f;

	snprintf(name, sizeof(name), "mixed_shutdown.%s", tag);
	if (!atomic16k_supported(mnt)) {
		skip(name, "no_16k_atomic_unit");
		return;
	}
	snprintf(name, sizeof(name), "mixed_shutdown.%s.setup", tag);
	memset(m, 0, sizeof(m));
	for (w = 0; w < MIX_WRITERS; w++) {
		mix_path(path, sizeof(path), mnt, w);
		m[w].fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
		m[w].id = w;
		m[w].stop = &stop;
		if (m[w].fd < 0 || ftruncate(m[w].fd, (off_t)MIX_UNITS * UNIT) ||
		    fsync(m[w].fd)) {
			check(name, errname(errno), "ok");
			return;
		}
	}
	for (w = 0; w < MIX_WRITERS; w++)
		started += !pthread_create(&tid[w], NULL, mix_writer_thread, &m[w]);
	check(name, started == MIX_WRITERS ? "ok" : "pthread_create_failed", "ok");
	usleep(delay_us);
	sd = ioctl(m[0].fd, FS_IOC_GOINGDOWN, &how);
	snprintf(name, sizeof(name), "mixed_shutdown.%s.shutdown", tag);
	check(name, sd ? errname(errno) : "ok", "ok");
	stop = 1;
	for (w = 0; w < (unsigned int)started; w++)
		pthread_join(tid[w], NULL);
	for (w = 0; w < MIX_WRITERS; w++) {
		units += m[w].started;
		ok += m[w].atomic_ok;
		err += m[w].atomic_err;
		close(m[w].fd);
	}
	snprintf(name, sizeof(name), "mixed_shutdown.%s.atomic_writes", tag);
	info(name, "ok=%u,failed=%u,units=%u", ok, err, units);
	state_path(path, sizeof(path), tag);
	f = fopen(path, "w");
	if (f) {
		for (w = 0; w < MIX_WRITERS; w++)
			fprintf(f, "%u\n", m[w].started);
		fclose(f);
	}
}

/*
 * A unit after recovery: 'A' the atomic write whole, 'O' the mixed unit it
 * started from, 'Z' zeroes (not prepared, or its block 0 write lost), or
 * NULL if torn; blocks gets what each block holds (unit_blocks()).
 */
static char mix_judge(unsigned int w, unsigned int k, const unsigned char *u, char *blocks)
{
	struct race r;

	memset(&r, 0, sizeof(r));
	r.iter = mix_iter(w, k);
	snprintf(blocks, 8, "%s", unit_blocks(&r, u));
	if (!strcmp(blocks, "AAAA"))
		return 'A';
	if (!strcmp(blocks, "OZZZ"))
		return 'O';
	if (!strcmp(blocks, "ZZZZ"))
		return 'Z';
	return 0;
}

static void mixed_shutdown_verify(const char *tag, const char *mnt)
{
	unsigned int started[MIX_WRITERS], w, k, n[3] = { 0, 0, 0 }, torn = 0;
	char path[256], name[160], blocks[8], first[64] = "none";
	unsigned char *u = abuf(UNIT, 0);
	FILE *f;
	int fd;

	snprintf(name, sizeof(name), "mixed_shutdown.%s.after_recovery", tag);
	state_path(path, sizeof(path), tag);
	f = fopen(path, "r");
	if (!f) {
		skip(name, "no_state");
		return;
	}
	for (w = 0; w < MIX_WRITERS; w++) {
		if (fscanf(f, "%u", &started[w]) != 1) {
			fclose(f);
			check(name, "bad_state", "ok");
			return;
		}
	}
	fclose(f);
	for (w = 0; w < MIX_WRITERS; w++) {
		mix_path(path, sizeof(path), mnt, w);
		fd = open(path, O_RDONLY | O_DIRECT);
		if (fd < 0) {
			check(name, errname(errno), "ok");
			return;
		}
		for (k = 0; k < started[w]; k++) {
			char c;

			if (pread(fd, u, UNIT, (off_t)k * UNIT) != UNIT) {
				check(name, errname(errno), "ok");
				close(fd);
				return;
			}
			c = mix_judge(w, k, u, blocks);
			if (c == 'A')
				n[0]++;
			else if (c == 'O')
				n[1]++;
			else if (c == 'Z')
				n[2]++;
			else if (!torn++)
				snprintf(first, sizeof(first), "w%u.u%u:%s", w, k, blocks);
		}
		close(fd);
	}
	free(u);
	check(name, "ok", "ok");
	snprintf(name, sizeof(name), "mixed_shutdown.%s.units", tag);
	info(name, "atomic=%u,mixed=%u,zero=%u,torn=%u", n[0], n[1], n[2], torn);
	snprintf(name, sizeof(name), "mixed_shutdown.%s.torn", tag);
	checku(name, torn, 0);
	snprintf(name, sizeof(name), "mixed_shutdown.%s.first_torn", tag);
	info(name, "%s", first);
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr,
		"usage: race_tests --race TAG:MNT [--iters N]\n"
		"       race_tests --race-shutdown-write TAG:MNT | --race-shutdown-verify TAG:MNT\n"
		"       race_tests --eof-shutdown-write TAG:MNT | --eof-shutdown-verify TAG:MNT\n"
		"       race_tests --mixed-shutdown-write TAG:MNT [--delay-us D] |\n"
		"                  --mixed-shutdown-verify TAG:MNT\n"
		"       race_tests --probe TAG:MNT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "race", required_argument, 0, 'r' },
		{ "iters", required_argument, 0, 'n' },
		{ "race-shutdown-write", required_argument, 0, 'w' },
		{ "race-shutdown-verify", required_argument, 0, 'v' },
		{ "eof-shutdown-write", required_argument, 0, 'W' },
		{ "eof-shutdown-verify", required_argument, 0, 'V' },
		{ "mixed-shutdown-write", required_argument, 0, 'm' },
		{ "mixed-shutdown-verify", required_argument, 0, 'M' },
		{ "delay-us", required_argument, 0, 'd' },
		{ "shared-convert", required_argument, 0, 'c' },
		{ "probe", required_argument, 0, 'p' },
		{ 0, 0, 0, 0 },
	};
	unsigned int iters = 300, delay_us = MIX_DELAY_US;
	char *arg = NULL, *mnt;
	int mode = 0, c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			iters = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			delay_us = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'r': case 'w': case 'v': case 'W': case 'V': case 'p': case 'm': case 'M':
		case 'c':
			mode = c;
			arg = optarg;
			break;
		default:
			usage();
		}
	}
	if (!mode || !(mnt = strchr(arg, ':')) || !iters)
		usage();
	*mnt++ = 0;
	if (mode == 'p')
		return atomic16k_supported(mnt) ? 0 : 3;
	switch (mode) {
	case 'r': race_checks(arg, mnt, iters); break;
	case 'c': shared_convert_only(arg, mnt, iters); break;
	case 'w': race_shutdown_write(arg, mnt); break;
	case 'v': race_shutdown_verify(arg, mnt); break;
	case 'W': eof_shutdown_write(arg, mnt); break;
	case 'V': eof_shutdown_verify(arg, mnt); break;
	case 'm': mixed_shutdown_write(arg, mnt, delay_us); break;
	case 'M': mixed_shutdown_verify(arg, mnt); break;
	}
	printf("race_tests: done pass=%d fail=%d\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}

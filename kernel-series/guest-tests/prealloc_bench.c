// SPDX-License-Identifier: MIT
/*
 * prealloc_bench - in-guest measurement of what a database that
 * preallocates its file pays for 16 KiB RWF_ATOMIC writes into unwritten
 * space, against the same writes without RWF_ATOMIC (issue 32, section 3:
 * ext4 serialises a multi-block atomic write into unwritten blocks behind
 * an exclusive i_rwsem and inode_dio_wait(); plain direct writes there run
 * under the shared lock, in parallel).
 *
 * usage: prealloc_bench TAG:MNT [--mb N] [--threads LIST] [--modes LIST]
 *   For every mode (atomic, plain) and thread count (default 1,4,16): a
 *   fresh file of N MiB (default 32) preallocated with fallocate(), then
 *   each of its 16 KiB units written once with O_DIRECT pwritev2 (units
 *   dealt round-robin to the threads, all released together), no fsync.
 *   Prints one INFO line per run (the check line format of atomic_tests):
 *     bench.TAG.MODE.tN: INFO got=ops_s=X,p50_us=Y,p99_us=Z,max_us=W,secs=S
 *   and a FAIL line if a write fails or the data does not read back.
 * Exit status: 0 if nothing failed, 1 otherwise, 2 on usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ut_atomic_compat.h" /* io/: the one place for the uapi bits */
#include "guest_common.h"

#define UNIT (16 * KiB)
#define MAX_THREADS 64

struct run {
	int fd;
	int atomic;
	unsigned int nthreads, units;
	pthread_barrier_t start;
	double *lat_us;			/* per unit */
	volatile int failed;
	int first_err;
};

struct worker {
	struct run *run;
	unsigned int id;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Unit u's contents: its number in every 8-byte word, so a read checks it. */
static void fill_unit(unsigned long long *w, unsigned int u)
{
	size_t i;

	for (i = 0; i < UNIT / 8; i++)
		w[i] = ((unsigned long long)u << 32) | i;
}

static void *worker_thread(void *arg)
{
	struct worker *wk = arg;
	struct run *r = wk->run;
	unsigned long long *buf = abuf(UNIT, 0);
	unsigned int u;

	pthread_barrier_wait(&r->start);
	for (u = wk->id; u < r->units && !r->failed; u += r->nthreads) {
		struct iovec iov = { .iov_base = buf, .iov_len = UNIT };
		double t0;
		ssize_t n;

		fill_unit(buf, u);
		t0 = now_us();
		n = pwritev2(r->fd, &iov, 1, (off_t)u * UNIT, r->atomic ? RWF_ATOMIC : 0);
		r->lat_us[u] = now_us() - t0;
		if (n != UNIT) {
			r->first_err = n < 0 ? errno : EIO;
			r->failed = 1;
		}
	}
	free(buf);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Every unit reads back as written. */
static int verify(int fd, unsigned int units)
{
	unsigned long long *buf = abuf(UNIT, 0), *want = abuf(UNIT, 0);
	unsigned int u;
	int ok = 1;

	for (u = 0; u < units && ok; u++) {
		fill_unit(want, u);
		ok = pread(fd, buf, UNIT, (off_t)u * UNIT) == UNIT && !memcmp(buf, want, UNIT);
	}
	free(buf);
	free(want);
	return ok;
}

static void bench_one(const char *tag, const char *mnt, const char *mode, unsigned int nthreads,
		      unsigned int mb)
{
	struct worker wk[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	char path[256], name[160];
	struct run r;
	double t0, secs;
	unsigned int i;

	memset(&r, 0, sizeof(r));
	r.atomic = !strcmp(mode, "atomic");
	r.nthreads = nthreads;
	r.units = mb * (KiB * KiB / UNIT);
	r.lat_us = calloc(r.units, sizeof(double));
	snprintf(name, sizeof(name), "bench.%s.%s.t%u", tag, mode, nthreads);
	snprintf(path, sizeof(path), "%s/prealloc-bench.dat", mnt);
	unlink(path);
	r.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	/* the database's file: preallocated, its size set, synced */
	if (!r.lat_us || r.fd < 0 || fallocate(r.fd, 0, 0, (off_t)r.units * UNIT) || fsync(r.fd)) {
		check(name, errname(errno), "ok");
		return;
	}
	pthread_barrier_init(&r.start, NULL, nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		wk[i].run = &r;
		wk[i].id = i;
		pthread_create(&tid[i], NULL, worker_thread, &wk[i]);
	}
	t0 = now_us();
	pthread_barrier_wait(&r.start);
	for (i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	secs = (now_us() - t0) / 1e6;
	pthread_barrier_destroy(&r.start);
	if (r.failed) {
		check(name, errname(r.first_err), "ok");
	} else if (!verify(r.fd, r.units)) {
		check(name, "data_mismatch", "ok");
	} else {
		qsort(r.lat_us, r.units, sizeof(double), cmp_double);
		info(name, "ops_s=%.0f,p50_us=%.0f,p99_us=%.0f,max_us=%.0f,secs=%.2f",
		     r.units / secs, r.lat_us[r.units / 2], r.lat_us[r.units * 99 / 100],
		     r.lat_us[r.units - 1], secs);
	}
	close(r.fd);
	unlink(path);
	free(r.lat_us);
}

static void usage(void)
{
	fprintf(stderr, "usage: prealloc_bench TAG:MNT [--mb N] [--threads 1,4,16] "
			"[--modes atomic,plain]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mb", required_argument, 0, 'm' },
		{ "threads", required_argument, 0, 't' },
		{ "modes", required_argument, 0, 'M' },
		{ 0, 0, 0, 0 },
	};
	char threads[64] = "1,4,16", modes[64] = "atomic,plain", *mnt, *t, *m, *sp1, *sp2;
	unsigned int mb = 32;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mb = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 't': snprintf(threads, sizeof(threads), "%s", optarg); break;
		case 'M': snprintf(modes, sizeof(modes), "%s", optarg); break;
		default: usage();
		}
	}
	if (optind != argc - 1 || !(mnt = strchr(argv[optind], ':')) || !mb)
		usage();
	*mnt++ = 0;
	/* alternate the modes per thread count, so a slow spell hits both */
	for (t = strtok_r(threads, ",", &sp1); t; t = strtok_r(NULL, ",", &sp1)) {
		unsigned int n = (unsigned int)strtoul(t, NULL, 0);
		char mcopy[64];

		if (!n || n > MAX_THREADS)
			usage();
		snprintf(mcopy, sizeof(mcopy), "%s", modes);
		for (m = strtok_r(mcopy, ",", &sp2); m; m = strtok_r(NULL, ",", &sp2))
			bench_one(argv[optind], mnt, m, n, mb);
	}
	printf("prealloc_bench: done pass=%d fail=%d\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}

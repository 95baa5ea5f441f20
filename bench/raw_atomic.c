/*
 * bench/raw_atomic.c - the ceiling for bench_durable's page writes: 16 KiB
 * RWF_ATOMIC O_DIRECT writes at random 16 KiB-aligned offsets of a block
 * device (or file), with the engine's sync cadence (an fdatasync after every
 * -b writes; default 1, as bench_durable's single-put commits: about one
 * page write and one sync per commit).  No engine, no log, no filesystem:
 * what the device model lets a program write.
 *
 * Prints a human line and one "csv," line in bench_durable's CSV format
 * (system "raw", workload "raw"), with the device's own counters from
 * /sys/dev/block/MAJ:MIN/stat (write requests, sectors, flushes).
 *
 *   raw_atomic -d DEV [-t SECS] [-w WARMUP] [-b WRITES_PER_SYNC] [-s SPAN]
 *              [--plain] [--seed N] [--round N]
 *   --plain  O_DIRECT without RWF_ATOMIC (a device without an atomic unit)
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "sysstat.h"
#include "ut_atomic_compat.h" /* RWF_ATOMIC for glibc 2.36 */

#define PAGE 16384

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}


static int fcmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "plain", no_argument, NULL, 'P' },
		{ "seed", required_argument, NULL, 'S' },
		{ "round", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *dev = NULL;
	double secs = 10, warm = 1;
	long per_sync = 1, round = 1;
	uint64_t span = 0, seed = 42;
	int plain = 0, opt, fd;
	char sp[256];
	void *buf;
	float *lat;
	size_t nlat = 0, cap = 1 << 20;
	struct devstat d0, d1;
	long n = 0, syncs = 0;
	double t0, tend, cb0 = 0, ct0 = 0, cb1, ct1;

	while ((opt = getopt_long(argc, argv, "d:t:w:b:s:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 't': secs = atof(optarg); break;
		case 'w': warm = atof(optarg); break;
		case 'b': per_sync = atol(optarg); break;
		case 's': span = strtoull(optarg, NULL, 0); break;
		case 'P': plain = 1; break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'R': round = atol(optarg); break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: raw_atomic -d DEV [-t SECS] [-w WARMUP] [-b WRITES_PER_SYNC]\n"
				"                  [-s SPAN_BYTES] [--plain] [--seed N] [--round N]\n");
			return opt == 'h' ? 0 : 64;
		}
	}
	if (!dev || per_sync < 1) {
		fprintf(stderr, "raw_atomic: -d DEV required\n");
		return 64;
	}
	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "raw_atomic: open %s: %s\n", dev, strerror(errno));
		return 1;
	}
	if (!span) {
		struct stat st;
		uint64_t b = 0;

		if (fstat(fd, &st) == 0 && S_ISBLK(st.st_mode))
			ioctl(fd, BLKGETSIZE64, &b);
		else if (fstat(fd, &st) == 0)
			b = (uint64_t)st.st_size;
		span = b;
	}
	span -= span % PAGE;
	if (span < PAGE) {
		fprintf(stderr, "raw_atomic: %s: too small (-s)\n", dev);
		return 1;
	}
	if (posix_memalign(&buf, 4096, PAGE))
		return 1;
	lat = malloc(cap * sizeof(*lat));
	if (!lat)
		return 1;
	devstat_path(dev, sp, sizeof(sp));

	tend = now() + warm;
	t0 = 0;
	for (int measuring = 0; measuring < 2; measuring++) {
		if (measuring) {
			memset(&d0, 0, sizeof(d0));
			devstat_add(sp, &d0);
			cpu_read(&cb0, &ct0);
			t0 = now();
			tend = t0 + secs;
			n = 0;
			syncs = 0;
		}
		for (long i = 0;; i++) {
			double a = now();
			uint64_t r = mix64(seed++);
			off_t off = (off_t)((r % (span / PAGE)) * PAGE);
			struct iovec iov = { buf, PAGE };

			if (a >= tend)
				break;
			memset(buf, (int)(r & 0xff), 64);
			if (pwritev2(fd, &iov, 1, off, plain ? 0 : RWF_ATOMIC) != PAGE) {
				fprintf(stderr, "raw_atomic: pwritev2%s at %lld: %s\n",
					plain ? "" : "(RWF_ATOMIC)", (long long)off,
					strerror(errno));
				return 1;
			}
			if ((i + 1) % per_sync == 0) {
				if (fdatasync(fd)) {
					fprintf(stderr, "raw_atomic: fdatasync: %s\n", strerror(errno));
					return 1;
				}
				if (measuring)
					syncs++;
			}
			if (measuring) {
				if (nlat < cap)
					lat[nlat++] = (float)((now() - a) * 1e6);
				n++;
			}
		}
	}
	{
		double el = now() - t0, p50 = 0, p99 = 0, p999 = 0;
		double wb, wr, fl;

		memset(&d1, 0, sizeof(d1));
		devstat_add(sp, &d1);
		cpu_read(&cb1, &ct1);
		if (nlat) {
			qsort(lat, nlat, sizeof(float), fcmp);
			p50 = lat[nlat / 2];
			p99 = lat[(size_t)((double)nlat * 0.99)];
			p999 = lat[(size_t)((double)nlat * 0.999)];
		}
		wb = d1.wbytes - d0.wbytes;
		wr = d1.wreqs - d0.wreqs;
		fl = d1.flushes - d0.flushes;
		printf("raw_atomic: %s %s 16 KiB writes, fdatasync every %ld: %ld writes in %.1f s = "
		       "%.0f writes/s, device %.0f B/s (%.2f MB/s), %.2f requests/write, "
		       "%.2f flushes/write, p50 %.0f µs p99 %.0f µs\n",
		       dev, plain ? "plain O_DIRECT" : "RWF_ATOMIC O_DIRECT", per_sync, n, el,
		       n / el, wb / el, wb / el / 1e6, n ? wr / n : 0, n ? fl / n : 0, p50, p99);
		/* same columns as bench_durable's csv lines */
		printf("csv,%ld,raw,raw,1,%ld,%ld,%.3f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,"
		       "%.0f,0,0,%ld,0,%.3f,%s %s every %ld\n",
		       round, n, syncs, el, n / el, p50, p99, p999, wb, wr, fl,
		       (double)n * PAGE, syncs, ct1 > ct0 ? (cb1 - cb0) / (ct1 - ct0) : 0,
		       plain ? "plain" : "RWF_ATOMIC",
		       "O_DIRECT; fdatasync", per_sync);
	}
	close(fd);
	return 0;
}

/*
 * bench/log_probe.c - what a log's fdatasync costs beside a page writer, on
 * this disk, with no engine.  The question behind double-write's pacing
 * (UT_FLUSH_INFLIGHT_PAGES): does a commit's log sync wait for the page
 * writes in flight, and does handing pages over in small groups help?
 *
 * One thread plays the log: a 4 KiB O_DIRECT write at the next offset of a
 * file written full beforehand, then fdatasync, in a loop (a single-put
 * commit; the offsets wrap around the file).
 * Another plays the page cleaner, writing batches of 256 random 16 KiB
 * pages through the page cache to a second file, each batch made durable
 * with one fdatasync, as double-write's data file is:
 *
 *   alone   no page writer
 *   burst   the batch handed to the kernel whole: it reaches the device
 *           at the fdatasync, all at once (untorn before 106b744)
 *   paced   groups of 16 pages, each written back (sync_file_range) before
 *           the next, then the fdatasync (untorn since)
 *   pN      paced, held to N MB/s (-R N,...): a cleaner that writes only
 *           as fast as an engine dirties pages.  The log's p99 against N
 *           says what a commit's sync costs at a given page-write rate.
 *
 * Modes are interleaved over rounds; every run prints the log's sync
 * latency (p50, p90, p99, max), its syncs/s, and the page writer's MB/s.
 *
 *   log_probe [-d DIR] [-t SECS] [-r ROUNDS] [-R MBPS,...]
 */
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOG_BLOCK 4096
#define PAGE 16384
#define BATCH 256
#define GROUP 16
#define LOG_SPAN 16384L  /* blocks in the log file (64 MiB) */
#define PAGE_SPAN 16384L /* pages in the page file (256 MiB) */
#define MAX_SYNCS 2000000
#define MAX_RATES 16

enum mode { ALONE, BURST, PACED };
static const char *const mode_name[] = { "alone", "burst", "paced" };

struct pager_arg {
	int fd;
	enum mode mode;
	double mbps; /* paced: bytes per second cap, in MB/s; 0: none */
	volatile int stop;
	long long bytes;
	int err;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int write_page(int fd, const char *buf, long pgno)
{
	return pwrite(fd, buf, PAGE, pgno * PAGE) == PAGE ? 0 : -1;
}

static int write_back(int fd, const long *pgnos, int n)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++)
			if (sync_file_range(fd, pgnos[i] * PAGE, PAGE, pass ?
					    SYNC_FILE_RANGE_WAIT_BEFORE |
					    SYNC_FILE_RANGE_WRITE |
					    SYNC_FILE_RANGE_WAIT_AFTER :
					    SYNC_FILE_RANGE_WRITE))
				return -1;
	return 0;
}

/* Sleep until written bytes since t0 are within the cap. */
static void hold_to_rate(double t0, long long bytes, double mbps)
{
	double ahead = (double)bytes / (mbps * 1e6) - (now() - t0);

	if (ahead > 0)
		nanosleep(&(struct timespec){ .tv_sec = (time_t)ahead,
			  .tv_nsec = (long)((ahead - (double)(time_t)ahead) * 1e9) },
			  NULL);
}

static void *pager_main(void *p)
{
	struct pager_arg *a = p;
	static char buf[PAGE];
	unsigned seed = 12345;
	long pgnos[BATCH];
	long long written = 0;
	double t0 = now();

	memset(buf, 0x5a, sizeof(buf));
	while (!a->stop && !a->err) {
		for (int i = 0; i < BATCH && !a->err; i++) {
			pgnos[i] = (long)(rand_r(&seed) % PAGE_SPAN);
			a->err = write_page(a->fd, buf, pgnos[i]);
			if (a->err || a->mode != PACED || i % GROUP != GROUP - 1)
				continue;
			a->err = write_back(a->fd, pgnos + i + 1 - GROUP, GROUP);
			written += (long long)GROUP * PAGE;
			if (a->mbps > 0)
				hold_to_rate(t0, written, a->mbps);
		}
		if (!a->err)
			a->err = fdatasync(a->fd);
		a->bytes += (long long)BATCH * PAGE;
	}
	return NULL;
}

/* Files filled with data once, so that neither writer's sync carries
 * extent conversions (the engine's files are written, not fallocated). */
static int fill(const char *path, long bytes, char *blk, size_t len)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);

	if (fd < 0)
		return -1;
	for (long off = 0; off < bytes; off += (long)len)
		if (pwrite(fd, blk, len, off) != (ssize_t)len) {
			close(fd);
			return -1;
		}
	fdatasync(fd);
	return fd;
}

static int run(int lfd, int pfd, enum mode mode, double mbps, double secs,
	       int round, const char *blk, double *lat)
{
	struct pager_arg pa = { .fd = pfd, .mode = mode, .mbps = mbps };
	char name[16];
	pthread_t th;
	double t0, t1;
	long n = 0;
	int log_failed = 0;

	if (mode != ALONE && pthread_create(&th, NULL, pager_main, &pa))
		return -1;
	t0 = now();
	while ((t1 = now()) - t0 < secs && n < MAX_SYNCS && !pa.err) {
		if (pwrite(lfd, blk, LOG_BLOCK, (n % LOG_SPAN) * LOG_BLOCK) !=
		    LOG_BLOCK || fdatasync(lfd)) {
			perror("log_probe: log write");
			log_failed = 1;
			break;
		}
		lat[n++] = (now() - t1) * 1e3;
	}
	t1 = now();
	pa.stop = 1;
	if (mode != ALONE)
		pthread_join(th, NULL);
	if (pa.err)
		perror("log_probe: page writer");
	if (log_failed || pa.err || n == 0)
		return -1;
	qsort(lat, (size_t)n, sizeof(double), cmp_double);
	if (mbps > 0)
		snprintf(name, sizeof(name), "p%.0f", mbps);
	else
		snprintf(name, sizeof(name), "%s", mode_name[mode]);
	printf("| %5d | %-5s | %8.2f | %8.2f | %8.2f | %8.2f | %9.0f | %8.1f |\n",
	       round, name, lat[n / 2], lat[n * 9 / 10],
	       lat[n * 99 / 100], lat[n - 1], (double)n / (t1 - t0),
	       (double)pa.bytes / (t1 - t0) / 1e6);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = ".";
	char lpath[4096], ppath[4096], *blk = NULL;
	double secs = 10, *lat = malloc(sizeof(double) * MAX_SYNCS);
	double rates[MAX_RATES];
	int rounds = 2, nrates = 0, c, lfd, pfd, rc = 0;
	char *tok;

	while ((c = getopt(argc, argv, "d:t:r:R:")) != -1) {
		if (c == 'd')
			dir = optarg;
		else if (c == 't')
			secs = atof(optarg);
		else if (c == 'r')
			rounds = atoi(optarg);
		else if (c == 'R')
			for (tok = strtok(optarg, ","); tok && nrates < MAX_RATES;
			     tok = strtok(NULL, ","))
				if ((rates[nrates++] = atof(tok)) <= 0)
					c = '?';
		if (c == '?' || c == ':') {
			fprintf(stderr, "usage: log_probe [-d DIR] [-t SECS] "
				"[-r ROUNDS] [-R MBPS,...]\n");
			return 2;
		}
	}
	printf("log_probe: 4 KiB O_DIRECT log write + fdatasync, beside %d-page "
	       "batches of 16 KiB pages (buffered, one fdatasync each), in %s, "
	       "%.0f s per run\n\n", BATCH, dir, secs);
	printf("| round | pages | p50 ms   | p90 ms   | p99 ms   | max ms   | "
	       "syncs/s   | page MB/s |\n");
	printf("|------:|-------|---------:|---------:|---------:|---------:|"
	       "----------:|---------:|\n");
	snprintf(lpath, sizeof(lpath), "%s/log_probe.log", dir);
	snprintf(ppath, sizeof(ppath), "%s/log_probe.pages", dir);
	if (!lat || posix_memalign((void **)&blk, 4096, PAGE)) {
		fprintf(stderr, "log_probe: out of memory\n");
		return 1;
	}
	memset(blk, 0xa5, PAGE);
	lfd = fill(lpath, LOG_BLOCK * LOG_SPAN, blk, PAGE);
	pfd = lfd < 0 ? -1 : fill(ppath, PAGE_SPAN * PAGE, blk, PAGE);
	if (pfd >= 0) {
		close(pfd); /* the page writer goes through the page cache */
		pfd = open(ppath, O_RDWR);
	}
	if (lfd < 0 || pfd < 0) {
		perror("log_probe: set-up");
		rc = 1;
	}
	for (int r = 1; r <= rounds && !rc; r++) {
		for (int m = ALONE; m <= PACED && !rc; m++)
			rc = run(lfd, pfd, (enum mode)m, 0, secs, r, blk, lat) ? 1 : 0;
		for (int i = 0; i < nrates && !rc; i++)
			rc = run(lfd, pfd, PACED, rates[i], secs, r, blk, lat) ? 1 : 0;
	}
	if (lfd >= 0)
		close(lfd);
	if (pfd >= 0)
		close(pfd);
	unlink(lpath);
	unlink(ppath);
	free(blk);
	free(lat);
	return rc;
}

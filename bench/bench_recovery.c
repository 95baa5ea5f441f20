/*
 * bench/bench_recovery.c - unclean-open (recovery) time against the size of
 * the database, with the same log since the last checkpoint (issue 23
 * part 2): does recovery's cost grow with the file or with the log?
 *
 * For each size (-s, default 256M,4G) a database of that much data is
 * built once in -d (default /var/tmp): keys in order, -v byte values
 * (default 1000), UT_PROTECT_UNSAFE, sync=0, closed cleanly.  Then, per
 * round (--rounds, default 3) and per size, interleaved, for each evidence
 * mode (the page-write bound, and the full read with
 * UT_RECOVERY_FULL_SCAN=1):
 *   1. a child process opens the database (auto protection, sync=1, cache
 *      -c, default 64M), checkpoints, commits transactions of 64 updates
 *      (new -v byte values of random keys among the first -H bytes of
 *      data, default 128M: the same hot set in every size, so that redo
 *      reads the same pages and only the file's size differs; -H 0: any
 *      key of the database) until -l
 *      bytes (default 64M) of log lie past the checkpoint, then is killed
 *      with SIGKILL: no close, no checkpoint;
 *   2. the three files are synced and dropped from the OS page cache
 *      (POSIX_FADV_DONTNEED), as after a reboot;
 *   3. ut_open is timed (this is recovery: evidence, redo, checkpoint),
 *      then the handle is closed (not timed).
 * Every open is printed (seconds, the pages read for the evidence and by
 * redo, the pages written in place and to the double-write file, the
 * syncs and bound raises: recovery's and its final checkpoint's), then
 * the median per size and mode and the ratio of the largest size to the
 * smallest.  The files are removed at the end (--keep: not).
 *
 * -p MODES (comma-separated: auto, atomic, doublewrite, fullpage; default
 * auto): the protection the crash child runs and recovery opens in, one
 * column each, interleaved within a round (issue 34: the time to recover
 * after a kill, per mode).  -l is the checkpoint interval's worst case:
 * the kill comes when that much log lies past the last checkpoint, so a
 * run per -l gives the figure per interval.  A mode the file system
 * cannot run (atomic without RWF_ATOMIC) is reported and skipped.  The
 * database is built in unsafe mode whatever -p says (no crash there) and
 * every crash child starts with a checkpoint, so modes do not see each
 * other's log.
 *
 * --reuse (implies --keep): a database built earlier with the same size
 * and -v, as its "-built" marker file records, is used as it is, not
 * built again (building 4 GiB takes minutes; every round starts with a
 * checkpoint, so what earlier runs left in it does not matter).  -m bound
 * or -m full runs one evidence mode only (the full read of 4 GiB takes
 * ~20 s a round).
 *
 *   bench_recovery [-d DIR] [-s 256M,4G] [-l 64M] [-H 128M] [-v 1000]
 *                  [-c 64M] [--rounds 3] [-m bound|full] [-p auto,...]
 *                  [--keep] [--reuse]
 *
 * The per-mode figure (issue 34), at three checkpoint intervals:
 *   for l in 16M 64M 256M; do
 *     bench_recovery -s 1G -l $l -m bound -p doublewrite,fullpage,atomic \
 *       --rounds 3 --reuse
 *   done
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "untorn.h"
#include "db.h"
#include "pager.h"
#include "wal.h"

#define MAX_SIZES 4
#define MAX_PROTECT 5
#define UPDATES_PER_TXN 64

static const char *dir = "/var/tmp";
static uint64_t sizes[MAX_SIZES] = { 256ull << 20, 4ull << 30 };
static int nsizes = 2, rounds = 3, keep, reuse, mode_lo = 0, mode_hi = 1;
static uint64_t log_bytes = 64ull << 20, hot_bytes = 128ull << 20;
static size_t vlen = 1000, cache = 64u << 20;
static int protects[MAX_PROTECT] = { UT_PROTECT_AUTO }, nprotect = 1;
/* modes refused at the first open (e.g. atomic without RWF_ATOMIC) */
static int unsupported[MAX_PROTECT];

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'T': case 't': v *= 1024; /* fall through */
	case 'G': case 'g': v *= 1024; /* fall through */
	case 'M': case 'm': v *= 1024; /* fall through */
	case 'K': case 'k': v *= 1024; break;
	default: break;
	}
	return (uint64_t)v;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_recovery: %s: %s: %s\n", what, ut_strerror(rc),
		ut_errdetail());
	exit(1);
}

static uint64_t nkeys_of(uint64_t bytes) { return bytes / (vlen + 16); }
static void key_of(char *k, uint64_t i) { snprintf(k, 20, "k%014llu", (unsigned long long)i); }

static void fill(uint8_t *v, uint64_t seed)
{
	for (size_t j = 0; j < vlen; j++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		v[j] = (uint8_t)(seed >> 56);
	}
}

static void db_path(char *buf, size_t n, uint64_t size)
{
	snprintf(buf, n, "%.300s/bench_recovery_%lluM.db", dir,
		 (unsigned long long)(size >> 20));
}

static void marker_path(char *buf, size_t n, const char *path)
{
	snprintf(buf, n, "%.400s-built", path);
}

static void remove_db(const char *path)
{
	char b[600];

	unlink(path);
	marker_path(b, sizeof(b), path);
	unlink(b);
	snprintf(b, sizeof(b), "%.400s-wal", path);
	unlink(b);
	snprintf(b, sizeof(b), "%.400s-dw", path);
	unlink(b);
}

/* Whether path holds a complete build of n keys of vlen-byte values: the
 * marker is written only after the build's clean close. */
static int built_before(const char *path, uint64_t n)
{
	unsigned long long mn = 0, mv = 0;
	char b[600];
	FILE *m;
	int ok;

	marker_path(b, sizeof(b), path);
	if (!(m = fopen(b, "r")))
		return 0;
	ok = fscanf(m, "%llu %llu", &mn, &mv) == 2 && mn == n && mv == vlen;
	fclose(m);
	return ok && access(path, F_OK) == 0;
}

static void mark_built(const char *path, uint64_t n)
{
	char b[600];
	FILE *m;

	marker_path(b, sizeof(b), path);
	if (!(m = fopen(b, "w")) ||
	    fprintf(m, "%llu %zu\n", (unsigned long long)n, vlen) < 0 ||
	    fclose(m)) {
		fprintf(stderr, "bench_recovery: cannot write %s\n", b);
		exit(1);
	}
}

/* Keys in order, transactions of 20000 puts, no sync until the close. */
static void build(const char *path, uint64_t size)
{
	uint64_t n = nkeys_of(size);
	uint8_t *v;
	double t0 = now();
	ut_options o;
	ut_db *db;
	int rc;

	if (reuse && built_before(path, n)) {
		printf("reusing %s: %llu keys\n", path, (unsigned long long)n);
		return;
	}
	v = malloc(vlen);
	remove_db(path);
	ut_options_default(&o);
	o.protect = UT_PROTECT_UNSAFE;
	o.sync = 0;
	o.cache_bytes = 256u << 20;
	if ((rc = ut_open(path, &o, &db)))
		die("build: open", rc);
	ut_db_set_checkpoint_bytes(db, 1ull << 40);
	for (uint64_t i = 0; i < n;) {
		ut_txn *t;
		char k[20];

		if ((rc = ut_begin(db, 0, &t)))
			die("build: begin", rc);
		for (uint64_t e = i + 20000; i < n && i < e; i++) {
			key_of(k, i);
			fill(v, i);
			if ((rc = ut_put(t, k, strlen(k), v, vlen)))
				die("build: put", rc);
		}
		if ((rc = ut_commit(t)))
			die("build: commit", rc);
	}
	if ((rc = ut_close(db)))
		die("build: close", rc);
	mark_built(path, n);
	free(v);
	printf("built %s: %llu keys in %.1f s\n", path, (unsigned long long)n,
	       now() - t0);
	fflush(stdout);
}

/* The child: a checkpoint, then log_bytes of sync=1 updates, then SIGKILL. */
static void crash_child(const char *path, uint64_t size, unsigned seed,
			int protect)
{
	uint64_t hot = nkeys_of(hot_bytes && hot_bytes < size ? hot_bytes : size),
		 x = seed;
	uint8_t *v = malloc(vlen);
	ut_wal_stats ws;
	ut_options o;
	ut_db *db;
	int rc;

	ut_options_default(&o);
	o.cache_bytes = cache;
	o.protect = protect;
	if ((rc = ut_open(path, &o, &db))) {
		if (rc == UT_ENOTSUP)
			_exit(3); /* the mode cannot run here */
		die("crash: open", rc);
	}
	ut_db_set_checkpoint_bytes(db, 1ull << 40);
	if ((rc = ut_checkpoint(db)))
		die("crash: checkpoint", rc);
	do {
		ut_txn *t;
		char k[20];

		if ((rc = ut_begin(db, 0, &t)))
			die("crash: begin", rc);
		for (int u = 0; u < UPDATES_PER_TXN; u++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			key_of(k, (x >> 16) % hot);
			fill(v, x);
			if ((rc = ut_put(t, k, strlen(k), v, vlen)))
				die("crash: put", rc);
		}
		if ((rc = ut_commit(t)))
			die("crash: commit", rc);
		ut_wal_stats_get(ut_db_wal(db), &ws);
	} while (ws.bytes_since_checkpoint < log_bytes);
	kill(getpid(), SIGKILL);
}

/* 0: killed with the log past its checkpoint; 1: the mode cannot run. */
static int crash(const char *path, uint64_t size, unsigned seed, int protect)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		crash_child(path, size, seed, protect);
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 3)
		return 1;
	if (pid < 0 || !WIFSIGNALED(st) ||
	    WTERMSIG(st) != SIGKILL) {
		fprintf(stderr, "bench_recovery: the crash child did not die by "
			"SIGKILL\n");
		exit(1);
	}
	return 0;
}

/* As after a reboot: what the killed process wrote is on the disk, and
 * nothing of the three files is in the page cache. */
static void drop_caches(const char *path)
{
	static const char *const suffix[] = { "", "-wal", "-dw" };
	char b[600];

	for (int i = 0; i < 3; i++) {
		int fd;

		snprintf(b, sizeof(b), "%.400s%s", path, suffix[i]);
		if ((fd = open(b, O_RDONLY)) < 0)
			continue;
		(void)fdatasync(fd);
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--keep") || !strcmp(a, "--reuse")) {
			keep = 1;
			reuse |= !strcmp(a, "--reuse");
			continue;
		}
		if (!val) {
			fprintf(stderr, "bench_recovery: %s needs a value\n", a);
			exit(2);
		}
		i++;
		if (!strcmp(a, "-d")) {
			dir = val;
		} else if (!strcmp(a, "-s")) {
			char *s = strdup(val), *tok, *save;

			nsizes = 0;
			for (tok = strtok_r(s, ",", &save); tok && nsizes < MAX_SIZES;
			     tok = strtok_r(NULL, ",", &save))
				sizes[nsizes++] = parse_size(tok);
			free(s);
		} else if (!strcmp(a, "-l")) {
			log_bytes = parse_size(val);
		} else if (!strcmp(a, "-H")) {
			hot_bytes = parse_size(val);
		} else if (!strcmp(a, "-v")) {
			vlen = (size_t)parse_size(val);
		} else if (!strcmp(a, "-c")) {
			cache = (size_t)parse_size(val);
		} else if (!strcmp(a, "-m") &&
			   (!strcmp(val, "bound") || !strcmp(val, "full"))) {
			mode_lo = mode_hi = !strcmp(val, "full");
		} else if (!strcmp(a, "-p")) {
			char *s = strdup(val), *tok, *save;

			nprotect = 0;
			for (tok = strtok_r(s, ",", &save); tok && nprotect < MAX_PROTECT;
			     tok = strtok_r(NULL, ",", &save)) {
				int m = -1;

				for (int k = UT_PROTECT_AUTO; k <= UT_PROTECT_FULLPAGE; k++)
					if (!strcmp(tok, ut_protect_name(k)))
						m = k;
				if (m < 0) {
					fprintf(stderr, "bench_recovery: unknown mode %s\n", tok);
					exit(2);
				}
				protects[nprotect++] = m;
			}
			free(s);
		} else if (!strcmp(a, "--rounds")) {
			rounds = atoi(val);
		} else {
			fprintf(stderr, "bench_recovery: unknown option %s\n", a);
			exit(2);
		}
	}
	if (nsizes < 1 || nprotect < 1 || rounds < 1 || rounds > 50 || vlen < 1 || vlen > 8000 ||
	    (hot_bytes && nkeys_of(hot_bytes) < 1)) {
		fprintf(stderr, "bench_recovery: bad arguments\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static const char *const mode[2] = { "bound", "full scan" };
	static double secs[MAX_SIZES][2][MAX_PROTECT][50];
	char path[MAX_SIZES][400];
	double la[3] = { 0 };

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getloadavg(la, 3) > 0)
		printf("load average at start: %.2f %.2f %.2f\n", la[0], la[1], la[2]);
	printf("log past the checkpoint %llu MiB, hot set %llu MiB, values %zu "
	       "bytes, cache %zu MiB, %d rounds\n",
	       (unsigned long long)(log_bytes >> 20),
	       (unsigned long long)(hot_bytes >> 20), vlen, cache >> 20, rounds);
	for (int s = 0; s < nsizes; s++) {
		db_path(path[s], sizeof(path[s]), sizes[s]);
		build(path[s], sizes[s]);
	}
	for (int r = 0; r < rounds; r++)
		for (int s = 0; s < nsizes; s++)
			for (int m = mode_lo; m <= mode_hi; m++)
			for (int pm = 0; pm < nprotect; pm++) {
				ut_io_counters c;
				ut_options o;
				ut_db *db;
				double t0;
				int rc;

				if (unsupported[pm])
					continue;
				if (crash(path[s], sizes[s],
					  (unsigned)(r * 31 + s * 7 + m + 1), protects[pm])) {
					printf("%s: refused here (UT_ENOTSUP): skipped\n",
					       ut_protect_name(protects[pm]));
					unsupported[pm] = 1;
					continue;
				}
				drop_caches(path[s]);
				if (m)
					setenv("UT_RECOVERY_FULL_SCAN", "1", 1);
				ut_options_default(&o);
				o.cache_bytes = cache;
				o.protect = protects[pm];
				t0 = now();
				if ((rc = ut_open(path[s], &o, &db)))
					die("timed open", rc);
				secs[s][m][pm][r] = now() - t0;
				unsetenv("UT_RECOVERY_FULL_SCAN");
				ut_pager_counters_copy(ut_db_pager(db), &c);
				if ((rc = ut_close(db)))
					die("close", rc);
				if (getloadavg(la, 1) < 1)
					la[0] = 0;
				printf("round %d  %6llu MiB  %-9s  %-11s  open %7.3f s  "
				       "evidence reads %8llu  redo reads %6llu  "
				       "page writes %6llu  dw writes %6llu  syncs %5llu  "
				       "bound writes %4llu  load %.2f\n",
				       r + 1, (unsigned long long)(sizes[s] >> 20), mode[m],
				       ut_protect_name(protects[pm]), secs[s][m][pm][r], (unsigned long long)c.scan_reads,
				       (unsigned long long)c.page_reads,
				       (unsigned long long)c.page_writes,
				       (unsigned long long)c.dw_page_writes,
				       (unsigned long long)c.syncs,
				       (unsigned long long)c.bound_writes, la[0]);
			}
	printf("\n| evidence | size | protection | log past the checkpoint | "
	       "median open (recovery) s | vs the first size |\n"
	       "|---|---:|---|---:|---:|---:|\n");
	for (int m = mode_lo; m <= mode_hi; m++)
	for (int pm = 0; pm < nprotect; pm++) {
		double first = median(secs[0][m][pm], rounds);

		if (unsupported[pm])
			continue;
		for (int s = 0; s < nsizes; s++) {
			double med = median(secs[s][m][pm], rounds);

			printf("| %s | %llu MiB | %s | %llu MiB | %.3f | %.2fx |\n",
			       mode[m], (unsigned long long)(sizes[s] >> 20),
			       ut_protect_name(protects[pm]),
			       (unsigned long long)(log_bytes >> 20), med, med / first);
		}
	}
	for (int s = 0; s < nsizes && !keep; s++)
		remove_db(path[s]);
	return 0;
}

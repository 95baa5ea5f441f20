/*
 * bench/bench_durable.c - durable commits: what each torn-page protection
 * costs, side by side with SQLite (and LMDB, RocksDB when built with them),
 * on one filesystem, in one run.
 *
 * Workloads (-W; keys from the seed, 16-byte keys, 100-byte values new to
 * every run, run_nonce):
 *   update   (default) single-put transactions (begin, put of a random
 *            existing key with a new value, commit) with sync=1.  With the
 *            data several times the cache (-s >> -c) page flushing
 *            (eviction + checkpoints) dominates, not just the log (issue 11
 *            workload 1; with --threads, workload 2); with the data in the
 *            cache (-c > -s) it measures the log and checkpoints (workload 3).
 *   load     bulk load into an empty database: transactions of -b puts
 *            (keys in the preload's random order) with sync=1, for -t
 *            seconds or until every key is in (workload 4).  ops = keys.
 *   mix      -g percent (default 90) single-get read transactions, the rest
 *            single-put sync=1 transactions (workload 5).  ops = gets + puts.
 *   Each runs T seconds (-t) or N operations (-n) after a warm-up (-w
 *   seconds, not counted), with K threads (--threads, default 1).
 *
 * Preload (update, mix): D bytes of data (-s, default 1 GiB): D / 116 keys,
 * random order, done ONCE per engine family.  untorn is preloaded in one
 * transaction (--preload-txn N: N puts each) with UT_PROTECT_UNSAFE,
 * sync=0, a cache holding the whole tree and the automatic checkpoint out
 * of the way (engine/db.h ut_db_set_checkpoint_bytes), then ut_close
 * (checkpoint: every page in the data file, the log reclaimed).  Each
 * mode opens a byte copy.  SQLite is loaded in one transaction with
 * journal_mode=OFF, switched to WAL, checkpointed, closed; LMDB with
 * MDB_NOSYNC, then mdb_env_sync; RocksDB without its WAL, then a memtable
 * flush.  Every run gets its own copy, fdatasync'ed and dropped
 * from the OS page cache (POSIX_FADV_DONTNEED), so each starts cold.
 * --no-copy (for a slow, throttled disk where copies cost more than the
 * runs): the runs open the preloaded files themselves, each continuing from
 * the clean close of the one before (updates overwrite existing keys, so the
 * data stays the same size), dropped from the page cache before each run;
 * the preloads are named by their key count and seed, kept, and reused by
 * a later invocation with the same -d, -s and --seed.
 *
 * Systems (-m, in this order within a round; --rounds R repeats the list R
 * times, interleaved, after one preload):
 *   doublewrite, fullpage, unsafe, atomic   untorn with that protection
 *            (atomic: "n/a" with the engine's reason where statx reports no
 *            16 KiB unit; fullpage: page images in the log, whose count per
 *            commit the notes give as "images/c")
 *   sqlite   WAL, synchronous=FULL, page_size 16384, WITHOUT ROWID, upsert
 *            through INSERT ... ON CONFLICT DO UPDATE, cache -c (split over
 *            the threads' connections); writers serialized by an
 *            application mutex (SQLite has one writer; no group commit)
 *   lmdb     default durable commits (no MDB_NOSYNC/NOMETASYNC), memory map
 *            (no cache bound: the OS page cache holds the data)
 *   rocksdb  WAL with sync=true per write, write_buffer_size = -c, LRU block
 *            cache -c
 *
 * Figures per run (measured interval only; close excluded):
 *   ops/s, commits (durable transactions), p50/p99/p99.9 latency of one
 *   transaction in microseconds; at the device (the block device holding -d,
 *   from /sys/dev/block/MAJ:MIN/stat, or the stat files listed in
 *   BENCH_DEVSTAT: what the filesystem and engine really sent): bytes
 *   written, write requests, flushes, and read requests (table only, "dev
 *   r/c"); untorn's own counters (ut_stats): in-place page bytes,
 *   double-write bytes, log bytes, syncs;
 *   SQLite's from a counting VFS shim: main-file bytes (its checkpoints) as
 *   page bytes, -wal bytes as log bytes, xSync calls as syncs; peak RSS of
 *   the child process running it (VmHWM, reset at its start); the share of
 *   the machine's CPU time that was busy (/proc/stat; in the VM: is it the
 *   guest CPUs or the disk that sets the pace).
 * BENCH_THROTTLE=BPS,IOPS (environment): untorn's files pass the VM
 * benchmark's write throttle, modelled on the host (throttle_vfs.h), with
 * atomic writes faked where the host has none: the VM's latencies from
 * the device's side, for a quick look before a VM run.
 * Each run is a child process.  Output: a Markdown table on stdout and, per
 * run, one machine-readable line (--csv, or always with --rounds):
 *   csv,round,workload,system,threads,ops,commits,secs,ops_s,p50_us,p99_us,
 *   p999_us,dev_wbytes,dev_wreqs,dev_flushes,page_bytes,dw_bytes,log_bytes,
 *   syncs,rss_kib,cpu_busy,note,recover_s
 * (recover_s last, so that older CSVs read the same; empty without
 * --recover)
 * (bench/raw_atomic.c prints the same columns for the raw-device ceiling).
 *
 * Group-commit table (--threads L without -m): untorn with -p (default
 * doublewrite), K threads for each K in L: commits/s, syncs/commit (all
 * fdatasyncs) and log syncs/commit (the log's own, from ut_wal_stats).
 *
 *   bench_durable [--quick] [-s SIZE] [-c CACHE_MIB] [-t SECS] [-n OPS]
 *                 [-w WARMUP_SECS] [-d DIR] [-m SYSTEMS] [-k] [-W WORKLOAD]
 *                 [-b BATCH] [-g GET_PCT] [--rounds R] [--csv]
 *                 [--threads LIST] [-p PROTECT] [--seed N] [--no-copy]
 *                 [--warm-round] [--ckpt-sweep LIST] [--recover]
 *
 * Recovery after a kill (--recover): every run ends without a close (the
 * child exits with the engine's threads running: what SIGKILL leaves),
 * then a fresh child opens the killed files, out of the page cache, and
 * the time from the open to the first read's answer is the run's
 * "recov s" (CSV recover_s): untorn's evidence check, redo from the last
 * checkpoint and recovery's checkpoint; SQLite's WAL index rebuilt from
 * the -wal.  It depends on the log since the last checkpoint, so on the
 * checkpoint interval (--ckpt-sweep); bench_recovery measures it at a
 * chosen log length.
 *
 * Checkpoint-interval sweep (--ckpt-sweep 4M,16M,64M,256M): every untorn
 * system runs once per interval (the log bytes between automatic
 * checkpoints, engine/db.h ut_db_set_checkpoint_bytes; default 64 MiB),
 * named "MODE ckpt=SIZE" in the table and "MODE@SIZE" in the CSV's system
 * column; the peers run once.  Full-page writes cost less with a longer
 * interval (fewer first changes after a checkpoint), double-write does not
 * depend on it: the sweep shows where the two cross.
 *   --quick = -s 64M -c 16 -t 10 -w 2
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>
#ifdef UT_BENCH_LMDB
#include <lmdb.h>
#endif
#ifdef UT_BENCH_ROCKSDB
#include <rocksdb/c.h>
#endif

#include "child.h"
#include "sysstat.h"
#include "untorn.h"
#include "db.h"  /* ut_db_set_checkpoint_bytes (preload), ut_db_wal */
#include "wal.h" /* ut_wal_stats_get: log syncs apart from page-flush syncs */
#include "throttle_vfs.h" /* BENCH_THROTTLE */

#define KEY_LEN 16
#define VAL_LEN 100
#define MAX_THREADS 64

enum workload { W_UPDATE, W_LOAD, W_MIX };
static const char *const wl_names[] = { "update", "load", "mix" };

struct cfg {
	uint64_t data_bytes;
	long nkeys;
	size_t cache_mib;
	double secs;        /* measured interval (if ops == 0) */
	long ops;           /* measured operations (overrides secs) */
	double warmup;
	const char *dir;
	const char *modes;
	int modes_given;
	int keep;
	int threads[8];
	int nthreads;       /* --threads given */
	enum ut_protect gc_protect;
	uint64_t seed;
	enum workload wl;
	long batch;         /* load: puts per transaction */
	int get_pct;        /* mix: share of gets */
	int rounds;
	int csv;
	int no_copy;        /* runs use the preloaded files themselves */
	int warm_round;     /* a round 0 first, printed, not meant to be counted */
	long preload_txn;   /* puts per untorn preload transaction; 0: one */
	uint64_t ckpt[8];   /* --ckpt-sweep: checkpoint intervals, bytes */
	int nckpt;
	uint64_t ckpt_bytes; /* this run's interval (0: the engine's default) */
	int recover;        /* --recover: each run ends in a kill, recovery timed */
};

struct result {
	int ok;
	int na;              /* mode not available on this stack */
	long ops;            /* operations (puts, gets, loaded keys) */
	long commits;        /* durable write transactions */
	double secs;
	double page_bytes, dw_bytes, log_bytes, syncs; /* engine totals over the run */
	double log_syncs;    /* of syncs, the log's fdatasyncs (ut_wal_stats) */
	double dev_wbytes, dev_wreqs, dev_flushes;     /* block device, over the run */
	double dev_rreqs;                              /* (table only, not in the CSV) */
	double p50_us, p99_us, p999_us, max_us;
	double rss_kib;      /* peak RSS of the child */
	double images;       /* untorn: page images logged (fullpage) */
	double cpu_busy;     /* share of the machine's CPU time busy (/proc/stat) */
	double frame_waits;  /* untorn: waits for the page cleaner */
	double recover_s;    /* --recover: open after the kill to the first read */
	int recovered;       /* recover_s was measured */
	char note[256];
};

/* ------------------------------------------------------------ workload */

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Key i: 16 pseudo-random bytes, distinct for distinct i (the first 8 are
 * a bijection of i: multiply by an odd constant and xor-shift both invert). */
static void make_key(uint64_t seed, long i, unsigned char *k)
{
	uint64_t x = (uint64_t)i ^ seed, b = mix64(seed + (uint64_t)i);

	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 29;
	memcpy(k, &x, 8);
	memcpy(k + 8, &b, 8);
}

static void make_val(long i, uint64_t version, unsigned char *v)
{
	uint64_t s = mix64((uint64_t)i * 31 + version);

	for (int j = 0; j < VAL_LEN; j += 8) {
		s = mix64(s);
		memcpy(v + j, &s, (VAL_LEN - j) < 8 ? (size_t)(VAL_LEN - j) : 8);
	}
}

struct rng { uint64_t s; };
static uint64_t rnd(struct rng *r) { return mix64(r->s++); }
static long rnd_below(struct rng *r, long n) { return (long)(rnd(r) % (uint64_t)n); }

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* latencies */

/* latencies */
struct lat { float *v; size_t n, cap; };
static void lat_add(struct lat *l, double us)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 65536;
		float *nv = realloc(l->v, nc * sizeof(*nv));

		if (!nv)
			return;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n++] = (float)us;
}
static int fcmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}
static void lat_done(struct lat *l, struct result *r)
{
	if (!l->n)
		return;
	qsort(l->v, l->n, sizeof(float), fcmp);
	r->p50_us = l->v[l->n / 2];
	r->p99_us = l->v[(size_t)((double)l->n * 0.99)];
	r->p999_us = l->v[(size_t)((double)l->n * 0.999)];
	r->max_us = l->v[l->n - 1];
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ------------------------------------------------------------ device, RSS */

/* The block device holding dir: /sys/dev/block/MAJ:MIN/stat (a partition's
 * stat has the same fields). */

/* BENCH_DEVSTAT (colon-separated stat files, summed) names the devices
 * when st_dev does not: XFS realtime file data lives on the rt device. */
static void devstat_read(const char *dir, struct devstat *d)
{
	const char *list = getenv("BENCH_DEVSTAT");
	char p[256];

	memset(d, 0, sizeof(*d));
	if (list && *list) {
		for (const char *s = list, *e; *s; s = *e ? e + 1 : e) {
			e = s + strcspn(s, ":");
			snprintf(p, sizeof(p), "%.*s", (int)(e - s), s);
			devstat_add(p, d);
		}
		return;
	}
	devstat_path(dir, p, sizeof(p));
	devstat_add(p, d);
}

static void rss_reset(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, "5", 1) != 1) { /* peak RSS stays process-lifetime */ }
		close(fd);
	}
}

static double rss_peak_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	double v = 0;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			v = atof(line + 6);
	if (f)
		fclose(f);
	return v;
}


/* ------------------------------------------------------------ files */

static void path_of(const struct cfg *c, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", c->dir, name);
}

static const char *const companions[] = { "", "-wal", "-dw", "-shm", "-journal", "-lock" };

/* Remove a directory's files and the directory (RocksDB keeps a flat one). */
static void remove_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char p[4600];

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(path);
}

static int is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void remove_db(const char *path)
{
	char p[4200];

	if (is_dir(path)) {
		remove_dir(path);
		return;
	}

	for (size_t i = 0; i < sizeof(companions) / sizeof(companions[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", path, companions[i]);
		unlink(p);
	}
}

static int exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

static void drop_cache(const char *p)
{
	int fd = open(p, O_RDONLY);

	if (fd < 0)
		return;
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out;
	static char buf[1 << 20];
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	fdatasync(out);
	posix_fadvise(out, 0, 0, POSIX_FADV_DONTNEED);
	close(out);
	close(in);
	return n < 0 ? -1 : 0;
}

/* Copy DB and its "-wal" (if any) to a fresh path; both dropped from cache. */
static int copy_db(const char *from, const char *to)
{
	char a[4600], b[4600];

	remove_db(to);
	if (is_dir(from)) {	/* RocksDB: every file of the directory */
		DIR *d = opendir(from);
		struct dirent *e;
		int rc = 0;

		if (!d || mkdir(to, 0755)) {
			if (d)
				closedir(d);
			return -1;
		}
		while (!rc && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(a, sizeof(a), "%s/%s", from, e->d_name);
				snprintf(b, sizeof(b), "%s/%s", to, e->d_name);
				rc = copy_file(a, b);
				drop_cache(a);
			}
		closedir(d);
		return rc;
	}
	if (copy_file(from, to))
		return -1;
	snprintf(a, sizeof(a), "%s-wal", from);
	snprintf(b, sizeof(b), "%s-wal", to);
	if (exists(a) && copy_file(a, b))
		return -1;
	drop_cache(from);
	return 0;
}

/* the files of a database (a RocksDB directory's too) out of the page cache */
static void drop_db_cache(const char *path)
{
	char a[4600];

	if (is_dir(path)) {
		DIR *d = opendir(path);
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.') {
				snprintf(a, sizeof(a), "%s/%s", path, e->d_name);
				drop_cache(a);
			}
		if (d)
			closedir(d);
		return;
	}
	for (size_t i = 0; i < sizeof(companions) / sizeof(companions[0]); i++) {
		snprintf(a, sizeof(a), "%s%s", path, companions[i]);
		drop_cache(a);
	}
}

static long long file_size(const char *p)
{
	struct stat st;

	if (is_dir(p)) {
		DIR *d = opendir(p);
		struct dirent *e;
		long long sum = 0;
		char q[4600];

		while (d && (e = readdir(d))) {
			snprintf(q, sizeof(q), "%s/%s", p, e->d_name);
			if (e->d_name[0] != '.' && stat(q, &st) == 0)
				sum += (long long)st.st_size;
		}
		if (d)
			closedir(d);
		return sum;
	}
	return stat(p, &st) ? 0 : (long long)st.st_size;
}

#define FAIL(r, ...) do { snprintf((r)->note, sizeof((r)->note), __VA_ARGS__); \
		return -1; } while (0)

/* ------------------------------------------------------------ preload */

/* Preload only: a cache that holds the whole tree (2x the data, at least
 * 256 MiB, at most 4 GiB), so loading random keys is not an exercise in
 * eviction.  The measured runs get -c. */
static size_t preload_cache(const struct cfg *c)
{
	uint64_t b = c->data_bytes * 2;

	if (b < (256ull << 20))
		b = 256ull << 20;
	if (b > (4ull << 30))
		b = 4ull << 30;
	return (size_t)b;
}

static int preload_untorn(const struct cfg *c, const char *path)
{
	ut_options o;
	ut_db *db;
	ut_txn *t = NULL;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	const long batch = c->preload_txn > 0 ? c->preload_txn : c->nkeys;
	double t0 = now();
	int rc;

	remove_db(path);
	ut_options_default(&o);
	o.protect = UT_PROTECT_UNSAFE;
	o.sync = 0;
	o.cache_bytes = preload_cache(c);
	if ((rc = ut_open(path, &o, &db))) {
		fprintf(stderr, "preload untorn: open: %s: %s\n", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	/* one checkpoint, at close: no rewrite of the tree per 64 MiB of log */
	ut_db_set_checkpoint_bytes(db, 1ull << 40);
	for (long i = 0; i < c->nkeys; i++) {
		if (!t && (rc = ut_begin(db, 0, &t)))
			break;
		make_key(c->seed, i, k);
		make_val(i, 0, v);
		if ((rc = ut_put(t, k, KEY_LEN, v, VAL_LEN)))
			break;
		if ((i + 1) % batch == 0 || i + 1 == c->nkeys) {
			rc = ut_commit(t);
			t = NULL;
			if (rc)
				break;
		}
	}
	if (rc) {
		fprintf(stderr, "preload untorn: %s: %s\n", ut_strerror(rc), ut_errdetail());
		if (t)
			ut_abort(t);
		ut_close(db);
		return -1;
	}
	if ((rc = ut_close(db))) {
		fprintf(stderr, "preload untorn: close: %s: %s\n", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	fprintf(stderr, "preload untorn: %ld keys in %.1f s, file %.1f MiB\n",
		c->nkeys, now() - t0, file_size(path) / 1048576.0);
	if (c->no_copy) {
		/* The runs use this file itself: let doublewrite's first run not
		 * pay for creating the "-dw" file.  Open it in doublewrite mode,
		 * update keys spread over most leaves (sync=0), close: the closing
		 * checkpoint writes those pages through every double-write slot. */
		t0 = now();
		o.protect = UT_PROTECT_DOUBLEWRITE;
		if ((rc = ut_open(path, &o, &db))) {
			fprintf(stderr, "preload untorn: prime -dw: %s: %s\n", ut_strerror(rc),
				ut_errdetail());
			return -1;
		}
		for (long i = 0; i < 1000 && !rc; i++) {
			long j = (long)(mix64(c->seed + 99 + (uint64_t)i) % (uint64_t)c->nkeys);

			make_key(c->seed, j, k);
			make_val(j, 0, v);
			if (!(rc = ut_begin(db, 0, &t)) && !(rc = ut_put(t, k, KEY_LEN, v, VAL_LEN)))
				rc = ut_commit(t);
		}
		if (rc || (rc = ut_close(db))) {
			fprintf(stderr, "preload untorn: prime -dw: %s: %s\n", ut_strerror(rc),
				ut_errdetail());
			return -1;
		}
		fprintf(stderr, "preload untorn: -dw primed (1000 updates, doublewrite close) in %.1f s\n",
			now() - t0);
	}
	return 0;
}

static int sq_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "sqlite: %s: %s\n", sql, err ? err : "?");
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

static int preload_sqlite(const struct cfg *c, const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *ins;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	char sql[128];
	double t0 = now();

	remove_db(path);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%zu", preload_cache(c) >> 10);
	/* loaded in one transaction without a journal (the cache holds it all),
	 * then switched to WAL, which the file remembers */
	if (sq_exec(db, "PRAGMA page_size=16384") ||
	    sq_exec(db, "PRAGMA journal_mode=OFF") ||
	    sq_exec(db, "PRAGMA synchronous=OFF") || sq_exec(db, sql) ||
	    sq_exec(db, "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID"))
		return -1;
	if (sqlite3_prepare_v2(db, "INSERT INTO kv(k, v) VALUES(?1, ?2)", -1, &ins, NULL))
		return -1;
	sq_exec(db, "BEGIN");
	for (long i = 0; i < c->nkeys; i++) {
		make_key(c->seed, i, k);
		make_val(i, 0, v);
		sqlite3_bind_blob(ins, 1, k, KEY_LEN, SQLITE_STATIC);
		sqlite3_bind_blob(ins, 2, v, VAL_LEN, SQLITE_STATIC);
		if (sqlite3_step(ins) != SQLITE_DONE) {
			fprintf(stderr, "sqlite preload: %s\n", sqlite3_errmsg(db));
			return -1;
		}
		sqlite3_reset(ins);
	}
	sq_exec(db, "COMMIT");
	sqlite3_finalize(ins);
	if (sq_exec(db, "PRAGMA journal_mode=WAL") ||
	    sq_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)"))
		return -1;
	sqlite3_close(db);
	fprintf(stderr, "preload sqlite: %ld keys in %.1f s, file %.1f MiB\n",
		c->nkeys, now() - t0, file_size(path) / 1048576.0);
	return 0;
}


/* A VFS shim counting bytes written per file kind and syncs. */
static sqlite3_vfs *base_vfs;
static uint64_t cnt_main_bytes, cnt_wal_bytes, cnt_other_bytes, cnt_syncs;

struct cfile {
	sqlite3_file base;
	int kind; /* 0 main, 1 wal, 2 other */
	sqlite3_file *real;
};

static int c_close(sqlite3_file *f)
{
	struct cfile *p = (struct cfile *)f;
	int rc = p->real->pMethods ? p->real->pMethods->xClose(p->real) : SQLITE_OK;

	sqlite3_free(p->real);
	return rc;
}
#define REAL(f) (((struct cfile *)(f))->real)
static int c_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{ return REAL(f)->pMethods->xRead(REAL(f), b, n, o); }
static int c_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
	struct cfile *p = (struct cfile *)f;

	/* threads (--threads) share the counters */
	__atomic_fetch_add(p->kind == 0 ? &cnt_main_bytes : p->kind == 1 ?
			   &cnt_wal_bytes : &cnt_other_bytes, (uint64_t)n,
			   __ATOMIC_RELAXED);
	return p->real->pMethods->xWrite(p->real, b, n, o);
}
static int c_trunc(sqlite3_file *f, sqlite3_int64 s)
{ return REAL(f)->pMethods->xTruncate(REAL(f), s); }
static int c_sync(sqlite3_file *f, int fl)
{ __atomic_fetch_add(&cnt_syncs, 1, __ATOMIC_RELAXED); return REAL(f)->pMethods->xSync(REAL(f), fl); }
static int c_size(sqlite3_file *f, sqlite3_int64 *s)
{ return REAL(f)->pMethods->xFileSize(REAL(f), s); }
static int c_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int c_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int c_check(sqlite3_file *f, int *o)
{ return REAL(f)->pMethods->xCheckReservedLock(REAL(f), o); }
static int c_fctl(sqlite3_file *f, int op, void *a)
{ return REAL(f)->pMethods->xFileControl(REAL(f), op, a); }
static int c_sect(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int c_dev(sqlite3_file *f)
{ return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int c_shmmap(sqlite3_file *f, int i, int sz, int e, void volatile **pp)
{ return REAL(f)->pMethods->xShmMap(REAL(f), i, sz, e, pp); }
static int c_shmlock(sqlite3_file *f, int o, int n, int fl)
{ return REAL(f)->pMethods->xShmLock(REAL(f), o, n, fl); }
static void c_shmbar(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int c_shmunmap(sqlite3_file *f, int d)
{ return REAL(f)->pMethods->xShmUnmap(REAL(f), d); }

static const sqlite3_io_methods c_methods = {
	2, c_close, c_read, c_write, c_trunc, c_sync, c_size, c_lock, c_unlock,
	c_check, c_fctl, c_sect, c_dev, c_shmmap, c_shmlock, c_shmbar, c_shmunmap,
	NULL, NULL,
};

static int c_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags,
		  int *out)
{
	struct cfile *p = (struct cfile *)f;
	int rc;

	(void)v;
	p->real = sqlite3_malloc(base_vfs->szOsFile);
	if (!p->real)
		return SQLITE_NOMEM;
	memset(p->real, 0, (size_t)base_vfs->szOsFile);
	p->kind = (flags & SQLITE_OPEN_MAIN_DB) ? 0 : (flags & SQLITE_OPEN_WAL) ? 1 : 2;
	rc = base_vfs->xOpen(base_vfs, name, p->real, flags, out);
	if (rc != SQLITE_OK || !p->real->pMethods) {
		sqlite3_free(p->real);
		p->real = NULL;
		p->base.pMethods = NULL;
		return rc;
	}
	p->base.pMethods = &c_methods;
	return rc;
}

static sqlite3_vfs count_vfs;

static void register_count_vfs(void)
{
	if (base_vfs)
		return;
	base_vfs = sqlite3_vfs_find(NULL);
	count_vfs = *base_vfs;
	count_vfs.zName = "count";
	count_vfs.szOsFile = (int)sizeof(struct cfile);
	count_vfs.xOpen = c_open;
	count_vfs.pNext = NULL;
	sqlite3_vfs_register(&count_vfs, 0);
}

/* ------------------------------------------------------------ peer preloads */

#ifdef UT_BENCH_LMDB
static size_t lmdb_mapsize(const struct cfg *c)
{
	return (size_t)(c->data_bytes * 4 + (256ull << 20));
}

static int preload_lmdb(const struct cfg *c, const char *path)
{
	MDB_env *env;
	MDB_txn *t = NULL;
	MDB_dbi dbi;
	MDB_val mk, mv;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	char lock[4200];
	double t0 = now();
	int rc;

	remove_db(path);
	if ((rc = mdb_env_create(&env)) || (rc = mdb_env_set_mapsize(env, lmdb_mapsize(c))) ||
	    (rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOMETASYNC, 0644)) ||
	    (rc = mdb_txn_begin(env, NULL, 0, &t)) || (rc = mdb_dbi_open(t, NULL, 0, &dbi))) {
		fprintf(stderr, "preload lmdb: %s\n", mdb_strerror(rc));
		return -1;
	}
	for (long i = 0; i < c->nkeys; i++) {
		if (!t && (rc = mdb_txn_begin(env, NULL, 0, &t)))
			break;
		make_key(c->seed, i, k);
		make_val(i, 0, v);
		mk.mv_size = KEY_LEN;
		mk.mv_data = k;
		mv.mv_size = VAL_LEN;
		mv.mv_data = v;
		if ((rc = mdb_put(t, dbi, &mk, &mv, 0)))
			break;
		if ((i + 1) % 10000 == 0 || i + 1 == c->nkeys) {
			rc = mdb_txn_commit(t);
			t = NULL;
			if (rc)
				break;
		}
	}
	if (t)
		mdb_txn_abort(t);
	if (rc || (rc = mdb_env_sync(env, 1))) {
		fprintf(stderr, "preload lmdb: %s\n", mdb_strerror(rc));
		mdb_env_close(env);
		return -1;
	}
	mdb_env_close(env);
	snprintf(lock, sizeof(lock), "%s-lock", path);
	unlink(lock);
	fprintf(stderr, "preload lmdb: %ld keys in %.1f s, file %.1f MiB\n",
		c->nkeys, now() - t0, file_size(path) / 1048576.0);
	return 0;
}
#endif

#ifdef UT_BENCH_ROCKSDB
struct rks {
	rocksdb_t *db;
	rocksdb_options_t *o;
	rocksdb_block_based_table_options_t *bo;
	rocksdb_cache_t *cache;
	rocksdb_writeoptions_t *wo;
	rocksdb_readoptions_t *ro;
};

/* memtable = the cache budget (-c), LRU block cache -c, 2 memtables */
static int rks_open(const struct cfg *c, const char *path, int create, size_t membuf,
		    struct rks *x, char *err, size_t errlen)
{
	char *e = NULL;

	memset(x, 0, sizeof(*x));
	x->o = rocksdb_options_create();
	x->bo = rocksdb_block_based_options_create();
	x->cache = rocksdb_cache_create_lru(c->cache_mib << 20);
	rocksdb_block_based_options_set_block_cache(x->bo, x->cache);
	rocksdb_options_set_block_based_table_factory(x->o, x->bo);
	rocksdb_options_set_create_if_missing(x->o, create);
	rocksdb_options_set_write_buffer_size(x->o, membuf);
	rocksdb_options_set_max_write_buffer_number(x->o, 2);
	x->wo = rocksdb_writeoptions_create();
	x->ro = rocksdb_readoptions_create();
	x->db = rocksdb_open(x->o, path, &e);
	if (e) {
		snprintf(err, errlen, "rocksdb_open: %s", e);
		rocksdb_free(e);
		return -1;
	}
	return 0;
}

static void rks_close(struct rks *x)
{
	if (x->db)
		rocksdb_close(x->db);
	rocksdb_writeoptions_destroy(x->wo);
	rocksdb_readoptions_destroy(x->ro);
	rocksdb_options_destroy(x->o);
	rocksdb_block_based_options_destroy(x->bo);
	rocksdb_cache_destroy(x->cache);
}

static int preload_rocksdb(const struct cfg *c, const char *path)
{
	struct rks x;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
	unsigned char k[KEY_LEN], v[VAL_LEN];
	char err[512], *e = NULL;
	double t0 = now();

	remove_db(path);
	if (rks_open(c, path, 1, 64 << 20, &x, err, sizeof(err))) {
		fprintf(stderr, "preload rocksdb: %s\n", err);
		return -1;
	}
	rocksdb_writeoptions_disable_WAL(x.wo, 1);
	for (long i = 0; i < c->nkeys && !e; i++) {
		make_key(c->seed, i, k);
		make_val(i, 0, v);
		rocksdb_writebatch_put(wb, (const char *)k, KEY_LEN, (const char *)v, VAL_LEN);
		if ((i + 1) % 10000 == 0 || i + 1 == c->nkeys) {
			rocksdb_write(x.db, x.wo, wb, &e);
			rocksdb_writebatch_clear(wb);
		}
	}
	if (!e) {
		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(x.db, fo, &e);
	}
	rocksdb_flushoptions_destroy(fo);
	rocksdb_writebatch_destroy(wb);
	rks_close(&x);
	if (e) {
		fprintf(stderr, "preload rocksdb: %s\n", e);
		rocksdb_free(e);
		return -1;
	}
	fprintf(stderr, "preload rocksdb: %ld keys in %.1f s, files %.1f MiB\n",
		c->nkeys, now() - t0, file_size(path) / 1048576.0);
	return 0;
}
#endif

/* ------------------------------------------------------------ systems */

struct sys;
struct sysdef {
	const char *key, *name;
	int family;              /* preload and file: 0 untorn, 1 sqlite, 2 lmdb, 3 rocksdb */
	enum ut_protect prot;    /* untorn */
	int (*open)(struct sys *s);
	void *(*thr_open)(struct sys *s);          /* NULL on failure */
	void (*thr_close)(struct sys *s, void *tc);
	/* one durable single-put transaction / one read transaction / one
	 * transaction putting keys first..first+n-1 (load); 0 or -1 (s->err) */
	int (*put1)(struct sys *s, void *tc, const unsigned char *k, const unsigned char *v);
	int (*get1)(struct sys *s, void *tc, const unsigned char *k);
	int (*load)(struct sys *s, void *tc, long first, long n);
	/* add sign * the engine's own counters into r (NULL: none) */
	void (*ctrs)(struct sys *s, struct result *r, double sign);
	int (*close)(struct sys *s);
};

struct sys {
	const struct cfg *c;
	const struct sysdef *d;
	const char *path;
	int nth;
	int na;
	void *h;
	unsigned int dbi;        /* LMDB MDB_dbi */
	pthread_mutex_t mu;      /* SQLite: one writer at a time */
	char err[256];
	char note[256];
};

static void sys_err(struct sys *s, const char *fmt, const char *a, const char *b)
{
	snprintf(s->err, sizeof(s->err), fmt, a, b);
}

/* -- untorn */

static int uts_open(struct sys *s)
{
	ut_options o;
	ut_db *db;
	ut_stats st;
	int rc;

	ut_options_default(&o);
	o.protect = s->d->prot;
	o.sync = 1;
	o.create = s->c->wl == W_LOAD;
	o.cache_bytes = s->c->cache_mib << 20;
	if (getenv("BENCH_THROTTLE")) {
		/* BENCH_THROTTLE=BPS,IOPS: the VM's device model on the host
		 * (throttle_vfs.h; untorn only, atomic writes faked) */
		double bps = 0, iops = 0;

		if (sscanf(getenv("BENCH_THROTTLE"), "%lf,%lf", &bps, &iops) != 2 ||
		    bps <= 0 || iops <= 0) {
			sys_err(s, "BENCH_THROTTLE: want BPS,IOPS%s%s", "", "");
			return -1;
		}
		rc = ut_db_open_vfs(throttle_vfs(bps, iops, 1), s->path, &o, &db);
	} else {
		rc = ut_open(s->path, &o, &db);
	}
	if (rc == UT_ENOTSUP || (rc && s->d->prot == UT_PROTECT_ATOMIC)) {
		const char *d = ut_errdetail(), *sx = strstr(d, "statx");

		s->na = 1;
		sys_err(s, "n/a (%s)%s", sx ? sx : *d ? d : ut_strerror(rc), "");
		return -1;
	}
	if (rc) {
		sys_err(s, "open: %s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	s->h = db;
	if (s->c->ckpt_bytes)
		ut_db_set_checkpoint_bytes(db, s->c->ckpt_bytes);
	ut_stats_get(db, &st);
	snprintf(s->note, sizeof(s->note), "%s%s", st.direct_io ? "O_DIRECT" : "buffered",
		 st.uring ? ", io_uring" : "");
	return 0;
}

static void *uts_thr_open(struct sys *s) { return s->h; }
static void uts_thr_close(struct sys *s, void *tc) { (void)s; (void)tc; }

static int uts_put1(struct sys *s, void *tc, const unsigned char *k, const unsigned char *v)
{
	ut_txn *t;
	int rc;

	if ((rc = ut_begin(tc, 0, &t)) || (rc = ut_put(t, k, KEY_LEN, v, VAL_LEN)) ||
	    (rc = ut_commit(t))) {
		sys_err(s, "%s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	return 0;
}

static int uts_get1(struct sys *s, void *tc, const unsigned char *k)
{
	ut_txn *t;
	void *v = NULL;
	size_t vl;
	int rc;

	if ((rc = ut_begin(tc, UT_RDONLY, &t))) {
		sys_err(s, "%s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	rc = ut_get(t, k, KEY_LEN, &v, &vl);
	free(v);
	ut_abort(t);
	if (rc < 0) {
		sys_err(s, "get: %s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	return 0;
}

static int uts_load(struct sys *s, void *tc, long first, long n)
{
	unsigned char k[KEY_LEN], v[VAL_LEN];
	ut_txn *t;
	int rc;

	if ((rc = ut_begin(tc, 0, &t)))
		goto fail;
	for (long i = first; i < first + n; i++) {
		make_key(s->c->seed, i, k);
		make_val(i, 0, v);
		if ((rc = ut_put(t, k, KEY_LEN, v, VAL_LEN))) {
			ut_abort(t);
			goto fail;
		}
	}
	if ((rc = ut_commit(t)))
		goto fail;
	return 0;
fail:
	sys_err(s, "%s: %s", ut_strerror(rc), ut_errdetail());
	return -1;
}

static void uts_ctrs(struct sys *s, struct result *r, double sign)
{
	ut_stats st;
	ut_wal_stats ws;

	ut_stats_get(s->h, &st);
	memset(&ws, 0, sizeof(ws));
	ut_wal_stats_get(ut_db_wal(s->h), &ws);
	r->page_bytes += sign * (double)st.page_writes * UT_PAGE_SIZE;
	r->dw_bytes += sign * (double)st.dw_page_writes * UT_PAGE_SIZE;
	r->log_bytes += sign * (double)st.log_bytes;
	r->syncs += sign * (double)st.syncs;
	r->log_syncs += sign * (double)ws.syncs;
	r->frame_waits += sign * (double)st.frame_waits;
	r->images += sign * (double)st.page_images;
}

static int uts_close(struct sys *s)
{
	int rc = ut_close(s->h);

	if (rc) {
		sys_err(s, "close: %s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	return 0;
}

/* -- SQLite */

struct sqt {
	sqlite3 *db;
	sqlite3_stmt *up, *get;
};

static int sqs_open(struct sys *s)
{
	sqlite3 *db;
	int fl = SQLITE_OPEN_READWRITE;

	register_count_vfs();
	if (s->c->wl == W_LOAD)
		fl |= SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(s->path, &db, fl, "count") != SQLITE_OK) {
		sys_err(s, "sqlite3_open: %s%s", sqlite3_errmsg(db), "");
		sqlite3_close(db);
		return -1;
	}
	if ((s->c->wl == W_LOAD &&
	     (sq_exec(db, "PRAGMA page_size=16384") || sq_exec(db, "PRAGMA journal_mode=WAL") ||
	      sq_exec(db, "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID"))) ||
	    sq_exec(db, "PRAGMA journal_mode=WAL")) {
		sys_err(s, "sqlite setup failed%s%s", "", "");
		sqlite3_close(db);
		return -1;
	}
	s->h = db;
	snprintf(s->note, sizeof(s->note), "SQLite %s, WAL autocheckpoint 1000 pages%s",
		 sqlite3_libversion(), s->nth > 1 ? ", writers behind a mutex" : "");
	return 0;
}

static void *sqs_thr_open(struct sys *s)
{
	struct sqt *q = calloc(1, sizeof(*q));
	char sql[128];

	if (!q)
		return NULL;
	if (sqlite3_open_v2(s->path, &q->db, SQLITE_OPEN_READWRITE, "count") != SQLITE_OK)
		goto fail;
	/* the cache budget is split over the connections */
	snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%zu",
		 s->c->cache_mib * 1024 / (size_t)s->nth);
	sqlite3_busy_timeout(q->db, 60000);
	if (sq_exec(q->db, "PRAGMA synchronous=FULL") || sq_exec(q->db, sql) ||
	    sqlite3_prepare_v2(q->db, "INSERT INTO kv(k, v) VALUES(?1, ?2) "
			       "ON CONFLICT(k) DO UPDATE SET v = excluded.v", -1, &q->up, NULL) ||
	    sqlite3_prepare_v2(q->db, "SELECT v FROM kv WHERE k = ?1", -1, &q->get, NULL))
		goto fail;
	return q;
fail:
	sys_err(s, "sqlite connection: %s%s", q->db ? sqlite3_errmsg(q->db) : "?", "");
	sqlite3_finalize(q->up);
	sqlite3_close(q->db);
	free(q);
	return NULL;
}

static void sqs_thr_close(struct sys *s, void *tc)
{
	struct sqt *q = tc;

	(void)s;
	sqlite3_finalize(q->up);
	sqlite3_finalize(q->get);
	sqlite3_close(q->db);
	free(q);
}

static int sq_upsert(struct sys *s, struct sqt *q, const unsigned char *k,
		     const unsigned char *v)
{
	int rc;

	sqlite3_bind_blob(q->up, 1, k, KEY_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(q->up, 2, v, VAL_LEN, SQLITE_STATIC);
	rc = sqlite3_step(q->up);
	sqlite3_reset(q->up);
	if (rc != SQLITE_DONE) {
		sys_err(s, "upsert: %s%s", sqlite3_errmsg(q->db), "");
		return -1;
	}
	return 0;
}

static int sqs_put1(struct sys *s, void *tc, const unsigned char *k, const unsigned char *v)
{
	int rc;

	/* autocommit: one statement = one transaction */
	pthread_mutex_lock(&s->mu);
	rc = sq_upsert(s, tc, k, v);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static int sqs_get1(struct sys *s, void *tc, const unsigned char *k)
{
	struct sqt *q = tc;
	int rc;

	sqlite3_bind_blob(q->get, 1, k, KEY_LEN, SQLITE_STATIC);
	rc = sqlite3_step(q->get);
	sqlite3_reset(q->get);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		sys_err(s, "select: %s%s", sqlite3_errmsg(q->db), "");
		return -1;
	}
	return 0;
}

static int sqs_load(struct sys *s, void *tc, long first, long n)
{
	struct sqt *q = tc;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	int rc = 0;

	pthread_mutex_lock(&s->mu);
	if (sq_exec(q->db, "BEGIN"))
		rc = -1;
	for (long i = first; !rc && i < first + n; i++) {
		make_key(s->c->seed, i, k);
		make_val(i, 0, v);
		rc = sq_upsert(s, q, k, v);
	}
	if (!rc && sq_exec(q->db, "COMMIT"))
		rc = -1;
	if (rc) {
		sq_exec(q->db, "ROLLBACK");
		if (!s->err[0])
			sys_err(s, "load: %s%s", sqlite3_errmsg(q->db), "");
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static void sqs_ctrs(struct sys *s, struct result *r, double sign)
{
	(void)s;
	r->page_bytes += sign * (double)__atomic_load_n(&cnt_main_bytes, __ATOMIC_RELAXED);
	r->log_bytes += sign * (double)__atomic_load_n(&cnt_wal_bytes, __ATOMIC_RELAXED);
	r->syncs += sign * (double)__atomic_load_n(&cnt_syncs, __ATOMIC_RELAXED);
}

static int sqs_close(struct sys *s)
{
	return sqlite3_close(s->h) == SQLITE_OK ? 0 : -1;
}

/* -- LMDB */
#ifdef UT_BENCH_LMDB
static int lms_open(struct sys *s)
{
	MDB_env *env;
	MDB_txn *t;
	int rc;

	if ((rc = mdb_env_create(&env)))
		goto fail;
	if ((rc = mdb_env_set_mapsize(env, lmdb_mapsize(s->c))) ||
	    (rc = mdb_env_open(env, s->path, MDB_NOSUBDIR, 0644))) {
		mdb_env_close(env);
		goto fail;
	}
	if ((rc = mdb_txn_begin(env, NULL, 0, &t)) || (rc = mdb_dbi_open(t, NULL, 0, &s->dbi)) ||
	    (rc = mdb_txn_commit(t))) {
		mdb_env_close(env);
		goto fail;
	}
	s->h = env;
	snprintf(s->note, sizeof(s->note), "%s, durable commits, memory map (RSS includes it)",
		 mdb_version(NULL, NULL, NULL));
	return 0;
fail:
	sys_err(s, "lmdb open: %s%s", mdb_strerror(rc), "");
	return -1;
}

static void *lms_thr_open(struct sys *s) { return s->h; }
static void lms_thr_close(struct sys *s, void *tc) { (void)s; (void)tc; }

static int lms_put1(struct sys *s, void *tc, const unsigned char *k, const unsigned char *v)
{
	MDB_txn *t;
	MDB_val mk = { KEY_LEN, (void *)k }, mv = { VAL_LEN, (void *)v };
	int rc;

	if ((rc = mdb_txn_begin(tc, NULL, 0, &t)))
		goto fail;
	if ((rc = mdb_put(t, s->dbi, &mk, &mv, 0))) {
		mdb_txn_abort(t);
		goto fail;
	}
	if ((rc = mdb_txn_commit(t)))
		goto fail;
	return 0;
fail:
	sys_err(s, "lmdb put: %s%s", mdb_strerror(rc), "");
	return -1;
}

static int lms_get1(struct sys *s, void *tc, const unsigned char *k)
{
	MDB_txn *t;
	MDB_val mk = { KEY_LEN, (void *)k }, mv;
	int rc;

	if ((rc = mdb_txn_begin(tc, NULL, MDB_RDONLY, &t)))
		goto fail;
	rc = mdb_get(t, s->dbi, &mk, &mv);
	mdb_txn_abort(t);
	if (rc && rc != MDB_NOTFOUND)
		goto fail;
	return 0;
fail:
	sys_err(s, "lmdb get: %s%s", mdb_strerror(rc), "");
	return -1;
}

static int lms_load(struct sys *s, void *tc, long first, long n)
{
	unsigned char k[KEY_LEN], v[VAL_LEN];
	MDB_val mk = { KEY_LEN, k }, mv = { VAL_LEN, v };
	MDB_txn *t;
	int rc;

	if ((rc = mdb_txn_begin(tc, NULL, 0, &t)))
		goto fail;
	for (long i = first; i < first + n; i++) {
		make_key(s->c->seed, i, k);
		make_val(i, 0, v);
		if ((rc = mdb_put(t, s->dbi, &mk, &mv, 0))) {
			mdb_txn_abort(t);
			goto fail;
		}
	}
	if ((rc = mdb_txn_commit(t)))
		goto fail;
	return 0;
fail:
	sys_err(s, "lmdb load: %s%s", mdb_strerror(rc), "");
	return -1;
}

static int lms_close(struct sys *s)
{
	mdb_env_close(s->h);
	return 0;
}
#endif

/* -- RocksDB */
#ifdef UT_BENCH_ROCKSDB
static int rks_sys_open(struct sys *s)
{
	struct rks *x = calloc(1, sizeof(*x));

	if (!x || rks_open(s->c, s->path, s->c->wl == W_LOAD, s->c->cache_mib << 20, x,
			   s->err, sizeof(s->err))) {
		if (x)
			rks_close(x);
		free(x);
		return -1;
	}
	rocksdb_writeoptions_set_sync(x->wo, 1);
	s->h = x;
	snprintf(s->note, sizeof(s->note), "WAL sync=true, memtable %zu MiB, block cache %zu MiB",
		 s->c->cache_mib, s->c->cache_mib);
	return 0;
}

static void *rks_thr_open(struct sys *s) { return s->h; }
static void rks_thr_close(struct sys *s, void *tc) { (void)s; (void)tc; }

static int rks_put1(struct sys *s, void *tc, const unsigned char *k, const unsigned char *v)
{
	struct rks *x = tc;
	char *e = NULL;

	rocksdb_put(x->db, x->wo, (const char *)k, KEY_LEN, (const char *)v, VAL_LEN, &e);
	if (e) {
		sys_err(s, "rocksdb put: %s%s", e, "");
		rocksdb_free(e);
		return -1;
	}
	return 0;
}

static int rks_get1(struct sys *s, void *tc, const unsigned char *k)
{
	struct rks *x = tc;
	char *e = NULL, *v;
	size_t vl;

	v = rocksdb_get(x->db, x->ro, (const char *)k, KEY_LEN, &vl, &e);
	if (e) {
		sys_err(s, "rocksdb get: %s%s", e, "");
		rocksdb_free(e);
		return -1;
	}
	rocksdb_free(v);
	return 0;
}

static int rks_load(struct sys *s, void *tc, long first, long n)
{
	struct rks *x = tc;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	unsigned char k[KEY_LEN], v[VAL_LEN];
	char *e = NULL;

	for (long i = first; i < first + n; i++) {
		make_key(s->c->seed, i, k);
		make_val(i, 0, v);
		rocksdb_writebatch_put(wb, (const char *)k, KEY_LEN, (const char *)v, VAL_LEN);
	}
	rocksdb_write(x->db, x->wo, wb, &e);
	rocksdb_writebatch_destroy(wb);
	if (e) {
		sys_err(s, "rocksdb write: %s%s", e, "");
		rocksdb_free(e);
		return -1;
	}
	return 0;
}

static int rks_sys_close(struct sys *s)
{
	rks_close(s->h);
	free(s->h);
	return 0;
}
#endif

#define UTSYS(k, n, p) { k, n, 0, p, uts_open, uts_thr_open, uts_thr_close, uts_put1, \
		uts_get1, uts_load, uts_ctrs, uts_close }
static const struct sysdef systems[] = {
	UTSYS("doublewrite", "untorn doublewrite", UT_PROTECT_DOUBLEWRITE),
	UTSYS("fullpage", "untorn fullpage", UT_PROTECT_FULLPAGE),
	UTSYS("unsafe", "untorn unsafe", UT_PROTECT_UNSAFE),
	UTSYS("atomic", "untorn atomic", UT_PROTECT_ATOMIC),
	{ "sqlite", "sqlite WAL FULL", 1, 0, sqs_open, sqs_thr_open, sqs_thr_close, sqs_put1,
	  sqs_get1, sqs_load, sqs_ctrs, sqs_close },
#ifdef UT_BENCH_LMDB
	{ "lmdb", "lmdb durable", 2, 0, lms_open, lms_thr_open, lms_thr_close, lms_put1,
	  lms_get1, lms_load, NULL, lms_close },
#endif
#ifdef UT_BENCH_ROCKSDB
	{ "rocksdb", "rocksdb WAL sync", 3, 0, rks_sys_open, rks_thr_open, rks_thr_close,
	  rks_put1, rks_get1, rks_load, NULL, rks_sys_close },
#endif
};
#define NSYSTEMS (sizeof(systems) / sizeof(systems[0]))
static const char *const family_file[] = { "ut", "sqlite", "lmdb", "rocksdb" };

static const struct sysdef *sys_find(const char *key, size_t n)
{
	for (size_t i = 0; i < NSYSTEMS; i++)
		if (strlen(systems[i].key) == n && !strncmp(systems[i].key, key, n))
			return &systems[i];
	return NULL;
}

/* ------------------------------------------------------------ the driver */

struct drv_shared {
	struct sys *s;
	double tend;
	long op_limit;           /* per thread, 0 = none */
	volatile int stop;
	int err;
	long next_key;           /* load: next unloaded key */
};
struct drv_thread {
	struct drv_shared *sh;
	void *tc;
	int id;
	struct rng g;
	uint64_t ver;
	long ops, commits;
	struct lat lat;
	pthread_t th;
};

static void *drv_main(void *arg)
{
	struct drv_thread *me = arg;
	struct drv_shared *sh = me->sh;
	struct sys *s = sh->s;
	const struct cfg *c = s->c;
	unsigned char k[KEY_LEN], v[VAL_LEN];

	while (!sh->stop) {
		double a = now();
		long i, nops = 1, ncommits = 1;
		int rc;

		if (a >= sh->tend || (sh->op_limit && me->ops >= sh->op_limit))
			break;
		if (c->wl == W_LOAD) {
			i = __atomic_fetch_add(&sh->next_key, c->batch, __ATOMIC_RELAXED);
			if (i >= c->nkeys)
				break;
			nops = c->batch < c->nkeys - i ? c->batch : c->nkeys - i;
			rc = s->d->load(s, me->tc, i, nops);
		} else {
			i = rnd_below(&me->g, c->nkeys);
			make_key(c->seed, i, k);
			if (c->wl == W_MIX && rnd_below(&me->g, 100) < c->get_pct) {
				ncommits = 0;
				rc = s->d->get1(s, me->tc, k);
			} else {
				make_val(i, ++me->ver, v);
				rc = s->d->put1(s, me->tc, k, v);
			}
		}
		if (rc) {
			sh->err = 1;
			sh->stop = 1;
			break;
		}
		lat_add(&me->lat, (now() - a) * 1e6);
		me->ops += nops;
		me->commits += ncommits;
	}
	return NULL;
}

/* Where a thread's value versions start: a run must never write a value
 * its key already holds.  Runs share files across rounds, thread counts
 * and invocations (--no-copy), and the key sequence is the seed's, the
 * same in every run: versions counted from a fixed start made later runs
 * rewrite the values earlier ones left, and an engine that skips an
 * update which changes nothing (SQLite does: its commit then writes no
 * frame and syncs nothing) was measured committing without writing.  A
 * random start per run and thread, from the clock: no two runs' versions
 * meet within 2^64, and each version makes a different value. */
static uint64_t run_nonce(int thread)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return mix64(((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
		     ((uint64_t)getpid() << 32) ^ (uint64_t)(thread + 1) * 0x9e3779b97f4a7c15ull);
}

static int run_system(const struct cfg *c, const struct sysdef *d, const char *path,
		      int nth, struct result *r)
{
	struct sys s;
	struct drv_shared sh;
	struct drv_thread *th = calloc((size_t)nth, sizeof(*th));
	struct devstat d0, d1;
	struct lat all = { 0 };
	double t0 = now(), cb0 = 0, ct0 = 0, cb1, ct1;
	int rc = -1, opened = 0;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.d = d;
	s.path = path;
	s.nth = nth;
	pthread_mutex_init(&s.mu, NULL);
	memset(&sh, 0, sizeof(sh));
	sh.s = &s;
	rss_reset();
	if (!th || d->open(&s))
		goto out;
	for (; opened < nth; opened++) {
		th[opened].sh = &sh;
		th[opened].id = opened;
		/* one thread: the same key sequence as before --threads existed */
		th[opened].g.s = nth == 1 ? c->seed * 7 + 1 :
			c->seed * 1000003 + (uint64_t)opened * 7919 + 11;
		th[opened].ver = run_nonce(opened);
		if (!(th[opened].tc = d->thr_open(&s)))
			goto close;
	}
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0 && c->warmup <= 0)
			continue;
		if (pass == 1) {
			devstat_read(c->dir, &d0);
			cpu_read(&cb0, &ct0);
			if (d->ctrs)
				d->ctrs(&s, r, -1);
			for (int i = 0; i < nth; i++) {
				free(th[i].lat.v);
				memset(&th[i].lat, 0, sizeof(th[i].lat));
				th[i].ops = th[i].commits = 0;
			}
		}
		t0 = now();
		sh.tend = pass ? (c->ops ? 1e300 : t0 + c->secs) : t0 + c->warmup;
		sh.op_limit = pass && c->ops ? (c->ops + nth - 1) / nth : 0;
		for (int i = 0; i < nth; i++)
			pthread_create(&th[i].th, NULL, drv_main, &th[i]);
		for (int i = 0; i < nth; i++)
			pthread_join(th[i].th, NULL);
		if (sh.err)
			goto close;
	}
	r->secs = now() - t0;
	devstat_read(c->dir, &d1);
	cpu_read(&cb1, &ct1);
	r->cpu_busy = ct1 > ct0 ? (cb1 - cb0) / (ct1 - ct0) : 0;
	if (d->ctrs)
		d->ctrs(&s, r, 1);
	r->dev_wbytes = d1.wbytes - d0.wbytes;
	r->dev_wreqs = d1.wreqs - d0.wreqs;
	r->dev_flushes = d1.flushes - d0.flushes;
	r->dev_rreqs = d1.rreqs - d0.rreqs;
	for (int i = 0; i < nth; i++) {
		r->ops += th[i].ops;
		r->commits += th[i].commits;
		for (size_t j = 0; j < th[i].lat.n; j++)
			lat_add(&all, th[i].lat.v[j]);
	}
	lat_done(&all, r);
	r->rss_kib = rss_peak_kib();
	rc = 0;
	/* --recover: the handles are left open and the child exits with the
	 * engine's threads running: no close, no checkpoint, what a SIGKILL
	 * leaves (the OS page cache keeps what was written; the parent syncs
	 * and drops it before timing the recovery, as after a reboot) */
	if (c->recover)
		goto out;
close:
	for (int i = 0; i < opened; i++) {
		d->thr_close(&s, th[i].tc);
		free(th[i].lat.v);
	}
	if (d->close(&s) && !rc) {
		rc = -1;
		if (!s.err[0])
			sys_err(&s, "close failed%s%s", "", "");
	}
out:
	r->na = s.na;
	if (!rc && r->frame_waits > 0)
		snprintf(r->note, sizeof(r->note), "%.200s, %.0f waits for the page cleaner",
			 s.note, r->frame_waits);
	else
		snprintf(r->note, sizeof(r->note), "%s", rc ? s.err : s.note);
	free(th);
	return rc;
}

/* ------------------------------------------------------------ children */

struct child_job {
	const struct cfg *c;
	const struct sysdef *d;
	const char *path;
	int nth;
};

static int child_main(void *arg, void *res)
{
	const struct child_job *cj = arg;
	struct result *r = res;

	r->ok = run_system(cj->c, cj->d, cj->path, cj->nth, r) == 0;
	return r->ok ? 0 : -1;
}

static int run_child(const struct cfg *c, const struct sysdef *d, const char *path,
		     int nth, struct result *r)
{
	struct child_job cj = { c, d, path, nth };

	return bench_run_child(child_main, &cj, r, sizeof(*r), r->note,
			       sizeof(r->note));
}

/* --recover: the time to recover after the kill that ended a run: from
 * the open of the killed files (untorn: evidence, redo, its checkpoint;
 * SQLite: the WAL index rebuilt from the -wal at the first read) to the
 * first read's answer, in a fresh process with the files out of the page
 * cache.  The handle is then closed cleanly (not timed), so the next run
 * of --no-copy starts from a clean close as before. */
struct recovery {
	double secs;
	char err[256];
};

static int recover_main(void *arg, void *res)
{
	const struct child_job *cj = arg;
	struct recovery *rv = res;
	unsigned char k[KEY_LEN];
	struct sys s;
	void *tc;
	double t0;
	int rc;

	memset(&s, 0, sizeof(s));
	s.c = cj->c;
	s.d = cj->d;
	s.path = cj->path;
	s.nth = 1;
	pthread_mutex_init(&s.mu, NULL);
	make_key(cj->c->seed, 0, k);
	t0 = now();
	if (cj->d->open(&s)) {
		snprintf(rv->err, sizeof(rv->err), "%s", s.err);
		return -1;
	}
	if (!(tc = cj->d->thr_open(&s))) {
		snprintf(rv->err, sizeof(rv->err), "%s", s.err);
		cj->d->close(&s);
		return -1;
	}
	rc = cj->d->get1(&s, tc, k);
	rv->secs = now() - t0;
	cj->d->thr_close(&s, tc);
	if (cj->d->close(&s) && !rc) {
		rc = -1;
		if (!s.err[0])
			sys_err(&s, "close failed%s%s", "", "");
	}
	if (rc)
		snprintf(rv->err, sizeof(rv->err), "%s", s.err);
	return rc;
}

static void run_recovery(const struct cfg *c, const struct sysdef *d, const char *path,
			 struct result *r)
{
	struct child_job cj = { c, d, path, 1 };
	struct recovery rv;
	size_t len = strlen(r->note);

	drop_db_cache(path);
	if (bench_run_child(recover_main, &cj, &rv, sizeof(rv), rv.err, sizeof(rv.err))) {
		snprintf(r->note + len, sizeof(r->note) - len, "%sRECOVERY FAILED: %.150s",
			 len ? ", " : "", rv.err);
		return;
	}
	r->recover_s = rv.secs;
	r->recovered = 1;
}

/* ------------------------------------------------------------ output */

static void fmt_bytes(char *b, size_t n, double v)
{
	if (v >= 10 * 1024.0 * 1024)
		snprintf(b, n, "%.1f MiB", v / 1048576);
	else if (v >= 10 * 1024.0)
		snprintf(b, n, "%.1f KiB", v / 1024);
	else
		snprintf(b, n, "%.0f B", v);
}

/* 4M, 1G, 65536: a size as --ckpt-sweep takes it */
static void fmt_size(char *b, size_t n, uint64_t v)
{
	if (v % (1ull << 30) == 0)
		snprintf(b, n, "%lluG", (unsigned long long)(v >> 30));
	else if (v % (1ull << 20) == 0)
		snprintf(b, n, "%lluM", (unsigned long long)(v >> 20));
	else if (v % 1024 == 0)
		snprintf(b, n, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(b, n, "%llu", (unsigned long long)v);
}

/* fullpage: the page images per commit, in the notes (the CSV's columns
 * stay as they are; log_bytes holds the images' bytes) */
static void note_images(struct result *r)
{
	size_t len = strlen(r->note);

	if (r->ok && r->images > 0 && r->commits > 0)
		snprintf(r->note + len, sizeof(r->note) - len, "%simages/c %.3f",
			 len ? ", " : "", r->images / (double)r->commits);
}

static void print_header(void)
{
	printf("| %-18s | %3s | %3s | %9s | %9s | %9s | %9s | %7s | %9s | %6s | %7s | %6s | "
	       "%8s | %8s | %8s | %7s | %4s | %7s | %7s | %s |\n",
	       "system", "rnd", "thr", "ops/s", "page B/c", "dw B/c", "log B/c", "syncs/c",
	       "dev B/c", "dev w/c", "flush/c", "dev r/c", "p50 µs", "p99 µs", "p99.9 µs",
	       "RSS MiB", "CPU%", "ops", "recov s", "notes");
	printf("|--------------------|----:|----:|----------:|----------:|----------:|"
	       "----------:|--------:|----------:|-------:|--------:|-------:|---------:|"
	       "---------:|---------:|--------:|-----:|--------:|--------:|---|\n");
}

static void print_row(const char *name, int round, int nth, const struct result *r)
{
	char pb[32], db[32], lb[32], vb[32], rb[32] = "-";
	double n = r->commits ? (double)r->commits : 1;

	if (!r->ok) {
		printf("| %-18s | %3d | %3d | %s |\n", name, round, nth, r->note);
		return;
	}
	fmt_bytes(pb, sizeof(pb), r->page_bytes / n);
	fmt_bytes(db, sizeof(db), r->dw_bytes / n);
	fmt_bytes(lb, sizeof(lb), r->log_bytes / n);
	fmt_bytes(vb, sizeof(vb), r->dev_wbytes / n);
	if (r->recovered)
		snprintf(rb, sizeof(rb), "%.3f", r->recover_s);
	printf("| %-18s | %3d | %3d | %9.0f | %9s | %9s | %9s | %7.3f | %9s | %6.2f | %7.3f | "
	       "%6.2f | %8.0f | %8.0f | %8.0f | %7.1f | %4.0f | %7ld | %7s | %s |\n",
	       name, round, nth, r->ops / r->secs, pb, db, lb, r->syncs / n, vb,
	       r->dev_wreqs / n, r->dev_flushes / n, r->dev_rreqs / n, r->p50_us, r->p99_us,
	       r->p999_us,
	       r->rss_kib / 1024, r->cpu_busy * 100, r->ops, rb, r->note);
}

static void print_csv(const struct cfg *c, const char *key, int round, int nth,
		      const struct result *r)
{
	char note[256], rb[32] = "";

	snprintf(note, sizeof(note), "%s", r->note);
	if (r->recovered)
		snprintf(rb, sizeof(rb), "%.3f", r->recover_s);
	for (char *p = note; *p; p++)
		if (*p == ',' || *p == '\n')
			*p = ';';
	printf("csv,%d,%s,%s,%d,%ld,%ld,%.3f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,"
	       "%.0f,%.0f,%.0f,%.3f,%s,%s\n",
	       round, wl_names[c->wl], key, nth, r->ok ? r->ops : 0, r->ok ? r->commits : 0,
	       r->secs, r->ok && r->secs > 0 ? r->ops / r->secs : 0, r->p50_us, r->p99_us,
	       r->p999_us, r->dev_wbytes, r->dev_wreqs, r->dev_flushes, r->page_bytes,
	       r->dw_bytes, r->log_bytes, r->syncs, r->rss_kib, r->cpu_busy, note, rb);
}

/* ------------------------------------------------------------ main */

static uint64_t parse_size(const char *s)
{
	char *e;
	double v = strtod(s, &e);

	switch (*e) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1048576; break;
	case 'g': case 'G': v *= 1073741824.0; break;
	default: break;
	}
	return (uint64_t)v;
}


static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_durable [--quick] [-s SIZE] [-c CACHE_MIB] [-t SECS] [-n OPS]\n"
		"                     [-w WARMUP] [-d DIR] [-m SYSTEMS] [-k] [-W WORKLOAD]\n"
		"                     [-b BATCH] [-g GET_PCT] [--rounds R] [--csv] [--seed N]\n"
		"                     [--threads LIST] [--ckpt-sweep LIST] [--recover]\n"
		"       bench_durable --threads 1,4,16 [-p PROTECT] [same options]\n"
		"  -s SIZE     data to preload (K/M/G suffix; default 1G = SIZE/116 keys)\n"
		"  -c MIB      cache in the measured runs (default 64)\n"
		"  -t SECS     measured seconds per run (default 30)\n"
		"  -n OPS      measured operations per run instead of -t\n"
		"  -w SECS     warm-up per run, not counted (default 5)\n"
		"  -d DIR      directory for the databases (default .)\n"
		"  -m SYSTEMS  in this order: doublewrite,fullpage,unsafe,atomic,sqlite"
#ifdef UT_BENCH_LMDB
		",lmdb"
#endif
#ifdef UT_BENCH_ROCKSDB
		",rocksdb"
#endif
		"\n"
		"              (default doublewrite,fullpage,unsafe,atomic,sqlite)\n"
		"  -W WL       update (default), load (bulk load, -b puts per sync=1\n"
		"              transaction), mix (-g %% gets, the rest sync=1 puts)\n"
		"  -b N        load: puts per transaction (default 1000)\n"
		"  -g PCT      mix: percent of operations that are gets (default 90)\n"
		"  --rounds R  run the system list R times, interleaved (one preload)\n"
		"  --csv       print a csv line per run (always with --rounds)\n"
		"  -k          keep the database files\n"
		"  --no-copy   runs use the (kept, reused) preloaded files, no copies\n"
		"  --warm-round  run a round 0 first (each system's first run after the\n"
		"              preload), printed as round 0, for the caller to discard\n"
		"  --preload-txn N  puts per transaction of untorn's preload (default:\n"
		"              all in one, as SQLite's)\n"
		"  --quick     -s 64M -c 16 -t 10 -w 2\n"
		"  --ckpt-sweep L  untorn systems once per checkpoint interval in L\n"
		"              (log bytes between checkpoints, K/M/G; e.g. 4M,16M,64M,256M)\n"
		"  --recover   end each run with a kill (no close) and time the recovery:\n"
		"              open of the killed files to the first read, cache dropped\n"
		"  --threads L K threads for each K in L; without -m: the group-commit\n"
		"              table for untorn with -p PROTECT (default doublewrite)\n");
}

static int parse_modes(const char *list, const struct sysdef **out, int max)
{
	int n = 0;

	for (const char *p = list; *p && n < max;) {
		size_t len = strcspn(p, ",");
		const struct sysdef *d = sys_find(p, len);

		if (!d && len) {
			fprintf(stderr, "bench_durable: unknown system '%.*s' (not built in?)\n",
				(int)len, p);
			return -1;
		}
		if (d)
			out[n++] = d;
		p += len;
		if (*p == ',')
			p++;
	}
	return n;
}

static int group_table(const struct cfg *c, const char *upre)
{
	const struct sysdef *d = NULL;
	char p[4096];

	for (size_t i = 0; i < NSYSTEMS; i++)
		if (systems[i].family == 0 && systems[i].prot == c->gc_protect)
			d = &systems[i];
	if (!d) {
		fprintf(stderr, "bench_durable: -p auto has no group table; use -m\n");
		return 1;
	}
	printf("\ngroup commit: untorn %s, sync=1, single-put transactions, "
	       "K threads\n\n", ut_protect_name(c->gc_protect));
	printf("| threads | commits/s | syncs/commit | log syncs/commit | log B/c "
	       "| p50 µs | p99 µs | commits | notes |\n");
	printf("|--------:|----------:|-------------:|-----------------:|--------:"
	       "|-------:|-------:|--------:|---|\n");
	fflush(stdout);
	for (int i = 0; i < c->nthreads; i++) {
		struct result r;

		path_of(c, "durable-run.ut", p, sizeof(p));
		if (copy_db(upre, p)) {
			perror("copy");
			return 1;
		}
		if (run_child(c, d, p, c->threads[i], &r)) {
			printf("| %7d | %s |\n", c->threads[i], r.note);
		} else {
			double n = r.commits ? (double)r.commits : 1;

			printf("| %7d | %9.0f | %12.3f | %16.3f | %7.0f | %6.0f | %6.0f | %7ld | %s |\n",
			       c->threads[i], r.commits / r.secs, r.syncs / n,
			       r.log_syncs / n, r.log_bytes / n, r.p50_us, r.p99_us, r.commits,
			       r.note);
		}
		if (c->csv)
			print_csv(c, d->key, 1, c->threads[i], &r);
		fflush(stdout);
		remove_db(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "quick", no_argument, NULL, 'Q' },
		{ "threads", required_argument, NULL, 'T' },
		{ "rounds", required_argument, NULL, 'R' },
		{ "csv", no_argument, NULL, 'C' },
		{ "seed", required_argument, NULL, 'S' },
		{ "no-copy", no_argument, NULL, 'N' },
		{ "warm-round", no_argument, NULL, 'V' },
		{ "preload-txn", required_argument, NULL, 'P' },
		{ "ckpt-sweep", required_argument, NULL, 'K' },
		{ "recover", no_argument, NULL, 'X' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct cfg c = {
		.data_bytes = 1ull << 30, .cache_mib = 64, .secs = 30, .warmup = 5,
		.dir = ".", .modes = "doublewrite,fullpage,unsafe,atomic,sqlite",
		.gc_protect = UT_PROTECT_DOUBLEWRITE, .seed = 42, .wl = W_UPDATE,
		.batch = 1000, .get_pct = 90, .rounds = 1,
	};
	const struct sysdef *list[16];
	char pre[4][4096], p[4096];
	int need[4] = { 0 }, nsys, opt;

	while ((opt = getopt_long(argc, argv, "s:c:t:n:w:d:m:kp:W:b:g:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'Q':
			c.data_bytes = 64ull << 20;
			c.cache_mib = 16;
			c.secs = 10;
			c.warmup = 2;
			break;
		case 's': c.data_bytes = parse_size(optarg); break;
		case 'c': c.cache_mib = (size_t)atol(optarg); break;
		case 't': c.secs = atof(optarg); break;
		case 'n': c.ops = atol(optarg); break;
		case 'w': c.warmup = atof(optarg); break;
		case 'd': c.dir = optarg; break;
		case 'm': c.modes = optarg; c.modes_given = 1; break;
		case 'k': c.keep = 1; break;
		case 'b': c.batch = atol(optarg); break;
		case 'g': c.get_pct = atoi(optarg); break;
		case 'R': c.rounds = atoi(optarg); c.csv = 1; break;
		case 'C': c.csv = 1; break;
		case 'N': c.no_copy = 1; c.keep = 1; break;
		case 'V': c.warm_round = 1; break;
		case 'P': c.preload_txn = atol(optarg); break;
		case 'X': c.recover = 1; break;
		case 'K': {
			char *s = optarg;

			c.nckpt = 0;
			while (*s && c.nckpt < 8) {
				size_t len = strcspn(s, ",");
				char one[32];
				double v;

				snprintf(one, sizeof(one), "%.*s", (int)len, s);
				v = parse_size(one);
				if (!(v >= 1 << 16)) {
					usage(stderr);
					return 64;
				}
				c.ckpt[c.nckpt++] = (uint64_t)v;
				s += len;
				if (*s == ',')
					s++;
			}
			break;
		}
		case 'S': c.seed = strtoull(optarg, NULL, 0); break;
		case 'W':
			if (!strcmp(optarg, "update")) c.wl = W_UPDATE;
			else if (!strcmp(optarg, "load")) c.wl = W_LOAD;
			else if (!strcmp(optarg, "mix")) c.wl = W_MIX;
			else { usage(stderr); return 64; }
			break;
		case 'p':
			if (!strcmp(optarg, "doublewrite")) c.gc_protect = UT_PROTECT_DOUBLEWRITE;
			else if (!strcmp(optarg, "unsafe")) c.gc_protect = UT_PROTECT_UNSAFE;
			else if (!strcmp(optarg, "atomic")) c.gc_protect = UT_PROTECT_ATOMIC;
			else if (!strcmp(optarg, "fullpage")) c.gc_protect = UT_PROTECT_FULLPAGE;
			else if (!strcmp(optarg, "auto")) c.gc_protect = UT_PROTECT_AUTO;
			else { usage(stderr); return 64; }
			break;
		case 'T': {
			char *s = optarg, *e;

			c.nthreads = 0;
			while (*s && c.nthreads < 8) {
				long v = strtol(s, &e, 10);

				if (e == s || v < 1 || v > MAX_THREADS) {
					usage(stderr);
					return 64;
				}
				c.threads[c.nthreads++] = (int)v;
				s = *e == ',' ? e + 1 : e;
			}
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 64;
		}
	}
	if (c.rounds < 1 || c.batch < 1 || c.get_pct < 0 || c.get_pct > 100) {
		usage(stderr);
		return 64;
	}
	c.nkeys = (long)(c.data_bytes / (KEY_LEN + VAL_LEN));
	if (c.nkeys < 1000)
		c.nkeys = 1000;
	for (int f = 0; f < 4; f++) {
		char name[64];

		if (c.no_copy)
			snprintf(name, sizeof(name), "durable-%ld-%llu.%s", c.nkeys,
				 (unsigned long long)c.seed, family_file[f]);
		else
			snprintf(name, sizeof(name), "durable-preload.%s", family_file[f]);
		path_of(&c, name, pre[f], sizeof(pre[f]));
	}

	printf("bench_durable: workload %s, %ld keys (%.0f MiB of 16+100-byte records), "
	       "cache %zu MiB, ", wl_names[c.wl], c.nkeys, c.nkeys * 116.0 / 1048576,
	       c.cache_mib);
	if (c.wl == W_LOAD)
		printf("%ld puts per sync=1 transaction into an empty database, ", c.batch);
	if (c.wl == W_MIX)
		printf("%d%% gets, %d%% sync=1 single puts, ", c.get_pct, 100 - c.get_pct);
	printf("%.0f s warm-up, dir %s\n", c.warmup, c.dir);
	if (c.ops)
		printf("measured: %ld operations per run\n", c.ops);
	else
		printf("measured: %.0f s per run\n", c.secs);
	fflush(stdout);

	if (c.nthreads && !c.modes_given) {
		int rc;

		if (preload_untorn(&c, pre[0]))
			return 1;
		rc = group_table(&c, pre[0]);
		if (!c.keep)
			remove_db(pre[0]);
		return rc;
	}
	if (!c.nthreads) {
		c.threads[0] = 1;
		c.nthreads = 1;
	}
	if ((nsys = parse_modes(c.modes, list, 16)) < 0)
		return 64;
	for (int i = 0; i < nsys; i++)
		need[list[i]->family] = 1;
	if (c.wl != W_LOAD) {
		for (int f = 0; f < 4; f++)
			if (need[f] && c.no_copy && exists(pre[f])) {
				fprintf(stderr, "preload %s: reusing %s\n", family_file[f], pre[f]);
				need[f] = 0;
			}
		if (need[0] && preload_untorn(&c, pre[0]))
			return 1;
		if (need[1] && preload_sqlite(&c, pre[1]))
			return 1;
#ifdef UT_BENCH_LMDB
		if (need[2] && preload_lmdb(&c, pre[2]))
			return 1;
#endif
#ifdef UT_BENCH_ROCKSDB
		if (need[3] && preload_rocksdb(&c, pre[3]))
			return 1;
#endif
	}
	printf("\n");
	print_header();
	fflush(stdout);
	for (int round = c.warm_round ? 0 : 1; round <= c.rounds; round++)
		for (int ti = 0; ti < c.nthreads; ti++)
			for (int i = 0, ci = 0; i < nsys; ci = 0, i++)
			for (; ci < (list[i]->family == 0 && c.nckpt ? c.nckpt : 1); ci++) {
				const struct sysdef *d = list[i];
				struct result r;
				char name[64], label[64], key[64];
				struct cfg cc = c;

				snprintf(name, sizeof(name), "durable-run.%s", family_file[d->family]);
				path_of(&c, name, p, sizeof(p));
				if (c.wl == W_LOAD) {
					remove_db(p);
				} else if (c.no_copy) {
					snprintf(p, sizeof(p), "%s", pre[d->family]);
					drop_db_cache(p);
				} else if (copy_db(pre[d->family], p)) {
					perror("copy");
					return 1;
				}
				snprintf(label, sizeof(label), "%s", d->name);
				snprintf(key, sizeof(key), "%s", d->key);
				if (d->family == 0 && c.nckpt) {
					char sz[32];

					cc.ckpt_bytes = c.ckpt[ci];
					fmt_size(sz, sizeof(sz), cc.ckpt_bytes);
					snprintf(label, sizeof(label), "%s ckpt=%s", d->key, sz);
					snprintf(key, sizeof(key), "%s@%s", d->key, sz);
				}
				if (!run_child(&cc, d, p, c.threads[ti], &r) && c.recover)
					run_recovery(&cc, d, p, &r);
				note_images(&r);
				print_row(label, round, c.threads[ti], &r);
				if (c.csv)
					print_csv(&c, key, round, c.threads[ti], &r);
				fflush(stdout);
				if (c.wl == W_LOAD || !c.no_copy)
					remove_db(p);
			}
	if (!c.keep)
		for (int f = 0; f < 4; f++)
			remove_db(pre[f]);
	return 0;
}

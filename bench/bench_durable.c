/*
 * bench/bench_durable.c - durable single-put commits: what each torn-page
 * protection costs, side by side with SQLite, on one filesystem, in one run.
 *
 * Workload:
 *   preload  D bytes of data (-s, default 1 GiB): D / 116 random 16-byte keys
 *            with 100-byte values, random order, big unsynced transactions.
 *            Done ONCE per engine family (see "Preload" below).
 *   run      T seconds (-t) or N commits (-n) of single-put transactions
 *            (begin, put of a random existing key with a new value, commit)
 *            with sync=1 (SQLite: journal_mode=WAL, synchronous=FULL), after
 *            a warm-up (-w seconds, not counted).  The cache (-c, default
 *            64 MiB; SQLite cache_size the same) is far below D, so page
 *            flushing (eviction + checkpoints) dominates, not just the log.
 *
 * Modes, each in its own child process on its own copy of the preloaded
 * files, one after the other: untorn doublewrite, untorn unsafe, untorn
 * atomic (if ut_open with UT_PROTECT_ATOMIC succeeds; else "n/a" with the
 * engine's reason), SQLite (WAL, synchronous=FULL, page_size 16384, WITHOUT
 * ROWID, upsert through INSERT ... ON CONFLICT DO UPDATE).
 *
 * Preload: untorn is preloaded once with UT_PROTECT_UNSAFE, sync=0, a cache
 * holding the whole tree and the automatic checkpoint pushed out of the way
 * (engine/db.h ut_db_set_checkpoint_bytes), then ut_close (which
 * checkpoints: every page is in the data file and the log is reclaimed).  The protection mode is not recorded in the file, so each mode
 * then opens a byte copy of the data file (the "-wal" is copied too when
 * present; a "-dw" is not needed after a clean close).  SQLite is preloaded
 * once in one transaction with journal_mode=OFF and the same big cache,
 * switched to journal_mode=WAL, wal_checkpoint(TRUNCATE), closed, and copied
 * the same way.  Every
 * copy is fdatasync'ed and dropped from the OS page cache
 * (POSIX_FADV_DONTNEED) before its mode runs, so each mode starts cold.
 *
 * Figures per mode (over the measured interval only; close excluded):
 *   commits/s, page bytes per commit (untorn: ut_stats page_writes*16384;
 *   SQLite: bytes written to the main db file, i.e. its checkpoints),
 *   double-write bytes per commit (dw_page_writes*16384; SQLite: none),
 *   log bytes per commit (ut_stats log_bytes; SQLite: bytes written to the
 *   -wal file), syncs per commit (ut_stats syncs; SQLite: xSync calls, all
 *   files), p50/p99 latency of begin..commit in microseconds.
 * SQLite's figures come from a counting VFS shim over the default VFS.
 *
 * Group commit (--threads 1,4,16): for each K, a fresh copy of the untorn
 * preload opened with -p (default doublewrite), K threads each committing
 * single-put sync=1 transactions for T seconds: commits/s, syncs/commit
 * (all fdatasyncs, page flushing included) and log syncs/commit (the log's
 * own, from ut_wal_stats: the group-commit figure proper).
 *
 *   bench_durable [--quick] [-s SIZE] [-c CACHE_MIB] [-t SECS] [-n COMMITS]
 *                 [-w WARMUP_SECS] [-d DIR] [-m MODES] [-k]
 *                 [--threads LIST] [-p PROTECT]
 *   --quick = -s 64M -c 16 -t 10 -w 2
 */
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

#include "child.h"
#include "untorn.h"
#include "db.h"  /* ut_db_set_checkpoint_bytes (preload), ut_db_wal */
#include "wal.h" /* ut_wal_stats_get: log syncs apart from page-flush syncs */

#define KEY_LEN 16
#define VAL_LEN 100
#define MAX_THREADS 64

struct cfg {
	uint64_t data_bytes;
	long nkeys;
	size_t cache_mib;
	double secs;        /* measured interval (if commits == 0) */
	long commits;       /* measured commits (overrides secs) */
	double warmup;
	const char *dir;
	const char *modes;
	int keep;
	int threads[8];
	int nthreads;       /* >0: group-commit mode */
	enum ut_protect gc_protect;
	uint64_t seed;
};

struct result {
	int ok;
	int na;              /* mode not available on this stack */
	long commits;
	double secs;
	double page_bytes, dw_bytes, log_bytes, syncs; /* totals over the run */
	double log_syncs;    /* of syncs, the log's fdatasyncs (ut_wal_stats) */
	double p50_us, p99_us, max_us;
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
	r->max_us = l->v[l->n - 1];
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ------------------------------------------------------------ files */

static void path_of(const struct cfg *c, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", c->dir, name);
}

static const char *const companions[] = { "", "-wal", "-dw", "-shm", "-journal" };

static void remove_db(const char *path)
{
	char p[4200];

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
	char a[4200], b[4200];

	remove_db(to);
	if (copy_file(from, to))
		return -1;
	snprintf(a, sizeof(a), "%s-wal", from);
	snprintf(b, sizeof(b), "%s-wal", to);
	if (exists(a) && copy_file(a, b))
		return -1;
	drop_cache(from);
	return 0;
}

static long long file_size(const char *p)
{
	struct stat st;

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
	const long batch = 2000;
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

/* ------------------------------------------------------------ untorn run */

static int run_untorn(const struct cfg *c, const char *path, enum ut_protect prot,
		      struct result *r)
{
	ut_options o;
	ut_db *db;
	ut_txn *t;
	ut_stats s0, s1;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	struct rng g = { c->seed * 7 + 1 };
	struct lat lat = { 0 };
	uint64_t ver = 1;
	double t0 = 0, tend, tw;
	long n = 0;
	int rc;

	ut_options_default(&o);
	o.protect = prot;
	o.sync = 1;
	o.create = 0;
	o.cache_bytes = c->cache_mib << 20;
	rc = ut_open(path, &o, &db);
	if (rc == UT_ENOTSUP || (rc && prot == UT_PROTECT_ATOMIC)) {
		const char *d = ut_errdetail(), *sx = strstr(d, "statx");

		r->na = 1;
		FAIL(r, "n/a (%s)", sx ? sx : *d ? d : ut_strerror(rc));
	}
	if (rc)
		FAIL(r, "open: %s: %s", ut_strerror(rc), ut_errdetail());
	tw = now() + c->warmup;
	for (int measuring = 0; measuring < 2; measuring++) {
		if (measuring) {
			ut_stats_get(db, &s0);
			t0 = now();
			tend = c->commits ? 1e300 : t0 + c->secs;
		} else {
			tend = tw;
		}
		for (;;) {
			double a = now(), b;
			long i;

			if (a >= tend || (measuring && c->commits && n >= c->commits))
				break;
			i = rnd_below(&g, c->nkeys);
			make_key(c->seed, i, k);
			make_val(i, ver++, v);
			if ((rc = ut_begin(db, 0, &t)) ||
			    (rc = ut_put(t, k, KEY_LEN, v, VAL_LEN)) ||
			    (rc = ut_commit(t))) {
				snprintf(r->note, sizeof(r->note), "%s: %s",
					 ut_strerror(rc), ut_errdetail());
				ut_close(db);
				return -1;
			}
			b = now();
			if (measuring) {
				lat_add(&lat, (b - a) * 1e6);
				n++;
			}
		}
	}
	r->secs = now() - t0;
	ut_stats_get(db, &s1);
	r->commits = n;
	r->page_bytes = (double)(s1.page_writes - s0.page_writes) * UT_PAGE_SIZE;
	r->dw_bytes = (double)(s1.dw_page_writes - s0.dw_page_writes) * UT_PAGE_SIZE;
	r->log_bytes = (double)(s1.log_bytes - s0.log_bytes);
	r->syncs = (double)(s1.syncs - s0.syncs);
	lat_done(&lat, r);
	snprintf(r->note, sizeof(r->note), "%s%s, %llu waits for the cleaner",
		 s1.direct_io ? "O_DIRECT" : "buffered", s1.uring ? ", io_uring" : "",
		 (unsigned long long)(s1.frame_waits - s0.frame_waits));
	if ((rc = ut_close(db)))
		FAIL(r, "close: %s: %s", ut_strerror(rc), ut_errdetail());
	return 0;
}

/* ------------------------------------------------------------ SQLite run */

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

	if (p->kind == 0)
		cnt_main_bytes += (uint64_t)n;
	else if (p->kind == 1)
		cnt_wal_bytes += (uint64_t)n;
	else
		cnt_other_bytes += (uint64_t)n;
	return p->real->pMethods->xWrite(p->real, b, n, o);
}
static int c_trunc(sqlite3_file *f, sqlite3_int64 s)
{ return REAL(f)->pMethods->xTruncate(REAL(f), s); }
static int c_sync(sqlite3_file *f, int fl)
{ cnt_syncs++; return REAL(f)->pMethods->xSync(REAL(f), fl); }
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
	base_vfs = sqlite3_vfs_find(NULL);
	count_vfs = *base_vfs;
	count_vfs.zName = "count";
	count_vfs.szOsFile = (int)sizeof(struct cfile);
	count_vfs.xOpen = c_open;
	count_vfs.pNext = NULL;
	sqlite3_vfs_register(&count_vfs, 0);
}

static int run_sqlite(const struct cfg *c, const char *path, struct result *r)
{
	sqlite3 *db;
	sqlite3_stmt *up;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	struct rng g = { c->seed * 7 + 1 };
	struct lat lat = { 0 };
	uint64_t ver = 1, m0 = 0, w0 = 0, s0 = 0;
	char sql[128];
	double t0 = 0, tend, tw;
	long n = 0;

	register_count_vfs();
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, "count") != SQLITE_OK)
		FAIL(r, "sqlite3_open: %s", sqlite3_errmsg(db));
	snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%zu", c->cache_mib * 1024);
	if (sq_exec(db, "PRAGMA journal_mode=WAL") ||
	    sq_exec(db, "PRAGMA synchronous=FULL") || sq_exec(db, sql))
		FAIL(r, "sqlite pragmas failed");
	if (sqlite3_prepare_v2(db, "INSERT INTO kv(k, v) VALUES(?1, ?2) "
			       "ON CONFLICT(k) DO UPDATE SET v = excluded.v",
			       -1, &up, NULL))
		FAIL(r, "prepare: %s", sqlite3_errmsg(db));
	tw = now() + c->warmup;
	for (int measuring = 0; measuring < 2; measuring++) {
		if (measuring) {
			m0 = cnt_main_bytes;
			w0 = cnt_wal_bytes;
			s0 = cnt_syncs;
			t0 = now();
			tend = c->commits ? 1e300 : t0 + c->secs;
		} else {
			tend = tw;
		}
		for (;;) {
			double a = now(), b;
			long i;

			if (a >= tend || (measuring && c->commits && n >= c->commits))
				break;
			i = rnd_below(&g, c->nkeys);
			make_key(c->seed, i, k);
			make_val(i, ver++, v);
			/* autocommit: one statement = one transaction */
			sqlite3_bind_blob(up, 1, k, KEY_LEN, SQLITE_STATIC);
			sqlite3_bind_blob(up, 2, v, VAL_LEN, SQLITE_STATIC);
			if (sqlite3_step(up) != SQLITE_DONE)
				FAIL(r, "upsert: %s", sqlite3_errmsg(db));
			sqlite3_reset(up);
			b = now();
			if (measuring) {
				lat_add(&lat, (b - a) * 1e6);
				n++;
			}
		}
	}
	r->secs = now() - t0;
	r->commits = n;
	r->page_bytes = (double)(cnt_main_bytes - m0);
	r->dw_bytes = 0;
	r->log_bytes = (double)(cnt_wal_bytes - w0);
	r->syncs = (double)(cnt_syncs - s0);
	lat_done(&lat, r);
	snprintf(r->note, sizeof(r->note), "SQLite %s, WAL autocheckpoint 1000 pages",
		 sqlite3_libversion());
	sqlite3_finalize(up);
	sqlite3_close(db);
	return 0;
}

/* ------------------------------------------------------------ group commit */

struct gc_shared {
	const struct cfg *c;
	ut_db *db;
	double tend;
	volatile int stop;
	int err;
};
struct gc_thread {
	struct gc_shared *sh;
	int id;
	long commits;
	struct lat lat;
	pthread_t th;
};

static void *gc_main(void *arg)
{
	struct gc_thread *me = arg;
	const struct cfg *c = me->sh->c;
	struct rng g = { c->seed * 1000003 + (uint64_t)me->id * 7919 + 11 };
	unsigned char k[KEY_LEN], v[VAL_LEN];
	uint64_t ver = (uint64_t)me->id << 40;
	ut_txn *t;
	int rc;

	while (!me->sh->stop) {
		double a = now();
		long i;

		if (a >= me->sh->tend)
			break;
		i = rnd_below(&g, c->nkeys);
		make_key(c->seed, i, k);
		make_val(i, ++ver, v);
		if ((rc = ut_begin(me->sh->db, 0, &t)) ||
		    (rc = ut_put(t, k, KEY_LEN, v, VAL_LEN)) || (rc = ut_commit(t))) {
			me->sh->err = rc;
			me->sh->stop = 1;
			break;
		}
		lat_add(&me->lat, (now() - a) * 1e6);
		me->commits++;
	}
	return NULL;
}

static uint64_t wal_syncs(ut_db *db)
{
	ut_wal_stats ws;

	memset(&ws, 0, sizeof(ws));
	ut_wal_stats_get(ut_db_wal(db), &ws);
	return ws.syncs;
}

static int run_group(const struct cfg *c, const char *path, int nth, struct result *r)
{
	ut_options o;
	struct gc_shared sh;
	struct gc_thread th[MAX_THREADS];
	ut_stats s0, s1;
	struct lat all = { 0 };
	uint64_t w0 = 0;
	double t0 = 0;
	int rc;

	ut_options_default(&o);
	o.protect = c->gc_protect;
	o.sync = 1;
	o.create = 0;
	o.cache_bytes = c->cache_mib << 20;
	memset(&sh, 0, sizeof(sh));
	sh.c = c;
	if ((rc = ut_open(path, &o, &sh.db)))
		FAIL(r, "open: %s: %s", ut_strerror(rc), ut_errdetail());
	/* warm-up with the same thread count, not counted */
	for (int pass = 0; pass < 2; pass++) {
		memset(th, 0, sizeof(th));
		if (pass == 1) {
			ut_stats_get(sh.db, &s0);
			w0 = wal_syncs(sh.db);
		}
		t0 = now();
		sh.tend = t0 + (pass ? c->secs : c->warmup);
		for (int i = 0; i < nth; i++) {
			th[i].sh = &sh;
			th[i].id = i + pass * MAX_THREADS;
			pthread_create(&th[i].th, NULL, gc_main, &th[i]);
		}
		for (int i = 0; i < nth; i++)
			pthread_join(th[i].th, NULL);
		if (sh.err) {
			snprintf(r->note, sizeof(r->note), "%s: %s", ut_strerror(sh.err),
				 ut_errdetail());
			ut_close(sh.db);
			return -1;
		}
		if (pass == 0)
			for (int i = 0; i < nth; i++)
				free(th[i].lat.v);
	}
	r->secs = now() - t0;
	ut_stats_get(sh.db, &s1);
	r->log_syncs = (double)(wal_syncs(sh.db) - w0);
	for (int i = 0; i < nth; i++) {
		r->commits += th[i].commits;
		for (size_t j = 0; j < th[i].lat.n; j++)
			lat_add(&all, th[i].lat.v[j]);
		free(th[i].lat.v);
	}
	lat_done(&all, r);
	r->page_bytes = (double)(s1.page_writes - s0.page_writes) * UT_PAGE_SIZE;
	r->dw_bytes = (double)(s1.dw_page_writes - s0.dw_page_writes) * UT_PAGE_SIZE;
	r->log_bytes = (double)(s1.log_bytes - s0.log_bytes);
	r->syncs = (double)(s1.syncs - s0.syncs);
	snprintf(r->note, sizeof(r->note), "%s, %llu waits for the cleaner",
		 ut_protect_name(s1.protect),
		 (unsigned long long)(s1.frame_waits - s0.frame_waits));
	if ((rc = ut_close(sh.db)))
		FAIL(r, "close: %s: %s", ut_strerror(rc), ut_errdetail());
	return 0;
}

/* ------------------------------------------------------------ children */

struct job {
	const char *name;
	int kind;               /* 0 untorn, 1 sqlite, 2 group commit */
	enum ut_protect prot;
	int nth;
};

static int run_job(const struct cfg *c, const struct job *j, const char *path,
		   struct result *r)
{
	if (j->kind == 1)
		return run_sqlite(c, path, r);
	if (j->kind == 2)
		return run_group(c, path, j->nth, r);
	return run_untorn(c, path, j->prot, r);
}

struct child_job {
	const struct cfg *c;
	const struct job *j;
	const char *path;
};

static int child_main(void *arg, void *res)
{
	const struct child_job *cj = arg;
	struct result *r = res;

	r->ok = run_job(cj->c, cj->j, cj->path, r) == 0;
	return r->ok ? 0 : -1;
}

static int run_child(const struct cfg *c, const struct job *j, const char *path,
		     struct result *r)
{
	struct child_job cj = { c, j, path };

	return bench_run_child(child_main, &cj, r, sizeof(*r), r->note,
			       sizeof(r->note));
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

static void print_row(const char *name, const struct result *r)
{
	char pb[32], db[32], lb[32];
	double n = r->commits ? (double)r->commits : 1;

	if (!r->ok) {
		printf("| %-18s | %s |\n", name, r->note);
		return;
	}
	fmt_bytes(pb, sizeof(pb), r->page_bytes / n);
	fmt_bytes(db, sizeof(db), r->dw_bytes / n);
	fmt_bytes(lb, sizeof(lb), r->log_bytes / n);
	printf("| %-18s | %9.0f | %9s | %9s | %9s | %7.3f | %8.0f | %8.0f | %7ld | %s |\n",
	       name, r->commits / r->secs, pb, db, lb, r->syncs / n, r->p50_us,
	       r->p99_us, r->commits, r->note);
}

static void print_header(void)
{
	printf("| %-18s | %9s | %9s | %9s | %9s | %7s | %8s | %8s | %7s | %s |\n",
	       "mode", "commits/s", "page B/c", "dw B/c", "log B/c", "syncs/c",
	       "p50 µs", "p99 µs", "commits", "notes");
	printf("|%s|----------:|----------:|----------:|----------:|--------:|"
	       "---------:|---------:|--------:|---|\n", "--------------------");
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
		"usage: bench_durable [--quick] [-s SIZE] [-c CACHE_MIB] [-t SECS] [-n COMMITS]\n"
		"                     [-w WARMUP] [-d DIR] [-m MODES] [-k]\n"
		"       bench_durable --threads 1,4,16 [-p PROTECT] [same options]\n"
		"  -s SIZE     data to preload (K/M/G suffix; default 1G = SIZE/116 keys)\n"
		"  -c MIB      cache in the measured runs (default 64)\n"
		"  -t SECS     measured seconds per mode (default 30)\n"
		"  -n COMMITS  measured commits per mode instead of -t\n"
		"  -w SECS     warm-up per mode, not counted (default 5)\n"
		"  -d DIR      directory for the databases (default .)\n"
		"  -m MODES    subset of doublewrite,unsafe,atomic,sqlite\n"
		"  -k          keep the database files\n"
		"  --quick     -s 64M -c 16 -t 10 -w 2\n"
		"  --threads L group commit: untorn with K threads for each K in L\n"
		"  -p PROTECT  protection for --threads (default doublewrite)\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "quick", no_argument, NULL, 'Q' },
		{ "threads", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct cfg c = {
		.data_bytes = 1ull << 30, .cache_mib = 64, .secs = 30, .warmup = 5,
		.dir = ".", .modes = "doublewrite,unsafe,atomic,sqlite",
		.gc_protect = UT_PROTECT_DOUBLEWRITE, .seed = 42,
	};
	char upre[4096], spre[4096], p[4096];
	int opt;

	while ((opt = getopt_long(argc, argv, "s:c:t:n:w:d:m:kp:h", lo, NULL)) != -1) {
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
		case 'n': c.commits = atol(optarg); break;
		case 'w': c.warmup = atof(optarg); break;
		case 'd': c.dir = optarg; break;
		case 'm': c.modes = optarg; break;
		case 'k': c.keep = 1; break;
		case 'p':
			if (!strcmp(optarg, "doublewrite")) c.gc_protect = UT_PROTECT_DOUBLEWRITE;
			else if (!strcmp(optarg, "unsafe")) c.gc_protect = UT_PROTECT_UNSAFE;
			else if (!strcmp(optarg, "atomic")) c.gc_protect = UT_PROTECT_ATOMIC;
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
	c.nkeys = (long)(c.data_bytes / (KEY_LEN + VAL_LEN));
	if (c.nkeys < 1000)
		c.nkeys = 1000;
	path_of(&c, "durable-preload.ut", upre, sizeof(upre));
	path_of(&c, "durable-preload.sqlite", spre, sizeof(spre));

	printf("bench_durable: %ld keys (%.0f MiB of 16+100-byte records), cache %zu MiB, "
	       "%s%s per mode after %.0f s warm-up, dir %s\n",
	       c.nkeys, c.nkeys * 116.0 / 1048576, c.cache_mib,
	       c.commits ? "" : "", c.commits ? "N commits" : "T seconds",
	       c.warmup, c.dir);
	if (c.commits)
		printf("measured: %ld commits per mode\n", c.commits);
	else
		printf("measured: %.0f s per mode\n", c.secs);
	fflush(stdout);

	if (preload_untorn(&c, upre))
		return 1;

	if (c.nthreads) {
		printf("\ngroup commit: untorn %s, sync=1, single-put transactions, "
		       "K threads\n\n", ut_protect_name(c.gc_protect));
		printf("| threads | commits/s | syncs/commit | log syncs/commit | log B/c "
		       "| p50 µs | p99 µs | commits | notes |\n");
		printf("|--------:|----------:|-------------:|-----------------:|--------:"
		       "|-------:|-------:|--------:|---|\n");
		fflush(stdout);
		for (int i = 0; i < c.nthreads; i++) {
			struct job j = { "group", 2, c.gc_protect, c.threads[i] };
			struct result r;

			path_of(&c, "durable-run.ut", p, sizeof(p));
			if (copy_db(upre, p)) {
				perror("copy");
				return 1;
			}
			if (run_child(&c, &j, p, &r)) {
				printf("| %7d | %s |\n", c.threads[i], r.note);
			} else {
				double n = r.commits ? (double)r.commits : 1;

				printf("| %7d | %9.0f | %12.3f | %16.3f | %7.0f | %6.0f | %6.0f | %7ld | %s |\n",
				       c.threads[i], r.commits / r.secs, r.syncs / n,
				       r.log_syncs / n, r.log_bytes / n, r.p50_us, r.p99_us, r.commits, r.note);
			}
			fflush(stdout);
			remove_db(p);
		}
		if (!c.keep)
			remove_db(upre);
		return 0;
	}

	if (strstr(c.modes, "sqlite") && preload_sqlite(&c, spre))
		return 1;
	printf("\n");
	print_header();
	fflush(stdout);
	{
		static const struct job jobs[] = {
			{ "untorn doublewrite", 0, UT_PROTECT_DOUBLEWRITE, 0 },
			{ "untorn unsafe", 0, UT_PROTECT_UNSAFE, 0 },
			{ "untorn atomic", 0, UT_PROTECT_ATOMIC, 0 },
			{ "sqlite WAL FULL", 1, 0, 0 },
		};
		static const char *const keys[] = { "doublewrite", "unsafe", "atomic",
						    "sqlite" };

		for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
			struct result r;
			const char *src = jobs[i].kind == 1 ? spre : upre;

			if (!strstr(c.modes, keys[i]))
				continue;
			path_of(&c, jobs[i].kind == 1 ? "durable-run.sqlite" : "durable-run.ut",
				p, sizeof(p));
			if (copy_db(src, p)) {
				perror("copy");
				return 1;
			}
			run_child(&c, &jobs[i], p, &r);
			print_row(jobs[i].name, &r);
			fflush(stdout);
			remove_db(p);
		}
	}
	if (!c.keep) {
		remove_db(upre);
		remove_db(spre);
	}
	return 0;
}

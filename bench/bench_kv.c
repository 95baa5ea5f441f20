/*
 * bench/bench_kv.c - untorn against SQLite (and later LMDB, RocksDB) on one
 * key-value workload, in one run, printed as a markdown table.
 *
 * Workload (all sizes configurable):
 *   load    N puts of 16-byte keys with 100-byte values, keys in random
 *           order, BATCH puts per transaction
 *   get     N random gets of existing keys, BATCH per (read) transaction
 *   update  N random overwrites of existing keys, BATCH per transaction
 *   scan    one full ordered scan of all N keys
 * Durability is off for every engine (untorn sync=0, SQLite synchronous=OFF
 * with journal_mode=WAL): the benchmark measures the engines, not the disk's
 * flush latency.  Both engines get the same cache (default 64 MiB; SQLite
 * PRAGMA cache_size=-KiB, page_size 16384, a WITHOUT ROWID table and
 * prepared statements).
 *
 * Each engine runs in its own child process, one after the other, so the
 * peak RSS is the engine's own: before each phase the child resets its
 * high-water mark (/proc/self/clear_refs "5") and reads VmHWM after it
 * (falling back to getrusage ru_maxrss, a process-lifetime peak).
 *
 *   bench_kv [-n N] [-b BATCH] [-c CACHE_MIB] [-d DIR] [-e untorn,sqlite]
 *            [-p auto|atomic|doublewrite|unsafe] [-s SEED] [-k] [-t TABLE]
 *
 * -t TABLE: untorn runs the workload in the named table TABLE (opened by
 * name in every transaction, as an application would) instead of the
 * default table.
 *
 * -T SIZE: the named-tables report (issue 33) in the same run: engine
 * "untorn-table" (the workload in a named table) beside "untorn" (the
 * default table), with their ratio per phase, then opening a table by
 * name (p50/p99) and the drop of a table of SIZE bytes (time, log bytes,
 * file size after reuse; bench/tables_part.h).  One command for every
 * figure of the issue:
 *     bench_kv -n 1000000 -e untorn,untorn-table -T 1G -d DIR
 * The "before" side of the 3% claim is the same command's untorn column
 * from a build before named tables.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "child.h"
#include "tables_part.h"
#include "untorn.h"

#define KEY_LEN 16
#define VAL_LEN 100
/* The peak RSS line: untorn's documented budget, cache + 41 MiB
 * (include/untorn.h, "Memory"), applied to every engine for comparison. */
#define RSS_OVER_CACHE_MIB 41

enum { PH_LOAD, PH_GET, PH_UPDATE, PH_SCAN, PH_N };
static const char *const phase_name[PH_N] = { "load (random order)", "random get",
					       "random update", "full scan" };

struct cfg {
	long n;
	long batch;
	size_t cache_mib;
	const char *dir;
	enum ut_protect protect;
	uint64_t seed;
	int keep;
	const char *table; /* untorn: a named table, NULL: the default one */
};

struct result {
	int ok;
	double secs[PH_N];
	long ops[PH_N];
	long rss_kib[PH_N];     /* peak RSS during the phase */
	double cpu[PH_N];       /* user + system CPU seconds */
	struct pio {
		long long syscr, syscw, rbytes, wbytes;
	} io[PH_N];             /* /proc/self/io deltas */
	long long file_bytes;   /* database files after close */
	char note[160];
};

/* ------------------------------------------------------------ workload */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Key i: 16 bytes, distinct for distinct i (mix64 is a bijection), spread
 * uniformly, so inserting i = 0, 1, ... is a random key order. */
static void make_key(const struct cfg *c, long i, unsigned char *k)
{
	uint64_t a = mix64((uint64_t)i ^ c->seed), b = mix64(a + 0x9e3779b97f4a7c15ull);

	for (int j = 0; j < 8; j++) {
		k[j] = (unsigned char)(a >> (56 - 8 * j));
		k[8 + j] = (unsigned char)(b >> (56 - 8 * j));
	}
}

/* Value: the key, then bytes derived from (i, version). */
static void make_val(long i, int version, const unsigned char *k, unsigned char *v)
{
	uint64_t x = mix64((uint64_t)i * 31 + (uint64_t)version);

	memcpy(v, k, KEY_LEN);
	for (int j = KEY_LEN; j < VAL_LEN; j++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		v[j] = (unsigned char)(x >> 56);
	}
}

struct rng {
	uint64_t s;
};

static long rnd_below(struct rng *r, long n)
{
	r->s += 0x9e3779b97f4a7c15ull;
	return (long)(mix64(r->s) % (uint64_t)n);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int rss_reset(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	int ok;

	if (fd < 0)
		return 0;
	ok = write(fd, "5", 1) == 1;
	close(fd);
	return ok;
}

static long rss_peak_kib(int reset_ok)
{
	if (reset_ok) {
		FILE *f = fopen("/proc/self/status", "r");
		char line[256];
		long v = -1;

		if (f) {
			while (fgets(line, sizeof(line), f))
				if (!strncmp(line, "VmHWM:", 6))
					v = strtol(line + 6, NULL, 10);
			fclose(f);
		}
		if (v >= 0)
			return v;
	}
	{
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		return ru.ru_maxrss;
	}
}

/* --------------------------------------------------------- engine drivers */

struct engine {
	const char *name;
	int (*run)(const struct cfg *c, struct result *r);
};

#define FAIL(r, ...)                                                        \
	do {                                                                \
		snprintf((r)->note, sizeof((r)->note), __VA_ARGS__);        \
		return -1;                                                  \
	} while (0)

static void path_of(const struct cfg *c, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s/bench-%s.db", c->dir, name);
}

static long long file_size(const char *p)
{
	struct stat st;

	return stat(p, &st) ? 0 : (long long)st.st_size;
}

/* Remove path and any sidecar file of it (path-*, path.*) in its directory. */
static void remove_db(const char *path)
{
	char pat[1100];
	glob_t gl;

	unlink(path);
	for (int i = 0; i < 2; i++) {
		snprintf(pat, sizeof(pat), i ? "%s.*" : "%s-*", path);
		if (glob(pat, 0, NULL, &gl) == 0) {
			for (size_t j = 0; j < gl.gl_pathc; j++)
				unlink(gl.gl_pathv[j]);
			globfree(&gl);
		}
	}
}

static long long files_size(const char *path)
{
	static const char *const sfx[] = { "", "-wal", "-shm", "-dw", "-log",
					   ".wal", ".dw", ".log" };
	long long t = 0;
	char p[1100];

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
		t += file_size(p);
	}
	return t;
}

static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* syscr/syscw: read/write system calls; read_bytes/write_bytes: what went
 * to storage (buffered writes count when dirtied). */
static void io_now(struct pio *o)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];

	memset(o, 0, sizeof(*o));
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		long long v = 0;

		if (sscanf(line, "syscr: %lld", &v) == 1) o->syscr = v;
		else if (sscanf(line, "syscw: %lld", &v) == 1) o->syscw = v;
		else if (sscanf(line, "read_bytes: %lld", &v) == 1) o->rbytes = v;
		else if (sscanf(line, "write_bytes: %lld", &v) == 1) o->wbytes = v;
	}
	fclose(f);
}

#define PHASE_BEGIN(ph)                                                     \
	int reset_ok_ = rss_reset();                                        \
	struct pio io0_;                                                    \
	io_now(&io0_);                                                      \
	double c0_ = cpu_now();                                             \
	double t0_ = now();                                                 \
	(void)0
#define PHASE_END(r, ph, nops)                                              \
	do {                                                                \
		struct pio io1_;                                            \
		(r)->secs[ph] = now() - t0_;                                \
		(r)->cpu[ph] = cpu_now() - c0_;                             \
		io_now(&io1_);                                              \
		(r)->io[ph].syscr = io1_.syscr - io0_.syscr;                \
		(r)->io[ph].syscw = io1_.syscw - io0_.syscw;                \
		(r)->io[ph].rbytes = io1_.rbytes - io0_.rbytes;             \
		(r)->io[ph].wbytes = io1_.wbytes - io0_.wbytes;             \
		(r)->ops[ph] = (nops);                                      \
		(r)->rss_kib[ph] = rss_peak_kib(reset_ok_);                 \
	} while (0)

/* The table of -t in t (created by a write), or NULL: the default one. */
static ut_table *table_in(const struct cfg *c, ut_txn *t, int write)
{
	ut_table *tb = NULL;

	if (c->table && ut_table_open(t, c->table, write ? UT_CREATE : 0, &tb))
		return NULL;
	return tb;
}

static int run_untorn(const struct cfg *c, struct result *r)
{
	char path[1024];
	ut_options o;
	ut_db *db;
	ut_txn *t = NULL;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	struct rng rg = { c->seed ^ 0x1234 };
	int rc;
	ut_stats st;
	ut_table *tb = NULL;

	path_of(c, "untorn", path, sizeof(path));
	remove_db(path);
	ut_options_default(&o);
	o.cache_bytes = c->cache_mib << 20;
	o.sync = 0;
	o.protect = c->protect;
	if ((rc = ut_open(path, &o, &db)))
		FAIL(r, "ut_open: %s: %s", ut_strerror(rc), ut_errdetail());

	{
		PHASE_BEGIN(PH_LOAD);
		for (long i = 0; i < c->n; i++) {
			if (!t) {
				if ((rc = ut_begin(db, 0, &t)))
					FAIL(r, "ut_begin: %s", ut_strerror(rc));
				if (c->table && !(tb = table_in(c, t, 1)))
					FAIL(r, "ut_table_open: %s", ut_errdetail());
			}
			make_key(c, i, k);
			make_val(i, 0, k, v);
			if ((rc = ut_tput(t, tb, k, KEY_LEN, v, VAL_LEN)))
				FAIL(r, "ut_put: %s: %s", ut_strerror(rc), ut_errdetail());
			if ((i + 1) % c->batch == 0 || i + 1 == c->n) {
				if ((rc = ut_commit(t)))
					FAIL(r, "ut_commit: %s: %s", ut_strerror(rc),
					     ut_errdetail());
				t = NULL;
			}
		}
		PHASE_END(r, PH_LOAD, c->n);
	}
	{
		PHASE_BEGIN(PH_GET);
		for (long i = 0; i < c->n; i++) {
			long j = rnd_below(&rg, c->n);
			void *val;
			size_t vl;

			if (!t) {
				if ((rc = ut_begin(db, UT_RDONLY, &t)))
					FAIL(r, "ut_begin: %s", ut_strerror(rc));
				if (c->table && !(tb = table_in(c, t, 0)))
					FAIL(r, "ut_table_open: %s", ut_errdetail());
			}
			make_key(c, j, k);
			if ((rc = ut_tget(t, tb, k, KEY_LEN, &val, &vl)))
				FAIL(r, "ut_get: %s: %s", ut_strerror(rc), ut_errdetail());
			if (vl != VAL_LEN || memcmp(val, k, KEY_LEN))
				FAIL(r, "ut_get: wrong value");
			free(val);
			if ((i + 1) % c->batch == 0 || i + 1 == c->n) {
				ut_abort(t);
				t = NULL;
			}
		}
		PHASE_END(r, PH_GET, c->n);
	}
	{
		PHASE_BEGIN(PH_UPDATE);
		for (long i = 0; i < c->n; i++) {
			long j = rnd_below(&rg, c->n);

			if (!t) {
				if ((rc = ut_begin(db, 0, &t)))
					FAIL(r, "ut_begin: %s", ut_strerror(rc));
				if (c->table && !(tb = table_in(c, t, 1)))
					FAIL(r, "ut_table_open: %s", ut_errdetail());
			}
			make_key(c, j, k);
			make_val(j, 1, k, v);
			if ((rc = ut_tput(t, tb, k, KEY_LEN, v, VAL_LEN)))
				FAIL(r, "ut_put: %s: %s", ut_strerror(rc), ut_errdetail());
			if ((i + 1) % c->batch == 0 || i + 1 == c->n) {
				if ((rc = ut_commit(t)))
					FAIL(r, "ut_commit: %s: %s", ut_strerror(rc),
					     ut_errdetail());
				t = NULL;
			}
		}
		PHASE_END(r, PH_UPDATE, c->n);
	}
	{
		ut_cursor *cur;
		long n = 0;
		uint64_t sum = 0;

		PHASE_BEGIN(PH_SCAN);
		if ((rc = ut_begin(db, UT_RDONLY, &t)) ||
		    (rc = ut_tcursor_open(t, table_in(c, t, 0), &cur)))
			FAIL(r, "scan: %s", ut_strerror(rc));
		for (rc = ut_cursor_seek(cur, NULL, 0); rc == UT_OK; rc = ut_cursor_next(cur)) {
			const void *kk, *vv;
			size_t kl, vl;

			if ((rc = ut_cursor_get(cur, &kk, &kl, &vv, &vl)))
				break;
			sum += vl + ((const unsigned char *)vv)[vl - 1];
			n++;
		}
		if (rc != UT_NOTFOUND)
			FAIL(r, "scan: %s: %s", ut_strerror(rc), ut_errdetail());
		ut_cursor_close(cur);
		ut_abort(t);
		PHASE_END(r, PH_SCAN, n);
		if (n != c->n)
			FAIL(r, "scan saw %ld keys, not %ld (sum %llu)", n, c->n,
			     (unsigned long long)sum);
	}
	if (!ut_stats_get(db, &st))
		snprintf(r->note, sizeof(r->note), "protect=%s page_writes=%llu "
			 "dw_page_writes=%llu log_bytes=%llu",
			 ut_protect_name(st.protect),
			 (unsigned long long)st.page_writes,
			 (unsigned long long)st.dw_page_writes,
			 (unsigned long long)st.log_bytes);
	if ((rc = ut_close(db)))
		FAIL(r, "ut_close: %s: %s", ut_strerror(rc), ut_errdetail());
	r->file_bytes = files_size(path);
	if (!c->keep)
		remove_db(path);
	return 0;
}

static int sq_exec(sqlite3 *db, const char *sql, struct result *r)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		snprintf(r->note, sizeof(r->note), "sqlite: %s: %s", sql,
			 err ? err : "?");
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

static int run_sqlite(const struct cfg *c, struct result *r)
{
	char path[1024], sql[128];
	sqlite3 *db;
	sqlite3_stmt *ins, *upd, *get, *scan;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	struct rng rg = { c->seed ^ 0x1234 };
	int in_txn = 0;

	path_of(c, "sqlite", path, sizeof(path));
	remove_db(path);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		FAIL(r, "sqlite3_open: %s", sqlite3_errmsg(db));
	snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%zu", c->cache_mib * 1024);
	if (sq_exec(db, "PRAGMA page_size=16384", r) ||
	    sq_exec(db, "PRAGMA journal_mode=WAL", r) ||
	    sq_exec(db, "PRAGMA synchronous=OFF", r) || sq_exec(db, sql, r) ||
	    sq_exec(db, "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID", r))
		return -1;
	if (sqlite3_prepare_v2(db, "INSERT INTO kv(k, v) VALUES(?1, ?2)", -1, &ins, NULL) ||
	    sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO kv(k, v) VALUES(?1, ?2)", -1,
			       &upd, NULL) ||
	    sqlite3_prepare_v2(db, "SELECT v FROM kv WHERE k = ?1", -1, &get, NULL) ||
	    sqlite3_prepare_v2(db, "SELECT k, v FROM kv ORDER BY k", -1, &scan, NULL))
		FAIL(r, "sqlite prepare: %s", sqlite3_errmsg(db));

	{
		PHASE_BEGIN(PH_LOAD);
		for (long i = 0; i < c->n; i++) {
			if (!in_txn && sq_exec(db, "BEGIN", r))
				return -1;
			in_txn = 1;
			make_key(c, i, k);
			make_val(i, 0, k, v);
			sqlite3_bind_blob(ins, 1, k, KEY_LEN, SQLITE_STATIC);
			sqlite3_bind_blob(ins, 2, v, VAL_LEN, SQLITE_STATIC);
			if (sqlite3_step(ins) != SQLITE_DONE)
				FAIL(r, "insert: %s", sqlite3_errmsg(db));
			sqlite3_reset(ins);
			if ((i + 1) % c->batch == 0 || i + 1 == c->n) {
				if (sq_exec(db, "COMMIT", r))
					return -1;
				in_txn = 0;
			}
		}
		PHASE_END(r, PH_LOAD, c->n);
	}
	{
		PHASE_BEGIN(PH_GET);
		for (long i = 0; i < c->n; i++) {
			long j = rnd_below(&rg, c->n);

			if (!in_txn && sq_exec(db, "BEGIN", r))
				return -1;
			in_txn = 1;
			make_key(c, j, k);
			sqlite3_bind_blob(get, 1, k, KEY_LEN, SQLITE_STATIC);
			if (sqlite3_step(get) != SQLITE_ROW)
				FAIL(r, "get: %s", sqlite3_errmsg(db));
			if (sqlite3_column_bytes(get, 0) != VAL_LEN ||
			    memcmp(sqlite3_column_blob(get, 0), k, KEY_LEN))
				FAIL(r, "get: wrong value");
			sqlite3_reset(get);
			if ((i + 1) % c->batch == 0 || i + 1 == c->n) {
				if (sq_exec(db, "COMMIT", r))
					return -1;
				in_txn = 0;
			}
		}
		PHASE_END(r, PH_GET, c->n);
	}
	{
		PHASE_BEGIN(PH_UPDATE);
		for (long i = 0; i < c->n; i++) {
			long j = rnd_below(&rg, c->n);

			if (!in_txn && sq_exec(db, "BEGIN", r))
				return -1;
			in_txn = 1;
			make_key(c, j, k);
			make_val(j, 1, k, v);
			sqlite3_bind_blob(upd, 1, k, KEY_LEN, SQLITE_STATIC);
			sqlite3_bind_blob(upd, 2, v, VAL_LEN, SQLITE_STATIC);
			if (sqlite3_step(upd) != SQLITE_DONE)
				FAIL(r, "update: %s", sqlite3_errmsg(db));
			sqlite3_reset(upd);
			if ((i + 1) % c->batch == 0 || i + 1 == c->n) {
				if (sq_exec(db, "COMMIT", r))
					return -1;
				in_txn = 0;
			}
		}
		PHASE_END(r, PH_UPDATE, c->n);
	}
	{
		long n = 0;
		uint64_t sum = 0;
		int rc;

		PHASE_BEGIN(PH_SCAN);
		if (sq_exec(db, "BEGIN", r))
			return -1;
		while ((rc = sqlite3_step(scan)) == SQLITE_ROW) {
			const unsigned char *vv = sqlite3_column_blob(scan, 1);
			int vl = sqlite3_column_bytes(scan, 1);

			(void)sqlite3_column_blob(scan, 0);
			sum += (uint64_t)vl + vv[vl - 1];
			n++;
		}
		if (rc != SQLITE_DONE)
			FAIL(r, "scan: %s", sqlite3_errmsg(db));
		sqlite3_reset(scan);
		if (sq_exec(db, "COMMIT", r))
			return -1;
		PHASE_END(r, PH_SCAN, n);
		if (n != c->n)
			FAIL(r, "scan saw %ld rows, not %ld (sum %llu)", n, c->n,
			     (unsigned long long)sum);
	}
	snprintf(r->note, sizeof(r->note), "%s, journal_mode=WAL, synchronous=OFF",
		 sqlite3_libversion());
	sqlite3_finalize(ins);
	sqlite3_finalize(upd);
	sqlite3_finalize(get);
	sqlite3_finalize(scan);
	if (sqlite3_close(db) != SQLITE_OK)
		FAIL(r, "sqlite3_close failed");
	r->file_bytes = files_size(path);
	if (!c->keep)
		remove_db(path);
	return 0;
}

#ifdef UT_BENCH_LMDB
#include <lmdb.h>

/* LMDB: one file (MDB_NOSUBDIR), MDB_NOSYNC; no cache setting exists, its
 * "cache" is the page cache through the read-only map. */
static int run_lmdb(const struct cfg *c, struct result *r)
{
	char path[1024];
	MDB_env *env;
	MDB_txn *t = NULL;
	MDB_dbi dbi;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	struct rng rg = { c->seed ^ 0x1234 };
	int rc;

	path_of(c, "lmdb", path, sizeof(path));
	remove_db(path);
	if ((rc = mdb_env_create(&env)) ||
	    (rc = mdb_env_set_mapsize(env, (size_t)c->n * 1024 + (1ull << 30))) ||
	    (rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOMETASYNC,
			       0644)))
		FAIL(r, "lmdb open: %s", mdb_strerror(rc));
	if ((rc = mdb_txn_begin(env, NULL, 0, &t)) || (rc = mdb_dbi_open(t, NULL, 0, &dbi)) ||
	    (rc = mdb_txn_commit(t)))
		FAIL(r, "lmdb dbi: %s", mdb_strerror(rc));
	t = NULL;
	for (int ph = PH_LOAD; ph <= PH_UPDATE; ph++) {
		PHASE_BEGIN(ph);
		for (long i = 0; i < c->n; i++) {
			long j = ph == PH_LOAD ? i : rnd_below(&rg, c->n);
			MDB_val mk = { KEY_LEN, k }, mv = { VAL_LEN, v };

			if (!t && (rc = mdb_txn_begin(env, NULL,
						     ph == PH_GET ? MDB_RDONLY : 0, &t)))
				FAIL(r, "lmdb begin: %s", mdb_strerror(rc));
			make_key(c, j, k);
			if (ph == PH_GET) {
				if ((rc = mdb_get(t, dbi, &mk, &mv)))
					FAIL(r, "lmdb get: %s", mdb_strerror(rc));
				if (mv.mv_size != VAL_LEN || memcmp(mv.mv_data, k, KEY_LEN))
					FAIL(r, "lmdb get: wrong value");
			} else {
				make_val(j, ph == PH_UPDATE, k, v);
				if ((rc = mdb_put(t, dbi, &mk, &mv, 0)))
					FAIL(r, "lmdb put: %s", mdb_strerror(rc));
			}
			if ((i + 1) % c->batch == 0 || i + 1 == c->n) {
				if ((rc = mdb_txn_commit(t)))
					FAIL(r, "lmdb commit: %s", mdb_strerror(rc));
				t = NULL;
			}
		}
		PHASE_END(r, ph, c->n);
	}
	{
		MDB_cursor *cur;
		MDB_val mk, mv;
		long n = 0;
		uint64_t sum = 0;

		PHASE_BEGIN(PH_SCAN);
		if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &t)) ||
		    (rc = mdb_cursor_open(t, dbi, &cur)))
			FAIL(r, "lmdb scan: %s", mdb_strerror(rc));
		for (rc = mdb_cursor_get(cur, &mk, &mv, MDB_FIRST); rc == 0;
		     rc = mdb_cursor_get(cur, &mk, &mv, MDB_NEXT)) {
			sum += mv.mv_size + ((unsigned char *)mv.mv_data)[mv.mv_size - 1];
			n++;
		}
		mdb_cursor_close(cur);
		mdb_txn_abort(t);
		PHASE_END(r, PH_SCAN, n);
		if (n != c->n)
			FAIL(r, "lmdb scan saw %ld keys (sum %llu)", n,
			     (unsigned long long)sum);
	}
	mdb_env_close(env);
	snprintf(r->note, sizeof(r->note), "%s, MDB_NOSYNC, RSS includes the map",
		 mdb_version(NULL, NULL, NULL));
	r->file_bytes = files_size(path);
	if (!c->keep)
		remove_db(path);
	return 0;
}
#endif

#ifdef UT_BENCH_ROCKSDB
#include <rocksdb/c.h>

/* RocksDB: LRU block cache of the same size, WAL on, sync off; one
 * WriteBatch per transaction. */
static int run_rocksdb(const struct cfg *c, struct result *r)
{
	char path[1024];
	char *err = NULL;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_block_based_table_options_t *bo = rocksdb_block_based_options_create();
	rocksdb_cache_t *cache = rocksdb_cache_create_lru(c->cache_mib << 20);
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_t *db;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	struct rng rg = { c->seed ^ 0x1234 };

	path_of(c, "rocksdb", path, sizeof(path));
	{
		char cmd[1200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%.1000s'", path);
		if (system(cmd)) { /* best effort */ }
	}
	rocksdb_block_based_options_set_block_cache(bo, cache);
	rocksdb_options_set_block_based_table_factory(o, bo);
	rocksdb_options_set_create_if_missing(o, 1);
	rocksdb_writeoptions_set_sync(wo, 0);
	db = rocksdb_open(o, path, &err);
	if (err)
		FAIL(r, "rocksdb_open: %s", err);
	for (int ph = PH_LOAD; ph <= PH_UPDATE; ph++) {
		PHASE_BEGIN(ph);
		for (long i = 0; i < c->n; i++) {
			long j = ph == PH_LOAD ? i : rnd_below(&rg, c->n);

			make_key(c, j, k);
			if (ph == PH_GET) {
				size_t vl;
				char *val = rocksdb_get(db, ro, (const char *)k, KEY_LEN,
							&vl, &err);

				if (err || !val || vl != VAL_LEN || memcmp(val, k, KEY_LEN))
					FAIL(r, "rocksdb get: %s", err ? err : "wrong value");
				rocksdb_free(val);
				continue;
			}
			make_val(j, ph == PH_UPDATE, k, v);
			rocksdb_writebatch_put(wb, (const char *)k, KEY_LEN,
					       (const char *)v, VAL_LEN);
			if ((i + 1) % c->batch == 0 || i + 1 == c->n) {
				rocksdb_write(db, wo, wb, &err);
				if (err)
					FAIL(r, "rocksdb write: %s", err);
				rocksdb_writebatch_clear(wb);
			}
		}
		PHASE_END(r, ph, c->n);
	}
	{
		rocksdb_iterator_t *it;
		long n = 0;
		uint64_t sum = 0;

		PHASE_BEGIN(PH_SCAN);
		it = rocksdb_create_iterator(db, ro);
		for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it);
		     rocksdb_iter_next(it)) {
			size_t kl, vl;
			const char *vv;

			(void)rocksdb_iter_key(it, &kl);
			vv = rocksdb_iter_value(it, &vl);
			sum += vl + (unsigned char)vv[vl - 1];
			n++;
		}
		rocksdb_iter_destroy(it);
		PHASE_END(r, PH_SCAN, n);
		if (n != c->n)
			FAIL(r, "rocksdb scan saw %ld keys (sum %llu)", n,
			     (unsigned long long)sum);
	}
	rocksdb_close(db);
	rocksdb_writebatch_destroy(wb);
	rocksdb_readoptions_destroy(ro);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_options_destroy(o);
	rocksdb_block_based_options_destroy(bo);
	rocksdb_cache_destroy(cache);
	snprintf(r->note, sizeof(r->note), "WAL on, sync off, LRU block cache");
	{
		char cmd[1200];

		snprintf(cmd, sizeof(cmd), "du -sb '%.1000s' 2>/dev/null", path);
		FILE *p = popen(cmd, "r");

		if (p) {
			if (fscanf(p, "%lld", &r->file_bytes) != 1)
				r->file_bytes = 0;
			pclose(p);
		}
		if (!c->keep) {
			snprintf(cmd, sizeof(cmd), "rm -rf '%.1000s'", path);
			if (system(cmd)) { /* best effort */ }
		}
	}
	return 0;
}
#endif

/* The workload in named table "bench" (opened in every transaction). */
static int run_untorn_table(const struct cfg *c, struct result *r)
{
	struct cfg tc = *c;

	tc.table = "bench";
	return run_untorn(&tc, r);
}

static const struct engine engines[] = {
	{ "untorn", run_untorn },
	{ "untorn-table", run_untorn_table },
	{ "sqlite", run_sqlite },
#ifdef UT_BENCH_LMDB
	{ "lmdb", run_lmdb },
#endif
#ifdef UT_BENCH_ROCKSDB
	{ "rocksdb", run_rocksdb },
#endif
};
#define NENG (sizeof(engines) / sizeof(engines[0]))
#define E_TABLE 1  /* engines[]: untorn-table */
#define E_SQLITE 2 /* engines[]: sqlite */

/* Run one engine in a child; its result comes back through a pipe. */
struct child_job {
	const struct engine *e;
	const struct cfg *c;
};

static int child_main(void *arg, void *res)
{
	const struct child_job *j = arg;
	struct result *r = res;

	r->ok = j->e->run(j->c, r) == 0;
	return r->ok ? 0 : -1;
}

static int run_child(const struct engine *e, const struct cfg *c, struct result *r)
{
	struct child_job j = { e, c };

	return bench_run_child(child_main, &j, r, sizeof(*r), r->note,
			       sizeof(r->note));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_kv [-n N] [-b BATCH] [-c CACHE_MIB] [-d DIR] "
		"[-e ENGINES] [-p PROTECT] [-s SEED] [-k]\n"
		"  -n N        keys to load, gets, updates (default 1000000)\n"
		"  -b BATCH    operations per transaction (default 1000)\n"
		"  -c MIB      cache for every engine (default 64)\n"
		"  -d DIR      where the database files go (default .)\n"
		"  -e LIST     engines, comma-separated, or all (default untorn,sqlite;\n"
		"              lmdb and rocksdb when built with them)\n"
		"  -p MODE     untorn protection: auto|atomic|doublewrite|unsafe\n"
		"  -s SEED     key order seed (default 1)\n"
		"  -k          keep the database files\n"
		"  -t TABLE    untorn: the workload in named table TABLE\n"
		"  -T SIZE     named tables: untorn vs untorn-table ratios, open by\n"
		"              name p50/p99, drop of a SIZE table (e.g. 1G)\n");
}

int main(int argc, char **argv)
{
	struct cfg c = { .n = 1000000, .batch = 1000, .cache_mib = 64, .dir = ".",
			 .protect = UT_PROTECT_AUTO, .seed = 1 };
	const char *list = "untorn,sqlite";
	struct result res[NENG];
	int sel[NENG] = { 0 }, opt, rc = 0;
	long long tables_bytes = 0;
	char *end;

	while ((opt = getopt(argc, argv, "n:b:c:d:e:p:s:kt:T:h")) != -1) {
		switch (opt) {
		case 'T':
			tables_bytes = strtoll(optarg, &end, 10);
			tables_bytes <<= *end == 'G' ? 30 : *end == 'M' ? 20
				       : *end == 'K' ? 10 : 0;
			if (tables_bytes < 1000) { usage(stderr); return 64; }
			break;
		case 't': c.table = optarg; break;
		case 'n': c.n = strtol(optarg, NULL, 10); break;
		case 'b': c.batch = strtol(optarg, NULL, 10); break;
		case 'c': c.cache_mib = strtoul(optarg, NULL, 10); break;
		case 'd': c.dir = optarg; break;
		case 'e': list = optarg; break;
		case 's': c.seed = strtoull(optarg, NULL, 0); break;
		case 'k': c.keep = 1; break;
		case 'p':
			if (!strcmp(optarg, "auto")) c.protect = UT_PROTECT_AUTO;
			else if (!strcmp(optarg, "atomic")) c.protect = UT_PROTECT_ATOMIC;
			else if (!strcmp(optarg, "doublewrite")) c.protect = UT_PROTECT_DOUBLEWRITE;
			else if (!strcmp(optarg, "unsafe")) c.protect = UT_PROTECT_UNSAFE;
			else { usage(stderr); return 64; }
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 64;
		}
	}
	if (c.n < 1 || c.batch < 1 || c.cache_mib < 1) {
		usage(stderr);
		return 64;
	}
	if (!strcmp(list, "all"))
		list = "untorn,sqlite,lmdb,rocksdb";
	if (tables_bytes && !strcmp(list, "untorn,sqlite"))
		list = "untorn,untorn-table"; /* -T: the default's engines */
	for (size_t i = 0; i < NENG; i++) {
		const char *p = strstr(list, engines[i].name);
		size_t l = strlen(engines[i].name);

		sel[i] = p && (p == list || p[-1] == ',') && (p[l] == 0 || p[l] == ',');
	}

	printf("bench_kv: %ld keys of %d bytes, values of %d bytes, %ld ops per "
	       "transaction, cache %zu MiB, sync off, dir %s%s%s\n\n",
	       c.n, KEY_LEN, VAL_LEN, c.batch, c.cache_mib, c.dir,
	       c.table ? ", untorn in table " : "", c.table ? c.table : "");
	fflush(stdout);
	for (size_t i = 0; i < NENG; i++) {
		if (!sel[i])
			continue;
		fprintf(stderr, "bench_kv: running %s...\n", engines[i].name);
		if (run_child(&engines[i], &c, &res[i])) {
			fprintf(stderr, "bench_kv: %s failed: %s\n", engines[i].name,
				res[i].note);
			rc = 1;
		}
	}

	/* the table: one row per phase, ops/s and peak RSS per engine */
	printf("| phase |");
	for (size_t i = 0; i < NENG; i++)
		if (sel[i])
			printf(" %s ops/s |", engines[i].name);
	if (sel[0] && sel[E_SQLITE])
		printf(" untorn/sqlite |");
	if (sel[0] && sel[E_TABLE])
		printf(" untorn-table/untorn |");
	for (size_t i = 0; i < NENG; i++)
		if (sel[i])
			printf(" %s peak RSS MiB |", engines[i].name);
	printf("\n|---|");
	for (size_t i = 0; i < NENG; i++)
		if (sel[i])
			printf("---:|---:|");
	if (sel[0] && sel[E_SQLITE])
		printf("---:|");
	if (sel[0] && sel[E_TABLE])
		printf("---:|");
	printf("\n");
	for (int ph = 0; ph < PH_N; ph++) {
		double ops[NENG] = { 0 };

		printf("| %s |", phase_name[ph]);
		for (size_t i = 0; i < NENG; i++) {
			if (!sel[i])
				continue;
			if (res[i].ok && res[i].secs[ph] > 0) {
				ops[i] = (double)res[i].ops[ph] / res[i].secs[ph];
				printf(" %.0f |", ops[i]);
			} else {
				printf(" - |");
			}
		}
		if (sel[0] && sel[E_SQLITE]) {
			if (ops[0] > 0 && ops[E_SQLITE] > 0)
				printf(" %.2fx |", ops[0] / ops[E_SQLITE]);
			else
				printf(" - |");
		}
		if (sel[0] && sel[E_TABLE]) {
			if (ops[0] > 0 && ops[E_TABLE] > 0)
				printf(" %.3fx |", ops[E_TABLE] / ops[0]);
			else
				printf(" - |");
		}
		for (size_t i = 0; i < NENG; i++) {
			if (!sel[i])
				continue;
			if (res[i].ok)
				printf(" %.1f |", (double)res[i].rss_kib[ph] / 1024.0);
			else
				printf(" - |");
		}
		printf("\n");
	}
	printf("\n| phase | engine | wall s | CPU s | read calls | write calls | "
	       "MiB read from storage | MiB written |\n"
	       "|---|---|---:|---:|---:|---:|---:|---:|\n");
	for (int ph = 0; ph < PH_N; ph++)
		for (size_t i = 0; i < NENG; i++) {
			if (!sel[i] || !res[i].ok)
				continue;
			printf("| %s | %s | %.2f | %.2f | %lld | %lld | %.1f | %.1f |\n",
			       phase_name[ph], engines[i].name, res[i].secs[ph],
			       res[i].cpu[ph], res[i].io[ph].syscr, res[i].io[ph].syscw,
			       (double)res[i].io[ph].rbytes / 1048576.0,
			       (double)res[i].io[ph].wbytes / 1048576.0);
		}
	printf("\n");
	for (size_t i = 0; i < NENG; i++) {
		if (!sel[i])
			continue;
		printf("- %s: %s; files %.1f MiB", engines[i].name, res[i].note,
		       (double)res[i].file_bytes / 1048576.0);
		if (res[i].ok) {
			long peak = 0;

			for (int ph = 0; ph < PH_N; ph++)
				if (res[i].rss_kib[ph] > peak)
					peak = res[i].rss_kib[ph];
			/* untorn's stated budget (include/untorn.h, "Memory") */
			printf("; peak RSS %.1f MiB (budget cache + %d = %zu MiB: %s)",
			       (double)peak / 1024.0, RSS_OVER_CACHE_MIB,
			       c.cache_mib + RSS_OVER_CACHE_MIB,
			       (size_t)peak <= (c.cache_mib + RSS_OVER_CACHE_MIB) * 1024
				       ? "ok" : "OVER");
		}
		printf("\n");
	}
	if (tables_bytes) {
		/* in a child: its peak RSS is its own */
		fflush(stdout);
		pid_t pid = fork();

		if (pid == 0) {
			int trc = bench_tables_run(c.dir, c.cache_mib, 1000,
						   c.n < 200000 ? c.n : 200000,
						   tables_bytes);

			fflush(stdout); /* _exit does not */
			_exit(trc ? 1 : 0);
		}
		int st = 0;

		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			rc = 1;
	}
	return rc;
}

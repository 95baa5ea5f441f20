/*
 * bench/bench_snapshot.c - readers beside a writer: untorn against LMDB and
 * SQLite (WAL), the systems interleaved over several rounds, each system
 * in its own child process per round.
 *
 * Data: N keys of 16 bytes with 100-byte values, loaded first; every
 * engine's cache holds it (untorn cache_bytes and SQLite cache_size = -c
 * MiB; LMDB maps the file, and its map may grow to 16 GiB: a long reader
 * keeps every page the writer frees from being reused).  Durability off
 * everywhere (untorn sync=0, SQLite synchronous=OFF, LMDB MDB_NOSYNC): the
 * engines, not the disk.
 *
 *   alone      a writer: transactions of W random updates for T seconds
 *   +reader    the same writer while a reader holds ONE snapshot for the
 *              whole T seconds, scanning everything again and again
 *   rd-begin   a reader's begin + one random get + end, timed, while the
 *              writer keeps a transaction open (one update, 2 ms asleep
 *              inside it, commit, again)
 *   get xK     K threads of read transactions of 100 random gets each
 *
 * Every rate comes with the latency of its unit (a commit, a begin+get, a
 * 100-get transaction): p50/p99/p99.9, and with the CPU the threads that
 * did the units got (cores: their thread CPU seconds over the wall
 * seconds), so that a rate that fell because the machine's cores were
 * busy can be told from one that fell because each unit cost more (rate
 * per core).  Printed per round, then the spread (min..max over rounds).
 *
 *   bench_snapshot [-n N] [-w W] [-t SECONDS] [-r ROUNDS] [-c CACHE_MIB]
 *                  [-d DIR] [-e untorn,lmdb,sqlite]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "child.h"
#include "untorn.h"
#ifdef UT_BENCH_LMDB
#include <lmdb.h>
#endif

#define KEY_LEN 16
#define VAL_LEN 100
#define GET_BATCH 100
#define MAX_SAMPLES (1u << 22)

struct cfg {
	long n;
	int w;
	double secs;
	int rounds;
	size_t cache_mib;
	const char *dir;
};

/* ---- one engine behind a handful of calls ----------------------------- */

struct eng;
struct ops {
	const char *name;
	int (*open)(struct eng *e, const char *path, const struct cfg *c);
	void (*close)(struct eng *e);
	/* a write transaction: puts of keys[0..n) (value v), committed;
	 * hold_us > 0: sleep that long inside it first */
	int (*write)(struct eng *e, const long *keys, int n, int v, int hold_us);
	void *(*rbegin)(struct eng *e);      /* a read transaction */
	int (*get)(struct eng *e, void *rt, long key);
	long (*scan)(struct eng *e, void *rt); /* keys seen */
	void (*rend)(struct eng *e, void *rt);
};

struct eng {
	const struct ops *ops;
	const struct cfg *c;
	ut_db *udb;
	sqlite3 *sw; /* SQLite: the writer's connection */
	char path[1024];
#ifdef UT_BENCH_LMDB
	MDB_env *env;
	MDB_dbi dbi;
#endif
};

static void make_key(long i, unsigned char *k)
{
	uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
	char hex[9];

	snprintf(hex, sizeof(hex), "%08lx", i);
	memcpy(k, &z, 8);
	memcpy(k + 8, hex, 8);
}

static void make_val(long i, int v, unsigned char *out)
{
	for (int j = 0; j < VAL_LEN; j++)
		out[j] = (unsigned char)(i * 31 + v * 7 + j);
}

/* Any version of a value: VAL_LEN bytes stepping by one. */
static int val_ok(long i, const void *p, size_t n)
{
	const unsigned char *b = p;

	(void)i;
	return n == VAL_LEN && (unsigned char)(b[VAL_LEN - 1] - b[0]) == VAL_LEN - 1;
}

/* ---- untorn ------------------------------------------------------------ */

static int u_open(struct eng *e, const char *path, const struct cfg *c)
{
	ut_options o;

	ut_options_default(&o);
	o.sync = 0;
	o.cache_bytes = c->cache_mib << 20;
	return ut_open(path, &o, &e->udb);
}

static void u_close(struct eng *e) { ut_close(e->udb); }

static int u_write(struct eng *e, const long *keys, int n, int v, int hold_us)
{
	unsigned char k[KEY_LEN], val[VAL_LEN];
	ut_txn *t;
	int rc = ut_begin(e->udb, 0, &t);

	for (int i = 0; rc == UT_OK && i < n; i++) {
		make_key(keys[i], k);
		make_val(keys[i], v, val);
		rc = ut_put(t, k, KEY_LEN, val, VAL_LEN);
	}
	if (rc == UT_OK && hold_us)
		usleep((useconds_t)hold_us);
	return rc == UT_OK ? ut_commit(t) : (ut_abort(t), rc);
}

static void *u_rbegin(struct eng *e)
{
	ut_txn *t;

	return ut_begin(e->udb, UT_RDONLY, &t) == UT_OK ? t : NULL;
}

static int u_get(struct eng *e, void *rt, long key)
{
	unsigned char k[KEY_LEN];
	const void *v;
	size_t vl;

	(void)e;
	make_key(key, k);
	if (ut_get_ref(rt, k, KEY_LEN, &v, &vl) != UT_OK)
		return -1;
	return val_ok(key, v, vl) ? 0 : -1;
}

static long u_scan(struct eng *e, void *rt)
{
	ut_cursor *c;
	long n = 0;

	(void)e;
	if (ut_cursor_open(rt, &c))
		return -1;
	for (int rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c))
		n++;
	ut_cursor_close(c);
	return n;
}

static void u_rend(struct eng *e, void *rt)
{
	(void)e;
	ut_abort(rt);
}

static const struct ops untorn_ops = { "untorn", u_open, u_close, u_write,
				       u_rbegin, u_get, u_scan, u_rend };

/* ---- SQLite, WAL ------------------------------------------------------- */

struct sq_reader {
	sqlite3 *db;
	sqlite3_stmt *get, *scan;
};

static int sq_conn(struct eng *e, sqlite3 **db)
{
	char pragma[128];

	if (sqlite3_open(e->path, db) != SQLITE_OK)
		return -1;
	snprintf(pragma, sizeof(pragma),
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; "
		 "PRAGMA cache_size=-%zu;", e->c->cache_mib << 10);
	return sqlite3_exec(*db, pragma, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int s_open(struct eng *e, const char *path, const struct cfg *c)
{
	(void)c;
	snprintf(e->path, sizeof(e->path), "%s", path);
	if (sq_conn(e, &e->sw))
		return -1;
	return sqlite3_exec(e->sw, "PRAGMA page_size=16384; CREATE TABLE IF NOT "
			    "EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID;",
			    NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static void s_close(struct eng *e) { sqlite3_close(e->sw); }

static int s_write(struct eng *e, const long *keys, int n, int v, int hold_us)
{
	unsigned char k[KEY_LEN], val[VAL_LEN];
	sqlite3_stmt *st;
	int rc = sqlite3_exec(e->sw, "BEGIN", NULL, NULL, NULL);

	if (rc || sqlite3_prepare_v2(e->sw, "INSERT OR REPLACE INTO kv VALUES(?,?)",
				     -1, &st, NULL))
		return -1;
	for (int i = 0; rc == SQLITE_OK && i < n; i++) {
		make_key(keys[i], k);
		make_val(keys[i], v, val);
		sqlite3_bind_blob(st, 1, k, KEY_LEN, SQLITE_STATIC);
		sqlite3_bind_blob(st, 2, val, VAL_LEN, SQLITE_STATIC);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : -1;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_OK && hold_us)
		usleep((useconds_t)hold_us);
	return sqlite3_exec(e->sw, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) || rc;
}

/* A reader's connection is opened once per thread and kept (as SQLite
 * users do); a read transaction is BEGIN + first read .. COMMIT. */
static _Thread_local struct sq_reader tls_sq;

static void *s_rbegin(struct eng *e)
{
	struct sq_reader *r = &tls_sq;

	if (!r->db && (sq_conn(e, &r->db) ||
		       sqlite3_prepare_v2(r->db, "SELECT v FROM kv WHERE k=?", -1,
					  &r->get, NULL) ||
		       sqlite3_prepare_v2(r->db, "SELECT k FROM kv ORDER BY k", -1,
					  &r->scan, NULL)))
		return NULL;
	return sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK ? r : NULL;
}

static int s_get(struct eng *e, void *rt, long key)
{
	struct sq_reader *r = rt;
	unsigned char k[KEY_LEN];
	int ok;

	(void)e;
	make_key(key, k);
	sqlite3_bind_blob(r->get, 1, k, KEY_LEN, SQLITE_STATIC);
	ok = sqlite3_step(r->get) == SQLITE_ROW &&
	     val_ok(key, sqlite3_column_blob(r->get, 0), (size_t)sqlite3_column_bytes(r->get, 0));
	sqlite3_reset(r->get);
	return ok ? 0 : -1;
}

static long s_scan(struct eng *e, void *rt)
{
	struct sq_reader *r = rt;
	long n = 0;

	(void)e;
	while (sqlite3_step(r->scan) == SQLITE_ROW)
		n++;
	sqlite3_reset(r->scan);
	return n;
}

static void s_rend(struct eng *e, void *rt)
{
	(void)e;
	sqlite3_exec(((struct sq_reader *)rt)->db, "COMMIT", NULL, NULL, NULL);
}

static const struct ops sqlite_ops = { "sqlite-wal", s_open, s_close, s_write,
				       s_rbegin, s_get, s_scan, s_rend };

/* ---- LMDB -------------------------------------------------------------- */

#ifdef UT_BENCH_LMDB
static int l_open(struct eng *e, const char *path, const struct cfg *c)
{
	MDB_txn *t;

	if (mdb_env_create(&e->env) ||
	    mdb_env_set_mapsize(e->env, (size_t)c->n * 1024 + (16ull << 30)) ||
	    mdb_env_set_maxreaders(e->env, 16) ||
	    mdb_env_open(e->env, path, MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOMETASYNC |
			 MDB_NOTLS, 0644))
		return -1;
	if (mdb_txn_begin(e->env, NULL, 0, &t) || mdb_dbi_open(t, NULL, 0, &e->dbi))
		return -1;
	return mdb_txn_commit(t) ? -1 : 0;
}

static void l_close(struct eng *e) { mdb_env_close(e->env); }

static int l_write(struct eng *e, const long *keys, int n, int v, int hold_us)
{
	unsigned char k[KEY_LEN], val[VAL_LEN];
	MDB_txn *t;
	int rc = mdb_txn_begin(e->env, NULL, 0, &t);

	for (int i = 0; !rc && i < n; i++) {
		MDB_val mk = { KEY_LEN, k }, mv = { VAL_LEN, val };

		make_key(keys[i], k);
		make_val(keys[i], v, val);
		rc = mdb_put(t, e->dbi, &mk, &mv, 0);
	}
	if (!rc && hold_us)
		usleep((useconds_t)hold_us);
	if (rc) {
		fprintf(stderr, "lmdb write: %s\n", mdb_strerror(rc));
		mdb_txn_abort(t);
		return rc;
	}
	return mdb_txn_commit(t);
}

static void *l_rbegin(struct eng *e)
{
	MDB_txn *t;
	int rc = mdb_txn_begin(e->env, NULL, MDB_RDONLY, &t);

	if (rc)
		fprintf(stderr, "lmdb read begin: %s\n", mdb_strerror(rc));
	return rc ? NULL : t;
}

static int l_get(struct eng *e, void *rt, long key)
{
	unsigned char k[KEY_LEN];
	MDB_val mk = { KEY_LEN, k }, mv;

	make_key(key, k);
	int rc = mdb_get(rt, e->dbi, &mk, &mv);
	if (rc) {
		fprintf(stderr, "lmdb get: %s\n", mdb_strerror(rc));
		return -1;
	}
	return val_ok(key, mv.mv_data, mv.mv_size) ? 0 : -1;
}

static long l_scan(struct eng *e, void *rt)
{
	MDB_cursor *cur;
	MDB_val mk, mv;
	long n = 0;

	if (mdb_cursor_open(rt, e->dbi, &cur))
		return -1;
	for (int rc = mdb_cursor_get(cur, &mk, &mv, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &mk, &mv, MDB_NEXT))
		n++;
	mdb_cursor_close(cur);
	return n;
}

static void l_rend(struct eng *e, void *rt)
{
	(void)e;
	mdb_txn_abort(rt);
}

static const struct ops lmdb_ops = { "lmdb", l_open, l_close, l_write,
				     l_rbegin, l_get, l_scan, l_rend };
#endif

/* ---- measuring --------------------------------------------------------- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct lat {
	double *s;
	size_t n;
};

static void lat_add(struct lat *l, double sec)
{
	if (!l->s)
		l->s = malloc(MAX_SAMPLES * sizeof(double));
	if (l->s && l->n < MAX_SAMPLES)
		l->s[l->n++] = sec;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* a figure: rate per second and latency percentiles (µs) */
struct fig {
	double rate, p50, p99, p999;
	double cores; /* CPU seconds of the measured threads per wall second */
};

static struct fig fig_of(struct lat *l, double secs, double units)
{
	struct fig f = { units / secs, 0, 0, 0, 0 };

	if (l->n) {
		qsort(l->s, l->n, sizeof(double), by_value);
		f.p50 = l->s[l->n / 2] * 1e6;
		f.p99 = l->s[(size_t)((double)l->n * 0.99)] * 1e6;
		f.p999 = l->s[(size_t)((double)l->n * 0.999)] * 1e6;
	}
	free(l->s);
	l->s = NULL;
	l->n = 0;
	return f;
}

enum { F_ALONE, F_READER, F_RDBEGIN, F_GET1, F_GET2, F_N };
static const char *const fig_name[F_N] = {
	"writer alone (commits/s)", "writer + 1 snapshot reader (commits/s)",
	"rd begin+get, writer mid-txn (/s)", "random gets, 1 thread (gets/s)",
	"random gets, 2 threads (gets/s)"
};

struct result {
	struct fig f[F_N];
	long scans;     /* full scans the long reader finished */
	long rss_kib;   /* VmHWM of the child */
	char err[200];
};

struct run {
	struct eng *e;
	double until;
	uint64_t seed;
	int hold_us;
	atomic_long units;
	atomic_int stop, failed;
	_Atomic double cpu; /* thread CPU seconds of the measured threads */
	struct lat lat[2];
	long scans;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double thread_cpu(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void add_cpu(struct run *r, double secs)
{
	double old = atomic_load(&r->cpu);

	while (!atomic_compare_exchange_weak(&r->cpu, &old, old + secs))
		;
}

static void *writer_thread(void *arg)
{
	struct run *r = arg;
	long keys[64];
	uint64_t s = r->seed | 1;
	int v = 1;

	while (!r->stop && now() < r->until) {
		int w = r->hold_us ? 1 : r->e->c->w;
		double t0;

		for (int i = 0; i < w; i++)
			keys[i] = (long)(rnd(&s) % (uint64_t)r->e->c->n);
		t0 = now();
		if (r->e->ops->write(r->e, keys, w, v++, r->hold_us)) {
			r->failed = 1;
			break;
		}
		if (!r->hold_us)
			lat_add(&r->lat[0], now() - t0);
		r->units++;
	}
	if (!r->hold_us) /* the writer's figure: its own CPU */
		add_cpu(r, thread_cpu());
	return NULL;
}

static void *scan_thread(void *arg)
{
	struct run *r = arg;
	void *rt = r->e->ops->rbegin(r->e);

	if (!rt) {
		r->failed = 1;
		return NULL;
	}
	while (!r->stop && now() < r->until) {
		if (r->e->ops->scan(r->e, rt) != r->e->c->n) {
			r->failed = 1;
			break;
		}
		r->scans++;
	}
	r->e->ops->rend(r->e, rt);
	return NULL;
}

struct getter {
	struct run *r;
	int idx;
};

/* batch: gets per read transaction (1: the begin+get probe) */
static void *get_thread(void *arg)
{
	struct getter *g = arg;
	struct run *r = g->r;
	uint64_t s = r->seed * 2654435761u + (uint64_t)g->idx + 1;
	int batch = r->hold_us ? 1 : GET_BATCH;

	while (!r->stop && now() < r->until) {
		double t0 = now();
		void *rt = r->e->ops->rbegin(r->e);

		if (!rt) {
			r->failed = 1;
			break;
		}
		for (int i = 0; i < batch; i++) {
			if (r->e->ops->get(r->e, rt, (long)(rnd(&s) % (uint64_t)r->e->c->n))) {
				r->failed = 1;
				break;
			}
		}
		r->e->ops->rend(r->e, rt);
		lat_add(&r->lat[g->idx], now() - t0);
		r->units += batch;
	}
	add_cpu(r, thread_cpu());
	return NULL;
}

/* Run writer and/or getters/scanner for c->secs; returns 0 or -1. */
static int measure(struct eng *e, int writer, int hold_us, int scanner, int getters,
		   struct fig *out, long *scans)
{
	struct run r = { .e = e, .seed = 88172645463325252ull, .hold_us = hold_us };
	struct getter g[2] = { { &r, 0 }, { &r, 1 } };
	pthread_t tw, ts, tg[2];
	double t0 = now();

	r.until = t0 + e->c->secs;
	if (writer)
		pthread_create(&tw, NULL, writer_thread, &r);
	if (scanner)
		pthread_create(&ts, NULL, scan_thread, &r);
	for (int i = 0; i < getters; i++)
		pthread_create(&tg[i], NULL, get_thread, &g[i]);
	if (writer && !hold_us) {
		pthread_join(tw, NULL);
		r.stop = 1;
	}
	for (int i = 0; i < getters; i++)
		pthread_join(tg[i], NULL);
	r.stop = 1;
	if (writer && hold_us)
		pthread_join(tw, NULL);
	if (scanner)
		pthread_join(ts, NULL);
	if (scans)
		*scans = r.scans;
	if (getters == 2) { /* merge the two threads' samples */
		for (size_t i = 0; i < r.lat[1].n; i++)
			lat_add(&r.lat[0], r.lat[1].s[i]);
		free(r.lat[1].s);
	}
	double secs = now() - t0;

	*out = fig_of(&r.lat[0], secs, (double)r.units);
	out->cores = atomic_load(&r.cpu) / secs;
	return r.failed ? -1 : 0;
}

static long hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			v = atol(line + 6);
	if (f)
		fclose(f);
	return v;
}

static void remove_files(const char *path)
{
	char s[1100];
	const char *suf[] = { "", "-wal", "-dw", "-shm", "-lock" };

	for (size_t i = 0; i < sizeof(suf) / sizeof(suf[0]); i++) {
		snprintf(s, sizeof(s), "%s%s", path, suf[i]);
		unlink(s);
	}
}

struct job {
	const struct ops *ops;
	const struct cfg *c;
};

static int run_engine(void *arg, void *res)
{
	struct job *j = arg;
	struct result *out = res;
	struct eng e = { .ops = j->ops, .c = j->c };
	char path[1024];
	long keys[1000];

	snprintf(path, sizeof(path), "%s/snapbench-%s.db", j->c->dir, j->ops->name);
	remove_files(path);
	if (e.ops->open(&e, path, j->c)) {
		snprintf(out->err, sizeof(out->err), "%s: open failed", j->ops->name);
		return -1;
	}
	for (long i = 0; i < j->c->n; i += 1000) {
		int n = 0;

		for (long k = i; k < j->c->n && k < i + 1000; k++)
			keys[n++] = k;
		if (e.ops->write(&e, keys, n, 0, 0)) {
			snprintf(out->err, sizeof(out->err), "%s: load failed", j->ops->name);
			return -1;
		}
	}
	if (measure(&e, 1, 0, 0, 0, &out->f[F_ALONE], NULL) ||
	    measure(&e, 1, 0, 1, 0, &out->f[F_READER], &out->scans) ||
	    measure(&e, 1, 2000, 0, 1, &out->f[F_RDBEGIN], NULL) ||
	    measure(&e, 0, 0, 0, 1, &out->f[F_GET1], NULL) ||
	    measure(&e, 0, 0, 0, 2, &out->f[F_GET2], NULL)) {
		snprintf(out->err, sizeof(out->err), "%s: a measurement failed",
			 j->ops->name);
		return -1;
	}
	out->rss_kib = hwm_kib();
	e.ops->close(&e);
	remove_files(path);
	return 0;
}

static void print_fig(const struct fig *f)
{
	printf(" %10.0f | %8.1f | %8.1f | %9.1f | %5.2f | %10.0f |", f->rate, f->p50,
	       f->p99, f->p999, f->cores, f->cores > 0 ? f->rate / f->cores : 0);
}

int main(int argc, char **argv)
{
	struct cfg c = { 200000, 10, 10.0, 3, 64, "/tmp" };
	const char *engines = "untorn,lmdb,sqlite";
	const struct ops *all[] = { &untorn_ops,
#ifdef UT_BENCH_LMDB
				    &lmdb_ops,
#endif
				    &sqlite_ops };
	const struct ops *sel[4];
	int nsel = 0, opt;

	while ((opt = getopt(argc, argv, "n:w:t:r:c:d:e:h")) != -1) {
		switch (opt) {
		case 'n': c.n = atol(optarg); break;
		case 'w': c.w = atoi(optarg); break;
		case 't': c.secs = atof(optarg); break;
		case 'r': c.rounds = atoi(optarg); break;
		case 'c': c.cache_mib = (size_t)atol(optarg); break;
		case 'd': c.dir = optarg; break;
		case 'e': engines = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-n N] [-w W] [-t SECONDS] [-r ROUNDS] "
				"[-c CACHE_MIB] [-d DIR] [-e untorn,lmdb,sqlite]\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (c.w < 1 || c.w > 64 || c.n < 1000 || c.rounds < 1) {
		fprintf(stderr, "bench_snapshot: -w 1..64, -n >= 1000, -r >= 1\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strstr(engines, all[i]->name) ||
		    (!strcmp(all[i]->name, "sqlite-wal") && strstr(engines, "sqlite")))
			sel[nsel++] = all[i];
	printf("# bench_snapshot: %ld keys (16 B + 100 B), %d updates per write "
	       "transaction, %.0f s per figure, %d rounds, cache %zu MiB, dir %s\n",
	       c.n, c.w, c.secs, c.rounds, c.cache_mib, c.dir);
	printf("# latency columns are microseconds per unit: a commit; a read "
	       "begin+get+end; a %d-get read transaction\n\n", GET_BATCH);
	static struct result res[16][4];
	for (int round = 0; round < c.rounds && round < 16; round++) {
		printf("## round %d\n\n| system | figure | rate | p50 µs | p99 µs | "
		       "p99.9 µs | cores | rate/core |\n"
		       "|---|---|---:|---:|---:|---:|---:|---:|\n", round + 1);
		for (int s = 0; s < nsel; s++) {
			/* rotate the order each round: no system always first */
			int k = (s + round) % nsel;
			struct job j = { sel[k], &c };
			struct result *r = &res[round][k];
			char why[200] = "";

			if (bench_run_child(run_engine, &j, r, sizeof(*r), why, sizeof(why))) {
				printf("| %s | FAILED: %s %s | | | | | | |\n", sel[k]->name,
				       r->err, why);
				continue;
			}
			for (int f = 0; f < F_N; f++) {
				printf("| %s | %s |", sel[k]->name, fig_name[f]);
				print_fig(&r->f[f]);
				printf("\n");
			}
			printf("| %s | full scans by the reader; peak RSS | %ld | %ld KiB | | | | |\n",
			       sel[k]->name, r->scans, r->rss_kib);
		}
		printf("\n");
		fflush(stdout);
	}
	printf("## spread over rounds (min..max)\n\n| system | figure | rate | p99 µs |\n"
	       "|---|---|---|---|\n");
	for (int s = 0; s < nsel; s++) {
		for (int f = 0; f < F_N; f++) {
			double rmin = 1e300, rmax = 0, pmin = 1e300, pmax = 0;

			for (int round = 0; round < c.rounds && round < 16; round++) {
				struct fig *x = &res[round][s].f[f];

				if (x->rate < rmin) rmin = x->rate;
				if (x->rate > rmax) rmax = x->rate;
				if (x->p99 < pmin) pmin = x->p99;
				if (x->p99 > pmax) pmax = x->p99;
			}
			printf("| %s | %s | %.0f..%.0f | %.1f..%.1f |\n", sel[s]->name,
			       fig_name[f], rmin, rmax, pmin, pmax);
		}
	}
	return 0;
}

/*
 * tests/test_differential.c - the engine against SQLite as an oracle.
 *
 * Each seed drives a random sequence of operations through untorn and an
 * in-memory SQLite table (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID, whose
 * order (memcmp, then length) is untorn's key order:
 *   put (new keys and overwrites), del (mostly of existing keys), get, and
 *   range scans (cursor seek + N nexts, sometimes to the end), grouped into
 *   write transactions of random size of which some are aborted, plus
 *   read-only transactions between them.  The database is closed and
 *   reopened every few thousand operations (with a full comparison), and the
 *   cache is small (256 KiB - 1 MiB) so pages are evicted and re-read.
 * Keys are 1..1024 bytes (mostly short, often sharing prefixes), values
 * 0..64 KiB (mostly small, some large enough for overflow pages).
 * At the end the contents are compared in full and ut_check (and, when
 * UT_TOOL is set, `untorn check`) must report the database clean.
 *
 * Environment:
 *   UT_SEED=N        run only seed N (UT_SEED=random: a seed from the clock)
 *   UT_DIFF_OPS=N    operations per seed (default 75000; 4 seeds by default,
 *                    so 300,000 operations in all; keep >= 200,000)
 *   UT_TMPDIR=DIR    where the database files go (default /tmp)
 *   UT_TOOL=PATH     the untorn CLI, for the final `untorn check`
 * A failure prints the seed, the operation number and the command that
 * reproduces it; the database directory is kept for inspection.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "helper_fs.h"
#include "untorn.h"

#define DEFAULT_OPS 75000L
#define MAX_VAL (64u * 1024u)
#define POOL_MAX 40000

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	/* splitmix64 */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t below(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)(rnd(r) % n) : 0;
}

static int chance(struct rng *r, unsigned pct)
{
	return below(r, 100) < pct;
}

struct key {
	uint16_t len;
	unsigned char *p;
};

struct diff {
	uint64_t seed;
	long nops;
	long op;            /* current operation number */
	const char *what;   /* current operation, for failure messages */
	struct rng r;
	char dir[512];
	char path[600];
	ut_options opt;
	ut_db *db;
	ut_txn *txn;        /* open write transaction, or NULL */
	sqlite3 *sq;
	sqlite3_stmt *s_put, *s_del, *s_get, *s_scan;
	struct key pool[POOL_MAX];
	int npool;
	unsigned char *vbuf;
	/* statistics */
	long n_put, n_del, n_get, n_scan, n_commit, n_abort, n_reopen, n_hit;
};

static void diff_fail(struct diff *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void diff_fail(struct diff *d, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr,
		"differential FAILED: seed %llu, op %ld (%s): %s\n"
		"  engine detail: %s\n"
		"  database kept in %s\n"
		"  reproduce: UT_SEED=%llu UT_DIFF_OPS=%ld ./test_differential\n",
		(unsigned long long)d->seed, d->op, d->what ? d->what : "-", msg,
		ut_errdetail(), d->dir, (unsigned long long)d->seed, d->nops);
	fail_msg("seed %llu op %ld: %s", (unsigned long long)d->seed, d->op, msg);
}

#define ENGINE_OK(d, call)                                                  \
	do {                                                                \
		int rc_ = (call);                                           \
		if (rc_ != UT_OK)                                           \
			diff_fail(d, "%s returned %d (%s)", #call, rc_,     \
				  ut_strerror(rc_));                        \
	} while (0)

static void sq_exec(struct diff *d, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(d->sq, sql, NULL, NULL, &err) != SQLITE_OK) {
		diff_fail(d, "sqlite: %s: %s", sql, err ? err : "?");
		sqlite3_free(err);
	}
}

static void sq_prepare(struct diff *d, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(d->sq, sql, -1, st, NULL) != SQLITE_OK)
		diff_fail(d, "sqlite prepare: %s", sqlite3_errmsg(d->sq));
}

static const unsigned char empty[1];

/* ------------------------------------------------------------- generators */

static size_t gen_key_len(struct rng *r)
{
	unsigned p = below(r, 1000);

	if (p < 850)
		return 1 + below(r, 16);
	if (p < 980)
		return 17 + below(r, 100);
	return 117 + below(r, UT_MAX_KEY - 116);
}

/* A fresh key; a third of them extend or cut a pooled key so that keys share
 * prefixes and prefixes of keys are keys. */
static void gen_new_key(struct diff *d, unsigned char *k, size_t *klen)
{
	struct rng *r = &d->r;
	size_t len = gen_key_len(r), pre = 0;

	if (d->npool && chance(r, 33)) {
		struct key *b = &d->pool[below(r, (uint32_t)d->npool)];

		pre = below(r, (uint32_t)b->len + 1);
		if (pre > len)
			len = pre + (chance(r, 50) ? 0 : 1 + below(r, 8));
		if (len > UT_MAX_KEY)
			len = UT_MAX_KEY;
		if (pre > len)
			pre = len;
		memcpy(k, b->p, pre);
	}
	for (size_t i = pre; i < len; i++) {
		/* a small alphabet half the time, to make ties and prefixes */
		k[i] = chance(r, 50) ? (unsigned char)('a' + below(r, 4))
				     : (unsigned char)rnd(r);
	}
	if (len == 0) {
		k[0] = (unsigned char)rnd(r);
		len = 1;
	}
	*klen = len;
}

static void pool_add(struct diff *d, const unsigned char *k, size_t klen)
{
	struct key *slot;

	if (d->npool < POOL_MAX) {
		slot = &d->pool[d->npool++];
	} else {
		slot = &d->pool[below(&d->r, POOL_MAX)];
		free(slot->p);
	}
	slot->p = malloc(klen);
	assert_non_null(slot->p);
	memcpy(slot->p, k, klen);
	slot->len = (uint16_t)klen;
}

/* A key for an operation: pct percent of the time a pooled key (skewed to
 * recent ones), otherwise a fresh one. */
static void pick_key(struct diff *d, unsigned pct, unsigned char *k, size_t *klen,
		     int remember)
{
	struct rng *r = &d->r;

	if (d->npool && chance(r, pct)) {
		uint32_t i;

		if (chance(r, 50) && d->npool > 64)
			i = (uint32_t)d->npool - 1 - below(r, 64);
		else
			i = below(r, (uint32_t)d->npool);
		memcpy(k, d->pool[i].p, d->pool[i].len);
		*klen = d->pool[i].len;
		return;
	}
	gen_new_key(d, k, klen);
	if (remember)
		pool_add(d, k, *klen);
}

static size_t gen_val(struct diff *d)
{
	struct rng *r = &d->r;
	unsigned p = below(r, 1000);
	size_t len;
	uint64_t x;

	if (p < 50)
		len = 0;
	else if (p < 750)
		len = 1 + below(r, 100);
	else if (p < 930)
		len = 101 + below(r, 2000);
	else if (p < 985)
		len = 2101 + below(r, 14000);
	else
		len = 16101 + below(r, MAX_VAL - 16100);
	x = rnd(r);
	for (size_t i = 0; i < len; i += 8) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		memcpy(d->vbuf + i, &x, len - i < 8 ? len - i : 8);
	}
	return len;
}

/* ------------------------------------------------------------ the oracle */

static int sq_get(struct diff *d, const void *k, size_t kl, const void **v,
		  size_t *vl)
{
	int rc;

	sqlite3_reset(d->s_get);
	sqlite3_bind_blob(d->s_get, 1, k, (int)kl, SQLITE_STATIC);
	rc = sqlite3_step(d->s_get);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		diff_fail(d, "sqlite get: %s", sqlite3_errmsg(d->sq));
	*v = sqlite3_column_blob(d->s_get, 0);
	*vl = (size_t)sqlite3_column_bytes(d->s_get, 0);
	return 1;
}

static void describe(struct diff *d, char *buf, size_t n, const char *op,
		     const unsigned char *k, size_t kl)
{
	size_t o = (size_t)snprintf(buf, n, "%s klen=%zu key=", op, kl);

	for (size_t i = 0; i < kl && i < 24 && o + 3 < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%02x", k[i]);
	if (kl > 24 && o + 4 < n)
		snprintf(buf + o, n - o, "...");
	d->what = buf;
}

/* ------------------------------------------------------------ operations */

static void do_put(struct diff *d)
{
	unsigned char k[UT_MAX_KEY];
	size_t kl, vl;
	char w[128];

	pick_key(d, 55, k, &kl, 1);
	vl = gen_val(d);
	describe(d, w, sizeof(w), "put", k, kl);
	ENGINE_OK(d, ut_put(d->txn, k, kl, d->vbuf, vl));
	sqlite3_reset(d->s_put);
	sqlite3_bind_blob(d->s_put, 1, k, (int)kl, SQLITE_STATIC);
	sqlite3_bind_blob(d->s_put, 2, vl ? d->vbuf : empty, (int)vl, SQLITE_STATIC);
	if (sqlite3_step(d->s_put) != SQLITE_DONE)
		diff_fail(d, "sqlite put: %s", sqlite3_errmsg(d->sq));
	d->n_put++;
}

static void do_del(struct diff *d)
{
	unsigned char k[UT_MAX_KEY];
	size_t kl;
	int rc, had;
	char w[128];

	pick_key(d, 85, k, &kl, 0);
	describe(d, w, sizeof(w), "del", k, kl);
	rc = ut_del(d->txn, k, kl);
	sqlite3_reset(d->s_del);
	sqlite3_bind_blob(d->s_del, 1, k, (int)kl, SQLITE_STATIC);
	if (sqlite3_step(d->s_del) != SQLITE_DONE)
		diff_fail(d, "sqlite del: %s", sqlite3_errmsg(d->sq));
	had = sqlite3_changes(d->sq) > 0;
	if (had && rc != UT_OK)
		diff_fail(d, "ut_del of a present key returned %d (%s)", rc,
			  ut_strerror(rc));
	if (!had && rc != UT_NOTFOUND)
		diff_fail(d, "ut_del of an absent key returned %d (%s), not UT_NOTFOUND",
			  rc, ut_strerror(rc));
	d->n_del++;
	d->n_hit += had;
}

static void do_get(struct diff *d, ut_txn *t)
{
	unsigned char k[UT_MAX_KEY];
	size_t kl, vl = 0, ovl = 0;
	void *v = NULL;
	const void *ov = NULL;
	int rc, had;
	char w[128];

	pick_key(d, 75, k, &kl, 0);
	describe(d, w, sizeof(w), "get", k, kl);
	rc = ut_get(t, k, kl, &v, &vl);
	had = sq_get(d, k, kl, &ov, &ovl);
	if (!had) {
		if (rc != UT_NOTFOUND)
			diff_fail(d, "ut_get of an absent key returned %d (%s)", rc,
				  ut_strerror(rc));
	} else if (rc != UT_OK) {
		diff_fail(d, "ut_get of a present key returned %d (%s)", rc,
			  ut_strerror(rc));
	} else if (vl != ovl || (vl && memcmp(v, ov, vl))) {
		diff_fail(d, "ut_get value differs: %zu bytes, oracle %zu", vl, ovl);
	}
	free(v);
	sqlite3_reset(d->s_get);
	d->n_get++;
	d->n_hit += had;
}

/* Seek to k (klen 0: the first key) and compare the next n entries (n < 0:
 * to the end) with the oracle's. */
static void compare_range(struct diff *d, ut_txn *t, const unsigned char *k,
			  size_t kl, long n)
{
	ut_cursor *c;
	int rc;
	long i = 0;

	ENGINE_OK(d, ut_cursor_open(t, &c));
	rc = ut_cursor_seek(c, k, kl);
	if (rc != UT_OK && rc != UT_NOTFOUND)
		diff_fail(d, "ut_cursor_seek returned %d (%s)", rc, ut_strerror(rc));
	sqlite3_reset(d->s_scan);
	sqlite3_bind_blob(d->s_scan, 1, kl ? (const void *)k : empty, (int)kl,
			  SQLITE_STATIC);
	sqlite3_bind_int64(d->s_scan, 2, n);
	for (;;) {
		int src = sqlite3_step(d->s_scan);
		const void *ek, *ev;
		size_t ekl, evl, okl, ovl;
		const void *ok, *ov;

		if (src != SQLITE_ROW && src != SQLITE_DONE)
			diff_fail(d, "sqlite scan: %s", sqlite3_errmsg(d->sq));
		if (src == SQLITE_DONE) {
			if (rc == UT_OK && (n < 0 || i < n))
				diff_fail(d, "scan: engine has an entry after the "
					  "oracle's last (entry %ld)", i);
			break;
		}
		if (rc != UT_OK)
			diff_fail(d, "scan: engine ended (rc %d) at entry %ld, oracle "
				  "has more", rc, i);
		ENGINE_OK(d, ut_cursor_get(c, &ek, &ekl, &ev, &evl));
		ok = sqlite3_column_blob(d->s_scan, 0);
		okl = (size_t)sqlite3_column_bytes(d->s_scan, 0);
		ov = sqlite3_column_blob(d->s_scan, 1);
		ovl = (size_t)sqlite3_column_bytes(d->s_scan, 1);
		if (ekl != okl || memcmp(ek, ok, ekl))
			diff_fail(d, "scan entry %ld: key differs (klen %zu, oracle %zu)",
				  i, ekl, okl);
		if (evl != ovl || (evl && memcmp(ev, ov, evl)))
			diff_fail(d, "scan entry %ld: value differs (vlen %zu, oracle %zu)",
				  i, evl, ovl);
		i++;
		rc = ut_cursor_next(c);
		if (rc != UT_OK && rc != UT_NOTFOUND)
			diff_fail(d, "ut_cursor_next returned %d (%s)", rc,
				  ut_strerror(rc));
	}
	sqlite3_reset(d->s_scan);
	ut_cursor_close(c);
}

static void do_scan(struct diff *d, ut_txn *t)
{
	unsigned char k[UT_MAX_KEY];
	size_t kl = 0;
	long n;
	char w[128];
	unsigned p = below(&d->r, 100);

	if (p < 10)
		kl = 0;
	else
		pick_key(d, 60, k, &kl, 0);
	n = chance(&d->r, 2) ? -1 : 1 + (long)below(&d->r, chance(&d->r, 80) ? 20 : 500);
	describe(d, w, sizeof(w), n < 0 ? "scan-to-end" : "scan", k, kl);
	compare_range(d, t, k, kl, n);
	d->n_scan++;
}

static void full_compare(struct diff *d, const char *why)
{
	ut_txn *t;

	d->what = why;
	ENGINE_OK(d, ut_begin(d->db, UT_RDONLY, &t));
	compare_range(d, t, NULL, 0, -1);
	ut_abort(t);
}

/* --------------------------------------------------------------- driver */

static void db_open(struct diff *d)
{
	int rc = ut_open(d->path, &d->opt, &d->db);

	if (rc)
		diff_fail(d, "ut_open(%s) returned %d (%s)", d->path, rc,
			  ut_strerror(rc));
}

static void db_close(struct diff *d)
{
	int rc = ut_close(d->db);

	if (rc)
		diff_fail(d, "ut_close returned %d (%s)", rc, ut_strerror(rc));
	d->db = NULL;
}

static void run_tool_check(struct diff *d)
{
	const char *tool = getenv("UT_TOOL");
	char cmd[1400];
	int st;

	if (!tool || access(tool, X_OK))
		return;
	d->what = "untorn check";
	snprintf(cmd, sizeof(cmd), "'%s' check '%s' >/dev/null", tool, d->path);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(cmd, sizeof(cmd), "'%s' check '%s' >&2", tool, d->path);
		if (system(cmd)) { /* show its report */ }
		diff_fail(d, "`untorn check` exited %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
}

static void run_seed(uint64_t seed, long nops)
{
	struct diff *d = calloc(1, sizeof(*d));
	const char *tmp = getenv("UT_TMPDIR");
	static const size_t caches[] = { 256u << 10, 512u << 10, 1u << 20 };
	long next_reopen, txn_left = 0;
	int txn_abort = 0;
	struct timespec t0, t1;

	assert_non_null(d);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	d->seed = seed;
	d->nops = nops;
	d->r.s = seed * 0x2545f4914f6cdd1dull + 1;
	d->vbuf = malloc(MAX_VAL + 8);
	assert_non_null(d->vbuf);
	if (!tmp || !*tmp)
		tmp = "/tmp";
	mkdir(tmp, 0777);
	snprintf(d->dir, sizeof(d->dir), "%s/diff-%llu-XXXXXX", tmp,
		 (unsigned long long)seed);
	if (!mkdtemp(d->dir))
		diff_fail(d, "mkdtemp %s: %s", d->dir, strerror(errno));
	snprintf(d->path, sizeof(d->path), "%s/db", d->dir);

	ut_options_default(&d->opt);
	d->opt.cache_bytes = caches[seed % 3];
	d->opt.sync = 0;
	d->opt.create = 1;

	assert_int_equal(sqlite3_open(":memory:", &d->sq), SQLITE_OK);
	sq_exec(d, "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID");
	sq_prepare(d, "INSERT OR REPLACE INTO kv(k, v) VALUES(?1, ?2)", &d->s_put);
	sq_prepare(d, "DELETE FROM kv WHERE k = ?1", &d->s_del);
	sq_prepare(d, "SELECT v FROM kv WHERE k = ?1", &d->s_get);
	sq_prepare(d, "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2",
		   &d->s_scan);

	db_open(d);
	next_reopen = 2000 + below(&d->r, 4000);
	for (d->op = 0; d->op < nops; d->op++) {
		unsigned p;

		if (!d->txn && d->op >= next_reopen) {
			d->what = "reopen";
			db_close(d);
			db_open(d);
			full_compare(d, "full compare after reopen");
			d->n_reopen++;
			next_reopen = d->op + 2000 + below(&d->r, 4000);
		}
		if (!d->txn) {
			/* Between write transactions, sometimes a reader. */
			if (chance(&d->r, 15)) {
				ut_txn *rt;
				int n = 1 + (int)below(&d->r, 20);

				d->what = "begin read-only";
				ENGINE_OK(d, ut_begin(d->db, UT_RDONLY, &rt));
				for (int i = 0; i < n && d->op < nops; i++, d->op++) {
					if (chance(&d->r, 80))
						do_get(d, rt);
					else
						do_scan(d, rt);
				}
				if (chance(&d->r, 3)) {
					int rc = ut_put(rt, "x", 1, "y", 1);

					d->what = "put in a read-only txn";
					if (rc != UT_EREADONLY)
						diff_fail(d, "ut_put through a read-only "
							  "transaction returned %d, not "
							  "UT_EREADONLY", rc);
				}
				if (chance(&d->r, 50))
					ut_abort(rt);
				else
					ENGINE_OK(d, ut_commit(rt));
				continue;
			}
			d->what = "begin";
			ENGINE_OK(d, ut_begin(d->db, 0, &d->txn));
			sq_exec(d, "BEGIN");
			p = below(&d->r, 100);
			txn_left = p < 50 ? 1 + below(&d->r, 5)
				 : p < 96 ? 1 + below(&d->r, 60)
				 : 1 + below(&d->r, 2000);
			txn_abort = chance(&d->r, 15);
		}
		p = below(&d->r, 100);
		if (p < 45)
			do_put(d);
		else if (p < 62)
			do_del(d);
		else if (p < 90)
			do_get(d, d->txn);
		else
			do_scan(d, d->txn);
		if (--txn_left <= 0) {
			if (txn_abort) {
				d->what = "abort";
				ut_abort(d->txn);
				sq_exec(d, "ROLLBACK");
				d->n_abort++;
			} else {
				d->what = "commit";
				ENGINE_OK(d, ut_commit(d->txn));
				sq_exec(d, "COMMIT");
				d->n_commit++;
			}
			d->txn = NULL;
			/* what a transaction did (or did not) must show */
			if (chance(&d->r, 5)) {
				ut_txn *rt;

				d->what = "begin read-only";
				ENGINE_OK(d, ut_begin(d->db, UT_RDONLY, &rt));
				d->op++;
				do_scan(d, rt);
				ut_abort(rt);
			}
		}
	}
	if (d->txn) {
		ENGINE_OK(d, ut_commit(d->txn));
		sq_exec(d, "COMMIT");
		d->txn = NULL;
	}
	full_compare(d, "final full compare");
	db_close(d);
	db_open(d);
	full_compare(d, "full compare after the final reopen");
	{
		ut_check_result cr;
		int rc;

		d->what = "ut_check";
		memset(&cr, 0, sizeof(cr));
		rc = ut_check(d->db, stderr, &cr);
		if (rc != UT_OK)
			diff_fail(d, "ut_check returned %d (%s): %llu bad checksums, "
				  "%llu invariant errors", rc, ut_strerror(rc),
				  (unsigned long long)cr.bad_checksums,
				  (unsigned long long)cr.invariant_errors);
	}
	db_close(d);
	run_tool_check(d);

	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr,
		"differential: seed %llu: %ld ops in %.1f s (put %ld, del %ld, "
		"get %ld, scan %ld; %ld hits; %ld commits, %ld aborts, %ld "
		"reopens; cache %zu KiB)\n",
		(unsigned long long)seed, nops,
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
		d->n_put, d->n_del, d->n_get, d->n_scan, d->n_hit, d->n_commit,
		d->n_abort, d->n_reopen, d->opt.cache_bytes >> 10);

	sqlite3_finalize(d->s_put);
	sqlite3_finalize(d->s_del);
	sqlite3_finalize(d->s_get);
	sqlite3_finalize(d->s_scan);
	sqlite3_close(d->sq);
	rm_tree(d->dir);
	for (int i = 0; i < d->npool; i++)
		free(d->pool[i].p);
	free(d->vbuf);
	free(d);
}

static long env_ops(void)
{
	const char *e = getenv("UT_DIFF_OPS");
	long n = e ? strtol(e, NULL, 10) : 0;

	return n > 0 ? n : DEFAULT_OPS;
}

static void test_seed(void **state)
{
	run_seed(*(uint64_t *)*state, env_ops());
}

static uint64_t seeds[] = { 1, 2, 3, 4 };

int main(void)
{
	const char *e = getenv("UT_SEED");

	setvbuf(stderr, NULL, _IOLBF, 0);
	if (e && *e) {
		static uint64_t one;

		if (!strcmp(e, "random"))
			one = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		else
			one = strtoull(e, NULL, 0);
		fprintf(stderr, "differential: UT_SEED=%llu\n", (unsigned long long)one);
		const struct CMUnitTest t[] = {
			cmocka_unit_test_prestate(test_seed, &one),
		};
		return cmocka_run_group_tests_name("differential", t, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
		{ "seed 1", test_seed, NULL, NULL, &seeds[0] },
		{ "seed 2", test_seed, NULL, NULL, &seeds[1] },
		{ "seed 3", test_seed, NULL, NULL, &seeds[2] },
		{ "seed 4", test_seed, NULL, NULL, &seeds[3] },
	};
	return cmocka_run_group_tests_name("differential", tests, NULL, NULL);
}

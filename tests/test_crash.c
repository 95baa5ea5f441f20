/*
 * tests/test_crash.c - the in-process crash test harness.
 *
 * A seeded random workload runs against a database on the simulated disk
 * (io/ut_simdisk.h).  A dry run counts its I/O events; then, for each chosen
 * crash point N, the workload runs again on a fresh disk with the power cut
 * at event N, the disk reboots (pending writes kept / dropped / torn in
 * 4 KiB sectors), the database is reopened on the same disk and checked:
 *
 *   1. recovery (open) succeeds;
 *   2. the recovered contents equal the oracle state after committed
 *      transaction k for some acked <= k <= acked + inflight, where acked is
 *      the number of commits that RETURNED UT_OK and inflight is 1 when a
 *      commit was running when the power went;
 *   3. the oracle is SQLite: a versioned table kv(k, v, born, died) built
 *      during the generation of the workload; state s is the rows with
 *      born <= s < died, read in key order and compared row by row with a
 *      full cursor scan (every key also looked up with ut_get);
 *   4. integrity: the engine has no check function (yet), so the harness
 *      walks the B+tree itself through the pager (every page read is
 *      checksum-verified by the pager): page types, key order inside pages
 *      and against the separators of the parents, equal leaf depth,
 *      overflow chains (type, lengths), the free list, every page of the
 *      file reached exactly once; and ut_stats corrupt_pages == 0;
 *   5. a few more transactions on the recovered database commit and read
 *      back (it is usable);
 *   6. while it ran, a read transaction held across three commits (begun
 *      before every fifth) saw the same snapshot at its end as at its
 *      start, the power cut landing while it is open in some runs.
 *
 * Modes: doublewrite, atomic and fullpage must show zero violations.
 * unsafe is the negative control: under the same crashes (TEAR_ALL /
 * RANDOM reboots) the checks must see torn pages at least once, or the
 * test fails.  fullpage also runs with a planted bug (no page images
 * logged: every page is then written in place as unsafe writes it), which
 * must give violations.
 *
 * Code layout: workload generator (gen_*), runner (run_to_crash), checker
 * (check_*), sweep driver (sweep), then the bad-input tests.
 *
 * Environment (for scaling and reproduction):
 *   UT_CRASH_SEEDS=n    seeds per mode (default 14)
 *   UT_CRASH_POINTS=n   crash points per seed and mode (default 420; all
 *                       events when the workload has fewer)
 *   UT_CRASH_TXNS=n     transactions per workload (default 28)
 *   UT_CRASH_SEED=s     run only seed s   \ together: the one-line
 *   UT_CRASH_POINT=n    run only point n  / reproduction of a violation
 *   UT_CRASH_MODE=m     doublewrite | atomic | unsafe | fullpage: only
 *                       that sweep
 *   UT_CRASH_FULLPAGE_SEEDS=n  seeds of the fullpage sweep (default a
 *                       third of UT_CRASH_SEEDS, rounded up); the long
 *                       form, 26 seeds, is 10,567 crash points
 *   UT_CRASH_JOBS=n     worker processes sharing the seeds (default 2)
 *   UT_CRASH_VERBOSE=1  print every crash point
 *   UT_CRASH_SABOTAGE=unsafe|ack|noimage   harness self-test: run the
 *                       protected sweeps unprotected, claim one commit
 *                       more than was acknowledged, or (fullpage) log no
 *                       page images; the test must then FAIL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "btree.h"
#include "helper_fs.h"
#include "db.h"
#include "page.h"
#include "pager.h"
#include "untorn.h"
#include "ut_io.h"
#include "ut_simdisk.h"

#define DBPATH "/crash.db"
#define DWPATH DBPATH "-dw"
#define CACHE_PAGES 16
#define ALIVE INT64_MAX
#define FOREIGN_BYTES (64 * 1024) /* a foreign file in place of the dw file */

/* ---- small utilities --------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s, uint64_t n) { return n ? splitmix(s) % n : 0; }

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 0) : dflt;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define SQLOK(x) do { int rc_ = (x); if (rc_ != SQLITE_OK && rc_ != SQLITE_DONE && \
	rc_ != SQLITE_ROW) fail_msg("sqlite: %s (%d) at %s", #x, rc_, __func__); } while (0)

/* ---- workload generator ------------------------------------------------- */

enum { OP_PUT, OP_DEL };

struct op {
	int kind;
	uint8_t *k;
	size_t klen;
	uint8_t *v;
	size_t vlen;
};

struct txn {
	struct op *ops;
	size_t nops;
	int abort;      /* ut_abort instead of ut_commit */
	int checkpoint; /* ut_checkpoint after this transaction */
	int64_t state;  /* committed txns only: oracle state number after it */
};

struct live { uint8_t *k; size_t klen; };

struct workload {
	uint64_t seed;
	int wide_keys;   /* every third seed: mostly 512..1024-byte keys, so
			  * fewer cells per page and one more tree level */
	struct txn *t;
	size_t ntxn;
	int64_t ncommitted;
	sqlite3 *oracle; /* kv(k, v, born, died): state s = born <= s < died */
	sqlite3_stmt *q_state;
	struct live *live;
	size_t nlive, live_cap;
};

static uint8_t *rnd_bytes(uint64_t *s, size_t n)
{
	uint8_t *b = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)splitmix(s);
	return b;
}

static size_t gen_klen(uint64_t *s, int wide)
{
	if (wide && rnd(s, 100) < 70)
		return 512 + rnd(s, UT_MAX_KEY - 511);
	if (rnd(s, 100) < 85)
		return 1 + rnd(s, 64);
	return 65 + rnd(s, UT_MAX_KEY - 64);
}

static size_t gen_vlen(uint64_t *s)
{
	unsigned r = rnd(s, 100);
	if (r < 65)
		return rnd(s, 200);          /* small, inline */
	if (r < 90)
		return 200 + rnd(s, 3800);   /* big, still inline */
	return 4000 + rnd(s, 16 * 1024); /* overflow pages, up to ~20 KiB */
}

static int oracle_is_live(struct workload *w, const uint8_t *k, size_t kl)
{
	sqlite3_stmt *st;
	int live;
	SQLOK(sqlite3_prepare_v2(w->oracle,
		"SELECT 1 FROM kv WHERE k = ?1 AND died = ?2", -1, &st, NULL));
	sqlite3_bind_blob(st, 1, k, (int)kl, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, ALIVE);
	live = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return live;
}

static void oracle_exec(struct workload *w, const char *sql, const uint8_t *k,
			size_t kl, const uint8_t *v, size_t vl, int64_t s)
{
	sqlite3_stmt *st;
	SQLOK(sqlite3_prepare_v2(w->oracle, sql, -1, &st, NULL));
	sqlite3_bind_blob(st, 1, k, (int)kl, SQLITE_STATIC);
	if (v)
		sqlite3_bind_blob(st, 2, vl ? (const void *)v : "", (int)vl, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, s);
	sqlite3_bind_int64(st, 4, ALIVE);
	if (sqlite3_step(st) != SQLITE_DONE)
		fail_msg("oracle: %s: %s", sql, sqlite3_errmsg(w->oracle));
	sqlite3_finalize(st);
}

/* Apply a committed put/delete of state s to the versioned oracle. */
static void oracle_apply(struct workload *w, const struct op *o, int64_t s)
{
	/* A row born in this same transaction is simply replaced/removed;
	 * an older live row dies at s. */
	oracle_exec(w, "DELETE FROM kv WHERE k = ?1 AND born = ?3", o->k, o->klen,
		    NULL, 0, s);
	oracle_exec(w, "UPDATE kv SET died = ?3 WHERE k = ?1 AND died = ?4",
		    o->k, o->klen, NULL, 0, s);
	if (o->kind == OP_PUT)
		oracle_exec(w, "INSERT INTO kv(k, v, born, died) VALUES(?1, ?2, ?3, ?4)",
			    o->k, o->klen, o->v, o->vlen, s);
}

static void live_add(struct workload *w, const uint8_t *k, size_t kl)
{
	if (w->nlive == w->live_cap) {
		w->live_cap = w->live_cap ? 2 * w->live_cap : 256;
		w->live = realloc(w->live, w->live_cap * sizeof(*w->live));
	}
	w->live[w->nlive].k = malloc(kl);
	memcpy(w->live[w->nlive].k, k, kl);
	w->live[w->nlive++].klen = kl;
}

/* One transaction: puts of new keys, overwrites, deletes.  Ops of a
 * transaction that will abort are generated the same way but never touch
 * the oracle or the live-key list. */
static void gen_txn(struct workload *w, uint64_t *s, struct txn *t, size_t idx)
{
	size_t n;
	/* Multi-page transactions: a few puts of 24..64 KiB values, so one
	 * transaction is several log records over dozens of 4 KiB sectors and
	 * a torn log write can keep some of its records but not its COMMIT
	 * (recovery must then discard all of it). */
	int big = idx >= 4 && rnd(s, 100) < 15;
	/* The first transactions load the tree so it has several levels. */
	if (idx < 4)
		n = 150 + rnd(s, 100);
	else if (big)
		n = 3 + rnd(s, 4);
	else if (rnd(s, 100) < 8)
		n = 40 + rnd(s, 80);
	else
		n = 1 + rnd(s, 12);
	t->abort = idx >= 4 && rnd(s, 100) < 12;
	t->checkpoint = rnd(s, 100) < 15;
	t->ops = calloc(n, sizeof(*t->ops));
	t->nops = n;
	if (!t->abort)
		t->state = ++w->ncommitted;
	/* deleted-in-this-abort keys must not vanish from live[]: pick by
	 * index and remove from live[] only for committing transactions */
	for (size_t i = 0; i < n; i++) {
		struct op *o = &t->ops[i];
		unsigned r = rnd(s, 100);
		if (w->nlive && r < 20) { /* delete an existing key */
			size_t j = rnd(s, w->nlive);
			o->kind = OP_DEL;
			o->klen = w->live[j].klen;
			o->k = malloc(o->klen);
			memcpy(o->k, w->live[j].k, o->klen);
			if (!t->abort) {
				free(w->live[j].k);
				w->live[j] = w->live[--w->nlive];
			}
		} else if (w->nlive && r < 45) { /* overwrite */
			size_t j = rnd(s, w->nlive);
			o->kind = OP_PUT;
			o->klen = w->live[j].klen;
			o->k = malloc(o->klen);
			memcpy(o->k, w->live[j].k, o->klen);
		} else { /* new key (an accidental duplicate is an overwrite) */
			o->kind = OP_PUT;
			o->klen = gen_klen(s, w->wide_keys);
			o->k = rnd_bytes(s, o->klen);
			if (!t->abort && !oracle_is_live(w, o->k, o->klen))
				live_add(w, o->k, o->klen);
		}
		if (o->kind == OP_PUT) {
			o->vlen = big ? 24 * 1024 + rnd(s, 40 * 1024) : gen_vlen(s);
			o->v = rnd_bytes(s, o->vlen);
		}
		if (!t->abort)
			oracle_apply(w, o, t->state);
	}
	/* An aborted txn may delete a key twice (picked twice): the runner
	 * accepts UT_NOTFOUND from ut_del. */
}

static struct workload *gen_workload(uint64_t seed, size_t ntxn)
{
	struct workload *w = calloc(1, sizeof(*w));
	uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;

	w->seed = seed;
	w->wide_keys = seed % 3 == 0;
	w->ntxn = ntxn;
	w->t = calloc(ntxn, sizeof(*w->t));
	SQLOK(sqlite3_open(":memory:", &w->oracle));
	SQLOK(sqlite3_exec(w->oracle,
		"CREATE TABLE kv(k BLOB NOT NULL, v BLOB NOT NULL, born INT, died INT,"
		" PRIMARY KEY(k, born));"
		"CREATE INDEX kv_died ON kv(k, died);"
		"BEGIN", NULL, NULL, NULL));
	for (size_t i = 0; i < ntxn; i++)
		gen_txn(w, &s, &w->t[i], i);
	SQLOK(sqlite3_exec(w->oracle, "COMMIT", NULL, NULL, NULL));
	SQLOK(sqlite3_prepare_v2(w->oracle,
		"SELECT k, v FROM kv WHERE born <= ?1 AND died > ?1 ORDER BY k",
		-1, &w->q_state, NULL));
	for (size_t i = 0; i < w->nlive; i++)
		free(w->live[i].k);
	free(w->live);
	w->live = NULL;
	return w;
}

static void free_workload(struct workload *w)
{
	for (size_t i = 0; i < w->ntxn; i++) {
		for (size_t j = 0; j < w->t[i].nops; j++) {
			free(w->t[i].ops[j].k);
			free(w->t[i].ops[j].v);
		}
		free(w->t[i].ops);
	}
	free(w->t);
	sqlite3_finalize(w->q_state);
	sqlite3_close(w->oracle);
	free(w);
}

/* ---- runner ------------------------------------------------------------- */

struct run {
	int64_t acked;   /* oracle state of the last commit that returned UT_OK */
	int inflight;    /* a commit was running when it stopped */
	int crashed;     /* stopped by the power cut */
	int err;         /* the error that stopped it (0: ran to the end) */
	char what[160];  /* which call failed */
	uint64_t events; /* events at the end (dry run) */
	uint64_t *bound; /* if set: bound[i] = events before txn i begins,
			  * bound[ntxn] = events before the final ut_close */
	int snap_bad;    /* a reader's snapshot changed under it */
	char snap_what[160];
};

/* Prefix sharing (see crash_forked): at every transaction boundary i of
 * one uninterrupted run, for each crash point p in [bound[i], bound[i+1])
 * the process forks; the child arms the power cut at p and simply carries
 * on with the same run, so it replays only transaction i (not the whole
 * prefix) to reach p.  The simulated disk counts events absolutely and the
 * engine runs without its cleaner thread (flush_inline), so the child sees
 * exactly the events a fresh run crashing at p sees (UT_CRASH_POINT
 * replays from scratch). */
struct forker {
	const uint64_t *pts;   /* crash points, ascending */
	size_t npts, next;
	const uint64_t *bound; /* from the dry run, ntxn + 2 entries */
	uint64_t point;        /* in the child: its crash point */
	int child;             /* 1 in a forked child */
	int fd;                /* in the child: write end for its tally */
	struct tally *ty;      /* the parent's tally */
	struct workload *w;
	int protect, run_protect;
};

static int fork_here(struct forker *fk, ut_simdisk *d, size_t i);

static void open_opts(ut_options *o, int protect)
{
	ut_options_default(o);
	o->cache_bytes = CACHE_PAGES * UT_PAGE_SIZE;
	o->protect = protect;
	o->sync = 1;
	/* The prefix-sharing runner forks with the database open, and crash
	 * points are event numbers of a dry run: both need the engine to do
	 * its I/O in this thread, in the same order every time.  The cleaner
	 * thread's own crash points are in test_durability. */
	o->flush_inline = 1;
}

/* Run the workload on d until it ends or an engine call fails (the power
 * cut armed at crash_at, or ENOSPC); the database is closed either way. */
/* A digest of everything a read transaction sees: keys, values, count.
 * 0 when the scan could not complete (after a power cut reads may fail). */
static int snap_digest(ut_txn *rt, uint64_t *digest)
{
	ut_cursor *c;
	uint64_t h = 1469598103934665603ull;
	int rc;

	if (ut_cursor_open(rt, &c))
		return 0;
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
		const uint8_t *k, *v;
		size_t kl, vl;

		if (ut_cursor_get(c, (const void **)&k, &kl, (const void **)&v, &vl))
			break;
		for (size_t i = 0; i < kl; i++)
			h = (h ^ k[i]) * 1099511628211ull;
		for (size_t i = 0; i < vl; i++)
			h = (h ^ v[i]) * 1099511628211ull;
		h = (h ^ kl ^ (vl << 16)) * 1099511628211ull;
	}
	ut_cursor_close(c);
	*digest = h;
	return rc == UT_NOTFOUND;
}

/* Crash points also land while a reader holds a snapshot: one is begun
 * before every fifth transaction and held across three commits (and any
 * checkpoints among them); what it sees at its end must be what it saw at
 * its start. */
static void reader_step(ut_db *db, size_t i, ut_txn **rd, uint64_t *digest,
			int *digest_ok, struct run *r)
{
	uint64_t now;

	if (!*rd && i % 5 == 1) {
		if (ut_begin(db, UT_RDONLY, rd) == UT_OK)
			*digest_ok = snap_digest(*rd, digest);
	} else if (*rd && i % 5 == 4) {
		if (*digest_ok && snap_digest(*rd, &now) && now != *digest &&
		    !r->snap_bad) {
			r->snap_bad = 1;
			snprintf(r->snap_what, sizeof(r->snap_what), "a read "
				 "transaction begun before txn %zu saw its snapshot "
				 "change by txn %zu", i - 3, i);
		}
		ut_abort(*rd);
		*rd = NULL;
	}
}

static void run_to_crash_fk(struct workload *w, ut_simdisk *d, int protect,
			    uint64_t crash_at, struct run *r, uint64_t *bound,
			    struct forker *fk)
{
	ut_options o;
	ut_db *db = NULL;
	ut_txn *rd = NULL;
	uint64_t digest = 0;
	int rc, digest_ok = 0;

	memset(r, 0, sizeof(*r));
	r->bound = bound;
	open_opts(&o, protect);
	ut_simdisk_crash_at(d, crash_at);
	rc = ut_db_open_vfs(ut_simdisk_vfs(d), DBPATH, &o, &db);
	if (rc) {
		snprintf(r->what, sizeof(r->what), "ut_open: %s", ut_strerror(rc));
		goto stop;
	}
	for (size_t i = 0; i < w->ntxn; i++) {
		struct txn *t = &w->t[i];
		ut_txn *tx;
		if (r->bound)
			r->bound[i] = ut_simdisk_event_count(d);
		if (fk && !fk->child)
			fork_here(fk, d, i); /* 1 in a child: it carries on
					      * towards its crash point */
		reader_step(db, i, &rd, &digest, &digest_ok, r);
		if ((rc = ut_begin(db, 0, &tx))) {
			snprintf(r->what, sizeof(r->what), "txn %zu ut_begin: %s", i,
				 ut_strerror(rc));
			goto stop;
		}
		for (size_t j = 0; j < t->nops; j++) {
			struct op *op = &t->ops[j];
			rc = op->kind == OP_PUT ?
				ut_put(tx, op->k, op->klen, op->v, op->vlen) :
				ut_del(tx, op->k, op->klen);
			if (rc == UT_NOTFOUND && op->kind == OP_DEL && t->abort)
				rc = UT_OK;
			if (rc) {
				ut_abort(tx);
				snprintf(r->what, sizeof(r->what), "txn %zu op %zu %s: %s",
					 i, j, op->kind == OP_PUT ? "put" : "del",
					 ut_strerror(rc));
				goto stop;
			}
		}
		if (t->abort) {
			ut_abort(tx);
		} else {
			r->inflight = 1;
			rc = ut_commit(tx);
			if (rc) {
				snprintf(r->what, sizeof(r->what), "txn %zu ut_commit: %s",
					 i, ut_strerror(rc));
				goto stop;
			}
			r->inflight = 0;
			r->acked = t->state;
		}
		if (t->checkpoint && (rc = ut_checkpoint(db))) {
			snprintf(r->what, sizeof(r->what), "txn %zu ut_checkpoint: %s",
				 i, ut_strerror(rc));
			goto stop;
		}
	}
	if (rd)
		ut_abort(rd);
	rd = NULL;
	if (r->bound)
		r->bound[w->ntxn] = ut_simdisk_event_count(d);
	if (fk && !fk->child)
		fork_here(fk, d, w->ntxn);
	rc = ut_close(db);
	db = NULL;
	if (rc)
		snprintf(r->what, sizeof(r->what), "ut_close: %s", ut_strerror(rc));
stop:
	if (rd)
		ut_abort(rd);
	if (db)
		ut_close(db); /* frees the handle; its error is expected */
	r->err = rc;
	r->crashed = ut_simdisk_crashed(d);
	r->events = ut_simdisk_event_count(d);
	r->bound = NULL;
}

static void run_to_crash(struct workload *w, ut_simdisk *d, int protect,
			 uint64_t crash_at, struct run *r)
{
	run_to_crash_fk(w, d, protect, crash_at, r, NULL, NULL);
}

/* ---- checker ------------------------------------------------------------ */

struct check {
	int open_rc;          /* ut_open after reboot */
	int torn_seen;        /* a checksum failure / UT_ECORRUPT anywhere */
	uint64_t torn_repaired;
	uint64_t corrupt_pages;
	char msg[512];        /* first violation, "" when clean */
};

static void violation(struct check *c, const char *fmt, ...)
{
	va_list ap;
	if (c->msg[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
}

static int keycmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	size_t n = al < bl ? al : bl;
	int r = n ? memcmp(a, b, n) : 0;
	return r ? r : (al < bl ? -1 : al > bl);
}

struct walk {
	ut_pager *p;
	uint8_t *seen; /* one byte per page */
	uint32_t npages;
	int leaf_depth;
	uint64_t nkeys;
	struct check *c;
};

/* Mark page pgno reached; 0 = fine. */
static int walk_mark(struct walk *wk, uint32_t pgno, const char *what)
{
	if (pgno == 0 || pgno >= wk->npages) {
		violation(wk->c, "integrity: %s points at page %u of %u", what, pgno,
			  wk->npages);
		return -1;
	}
	if (wk->seen[pgno]) {
		violation(wk->c, "integrity: page %u reached twice (%s)", pgno, what);
		return -1;
	}
	wk->seen[pgno] = 1;
	return 0;
}

static int walk_get(struct walk *wk, uint32_t pgno, ut_pg **pg)
{
	int rc = ut_pager_get(wk->p, pgno, pg);
	if (rc == UT_ECORRUPT)
		wk->c->torn_seen = 1;
	if (rc) {
		violation(wk->c, "integrity: page %u: %s (%s)", pgno, ut_strerror(rc),
			  ut_errdetail());
		return -1;
	}
	return 0;
}

static int walk_ovfl(struct walk *wk, uint32_t pgno, size_t vlen)
{
	size_t got = 0;
	while (got < vlen) {
		ut_pg *pg;
		if (walk_mark(wk, pgno, "overflow chain") || walk_get(wk, pgno, &pg))
			return -1;
		uint32_t n = ut_page_aux(pg->data), next = ut_page_right(pg->data);
		int type = ut_page_type(pg->data);
		ut_pager_release(wk->p, pg);
		if (type != UT_PT_OVERFLOW || n == 0 || n > UT_OVFL_CAP || n > vlen - got) {
			violation(wk->c, "integrity: overflow page %u: type %d, %u bytes",
				  pgno, type, n);
			return -1;
		}
		got += n;
		pgno = next;
	}
	if (pgno != 0) {
		violation(wk->c, "integrity: overflow chain longer than its value");
		return -1;
	}
	return 0;
}

/* Subtree at pgno holds keys in [lo, hi) (NULL = unbounded). */
static int walk_tree(struct walk *wk, uint32_t pgno, int depth,
		     const uint8_t *lo, size_t lol, const uint8_t *hi, size_t hil)
{
	ut_pg *pg;
	uint8_t *buf;
	int rc = 0;

	if (depth > UT_BT_MAXDEPTH) {
		violation(wk->c, "integrity: tree deeper than %d", UT_BT_MAXDEPTH);
		return -1;
	}
	if (walk_mark(wk, pgno, "tree") || walk_get(wk, pgno, &pg))
		return -1;
	/* copy: children are visited with the page released (small cache) */
	buf = malloc(UT_PAGE_SIZE);
	memcpy(buf, pg->data, UT_PAGE_SIZE);
	ut_pager_release(wk->p, pg);

	int type = ut_page_type(buf);
	unsigned n = ut_page_nslots(buf);
	const uint8_t *prev = lo;
	size_t prevl = lol;
	int strict = 0; /* first key may equal lo (separator = first key):
			 * violation when cmp(prev, k) > -strict */

	if (type == UT_PT_LEAF) {
		if (wk->leaf_depth < 0)
			wk->leaf_depth = depth;
		else if (wk->leaf_depth != depth) {
			violation(wk->c, "integrity: leaf %u at depth %d, others at %d",
				  pgno, depth, wk->leaf_depth);
			rc = -1;
		}
		for (unsigned i = 0; i < n && !rc; i++) {
			const uint8_t *cell = ut_page_cell(buf, i);
			size_t kl = ut_ld16(cell), vl = ut_ld32(cell + 3);
			const uint8_t *k = cell + 7;
			if (kl == 0 || kl > UT_MAX_KEY || 7 + kl > ut_page_cell_len(buf, i) ||
			    (prev && keycmp(prev, prevl, k, kl) > -strict) ||
			    (hi && keycmp(k, kl, hi, hil) >= 0)) {
				violation(wk->c, "integrity: leaf %u key %u (%zu bytes, %02x..) "
					  "out of order/bounds [%zu bytes %02x.., %zu bytes "
					  "%02x..)", pgno, i, kl, kl ? k[0] : 0, prevl,
					  prev && prevl ? prev[0] : 0, hil, hi && hil ? hi[0] : 0);
				rc = -1;
				break;
			}
			strict = 1;
			prev = k;
			prevl = kl;
			wk->nkeys++;
			if (cell[2] & UT_CELL_OVFL)
				rc = walk_ovfl(wk, ut_ld32(cell + 7 + kl), vl);
		}
	} else if (type == UT_PT_INTERIOR) {
		for (unsigned i = 0; i <= n && !rc; i++) {
			const uint8_t *k = NULL;
			size_t kl = 0;
			uint32_t child;
			if (i < n) {
				const uint8_t *cell = ut_page_cell(buf, i);
				child = ut_ld32(cell);
				kl = ut_ld16(cell + 4);
				k = cell + 6;
				if (kl == 0 || kl > UT_MAX_KEY ||
				    (prev && keycmp(prev, prevl, k, kl) > -strict) ||
				    (hi && keycmp(k, kl, hi, hil) > 0)) {
					violation(wk->c, "integrity: interior %u key %u out of "
						  "order/bounds", pgno, i);
					rc = -1;
					break;
				}
				rc = walk_tree(wk, child, depth + 1, prev, prevl, k, kl);
				strict = 1;
				prev = k;
				prevl = kl;
			} else {
				child = ut_page_right(buf);
				rc = walk_tree(wk, child, depth + 1, prev, prevl, hi, hil);
			}
		}
	} else {
		violation(wk->c, "integrity: tree page %u has type %d", pgno, type);
		rc = -1;
	}
	free(buf);
	return rc;
}

/* The integrity check (the engine has none yet): tree, overflow chains,
 * free list, every page reached once.  Runs inside a read transaction. */
static void check_integrity(ut_db *db, struct check *c)
{
	ut_pager *p = ut_db_pager(db);
	struct walk wk = { .p = p, .leaf_depth = -1, .c = c };
	ut_txn *rt;
	ut_pg *pg;

	if (ut_begin(db, UT_RDONLY, &rt)) {
		violation(c, "integrity: ut_begin failed");
		return;
	}
	wk.npages = ut_pager_page_count(p);
	wk.seen = calloc(wk.npages ? wk.npages : 1, 1);
	if (wk.npages < 2) {
		violation(c, "integrity: page count %u", wk.npages);
		goto out;
	}
	if (walk_tree(&wk, ut_pager_root(p), 1, NULL, 0, NULL, 0))
		goto out;
	if (walk_get(&wk, 0, &pg))
		goto out;
	uint32_t fp = ut_ld32(pg->data + UT_META_FREEHEAD), nfree = 0;
	ut_pager_release(p, pg);
	while (fp) {
		if (walk_mark(&wk, fp, "free list") || walk_get(&wk, fp, &pg))
			goto out;
		int type = ut_page_type(pg->data);
		uint32_t next = ut_page_right(pg->data);
		if (type == UT_PT_FREE) /* the pages a trunk lists (page.h) */
			for (unsigned i = 0; i < ut_page_aux(pg->data); i++, nfree++)
				if (walk_mark(&wk, ut_free_member(pg->data, i),
					      "free-list entry")) {
					ut_pager_release(p, pg);
					goto out;
				}
		ut_pager_release(p, pg);
		if (type != UT_PT_FREE) {
			violation(c, "integrity: free-list page %u has type %d", fp, type);
			goto out;
		}
		nfree++;
		fp = next;
	}
	if (nfree != ut_pager_free_count(p))
		violation(c, "integrity: free list has %u pages, header says %u", nfree,
			  ut_pager_free_count(p));
	for (uint32_t i = 1; i < wk.npages; i++)
		if (!wk.seen[i]) {
			violation(c, "integrity: page %u is neither in the tree nor free", i);
			break;
		}
out:
	free(wk.seen);
	ut_abort(rt);
}

/* Compare the full contents (cursor scan + ut_get of every key) with
 * oracle state s, row by row.  0 = equal; else a description in why. */
static int compare_state(ut_db *db, struct workload *w, int64_t s,
			 struct check *c, char *why, size_t whylen)
{
	sqlite3_stmt *q = w->q_state;
	ut_txn *rt;
	ut_cursor *cur;
	int rc, qrc, diff = 0;
	uint64_t row = 0;

	why[0] = 0;
	if ((rc = ut_begin(db, UT_RDONLY, &rt))) {
		snprintf(why, whylen, "ut_begin: %s", ut_strerror(rc));
		return -1;
	}
	if ((rc = ut_cursor_open(rt, &cur))) {
		ut_abort(rt);
		snprintf(why, whylen, "cursor_open: %s", ut_strerror(rc));
		return -1;
	}
	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, s);
	rc = ut_cursor_seek(cur, NULL, 0);
	for (;; row++) {
		qrc = sqlite3_step(q);
		if (rc < 0 || (qrc != SQLITE_ROW && qrc != SQLITE_DONE)) {
			if (rc == UT_ECORRUPT)
				c->torn_seen = 1;
			snprintf(why, whylen, "row %llu: cursor %s (%s)",
				 (unsigned long long)row, ut_strerror(rc), ut_errdetail());
			diff = -1;
			break;
		}
		if (rc == UT_NOTFOUND || qrc == SQLITE_DONE) {
			if (!(rc == UT_NOTFOUND && qrc == SQLITE_DONE)) {
				snprintf(why, whylen, "row %llu: %s", (unsigned long long)row,
					 rc == UT_NOTFOUND ? "rows missing at the end" :
					 "extra rows at the end");
				diff = -1;
			}
			break;
		}
		const void *k, *v;
		size_t kl, vl;
		if ((rc = ut_cursor_get(cur, &k, &kl, &v, &vl))) {
			snprintf(why, whylen, "row %llu: cursor_get %s", (unsigned long long)row,
				 ut_strerror(rc));
			diff = -1;
			break;
		}
		const void *ok = sqlite3_column_blob(q, 0), *ov = sqlite3_column_blob(q, 1);
		size_t okl = sqlite3_column_bytes(q, 0), ovl = sqlite3_column_bytes(q, 1);
		if (keycmp(k, kl, ok, okl) != 0) {
			snprintf(why, whylen, "row %llu: key differs (%s)",
				 (unsigned long long)row,
				 keycmp(k, kl, ok, okl) < 0 ? "extra key" : "key missing");
			diff = -1;
			break;
		}
		if (vl != ovl || (vl && memcmp(v, ov, vl))) {
			snprintf(why, whylen, "row %llu: value differs (%zu vs %zu bytes)",
				 (unsigned long long)row, vl, ovl);
			diff = -1;
			break;
		}
		/* point lookup of the same key (copy: the cursor may move) */
		uint8_t *kc = malloc(kl);
		void *gv = NULL;
		size_t gvl = 0;
		memcpy(kc, k, kl);
		int grc = ut_get(rt, kc, kl, &gv, &gvl);
		int bad = grc != UT_OK || gvl != ovl || (gvl && memcmp(gv, ov, gvl));
		free(kc);
		free(gv);
		if (bad) {
			if (grc == UT_ECORRUPT)
				c->torn_seen = 1;
			snprintf(why, whylen, "row %llu: ut_get %s", (unsigned long long)row,
				 grc ? ut_strerror(grc) : "value differs");
			diff = -1;
			break;
		}
		rc = ut_cursor_next(cur);
	}
	sqlite3_reset(q);
	ut_cursor_close(cur);
	ut_abort(rt);
	return diff;
}

/* After the checks: the recovered database takes more transactions. */
static void check_usable(ut_db *db, uint64_t seed, struct check *c)
{
	uint64_t s = seed ^ 0xabcdefull;
	for (int i = 0; i < 3; i++) {
		ut_txn *t;
		uint8_t key[24];
		int rc;
		size_t vl = gen_vlen(&s);
		uint8_t *v = rnd_bytes(&s, vl);
		snprintf((char *)key, sizeof(key), "\xff" "after-%d", i);
		if ((rc = ut_begin(db, 0, &t)) ||
		    (rc = ut_put(t, key, strlen((char *)key), v, vl)) ||
		    (rc = ut_commit(t))) {
			violation(c, "not usable after recovery: txn %d: %s (%s)", i,
				  ut_strerror(rc), ut_errdetail());
			free(v);
			return;
		}
		void *g = NULL;
		size_t gl;
		if ((rc = ut_begin(db, UT_RDONLY, &t)) == UT_OK) {
			rc = ut_get(t, key, strlen((char *)key), &g, &gl);
			ut_abort(t);
		}
		if (rc || gl != vl || (vl && memcmp(g, v, vl)))
			violation(c, "not usable after recovery: read back %d: %s", i,
				  ut_strerror(rc));
		free(g);
		free(v);
	}
	/* Remove the probe keys again (one more committed transaction) so the
	 * database holds exactly the oracle state once more: a caller may
	 * compare it with the oracle again later (the ENOSPC tests do, after
	 * a further reboot).  Then prove they are gone. */
	if (c->msg[0])
		return;
	ut_txn *t = NULL;
	int rc = ut_begin(db, 0, &t);
	for (int i = 0; i < 3 && rc == UT_OK; i++) {
		uint8_t key[24];
		snprintf((char *)key, sizeof(key), "\xff" "after-%d", i);
		rc = ut_del(t, key, strlen((char *)key));
	}
	if (rc == UT_OK)
		rc = ut_commit(t);
	else if (t)
		ut_abort(t);
	if (rc) {
		violation(c, "not usable after recovery: deleting the probe keys: "
			  "%s (%s)", ut_strerror(rc), ut_errdetail());
		return;
	}
	if ((rc = ut_begin(db, UT_RDONLY, &t)) == UT_OK) {
		for (int i = 0; i < 3 && rc == UT_OK; i++) {
			uint8_t key[24];
			void *g = NULL;
			size_t gl;
			snprintf((char *)key, sizeof(key), "\xff" "after-%d", i);
			int grc = ut_get(t, key, strlen((char *)key), &g, &gl);
			free(g);
			if (grc != UT_NOTFOUND)
				rc = grc == UT_OK ? UT_EINVAL : grc;
		}
		ut_abort(t);
	}
	if (rc)
		violation(c, "not usable after recovery: probe keys still there "
			  "after their delete committed: %s", ut_strerror(rc));
}

/* Reopen after the reboot and check everything (see the top comment). */
static void check_recovered(struct workload *w, ut_simdisk *d, int protect,
			    const struct run *r, struct check *c)
{
	ut_options o;
	ut_db *db = NULL;
	ut_stats st;
	char why1[200], why2[200];
	int64_t acked = r->acked;

	memset(c, 0, sizeof(*c));
	if (getenv("UT_CRASH_SABOTAGE") &&
	    !strcmp(getenv("UT_CRASH_SABOTAGE"), "ack"))
		acked++; /* self-test: the oracle comparison must object */
	open_opts(&o, protect);
	c->open_rc = ut_db_open_vfs(ut_simdisk_vfs(d), DBPATH, &o, &db);
	if (c->open_rc) {
		if (c->open_rc == UT_ECORRUPT)
			c->torn_seen = 1;
		violation(c, "recovery failed: ut_open %s (%s)", ut_strerror(c->open_rc),
			  ut_errdetail());
		return;
	}
	ut_stats_get(db, &st);
	c->torn_repaired = st.torn_repaired;
	check_integrity(db, c);
	if (!c->msg[0] || !c->torn_seen) {
		int bad = compare_state(db, w, acked, c, why1, sizeof(why1));
		if (bad && r->inflight && acked + 1 <= w->ncommitted)
			bad = compare_state(db, w, acked + 1, c, why2, sizeof(why2));
		else
			snprintf(why2, sizeof(why2), "no commit in flight");
		if (bad)
			violation(c, "contents match no allowed state: state %lld: %s; "
				  "state %lld: %s", (long long)acked, why1,
				  (long long)acked + 1, why2);
	}
	ut_stats_get(db, &st);
	c->corrupt_pages = st.corrupt_pages;
	if (st.corrupt_pages) {
		c->torn_seen = 1;
		violation(c, "ut_stats corrupt_pages = %llu",
			  (unsigned long long)st.corrupt_pages);
	}
	if (!c->msg[0])
		check_usable(db, w->seed, c);
	int rc = ut_close(db);
	if (rc)
		violation(c, "ut_close after recovery: %s", ut_strerror(rc));
}

/* ---- sweep driver ------------------------------------------------------- */

struct tally {
	uint64_t points, seeds, violations, torn_repaired, tears_detected;
	uint64_t nocrash; /* crash point not reached (engine not deterministic) */
	double t_run, t_check; /* seconds in the runner / the checker */
	uint64_t dry_failed;   /* seeds whose dry run failed (or dead workers) */
};

static enum ut_simdisk_policy pick_policy(int protect, uint64_t point)
{
	if (protect == UT_PROTECT_UNSAFE)
		return point % 2 ? UT_SIMDISK_TEAR_ALL : UT_SIMDISK_RANDOM;
	switch (point % 8) {
	case 0: return UT_SIMDISK_TEAR_ALL;
	case 3: return UT_SIMDISK_KEEP_ALL;
	case 5: return UT_SIMDISK_DROP_ALL;
	default: return UT_SIMDISK_RANDOM;
	}
}

static const char *policy_name(enum ut_simdisk_policy p)
{
	switch (p) {
	case UT_SIMDISK_RANDOM: return "random";
	case UT_SIMDISK_KEEP_ALL: return "keep_all";
	case UT_SIMDISK_DROP_ALL: return "drop_all";
	default: return "tear_all";
	}
}

/* test_crash_fullpage_planted: its violations are expected; only those
 * of points below first_planted are printed (one or two examples). */
static int quiet_planted;
static uint64_t first_planted = 40;

/* After the run with the power cut armed at point: reboot, check, free d.
 * Returns 1 on violation. */
static int crash_check(struct workload *w, ut_simdisk *d, int protect,
		       int run_protect, uint64_t point, const struct run *rp,
		       struct tally *ty)
{
	struct run r = *rp;
	struct check c;
	enum ut_simdisk_policy pol = pick_policy(protect, point);
	uint64_t rseed = w->seed * 1000003ull + point;
	int bad = 0;
	double t0;

	if (!r.crashed) {
		/* the dry run said event `point` happens: it must */
		ty->nocrash++;
		ut_simdisk_free(d);
		if (protect != UT_PROTECT_UNSAFE) {
			printf("VIOLATION crash[%s] seed=%llu point=%llu: power cut never "
			       "happened (stopped: %s)\n", ut_protect_name(protect),
			       (unsigned long long)w->seed, (unsigned long long)point,
			       r.err ? r.what : "ran to the end");
			ty->violations++;
			return 1;
		}
		return 0;
	}
	if (r.snap_bad) {
		ty->violations++;
		bad = 1;
		printf("VIOLATION crash[%s] seed=%llu point=%llu: %s\n",
		       ut_protect_name(protect), (unsigned long long)w->seed,
		       (unsigned long long)point, r.snap_what);
	}
	ut_simdisk_reboot_policy(d, rseed, pol);
	t0 = now_s();
	check_recovered(w, d, run_protect, &r, &c);
	ty->t_check += now_s() - t0;
	ty->points++;
	ty->torn_repaired += c.torn_repaired;
	if (protect == UT_PROTECT_UNSAFE) {
		ty->tears_detected += c.torn_seen;
	} else if (c.msg[0]) {
		bad = 1;
		ty->violations++;
		if ((!quiet_planted && ty->violations <= 10) ||
		    (quiet_planted && point < first_planted) ||
		    getenv("UT_CRASH_VERBOSE"))
			printf("VIOLATION crash[%s] seed=%llu point=%llu (reboot %s, "
			       "acked %lld, in flight %d, stopped at: %s): %s\n"
			       "  reproduce: UT_CRASH_MODE=%s UT_CRASH_SEED=%llu "
			       "UT_CRASH_POINT=%llu ./test_crash\n",
			       ut_protect_name(protect), (unsigned long long)w->seed,
			       (unsigned long long)point, policy_name(pol),
			       (long long)r.acked, r.inflight, r.what, c.msg,
			       ut_protect_name(protect), (unsigned long long)w->seed,
			       (unsigned long long)point);
	}
	if (getenv("UT_CRASH_VERBOSE"))
		printf("  [%s] seed=%llu point=%llu acked=%lld inflight=%d torn=%d "
		       "repaired=%llu %s\n", ut_protect_name(protect),
		       (unsigned long long)w->seed, (unsigned long long)point,
		       (long long)r.acked, r.inflight, c.torn_seen,
		       (unsigned long long)c.torn_repaired, c.msg);
	ut_simdisk_free(d);
	return bad;
}

/* One crash point from scratch: run, cut, reboot, check.  1 = violation. */
static int crash_one(struct workload *w, int protect, int run_protect,
		     uint64_t point, struct tally *ty)
{
	ut_simdisk *d = ut_simdisk_new();
	struct run r;

	double t0 = now_s();
	run_to_crash(w, d, run_protect, point, &r);
	ty->t_run += now_s() - t0;
	return crash_check(w, d, protect, run_protect, point, &r, ty);
}

static void tally_add(struct tally *ty, const struct tally *t)
{
	ty->points += t->points;
	ty->seeds += t->seeds;
	ty->violations += t->violations;
	ty->torn_repaired += t->torn_repaired;
	ty->tears_detected += t->tears_detected;
	ty->nocrash += t->nocrash;
	ty->dry_failed += t->dry_failed;
	ty->t_run += t->t_run;
	ty->t_check += t->t_check;
}

/* At boundary i of the sharing run (see struct forker): fork one child per
 * crash point in [bound[i], bound[i+1]), one at a time.  Returns 1 in the
 * child (which must carry on with the run), 0 in the parent. */
static double fork_t0;
static int fork_here(struct forker *fk, ut_simdisk *d, size_t i)
{
	while (fk->next < fk->npts && fk->pts[fk->next] < fk->bound[i + 1]) {
		uint64_t p = fk->pts[fk->next++];
		int fds[2], status;
		struct tally t;

		if (p < fk->bound[i]) { /* cannot happen: points below bound[0]
					 * are run from scratch */
			crash_one(fk->w, fk->protect, fk->run_protect, p, fk->ty);
			continue;
		}
		fflush(stdout);
		if (pipe(fds))
			fail_msg("pipe failed");
		fork_t0 = now_s();
		pid_t pid = fork();
		if (pid < 0)
			fail_msg("fork failed");
		if (pid == 0) {
			close(fds[0]);
			fk->child = 1;
			fk->point = p;
			fk->fd = fds[1];
			ut_simdisk_crash_at(d, p);
			return 1;
		}
		close(fds[1]);
		ssize_t n = read(fds[0], &t, sizeof(t));
		close(fds[0]);
		waitpid(pid, &status, 0);
		if (n != (ssize_t)sizeof(t) || !WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("VIOLATION crash[%s] seed=%llu point=%llu: the checking "
			       "process died (status 0x%x)\n"
			       "  reproduce: UT_CRASH_MODE=%s UT_CRASH_SEED=%llu "
			       "UT_CRASH_POINT=%llu ./test_crash\n",
			       ut_protect_name(fk->protect), (unsigned long long)fk->w->seed,
			       (unsigned long long)p, status, ut_protect_name(fk->protect),
			       (unsigned long long)fk->w->seed, (unsigned long long)p);
			fk->ty->violations++;
			continue;
		}
		tally_add(fk->ty, &t);
	}
	return 0;
}

/* All crash points pts[] of one workload, sharing the run prefixes. */
static void crash_forked(struct workload *w, int protect, int run_protect,
			 const uint64_t *pts, size_t npts, const uint64_t *bound,
			 struct tally *ty)
{
	struct forker fk = { .pts = pts, .npts = npts, .bound = bound, .ty = ty,
			     .w = w, .protect = protect, .run_protect = run_protect };
	struct run r;
	ut_simdisk *d;

	/* crash points inside the first ut_open: from scratch (short) */
	while (fk.next < npts && pts[fk.next] < bound[0])
		crash_one(w, protect, run_protect, pts[fk.next++], ty);
	if (fk.next == npts)
		return;
	d = ut_simdisk_new();
	run_to_crash_fk(w, d, run_protect, UT_SIMDISK_NEVER, &r, NULL, &fk);
	if (fk.child) {
		struct tally mine;
		memset(&mine, 0, sizeof(mine));
		mine.t_run = now_s() - fork_t0;
		crash_check(w, d, protect, run_protect, fk.point, &r, &mine);
		fflush(stdout);
		ssize_t n = write(fk.fd, &mine, sizeof(mine));
		_exit(n == (ssize_t)sizeof(mine) ? 0 : 1);
	}
	ut_simdisk_free(d);
	/* points the sharing run never reached (it ended early): count them
	 * as not crashed, from scratch, so they are reported */
	while (fk.next < npts)
		crash_one(w, protect, run_protect, pts[fk.next++], ty);
}

/* Depth and key count of the database on d (for the verbose report). */
static void tree_shape(ut_simdisk *d, int protect, int *depth, uint64_t *nkeys)
{
	ut_options o;
	ut_db *db;
	open_opts(&o, protect);
	if (ut_db_open_vfs(ut_simdisk_vfs(d), DBPATH, &o, &db))
		return;
	ut_bt_depth(ut_db_pager(db), depth);
	ut_txn *t;
	ut_cursor *c;
	if (!ut_begin(db, UT_RDONLY, &t)) {
		if (!ut_cursor_open(t, &c)) {
			for (int rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK;
			     rc = ut_cursor_next(c))
				(*nkeys)++;
			ut_cursor_close(c);
		}
		ut_abort(t);
	}
	ut_close(db);
}

/* One seed: generate its workload, dry-run it to count the events, then
 * crash at every event or at a stratified sample of npoints of them. */
static void sweep_seed(int protect, int run_protect, uint64_t seed, long ntxn,
		       long npoints, long one_point, struct tally *ty)
{
	struct workload *w = gen_workload(seed, (size_t)ntxn);
	struct run dry;
	ut_simdisk *d = ut_simdisk_new();
	uint64_t *bound = calloc((size_t)ntxn + 2, sizeof(*bound));

	run_to_crash_fk(w, d, run_protect, UT_SIMDISK_NEVER, &dry, bound, NULL);
	bound[ntxn + 1] = dry.events;
	int dry_depth = -1;
	uint64_t dry_keys = 0;
	if (getenv("UT_CRASH_VERBOSE") && !dry.err)
		tree_shape(d, run_protect, &dry_depth, &dry_keys);
	if (!dry.err) {
		/* no crash: the checker must accept the final state (guards
		 * against false positives of the checker itself) */
		struct check c;
		dry.acked = w->ncommitted;
		check_recovered(w, d, run_protect, &dry, &c);
		if (c.msg[0]) {
			printf("VIOLATION crash[%s] seed=%llu, no crash: %s\n",
			       ut_protect_name(protect), (unsigned long long)seed, c.msg);
			ty->violations++;
		}
	}
	ut_simdisk_free(d);
	if (dry.err) {
		printf("crash[%s] seed %llu: the dry run failed: %s (%s)\n",
		       ut_protect_name(protect), (unsigned long long)seed, dry.what,
		       ut_errdetail());
		ty->dry_failed++;
		free(bound);
		free_workload(w);
		return;
	}
	ty->seeds++;
	uint64_t ev = dry.events;
	uint64_t *pts = calloc(ev ? ev : 1, sizeof(*pts));
	size_t npts = 0;
	if (one_point >= 0) {
		pts[npts++] = (uint64_t)one_point;
	} else if ((uint64_t)npoints >= ev) {
		for (uint64_t n = 0; n < ev; n++)
			pts[npts++] = n;
	} else {
		/* stratified sample: one random point in each of npoints
		 * equal slices, so every region of the workload is hit */
		uint64_t s = seed ^ 0x5eedull;
		for (long i = 0; i < npoints; i++) {
			uint64_t a = ev * (uint64_t)i / (uint64_t)npoints;
			uint64_t b = ev * (uint64_t)(i + 1) / (uint64_t)npoints;
			pts[npts++] = a + rnd(&s, b - a);
		}
	}
	/* UT_CRASH_POINT (a reproduction) and UT_CRASH_FORK=0 run every
	 * point from scratch; otherwise the prefixes are shared by fork */
	if (one_point >= 0 || !env_long("UT_CRASH_FORK", 1)) {
		for (size_t i = 0; i < npts; i++)
			crash_one(w, protect, run_protect, pts[i], ty);
	} else {
		crash_forked(w, protect, run_protect, pts, npts, bound, ty);
	}
	free(pts);
	free(bound);
	if (getenv("UT_CRASH_VERBOSE"))
		printf("  seed %llu: %llu events, %lld commits, tree depth %d, "
		       "%llu keys\n", (unsigned long long)seed,
		       (unsigned long long)ev, (long long)w->ncommitted,
		       dry_depth, (unsigned long long)dry_keys);
	free_workload(w);
}

static void sweep(int protect, struct tally *ty)
{
	const char *only_mode = getenv("UT_CRASH_MODE");
	long nseeds = env_long("UT_CRASH_SEEDS", 14);
	if (protect == UT_PROTECT_FULLPAGE)
		nseeds = env_long("UT_CRASH_FULLPAGE_SEEDS", (nseeds + 2) / 3);
	long npoints = env_long("UT_CRASH_POINTS", 420);
	long ntxn = env_long("UT_CRASH_TXNS", 28);
	long one_seed = env_long("UT_CRASH_SEED", -1);
	long one_point = env_long("UT_CRASH_POINT", -1);
	long jobs = env_long("UT_CRASH_JOBS", 2);
	const char *sab = getenv("UT_CRASH_SABOTAGE");
	int run_protect = protect;
	double t0 = now_s();

	memset(ty, 0, sizeof(*ty));
	if (only_mode && *only_mode && strcmp(only_mode, ut_protect_name(protect))) {
		printf("crash[%s]: skipped (UT_CRASH_MODE=%s)\n", ut_protect_name(protect),
		       only_mode);
		skip();
	}
	if (sab && !strcmp(sab, "unsafe"))
		run_protect = UT_PROTECT_UNSAFE; /* self-test: must fail */
	if (sab && !strcmp(sab, "noimage") && protect == UT_PROTECT_FULLPAGE)
		ut_pager_sabotage_images = 1; /* self-test: must fail */
	if (protect == UT_PROTECT_UNSAFE)
		npoints = npoints / 4 + 1; /* the control needs fewer points */
	/* Seeds are shared out over UT_CRASH_JOBS forked workers (default 2,
	 * the CI machines' cores); each sends its tally back through a pipe. */
	if (one_seed >= 0) {
		nseeds = 1;
		jobs = 1;
	}
	if (jobs < 1)
		jobs = 1;
	if (jobs > nseeds)
		jobs = nseeds;
	if (jobs == 1) {
		for (long si = 0; si < nseeds; si++)
			sweep_seed(protect, run_protect, one_seed >= 0 ? (uint64_t)one_seed :
				   (uint64_t)(1000 * (protect + 1) + si + 1), ntxn, npoints,
				   one_point, ty);
	} else {
		int fds[64][2];
		pid_t pids[64];
		if (jobs > 64)
			jobs = 64;
		fflush(stdout);
		for (long j = 0; j < jobs; j++) {
			assert_int_equal(pipe(fds[j]), 0);
			pids[j] = fork();
			assert_true(pids[j] >= 0);
			if (pids[j] == 0) {
				struct tally mine;
				memset(&mine, 0, sizeof(mine));
				close(fds[j][0]);
				for (long si = j; si < nseeds; si += jobs)
					sweep_seed(protect, run_protect,
						   (uint64_t)(1000 * (protect + 1) + si + 1),
						   ntxn, npoints, one_point, &mine);
				fflush(stdout);
				ssize_t n = write(fds[j][1], &mine, sizeof(mine));
				_exit(n == (ssize_t)sizeof(mine) ? 0 : 1);
			}
			close(fds[j][1]);
		}
		for (long j = 0; j < jobs; j++) {
			struct tally t;
			int status;
			ssize_t n = read(fds[j][0], &t, sizeof(t));
			close(fds[j][0]);
			waitpid(pids[j], &status, 0);
			if (n != (ssize_t)sizeof(t) || !WIFEXITED(status) ||
			    WEXITSTATUS(status)) {
				printf("crash[%s]: worker %ld died (status 0x%x)\n",
				       ut_protect_name(protect), j, status);
				ty->dry_failed++;
				continue;
			}
			tally_add(ty, &t);
		}
	}
	if (protect == UT_PROTECT_UNSAFE)
		printf("crash[%s]: %llu crash points, %llu seeds, %llu tears detected "
		       "(%.1f s)\n", ut_protect_name(protect),
		       (unsigned long long)ty->points, (unsigned long long)ty->seeds,
		       (unsigned long long)ty->tears_detected, now_s() - t0);
	else
		printf("crash[%s]: %llu crash points, %llu seeds, %llu violations, "
		       "%llu torn pages repaired (%.1f s: run %.1f, check %.1f)\n",
		       ut_protect_name(protect),
		       (unsigned long long)ty->points, (unsigned long long)ty->seeds,
		       (unsigned long long)ty->violations,
		       (unsigned long long)ty->torn_repaired, now_s() - t0,
		       ty->t_run, ty->t_check);
	fflush(stdout);
}

static void test_crash_doublewrite(void **state)
{
	struct tally ty;
	(void)state;
	sweep(UT_PROTECT_DOUBLEWRITE, &ty);
	assert_int_equal(ty.dry_failed, 0);
	assert_true(ty.points > 0);
	assert_int_equal(ty.violations, 0);
}

static void test_crash_atomic(void **state)
{
	struct tally ty;
	(void)state;
	sweep(UT_PROTECT_ATOMIC, &ty);
	assert_int_equal(ty.dry_failed, 0);
	assert_true(ty.points > 0);
	assert_int_equal(ty.violations, 0);
}

/* Full-page images in the log: torn pages are rebuilt by redo; the
 * tally's torn_repaired counts pages found torn and restored from an
 * image. */
static void test_crash_fullpage(void **state)
{
	struct tally ty;
	(void)state;
	sweep(UT_PROTECT_FULLPAGE, &ty);
	ut_pager_sabotage_images = 0;
	assert_int_equal(ty.dry_failed, 0);
	assert_true(ty.points > 0);
	assert_int_equal(ty.violations, 0);
}

/* The planted bug: fullpage logging no page images (deltas instead) must
 * be caught, as torn pages recovery cannot repair.  One seed, a quarter
 * of the points. */
static void test_crash_fullpage_planted(void **state)
{
	struct tally ty;
	char seeds[32], points[32];
	const char *old_seeds = getenv("UT_CRASH_FULLPAGE_SEEDS");
	const char *old_points = getenv("UT_CRASH_POINTS");
	const char *mode = getenv("UT_CRASH_MODE");
	(void)state;
	if (getenv("UT_CRASH_SEED") || getenv("UT_CRASH_POINT") ||
	    (mode && *mode && strcmp(mode, "fullpage"))) {
		printf("crash[fullpage planted]: skipped (one seed, point or "
		       "another mode asked for)\n");
		skip();
	}
	snprintf(seeds, sizeof(seeds), "%s", old_seeds ? old_seeds : "");
	snprintf(points, sizeof(points), "%s", old_points ? old_points : "");
	setenv("UT_CRASH_FULLPAGE_SEEDS", "1", 1);
	setenv("UT_CRASH_POINTS", "105", 1);
	printf("crash[fullpage planted]: no page images logged; violations are "
	       "expected (those of points below %llu shown)\n",
	       (unsigned long long)first_planted);
	ut_pager_sabotage_images = 1;
	quiet_planted = 1;
	sweep(UT_PROTECT_FULLPAGE, &ty);
	quiet_planted = 0;
	ut_pager_sabotage_images = 0;
	if (old_seeds)
		setenv("UT_CRASH_FULLPAGE_SEEDS", seeds, 1);
	else
		unsetenv("UT_CRASH_FULLPAGE_SEEDS");
	if (old_points)
		setenv("UT_CRASH_POINTS", points, 1);
	else
		unsetenv("UT_CRASH_POINTS");
	assert_int_equal(ty.dry_failed, 0);
	printf("crash[fullpage planted]: %llu violations in %llu points\n",
	       (unsigned long long)ty.violations, (unsigned long long)ty.points);
	if (ty.violations == 0)
		fail_msg("planted bug (fullpage without page images) not caught "
			 "in %llu crash points", (unsigned long long)ty.points);
}

/* Negative control: without protection the same crashes must show tears,
 * or the harness cannot see what it claims to check. */
static void test_crash_unsafe_control(void **state)
{
	struct tally ty;
	(void)state;
	sweep(UT_PROTECT_UNSAFE, &ty);
	assert_int_equal(ty.dry_failed, 0);
	assert_true(ty.points > 0);
	if (getenv("UT_CRASH_POINT") == NULL && ty.tears_detected == 0)
		fail_msg("negative control: unsafe mode never showed a torn page in "
			 "%llu crash points: the harness cannot see tears",
			 (unsigned long long)ty.points);
}

/* ---- bad input tied to crashes ----------------------------------------- */

/* A database in doublewrite mode with commits since the last checkpoint
 * (a log to replay), power cut with writes pending. */
static struct workload *crashed_dw_db(ut_simdisk *d, struct run *r)
{
	struct workload *w = gen_workload(77, 12);
	struct run dry;
	ut_simdisk *d0 = ut_simdisk_new();

	for (size_t i = 0; i < w->ntxn; i++)
		w->t[i].checkpoint = 0;
	run_to_crash(w, d0, UT_PROTECT_DOUBLEWRITE, UT_SIMDISK_NEVER, &dry);
	ut_simdisk_free(d0);
	if (dry.err)
		fail_msg("dry run failed: %s (%s)", dry.what, ut_errdetail());
	/* cut in the last tenth of the workload, before the final close */
	run_to_crash(w, d, UT_PROTECT_DOUBLEWRITE, dry.events * 9 / 10, r);
	assert_true(r->crashed);
	assert_true(r->acked > 0);
	assert_int_equal(ut_simdisk_reboot_policy(d, 5, UT_SIMDISK_TEAR_ALL), UT_OK);
	return w;
}

static void test_missing_dw_file(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	struct run r;
	struct workload *w;
	ut_options o;
	ut_db *db = NULL;
	(void)state;

	w = crashed_dw_db(d, &r);
	assert_int_equal(ut_simdisk_vfs(d)->remove(ut_simdisk_vfs(d), DWPATH), UT_OK);
	open_opts(&o, UT_PROTECT_DOUBLEWRITE);
	int rc = ut_db_open_vfs(ut_simdisk_vfs(d), DBPATH, &o, &db);
	if (rc == UT_OK) {
		ut_close(db);
		fail_msg("open with the double-write file missing (log to replay) "
			 "succeeded silently");
	}
	printf("missing dw file: %s: %s\n", ut_strerror(rc), ut_errdetail());
	assert_true(rc < 0);
	assert_true(strstr(ut_errdetail(), "-dw") || strstr(ut_errdetail(), "double"));
	free_workload(w);
	ut_simdisk_free(d);
}

static void test_foreign_dw_file(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *vfs = ut_simdisk_vfs(d);
	struct run r;
	struct workload *w;
	ut_options o;
	ut_db *db = NULL;
	(void)state;

	w = crashed_dw_db(d, &r);
	assert_int_equal(vfs->remove(vfs, DWPATH), UT_OK);
	char *junk = ut_io_alloc(FOREIGN_BYTES);
	for (size_t i = 0; i < FOREIGN_BYTES; i++)
		junk[i] = "this is not a double-write file\n"[i % 32];
	vfs_write_file(vfs, DWPATH, junk, FOREIGN_BYTES);
	free(junk);
	open_opts(&o, UT_PROTECT_DOUBLEWRITE);
	int rc = ut_db_open_vfs(vfs, DBPATH, &o, &db);
	if (rc == UT_OK) {
		ut_close(db);
		fail_msg("open with a foreign file as the double-write file succeeded "
			 "silently");
	}
	printf("foreign dw file: %s: %s\n", ut_strerror(rc), ut_errdetail());
	assert_true(rc == UT_ENOTDB || rc == UT_ECORRUPT);
	free_workload(w);
	ut_simdisk_free(d);
}

/* ENOSPC during commit: that commit fails with UT_ENOSPC, nothing
 * acknowledged is lost; with space freed and a reopen the database is
 * consistent (acked, or acked + the failed one if "in doubt") and usable. */
static void enospc_mode(int protect)
{
	ut_simdisk *d = ut_simdisk_new();
	struct workload *w = gen_workload(99, 14);
	struct run r;
	struct check c;
	ut_options o;
	ut_db *db;
	int64_t acked = 0;
	int rc = UT_OK;
	size_t i;

	open_opts(&o, protect);
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DBPATH, &o, &db), UT_OK);
	for (i = 0; i < w->ntxn; i++) {
		struct txn *t = &w->t[i];
		ut_txn *tx;
		if (i == 6) /* from here on, a little room only */
			ut_simdisk_set_capacity(d, ut_simdisk_used(d) + 2 * UT_PAGE_SIZE);
		/* A page write after a durable commit may be the one that
		 * fails: the next call reports it. */
		if ((rc = ut_begin(db, 0, &tx)))
			break;
		for (size_t j = 0; j < t->nops && rc == UT_OK; j++) {
			struct op *op = &t->ops[j];
			rc = op->kind == OP_PUT ? ut_put(tx, op->k, op->klen, op->v, op->vlen) :
				ut_del(tx, op->k, op->klen);
			if (rc == UT_NOTFOUND)
				rc = UT_OK;
		}
		if (rc) { /* no-steal: puts should not write, but accept it */
			ut_abort(tx);
			break;
		}
		if (t->abort) {
			ut_abort(tx);
			continue;
		}
		rc = ut_commit(tx);
		if (rc)
			break;
		acked = t->state;
	}
	printf("enospc[%s]: txn %zu failed with %s after %lld acked commits\n",
	       ut_protect_name(protect), i, ut_strerror(rc), (long long)acked);
	assert_true(i < w->ntxn); /* space did run out */
	assert_int_equal(rc, UT_ENOSPC);
	ut_close(db); /* may report the failed write; frees the handle */
	ut_simdisk_set_capacity(d, 0);
	memset(&r, 0, sizeof(r));
	r.acked = acked;
	r.inflight = 1; /* the failed commit is "in doubt", never half */
	check_recovered(w, d, protect, &r, &c);
	if (c.msg[0])
		fail_msg("enospc[%s]: %s", ut_protect_name(protect), c.msg);
	/* and once more after a power cut, the strict form */
	assert_int_equal(ut_simdisk_reboot_policy(d, 3, UT_SIMDISK_RANDOM), UT_OK);
	check_recovered(w, d, protect, &r, &c);
	if (c.msg[0])
		fail_msg("enospc[%s] after reboot: %s", ut_protect_name(protect), c.msg);
	free_workload(w);
	ut_simdisk_free(d);
}

static void test_enospc_doublewrite(void **state) { (void)state; enospc_mode(UT_PROTECT_DOUBLEWRITE); }
static void test_enospc_atomic(void **state) { (void)state; enospc_mode(UT_PROTECT_ATOMIC); }
static void test_enospc_fullpage(void **state) { (void)state; enospc_mode(UT_PROTECT_FULLPAGE); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_doublewrite),
		cmocka_unit_test(test_crash_atomic),
		cmocka_unit_test(test_crash_unsafe_control),
		cmocka_unit_test(test_crash_fullpage),
		cmocka_unit_test(test_crash_fullpage_planted),
		cmocka_unit_test(test_missing_dw_file),
		cmocka_unit_test(test_foreign_dw_file),
		cmocka_unit_test(test_enospc_doublewrite),
		cmocka_unit_test(test_enospc_atomic),
		cmocka_unit_test(test_enospc_fullpage),
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

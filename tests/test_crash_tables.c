/*
 * tests/test_crash_tables.c - power cuts inside creates, drops, clears and
 * multi-table commits (named tables, untorn.h).
 *
 * The harness of test_crash.c, cut down to what tables add: a seeded
 * workload of transactions that create, drop and clear tables ("t0".."t3")
 * and put and delete keys in several of them and in the default table at
 * once (values up to 30 KiB, so overflow chains are freed by drops), some
 * aborted, some followed by a checkpoint, runs on the simulated disk
 * (io/ut_simdisk.h); a dry run counts its I/O events, then for each
 * chosen event the run is repeated with the power cut there, the disk
 * reboots (pending writes kept, dropped or torn, by the point's policy),
 * and the reopened database must:
 *   1. open (recovery succeeds);
 *   2. hold exactly the state after committed transaction k for some
 *      acked <= k <= acked + inflight: the same tables (listed in order),
 *      each with the same keys and values, and each table's catalog key
 *      count right (the default table's too, kept in the header) -- a digest of all of it compared with the model's;
 *   3. pass ut_check (every page reached once: a drop's freed pages are
 *      on the free list and nowhere else, counts match the trees).
 * The model is an in-memory copy of every table, one digest per
 * committed state.
 *
 * Environment: UT_CRASH_SEEDS=n seeds per mode (default 2), UT_CRASH_POINTS
 * (default 150), UT_CRASH_SEED / UT_CRASH_POINT / UT_CRASH_MODE to
 * reproduce one point.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "db.h"
#include "untorn.h"
#include "ut_simdisk.h"

#define DBPATH "/tables.db"
#define NTAB 4     /* named table slots t0..t3 */
#define NKEY 120   /* keys k000..k119 per table */
#define NTXN 24
#define MAXOPS 40
/* A big drop: txn BIGFILL puts every key into t0 with values of 2
 * overflow pages (some 250 pages against a cache of 24 frames), txn
 * BIGDROP drops it; both checkpoint.  Besides the points spread over the
 * run, the sweep cuts the power at every I/O event of the drop's commit
 * and checkpoint. */
#define BIGFILL 1
#define BIGDROP 2
#define OPS_CAP (NKEY + 2)

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s, uint64_t n) { return splitmix(s) % n; }

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 0) : dflt;
}

/* ---- the workload and its model ------------------------------------- */

enum { OP_PUT, OP_DEL, OP_CREATE, OP_DROP, OP_CLEAR };

struct op {
	int kind;
	int tab;      /* -1: the default table */
	int key;
	uint32_t ver; /* value version: its bytes are a function of it */
	uint32_t vlen;
};

struct txn {
	struct op ops[OPS_CAP];
	int nops;
	int abort, checkpoint;
	int64_t state; /* committed: the model state after it */
};

/* One table of the model: vlen[k] of key k, UINT32_MAX = absent. */
struct mtab {
	int exists;
	uint32_t vlen[NKEY], ver[NKEY];
};

struct model {
	struct mtab t[NTAB + 1]; /* [NTAB]: the default table */
};

struct workload {
	uint64_t seed;
	struct txn t[NTXN];
	uint64_t digest[NTXN + 1]; /* digest[s]: after committed state s */
	int64_t ncommitted;
};

static void value_of(uint8_t *v, uint32_t len, int key, uint32_t ver)
{
	for (uint32_t i = 0; i < len; i++)
		v[i] = (uint8_t)(ver * 31u + (uint32_t)key * 7u + i + i / 251);
}

static void key_of(char *k, int key)
{
	snprintf(k, 16, "k%03d", key);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* The digest of a table's contents, key by key in order. */
static uint64_t digest_entry(uint64_t h, const void *k, size_t kl,
			     const void *v, size_t vl)
{
	h = fnv(h, &kl, sizeof(kl));
	h = fnv(h, k, kl);
	h = fnv(h, &vl, sizeof(vl));
	return fnv(h, v, vl);
}

static uint64_t model_digest(const struct model *m)
{
	static uint8_t v[32768];
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i <= NTAB; i++) { /* default first, then t0.. */
		int ti = i ? i - 1 : NTAB;
		const struct mtab *t = &m->t[ti];
		char name[16], k[16];

		if (ti == NTAB)
			h = fnv(h, "default", 7);
		else if (!t->exists)
			continue;
		else
			h = fnv(h, name, (size_t)snprintf(name, sizeof(name), "t%d", ti));
		for (int key = 0; key < NKEY; key++) {
			if (t->vlen[key] == UINT32_MAX)
				continue;
			key_of(k, key);
			value_of(v, t->vlen[key], key, t->ver[key]);
			h = digest_entry(h, k, 4, v, t->vlen[key]);
		}
		h = fnv(h, "|", 1);
	}
	return h;
}

static void mtab_empty(struct mtab *t)
{
	for (int k = 0; k < NKEY; k++)
		t->vlen[k] = UINT32_MAX;
}

static uint32_t gen_vlen(uint64_t *s)
{
	uint64_t r = rnd(s, 100);

	if (r < 70)
		return (uint32_t)rnd(s, 200);
	if (r < 90)
		return 200 + (uint32_t)rnd(s, 3000);
	return 5000 + (uint32_t)rnd(s, 25000); /* overflow chains */
}

static void gen_workload(struct workload *w, uint64_t seed)
{
	struct model m, tm;
	uint64_t s = seed * 0x2545f4914f6cdd1dull + 7;
	uint32_t ver = 1;

	memset(w, 0, sizeof(*w));
	w->seed = seed;
	memset(&m, 0, sizeof(m));
	for (int i = 0; i <= NTAB; i++)
		mtab_empty(&m.t[i]);
	m.t[NTAB].exists = 1;
	w->digest[0] = model_digest(&m);
	for (int i = 0; i < NTXN; i++) {
		struct txn *t = &w->t[i];
		int n = i < 3 ? MAXOPS : 1 + (int)rnd(&s, MAXOPS - 1);

		t->abort = i >= 3 && rnd(&s, 100) < 15;
		t->checkpoint = rnd(&s, 100) < 20;
		tm = m;
		if (i == BIGFILL || i == BIGDROP) {
			struct mtab *mt = &tm.t[0];

			t->checkpoint = 1;
			n = 0;
			if (i == BIGDROP) {
				t->ops[t->nops++] = (struct op){ .kind = OP_DROP };
				mt->exists = 0;
				/* and a put beside it: one commit for both */
				t->ops[t->nops++] = (struct op){
					.kind = OP_PUT, .tab = -1, .key = 1,
					.ver = ver, .vlen = 100 };
				tm.t[NTAB].vlen[1] = 100;
				tm.t[NTAB].ver[1] = ver++;
			} else {
				if (!mt->exists) {
					t->ops[t->nops++] = (struct op){ .kind = OP_CREATE };
					mt->exists = 1;
					mtab_empty(mt);
				}
				for (int k = 0; k < NKEY; k++) {
					struct op *o = &t->ops[t->nops++];

					*o = (struct op){ .kind = OP_PUT, .key = k,
							  .ver = ver++, .vlen = 16500 +
							  (uint32_t)rnd(&s, 13000) };
					mt->vlen[k] = o->vlen;
					mt->ver[k] = o->ver;
				}
			}
		}
		for (int j = 0; j < n; j++) {
			struct op *o = &t->ops[t->nops];
			uint64_t r = rnd(&s, 100);

			o->tab = (int)rnd(&s, NTAB + 1);
			if (o->tab == NTAB)
				o->tab = -1;
			struct mtab *mt = &tm.t[o->tab < 0 ? NTAB : o->tab];
			if (o->tab >= 0 && !mt->exists) {
				o->kind = OP_CREATE;
				mt->exists = 1;
				mtab_empty(mt);
			} else if (o->tab >= 0 && r < 6) {
				o->kind = OP_DROP;
				mt->exists = 0;
			} else if (o->tab >= 0 && r < 9) {
				o->kind = OP_CLEAR;
				mtab_empty(mt);
			} else if (r < 30) {
				o->kind = OP_DEL;
				o->key = (int)rnd(&s, NKEY);
				if (mt->vlen[o->key] == UINT32_MAX)
					continue; /* only deletes of present keys */
				mt->vlen[o->key] = UINT32_MAX;
			} else {
				o->kind = OP_PUT;
				o->key = (int)rnd(&s, NKEY);
				o->ver = ver++;
				o->vlen = gen_vlen(&s);
				mt->vlen[o->key] = o->vlen;
				mt->ver[o->key] = o->ver;
			}
			t->nops++;
		}
		if (!t->abort) {
			m = tm;
			t->state = ++w->ncommitted;
			w->digest[t->state] = model_digest(&m);
		}
	}
}

/* ---- the runner ------------------------------------------------------ */

struct run {
	uint64_t drop_from, drop_to; /* the big drop's I/O events */
	int64_t acked;
	int inflight;
	int crashed;
	char what[200];
};

static void open_opts(ut_options *o, int protect)
{
	ut_options_default(o);
	o->cache_bytes = 24 * UT_PAGE_SIZE; /* evictions mid-transaction */
	o->protect = protect;
	o->sync = 1;
	o->flush_inline = 1; /* the same I/O order every run */
}

static int apply_op(ut_txn *tx, const struct op *o)
{
	static uint8_t v[32768];
	ut_table *tb = NULL;
	char name[16], k[16];
	int rc;

	if (o->tab >= 0) {
		snprintf(name, sizeof(name), "t%d", o->tab);
		rc = ut_table_open(tx, name, o->kind == OP_CREATE ? UT_CREATE : 0,
				   &tb);
		if (rc)
			return rc;
	}
	key_of(k, o->key);
	switch (o->kind) {
	case OP_CREATE:
		return UT_OK;
	case OP_DROP:
		return ut_table_drop(tx, tb);
	case OP_CLEAR:
		return ut_table_clear(tx, tb);
	case OP_DEL:
		return ut_tdel(tx, tb, k, 4);
	default:
		value_of(v, o->vlen, o->key, o->ver);
		return ut_tput(tx, tb, k, 4, v, o->vlen);
	}
}

static void run(struct workload *w, ut_simdisk *d, int protect,
		uint64_t crash_at, struct run *r)
{
	ut_options o;
	ut_db *db;
	int rc;

	memset(r, 0, sizeof(*r));
	open_opts(&o, protect);
	ut_simdisk_crash_at(d, crash_at);
	if ((rc = ut_db_open_vfs(ut_simdisk_vfs(d), DBPATH, &o, &db))) {
		snprintf(r->what, sizeof(r->what), "open: %s", ut_strerror(rc));
		goto out;
	}
	for (int i = 0; i < NTXN; i++) {
		struct txn *t = &w->t[i];
		ut_txn *tx;

		if (i == BIGDROP)
			r->drop_from = ut_simdisk_event_count(d);
		if ((rc = ut_begin(db, 0, &tx))) {
			snprintf(r->what, sizeof(r->what), "txn %d begin: %s", i,
				 ut_strerror(rc));
			goto close;
		}
		for (int j = 0; j < t->nops; j++)
			if ((rc = apply_op(tx, &t->ops[j]))) {
				snprintf(r->what, sizeof(r->what), "txn %d op %d: %s (%s)",
					 i, j, ut_strerror(rc), ut_errdetail());
				ut_abort(tx);
				goto close;
			}
		if (t->abort) {
			ut_abort(tx);
		} else {
			r->inflight = 1;
			if ((rc = ut_commit(tx))) {
				snprintf(r->what, sizeof(r->what), "txn %d commit: %s",
					 i, ut_strerror(rc));
				goto close;
			}
			r->inflight = 0;
			r->acked = t->state;
		}
		if (t->checkpoint && (rc = ut_checkpoint(db))) {
			snprintf(r->what, sizeof(r->what), "txn %d checkpoint: %s",
				 i, ut_strerror(rc));
			goto close;
		}
		if (i == BIGDROP)
			r->drop_to = ut_simdisk_event_count(d);
	}
close:
	(void)ut_close(db);
out:
	r->crashed = ut_simdisk_crashed(d);
}

/* ---- the check ------------------------------------------------------- */

/* The digest of one table of the database (tb NULL: the default one), or
 * an error; its key count against the catalog's. */
static int table_digest(ut_txn *t, ut_table *tb, uint64_t *h, char *msg,
			size_t mn)
{
	ut_cursor *c;
	uint64_t n = 0;
	int rc;

	if ((rc = ut_tcursor_open(t, tb, &c)))
		return rc;
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
		const void *k, *v;
		size_t kl, vl;

		if ((rc = ut_cursor_get(c, &k, &kl, &v, &vl)))
			break;
		*h = digest_entry(*h, k, kl, v, vl);
		n++;
	}
	ut_cursor_close(c);
	if (rc != UT_NOTFOUND)
		return rc;
	*h = fnv(*h, "|", 1);
	{
		ut_table_info ti; /* tb NULL: the header's default count */

		if ((rc = ut_table_stat(t, tb, &ti)))
			return rc;
		if (ti.keys != n) {
			snprintf(msg, mn, "table %s: the %s counts %llu keys, "
				 "the scan found %llu", tb ? ti.name : "(default)",
				 tb ? "catalog" : "header",
				 (unsigned long long)ti.keys, (unsigned long long)n);
			return UT_ECORRUPT;
		}
	}
	return UT_OK;
}

static int db_digest(ut_db *db, uint64_t *h, char *msg, size_t mn)
{
	ut_table_info ti;
	ut_txn *t;
	int rc;

	*h = 1469598103934665603ull;
	if ((rc = ut_begin(db, UT_RDONLY, &t)))
		return rc;
	*h = fnv(*h, "default", 7);
	rc = table_digest(t, NULL, h, msg, mn);
	for (const char *after = NULL; rc == UT_OK; after = ti.name) {
		ut_table *tb;

		if ((rc = ut_table_next(t, after, &ti))) {
			rc = rc == UT_NOTFOUND ? UT_OK : rc;
			break;
		}
		*h = fnv(*h, ti.name, strlen(ti.name));
		if ((rc = ut_table_open(t, ti.name, 0, &tb)) == UT_OK)
			rc = table_digest(t, tb, h, msg, mn);
	}
	ut_abort(t);
	return rc;
}

static enum ut_simdisk_policy policy_of(uint64_t point)
{
	switch (point % 6) {
	case 0: return UT_SIMDISK_TEAR_ALL;
	case 3: return UT_SIMDISK_KEEP_ALL;
	case 5: return UT_SIMDISK_DROP_ALL;
	default: return UT_SIMDISK_RANDOM;
	}
}

/* Crash at point, reboot, reopen, check.  1 on a violation (printed). */
static int crash_point(struct workload *w, int protect, uint64_t point)
{
	ut_simdisk *d = ut_simdisk_new();
	char msg[400] = "";
	struct run r;
	ut_options o;
	ut_db *db;
	uint64_t h = 0;
	int rc, bad = 0;

	run(w, d, protect, point, &r);
	if (!r.crashed) {
		snprintf(msg, sizeof(msg), "the power cut never came (%s)", r.what);
		bad = 1;
		goto out;
	}
	ut_simdisk_reboot_policy(d, w->seed * 7919 + point, policy_of(point));
	open_opts(&o, protect);
	if ((rc = ut_db_open_vfs(ut_simdisk_vfs(d), DBPATH, &o, &db))) {
		snprintf(msg, sizeof(msg), "reopen: %s (%s)", ut_strerror(rc),
			 ut_errdetail());
		bad = 1;
		goto out;
	}
	rc = db_digest(db, &h, msg, sizeof(msg));
	if (rc && !msg[0])
		snprintf(msg, sizeof(msg), "read: %s (%s)", ut_strerror(rc),
			 ut_errdetail());
	if (!rc) {
		int64_t s;

		for (s = r.acked; s <= r.acked + r.inflight && s <= w->ncommitted; s++)
			if (w->digest[s] == h)
				break;
		if (s > r.acked + r.inflight || s > w->ncommitted)
			snprintf(msg, sizeof(msg), "contents match no state in "
				 "%lld..%lld", (long long)r.acked,
				 (long long)(r.acked + r.inflight));
	}
	if (!msg[0]) {
		ut_check_result cr;

		if ((rc = ut_check(db, NULL, &cr)))
			snprintf(msg, sizeof(msg), "ut_check: %s (%s)",
				 ut_strerror(rc), ut_errdetail());
	}
	(void)ut_close(db);
	bad = msg[0] != 0;
out:
	if (bad)
		print_message("VIOLATION [%s] seed=%llu point=%llu (stopped at: %s): "
			      "%s\n  reproduce: UT_CRASH_MODE=%s UT_CRASH_SEED=%llu "
			      "UT_CRASH_POINT=%llu ./test_crash_tables\n",
			      ut_protect_name(protect), (unsigned long long)w->seed,
			      (unsigned long long)point, r.what, msg,
			      ut_protect_name(protect), (unsigned long long)w->seed,
			      (unsigned long long)point);
	ut_simdisk_free(d);
	return bad;
}

static void sweep(int protect)
{
	const char *mode = getenv("UT_CRASH_MODE");
	long seeds = env_long("UT_CRASH_SEEDS", 2);
	long npoints = env_long("UT_CRASH_POINTS", 150);
	long one_seed = env_long("UT_CRASH_SEED", -1);
	long one_point = env_long("UT_CRASH_POINT", -1);
	static struct workload w;
	int bad = 0, points = 0;

	if (mode && *mode && strcmp(mode, ut_protect_name(protect)))
		skip();
	for (long seed = 1; seed <= seeds; seed++) {
		ut_simdisk *d;
		struct run dry;
		uint64_t events;

		if (one_seed >= 0 && seed != one_seed)
			continue;
		gen_workload(&w, (uint64_t)seed);
		d = ut_simdisk_new();
		run(&w, d, protect, UT_SIMDISK_NEVER, &dry);
		events = ut_simdisk_event_count(d);
		ut_simdisk_free(d);
		assert_int_equal(dry.acked, w.ncommitted);
		if (one_point >= 0) {
			bad += crash_point(&w, protect, (uint64_t)one_point);
			points++;
			continue;
		}
		for (long i = 0; i < npoints && (uint64_t)i < events; i++) {
			uint64_t p = events <= (uint64_t)npoints ? (uint64_t)i
				     : (uint64_t)i * events / (uint64_t)npoints +
				       (uint64_t)seed % 7;

			bad += crash_point(&w, protect, p < events ? p : events - 1);
			points++;
		}
		/* every event of the big drop's commit and checkpoint */
		assert_true(dry.drop_to > dry.drop_from);
		for (uint64_t p = dry.drop_from; p < dry.drop_to; p++) {
			bad += crash_point(&w, protect, p);
			points++;
		}
		print_message("[%s] seed %ld: the big drop: events %llu..%llu\n",
			      ut_protect_name(protect), seed,
			      (unsigned long long)dry.drop_from,
			      (unsigned long long)dry.drop_to);
		print_message("[%s] seed %ld: %llu events, %lld commits\n",
			      ut_protect_name(protect), seed,
			      (unsigned long long)events, (long long)w.ncommitted);
	}
	print_message("[%s] %d crash points, %d violations\n",
		      ut_protect_name(protect), points, bad);
	assert_int_equal(bad, 0);
}

static void test_crash_doublewrite(void **s) { (void)s; sweep(UT_PROTECT_DOUBLEWRITE); }
static void test_crash_atomic(void **s) { (void)s; sweep(UT_PROTECT_ATOMIC); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_doublewrite),
		cmocka_unit_test(test_crash_atomic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * crashtests/crash_workload.c - the workload a VM crash run kills mid-write,
 * and the checker that runs after the next boot.
 *
 *   crash_workload run DB [--protect MODE] [--txns N]
 *       commits transaction 1, 2, ... and prints "committed N" after
 *       ut_commit(N) returned, flushed line by line, so the host can kill the
 *       VM at any instant and know which commits were acknowledged.
 *   crash_workload verify DB ACKED [--protect MODE]
 *       opens DB (running recovery), rebuilds in an SQLite in-memory table
 *       the state after ACKED and after ACKED+1 transactions (the one in
 *       flight may or may not have landed), and requires the database to
 *       equal one of them exactly, plus a clean ut_check.  Exit 0 when it
 *       does, 1 on a mismatch, 2 on corruption, 3 on any other error.
 *
 * Transaction i is a deterministic function of i: it inserts a new key,
 * overwrites an older one with a value of a few KiB, and deletes another, so
 * pages split, change and are flushed while the log grows.
 */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "untorn.h"

#define MAX_VAL 6000

struct op {
	int del;
	char key[32];
	size_t klen;
	unsigned char val[MAX_VAL];
	size_t vlen;
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void make_key(struct op *o, uint64_t k)
{
	o->klen = (size_t)snprintf(o->key, sizeof(o->key), "key%010" PRIu64, k);
}

static void make_val(struct op *o, uint64_t txn, uint64_t k)
{
	uint64_t r = mix(txn * 1000003u + k);

	o->vlen = 50 + r % (MAX_VAL - 50);
	for (size_t i = 0; i < o->vlen; i++)
		o->val[i] = (unsigned char)(mix(r + i / 8) >> (8 * (i % 8)));
}

/* The three operations of transaction txn (1-based). */
static int txn_ops(uint64_t txn, struct op ops[3])
{
	int n = 0;

	memset(ops, 0, sizeof(struct op) * 3);
	make_key(&ops[n], txn);
	make_val(&ops[n++], txn, txn);
	if (txn > 1) {
		uint64_t k = 1 + mix(txn) % (txn - 1);
		make_key(&ops[n], k);
		make_val(&ops[n++], txn, k);
	}
	if (txn > 10 && txn % 3 == 0) {
		make_key(&ops[n], 1 + mix(txn ^ 0xdead) % (txn - 1));
		ops[n++].del = 1;
	}
	return n;
}

static int parse_protect(const char *s)
{
	for (int p = UT_PROTECT_AUTO; p <= UT_PROTECT_UNSAFE; p++)
		if (!strcmp(s, ut_protect_name(p)))
			return p;
	fprintf(stderr, "crash_workload: unknown mode %s\n", s);
	exit(3);
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "crash_workload: %s: %s: %s\n", what, ut_strerror(rc),
		ut_errdetail());
	return rc == UT_ECORRUPT ? 2 : 3;
}

static int run(const char *path, const ut_options *o, uint64_t txns)
{
	struct op *ops = malloc(sizeof(struct op) * 3);
	ut_db *db;
	int rc = ut_open(path, o, &db);

	if (rc)
		return fail("open", rc);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (uint64_t i = 1; i <= txns; i++) {
		ut_txn *t;
		int n = txn_ops(i, ops);

		if ((rc = ut_begin(db, 0, &t)))
			return fail("begin", rc);
		for (int j = 0; j < n && !rc; j++)
			rc = ops[j].del ? ut_del(t, ops[j].key, ops[j].klen)
					: ut_put(t, ops[j].key, ops[j].klen,
						 ops[j].val, ops[j].vlen);
		if (rc && rc != UT_NOTFOUND) {
			ut_abort(t);
			return fail("write", rc);
		}
		if ((rc = ut_commit(t)))
			return fail("commit", rc);
		printf("committed %" PRIu64 "\n", i);
	}
	free(ops);
	return ut_close(db) ? 3 : 0;
}

/* Apply transactions 1..upto to the oracle table. */
static void oracle_apply(sqlite3 *s, uint64_t from, uint64_t upto, struct op *ops)
{
	sqlite3_stmt *put, *del;

	sqlite3_prepare_v2(s, "INSERT OR REPLACE INTO kv VALUES (?1, ?2)", -1, &put, NULL);
	sqlite3_prepare_v2(s, "DELETE FROM kv WHERE k = ?1", -1, &del, NULL);
	for (uint64_t i = from; i <= upto; i++) {
		int n = txn_ops(i, ops);
		for (int j = 0; j < n; j++) {
			sqlite3_stmt *st = ops[j].del ? del : put;
			sqlite3_bind_blob(st, 1, ops[j].key, (int)ops[j].klen, SQLITE_STATIC);
			if (!ops[j].del)
				sqlite3_bind_blob(st, 2, ops[j].val, (int)ops[j].vlen, SQLITE_STATIC);
			sqlite3_step(st);
			sqlite3_reset(st);
		}
	}
	sqlite3_finalize(put);
	sqlite3_finalize(del);
}

/* 1 when the database holds exactly the oracle's rows. */
static int matches(ut_db *db, sqlite3 *s, uint64_t *rows, int *err)
{
	sqlite3_stmt *st;
	ut_txn *t;
	ut_cursor *c;
	int same = 1, rc;

	*rows = 0;
	if ((*err = ut_begin(db, UT_RDONLY, &t)))
		return 0;
	if ((*err = ut_cursor_open(t, &c))) {
		ut_abort(t);
		return 0;
	}
	sqlite3_prepare_v2(s, "SELECT k, v FROM kv ORDER BY k", -1, &st, NULL);
	rc = ut_cursor_seek(c, NULL, 0);
	for (;;) {
		int have = rc == UT_OK, want = sqlite3_step(st) == SQLITE_ROW;
		const void *k, *v;
		size_t kl, vl;

		if (rc < 0) {
			*err = rc;
			same = 0;
			break;
		}
		if (!have || !want) {
			same = have == want;
			break;
		}
		ut_cursor_get(c, &k, &kl, &v, &vl);
		if (kl != (size_t)sqlite3_column_bytes(st, 0) ||
		    memcmp(k, sqlite3_column_blob(st, 0), kl) ||
		    vl != (size_t)sqlite3_column_bytes(st, 1) ||
		    (vl && memcmp(v, sqlite3_column_blob(st, 1), vl))) {
			same = 0;
			break;
		}
		(*rows)++;
		rc = ut_cursor_next(c);
	}
	sqlite3_finalize(st);
	ut_cursor_close(c);
	ut_abort(t);
	return same;
}

static int verify(const char *path, const ut_options *o, uint64_t acked)
{
	struct op *ops = malloc(sizeof(struct op) * 3);
	sqlite3 *s;
	ut_db *db;
	ut_stats st;
	uint64_t rows;
	int rc, err = 0, ok, landed = 0;

	if ((rc = ut_open(path, o, &db)))
		return fail("open (recovery)", rc);
	sqlite3_open(":memory:", &s);
	sqlite3_exec(s, "CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID",
		     NULL, NULL, NULL);
	oracle_apply(s, 1, acked, ops);
	ok = matches(db, s, &rows, &err);
	if (!ok && !err) {
		oracle_apply(s, acked + 1, acked + 1, ops);
		ok = matches(db, s, &rows, &err);
		if (ok) {
			landed = 1;
			printf("verify: in-flight transaction %" PRIu64 " landed\n",
			       acked + 1);
		}
	}
	if (err)
		return fail("scan", err);
	rc = ut_check(db, stderr, NULL);
	ut_stats_get(db, &st);
	printf("verify: mode %s, %" PRIu64 " commits acknowledged before the "
	       "kill; recovered database %s the SQLite oracle after commit %"
	       PRIu64 " (%" PRIu64 " rows); check %s; torn pages repaired %"
	       PRIu64 ", corrupt pages %" PRIu64 "\n",
	       ut_protect_name(st.protect), acked,
	       ok ? "equals" : "DIFFERS from", acked + landed, rows,
	       rc ? "FAILED" : "clean", st.torn_repaired, st.corrupt_pages);
	sqlite3_close(s);
	free(ops);
	ut_close(db);
	return rc ? 2 : ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	ut_options o;
	uint64_t txns = 1000000;

	ut_options_default(&o);
	if (argc < 3)
		goto usage;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--protect") && i + 1 < argc)
			o.protect = parse_protect(argv[++i]);
		else if (!strcmp(argv[i], "--txns") && i + 1 < argc)
			txns = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[1], "verify") && i == 3)
			continue;
		else
			goto usage;
	}
	if (!strcmp(argv[1], "run"))
		return run(argv[2], &o, txns);
	if (!strcmp(argv[1], "verify") && argc >= 4)
		return verify(argv[2], &o, strtoull(argv[3], NULL, 10));
usage:
	fprintf(stderr, "usage: crash_workload run DB [--protect MODE] [--txns N]\n"
			"       crash_workload verify DB ACKED [--protect MODE]\n");
	return 64;
}

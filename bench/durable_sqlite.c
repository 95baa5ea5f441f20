/*
 * bench/durable_sqlite.c - SQLite in bench_durable (durable.h): its
 * preload (one transaction without a journal, then WAL, checkpointed) and
 * its runner: WAL, synchronous=FULL, page_size 16384, WITHOUT ROWID,
 * upserts, one connection per thread with the cache split over them,
 * writers behind an application mutex (SQLite has one writer), the
 * figures from the counting VFS (count_vfs.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "count_vfs.h"
#include "durable.h"

/* -- preload */

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

int preload_sqlite(const struct cfg *c, const char *path)
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

/* -- the runner */

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
	uint64_t main_bytes, wal_bytes, syncs;

	(void)s;
	count_vfs_totals(&main_bytes, &wal_bytes, &syncs);
	r->page_bytes += sign * (double)main_bytes;
	r->log_bytes += sign * (double)wal_bytes;
	r->syncs += sign * (double)syncs;
}

static int sqs_close(struct sys *s)
{
	return sqlite3_close(s->h) == SQLITE_OK ? 0 : -1;
}

const struct sysdef sqlite_system = {
	"sqlite", "sqlite WAL FULL", 1, 0, sqs_open, sqs_thr_open, sqs_thr_close, sqs_put1,
	sqs_get1, sqs_load, sqs_ctrs, sqs_close
};

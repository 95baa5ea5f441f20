/*
 * crashtests/vmcrash.c - the guest side of crashtests/vm-crash.sh: one boot
 * of a kill cycle.  It checks what the previous kill left, then runs the
 * workload until the host kills the VM.
 *
 *   vmcrash cycle DB ORACLE --protect MODE --seed S [--acked A] [--started T]
 *           [--threads N] [--cache BYTES] [--ckpt-every C] [--txns N]
 *           [--max-secs S] [--warmup W] [--verify-only] [--throttle-wait MS]
 *           [--plant noimage]
 *
 *   1. Check (skipped when DB does not exist yet): open DB (recovery), read
 *      ut_stats (torn_repaired, corrupt_pages), ut_check, then compare the
 *      database with the SQLite oracle ORACLE (a file on a disk the kill
 *      never writes to), which holds the state after k0 transactions.  The
 *      oracle is advanced transaction by transaction: the database must equal
 *      it after exactly k transactions for some k with
 *      max(k0, A) <= k <= max(k0, T), where A is the last "committed" and T
 *      the last "start" line the host saw before the kill.  The oracle keeps
 *      state k (one SQLite transaction, synchronous=FULL).  One line:
 *        verdict ok|tear|VIOLATION k=.. lo=.. hi=.. open=.. check=.. ...
 *      Before the open, one diagnostic line from a raw read of DB:
 *        prescan pages=.. zero=.. newer_than_ckpt=.. bad=.. [bad_pages=..]
 *      (pages passing their checksum with an LSN above the header's
 *      checkpoint LSN: how far the interrupted batches got).
 *      tear = a page failed its checksum (open refused with UT_ECORRUPT,
 *      ut_check or the scan found it); in unsafe mode that is the expected
 *      outcome (the negative control), elsewhere also a violation.  After
 *      a tear or a violation the database is started afresh (epoch + 1).
 *   2. Run (not with --verify-only): N threads commit transactions k+1,
 *      k+2, ... (the number is taken under the engine's writer lock, so
 *      numbers follow log order) and print
 *        start N        before the transaction's first write
 *        committed N    after ut_commit(N) returned
 *        checkpoint N   just before an explicit ut_checkpoint (every C commits)
 *        flush B dirty=D ckpt=K  the page cleaner starts the I/O of its Bth batch
 *                       of this run (ut_pager_set_batch_hook: the copies
 *                       are taken, no page of the batch written yet); D =
 *                       frames dirty then, >= the batch's size (evictions,
 *                       explicit and automatic checkpoints alike); K = 1
 *                       when a writer is inside an explicit ut_checkpoint
 *      until killed (or --txns / --max-secs: then it closes and exits 0).
 *      A fresh database (first boot, or after a reset) is first filled with
 *      transactions 1..W (--warmup), before "ready from W+1".
 *      --throttle-wait MS: the host throttles the disk under test only from
 *      the workload on (vm-crash.sh: the check and the warm-up are harness
 *      work, not evidence); before "ready", print "throttle" and write
 *      16 KiB probes (O_DIRECT|O_DSYNC, file DB-dir/throttle-probe) until
 *      one takes MS or more, i.e. the throttle is on (exit 3 after 20 s).
 *      --plant noimage: fullpage logs no page images (the planted bug the
 *      kills must catch: a torn page then cannot be repaired).
 *
 * Transaction n is a function of (seed, epoch, n) only: single-key puts,
 * multi-key puts, overwrites of a hot key set, deletes, mixed put/delete;
 * keys of varying length from a bounded key space (so the database stops
 * growing); values from 1 byte to 120 KB (several overflow pages); and a
 * put of "~last" = "EPOCH.N", so that no transaction is empty.
 *
 *   vmcrash refuse DB --protect MODE
 *       ut_open must fail (e.g. atomic with the NVMe aid off); prints the
 *       code and ut_errdetail.  Exit 0 when refused, 1 when it opened.
 *
 * Exit status of cycle: 0 normally (the verdict line carries the result),
 * 3 on a setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>

#include "pager.h" /* ut_pager_sabotage_images: --plant noimage */
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "untorn.h"
#include "db.h" /* ut_db_pager, ut_pager_set_batch_hook: the cleaner's batches */

#define KEYSPACE 800u
#define HOT_KEYS 64u
#define MAX_OPS 8
#define MAX_VAL 120000u

struct op {
	int del;
	char key[64];
	size_t klen;
	unsigned char *val; /* MAX_VAL bytes, owned by the caller */
	size_t vlen;
};

static uint64_t g_seed;

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix(*s);
}

/* Key id -> key: the same id always gives the same bytes; lengths 7..49. */
static void make_key(struct op *o, uint32_t id)
{
	int pad = (int)(mix(id) % 15) * 3;

	o->klen = (size_t)snprintf(o->key, sizeof(o->key), "k%06u%.*s", id, pad,
				   "-------------------------------------------------");
}

static size_t pick_vlen(uint64_t *s)
{
	uint64_t r = next(s) % 100, x = next(s);

	if (r < 50)
		return 1 + x % 100;
	if (r < 75)
		return 100 + x % 1900;
	if (r < 88)
		return 2000 + x % 10000;
	if (r < 96)
		return 12000 + x % 28000;
	return 40000 + x % (MAX_VAL - 40000);
}

static void fill(unsigned char *v, size_t n, uint64_t s)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x = next(&s);
		memcpy(v + i, &x, 8);
	}
	if (i < n) {
		uint64_t x = next(&s);
		memcpy(v + i, &x, n - i);
	}
}

static void put_op(struct op *o, uint32_t id, uint64_t *s)
{
	o->del = 0;
	make_key(o, id);
	o->vlen = pick_vlen(s);
	fill(o->val, o->vlen, next(s));
}

static void del_op(struct op *o, uint32_t id)
{
	o->del = 1;
	make_key(o, id);
	o->vlen = 0;
}

/* The operations of transaction n of epoch e; ops[i].val preallocated. */
static int txn_ops(uint64_t epoch, uint64_t n, struct op *ops)
{
	uint64_t s = mix(g_seed ^ mix(epoch << 40 ^ n));
	uint64_t kind = next(&s) % 100;
	int k = 0, m;

	if (kind < 40) {                       /* single put */
		put_op(&ops[k++], (uint32_t)(next(&s) % KEYSPACE), &s);
	} else if (kind < 62) {                /* multi-key put */
		m = 2 + (int)(next(&s) % 5);
		while (k < m)
			put_op(&ops[k++], (uint32_t)(next(&s) % KEYSPACE), &s);
	} else if (kind < 77) {                /* overwrites of hot keys */
		m = 1 + (int)(next(&s) % 3);
		while (k < m)
			put_op(&ops[k++], (uint32_t)(next(&s) % HOT_KEYS), &s);
	} else if (kind < 90) {                /* deletes */
		m = 1 + (int)(next(&s) % 3);
		while (k < m)
			del_op(&ops[k++], (uint32_t)(next(&s) % KEYSPACE));
	} else {                               /* mixed puts and deletes */
		m = 2 + (int)(next(&s) % 5);
		while (k < m) {
			uint32_t id = (uint32_t)(next(&s) % KEYSPACE);
			if (next(&s) % 3 == 0)
				del_op(&ops[k++], id);
			else
				put_op(&ops[k++], id, &s);
		}
	}
	/* Every transaction also records its number: none is empty (an
	 * empty commit writes no log and waits for nothing, so its
	 * "committed" would say nothing about the ones before it), and the
	 * recovered database says which transaction it ends at. */
	ops[k].del = 0;
	ops[k].klen = (size_t)snprintf(ops[k].key, sizeof(ops[k].key), "~last");
	ops[k].vlen = (size_t)snprintf((char *)ops[k].val, 64, "%" PRIu64 ".%" PRIu64,
				       epoch, n);
	return k + 1;
}

static struct op *ops_alloc(void)
{
	struct op *ops = calloc(MAX_OPS, sizeof(*ops));

	for (int i = 0; ops && i < MAX_OPS; i++)
		if (!(ops[i].val = malloc(MAX_VAL)))
			return NULL;
	return ops;
}

static void ops_free(struct op *ops)
{
	for (int i = 0; ops && i < MAX_OPS; i++)
		free(ops[i].val);
	free(ops);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ the oracle */

static sqlite3 *oracle_open(const char *path)
{
	sqlite3 *s;

	if (sqlite3_open(path, &s) != SQLITE_OK) {
		fprintf(stderr, "vmcrash: oracle %s: %s\n", path, sqlite3_errmsg(s));
		exit(3);
	}
	sqlite3_exec(s, "PRAGMA synchronous=FULL; PRAGMA journal_mode=DELETE;"
			"CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID;"
			"CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, val INTEGER);"
			"INSERT OR IGNORE INTO meta VALUES ('k', 0), ('epoch', 1), ('resets', 0);",
		     NULL, NULL, NULL);
	return s;
}

static uint64_t meta_get(sqlite3 *s, const char *name)
{
	sqlite3_stmt *st;
	uint64_t v = 0;

	sqlite3_prepare_v2(s, "SELECT val FROM meta WHERE name = ?1", -1, &st, NULL);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void meta_set(sqlite3 *s, const char *name, uint64_t v)
{
	sqlite3_stmt *st;

	sqlite3_prepare_v2(s, "INSERT OR REPLACE INTO meta VALUES (?1, ?2)", -1, &st, NULL);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)v);
	sqlite3_step(st);
	sqlite3_finalize(st);
}

static void oracle_apply(sqlite3 *s, uint64_t epoch, uint64_t n, struct op *ops)
{
	sqlite3_stmt *put, *del;
	int k = txn_ops(epoch, n, ops);

	sqlite3_prepare_v2(s, "INSERT OR REPLACE INTO kv VALUES (?1, ?2)", -1, &put, NULL);
	sqlite3_prepare_v2(s, "DELETE FROM kv WHERE k = ?1", -1, &del, NULL);
	for (int j = 0; j < k; j++) {
		sqlite3_stmt *st = ops[j].del ? del : put;
		sqlite3_bind_blob(st, 1, ops[j].key, (int)ops[j].klen, SQLITE_STATIC);
		if (!ops[j].del)
			sqlite3_bind_blob(st, 2, ops[j].val, (int)ops[j].vlen, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			fprintf(stderr, "vmcrash: oracle: %s\n", sqlite3_errmsg(s));
			exit(3);
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(put);
	sqlite3_finalize(del);
}

/* 1 when db holds exactly the oracle's rows; *err = engine error, if any. */
static int matches(ut_db *db, sqlite3 *s, uint64_t *rows, int *err, char *why,
		   size_t whylen)
{
	sqlite3_stmt *st;
	ut_txn *t;
	ut_cursor *c;
	int same = 1, rc;

	*rows = 0;
	*err = 0;
	why[0] = 0;
	if ((*err = ut_begin(db, UT_RDONLY, &t)))
		return 0;
	if ((*err = ut_cursor_open(t, &c))) {
		ut_abort(t);
		return 0;
	}
	sqlite3_prepare_v2(s, "SELECT k, v FROM kv ORDER BY k", -1, &st, NULL);
	rc = ut_cursor_seek(c, NULL, 0);
	for (;;) {
		int want = sqlite3_step(st) == SQLITE_ROW;
		const void *k, *v;
		size_t kl, vl;

		if (rc < 0) {
			*err = rc;
			snprintf(why, whylen, "row %" PRIu64 ": %s (%s)", *rows,
				 ut_strerror(rc), ut_errdetail());
			same = 0;
			break;
		}
		if (rc != UT_OK || !want) {
			same = (rc == UT_OK) == want;
			if (!same)
				snprintf(why, whylen, "row %" PRIu64 ": %s", *rows,
					 want ? "rows missing" : "extra rows");
			break;
		}
		ut_cursor_get(c, &k, &kl, &v, &vl);
		if (kl != (size_t)sqlite3_column_bytes(st, 0) ||
		    memcmp(k, sqlite3_column_blob(st, 0), kl) ||
		    vl != (size_t)sqlite3_column_bytes(st, 1) ||
		    (vl && memcmp(v, sqlite3_column_blob(st, 1), vl))) {
			snprintf(why, whylen, "row %" PRIu64 ": key %.*s differs",
				 *rows, (int)(kl > 40 ? 40 : kl), (const char *)k);
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

/* ------------------------------------------------------------- options */

struct cfg {
	const char *db, *oracle;
	ut_options o;
	uint64_t acked, started, txns;
	int have_acked, have_started, threads, verify_only;
	uint64_t ckpt_every, warmup;
	double max_secs;
	double throttle_wait_ms; /* --throttle-wait: 0 = the disk is throttled from boot */
};

/* Move the database aside (DB.bad-EPOCH, -wal, -dw), the evidence of a
 * tear or a violation; only the latest one of each kind is kept. */
static void remove_db(const char *db, const char *why)
{
	static const char *const ext[] = {"", "-wal", "-dw"};
	char from[4096], to[4200];

	for (int i = 0; i < 3; i++) {
		snprintf(from, sizeof(from), "%s%s", db, ext[i]);
		snprintf(to, sizeof(to), "%s.%s%s", db, why, ext[i]);
		if (rename(from, to))
			unlink(from);
	}
}

/* ------------------------------------------------------------ the check */

/* Before recovery, what the kill left in the data file, read raw: pages
 * (after the header), all-zero ones, ones that pass their checksum with an
 * LSN above the header's checkpoint LSN (written since the last completed
 * checkpoint: how far the interrupted batches got), and ones failing it.
 * Diagnostic only; the verdict comes from ut_open, ut_check and the scan. */
static void prescan(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(UT_PAGE_SIZE);
	uint64_t ckpt = 0, pages = 0, zero = 0, newer = 0, bad = 0;
	char badl[128] = "";

	if (!f || !buf)
		goto out;
	for (uint32_t pg = 0; fread(buf, 1, UT_PAGE_SIZE, f) == UT_PAGE_SIZE; pg++) {
		int z = 1;

		for (size_t i = 0; i < UT_PAGE_SIZE && z; i++)
			z = !buf[i];
		if (pg == 0) {
			ckpt = ut_ld64(buf + UT_META_CKPT_LSN);
			continue;
		}
		pages++;
		if (z)
			zero++;
		else if (ut_page_verify(buf, pg, path) != UT_OK) {
			if (++bad <= 8)
				snprintf(badl + strlen(badl), sizeof(badl) - strlen(badl),
					 "%s%u", bad > 1 ? "," : "", pg);
		} else if (ut_page_lsn(buf) > ckpt)
			newer++;
	}
	printf("prescan pages=%" PRIu64 " zero=%" PRIu64 " newer_than_ckpt=%" PRIu64
	       " bad=%" PRIu64 "%s%s\n", pages, zero, newer, bad,
	       bad ? " bad_pages=" : "", badl);
out:
	if (f)
		fclose(f);
	free(buf);
	ut_clear_errdetail();
}

/* Returns the open handle (NULL when the database must be created anew)
 * and the transaction number it holds in *k. */
static ut_db *check(struct cfg *c, sqlite3 *s, uint64_t *k_out, uint64_t *epoch_out)
{
	struct op *ops = ops_alloc();
	uint64_t k0 = meta_get(s, "k"), epoch = meta_get(s, "epoch");
	uint64_t lo = c->have_acked && c->acked > k0 ? c->acked : k0;
	uint64_t hi = c->have_started && c->started > k0 ? c->started : k0;
	const char *verdict = "ok";
	char why[512] = "", checkmsg[256] = "clean";
	ut_db *db = NULL;
	ut_stats st;
	ut_check_result cr;
	int rc, err = 0, ok = 0, tear = 0;
	uint64_t rows = 0, k = 0;
	double t0 = now_s(), t_open = 0, t_check = 0;
	struct stat sb;

	memset(&st, 0, sizeof(st));
	memset(&cr, 0, sizeof(cr));
	if (stat(c->db, &sb) != 0) {
		/* first boot of a pass: nothing to check */
		*k_out = 0;
		*epoch_out = epoch;
		if (k0 != 0) {
			fprintf(stderr, "vmcrash: %s missing but the oracle is at %" PRIu64 "\n",
				c->db, k0);
			exit(3);
		}
		printf("fresh database, epoch %" PRIu64 "\n", epoch);
		ops_free(ops);
		return NULL;
	}
	if (lo > hi)
		hi = lo; /* host saw a commit it had not seen start: impossible */
	prescan(c->db);
	t0 = now_s();
	rc = ut_open(c->db, &c->o, &db);
	t_open = now_s() - t0;
	if (rc) {
		snprintf(why, sizeof(why), "open: %s: %s", ut_strerror(rc), ut_errdetail());
		tear = rc == UT_ECORRUPT && strstr(ut_errdetail(), "checksum") != NULL;
		verdict = tear ? "tear" : "VIOLATION";
		db = NULL;
		goto report;
	}
	ut_stats_get(db, &st);
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&buf, &len);

		rc = ut_check(db, mf, &cr);
		fclose(mf);
		if (rc) {
			char *nl = buf ? strchr(buf, '\n') : NULL;
			if (nl)
				*nl = 0;
			snprintf(checkmsg, sizeof(checkmsg), "%s", rc == UT_ECORRUPT ? "FAILED" : ut_strerror(rc));
			snprintf(why, sizeof(why), "check: %s", buf ? buf : ut_strerror(rc));
			if (cr.bad_checksums)
				tear = 1;
		}
		free(buf);
	}
	t_check = now_s() - t0;
	/* advance the oracle from k0 to lo, then one transaction at a time */
	sqlite3_exec(s, "BEGIN", NULL, NULL, NULL);
	for (k = k0 + 1; k <= lo; k++)
		oracle_apply(s, epoch, k, ops);
	k = lo;
	for (;;) {
		char w[256];

		ok = matches(db, s, &rows, &err, w, sizeof(w));
		if (ok || err) {
			if (err && !why[0])
				snprintf(why, sizeof(why), "scan: %s", w);
			if (err == UT_ECORRUPT)
				tear = 1;
			break;
		}
		if (!why[0] || k == lo)
			snprintf(why, sizeof(why), "after %" PRIu64 ": %s", k, w);
		if (k >= hi)
			break;
		oracle_apply(s, epoch, ++k, ops);
	}
	if (ok && !rc) {
		meta_set(s, "k", k);
		sqlite3_exec(s, "COMMIT", NULL, NULL, NULL);
		why[0] = 0;
	} else {
		sqlite3_exec(s, "ROLLBACK", NULL, NULL, NULL);
		verdict = tear ? "tear" : "VIOLATION";
		if (!ok && !err && !rc)
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
				 "; equals no state in [%" PRIu64 ", %" PRIu64 "]", lo, hi);
	}
report:
	printf("verdict %s k=%" PRIu64 " lo=%" PRIu64 " hi=%" PRIu64 " k0=%" PRIu64
	       " open=%s check=%s bad_checksums=%" PRIu64 " torn_repaired=%" PRIu64
	       " corrupt_pages=%" PRIu64 " rows=%" PRIu64 " pages=%" PRIu64
	       " mode=%s open_s=%.2f check_s=%.2f verify_s=%.2f epoch=%" PRIu64 "%s%s\n",
	       verdict, ok ? k : 0, lo, hi, k0,
	       db ? "ok" : (tear ? "ECORRUPT" : "FAILED"), db ? checkmsg : "-",
	       cr.bad_checksums, st.torn_repaired, st.corrupt_pages + (db ? 0 : (uint64_t)tear),
	       rows, cr.pages_total, ut_protect_name(db ? st.protect : (int)c->o.protect),
	       t_open, db ? t_check : 0.0, now_s() - t0, epoch, why[0] ? " why=" : "",
	       why);
	fflush(stdout);
	ops_free(ops);
	if (strcmp(verdict, "ok")) {
		/* start afresh: new database, new epoch, empty oracle */
		if (db)
			ut_close(db);
		db = NULL;
		remove_db(c->db, verdict);
		sqlite3_exec(s, "BEGIN; DELETE FROM kv;", NULL, NULL, NULL);
		meta_set(s, "k", 0);
		meta_set(s, "epoch", epoch + 1);
		meta_set(s, "resets", meta_get(s, "resets") + 1);
		sqlite3_exec(s, "COMMIT", NULL, NULL, NULL);
		printf("reset: database removed, epoch %" PRIu64 "\n", epoch + 1);
		k = 0;
		epoch++;
	}
	*k_out = k;
	*epoch_out = epoch;
	return db;
}

/* ------------------------------------------------------------- the run */

/* --throttle-wait: ask the host for the throttle and wait until a 16 KiB
 * O_DIRECT|O_DSYNC write beside the database takes min_ms or more.  The
 * guest splits it into 4 requests of 4 KiB (max_sectors_kb=4), which the
 * throttle serves one per 1/iops s once QEMU's short burst allowance is
 * used up, so the first probes may still be fast.  Returns 0 once
 * throttled, -1 on an error or after 20 s without. */
static int wait_throttled(const char *db, double min_ms)
{
	char dir[4096], path[4200];
	void *buf = NULL;
	double t_end = now_s() + 20, t, ms = 0;
	int fd, n = 0;

	snprintf(dir, sizeof(dir), "%s", db);
	snprintf(path, sizeof(path), "%s/throttle-probe", dirname(dir));
	printf("throttle\n");
	fflush(stdout);
	fd = open(path, O_WRONLY | O_CREAT | O_DIRECT | O_DSYNC, 0644);
	if (fd < 0 || posix_memalign(&buf, 16384, 16384)) {
		printf("error: throttle probe %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	memset(buf, 0x5a, 16384);
	while ((t = now_s()) < t_end) {
		if (pwrite(fd, buf, 16384, 0) != 16384) {
			printf("error: throttle probe write: %s\n", strerror(errno));
			break;
		}
		n++;
		ms = (now_s() - t) * 1000;
		if (ms >= min_ms) {
			printf("throttled after %d probe writes (%.0f ms)\n", n, ms);
			close(fd);
			free(buf);
			return 0;
		}
	}
	if (t >= t_end)
		printf("error: no throttle after %d probe writes (last %.1f ms)\n", n, ms);
	close(fd);
	free(buf);
	return -1;
}

struct run {
	ut_db *db;
	struct cfg *c;
	uint64_t epoch;
	_Atomic uint64_t next;  /* last transaction number taken */
	uint64_t last;          /* stop after this one (0: no limit) */
	_Atomic int stop;
	_Atomic int failed;
	double deadline;
	_Atomic uint64_t batches; /* cleaner batches started in this run */
	_Atomic int in_ckpt;      /* writers inside an explicit ut_checkpoint */
};

static void *writer(void *arg)
{
	struct run *r = arg;
	struct op *ops = ops_alloc();

	while (!atomic_load(&r->stop)) {
		ut_txn *t;
		uint64_t n;
		int rc, k;

		if (now_s() > r->deadline) {
			atomic_store(&r->stop, 1);
			break;
		}
		if ((rc = ut_begin(r->db, 0, &t))) {
			printf("error: begin: %s: %s\n", ut_strerror(rc), ut_errdetail());
			atomic_store(&r->failed, 1);
			break;
		}
		/* under the writer lock: numbers follow the log's order */
		n = atomic_fetch_add(&r->next, 1) + 1;
		if (r->last && n > r->last) {
			ut_abort(t);
			atomic_store(&r->stop, 1);
			break;
		}
		printf("start %" PRIu64 "\n", n);
		k = txn_ops(r->epoch, n, ops);
		rc = 0;
		for (int j = 0; j < k && (rc == 0 || rc == UT_NOTFOUND); j++)
			rc = ops[j].del ? ut_del(t, ops[j].key, ops[j].klen)
					: ut_put(t, ops[j].key, ops[j].klen, ops[j].val,
						 ops[j].vlen);
		if (rc && rc != UT_NOTFOUND) {
			printf("error: txn %" PRIu64 ": %s: %s\n", n, ut_strerror(rc),
			       ut_errdetail());
			ut_abort(t);
			atomic_store(&r->failed, 1);
			atomic_store(&r->stop, 1);
			break;
		}
		if ((rc = ut_commit(t))) {
			printf("error: commit %" PRIu64 ": %s: %s\n", n, ut_strerror(rc),
			       ut_errdetail());
			atomic_store(&r->failed, 1);
			atomic_store(&r->stop, 1);
			break;
		}
		printf("committed %" PRIu64 "\n", n);
		if (r->c->ckpt_every && n % r->c->ckpt_every == 0) {
			ut_stats a, b;
			double t0 = now_s();

			ut_stats_get(r->db, &a);
			printf("checkpoint %" PRIu64 "\n", n);
			atomic_fetch_add(&r->in_ckpt, 1);
			rc = ut_checkpoint(r->db);
			atomic_fetch_sub(&r->in_ckpt, 1);
			ut_stats_get(r->db, &b);
			printf("checkpoint-done %" PRIu64 " ms=%.0f pages=%" PRIu64
			       " dw=%" PRIu64 "\n", n, (now_s() - t0) * 1000,
			       b.page_writes - a.page_writes,
			       b.dw_page_writes - a.dw_page_writes);
			if (rc) {
				printf("error: checkpoint: %s: %s\n", ut_strerror(rc),
				       ut_errdetail());
				atomic_store(&r->failed, 1);
				atomic_store(&r->stop, 1);
				break;
			}
		}
	}
	ops_free(ops);
	return NULL;
}

/* The page cleaner's batch hook: called in the cleaner thread after it
 * copied a batch and before the batch's first write (pool mutex not held),
 * so the line marks the start of the batch's I/O.  Printed and flushed at
 * once: the host times its kill from this line.  ckpt=1: a writer was
 * inside an explicit ut_checkpoint when the batch began (the batch writes
 * that checkpoint's pages, or eviction pages beside it), so the host can
 * tell kills inside checkpoints from kills inside eviction batches. */
static void batch_started(void *arg)
{
	struct run *r = arg;
	uint64_t b = atomic_fetch_add(&r->batches, 1) + 1;
	size_t dirty = ut_pager_dirty_frames(ut_db_pager(r->db));

	printf("flush %" PRIu64 " dirty=%zu ckpt=%d\n", b, dirty,
	       atomic_load(&r->in_ckpt) > 0);
	fflush(stdout);
}

static int run(struct cfg *c, ut_db *db, uint64_t k, uint64_t epoch)
{
	struct run r;
	pthread_t th[64];
	int rc;

	memset(&r, 0, sizeof(r));
	if (!db && (rc = ut_open(c->db, &c->o, &db))) {
		printf("error: open for the run: %s: %s\n", ut_strerror(rc), ut_errdetail());
		return 3;
	}
	r.db = db;
	r.c = c;
	r.epoch = epoch;
	atomic_store(&r.next, k);
	r.last = c->txns ? k + c->txns : 0;
	r.deadline = now_s() + c->max_secs;
	if (k == 0 && c->warmup) {
		/* a fresh database: fill it first, so that the kills find
		 * page writes that overwrite written blocks (a torn write into
		 * a new, unwritten block reads back as zeros: no tear to see) */
		printf("warmup to %" PRIu64 "\n", c->warmup);
		r.last = c->warmup;
		for (int i = 0; i < c->threads; i++)
			pthread_create(&th[i], NULL, writer, &r);
		for (int i = 0; i < c->threads; i++)
			pthread_join(th[i], NULL);
		if (atomic_load(&r.failed)) {
			ut_close(db);
			return 1;
		}
		atomic_store(&r.stop, 0);
		atomic_store(&r.next, c->warmup);
		k = c->warmup;
		r.last = c->txns ? k + c->txns : 0;
		printf("warmup done\n");
	}
	if (c->throttle_wait_ms > 0 && wait_throttled(c->db, c->throttle_wait_ms)) {
		ut_close(db);
		return 3;
	}
	{
		ut_stats st;
		ut_stats_get(db, &st);
		printf("ready from %" PRIu64 " mode=%s direct_io=%d threads=%d "
		       "ckpt_every=%" PRIu64 " cache=%zu\n", k + 1,
		       ut_protect_name(st.protect), st.direct_io, c->threads,
		       c->ckpt_every, c->o.cache_bytes);
	}
	/* Every page write from here on goes through the page cleaner, whose
	 * batch hook prints "flush".  The engine starts the cleaner on first
	 * need (a frame wanted while all are dirty, an automatic checkpoint);
	 * until then ut_checkpoint writes its batches in the caller, without
	 * the hook.  Start it now with an (empty) asynchronous checkpoint: no
	 * transaction is running, so this thread is the single writer. */
	ut_pager_set_batch_hook(ut_db_pager(db), batch_started, &r);
	{
		int started;

		if ((rc = ut_pager_checkpoint_async(ut_db_pager(db), &started))) {
			printf("error: checkpoint to start the cleaner: %s: %s\n",
			       ut_strerror(rc), ut_errdetail());
			ut_close(db);
			return 1;
		}
	}
	for (int i = 0; i < c->threads; i++)
		pthread_create(&th[i], NULL, writer, &r);
	for (int i = 0; i < c->threads; i++)
		pthread_join(th[i], NULL);
	atomic_store(&r.stop, 1);
	ut_pager_set_batch_hook(ut_db_pager(db), NULL, NULL);
	rc = ut_close(db);
	printf("run ended (no kill): %s, close %s\n",
	       atomic_load(&r.failed) ? "FAILED" : "ok", ut_strerror(rc));
	return atomic_load(&r.failed) || rc ? 1 : 0;
}


/* vmcrash diag DB --seed S [--epoch E] --upto N: which states 0..N the
 * database equals, and for the first difference against state N which
 * transaction last wrote the value the database holds. */
static int diag(const char *path, ut_options *o, uint64_t epoch, uint64_t upto)
{
	struct op *ops = ops_alloc();
	sqlite3 *s;
	ut_db *db;
	uint64_t rows;
	int rc, err;
	char w[256];

	o->create = 0;
	if ((rc = ut_open(path, o, &db))) {
		printf("diag: open: %s: %s\n", ut_strerror(rc), ut_errdetail());
		return 1;
	}
	sqlite3_open(":memory:", &s);
	sqlite3_exec(s, "CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID",
		     NULL, NULL, NULL);
	for (uint64_t k = 0; k <= upto; k++) {
		if (k)
			oracle_apply(s, epoch, k, ops);
		if (matches(db, s, &rows, &err, w, sizeof(w)))
			printf("diag: equals state %" PRIu64 " (%" PRIu64 " rows)\n", k, rows);
		else if (k == upto)
			printf("diag: state %" PRIu64 ": %s\n", k, w);
	}
	/* every key: db value vs. the writers of that key */
	{
		ut_txn *t;
		ut_cursor *c;
		int r;

		ut_begin(db, UT_RDONLY, &t);
		ut_cursor_open(t, &c);
		for (r = ut_cursor_seek(c, NULL, 0); r == UT_OK; r = ut_cursor_next(c)) {
			const void *k, *v;
			size_t kl, vl;
			uint64_t last = 0, lastall = 0;

			ut_cursor_get(c, &k, &kl, &v, &vl);
			for (uint64_t n = 1; n <= upto; n++) {
				int m = txn_ops(epoch, n, ops);
				for (int j = 0; j < m; j++)
					if (ops[j].klen == kl && !memcmp(ops[j].key, k, kl)) {
						lastall = n;
						if (!ops[j].del && ops[j].vlen == vl &&
						    !memcmp(ops[j].val, v, vl))
							last = n;
					}
			}
			if (last != lastall)
				printf("diag: key %.*s: db value from txn %" PRIu64
				       " (len %zu), last writer %" PRIu64 "\n",
				       (int)kl, (const char *)k, last, vl, lastall);
		}
		ut_cursor_close(c);
		ut_abort(t);
	}
	ut_close(db);
	sqlite3_close(s);
	ops_free(ops);
	return 0;
}

/* --------------------------------------------------------------- main */

static int parse_protect(const char *s)
{
	for (int p = UT_PROTECT_AUTO; p <= UT_PROTECT_FULLPAGE; p++)
		if (!strcmp(s, ut_protect_name(p)))
			return p;
	fprintf(stderr, "vmcrash: unknown mode %s\n", s);
	exit(64);
}

static int usage(void)
{
	fprintf(stderr,
		"usage: vmcrash cycle DB ORACLE --protect MODE --seed S [--acked A]\n"
		"               [--started T] [--threads N] [--cache BYTES]\n"
		"               [--ckpt-every C] [--txns N] [--max-secs S] [--warmup W]\n"
		"               [--verify-only] [--throttle-wait MS] [--plant noimage]\n"
		"       vmcrash refuse DB --protect MODE\n");
	return 64;
}

int main(int argc, char **argv)
{
	struct cfg c;
	int first = 3;

	memset(&c, 0, sizeof(c));
	ut_options_default(&c.o);
	c.o.cache_bytes = 2u << 20;
	c.threads = 4;
	c.max_secs = 600;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "cycle")) {
		if (argc < 4)
			return usage();
		c.db = argv[2];
		c.oracle = argv[3];
		first = 4;
	} else if (!strcmp(argv[1], "refuse") || !strcmp(argv[1], "diag")) {
		c.db = argv[2];
	} else {
		return usage();
	}
	for (int i = first; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--verify-only")) {
			c.verify_only = 1;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--protect"))
			c.o.protect = parse_protect(v);
		else if (!strcmp(a, "--seed"))
			g_seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--acked"))
			c.acked = strtoull(v, NULL, 10), c.have_acked = 1;
		else if (!strcmp(a, "--started"))
			c.started = strtoull(v, NULL, 10), c.have_started = 1;
		else if (!strcmp(a, "--threads"))
			c.threads = atoi(v);
		else if (!strcmp(a, "--cache"))
			c.o.cache_bytes = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--ckpt-every"))
			c.ckpt_every = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--epoch"))
			c.acked = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--upto"))
			c.started = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--warmup"))
			c.warmup = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--txns"))
			c.txns = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--max-secs"))
			c.max_secs = atof(v);
		else if (!strcmp(a, "--throttle-wait"))
			c.throttle_wait_ms = atof(v);
		else if (!strcmp(a, "--plant") && !strcmp(v, "noimage"))
			ut_pager_sabotage_images = 1; /* the planted bug: must fail */
		else
			return usage();
	}
	if (c.threads < 1 || c.threads > 64)
		return usage();

	if (!strcmp(argv[1], "diag") && c.txns) {
		struct op *ops = ops_alloc();
		int m = txn_ops(c.acked ? c.acked : 1, c.txns, ops);
		for (int j = 0; j < m; j++)
			printf("txn %" PRIu64 " op %d: %s %.*s len %zu\n", c.txns, j,
			       ops[j].del ? "del" : "put", (int)ops[j].klen, ops[j].key,
			       ops[j].vlen);
		return 0;
	}
	if (!strcmp(argv[1], "diag"))
		return diag(c.db, &c.o, c.acked ? c.acked : 1, c.started);
	if (!strcmp(argv[1], "refuse")) {
		ut_db *db;
		int rc;

		c.o.create = 1;
		rc = ut_open(c.db, &c.o, &db);
		if (rc == UT_OK) {
			ut_stats st;
			ut_stats_get(db, &st);
			printf("refuse: open with --protect %s SUCCEEDED (mode %s): not refused\n",
			       ut_protect_name(c.o.protect), ut_protect_name(st.protect));
			ut_close(db);
			return 1;
		}
		printf("refuse: open with --protect %s refused: %s (%d): %s\n",
		       ut_protect_name(c.o.protect), ut_strerror(rc), rc, ut_errdetail());
		return 0;
	}

	{
		sqlite3 *s = oracle_open(c.oracle);
		uint64_t k, epoch;
		ut_db *db = check(&c, s, &k, &epoch);

		sqlite3_close(s);
		if (c.verify_only) {
			if (db)
				ut_close(db);
			return 0;
		}
		sync();
		return run(&c, db, k, epoch);
	}
}

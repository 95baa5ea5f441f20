/*
 * engine/db.c - the public API (untorn.h) on top of the B+tree and pager:
 * handles, transactions, cursors and the default table.  Named tables
 * are table.c (what the two share: txn.h).
 *
 * Contract: argument checking, locking and transaction lifetime; no page
 * format knowledge.  Locking: a write transaction holds db->writer from
 * ut_begin to ut_commit/ut_abort, so writers are serialized; a read
 * transaction takes no lock of the handle: it holds a pager snapshot
 * (pager.h), so readers and the writer never wait for each other.
 * Checkpoints take the writer lock only to start.  Pages a read
 * transaction hands out without copying (ut_get_ref) stay pinned in its
 * list until it ends.  Cursors live in their transaction's list; ending
 * the transaction detaches them (their pins are released) --
 * ut_cursor_close still frees them.  A put/del through the transaction bumps its generation, after
 * which older cursors answer UT_EINVAL until re-seeked.
 */
#include <pthread.h>
#include <stddef.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"
#include "check.h"
#include "flush_doublewrite.h"
#include "db.h"
#include "txn.h"
#include "log.h"
#include "pager.h"
#include "ut_io.h"

/* Automatic checkpoint: when the log since the last checkpoint passes this
 * many bytes, or dirty pages pass half the cache. */
#define CKPT_LOG_BYTES (64ull << 20)
/* sync=0: a checkpoint's fsync writes back every page evicted lazily since
 * the last one, so checkpoint four times less often. */
#define CKPT_LOG_BYTES_LAZY (256ull << 20)
/* With sync=0 the log is also written at least this often (seconds). */
#define LAZY_FLUSH_SECONDS 1

int ut_options_init(ut_options *o, size_t size)
{
	ut_options d;

	if (!o || size < UT_OPTIONS_SIZE_MIN)
		return UT_EINVAL;
	memset(&d, 0, sizeof(d));
	d.cache_bytes = 64u << 20;
	d.protect = UT_PROTECT_AUTO;
	d.create = 1;
	d.sync = 1;
	d.lock_timeout_ms = UT_DEFAULT_LOCK_TIMEOUT_MS;
	if (size > sizeof(d)) {
		memset((char *)o + sizeof(d), 0, size - sizeof(d));
		memcpy(o, &d, sizeof(d));
		o->size = size;
		return UT_EVERSION;
	}
	d.size = size;
	memcpy(o, &d, size);
	return UT_OK;
}

/* The caller's options as this library's struct: its first o->size bytes
 * over the defaults, so fields its (older) header did not have take their
 * defaults and nothing past its struct is read. */
static int import_options(const ut_options *o, ut_options *out)
{
	ut_options_init(out, sizeof(*out));
	if (!o)
		return UT_OK;
	if (o->size < UT_OPTIONS_SIZE_MIN) {
		ut_set_errdetail("ut_options.size is %zu, below the smallest "
				 "ut_options (%zu): fill it with "
				 "ut_options_default", o->size,
				 (size_t)UT_OPTIONS_SIZE_MIN);
		return UT_EINVAL;
	}
	if (o->size > sizeof(*out)) {
		ut_set_errdetail("ut_options.size is %zu, larger than this "
				 "library's ut_options (%zu): the program was "
				 "built against a newer untorn.h than libuntorn "
				 "%s", o->size, sizeof(*out), UT_VERSION_STRING);
		return UT_EVERSION;
	}
	memcpy(out, o, o->size);
	out->size = sizeof(*out);
	return UT_OK;
}

/* A database that was not closed cleanly but had checkpointed (so commits
 * since may live only in the log) must have its log: recreating it would
 * drop them silently. */
static int refuse_missing_log(ut_pager *p, const char *path, const char *wpath)
{
	ut_set_errdetail("%s: the database was not closed cleanly, but its "
			 "write-ahead log %s is missing: the commits since the "
			 "last checkpoint (LSN %llu) would be lost (restore the "
			 "file; to open anyway, losing them, create it empty, "
			 "then run `untorn check`)", path, wpath,
			 (unsigned long long)ut_pager_redo_lsn(p));
	return UT_ECORRUPT;
}

/* The evidence of how far the log was durable, after a crash (or to
 * recreate a lost log above every LSN in use): the header's page-write
 * bound, or, when it is unknown (format 1, lazy writes) or
 * UT_RECOVERY_FULL_SCAN=1 asks for it, the highest LSN of any page in the
 * data file and the -dw copies, read whole. */
static int page_evidence(ut_pager *p, uint64_t *max, char *what, size_t wn)
{
	const char *env = getenv("UT_RECOVERY_FULL_SCAN");
	uint64_t b = ut_pager_page_bound(p);
	int rc;

	if (b == UT_BOUND_UNKNOWN || (env && strcmp(env, "1") == 0)) {
		if ((rc = ut_pager_max_page_lsn(p, max, what, wn)))
			return rc;
		b = *max;
	} else {
		*max = b;
		snprintf(what, wn, "the page-write bound in the header of %s "
			 "(pages as new were written)", ut_pager_path(p));
	}
	ut_pager_bound_evidence(p, b);
	return UT_OK;
}

/* Recovery at open: (a) the flusher's recover ran inside ut_pager_open
 * (double-write restore), and the header was checked there; (b) after a
 * crash, the page-write bound (or the highest page LSN, page_evidence) is
 * evidence of how far the log was durable, so the log may not end below
 * it; (c) redo_lsn from the header; (d) the log replayed from it into the
 * pager; then a checkpoint makes the result durable and lets the log
 * reset. */
static int open_log(ut_db *db, ut_vfs *vfs, const char *path)
{
	ut_pager *p = db->pager;
	uint64_t initial = ut_pager_header_max_lsn(p), page_max = 0, redo;
	ut_wal_recovery_info info;
	size_t len = strlen(path);
	char *wpath = malloc(len + sizeof(UT_WAL_SUFFIX)), what[400] = "";
	int rc, existed, clean = ut_pager_was_clean(p);

	if (!wpath)
		return UT_ENOMEM;
	memcpy(wpath, path, len);
	memcpy(wpath + len, UT_WAL_SUFFIX, sizeof(UT_WAL_SUFFIX));
	rc = vfs->exists(vfs, wpath);
	if (rc == 0 && !clean && ut_pager_redo_lsn(p))
		rc = refuse_missing_log(p, path, wpath);
	if (rc < 0)
		goto out;
	/* After a crash, or to recreate a lost log above every LSN in use. */
	if ((!clean || rc == 0) &&
	    (rc = page_evidence(p, &page_max, what, sizeof(what))))
		goto out;
	if (page_max > initial)
		initial = page_max;
	if (ut_pager_lsn(p) > initial)
		initial = ut_pager_lsn(p);
	rc = ut_log_open(vfs, path, initial + 1,
			 ut_pager_logs_images(p), &db->log,
			 &existed);
	if (rc)
		goto out;
	ut_wal_require_end(ut_log_wal(db->log), ut_pager_header_max_lsn(p),
			   "the database header (last checkpoint)");
	ut_wal_require_end(ut_log_wal(db->log), page_max, what);
	ut_pager_set_hooks(p, ut_log_hooks_of(db->log));
	/* A log this open started (the file was missing, or created empty
	 * as untorn.h says to accept the loss of a lost one) has nothing to
	 * replay: recovery starts at its start, not at the header's redo
	 * point, which lies below it. */
	redo = existed && !ut_wal_created(ut_log_wal(db->log))
		       ? ut_pager_redo_lsn(p) : 0;
	if (existed && !redo && !clean && ut_pager_redo_lsn(p))
		snprintf(db->open_note, sizeof(db->open_note),
			 "%s: opened with its write-ahead log %s lost (the log "
			 "file was empty): the commits since the last checkpoint "
			 "(LSN %llu), if any, are lost, and pages written after it "
			 "are kept as they are; run `untorn check`", path, wpath,
			 (unsigned long long)ut_pager_redo_lsn(p));
	rc = ut_log_recover(db->log, p, redo, &info);
	if (rc == UT_OK)
		rc = ut_pager_checkpoint(p);
	if (rc == UT_OK)
		rc = ut_pager_recovered(p);
out:
	free(wpath);
	return rc;
}

/* Recovery ran out of space: say how much it needs at most, so that
 * freeing "a little" is not guesswork.  Every page redo left dirty may be
 * written past the file's end, and in doublewrite mode through as many
 * double-write slots (the file holds at most UT_DW_SLOTS). */
static void add_space_need(ut_pager *p, char *detail, size_t cap)
{
	uint64_t pages = ut_pager_dirty_frames(p), need = pages * UT_PAGE_SIZE;
	size_t len = strlen(detail);

	if (ut_pager_protect(p) == UT_PROTECT_DOUBLEWRITE)
		need += UT_DW_SLOT_OFF(pages < UT_DW_SLOTS ? pages : UT_DW_SLOTS);
	snprintf(detail + len, cap - len, "; recovery needs up to %llu bytes "
		 "free (%llu pages to write%s)", (unsigned long long)need,
		 (unsigned long long)pages,
		 ut_pager_protect(p) == UT_PROTECT_DOUBLEWRITE
			 ? ", each through the double-write file" : "");
}

static uint64_t default_checkpoint_bytes(const ut_db *db)
{
	return db->opt.sync ? CKPT_LOG_BYTES : CKPT_LOG_BYTES_LAZY;
}

int ut_db_open_vfs(ut_vfs *vfs, const char *path, const ut_options *o,
		   ut_db **out)
{
	ut_pager_config cfg;
	ut_db *db;
	int rc;

	ut_clear_errdetail();

	if (!vfs || !path || !*path || !out)
		return UT_EINVAL;
	*out = NULL;
	db = calloc(1, sizeof(*db));
	if (!db)
		return UT_ENOMEM;
	rc = import_options(o, &db->opt);
	if (rc) {
		free(db);
		return rc;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.cache_bytes = db->opt.cache_bytes;
	cfg.protect = db->opt.protect;
	cfg.create = db->opt.create;
	cfg.lazy = !db->opt.sync;
	cfg.lock_wait_ms = db->opt.lock_timeout_ms;
	cfg.readonly = db->opt.readonly;
	cfg.inline_flush = db->opt.flush_inline;
	cfg.snapshot_bytes = db->opt.snapshot_bytes;
	if (cfg.readonly)
		cfg.create = 0;
	rc = ut_pager_open(vfs, path, &cfg, &db->pager);
	if (rc) {
		free(db);
		return rc;
	}
	db->ckpt_log_bytes = default_checkpoint_bytes(db);
	/* read-only opens only cleanly closed databases: the data file holds
	 * every commit, and the log is neither needed nor touched */
	rc = db->opt.readonly ? UT_OK : open_log(db, vfs, path);
	if (rc) {
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", ut_errdetail());
		if (rc == UT_ENOSPC)
			add_space_need(db->pager, detail, sizeof(detail));
		ut_pager_set_hooks(db->pager, NULL);
		ut_pager_set_fatal(db->pager, 1); /* close without writing */
		(void)ut_pager_close(db->pager);
		(void)ut_log_close(db->log);
		free(db);
		ut_set_errdetail("%s", detail); /* the cause, not the cleanup */
		return rc;
	}
	pthread_mutex_init(&db->writer, NULL);
	pthread_mutex_init(&db->mu, NULL);
	/* what recovery's steps left there described no failure */
	if (db->open_note[0])
		ut_set_errdetail("%s", db->open_note);
	else
		ut_clear_errdetail();
	*out = db;
	return UT_OK;
}

int ut_open(const char *path, const ut_options *o, ut_db **out)
{
	return ut_db_open_vfs(ut_vfs_posix(), path, o, out);
}

static void rtxn_free(ut_txn *t);

int ut_close(ut_db *db)
{
	int rc, rc2, open;

	ut_clear_errdetail();

	if (!db)
		return UT_EINVAL;
	open = __atomic_load_n(&db->ntxn, __ATOMIC_ACQUIRE);
	if (open) {
		ut_set_errdetail("%s: %d transactions still open (a commit "
				 "counts until it returns)",
				 ut_pager_path(db->pager), open);
		return UT_EBUSY;
	}
	ut_tables_free(db);
	for (unsigned i = 0; i < RTXN_CACHE; i++)
		rtxn_free(db->rcache[i].t);
	rc = ut_pager_close(db->pager); /* final checkpoint, header clean */
	rc2 = ut_log_close(db->log);
	if (rc == UT_OK)
		rc = rc2;
	pthread_mutex_destroy(&db->writer);
	pthread_mutex_destroy(&db->mu);
	free(db);
	return rc;
}

/* Where a thread starts in db->rcache: threads spread over its lines. */
static __thread unsigned rcache_hint = UINT32_MAX;
static unsigned rcache_next;

static unsigned rcache_start(void)
{
	if (rcache_hint == UINT32_MAX)
		rcache_hint = __atomic_fetch_add(&rcache_next, 1, __ATOMIC_RELAXED);
	return rcache_hint;
}

/* A read transaction's object: one an ended read transaction left in
 * db->rcache (no allocation, and its snapshot's memo already empty), else
 * a new one.  Every field is as calloc leaves it. */
static ut_txn *rtxn_get(ut_db *db)
{
	unsigned h = rcache_start();

	for (unsigned k = 0; k < RTXN_CACHE; k++) {
		unsigned i = (h + k) % RTXN_CACHE;
		ut_txn *t;

		if (!__atomic_load_n(&db->rcache[i].t, __ATOMIC_RELAXED))
			continue;
		if ((t = __atomic_exchange_n(&db->rcache[i].t, NULL,
					     __ATOMIC_ACQUIRE)))
			return t;
	}
	return calloc(1, sizeof(ut_txn));
}

/* A kept read transaction's held list and pin set stay with it up to
 * this many entries. */
#define RTXN_KEEP_HELD 1024u

static void rtxn_free(ut_txn *t)
{
	if (t) {
		free(t->held);
		free(t->pinset);
		free(t);
	}
}

/* t, a read transaction that ended (fields reset but its empty held
 * list and pin set), kept for reuse or freed. */
static void rtxn_put(ut_db *db, ut_txn *t)
{
	unsigned h = rcache_start();

	for (unsigned k = 0; k < RTXN_CACHE; k++) {
		unsigned i = (h + k) % RTXN_CACHE;
		ut_txn *none = NULL;

		if (!__atomic_load_n(&db->rcache[i].t, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&db->rcache[i].t, &none, t, 0,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
	rtxn_free(t);
}

int ut_begin(ut_db *db, unsigned flags, ut_txn **out)
{
	ut_txn *t;
	int rc;

	ut_clear_errdetail();

	if (!db || !out || (flags & ~UT_RDONLY))
		return UT_EINVAL;
	*out = NULL;
	t = flags & UT_RDONLY ? rtxn_get(db) : calloc(1, sizeof(*t));
	if (!t)
		return UT_ENOMEM;
	t->db = db;
	t->rdonly = !!(flags & UT_RDONLY);
	if (t->rdonly) {
		if ((rc = ut_pager_snap_begin(db->pager, &t->snap))) {
			memset(t, 0, offsetof(ut_txn, snap));
			rtxn_put(db, t);
			return rc;
		}
	} else if (db->opt.readonly) {
		free(t);
		ut_set_errdetail("%s: opened read-only", ut_pager_path(db->pager));
		return UT_EREADONLY;
	} else {
		pthread_mutex_lock(&db->writer);
		if ((rc = ut_pager_begin(db->pager))) {
			pthread_mutex_unlock(&db->writer);
			free(t);
			return rc;
		}
	}
	__atomic_add_fetch(&db->ntxn, 1, __ATOMIC_RELAXED);
	*out = t;
	return UT_OK;
}

/* Let go of what the transaction holds (cursors, pins, its snapshot or
 * the writer lock) and free it; it still counts as open (ntxn) until
 * txn_closed. */
static void txn_release(ut_txn *t)
{
	ut_db *db = t->db;

	for (ut_cursor *c = t->cursors, *next; c; c = next) {
		next = c->next;
		ut_btcur_reset(&c->bc);
		c->txn = NULL;
		c->next = c->prev = NULL;
	}
	t->cursors = NULL;
	for (size_t i = 0; i < t->nheld; i++) {
		ut_pager_release(db->pager, t->held[i].pin);
		free(t->held[i].owned);
	}
	ut_tables_release(t);
	if (t->rdonly) {
		struct held *held = t->held;
		ut_pg **pinset = t->pinset;
		size_t capheld = t->capheld, pincap = t->pincap;

		ut_pager_snap_end(db->pager, &t->snap);
		/* the held list and pin set stay for the next read
		 * transaction (a 100-get one grew them four times), emptied,
		 * unless they grew large */
		if (capheld > RTXN_KEEP_HELD) {
			free(held);
			free(pinset);
			held = NULL;
			pinset = NULL;
			capheld = pincap = 0;
		} else if (t->nheld) {
			memset(pinset, 0, pincap * sizeof(*pinset));
		}
		/* as calloc made it, but the snapshot (rewritten by the
		 * next begin; its memo left empty by snap_end) and those */
		memset(t, 0, offsetof(ut_txn, snap));
		memset((char *)t + offsetof(ut_txn, held), 0,
		       sizeof(*t) - offsetof(ut_txn, held));
		t->held = held;
		t->capheld = capheld;
		t->pinset = pinset;
		t->pincap = pincap;
		rtxn_put(db, t);
	} else {
		free(t->held);
		free(t->pinset);
		pthread_mutex_unlock(&db->writer);
		free(t);
	}
}

static void txn_closed(ut_db *db)
{
	/* release: what the transaction did happens before a close that
	 * sees the count fall */
	__atomic_sub_fetch(&db->ntxn, 1, __ATOMIC_RELEASE);
}

static void txn_end(ut_txn *t)
{
	ut_db *db = t->db;

	txn_release(t);
	txn_closed(db);
}

static void detach_cursors(ut_txn *t)
{
	for (ut_cursor *c = t->cursors; c; c = c->next)
		ut_btcur_reset(&c->bc);
}

void ut_txn_changing(ut_txn *t)
{
	t->gen++;
	detach_cursors(t);
}

/* Under the writer lock, after a commit: start a checkpoint when the log
 * since the last one passes db->ckpt_log_bytes.  The page cleaner runs it
 * while commits go on (dirty pages are its business in between). */
static int maybe_checkpoint(ut_db *db)
{
	ut_wal_stats ws;
	int rc, started;

	ut_wal_stats_get(ut_log_wal(db->log), &ws);
	if (ws.bytes_since_checkpoint < db->ckpt_log_bytes)
		return UT_OK;
	rc = ut_pager_checkpoint_async(db->pager, &started);
	db->auto_checkpoints += started;
	return rc;
}

/* Commit = append to the log under the writer lock, release the lock, then
 * (sync=1) wait for the log to be durable up to the commit LSN, so that
 * concurrent committers share one fdatasync (group commit).  A log write or
 * sync failure fails the handle: UT_EFATAL for everything but close.  The
 * transaction stays open (ntxn) until the wait is over: it uses db->log
 * and db->pager, which ut_close must not free under it. */
int ut_commit(ut_txn *t)
{
	ut_db *db;
	uint64_t lsn = 0;
	int rc = UT_OK, sync;

	ut_clear_errdetail();

	if (!t)
		return UT_EINVAL;
	db = t->db;
	sync = db->opt.sync;
	if (!t->rdonly) {
		detach_cursors(t);
		if (!t->err && t->tables)
			t->err = ut_tables_store(t);
		if (!t->err && t->defdelta)
			t->err = ut_tables_store_default(t);
		/* a catalog reaches the log only once the header on disk
		 * says format 3: a format-2 build then never replays it */
		if (!t->err && !db->format_raised &&
		    ut_pager_catalog_root(db->pager)) {
			t->err = ut_pager_raise_format(db->pager);
			db->format_raised = !t->err;
		}
		if (t->err) {
			ut_pager_rollback(db->pager);
			rc = t->err;
		} else {
			uint64_t before = ut_pager_lsn(db->pager);

			rc = ut_pager_commit(db->pager, sync);
			if (rc == UT_OK && ut_pager_lsn(db->pager) != before)
				lsn = ut_pager_lsn(db->pager);
			if (rc == UT_OK)
				rc = maybe_checkpoint(db);
			if (rc && ut_log_failed(db->log))
				ut_pager_set_fatal(db->pager, 1);
		}
	}
	txn_release(t);
	if (rc == UT_OK && lsn && !sync) {
		/* sync=0: bound what a crash can lose to about a second */
		struct timespec ts;
		int64_t last = __atomic_load_n(&db->last_lazy_flush, __ATOMIC_RELAXED);

		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		if (ts.tv_sec - last >= LAZY_FLUSH_SECONDS &&
		    __atomic_compare_exchange_n(&db->last_lazy_flush, &last,
						(int64_t)ts.tv_sec, 0,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			sync = 1;
	}
	if (rc == UT_OK && lsn) {
		/* sync=0 still hands the commit to the OS (like SQLite's OFF):
		 * a crash of the process loses nothing committed. */
		rc = sync ? ut_log_flush_to(db->log, lsn)
			  : ut_log_write_to(db->log, lsn);
		if (rc)
			ut_pager_set_fatal(db->pager, 1);
	}
	txn_closed(db);
	return rc;
}

void ut_abort(ut_txn *t)
{
	if (!t)
		return;
	if (!t->rdonly) {
		detach_cursors(t);
		ut_pager_rollback(t->db->pager);
	}
	txn_end(t);
}

/* The snapshot a transaction reads: its own, or (NULL) the writer's view. */
ut_snap *ut_txn_snap(ut_txn *t)
{
	return t->rdonly ? &t->snap : NULL;
}

int ut_txn_check_key(const void *key, size_t klen)
{
	if (!key || klen == 0) {
		ut_set_errdetail("key is empty (keys are 1..%u bytes)", UT_MAX_KEY);
		return UT_EINVAL;
	}
	if (klen > UT_MAX_KEY) {
		ut_set_errdetail("key of %zu bytes is longer than %u", klen,
				 UT_MAX_KEY);
		return UT_ETOOBIG;
	}
	return UT_OK;
}

int ut_txn_check_write(ut_txn *t)
{
	if (!t)
		return UT_EINVAL;
	if (t->rdonly)
		return UT_EREADONLY;
	if (t->err)
		return t->err;
	return UT_OK;
}

/* A change failed part-way: the tree may be inconsistent, so the
 * transaction can only be aborted (commit will roll back). */
int ut_txn_change_rc(ut_txn *t, int rc)
{
	if (rc < 0 && rc != UT_EINVAL && rc != UT_ETOOBIG)
		t->err = rc;
	return rc;
}

/* ut_put's and ut_tput's arguments; inlined into ut_put, as before named
 * tables shared it (a call here cost the default put ~27 instructions). */
static inline __attribute__((always_inline)) int
check_put(ut_txn *t, const void *key, size_t klen, const void *val, size_t vlen)
{
	int rc;

	if ((rc = ut_txn_check_write(t)) || (rc = ut_txn_check_key(key, klen)))
		return rc;
	if (vlen > UT_MAX_VALUE) {
		ut_set_errdetail("value of %zu bytes is longer than %u", vlen,
				 UT_MAX_VALUE);
		return UT_ETOOBIG;
	}
	if (!val && vlen)
		return UT_EINVAL;
	return 0;
}

int ut_txn_check_put(ut_txn *t, const void *key, size_t klen, const void *val,
		     size_t vlen)
{
	return check_put(t, key, klen, val, vlen);
}

int ut_put(ut_txn *t, const void *key, size_t klen, const void *val, size_t vlen)
{
	int rc, added;

	ut_clear_errdetail();

	if ((rc = check_put(t, key, klen, val, vlen)))
		return rc;
	ut_txn_changing(t);
	rc = ut_bt_put(t->db->pager, key, klen, val, vlen, &added);
	t->defdelta += rc == UT_OK && added;
	return ut_txn_change_rc(t, rc);
}

/* ut_get's and ut_get_ref's arguments. */
int ut_txn_check_get(ut_txn *t, const void *key, size_t klen, const void *val,
		     const size_t *vlen)
{
	ut_clear_errdetail();
	if (!t || !val || !vlen)
		return UT_EINVAL;
	return ut_txn_check_key(key, klen);
}

int ut_get(ut_txn *t, const void *key, size_t klen, void **val, size_t *vlen)
{
	int rc = ut_txn_check_get(t, key, klen, val, vlen);

	if (rc)
		return rc;
	return ut_bt_get(t->db->pager, ut_txn_snap(t), key, klen, val, vlen);
}

static size_t pin_slot(const ut_txn *t, const ut_pg *pg)
{
	return ((uintptr_t)pg >> 4) * 2654435761u & (t->pincap - 1);
}

/* Is pg held already (then the caller's new pin on it goes)?  Else it is
 * added to the set, which then has room for the held entry to come. */
static int pin_known(ut_txn *t, ut_pg *pg, int *known)
{
	size_t i;

	*known = 0;
	if (2 * (t->nheld + 1) > t->pincap) {
		size_t c = t->pincap ? 2 * t->pincap : 32;
		ut_pg **ns = calloc(c, sizeof(*ns)), **old = t->pinset;
		size_t oc = t->pincap;

		if (!ns)
			return UT_ENOMEM;
		t->pinset = ns;
		t->pincap = c;
		for (size_t j = 0; j < oc; j++) {
			if (!old[j])
				continue;
			for (i = pin_slot(t, old[j]); ns[i]; i = (i + 1) & (c - 1))
				;
			ns[i] = old[j];
		}
		free(old);
	}
	for (i = pin_slot(t, pg); t->pinset[i]; i = (i + 1) & (t->pincap - 1)) {
		if (t->pinset[i] == pg) {
			*known = 1;
			return UT_OK;
		}
	}
	t->pinset[i] = pg;
	return UT_OK;
}

/* ut_get_ref on the tree rooted at *root (NULL: the default one).  A read
 * transaction pins each page it hands values from once: a value's page
 * stays pinned until the transaction ends (untorn.h), and a long read
 * transaction calling it again and again holds at most one pin per page
 * it read, not one per call. */
int ut_txn_get_ref_at(ut_txn *t, const uint32_t *root, const void *key,
		      size_t klen, const void **val, size_t *vlen)
{
	struct held h;
	int rc, known;

	if (t->nheld == t->capheld) {
		size_t c = t->capheld ? 2 * t->capheld : 16;
		struct held *nh = realloc(t->held, c * sizeof(*nh));

		if (!nh)
			return UT_ENOMEM;
		t->held = nh;
		t->capheld = c;
	}
	rc = root ? ut_bt_get_ref_in(t->db->pager, ut_txn_snap(t), *root, key,
				     klen, &h.pin, &h.owned, val, vlen)
		  : ut_bt_get_ref(t->db->pager, ut_txn_snap(t), key, klen,
				  &h.pin, &h.owned, val, vlen);
	if (rc == UT_OK && !t->rdonly && h.pin) {
		/* the writer's page changes with its next put: copy */
		h.owned = malloc(*vlen ? *vlen : 1);
		if (h.owned)
			memcpy(h.owned, *val, *vlen);
		ut_pager_release(t->db->pager, h.pin);
		h.pin = NULL;
		*val = h.owned;
		rc = h.owned ? UT_OK : UT_ENOMEM;
	}
	if (rc == UT_OK && h.pin) {
		if ((rc = pin_known(t, h.pin, &known)) || known) {
			/* the page's version never changes in the snapshot:
			 * the pin already held keeps *val valid */
			ut_pager_release(t->db->pager, h.pin);
			return rc;
		}
	}
	if (rc == UT_OK)
		t->held[t->nheld++] = h;
	return rc;
}

int ut_get_ref(ut_txn *t, const void *key, size_t klen, const void **val,
	       size_t *vlen)
{
	int rc = ut_txn_check_get(t, key, klen, val, vlen);

	return rc ? rc : ut_txn_get_ref_at(t, NULL, key, klen, val, vlen);
}

int ut_del(ut_txn *t, const void *key, size_t klen)
{
	int rc;

	ut_clear_errdetail();

	if ((rc = ut_txn_check_write(t)) || (rc = ut_txn_check_key(key, klen)))
		return rc;
	ut_txn_changing(t);
	rc = ut_bt_del(t->db->pager, key, klen);
	t->defdelta -= rc == UT_OK;
	return ut_txn_change_rc(t, rc);
}

int ut_cursor_open(ut_txn *t, ut_cursor **out)
{
	ut_cursor *c;

	if (!t || !out)
		return UT_EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return UT_ENOMEM;
	c->txn = t;
	c->gen = t->gen;
	ut_btcur_init(&c->bc, t->db->pager, ut_txn_snap(t));
	c->next = t->cursors;
	if (t->cursors)
		t->cursors->prev = c;
	t->cursors = c;
	*out = c;
	return UT_OK;
}

static int cursor_ok(ut_cursor *c)
{
	if (!c || !c->txn)
		return UT_EINVAL;
	return UT_OK;
}

int ut_cursor_seek(ut_cursor *c, const void *key, size_t klen)
{
	int rc;

	ut_clear_errdetail();

	if ((rc = cursor_ok(c)))
		return rc;
	if (klen && !key)
		return UT_EINVAL;
	if (klen > UT_MAX_KEY)
		return UT_ETOOBIG;
	if (c->ts && (rc = ut_tstate_check(c->ts)))
		return rc;
	c->gen = c->txn->gen;
	rc = ut_btcur_seek(&c->bc, key, klen);
	return c->ts ? ut_tstate_rc(c->ts, rc) : rc;
}

int ut_cursor_next(ut_cursor *c)
{
	int rc;

	ut_clear_errdetail();

	if ((rc = cursor_ok(c)))
		return rc;
	if (c->gen != c->txn->gen)
		return UT_EINVAL;
	rc = ut_btcur_next(&c->bc);
	return c->ts ? ut_tstate_rc(c->ts, rc) : rc;
}

int ut_cursor_get(ut_cursor *c, const void **key, size_t *klen,
		  const void **val, size_t *vlen)
{
	int rc;

	if ((rc = cursor_ok(c)))
		return rc;
	if (c->gen != c->txn->gen)
		return UT_EINVAL;
	return ut_btcur_get(&c->bc, key, klen, val, vlen);
}

void ut_cursor_close(ut_cursor *c)
{
	if (!c)
		return;
	if (c->txn) {
		if (c->prev)
			c->prev->next = c->next;
		else
			c->txn->cursors = c->next;
		if (c->next)
			c->next->prev = c->prev;
	}
	ut_btcur_fini(&c->bc);
	free(c);
}

int ut_checkpoint(ut_db *db)
{
	uint64_t ticket;
	int rc, again;

	ut_clear_errdetail();

	if (!db)
		return UT_EINVAL;
	/* The writer lock only to start it (at the last commit); its page
	 * I/O runs while transactions go on. */
	do {
		pthread_mutex_lock(&db->writer);
		rc = ut_pager_checkpoint_start(db->pager, &ticket, &again);
		pthread_mutex_unlock(&db->writer);
		if (rc == UT_OK && ticket)
			rc = ut_pager_checkpoint_wait(db->pager, ticket);
	} while (rc == UT_OK && again);
	return rc;
}

static void stats_of(ut_db *db, ut_stats *st)
{
	ut_io_counters cc, *c = &cc;
	ut_pager_counters_copy(db->pager, &cc);
	ut_wal_stats ws;
	memset(&ws, 0, sizeof(ws));
	if (db->log)
		ut_wal_stats_get(ut_log_wal(db->log), &ws);
	ut_file *f = ut_pager_file(db->pager);
	memset(st, 0, sizeof(*st));
	st->protect = ut_pager_protect(db->pager);
	st->direct_io = f->direct;
	st->uring = ut_file_uses_uring(f);
	ut_pager_cleaner_stats(db->pager, &st->flush_batches, &st->checkpoints,
			       &st->frame_waits);
	st->page_writes = c->page_writes;
	st->dw_page_writes = c->dw_page_writes;
	st->log_bytes = c->log_bytes + ws.bytes_appended;
	st->syncs = c->syncs + ws.syncs;
	st->torn_repaired = c->torn_repaired;
	st->corrupt_pages = c->corrupt_pages;
	ut_snap_stats ss;
	ut_pager_snap_stats(db->pager, &ss);
	st->snapshots = ss.snapshots;
	st->snapshot_versions = ss.versions;
	st->snapshot_bytes = ss.version_bytes;
	st->snapshot_dropped = ss.dropped;
	st->page_images = c->page_images;
}

/* At most size bytes: a caller built against an older header has a
 * shorter struct. */
int ut_stats_read(ut_db *db, ut_stats *st, size_t size)
{
	ut_stats full;

	if (!db || !st || size < UT_STATS_SIZE_MIN)
		return UT_EINVAL;
	stats_of(db, &full);
	full.size = size < sizeof(full) ? size : sizeof(full);
	memcpy(st, &full, full.size);
	if (size > full.size)
		memset((char *)st + full.size, 0, size - full.size);
	return UT_OK;
}

ut_pager *ut_db_pager(ut_db *db)
{
	return db->pager;
}

/* Here, not in check.c: the CLI references ut_check weakly, and a static
 * link extracts an archive member only for a strong reference. */
int ut_check(ut_db *db, FILE *report, ut_check_result *res)
{
	ut_check_result r;
	ut_txn *t;
	int rc;

	if (!db)
		return UT_EINVAL;
	/* the writer's view, with writers excluded (readers go on) */
	if ((rc = ut_begin(db, UT_RDONLY, &t)))
		return rc;
	pthread_mutex_lock(&db->writer);
	rc = ut_check_pager(db->pager, report, res ? res : &r);
	pthread_mutex_unlock(&db->writer);
	ut_abort(t);
	return rc;
}

const char *ut_protect_reason(ut_db *db)
{
	if (!db)
		return NULL;
	return ut_pager_protect_reason(db->pager);
}

const char *ut_direct_note(ut_db *db)
{
	if (!db)
		return NULL;
	return ut_pager_direct_note(db->pager);
}

void ut_db_set_checkpoint_bytes(ut_db *db, uint64_t bytes)
{
	pthread_mutex_lock(&db->writer);
	db->ckpt_log_bytes = bytes ? bytes : default_checkpoint_bytes(db);
	pthread_mutex_unlock(&db->writer);
}

uint64_t ut_db_auto_checkpoints(ut_db *db)
{
	return db->auto_checkpoints;
}

const ut_options *ut_db_options(ut_db *db)
{
	return &db->opt;
}

ut_wal *ut_db_wal(ut_db *db)
{
	return db->log ? ut_log_wal(db->log) : NULL;
}

/*
 * engine/db.c - the public API (untorn.h) on top of the B+tree and pager.
 *
 * Contract: argument checking, locking and transaction lifetime; no page
 * format knowledge.  Locking: db->rw is a writer-preferring rwlock.  A write
 * transaction holds it exclusively from ut_begin to ut_commit/ut_abort, so
 * writers are serialized and readers excluded; a read transaction holds it
 * shared.  The pager's own mutex guards the buffer pool for concurrent
 * readers.  Cursors live in their transaction's list; ending the transaction
 * detaches them (their pins are released) -- ut_cursor_close still frees
 * them.  A put/del through the transaction bumps its generation, after
 * which older cursors answer UT_EINVAL until re-seeked.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"
#include "db.h"
#include "pager.h"
#include "ut_io.h"

struct ut_db {
	ut_pager *pager;
	ut_options opt;
	pthread_rwlock_t rw;
	pthread_mutex_t mu; /* ntxn */
	int ntxn;
};

struct ut_cursor {
	ut_txn *txn;
	ut_cursor *next, *prev;
	uint64_t gen;
	ut_btcur bc;
};

struct ut_txn {
	ut_db *db;
	int rdonly;
	int err; /* a failed change left the tree inconsistent: abort only */
	uint64_t gen;
	ut_cursor *cursors;
};

void ut_options_default(ut_options *o)
{
	memset(o, 0, sizeof(*o));
	o->cache_bytes = 64u << 20;
	o->protect = UT_PROTECT_AUTO;
	o->create = 1;
	o->sync = 1;
}

const char *ut_strerror(int rc)
{
	switch (rc) {
	case UT_OK: return "success";
	case UT_NOTFOUND: return "not found";
	case UT_EINVAL: return "invalid argument";
	case UT_ENOMEM: return "out of memory";
	case UT_EIO: return "I/O error";
	case UT_ECORRUPT: return "database corrupt (checksum or invariant failure)";
	case UT_ELOCKED: return "database locked by another process or handle";
	case UT_ETOOBIG: return "key or value too large";
	case UT_ENOSPC: return "no space left on device";
	case UT_EREADONLY: return "write through a read-only transaction or file";
	case UT_ENOTDB: return "not an untorn database";
	case UT_EVERSION: return "untorn database of another format version or page size";
	case UT_ENOTSUP: return "protection mode not supported";
	case UT_EFATAL: return "an earlier write failed; the handle refuses writes";
	case UT_EBUSY: return "transactions still open";
	default: return "unknown error";
	}
}

const char *ut_protect_name(int protect)
{
	switch (protect) {
	case UT_PROTECT_AUTO: return "auto";
	case UT_PROTECT_ATOMIC: return "atomic";
	case UT_PROTECT_DOUBLEWRITE: return "doublewrite";
	case UT_PROTECT_UNSAFE: return "unsafe";
	default: return "unknown";
	}
}

int ut_open(const char *path, const ut_options *o, ut_db **out)
{
	ut_pager_config cfg;
	pthread_rwlockattr_t ra;
	ut_db *db;
	int rc;

	if (!path || !*path || !out)
		return UT_EINVAL;
	*out = NULL;
	db = calloc(1, sizeof(*db));
	if (!db)
		return UT_ENOMEM;
	if (o)
		db->opt = *o;
	else
		ut_options_default(&db->opt);
	memset(&cfg, 0, sizeof(cfg));
	cfg.cache_bytes = db->opt.cache_bytes;
	cfg.protect = db->opt.protect;
	cfg.create = db->opt.create;
	rc = ut_pager_open(ut_vfs_posix(), path, &cfg, &db->pager);
	if (rc) {
		free(db);
		return rc;
	}
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&db->rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&db->mu, NULL);
	*out = db;
	return UT_OK;
}

int ut_close(ut_db *db)
{
	int rc;

	if (!db)
		return UT_EINVAL;
	pthread_mutex_lock(&db->mu);
	if (db->ntxn) {
		pthread_mutex_unlock(&db->mu);
		ut_set_errdetail("%s: %d transactions still open",
				 ut_pager_path(db->pager), db->ntxn);
		return UT_EBUSY;
	}
	pthread_mutex_unlock(&db->mu);
	rc = ut_pager_close(db->pager);
	pthread_rwlock_destroy(&db->rw);
	pthread_mutex_destroy(&db->mu);
	free(db);
	return rc;
}

int ut_begin(ut_db *db, unsigned flags, ut_txn **out)
{
	ut_txn *t;
	int rc;

	if (!db || !out || (flags & ~UT_RDONLY))
		return UT_EINVAL;
	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return UT_ENOMEM;
	t->db = db;
	t->rdonly = !!(flags & UT_RDONLY);
	if (t->rdonly) {
		pthread_rwlock_rdlock(&db->rw);
	} else {
		pthread_rwlock_wrlock(&db->rw);
		if ((rc = ut_pager_begin(db->pager))) {
			pthread_rwlock_unlock(&db->rw);
			free(t);
			return rc;
		}
	}
	pthread_mutex_lock(&db->mu);
	db->ntxn++;
	pthread_mutex_unlock(&db->mu);
	*out = t;
	return UT_OK;
}

static void txn_end(ut_txn *t)
{
	ut_db *db = t->db;

	for (ut_cursor *c = t->cursors, *next; c; c = next) {
		next = c->next;
		ut_btcur_reset(&c->bc);
		c->txn = NULL;
		c->next = c->prev = NULL;
	}
	t->cursors = NULL;
	pthread_rwlock_unlock(&db->rw);
	pthread_mutex_lock(&db->mu);
	db->ntxn--;
	pthread_mutex_unlock(&db->mu);
	free(t);
}

static void detach_cursors(ut_txn *t)
{
	for (ut_cursor *c = t->cursors; c; c = c->next)
		ut_btcur_reset(&c->bc);
}

int ut_commit(ut_txn *t)
{
	int rc = UT_OK;

	if (!t)
		return UT_EINVAL;
	if (!t->rdonly) {
		detach_cursors(t);
		if (t->err) {
			ut_pager_rollback(t->db->pager);
			rc = t->err;
		} else {
			rc = ut_pager_commit(t->db->pager, t->db->opt.sync);
		}
	}
	txn_end(t);
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

static int check_key(const void *key, size_t klen)
{
	if (!key || klen == 0)
		return UT_EINVAL;
	if (klen > UT_MAX_KEY)
		return UT_ETOOBIG;
	return UT_OK;
}

static int check_write(ut_txn *t)
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
static int change_rc(ut_txn *t, int rc)
{
	if (rc < 0 && rc != UT_EINVAL && rc != UT_ETOOBIG)
		t->err = rc;
	return rc;
}

int ut_put(ut_txn *t, const void *key, size_t klen, const void *val, size_t vlen)
{
	int rc;

	if ((rc = check_write(t)) || (rc = check_key(key, klen)))
		return rc;
	if (vlen > UT_MAX_VALUE)
		return UT_ETOOBIG;
	if (!val && vlen)
		return UT_EINVAL;
	t->gen++;
	detach_cursors(t);
	return change_rc(t, ut_bt_put(t->db->pager, key, klen, val, vlen));
}

int ut_get(ut_txn *t, const void *key, size_t klen, void **val, size_t *vlen)
{
	int rc;

	if (!t || !val || !vlen)
		return UT_EINVAL;
	if ((rc = check_key(key, klen)))
		return rc;
	return ut_bt_get(t->db->pager, key, klen, val, vlen);
}

int ut_del(ut_txn *t, const void *key, size_t klen)
{
	int rc;

	if ((rc = check_write(t)) || (rc = check_key(key, klen)))
		return rc;
	t->gen++;
	detach_cursors(t);
	return change_rc(t, ut_bt_del(t->db->pager, key, klen));
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
	ut_btcur_init(&c->bc, t->db->pager);
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

	if ((rc = cursor_ok(c)))
		return rc;
	if (klen && !key)
		return UT_EINVAL;
	if (klen > UT_MAX_KEY)
		return UT_ETOOBIG;
	c->gen = c->txn->gen;
	return ut_btcur_seek(&c->bc, key, klen);
}

int ut_cursor_next(ut_cursor *c)
{
	int rc;

	if ((rc = cursor_ok(c)))
		return rc;
	if (c->gen != c->txn->gen)
		return UT_EINVAL;
	return ut_btcur_next(&c->bc);
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
	int rc;

	if (!db)
		return UT_EINVAL;
	pthread_rwlock_wrlock(&db->rw);
	rc = ut_pager_checkpoint(db->pager);
	pthread_rwlock_unlock(&db->rw);
	return rc;
}

int ut_stats_get(ut_db *db, ut_stats *st)
{
	if (!db || !st)
		return UT_EINVAL;
	ut_io_counters cc, *c = &cc;
	ut_pager_counters_copy(db->pager, &cc);
	memset(st, 0, sizeof(*st));
	st->protect = ut_pager_protect(db->pager);
	st->page_writes = c->page_writes;
	st->dw_page_writes = c->dw_page_writes;
	st->log_bytes = c->log_bytes;
	st->syncs = c->syncs;
	st->torn_repaired = c->torn_repaired;
	st->corrupt_pages = c->corrupt_pages;
	return UT_OK;
}

ut_pager *ut_db_pager(ut_db *db)
{
	return db->pager;
}

/*
 * engine/txn.h - what db.c (handles, transactions, cursors) and table.c
 * (named tables) share: the layout of a handle, a transaction and a
 * cursor, and the argument checks both sides of the API apply.  Internal:
 * no other file includes it.
 *
 * Contract between the two: db.c owns the lifetime of every object here
 * (open/close, begin/commit/abort, cursor open/close) and the default
 * table; table.c owns ut_table handles and the per-transaction table
 * state (struct ut_tstate), which db.c sees only through the
 * ut_tables_* calls below: at commit it stores the changed entries
 * (ut_tables_store), when a transaction ends it frees its states
 * (ut_tables_release), at close it frees the handles (ut_tables_free),
 * and a cursor on a named table asks ut_tstate_* whether the table is
 * gone and to name it in a damage detail.
 */
#ifndef UT_TXN_H
#define UT_TXN_H

#include <pthread.h>
#include <stdint.h>

#include "btree.h"
#include "log.h"
#include "pager.h"
#include "untorn.h"

struct ut_tstate; /* table.c */

/* Read transaction objects kept for reuse (db.c): one per cache line,
 * threads starting at different ones. */
#define RTXN_CACHE 8u

struct ut_db {
	ut_pager *pager;
	ut_log *log;
	ut_options opt;
	pthread_mutex_t writer; /* held by the write transaction */
	pthread_mutex_t mu;     /* tables */
	int ntxn;               /* open transactions; atomic */
	struct {
		ut_txn *t; /* an ended read transaction's object, or NULL; atomic */
	} __attribute__((aligned(64))) rcache[RTXN_CACHE];
	uint64_t ckpt_log_bytes;
	uint64_t auto_checkpoints;
	int64_t last_lazy_flush; /* CLOCK_MONOTONIC seconds, sync=0 only */
	char open_note[512]; /* a loss ut_open accepted: its ut_errdetail */
	ut_table *tables; /* handles given out (under mu), freed at close */
	uint64_t last_table_id; /* the last id a create took (writer lock) */
	int format_raised; /* the header on disk says 3 (writer lock) */
};

struct ut_cursor {
	ut_txn *txn;
	struct ut_tstate *ts; /* its named table, NULL: the default one */
	ut_cursor *next, *prev;
	uint64_t gen;
	ut_btcur bc;
};

/* What ut_get_ref handed out: a pinned page, or a value assembled from
 * overflow pages. */
struct held {
	ut_pg *pin;
	void *owned;
};

struct ut_txn {
	ut_db *db;
	int rdonly;
	int err; /* a failed change left the tree inconsistent: abort only */
	uint64_t gen;
	ut_cursor *cursors;
	ut_snap snap; /* read-only: the snapshot it reads */
	struct held *held;
	size_t nheld, capheld;
	/* The pages in held, by address (open addressing, a power of two
	 * slots, at most half full): a read transaction's snapshot sees one
	 * version of a page, so a page is pinned once however many values
	 * ut_get_ref hands out from it. */
	ut_pg **pinset;
	size_t pincap;
	struct ut_tstate *tables; /* the named tables this transaction used */
	int64_t defdelta; /* default-table keys added less deleted */
};

/* ---- db.c, for table.c ---- */

/* A key of 1..UT_MAX_KEY bytes (UT_EINVAL, UT_ETOOBIG with a detail). */
int ut_txn_check_key(const void *key, size_t klen);
/* t may change the database: a write transaction not failed. */
int ut_txn_check_write(ut_txn *t);
/* ut_put's and ut_get's arguments. */
int ut_txn_check_put(ut_txn *t, const void *key, size_t klen, const void *val,
		     size_t vlen);
int ut_txn_check_get(ut_txn *t, const void *key, size_t klen, const void *val,
		     const size_t *vlen);
/* A change failed part-way: rc (a failure other than a bad argument)
 * leaves t able only to abort.  Returns rc. */
int ut_txn_change_rc(ut_txn *t, int rc);
/* A change is about to happen: older cursors of t answer UT_EINVAL until
 * re-seeked, and let go of their pages. */
void ut_txn_changing(ut_txn *t);
/* ut_get_ref on the tree rooted at *root (NULL: the default one). */
int ut_txn_get_ref_at(ut_txn *t, const uint32_t *root, const void *key,
		      size_t klen, const void **val, size_t *vlen);

/* ---- table.c, for db.c ---- */

/* Store the catalog entries of the tables t changed (before commit). */
int ut_tables_store(ut_txn *t);
/* Store the default table's key count changed by t (t->defdelta) in the
 * header, in format 3 (before commit). */
int ut_tables_store_default(ut_txn *t);
/* Free t's table states (t is ending). */
void ut_tables_release(ut_txn *t);
/* Free every handle db gave out (ut_close). */
void ut_tables_free(ut_db *db);
/* The table was dropped in the cursor's transaction: UT_EINVAL with a
 * detail; else UT_OK. */
int ut_tstate_check(const struct ut_tstate *s);
/* rc, with a damage detail prefixed by the table's name. */
int ut_tstate_rc(const struct ut_tstate *s, int rc);

#endif /* UT_TXN_H */

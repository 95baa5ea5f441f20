/*
 * tests/test_engine_hooks.c - the points the write-ahead log and the flush
 * strategies plug into: log_commit sees every page of a transaction with
 * its pre-image (NULL for new pages) and its LSN is stamped on the pages;
 * log_flush_to runs before a page with a newer LSN reaches the file;
 * protection mode selection; the log's page diff.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "untorn.h"
#include "flush.h"
#include "log.h"
#include "page.h"
#include "pager.h"
#include "ut_simdisk.h"
#include "helper_fs.h"

struct logctx {
	uint64_t next_lsn, flushed_to;
	int commits, flushes;
	size_t npages, nnew;
	uint32_t pgnos[64];
	uint8_t pre_byte[64], post_byte[64];
	int fail_next;
	ut_pager *pager;
	uint64_t max_lsn_written_before_flush;
};

static int log_commit(void *ctx, const ut_log_page *pages, size_t n, int sync,
		      uint64_t *lsn)
{
	struct logctx *c = ctx;
	(void)sync;
	if (c->fail_next) {
		c->fail_next = 0;
		return UT_EIO;
	}
	c->commits++;
	c->npages = n;
	c->nnew = 0;
	for (size_t i = 0; i < n && i < 64; i++) {
		c->pgnos[i] = pages[i].pgno;
		if (!pages[i].pre)
			c->nnew++;
		else
			c->pre_byte[i] = ((const uint8_t *)pages[i].pre)[UT_PG_HDR + 100];
		c->post_byte[i] = ((const uint8_t *)pages[i].post)[UT_PG_HDR + 100];
	}
	c->next_lsn += 10;
	*lsn = c->next_lsn;
	return UT_OK;
}

static int log_flush_to(void *ctx, uint64_t lsn)
{
	struct logctx *c = ctx;
	c->flushes++;
	if (lsn > c->flushed_to)
		c->flushed_to = lsn;
	/* nothing with LSN > lsn may be written before this returns: the
	 * pager must not have counted a write of the new pages yet */
	c->max_lsn_written_before_flush = ut_pager_counters(c->pager)->page_writes;
	return UT_OK;
}

static void test_log_hooks(void **s)
{
	(void)s;
	char *path = tmp_seq_path("hooks", "log");
	struct logctx lc = { .next_lsn = 100 };
	ut_log_hooks hooks = { .ctx = &lc, .log_commit = log_commit,
			       .log_flush_to = log_flush_to };
	ut_pager_config cfg = { .cache_bytes = 16 * UT_PAGE_SIZE,
				.protect = UT_PROTECT_UNSAFE, .create = 1,
				.hooks = &hooks };
	ut_pager *p;
	ut_pg *a, *b;

	assert_int_equal(ut_pager_open(ut_vfs_posix(), path, &cfg, &p), UT_OK);
	lc.pager = p;
	/* txn 1: two new pages and a change to the root leaf (page 1) */
	assert_int_equal(ut_pager_begin(p), UT_OK);
	assert_int_equal(ut_pager_alloc(p, UT_PT_OVERFLOW, &a), UT_OK);
	a->data[UT_PG_HDR + 100] = 0xA1;
	ut_page_set_aux(a->data, 101); /* bytes used: a valid overflow page */
	assert_int_equal(ut_pager_alloc(p, UT_PT_OVERFLOW, &b), UT_OK);
	b->data[UT_PG_HDR + 100] = 0xB1;
	ut_page_set_aux(b->data, 101);
	uint32_t apg = a->pgno, bpg = b->pgno;
	ut_pager_release(p, a);
	ut_pager_release(p, b);
	ut_pg *r;
	assert_int_equal(ut_pager_get(p, 1, &r), UT_OK);
	assert_int_equal(ut_pager_write(p, r), UT_OK);
	uint8_t old = r->data[UT_PG_HDR + 100];
	r->data[UT_PG_HDR + 100] = 0x77;
	ut_pager_release(p, r);
	assert_int_equal(ut_pager_commit(p, 0), UT_OK);
	assert_int_equal(lc.commits, 1);
	assert_int_equal(lc.npages, 4); /* meta (page count), two new, root */
	assert_int_equal(lc.nnew, 2);
	int seen = 0;
	for (size_t i = 0; i < lc.npages; i++) {
		if (lc.pgnos[i] == 1) {
			assert_int_equal(lc.pre_byte[i], old);
			assert_int_equal(lc.post_byte[i], 0x77);
			seen |= 1;
		}
		if (lc.pgnos[i] == apg) {
			assert_int_equal(lc.post_byte[i], 0xA1);
			seen |= 2;
		}
		if (lc.pgnos[i] == bpg)
			seen |= 4;
		if (lc.pgnos[i] == 0)
			seen |= 8;
	}
	assert_int_equal(seen, 15);
	/* the commit LSN is on every page */
	assert_int_equal(ut_pager_get(p, apg, &a), UT_OK);
	assert_true(ut_page_lsn(a->data) == 110);
	ut_pager_release(p, a);
	assert_int_equal(ut_pager_get(p, 1, &r), UT_OK);
	assert_true(ut_page_lsn(r->data) == 110);
	ut_pager_release(p, r);

	/* a failing log_commit rolls the transaction back */
	assert_int_equal(ut_pager_begin(p), UT_OK);
	assert_int_equal(ut_pager_get(p, 1, &r), UT_OK);
	assert_int_equal(ut_pager_write(p, r), UT_OK);
	r->data[UT_PG_HDR + 100] = 0x99;
	ut_pager_release(p, r);
	lc.fail_next = 1;
	assert_int_equal(ut_pager_commit(p, 1), UT_EIO);
	assert_int_equal(ut_pager_get(p, 1, &r), UT_OK);
	assert_int_equal(r->data[UT_PG_HDR + 100], 0x77);
	ut_pager_release(p, r);

	/* checkpoint: the WAL rule runs before the pages are written */
	uint64_t w0 = ut_pager_counters(p)->page_writes;
	assert_int_equal(ut_pager_checkpoint(p), UT_OK);
	assert_true(lc.flushes >= 1);
	assert_true(lc.flushed_to >= 110);
	assert_true(lc.max_lsn_written_before_flush == w0);
	assert_true(ut_pager_counters(p)->page_writes >= w0 + 4);
	assert_int_equal(ut_pager_close(p), UT_OK);

	/* the checkpoint LSN persisted */
	cfg.hooks = NULL;
	assert_int_equal(ut_pager_open(ut_vfs_posix(), path, &cfg, &p), UT_OK);
	assert_int_equal(ut_pager_get(p, 0, &r), UT_OK);
	assert_true(ut_ld64(r->data + UT_META_CKPT_LSN) == 110);
	ut_pager_release(p, r);
	assert_int_equal(ut_pager_get(p, apg, &a), UT_OK);
	assert_int_equal(a->data[UT_PG_HDR + 100], 0xA1);
	ut_pager_release(p, a);
	assert_int_equal(ut_pager_close(p), UT_OK);
	unlink(path);
	free(path);
}

static void test_protect_modes(void **s)
{
	(void)s;
	char *path = tmp_seq_path("hooks", "protect");
	ut_options o;
	ut_db *db;
	ut_stats st;

	ut_options_default(&o);
	assert_int_equal(o.protect, UT_PROTECT_AUTO);
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	/* AUTO resolves to a concrete mode, named in stats */
	/* ... atomic or doublewrite, never unsafe unless asked by name */
	assert_true(st.protect == UT_PROTECT_ATOMIC ||
		    st.protect == UT_PROTECT_DOUBLEWRITE);
	assert_int_equal(ut_close(db), UT_OK);
	o.protect = 42;
	assert_int_equal(ut_open(path, &o, &db), UT_EINVAL);
	o.protect = UT_PROTECT_UNSAFE;
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.protect, UT_PROTECT_UNSAFE);
	/* sync commits are counted: log bytes and syncs (no page writes:
	 * the WAL carries the commit; pages follow at checkpoint) */
	ut_txn *t;
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_put(t, "k", 1, "v", 1), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	ut_stats st2;
	assert_int_equal(ut_stats_get(db, &st2), UT_OK);
	assert_true(st2.log_bytes > st.log_bytes);
	assert_true(st2.syncs >= st.syncs + 1);
	assert_int_equal(ut_close(db), UT_OK);
	assert_string_equal(ut_protect_name(UT_PROTECT_DOUBLEWRITE), "doublewrite");
	assert_string_equal(ut_strerror(UT_ECORRUPT),
			    "database corrupt (checksum or invariant failure)");
	unlink(path);
	free(path);
}

/* ---- the log's page diff: what it logs rebuilds the post-image --------- */

enum { DIFF_TXNS = 300 };

struct replay {
	uint8_t (*img)[UT_PAGE_SIZE]; /* per transaction: pre, then redone */
	uint64_t lsn[DIFF_TXNS];      /* commit LSNs, increasing */
	int t;                        /* the transaction being replayed */
};

static int apply_delta(void *ctx, uint64_t lsn, const ut_wal_delta *d)
{
	struct replay *r = ctx;

	while (r->t < DIFF_TXNS && r->lsn[r->t] < lsn)
		r->t++;
	if (r->t == DIFF_TXNS || r->lsn[r->t] != lsn ||
	    d->offset + (uint64_t)d->len > UT_PAGE_SIZE)
		return UT_ECORRUPT;
	memcpy(r->img[r->t] + d->offset, d->data, d->len);
	return UT_OK;
}

/* Pages changed in every pattern the diff distinguishes (single bytes, runs,
 * gaps just under and over the merge distance, words differing in some
 * bytes only, the header bytes 4..7, a touched block's last byte), each
 * committed with the blocks changed plus a few more: replaying the log on
 * the pre-images must give the post-images, but for crc and LSN. */
static void test_log_diff_rebuilds_pages(void **s)
{
	static uint8_t pre[DIFF_TXNS][UT_PAGE_SIZE], post[DIFF_TXNS][UT_PAGE_SIZE];
	static uint8_t redone[DIFF_TXNS][UT_PAGE_SIZE];
	static struct replay r;
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *vfs = ut_simdisk_vfs(d);
	unsigned seed = 99;
	ut_log *lg;
	ut_wal *w;
	uint64_t lsn = 0;
	int existed;

	(void)s;
	assert_int_equal(ut_log_open(vfs, "/db", 1, 0, &lg, &existed), UT_OK);
	assert_int_equal(ut_wal_recover(ut_log_wal(lg), 0, NULL, NULL, NULL), UT_OK);
	for (int t = 0; t < DIFF_TXNS; t++) {
		ut_log_page pg = { 7, pre[t], post[t], 0, 0 };

		for (unsigned i = 0; i < UT_PAGE_SIZE; i++)
			pre[t][i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
		memcpy(post[t], pre[t], UT_PAGE_SIZE);
		for (int c = 0; c < 1 + t % 9; c++) {
			unsigned r = (seed = seed * 1103515245u + 12345u) >> 8;
			unsigned at = r % UT_PAGE_SIZE, len = 1 + (r >> 14) % 40;
			unsigned step = 1 + (r >> 20) % 20; /* 1: a run; > 1: gaps */

			if (c == 0 && t % 3 == 0)
				at = 4 + r % 4; /* type, flags, slot count */
			if (c == 1 && t % 4 == 0)
				at = (r % 64) * UT_TOUCH_BLOCK - 1; /* a block's end */
			for (unsigned k = 0; k < len && at + k * step < UT_PAGE_SIZE; k++) {
				post[t][at + k * step] ^= (uint8_t)(1 + (r >> k % 24 & 0x7f));
				ut_page_touch(&pg.touched, at + k * step, 1);
			}
		}
		pg.touched |= 1ull << (seed >> 9) % 64; /* an unchanged block too */
		assert_int_equal(ut_log_hooks_of(lg)->log_commit(lg, &pg, 1, 1, &lsn),
				 UT_OK);
		r.lsn[t] = lsn;
	}
	assert_int_equal(ut_log_flush_to(lg, lsn), UT_OK);
	assert_int_equal(ut_log_close(lg), UT_OK);
	memcpy(redone, pre, sizeof(pre));
	r.img = redone;
	assert_int_equal(ut_wal_open(vfs, "/db-wal", NULL, &w), UT_OK);
	assert_int_equal(ut_wal_recover(w, 0, apply_delta, &r, NULL), UT_OK);
	assert_int_equal(r.t, DIFF_TXNS - 1); /* every transaction replayed */
	for (int t = 0; t < DIFF_TXNS; t++)
		for (unsigned i = 0; i < UT_PAGE_SIZE; i++)
			if (!(i < 4 || (i >= 8 && i < 16)) && redone[t][i] != post[t][i])
				fail_msg("transaction %d: byte %u not rebuilt", t, i);
	assert_int_equal(ut_wal_close(w), UT_OK);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_hooks),
		cmocka_unit_test(test_protect_modes),
		cmocka_unit_test(test_log_diff_rebuilds_pages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/test_btree.c - B+tree behaviour through the public API: splits at
 * every level, deletes down to empty with page reuse, overflow values and
 * limits, cursor edge cases, abort, reopen, and a randomized comparison
 * with an in-memory model.
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
#include "btree.h"
#include "db.h"
#include "helper_fs.h"

static ut_db *open_db(const char *path, size_t cache)
{
	ut_options o;
	ut_db *db = NULL;

	ut_options_default(&o);
	o.sync = 0;
	o.protect = UT_PROTECT_UNSAFE;
	if (cache)
		o.cache_bytes = cache;
	int rc = ut_open(path, &o, &db);
	if (rc)
		fprintf(stderr, "open: %s\n", ut_errdetail());
	assert_int_equal(rc, UT_OK);
	return db;
}

static int depth(ut_db *db)
{
	int d = 0;
	assert_int_equal(ut_bt_depth(ut_db_pager(db), &d), UT_OK);
	return d;
}

/* 1024-byte keys: key i is its number in big-endian then filler. */
static void bigkey(uint8_t *k, uint32_t i)
{
	memset(k, 'k', UT_MAX_KEY);
	k[0] = (uint8_t)(i >> 24);
	k[1] = (uint8_t)(i >> 16);
	k[2] = (uint8_t)(i >> 8);
	k[3] = (uint8_t)i;
	k[UT_MAX_KEY - 1] = (uint8_t)(i * 7);
}

static void check_big(ut_db *db, uint32_t n, int present)
{
	uint8_t k[UT_MAX_KEY];
	ut_txn *t;
	ut_cursor *c;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (uint32_t i = 0; i < n; i++) {
		void *v;
		size_t vl;
		bigkey(k, i);
		int rc = ut_get(t, k, sizeof(k), &v, &vl);
		if (!present) {
			assert_int_equal(rc, UT_NOTFOUND);
			continue;
		}
		assert_int_equal(rc, UT_OK);
		assert_int_equal(vl, 4);
		assert_memory_equal(v, &i, 4);
		free(v);
	}
	/* cursor walks all in order */
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	uint32_t seen = 0;
	int rc;
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
		const void *pk, *pv;
		size_t kl, vl;
		assert_int_equal(ut_cursor_get(c, &pk, &kl, &pv, &vl), UT_OK);
		bigkey(k, seen);
		assert_int_equal(kl, UT_MAX_KEY);
		assert_memory_equal(pk, k, kl);
		assert_memory_equal(pv, &seen, 4);
		seen++;
	}
	assert_int_equal(rc, UT_NOTFOUND);
	assert_int_equal(seen, present ? n : 0);
	ut_cursor_close(c);
	ut_commit(t);
}

static void test_splits_every_level(void **s)
{
	(void)s;
	char *path = tmp_seq_path("btree", "splits");
	ut_db *db = open_db(path, 0);
	uint8_t k[UT_MAX_KEY];
	const uint32_t n = 3000;
	ut_txn *t;

	assert_int_equal(depth(db), 1);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = (j * 1237u) % n; /* scattered order */
		bigkey(k, i);
		assert_int_equal(ut_put(t, k, sizeof(k), &i, 4), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	int d = depth(db);
	assert_true(d >= 3);
	check_big(db, n, 1);
	assert_int_equal(ut_close(db), UT_OK);
	db = open_db(path, 0);
	assert_int_equal(depth(db), d);
	check_big(db, n, 1);
	assert_int_equal(ut_close(db), UT_OK);
	/* a small cache (8 pages) sees the same tree */
	db = open_db(path, 8 * UT_PAGE_SIZE);
	check_big(db, n, 1);
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
}

static void test_delete_to_empty_and_reuse(void **s)
{
	(void)s;
	char *path = tmp_seq_path("btree", "shrink");
	ut_db *db = open_db(path, 0);
	ut_pager *pg = ut_db_pager(db);
	uint8_t k[UT_MAX_KEY];
	const uint32_t n = 2000;
	ut_txn *t;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (uint32_t i = 0; i < n; i++) {
		bigkey(k, i);
		assert_int_equal(ut_put(t, k, sizeof(k), &i, 4), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	assert_true(depth(db) >= 3);
	uint32_t pages = ut_pager_page_count(pg);
	assert_true(pages > 100);

	/* delete in a scattered order, several transactions */
	for (int round = 0; round < 4; round++) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (uint32_t j = 0; j < n; j++) {
			uint32_t i = (j * 7919u) % n;
			if (i % 4 != (uint32_t)round)
				continue;
			bigkey(k, i);
			assert_int_equal(ut_del(t, k, sizeof(k)), UT_OK);
			assert_int_equal(ut_del(t, k, sizeof(k)), UT_NOTFOUND);
		}
		assert_int_equal(ut_commit(t), UT_OK);
	}
	check_big(db, n, 0);
	/* the tree is one empty leaf again; every other page is free */
	assert_int_equal(depth(db), 1);
	assert_int_equal(ut_pager_free_count(pg), ut_pager_page_count(pg) - 2);
	assert_int_equal(ut_pager_page_count(pg), pages);

	/* steady insert/delete and update load does not grow the file */
	for (int round = 0; round < 5; round++) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (uint32_t i = 0; i < n; i++) {
			bigkey(k, i);
			assert_int_equal(ut_put(t, k, sizeof(k), &i, 4), UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (uint32_t i = 0; i < n; i++) {
			bigkey(k, i);
			assert_int_equal(ut_del(t, k, sizeof(k)), UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
	}
	assert_true(ut_pager_page_count(pg) <= pages + 8);
	assert_int_equal(depth(db), 1);

	/* updates of overflow values of changing sizes reuse pages */
	static uint8_t val[200000];
	memset(val, 'v', sizeof(val));
	uint32_t before = 0;
	for (int round = 0; round < 30; round++) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (uint32_t i = 0; i < 20; i++) {
			bigkey(k, i);
			size_t vl = 50000 + (size_t)((round * 31 + i * 17) % 7) * 20000;
			assert_int_equal(ut_put(t, k, sizeof(k), val, vl), UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
		if (round == 4)
			before = ut_pager_page_count(pg);
	}
	/* steady state: no growth beyond one value's worth of chain */
	assert_true(ut_pager_page_count(pg) <= before + 13);
	uint32_t final = ut_pager_page_count(pg);
	assert_int_equal(ut_close(db), UT_OK);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true((uint64_t)st.st_size <= (uint64_t)final * UT_PAGE_SIZE);
	unlink(path);
	free(path);
}

static void test_sparse_delete_merges(void **s)
{
	(void)s;
	char *path = tmp_seq_path("btree", "merge");
	ut_db *db = open_db(path, 0);
	ut_pager *pg = ut_db_pager(db);
	uint8_t k[UT_MAX_KEY];
	const uint32_t n = 3000;
	ut_txn *t;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = (j * 1237u) % n;
		bigkey(k, i);
		assert_int_equal(ut_put(t, k, sizeof(k), &i, 4), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	uint32_t used0 = ut_pager_page_count(pg) - ut_pager_free_count(pg);
	/* keep one key in ten: leaves holding one or two keys each must be
	 * merged with their neighbours */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (uint32_t i = 0; i < n; i++) {
		if (i % 10 == 0)
			continue;
		bigkey(k, i);
		assert_int_equal(ut_del(t, k, sizeof(k)), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	uint32_t used1 = ut_pager_page_count(pg) - ut_pager_free_count(pg);
	/* 300 keys of ~1 KiB fit in ~20 full leaves; without merging ~150 pages stay */
	fprintf(stderr, "pages in use: %u before, %u after\n", used0, used1);
	assert_true(used1 <= 64);
	assert_true(used1 * 5 < used0);
	/* what is left is intact */
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	ut_cursor *c;
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	uint32_t want = 0;
	int rc;
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
		const void *pk, *pv;
		size_t kl, vl;
		assert_int_equal(ut_cursor_get(c, &pk, &kl, &pv, &vl), UT_OK);
		bigkey(k, want);
		assert_memory_equal(pk, k, UT_MAX_KEY);
		want += 10;
	}
	assert_int_equal(want, n);
	ut_cursor_close(c);
	ut_commit(t);
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
}

static uint8_t *pattern(size_t n, unsigned seed)
{
	uint8_t *b = malloc(n ? n : 1);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
	return b;
}

static void test_overflow_and_limits(void **s)
{
	(void)s;
	char *path = tmp_seq_path("btree", "ovfl");
	ut_db *db = open_db(path, 0);
	const size_t inl = UT_BT_MAX_LOCAL - 7 - 6; /* largest inline for key "key-NN" */
	const size_t sizes[] = { 0, 1, 100, inl - 1, inl, inl + 1,
				 UT_OVFL_CAP - 1, UT_OVFL_CAP, UT_OVFL_CAP + 1,
				 UT_PAGE_SIZE, 2 * UT_OVFL_CAP, 2 * UT_OVFL_CAP + 1,
				 UT_MAX_VALUE - 1, UT_MAX_VALUE };
	const size_t ns = sizeof(sizes) / sizeof(sizes[0]);
	ut_txn *t;
	char k[16];

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (size_t i = 0; i < ns; i++) {
		uint8_t *v = pattern(sizes[i], (unsigned)i);
		snprintf(k, sizeof(k), "key-%02zu", i);
		assert_int_equal(ut_put(t, k, 6, v, sizes[i]), UT_OK);
		free(v);
	}
	/* limits */
	static uint8_t big[UT_MAX_VALUE + 1];
	static uint8_t longkey[UT_MAX_KEY + 1];
	memset(longkey, 'L', sizeof(longkey));
	assert_int_equal(ut_put(t, "x", 1, big, UT_MAX_VALUE + 1), UT_ETOOBIG);
	assert_int_equal(ut_put(t, longkey, UT_MAX_KEY + 1, "v", 1), UT_ETOOBIG);
	assert_int_equal(ut_put(t, longkey, UT_MAX_KEY, "v", 1), UT_OK);
	assert_int_equal(ut_put(t, "", 0, "v", 1), UT_EINVAL);
	assert_int_equal(ut_put(t, NULL, 3, "v", 1), UT_EINVAL);
	void *gv;
	size_t gl;
	assert_int_equal(ut_get(t, "", 0, &gv, &gl), UT_EINVAL);
	assert_int_equal(ut_get(t, longkey, UT_MAX_KEY + 1, &gv, &gl), UT_ETOOBIG);
	assert_int_equal(ut_del(t, longkey, UT_MAX_KEY + 1), UT_ETOOBIG);
	assert_int_equal(ut_del(t, "", 0), UT_EINVAL);
	/* errors on bad input do not poison the transaction */
	assert_int_equal(ut_commit(t), UT_OK);

	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
		for (size_t i = 0; i < ns; i++) {
			uint8_t *want = pattern(sizes[i], (unsigned)i);
			void *v;
			size_t vl;
			snprintf(k, sizeof(k), "key-%02zu", i);
			assert_int_equal(ut_get(t, k, 6, &v, &vl), UT_OK);
			assert_int_equal(vl, sizes[i]);
			assert_memory_equal(v, want, sizes[i] ? sizes[i] : 0);
			free(v);
			free(want);
		}
		assert_int_equal(ut_put(t, "a", 1, "b", 1), UT_EREADONLY);
		assert_int_equal(ut_del(t, "a", 1), UT_EREADONLY);
		/* cursor returns overflow values whole */
		ut_cursor *c;
		const void *pk, *pv;
		size_t kl, vl;
		assert_int_equal(ut_cursor_open(t, &c), UT_OK);
		assert_int_equal(ut_cursor_seek(c, "key-13", 6), UT_OK);
		assert_int_equal(ut_cursor_get(c, &pk, &kl, &pv, &vl), UT_OK);
		assert_int_equal(vl, UT_MAX_VALUE);
		uint8_t *want = pattern(UT_MAX_VALUE, 13);
		assert_memory_equal(pv, want, UT_MAX_VALUE);
		free(want);
		ut_cursor_close(c);
		ut_commit(t);
		assert_int_equal(ut_close(db), UT_OK);
		db = open_db(path, 0);
	}
	/* overwrite big with small and delete: chains go to the free list */
	ut_pager *pg = ut_db_pager(db);
	uint32_t free0 = ut_pager_free_count(pg);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_put(t, "key-13", 6, "s", 1), UT_OK);
	assert_int_equal(ut_del(t, "key-12", 6), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	assert_true(ut_pager_free_count(pg) >= free0 + 2 * (UT_MAX_VALUE / UT_OVFL_CAP));
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
}

static int cur_key(ut_cursor *c, const char *want)
{
	const void *k;
	size_t kl;
	if (ut_cursor_get(c, &k, &kl, NULL, NULL) != UT_OK)
		return 0;
	return kl == strlen(want) && memcmp(k, want, kl) == 0;
}

static void test_cursor_edges(void **s)
{
	(void)s;
	char *path = tmp_seq_path("btree", "cursor");
	ut_db *db = open_db(path, 0);
	ut_txn *t;
	ut_cursor *c;

	/* empty tree */
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	assert_int_equal(ut_cursor_seek(c, NULL, 0), UT_NOTFOUND);
	assert_int_equal(ut_cursor_seek(c, "a", 1), UT_NOTFOUND);
	assert_int_equal(ut_cursor_next(c), UT_NOTFOUND);
	assert_int_equal(ut_cursor_get(c, NULL, NULL, NULL, NULL), UT_NOTFOUND);
	ut_cursor_close(c);
	ut_commit(t);

	/* memcmp then length: "a" < "a\0" < "ab" < "b" */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_put(t, "b", 1, "4", 1), UT_OK);
	assert_int_equal(ut_put(t, "ab", 2, "3", 1), UT_OK);
	assert_int_equal(ut_put(t, "a\0", 2, "2", 1), UT_OK);
	assert_int_equal(ut_put(t, "a", 1, "1", 1), UT_OK);
	assert_int_equal(ut_put(t, "d", 1, "5", 1), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	const char *order[] = { "1", "2", "3", "4", "5" };
	int i = 0, rc;
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c), i++) {
		const void *v;
		size_t vl;
		assert_int_equal(ut_cursor_get(c, NULL, NULL, &v, &vl), UT_OK);
		assert_int_equal(vl, 1);
		assert_memory_equal(v, order[i], 1);
	}
	assert_int_equal(rc, UT_NOTFOUND);
	assert_int_equal(i, 5);
	assert_int_equal(ut_cursor_next(c), UT_NOTFOUND); /* stays past the end */
	/* before first, exact, between, after last */
	assert_int_equal(ut_cursor_seek(c, "\x01", 1), UT_OK);
	assert_true(cur_key(c, "a"));
	assert_int_equal(ut_cursor_seek(c, "ab", 2), UT_OK);
	assert_true(cur_key(c, "ab"));
	assert_int_equal(ut_cursor_seek(c, "a\0\0", 3), UT_OK);
	assert_true(cur_key(c, "ab"));
	assert_int_equal(ut_cursor_seek(c, "c", 1), UT_OK);
	assert_true(cur_key(c, "d"));
	assert_int_equal(ut_cursor_next(c), UT_NOTFOUND);
	assert_int_equal(ut_cursor_seek(c, "d\0", 2), UT_NOTFOUND);
	assert_int_equal(ut_cursor_seek(c, "e", 1), UT_NOTFOUND);
	ut_cursor_close(c);
	ut_commit(t);

	/* many keys over many leaves: seek between keys across pages */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int j = 0; j < 20000; j += 2) {
		char k[16];
		snprintf(k, sizeof(k), "k%06d", j);
		assert_int_equal(ut_put(t, k, 7, k, 7), UT_OK);
	}
	/* a cursor in a write transaction; put invalidates it */
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	assert_int_equal(ut_cursor_seek(c, "k000001", 7), UT_OK);
	assert_true(cur_key(c, "k000002"));
	assert_int_equal(ut_put(t, "k000001", 7, "x", 1), UT_OK);
	assert_int_equal(ut_cursor_next(c), UT_EINVAL);
	assert_int_equal(ut_cursor_seek(c, "k000001", 7), UT_OK);
	assert_true(cur_key(c, "k000001"));
	ut_cursor_close(c);
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	for (int j = 3; j < 20000; j += 998) {
		char k[16], want[16];
		snprintf(k, sizeof(k), "k%06d", j);
		snprintf(want, sizeof(want), "k%06d", j + 1);
		assert_int_equal(ut_cursor_seek(c, k, 7), UT_OK);
		assert_true(cur_key(c, want));
		int steps = 0;
		while ((rc = ut_cursor_next(c)) == UT_OK)
			steps++;
		assert_int_equal(rc, UT_NOTFOUND);
		assert_int_equal(steps, (19998 - (j + 1)) / 2);
	}
	ut_cursor_close(c);
	ut_commit(t);
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
}

static void dump(ut_db *db, uint8_t **out, size_t *len)
{
	ut_txn *t;
	ut_cursor *c;
	size_t cap = 1 << 20, n = 0;
	uint8_t *b = malloc(cap);
	int rc;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
		const void *k, *v;
		size_t kl, vl;
		assert_int_equal(ut_cursor_get(c, &k, &kl, &v, &vl), UT_OK);
		while (n + kl + vl + 16 > cap)
			b = realloc(b, cap *= 2);
		memcpy(b + n, &kl, 8);
		memcpy(b + n + 8, &vl, 8);
		memcpy(b + n + 16, k, kl);
		memcpy(b + n + 16 + kl, v, vl);
		n += 16 + kl + vl;
	}
	assert_int_equal(rc, UT_NOTFOUND);
	ut_cursor_close(c);
	ut_commit(t);
	*out = b;
	*len = n;
}

static void test_abort_leaves_no_trace(void **s)
{
	(void)s;
	char *path = tmp_seq_path("btree", "abort");
	ut_db *db = open_db(path, 32 * UT_PAGE_SIZE);
	ut_pager *pg = ut_db_pager(db);
	ut_txn *t;
	char k[32], v[300];

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "key%08d", i * 3);
		memset(v, 'a' + i % 26, sizeof(v));
		assert_int_equal(ut_put(t, k, strlen(k), v, 50 + i % 250), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	uint8_t *before, *after;
	size_t lb, la;
	dump(db, &before, &lb);
	uint32_t pages = ut_pager_page_count(pg), nfree = ut_pager_free_count(pg);
	uint32_t root = ut_pager_root(pg);

	for (int variant = 0; variant < 2; variant++) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int i = 0; i < 5000; i++) {
			snprintf(k, sizeof(k), "key%08d", i * 3 + 1);
			assert_int_equal(ut_put(t, k, strlen(k), v, 200), UT_OK);
			if (i % 2) {
				snprintf(k, sizeof(k), "key%08d", i * 3);
				assert_int_equal(ut_del(t, k, strlen(k)), UT_OK);
			}
		}
		static uint8_t big[300000];
		assert_int_equal(ut_put(t, "zzz", 3, big, sizeof(big)), UT_OK);
		void *gv;
		size_t gl;
		assert_int_equal(ut_get(t, "key00000001", 11, &gv, &gl), UT_OK);
		free(gv);
		if (variant == 1) {
			/* close refuses while a transaction is open */
			assert_int_equal(ut_close(db), UT_EBUSY);
		}
		ut_abort(t);
		dump(db, &after, &la);
		assert_int_equal(la, lb);
		assert_memory_equal(after, before, lb);
		free(after);
		assert_int_equal(ut_pager_page_count(pg), pages);
		assert_int_equal(ut_pager_free_count(pg), nfree);
		assert_int_equal(ut_pager_root(pg), root);
	}
	assert_int_equal(ut_close(db), UT_OK);
	db = open_db(path, 0);
	dump(db, &after, &la);
	assert_int_equal(la, lb);
	assert_memory_equal(after, before, lb);
	free(after);
	free(before);
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
}

/* ---- randomized comparison with a model ------------------------------ */

#define NK 3000
struct mval {
	int present;
	size_t len;
	unsigned seed;
};

static size_t mkey(char *k, int i)
{
	/* lengths vary; some keys are prefixes of others */
	int n = snprintf(k, 64, "%d", i * 37 % NK);
	for (int j = 0; j < i % 5; j++)
		k[n++] = (char)('a' + (i / 7) % 3);
	return (size_t)n;
}

/* Keys of 1..24 bytes that differ from a common pattern in one byte, at
 * every position, by values either side of the sign bit: the page search
 * compares keys a word at a time, so an order decided inside a word,
 * across a word edge, in the bytes after the last whole word, or by
 * length alone must come out as memcmp-then-length. */
#define EDGE_MAXLEN 24
struct edge_key {
	uint8_t k[EDGE_MAXLEN];
	size_t kl;
};

static int edge_cmp(const void *a, const void *b)
{
	const struct edge_key *x = a, *y = b;
	int c = memcmp(x->k, y->k, x->kl < y->kl ? x->kl : y->kl);
	return c ? c : (x->kl < y->kl ? -1 : x->kl > y->kl);
}

static void test_key_order_at_word_edges(void **s)
{
	(void)s;
	static const uint8_t vary[] = { 0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff };
	struct edge_key *e = malloc(sizeof(*e) * EDGE_MAXLEN * (EDGE_MAXLEN * 6 + 1));
	size_t n = 0;
	assert_non_null(e);
	for (size_t l = 1; l <= EDGE_MAXLEN; l++) {
		for (size_t j = 0; j <= l; j++) {
			for (size_t v = 0; v < (j < l ? sizeof(vary) : 1); v++) {
				for (size_t i = 0; i < l; i++)
					e[n].k[i] = (uint8_t)(0x40 + i);
				if (j < l) /* j == l: the pattern itself */
					e[n].k[j] = vary[v];
				e[n].kl = l;
				n++;
			}
		}
	}
	char *path = tmp_seq_path("btree", "edges");
	ut_db *db = open_db(path, 0);
	ut_txn *t;
	uint8_t val[40];
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (size_t i = 0; i < n; i++) { /* a scattered insert order */
		size_t x = (i * 7919) % n;
		memset(val, 0, sizeof(val));
		memcpy(val, &x, sizeof(x));
		assert_int_equal(ut_put(t, e[x].k, e[x].kl, val, sizeof(val)), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	assert_true(depth(db) >= 2); /* interior searches too */

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (size_t i = 0; i < n; i++) {
		const void *v;
		size_t vl, got;
		uint8_t absent[EDGE_MAXLEN + 1];
		assert_int_equal(ut_get_ref(t, e[i].k, e[i].kl, &v, &vl), UT_OK);
		memcpy(&got, v, sizeof(got));
		assert_int_equal(got, i);
		/* no stored key ends in 0x20: a one-byte-longer key is absent */
		memcpy(absent, e[i].k, e[i].kl);
		absent[e[i].kl] = 0x20;
		if (e[i].kl < EDGE_MAXLEN)
			assert_int_equal(ut_get_ref(t, absent, e[i].kl + 1, &v, &vl),
					 UT_NOTFOUND);
	}
	qsort(e, n, sizeof(*e), edge_cmp);
	ut_cursor *c;
	size_t i = 0;
	int rc;
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c), i++) {
		const void *k;
		size_t kl;
		assert_true(i < n);
		assert_int_equal(ut_cursor_get(c, &k, &kl, NULL, NULL), UT_OK);
		assert_int_equal(kl, e[i].kl);
		assert_memory_equal(k, e[i].k, kl);
	}
	assert_int_equal(rc, UT_NOTFOUND);
	assert_int_equal(i, n);
	/* a seek lands on the first key >= the one sought */
	assert_int_equal(ut_cursor_seek(c, e[n / 2].k, e[n / 2].kl), UT_OK);
	{
		const void *k;
		size_t kl;
		assert_int_equal(ut_cursor_get(c, &k, &kl, NULL, NULL), UT_OK);
		assert_int_equal(kl, e[n / 2].kl);
		assert_memory_equal(k, e[n / 2].k, kl);
	}
	ut_cursor_close(c);
	ut_commit(t);
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
	free(e);
}

static int cmpkey(const void *a, const void *b)
{
	char ka[64], kb[64];
	size_t la = mkey(ka, *(const int *)a), lb = mkey(kb, *(const int *)b);
	int c = memcmp(ka, kb, la < lb ? la : lb);
	return c ? c : (la < lb ? -1 : la > lb);
}

static void test_random_vs_model(void **s)
{
	(void)s;
	char *path = tmp_seq_path("btree", "random");
	ut_db *db = open_db(path, 16 * UT_PAGE_SIZE);
	static struct mval m[NK], saved[NK];
	static int order[NK];
	uint32_t x = 12345;
	char k[64];

	/* the key generator must be injective for the model to hold */
	for (int i = 0; i < NK; i++)
		order[i] = i;
	qsort(order, NK, sizeof(int), cmpkey);
	for (int i = 1; i < NK; i++)
		assert_true(cmpkey(&order[i - 1], &order[i]) < 0);

	for (int round = 0; round < 30; round++) {
		ut_txn *t;
		memcpy(saved, m, sizeof(m));
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int op = 0; op < 400; op++) {
			x = x * 1103515245u + 12345u;
			int i = (int)((x >> 8) % NK);
			size_t kl = mkey(k, i);
			unsigned r = (x >> 4) % 10;
			if (r < 6) {
				size_t vl = (x >> 20) % 13 == 0 ? 20000 + (x % 50000) : (x >> 12) % 300;
				uint8_t *v = pattern(vl, x);
				assert_int_equal(ut_put(t, k, kl, v, vl), UT_OK);
				free(v);
				m[i].present = 1;
				m[i].len = vl;
				m[i].seed = x;
			} else if (r < 9) {
				assert_int_equal(ut_del(t, k, kl), m[i].present ? UT_OK : UT_NOTFOUND);
				m[i].present = 0;
			} else {
				void *v;
				size_t vl;
				int rc = ut_get(t, k, kl, &v, &vl);
				assert_int_equal(rc, m[i].present ? UT_OK : UT_NOTFOUND);
				if (rc == UT_OK) {
					uint8_t *want = pattern(m[i].len, m[i].seed);
					assert_int_equal(vl, m[i].len);
					assert_memory_equal(v, want, vl);
					free(want);
					free(v);
				}
			}
		}
		if (round % 5 == 4) {
			ut_abort(t);
			memcpy(m, saved, sizeof(m));
		} else {
			assert_int_equal(ut_commit(t), UT_OK);
		}
		if (round % 7 == 6) {
			assert_int_equal(ut_close(db), UT_OK);
			db = open_db(path, 16 * UT_PAGE_SIZE);
		}
		/* full scan equals the model in order */
		ut_cursor *c;
		assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
		assert_int_equal(ut_cursor_open(t, &c), UT_OK);
		int rc = ut_cursor_seek(c, NULL, 0);
		for (int j = 0; j < NK; j++) {
			int i = order[j];
			if (!m[i].present)
				continue;
			assert_int_equal(rc, UT_OK);
			const void *pk, *pv;
			size_t pkl, pvl;
			assert_int_equal(ut_cursor_get(c, &pk, &pkl, &pv, &pvl), UT_OK);
			size_t kl = mkey(k, i);
			assert_int_equal(pkl, kl);
			assert_memory_equal(pk, k, kl);
			assert_int_equal(pvl, m[i].len);
			uint8_t *want = pattern(m[i].len, m[i].seed);
			assert_memory_equal(pv, want, pvl);
			free(want);
			rc = ut_cursor_next(c);
		}
		assert_int_equal(rc, UT_NOTFOUND);
		ut_cursor_close(c);
		ut_commit(t);
	}
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
}

/* ---- fill factor: redistribution before splits ---------------------- */

enum { FILL_N = 30000 };

/* Load FILL_N bench-like records (16-byte keys, 100-byte values) in the
 * order key_of(0..FILL_N-1), check the tree, return its leaf fill. */
static double load_fill(const char *name, uint32_t (*key_of)(uint32_t),
			ut_bt_fill *f)
{
	char *path = tmp_seq_path("btree", name);
	ut_db *db = open_db(path, 0);
	uint8_t k[16], v[100];
	ut_check_result cr;
	ut_txn *t = NULL;

	memset(v, 'v', sizeof(v));
	for (uint32_t j = 0; j < FILL_N; j++) {
		uint32_t i = key_of(j);
		if (j % 1000 == 0)
			assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		memset(k, 0, sizeof(k));
		k[0] = (uint8_t)(i >> 24), k[1] = (uint8_t)(i >> 16);
		k[2] = (uint8_t)(i >> 8), k[3] = (uint8_t)i;
		memcpy(v, &i, sizeof(i));
		assert_int_equal(ut_put(t, k, sizeof(k), v, sizeof(v)), UT_OK);
		if (j % 1000 == 999)
			assert_int_equal(ut_commit(t), UT_OK);
	}
	assert_int_equal(ut_check(db, NULL, &cr), UT_OK);
	assert_int_equal(cr.invariant_errors, 0);
	assert_int_equal(cr.keys, FILL_N);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_bt_fill_get(ut_db_pager(db), f), UT_OK);
	ut_commit(t);
	/* every key reads back */
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (uint32_t i = 0; i < FILL_N; i += 7) {
		void *got;
		size_t gl;
		memset(k, 0, sizeof(k));
		k[0] = (uint8_t)(i >> 24), k[1] = (uint8_t)(i >> 16);
		k[2] = (uint8_t)(i >> 8), k[3] = (uint8_t)i;
		assert_int_equal(ut_get(t, k, sizeof(k), &got, &gl), UT_OK);
		assert_int_equal(gl, sizeof(v));
		assert_memory_equal(got, &i, sizeof(i));
		free(got);
	}
	ut_commit(t);
	assert_int_equal(ut_close(db), UT_OK);
	unlink(path);
	free(path);
	double fill = (double)f->leaf_bytes / ((double)f->leaves * UT_PG_USABLE);
	print_message("%s: %llu leaves, fill %.3f, emptiest leaf %u bytes\n", name,
		      (unsigned long long)f->leaves, fill, f->min_leaf_bytes);
	return fill;
}

/* A fixed pseudo-random permutation (Fisher-Yates over an LCG). */
static uint32_t scattered(uint32_t j)
{
	static uint32_t perm[FILL_N];
	static int made;

	if (!made) {
		uint64_t x = 42;
		for (uint32_t i = 0; i < FILL_N; i++)
			perm[i] = i;
		for (uint32_t i = FILL_N - 1; i > 0; i--) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			uint32_t r = (uint32_t)((x >> 33) % (i + 1)), tmp = perm[i];
			perm[i] = perm[r];
			perm[r] = tmp;
		}
		made = 1;
	}
	return perm[j];
}
static uint32_t ascending(uint32_t j) { return j; }
static uint32_t descending(uint32_t j) { return FILL_N - 1 - j; }
/* Ascending runs inside 16 interleaved ranges: appends in mid-tree. */
static uint32_t runs(uint32_t j) { return (j % 16) * (FILL_N / 16) + j / 16; }

static void test_fill_random_order(void **s)
{
	(void)s;
	ut_bt_fill f;
	/* halving splits leave ~70%; sharing with siblings, ~90% */
	assert_true(load_fill("fill-random", scattered, &f) >= 0.85);
}

static void test_fill_sequential(void **s)
{
	(void)s;
	ut_bt_fill f;
	/* appends split at the end: every leaf but the last is full */
	assert_true(load_fill("fill-asc", ascending, &f) >= 0.97);
	/* runs that end inside a leaf shared with the next run fill like
	 * random inserts there (halving splits: ~0.52) */
	assert_true(load_fill("fill-runs", runs, &f) >= 0.75);
	/* inserts at the front share with the right neighbour */
	assert_true(load_fill("fill-desc", descending, &f) >= 0.85);
}

/* A resealed interior page whose second child pointer leads to the first
 * child's leaf: a scan would return that leaf's keys twice, so the cursor
 * refuses the leaf whose first key is not above the last key it left. */
static void test_shared_leaf_refused(void **s)
{
	(void)s;
	char *path = tmp_seq_path("btree", "sharedleaf");
	ut_db *db = open_db(path, 0);
	uint8_t *meta = malloc(UT_PAGE_SIZE), *root = malloc(UT_PAGE_SIZE);
	ut_txn *t;
	ut_cursor *c;
	char k[16], v[200];
	int rc, n = 0;

	memset(v, 'v', sizeof(v));
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = 0; i < 400; i++) {
		snprintf(k, sizeof(k), "k%05d", i);
		assert_int_equal(ut_put(t, k, strlen(k), v, sizeof(v)), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	read_page(path, 0, meta);
	read_page(path, ut_ld32(meta + UT_META_ROOT), root);
	assert_int_equal(ut_page_type(root), UT_PT_INTERIOR);
	assert_true(ut_page_nslots(root) >= 2);
	ut_st32(ut_page_cell(root, 1), ut_ld32(ut_page_cell(root, 0)));
	ut_page_seal(root); /* as a hand edit would */
	write_page(path, ut_ld32(meta + UT_META_ROOT), root);

	db = open_db(path, 0);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c))
		n++;
	assert_int_equal(rc, UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "not above the previous leaf"));
	assert_true(n < 400);
	ut_cursor_close(c);
	ut_abort(t);
	assert_int_equal(ut_check(db, NULL, NULL), UT_ECORRUPT);
	assert_int_equal(ut_close(db), UT_OK);
	free(meta);
	free(root);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_splits_every_level),
		cmocka_unit_test(test_delete_to_empty_and_reuse),
		cmocka_unit_test(test_sparse_delete_merges),
		cmocka_unit_test(test_overflow_and_limits),
		cmocka_unit_test(test_cursor_edges),
		cmocka_unit_test(test_abort_leaves_no_trace),
		cmocka_unit_test(test_random_vs_model),
		cmocka_unit_test(test_key_order_at_word_edges),
		cmocka_unit_test(test_fill_random_order),
		cmocka_unit_test(test_fill_sequential),
		cmocka_unit_test(test_shared_leaf_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

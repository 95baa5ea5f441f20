/*
 * tests/test_tables.c - named tables (untorn.h, "Named tables"; design in
 * engine/catalog.c).
 *
 * What is asserted: tables are separate keyspaces beside the default one;
 * create, open, list, clear and drop commit or abort with the rest of
 * their transaction, across several tables at once; a reader's snapshot
 * never shows a create or a drop half done (a writer thread creates and
 * drops tables while reader threads check each state they see); a drop
 * puts every page of the table on the free list and later writes reuse
 * them (the file does not grow), logging a few bytes a page and holding
 * none of them (drop_cheap), refusing a tree that reaches a page twice;
 * the default table's key count is kept across commits, aborts,
 * snapshots and reopens and checked; crafted free-list trunks are
 * refused; tables survive a reopen; a database
 * without tables keeps format 2 on disk, and the first create makes it 3;
 * the API's errors (bad names, dropped handles, another database's
 * handle); and damaged catalog entries -- a root beyond the file, of the
 * wrong type, shared by two tables, a cycle below a root -- are
 * UT_ECORRUPT naming the table.  A differential test runs random creates,
 * drops, clears, puts and deletes over several tables in multi-table
 * transactions, some aborted, against SQLite (one SQLite table per untorn
 * table, one SQLite transaction per untorn one) and compares every table
 * after every transaction.
 */
#include <pthread.h>
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
#include <sqlite3.h>

#include "catalog.h"
#include "db.h"
#include "helper_fs.h"
#include "pager.h"
#include "untorn.h"
#include "wal.h"

static ut_db *open_db(const char *path)
{
	ut_options o;
	ut_db *db;

	ut_options_default(&o);
	o.cache_bytes = 4u << 20;
	o.sync = 0;
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	return db;
}

static void put_s(ut_txn *t, ut_table *tb, const char *k, const char *v)
{
	assert_int_equal(ut_tput(t, tb, k, strlen(k), v, strlen(v)), UT_OK);
}

/* 1 when k holds v in tb, 0 when absent. */
static int has(ut_txn *t, ut_table *tb, const char *k, const char *v)
{
	void *got;
	size_t n;
	int rc = ut_tget(t, tb, k, strlen(k), &got, &n);

	if (rc == UT_NOTFOUND)
		return 0;
	assert_int_equal(rc, UT_OK);
	assert_int_equal(n, strlen(v));
	assert_memory_equal(got, v, n);
	free(got);
	return 1;
}

static uint64_t count_keys(ut_txn *t, ut_table *tb)
{
	ut_cursor *c;
	uint64_t n = 0;
	int rc;

	assert_int_equal(ut_tcursor_open(t, tb, &c), UT_OK);
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c))
		n++;
	assert_int_equal(rc, UT_NOTFOUND);
	ut_cursor_close(c);
	return n;
}

static void check_clean(ut_db *db)
{
	ut_check_result r;
	int rc = ut_check(db, stderr, &r);

	if (rc)
		fprintf(stderr, "check: %s\n", ut_errdetail());
	assert_int_equal(rc, UT_OK);
}

/* Separate keyspaces, counts, listing, names. */
static void test_basic(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "basic");
	ut_db *db = open_db(path);
	ut_table *a, *b, *a2;
	ut_table_info ti;
	ut_txn *t;
	char name[300];

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "users", 0, &a), UT_NOTFOUND);
	assert_null(a);
	assert_int_equal(ut_table_open(t, "users", UT_CREATE, &a), UT_OK);
	assert_int_equal(ut_table_open(t, "logins", UT_CREATE, &b), UT_OK);
	assert_int_equal(ut_table_open(t, "users", 0, &a2), UT_OK);
	assert_ptr_equal(a, a2);
	assert_string_equal(ut_table_name(a), "users");
	put_s(t, a, "k", "in users");
	put_s(t, b, "k", "in logins");
	put_s(t, NULL, "k", "in default");
	assert_true(has(t, a, "k", "in users"));
	assert_true(has(t, b, "k", "in logins"));
	assert_true(has(t, NULL, "k", "in default"));
	/* names: 1..255 bytes */
	assert_int_equal(ut_table_open(t, "", UT_CREATE, &a2), UT_EINVAL);
	assert_int_equal(ut_table_open(t, NULL, UT_CREATE, &a2), UT_EINVAL);
	memset(name, 'n', 256);
	name[256] = 0;
	assert_int_equal(ut_table_open(t, name, UT_CREATE, &a2), UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "longer than 255"));
	name[255] = 0;
	assert_int_equal(ut_table_open(t, name, UT_CREATE, &a2), UT_OK);
	assert_int_equal(ut_table_open(t, "x", 2, &a2), UT_EINVAL);
	assert_int_equal(ut_commit(t), UT_OK);

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_true(has(t, a, "k", "in users"));
	assert_true(has(t, b, "k", "in logins"));
	assert_int_equal(ut_table_stat(t, a, &ti), UT_OK);
	assert_string_equal(ti.name, "users");
	assert_int_equal(ti.keys, 1);
	assert_int_equal(ti.pages, 1);
	/* listed in name order, the default table not among them */
	assert_int_equal(ut_table_next(t, NULL, &ti), UT_OK);
	assert_string_equal(ti.name, "logins");
	assert_int_equal(ut_table_next(t, ti.name, &ti), UT_OK);
	assert_int_equal(strlen(ti.name), 255);
	assert_int_equal(ut_table_next(t, ti.name, &ti), UT_OK);
	assert_string_equal(ti.name, "users");
	assert_int_equal(ut_table_next(t, ti.name, &ti), UT_NOTFOUND);
	/* a read-only transaction opens, but creates nothing */
	assert_int_equal(ut_table_open(t, "users", UT_CREATE, &a2), UT_OK);
	assert_int_equal(ut_table_open(t, "new", UT_CREATE, &a2), UT_EREADONLY);
	assert_int_equal(ut_tput(t, a, "x", 1, "y", 1), UT_EREADONLY);
	ut_abort(t);

	/* many keys with overflow values: counts follow puts and deletes */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	static char big[40000];
	memset(big, 'v', sizeof(big));
	for (int i = 0; i < 3000; i++) {
		char k[32];
		int n = snprintf(k, sizeof(k), "key%06d", i);

		assert_int_equal(ut_tput(t, b, k, (size_t)n, big,
					 i % 100 == 0 ? sizeof(big) : 100), UT_OK);
	}
	for (int i = 0; i < 3000; i += 3) {
		char k[32];
		int n = snprintf(k, sizeof(k), "key%06d", i);

		assert_int_equal(ut_tdel(t, b, k, (size_t)n), UT_OK);
	}
	assert_int_equal(ut_tdel(t, b, "nope", 4), UT_NOTFOUND);
	/* a replaced key is not counted again */
	assert_int_equal(ut_tput(t, b, "key000001", 9, "new", 3), UT_OK);
	assert_int_equal(ut_table_stat(t, b, &ti), UT_OK);
	assert_int_equal(ti.keys, 1 + 2000);
	assert_int_equal(count_keys(t, b), 2001);
	assert_int_equal(count_keys(t, a), 1);
	assert_int_equal(ut_commit(t), UT_OK);
	check_clean(db);
	assert_int_equal(ut_close(db), UT_OK);

	/* reopened: the same tables, contents and counts */
	db = open_db(path);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "logins", 0, &b), UT_OK);
	assert_int_equal(ut_table_stat(t, b, &ti), UT_OK);
	assert_int_equal(ti.keys, 2001);
	assert_int_equal(count_keys(t, b), 2001);
	assert_true(has(t, b, "k", "in logins"));
	assert_true(has(t, NULL, "k", "in default"));
	ut_abort(t);
	check_clean(db);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* One transaction over several tables: all of it or nothing. */
static void test_atomic_abort(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "abort");
	ut_db *db = open_db(path);
	ut_table *a, *b, *c, *gone;
	ut_table_info ti;
	ut_txn *t;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "a", UT_CREATE, &a), UT_OK);
	assert_int_equal(ut_table_open(t, "b", UT_CREATE, &b), UT_OK);
	put_s(t, a, "1", "a1");
	put_s(t, b, "1", "b1");
	assert_int_equal(ut_commit(t), UT_OK);

	/* create c, drop b, change a and the default table: aborted */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "c", UT_CREATE, &gone), UT_OK);
	put_s(t, gone, "1", "c1");
	put_s(t, a, "1", "a2");
	put_s(t, NULL, "d", "d1");
	assert_int_equal(ut_table_drop(t, b), UT_OK);
	assert_int_equal(ut_tget(t, b, "1", 1, (void **)&c, &(size_t){ 0 }),
			 UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "dropped"));
	assert_int_equal(ut_table_open(t, "b", 0, &c), UT_NOTFOUND);
	ut_abort(t);

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_true(has(t, a, "1", "a1"));
	assert_true(has(t, b, "1", "b1"));
	assert_false(has(t, NULL, "d", "d1"));
	assert_int_equal(ut_table_open(t, "c", 0, &c), UT_NOTFOUND);
	/* the aborted create's handle names no table */
	assert_int_equal(ut_tget(t, gone, "1", 1, (void **)&c, &(size_t){ 0 }),
			 UT_EINVAL);
	assert_int_equal(ut_table_next(t, "b", &ti), UT_NOTFOUND);
	ut_abort(t);

	/* the same, committed */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "c", UT_CREATE, &c), UT_OK);
	assert_ptr_not_equal(c, gone); /* another table, another id */
	put_s(t, c, "1", "c1");
	put_s(t, a, "1", "a2");
	assert_int_equal(ut_table_drop(t, b), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_true(has(t, a, "1", "a2"));
	assert_true(has(t, c, "1", "c1"));
	assert_int_equal(ut_tget(t, b, "1", 1, (void **)&gone, &(size_t){ 0 }),
			 UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "dropped"));
	ut_abort(t);

	/* b created again: a new table; the old handle stays dropped */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "b", UT_CREATE, &gone), UT_OK);
	assert_ptr_not_equal(gone, b);
	assert_false(has(t, gone, "1", "b1"));
	assert_int_equal(ut_tput(t, b, "1", 1, "x", 1), UT_EINVAL);
	assert_int_equal(ut_commit(t), UT_OK);
	check_clean(db);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* A handle of another database, and a cursor on a dropped table. */
static void test_handle_errors(void **s)
{
	(void)s;
	char *p1 = tmp_db_path("tables", "h1"), *p2 = tmp_db_path("tables", "h2");
	ut_db *d1 = open_db(p1), *d2 = open_db(p2);
	ut_table *a, *b;
	ut_cursor *c;
	ut_txn *t1, *t2;

	assert_int_equal(ut_begin(d1, 0, &t1), UT_OK);
	assert_int_equal(ut_table_open(t1, "t", UT_CREATE, &a), UT_OK);
	put_s(t1, a, "k", "v");
	assert_int_equal(ut_commit(t1), UT_OK);
	assert_int_equal(ut_begin(d2, 0, &t2), UT_OK);
	assert_int_equal(ut_table_open(t2, "t", UT_CREATE, &b), UT_OK);
	assert_int_equal(ut_tput(t2, a, "k", 1, "v", 1), UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "another database"));
	assert_int_equal(ut_table_drop(t2, a), UT_EINVAL);
	assert_int_equal(ut_commit(t2), UT_OK);

	assert_int_equal(ut_begin(d1, 0, &t1), UT_OK);
	assert_int_equal(ut_tcursor_open(t1, a, &c), UT_OK);
	assert_int_equal(ut_cursor_seek(c, NULL, 0), UT_OK);
	assert_int_equal(ut_table_drop(t1, a), UT_OK);
	assert_int_equal(ut_cursor_next(c), UT_EINVAL);
	assert_int_equal(ut_cursor_seek(c, NULL, 0), UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "dropped"));
	ut_cursor_close(c);
	assert_int_equal(ut_tcursor_open(t1, a, &c), UT_EINVAL);
	assert_int_equal(ut_commit(t1), UT_OK);
	assert_int_equal(ut_close(d1), UT_OK);
	assert_int_equal(ut_close(d2), UT_OK);
	remove_db_files(p1);
	remove_db_files(p2);
	free(p1);
	free(p2);
}

/* A reader keeps the tables of its snapshot: created after it began,
 * absent; dropped after it began, whole. */
static void test_snapshot_view(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "snap");
	ut_db *db = open_db(path);
	ut_table *a, *x;
	ut_txn *t, *r;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "a", UT_CREATE, &a), UT_OK);
	for (int i = 0; i < 500; i++) {
		char k[16];

		snprintf(k, sizeof(k), "%05d", i);
		put_s(t, a, k, "valuevaluevaluevaluevaluevaluevalue");
	}
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_drop(t, a), UT_OK);
	assert_int_equal(ut_table_open(t, "b", UT_CREATE, &x), UT_OK);
	put_s(t, x, "k", "v");
	/* its pages are reused by the writer while r reads them */
	assert_int_equal(ut_table_open(t, "c", UT_CREATE, &x), UT_OK);
	for (int i = 0; i < 500; i++) {
		char k[16];

		snprintf(k, sizeof(k), "%05d", i);
		put_s(t, x, k, "other");
	}
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(count_keys(r, a), 500);
	assert_true(has(r, a, "00042", "valuevaluevaluevaluevaluevaluevalue"));
	assert_int_equal(ut_table_open(r, "b", 0, &x), UT_NOTFOUND);
	ut_abort(r);
	check_clean(db);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* ---- readers against a writer that creates and drops tables ---------- */

#define GEN_KEYS 50

struct race {
	ut_db *db;
	int stop;   /* atomic: set by the main thread or a failing reader */
	int checks;
	char bad[400]; /* a reader's failure */
};

static void gen_name(char *n, uint32_t g)
{
	snprintf(n, 32, "gen%u", g);
}

/* Each commit g creates table gen<g> with GEN_KEYS keys, drops gen<g-1>,
 * creates or drops a few "pad" tables with long names (so the catalog
 * grows past one page and shrinks back: its root changes), and writes g
 * and the number of pads under "gen" in the default table. */
/* In a reader thread: a failure is recorded for the main thread (cmocka's
 * asserts belong to it). */
#define RCHECK_EQ(a, b)                                                   \
	do {                                                              \
		long long a_ = (long long)(a), b_ = (long long)(b);       \
		if (a_ != b_) {                                           \
			snprintf(rc->bad, sizeof(rc->bad), "line %d: %s = %lld, " \
				 "not %lld (%s)", __LINE__, #a, a_, b_,      \
				 ut_errdetail());                         \
			__atomic_store_n(&rc->stop, 1, __ATOMIC_RELAXED); \
			return NULL;                                      \
		}                                                         \
	} while (0)

static uint64_t count_keys_rc(ut_txn *t, ut_table *tb)
{
	ut_cursor *c;
	uint64_t n = 0;
	int rc;

	if (ut_tcursor_open(t, tb, &c))
		return UINT64_MAX;
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c))
		n++;
	ut_cursor_close(c);
	return rc == UT_NOTFOUND ? n : UINT64_MAX;
}

static void *race_reader(void *arg)
{
	struct race *rc = arg;

	while (!__atomic_load_n(&rc->stop, __ATOMIC_RELAXED)) {
		ut_table_info ti;
		ut_table *tb;
		ut_txn *r;
		char name[32];
		void *v;
		size_t n;
		uint32_t g, gp[2], listed = 0;

		RCHECK_EQ(ut_begin(rc->db, UT_RDONLY, &r), UT_OK);
		if (ut_get(r, "gen", 3, &v, &n) == UT_NOTFOUND) {
			ut_abort(r);
			continue;
		}
		RCHECK_EQ(n, sizeof(gp));
		memcpy(gp, v, sizeof(gp));
		free(v);
		g = gp[0];
		gen_name(name, g);
		RCHECK_EQ(ut_table_open(r, name, 0, &tb), UT_OK);
		RCHECK_EQ(count_keys_rc(r, tb), GEN_KEYS);
		RCHECK_EQ(ut_table_stat(r, tb, &ti), UT_OK);
		RCHECK_EQ(ti.keys, GEN_KEYS);
		gen_name(name, g - 1);
		RCHECK_EQ(ut_table_open(r, name, 0, &tb), UT_NOTFOUND);
		/* exactly the tables of this state listed */
		for (int lrc = ut_table_next(r, NULL, &ti); lrc != UT_NOTFOUND;
		     lrc = ut_table_next(r, ti.name, &ti)) {
			RCHECK_EQ(lrc, UT_OK);
			listed++;
		}
		RCHECK_EQ(listed, 1 + gp[1]);
		ut_abort(r);
		__atomic_fetch_add(&rc->checks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_snapshot_race(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "race");
	struct race rc = { .db = open_db(path) };
	pthread_t th[2];
	int checks = 0;
	uint32_t npads = 0;

	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, race_reader, &rc), 0);
	for (uint32_t g = 1; g <= 300; g++) {
		char name[32];
		ut_table *tb;
		ut_txn *t;

		assert_int_equal(ut_begin(rc.db, 0, &t), UT_OK);
		gen_name(name, g);
		assert_int_equal(ut_table_open(t, name, UT_CREATE, &tb), UT_OK);
		for (int i = 0; i < GEN_KEYS; i++) {
			char k[16];

			snprintf(k, sizeof(k), "k%03d", i);
			put_s(t, tb, k, "some value to fill the pages up a bit");
		}
		gen_name(name, g - 1);
		if (g > 1) {
			assert_int_equal(ut_table_open(t, name, 0, &tb), UT_OK);
			assert_int_equal(ut_table_drop(t, tb), UT_OK);
		}
		for (int i = 0; i < 4; i++) {
			char pad[256];

			/* 0..80 pads of 200-byte names: about 70 fill a page */
			int grow = (g / 20) % 2 == 0;
			memset(pad, 'p', 200);
			snprintf(pad + 200, 56, "%05u", grow ? npads : npads - 1);
			if (grow) {
				assert_int_equal(ut_table_open(t, pad, UT_CREATE, &tb),
						 UT_OK);
				npads++;
			} else if (npads) {
				assert_int_equal(ut_table_open(t, pad, 0, &tb), UT_OK);
				assert_int_equal(ut_table_drop(t, tb), UT_OK);
				npads--;
			}
		}
		uint32_t gp[2] = { g, npads };
		assert_int_equal(ut_put(t, "gen", 3, gp, sizeof(gp)), UT_OK);
		assert_int_equal(ut_commit(t), UT_OK);
	}
	__atomic_store_n(&rc.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (rc.bad[0])
		fail_msg("reader: %s", rc.bad);
	checks = rc.checks;
	print_message("readers checked %d snapshots\n", checks);
	assert_true(checks > 0);
	check_clean(rc.db);
	assert_int_equal(ut_close(rc.db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* A drop frees every page (overflow chains too) and later writes reuse
 * them; a clear keeps one. */
static void test_drop_reuses_pages(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "drop");
	ut_db *db = open_db(path);
	ut_pager *p = ut_db_pager(db);
	static char big[50000];
	ut_table_info ti;
	ut_table *tb;
	ut_txn *t;
	uint32_t count, free0;
	uint64_t pages = 0;
	struct stat st;

	memset(big, 'b', sizeof(big));
	for (int round = 0; round < 3; round++) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		assert_int_equal(ut_table_open(t, "big", UT_CREATE, &tb), UT_OK);
		for (int i = 0; i < 2000; i++) {
			char k[16];

			snprintf(k, sizeof(k), "k%05d", i);
			assert_int_equal(ut_tput(t, tb, k, strlen(k), big,
						 i % 50 ? 300 : sizeof(big)), UT_OK);
		}
		assert_int_equal(ut_table_stat(t, tb, &ti), UT_OK);
		pages = ti.pages;
		assert_int_equal(ut_commit(t), UT_OK);
		if (round == 0)
			count = ut_pager_page_count(p);
		/* the second and third fill reuse the first's pages */
		assert_int_equal(ut_pager_page_count(p), count);
		free0 = ut_pager_free_count(p);
		check_clean(db);
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		if (round == 2) {
			assert_int_equal(ut_table_clear(t, tb), UT_OK);
			assert_int_equal(ut_table_stat(t, tb, &ti), UT_OK);
			assert_int_equal(ti.keys, 0);
			assert_int_equal(ti.pages, 1);
			assert_int_equal(count_keys(t, tb), 0);
			put_s(t, tb, "after", "clear");
		} else {
			assert_int_equal(ut_table_drop(t, tb), UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
		/* every page of the table on the free list (clear: but one) */
		assert_int_equal(ut_pager_free_count(p) - free0,
				 pages - (round == 2));
		check_clean(db);
	}
	assert_true(pages > 2000 / 50 * 4);
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal((uint64_t)st.st_size, (uint64_t)count * UT_PAGE_SIZE);
	remove_db_files(path);
	free(path);
}

/* A drop of a table of many pages neither copies nor logs them: its
 * log is a few bytes a page (the free-list entries), not the pages'
 * 16 KiB; the cache stays within its bound while the drop runs (the
 * walk holds no page it freed); and the next inserts reuse the space
 * without compact. */
static void test_drop_cheap(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "dropcheap");
	ut_db *db = open_db(path); /* a 4 MiB cache: 256 frames */
	ut_pager *p = ut_db_pager(db);
	static char val[1000];
	ut_wal_stats w0, w1;
	ut_table_info ti;
	ut_table *tb;
	ut_txn *t;
	uint32_t count, free0;
	size_t frames;

	memset(val, 'v', sizeof(val));
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "big", UT_CREATE, &tb), UT_OK);
	for (int i = 0; i < 60000; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%06d", i);
		assert_int_equal(ut_tput(t, tb, k, strlen(k), val, 900), UT_OK);
		if (i % 100 == 0) { /* every 100th in an overflow chain */
			static char big[40000];

			memset(big, 'o', sizeof(big));
			assert_int_equal(ut_tput(t, tb, k, strlen(k), big,
						 sizeof(big)), UT_OK);
		}
	}
	assert_int_equal(ut_table_stat(t, tb, &ti), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	/* past one trunk page of the free list (UT_FREE_CAP entries) */
	assert_true(ti.pages > UT_FREE_CAP + 100);
	count = ut_pager_page_count(p);
	free0 = ut_pager_free_count(p);

	ut_wal_stats_get(ut_db_wal(db), &w0);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_drop(t, tb), UT_OK);
	frames = ut_pager_frames(p);
	assert_int_equal(ut_commit(t), UT_OK);
	ut_wal_stats_get(ut_db_wal(db), &w1);
	fprintf(stderr, "drop of %llu pages: %llu log bytes, %zu frames held\n",
		(unsigned long long)ti.pages,
		(unsigned long long)(w1.bytes_appended - w0.bytes_appended),
		frames);
	assert_int_equal(ut_pager_free_count(p) - free0, ti.pages);
	/* 16 KiB a page before; 4 bytes a page in the free list's trunk
	 * pages, plus a trunk page whole each 4088 pages */
	assert_true(w1.bytes_appended - w0.bytes_appended < ti.pages * 32);
	assert_true(frames <= 256 + 64);
	check_clean(db);

	/* the space is reused: the same data again, in another table and
	 * the default one, does not grow the file */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "again", UT_CREATE, &tb), UT_OK);
	for (int i = 0; i < 60000; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%06d", i);
		assert_int_equal(i % 2 ? ut_tput(t, tb, k, strlen(k), val, 600)
				       : ut_put(t, k, strlen(k), val, 600), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_pager_page_count(p), count);
	check_clean(db);
	assert_int_equal(ut_close(db), UT_OK);
	/* and after a reopen (the free list as recovery and the header have it) */
	db = open_db(path);
	check_clean(db);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* A crafted table whose two values share one overflow chain: the drop
 * reaches the chain twice.  Freed pages are no longer rewritten (their
 * type does not change), so only the drop's record of the pages it
 * reached can refuse it -- freeing the chain twice would put its pages
 * on the free list twice (the page count still matches: 5). */
static void test_drop_shared_chain(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "shared");
	ut_db *db = open_db(path);
	ut_pager *p = ut_db_pager(db);
	static char big[20000];
	ut_table_info ti;
	ut_table *tb;
	ut_catent e;
	ut_txn *t;
	ut_pg *leaf;
	uint32_t free0;

	memset(big, 's', sizeof(big));
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "shared", UT_CREATE, &tb), UT_OK);
	assert_int_equal(ut_tput(t, tb, "a", 1, big, sizeof(big)), UT_OK);
	assert_int_equal(ut_tput(t, tb, "b", 1, big, sizeof(big)), UT_OK);
	assert_int_equal(ut_table_stat(t, tb, &ti), UT_OK);
	assert_int_equal(ti.pages, 5); /* the leaf, two chains of 2 */
	/* a free-list trunk already, so the drop rewrites none of its pages
	 * (the first page freed into an empty list would become one) */
	assert_int_equal(ut_table_open(t, "pad", UT_CREATE, &tb), UT_OK);
	assert_int_equal(ut_table_drop(t, tb), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	free0 = ut_pager_free_count(p);
	assert_true(free0 > 0);
	/* b's chain pointer (the u32 after its 7-byte header and key) := a's */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_cat_get(p, NULL, "shared", 6, 0, &e), UT_OK);
	assert_int_equal(ut_pager_get(p, e.root, &leaf), UT_OK);
	assert_int_equal(ut_pager_write(p, leaf), UT_OK);
	assert_int_equal(ut_page_nslots(leaf->data), 2);
	memcpy(ut_page_cell(leaf->data, 1) + 8, ut_page_cell(leaf->data, 0) + 8, 4);
	ut_pager_release(p, leaf);
	assert_int_equal(ut_commit(t), UT_OK);

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "shared", 0, &tb), UT_OK);
	assert_int_equal(ut_table_drop(t, tb), UT_ECORRUPT);
	print_message("shared chain: %s\n", ut_errdetail());
	assert_non_null(strstr(ut_errdetail(), "shared"));
	assert_non_null(strstr(ut_errdetail(), "reached before"));
	ut_abort(t);
	assert_int_equal(ut_pager_free_count(p), free0);
	(void)ut_close(db);
	remove_db_files(path);
	free(path);
}

/* The default table's key count: counted by a walk while the database
 * has no table (format 2), counted once by the first create, then kept
 * in the header by every commit (aborts leave it), seen by snapshots as
 * of their start, and checked by ut_check. */
static void test_default_count(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "defcount");
	ut_db *db = open_db(path);
	ut_pager *p = ut_db_pager(db);
	ut_table_info ti;
	ut_table *tb;
	ut_txn *t, *r;
	char k[16];

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = 0; i < 10; i++) {
		snprintf(k, sizeof(k), "d%02d", i);
		put_s(t, NULL, k, "v");
	}
	put_s(t, NULL, "d00", "again"); /* a replace adds no key */
	assert_int_equal(ut_table_stat(t, NULL, &ti), UT_OK);
	assert_int_equal(ti.keys, 10);
	assert_string_equal(ti.name, "");
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_pager_default_keys(p), 0); /* format 2: not kept */

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	put_s(t, NULL, "e1", "v");
	assert_int_equal(ut_table_open(t, "x", UT_CREATE, &tb), UT_OK);
	put_s(t, NULL, "e2", "v");
	put_s(t, tb, "e3", "v"); /* the named table's, not the default's */
	assert_int_equal(ut_del(t, "d05", 3), UT_OK);
	assert_int_equal(ut_del(t, "nope", 4), UT_NOTFOUND);
	assert_int_equal(ut_table_stat(t, NULL, &ti), UT_OK);
	assert_int_equal(ti.keys, 11);
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_pager_default_keys(p), 11);

	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	put_s(t, NULL, "f1", "v");
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	put_s(t, NULL, "f2", "v");
	ut_abort(t);
	assert_int_equal(ut_table_stat(r, NULL, &ti), UT_OK);
	assert_int_equal(ti.keys, 11); /* as of the snapshot */
	ut_abort(r);
	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	assert_int_equal(ut_table_stat(r, NULL, &ti), UT_OK);
	assert_int_equal(ti.keys, 12);
	ut_abort(r);
	check_clean(db);
	assert_int_equal(ut_close(db), UT_OK);

	db = open_db(path);
	p = ut_db_pager(db);
	assert_int_equal(ut_pager_default_keys(p), 12);
	check_clean(db);
	/* a header that miscounts is found by check */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_pager_set_default_keys(p, 99), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	{
		ut_check_result cr;

		assert_int_equal(ut_check(db, NULL, &cr), UT_ECORRUPT);
		assert_non_null(strstr(ut_errdetail(), "header counts 99 keys"));
	}
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* The default table's page count (derived: pages in use less the
 * catalog's and the named tables'), against a named table that got the
 * same puts and deletes in the same order, so its tree has the same shape
 * and its catalog count is exact: equal in the write transaction, in a
 * snapshot, after deletes, and after another table's create and drop. */
static void test_default_pages(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "defpages");
	ut_db *db = open_db(path);
	static char v[300], big[40000];
	ut_table_info d, x;
	ut_table *tx, *ty;
	ut_txn *t, *r;
	char k[16];

	memset(v, 'v', sizeof(v));
	memset(big, 'b', sizeof(big));
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_stat(t, NULL, &d), UT_OK);
	assert_int_equal(d.pages, 1); /* format 2, an empty root leaf */
	assert_int_equal(ut_table_open(t, "x", UT_CREATE, &tx), UT_OK);
	for (int i = 0; i < 3000; i++) {
		snprintf(k, sizeof(k), "k%05d", (i * 7919) % 3000);
		assert_int_equal(ut_tput(t, NULL, k, strlen(k), v, sizeof(v)), UT_OK);
		assert_int_equal(ut_tput(t, tx, k, strlen(k), v, sizeof(v)), UT_OK);
	}
	assert_int_equal(ut_tput(t, NULL, "big", 3, big, sizeof(big)), UT_OK);
	assert_int_equal(ut_tput(t, tx, "big", 3, big, sizeof(big)), UT_OK);
	assert_int_equal(ut_table_stat(t, NULL, &d), UT_OK);
	assert_int_equal(ut_table_stat(t, tx, &x), UT_OK);
	print_message("default %llu pages, x %llu\n", (unsigned long long)d.pages,
		      (unsigned long long)x.pages);
	assert_true(x.pages > 60);
	assert_int_equal(d.pages, x.pages);
	assert_int_equal(ut_commit(t), UT_OK);

	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "x", 0, &tx), UT_OK);
	for (int i = 0; i < 3000; i += 3) {
		snprintf(k, sizeof(k), "k%05d", i);
		assert_int_equal(ut_tdel(t, NULL, k, strlen(k)), UT_OK);
		assert_int_equal(ut_tdel(t, tx, k, strlen(k)), UT_OK);
	}
	assert_int_equal(ut_tdel(t, NULL, "big", 3), UT_OK);
	assert_int_equal(ut_tdel(t, tx, "big", 3), UT_OK);
	assert_int_equal(ut_table_open(t, "y", UT_CREATE, &ty), UT_OK);
	assert_int_equal(ut_tput(t, ty, "big", 3, big, sizeof(big)), UT_OK);
	assert_int_equal(ut_table_stat(t, NULL, &d), UT_OK);
	assert_int_equal(ut_table_stat(t, tx, &x), UT_OK);
	assert_int_equal(d.pages, x.pages);
	assert_int_equal(ut_commit(t), UT_OK);
	/* the snapshot still sees the tables before the deletes */
	{
		ut_table *rx;
		ut_table_info rd, rxi;

		assert_int_equal(ut_table_open(r, "x", 0, &rx), UT_OK);
		assert_int_equal(ut_table_stat(r, NULL, &rd), UT_OK);
		assert_int_equal(ut_table_stat(r, rx, &rxi), UT_OK);
		assert_int_equal(rd.pages, rxi.pages);
		assert_true(rd.pages > d.pages);
	}
	ut_abort(r);

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "y", 0, &ty), UT_OK);
	assert_int_equal(ut_table_drop(t, ty), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	assert_int_equal(ut_table_open(r, "x", 0, &tx), UT_OK);
	assert_int_equal(ut_table_stat(r, NULL, &d), UT_OK);
	assert_int_equal(ut_table_stat(r, tx, &x), UT_OK);
	assert_int_equal(d.pages, x.pages);
	ut_abort(r);
	check_clean(db);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* Crafted free-list trunks (format 3, pager.h): an entry naming a page
 * beyond the file is refused by the allocation that would take it; an
 * entry naming a page of a live tree, by ut_check (reached twice) and,
 * once the handle is opened again, by the allocation (freecheck.c: an
 * edit made through an open handle, as here, is past its check); a
 * trunk claiming more entries than a page holds, by the page check. */
static void test_free_list_crafted(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "trunk");
	ut_db *db = open_db(path);
	ut_pager *p = ut_db_pager(db);
	static char big[40000];
	ut_check_result cr;
	ut_table *tb;
	ut_txn *t;
	ut_pg *trunk, *pg;
	unsigned n;

	memset(big, 't', sizeof(big));
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "gone", UT_CREATE, &tb), UT_OK);
	assert_int_equal(ut_tput(t, tb, "a", 1, big, sizeof(big)), UT_OK);
	assert_int_equal(ut_table_open(t, "kept", UT_CREATE, &tb), UT_OK);
	put_s(t, tb, "k", "v");
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "gone", 0, &tb), UT_OK);
	assert_int_equal(ut_table_drop(t, tb), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	check_clean(db);

	/* the head trunk lists the table's other pages */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_pager_get(p, 0, &pg), UT_OK); /* the header */
	uint32_t head = ut_ld32(pg->data + UT_META_FREEHEAD);
	ut_pager_release(p, pg);
	assert_int_equal(ut_pager_get(p, head, &trunk), UT_OK);
	n = ut_page_aux(trunk->data);
	assert_true(n >= 2);
	assert_int_equal(ut_pager_write(p, trunk), UT_OK);
	ut_st32(trunk->data + UT_PG_HDR + 4 * (n - 1), ut_pager_page_count(p) + 10);
	ut_pager_release(p, trunk);
	assert_int_equal(ut_pager_alloc(p, UT_PT_LEAF, &pg), UT_ECORRUPT);
	print_message("beyond: %s\n", ut_errdetail());
	assert_non_null(strstr(ut_errdetail(), "free-list entry"));
	ut_abort(t);

	/* an entry naming the root of "kept": two owners */
	{
		ut_catent e;

		assert_int_equal(ut_cat_get(p, NULL, "kept", 4, 0, &e), UT_OK);
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		assert_int_equal(ut_pager_get(p, head, &trunk), UT_OK);
		assert_int_equal(ut_pager_write(p, trunk), UT_OK);
		ut_st32(trunk->data + UT_PG_HDR + 4 * (n - 1), e.root);
		ut_pager_release(p, trunk);
		assert_int_equal(ut_commit(t), UT_OK);
		assert_int_equal(ut_check(db, NULL, &cr), UT_ECORRUPT);
		print_message("live: %s\n", ut_errdetail());
		assert_non_null(strstr(ut_errdetail(), "twice"));
	}

	/* more entries than a page holds */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_pager_get(p, head, &trunk), UT_OK);
	assert_int_equal(ut_pager_write(p, trunk), UT_OK);
	ut_page_set_aux(trunk->data, UT_FREE_CAP + 1);
	assert_int_equal(ut_page_check(trunk->data, head, "x"), UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "free-list page lists"));
	ut_pager_release(p, trunk);
	ut_abort(t);
	assert_int_equal(ut_close(db), UT_OK);

	/* opened again: the allocation that would take kept's root refuses */
	db = open_db(path);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "kept", 0, &tb), UT_OK);
	assert_int_equal(ut_tput(t, tb, "big", 3, big, sizeof(big)), UT_ECORRUPT);
	print_message("reopened: %s\n", ut_errdetail());
	assert_non_null(strstr(ut_errdetail(), "table \"kept\" uses it"));
	ut_abort(t);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "kept", 0, &tb), UT_OK);
	assert_true(has(t, tb, "k", "v"));
	ut_abort(t);
	(void)ut_close(db);
	remove_db_files(path);
	free(path);
}

/* A database without tables stays format 2 on disk; older files open
 * unchanged; the first create makes format 3. */
static void test_format(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "format");
	ut_db *db = open_db(path);
	uint8_t h[UT_PAGE_SIZE];
	ut_table_info ti;
	ut_table *tb;
	ut_txn *t;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	put_s(t, NULL, "old", "key");
	assert_int_equal(ut_table_next(t, NULL, &ti), UT_NOTFOUND);
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	read_page(path, 0, h);
	assert_int_equal(ut_ld32(h + UT_META_VERSION), 2);
	for (int i = UT_META_CATROOT; i < UT_META_TABLEID + 8; i++)
		assert_int_equal(h[i], 0);

	db = open_db(path);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_true(has(t, NULL, "old", "key"));
	assert_int_equal(ut_table_open(t, "new", UT_CREATE, &tb), UT_OK);
	put_s(t, tb, "k", "v");
	assert_int_equal(ut_commit(t), UT_OK);
	/* before any checkpoint, the catalog only in the log: the header on
	 * disk says 3 already, so a format-2 build refuses the file rather
	 * than replay the log and write it back as format 2 */
	read_page(path, 0, h);
	assert_int_equal(ut_ld32(h + UT_META_VERSION), 3);
	assert_int_equal(ut_ld32(h + UT_META_CATROOT), 0);
	/* and a later header write (this checkpoint) keeps it */
	assert_int_equal(ut_checkpoint(db), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	read_page(path, 0, h);
	assert_int_equal(ut_ld32(h + UT_META_VERSION), 3);
	assert_true(ut_ld32(h + UT_META_CATROOT) != 0);

	/* a format this build does not know is refused */
	ut_st32(h + UT_META_VERSION, 4);
	ut_page_seal(h);
	write_page(path, 0, h);
	ut_options o;
	ut_options_default(&o);
	assert_int_equal(ut_open(path, &o, &db), UT_EVERSION);
	remove_db_files(path);
	free(path);
}

/* ---- damaged catalog entries ----------------------------------------- */

/* Store a crafted entry for name (the engine's own catalog call). */
static void craft(ut_db *db, const char *name, uint32_t root, uint64_t id,
		  uint64_t pages)
{
	ut_catent e = { .root = root, .id = id, .keys = 0, .pages = pages };
	ut_txn *t;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_cat_put(ut_db_pager(db), name, strlen(name), &e), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
}

static void expect_corrupt(ut_db *db, const char *name)
{
	ut_table *tb;
	ut_txn *t;
	int rc;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	rc = ut_table_open(t, name, 0, &tb);
	if (rc == UT_OK) {
		void *v;
		size_t n;

		rc = ut_tget(t, tb, "k", 1, &v, &n);
	}
	print_message("%s: %s\n", name, ut_errdetail());
	assert_int_equal(rc, UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), name));
	ut_abort(t);
}

static void test_crafted_entries(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "crafted");
	ut_db *db = open_db(path);
	ut_pager *p = ut_db_pager(db);
	ut_table *a, *b;
	ut_pg *x, *y, *ov;
	ut_txn *t;
	uint32_t aroot;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "good", UT_CREATE, &a), UT_OK);
	assert_int_equal(ut_table_open(t, "other", UT_CREATE, &b), UT_OK);
	put_s(t, a, "k", "v");
	/* a cycle: two interior pages pointing at each other; an overflow
	 * page where a tree page belongs */
	assert_int_equal(ut_pager_alloc(p, UT_PT_INTERIOR, &x), UT_OK);
	assert_int_equal(ut_pager_alloc(p, UT_PT_INTERIOR, &y), UT_OK);
	assert_int_equal(ut_pager_alloc(p, UT_PT_OVERFLOW, &ov), UT_OK);
	ut_page_set_right(x->data, y->pgno);
	ut_page_set_right(y->data, x->pgno);
	ut_page_set_aux(ov->data, 1);
	uint32_t xno = x->pgno, ovno = ov->pgno;
	ut_pager_release(p, x);
	ut_pager_release(p, y);
	ut_pager_release(p, ov);
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	ut_table_info ti;
	assert_int_equal(ut_table_stat(t, a, &ti), UT_OK);
	ut_abort(t);
	{
		ut_catent e;

		assert_int_equal(ut_cat_get(p, NULL, "good", 4, 1, &e), UT_OK);
		aroot = e.root;
	}
	craft(db, "beyond", ut_pager_page_count(p) + 5, 100, 1);
	expect_corrupt(db, "beyond");
	craft(db, "wrongtype", ovno, 101, 1);
	expect_corrupt(db, "wrongtype");
	craft(db, "twice", aroot, 102, 1);
	expect_corrupt(db, "twice");
	craft(db, "cycle", xno, 103, 2);
	expect_corrupt(db, "cycle");
	craft(db, "default", ut_pager_root(p), 104, 1);
	expect_corrupt(db, "default");
	/* ut_check names them too */
	ut_check_result r;
	assert_int_equal(ut_check(db, NULL, &r), UT_ECORRUPT);
	/* a drop of the cycle refuses and changes nothing */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	assert_int_equal(ut_table_open(t, "cycle", 0, &b), UT_OK);
	assert_int_equal(ut_table_drop(t, b), UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "cycle"));
	ut_abort(t);
	(void)ut_close(db);
	remove_db_files(path);
	free(path);
}

/* ---- differential against SQLite ------------------------------------- */

#define DNT 5 /* tables d0..d4; SQLite table "s<i>" mirrors "d<i>" */

static uint64_t drnd(uint64_t *s, uint64_t n)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (*s >> 33) % n;
}

static void sql(sqlite3 *q, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_int_equal(sqlite3_exec(q, buf, NULL, NULL, NULL), SQLITE_OK);
}

/* Every table of the database against SQLite's: the same list of tables
 * (sexists[i]), the same keys and values, the catalog's counts right. */
static void compare_all(ut_db *db, sqlite3 *q, const int *sexists)
{
	ut_table_info ti;
	ut_txn *t;
	int listed = 0, want = 0;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int rc = ut_table_next(t, NULL, &ti); rc != UT_NOTFOUND;
	     rc = ut_table_next(t, ti.name, &ti)) {
		assert_int_equal(rc, UT_OK);
		listed++;
	}
	for (int i = 0; i < DNT; i++) {
		char name[8];
		ut_table *tb;
		ut_cursor *c;
		sqlite3_stmt *st;
		int rc;
		uint64_t n = 0;

		snprintf(name, sizeof(name), "d%d", i);
		rc = ut_table_open(t, name, 0, &tb);
		assert_int_equal(rc, sexists[i] ? UT_OK : UT_NOTFOUND);
		if (!sexists[i])
			continue;
		want++;
		snprintf(name, sizeof(name), "s%d", i);
		char qs[64];
		snprintf(qs, sizeof(qs), "SELECT k, v FROM %s ORDER BY k", name);
		assert_int_equal(sqlite3_prepare_v2(q, qs, -1, &st, NULL), SQLITE_OK);
		assert_int_equal(ut_tcursor_open(t, tb, &c), UT_OK);
		for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
			const void *k, *v;
			size_t kl, vl;

			assert_int_equal(ut_cursor_get(c, &k, &kl, &v, &vl), UT_OK);
			assert_int_equal(sqlite3_step(st), SQLITE_ROW);
			assert_int_equal(kl, (size_t)sqlite3_column_bytes(st, 0));
			assert_memory_equal(k, sqlite3_column_blob(st, 0), kl);
			assert_int_equal(vl, (size_t)sqlite3_column_bytes(st, 1));
			if (vl)
				assert_memory_equal(v, sqlite3_column_blob(st, 1), vl);
			n++;
		}
		assert_int_equal(rc, UT_NOTFOUND);
		assert_int_equal(sqlite3_step(st), SQLITE_DONE);
		sqlite3_finalize(st);
		ut_cursor_close(c);
		assert_int_equal(ut_table_stat(t, tb, &ti), UT_OK);
		assert_int_equal(ti.keys, n);
	}
	assert_int_equal(listed, want);
	ut_abort(t);
}

static void test_differential_sqlite(void **s)
{
	(void)s;
	char *path = tmp_db_path("tables", "diff");
	ut_db *db = open_db(path);
	static uint8_t val[20000 + 64]; /* values start at val + 0..49 */
	sqlite3 *q;
	int sexists[DNT] = { 0 }, txns = 0, aborts = 0;
	uint64_t rs = 12345;

	assert_int_equal(sqlite3_open(":memory:", &q), SQLITE_OK);
	for (int i = 0; i < DNT; i++)
		sql(q, "CREATE TABLE s%d(k BLOB PRIMARY KEY, v BLOB NOT NULL)", i);
	for (size_t i = 0; i < sizeof(val); i++)
		val[i] = (uint8_t)(i * 7 + i / 300);
	for (int round = 0; round < 150; round++) {
		int abort = drnd(&rs, 100) < 20, nops = 1 + (int)drnd(&rs, 60);
		int before[DNT];
		ut_txn *t;

		memcpy(before, sexists, sizeof(before));
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		sql(q, "BEGIN");
		for (int j = 0; j < nops; j++) {
			int ti = (int)drnd(&rs, DNT), r = (int)drnd(&rs, 100);
			char name[8], k[16];
			ut_table *tb;

			snprintf(name, sizeof(name), "d%d", ti);
			if (!sexists[ti]) {
				assert_int_equal(ut_table_open(t, name, UT_CREATE, &tb),
						 UT_OK);
				sexists[ti] = 1;
				continue;
			}
			assert_int_equal(ut_table_open(t, name, 0, &tb), UT_OK);
			if (r < 3) {
				assert_int_equal(ut_table_drop(t, tb), UT_OK);
				sql(q, "DELETE FROM s%d", ti);
				sexists[ti] = 0;
			} else if (r < 5) {
				assert_int_equal(ut_table_clear(t, tb), UT_OK);
				sql(q, "DELETE FROM s%d", ti);
			} else {
				int key = (int)drnd(&rs, 300);
				size_t vl = drnd(&rs, 10) ? drnd(&rs, 200)
							  : 4000 + drnd(&rs, 16000);
				sqlite3_stmt *st;
				char qs[80];

				snprintf(k, sizeof(k), "key%04d", key);
				if (r < 30) {
					int rc = ut_tdel(t, tb, k, strlen(k));

					assert_true(rc == UT_OK || rc == UT_NOTFOUND);
					snprintf(qs, sizeof(qs), "DELETE FROM s%d WHERE k = ?1", ti);
					assert_int_equal(sqlite3_prepare_v2(q, qs, -1, &st, NULL),
							 SQLITE_OK);
					sqlite3_bind_blob(st, 1, k, (int)strlen(k), SQLITE_STATIC);
					assert_int_equal(sqlite3_step(st), SQLITE_DONE);
					assert_int_equal(sqlite3_changes(q), rc == UT_OK);
				} else {
					const uint8_t *v = val + drnd(&rs, 50);

					assert_int_equal(ut_tput(t, tb, k, strlen(k), v, vl),
							 UT_OK);
					snprintf(qs, sizeof(qs), "INSERT OR REPLACE INTO s%d "
						 "VALUES(?1, ?2)", ti);
					assert_int_equal(sqlite3_prepare_v2(q, qs, -1, &st, NULL),
							 SQLITE_OK);
					sqlite3_bind_blob(st, 1, k, (int)strlen(k), SQLITE_STATIC);
					sqlite3_bind_blob(st, 2, vl ? (const void *)v : "",
							  (int)vl, SQLITE_STATIC);
					assert_int_equal(sqlite3_step(st), SQLITE_DONE);
				}
				sqlite3_finalize(st);
			}
		}
		if (abort) {
			ut_abort(t);
			sql(q, "ROLLBACK");
			memcpy(sexists, before, sizeof(before));
			aborts++;
		} else {
			assert_int_equal(ut_commit(t), UT_OK);
			sql(q, "COMMIT");
			txns++;
		}
		compare_all(db, q, sexists);
		if (round % 50 == 49) { /* and across a reopen */
			assert_int_equal(ut_close(db), UT_OK);
			db = open_db(path);
		}
	}
	print_message("%d transactions committed, %d aborted, all tables equal "
		      "to SQLite's after each\n", txns, aborts);
	check_clean(db);
	assert_int_equal(ut_close(db), UT_OK);
	sqlite3_close(q);
	remove_db_files(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_atomic_abort),
		cmocka_unit_test(test_handle_errors),
		cmocka_unit_test(test_snapshot_view),
		cmocka_unit_test(test_snapshot_race),
		cmocka_unit_test(test_drop_reuses_pages),
		cmocka_unit_test(test_drop_cheap),
		cmocka_unit_test(test_drop_shared_chain),
		cmocka_unit_test(test_default_count),
		cmocka_unit_test(test_default_pages),
		cmocka_unit_test(test_free_list_crafted),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_crafted_entries),
		cmocka_unit_test(test_differential_sqlite),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

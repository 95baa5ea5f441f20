/*
 * tests/test_write_copy.c - the writer's private copy of a page.
 *
 * Contract checked (engine/journal.c): the copy the writer changes is
 * made from the page's last committed version -- whole, or from the
 * buffer of an earlier version (its shadow) brought up to date by the
 * blocks changed since -- so every transaction sees exactly what the
 * previous ones committed.  Here one leaf takes many small in-place
 * updates, each commit changing a different block of it than the last
 * (so a copy that missed one block of the previous commit, or of a rolled
 * back transaction, shows as a stale or phantom value), with rollbacks,
 * a reader now and then holding the old version (no shadow then), page
 * frees and reallocations (pages rewritten whole), and the whole
 * database checked against an oracle after every commit and after a
 * reopen (the log replayed from what the copies held).  And a database
 * larger than a small cache, with the room shadows share cut to a few
 * pages (ut_pager_test_pre_slack), so that shadows are dropped for room
 * at every commit (ut_pager_shadows counts them).
 *
 * The planted bug (ut_pager_sabotage_shadow: a refreshed copy misses the
 * lowest block the last commit changed) must be caught: by the full-copy
 * check of a UT_DEBUG_COPY build (Debug, sanitizers), which aborts, or
 * else by the oracle -- in a child process, so the abort is observed;
 * in the one-leaf workload and in the one where shadows are dropped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper_fs.h"
#include "db.h"    /* ut_db_pager */
#include "pager.h" /* ut_pager_sabotage_shadow, ut_pager_shadows */
#include "untorn.h"

#define NKEYS 120   /* 120 x ~130 bytes: one leaf */
#define VLEN 100
#define STEPS 3000

static unsigned char oracle[NKEYS][VLEN];
static int present[NKEYS];

static void key_of(int i, char *k)
{
	snprintf(k, 16, "k%05d", i);
}

static void val_of(int i, unsigned step, unsigned char *v)
{
	for (int j = 0; j < VLEN; j++)
		v[j] = (unsigned char)(i * 31 + step * 7 + j);
}

static ut_db *open_db(const char *path)
{
	ut_options o;
	ut_db *db;

	ut_options_default(&o);
	o.sync = 0;
	o.create = 1;
	o.protect = UT_PROTECT_UNSAFE;
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	return db;
}

static void check_all(ut_db *db)
{
	ut_txn *t;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int i = 0; i < NKEYS; i++) {
		char k[16];
		const void *v;
		size_t vl;
		int rc;

		key_of(i, k);
		rc = ut_get_ref(t, k, strlen(k), &v, &vl);
		if (!present[i]) {
			assert_int_equal(rc, UT_NOTFOUND);
			continue;
		}
		assert_int_equal(rc, UT_OK);
		assert_int_equal(vl, VLEN);
		assert_memory_equal(v, oracle[i], VLEN);
	}
	ut_abort(t);
}

static void test_copies_follow_commits(void **state)
{
	char *path = tmp_db_path("wcopy", "follow");
	ut_db *db = open_db(path);
	ut_txn *t, *reader = NULL;
	uint32_t rnd = 12345;

	(void)state;
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = 0; i < NKEYS; i++) {
		char k[16];

		key_of(i, k);
		val_of(i, 0, oracle[i]);
		present[i] = 1;
		assert_int_equal(ut_put(t, k, strlen(k), oracle[i], VLEN), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	for (unsigned step = 1; step <= STEPS; step++) {
		unsigned char v[VLEN];
		char k[16];
		int i, deleted = 0;

		rnd = rnd * 1103515245u + 12345u;
		i = (int)((rnd >> 8) % NKEYS);
		key_of(i, k);
		val_of(i, step, v);
		if (step % 50 == 0 && !reader)
			assert_int_equal(ut_begin(db, UT_RDONLY, &reader), UT_OK);
		else if (step % 50 == 7 && reader) {
			ut_abort(reader);
			reader = NULL;
		}
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		if (step % 97 == 0 && present[i]) {
			/* a delete and a put back: the leaf rewritten */
			assert_int_equal(ut_del(t, k, strlen(k)), UT_OK);
			deleted = 1;
		} else {
			assert_int_equal(ut_put(t, k, strlen(k), v, VLEN), UT_OK);
		}
		if (step % 13 == 0) {
			ut_abort(t); /* the copy changed, then dropped */
		} else {
			assert_int_equal(ut_commit(t), UT_OK);
			if (deleted) {
				present[i] = 0;
			} else {
				memcpy(oracle[i], v, VLEN);
				present[i] = 1;
			}
		}
		check_all(db);
	}
	if (reader)
		ut_abort(reader);
	assert_int_equal(ut_close(db), UT_OK);
	db = open_db(path);
	check_all(db);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* Pages freed and allocated again are rewritten whole, with no copy of
 * their old content: nothing of it may show through. */
static void test_pages_rewritten_whole(void **state)
{
	char *path = tmp_db_path("wcopy", "whole");
	ut_db *db = open_db(path);
	ut_txn *t;

	(void)state;
	for (int round = 0; round < 6; round++) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int i = 0; i < 2000; i++) {
			char k[32];
			unsigned char v[VLEN];

			snprintf(k, sizeof(k), "r%08d", i);
			memset(v, 'a' + round, VLEN);
			if (round % 2)
				assert_int_equal(ut_del(t, k, strlen(k)), UT_OK);
			else
				assert_int_equal(ut_put(t, k, strlen(k), v, VLEN), UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
		assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
		for (int i = 0; i < 2000; i++) {
			char k[32];
			const void *v;
			size_t vl;
			int rc;

			snprintf(k, sizeof(k), "r%08d", i);
			rc = ut_get_ref(t, k, strlen(k), &v, &vl);
			if (round % 2) {
				assert_int_equal(rc, UT_NOTFOUND);
			} else {
				assert_int_equal(rc, UT_OK);
				assert_int_equal(vl, VLEN);
				assert_int_equal(((const unsigned char *)v)[0], 'a' + round);
				assert_int_equal(((const unsigned char *)v)[VLEN - 1],
						 'a' + round);
			}
		}
		ut_abort(t);
	}
	assert_int_equal(ut_close(db), UT_OK);
	db = open_db(path);
	{
		ut_check_result res;

		assert_int_equal(ut_check(db, NULL, &res), UT_OK);
	}
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* The child of test_planted_stale_block: updates one key after another
 * in one leaf, each commit changing another block of it, every value read
 * back after its commit.  Exit 0: all read back right; 3: a wrong value
 * (the stale block reached the data); 2: an engine error. */
static int stale_block_child(const char *path)
{
	ut_db *db;
	ut_options o;

	memset(present, 0, sizeof(present));
	ut_options_default(&o);
	o.sync = 0;
	o.create = 1;
	o.protect = UT_PROTECT_UNSAFE;
	if (ut_open(path, &o, &db))
		return 2;
	for (unsigned step = 0; step < 4 * NKEYS; step++) {
		int i = (int)((step * 37u) % NKEYS);
		unsigned char v[VLEN];
		char k[16];
		const void *got;
		size_t gl;
		ut_txn *t;

		key_of(i, k);
		val_of(i, step, v);
		if (ut_begin(db, 0, &t) || ut_put(t, k, strlen(k), v, VLEN) ||
		    ut_commit(t))
			return 2;
		memcpy(oracle[i], v, VLEN);
		present[i] = 1;
		if (step == NKEYS) /* every page has a shadow now: sabotage */
			ut_pager_sabotage_shadow = 1;
		if (ut_begin(db, UT_RDONLY, &t))
			return 2;
		for (int j = 0; j < NKEYS; j++) {
			int rc;

			if (!present[j])
				continue;
			key_of(j, k);
			rc = ut_get_ref(t, k, strlen(k), &got, &gl);
			if (rc == UT_ECORRUPT || (rc == UT_OK && (gl != VLEN ||
			    memcmp(got, oracle[j], VLEN)))) {
				ut_abort(t);
				return 3;
			}
			if (rc)
				return 2;
		}
		ut_abort(t);
	}
	ut_close(db);
	return 0;
}

/* The planted bug is caught: with the full-copy check compiled in, the
 * child aborts at the first stale copy, before any commit carries it;
 * without it, the oracle sees the stale block. */
/* A child that ran with a sabotaged shadow copy must have been stopped:
 * by the debug copy check (SIGABRT) where journal.c compares every copy,
 * else by the oracle (exit 3). */
static void assert_child_caught_sabotage(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	print_message("child: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit",
		      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
#if defined(UT_DEBUG_COPY) || !defined(NDEBUG) /* as journal.c decides */
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
#else
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 3);
#endif
}

static void test_planted_stale_block(void **state)
{
	char *path = tmp_db_path("wcopy", "planted");
	pid_t pid;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(stale_block_child(path));
	assert_child_caught_sabotage(pid);
	remove_db_files(path);
	free(path);
}

/* ---- shadows dropped for room ------------------------------------------
 * With the pre-image slack at PSLACK pages (ut_pager_test_pre_slack) and a
 * cache of PCACHE frames, a database of about 70 leaves leaves room for a
 * few shadows only: every commit drops the oldest ones (journal.c,
 * pager_shadow_room), and pages come back with a shadow, without one, or
 * with one that other commits' drops passed over.  Every copy is checked
 * (UT_DEBUG_COPY builds against the full copy; every build by the oracle
 * after each commit, whole every 100 transactions and after a reopen). */
#define PKEYS 8000
#define PCACHE 16
#define PSLACK 4
#define PSTEPS 1500

static unsigned char poracle[PKEYS][VLEN];

static void pkey_of(int i, char *k)
{
	snprintf(k, 16, "p%06d", i);
}

static ut_db *open_small(const char *path)
{
	ut_options o;
	ut_db *db;

	ut_options_default(&o);
	o.sync = 0;
	o.create = 1;
	o.protect = UT_PROTECT_UNSAFE;
	o.cache_bytes = PCACHE * 16384;
	ut_pager_test_pre_slack = PSLACK;
	if (ut_open(path, &o, &db))
		db = NULL;
	ut_pager_test_pre_slack = 0;
	return db;
}

/* 0: every value read back right; 3: a wrong one; 2: an engine error. */
static int pcheck(ut_db *db, const int *keys, int n)
{
	ut_txn *t;
	int rc = 0;

	if (ut_begin(db, UT_RDONLY, &t))
		return 2;
	for (int j = 0; j < (keys ? n : PKEYS) && !rc; j++) {
		int i = keys ? keys[j] : j;
		const void *v;
		size_t vl;
		char k[16];
		int grc;

		pkey_of(i, k);
		grc = ut_get_ref(t, k, strlen(k), &v, &vl);
		if (grc == UT_ECORRUPT || (grc == UT_OK && (vl != VLEN ||
		    memcmp(v, poracle[i], VLEN))))
			rc = 3;
		else if (grc)
			rc = 2;
	}
	ut_abort(t);
	return rc;
}

/* The workload: load, then PSTEPS transactions of 3 random updates (one
 * in 11 rolled back), a reader holding a snapshot now and then; with
 * sabotage_at, ut_pager_sabotage_shadow from that step on.  *dropped:
 * shadows dropped for room, *most: shadows held at most after a commit. */
static int pressure_run(const char *path, unsigned sabotage_at,
			uint64_t *dropped, size_t *most)
{
	ut_db *db = open_small(path);
	ut_txn *t, *reader = NULL;
	uint32_t rnd = 777;
	int rc = 0;

	*most = 0;
	if (!db)
		return 2;
	for (int i = 0; i < PKEYS && !rc; i += 500) {
		if (ut_begin(db, 0, &t))
			return 2;
		for (int j = i; j < i + 500; j++) {
			char k[16];

			pkey_of(j, k);
			val_of(j, 0, poracle[j]);
			if (ut_put(t, k, strlen(k), poracle[j], VLEN))
				return 2;
		}
		if (ut_commit(t))
			return 2;
	}
	for (unsigned step = 1; step <= PSTEPS && !rc; step++) {
		unsigned char v[3][VLEN];
		int keys[3];
		size_t held;

		if (sabotage_at && step == sabotage_at)
			ut_pager_sabotage_shadow = 1;
		if (step % 40 == 0 && !reader && ut_begin(db, UT_RDONLY, &reader))
			return 2;
		if (step % 40 == 25 && reader) {
			ut_abort(reader);
			reader = NULL;
		}
		if (ut_begin(db, 0, &t))
			return 2;
		for (int j = 0; j < 3; j++) {
			char k[16];

			rnd = rnd * 1103515245u + 12345u;
			keys[j] = (int)((rnd >> 8) % PKEYS);
			pkey_of(keys[j], k);
			val_of(keys[j], step * 3 + (unsigned)j, v[j]);
			if (ut_put(t, k, strlen(k), v[j], VLEN))
				return 2;
		}
		if (step % 11 == 0) {
			ut_abort(t);
			continue;
		}
		if (ut_commit(t))
			return 2;
		for (int j = 0; j < 3; j++)
			memcpy(poracle[keys[j]], v[j], VLEN);
		ut_pager_shadows(ut_db_pager(db), &held, dropped);
		if (held > *most)
			*most = held;
		rc = pcheck(db, keys, 3);
		if (!rc && step % 100 == 0)
			rc = pcheck(db, NULL, 0);
	}
	if (reader)
		ut_abort(reader);
	ut_pager_sabotage_shadow = 0;
	if (ut_close(db))
		return rc ? rc : 2;
	if (!rc && (db = open_small(path)) != NULL) {
		rc = pcheck(db, NULL, 0);
		if (ut_close(db))
			rc = rc ? rc : 2;
	}
	return rc;
}

/* Shadows come and go for want of room, and every copy stays exact. */
static void test_shadows_dropped_for_room(void **state)
{
	char *path = tmp_db_path("wcopy", "dropped");
	uint64_t dropped = 0;
	size_t most;

	(void)state;
	assert_int_equal(pressure_run(path, 0, &dropped, &most), 0);
	print_message("shadows: %zu held at most, %llu dropped for room\n", most,
		      (unsigned long long)dropped);
	/* the path under test was taken, often, with shadows in use */
	assert_true(dropped >= PSTEPS);
	assert_true(most > 0);
	remove_db_files(path);
	free(path);
}

/* The same workload with the planted stale block, in a child: caught by
 * the full-copy check (abort) or by the oracle (exit 3). */
static void test_planted_stale_block_dropped(void **state)
{
	char *path = tmp_db_path("wcopy", "dropplant");
	uint64_t dropped;
	size_t most;
	pid_t pid;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(pressure_run(path, 200, &dropped, &most));
	assert_child_caught_sabotage(pid);
	remove_db_files(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copies_follow_commits),
		cmocka_unit_test(test_pages_rewritten_whole),
		cmocka_unit_test(test_planted_stale_block),
		cmocka_unit_test(test_shadows_dropped_for_room),
		cmocka_unit_test(test_planted_stale_block_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

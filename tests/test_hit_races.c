/*
 * tests/test_hit_races.c - a reader's pool hit takes no lock (issue 35,
 * pool.c): it reads the page table and a frame's version with atomic
 * loads while other threads evict frames, load other pages into them and
 * replace versions, pins the version unless its count is 0, and checks
 * after the pin that the frame still holds it.
 *
 * Contract checked: with a cache of 8 frames under ~30 pages, so that
 * nearly every get evicts a frame and reuses it (and its buffer) for
 * another page, two reader threads of read transactions (values held
 * until each ends, ut_get_ref, and copied, ut_get) beside a writer
 * rewriting random keys get every key, each value whole and the key's
 * own (any generation, no older than one the same transaction saw is
 * fine: the check is that no page of another number or a reused buffer
 * is read).  Planted bugs, build flags: UT_PLANT_HIT_NORECHECK (the hit
 * does not check its pin: a version evicted and reused for another page
 * meanwhile is handed out) and UT_PLANT_FORGET_NOFREEZE (eviction checks
 * for pins instead of freezing the count: a pin taken between the check
 * and the buffer's reuse reads another page) make this test fail.
 *
 * Old snapshots (test_old_snapshots_exact): a reader whose snapshot is
 * older than a page's current version finds the kept version it sees
 * from the current one's older link, with no lock (pool.c, older_hit),
 * while the writer splices versions out of those chains, snapshots end
 * and hand their versions on, the budget drops some, and version objects
 * are reused.  Contract checked: every value such a reader gets is
 * exactly its key's as of the reader's snapshot (the writer's schedule is
 * a function of the commit number, so each reader computes what its
 * snapshot must see), held values stay until the transaction ends, and
 * UT_ESNAPSHOT is the only other outcome (the budget).  Planted bug
 * UT_PLANT_OLDER_NOCHECK (a link trusted without checking what it leads
 * to once pinned) makes it fail.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "untorn.h"
#include "db.h"
#include "ut_simdisk.h"

#define NKEYS 3000
#define KLEN 16
#define VLEN 100
#define GETS 40 /* per read transaction */

static void key_of(int i, uint8_t *k)
{
	snprintf((char *)k, KLEN + 1, "k%015d", i);
}

/* Generation gen of key i's value: gen in the first 4 bytes, then bytes
 * that depend on both. */
static void value_of(int i, uint32_t gen, uint8_t *v)
{
	memcpy(v, &gen, 4);
	for (int j = 4; j < VLEN; j++)
		v[j] = (uint8_t)(i * 31 + j * 7 + gen * 101);
}

struct shared {
	ut_db *db;
	int stop;     /* atomic */
	int failed;   /* atomic: the first failure's message is in why */
	char why[256];
	long txns[2];
};

static void failure(struct shared *sh, const char *fmt, ...)
{
	int zero = 0;
	va_list ap;

	if (!__atomic_compare_exchange_n(&sh->failed, &zero, 1, 0, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return;
	va_start(ap, fmt);
	vsnprintf(sh->why, sizeof(sh->why), fmt, ap);
	va_end(ap);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
}

/* The value read for key i is the key's, whole, of some generation. */
static int value_ok(int i, const uint8_t *v, size_t vl, uint32_t *gen)
{
	uint8_t want[VLEN];

	if (vl != VLEN)
		return 0;
	memcpy(gen, v, 4);
	value_of(i, *gen, want);
	return !memcmp(v, want, VLEN);
}

struct reader {
	struct shared *sh;
	int id;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct shared *sh = r->sh;
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(r->id + 1);

	while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST)) {
		ut_txn *t;
		const void *held[GETS];
		int keys[GETS];
		uint32_t gens[GETS];
		int rc = ut_begin(sh->db, UT_RDONLY, &t);

		if (rc) {
			failure(sh, "reader %d: begin: %s", r->id, ut_strerror(rc));
			break;
		}
		for (int n = 0; n < GETS; n++) {
			uint8_t k[KLEN + 1];
			const void *v;
			void *copy = NULL;
			size_t vl;
			int i;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			i = (int)(x % NKEYS);
			key_of(i, k);
			keys[n] = i;
			if (n % 4 == 3) {
				rc = ut_get(t, k, KLEN, &copy, &vl);
				v = copy;
			} else {
				rc = ut_get_ref(t, k, KLEN, &v, &vl);
			}
			if (rc) {
				failure(sh, "reader %d: key %d: %s (%s)", r->id, i,
					ut_strerror(rc), ut_errdetail());
				break;
			}
			if (!value_ok(i, v, vl, &gens[n])) {
				failure(sh, "reader %d: key %d: a value not the key's "
					"(a page of another number, or a reused buffer)",
					r->id, i);
				free(copy);
				break;
			}
			held[n] = copy ? NULL : v;
			free(copy);
		}
		/* values handed out stay as they were until the end */
		for (int n = 0; n < GETS && !__atomic_load_n(&sh->failed, __ATOMIC_SEQ_CST); n++) {
			uint32_t g;

			if (held[n] && (!value_ok(keys[n], held[n], VLEN, &g) || g != gens[n]))
				failure(sh, "reader %d: key %d: a held value changed "
					"before its transaction ended", r->id, keys[n]);
		}
		ut_abort(t);
		__atomic_add_fetch(&sh->txns[r->id], 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void put_gen(ut_db *db, const int *keys, int n, uint32_t gen)
{
	uint8_t k[KLEN + 1], v[VLEN];
	ut_txn *t;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int j = 0; j < n; j++) {
		key_of(keys[j], k);
		value_of(keys[j], gen, v);
		assert_int_equal(ut_put(t, k, KLEN, v, VLEN), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_hits_beside_eviction_and_commits(void **s)
{
	ut_simdisk *d = ut_simdisk_new();
	struct shared sh;
	struct reader rd[2];
	pthread_t th[2];
	ut_options o;
	int keys[NKEYS];
	uint64_t x = 12345;
	uint32_t gen = 0;
	int64_t end;
	long commits = 0;

	(void)s;
	memset(&sh, 0, sizeof(sh));
	ut_options_init(&o, sizeof(o));
	o.cache_bytes = 8u * 16384; /* the smallest pool: 8 frames */
	o.sync = 0;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), "/r.db", &o, &sh.db), UT_OK);
	for (int i = 0; i < NKEYS; i++)
		keys[i] = i;
	put_gen(sh.db, keys, NKEYS, gen);

	for (int i = 0; i < 2; i++) {
		rd[i].sh = &sh;
		rd[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, reader_main, &rd[i]), 0);
	}
	/* the writer: a few keys rewritten per commit, for 3 s (and at
	 * least until both readers ran 200 transactions) */
	end = now_ms() + 3000;
	while (!__atomic_load_n(&sh.failed, __ATOMIC_SEQ_CST) &&
	       (now_ms() < end || __atomic_load_n(&sh.txns[0], __ATOMIC_RELAXED) < 200 ||
		__atomic_load_n(&sh.txns[1], __ATOMIC_RELAXED) < 200)) {
		int some[8];

		for (int j = 0; j < 8; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			some[j] = (int)(x % NKEYS);
		}
		put_gen(sh.db, some, 8, ++gen);
		commits++;
	}
	__atomic_store_n(&sh.stop, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	print_message("%ld commits, %ld + %ld read transactions\n", commits,
		      sh.txns[0], sh.txns[1]);
	if (sh.failed)
		fail_msg("%s", sh.why);
	assert_int_equal(ut_close(sh.db), UT_OK);
	ut_simdisk_free(d);
}

/* ---- old snapshots ---------------------------------------------------- */

#define PER_COMMIT 8
#define MARK NKEYS /* a key every commit writes: the snapshot's commit */

/* The j-th key commit c (>= 1) writes, gen c; the load wrote gen 0. */
static int sched_key(uint32_t c, int j)
{
	uint64_t z = ((uint64_t)c * PER_COMMIT + (uint64_t)j + 1) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
	return (int)((z ^ (z >> 29)) % NKEYS);
}

/* The generation key i has as of commit c. */
static uint32_t gen_at(int i, uint32_t c)
{
	if (i == MARK)
		return c;
	for (uint32_t k = c; k >= 1; k--)
		for (int j = 0; j < PER_COMMIT; j++)
			if (sched_key(k, j) == i)
				return k;
	return 0;
}

struct old_reader {
	struct shared *sh;
	int id;
	int gets;      /* per read transaction */
	long done;     /* atomic: transactions that ended without ESNAPSHOT */
	long too_old;  /* atomic: ended by UT_ESNAPSHOT */
};

static int get_one(ut_txn *t, int i, int copy, const void **v, void **owned,
		   size_t *vl)
{
	uint8_t k[KLEN + 1];
	int rc;

	key_of(i, k);
	*owned = NULL;
	if (!copy)
		return ut_get_ref(t, k, KLEN, v, vl);
	rc = ut_get(t, k, KLEN, owned, vl);
	*v = *owned;
	return rc;
}

static void *old_reader_main(void *arg)
{
	struct old_reader *r = arg;
	struct shared *sh = r->sh;
	uint64_t x = 0x2545f4914f6cdd1dull * (uint64_t)(r->id + 7);

	while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST)) {
		const void *held[200];
		int keys[200];
		uint32_t gens[200], c;
		const void *v;
		void *owned;
		size_t vl;
		ut_txn *t;
		int rc = ut_begin(sh->db, UT_RDONLY, &t), n, ok = 1;

		if (rc) {
			failure(sh, "old reader %d: begin: %s", r->id, ut_strerror(rc));
			break;
		}
		if ((rc = get_one(t, MARK, 0, &v, &owned, &vl)) == UT_ESNAPSHOT) {
			__atomic_add_fetch(&r->too_old, 1, __ATOMIC_RELAXED);
			ut_abort(t);
			continue;
		}
		if (rc || !value_ok(MARK, v, vl, &c)) {
			failure(sh, "old reader %d: the mark: %s", r->id,
				rc ? ut_strerror(rc) : "not its value");
			ut_abort(t);
			break;
		}
		for (n = 0; n < r->gets && ok; n++) {
			uint32_t g = 0;
			int i;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			i = (int)(x % NKEYS);
			keys[n] = i;
			held[n] = NULL;
			if (n % 16 == 15)
				sched_yield(); /* the writer commits meanwhile */
			rc = get_one(t, i, n % 4 == 3, &v, &owned, &vl);
			if (rc == UT_ESNAPSHOT) {
				__atomic_add_fetch(&r->too_old, 1, __ATOMIC_RELAXED);
				ok = 0;
				break;
			}
			if (rc) {
				failure(sh, "old reader %d: key %d: %s (%s)", r->id, i,
					ut_strerror(rc), ut_errdetail());
				ok = 0;
				break;
			}
			if (!value_ok(i, v, vl, &g) || g != gen_at(i, c)) {
				failure(sh, "old reader %d: key %d: %s (generation %u; "
					"its snapshot, commit %u, has %u)", r->id, i,
					value_ok(i, v, vl, &g) ? "another generation"
							       : "not the key's value",
					g, c, gen_at(i, c));
				free(owned);
				ok = 0;
				break;
			}
			gens[n] = g;
			held[n] = owned ? NULL : v;
			free(owned);
		}
		for (int m = 0; m < n && ok; m++) {
			uint32_t g = 0;

			if (held[m] && (!value_ok(keys[m], held[m], VLEN, &g) || g != gens[m])) {
				failure(sh, "old reader %d: key %d: a held value changed "
					"before its transaction ended", r->id, keys[m]);
				ok = 0;
			}
		}
		ut_abort(t);
		if (ok)
			__atomic_add_fetch(&r->done, 1, __ATOMIC_RELAXED);
		else if (__atomic_load_n(&sh->failed, __ATOMIC_SEQ_CST))
			break;
	}
	return NULL;
}

/* cache_frames frames; snapshot_bytes 0: the default budget (nothing
 * dropped here). */
static void run_old_snapshots(size_t cache_frames, size_t snapshot_bytes,
			      long min_done0)
{
	ut_simdisk *d = ut_simdisk_new();
	struct shared sh;
	struct old_reader rd[2];
	pthread_t th[2];
	ut_options o;
	int keys[NKEYS + 1];
	uint32_t c = 0;
	int64_t end, cap;

	memset(&sh, 0, sizeof(sh));
	memset(rd, 0, sizeof(rd));
	ut_options_init(&o, sizeof(o));
	o.cache_bytes = cache_frames * 16384;
	o.snapshot_bytes = snapshot_bytes;
	o.sync = 0;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), "/o.db", &o, &sh.db), UT_OK);
	for (int i = 0; i <= NKEYS; i++)
		keys[i] = i;
	put_gen(sh.db, keys, NKEYS + 1, 0);

	/* reader 0 holds its snapshot over 150 gets (many commits go by),
	 * reader 1 over 6 (snapshots come and go beside it) */
	for (int i = 0; i < 2; i++) {
		rd[i].sh = &sh;
		rd[i].id = i;
		rd[i].gets = i ? 6 : 150;
		assert_int_equal(pthread_create(&th[i], NULL, old_reader_main, &rd[i]), 0);
	}
	end = now_ms() + 2000;
	cap = now_ms() + 60000; /* (sanitizer builds on a loaded machine) */
	while (!__atomic_load_n(&sh.failed, __ATOMIC_SEQ_CST) && now_ms() < cap &&
	       (now_ms() < end || __atomic_load_n(&rd[0].done, __ATOMIC_RELAXED) < min_done0 ||
		__atomic_load_n(&rd[1].done, __ATOMIC_RELAXED) < 50)) {
		int some[PER_COMMIT + 1];

		c++;
		for (int j = 0; j < PER_COMMIT; j++)
			some[j] = sched_key(c, j);
		some[PER_COMMIT] = MARK;
		put_gen(sh.db, some, PER_COMMIT + 1, c);
	}
	__atomic_store_n(&sh.stop, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	print_message("%u frames: %u commits; read transactions %ld + %ld whole, "
		      "%ld + %ld too old\n", (unsigned)cache_frames, c, rd[0].done,
		      rd[1].done, rd[0].too_old, rd[1].too_old);
	if (sh.failed)
		fail_msg("%s", sh.why);
	assert_true(rd[0].done >= min_done0);
	assert_true(rd[1].done >= 50);
	assert_int_equal(ut_close(sh.db), UT_OK);
	ut_simdisk_free(d);
}

static void test_old_snapshots_exact(void **s)
{
	(void)s;
	/* every page in the cache: the kept versions found by their links */
	run_old_snapshots(256, 0, 5);
	/* a cache smaller than the data (frames evicted and reloaded, a
	 * loaded version linked to its page's kept ones) and a budget of 8
	 * versions (dropped under old snapshots, UT_ESNAPSHOT) */
	run_old_snapshots(12, 8u * 16384, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hits_beside_eviction_and_commits),
		cmocka_unit_test(test_old_snapshots_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

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
 */
#include <pthread.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hits_beside_eviction_and_commits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/test_snapshot_hold.c - pages a read transaction's snapshot holds
 * are handed out without a pin of their own (issue 35): the interior
 * pages a snapshot read stay in its memo, pinned once until it ends, and
 * every later get of them uses that pin.
 *
 * Contract checked: with a cache of a few frames, so that nearly every
 * get of a leaf evicts a frame, a long read transaction reading every
 * key of a depth-3 tree, in an order that jumps across it, gets every
 * value right, and so does a second reader beside it whose snapshot the
 * writer moved past (its interior pages replaced, then evicted).  A memo
 * that held its pages without a pin (the planted bug
 * UT_PLANT_MEMO_NOPIN, a build flag) lets the pool evict them and reuse
 * their buffers under the snapshot: wrong values or UT_ECORRUPT.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "untorn.h"
#include "db.h"
#include "ut_simdisk.h"

#define NKEYS 6000
#define KLEN 300 /* long keys: interior pages of ~50 children, depth 3 */
#define VLEN 300

static void key_of(int i, char *k)
{
	memset(k, 'x', KLEN);
	snprintf(k, KLEN, "key%07d", i);
	k[strlen(k)] = '-';
}

static void value_of(int i, int gen, uint8_t *v)
{
	for (int j = 0; j < VLEN; j++)
		v[j] = (uint8_t)(i * 31 + j * 7 + gen * 101);
}

static void load(ut_db *db, int gen, int from, int to)
{
	char k[KLEN];
	uint8_t v[VLEN];
	ut_txn *t;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = from; i < to; i++) {
		key_of(i, k);
		value_of(i, gen, v);
		assert_int_equal(ut_put(t, k, KLEN, v, VLEN), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
}

/* Every key, jumping across the tree, as generation gen wrote it. */
static void read_all(ut_txn *t, int gen)
{
	char k[KLEN];
	uint8_t want[VLEN];

	for (int n = 0; n < NKEYS; n++) {
		int i = (int)((unsigned)n * 2909u % NKEYS);
		void *val = NULL;
		size_t vl = 0;
		int rc;

		key_of(i, k);
		value_of(i, gen, want);
		rc = ut_get(t, k, KLEN, &val, &vl);
		if (rc != UT_OK)
			fail_msg("key %d: %s (%s)", i, ut_strerror(rc), ut_errdetail());
		assert_int_equal(vl, VLEN);
		assert_memory_equal(val, want, VLEN);
		free(val);
	}
}

static void test_held_pages_survive_eviction(void **s)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_options o;
	ut_db *db = NULL;
	ut_txn *old, *t;

	(void)s;
	ut_options_init(&o, sizeof(o));
	o.cache_bytes = 12u * 16384; /* a dozen frames for ~300 pages */
	o.sync = 0;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), "/h.db", &o, &db), UT_OK);
	for (int i = 0; i < NKEYS; i += 1000)
		load(db, 0, i, i + 1000);

	/* a snapshot of generation 0, then every key rewritten: its
	 * interior pages are replaced (kept for it) */
	assert_int_equal(ut_begin(db, UT_RDONLY, &old), UT_OK);
	read_all(old, 0);
	for (int i = 0; i < NKEYS; i += 1000)
		load(db, 1, i, i + 1000);

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int round = 0; round < 3; round++) {
		read_all(t, 1);
		read_all(old, 0);
	}
	ut_abort(t);
	ut_abort(old);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held_pages_survive_eviction),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

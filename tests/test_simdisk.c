/*
 * tests/test_simdisk.c - the simulated disk keeps its model (ut_simdisk.h):
 * crash at event N, keep/drop/tear at reboot, atomic writes never mixed,
 * synced data always kept, ENOSPC writes nothing, alignment, locks, the
 * fault hook fails one operation without a power cut.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ut_io.h"
#include "ut_simdisk.h"

#define PG 16384u
#define SEC 4096u

static ut_file *xopen(ut_simdisk *d, const char *path, unsigned fl)
{
	ut_file *f = NULL;

	assert_int_equal(ut_simdisk_vfs(d)->open(ut_simdisk_vfs(d), path, fl, &f),
			 UT_OK);
	assert_non_null(f);
	return f;
}

static void *filled(size_t len, int c)
{
	void *p = ut_io_alloc(len);

	assert_non_null(p);
	memset(p, c, len);
	return p;
}

static void test_basic(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_file *f = NULL;
	char buf[100];
	uint64_t sz;

	(void)state;
	assert_int_equal(v->open(v, "a", 0, &f), UT_NOTFOUND);
	assert_int_equal(v->exists(v, "a"), 0);
	f = xopen(d, "a", UT_OPEN_CREATE);
	assert_int_equal(f->direct, 0);
	assert_int_equal(v->exists(v, "a"), 1);
	assert_int_equal(ut_file_write(f, "hello", 5, 10, 0), UT_OK);
	assert_int_equal(ut_file_size(f, &sz), UT_OK);
	assert_int_equal(sz, 15);
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(ut_file_read(f, buf, sizeof(buf), 0), 15);
	assert_memory_equal(buf, "\0\0\0\0\0\0\0\0\0\0hello", 15);
	assert_int_equal(ut_file_read(f, buf, 10, 100), 0);
	assert_int_equal(ut_file_truncate(f, 12), UT_OK);
	assert_int_equal(ut_file_read(f, buf, sizeof(buf), 0), 12);
	assert_int_equal(ut_file_truncate(f, 20), UT_OK);
	assert_int_equal(ut_file_read(f, buf, sizeof(buf), 0), 20);
	assert_memory_equal(buf + 10, "he\0\0\0\0\0\0\0\0", 10);
	assert_int_equal(ut_simdisk_pending(d, "a"), 3);
	assert_int_equal(ut_file_sync(f), UT_OK);
	assert_int_equal(ut_simdisk_pending(d, "a"), 0);
	assert_int_equal(ut_simdisk_event_count(d), 4);
	assert_int_equal(v->sync_dir(v, "a"), UT_OK);
	assert_int_equal(ut_simdisk_event_count(d), 5);
	assert_int_equal(ut_simdisk_used(d), 20);
	ut_file_close(f);
	assert_int_equal(v->remove(v, "a"), UT_OK);
	assert_int_equal(v->remove(v, "a"), UT_NOTFOUND);
	assert_int_equal(v->exists(v, "a"), 0);
	assert_int_equal(ut_simdisk_used(d), 0);
	/* read-only handles */
	f = xopen(d, "b", UT_OPEN_CREATE);
	ut_file_close(f);
	f = xopen(d, "b", UT_OPEN_RDONLY);
	assert_int_equal(ut_file_write(f, "x", 1, 0, 0), UT_EREADONLY);
	assert_int_equal(ut_file_truncate(f, 5), UT_EREADONLY);
	ut_file_close(f);
	ut_simdisk_free(d);
}

/* A crash at event N: the op is not done, returns UT_EIO "simulated power
 * loss", and everything after fails the same way until reboot. */
static void test_crash_at_event(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_file *f, *g, *h = NULL;
	void *a = filled(PG, 'A'), *b = filled(PG, 'B');
	char *buf = filled(PG, 0);
	uint64_t sz;

	(void)state;
	f = xopen(d, "data", UT_OPEN_CREATE | UT_OPEN_DIRECT);
	g = xopen(d, "log", UT_OPEN_CREATE);
	assert_int_equal(ut_file_write(f, a, PG, 0, 0), UT_OK);  /* event 0 */
	assert_int_equal(ut_file_sync(f), UT_OK);                 /* event 1 */
	ut_simdisk_crash_at(d, 3);
	assert_int_equal(ut_file_write(g, "log1", 4, 0, 0), UT_OK); /* 2 */
	assert_int_equal(ut_simdisk_crashed(d), 0);
	assert_int_equal(ut_file_write(f, b, PG, 0, 0), UT_EIO);  /* 3: cut */
	assert_non_null(strstr(ut_errdetail(), "simulated power loss"));
	assert_int_equal(ut_simdisk_crashed(d), 1);
	/* The cut write was not performed. */
	assert_int_equal(ut_simdisk_peek(d, "data", 0, buf, PG), PG);
	assert_memory_equal(buf, a, PG);
	/* Everything else fails now, on every file. */
	assert_int_equal(ut_file_sync(g), UT_EIO);
	assert_int_equal(ut_file_write(g, "x", 1, 9, 0), UT_EIO);
	assert_int_equal(ut_file_read(f, buf, PG, 0), UT_EIO);
	assert_int_equal(ut_file_size(g, &sz), UT_EIO);
	assert_int_equal(ut_file_truncate(g, 0), UT_EIO);
	assert_int_equal(v->open(v, "other", UT_OPEN_CREATE, &h), UT_EIO);
	assert_int_equal(v->exists(v, "data"), UT_EIO);
	assert_int_equal(v->remove(v, "data"), UT_EIO);
	assert_int_equal(v->sync_dir(v, "data"), UT_EIO);
	assert_non_null(strstr(ut_errdetail(), "simulated power loss"));
	assert_int_equal(ut_simdisk_event_count(d), 4);

	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL),
			 UT_OK);
	assert_int_equal(ut_simdisk_crashed(d), 0);
	/* Old handles are dead; close still works. */
	assert_int_equal(ut_file_write(f, b, PG, 0, 0), UT_EIO);
	ut_file_close(f);
	ut_file_close(g);
	/* Counter continues after reboot. */
	assert_int_equal(ut_simdisk_event_count(d), 4);
	f = xopen(d, "data", UT_OPEN_DIRECT);
	assert_int_equal(ut_file_read(f, buf, PG, 0), PG);
	assert_memory_equal(buf, a, PG);
	assert_int_equal(ut_file_write(f, b, PG, 0, 0), UT_OK);
	assert_int_equal(ut_simdisk_event_count(d), 5);
	ut_file_close(f);
	assert_int_equal(ut_simdisk_peek(d, "log", 0, buf, 10), 4);
	assert_memory_equal(buf, "log1", 4);
	free(a);
	free(b);
	free(buf);
	ut_simdisk_free(d);
}

/* Run a fixed script, crashing at event n; return the number of calls that
 * succeeded and check that every failure after the cut is UT_EIO. */
static int script(ut_simdisk *d, uint64_t n, int *failed_at)
{
	ut_file *f = xopen(d, "s", UT_OPEN_CREATE);
	int ok = 0, rc;

	ut_simdisk_crash_at(d, n);
	*failed_at = -1;
	for (int i = 0; i < 12; i++) {
		char c = (char)('a' + i);

		if (i % 3 == 2)
			rc = ut_file_sync(f);
		else if (i == 7)
			rc = ut_file_truncate(f, 3);
		else
			rc = ut_file_write(f, &c, 1, (uint64_t)i, 0);
		if (rc == UT_OK) {
			assert_int_equal(*failed_at, -1);
			ok++;
		} else {
			assert_int_equal(rc, UT_EIO);
			if (*failed_at < 0)
				*failed_at = i;
		}
	}
	ut_file_close(f);
	return ok;
}

static void test_crash_sweep(void **state)
{
	(void)state;
	for (uint64_t n = 0; n <= 12; n++) {
		ut_simdisk *d = ut_simdisk_new();
		int failed_at, ok = script(d, n, &failed_at);

		if (n < 12) {
			assert_int_equal(ok, (int)n);
			assert_int_equal(failed_at, (int)n);
			assert_true(ut_simdisk_crashed(d));
		} else {
			assert_int_equal(ok, 12);
			assert_false(ut_simdisk_crashed(d));
		}
		ut_simdisk_free(d);
	}
}

enum { ALL_OLD = 1, ALL_NEW = 2, MIXED = 4 };

/* Old page synced, new page written (not synced), reboot with seed:
 * classify the page. */
static int one_page_outcome(uint64_t seed, unsigned wflags,
			    ut_simdisk_reboot_stats *st)
{
	ut_simdisk *d = ut_simdisk_new();
	void *o = filled(PG, 0x11), *n = filled(PG, 0x22);
	unsigned char buf[PG];
	ut_file *f = xopen(d, "p", UT_OPEN_CREATE | UT_OPEN_DIRECT);
	int olds = 0, news = 0;

	assert_int_equal(ut_file_write(f, o, PG, PG, 0), UT_OK);
	assert_int_equal(ut_file_sync(f), UT_OK);
	assert_int_equal(ut_file_write(f, n, PG, PG, wflags), UT_OK);
	ut_simdisk_crash_at(d, ut_simdisk_event_count(d));
	assert_int_equal(ut_file_sync(f), UT_EIO);
	ut_file_close(f);
	assert_int_equal(ut_simdisk_reboot(d, seed), UT_OK);
	ut_simdisk_last_reboot(d, st);
	assert_int_equal(ut_simdisk_peek(d, "p", PG, buf, PG), PG);
	for (unsigned s = 0; s < PG / SEC; s++) {
		/* a sector is wholly old or wholly new */
		assert_true(memcmp(buf + s * SEC, (char *)o + s * SEC, SEC) == 0 ||
			    memcmp(buf + s * SEC, (char *)n + s * SEC, SEC) == 0);
		if (buf[s * SEC] == 0x11)
			olds++;
		else
			news++;
	}
	free(o);
	free(n);
	ut_simdisk_free(d);
	return olds && news ? MIXED : news ? ALL_NEW : ALL_OLD;
}

static void test_nonatomic_tears(void **state)
{
	int seen = 0, mixed = 0;
	ut_simdisk_reboot_stats st;

	(void)state;
	for (uint64_t seed = 0; seed < 300; seed++) {
		int o = one_page_outcome(seed, 0, &st);

		seen |= o;
		mixed += o == MIXED;
		if (o == MIXED)
			assert_int_equal(st.ops_torn, 1);
	}
	assert_int_equal(seen, ALL_OLD | ALL_NEW | MIXED);
	assert_true(mixed > 30); /* about 1/3 * 7/8 of 300 */
}

static void test_atomic_never_mixed(void **state)
{
	int seen = 0;
	ut_simdisk_reboot_stats st;

	(void)state;
	for (uint64_t seed = 0; seed < 300; seed++) {
		int o = one_page_outcome(seed, UT_WRITE_ATOMIC, &st);

		assert_int_not_equal(o, MIXED);
		assert_int_equal(st.ops_torn, 0);
		seen |= o;
	}
	assert_int_equal(seen, ALL_OLD | ALL_NEW);
}

/* Many pending writes over synced data: synced bytes nobody overwrote
 * always survive; every byte is one some write put there. */
static void test_synced_survives(void **state)
{
	(void)state;
	for (uint64_t seed = 0; seed < 200; seed++) {
		ut_simdisk *d = ut_simdisk_new();
		ut_file *f = xopen(d, "x", UT_OPEN_CREATE);
		void *base = filled(8 * SEC, 0x5a), *w = filled(3 * SEC, 0x77);
		unsigned char buf[8 * SEC];

		assert_int_equal(ut_file_write(f, base, 8 * SEC, 0, 0), UT_OK);
		assert_int_equal(ut_file_sync(f), UT_OK);
		/* pending: 3 sectors at sector 1, 2 sectors past the end */
		assert_int_equal(ut_file_write(f, w, 3 * SEC, SEC, 0), UT_OK);
		assert_int_equal(ut_file_write(f, w, 2 * SEC, 8 * SEC, 0), UT_OK);
		ut_simdisk_crash_at(d, ut_simdisk_event_count(d) + 5);
		ut_file_close(f);
		assert_int_equal(ut_simdisk_reboot(d, seed), UT_OK);
		assert_int_equal(ut_simdisk_peek(d, "x", 0, buf, 8 * SEC),
				 8 * SEC);
		assert_memory_equal(buf, base, SEC);
		assert_memory_equal(buf + 4 * SEC, base, 4 * SEC);
		for (unsigned i = SEC; i < 4 * SEC; i++)
			assert_true(buf[i] == 0x5a || buf[i] == 0x77);
		assert_int_equal(ut_simdisk_pending(d, "x"), 0);
		free(base);
		free(w);
		ut_simdisk_free(d);
	}
}

/* UT_WRITE_DSYNC: durable when it returns, whatever a reboot drops. */
static void test_dsync_write(void **state)
{
	(void)state;
	ut_simdisk *d = ut_simdisk_new();
	ut_file *f = xopen(d, "x", UT_OPEN_CREATE);
	void *w = filled(PG, 0x33);
	unsigned char buf[PG];

	assert_int_equal(ut_file_write(f, w, PG, PG, UT_WRITE_DSYNC), UT_OK);
	assert_int_equal(ut_simdisk_pending(d, "x"), 0);
	ut_file_close(f);
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_DROP_ALL), UT_OK);
	assert_int_equal(ut_simdisk_peek(d, "x", PG, buf, PG), PG);
	assert_memory_equal(buf, w, PG);
	free(w);
	ut_simdisk_free(d);
}

static void test_policies_and_truncate(void **state)
{
	int kept = 0, dropped = 0;

	(void)state;
	for (uint64_t seed = 0; seed < 64; seed++) {
		ut_simdisk *d = ut_simdisk_new();
		ut_file *f = xopen(d, "t", UT_OPEN_CREATE);
		void *p = filled(4 * SEC, 1);
		uint64_t sz;

		assert_int_equal(ut_file_write(f, p, 4 * SEC, 0, 0), UT_OK);
		assert_int_equal(ut_file_sync(f), UT_OK);
		assert_int_equal(ut_file_truncate(f, SEC), UT_OK);
		ut_file_close(f);
		assert_int_equal(ut_simdisk_reboot(d, seed), UT_OK);
		assert_int_equal(ut_simdisk_file_size(d, "t", &sz), UT_OK);
		assert_true(sz == SEC || sz == 4 * SEC);
		kept += sz == SEC;
		dropped += sz == 4 * SEC;
		assert_int_equal(ut_simdisk_used(d), sz);
		free(p);
		ut_simdisk_free(d);
	}
	assert_true(kept > 0 && dropped > 0);

	for (int pol = UT_SIMDISK_KEEP_ALL; pol <= UT_SIMDISK_TEAR_ALL; pol++) {
		ut_simdisk *d = ut_simdisk_new();
		ut_file *f = xopen(d, "t", UT_OPEN_CREATE);
		void *o = filled(PG, 'o'), *n = filled(PG, 'n');
		unsigned char buf[PG];

		assert_int_equal(ut_file_write(f, o, PG, 0, 0), UT_OK);
		assert_int_equal(ut_file_sync(f), UT_OK);
		assert_int_equal(ut_file_write(f, n, PG, 0, 0), UT_OK);
		ut_file_close(f);
		assert_int_equal(ut_simdisk_reboot_policy(d, 0, pol), UT_OK);
		assert_int_equal(ut_simdisk_peek(d, "t", 0, buf, PG), PG);
		if (pol == UT_SIMDISK_KEEP_ALL)
			assert_memory_equal(buf, n, PG);
		else if (pol == UT_SIMDISK_DROP_ALL)
			assert_memory_equal(buf, o, PG);
		else
			for (unsigned s = 0; s < 4; s++)
				assert_int_equal(buf[s * SEC], s % 2 ? 'o' : 'n');
		free(o);
		free(n);
		ut_simdisk_free(d);
	}
}

static void test_deterministic(void **state)
{
	unsigned char img[2][3][8 * SEC];
	int differ = 0;

	(void)state;
	for (int run = 0; run < 2; run++) {
		for (uint64_t seed = 0; seed < 3; seed++) {
			ut_simdisk *d = ut_simdisk_new();
			ut_file *f = xopen(d, "r", UT_OPEN_CREATE);

			for (int i = 0; i < 16; i++) {
				void *p = filled(2 * SEC, 'a' + i);
				assert_int_equal(ut_file_write(f, p, 2 * SEC,
							       (uint64_t)(i % 4) * 2 * SEC, 0),
						 UT_OK);
				free(p);
			}
			ut_file_close(f);
			assert_int_equal(ut_simdisk_reboot(d, seed * 7919), UT_OK);
			memset(img[run][seed], 0, 8 * SEC);
			ut_simdisk_peek(d, "r", 0, img[run][seed], 8 * SEC);
			ut_simdisk_free(d);
		}
	}
	for (int s = 0; s < 3; s++)
		assert_memory_equal(img[0][s], img[1][s], 8 * SEC);
	differ = memcmp(img[0][0], img[0][1], 8 * SEC) ||
		 memcmp(img[0][1], img[0][2], 8 * SEC);
	assert_true(differ);
}

static void test_enospc(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_file *f = xopen(d, "full", UT_OPEN_CREATE);
	ut_file *g = xopen(d, "other", UT_OPEN_CREATE);
	void *p = filled(PG, 'p'), *q = filled(PG, 'q');
	unsigned char buf[PG];
	uint64_t sz, ev;
	ut_iowrite w[2] = { { q, SEC, 0 }, { q, SEC, PG } };

	(void)state;
	ut_simdisk_set_capacity(d, PG + SEC);
	assert_int_equal(ut_file_write(f, p, PG, 0, 0), UT_OK);
	assert_int_equal(ut_file_write(g, p, SEC, 0, 0), UT_OK);
	ev = ut_simdisk_event_count(d);
	assert_int_equal(ut_file_write(f, q, SEC, PG, 0), UT_ENOSPC);
	assert_non_null(strstr(ut_errdetail(), "full"));
	assert_int_equal(f->last_errno, ENOSPC);
	/* Spanning write that would extend: nothing written, not even the
	 * part inside the file. */
	assert_int_equal(ut_file_write(f, q, PG, SEC, 0), UT_ENOSPC);
	assert_int_equal(ut_file_write(g, q, 2, SEC - 1, 0), UT_ENOSPC);
	assert_int_equal(ut_file_size(f, &sz), UT_OK);
	assert_int_equal(sz, PG);
	assert_int_equal(ut_simdisk_peek(d, "full", 0, buf, PG), PG);
	assert_memory_equal(buf, p, PG);
	assert_int_equal(ut_simdisk_event_count(d), ev);
	assert_int_equal(ut_simdisk_pending(d, "full"), 1);
	/* Batch: the first write fits, the second does not. */
	assert_int_equal(ut_file_write_batch(f, w, 2, 0), UT_ENOSPC);
	assert_int_equal(ut_simdisk_used(d), PG + SEC);
	/* Overwrites inside the file are fine; freeing space helps. */
	assert_int_equal(ut_file_write(f, q, SEC, SEC, 0), UT_OK);
	assert_int_equal(ut_file_truncate(g, 0), UT_OK);
	assert_int_equal(ut_file_write(f, q, SEC, PG, 0), UT_OK);
	ut_file_close(f);
	ut_file_close(g);
	free(p);
	free(q);
	ut_simdisk_free(d);
}

static void test_atomic_rules(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_file *f = xopen(d, "a", UT_OPEN_CREATE | UT_OPEN_DIRECT);
	ut_file *b = xopen(d, "b", UT_OPEN_CREATE);
	void *p = filled(128 * 1024, 'z');
	ut_atomic_info ai;
	uint64_t sz;
	ut_iowrite w[2] = { { p, PG, 0 }, { p, 3 * SEC, PG } };

	(void)state;
	assert_int_equal(f->direct, 1);
	assert_int_equal(f->ops->atomic_info(f, &ai), UT_OK);
	assert_int_equal(ai.supported, 1);
	assert_int_equal(ai.unit_min, 4096);
	assert_int_equal(ai.unit_max, 65536);
	assert_int_equal(ai.segments_max, 1);
	assert_int_equal(ai.mask_missing, 0);
	assert_true(ut_atomic_fits(&ai, PG));
	assert_false(ut_atomic_fits(&ai, 128 * 1024));
	assert_false(ut_atomic_fits(&ai, 2048));
	assert_false(ut_atomic_fits(&ai, 3 * SEC));

	assert_int_equal(ut_file_write(f, p, PG, PG, UT_WRITE_ATOMIC), UT_OK);
	assert_int_equal(ut_file_write(f, p, PG, SEC, UT_WRITE_ATOMIC), UT_EINVAL);
	assert_int_equal(ut_file_write(f, p, 3 * SEC, 0, UT_WRITE_ATOMIC), UT_EINVAL);
	assert_int_equal(ut_file_write(f, p, 128 * 1024, 0, UT_WRITE_ATOMIC),
			 UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "a: RWF_ATOMIC"));
	/* A batch with one misfit writes nothing. */
	assert_int_equal(ut_file_write_batch(f, w, 2, UT_WRITE_ATOMIC), UT_EINVAL);
	/* Buffered handle: like ext4/XFS, no atomic writes. */
	assert_int_equal(ut_file_write(b, p, PG, 0, UT_WRITE_ATOMIC), UT_ENOTSUP);
	assert_int_equal(ut_file_size(b, &sz), UT_OK);
	assert_int_equal(sz, 0);
	/* Unsupported stack. */
	ut_simdisk_set_atomic(d, 0, 0);
	assert_int_equal(f->ops->atomic_info(f, &ai), UT_OK);
	assert_int_equal(ai.supported, 0);
	assert_false(ut_atomic_fits(&ai, PG));
	assert_int_equal(ut_file_write(f, p, PG, 0, UT_WRITE_ATOMIC), UT_ENOTSUP);
	assert_int_equal(ut_simdisk_pending(d, "a"), 1);
	ut_simdisk_set_atomic(d, PG, PG);
	assert_int_equal(ut_file_write(f, p, PG, 0, UT_WRITE_ATOMIC), UT_OK);
	assert_int_equal(ut_file_write(f, p, 2 * PG, 0, UT_WRITE_ATOMIC), UT_EINVAL);
	ut_file_close(f);
	ut_file_close(b);
	free(p);
	ut_simdisk_free(d);
}

static void test_direct_alignment(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_file *f = xopen(d, "d", UT_OPEN_CREATE | UT_OPEN_DIRECT);
	ut_file *b = xopen(d, "d", 0);
	char *p = filled(3 * SEC, 'q');
	uint64_t sz, ev = ut_simdisk_event_count(d);

	(void)state;
	assert_int_equal(ut_file_write(f, p + 1, SEC, 0, 0), UT_EINVAL);
	assert_int_equal(ut_file_write(f, p, SEC - 100, 0, 0), UT_EINVAL);
	assert_int_equal(ut_file_write(f, p, SEC, 100, 0), UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "not aligned"));
	assert_int_equal(ut_file_read(f, p + 8, SEC, 0), UT_EINVAL);
	assert_int_equal(ut_file_size(f, &sz), UT_OK);
	assert_int_equal(sz, 0);
	assert_int_equal(ut_simdisk_event_count(d), ev);
	assert_int_equal(f->dio_align, 512);
	assert_int_equal(ut_file_write(f, p, 2 * SEC, SEC, 0), UT_OK);
	assert_int_equal(ut_file_read(f, p, SEC, SEC), SEC);
	/* 512-byte blocks, like a 512e drive */
	assert_int_equal(ut_file_write(f, p, 512, SEC + 512, 0), UT_OK);
	assert_int_equal(ut_file_read(f, p, 1024, 3 * SEC - 1024), 1024);
	/* The buffered handle on the same file takes anything. */
	assert_int_equal(ut_file_write(b, p + 1, 7, 3, 0), UT_OK);
	ut_file_close(f);
	ut_file_close(b);
	free(p);
	ut_simdisk_free(d);
}

static void test_locks(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_file *f, *g = NULL, *h;

	(void)state;
	f = xopen(d, "db", UT_OPEN_CREATE | UT_OPEN_LOCK);
	assert_int_equal(v->open(v, "db", UT_OPEN_LOCK, &g), UT_ELOCKED);
	assert_null(g);
	h = xopen(d, "db", 0); /* unlocked opens are fine */
	ut_file_close(h);
	ut_file_close(f);
	f = xopen(d, "db", UT_OPEN_LOCK);
	/* A power cut ends the process that held the lock. */
	assert_int_equal(ut_simdisk_reboot(d, 0), UT_OK);
	g = xopen(d, "db", UT_OPEN_LOCK);
	ut_file_close(f); /* stale handle: must not release g's lock */
	assert_int_equal(v->open(v, "db", UT_OPEN_LOCK, &h), UT_ELOCKED);
	ut_file_close(g);
	ut_simdisk_free(d);
}

static void test_unlink_open(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_file *f = xopen(d, "u", UT_OPEN_CREATE), *g;
	char c = 'c', buf[4];

	(void)state;
	assert_int_equal(ut_file_write(f, "abcd", 4, 0, 0), UT_OK);
	assert_int_equal(v->remove(v, "u"), UT_OK);
	assert_int_equal(v->exists(v, "u"), 0);
	assert_int_equal(ut_file_write(f, &c, 1, 4, 0), UT_OK);
	assert_int_equal(ut_file_read(f, buf, 4, 0), 4);
	assert_int_equal(ut_simdisk_used(d), 5);
	g = xopen(d, "u", UT_OPEN_CREATE); /* a new, empty file */
	assert_int_equal(ut_file_read(g, buf, 4, 0), 0);
	ut_file_close(g);
	assert_int_equal(ut_simdisk_reboot(d, 3), UT_OK);
	assert_int_equal(ut_simdisk_used(d), 0);
	ut_file_close(f);
	assert_int_equal(ut_simdisk_used(d), 0);
	ut_simdisk_free(d);
}

static void test_batch_crash_midway(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_file *f = xopen(d, "b", UT_OPEN_CREATE | UT_OPEN_DIRECT);
	void *p[4];
	ut_iowrite w[4];
	unsigned char buf[4 * PG];

	(void)state;
	for (int i = 0; i < 4; i++) {
		p[i] = filled(PG, '0' + i);
		w[i] = (ut_iowrite){ p[i], PG, (uint64_t)i * PG };
	}
	ut_simdisk_crash_at(d, 2);
	assert_int_equal(ut_file_write_batch(f, w, 4, UT_WRITE_ATOMIC), UT_EIO);
	assert_int_equal(ut_simdisk_pending(d, "b"), 2);
	assert_int_equal(ut_simdisk_peek(d, "b", 0, buf, sizeof(buf)), 2 * PG);
	ut_file_close(f);
	assert_int_equal(ut_simdisk_reboot_policy(d, 0, UT_SIMDISK_KEEP_ALL), UT_OK);
	assert_int_equal(ut_simdisk_peek(d, "b", 0, buf, sizeof(buf)), 2 * PG);
	assert_memory_equal(buf, p[0], PG);
	assert_memory_equal(buf + PG, p[1], PG);
	for (int i = 0; i < 4; i++)
		free(p[i]);
	ut_simdisk_free(d);
}

static void test_peek_poke_corrupt(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_file *f = xopen(d, "c", UT_OPEN_CREATE);
	unsigned char buf[8];

	(void)state;
	assert_int_equal(ut_file_write(f, "abcdefgh", 8, 0, 0), UT_OK);
	assert_int_equal(ut_simdisk_peek_durable(d, "c", 0, buf, 8), 0);
	assert_int_equal(ut_file_sync(f), UT_OK);
	assert_int_equal(ut_simdisk_peek_durable(d, "c", 0, buf, 8), 8);
	assert_int_equal(ut_simdisk_poke(d, "c", 2, "XY", 2), UT_OK);
	assert_int_equal(ut_simdisk_corrupt(d, "c", 7, 5), UT_OK);
	assert_int_equal(ut_file_read(f, buf, 8, 0), 8);
	assert_memory_equal(buf, "abXYefg", 7);
	assert_int_equal(buf[7], (unsigned char)('h' ^ 0xff));
	assert_int_equal(ut_simdisk_reboot(d, 9), UT_OK);
	assert_int_equal(ut_simdisk_peek(d, "c", 0, buf, 8), 8);
	assert_memory_equal(buf, "abXYefg", 7);
	assert_int_equal(ut_simdisk_peek(d, "nope", 0, buf, 8), UT_NOTFOUND);
	assert_int_equal(ut_simdisk_poke(d, "nope", 0, buf, 8), UT_NOTFOUND);
	ut_file_close(f);
	ut_simdisk_free(d);
}

struct faults {
	int seen[4];
	enum ut_simdisk_op fail_op;
	const char *fail_path;
};

static int fault_fn(void *ctx, enum ut_simdisk_op op, const char *path)
{
	struct faults *fc = ctx;

	fc->seen[op]++;
	return op == fc->fail_op && !strcmp(path, fc->fail_path) ? UT_EIO : 0;
}

static void test_fault_hook(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_file *f = xopen(d, "f", UT_OPEN_CREATE), *g = xopen(d, "g", UT_OPEN_CREATE);
	struct faults fc = { { 0 }, UT_SIMDISK_OP_SYNC, "f" };
	unsigned char buf[4];
	uint64_t ev;

	(void)state;
	ut_simdisk_set_fault_hook(d, fault_fn, &fc);
	assert_int_equal(ut_file_write(f, "abcd", 4, 0, 0), UT_OK);
	ev = ut_simdisk_event_count(d);
	/* the sync of f fails, changes nothing and is no event */
	assert_int_equal(ut_file_sync(f), UT_EIO);
	assert_int_equal(ut_simdisk_event_count(d), ev);
	assert_int_equal(ut_simdisk_peek_durable(d, "f", 0, buf, 4), 0);
	assert_int_equal(ut_simdisk_pending(d, "f"), 1);
	/* no power cut: other files and operations go on */
	assert_false(ut_simdisk_crashed(d));
	assert_int_equal(ut_file_write(g, "wxyz", 4, 0, 0), UT_OK);
	assert_int_equal(ut_file_sync(g), UT_OK);
	assert_int_equal(ut_file_truncate(f, 2), UT_OK);
	fc.fail_op = UT_SIMDISK_OP_WRITE;
	assert_int_equal(ut_file_write(f, "zz", 2, 0, 0), UT_EIO);
	assert_int_equal(ut_simdisk_peek(d, "f", 0, buf, 4), 2);
	assert_memory_equal(buf, "ab", 2);
	assert_int_equal(fc.seen[UT_SIMDISK_OP_SYNC], 2);
	assert_int_equal(fc.seen[UT_SIMDISK_OP_WRITE], 3);
	assert_int_equal(fc.seen[UT_SIMDISK_OP_TRUNCATE], 1);
	ut_simdisk_set_fault_hook(d, NULL, NULL);
	assert_int_equal(ut_file_sync(f), UT_OK);
	ut_file_close(f);
	ut_file_close(g);
	ut_simdisk_free(d);
}

struct thr {
	ut_simdisk *d;
	int id;
	int eio;
};

static void *writer(void *arg)
{
	struct thr *t = arg;
	char name[16];
	ut_file *f = NULL;
	void *p = filled(SEC, 'a' + t->id);

	snprintf(name, sizeof(name), "t%d", t->id);
	if (ut_simdisk_vfs(t->d)->open(ut_simdisk_vfs(t->d), name,
				       UT_OPEN_CREATE | UT_OPEN_DIRECT, &f)) {
		t->eio = 1;
		free(p);
		return NULL;
	}
	for (int i = 0; i < 200; i++) {
		int rc = ut_file_write(f, p, SEC, (uint64_t)(i % 8) * SEC,
				       i % 2 ? UT_WRITE_ATOMIC : 0);
		if (rc == UT_OK)
			rc = ut_file_sync(f);
		if (rc) {
			if (rc == UT_EIO)
				t->eio++;
		} else if (t->eio) {
			t->eio = -1000; /* success after a power cut: bug */
		}
	}
	ut_file_close(f);
	free(p);
	return NULL;
}

static void test_threads(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	pthread_t th[4];
	struct thr t[4];

	(void)state;
	ut_simdisk_crash_at(d, 900);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct thr){ d, i, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, writer, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_true(t[i].eio >= 0);
	}
	assert_true(ut_simdisk_crashed(d));
	assert_int_equal(ut_simdisk_event_count(d), 901);
	assert_int_equal(ut_simdisk_reboot(d, 5), UT_OK);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_dsync_write),
		cmocka_unit_test(test_crash_at_event),
		cmocka_unit_test(test_crash_sweep),
		cmocka_unit_test(test_nonatomic_tears),
		cmocka_unit_test(test_atomic_never_mixed),
		cmocka_unit_test(test_synced_survives),
		cmocka_unit_test(test_policies_and_truncate),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_enospc),
		cmocka_unit_test(test_atomic_rules),
		cmocka_unit_test(test_direct_alignment),
		cmocka_unit_test(test_locks),
		cmocka_unit_test(test_unlink_open),
		cmocka_unit_test(test_batch_crash_midway),
		cmocka_unit_test(test_peek_poke_corrupt),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_fault_hook),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

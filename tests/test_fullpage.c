/*
 * tests/test_fullpage.c - protection mode fullpage (page images in the
 * log, include/untorn.h "Full-page images"), one case at a time on the
 * simulated disk: a torn page repaired from its image, a torn page
 * without one (the planted bug) refused with a detail saying so, the
 * log's IMAGE record crafted (wrong page number, wrong size, lying
 * contents, an image of the header page), an image as the only evidence
 * of a commit past a damaged record, the log's format marking, and a
 * transaction of images too big for the log's buffer, a snapshot and a
 * backup beside fullpage commits.
 * (Every crash point with random tears: test_crash's fullpage sweep.)
 *
 * The base: keys committed and checkpointed, then commits that change
 * pages for the first time since the checkpoint (so each logs images),
 * then the power cut with the log durable and the pages written since
 * the checkpoint in place (a small cache evicts them).
 */
#include <pthread.h>
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
#include "page.h"
#include "pager.h"
#include "ut_crc32c.h"
#include "ut_simdisk.h"
#include "wal.h"

#define DB "/fp.db"
#define WAL DB "-wal"
#define NKEYS 600
#define REC_DELTA 1u
#define REC_COMMIT 2u
#define REC_IMAGE 3u

static uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static ut_options opts(int protect)
{
	ut_options o;

	ut_options_default(&o);
	o.protect = protect;
	o.cache_bytes = 12 * UT_PAGE_SIZE; /* evictions write pages in place */
	o.flush_inline = 1;
	o.sync = 1;
	return o;
}

static void val_of(char *v, size_t n, int i, int gen)
{
	memset(v, 'a' + (i * 7 + gen) % 26, n);
}

static void commit_range(ut_db *db, int from, int to, int gen, int per)
{
	char k[16], v[300];
	ut_txn *t;

	for (int i = from; i < to;) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int j = 0; j < per && i < to; j++, i++) {
			snprintf(k, sizeof(k), "key%05d", i);
			val_of(v, sizeof(v), i, gen);
			assert_int_equal(ut_put(t, k, strlen(k), v, sizeof(v)), UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
	}
}

/* Generation 0 for every key, checkpointed; then generation 1 for every
 * key, 20 keys a commit (each first change of a page since the
 * checkpoint is an image; sabotage: none is); then the power cut,
 * everything acknowledged durable in the log.  Returns the disk. */
static ut_simdisk *base_mode(int protect, int sabotage)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_options o = opts(protect);
	ut_db *db;
	ut_stats st;
	uint64_t images;

	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
	commit_range(db, 0, NKEYS, 0, 50);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	images = st.page_images;
	ut_pager_sabotage_images = sabotage;
	for (int i = 0; i < NKEYS; i += 60)
		commit_range(db, i, i + 60 < NKEYS ? i + 60 : NKEYS, 1, 20);
	ut_pager_sabotage_images = 0;
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.protect, protect);
	if (sabotage || protect != UT_PROTECT_FULLPAGE)
		assert_int_equal(st.page_images, images);
	else
		assert_true(st.page_images > images);
	assert_true(st.page_writes > 0);
	/* the power goes now: no close, no checkpoint */
	ut_simdisk_crash_at(d, ut_simdisk_event_count(d));
	(void)ut_close(db);
	assert_int_equal(ut_simdisk_reboot_policy(d, 1, UT_SIMDISK_KEEP_ALL), UT_OK);
	return d;
}

static ut_simdisk *base(int sabotage)
{
	return base_mode(UT_PROTECT_FULLPAGE, sabotage);
}

/* Every key with the value of its last committed generation. */
static void check_contents(ut_db *db)
{
	char k[16], v[300];
	ut_txn *t;

	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int i = 0; i < NKEYS; i++) {
		void *got;
		size_t n;

		snprintf(k, sizeof(k), "key%05d", i);
		val_of(v, sizeof(v), i, 1);
		assert_int_equal(ut_get(t, k, strlen(k), &got, &n), UT_OK);
		assert_int_equal(n, sizeof(v));
		assert_memory_equal(got, v, n);
		free(got);
	}
	ut_abort(t);
}

/* The log's records, in file order, of the epoch the first one has. */
struct rec {
	uint64_t off, lsn;
	uint32_t len, type, pgno; /* pgno: IMAGE only */
};

static size_t log_records(ut_simdisk *d, struct rec *r, size_t cap)
{
	uint64_t size, salt = 0;
	size_t n = 0;
	uint8_t h[48];

	assert_int_equal(ut_simdisk_file_size(d, WAL, &size), UT_OK);
	for (uint64_t off = UT_WAL_DATA_OFF; off + UT_WAL_REC_HDR <= size && n < cap;) {
		assert_int_equal(ut_simdisk_peek(d, WAL, off, h, sizeof(h)),
				 (int64_t)sizeof(h));
		uint32_t len = ld32(h + 8), type = h[4];

		if (type < REC_DELTA || type > REC_IMAGE || len < UT_WAL_REC_HDR ||
		    len > UT_WAL_MAX_REC || (n && ld64(h + 24) != salt))
			break;
		salt = ld64(h + 24);
		r[n] = (struct rec){ off, ld64(h + 16), len, type,
				     type == REC_IMAGE ? ld32(h + 40) : 0 };
		n++;
		off += pad8(len);
	}
	return n;
}

/* Apply fn to the record's bytes, then seal its CRC again, as a
 * hand-edited file would. */
static void reseal(ut_simdisk *d, const struct rec *r, uint32_t new_len)
{
	size_t plen = pad8(new_len > r->len ? new_len : r->len);
	uint8_t *b = malloc(plen);

	assert_non_null(b);
	assert_int_equal(ut_simdisk_peek(d, WAL, r->off, b, plen), (int64_t)plen);
	st32(b + 8, new_len);
	plen = pad8(new_len);
	st32(b, ut_crc32c(0, b + 4, plen - 4));
	assert_int_equal(ut_simdisk_poke(d, WAL, r->off, b, plen), UT_OK);
	free(b);
}

static const struct rec *first_image(const struct rec *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].type == REC_IMAGE)
			return &r[i];
	fail_msg("no IMAGE record in the log");
	return NULL;
}

static int open_db(ut_simdisk *d, ut_db **db)
{
	ut_options o = opts(UT_PROTECT_FULLPAGE);

	return ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, db);
}

static void expect_refusal(ut_simdisk *d, const char *what)
{
	ut_db *db = NULL;
	int rc = open_db(d, &db);

	if (rc != UT_ECORRUPT || !strstr(ut_errdetail(), what))
		fail_msg("expected UT_ECORRUPT with '%s', got %s: %s", what,
			 ut_strerror(rc), ut_errdetail());
	printf("  refused: %s\n", ut_errdetail());
}

/* Recovery replays the images and deltas; nothing torn, nothing to repair. */
static void test_replay(void **s)
{
	ut_simdisk *d = base(0);
	struct rec r[4096];
	size_t n = log_records(d, r, 4096);
	ut_db *db;
	ut_stats st;
	uint8_t h[12], h1[12];

	(void)s;
	(void)first_image(r, n);
	/* the log says format 2: builds without images refuse it */
	assert_int_equal(ut_simdisk_peek(d, WAL, 0, h, 12), 12);
	assert_int_equal(ut_simdisk_peek(d, WAL, 4096, h1, 12), 12);
	assert_true(ld32(h + 8) == 2 || ld32(h1 + 8) == 2);
	assert_int_equal(open_db(d, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.torn_repaired, 0);
	check_contents(db);
	assert_int_equal(ut_check(db, NULL, NULL), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* Tear each page that has an image in the log: a 4 KiB sector of it
 * flipped in the data file.  Recovery rebuilds it from the image. */
static void test_torn_page_repaired(void **s)
{
	ut_simdisk *d = base(0);
	struct rec r[4096];
	size_t n = log_records(d, r, 4096), torn = 0;
	ut_db *db;
	ut_stats st;
	uint64_t size;

	(void)s;
	assert_int_equal(ut_simdisk_file_size(d, DB, &size), UT_OK);
	for (size_t i = 0; i < n; i++) {
		uint64_t off = (uint64_t)r[i].pgno * UT_PAGE_SIZE + 4096;

		if (r[i].type != REC_IMAGE || off + 4096 > size)
			continue;
		assert_int_equal(ut_simdisk_corrupt(d, DB, off, 4096), UT_OK);
		torn++;
	}
	assert_true(torn > 0);
	assert_int_equal(open_db(d, &db), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	printf("  %zu pages torn, %llu repaired from images\n", torn,
	       (unsigned long long)st.torn_repaired);
	assert_true(st.torn_repaired >= 1);
	assert_int_equal(st.corrupt_pages, 0);
	check_contents(db);
	assert_int_equal(ut_check(db, NULL, NULL), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* The planted bug: no images logged.  A page written in place since the
 * checkpoint and torn cannot be rebuilt, and recovery says why. */
static void test_torn_page_without_image(void **s)
{
	ut_simdisk *d = base(1);
	struct rec r[4096];
	size_t n = log_records(d, r, 4096);
	uint64_t size;
	uint32_t pgno = 0;

	(void)s;
	assert_int_equal(ut_simdisk_file_size(d, DB, &size), UT_OK);
	/* a page the first delta after the checkpoint changes */
	for (size_t i = 0; i < n && !pgno; i++) {
		uint8_t e[4];

		if (r[i].type != REC_DELTA)
			continue;
		assert_int_equal(ut_simdisk_peek(d, WAL, r[i].off + UT_WAL_REC_HDR,
						 e, 4), 4);
		if (ld32(e) && (uint64_t)(ld32(e) + 1) * UT_PAGE_SIZE <= size)
			pgno = ld32(e);
	}
	assert_true(pgno > 0);
	assert_int_equal(ut_simdisk_corrupt(d, DB,
					    (uint64_t)pgno * UT_PAGE_SIZE + 8192,
					    4096), UT_OK);
	expect_refusal(d, "no image of it since the redo start");
	ut_simdisk_free(d);
}

/* An IMAGE record whose page number is not the page it holds. */
static void test_image_wrong_page(void **s)
{
	ut_simdisk *d = base(0);
	struct rec r[4096];
	size_t n = log_records(d, r, 4096);
	const struct rec *im = first_image(r, n);
	uint8_t b[4];

	(void)s;
	st32(b, im->pgno + 1);
	assert_int_equal(ut_simdisk_poke(d, WAL, im->off + UT_WAL_REC_HDR, b, 4),
			 UT_OK);
	reseal(d, im, im->len);
	expect_refusal(d, "holds page");
	ut_simdisk_free(d);
}

/* An IMAGE record naming page 0, its image claiming page 0 too. */
static void test_image_of_header(void **s)
{
	ut_simdisk *d = base(0);
	struct rec r[4096];
	size_t n = log_records(d, r, 4096);
	const struct rec *im = first_image(r, n);
	uint8_t b[4] = { 0 };

	(void)s;
	assert_int_equal(ut_simdisk_poke(d, WAL, im->off + UT_WAL_REC_HDR, b, 4),
			 UT_OK);
	assert_int_equal(ut_simdisk_poke(d, WAL, im->off + UT_WAL_REC_HDR + 8 + 16,
					 b, 4), UT_OK);
	reseal(d, im, im->len);
	expect_refusal(d, "header page");
	ut_simdisk_free(d);
}

/* An IMAGE record of another size: not a record, with valid ones after
 * it, so a damaged log, not a tail to cut. */
static void test_image_wrong_size(void **s)
{
	ut_simdisk *d = base(0);
	struct rec r[4096];
	size_t n = log_records(d, r, 4096);
	const struct rec *im = first_image(r, n);

	(void)s;
	reseal(d, im, im->len - 8);
	expect_refusal(d, "is damaged, but valid records of this log follow");
	ut_simdisk_free(d);
}

/* An IMAGE record whose checksum passes but whose page lies: its slot
 * count far beyond what the page can hold. */
static void test_image_lying_contents(void **s)
{
	ut_simdisk *d = base(0);
	struct rec r[4096];
	size_t n = log_records(d, r, 4096);
	const struct rec *im = first_image(r, n);
	uint8_t b[2] = { 0xff, 0x7f };

	(void)s;
	/* the page's nslots (bytes 6..7 of the page) */
	assert_int_equal(ut_simdisk_poke(d, WAL, im->off + UT_WAL_REC_HDR + 8 + 6,
					 b, 2), UT_OK);
	reseal(d, im, im->len);
	expect_refusal(d, "the page image a log record holds");
	ut_simdisk_free(d);
}

static void zero_wal(ut_simdisk *d, uint64_t from, uint64_t to)
{
	uint8_t *zeros;

	if (to <= from)
		return;
	zeros = calloc(1, to - from);
	assert_non_null(zeros);
	assert_int_equal(ut_simdisk_poke(d, WAL, from, zeros, to - from), UT_OK);
	free(zeros);
}

/* Damage the COMMIT of the transaction before one that logged an image,
 * and leave that image the only valid record after it (the records
 * between zeroed, everything after it cut to zeros): the image alone
 * shows the damaged commit was durable (it was appended after that commit
 * was synced), so recovery refuses rather than cut the log there and
 * lose it. */
static void test_image_is_evidence(void **s)
{
	ut_simdisk *d = base(0);
	struct rec r[4096];
	size_t n = log_records(d, r, 4096), im = n, commit = n;
	uint64_t size;

	(void)s;
	for (size_t i = 0; i < n; i++)
		if (r[i].type == REC_IMAGE)
			im = i;
	assert_true(im < n);
	for (size_t i = 0; i < im; i++)
		if (r[i].type == REC_COMMIT)
			commit = i;
	assert_true(commit < im);
	assert_int_equal(ut_simdisk_corrupt(d, WAL, r[commit].off + UT_WAL_REC_HDR,
					    1), UT_OK);
	zero_wal(d, r[commit + 1].off, r[im].off);
	assert_int_equal(ut_simdisk_file_size(d, WAL, &size), UT_OK);
	zero_wal(d, r[im].off + pad8(r[im].len), size);
	expect_refusal(d, "is damaged, but valid records of this log follow");
	ut_simdisk_free(d);
}

/* A database whose log is format 1 (doublewrite) opened in fullpage mode:
 * the log is marked format 2 before the first image goes in. */
static void test_log_format_upgrade(void **s)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_options o = opts(UT_PROTECT_DOUBLEWRITE);
	ut_db *db;
	uint8_t h0[12], h1[12];

	(void)s;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
	commit_range(db, 0, 100, 0, 50);
	assert_int_equal(ut_simdisk_peek(d, WAL, 0, h0, 12), 12);
	assert_int_equal(ut_simdisk_peek(d, WAL, 4096, h1, 12), 12);
	assert_int_equal(ld32(h0 + 8) | ld32(h1 + 8), 1);
	assert_int_equal(ut_close(db), UT_OK);
	o.protect = UT_PROTECT_FULLPAGE;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
	commit_range(db, 0, 100, 1, 50);
	assert_int_equal(ut_simdisk_peek(d, WAL, 0, h0, 12), 12);
	assert_int_equal(ut_simdisk_peek(d, WAL, 4096, h1, 12), 12);
	assert_true(ld32(h0 + 8) == 2 || ld32(h1 + 8) == 2);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* One transaction of more than the log's 8 MiB append buffer, all of it
 * page images (every page new): its records stream out before its COMMIT
 * and recovery reads them again from the file (wal.h).  The power goes
 * after the commit returned. */
static void test_big_txn_images(void **s)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_options o = opts(UT_PROTECT_FULLPAGE);
	static char v[4000];
	char k[16];
	ut_db *db;
	ut_txn *t;
	ut_stats st;

	(void)s;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = 0; i < 3000; i++) {
		snprintf(k, sizeof(k), "big%05d", i);
		memset(v, 'A' + i % 26, sizeof(v));
		assert_int_equal(ut_put(t, k, strlen(k), v, sizeof(v)), UT_OK);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	printf("  %llu page images, %llu log bytes\n",
	       (unsigned long long)st.page_images, (unsigned long long)st.log_bytes);
	assert_true(st.page_images * UT_PAGE_SIZE > (8u << 20));
	ut_simdisk_crash_at(d, ut_simdisk_event_count(d));
	(void)ut_close(db);
	assert_int_equal(ut_simdisk_reboot_policy(d, 3, UT_SIMDISK_RANDOM), UT_OK);
	assert_int_equal(open_db(d, &db), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	for (int i = 0; i < 3000; i += 7) {
		void *got;
		size_t n;

		snprintf(k, sizeof(k), "big%05d", i);
		memset(v, 'A' + i % 26, sizeof(v));
		assert_int_equal(ut_get(t, k, strlen(k), &got, &n), UT_OK);
		assert_int_equal(n, sizeof(v));
		assert_memory_equal(got, v, n);
		free(got);
	}
	ut_abort(t);
	assert_int_equal(ut_check(db, NULL, NULL), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

/* A read transaction keeps its snapshot across commits and a checkpoint
 * in fullpage mode, and a backup taken meanwhile opens as a complete
 * database (in fullpage mode too). */
static void test_snapshot_and_backup(void **s)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_options o = opts(UT_PROTECT_FULLPAGE);
	char k[16], v[300];
	ut_db *db, *copy;
	ut_txn *r, *t;
	void *got;
	size_t n;

	(void)s;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
	commit_range(db, 0, NKEYS, 0, 50);
	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	commit_range(db, 0, NKEYS, 1, 50);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	assert_int_equal(ut_backup(db, "/fp-copy.db"), UT_OK);
	for (int i = 0; i < NKEYS; i += 13) {
		snprintf(k, sizeof(k), "key%05d", i);
		val_of(v, sizeof(v), i, 0);
		assert_int_equal(ut_get(r, k, strlen(k), &got, &n), UT_OK);
		assert_memory_equal(got, v, sizeof(v));
		free(got);
	}
	ut_abort(r);
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), "/fp-copy.db", &o, &copy),
			 UT_OK);
	assert_int_equal(ut_begin(copy, UT_RDONLY, &t), UT_OK);
	for (int i = 0; i < NKEYS; i += 13) {
		snprintf(k, sizeof(k), "key%05d", i);
		val_of(v, sizeof(v), i, 1);
		assert_int_equal(ut_get(t, k, strlen(k), &got, &n), UT_OK);
		assert_memory_equal(got, v, sizeof(v));
		free(got);
	}
	ut_abort(t);
	assert_int_equal(ut_check(copy, NULL, NULL), UT_OK);
	assert_int_equal(ut_close(copy), UT_OK);
	ut_simdisk_free(d);
}

/* A database that crashed in doublewrite mode (its log since the
 * checkpoint has deltas, no images) opened in fullpage mode: recovery
 * writes the pages it rebuilt (evictions, its checkpoint), and the power
 * goes during those writes, tearing them; the next open must still
 * recover every commit.  Every I/O event of the recovery. */
static void test_mode_switch_recovery(void **s)
{
	uint64_t k, points = 0;

	(void)s;
	for (k = 1;; k++) {
		ut_simdisk *d = base_mode(UT_PROTECT_DOUBLEWRITE, 0);
		ut_db *db;
		int rc;

		ut_simdisk_crash_at(d, ut_simdisk_event_count(d) + k);
		rc = open_db(d, &db);
		if (rc == UT_OK) { /* recovery ended before event k */
			ut_stats st;

			ut_simdisk_crash_at(d, UT_SIMDISK_NEVER);
			check_contents(db);
			/* fullpage from here on: commits log images */
			commit_range(db, 0, 20, 1, 20);
			assert_int_equal(ut_stats_get(db, &st), UT_OK);
			assert_int_equal(st.protect, UT_PROTECT_FULLPAGE);
			assert_true(st.page_images > 0);
			assert_int_equal(ut_close(db), UT_OK);
			ut_simdisk_free(d);
			break;
		}
		assert_true(ut_simdisk_crashed(d));
		assert_int_equal(ut_simdisk_reboot_policy(d, k, k % 2 ? UT_SIMDISK_TEAR_ALL
							     : UT_SIMDISK_RANDOM), UT_OK);
		rc = open_db(d, &db);
		if (rc != UT_OK)
			fail_msg("crash at recovery event %llu, then open: %s: %s",
				 (unsigned long long)k, ut_strerror(rc), ut_errdetail());
		check_contents(db);
		assert_int_equal(ut_check(db, NULL, NULL), UT_OK);
		assert_int_equal(ut_close(db), UT_OK);
		ut_simdisk_free(d);
		points++;
	}
	printf("  %llu crash points in the recovery\n", (unsigned long long)points);
	assert_true(points > 20);
}

/* Threads: writers committing (each first change of a page since a
 * checkpoint an image) while the cleaner thread writes pages and runs
 * checkpoints every 64 KiB of log, readers beside them; then a clean
 * reopen holds every commit.  (Under ThreadSanitizer, the image decision
 * against the checkpoint requests.) */
struct thr {
	ut_db *db;
	int id, writer;
};

static void *thr_main(void *arg)
{
	struct thr *a = arg;
	char k[16], v[300];

	for (int i = 0; i < 60; i++) {
		ut_txn *t;
		void *got;
		size_t n;

		if (a->writer) {
			assert_int_equal(ut_begin(a->db, 0, &t), UT_OK);
			for (int j = 0; j < 5; j++) {
				int key = (a->id * 997 + i * 5 + j) % NKEYS;

				snprintf(k, sizeof(k), "key%05d", key);
				val_of(v, sizeof(v), key, 1);
				assert_int_equal(ut_put(t, k, strlen(k), v, sizeof(v)),
						 UT_OK);
			}
			assert_int_equal(ut_commit(t), UT_OK);
		} else {
			assert_int_equal(ut_begin(a->db, UT_RDONLY, &t), UT_OK);
			snprintf(k, sizeof(k), "key%05d", (a->id * 31 + i) % NKEYS);
			assert_int_equal(ut_get(t, k, strlen(k), &got, &n), UT_OK);
			free(got);
			ut_abort(t);
		}
	}
	return NULL;
}

static void test_threads_cleaner(void **s)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_options o = opts(UT_PROTECT_FULLPAGE);
	pthread_t th[6];
	struct thr a[6];
	ut_db *db;
	ut_stats st;

	(void)s;
	o.flush_inline = 0;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
	commit_range(db, 0, NKEYS, 1, 50);
	ut_db_set_checkpoint_bytes(db, 64 << 10);
	for (int i = 0; i < 6; i++) {
		a[i] = (struct thr){ db, i, i < 4 };
		assert_int_equal(pthread_create(&th[i], NULL, thr_main, &a[i]), 0);
	}
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	printf("  %llu page images, %llu checkpoints\n",
	       (unsigned long long)st.page_images,
	       (unsigned long long)st.checkpoints);
	assert_true(st.checkpoints > 1);
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(open_db(d, &db), UT_OK);
	check_contents(db);
	assert_int_equal(ut_check(db, NULL, NULL), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_torn_page_repaired),
		cmocka_unit_test(test_torn_page_without_image),
		cmocka_unit_test(test_image_wrong_page),
		cmocka_unit_test(test_image_of_header),
		cmocka_unit_test(test_image_wrong_size),
		cmocka_unit_test(test_image_lying_contents),
		cmocka_unit_test(test_image_is_evidence),
		cmocka_unit_test(test_log_format_upgrade),
		cmocka_unit_test(test_big_txn_images),
		cmocka_unit_test(test_snapshot_and_backup),
		cmocka_unit_test(test_mode_switch_recovery),
		cmocka_unit_test(test_threads_cleaner),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/test_snapshot.c - snapshot reads: a read transaction sees the
 * database as of its ut_begin for its whole life, never waits for the
 * writer, and the writer never waits for it.
 *
 * The differential test runs one writer (random puts, deletes, values big
 * enough for overflow chains, aborts, splits and merges over a cache far
 * smaller than the data, so pages are evicted, reloaded and reused, and
 * checkpoints) beside reader threads that each hold a snapshot for a
 * random time and check every get and a full scan against an oracle of
 * the committed state at their snapshot.  Each commit writes its sequence
 * number under SEQ_KEY, so a reader learns which committed state it holds;
 * values are a function of (key, sequence), so the oracle keeps only which
 * sequence wrote each key, or deleted it.
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
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "helper_fs.h"
#include "untorn.h"

#define NKEYS 400
#define SEQ_KEY "~seq"
#define MAX_HIST 4096 /* oracle entries per key */

/* ---- the oracle ------------------------------------------------------ */

struct entry {
	uint32_t seq;
	uint32_t len; /* UINT32_MAX: deleted */
};

static struct {
	pthread_mutex_t mu;
	struct entry hist[NKEYS][MAX_HIST];
	unsigned n[NKEYS];
} oracle = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void key_of(char *k, int i)
{
	snprintf(k, 16, "k%05d", i);
}

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	return x ^ (x >> 16);
}

/* Mostly small values, some past one page (overflow chains). */
static uint32_t len_of(int key, uint32_t seq)
{
	uint32_t h = mix((uint32_t)key * 2654435761u ^ seq);

	return h % 16 == 0 ? 17000 + h % 40000 : h % 300;
}

static void fill(uint8_t *v, uint32_t len, int key, uint32_t seq)
{
	for (uint32_t i = 0; i < len; i++)
		v[i] = (uint8_t)mix(seq * 131u + (uint32_t)key * 7u + i / 64) ^ (uint8_t)i;
}

/* Length of key i at sequence seq, UINT32_MAX when absent. */
static uint32_t oracle_len(int i, uint32_t seq, uint32_t *wseq)
{
	uint32_t len = UINT32_MAX;

	pthread_mutex_lock(&oracle.mu);
	for (unsigned j = oracle.n[i]; j-- > 0;) {
		if (oracle.hist[i][j].seq <= seq) {
			len = oracle.hist[i][j].len;
			*wseq = oracle.hist[i][j].seq;
			break;
		}
	}
	pthread_mutex_unlock(&oracle.mu);
	return len;
}

static void oracle_add(int i, uint32_t seq, uint32_t len)
{
	pthread_mutex_lock(&oracle.mu);
	assert_true(oracle.n[i] < MAX_HIST);
	oracle.hist[i][oracle.n[i]++] = (struct entry){ seq, len };
	pthread_mutex_unlock(&oracle.mu);
}

static void oracle_reset(void)
{
	pthread_mutex_lock(&oracle.mu);
	memset(oracle.n, 0, sizeof(oracle.n));
	pthread_mutex_unlock(&oracle.mu);
}

/* ---- helpers ---------------------------------------------------------- */

static ut_db *open_db(const char *path, size_t cache, size_t snap_bytes)
{
	ut_options o;
	ut_db *db;

	ut_options_default(&o);
	o.sync = 0;
	o.cache_bytes = cache;
	o.snapshot_bytes = snap_bytes;
	remove_db_files(path);
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	return db;
}

static uint32_t read_seq(ut_txn *t)
{
	void *v;
	size_t vl;
	uint32_t seq = 0;

	if (ut_get(t, SEQ_KEY, strlen(SEQ_KEY), &v, &vl) == UT_OK) {
		assert_int_equal(vl, 4);
		memcpy(&seq, v, 4);
		free(v);
	}
	return seq;
}

static int put_seq(ut_txn *t, uint32_t seq)
{
	return ut_put(t, SEQ_KEY, strlen(SEQ_KEY), &seq, 4);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- checking a snapshot against the oracle -------------------------- */

static uint8_t *expect_buf(void)
{
	uint8_t *b = malloc(64 * 1024);

	assert_non_null(b);
	return b;
}

/* 0 when key i reads as the oracle says at seq, else 1. */
static int check_get(ut_txn *t, int i, uint32_t seq, uint8_t *exp)
{
	char k[16];
	void *v;
	size_t vl;
	uint32_t wseq = 0, len = oracle_len(i, seq, &wseq);
	int rc, bad = 0;

	key_of(k, i);
	rc = ut_get(t, k, strlen(k), &v, &vl);
	if (len == UINT32_MAX)
		return rc != UT_NOTFOUND;
	if (rc != UT_OK)
		return 1;
	fill(exp, len, i, wseq);
	bad = vl != len || memcmp(v, exp, len);
	free(v);
	return bad;
}

/* 0 when a full scan equals the oracle at seq, else 1. */
static int check_scan(ut_txn *t, uint32_t seq, uint8_t *exp)
{
	ut_cursor *c;
	int next = 0, bad = 0, rc;

	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK && !bad; rc = ut_cursor_next(c)) {
		const void *k, *v;
		size_t kl, vl;
		uint32_t wseq = 0, len = UINT32_MAX;
		int i;

		if (ut_cursor_get(c, &k, &kl, &v, &vl) != UT_OK)
			return ut_cursor_close(c), 1;
		if (kl == strlen(SEQ_KEY) && !memcmp(k, SEQ_KEY, kl))
			continue;
		char kz[8] = { 0 };
		if (kl != 6)
			return ut_cursor_close(c), 1;
		memcpy(kz, k, kl);
		if (sscanf(kz + 1, "%5d", &i) != 1)
			return ut_cursor_close(c), 1;
		/* keys in between must be absent at seq */
		for (; next < i; next++)
			if (oracle_len(next, seq, &wseq) != UINT32_MAX)
				bad = 1;
		len = oracle_len(i, seq, &wseq);
		fill(exp, len == UINT32_MAX ? 0 : len, i, wseq);
		if (len == UINT32_MAX || vl != len || memcmp(v, exp, len))
			bad = 1;
		next = i + 1;
	}
	ut_cursor_close(c);
	if (rc != UT_NOTFOUND && rc != UT_OK)
		return 1;
	for (uint32_t wseq; next < NKEYS; next++)
		if (oracle_len(next, seq, &wseq) != UINT32_MAX)
			bad = 1;
	return bad;
}

/* ---- the differential test ------------------------------------------- */

static ut_db *db;
static _Atomic int writer_done;
static _Atomic uint32_t last_seq;

struct wargs {
	uint32_t seed;
	int commits;
	int checkpoint_every;
	int max_ops; /* changes per transaction: 1..max_ops */
};

static void *writer_main(void *arg)
{
	struct wargs *w = arg;
	uint32_t x = w->seed, seq = last_seq;
	uint8_t *val = expect_buf();

	for (int n = 0; n < w->commits; n++) {
		int ops = 1 + (int)(mix(x++) % (uint32_t)w->max_ops);
		int abort_it = mix(x++) % 8 == 0;
		int keys[64];
		uint32_t lens[64];
		ut_txn *t;

		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		seq++;
		for (int j = 0; j < ops; j++) {
			int i = (int)(mix(x++) % NKEYS);
			char k[16];

			key_of(k, i);
			keys[j] = i;
			if (mix(x++) % 4 == 0) {
				int rc = ut_del(t, k, strlen(k));

				assert_true(rc == UT_OK || rc == UT_NOTFOUND);
				lens[j] = UINT32_MAX;
			} else {
				lens[j] = len_of(i, seq);
				fill(val, lens[j], i, seq);
				assert_int_equal(ut_put(t, k, strlen(k), val, lens[j]), UT_OK);
			}
		}
		assert_int_equal(put_seq(t, seq), UT_OK);
		if (abort_it) {
			ut_abort(t);
			seq--;
			continue;
		}
		/* the oracle learns the commit before readers can see it */
		for (int j = 0; j < ops; j++)
			oracle_add(keys[j], seq, lens[j]);
		assert_int_equal(ut_commit(t), UT_OK);
		last_seq = seq;
		if (w->checkpoint_every && n % w->checkpoint_every == 0)
			assert_int_equal(ut_checkpoint(db), UT_OK);
	}
	free(val);
	writer_done = 1;
	return NULL;
}

static _Atomic int reader_checks, reader_bad;

static void *reader_main(void *arg)
{
	uint32_t x = (uint32_t)(uintptr_t)arg;
	uint8_t *exp = expect_buf();

	while (!writer_done) {
		ut_txn *t;
		uint32_t seq;
		int bad = 0;
		int64_t hold = mix(x++) % 30; /* ms */
		int64_t t0 = now_ms();

		assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
		seq = read_seq(t);
		do {
			for (int j = 0; j < 20; j++)
				bad |= check_get(t, (int)(mix(x++) % NKEYS), seq, exp);
			if (mix(x++) % 3 == 0)
				bad |= check_scan(t, seq, exp);
			bad |= read_seq(t) != seq;
		} while (now_ms() - t0 < hold && !bad);
		bad |= check_scan(t, seq, exp);
		ut_abort(t);
		if (bad)
			fprintf(stderr, "reader: snapshot at seq %u read wrong\n", seq);
		reader_bad += bad;
		reader_checks++;
	}
	free(exp);
	return NULL;
}

static void run_differential(size_t cache, int commits, int readers)
{
	char *path = tmp_db_path("snap", "diff");
	pthread_t w, r[4];
	struct wargs wa = { 12345, commits, 97, 24 };

	oracle_reset();
	db = open_db(path, cache, 0);
	writer_done = 0;
	last_seq = 0;
	reader_checks = reader_bad = 0;
	assert_int_equal(pthread_create(&w, NULL, writer_main, &wa), 0);
	for (int i = 0; i < readers; i++)
		assert_int_equal(pthread_create(&r[i], NULL, reader_main,
						(void *)(uintptr_t)(i + 7)), 0);
	pthread_join(w, NULL);
	for (int i = 0; i < readers; i++)
		pthread_join(r[i], NULL);
	fprintf(stderr, "differential: %d commits, %d snapshots checked\n",
		commits, (int)reader_checks);
	assert_int_equal(reader_bad, 0);
	assert_true(reader_checks > 0);
	assert_int_equal(ut_check(db, NULL, NULL), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

static void test_differential(void **s)
{
	(void)s;
	/* 24 pages of cache for several MiB of data: constant eviction */
	run_differential(24 * UT_PAGE_SIZE, 1500, 3);
}

/* ---- one snapshot across many commits and checkpoints ----------------- */

static void load(int nkeys, uint32_t seq)
{
	uint8_t *val = expect_buf();
	ut_txn *t;

	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = 0; i < nkeys; i++) {
		char k[16];
		uint32_t len = len_of(i, seq);

		key_of(k, i);
		fill(val, len, i, seq);
		assert_int_equal(ut_put(t, k, strlen(k), val, len), UT_OK);
		oracle_add(i, seq, len);
	}
	assert_int_equal(put_seq(t, seq), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	free(val);
}

static void test_long_reader(void **s)
{
	(void)s;
	char *path = tmp_db_path("snap", "long");
	struct wargs wa = { 777, 10000, 5000, 3 }; /* two checkpoints */
	uint8_t *exp = expect_buf();
	pthread_t w;
	ut_txn *t;
	int64_t t0;

	oracle_reset();
	db = open_db(path, 32 * UT_PAGE_SIZE, 256u << 20);
	load(NKEYS, 1);
	last_seq = 1;
	writer_done = 0;
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(read_seq(t), 1);
	assert_int_equal(pthread_create(&w, NULL, writer_main, &wa), 0);
	/* the writer's commits complete while the reader is open */
	t0 = now_ms();
	while (!writer_done && now_ms() - t0 < 600000)
		usleep(10000);
	assert_true(writer_done);
	pthread_join(w, NULL);
	/* and the reader still sees the database as it was */
	assert_int_equal(check_scan(t, 1, exp), 0);
	for (int i = 0; i < NKEYS; i++)
		assert_int_equal(check_get(t, i, 1, exp), 0);
	ut_stats st;
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_true(st.snapshot_versions > 0);
	assert_int_equal(st.snapshots, 1);
	assert_true(st.checkpoints >= 2);
	ut_abort(t);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_int_equal(st.snapshot_versions, 0); /* freed with the reader */
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
	free(exp);
}

/* ---- readers and an open write transaction ---------------------------- */

static void test_reader_beside_open_writer(void **s)
{
	(void)s;
	char *path = tmp_db_path("snap", "open");
	ut_txn *w, *r;
	void *v;
	size_t vl;

	db = open_db(path, 1 << 20, 0);
	assert_int_equal(ut_begin(db, 0, &w), UT_OK);
	assert_int_equal(ut_put(w, "a", 1, "1", 1), UT_OK);
	/* same thread, writer open: begin does not wait, sees no change */
	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	assert_int_equal(ut_get(r, "a", 1, &v, &vl), UT_NOTFOUND);
	assert_int_equal(ut_commit(w), UT_OK);
	assert_int_equal(ut_get(r, "a", 1, &v, &vl), UT_NOTFOUND);
	ut_abort(r);
	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	assert_int_equal(ut_get(r, "a", 1, &v, &vl), UT_OK);
	assert_memory_equal(v, "1", 1);
	free(v);
	/* ut_get_ref: the pointer outlives the writer's overwrite */
	const void *ref;
	assert_int_equal(ut_get_ref(r, "a", 1, &ref, &vl), UT_OK);
	assert_int_equal(ut_begin(db, 0, &w), UT_OK);
	assert_int_equal(ut_put(w, "a", 1, "2", 1), UT_OK);
	assert_int_equal(ut_commit(w), UT_OK);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	assert_memory_equal(ref, "1", 1);
	assert_int_equal(vl, 1);
	ut_abort(r);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* ---- the memory budget ------------------------------------------------- */

static void test_budget(void **s)
{
	(void)s;
	char *path = tmp_db_path("snap", "budget");
	uint8_t *exp = expect_buf();
	ut_txn *r, *w;
	ut_stats st;
	int esnap = 0, wrong = 0;

	oracle_reset();
	/* 8 pages of versions: the writer below replaces far more */
	db = open_db(path, 64 * UT_PAGE_SIZE, 8 * UT_PAGE_SIZE);
	load(NKEYS, 1);
	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	for (uint32_t seq = 2; seq < 40; seq++) {
		/* the writer never waits for the old reader */
		assert_int_equal(ut_begin(db, 0, &w), UT_OK);
		for (int i = 0; i < NKEYS; i += 3) {
			char k[16];
			key_of(k, i);
			assert_int_equal(ut_put(w, k, strlen(k), "x", 1), UT_OK);
		}
		assert_int_equal(ut_commit(w), UT_OK);
	}
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	assert_true(st.snapshot_dropped > 0);
	assert_true(st.snapshot_versions <= 8);
	/* the old reader: each read is right or UT_ESNAPSHOT, never wrong */
	for (int i = 0; i < NKEYS; i++) {
		char k[16];
		void *v;
		size_t vl;
		uint32_t wseq = 0, len = oracle_len(i, 1, &wseq);
		int rc;

		key_of(k, i);
		rc = ut_get(r, k, strlen(k), &v, &vl);
		if (rc == UT_ESNAPSHOT) {
			assert_non_null(strstr(ut_errdetail(), "snapshot too old"));
			esnap++;
			continue;
		}
		assert_int_equal(rc, UT_OK);
		fill(exp, len, i, wseq);
		wrong += vl != len || memcmp(v, exp, len);
		free(v);
	}
	assert_int_equal(wrong, 0);
	assert_true(esnap > 0);
	ut_abort(r);
	/* a new reader sees the new state */
	assert_int_equal(ut_begin(db, UT_RDONLY, &r), UT_OK);
	void *v;
	size_t vl;
	assert_int_equal(ut_get(r, "k00000", 6, &v, &vl), UT_OK);
	assert_int_equal(vl, 1);
	free(v);
	ut_abort(r);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
	free(exp);
}

/* ---- hot backup -------------------------------------------------------- */

static void test_backup_during_load(void **s)
{
	(void)s;
	char *path = tmp_db_path("snap", "bsrc"), *dest = tmp_db_path("snap", "bdst");
	uint8_t *exp = expect_buf();
	struct wargs wa = { 4242, 3000, 0, 24 };
	pthread_t w;
	ut_db *copy;
	ut_options o;
	ut_txn *t;
	ut_check_result cr;
	uint32_t seq;

	oracle_reset();
	db = open_db(path, 48 * UT_PAGE_SIZE, 0);
	load(NKEYS, 1);
	last_seq = 1;
	writer_done = 0;
	remove_db_files(dest);
	assert_int_equal(pthread_create(&w, NULL, writer_main, &wa), 0);
	while (last_seq < 200)
		usleep(1000);
	assert_int_equal(ut_backup(db, dest), UT_OK);
	uint32_t during = last_seq;
	/* a second backup to the same name refuses, and names the file */
	assert_int_equal(ut_backup(db, dest), UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "exists"));
	pthread_join(w, NULL);
	assert_int_equal(ut_close(db), UT_OK);

	/* the copy opens without a log, checks clean, equals the oracle */
	ut_options_default(&o);
	o.create = 0;
	assert_int_equal(ut_open(dest, &o, &copy), UT_OK);
	assert_int_equal(ut_check(copy, NULL, &cr), UT_OK);
	assert_int_equal(ut_begin(copy, UT_RDONLY, &t), UT_OK);
	seq = read_seq(t);
	fprintf(stderr, "backup: snapshot at seq %u (writer at %u when it ended)\n",
		seq, during);
	/* The writer sets last_seq after ut_commit returns, and a commit is
	 * visible to a new snapshot before then: the backup may hold the
	 * one commit that was in flight when `during` was read. */
	assert_true(seq >= 200 && seq <= during + 1);
	assert_int_equal(check_scan(t, seq, exp), 0);
	ut_abort(t);
	assert_int_equal(ut_close(copy), UT_OK);
	remove_db_files(path);
	remove_db_files(dest);
	free(path);
	free(dest);
	free(exp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_beside_open_writer),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_long_reader),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_backup_during_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

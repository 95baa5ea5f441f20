/*
 * tests/test_snapshot_life.c - how long replaced page versions live, under
 * the load an ordinary application makes: one writer, a short read
 * transaction around each commit, now and then a long reader (a backup).
 *
 * Contract checked: a version is kept exactly while a live read
 * transaction can see it, so short readers coming and going beside a long
 * one leave nothing behind: the versions kept are at most the pages changed
 * since the long reader began, a small snapshot_bytes suffices, and the
 * long reader (or ut_backup) never gets UT_ESNAPSHOT and reads exactly its
 * snapshot.  With readers beginning and ending at random between commits
 * that each replace one version of one page, the versions kept are exactly
 * those a live reader sees (a model counts them after every step).
 * The oracle is the list of commits: commit s writes one key
 * (a value that is a function of key and s) and s itself under SEQ_KEY, so
 * the state at any s is found by replaying the list.
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
#include <unistd.h>
#include <cmocka.h>

#include "helper_fs.h"
#include "untorn.h"

#define SEQ_KEY "~seq"
#define VLEN 1000u
#define MAX_COMMITS 200000

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	return x ^ (x >> 16);
}

static void key_of(char *k, int i)
{
	snprintf(k, 16, "k%06d", i);
}

/* The value commit seq writes to key i (seq 0: the initial load). */
static void value_of(uint8_t *v, int i, uint32_t seq)
{
	for (uint32_t j = 0; j < VLEN; j += 4) {
		uint32_t w = mix((uint32_t)i * 2654435761u ^ seq * 40503u ^ j);

		memcpy(v + j, &w, 4);
	}
}

static ut_db *open_db(const char *path, size_t cache, size_t snap_bytes, int sync)
{
	ut_options o;
	ut_db *db;

	ut_options_default(&o);
	o.sync = sync;
	o.cache_bytes = cache;
	o.snapshot_bytes = snap_bytes;
	remove_db_files(path);
	assert_int_equal(ut_open(path, &o, &db), UT_OK);
	return db;
}

/* nkeys keys at seq 0, in transactions of 500 keys. */
static void load(ut_db *db, int nkeys)
{
	uint8_t v[VLEN];
	uint32_t zero = 0;
	ut_txn *t = NULL;

	for (int i = 0; i < nkeys; i++) {
		char k[16];

		if (i % 500 == 0) {
			if (t)
				assert_int_equal(ut_commit(t), UT_OK);
			assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		}
		key_of(k, i);
		value_of(v, i, 0);
		assert_int_equal(ut_put(t, k, strlen(k), v, VLEN), UT_OK);
	}
	assert_int_equal(ut_put(t, SEQ_KEY, strlen(SEQ_KEY), &zero, 4), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
}

static uint32_t read_seq(ut_txn *t)
{
	void *v;
	size_t vl;
	uint32_t seq = UINT32_MAX;

	assert_int_equal(ut_get(t, SEQ_KEY, strlen(SEQ_KEY), &v, &vl), UT_OK);
	assert_int_equal(vl, 4);
	memcpy(&seq, v, 4);
	free(v);
	return seq;
}

/* The commit list: which key commit s (1-based) wrote. */
static int commit_key[MAX_COMMITS + 1];

/* Commit seq: key i gets its value at seq, SEQ_KEY gets seq. */
static int commit_one(ut_db *db, int i, uint32_t seq)
{
	uint8_t v[VLEN];
	char k[16];
	ut_txn *w;
	int rc;

	key_of(k, i);
	value_of(v, i, seq);
	assert_int_equal(ut_begin(db, 0, &w), UT_OK);
	assert_int_equal(ut_put(w, k, strlen(k), v, VLEN), UT_OK);
	assert_int_equal(ut_put(w, SEQ_KEY, strlen(SEQ_KEY), &seq, 4), UT_OK);
	commit_key[seq] = i;
	rc = ut_commit(w);
	return rc;
}

/* 0 when t reads exactly the state after commit seq (every key by get,
 * and a full scan finds no other key). */
static int check_state(ut_txn *t, int nkeys, uint32_t seq)
{
	uint32_t *wrote = calloc((size_t)nkeys, sizeof(*wrote));
	uint8_t exp[VLEN];
	ut_cursor *c;
	int bad = 0, n = 0, rc;

	assert_non_null(wrote);
	for (uint32_t s = 1; s <= seq; s++)
		wrote[commit_key[s]] = s;
	bad |= read_seq(t) != seq;
	for (int i = 0; i < nkeys && !bad; i++) {
		char k[16];
		void *v;
		size_t vl;

		key_of(k, i);
		rc = ut_get(t, k, strlen(k), &v, &vl);
		if (rc != UT_OK) {
			fprintf(stderr, "check: %s: %s (%s)\n", k, ut_strerror(rc),
				ut_errdetail());
			bad = 1;
			break;
		}
		value_of(exp, i, wrote[i]);
		if (vl != VLEN || memcmp(v, exp, VLEN)) {
			fprintf(stderr, "check: %s differs from its value at "
				"commit %u\n", k, wrote[i]);
			bad = 1;
		}
		free(v);
	}
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c))
		n++;
	ut_cursor_close(c);
	bad |= rc != UT_NOTFOUND || n != nkeys + 1;
	free(wrote);
	return bad;
}

static uint64_t versions_kept(ut_db *db, uint64_t *dropped)
{
	ut_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	if (dropped)
		*dropped = st.snapshot_dropped;
	return st.snapshot_versions;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- one long reader beside many short ones ------------------------- */

/* 1,000 times {begin a short reader, update one key, commit, end the
 * short reader} beside one long reader, with room for 64 versions: each
 * commit changes the same few pages, so the long reader needs one version
 * of each and the short readers none once they end. */
static void test_long_beside_short(void **state)
{
	(void)state;
	char *path = tmp_db_path("life", "long");
	const int nkeys = 2000;
	ut_db *db = open_db(path, 256 * UT_PAGE_SIZE, 64 * UT_PAGE_SIZE, 0);
	ut_txn *lr, *sr;
	uint64_t pages = 0, most = 0, dropped;
	int over = 0, rc;
	void *v;
	size_t vl;
	uint8_t exp[VLEN];

	load(db, nkeys);
	assert_int_equal(ut_begin(db, UT_RDONLY, &lr), UT_OK);
	for (uint32_t seq = 1; seq <= 1000; seq++) {
		uint64_t kept;

		assert_int_equal(ut_begin(db, UT_RDONLY, &sr), UT_OK);
		assert_int_equal(commit_one(db, 7, seq), UT_OK);
		ut_abort(sr);
		kept = versions_kept(db, &dropped);
		/* the pages changed since the long reader began: those the
		 * first commit changed (every commit changes the same ones) */
		if (seq == 1)
			pages = kept;
		if (kept > most)
			most = kept;
		if (kept > pages && !over++)
			fprintf(stderr, "after commit %u: %llu versions kept, "
				"%llu pages changed since the long reader began\n",
				seq, (unsigned long long)kept,
				(unsigned long long)pages);
	}
	fprintf(stderr, "long reader: %llu pages changed, at most %llu "
		"versions kept over 1,000 commits, %llu dropped\n",
		(unsigned long long)pages, (unsigned long long)most,
		(unsigned long long)dropped);
	/* the long reader's get of that key: its old value */
	rc = ut_get(lr, "k000007", 7, &v, &vl);
	if (rc)
		fprintf(stderr, "long reader: %s (%s)\n", ut_strerror(rc),
			ut_errdetail());
	assert_int_equal(rc, UT_OK);
	value_of(exp, 7, 0);
	assert_int_equal(vl, VLEN);
	assert_memory_equal(v, exp, VLEN);
	free(v);
	assert_int_equal(check_state(lr, nkeys, 0), 0);
	assert_int_equal(over, 0);
	assert_int_equal(dropped, 0);
	assert_true(pages >= 1 && pages <= 4); /* the leaves, their path, header */
	ut_abort(lr);
	assert_int_equal(versions_kept(db, NULL), 0);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* ---- readers coming and going at random: the exact count ----------- */

#define HOT 8
#define SLOTS 6

/* Hot key j lives alone in its leaf (keys 150 apart, ~15 per leaf), and
 * an update of the same size changes that leaf only, so each commit
 * replaces one version of one page: the versions kept must be exactly the
 * (page, version) pairs some live reader sees. */
static int hot_key(int j)
{
	return 150 * j + 75;
}

static void test_random_readers_exact(void **state)
{
	(void)state;
	char *path = tmp_db_path("life", "exact");
	const int nkeys = 150 * HOT;
	ut_db *db = open_db(path, 64 * UT_PAGE_SIZE, 0, 0);
	uint32_t hist[HOT][4096]; /* commits that wrote hot key j */
	unsigned nh[HOT] = { 0 };
	ut_txn *rd[SLOTS] = { 0 };
	uint32_t snap[SLOTS], seq = 0, x = 99;
	uint64_t most = 0;
	uint8_t v[VLEN];

	load(db, nkeys);
	for (int step = 0; step < 4000; step++) {
		uint32_t r = mix(x++) % 10, slot = mix(x++) % SLOTS;
		uint64_t want = 0;

		if (r < 3 && !rd[slot]) {
			assert_int_equal(ut_begin(db, UT_RDONLY, &rd[slot]), UT_OK);
			snap[slot] = seq;
		} else if (r < 6 && rd[slot]) {
			ut_abort(rd[slot]);
			rd[slot] = NULL;
		} else if (r >= 6 && seq < 4000 * HOT) {
			int j = (int)(mix(x++) % HOT);
			char k[16];
			ut_txn *w;

			key_of(k, hot_key(j));
			value_of(v, hot_key(j), ++seq);
			assert_int_equal(ut_begin(db, 0, &w), UT_OK);
			assert_int_equal(ut_put(w, k, strlen(k), v, VLEN), UT_OK);
			assert_int_equal(ut_commit(w), UT_OK);
			assert_true(nh[j] < 4096);
			hist[j][nh[j]++] = seq;
		}
		/* version [c, u) of page j is kept iff a live reader's
		 * snapshot lies in it */
		for (int j = 0; j < HOT; j++)
			for (unsigned n = 0; n < nh[j]; n++) {
				uint32_t c = n ? hist[j][n - 1] : 0, u = hist[j][n];
				int seen = 0;

				for (int i = 0; i < SLOTS; i++)
					seen |= rd[i] && snap[i] >= c && snap[i] < u;
				want += seen;
			}
		assert_int_equal(versions_kept(db, NULL), want);
		most = want > most ? want : most;
		if (step % 16)
			continue;
		/* and every live reader reads its snapshot */
		for (int i = 0; i < SLOTS; i++)
			for (int j = 0; rd[i] && j < HOT; j++) {
				uint32_t wseq = 0;
				char k[16];
				void *got;
				size_t vl;

				for (unsigned n = 0; n < nh[j] && hist[j][n] <= snap[i]; n++)
					wseq = hist[j][n];
				key_of(k, hot_key(j));
				assert_int_equal(ut_get(rd[i], k, strlen(k), &got, &vl), UT_OK);
				value_of(v, hot_key(j), wseq);
				assert_int_equal(vl, VLEN);
				assert_memory_equal(got, v, VLEN);
				free(got);
			}
	}
	fprintf(stderr, "random readers: %u commits, up to %llu versions kept, "
		"each as the model says\n", seq, (unsigned long long)most);
	for (int i = 0; i < SLOTS; i++)
		if (rd[i])
			ut_abort(rd[i]);
	assert_int_equal(versions_kept(db, NULL), 0);
	assert_int_equal(ut_close(db), UT_OK);
	remove_db_files(path);
	free(path);
}

/* ---- a hot backup beside an ordinary durable writer ----------------- */

struct writer {
	ut_db *db;
	_Atomic int stop;
	_Atomic uint32_t seq; /* last commit returned */
	int hot;              /* keys the writer updates: 0..hot-1 */
};

/* Commits one key each, durably, each with a short reader around it. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint32_t seq = 0;

	while (!w->stop && seq < MAX_COMMITS) {
		ut_txn *sr;

		seq++;
		assert_int_equal(ut_begin(w->db, UT_RDONLY, &sr), UT_OK);
		assert_int_equal(commit_one(w->db, (int)(mix(seq) % (uint32_t)w->hot),
					    seq), UT_OK);
		ut_abort(sr);
		w->seq = seq;
	}
	return NULL;
}

static void test_backup_beside_short_readers(void **state)
{
	(void)state;
	char *path = tmp_db_path("life", "bsrc"), *dest = tmp_db_path("life", "bdst");
	/* about 24 MiB of data over 512 KiB of cache; 32 versions of budget,
	 * far more than the few pages the writer's hot keys live in */
	const int nkeys = 20000;
	ut_db *db = open_db(path, 32 * UT_PAGE_SIZE, 32 * UT_PAGE_SIZE, 1);
	struct writer w = { .db = db, .hot = 64 };
	uint32_t before, after, seq;
	uint64_t dropped;
	pthread_t th;
	ut_db *copy;
	ut_options o;
	ut_txn *t;
	int64_t t0, ms;
	int rc;

	t0 = now_ms();
	load(db, nkeys);
	fprintf(stderr, "load: %lld ms\n", (long long)(now_ms() - t0));
	remove_db_files(dest);
	assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
	while (w.seq < 20)
		usleep(1000);
	before = w.seq;
	t0 = now_ms();
	rc = ut_backup(db, dest);
	after = w.seq;
	ms = now_ms() - t0;
	if (rc)
		fprintf(stderr, "backup: %s (%s)\n", ut_strerror(rc), ut_errdetail());
	w.stop = 1;
	pthread_join(th, NULL);
	versions_kept(db, &dropped);
	fprintf(stderr, "backup: %lld ms, %u commits beside it, %llu versions "
		"dropped\n", (long long)ms, after - before,
		(unsigned long long)dropped);
	assert_int_equal(rc, UT_OK);
	assert_int_equal(dropped, 0);
	assert_int_equal(ut_close(db), UT_OK);

	/* the copy opens without a log and equals the oracle at its snapshot */
	ut_options_default(&o);
	o.create = 0;
	assert_int_equal(ut_open(dest, &o, &copy), UT_OK);
	assert_int_equal(ut_check(copy, NULL, NULL), UT_OK);
	assert_int_equal(ut_begin(copy, UT_RDONLY, &t), UT_OK);
	seq = read_seq(t);
	fprintf(stderr, "backup: snapshot at commit %u (writer at %u..%u)\n",
		seq, before, after);
	assert_true(seq >= before && seq <= after + 1);
	assert_int_equal(check_state(t, nkeys, seq), 0);
	ut_abort(t);
	assert_int_equal(ut_close(copy), UT_OK);
	remove_db_files(path);
	remove_db_files(dest);
	free(path);
	free(dest);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long_beside_short),
		cmocka_unit_test(test_random_readers_exact),
		cmocka_unit_test(test_backup_beside_short_readers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

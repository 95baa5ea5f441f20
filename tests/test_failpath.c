/*
 * tests/test_failpath.c - the engine's failure paths end every thread: a
 * log sync that fails wakes each thread waiting inside the engine (for a
 * frame, a checkpoint, a group-commit leader) with an error within a
 * second, later transactions are refused with UT_EFATAL and ut_close
 * returns; and a commit still waiting for durability is an open
 * transaction to ut_close; a writer whose page read fails with UT_EIO
 * (the device gone) makes the handle refuse writes, saying why.
 * Databases live on the simulated disk, whose
 * fault hook (io/ut_simdisk.h) fails or slows one chosen I/O.
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

#include "untorn.h"
#include "db.h"
#include "pager_int.h"
#include "wal.h"
#include "ut_simdisk.h"

#define DB "/f.db"
#define VLEN 400

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void key_of(char *k, int i)
{
	snprintf(k, 16, "k%06d", i);
}

static void val_of(char *v, int i, int gen)
{
	memset(v, 'a' + (i + gen) % 26, VLEN);
	snprintf(v, VLEN, "%d/%d", i, gen);
}

/* ---- the fault hook: hold, slow or fail the log's syncs ---------------- */

struct hook {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int armed;        /* the next log sync blocks until released ... */
	int entered;      /* ... and says so here ... */
	int released;
	int fail_rc;      /* ... then fails with this (once) */
	unsigned slow_ms; /* every log sync sleeps this long first */
	int slow_in;      /* syncs inside the slow sleep now */
};

static int is_log(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && !strcmp(path + n - 4, "-wal");
}

static int hook_fn(void *ctx, enum ut_simdisk_op op, const char *path)
{
	struct hook *h = ctx;
	int rc = 0;

	if (op != UT_SIMDISK_OP_SYNC || !is_log(path))
		return 0;
	pthread_mutex_lock(&h->mu);
	if (h->armed) {
		h->armed = 0;
		h->entered = 1;
		pthread_cond_broadcast(&h->cv);
		while (!h->released)
			pthread_cond_wait(&h->cv, &h->mu);
		rc = h->fail_rc;
	} else if (h->slow_ms) {
		unsigned ms = h->slow_ms;

		h->slow_in++;
		pthread_mutex_unlock(&h->mu);
		sleep_ms(ms);
		pthread_mutex_lock(&h->mu);
		h->slow_in--;
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

static void hook_init(struct hook *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
}

static void hook_fini(struct hook *h)
{
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
}

/* ---- threads ----------------------------------------------------------- */

enum role { COMMIT_SMALL, COMMIT_BIG, CHECKPOINT, WRITER, READER };

struct actor {
	ut_db *db;
	enum role role;
	int nkeys;     /* the keys the big commit rewrites: 0..nkeys */
	int far;       /* a key no commit touched: not in the cache */
	int rc, done;
	uint64_t done_ms;
	char detail[512]; /* ut_errdetail() as the call returned */
};

static void *actor_main(void *arg)
{
	struct actor *a = arg;
	char k[16], v[VLEN];
	ut_txn *t = NULL;
	void *got = NULL;
	size_t glen;
	int rc = UT_OK;

	switch (a->role) {
	case COMMIT_SMALL:
	case COMMIT_BIG:
		if ((rc = ut_begin(a->db, 0, &t)))
			break;
		for (int i = 0; rc == UT_OK && i < (a->role == COMMIT_BIG ? a->nkeys : 1); i++) {
			key_of(k, i);
			val_of(v, i, 1);
			rc = ut_put(t, k, strlen(k), v, VLEN);
		}
		if (rc) {
			ut_abort(t);
			break;
		}
		rc = ut_commit(t);
		break;
	case CHECKPOINT:
		rc = ut_checkpoint(a->db);
		break;
	case WRITER:
	case READER:
		if ((rc = ut_begin(a->db, a->role == READER ? UT_RDONLY : 0, &t)))
			break;
		key_of(k, a->far);
		if (a->role == WRITER) {
			val_of(v, a->far, 2);
			rc = ut_put(t, k, strlen(k), v, VLEN);
		} else {
			rc = ut_get(t, k, strlen(k), &got, &glen);
			free(got);
		}
		ut_abort(t);
		break;
	}
	a->rc = rc;
	snprintf(a->detail, sizeof(a->detail), "%s", ut_errdetail());
	a->done_ms = now_ms();
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void start(pthread_t *th, struct actor *a)
{
	assert_int_equal(pthread_create(th, NULL, actor_main, a), 0);
}

static uint64_t frame_waits(ut_db *db)
{
	uint64_t b, c, w;

	ut_pager_cleaner_stats(ut_db_pager(db), &b, &c, &w);
	return w;
}

static uint64_t wal_commits(ut_db *db)
{
	ut_wal_stats ws;

	ut_wal_stats_get(ut_db_wal(db), &ws);
	return ws.commits;
}

static uint64_t ckpt_requests(ut_pager *p)
{
	uint64_t r;

	pthread_mutex_lock(&p->mu);
	r = p->ckpt_req;
	pthread_mutex_unlock(&p->mu);
	return r;
}

/* Wait up to ms for cond(arg); 1 if it held. */
static int wait_for(int (*cond)(void *), void *arg, unsigned ms)
{
	uint64_t end = now_ms() + ms;

	while (!cond(arg)) {
		if (now_ms() > end)
			return 0;
		sleep_ms(2);
	}
	return 1;
}

static int hook_entered(void *arg)
{
	struct hook *h = arg;
	int e;

	pthread_mutex_lock(&h->mu);
	e = h->entered;
	pthread_mutex_unlock(&h->mu);
	return e;
}

static ut_db *open_db(ut_simdisk *d, size_t cache, int sync)
{
	ut_options o;
	ut_db *db = NULL;

	ut_options_init(&o, sizeof(o));
	o.cache_bytes = cache;
	o.sync = sync;
	assert_int_equal(ut_db_open_vfs(ut_simdisk_vfs(d), DB, &o, &db), UT_OK);
	return db;
}

static void fill(ut_db *db, int from, int to)
{
	char k[16], v[VLEN];
	ut_txn *t;

	for (int i = from; i < to;) {
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int j = 0; j < 100 && i < to; j++, i++) {
			key_of(k, i);
			val_of(v, i, 0);
			assert_int_equal(ut_put(t, k, strlen(k), v, VLEN), UT_OK);
		}
		assert_int_equal(ut_commit(t), UT_OK);
	}
}

/* A UT_EFATAL's detail says that the handle refuses, and why: the log
 * failure (the soak's readers and backups got an empty one). */
static void assert_fatal_detail(const char *what, const char *detail)
{
	if (!strstr(detail, "refuses further use until reopened") ||
	    !strstr(detail, DB "-wal"))
		fail_msg("%s: UT_EFATAL with detail \"%s\"", what, detail);
}

/* A log sync fails while one committer leads the group commit, another
 * follows it, a checkpoint waits for the cleaner, and the writer and a
 * reader wait for a frame (every frame in the cache is dirty, and the
 * cleaner cannot write: the test holds it at the point where it has work
 * but has not started its batch -- where a failure noticed elsewhere used
 * to leave it asleep).  Every thread returns within a second of the
 * failure; afterwards the handle refuses transactions with UT_EFATAL and
 * closes.  Every UT_EFATAL -- theirs, and a get and a backup of a read
 * transaction begun before the failure -- says why. */
static void test_log_sync_failure_wakes_all(void **state)
{
	enum { NKEYS = 600, FAR = 5000, NFAR = 600 };
	ut_simdisk *d = ut_simdisk_new();
	struct hook h;
	ut_db *db;
	ut_pager *p;
	pthread_t th[5];
	struct actor a[5];
	uint64_t w0, r0, c0, released;
	ut_txn *t, *lt;
	void *got = NULL;
	size_t glen;
	char k[16];
	int rc;

	(void)state;
	hook_init(&h);
	ut_simdisk_set_fault_hook(d, hook_fn, &h);
	db = open_db(d, 16 * UT_PAGE_SIZE, 1);
	p = ut_db_pager(db);
	/* Height two: every leaf the big commit rewrites stays dirty in the
	 * cache, so the first miss of anyone needs the cleaner. */
	fill(db, 0, NKEYS);
	fill(db, FAR, FAR + NFAR);
	assert_int_equal(ut_checkpoint(db), UT_OK);
	assert_true(p->cleaner_running);

	/* hold the cleaner before its next batch */
	pthread_mutex_lock(&p->flush_mu);
	pthread_mutex_lock(&h.mu);
	h.armed = 1;
	h.fail_rc = UT_EIO;
	pthread_mutex_unlock(&h.mu);
	for (int i = 0; i < 5; i++)
		a[i] = (struct actor){ .db = db, .role = (enum role)i,
				       .nkeys = NKEYS, .far = FAR + NFAR / 2 };
	/* the leader: its log sync blocks in the hook */
	start(&th[0], &a[0]);
	assert_true(wait_for(hook_entered, &h, 10000));
	/* a follower, whose commit dirties every leaf of keys 0..NKEYS */
	c0 = wal_commits(db);
	start(&th[1], &a[1]);
	while (wal_commits(db) == c0)
		sleep_ms(2);
	sleep_ms(100); /* (appended: now waiting for the leader's sync) */
	assert_false(__atomic_load_n(&a[1].done, __ATOMIC_ACQUIRE));
	/* a checkpoint waiting for the (held) cleaner */
	r0 = ckpt_requests(p);
	start(&th[2], &a[2]);
	while (ckpt_requests(p) == r0)
		sleep_ms(2);
	/* the writer and a reader, each missing a page: waiting for a frame */
	w0 = frame_waits(db);
	start(&th[3], &a[3]);
	start(&th[4], &a[4]);
	for (uint64_t end = now_ms() + 10000; frame_waits(db) < w0 + 2;) {
		assert_true(now_ms() < end);
		sleep_ms(2);
	}
	sleep_ms(50);
	for (int i = 0; i < 5; i++)
		assert_false(__atomic_load_n(&a[i].done, __ATOMIC_ACQUIRE));
	/* a long reader, begun before the failure */
	assert_int_equal(ut_begin(db, UT_RDONLY, &lt), UT_OK);

	/* the log sync fails */
	pthread_mutex_lock(&h.mu);
	h.released = 1;
	released = now_ms();
	pthread_cond_broadcast(&h.cv);
	pthread_mutex_unlock(&h.mu);
	{
		static const char *names[] = { "the group-commit leader",
			"the follower", "the checkpoint", "the writer",
			"the reader" };
		char stuck[256] = "";

		for (int i = 0; i < 5; i++) {
			while (!__atomic_load_n(&a[i].done, __ATOMIC_ACQUIRE) &&
			       now_ms() < released + 1000)
				sleep_ms(2);
			if (!__atomic_load_n(&a[i].done, __ATOMIC_ACQUIRE))
				snprintf(stuck + strlen(stuck),
					 sizeof(stuck) - strlen(stuck), " %s,",
					 names[i]);
		}
		if (*stuck)
			fail_msg("still waiting 1 s after the log sync failed:%s",
				 stuck);
	}
	pthread_mutex_unlock(&p->flush_mu);
	for (int i = 0; i < 5; i++)
		pthread_join(th[i], NULL);
	/* the leader gets the device's error, the follower it or UT_EFATAL;
	 * everyone else UT_EFATAL */
	assert_int_equal(a[0].rc, UT_EIO);
	assert_true(a[1].rc == UT_EIO || a[1].rc == UT_EFATAL);
	for (int i = 2; i < 5; i++) {
		assert_int_equal(a[i].rc, UT_EFATAL);
		assert_fatal_detail(i == 2 ? "ut_checkpoint" : "a frame waiter",
				    a[i].detail);
	}
	key_of(k, 1);
	assert_int_equal(ut_get(lt, k, strlen(k), &got, &glen), UT_EFATAL);
	assert_fatal_detail("ut_get", ut_errdetail());
	ut_abort(lt);
	assert_int_equal(ut_backup(db, "/f-copy.db"), UT_EFATAL);
	assert_fatal_detail("ut_backup", ut_errdetail());

	assert_int_equal(ut_begin(db, 0, &t), UT_EFATAL);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_EFATAL);
	rc = ut_close(db);
	assert_int_not_equal(rc, UT_EBUSY);
	assert_int_equal(rc, UT_EFATAL);
	hook_fini(&h);
	ut_simdisk_free(d);
}

struct committer {
	ut_db *db;
	int rc;
};

static void *commit_one(void *arg)
{
	struct committer *c = arg;
	char k[16], v[VLEN];
	ut_txn *t;

	key_of(k, 1);
	val_of(v, 1, 7);
	c->rc = ut_begin(c->db, 0, &t);
	if (c->rc == UT_OK && (c->rc = ut_put(t, k, strlen(k), v, VLEN)))
		ut_abort(t);
	if (c->rc == UT_OK)
		c->rc = ut_commit(t);
	return NULL;
}

static int slow_sync_running(void *arg)
{
	struct hook *h = arg;
	int n;

	pthread_mutex_lock(&h->mu);
	n = h->slow_in;
	pthread_mutex_unlock(&h->mu);
	return n > 0;
}

/* A commit that has not returned is an open transaction: ut_close while
 * the committer waits for its log sync (slowed to 500 ms) says UT_EBUSY
 * and frees nothing under it; once the commit returns, close succeeds and
 * the commit is there on reopen. */
static void test_close_during_durability_wait(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	struct committer c;
	struct hook h;
	pthread_t th;
	ut_db *db;
	ut_txn *t;
	char k[16], v[VLEN];
	void *got;
	size_t glen;

	(void)state;
	hook_init(&h);
	ut_simdisk_set_fault_hook(d, hook_fn, &h);
	db = open_db(d, 1u << 20, 1);
	fill(db, 0, 10);
	pthread_mutex_lock(&h.mu);
	h.slow_ms = 500;
	pthread_mutex_unlock(&h.mu);
	c = (struct committer){ db, -1 };
	assert_int_equal(pthread_create(&th, NULL, commit_one, &c), 0);
	assert_true(wait_for(slow_sync_running, &h, 10000));
	assert_int_equal(ut_close(db), UT_EBUSY);
	assert_non_null(strstr(ut_errdetail(), "transactions still open"));
	pthread_join(th, NULL);
	assert_int_equal(c.rc, UT_OK);
	pthread_mutex_lock(&h.mu);
	h.slow_ms = 0;
	pthread_mutex_unlock(&h.mu);
	assert_int_equal(ut_close(db), UT_OK);

	db = open_db(d, 1u << 20, 1);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	key_of(k, 1);
	val_of(v, 1, 7);
	assert_int_equal(ut_get(t, k, strlen(k), &got, &glen), UT_OK);
	assert_int_equal(glen, VLEN);
	assert_memory_equal(got, v, VLEN);
	free(got);
	ut_abort(t);
	assert_int_equal(ut_close(db), UT_OK);
	hook_fini(&h);
	ut_simdisk_free(d);
}

/* The device goes (the power is cut: every later I/O fails, reads too)
 * while the cache holds a fraction of the data: the writer's next
 * transaction fails reading a page with UT_EIO, and from then on the
 * handle refuses writes with UT_EFATAL, whose detail names that read as
 * the cause -- the writer does not meet UT_EIO for ever (the soak's writer
 * gave up after 100 of them).  Reads of what the cache holds go on. */
static void test_writer_read_eio_is_fatal(void **state)
{
	ut_simdisk *d = ut_simdisk_new();
	ut_vfs *v = ut_simdisk_vfs(d);
	ut_db *db = open_db(d, 16 * UT_PAGE_SIZE, 1);
	char k[16], val[VLEN];
	ut_file *other;
	ut_txn *t;
	int rc = UT_OK;

	(void)state;
	fill(db, 0, 3000); /* ~80 leaves in a cache of 16 */
	assert_int_equal(ut_checkpoint(db), UT_OK);
	/* the power goes at the next event: a write to another file */
	assert_int_equal(v->open(v, "/other", UT_OPEN_CREATE, &other), UT_OK);
	ut_simdisk_crash_at(d, ut_simdisk_event_count(d));
	memset(val, 'x', sizeof(val));
	assert_int_equal(ut_file_write(other, val, sizeof(val), 0, 0), UT_EIO);
	ut_file_close(other);
	assert_true(ut_simdisk_crashed(d));

	/* puts across the key space until one needs a page not cached */
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (int i = 0; i < 3000 && rc == UT_OK; i += 37) {
		key_of(k, i);
		rc = ut_put(t, k, strlen(k), val, VLEN);
	}
	ut_abort(t);
	assert_int_equal(rc, UT_EIO);
	rc = ut_begin(db, 0, &t);
	if (rc == UT_OK)
		ut_abort(t);
	assert_int_equal(rc, UT_EFATAL);
	print_message("after the failed read: %s\n", ut_errdetail());
	if (!strstr(ut_errdetail(), "refuses further use until reopened") ||
	    !strstr(ut_errdetail(), "page read failed"))
		fail_msg("UT_EFATAL with detail \"%s\"", ut_errdetail());
	assert_int_equal(ut_close(db), UT_EFATAL);
	ut_simdisk_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_sync_failure_wakes_all),
		cmocka_unit_test(test_close_during_durability_wait),
		cmocka_unit_test(test_writer_read_eio_is_fatal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/test_restart.c - restart right after a crash, as a supervisor does.
 *
 * Each round forks a writer that opens the database in doublewrite mode on
 * the real filesystem (O_DIRECT and io_uring where available, as the engine
 * uses them), commits with sync=1 and reports every acknowledged commit
 * through a pipe.  The parent SIGKILLs it at a random moment, reaps it with
 * waitpid() and reopens at once with default options.  Pass: every reopen
 * succeeds (no UT_ELOCKED from a lock the dead writer left behind) and every
 * acknowledged commit is there, with the right value.
 *
 * test_live_holder: a live second opener still gets UT_ELOCKED, after
 * lock_timeout_ms.
 *
 * Rounds: 200 (UT_RESTART_ROUNDS overrides); seed: UT_RESTART_SEED or the
 * time, printed so a failure can be replayed.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "helper_fs.h"
#include "untorn.h"

#define DEFAULT_ROUNDS 200
#define KILL_WINDOW_US 40000 /* kill 0..40 ms after the writer started */
#define KILL_WINDOW_MAX_US 320000
#define CHILD_CACHE (256u << 10) /* small: evictions write pages often */

static char dir[512], dbpath[600];

static ut_options writer_options(void)
{
	ut_options o;

	ut_options_default(&o);
	o.protect = UT_PROTECT_DOUBLEWRITE;
	o.cache_bytes = CHILD_CACHE;
	o.sync = 1;
	return o;
}

static void key_of(char *k, uint32_t i) { snprintf(k, 16, "k%08u", i); }

/* Value of key i: 1..6 KiB, so pages fill and split quickly. */
static size_t val_of(char *v, uint32_t i)
{
	size_t n = 1024 + (size_t)(i * 2654435761u % 5120u);

	for (size_t j = 0; j < n; j++)
		v[j] = (char)('a' + (i + j) % 26);
	return n;
}

/* The number of commits in the database ("n"), 0 when new. */
static int count_of(ut_db *db, uint32_t *n)
{
	ut_txn *t;
	void *v = NULL;
	size_t len = 0;
	int rc = ut_begin(db, UT_RDONLY, &t);

	if (rc)
		return rc;
	*n = 0;
	rc = ut_get(t, "n", 1, &v, &len);
	if (rc == UT_OK && len == sizeof(*n))
		memcpy(n, v, sizeof(*n));
	else if (rc == UT_OK)
		rc = UT_ECORRUPT;
	free(v);
	ut_abort(t);
	return rc == UT_NOTFOUND ? UT_OK : rc;
}

/* The writer: commit i (key i, then "n" = i + 1) forever, writing i to fd
 * after each acknowledged commit.  Exits only by SIGKILL or on error. */
static void writer(int fd)
{
	ut_options o = writer_options();
	static char v[8192];
	ut_db *db;
	uint32_t i;
	int rc = ut_open(dbpath, &o, &db);

	if (rc) {
		fprintf(stderr, "writer: open: %s (%s)\n", ut_strerror(rc),
			ut_errdetail());
		_exit(2);
	}
	if ((rc = count_of(db, &i)))
		_exit(3);
	for (;; i++) {
		char k[16];
		uint32_t n = i + 1;
		ut_txn *t;

		key_of(k, i);
		if ((rc = ut_begin(db, 0, &t)) ||
		    (rc = ut_put(t, k, strlen(k), v, val_of(v, i))) ||
		    (rc = ut_put(t, "n", 1, &n, sizeof(n))) ||
		    (rc = ut_commit(t))) {
			fprintf(stderr, "writer: commit %u: %s (%s)\n", i,
				ut_strerror(rc), ut_errdetail());
			_exit(4);
		}
		if (write(fd, &i, sizeof(i)) != (ssize_t)sizeof(i))
			_exit(5);
	}
}

/* Every key below n is there with its value. */
static int verify(ut_db *db, uint32_t n)
{
	static char want[8192];
	ut_txn *t;
	int bad = 0, rc = ut_begin(db, UT_RDONLY, &t);

	assert_int_equal(rc, UT_OK);
	for (uint32_t i = 0; i < n && !bad; i++) {
		char k[16];
		void *v = NULL;
		size_t len = 0, wl = val_of(want, i);

		key_of(k, i);
		rc = ut_get(t, k, strlen(k), &v, &len);
		if (rc != UT_OK || len != wl || memcmp(v, want, wl)) {
			fprintf(stderr, "key %u: rc %d, %zu bytes (want %zu)\n",
				i, rc, len, wl);
			bad = 1;
		}
		free(v);
	}
	ut_abort(t);
	return bad;
}

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* Read every acknowledgement the writer sent; returns the highest + 1. */
static uint32_t drain_acks(int fd, uint32_t acked)
{
	uint32_t i;

	while (read(fd, &i, sizeof(i)) == (ssize_t)sizeof(i))
		if (i + 1 > acked)
			acked = i + 1;
	return acked;
}

static void test_restart_after_kill(void **state)
{
	const char *e = getenv("UT_RESTART_ROUNDS");
	const char *s = getenv("UT_RESTART_SEED");
	int rounds = e && *e ? atoi(e) : DEFAULT_ROUNDS;
	unsigned seed = s && *s ? (unsigned)strtoul(s, NULL, 0)
				: (unsigned)time(NULL);
	int locked = 0, failed_open = 0, lost = 0, killed_acking = 0;
	uint32_t acked = 0;
	long t0 = now_us();
	/* Kills land 0..window after the writer starts.  The window doubles
	 * whenever a kill in its second half found no commit acknowledged, so
	 * a loaded machine still kills mid-commit rather than only ever
	 * mid-open. */
	long window = KILL_WINDOW_US;

	(void)state;
	srand(seed);
	for (int r = 0; r < rounds; r++) {
		int pfd[2], status;
		long start, delay = rand() % window;
		uint32_t before = acked, n = 0;
		ut_options o;
		ut_db *db;
		pid_t pid;
		int rc;

		assert_int_equal(pipe(pfd), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			writer(pfd[1]);
		}
		close(pfd[1]);
		fcntl(pfd[0], F_SETFL, O_NONBLOCK);
		start = now_us();
		while (now_us() - start < delay) {
			acked = drain_acks(pfd[0], acked);
			usleep(200);
		}
		if (acked == before && delay >= window / 2)
			window = 2 * window < KILL_WINDOW_MAX_US ? 2 * window
								 : KILL_WINDOW_MAX_US;
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		acked = drain_acks(pfd[0], acked);
		close(pfd[0]);
		if (!WIFSIGNALED(status)) {
			fail_msg("round %d: the writer exited by itself (status %d)",
				 r, status);
		}
		if (acked > before)
			killed_acking++;

		/* at once: no sleep, no retry */
		ut_options_default(&o);
		rc = ut_open(dbpath, &o, &db);
		if (rc) {
			fprintf(stderr, "round %d: reopen: %s (%s)\n", r,
				ut_strerror(rc), ut_errdetail());
			if (rc != UT_ELOCKED)
				fail_msg("round %d: reopen failed", r);
			locked++;
			failed_open++;
			/* count it, then wait (bounded) to keep measuring */
			for (int tries = 0; rc == UT_ELOCKED && tries < 100; tries++) {
				usleep(10000);
				o.lock_timeout_ms = 0;
				rc = ut_open(dbpath, &o, &db);
			}
			assert_int_equal(rc, UT_OK);
		}
		assert_int_equal(count_of(db, &n), UT_OK);
		if (n < acked || verify(db, n)) {
			fprintf(stderr, "round %d: %u commits present, %u acknowledged\n",
				r, n, acked);
			lost++;
		}
		assert_int_equal(ut_close(db), UT_OK);
	}
	fprintf(stderr, "restart: seed %u, %d rounds, %u commits acknowledged, "
		"%d rounds killed while acknowledging, %d reopens failed "
		"(%d UT_ELOCKED), %d lost acknowledged commits, kill window "
		"%.0f ms, %.1f s\n",
		seed, rounds, acked, killed_acking, failed_open, locked, lost,
		(double)window / 1e3, (double)(now_us() - t0) / 1e6);
	assert_int_equal(failed_open, 0);
	assert_int_equal(lost, 0);
	assert_true(acked > 0);
}

/* A live holder: a second opener waits lock_timeout_ms, then gets
 * UT_ELOCKED; 0 means at once; a holder that lets go within the timeout is
 * waited for. */
static void test_live_holder(void **state)
{
	int go[2], ready[2], status;
	ut_options o;
	ut_db *db;
	pid_t pid;
	char c;
	long t;

	(void)state;
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ut_options wo = writer_options();

		/* only our ends: a parent that dies ends the wait for "go" */
		close(go[1]);
		close(ready[0]);
		if (ut_open(dbpath, &wo, &db))
			_exit(2);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		usleep(100000); /* let go 100 ms after the parent starts waiting */
		_exit(ut_close(db) ? 4 : 0);
	}
	assert_int_equal(read(ready[0], &c, 1), 1);
	ut_options_default(&o);

	o.lock_timeout_ms = 0;
	t = now_us();
	assert_int_equal(ut_open(dbpath, &o, &db), UT_ELOCKED);
	assert_true(now_us() - t < 100000);
	assert_non_null(strstr(ut_errdetail(), "locked by another process"));

	o.lock_timeout_ms = 300;
	t = now_us();
	assert_int_equal(ut_open(dbpath, &o, &db), UT_ELOCKED);
	t = now_us() - t;
	if (t < 299000 || t > 2000000) /* ms clock: 299 ms may be "300" */
		fail_msg("UT_ELOCKED after %ld us with a 300 ms timeout", t);

	o.lock_timeout_ms = 5000;
	assert_int_equal(write(go[1], "g", 1), 1);
	t = now_us();
	assert_int_equal(ut_open(dbpath, &o, &db), UT_OK);
	t = now_us() - t;
	assert_true(t >= 50000 && t < 3000000);
	/* and a second handle in this process is refused too */
	o.lock_timeout_ms = 0;
	{
		ut_db *db2;

		assert_int_equal(ut_open(dbpath, &o, &db2), UT_ELOCKED);
	}
	assert_int_equal(ut_close(db), UT_OK);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(go[0]); close(go[1]); close(ready[0]); close(ready[1]);
}

int main(void)
{
	const char *tmp = getenv("UT_TMPDIR");
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_after_kill),
		cmocka_unit_test(test_live_holder),
	};

	if (!tmp || !*tmp)
		tmp = "/tmp";
	mkdir(tmp, 0777);
	snprintf(dir, sizeof(dir), "%s/restart-XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	snprintf(dbpath, sizeof(dbpath), "%s/db", dir);
	rc = cmocka_run_group_tests_name("restart", tests, NULL, NULL);
	if (rc == 0)
		rm_tree(dir);
	else
		fprintf(stderr, "test_restart: files kept in %s\n", dir);
	return rc;
}

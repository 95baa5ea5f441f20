/*
 * tests/test_soak.c - an application-shaped soak test against an oracle.
 *
 * What an ordinary application does, all at once on one handle: a writer
 * thread (random puts and deletes over a fixed key set, values from empty
 * to several overflow pages, aborted transactions, explicit checkpoints),
 * several threads of short read transactions, one long reader holding its
 * snapshot for up to a second and a half, and one thread running ut_backup
 * in a loop; a small cache (constant eviction) and a small snapshot_bytes.
 * Every read, every backup copy and the final database are checked against
 * an in-memory oracle of the committed state at the snapshot they hold.
 *
 * The oracle is versioned: each commit writes its sequence number under
 * SEQ_KEY, values are a function of (key, sequence), and the oracle keeps
 * per key the sequences that wrote or deleted it.  A thread learns its
 * snapshot's sequence by reading SEQ_KEY.  The oracle history is pruned
 * below the oldest sequence a live snapshot may hold (see slot_take).
 *
 * Outcomes:
 *  - a wrong value, key or scan order, or an error other than those
 *    below, fails the test (seed printed);
 *  - UT_ESNAPSHOT ("snapshot too old", the documented outcome past
 *    snapshot_bytes) is handled and counted: the thread ends that
 *    transaction or backup and starts a new one.  With UT_SOAK_STRICT
 *    (below) it fails the test for short readers and backups (1) or for
 *    every snapshot (2): a live snapshot needs at most one version of each
 *    page, and the budget covers that for all of them at once.
 *
 * The fault variant runs the same load on the simulated disk
 * (io/ut_simdisk.h) whose fault hook makes the log's writes or syncs, or
 * the data pages' (and double-write copies') writes or syncs, fail with
 * UT_EIO after a seeded number of them, from then on (or cuts the power).  Every thread must end with a
 * clear error (UT_EIO or UT_EFATAL; readers may also end cleanly when the
 * handle still serves reads), never a wrong read, and ut_close then
 * returns.  The database reopened with the faults gone holds a state
 * between the last acknowledged and the last attempted commit.
 *
 * A watchdog fails the test (prints what each thread was doing, then
 * aborts) if the threads do not end in time: nothing may hang.
 *
 * Environment:
 *   UT_SOAK_SECONDS  run time of the main soak (default 3; e.g. 600 for
 *                    the long form: UT_SOAK_SECONDS=600 build/test_soak),
 *                    half with sync=0, half with sync=1; each fault case
 *                    runs until its fault trips and every thread ended
 *   UT_SOAK_SEED     base seed (default 1); printed on every failure
 *   UT_SOAK_FAULT_ROUNDS  rounds of the fault cases, each with new seeds
 *                    (default 1)
 *   UT_SOAK_FAULT_CASE  run only the fault case of this seed (as printed)
 *   UT_SOAK_STRICT   2 (default): no snapshot may get UT_ESNAPSHOT (the
 *                    budget, SNAP_PAGES, is almost 4 times the data's ~200
 *                    pages, and a live snapshot needs at most one version
 *                    of a page); 1: short readers and backups only; 0:
 *                    count them only
 *   UT_SOAK_HANG_S   watchdog slack in seconds (default 60)
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "db.h"
#include "helper_fs.h"
#include "untorn.h"
#include "ut_io.h"
#include "ut_simdisk.h"

/* No snapshot may be told "too old" here: since issue 31's
 * version-lifetime fix (a version lives exactly while a live snapshot
 * sees it) the budget covers every live snapshot's needs.  Before it the
 * long reader got UT_ESNAPSHOT in about half its snapshots.
 * UT_SOAK_STRICT overrides. */
#define SOAK_STRICT_DEFAULT 2

#define NKEYS 1500
#define SEQ_KEY "~seq"
#define MAXOPS 16
#define NREADERS 3
#define SLOTS 8
#define FREE_SLOT UINT32_MAX
#define MAXVAL (128 * 1024)
#define CACHE_PAGES 48   /* ~200 pages of data: constant eviction */
#define SNAP_PAGES 768   /* a few times the data: what live snapshots need */
/* The fault cases: fewer frames and a log sync of a device's time, so
 * that readers wait for frames while a commit waits for the log. */
#define FAULT_CACHE_PAGES 24
#define LOG_SYNC_US 2000

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	return x ^ (x >> 16);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long env_long(const char *name, long def)
{
	const char *s = getenv(name);

	return s && *s ? strtol(s, NULL, 10) : def;
}

/* ---- values ------------------------------------------------------------ */

static void key_of(char *k, int i)
{
	snprintf(k, 16, "k%05d", i);
}

/* Mostly small values, some of a few KiB, some overflow chains. */
static uint32_t len_of(int key, uint32_t seq)
{
	uint32_t h = mix((uint32_t)key * 2654435761u ^ mix(seq));

	if (h % 64 == 0)
		return 17000 + h % 90000;
	if (h % 8 == 0)
		return 500 + h % 4000;
	return h % 200;
}

static void fill(uint8_t *v, uint32_t len, int key, uint32_t seq)
{
	for (uint32_t i = 0; i < len; i++)
		v[i] = (uint8_t)mix(seq * 131u + (uint32_t)key * 7u + i / 64) ^ (uint8_t)i;
}

/* ---- the versioned oracle -------------------------------------------- */

struct entry {
	uint32_t seq;
	uint32_t len; /* UINT32_MAX: deleted */
};

struct hist {
	struct entry *e;
	uint32_t n, cap;
};

static pthread_rwlock_t orc_lk = PTHREAD_RWLOCK_INITIALIZER;
static struct hist orc[NKEYS];

static void oracle_reset(void)
{
	pthread_rwlock_wrlock(&orc_lk);
	for (int i = 0; i < NKEYS; i++) {
		free(orc[i].e);
		orc[i] = (struct hist){ 0 };
	}
	pthread_rwlock_unlock(&orc_lk);
}

/* The writer records a change before it commits, so no reader can see a
 * sequence the oracle does not know. */
static void oracle_add(int i, uint32_t seq, uint32_t len)
{
	struct hist *h = &orc[i];

	pthread_rwlock_wrlock(&orc_lk);
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 8;
		h->e = realloc(h->e, h->cap * sizeof(*h->e));
		if (!h->e)
			abort();
	}
	if (h->n && h->e[h->n - 1].seq == seq)
		h->e[h->n - 1].len = len; /* the same key twice in one txn */
	else
		h->e[h->n++] = (struct entry){ seq, len };
	pthread_rwlock_unlock(&orc_lk);
}

/* Length of key i at sequence seq (UINT32_MAX: absent), and the sequence
 * that wrote it. */
static uint32_t oracle_at(int i, uint32_t seq, uint32_t *wseq)
{
	uint32_t len = UINT32_MAX;

	pthread_rwlock_rdlock(&orc_lk);
	for (uint32_t j = orc[i].n; j-- > 0;) {
		if (orc[i].e[j].seq <= seq) {
			len = orc[i].e[j].len;
			*wseq = orc[i].e[j].seq;
			break;
		}
	}
	pthread_rwlock_unlock(&orc_lk);
	return len;
}

/* Forget what no snapshot at or above min can read. */
static void oracle_prune(uint32_t min)
{
	pthread_rwlock_wrlock(&orc_lk);
	for (int i = 0; i < NKEYS; i++) {
		struct hist *h = &orc[i];
		uint32_t j = h->n;

		while (j > 0 && h->e[j - 1].seq > min)
			j--;
		/* e[j-1] is the newest at or below min: keep it and later */
		if (j > 1) {
			memmove(h->e, h->e + j - 1, (h->n - j + 1) * sizeof(*h->e));
			h->n -= j - 1;
		}
	}
	pthread_rwlock_unlock(&orc_lk);
}

/* ---- shared run state ------------------------------------------------- */

static ut_db *db;
static uint32_t run_seed;
static int strict;
static _Atomic int stop;
static _Atomic int nbad;
static _Atomic uint32_t last_seq;   /* last acknowledged commit */
static _Atomic uint32_t attempted;  /* last commit whose ut_commit was called */
static _Atomic uint32_t slot[SLOTS];

/* A thread that may hold a snapshot takes a slot holding a lower bound of
 * the sequence it will see: last_seq read before its ut_begin.  Pruning
 * takes the minimum of the slots and last_seq.  If the writer's scan
 * misses a slot being taken, the scan came first (seq_cst), so last_seq
 * was already stored and that commit published: the snapshot is at least
 * the pruning bound either way. */
static int slot_take(void)
{
	for (;;) {
		for (int i = 0; i < SLOTS; i++) {
			uint32_t free_v = FREE_SLOT;

			if (__atomic_compare_exchange_n(&slot[i], &free_v,
							__atomic_load_n(&last_seq, __ATOMIC_SEQ_CST),
							0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				return i;
		}
		usleep(100);
	}
}

static void slot_put(int i)
{
	__atomic_store_n(&slot[i], FREE_SLOT, __ATOMIC_SEQ_CST);
}

static uint32_t min_live(void)
{
	uint32_t m = __atomic_load_n(&last_seq, __ATOMIC_SEQ_CST);

	for (int i = 0; i < SLOTS; i++) {
		uint32_t v = __atomic_load_n(&slot[i], __ATOMIC_SEQ_CST);
		if (v < m)
			m = v;
	}
	return m;
}

/* Counters for the summary line. */
static _Atomic uint64_t n_commits, n_aborts, n_ckpts, n_short, n_gets,
	n_scans, n_long, n_long_esnap, n_short_esnap, n_backups,
	n_backup_esnap;

struct thr {
	const char *name;
	uint32_t seed;
	pthread_t th;
	const char *_Atomic op; /* what it is doing, for the watchdog */
	_Atomic int done;
	int end_rc;             /* its first error, 0 if none */
	int efatal;             /* the writer: ut_begin refused, UT_EFATAL */
	char end_detail[256];
};

/* ---- fault injection: the simulated disk's fault hook ---------------- */

enum role { R_OTHER, R_DATA, R_LOG, R_DW };
enum fkind { F_NONE, F_LOG_WRITE, F_LOG_SYNC, F_PAGE_WRITE, F_PAGE_SYNC, F_CUT };
static const char *const fkind_name[] = { "none", "log write", "log sync",
					  "page write", "page sync",
					  "power cut" };

static struct {
	ut_simdisk *d;
	char db[64];
	_Atomic int kind;
	_Atomic int64_t countdown; /* operations of that kind still allowed */
	_Atomic int64_t tripped_ms; /* 0 until the first injected failure */
	int log_sync_us;            /* each log sync takes this long */
} fv;

static int role_of(const char *path)
{
	size_t n = strlen(fv.db);

	if (strncmp(path, fv.db, n))
		return R_OTHER;
	return !path[n] ? R_DATA : !strcmp(path + n, "-wal") ? R_LOG
		: !strcmp(path + n, "-dw") ? R_DW : R_OTHER;
}

/* Called by the simulated disk before each write, write batch, truncate
 * and sync of any file. */
static int fault_hook(void *ctx, enum ut_simdisk_op op, const char *path)
{
	int role = role_of(path), k = fv.kind, is_sync = op == UT_SIMDISK_OP_SYNC;
	int match;

	(void)ctx;
	if (op == UT_SIMDISK_OP_TRUNCATE)
		return 0;
	/* a log sync that takes a device's time: commits wait for it while
	 * readers wait for frames, the moment a failure must wake them all */
	if (role == R_LOG && is_sync && fv.log_sync_us)
		usleep((useconds_t)fv.log_sync_us);
	match = (k == F_LOG_WRITE && role == R_LOG && !is_sync) ||
		(k == F_LOG_SYNC && role == R_LOG && is_sync) ||
		(k == F_PAGE_WRITE && (role == R_DATA || role == R_DW) && !is_sync) ||
		(k == F_PAGE_SYNC && (role == R_DATA || role == R_DW) && is_sync);
	if (!match || __atomic_sub_fetch(&fv.countdown, 1, __ATOMIC_SEQ_CST) >= 0)
		return 0;
	/* a dead device: every later operation of that kind fails too */
	int64_t zero = 0, t = now_ms();
	__atomic_compare_exchange_n(&fv.tripped_ms, &zero, t, 0,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	ut_set_errdetail("%s: injected %s failure", path, fkind_name[k]);
	return UT_EIO;
}

static int fault_tripped(void)
{
	if (fv.kind == F_CUT && fv.d && ut_simdisk_crashed(fv.d) && !fv.tripped_ms) {
		int64_t zero = 0;
		__atomic_compare_exchange_n(&fv.tripped_ms, &zero, now_ms(), 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	return fv.tripped_ms != 0;
}

/* ---- failures and errors --------------------------------------------- */

static int fault_mode;

static void failf(struct thr *th, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void failf(struct thr *th, const char *fmt, ...)
{
	va_list ap;

	flockfile(stderr);
	fprintf(stderr, "soak FAIL (seed %u, %s): %s: ", run_seed,
		fault_mode ? fkind_name[fv.kind] : "no faults", th->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " [detail: %s]\n", ut_errdetail());
	funlockfile(stderr);
	nbad++;
	stop = 1;
}

/* The errors a thread may end with when the disk fails. */
static int clear_error(int rc)
{
	return rc == UT_EIO || rc == UT_EFATAL;
}

/* A call returned rc (an error): the thread ends, with a clear error in
 * fault mode, else the test fails.  Returns 1 (end the thread). */
static int end_with(struct thr *th, int rc, const char *what)
{
	if (!fault_mode || !clear_error(rc)) {
		failf(th, "%s returned %d (%s)", what, rc, ut_strerror(rc));
	} else if (!th->end_rc) {
		th->end_rc = rc;
		snprintf(th->end_detail, sizeof(th->end_detail), "%s: %s", what,
			 ut_errdetail());
	}
	return 1;
}

/* ---- reading and checking a snapshot ---------------------------------- */

/* The snapshot's sequence, or a negative code. */
static int64_t read_seq(ut_txn *t)
{
	void *v;
	size_t vl;
	uint32_t seq;
	int rc = ut_get(t, SEQ_KEY, strlen(SEQ_KEY), &v, &vl);

	if (rc == UT_NOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (vl != 4)
		return free(v), UT_ECORRUPT;
	memcpy(&seq, v, 4);
	free(v);
	return seq;
}

/* 0: key i reads as the oracle says at seq; 1: it reads wrong; negative:
 * the engine's error. */
static int check_get(ut_txn *t, int i, uint32_t seq, uint8_t *exp, int by_ref)
{
	char k[16];
	const void *ref;
	void *v = NULL;
	size_t vl;
	uint32_t wseq = 0, len = oracle_at(i, seq, &wseq);
	int rc, bad;

	key_of(k, i);
	if (by_ref)
		rc = ut_get_ref(t, k, strlen(k), &ref, &vl);
	else
		rc = ut_get(t, k, strlen(k), &v, &vl), ref = v;
	n_gets++;
	if (rc < 0)
		return rc;
	if (len == UINT32_MAX)
		bad = rc != UT_NOTFOUND;
	else if (rc != UT_OK)
		bad = 1;
	else {
		fill(exp, len, i, wseq);
		bad = vl != len || memcmp(ref, exp, len);
	}
	if (bad)
		fprintf(stderr, "soak: key %d at seq %u: rc %d len %zu, oracle len %d "
			"(written at %u)\n", i, seq, rc, rc == UT_OK ? vl : 0,
			(int)len, wseq);
	free(v);
	return bad;
}

/* Walk up to max keys from key `from` (max < 0: to the end); 0 when they
 * are exactly the oracle's at seq, 1 when not, negative: engine error. */
static int check_scan(ut_txn *t, uint32_t seq, int from, int max, uint8_t *exp)
{
	ut_cursor *c;
	char k0[16];
	int next = from, bad = 0, rc, seen = 0;

	n_scans++;
	if ((rc = ut_cursor_open(t, &c)))
		return rc;
	key_of(k0, from);
	for (rc = ut_cursor_seek(c, k0, strlen(k0)); rc == UT_OK && !bad && seen != max;
	     rc = ut_cursor_next(c), seen++) {
		const void *k, *v;
		size_t kl, vl;
		uint32_t wseq = 0, len;
		char kz[8] = { 0 };
		int i;

		if ((rc = ut_cursor_get(c, &k, &kl, &v, &vl)))
			break;
		if (kl == strlen(SEQ_KEY) && !memcmp(k, SEQ_KEY, kl)) {
			seen = max; /* past the last key */
			rc = UT_NOTFOUND;
			break;
		}
		if (kl != 6 || (memcpy(kz, k, kl), sscanf(kz + 1, "%5d", &i) != 1) ||
		    i < next || i >= NKEYS) {
			bad = 1;
			break;
		}
		for (; next < i; next++)
			if (oracle_at(next, seq, &wseq) != UINT32_MAX)
				bad = 1; /* a key the scan skipped */
		len = oracle_at(i, seq, &wseq);
		if (len == UINT32_MAX || vl != len)
			bad = 1;
		else {
			fill(exp, len, i, wseq);
			bad |= memcmp(v, exp, len) != 0;
		}
		if (bad)
			fprintf(stderr, "soak: scan at seq %u: key %d len %zu, oracle "
				"len %d (written at %u)\n", seq, i, vl, (int)len, wseq);
		next = i + 1;
	}
	ut_cursor_close(c);
	if (rc < 0)
		return rc;
	if (rc == UT_NOTFOUND && !bad) /* the walk reached the end */
		for (uint32_t wseq; next < NKEYS; next++)
			if (oracle_at(next, seq, &wseq) != UINT32_MAX) {
				fprintf(stderr, "soak: scan at seq %u: key %d missing\n",
					seq, next);
				bad = 1;
			}
	return bad;
}

static uint8_t *buf_alloc(void)
{
	uint8_t *b = malloc(MAXVAL);

	if (!b)
		abort();
	return b;
}

/* ---- the writer ------------------------------------------------------- */

/* The writer's transactions.  In fault mode an error is recorded and the
 * writer goes on as an application would, until ut_begin refuses with
 * UT_EFATAL: the clear end (every failure of the disk fails the handle,
 * a page read of the writer's too). */
static void *writer_main(void *arg)
{
	struct thr *th = arg;
	uint32_t x = th->seed, seq = last_seq;
	uint8_t *val = buf_alloc();
	int rc = 0, errs = 0;

	while (!stop) {
		int ops = 1 + (int)(mix(x++) % MAXOPS);
		int abort_it = mix(x++) % 10 == 0;
		int keys[MAXOPS];
		uint32_t lens[MAXOPS];
		ut_txn *t;

		if (errs > 3) {
			/* every failure the disk makes -- a log or page write
			 * or sync, or, the power off, a page read of the
			 * writer's -- fails the handle: the next ut_begin
			 * refuses with UT_EFATAL.  (It used to accept 100
			 * transactions failing with UT_EIO on reads.) */
			failf(th, "%d failed transactions and ut_begin still "
			      "accepts: the handle never failed (first: %s)",
			      errs, th->end_detail);
			break;
		}
		th->op = "begin";
		if ((rc = ut_begin(db, 0, &t))) {
			end_with(th, rc, "ut_begin");
			if (rc == UT_EFATAL || !fault_mode)
				break;
			errs++;
			continue;
		}
		th->op = "put/del";
		for (int j = 0; j < ops && !rc; j++) {
			int i = (int)(mix(x++) % NKEYS);
			char k[16];

			key_of(k, i);
			keys[j] = i;
			if (mix(x++) % 4 == 0) {
				rc = ut_del(t, k, strlen(k));
				rc = rc == UT_NOTFOUND ? UT_OK : rc;
				lens[j] = UINT32_MAX;
			} else {
				lens[j] = len_of(i, seq + 1);
				fill(val, lens[j], i, seq + 1);
				rc = ut_put(t, k, strlen(k), val, lens[j]);
			}
		}
		if (!rc)
			rc = ut_put(t, SEQ_KEY, strlen(SEQ_KEY), &(uint32_t){ seq + 1 }, 4);
		if (rc) {
			ut_abort(t);
			end_with(th, rc, "ut_put/ut_del");
			errs++;
			continue;
		}
		if (abort_it) {
			ut_abort(t);
			n_aborts++;
			continue;
		}
		seq++;
		for (int j = 0; j < ops; j++)
			oracle_add(keys[j], seq, lens[j]);
		attempted = seq;
		th->op = "commit";
		if ((rc = ut_commit(t))) {
			/* in doubt: the oracle keeps seq, the next commit
			 * gets a new one */
			end_with(th, rc, "ut_commit");
			errs++;
			continue;
		}
		last_seq = seq;
		n_commits++;
		if (mix(x++) % (fault_mode ? 20 : 100) == 0) {
			th->op = "checkpoint";
			if ((rc = ut_checkpoint(db))) {
				end_with(th, rc, "ut_checkpoint");
				errs++;
				continue;
			}
			n_ckpts++;
		}
		if (seq % 256 == 0) {
			th->op = "prune";
			oracle_prune(min_live());
		}
	}
	if (fault_mode && rc == UT_EFATAL) {
		th->efatal = 1;
		/* let the readers meet the failed handle, then stop them
		 * as an application would */
		th->op = "grace";
		usleep(300 * 1000);
		stop = 1;
	}
	free(val);
	th->op = "done";
	th->done = 1;
	return NULL;
}

/* ---- readers ---------------------------------------------------------- */

/* A read's error: UT_ESNAPSHOT counted in *esnap (and fatal to the test when
 * strict), a clear error in fault mode ends the transaction, anything else
 * fails.  Returns 1 when the transaction must end. */
static int read_error(struct thr *th, int rc, const char *what, int must_not_esnap,
		      _Atomic uint64_t *esnap)
{
	if (rc == UT_ESNAPSHOT) {
		(*esnap)++;
		if (!strstr(ut_errdetail(), "snapshot too old"))
			failf(th, "UT_ESNAPSHOT without its detail");
		else if (must_not_esnap)
			failf(th, "%s: UT_ESNAPSHOT though the budget covers what "
			      "every live snapshot needs", what);
		return 1;
	}
	if (!fault_mode || !clear_error(rc))
		failf(th, "%s returned %d (%s)", what, rc, ut_strerror(rc));
	else if (!th->end_rc) {
		th->end_rc = rc;
		snprintf(th->end_detail, sizeof(th->end_detail), "%s: %s", what,
			 ut_errdetail());
	}
	return 1;
}

static void *reader_main(void *arg)
{
	struct thr *th = arg;
	uint32_t x = th->seed;
	uint8_t *exp = buf_alloc();
	int64_t rc;

	while (!stop) {
		ut_txn *t;
		uint32_t seq;
		int s = slot_take(), n = 1 + (int)(mix(x++) % 24);

		th->op = "begin";
		if ((rc = ut_begin(db, UT_RDONLY, &t))) {
			slot_put(s);
			end_with(th, (int)rc, "ut_begin(UT_RDONLY)");
			break;
		}
		th->op = "read";
		if ((rc = read_seq(t)) < 0) {
			read_error(th, (int)rc, "get " SEQ_KEY, strict, &n_short_esnap);
			goto end;
		}
		seq = (uint32_t)rc;
		for (int j = 0; j < n && !stop; j++) {
			int key = (int)(mix(x++) % NKEYS), by_ref = mix(x++) % 4 == 0;

			rc = check_get(t, key, seq, exp, by_ref);
			if (rc == 1)
				failf(th, "snapshot at seq %u read wrong", seq);
			if (rc)
				break;
		}
		if (!rc && mix(x++) % 4 == 0) {
			int from = (int)(mix(x++) % NKEYS), max = mix(x++) % 16 == 0 ? -1 : 40;

			th->op = "scan";
			rc = check_scan(t, seq, from, max, exp);
			if (rc == 1)
				failf(th, "snapshot at seq %u scanned wrong", seq);
		}
		if (rc < 0)
			read_error(th, (int)rc, "ut_get/scan", strict, &n_short_esnap);
end:
		ut_abort(t);
		slot_put(s);
		n_short++;
		if (rc < 0 && fault_mode)
			continue; /* the next begin tells whether the handle failed */
	}
	free(exp);
	th->op = "done";
	th->done = 1;
	return NULL;
}

/* Holds one snapshot for 0.2 to 1.5 s while the writer goes on; "too
 * old" is its documented outcome past snapshot_bytes. */
static void *long_reader_main(void *arg)
{
	struct thr *th = arg;
	uint32_t x = th->seed;
	uint8_t *exp = buf_alloc();
	int64_t rc;

	while (!stop) {
		ut_txn *t;
		uint32_t seq;
		int s = slot_take();
		int64_t t0 = now_ms(), hold = 200 + mix(x++) % 1300;

		th->op = "begin";
		if ((rc = ut_begin(db, UT_RDONLY, &t))) {
			slot_put(s);
			end_with(th, (int)rc, "ut_begin(UT_RDONLY)");
			break;
		}
		th->op = "read";
		if ((rc = read_seq(t)) < 0) {
			read_error(th, (int)rc, "get " SEQ_KEY, strict >= 2, &n_long_esnap);
			goto end;
		}
		seq = (uint32_t)rc;
		rc = 0;
		while (!rc && !stop && now_ms() - t0 < hold) {
			for (int j = 0; j < 8 && !rc; j++)
				rc = check_get(t, (int)(mix(x++) % NKEYS), seq, exp, 0);
			usleep(2000);
		}
		if (!rc && !stop) {
			th->op = "scan";
			rc = check_scan(t, seq, 0, -1, exp);
		}
		if (rc == 1)
			failf(th, "snapshot at seq %u (held %lld ms) read wrong", seq,
			      (long long)(now_ms() - t0));
		else if (rc < 0)
			read_error(th, (int)rc, "long read", strict >= 2, &n_long_esnap);
end:
		ut_abort(t);
		slot_put(s);
		n_long++;
	}
	free(exp);
	th->op = "done";
	th->done = 1;
	return NULL;
}

/* ---- backups ---------------------------------------------------------- */

static char *db_path;
static ut_vfs *run_vfs; /* NULL: POSIX files */

static int open_on(const char *path, const ut_options *o, ut_db **out)
{
	return run_vfs ? ut_db_open_vfs(run_vfs, path, o, out) : ut_open(path, o, out);
}

static void remove_on(const char *path)
{
	if (!run_vfs) {
		remove_db_files(path);
		return;
	}
	char p[256];
	(void)run_vfs->remove(run_vfs, path);
	snprintf(p, sizeof(p), "%s-wal", path);
	(void)run_vfs->remove(run_vfs, p);
	snprintf(p, sizeof(p), "%s-dw", path);
	(void)run_vfs->remove(run_vfs, p);
}

/* The copy opens, checks clean and equals the oracle at its snapshot,
 * which is no older than the lower bound taken before ut_backup and no
 * newer than the commit attempted when it returned. */
/* An error reading the copy: with the power cut (the copy lives on the
 * same simulated disk) a clear error, else a failure. */
static void copy_err(struct thr *th, int rc, const char *what)
{
	if (fault_mode && clear_error(rc))
		end_with(th, rc, what);
	else
		failf(th, "%s of the backup returned %d (%s)", what, rc,
		      ut_strerror(rc));
}

static void check_copy(struct thr *th, const char *dest, uint32_t lo, uint32_t hi,
		       uint8_t *exp)
{
	ut_options o;
	ut_db *c;
	ut_txn *t;
	int64_t rc;

	ut_options_default(&o);
	o.create = 0;
	o.cache_bytes = 256 * UT_PAGE_SIZE;
	th->op = "open copy";
	if ((rc = open_on(dest, &o, &c))) {
		copy_err(th, (int)rc, "ut_open");
		return;
	}
	th->op = "check copy";
	if ((rc = ut_check(c, stderr, NULL)))
		copy_err(th, (int)rc, "ut_check");
	else if ((rc = ut_begin(c, UT_RDONLY, &t)))
		copy_err(th, (int)rc, "ut_begin");
	else {
		rc = read_seq(t);
		if (rc < 0)
			copy_err(th, (int)rc, "get " SEQ_KEY);
		else if (rc < lo || rc > hi)
			failf(th, "the backup holds seq %lld, not in [%u, %u]",
			      (long long)rc, lo, hi);
		else if ((rc = check_scan(t, (uint32_t)rc, 0, -1, exp)) == 1)
			failf(th, "the backup differs from the oracle");
		else if (rc)
			copy_err(th, (int)rc, "scan");
		ut_abort(t);
	}
	if ((rc = ut_close(c)))
		copy_err(th, (int)rc, "ut_close");
}

static void *backup_main(void *arg)
{
	struct thr *th = arg;
	uint8_t *exp = buf_alloc();
	char dest[256];
	int rc;

	for (int n = 0; !stop; n++) {
		int s = slot_take();
		uint32_t lo = __atomic_load_n(&slot[s], __ATOMIC_SEQ_CST);

		snprintf(dest, sizeof(dest), "%s-bk%d", db_path, n % 2);
		remove_on(dest);
		th->op = "backup";
		rc = ut_backup(db, dest);
		uint32_t hi = attempted;
		if (rc == UT_OK) {
			check_copy(th, dest, lo, hi, exp);
			n_backups++;
		} else if (rc == UT_ESNAPSHOT) {
			read_error(th, rc, "ut_backup", strict, &n_backup_esnap);
			if (run_vfs ? run_vfs->exists(run_vfs, dest) == 1
				    : access(dest, F_OK) == 0)
				failf(th, "a failed backup left %s", dest);
		} else {
			slot_put(s);
			end_with(th, rc, "ut_backup");
			break;
		}
		remove_on(dest);
		slot_put(s);
	}
	free(exp);
	th->op = "done";
	th->done = 1;
	return NULL;
}

/* ---- the watchdog ----------------------------------------------------- */

#define NTHR (3 + NREADERS)
static struct thr thr[NTHR];
static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv = PTHREAD_COND_INITIALIZER;
static int wd_quit;
static int64_t wd_deadline; /* ms; every thread must have ended by then */
static int64_t wd_fault_ms; /* after a fault trips, this long to end */

static void *watchdog_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&wd_mu);
	while (!wd_quit) {
		struct timespec ts;
		int64_t now = now_ms();

		if (fault_mode && fault_tripped() && now > fv.tripped_ms + wd_fault_ms)
			break;
		if (now > wd_deadline)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&wd_cv, &wd_mu, &ts);
	}
	if (!wd_quit) {
		fprintf(stderr, "soak HANG (seed %u, %s): threads did not end in time%s\n",
			run_seed, fault_mode ? fkind_name[fv.kind] : "no faults",
			fault_mode && fault_tripped() ? " after the fault" : "");
		for (int i = 0; i < NTHR; i++)
			fprintf(stderr, "  %-8s %s%s\n", thr[i].name, thr[i].op,
				thr[i].done ? "" : " (still running)");
		fflush(stderr);
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	pthread_mutex_unlock(&wd_mu);
	return NULL;
}

/* ---- one run ---------------------------------------------------------- */

struct cfg {
	uint32_t seed;
	double seconds;
	int fault;       /* enum fkind */
	int64_t after;   /* operations of that kind before the first failure */
	int doublewrite; /* fault mode: simulated disk without atomic writes */
	int sync;
};

static void reset_run(void)
{
	oracle_reset();
	stop = 0;
	nbad = 0;
	last_seq = attempted = 0;
	for (int i = 0; i < SLOTS; i++)
		slot[i] = FREE_SLOT;
	n_commits = n_aborts = n_ckpts = n_short = n_gets = n_scans = 0;
	n_long = n_long_esnap = n_short_esnap = n_backups = n_backup_esnap = 0;
	memset(thr, 0, sizeof(thr));
	wd_quit = 0;
}

/* Every key once, in transactions of 100 keys. */
static void load(void)
{
	uint8_t *val = buf_alloc();
	uint32_t seq = 0;

	for (int i = 0; i < NKEYS; i += 100) {
		ut_txn *t;

		seq++;
		assert_int_equal(ut_begin(db, 0, &t), UT_OK);
		for (int j = i; j < i + 100 && j < NKEYS; j++) {
			char k[16];
			uint32_t len = len_of(j, seq);

			key_of(k, j);
			fill(val, len, j, seq);
			assert_int_equal(ut_put(t, k, strlen(k), val, len), UT_OK);
			oracle_add(j, seq, len);
		}
		assert_int_equal(ut_put(t, SEQ_KEY, strlen(SEQ_KEY), &seq, 4), UT_OK);
		assert_int_equal(ut_commit(t), UT_OK);
	}
	last_seq = attempted = seq;
	free(val);
}

/* The whole database equals the oracle at a sequence in [lo, hi]. */
static void verify_db(ut_db *d, uint32_t lo, uint32_t hi, const char *what)
{
	uint8_t *exp = buf_alloc();
	ut_txn *t;
	int64_t seq;
	ut_check_result cr;
	struct thr me = { .name = what };

	assert_int_equal(ut_check(d, stderr, &cr), UT_OK);
	fprintf(stderr, "  %s: %llu pages, %llu keys, depth %u\n", what,
		(unsigned long long)cr.pages_total, (unsigned long long)cr.keys,
		cr.depth);
	assert_int_equal(ut_begin(d, UT_RDONLY, &t), UT_OK);
	seq = read_seq(t);
	if (seq < lo || seq > hi)
		failf(&me, "holds seq %lld, not in [%u, %u]", (long long)seq, lo, hi);
	else if (check_scan(t, (uint32_t)seq, 0, -1, exp))
		failf(&me, "differs from the oracle at seq %lld", (long long)seq);
	ut_abort(t);
	free(exp);
	assert_int_equal(nbad, 0);
}

static void run_soak(const struct cfg *c)
{
	ut_options o;
	ut_simdisk *d = NULL;
	pthread_t wd;
	ut_stats st;
	int rc;
	void *(*mains[NTHR])(void *) = { writer_main, long_reader_main, backup_main };
	const char *names[NTHR] = { "writer", "long", "backup", "reader0",
				    "reader1", "reader2" };

	reset_run();
	run_seed = c->seed;
	fault_mode = c->fault != F_NONE;
	strict = (int)env_long("UT_SOAK_STRICT", SOAK_STRICT_DEFAULT);
	ut_options_default(&o);
	o.cache_bytes = (fault_mode ? FAULT_CACHE_PAGES : CACHE_PAGES) * UT_PAGE_SIZE;
	o.snapshot_bytes = SNAP_PAGES * UT_PAGE_SIZE;
	o.sync = c->sync;
	if (fault_mode) {
		d = ut_simdisk_new();
		assert_non_null(d);
		if (c->doublewrite)
			ut_simdisk_set_atomic(d, 0, 0);
		memset(&fv, 0, sizeof(fv));
		fv.d = d;
		snprintf(fv.db, sizeof(fv.db), "/soak.db");
		fv.log_sync_us = LOG_SYNC_US;
		ut_simdisk_set_fault_hook(d, fault_hook, NULL);
		db_path = strdup(fv.db);
		run_vfs = ut_simdisk_vfs(d);
		assert_int_equal(ut_db_open_vfs(run_vfs, db_path, &o, &db), UT_OK);
	} else {
		db_path = tmp_db_path("soak", "main");
		run_vfs = NULL;
		assert_int_equal(ut_open(db_path, &o, &db), UT_OK);
	}
	load();
	/* arm the fault only now: the load is not what is under test */
	if (c->fault == F_CUT)
		ut_simdisk_crash_at(d, ut_simdisk_event_count(d) + (uint64_t)c->after);
	fv.countdown = c->after;
	fv.kind = c->fault;

	int64_t t0 = now_ms(), run_ms = (int64_t)(c->seconds * 1000);
	wd_deadline = t0 + run_ms + 1000 * env_long("UT_SOAK_HANG_S", 60);
	wd_fault_ms = 1000 * env_long("UT_SOAK_HANG_S", 60) / 4;
	assert_int_equal(pthread_create(&wd, NULL, watchdog_main, NULL), 0);
	for (int i = 0; i < NTHR; i++) {
		thr[i].name = names[i];
		thr[i].seed = mix(c->seed * 977u + (uint32_t)i);
		thr[i].op = "start";
		assert_int_equal(pthread_create(&thr[i].th, NULL,
						mains[i] ? mains[i] : reader_main,
						&thr[i]), 0);
	}
	while (!stop && now_ms() - t0 < run_ms)
		usleep(10000);
	stop = 1;
	for (int i = 0; i < NTHR; i++)
		pthread_join(thr[i].th, NULL);
	pthread_mutex_lock(&wd_mu);
	wd_quit = 1;
	pthread_cond_broadcast(&wd_cv);
	pthread_mutex_unlock(&wd_mu);
	pthread_join(wd, NULL);

	fprintf(stderr,
		"soak seed %u (%s%s, sync=%d) %.1f s: %llu commits, %llu aborts, "
		"%llu checkpoints; %llu short reads (%llu gets, %llu scans); %llu long "
		"reads; %llu backups; UT_ESNAPSHOT: long %llu, short %llu, backup %llu%s\n",
		c->seed, fkind_name[c->fault], c->doublewrite ? ", doublewrite" : "",
		c->sync, (double)(now_ms() - t0) / 1000,
		(unsigned long long)n_commits, (unsigned long long)n_aborts,
		(unsigned long long)n_ckpts, (unsigned long long)n_short,
		(unsigned long long)n_gets, (unsigned long long)n_scans,
		(unsigned long long)n_long, (unsigned long long)n_backups,
		(unsigned long long)n_long_esnap, (unsigned long long)n_short_esnap,
		(unsigned long long)n_backup_esnap,
		strict >= 2 ? " (strict: none)" : strict ? " (strict: short, backup)" : "");
	assert_int_equal(nbad, 0);
	assert_int_equal(ut_stats_get(db, &st), UT_OK);
	fprintf(stderr, "  stats: %llu page writes, %llu flush batches, %llu frame "
		"waits, %llu versions dropped for the budget\n",
		(unsigned long long)st.page_writes, (unsigned long long)st.flush_batches,
		(unsigned long long)st.frame_waits,
		(unsigned long long)st.snapshot_dropped);
	/* every snapshot ended: nothing kept for them */
	assert_int_equal(st.snapshots, 0);
	assert_int_equal(st.snapshot_versions, 0);

	if (!fault_mode) {
		assert_true(n_commits > 0 && n_short > 0 && n_long > 0);
		assert_true(n_backups + n_backup_esnap > 0);
		verify_db(db, last_seq, last_seq, "final state");
		assert_int_equal(ut_close(db), UT_OK);
		assert_int_equal(ut_open(db_path, &o, &db), UT_OK);
		verify_db(db, last_seq, last_seq, "reopened");
		assert_int_equal(ut_close(db), UT_OK);
		remove_db_files(db_path);
	} else {
		for (int i = 0; i < NTHR; i++)
			if (thr[i].end_rc)
				fprintf(stderr, "  %-8s ended with %d: %s\n", thr[i].name,
					thr[i].end_rc, thr[i].end_detail);
		/* the fault happened, and the writer met it */
		assert_true(fault_tripped());
		assert_true(clear_error(thr[0].end_rc));
		assert_true(thr[0].efatal);
		rc = ut_close(db);
		fprintf(stderr, "  ut_close: %d\n", rc);
		assert_true(clear_error(rc));
		/* the faults gone, the reopened database holds every
		 * acknowledged commit and at most the one in doubt */
		fv.kind = F_NONE;
		if (c->fault == F_CUT)
			assert_int_equal(ut_simdisk_reboot(d, c->seed), UT_OK);
		o.create = 0;
		assert_int_equal(ut_db_open_vfs(run_vfs, db_path, &o, &db), UT_OK);
		verify_db(db, last_seq, attempted, "reopened after the fault");
		assert_int_equal(ut_close(db), UT_OK);
		ut_simdisk_free(d);
		run_vfs = NULL;
	}
	free(db_path);
	db_path = NULL;
}

static double soak_seconds(void)
{
	const char *s = getenv("UT_SOAK_SECONDS");

	return s && *s ? atof(s) : 3.0;
}

static void test_soak(void **s)
{
	(void)s;
	uint32_t seed = (uint32_t)env_long("UT_SOAK_SEED", 1);

	/* half the time as SQLite's synchronous=OFF (many commits, much
	 * version churn), half durable (fewer, slower commits) */
	for (int sync = 0; sync < 2; sync++) {
		struct cfg c = { .seed = seed + (uint32_t)sync,
				 .seconds = soak_seconds() / 2, .sync = sync };
		run_soak(&c);
	}
}

/* Each failure kind, after a seeded number of its operations, in atomic
 * and doublewrite mode. */
static void test_soak_faults(void **s)
{
	(void)s;
	uint32_t base = (uint32_t)env_long("UT_SOAK_SEED", 1);
	/* each case runs until its fault has tripped and the threads have
	 * ended, or at most this long */
	double secs = soak_seconds() > 20 ? soak_seconds() : 20;

	long rounds = env_long("UT_SOAK_FAULT_ROUNDS", 1);

	for (long r = 0; r < rounds; r++)
	for (int k = F_LOG_WRITE; k <= F_CUT; k++)
		for (int dw = 0; dw < 2; dw++) {
			uint32_t seed = base * 1000 + (uint32_t)(r * 100 + k * 2 + dw);
			long only = env_long("UT_SOAK_FAULT_CASE", 0);

			if (only && only != (long)seed)
				continue;
			struct cfg c = { .seed = seed, .seconds = secs, .fault = k,
					 .doublewrite = dw, .sync = 1,
					 .after = k == F_PAGE_SYNC ? 1 + mix(seed) % 4
						  : k == F_CUT ? 100 + mix(seed) % 400
						  : 3 + mix(seed) % 40 };
			run_soak(&c);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
		cmocka_unit_test(test_soak_faults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

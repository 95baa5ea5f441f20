/*
 * tests/test_fuzz_files.c - damaged files never cost an acknowledged commit
 * silently (issue 8).
 *
 * Two base databases are built once per run, each by a child process that
 * then exits without closing (as a crash would leave them):
 *   A: 3000 keys (a few 40-300 KB overflow values), a checkpoint, then 40
 *      sync=1 commits (updates, deletes, inserts, a 50 KB value each) that
 *      live only in the log;
 *   B: the same with a 160 KiB cache, so pages newer than the checkpoint are
 *      in the data file and the -dw file holds copies of them.
 * The test records the state after the checkpoint and after each of the 40
 * commits (an in-memory oracle).  Every iteration copies one base, applies
 * ONE mutation to ONE file (data, -wal or -dw: bit flips, byte runs,
 * truncation, inserted, removed and duplicated chunks, zeroed ranges,
 * deletion), then, in a child process with a timeout, opens the copy, scans
 * every key, runs ut_check, closes, reopens and scans again.
 *
 * Outcomes (the table at the end counts them by base/file and by mutation):
 *   refused      open failed with UT_ECORRUPT/UT_ENOTDB/UT_EVERSION and a
 *                detail.  A FAILURE only for a -dw slot mutation: the data
 *                file is intact, so no copy is needed and none may block
 *                open.
 *   all          the scan equals the state after commit 40, check is clean.
 *   detected     (data-file mutations only) open succeeded, then a read or
 *                ut_check reported the damage as UT_ECORRUPT.  After a -wal
 *                or -dw mutation the data file was intact, so a damaged
 *                database after open is a FAILURE (corrupt-after-open).
 *   fewer-case5  the state after commit k < 40, allowed only when the files
 *                hold no evidence of the lost commits: the mutated log has
 *                its current header slot and the records of commits 1..k
 *                byte for byte, no whole record of the current epoch
 *                written after commit k + 1 was durable (its "durable
 *                floor" beyond commit k) survives anywhere in it, at any
 *                offset, and no page in the data file or -dw is newer
 *                than commit k.
 *                "case5" is the case 5, a cut exactly at a record
 *                boundary; "tornlike" is a cut or damage inside the last
 *                surviving batch, which is what a power cut during that
 *                write leaves (wal.h: it cannot be told from a torn tail).
 *   fewer-reported  a -wal truncated to nothing: untorn.h's way to
 *                accept the loss of a lost log; the open goes on and its
 *                ut_errdetail reports the loss, and check is clean.
 *   FAILURES     fewer (any other loss), wrong (the scan equals no
 *                committed state), refused-odd (another error code or no
 *                detail), reopen-differs, crash (signal, sanitizer report),
 *                hang (no answer within UT_FUZZ_TIMEOUT seconds).
 *
 * Environment: UT_FUZZ_ITERS (default 300), UT_FUZZ_SEED (default 1),
 * UT_FUZZ_ONLY=i (run iteration i of the seed alone: reproduces a failure),
 * UT_FUZZ_TIMEOUT (seconds per iteration, default 120), UT_FUZZ_VERBOSE=1
 * (one line per iteration), UT_TMPDIR (scratch directory).
 *
 * The long run (at least 10,000 iterations, under ASan+UBSan):
 *   cmake -S . -B build-asan -DUT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug &&
 *   cmake --build build-asan -j2 --target test_fuzz_files &&
 *   UT_FUZZ_ITERS=10000 UT_FUZZ_SEED=8 UT_TMPDIR=/tmp/ut-fuzz \
 *       build-asan/test_fuzz_files
 * Every failure line names seed and iteration; UT_FUZZ_ONLY replays one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "untorn.h"
#include "db.h"
#include "flush_doublewrite.h"
#include "helper_fs.h"
#include "helper_fuzz.h"
#include "page.h"
#include "pager.h"
#include "ut_crc32c.h"
#include "wal.h"

#define NCOMMITS 40
#define NBASE_KEYS 3000
#define MAX_IDS 3400
#define SCAN_CAP 20000 /* more keys than any state has: a looping scan */
#define B_CACHE (160u * 1024u)
#define A_CACHE (64u << 20)

/* ---- deterministic randomness ------------------------------------------ */

/* ---- values and the oracle -------------------------------------------- */

/* The value of key id written by generation gen: len bytes from a stream
 * keyed by (id, gen), so every version of every key differs. */
static void fill_value(uint8_t *v, uint32_t id, uint32_t gen, size_t len)
{
	uint64_t s = fz_mix64((uint64_t)id << 32 | gen);

	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = fz_mix64(s + i);
		size_t n = len - i < 8 ? len - i : 8;

		memcpy(v + i, &w, n);
	}
}

static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0x84222325cbf29ce4ull ^ n;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, b + i, 8);
		h = fz_mix64(h ^ w);
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return fz_mix64(h);
}

typedef struct slot {
	uint8_t present;
	uint32_t gen, len;
	uint64_t hash;
} slot;

/* One key of a scanned or expected state, in key order. */
typedef struct entry {
	uint32_t id, len;
	uint64_t hash;
} entry;

typedef struct state {
	entry *e;
	size_t n;
} state;

enum op_kind { OP_PUT, OP_DEL };

typedef struct op {
	int kind;
	uint32_t id, len;
} op;

typedef struct commit_ops {
	op ops[16];
	int n;
} commit_ops;

static commit_ops g_commits[NCOMMITS + 1]; /* [1..40] */
static state g_states[NCOMMITS + 1];       /* after commit k; 0 = checkpoint */
static uint32_t g_base_len[NBASE_KEYS];

static const uint32_t overflow_ids[] = { 42, 777, 1500, 2222, 2998, 11 };
static const uint32_t overflow_len[] = { 40000, 300000, 120000, 64000, 200000, 90000 };

static void key_of(char k[16], uint32_t id) { snprintf(k, 16, "key%05u", id); }

static void set_slot(slot *s, uint32_t id, uint32_t gen, uint32_t len)
{
	uint8_t *v = malloc(len ? len : 1);

	fill_value(v, id, gen, len);
	s->present = 1;
	s->gen = gen;
	s->len = len;
	s->hash = hash_bytes(v, len);
	free(v);
}

static state snapshot(const slot *sl)
{
	state st = { calloc(MAX_IDS, sizeof(entry)), 0 };

	for (uint32_t id = 0; id < MAX_IDS; id++)
		if (sl[id].present)
			st.e[st.n++] = (entry){ id, sl[id].len, sl[id].hash };
	return st;
}

/* The workload (fixed, independent of the fuzz seed) and its oracle. */
static void build_oracle(void)
{
	static slot sl[MAX_IDS];
	fz_rng r = { 0x5eed0f0ddull };
	uint32_t next_new = NBASE_KEYS;

	for (uint32_t id = 0; id < NBASE_KEYS; id++)
		g_base_len[id] = 40 + (uint32_t)fz_below(&r, 360);
	for (size_t i = 0; i < sizeof(overflow_ids) / sizeof(*overflow_ids); i++)
		g_base_len[overflow_ids[i]] = overflow_len[i];
	for (uint32_t id = 0; id < NBASE_KEYS; id++)
		set_slot(&sl[id], id, 0, g_base_len[id]);
	g_states[0] = snapshot(sl);

	for (int c = 1; c <= NCOMMITS; c++) {
		commit_ops *co = &g_commits[c];
		uint32_t id;

		co->n = 0;
		/* one 50 KB value: a transaction spanning several log records */
		id = (uint32_t)fz_below(&r, next_new);
		co->ops[co->n++] = (op){ OP_PUT, id, 50000 + (uint32_t)fz_below(&r, 2000) };
		for (int i = 0; i < 6; i++) {
			id = (uint32_t)fz_below(&r, next_new);
			co->ops[co->n++] = (op){ OP_PUT, id, 40 + (uint32_t)fz_below(&r, 360) };
		}
		for (int i = 0; i < 3; i++)
			co->ops[co->n++] = (op){ OP_DEL, (uint32_t)fz_below(&r, next_new), 0 };
		for (int i = 0; i < 2 && next_new < MAX_IDS; i++)
			co->ops[co->n++] = (op){ OP_PUT, next_new++, 40 + (uint32_t)fz_below(&r, 360) };
		if (c % 8 == 0) /* an overflow value changes size */
			co->ops[co->n++] = (op){ OP_PUT, overflow_ids[c / 8 % 6],
						 40000 + (uint32_t)fz_below(&r, 260000) };
		for (int i = 0; i < co->n; i++) {
			op *o = &co->ops[i];

			if (o->kind == OP_PUT)
				set_slot(&sl[o->id], o->id, (uint32_t)c, o->len);
			else
				sl[o->id].present = 0; /* deleting an absent key: NOTFOUND */
		}
		g_states[c] = snapshot(sl);
	}
}

static int same_state(const state *a, const state *b)
{
	return a->n == b->n && !memcmp(a->e, b->e, a->n * sizeof(entry));
}

/* ---- small file helpers ------------------------------------------------ */

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "test_fuzz_files: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* ---- building a base database ------------------------------------------ */

enum { F_DATA, F_WAL, F_DW, NFILES };
static const char *const file_name[NFILES] = { "data", "wal", "dw" };
static const char *const file_suffix[NFILES] = { "", "-wal", "-dw" };

typedef struct base {
	char name;
	size_t cache;
	char path[512];
	fz_blob f[NFILES];
	/* from the child that built it */
	uint64_t commit_lsn[NCOMMITS + 1]; /* [0] = redo start (checkpoint) */
	/* from parsing the files */
	uint64_t wal_salt, wal_start_lsn;
	unsigned wal_slot;                   /* current header slot, 0 or 1 */
	size_t commit_end_off[NCOMMITS + 1]; /* [0] = UT_WAL_DATA_OFF */
	size_t *rec_end;                     /* every record boundary */
	size_t nrec;
	uint64_t max_page_lsn; /* over the data file and every -dw copy */
} base;

static base g_base[2];

static ut_options base_options(const base *b)
{
	ut_options o;

	ut_options_default(&o);
	o.protect = UT_PROTECT_DOUBLEWRITE;
	o.cache_bytes = b->cache;
	o.sync = 1;
	return o;
}

static int put_id(ut_txn *t, uint32_t id, uint32_t gen, uint32_t len)
{
	char k[16];
	uint8_t *v = malloc(len ? len : 1);
	int rc;

	key_of(k, id);
	fill_value(v, id, gen, len);
	rc = ut_put(t, k, strlen(k), v, len);
	free(v);
	return rc;
}

/* In the child: load, checkpoint, 40 commits, report each commit's LSN on
 * fd, then exit without closing. */
static void build_child(const base *b, int fd)
{
	ut_options o = base_options(b);
	uint64_t lsn[NCOMMITS + 1];
	ut_wal_stats ws;
	ut_txn *t;
	ut_db *db;
	uint64_t ckpts;

	if (ut_open(b->path, &o, &db))
		_exit(10);
	for (uint32_t id = 0; id < NBASE_KEYS; id++) {
		if (id % 500 == 0 && ut_begin(db, 0, &t))
			_exit(11);
		if (put_id(t, id, 0, g_base_len[id]))
			_exit(12);
		if (id % 500 == 499 && ut_commit(t))
			_exit(13);
	}
	if (ut_checkpoint(db))
		_exit(14);
	ut_wal_stats_get(ut_db_wal(db), &ws);
	lsn[0] = ws.next_lsn;
	ckpts = ut_db_auto_checkpoints(db);
	for (int c = 1; c <= NCOMMITS; c++) {
		const commit_ops *co = &g_commits[c];

		if (ut_begin(db, 0, &t))
			_exit(15);
		for (int i = 0; i < co->n; i++) {
			const op *p = &co->ops[i];
			char k[16];
			int rc;

			key_of(k, p->id);
			rc = p->kind == OP_PUT ? put_id(t, p->id, (uint32_t)c, p->len)
					       : ut_del(t, k, strlen(k));
			if (rc != UT_OK && !(p->kind == OP_DEL && rc == UT_NOTFOUND))
				_exit(16);
		}
		if (ut_commit(t))
			_exit(17);
		ut_wal_stats_get(ut_db_wal(db), &ws);
		lsn[c] = ws.next_lsn;
	}
	if (ut_db_auto_checkpoints(db) != ckpts)
		_exit(18); /* the 40 commits must be in the log only */
	if (write(fd, lsn, sizeof(lsn)) != (ssize_t)sizeof(lsn))
		_exit(19);
	_exit(0); /* no ut_close: the database is left as a crash leaves it */
}

static uint32_t get32le(const uint8_t *p) { return ut_ld32(p); }
static uint64_t get64le(const uint8_t *p) { return ut_ld64(p); }

/* A valid log header slot: 1 and its fields, else 0. */
static int wal_header(const uint8_t *h, uint64_t *epoch, uint64_t *salt,
		      uint64_t *start)
{
	if (memcmp(h, "UTORNWAL", 8) || get32le(h + 60) != ut_crc32c(0, h, 60))
		return 0;
	*epoch = get64le(h + 16);
	*salt = get64le(h + 24);
	*start = get64le(h + 32);
	return 1;
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* A whole, valid record of the epoch with this salt at off (its LSN is not
 * checked against the position): its padded length, else 0. */
static size_t record_at(const uint8_t *p, size_t size, size_t off, uint64_t salt)
{
	const uint8_t *h = p + off;
	uint32_t len;

	if (off + UT_WAL_REC_HDR > size || get64le(h + 24) != salt)
		return 0;
	len = get32le(h + 8);
	if (len < UT_WAL_REC_HDR || len > UT_WAL_MAX_REC || off + pad8(len) > size ||
	    (h[4] != 1 && h[4] != 2))
		return 0;
	if (get32le(h) != ut_crc32c(0, h + 4, pad8(len) - 4))
		return 0;
	return pad8(len);
}

static void parse_wal(base *b)
{
	const fz_blob *w = &b->f[F_WAL];
	uint64_t ep[2] = { 0, 0 }, salt[2], start[2];
	int ok[2];
	size_t off = UT_WAL_DATA_OFF, cap = 256;
	int commits = 0;

	if (w->n < UT_WAL_DATA_OFF)
		die("base %c: log of %zu bytes", b->name, w->n);
	for (int s = 0; s < 2; s++)
		ok[s] = wal_header(w->p + s * 4096, &ep[s], &salt[s], &start[s]);
	if (!ok[0] && !ok[1])
		die("base %c: no valid log header", b->name);
	b->wal_slot = ok[1] && (!ok[0] || ep[1] > ep[0]) ? 1 : 0;
	b->wal_salt = salt[b->wal_slot];
	b->wal_start_lsn = start[b->wal_slot];
	b->rec_end = malloc(cap * sizeof(size_t));
	b->nrec = 0;
	b->commit_end_off[0] = off;
	for (;;) {
		size_t n = record_at(w->p, w->n, off, b->wal_salt);

		if (!n || get64le(w->p + off + 16) != b->wal_start_lsn + (off - UT_WAL_DATA_OFF))
			break;
		if (b->nrec == cap)
			b->rec_end = realloc(b->rec_end, (cap *= 2) * sizeof(size_t));
		off += n;
		b->rec_end[b->nrec++] = off;
		if (w->p[off - n + 4] == 2 && commits < NCOMMITS)
			b->commit_end_off[++commits] = off;
	}
	if (commits != NCOMMITS)
		die("base %c: %d commits parsed in the log, not %d", b->name, commits,
		    NCOMMITS);
	/* every record of commit c was appended when the log was durable up
	 * to commit c - 1: the floor evidence_after relies on */
	for (size_t i = 0, c = 1; i < b->nrec; i++) {
		size_t start = i ? b->rec_end[i - 1] : UT_WAL_DATA_OFF;
		uint64_t want = b->wal_start_lsn + (b->commit_end_off[c - 1] - UT_WAL_DATA_OFF);

		if (get64le(w->p + start + 32) != want)
			die("base %c: record at %zu has durable floor %llu, not %llu",
			    b->name, start, (unsigned long long)get64le(w->p + start + 32),
			    (unsigned long long)want);
		if (c < NCOMMITS && b->rec_end[i] == b->commit_end_off[c])
			c++;
	}
	/* the parser and the engine agree on where every commit ends */
	for (int c = 0; c <= NCOMMITS; c++)
		if (b->wal_start_lsn + (b->commit_end_off[c] - UT_WAL_DATA_OFF) !=
		    b->commit_lsn[c])
			die("base %c: commit %d ends at LSN %llu in the log, engine said %llu",
			    b->name, c,
			    (unsigned long long)(b->wal_start_lsn + b->commit_end_off[c] -
						 UT_WAL_DATA_OFF),
			    (unsigned long long)b->commit_lsn[c]);
}

static int page_valid(const uint8_t *p)
{
	return ut_ld32(p) == ut_crc32c(0, p + 4, UT_PAGE_SIZE - 4);
}

/* The newest page anywhere: evidence of how far the durable log reached. */
static void scan_pages(base *b)
{
	const fz_blob *d = &b->f[F_DATA], *dw = &b->f[F_DW];
	uint64_t max = 0, redo;

	if (d->n < UT_PAGE_SIZE || d->n % UT_PAGE_SIZE)
		die("base %c: data file of %zu bytes", b->name, d->n);
	for (size_t off = 0; off < d->n; off += UT_PAGE_SIZE)
		if (page_valid(d->p + off) && ut_page_lsn(d->p + off) > max)
			max = ut_page_lsn(d->p + off);
	for (uint32_t s = 0; s < UT_DW_SLOTS; s++) {
		size_t off = UT_DW_SLOT_OFF(s);
		const uint8_t *h = dw->p + off;

		if (off + UT_DW_SLOT_BYTES > dw->n)
			break;
		if (ut_ld64(h) == UT_DW_MAGIC && ut_ld32(h + 28) == ut_crc32c(0, h, 28) &&
		    page_valid(h + UT_DW_HDR) && ut_page_lsn(h + UT_DW_HDR) > max)
			max = ut_page_lsn(h + UT_DW_HDR);
	}
	b->max_page_lsn = max;
	redo = ut_ld64(d->p + UT_META_CKPT_LSN);
	if (redo != b->commit_lsn[0])
		die("base %c: header redo LSN %llu, checkpoint was at %llu", b->name,
		    (unsigned long long)redo, (unsigned long long)b->commit_lsn[0]);
	if (ut_ld32(d->p + UT_META_CLEAN))
		die("base %c: header says closed cleanly", b->name);
}

static void build_base(base *b, const char *dir, char name, size_t cache)
{
	int fds[2], st;
	pid_t pid;

	b->name = name;
	b->cache = cache;
	snprintf(b->path, sizeof(b->path), "%s/base-%c.db", dir, name);
	if (pipe(fds))
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		build_child(b, fds[1]);
	}
	close(fds[1]);
	if (read(fds[0], b->commit_lsn, sizeof(b->commit_lsn)) != (ssize_t)sizeof(b->commit_lsn))
		b->commit_lsn[0] = 0;
	close(fds[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("base %c: builder failed (status 0x%x): %s", name, st, ut_errdetail());
	for (int f = 0; f < NFILES; f++) {
		char p[600];

		snprintf(p, sizeof(p), "%s%s", b->path, file_suffix[f]);
		b->f[f] = fz_slurp(p);
		if (!b->f[f].n)
			die("base %c: %s is missing or empty", name, p);
	}
	parse_wal(b);
	scan_pages(b);
	printf("base %c: data %zu B, log %zu B (%zu records, commits end at %zu), "
	       "-dw %zu B, newest page LSN %llu (checkpoint %llu, commit 40 %llu)\n",
	       name, b->f[F_DATA].n, b->f[F_WAL].n, b->nrec,
	       b->commit_end_off[NCOMMITS], b->f[F_DW].n,
	       (unsigned long long)b->max_page_lsn,
	       (unsigned long long)b->commit_lsn[0],
	       (unsigned long long)b->commit_lsn[NCOMMITS]);
}

/* ---- mutations --------------------------------------------------------- */

enum mkind { M_FLIP, M_RUN, M_TRUNC, M_INSERT, M_REMOVE, M_DUP_INSERT,
	     M_DUP_OVER, M_ZERO, M_DELETE, NKINDS };
static const char *const kind_name[NKINDS] = {
	"flip", "run", "trunc", "insert", "remove", "dup-insert", "dup-over",
	"zero", "delete"
};

typedef struct mutation {
	int base, file, kind;
	size_t off, len, src; /* trunc: off = new size */
	unsigned bits;        /* flip: how many bits in [off, off + len) */
	int boundary;         /* trunc of the log exactly at a record boundary */
	char desc[160];
} mutation;

/* An offset in file f of base b, biased to the parts that matter. */
static size_t pick_offset(fz_rng *r, const base *b, int f)
{
	size_t n = b->f[f].n;

	switch (f) {
	case F_WAL:
		if (fz_chance(r, 12)) /* a header slot, mostly the current one's 64 bytes */
			return (fz_chance(r, 70) ? b->wal_slot : 1 - b->wal_slot) * 4096 +
			       fz_below(r, fz_chance(r, 80) ? 64 : 4096);
		if (fz_chance(r, 85))
			return UT_WAL_DATA_OFF + fz_below(r, b->commit_end_off[NCOMMITS] - UT_WAL_DATA_OFF);
		return fz_below(r, n);
	case F_DATA:
		if (fz_chance(r, 10))
			return fz_below(r, 128); /* the database header */
		return fz_below(r, n);
	default:
		if (fz_chance(r, 10))
			return fz_below(r, fz_chance(r, 50) ? 32 : UT_DW_HDR); /* the floor */
		if (fz_chance(r, 40)) /* a slot header */
			return UT_DW_SLOT_OFF(fz_below(r, (n - UT_DW_HDR) / UT_DW_SLOT_BYTES)) +
			       fz_below(r, fz_chance(r, 70) ? 32 : UT_DW_HDR);
		return fz_below(r, n);
	}
}

static size_t pick_len(fz_rng *r)
{
	switch (fz_below(r, 4)) {
	case 0: return 1 + fz_below(r, 16);
	case 1: return 1 + fz_below(r, 512);
	case 2: return 4096 * (1 + fz_below(r, 4)); /* sectors */
	default: return 1 + fz_below(r, 40000);
	}
}

static size_t pick_trunc(fz_rng *r, const base *b, int f, int *boundary)
{
	size_t n = b->f[f].n;

	*boundary = 0;
	if (f == F_WAL) {
		uint64_t c = fz_below(r, 100);

		if (c < 45) {
			*boundary = 1;
			return c < 10 ? UT_WAL_DATA_OFF : b->rec_end[fz_below(r, b->nrec)];
		}
		if (c < 85)
			return UT_WAL_DATA_OFF + fz_below(r, n - UT_WAL_DATA_OFF);
		if (c < 95)
			return fz_below(r, UT_WAL_DATA_OFF);
		return 0;
	}
	if (f == F_DATA && fz_chance(r, 60)) /* whole pages, or a partial last page */
		return UT_PAGE_SIZE * fz_below(r, n / UT_PAGE_SIZE) + 4096 * fz_below(r, 4);
	if (f == F_DW && fz_chance(r, 50))
		return UT_DW_SLOT_OFF(fz_below(r, (n - UT_DW_HDR) / UT_DW_SLOT_BYTES + 1));
	return fz_below(r, n);
}

/* Iteration i of the run with this seed: which base, file and mutation.
 * A function of (seed, i) alone, so UT_FUZZ_ONLY can replay it. */
static mutation plan(uint64_t seed, long i)
{
	fz_rng r = { fz_mix64(seed * 0x100000001b3ull + (uint64_t)i) };
	mutation m;
	const base *b;
	size_t n;

	memset(&m, 0, sizeof(m));
	m.base = (int)fz_below(&r, 2);
	b = &g_base[m.base];
	m.file = (int)fz_below(&r, 100) < 45 ? F_WAL : (int)fz_below(&r, 2) ? F_DATA : F_DW;
	n = b->f[m.file].n;
	m.kind = (int)fz_below(&r, 100);
	m.kind = m.kind < 18 ? M_FLIP : m.kind < 28 ? M_RUN : m.kind < 48 ? M_TRUNC :
		 m.kind < 58 ? M_INSERT : m.kind < 68 ? M_REMOVE : m.kind < 76 ? M_DUP_INSERT :
		 m.kind < 84 ? M_DUP_OVER : m.kind < 98 ? M_ZERO : M_DELETE;
	m.off = pick_offset(&r, b, m.file);
	m.len = pick_len(&r);
	if (m.off >= n)
		m.off = n - 1;
	switch (m.kind) {
	case M_FLIP:
		m.bits = fz_chance(&r, 70) ? 1 : 2 + (unsigned)fz_below(&r, 7);
		m.len = m.bits == 1 ? 1 : 1 + fz_below(&r, 64);
		break;
	case M_TRUNC:
		m.off = pick_trunc(&r, b, m.file, &m.boundary);
		for (size_t k = 0; m.file == F_WAL && k < b->nrec; k++)
			m.boundary |= m.off == UT_WAL_DATA_OFF || m.off == b->rec_end[k];
		break;
	case M_REMOVE:
		if (m.off + m.len >= n) /* leave a tail: a removal, not a cut */
			m.len = n - m.off > 1 ? n - m.off - 1 : 0;
		if (!m.len) {
			m.off = 0;
			m.len = 1;
		}
		break;
	case M_DUP_INSERT:
	case M_DUP_OVER:
		m.src = pick_offset(&r, b, m.file);
		if (m.src + m.len > n)
			m.len = n - m.src;
		if (!m.len)
			m.len = 1, m.src = 0;
		break;
	case M_ZERO:
		if (fz_chance(&r, 50)) { /* a lost sector or page write */
			m.off &= ~(size_t)4095;
			m.len = fz_chance(&r, 50) ? 4096 : UT_PAGE_SIZE;
		}
		break;
	}
	if ((m.kind == M_FLIP || m.kind == M_RUN || m.kind == M_ZERO ||
	     m.kind == M_DUP_OVER) && m.off + m.len > n)
		m.len = n - m.off;
	if (m.kind == M_TRUNC)
		snprintf(m.desc, sizeof(m.desc), "%c %s trunc to %zu of %zu%s", b->name,
			 file_name[m.file], m.off, n, m.boundary ? " (record boundary)" : "");
	else if (m.kind == M_DELETE)
		snprintf(m.desc, sizeof(m.desc), "%c %s delete", b->name, file_name[m.file]);
	else
		snprintf(m.desc, sizeof(m.desc), "%c %s %s off=%zu len=%zu src=%zu bits=%u",
			 b->name, file_name[m.file], kind_name[m.kind], m.off, m.len, m.src,
			 m.bits);
	return m;
}

/* The mutated file's bytes (exists = 0 for a deleted file). */
static fz_blob mutate(const mutation *m, uint64_t seed, long i)
{
	const fz_blob *in = &g_base[m->base].f[m->file];
	fz_rng r = { fz_mix64(seed ^ 0xabcdef12345ull ^ (uint64_t)i * 31) };
	fz_blob out = { malloc(in->n + m->len + 1), in->n, 1 };
	uint8_t *p = out.p;

	memcpy(p, in->p, in->n);
	switch (m->kind) {
	case M_FLIP:
		for (unsigned k = 0; k < m->bits; k++) {
			size_t at = m->off + fz_below(&r, m->len);

			p[at] ^= (uint8_t)(1u << fz_below(&r, 8));
		}
		break;
	case M_RUN: {
		int pattern = (int)fz_below(&r, 3); /* random, 0xff, one random byte */
		uint8_t c = pattern == 1 ? 0xff : (uint8_t)fz_rnd(&r);

		for (size_t k = 0; k < m->len; k++)
			p[m->off + k] = pattern == 0 ? (uint8_t)fz_rnd(&r) : c;
		break;
	}
	case M_TRUNC:
		out.n = m->off;
		break;
	case M_INSERT:
		memmove(p + m->off + m->len, p + m->off, in->n - m->off);
		for (size_t k = 0; k < m->len; k++)
			p[m->off + k] = (uint8_t)fz_rnd(&r);
		out.n += m->len;
		break;
	case M_REMOVE:
		memmove(p + m->off, p + m->off + m->len, in->n - m->off - m->len);
		out.n -= m->len;
		break;
	case M_DUP_INSERT:
		memmove(p + m->off + m->len, p + m->off, in->n - m->off);
		memcpy(p + m->off, in->p + m->src, m->len);
		out.n += m->len;
		break;
	case M_DUP_OVER:
		memmove(p + m->off, in->p + m->src, m->len);
		break;
	case M_ZERO:
		memset(p + m->off, 0, m->len);
		break;
	case M_DELETE:
		out.exists = 0;
		out.n = 0;
		break;
	}
	return out;
}

/* ---- one iteration in a child ------------------------------------------ */

typedef struct result {
	int open_rc, scan_rc, check_rc, close_rc, reopen_rc, rescan_rc;
	int match, rematch;         /* state k the scan equals, -1: none */
	uint64_t keys, check_bad, check_inv;
	char detail[400];           /* open error or first problem */
	int loss_reported;          /* a successful open reported a loss */
} result;

static void note(result *res, const char *fmt, ...)
{
	va_list ap;

	if (res->detail[0])
		return; /* keep the first */
	va_start(ap, fmt);
	vsnprintf(res->detail, sizeof(res->detail), fmt, ap);
	va_end(ap);
}

static int parse_id(const void *k, size_t klen, uint32_t *id)
{
	char buf[16];
	unsigned v;
	char *end;

	if (klen != 8 || memcmp(k, "key", 3))
		return 0;
	memcpy(buf, k, 8);
	buf[8] = 0;
	v = (unsigned)strtoul(buf + 3, &end, 10);
	if (*end || v >= MAX_IDS)
		return 0;
	*id = v;
	return 1;
}

/* Scan every key into st; UT_OK or the error that stopped the walk
 * (UT_EINVAL for a key that no state has). */
static int scan(ut_db *db, state *st, result *res)
{
	ut_txn *t;
	ut_cursor *c;
	int rc;

	st->n = 0;
	if ((rc = ut_begin(db, UT_RDONLY, &t)))
		return rc;
	if ((rc = ut_cursor_open(t, &c))) {
		ut_abort(t);
		return rc;
	}
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
		const void *k, *v;
		size_t kl, vl;
		uint32_t id;

		if ((rc = ut_cursor_get(c, &k, &kl, &v, &vl)))
			break;
		if (!parse_id(k, kl, &id)) {
			note(res, "scan: unexpected key of %zu bytes", kl);
			rc = UT_EINVAL;
			break;
		}
		if (st->n == SCAN_CAP) {
			note(res, "scan: more than %d keys", SCAN_CAP);
			rc = UT_EINVAL;
			break;
		}
		st->e[st->n++] = (entry){ id, (uint32_t)vl, hash_bytes(v, vl) };
	}
	if (rc != UT_NOTFOUND && rc != UT_EINVAL)
		note(res, "scan: %s: %s", ut_strerror(rc), ut_errdetail());
	ut_cursor_close(c);
	ut_abort(t);
	return rc == UT_NOTFOUND ? UT_OK : rc;
}

static int match_state(const state *st)
{
	for (int k = NCOMMITS; k >= 0; k--)
		if (same_state(st, &g_states[k]))
			return k;
	return -1;
}

/* Where a scanned state first departs from the state after commit 40. */
static void describe_diff(const state *st, result *res)
{
	const state *want = &g_states[NCOMMITS];
	size_t i = 0;

	while (i < st->n && i < want->n &&
	       !memcmp(&st->e[i], &want->e[i], sizeof(entry)))
		i++;
	if (i < st->n && i < want->n)
		note(res, "wrong data: %zu keys; entry %zu is key%05u (%u bytes), "
		     "commit 40 has key%05u (%u bytes)%s", st->n, i, st->e[i].id,
		     st->e[i].len, want->e[i].id, want->e[i].len,
		     st->e[i].id == want->e[i].id ? ", other value" : "");
	else
		note(res, "wrong data: %zu keys, commit 40 has %zu", st->n, want->n);
}

static void run_child(const base *b, const char *path, int fd)
{
	ut_options o = base_options(b);
	result res;
	state st = { malloc(SCAN_CAP * sizeof(entry)), 0 };
	ut_db *db;
	char *rep = NULL;
	size_t replen = 0;
	FILE *mf;
	ut_check_result cr;

	memset(&res, 0, sizeof(res));
	res.match = res.rematch = -1;
	o.create = 0;
	res.open_rc = ut_open(path, &o, &db);
	if (res.open_rc) {
		snprintf(res.detail, sizeof(res.detail), "%s", ut_errdetail());
		goto out;
	}
	res.loss_reported = strstr(ut_errdetail(), "lost") != NULL;
	res.scan_rc = scan(db, &st, &res);
	res.keys = st.n;
	if (res.scan_rc == UT_OK) {
		res.match = match_state(&st);
		if (res.match < 0)
			describe_diff(&st, &res);
	}
	memset(&cr, 0, sizeof(cr));
	mf = open_memstream(&rep, &replen);
	res.check_rc = ut_check(db, mf, &cr);
	fclose(mf);
	res.check_bad = cr.bad_checksums;
	res.check_inv = cr.invariant_errors;
	if (res.check_rc)
		note(&res, "check: %s: %.*s", ut_strerror(res.check_rc),
		     rep ? (int)strcspn(rep, "\n") : 0, rep ? rep : "");
	free(rep);
	res.close_rc = ut_close(db);
	if (res.close_rc)
		note(&res, "close: %s: %s", ut_strerror(res.close_rc), ut_errdetail());
	/* what recovery decided must stick */
	res.reopen_rc = ut_open(path, &o, &db);
	if (res.reopen_rc) {
		note(&res, "reopen: %s: %s", ut_strerror(res.reopen_rc), ut_errdetail());
		goto out;
	}
	res.rescan_rc = scan(db, &st, &res);
	if (res.rescan_rc == UT_OK)
		res.rematch = match_state(&st);
	(void)ut_close(db);
out:
	if (write(fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(3);
	_exit(0);
}

/* ---- classification ---------------------------------------------------- */

enum outcome { O_REFUSED, O_ALL, O_DETECTED, O_CASE5, O_TORNLIKE, O_REPORTED,
	       /* failures from here on */
	       O_FEWER, O_WRONG, O_REFUSED_DW, O_REFUSED_ODD, O_CORRUPT_AFTER,
	       O_REOPEN, O_CRASH, O_HANG, NOUTCOMES };
static const char *const outcome_name[NOUTCOMES] = {
	"refused", "all", "detected", "fewer-case5", "fewer-tornlike",
	"fewer-reported", "FEWER", "WRONG", "REFUSED-DW", "REFUSED-ODD", "CORRUPT-AFTER",
	"REOPEN-DIFFERS", "CRASH", "HANG"
};
#define FIRST_FAILURE O_FEWER

/* Commits 1..k of the log are intact when the mutated log holds their
 * records byte for byte where they were. */
static int intact_commits(const base *b, const fz_blob *w)
{
	int k = 0;

	while (k < NCOMMITS && w->n >= b->commit_end_off[k + 1] &&
	       !memcmp(w->p + UT_WAL_DATA_OFF, b->f[F_WAL].p + UT_WAL_DATA_OFF,
		       b->commit_end_off[k + 1] - UT_WAL_DATA_OFF))
		k++;
	return k;
}

/* A whole record of the current epoch, anywhere in the mutated log (shifted
 * or not), whose durable floor lies beyond lsn: when it was appended the log
 * was durable past lsn, so commits after lsn were acknowledged.  (Records of
 * the batch right after lsn carry floor = lsn: a torn write of that batch
 * leaves them, so they prove nothing.) */
static int evidence_after(const base *b, const fz_blob *w, uint64_t lsn)
{
	for (size_t off = 0; off + UT_WAL_REC_HDR <= w->n; off++)
		if (get64le(w->p + off + 24) == b->wal_salt &&
		    get64le(w->p + off + 32) > lsn && record_at(w->p, w->n, off, b->wal_salt))
			return 1;
	return 0;
}

/* The state after commit k < 40 is allowed only when nothing in the files
 * shows that the lost commits were durable (see the header comment). */
static int loss_undetectable(const mutation *m, const fz_blob *w, int k)
{
	const base *b = &g_base[m->base];
	const uint8_t *slot = b->f[F_WAL].p + b->wal_slot * 4096;

	if (m->file != F_WAL || !w->exists || w->n < UT_WAL_DATA_OFF)
		return 0;
	if (memcmp(w->p + b->wal_slot * 4096, slot, 64))
		return 0; /* the current header is damaged: records say more */
	if (intact_commits(b, w) != k)
		return 0;
	if (b->max_page_lsn > b->commit_lsn[k])
		return 0;
	return !evidence_after(b, w, b->commit_lsn[k]);
}

/* A damaged database is UT_ECORRUPT (or, for a damaged header, not a
 * database or another version); a deleted data file with create off is
 * UT_EIO "No such file" (untorn.h). */
static int refusal_ok(const mutation *m, int rc)
{
	if (m->file == F_DATA && m->kind == M_DELETE)
		return rc == UT_EIO;
	return rc == UT_ECORRUPT || rc == UT_ENOTDB || rc == UT_EVERSION;
}

/* A -dw mutation that left the floor sector alone touched only copies,
 * and with an intact data file no copy is needed. */
static int dw_copies_only(const mutation *m)
{
	return m->file == F_DW && m->kind != M_DELETE && m->off >= UT_DW_HDR;
}

static int classify(const mutation *m, const fz_blob *mutated, const result *r)
{
	if (r->open_rc) {
		if (!refusal_ok(m, r->open_rc) || !r->detail[0])
			return O_REFUSED_ODD;
		return dw_copies_only(m) ? O_REFUSED_DW : O_REFUSED;
	}
	if (r->scan_rc == UT_OK && r->match < 0)
		return O_WRONG;
	if (r->scan_rc == UT_OK && r->match < NCOMMITS) {
		/* a -wal emptied is untorn.h's way to accept its loss: the
		 * open may go on, reporting it */
		if (m->file == F_WAL && mutated->exists && mutated->n == 0 &&
		    r->loss_reported)
			return r->check_rc ? O_CORRUPT_AFTER : O_REPORTED;
		if (!loss_undetectable(m, mutated, r->match))
			return O_FEWER;
		if (r->check_rc || r->reopen_rc || r->rematch != r->match)
			return r->check_rc ? O_CORRUPT_AFTER : O_REOPEN;
		return m->kind == M_TRUNC && m->boundary ? O_CASE5 : O_TORNLIKE;
	}
	if (r->scan_rc && r->scan_rc != UT_ECORRUPT)
		return O_WRONG; /* an unexpected key, a looping walk, another error */
	if (r->scan_rc || r->check_rc) {
		if (m->file != F_DATA)
			return O_CORRUPT_AFTER; /* the data file was intact */
		return r->check_rc && r->check_rc != UT_ECORRUPT ? O_REFUSED_ODD
								 : O_DETECTED;
	}
	/* all 40 commits, clean check: the same after close and reopen */
	if (r->close_rc || r->reopen_rc || r->rescan_rc || r->rematch != NCOMMITS)
		return O_REOPEN;
	return O_ALL;
}

/* ---- the run ----------------------------------------------------------- */

static void copy_base(const base *b, const char *path, const mutation *m,
		      const fz_blob *mutated)
{
	for (int f = 0; f < NFILES; f++) {
		char p[600];

		snprintf(p, sizeof(p), "%s%s", path, file_suffix[f]);
		unlink(p);
		if (f == m->file) {
			if (mutated->exists && fz_spill(p, mutated->p, mutated->n))
				die("write %s: %s", p, strerror(errno));
		} else if (fz_spill(p, b->f[f].p, b->f[f].n)) {
			die("write %s: %s", p, strerror(errno));
		}
	}
}

struct child_ctx {
	const base *b;
	const char *path;
};

static void child_main(void *ctx, int fd)
{
	const struct child_ctx *c = ctx;

	run_child(c->b, c->path, fd);
}

/* Run the child; fill r.  Returns O_CRASH/O_HANG, or -1 when it answered. */
static int run_iteration(const base *b, const char *path, long timeout_s,
			 result *r, char *why, size_t whylen)
{
	struct child_ctx c = { b, path };

	switch (fz_run_child(child_main, &c, r, sizeof(*r), timeout_s, why, whylen)) {
	case FZ_ANSWERED:
		return -1;
	case FZ_HANG:
		return O_HANG;
	default:
		return O_CRASH;
	}
}

static void print_row(const char *label, const long *row, long total)
{
	printf("%-14s %6ld", label, total);
	for (int o = 0; o < NOUTCOMES; o++)
		printf(" %*ld", (int)strlen(outcome_name[o]) > 6 ? (int)strlen(outcome_name[o]) : 6,
		       row[o]);
	printf("\n");
}

static void print_header(const char *first)
{
	printf("%-14s %6s", first, "iters");
	for (int o = 0; o < NOUTCOMES; o++)
		printf(" %6s", outcome_name[o]);
	printf("\n");
}

int main(void)
{
	const char *tmp = getenv("UT_TMPDIR");
	uint64_t seed = (uint64_t)fz_env_long("UT_FUZZ_SEED", 1);
	long iters = fz_env_long("UT_FUZZ_ITERS", 300);
	long only = fz_env_long("UT_FUZZ_ONLY", -1);
	long timeout_s = fz_env_long("UT_FUZZ_TIMEOUT", 120);
	int verbose = (int)fz_env_long("UT_FUZZ_VERBOSE", 0);
	static long by_file[2][NFILES][NOUTCOMES], by_kind[NKINDS][NOUTCOMES];
	static long examples[2][NFILES][NOUTCOMES][4]; /* count, 3 iterations */
	long failures = 0, done = 0;
	char dir[512], path[600];
	time_t t0 = time(NULL);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!tmp || !*tmp)
		tmp = "/tmp";
	mkdir(tmp, 0755);
	snprintf(dir, sizeof(dir), "%s/fuzz-files-%d", tmp, (int)getpid());
	rm_tree(dir);
	if (mkdir(dir, 0755))
		die("mkdir %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/it.db", dir);

	build_oracle();
	build_base(&g_base[0], dir, 'A', A_CACHE);
	build_base(&g_base[1], dir, 'B', B_CACHE);
	if (g_base[0].max_page_lsn > g_base[0].commit_lsn[0])
		die("base A: a page is newer than the checkpoint");
	if (g_base[1].max_page_lsn <= g_base[1].commit_lsn[0])
		die("base B: no page newer than the checkpoint in the data file");

	/* the control: an unmutated copy of each base recovers all 40 commits */
	for (int bi = 0; bi < 2; bi++) {
		mutation m;
		fz_blob same = g_base[bi].f[F_WAL];
		result r;
		char why[128];
		int o;

		memset(&m, 0, sizeof(m));
		m.base = bi;
		m.file = F_WAL;
		m.kind = -1;
		copy_base(&g_base[bi], path, &m, &same);
		o = run_iteration(&g_base[bi], path, timeout_s, &r, why, sizeof(why));
		if (o < 0)
			o = classify(&m, &same, &r);
		if (o != O_ALL)
			die("base %c unmutated: %s (%s)", g_base[bi].name,
			    outcome_name[o], o == O_CRASH || o == O_HANG ? why : r.detail);
	}
	printf("seed %llu, %ld iterations%s\n", (unsigned long long)seed,
	       only >= 0 ? 1 : iters, only >= 0 ? " (one replayed)" : "");

	for (long i = only >= 0 ? only : 0; i < (only >= 0 ? only + 1 : iters); i++) {
		mutation m = plan(seed, i);
		fz_blob mutated = mutate(&m, seed, i);
		result r;
		char why[128] = "";
		int o;

		copy_base(&g_base[m.base], path, &m, &mutated);
		memset(&r, 0, sizeof(r));
		o = run_iteration(&g_base[m.base], path, timeout_s, &r, why, sizeof(why));
		if (o < 0)
			o = classify(&m, &mutated, &r);
		by_file[m.base][m.file][o]++;
		by_kind[m.kind][o]++;
		done++;
		if (o >= FIRST_FAILURE) {
			long *ex = examples[m.base][m.file][o];

			failures++;
			if (ex[0] < 3)
				ex[1 + ex[0]] = i;
			ex[0]++;
			if (o == O_CRASH || o == O_HANG)
				printf("FAIL seed=%llu iter=%ld: %s: %s: %s\n",
				       (unsigned long long)seed, i, m.desc, outcome_name[o], why);
			else
				printf("FAIL seed=%llu iter=%ld: %s: %s: open %d, state %d, "
				       "check %d: %s\n", (unsigned long long)seed, i, m.desc,
				       outcome_name[o], r.open_rc, r.match, r.check_rc, r.detail);
		} else if (verbose) {
			printf("ok   seed=%llu iter=%ld: %s: %s (state %d) %s\n",
			       (unsigned long long)seed, i, m.desc, outcome_name[o],
			       r.match, r.detail);
		}
		free(mutated.p);
	}

	printf("\noutcomes by base and file (capitals: failures)\n");
	print_header("base/file");
	for (int bi = 0; bi < 2; bi++)
		for (int f = 0; f < NFILES; f++) {
			char label[32];
			long tot = 0;

			for (int o = 0; o < NOUTCOMES; o++)
				tot += by_file[bi][f][o];
			snprintf(label, sizeof(label), "%c %s", g_base[bi].name, file_name[f]);
			print_row(label, by_file[bi][f], tot);
		}
	printf("\noutcomes by mutation\n");
	print_header("mutation");
	for (int k = 0; k < NKINDS; k++) {
		long tot = 0;

		for (int o = 0; o < NOUTCOMES; o++)
			tot += by_kind[k][o];
		print_row(kind_name[k], by_kind[k], tot);
	}
	printf("\nfailure classes (replay one: UT_FUZZ_SEED=%llu UT_FUZZ_ONLY=iter)\n",
	       (unsigned long long)seed);
	for (int bi = 0; bi < 2; bi++)
		for (int f = 0; f < NFILES; f++)
			for (int o = FIRST_FAILURE; o < NOUTCOMES; o++) {
				long *ex = examples[bi][f][o];

				if (!ex[0])
					continue;
				printf("  %c %-4s %-14s %5ld  e.g. iter", g_base[bi].name,
				       file_name[f], outcome_name[o], ex[0]);
				for (long j = 0; j < ex[0] && j < 3; j++)
					printf(" %ld", ex[1 + j]);
				printf("\n");
			}
	printf("\nseed %llu: %ld iterations, %ld failures, %ld s\n",
	       (unsigned long long)seed, done, failures, (long)(time(NULL) - t0));
	rm_tree(dir);
	return failures ? 1 : 0;
}

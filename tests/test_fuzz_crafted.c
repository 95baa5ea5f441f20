/*
 * tests/test_fuzz_crafted.c - a crafted database never crashes the engine
 * (issue 21).
 *
 * test_fuzz_files breaks checksums, so every damaged page is refused before
 * anything reads it.  This test changes the fields the engine trusts and
 * then RESEALS the checksum that covers them, as a hand-edited file or a
 * buggy foreign writer would: page header fields, slot offsets and lengths,
 * cell length, flag and pointer fields, database header fields, log record
 * and log header fields, -dw slot headers, floor and page copies.  Only
 * structure is changed, never a key's or a value's own bytes: those a
 * checksum that passes cannot vouch for.
 *
 * Three bases are built once per run, each by a child process:
 *   C: 1500 keys (long keys, so the tree has interior levels; eight
 *      40-70 KB overflow values), 200 keys and two overflow values deleted
 *      (free pages), a checkpoint, 15 more commits, closed;
 *   R: the same with a 256 KiB cache and no close, so opening it replays the
 *      log and the -dw file holds copies (-dw mutations target R);
 *   F: R in fullpage mode: its log holds page images (IMAGE records) among
 *      the deltas (log mutations target R or F, half each).
 * All hold named tables too: "ta" (300 keys, overflow values among them),
 * "tb" (200 keys), and "tc", dropped (its pages free); the "catalog"
 * target changes a catalog entry's root, id, counts or flags, or the
 * header's catalog root or table id, and the child reads every table,
 * writes to ta and clears tb (a walk that frees a crafted tree).
 * Every value names its key, generation and length and carries a stream
 * derived from them, so any key or value the engine returns can be checked
 * as one that was written.  Each iteration applies one or two mutations to
 * a copy, then, in a child process with a timeout: open, scan every key,
 * get 40 keys, a write transaction (puts and deletes, overflow values
 * included) committed, ut_check, close, reopen, scan again.
 *
 * Before the iterations, one crafted file on purpose: base C with its
 * head trunk's next free page replaced by a live leaf (resealed): a write
 * that allocates must get UT_ECORRUPT naming the free list and the page,
 * and every table must keep every key and value (live_page_on_free_list);
 * and base C with a live leaf no write reaches failing its checksum: the
 * free-list walk reads it, so that write must get UT_ECORRUPT naming the
 * page and change no page of the file (damaged_page_in_free_walk).
 *
 * Outcomes:
 *   refused    open failed with UT_ECORRUPT/UT_ENOTDB/UT_EVERSION and a
 *              detail;
 *   clean      every call succeeded (the change was harmless, or undone by
 *              recovery);
 *   detected   open succeeded, later calls returned UT_ECORRUPT with a
 *              detail, and everything returned was written data;
 *   moved      a log delta's page number or offset was changed and the
 *              replay put value bytes where they were not written: a
 *              record whose checksum passes may carry any bytes for any
 *              page, and where they leave every page well formed nothing
 *              can tell them from a real change (like editing a value's
 *              bytes, which this test never does);
 *   FAILURES   BADCODE (another error code, or an error without a
 *              detail), WRONG (a key or value that was never written),
 *              CRASH (signal, sanitizer report), HANG.
 *
 * Environment: UT_FUZZ_ITERS (default 200), UT_FUZZ_SEED (default 1),
 * UT_FUZZ_ONLY=i (replay iteration i; with UT_FUZZ_KEEP=1 only write its
 * mutated copy and say where, for the CLI or a debugger), UT_FUZZ_TIMEOUT
 * (seconds per iteration, default 60), UT_FUZZ_VERBOSE=1, UT_TMPDIR.
 *
 * The long run (README "Crafted files"):
 *   cmake -S . -B build-asan -DUT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug &&
 *   cmake --build build-asan -j2 --target test_fuzz_crafted &&
 *   UT_FUZZ_ITERS=10000 UT_FUZZ_SEED=5 build-asan/test_fuzz_crafted
 */
#include <errno.h>
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
#include "flush_doublewrite.h"
#include "helper_fs.h"
#include "helper_fuzz.h"
#include "page.h"
#include "pager.h"
#include "ut_crc32c.h"
#include "wal.h"

#define NIDS 1600
#define NBASE 1500
#define MAXGEN 100000u
#define KEYMAX UT_MAX_KEY
#define SCAN_CAP (3 * NIDS) /* a scan past this loops */

/* ---- keys and self-describing values ----------------------------------- */

static int is_ovfl_id(uint32_t id) { return id % 200 == 17; }

/* Key of id: "k%05u", then (for 6 in 7 ids) padding to 300..899 bytes:
 * long separators make interior pages fill, so the tree has three levels. */
static size_t key_of(uint32_t id, char *k)
{
	size_t len = id % 7 == 0 ? 6 : 300 + fz_mix64(id) % 600;

	snprintf(k, KEYMAX, "k%05u", id);
	for (size_t j = 6; j < len; j++)
		k[j] = (char)('a' + (id + j) % 26);
	return len;
}

static size_t value_len(uint32_t id, uint32_t gen)
{
	uint64_t h = fz_mix64((uint64_t)id << 32 | gen);

	return is_ovfl_id(id) ? 40000 + h % 30000 : 12 + h % 120;
}

/* u32 id, u32 gen, u32 len, then a stream keyed by (id, gen). */
static void fill_value(uint8_t *v, uint32_t id, uint32_t gen, size_t len)
{
	uint64_t s = fz_mix64((uint64_t)id << 32 | gen);

	ut_st32(v, id);
	ut_st32(v + 4, gen);
	ut_st32(v + 8, (uint32_t)len);
	for (size_t i = 12; i < len; i++)
		v[i] = (uint8_t)(fz_mix64(s + i / 8) >> (8 * (i % 8)));
}

/* A key and value the engine returned: one that was written?  Sets *id. */
static int kv_written(const void *k, size_t kl, const void *v, size_t vl,
		      uint32_t *id)
{
	char want[KEYMAX + 1];
	uint8_t *exp;
	unsigned n;
	int ok;

	if (kl < 6 || kl > KEYMAX)
		return 0;
	memcpy(want, k, 6);
	want[6] = 0;
	if (sscanf(want, "k%5u", &n) != 1 || n >= NIDS || key_of(n, want) != kl || memcmp(want, k, kl))
		return 0;
	*id = n;
	if (vl < 12 || ut_ld32(v) != n || ut_ld32((const uint8_t *)v + 4) >= MAXGEN ||
	    ut_ld32((const uint8_t *)v + 8) != vl)
		return 0;
	exp = malloc(vl);
	fill_value(exp, n, ut_ld32((const uint8_t *)v + 4), vl);
	ok = !memcmp(exp, v, vl);
	free(exp);
	return ok;
}

static int put_id_in(ut_txn *t, ut_table *tb, uint32_t id, uint32_t gen)
{
	char k[KEYMAX];
	size_t kl = key_of(id, k), vl = value_len(id, gen);
	uint8_t *v = malloc(vl);
	int rc;

	fill_value(v, id, gen, vl);
	rc = ut_tput(t, tb, k, kl, v, vl);
	free(v);
	return rc;
}

static int put_id(ut_txn *t, uint32_t id, uint32_t gen)
{
	return put_id_in(t, NULL, id, gen);
}

/* The named tables of the bases: ids [from, to) of each. */
static const struct { const char *name; uint32_t from, to; } base_tables[] = {
	{ "ta", 0, 300 }, { "tb", 300, 500 }, { "tc", 0, 100 },
};

static int del_id(ut_txn *t, uint32_t id)
{
	char k[KEYMAX];
	size_t kl = key_of(id, k);

	return ut_del(t, k, kl);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "test_fuzz_crafted: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* ---- the bases --------------------------------------------------------- */

enum { F_DATA, F_WAL, F_DW, NFILES };
static const char *const file_suffix[NFILES] = { "", "-wal", "-dw" };

typedef struct base {
	char name;
	int crash; /* left without close */
	int protect;
	size_t cache;
	char path[512];
	fz_blob f[NFILES];
	uint32_t npages;
	uint32_t *by_type[UT_PT_OVERFLOW + 1]; /* page numbers per type */
	uint32_t ntype[UT_PT_OVERFLOW + 1];
	size_t *recs, nrecs;   /* log record offsets */
	uint32_t *slots, nslots; /* -dw slots with a valid header */
} base;

#define NBASES 3
static base g_base[NBASES];

static ut_options base_options(const base *b)
{
	ut_options o;

	ut_options_default(&o);
	o.protect = b->protect;
	o.cache_bytes = b->cache;
	o.sync = 1;
	return o;
}

static void build_child(void *ctx, int fd)
{
	const base *b = ctx;
	ut_options o = base_options(b);
	fz_rng r = { 0xc4af7edull };
	ut_txn *t;
	ut_db *db;
	int ok = 0;

	if (ut_open(b->path, &o, &db))
		_exit(10);
	for (uint32_t id = 0; id < NBASE; id++) {
		if (id % 100 == 0 && ut_begin(db, 0, &t))
			_exit(11);
		if (put_id(t, id, 1))
			_exit(12);
		if (id % 100 == 99 && ut_commit(t))
			_exit(13);
	}
	/* named tables */
	if (ut_begin(db, 0, &t))
		_exit(24);
	for (int i = 0; i < 3; i++) {
		ut_table *tb;

		if (ut_table_open(t, base_tables[i].name, UT_CREATE, &tb))
			_exit(25);
		for (uint32_t id = base_tables[i].from; id < base_tables[i].to; id++)
			if (put_id_in(t, tb, id, 1))
				_exit(26);
	}
	if (ut_commit(t))
		_exit(27);
	/* free pages: a run of leaves and two overflow chains, a table */
	if (ut_begin(db, 0, &t))
		_exit(14);
	{
		ut_table *tb;

		if (ut_table_open(t, "tc", 0, &tb) || ut_table_drop(t, tb))
			_exit(28);
	}
	for (uint32_t id = 600; id < 800; id++)
		if (del_id(t, id))
			_exit(15);
	if (del_id(t, 217) || del_id(t, 1017) || ut_commit(t) || ut_checkpoint(db))
		_exit(16);
	for (uint32_t c = 0; c < 15; c++) {
		if (ut_begin(db, 0, &t))
			_exit(17);
		for (int i = 0; i < 20; i++)
			if (put_id(t, (uint32_t)fz_below(&r, NIDS), 2 + c))
				_exit(18);
		for (int i = 0; i < 5; i++) {
			int rc = del_id(t, (uint32_t)fz_below(&r, NIDS));

			if (rc && rc != UT_NOTFOUND)
				_exit(19);
		}
		if (c % 4 == 0 && put_id(t, 17 + 200 * (c % 8), 2 + c))
			_exit(20);
		if (ut_commit(t))
			_exit(21);
	}
	if (!b->crash && ut_close(db))
		_exit(22);
	if (write(fd, &ok, sizeof(ok)) != (ssize_t)sizeof(ok))
		_exit(23);
	_exit(0); /* R: no ut_close, as a crash leaves it */
}

static int page_sealed(const uint8_t *p)
{
	return ut_ld32(p) == ut_crc32c(0, p + 4, UT_PAGE_SIZE - 4);
}

static void index_base(base *b)
{
	const fz_blob *d = &b->f[F_DATA], *w = &b->f[F_WAL], *dw = &b->f[F_DW];

	b->npages = (uint32_t)(d->n / UT_PAGE_SIZE);
	for (int t = 0; t <= UT_PT_OVERFLOW; t++)
		b->by_type[t] = calloc(b->npages, sizeof(uint32_t));
	for (uint32_t i = 0; i < b->npages; i++) {
		const uint8_t *p = d->p + (size_t)i * UT_PAGE_SIZE;
		int t = ut_page_type(p);

		if (page_sealed(p) && t >= UT_PT_FREE && t <= UT_PT_OVERFLOW)
			b->by_type[t][b->ntype[t]++] = i;
	}
	/* log records: every 8-byte offset holding a sealed record */
	b->recs = calloc(w->n / 8 + 1, sizeof(size_t));
	for (size_t off = UT_WAL_DATA_OFF; off + UT_WAL_REC_HDR <= w->n; off += 8) {
		uint32_t len = ut_ld32(w->p + off + 8);
		size_t plen = (len + 7u) & ~7u;

		if (len >= UT_WAL_REC_HDR && len <= UT_WAL_MAX_REC &&
		    off + plen <= w->n &&
		    ut_ld32(w->p + off) == ut_crc32c(0, w->p + off + 4, plen - 4))
			b->recs[b->nrecs++] = off;
	}
	b->slots = calloc(UT_DW_SLOTS, sizeof(uint32_t));
	for (uint32_t s = 0; s < UT_DW_SLOTS; s++) {
		const uint8_t *h = dw->p + UT_DW_SLOT_OFF(s);

		if (UT_DW_SLOT_OFF(s) + UT_DW_SLOT_BYTES <= dw->n &&
		    ut_ld64(h) == UT_DW_MAGIC && ut_ld32(h + 28) == ut_crc32c(0, h, 28))
			b->slots[b->nslots++] = s;
	}
}

static void build_base(base *b, const char *dir, char name, int crash,
		       size_t cache, int protect)
{
	char why[128];
	int ok;

	b->name = name;
	b->crash = crash;
	b->protect = protect;
	b->cache = cache;
	snprintf(b->path, sizeof(b->path), "%s/base-%c.db", dir, name);
	if (fz_run_child(build_child, b, &ok, sizeof(ok), 600, why, sizeof(why)))
		die("base %c: builder failed: %s", name, why);
	for (int f = 0; f < NFILES; f++) {
		char p[600];

		snprintf(p, sizeof(p), "%s%s", b->path, file_suffix[f]);
		b->f[f] = fz_slurp(p);
	}
	if (!b->f[F_DATA].n)
		die("base %c: no data file", name);
	index_base(b);
	printf("base %c: %u pages (leaf %u, interior %u, overflow %u, free %u), "
	       "log %zu B with %zu records, -dw %zu B with %u slots\n", name,
	       b->npages, b->ntype[UT_PT_LEAF], b->ntype[UT_PT_INTERIOR],
	       b->ntype[UT_PT_OVERFLOW], b->ntype[UT_PT_FREE], b->f[F_WAL].n,
	       b->nrecs, b->f[F_DW].n, b->nslots);
	if (!b->ntype[UT_PT_INTERIOR] || !b->ntype[UT_PT_FREE] ||
	    !b->ntype[UT_PT_OVERFLOW] ||
	    (crash && (!b->nrecs ||
		       (protect == UT_PROTECT_DOUBLEWRITE && !b->nslots))))
		die("base %c: lacks a page type, log records or -dw copies", name);
}

/* ---- mutations --------------------------------------------------------- */

enum target { T_LEAF, T_INTERIOR, T_OVERFLOW, T_FREE, T_META, T_CATALOG,
	      T_WAL_REC, T_WAL_HDR, T_DW_HDR, T_DW_COPY, T_DW_FLOOR, NTARGETS };
static const char *const target_name[NTARGETS] = {
	"data leaf", "data interior", "data overflow", "data free",
	"data header", "catalog", "log record", "log header", "-dw slot header",
	"-dw copy", "-dw floor"
};
static const int target_ptype[] = { UT_PT_LEAF, UT_PT_INTERIOR, UT_PT_OVERFLOW,
				    UT_PT_FREE, UT_PT_META };

typedef struct mutation {
	int base, target;
	int moves_bytes; /* a log delta's page or offset: user bytes can move */
	fz_blob f[NFILES]; /* the copy, changed */
	char desc[300];
} mutation;

static void describe(mutation *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void describe(mutation *m, const char *fmt, ...)
{
	size_t n = strlen(m->desc);
	va_list ap;

	if (n >= sizeof(m->desc) - 2)
		return;
	va_start(ap, fmt);
	vsnprintf(m->desc + n, sizeof(m->desc) - n, fmt, ap);
	va_end(ap);
}

static uint64_t load(const uint8_t *p, unsigned w)
{
	return w == 1 ? p[0] : w == 2 ? ut_ld16(p) : w == 4 ? ut_ld32(p) : ut_ld64(p);
}

static void store(uint8_t *p, unsigned w, uint64_t v)
{
	if (w == 1)
		p[0] = (uint8_t)v;
	else if (w == 2)
		ut_st16(p, (uint16_t)v);
	else if (w == 4)
		ut_st32(p, (uint32_t)v);
	else
		ut_st64(p, v);
}

/* A new value for a field of w bytes: the edges, a near miss, random, and
 * for page numbers (ptr) other pages, the page count, itself. */
static void set_field(mutation *m, fz_rng *r, uint8_t *at, unsigned w, int ptr,
		      uint32_t self, const char *name)
{
	const base *b = &g_base[m->base];
	uint64_t old = load(at, w), mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
	uint64_t v;

	do {
		switch (fz_below(r, ptr ? 9 : 6)) {
		case 0: v = 0; break;
		case 1: v = 1; break;
		case 2: v = old + 1 + fz_below(r, 8); break;
		case 3: v = old - 1 - fz_below(r, 8); break;
		case 4: v = mask; break;
		case 5: v = fz_rnd(r); break;
		case 6: v = fz_below(r, b->npages); break;
		case 7: v = b->npages + fz_below(r, 3); break;
		default: v = self; break;
		}
		v &= mask;
	} while (v == old && mask > 1);
	store(at, w, v);
	describe(m, " %s %llu->%llu", name, (unsigned long long)old,
		 (unsigned long long)v);
}

/* One structural field of a page image (pgno: where it lives). */
static void mutate_page(mutation *m, fz_rng *r, uint8_t *p, uint32_t pgno)
{
	int t = ut_page_type(p);
	/* a first mutation may have made nslots anything: stay in the page */
	unsigned n = ut_page_nslots(p) < UT_PG_USABLE / UT_PG_SLOT ?
		     ut_page_nslots(p) : UT_PG_USABLE / UT_PG_SLOT;
	unsigned i = n ? (unsigned)fz_below(r, n) : 0;
	uint8_t *slot = p + UT_PG_HDR + i * UT_PG_SLOT;
	uint8_t *cell = p + ut_ld16(slot);
	char name[48];
	int slotted = t == UT_PT_LEAF || t == UT_PT_INTERIOR;
	/* slotted pages: the header fields, the slots and the cells about
	 * equally (picks 0-6, 7-9, 10-16) */
	unsigned pick = (unsigned)fz_below(r, slotted && n ? 17 : 7);

	switch (pick) {
	case 0: set_field(m, r, p + 4, 1, 0, pgno, "type"); break;
	case 1: set_field(m, r, p + 6, 2, 0, pgno, "nslots"); break;
	case 2: set_field(m, r, p + 20, 2, 0, pgno, "content"); break;
	case 3: set_field(m, r, p + 22, 2, 0, pgno, "frag"); break;
	case 4: set_field(m, r, p + 24, 4, 1, pgno, "right"); break;
	case 5: set_field(m, r, p + 28, 4, 0, pgno, "aux"); break;
	case 6:
		if (fz_chance(r, 50))
			set_field(m, r, p + 16, 4, 1, pgno, "pgno");
		else
			set_field(m, r, p + 8, 8, 0, pgno, "lsn");
		break;
	case 7:
		snprintf(name, sizeof(name), "slot%u.off", i);
		set_field(m, r, slot, 2, 0, pgno, name);
		break;
	case 8:
		snprintf(name, sizeof(name), "slot%u.len", i);
		set_field(m, r, slot + 2, 2, 0, pgno, name);
		break;
	case 9: { /* two slots swapped: keys out of order */
		unsigned j = (unsigned)fz_below(r, n);
		uint8_t tmp[UT_PG_SLOT], *o = p + UT_PG_HDR + j * UT_PG_SLOT;

		memcpy(tmp, slot, UT_PG_SLOT);
		memcpy(slot, o, UT_PG_SLOT);
		memcpy(o, tmp, UT_PG_SLOT);
		describe(m, " slots %u<->%u", i, j);
		break;
	}
	default:
		if (ut_ld16(slot) + 8u > UT_PAGE_SIZE)
			break;
		if (t == UT_PT_LEAF) {
			static const char *const f[] = { "klen", "flags", "vlen", "ovfl" };
			unsigned k = (unsigned)fz_below(r, (cell[2] & UT_CELL_OVFL) ? 4 : 3);
			static const unsigned off[] = { 0, 2, 3 }, wid[] = { 2, 1, 4 };

			snprintf(name, sizeof(name), "cell%u.%s", i, f[k]);
			if (k < 3)
				set_field(m, r, cell + off[k], wid[k], 0, pgno, name);
			else if (ut_ld16(slot) + UT_LEAF_HDR + ut_ld16(cell) + 4 <= UT_PAGE_SIZE)
				set_field(m, r, cell + UT_LEAF_HDR + ut_ld16(cell), 4, 1,
					  pgno, name);
		} else {
			unsigned k = (unsigned)fz_below(r, 3);

			snprintf(name, sizeof(name), "cell%u.%s", i,
				 k == 0 ? "child" : k == 1 ? "klen" : "keybyte");
			if (k == 0)
				set_field(m, r, cell, 4, 1, pgno, name);
			else if (k == 1)
				set_field(m, r, cell + 4, 2, 0, pgno, name);
			else if (ut_ld16(cell + 4) &&
				 ut_ld16(slot) + UT_INT_HDR + ut_ld16(cell + 4) <= UT_PAGE_SIZE)
				set_field(m, r, cell + UT_INT_HDR +
					  fz_below(r, ut_ld16(cell + 4)), 1, 0, pgno, name);
		}
	}
}

static void mutate_meta(mutation *m, fz_rng *r, uint8_t *p)
{
	static const struct { unsigned off, w; int ptr; const char *name; } f[] = {
		{ UT_META_ROOT, 4, 1, "root" }, { UT_META_FREEHEAD, 4, 1, "freehead" },
		{ UT_META_PAGECOUNT, 4, 1, "pagecount" },
		{ UT_META_FREECOUNT, 4, 0, "freecount" },
		{ UT_META_VERSION, 4, 0, "version" }, { UT_META_PAGESIZE, 4, 0, "pagesize" },
		{ UT_META_CKPT_LSN, 8, 0, "ckpt_lsn" }, { UT_META_MAXLSN, 8, 0, "maxlsn" },
		{ UT_META_MODE, 4, 0, "mode" }, { UT_META_CLEAN, 4, 0, "clean" },
		{ UT_META_MAGIC, 1, 0, "magic[0]" }, { 4, 1, 0, "type" },
		/* a lying page-write bound: low must be caught by the pages
		 * read, high refused by the log's end */
		{ UT_META_PAGEBOUND, 8, 0, "pagebound" },
		{ UT_META_PAGEBOUND, 8, 0, "pagebound" },
	};
	unsigned k = (unsigned)fz_below(r, sizeof(f) / sizeof(f[0]));

	set_field(m, r, p + f[k].off, f[k].w, f[k].ptr, 0, f[k].name);
}

/* A catalog entry's field (its leaf: the header's catalog root, a leaf
 * with these few tables), or the header's catalog fields. */
static void mutate_catalog(mutation *m, fz_rng *r)
{
	uint8_t *meta = m->f[F_DATA].p;
	uint32_t root = ut_ld32(meta + UT_META_CATROOT);
	uint8_t *p = meta + (size_t)root * UT_PAGE_SIZE;
	static const struct { unsigned off, w; int ptr; const char *name; } f[] = {
		{ 0, 4, 1, "root" }, { 0, 4, 1, "root" }, { 4, 4, 0, "flags" },
		{ 8, 8, 0, "id" }, { 16, 8, 0, "keys" }, { 24, 8, 0, "pages" },
	};

	if (fz_chance(r, 15) || (size_t)root * UT_PAGE_SIZE >= m->f[F_DATA].n ||
	    ut_page_type(p) != UT_PT_LEAF || !ut_page_nslots(p)) {
		int tid = fz_chance(r, 30);

		describe(m, "page 0:");
		set_field(m, r, meta + (tid ? UT_META_TABLEID : UT_META_CATROOT),
			  tid ? 8 : 4, !tid, 0, tid ? "tableid" : "catroot");
		ut_page_seal(meta);
		return;
	}
	unsigned i = (unsigned)fz_below(r, ut_page_nslots(p));
	uint8_t *cell = p + ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT);
	uint8_t *v = cell + UT_LEAF_HDR + ut_ld16(cell);
	unsigned k = (unsigned)fz_below(r, sizeof(f) / sizeof(f[0]));
	char name[64];

	describe(m, "page %u (catalog) entry %.*s:", root, (int)ut_ld16(cell),
		 (const char *)cell + UT_LEAF_HDR);
	snprintf(name, sizeof(name), "%s", f[k].name);
	if (k == 1) { /* another table's root, or the default one's */
		unsigned j = (i + 1) % ut_page_nslots(p);
		uint8_t *oc = p + ut_ld16(p + UT_PG_HDR + j * UT_PG_SLOT);
		uint32_t other = fz_chance(r, 50) ? ut_ld32(meta + UT_META_ROOT)
			: ut_ld32(oc + UT_LEAF_HDR + ut_ld16(oc));

		describe(m, " root %u->%u (another tree's)", ut_ld32(v), other);
		store(v, 4, other);
	} else {
		set_field(m, r, v + f[k].off, f[k].w, f[k].ptr, root, name);
	}
	ut_page_seal(p);
}

static void mutate_data(mutation *m, fz_rng *r)
{
	const base *b = &g_base[m->base];
	int t = target_ptype[m->target];
	uint32_t pgno = b->by_type[t][fz_below(r, b->ntype[t])];
	uint8_t *p = m->f[F_DATA].p + (size_t)pgno * UT_PAGE_SIZE;

	describe(m, "page %u:", pgno);
	for (int k = 0; k < 1 + fz_chance(r, 30); k++) {
		if (t == UT_PT_META)
			mutate_meta(m, r, p);
		else
			mutate_page(m, r, p, pgno);
	}
	ut_page_seal(p);
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static void mutate_wal_record(mutation *m, fz_rng *r)
{
	const base *b = &g_base[m->base];
	fz_blob *w = &m->f[F_WAL];
	size_t off = b->recs[fz_below(r, b->nrecs)];
	uint8_t *h = w->p + off;
	size_t oldp = pad8(ut_ld32(h + 8)), newp;
	unsigned k = (unsigned)fz_below(r, 8);

	describe(m, "record at %zu (type %u):", off, h[4]);
	if (k == 7 && h[4] == 1) { /* a delta entry: pgno, offset, length */
		size_t pos = UT_WAL_REC_HDR;
		unsigned e = (unsigned)fz_below(r, ut_ld32(h + 12)), what = (unsigned)fz_below(r, 3);

		for (unsigned i = 0; i < e && pos + 8 <= oldp; i++)
			pos += 8 + ut_ld16(h + pos + 6);
		if (pos + 8 <= oldp)
			set_field(m, r, h + pos + (what ? 2 + 2 * what : 0), what ? 2 : 4,
				  !what, 0, what == 0 ? "delta.pgno" : what == 1 ?
				  "delta.off" : "delta.len");
		m->moves_bytes = what < 2;
	} else if (k == 7 && h[4] == 3) {
		/* an image: the page it names, or a structural field of the
		 * page it holds (as a data page is changed) */
		if (fz_chance(r, 25))
			set_field(m, r, h + UT_WAL_REC_HDR, 4, 1, 0, "image.pgno");
		else
			mutate_page(m, r, h + UT_WAL_REC_HDR + 8,
				    ut_ld32(h + UT_WAL_REC_HDR));
	} else if (k == 7) {
		set_field(m, r, h + UT_WAL_REC_HDR + 8 * fz_below(r, 2), 8, 0, 0,
			  "commit.txn/first");
	} else {
		static const unsigned off_[] = { 4, 5, 8, 12, 16, 24, 32 };
		static const unsigned wid[] = { 1, 1, 4, 4, 8, 8, 8 };
		static const char *const nm[] = { "type", "pad", "len", "count", "lsn",
						  "salt", "floor" };

		set_field(m, r, h + off_[k], wid[k], 0, 0, nm[k]);
	}
	newp = pad8(ut_ld32(h + 8));
	if (newp < 4 || off + newp > w->n)
		newp = oldp; /* the CRC over the span it had */
	ut_st32(h, ut_crc32c(0, h + 4, newp - 4));
}

static void mutate_wal_header(mutation *m, fz_rng *r)
{
	uint8_t *h = m->f[F_WAL].p + 4096 * fz_below(r, 2);
	static const unsigned off[] = { 8, 12, 16, 24, 32, 40, 44 };
	static const unsigned wid[] = { 4, 4, 8, 8, 8, 4, 4 };
	static const char *const nm[] = { "version", "hdrbytes", "epoch", "salt",
					  "start_lsn", "pagesize", "dataoff" };
	unsigned k = (unsigned)fz_below(r, 7);

	describe(m, "header slot %u:", h == m->f[F_WAL].p ? 0 : 1);
	set_field(m, r, h + off[k], wid[k], 0, 0, nm[k]);
	ut_st32(h + 60, ut_crc32c(0, h, 60));
}

static void mutate_dw(mutation *m, fz_rng *r)
{
	const base *b = &g_base[m->base];
	uint32_t s = b->slots[fz_below(r, b->nslots)];
	uint8_t *h = m->f[F_DW].p + UT_DW_SLOT_OFF(s), *copy;

	/* the newest copy of that page: the one recovery would restore */
	for (uint32_t j = 0; j < b->nslots; j++) {
		uint8_t *o = m->f[F_DW].p + UT_DW_SLOT_OFF(b->slots[j]);

		if (ut_ld32(o + 16) == ut_ld32(h + 16) && ut_ld64(o + 8) > ut_ld64(h + 8)) {
			h = o;
			s = b->slots[j];
		}
	}
	copy = h + UT_DW_HDR;

	if (m->target == T_DW_FLOOR) {
		uint8_t *f = m->f[F_DW].p + UT_DW_FLOOR_OFF;

		set_field(m, r, f + 8 * fz_below(r, 2), 8, 0, 0, "floor field");
		ut_st32(f + 16, ut_crc32c(0, f, 16));
		return;
	}
	describe(m, "slot %u (page %u):", s, ut_ld32(h + 16));
	if (m->target == T_DW_HDR) {
		static const unsigned off[] = { 8, 16, 20, 24 }, wid[] = { 8, 4, 4, 4 };
		static const char *const nm[] = { "batch", "pgno", "page_crc", "slot" };
		unsigned k = (unsigned)fz_below(r, 4);

		set_field(m, r, h + off[k], wid[k], k == 1, 0, nm[k]);
	} else {
		/* the copy is read only when its page fails in place and has
		 * no other copy: make it so */
		uint32_t pgno = ut_ld32(h + 16);

		for (uint32_t j = 0; j < b->nslots; j++) {
			uint8_t *o = m->f[F_DW].p + UT_DW_SLOT_OFF(b->slots[j]);

			if (o != h && ut_ld32(o + 16) == pgno)
				memset(o, 0, 32);
		}

		mutate_page(m, r, copy, pgno);
		ut_page_seal(copy);
		ut_st32(h + 20, ut_ld32(copy));
		if ((size_t)(pgno + 1) * UT_PAGE_SIZE <= m->f[F_DATA].n) {
			m->f[F_DATA].p[(size_t)pgno * UT_PAGE_SIZE + 100] ^= 0x5a;
			describe(m, " (page %u broken in place)", pgno);
		}
	}
	ut_st32(h + 28, ut_crc32c(0, h, 28));
}

static fz_blob dup_blob(const fz_blob *b)
{
	fz_blob c = *b;

	c.p = malloc(b->n ? b->n : 1);
	if (b->n) /* an empty blob's p may be NULL (the fullpage base's -dw) */
		memcpy(c.p, b->p, b->n);
	return c;
}

/* How often each target is picked, in percent: the pages the engine
 * parses most (leaf and interior cells) most often. */
static const unsigned target_pct[NTARGETS] = { 24, 15, 10, 6, 7, 6, 10, 5, 6, 6, 5 };

static void plan(mutation *m, uint64_t seed, long i)
{
	fz_rng r = { fz_mix64(seed * 0x9e3779b97f4a7c15ull + (uint64_t)i) };
	unsigned x = (unsigned)fz_below(&r, 100);
	const base *b;

	memset(m, 0, sizeof(*m));
	while (x >= target_pct[m->target])
		x -= target_pct[m->target++];
	/* R's data pages mostly come back whole from their -dw copies or the
	 * log: data-page targets go to C three times in four */
	if (m->target == T_WAL_REC || m->target == T_WAL_HDR)
		m->base = fz_chance(&r, 50) ? 2 : 1; /* F: images in its log */
	else
		m->base = m->target > T_WAL_HDR ? 1 : fz_chance(&r, 25);
	b = &g_base[m->base];
	for (int f = 0; f < NFILES; f++)
		m->f[f] = dup_blob(&b->f[f]);
	if (m->target <= T_META)
		mutate_data(m, &r);
	else if (m->target == T_CATALOG)
		mutate_catalog(m, &r);
	else if (m->target == T_WAL_REC)
		mutate_wal_record(m, &r);
	else if (m->target == T_WAL_HDR)
		mutate_wal_header(m, &r);
	else
		mutate_dw(m, &r);
}

/* ---- the child: every call, every answer checked ------------------------ */

enum outcome { O_REFUSED, O_CLEAN, O_DETECTED, O_MOVED, O_BADCODE, O_WRONG,
	       O_CRASH, O_HANG, NOUTCOMES };
static const char *const outcome_name[NOUTCOMES] = {
	"refused", "clean", "detected", "moved", "BADCODE", "WRONG", "CRASH", "HANG"
};
#define FIRST_FAILURE O_BADCODE

typedef struct result {
	int open_rc, refused, detected, badcode, wrong;
	uint64_t keys;
	char detail[400]; /* the first failure, else the first error */
} result;

static void note(result *res, int failure, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(result *res, int failure, const char *fmt, ...)
{
	va_list ap;

	if (res->detail[0] && !(failure && !res->badcode && !res->wrong))
		return;
	va_start(ap, fmt);
	vsnprintf(res->detail, sizeof(res->detail), fmt, ap);
	va_end(ap);
}

/* An answer of the engine: success, absent, or a refusal it may give. */
static void saw(result *res, const char *op, int rc)
{
	if (rc == UT_OK || rc == UT_NOTFOUND)
		return;
	if ((rc == UT_ECORRUPT || rc == UT_ENOTDB || rc == UT_EVERSION) &&
	    ut_errdetail()[0]) {
		res->detected++;
		note(res, 0, "%s: %s: %s", op, ut_strerror(rc), ut_errdetail());
		return;
	}
	note(res, 1, "%s: %s (%d) with detail \"%s\"", op, ut_strerror(rc), rc,
	     ut_errdetail());
	res->badcode++;
}

static void scan(ut_db *db, result *res, const char *op)
{
	ut_txn *t;
	ut_cursor *c;
	int rc;
	uint64_t n = 0;

	if ((rc = ut_begin(db, UT_RDONLY, &t))) {
		saw(res, op, rc);
		return;
	}
	if ((rc = ut_cursor_open(t, &c))) {
		saw(res, op, rc);
		ut_abort(t);
		return;
	}
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
		const void *k, *v;
		size_t kl, vl;
		uint32_t id;

		if ((rc = ut_cursor_get(c, &k, &kl, &v, &vl)))
			break;
		if (!kv_written(k, kl, v, vl, &id)) {
			res->wrong++;
			note(res, 1, "%s: a key of %zu bytes / value of %zu never written",
			     op, kl, vl);
			break;
		}
		if (++n > SCAN_CAP) {
			res->wrong++;
			note(res, 1, "%s: more than %d keys", op, SCAN_CAP);
			break;
		}
	}
	saw(res, op, rc);
	res->keys = n;
	ut_cursor_close(c);
	ut_abort(t);
}

static void gets(ut_db *db, result *res, fz_rng *r)
{
	ut_txn *t;
	int rc;

	if ((rc = ut_begin(db, UT_RDONLY, &t))) {
		saw(res, "get", rc);
		return;
	}
	for (int i = 0; i < 40; i++) {
		uint32_t id = i < 8 ? 17 + 200 * (uint32_t)i : (uint32_t)fz_below(r, NIDS);
		char k[KEYMAX];
		size_t kl = key_of(id, k), vl;
		void *v = NULL;
		uint32_t got;

		rc = ut_get(t, k, kl, &v, &vl);
		if (rc == UT_OK && (!kv_written(k, kl, v, vl, &got) || got != id)) {
			res->wrong++;
			note(res, 1, "get id %u: a value of %zu bytes never written", id, vl);
		}
		saw(res, "get", rc);
		free(v);
	}
	ut_abort(t);
}

/* Every named table: listed, opened, scanned like the default one. */
static void scan_tables(ut_db *db, result *res)
{
	ut_table_info ti;
	ut_txn *t;
	int rc, n = 0;

	if ((rc = ut_begin(db, UT_RDONLY, &t))) {
		saw(res, "tables", rc);
		return;
	}
	for (rc = ut_table_next(t, NULL, &ti); rc == UT_OK && n < 16;
	     rc = ut_table_next(t, ti.name, &ti), n++) {
		ut_table *tb;
		ut_cursor *c;
		int crc = ut_table_open(t, ti.name, 0, &tb);

		if (crc == UT_OK)
			crc = ut_tcursor_open(t, tb, &c);
		if (crc) {
			saw(res, "table open", crc);
			continue;
		}
		uint64_t keys = 0;
		for (crc = ut_cursor_seek(c, NULL, 0); crc == UT_OK;
		     crc = ut_cursor_next(c)) {
			const void *k, *v;
			size_t kl, vl;
			uint32_t id;

			if ((crc = ut_cursor_get(c, &k, &kl, &v, &vl)))
				break;
			if (!kv_written(k, kl, v, vl, &id)) {
				res->wrong++;
				note(res, 1, "table %s: a key of %zu bytes / value "
				     "of %zu never written", ti.name, kl, vl);
				break;
			}
			if (++keys > SCAN_CAP) {
				res->wrong++;
				note(res, 1, "table %s: more than %d keys", ti.name,
				     SCAN_CAP);
				break;
			}
		}
		saw(res, "table scan", crc);
		ut_cursor_close(c);
	}
	saw(res, "tables", rc);
	ut_abort(t);
}

/* A write transaction over the tables: puts into ta, tb cleared (its
 * pages freed), committed. */
static void table_writes(ut_db *db, result *res, fz_rng *r)
{
	ut_table *ta = NULL, *tb = NULL;
	ut_txn *t;
	int rc;

	if ((rc = ut_begin(db, 0, &t))) {
		saw(res, "begin", rc);
		return;
	}
	rc = ut_table_open(t, "ta", UT_CREATE, &ta);
	saw(res, "table open", rc);
	for (int i = 0; i < 8 && rc == UT_OK; i++) {
		rc = put_id_in(t, ta, (uint32_t)fz_below(r, 300), 2000 + (uint32_t)i);
		saw(res, "table put", rc);
	}
	if (rc == UT_OK && (rc = ut_table_open(t, "tb", 0, &tb)) == UT_OK) {
		rc = ut_table_clear(t, tb);
		saw(res, "table clear", rc);
	} else if (rc == UT_NOTFOUND) {
		rc = UT_OK;
	} else {
		saw(res, "table open", rc);
	}
	if (rc == UT_OK)
		saw(res, "table commit", ut_commit(t));
	else
		ut_abort(t);
}

static void writes(ut_db *db, result *res, fz_rng *r)
{
	ut_txn *t;
	int rc;

	if ((rc = ut_begin(db, 0, &t))) {
		saw(res, "begin", rc);
		return;
	}
	for (int i = 0; i < 16 && rc == UT_OK; i++) {
		uint32_t id = i < 3 ? 17 + 200 * (uint32_t)fz_below(r, 8)
				    : (uint32_t)fz_below(r, NIDS);

		rc = fz_chance(r, 30) ? del_id(t, id) : put_id(t, id, 1000 + (uint32_t)i);
		saw(res, i % 3 ? "put" : "put/del", rc);
		if (rc == UT_NOTFOUND)
			rc = UT_OK;
	}
	if (rc == UT_OK) {
		saw(res, "commit", ut_commit(t));
	} else {
		ut_abort(t);
	}
}

/* One iteration: the mutated copy and where it was written. */
typedef struct iteration {
	mutation m;
	const char *path;
} iteration;

static void run_child(void *ctx, int fd)
{
	const iteration *it = ctx;
	const base *b = &g_base[it->m.base];
	const char *path = it->path;
	ut_options o = base_options(b);
	fz_rng r = { 99 };
	result res;
	ut_db *db;
	ut_check_result cr;
	int rc;

	memset(&res, 0, sizeof(res));
	o.create = 0;
	res.open_rc = ut_open(path, &o, &db);
	if (res.open_rc) {
		res.refused = 1;
		saw(&res, "open", res.open_rc);
		goto out;
	}
	scan(db, &res, "scan");
	scan_tables(db, &res);
	gets(db, &res, &r);
	writes(db, &res, &r);
	table_writes(db, &res, &r);
	rc = ut_check(db, NULL, &cr);
	saw(&res, "check", rc);
	saw(&res, "close", ut_close(db));
	rc = ut_open(path, &o, &db);
	saw(&res, "reopen", rc);
	if (rc == UT_OK) {
		scan(db, &res, "rescan");
		scan_tables(db, &res);
		saw(&res, "close again", ut_close(db));
	}
out:
	if (write(fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(3);
	_exit(0);
}

/* A live page failing its checksum where no write of this test goes (the
 * default table's leftmost leaf; the puts add keys at the right end):
 * only the free-list walk at the first write transaction reads it.  Below
 * a damaged page the walk cannot know which pages are live, so no free
 * page may be reused: the put that would take one must get UT_ECORRUPT
 * with a detail naming the damaged page and the free list, and no page of
 * the file may change (the header aside: close may rewrite it).  Returns
 * the failures. */
static int damaged_page_in_free_walk(const char *dir)
{
	const base *b = &g_base[0];
	fz_blob d = dup_blob(&b->f[F_DATA]), after;
	ut_options o = base_options(b);
	char path[600], want[32];
	uint32_t leaf = ut_ld32(d.p + UT_META_ROOT);
	int failures = 0, rc = UT_OK, refused = 0, depth = 0;
	ut_db *db;
	ut_txn *t;

	o.create = 0;
	while (leaf && leaf < b->npages && depth++ < 16 &&
	       ut_page_type(d.p + (size_t)leaf * UT_PAGE_SIZE) == UT_PT_INTERIOR)
		leaf = ut_ld32(ut_page_cell(d.p + (size_t)leaf * UT_PAGE_SIZE, 0));
	if (!leaf || leaf >= b->npages || depth < 2 ||
	    ut_page_type(d.p + (size_t)leaf * UT_PAGE_SIZE) != UT_PT_LEAF ||
	    !ut_ld32(d.p + UT_META_FREEHEAD))
		die("damaged-walk: base C has no leftmost leaf below an interior "
		    "page (%u) or no free page", leaf);
	/* its last byte flipped, the checksum left as it was */
	d.p[(size_t)leaf * UT_PAGE_SIZE + UT_PAGE_SIZE - 1] ^= 0x5a;
	snprintf(path, sizeof(path), "%s/damaged-walk.db", dir);
	for (int f = 0; f < NFILES; f++) {
		char p[600];

		snprintf(p, sizeof(p), "%s%s", path, file_suffix[f]);
		unlink(p);
		if (b->f[f].exists &&
		    fz_spill(p, f == F_DATA ? d.p : b->f[f].p,
			     f == F_DATA ? d.n : b->f[f].n))
			die("write %s: %s", p, strerror(errno));
	}

	if ((rc = ut_open(path, &o, &db)) || (rc = ut_begin(db, 0, &t)))
		die("damaged-walk: open: %s: %s", ut_strerror(rc), ut_errdetail());
	for (uint32_t id = NBASE; id < NIDS && rc == UT_OK; id++)
		rc = put_id(t, id, 5000);
	snprintf(want, sizeof(want), "page %u:", leaf);
	if (rc == UT_ECORRUPT && strstr(ut_errdetail(), "free list") &&
	    strstr(ut_errdetail(), want) && strstr(ut_errdetail(), "checksum")) {
		refused = 1;
		printf("damaged-walk: refused: %s\n", ut_errdetail());
	} else {
		failures++;
		printf("FAIL damaged-walk: the puts returned %s (%s), not "
		       "UT_ECORRUPT naming the free list and page %u's checksum\n",
		       ut_strerror(rc), rc ? ut_errdetail() : "", leaf);
	}
	if (rc == UT_OK && (rc = ut_commit(t)))
		printf("damaged-walk: commit: %s: %s\n", ut_strerror(rc), ut_errdetail());
	else if (rc)
		ut_abort(t);
	if ((rc = ut_close(db)))
		die("damaged-walk: close: %s", ut_strerror(rc));

	/* refused or not (a planted bug commits), no page changed */
	after = fz_slurp(path);
	if (after.n != d.n) {
		failures++;
		printf("FAIL damaged-walk: the file went from %zu to %zu bytes\n",
		       d.n, after.n);
	} else {
		uint32_t changed = 0, first = 0;

		for (uint32_t i = 1; i < b->npages; i++)
			if (memcmp(d.p + (size_t)i * UT_PAGE_SIZE,
				   after.p + (size_t)i * UT_PAGE_SIZE, UT_PAGE_SIZE) &&
			    !changed++)
				first = i;
		if (changed) {
			failures++;
			printf("FAIL damaged-walk: %u pages changed (the first: "
			       "page %u)\n", changed, first);
		}
	}
	printf("damaged-walk: %s, page %u\n", refused ? "refused" : "NOT refused",
	       leaf);
	free(after.p);
	free(d.p);
	return failures;
}


/* ---- a free list that names a live page -------------------------------- */

/* Every table's keys and values, in order, as a count and a CRC. */
static void digest(const char *path, const ut_options *o, uint64_t *keys,
		   uint32_t *crc)
{
	ut_table_info ti;
	ut_db *db;
	ut_txn *t;
	int rc, more = 1;

	*keys = 0;
	*crc = 0;
	if ((rc = ut_open(path, o, &db)) || (rc = ut_begin(db, UT_RDONLY, &t)))
		die("live-free: open %s: %s: %s", path, ut_strerror(rc), ut_errdetail());
	for (const char *name = NULL; more; ) {
		ut_table *tb = NULL;
		ut_cursor *c;

		if (name && (rc = ut_table_open(t, name, 0, &tb)))
			die("live-free: table %s: %s", name, ut_strerror(rc));
		if ((rc = ut_tcursor_open(t, tb, &c)))
			die("live-free: cursor: %s", ut_strerror(rc));
		for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK;
		     rc = ut_cursor_next(c)) {
			const void *k, *v;
			size_t kl, vl;

			char idk[8];
			unsigned id;

			if ((rc = ut_cursor_get(c, &k, &kl, &v, &vl)))
				break;
			memcpy(idk, k, kl < 6 ? kl : 6);
			idk[kl < 6 ? kl : 6] = 0;
			if (!name && sscanf(idk, "k%5u", &id) == 1 && id >= NBASE)
				continue; /* the test's own new keys */
			*crc = ut_crc32c(*crc, k, kl);
			*crc = ut_crc32c(*crc, v, vl);
			++*keys;
		}
		if (rc != UT_NOTFOUND)
			die("live-free: scan of %s: %s: %s", name ? name : "default",
			    ut_strerror(rc), ut_errdetail());
		ut_cursor_close(c);
		rc = ut_table_next(t, name, &ti);
		more = rc == UT_OK;
		name = ti.name;
	}
	ut_abort(t);
	if ((rc = ut_close(db)))
		die("live-free: close: %s", ut_strerror(rc));
}

/* A crafted file whose free list (checksums valid) names a live leaf:
 * the engine must refuse to reuse it (UT_ECORRUPT, a detail naming the
 * free list and the page) and every table must keep every key and value.
 * Base C's head trunk gets a live leaf as the member an allocation takes
 * first.  Returns the failures. */
static int live_page_on_free_list(const char *dir)
{
	const base *b = &g_base[0];
	fz_blob d = dup_blob(&b->f[F_DATA]);
	ut_options o = base_options(b);
	char path[600];
	uint64_t keys0, keys1;
	uint32_t crc0, crc1, head, live = 0, n;
	uint8_t *isfree = calloc(b->npages, 1), *trunk;
	int failures = 0, rc = UT_OK, refused = 0;
	ut_db *db;
	ut_txn *t;

	o.create = 0;
	snprintf(path, sizeof(path), "%s/live-free.db", dir);
	/* the pages the free list names, then a live leaf: one it does not */
	head = ut_ld32(d.p + UT_META_FREEHEAD);
	for (uint32_t pg = head; pg && pg < b->npages && !isfree[pg]; ) {
		const uint8_t *tp = d.p + (size_t)pg * UT_PAGE_SIZE;

		isfree[pg] = 1;
		for (unsigned i = 0; i < ut_page_aux(tp); i++)
			if (ut_free_member(tp, i) < b->npages)
				isfree[ut_free_member(tp, i)] = 1;
		pg = ut_page_right(tp);
	}
	for (uint32_t i = 0; i < b->ntype[UT_PT_LEAF]; i++)
		if (!isfree[b->by_type[UT_PT_LEAF][i]])
			live = b->by_type[UT_PT_LEAF][i];
	trunk = d.p + (size_t)head * UT_PAGE_SIZE;
	n = head ? ut_page_aux(trunk) : 0;
	if (!live || !n)
		die("live-free: base C has no live leaf (%u) or no listed free "
		    "page in its head trunk %u", live, head);
	/* the base's tables as they are, read from a plain copy */
	for (int copy = 0; copy < 2; copy++) {
		snprintf(path, sizeof(path), "%s/live-free-%d.db", dir, copy);
		for (int f = 0; f < NFILES; f++) {
			char p[600];

			snprintf(p, sizeof(p), "%s%s", path, file_suffix[f]);
			unlink(p);
			if (b->f[f].exists && fz_spill(p, b->f[f].p, b->f[f].n))
				die("write %s: %s", p, strerror(errno));
		}
		if (copy == 0)
			digest(path, &o, &keys0, &crc0);
	}
	ut_st32(trunk + UT_PG_HDR + 4 * (n - 1), live);
	ut_page_seal(trunk);
	if (fz_spill(path, d.p, d.n))
		die("write %s: %s", path, strerror(errno));

	/* new keys, so leaves split and overflow chains grow: allocations */
	if ((rc = ut_open(path, &o, &db)) || (rc = ut_begin(db, 0, &t)))
		die("live-free: open: %s: %s", ut_strerror(rc), ut_errdetail());
	for (uint32_t id = NBASE; id < NIDS && rc == UT_OK; id++)
		rc = put_id(t, id, 5000);
	if (rc == UT_ECORRUPT && strstr(ut_errdetail(), "free list")) {
		char want[32];

		snprintf(want, sizeof(want), "page %u:", live);
		refused = strstr(ut_errdetail(), want) != NULL;
		printf("live-free: refused: %s\n", ut_errdetail());
	}
	if (!refused) {
		failures++;
		printf("FAIL live-free: a put returned %s (%s), not UT_ECORRUPT "
		       "naming the free list and page %u\n", ut_strerror(rc),
		       rc ? ut_errdetail() : "", live);
	}
	if (rc == UT_OK && (rc = ut_commit(t)))
		printf("live-free: commit: %s: %s\n", ut_strerror(rc), ut_errdetail());
	else if (rc)
		ut_abort(t);
	if ((rc = ut_close(db)))
		die("live-free: close: %s", ut_strerror(rc));
	/* refused or not (a planted bug commits), the old data must stand */
	digest(path, &o, &keys1, &crc1);
	printf("live-free: %llu keys before and %llu after (crc %08x, %08x)\n",
	       (unsigned long long)keys0, (unsigned long long)keys1, crc0, crc1);
	if (keys1 != keys0 || crc1 != crc0) {
		failures++;
		printf("FAIL live-free: %llu keys (crc %08x) before, %llu (crc "
		       "%08x) after\n", (unsigned long long)keys0, crc0,
		       (unsigned long long)keys1, crc1);
	}
	free(isfree);
	free(d.p);
	return failures;
}

/* ---- the run ----------------------------------------------------------- */

static void write_copy(const mutation *m, const char *path)
{
	for (int f = 0; f < NFILES; f++) {
		char p[600];

		snprintf(p, sizeof(p), "%s%s", path, file_suffix[f]);
		unlink(p);
		if (m->f[f].exists && fz_spill(p, m->f[f].p, m->f[f].n))
			die("write %s: %s", p, strerror(errno));
	}
}

static int classify(const mutation *m, const result *r)
{
	if (r->wrong)
		return m->moves_bytes && !r->badcode ? O_MOVED : O_WRONG;
	if (r->badcode)
		return O_BADCODE;
	if (r->refused)
		return O_REFUSED;
	return r->detected ? O_DETECTED : O_CLEAN;
}

int main(void)
{
	const char *tmp = getenv("UT_TMPDIR");
	uint64_t seed = (uint64_t)fz_env_long("UT_FUZZ_SEED", 1);
	long iters = fz_env_long("UT_FUZZ_ITERS", 200);
	long only = fz_env_long("UT_FUZZ_ONLY", -1);
	long timeout_s = fz_env_long("UT_FUZZ_TIMEOUT", 60);
	int verbose = (int)fz_env_long("UT_FUZZ_VERBOSE", 0);
	int keep = only >= 0 && fz_env_long("UT_FUZZ_KEEP", 0);
	static long table[NBASES][NTARGETS][NOUTCOMES];
	long failures = 0, done = 0;
	char dir[512], path[600];
	time_t t0 = time(NULL);
	iteration ctx;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!tmp || !*tmp)
		tmp = "/tmp";
	mkdir(tmp, 0755);
	snprintf(dir, sizeof(dir), "%s/fuzz-crafted-%d", tmp, (int)getpid());
	rm_tree(dir);
	if (mkdir(dir, 0755))
		die("mkdir %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/it.db", dir);
	build_base(&g_base[0], dir, 'C', 0, 64u << 20, UT_PROTECT_DOUBLEWRITE);
	build_base(&g_base[1], dir, 'R', 1, 256u << 10, UT_PROTECT_DOUBLEWRITE);
	build_base(&g_base[2], dir, 'F', 1, 256u << 10, UT_PROTECT_FULLPAGE);
	if (only < 0) {
		failures += live_page_on_free_list(dir);
		failures += damaged_page_in_free_walk(dir);
	}
	printf("seed %llu, %ld iterations\n", (unsigned long long)seed,
	       only >= 0 ? 1 : iters);

	for (long i = only >= 0 ? only : 0; i < (only >= 0 ? only + 1 : iters); i++) {
		result r;
		char why[128] = "";
		int o;

		plan(&ctx.m, seed, i);
		ctx.path = path;
		write_copy(&ctx.m, path);
		if (keep) {
			printf("iteration %ld: %s %s: the copy is %s\n", i,
			       target_name[ctx.m.target], ctx.m.desc, path);
			return 0;
		}
		memset(&r, 0, sizeof(r));
		o = fz_run_child(run_child, &ctx, &r, sizeof(r), timeout_s, why, sizeof(why));
		o = o == FZ_ANSWERED ? classify(&ctx.m, &r) : o == FZ_HANG ? O_HANG : O_CRASH;
		table[ctx.m.base][ctx.m.target][o]++;
		done++;
		if (o >= FIRST_FAILURE) {
			failures++;
			printf("FAIL seed=%llu iter=%ld: base %c %s %s: %s: %s\n",
			       (unsigned long long)seed, i, g_base[ctx.m.base].name,
			       target_name[ctx.m.target], ctx.m.desc, outcome_name[o],
			       o >= O_CRASH ? why : r.detail);
		} else if (verbose) {
			printf("ok   iter=%ld: base %c %s %s: %s: %s\n", i,
			       g_base[ctx.m.base].name, target_name[ctx.m.target],
			       ctx.m.desc, outcome_name[o], r.detail);
		}
		for (int f = 0; f < NFILES; f++)
			free(ctx.m.f[f].p);
	}

	printf("\n| base | target | iterations |");
	for (int o = 0; o < NOUTCOMES; o++)
		printf(" %s |", outcome_name[o]);
	printf("\n|---|---|---:|");
	for (int o = 0; o < NOUTCOMES; o++)
		printf("---:|");
	printf("\n");
	for (int bi = 0; bi < NBASES; bi++)
		for (int t = 0; t < NTARGETS; t++) {
			long tot = 0;

			for (int o = 0; o < NOUTCOMES; o++)
				tot += table[bi][t][o];
			if (!tot)
				continue;
			printf("| %c | %s | %ld |", g_base[bi].name, target_name[t], tot);
			for (int o = 0; o < NOUTCOMES; o++)
				printf(" %ld |", table[bi][t][o]);
			printf("\n");
		}
	printf("\nseed %llu: %ld iterations, %ld failures, %ld s\n",
	       (unsigned long long)seed, done, failures, (long)(time(NULL) - t0));
	rm_tree(dir);
	return failures ? 1 : 0;
}

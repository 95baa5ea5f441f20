/*
 * engine/page.c - page header, checksum and slotted-page helpers (page.h).
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "page.h"
#include "ut_crc32c.h"
#include "ut_io.h"

static inline void set_nslots(uint8_t *p, unsigned n)
{
	assert(UT_PG_HDR + n * UT_PG_SLOT <= UT_PAGE_SIZE);
	ut_st16(p + 6, (uint16_t)n);
}
static inline unsigned content(const uint8_t *p)
{
	unsigned c = ut_ld16(p + 20);
	return c ? c : UT_PAGE_SIZE; /* 16384 does not fit u16: 0 means end */
}
static inline void set_content(uint8_t *p, unsigned c)
{
	assert(c >= UT_PG_HDR + ut_page_nslots(p) * UT_PG_SLOT && c <= UT_PAGE_SIZE);
	ut_st16(p + 20, (uint16_t)(c == UT_PAGE_SIZE ? 0 : c));
}
static inline unsigned frag(const uint8_t *p) { return ut_ld16(p + 22); }
static inline void set_frag(uint8_t *p, unsigned f)
{
	assert(f <= UT_PAGE_SIZE - content(p)); /* holes lie in the content area */
	ut_st16(p + 22, (uint16_t)f);
}
static inline uint8_t *slot(uint8_t *p, unsigned i) { return p + UT_PG_HDR + i * UT_PG_SLOT; }

void ut_page_init(uint8_t *p, uint32_t pgno, int type)
{
	memset(p, 0, UT_PAGE_SIZE);
	p[4] = (uint8_t)type;
	ut_st32(p + 16, pgno);
	set_content(p, UT_PAGE_SIZE);
}

static uint32_t page_crc(const uint8_t *p)
{
	return ut_crc32c(0, p + 4, UT_PAGE_SIZE - 4);
}

void ut_page_seal(uint8_t *p)
{
	ut_st32(p, page_crc(p));
}

int ut_page_checksum_ok(const uint8_t *p)
{
	return ut_ld32(p) == page_crc(p);
}

static void cells_by_offset(const uint8_t *p, uint32_t *out);

static int bad(const char *path, uint32_t pgno, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(const char *path, uint32_t pgno, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	ut_set_errdetail("%s: page %u: %s", path, pgno, what);
	return UT_ECORRUPT;
}

static int keycmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : al < bl ? -1 : al > bl;
}

/* Cell i (inside the content area) against its own length fields, which
 * the B+tree reads without checking again; sets its key. */
static int check_cell(const uint8_t *p, uint32_t pgno, const char *path,
		      unsigned i, const uint8_t **key, unsigned *klen)
{
	const uint8_t *c = p + ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT);
	unsigned len = ut_page_cell_len(p, i);

	if (ut_page_type(p) == UT_PT_LEAF) {
		uint32_t vlen;

		if (len < UT_LEAF_HDR)
			return bad(path, pgno, "leaf cell %u: %u bytes, less than "
				   "its header", i, len);
		*klen = ut_ld16(c);
		*key = c + UT_LEAF_HDR;
		vlen = ut_ld32(c + 3);
		if (c[2] & ~UT_CELL_OVFL)
			return bad(path, pgno, "leaf cell %u: unknown flags 0x%x",
				   i, c[2]);
		if (*klen == 0 || *klen > UT_MAX_KEY)
			return bad(path, pgno, "leaf cell %u: key length %u",
				   i, *klen);
		if (vlen > UT_MAX_VALUE)
			return bad(path, pgno, "leaf cell %u: value length %u "
				   "over %u", i, vlen, UT_MAX_VALUE);
		if (c[2] & UT_CELL_OVFL) {
			uint32_t head;

			if (len != UT_LEAF_HDR + *klen + 4)
				return bad(path, pgno, "leaf cell %u: %u bytes for a "
					   "key of %u and an overflow pointer",
					   i, len, *klen);
			head = ut_ld32(c + UT_LEAF_HDR + *klen);
			if (!vlen || !head || head == pgno)
				return bad(path, pgno, "leaf cell %u: overflow "
					   "pointer %u for %u bytes", i, head, vlen);
		} else if (len != UT_LEAF_HDR + *klen + vlen) {
			return bad(path, pgno, "leaf cell %u: %u bytes for a key "
				   "of %u and a value of %u", i, len, *klen, vlen);
		}
		return UT_OK;
	}
	if (len < UT_INT_HDR)
		return bad(path, pgno, "interior cell %u: %u bytes, less than its "
			   "header", i, len);
	*klen = ut_ld16(c + 4);
	*key = c + UT_INT_HDR;
	if (*klen == 0 || *klen > UT_MAX_KEY || len != UT_INT_HDR + *klen)
		return bad(path, pgno, "interior cell %u: %u bytes for a key of %u",
			   i, len, *klen);
	if (ut_ld32(c) == 0 || ut_ld32(c) == pgno)
		return bad(path, pgno, "interior cell %u: child pointer %u", i,
			   ut_ld32(c));
	return UT_OK;
}

int ut_page_check_slots(const uint8_t *p, uint32_t pgno, const char *path)
{
	static _Thread_local uint32_t order[UT_PG_USABLE / UT_PG_SLOT];
	unsigned n = ut_page_nslots(p), c = content(p), sum = 0, end;

	if (UT_PG_HDR + n * UT_PG_SLOT > c)
		return bad(path, pgno, "slot array of %u slots overlaps the cells "
			   "(content starts at %u)", n, c);
	for (unsigned i = 0; i < n; i++) {
		unsigned off = ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT);
		unsigned len = ut_page_cell_len(p, i);

		if (off < c || len == 0 || off + len > UT_PAGE_SIZE)
			return bad(path, pgno, "slot %u: cell at %u+%u outside the "
				   "content area [%u, %u)", i, off, len, c,
				   UT_PAGE_SIZE);
		sum += len;
	}
	if (sum + frag(p) != UT_PAGE_SIZE - c)
		return bad(path, pgno, "frag %u: with cells of %u bytes it does not "
			   "fill the content area of %u bytes", frag(p), sum,
			   UT_PAGE_SIZE - c);
	cells_by_offset(p, order);
	end = c;
	for (unsigned j = 0; j < n; j++) {
		unsigned off = order[j] >> 16, i = order[j] & 0xffff;

		if (off < end)
			return bad(path, pgno, "slot %u: cell at %u overlaps another "
				   "cell", i, off);
		end = off + ut_page_cell_len(p, i);
	}
	return UT_OK;
}

/* The cells of a leaf or interior page (slots checked): formats, key
 * order, child pointers. */
static int check_cells(const uint8_t *p, uint32_t pgno, const char *path)
{
	const uint8_t *prev = NULL;
	unsigned prevl = 0;

	for (unsigned i = 0; i < ut_page_nslots(p); i++) {
		unsigned kl = 0;
		const uint8_t *k = NULL;
		int rc;

		if ((rc = check_cell(p, pgno, path, i, &k, &kl)))
			return rc;
		if (prev && keycmp(prev, prevl, k, kl) >= 0)
			return bad(path, pgno, "cell %u: key not above cell %u's",
				   i, i - 1);
		prev = k;
		prevl = kl;
	}
	if (ut_page_type(p) == UT_PT_INTERIOR &&
	    (ut_page_right(p) == 0 || ut_page_right(p) == pgno))
		return bad(path, pgno, "right child pointer %u", ut_page_right(p));
	return UT_OK;
}

int ut_page_check(const uint8_t *p, uint32_t pgno, const char *path)
{
	unsigned t = (unsigned)ut_page_type(p);

	if (ut_page_pgno(p) != pgno)
		return bad(path, pgno, "header says page %u (misdirected write)",
			   ut_page_pgno(p));
	if (t < UT_PT_FREE || t > UT_PT_OVERFLOW)
		return bad(path, pgno, "unknown page type %u", t);
	if (t == UT_PT_LEAF || t == UT_PT_INTERIOR) {
		int rc = ut_page_check_slots(p, pgno, path);

		return rc ? rc : check_cells(p, pgno, path);
	}
	if (t == UT_PT_OVERFLOW && (ut_page_aux(p) == 0 ||
				    ut_page_aux(p) > UT_OVFL_CAP))
		return bad(path, pgno, "overflow page holds %u bytes (1..%u)",
			   ut_page_aux(p), UT_OVFL_CAP);
	if (t == UT_PT_FREE && ut_page_aux(p) > UT_FREE_CAP)
		return bad(path, pgno, "free-list page lists %u pages (at most %u)",
			   ut_page_aux(p), UT_FREE_CAP);
	if (t != UT_PT_META && ut_page_right(p) == pgno)
		return bad(path, pgno, "next page pointer is the page itself");
	return UT_OK;
}

int ut_page_verify(const uint8_t *p, uint32_t pgno, const char *path)
{
	uint32_t want = ut_ld32(p), got = page_crc(p);

	if (want != got)
		return bad(path, pgno, "checksum mismatch (stored %08x, computed "
			   "%08x)", want, got);
	return ut_page_check(p, pgno, path);
}

static const char *type_name(int t)
{
	static const char *const names[] = { "unknown", "free", "header", "leaf",
					     "interior", "overflow" };

	return t >= UT_PT_FREE && t <= UT_PT_OVERFLOW ? names[t] : names[0];
}

int ut_page_expect_type(const uint8_t *p, uint32_t pgno, int want,
			uint32_t from, const char *what, const char *path)
{
	int t = ut_page_type(p);

	if (t == want)
		return UT_OK;
	return bad(path, pgno, "a %s page (type %d) where page %u's %s expects a "
		   "%s page", type_name(t), t, from, what, type_name(want));
}

int ut_page_ovfl_step(const uint8_t *p, uint32_t pgno, uint64_t vlen,
		      uint64_t done, const char *path)
{
	uint64_t due = vlen - done < UT_OVFL_CAP ? vlen - done : UT_OVFL_CAP;
	uint32_t next = ut_page_right(p);

	if (ut_page_type(p) != UT_PT_OVERFLOW)
		return bad(path, pgno, "a %s page (type %d) in an overflow chain "
			   "of %llu bytes", type_name(ut_page_type(p)),
			   ut_page_type(p), (unsigned long long)vlen);
	if (done >= vlen || ut_page_aux(p) != due)
		return bad(path, pgno, "overflow page holds %u bytes, the chain "
			   "of %llu bytes needs %llu after %llu", ut_page_aux(p),
			   (unsigned long long)vlen,
			   (unsigned long long)(done < vlen ? due : 0),
			   (unsigned long long)done);
	if ((done + due == vlen) != (next == 0))
		return bad(path, pgno, "overflow chain of %llu bytes %s after "
			   "%llu (next page %u)", (unsigned long long)vlen,
			   next ? "goes on" : "ends",
			   (unsigned long long)(done + due), next);
	return UT_OK;
}

unsigned ut_page_used(const uint8_t *p)
{
	unsigned n = ut_page_nslots(p);

	return n * UT_PG_SLOT + (UT_PAGE_SIZE - content(p)) - frag(p);
}

unsigned ut_page_free(const uint8_t *p)
{
	return UT_PG_USABLE - ut_page_used(p);
}

void ut_page_compact(uint8_t *p)
{
	uint8_t tmp[UT_PAGE_SIZE];
	unsigned n = ut_page_nslots(p), top = UT_PAGE_SIZE;

	memcpy(tmp, p, UT_PAGE_SIZE);
	for (unsigned i = 0; i < n; i++) {
		unsigned off = ut_ld16(tmp + UT_PG_HDR + i * UT_PG_SLOT);
		unsigned len = ut_ld16(tmp + UT_PG_HDR + i * UT_PG_SLOT + 2);
		/* frag + the cells fill the content area: they fit above the slots */
		assert(len <= top - UT_PG_HDR - n * UT_PG_SLOT);
		top -= len;
		memcpy(p + top, tmp + off, len);
		ut_st16(slot(p, i), (uint16_t)top);
	}
	set_content(p, top);
	set_frag(p, 0);
}

/* The cells as (offset << 16 | slot index), sorted by offset, into out.
 * Two counting passes of 7 bits each (offsets < 2^14): this runs whenever
 * an insert finds no contiguous gap, which a comparison sort made the
 * load's hottest function. */
static void cells_by_offset(const uint8_t *p, uint32_t *out)
{
	static _Thread_local uint32_t tmp[UT_PG_USABLE / UT_PG_SLOT];
	unsigned n = ut_page_nslots(p);

	for (unsigned i = 0; i < n; i++)
		out[i] = (uint32_t)ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT) << 16 | i;
	for (unsigned shift = 16; shift < 30; shift += 7) {
		unsigned count[129] = { 0 };
		uint32_t *from = shift == 16 ? out : tmp;
		uint32_t *to = shift == 16 ? tmp : out;

		for (unsigned i = 0; i < n; i++)
			count[((from[i] >> shift) & 127) + 1]++;
		for (unsigned d = 1; d <= 128; d++)
			count[d] += count[d - 1];
		for (unsigned i = 0; i < n; i++)
			to[count[(from[i] >> shift) & 127]++] = from[i];
	}
}

/* Offset of a hole of at least len bytes between the cells a[0..n) (sorted
 * by offset), or 0. */
static unsigned find_hole(const uint8_t *p, const uint32_t *a, unsigned n,
			  unsigned len)
{
	unsigned at = content(p);

	for (unsigned i = 0; i < n; i++) {
		unsigned off = a[i] >> 16;
		unsigned end = off + ut_page_cell_len(p, a[i] & 0xffff);

		if (off >= at + len)
			return at;
		if (end > at)
			at = end;
	}
	return UT_PAGE_SIZE >= at + len ? at : 0;
}

/* Lifting stops paying once it moves a quarter of a page: a compaction
 * then costs the log little more. */
#define LIFT_MAX_BYTES (UT_PAGE_SIZE / 4)
#define LIFT_MAX_MOVES 64
/* Gap lifted beyond the insert's need, when the holes allow, so that the
 * next inserts find room without sorting the cells again. */
#define LIFT_SLACK 256u

struct lift { uint16_t idx, from, to, len; };

/* Plan how to raise the lowest cell offset to want (to want + LIFT_SLACK
 * when the holes allow): move the lowest cell to the top of the highest
 * hole above it that takes it, and repeat.  a[0..n) sorted by offset,
 * updated as the cells move.  Returns the number of moves, or -1 when want
 * is out of reach: a cell finds no hole, or the moves would cost more than
 * LIFT_MAX_BYTES. */
static int plan_lift(const uint8_t *p, uint32_t *a, unsigned n, unsigned want,
		     struct lift *mv)
{
	unsigned moved = 0;
	int k = 0;

	while (n && (a[0] >> 16) < want + LIFT_SLACK) {
		unsigned idx = a[0] & 0xffff, from = a[0] >> 16;
		unsigned len = ut_page_cell_len(p, idx), i = n, to = 0;

		while (i-- > 0) {
			unsigned hole_end = i + 1 < n ? a[i + 1] >> 16 : UT_PAGE_SIZE;
			unsigned cur = a[i] & 0xffff, end = (a[i] >> 16) +
				(cur == idx ? len : ut_page_cell_len(p, cur));

			if (hole_end >= end + len) {
				to = hole_end - len;
				break;
			}
		}
		moved += len;
		if (!to || moved > LIFT_MAX_BYTES || k == LIFT_MAX_MOVES)
			return from >= want ? k : -1;
		memmove(a, a + 1, i * sizeof(*a));
		a[i] = (uint32_t)to << 16 | idx;
		mv[k++] = (struct lift){ (uint16_t)idx, (uint16_t)from, (uint16_t)to,
					 (uint16_t)len };
	}
	return k;
}

/* Make the gap below the cells a[0..n) (sorted by offset) reach offset want
 * by lifting the lowest cells into holes higher up.  A compaction moves
 * every cell, and the log then records the whole page; this moves a few.
 * 0, or -1 with the page unchanged. */
static int lift_cells(uint8_t *p, uint32_t *a, unsigned n, unsigned want,
		      uint64_t *touched)
{
	struct lift mv[LIFT_MAX_MOVES];
	int k = plan_lift(p, a, n, want, mv);
	unsigned top;

	if (k < 0)
		return -1;
	for (int j = 0; j < k; j++) {
		assert(mv[j].to + mv[j].len <= UT_PAGE_SIZE);
		memmove(p + mv[j].to, p + mv[j].from, mv[j].len);
		ut_st16(slot(p, mv[j].idx), mv[j].to);
		ut_page_touch(touched, mv[j].to, mv[j].len);
		ut_page_touch(touched, (unsigned)(slot(p, mv[j].idx) - p), 2);
	}
	/* the bytes between the old content start and top were holes */
	top = n ? a[0] >> 16 : UT_PAGE_SIZE;
	set_frag(p, frag(p) - (top - content(p)));
	set_content(p, top);
	return 0;
}

/* No contiguous gap takes a cell of len bytes (and its slot): the offset
 * of a hole that does, or 0 once the gap has been made to take it (by
 * lifting a few cells, else by compacting; at once when touched is NULL,
 * the page being logged whole). */
static unsigned make_room(uint8_t *p, unsigned len, uint64_t *touched)
{
	static _Thread_local uint32_t a[UT_PG_USABLE / UT_PG_SLOT];
	unsigned n = ut_page_nslots(p);
	unsigned slots_end = UT_PG_HDR + (n + 1) * UT_PG_SLOT, hole;

	if (!touched) {
		/* logged whole: one compaction makes all free space the gap */
		ut_page_compact(p);
		return 0;
	}
	cells_by_offset(p, a);
	if (slots_end <= content(p) && frag(p) >= len &&
	    (hole = find_hole(p, a, n, len)))
		return hole;
	if (lift_cells(p, a, n, slots_end + len, touched)) {
		ut_page_compact(p);
		*touched = ~0ull;
	}
	return 0;
}

/* Open slot idx for a cell of len bytes at offset off. */
static void put_slot(uint8_t *p, unsigned idx, unsigned off, unsigned len,
		     uint64_t *touched)
{
	unsigned n = ut_page_nslots(p);

	assert(idx <= n && len > 0 && off + len <= UT_PAGE_SIZE);
	ut_page_touch(touched, (unsigned)(slot(p, idx) - p),
		      (n + 1 - idx) * UT_PG_SLOT);
	memmove(slot(p, idx + 1), slot(p, idx), (n - idx) * UT_PG_SLOT);
	ut_st16(slot(p, idx), (uint16_t)off);
	ut_st16(slot(p, idx) + 2, (uint16_t)len);
	set_nslots(p, n + 1);
}

int ut_page_insert_tracked(uint8_t *p, unsigned idx, const void *cell,
			   unsigned len, uint64_t *touched)
{
	unsigned n = ut_page_nslots(p);
	unsigned c;

	if (len + UT_PG_SLOT > ut_page_free(p))
		return -1;
	ut_page_touch(touched, 0, UT_PG_HDR);
	c = content(p);
	if (UT_PG_HDR + (n + 1) * UT_PG_SLOT + len > c) {
		unsigned hole = make_room(p, len, touched);

		if (hole) {
			memcpy(p + hole, cell, len);
			ut_page_touch(touched, hole, len);
			set_frag(p, frag(p) - len);
			put_slot(p, idx, hole, len, touched);
			return 0;
		}
		c = content(p);
	}
	assert(c >= UT_PG_HDR + (n + 1) * UT_PG_SLOT + len);
	c -= len;
	memcpy(p + c, cell, len);
	ut_page_touch(touched, c, len);
	set_content(p, c);
	put_slot(p, idx, c, len, touched);
	return 0;
}

int ut_page_insert(uint8_t *p, unsigned idx, const void *cell, unsigned len)
{
	uint64_t touched = 0;

	return ut_page_insert_tracked(p, idx, cell, len, &touched);
}

void ut_page_delete_tracked(uint8_t *p, unsigned idx, uint64_t *touched)
{
	unsigned n = ut_page_nslots(p);
	unsigned off, len;

	assert(idx < n);
	off = ut_ld16(slot(p, idx));
	len = ut_ld16(slot(p, idx) + 2);
	ut_page_touch(touched, 0, UT_PG_HDR);
	ut_page_touch(touched, (unsigned)(slot(p, idx) - p), (n - idx) * UT_PG_SLOT);
	if (off == content(p))
		set_content(p, off + len);
	else
		set_frag(p, frag(p) + len);
	memmove(slot(p, idx), slot(p, idx + 1), (n - idx - 1) * UT_PG_SLOT);
	set_nslots(p, n - 1);
	if (n == 1) {
		set_content(p, UT_PAGE_SIZE);
		set_frag(p, 0);
	}
}

void ut_page_delete(uint8_t *p, unsigned idx)
{
	uint64_t touched = 0;

	ut_page_delete_tracked(p, idx, &touched);
}

int ut_page_replace_tracked(uint8_t *p, unsigned idx, const void *cell,
			    unsigned len, uint64_t *touched)
{
	unsigned old = ut_page_cell_len(p, idx);

	if (len == old) {
		memcpy(ut_page_cell(p, idx), cell, len);
		ut_page_touch(touched, ut_ld16(slot(p, idx)), len);
		return 0;
	}
	if (len > old && len - old > ut_page_free(p))
		return -1;
	ut_page_delete_tracked(p, idx, touched);
	return ut_page_insert_tracked(p, idx, cell, len, touched);
}

int ut_page_replace(uint8_t *p, unsigned idx, const void *cell, unsigned len)
{
	uint64_t touched = 0;

	return ut_page_replace_tracked(p, idx, cell, len, &touched);
}

/*
 * engine/page.c - page header, checksum and slotted-page helpers (page.h).
 */
#include <string.h>

#include "page.h"
#include "ut_crc32c.h"
#include "ut_io.h"

static inline void set_nslots(uint8_t *p, unsigned n) { ut_st16(p + 6, (uint16_t)n); }
static inline unsigned content(const uint8_t *p)
{
	unsigned c = ut_ld16(p + 20);
	return c ? c : UT_PAGE_SIZE; /* 16384 does not fit u16: 0 means end */
}
static inline void set_content(uint8_t *p, unsigned c)
{
	ut_st16(p + 20, (uint16_t)(c == UT_PAGE_SIZE ? 0 : c));
}
static inline unsigned frag(const uint8_t *p) { return ut_ld16(p + 22); }
static inline void set_frag(uint8_t *p, unsigned f) { ut_st16(p + 22, (uint16_t)f); }
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

int ut_page_verify(const uint8_t *p, uint32_t pgno, const char *path)
{
	uint32_t want = ut_ld32(p), got = page_crc(p);
	unsigned n, c, t;

	if (want != got) {
		ut_set_errdetail("%s: page %u: checksum mismatch (stored %08x, computed %08x)",
				 path, pgno, want, got);
		return UT_ECORRUPT;
	}
	if (ut_page_pgno(p) != pgno) {
		ut_set_errdetail("%s: page %u: header says page %u (misdirected write)",
				 path, pgno, ut_page_pgno(p));
		return UT_ECORRUPT;
	}
	t = (unsigned)ut_page_type(p);
	if (t < UT_PT_FREE || t > UT_PT_OVERFLOW) {
		ut_set_errdetail("%s: page %u: unknown page type %u", path, pgno, t);
		return UT_ECORRUPT;
	}
	if (t == UT_PT_LEAF || t == UT_PT_INTERIOR) {
		n = ut_page_nslots(p);
		c = content(p);
		if (UT_PG_HDR + n * UT_PG_SLOT > c || c > UT_PAGE_SIZE) {
			ut_set_errdetail("%s: page %u: slot array overlaps cells", path, pgno);
			return UT_ECORRUPT;
		}
		for (unsigned i = 0; i < n; i++) {
			unsigned off = ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT);
			unsigned len = ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT + 2);
			if (off < c || off + len > UT_PAGE_SIZE) {
				ut_set_errdetail("%s: page %u: cell %u out of bounds",
						 path, pgno, i);
				return UT_ECORRUPT;
			}
		}
	}
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
		top -= len;
		memcpy(p + top, tmp + off, len);
		ut_st16(slot(p, i), (uint16_t)top);
	}
	set_content(p, top);
	set_frag(p, 0);
}

/* Offset of a hole of at least len bytes between the cells, or 0.  The
 * cells are sorted by offset with two counting passes of 7 bits each
 * (offsets < 2^14): this runs whenever an insert finds no contiguous gap,
 * which a comparison sort made the load's hottest function. */
static unsigned find_hole(const uint8_t *p, unsigned len)
{
	static _Thread_local uint32_t cells[UT_PG_USABLE / UT_PG_SLOT];
	static _Thread_local uint32_t sorted[UT_PG_USABLE / UT_PG_SLOT];
	unsigned n = ut_page_nslots(p), at = content(p);

	if (frag(p) < len)
		return 0;
	for (unsigned i = 0; i < n; i++) /* offset << 16 | length */
		cells[i] = (uint32_t)ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT) << 16 |
			   ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT + 2);
	for (unsigned shift = 16; shift < 30; shift += 7) {
		unsigned count[129] = { 0 };
		uint32_t *from = shift == 16 ? cells : sorted;
		uint32_t *to = shift == 16 ? sorted : cells;

		for (unsigned i = 0; i < n; i++)
			count[((from[i] >> shift) & 127) + 1]++;
		for (unsigned d = 1; d <= 128; d++)
			count[d] += count[d - 1];
		for (unsigned i = 0; i < n; i++)
			to[count[(from[i] >> shift) & 127]++] = from[i];
	}
	for (unsigned i = 0; i < n; i++) { /* cells[] is in offset order */
		unsigned off = cells[i] >> 16, end = off + (cells[i] & 0xffff);

		if (off >= at + len)
			return at;
		if (end > at)
			at = end;
	}
	return UT_PAGE_SIZE >= at + len ? at : 0;
}

/* Open slot idx for a cell of len bytes at offset off. */
static void put_slot(uint8_t *p, unsigned idx, unsigned off, unsigned len)
{
	unsigned n = ut_page_nslots(p);

	memmove(slot(p, idx + 1), slot(p, idx), (n - idx) * UT_PG_SLOT);
	ut_st16(slot(p, idx), (uint16_t)off);
	ut_st16(slot(p, idx) + 2, (uint16_t)len);
	set_nslots(p, n + 1);
}

int ut_page_insert(uint8_t *p, unsigned idx, const void *cell, unsigned len)
{
	unsigned n = ut_page_nslots(p);
	unsigned c;

	if (len + UT_PG_SLOT > ut_page_free(p))
		return -1;
	c = content(p);
	if (UT_PG_HDR + (n + 1) * UT_PG_SLOT + len > c) {
		/* Reuse a hole when one fits: compacting moves every cell,
		 * and the log then records the whole page. */
		unsigned hole = UT_PG_HDR + (n + 1) * UT_PG_SLOT <= c
				? find_hole(p, len) : 0;
		if (hole) {
			memcpy(p + hole, cell, len);
			set_frag(p, frag(p) - len);
			put_slot(p, idx, hole, len);
			return 0;
		}
		ut_page_compact(p);
		c = content(p);
	}
	c -= len;
	memcpy(p + c, cell, len);
	set_content(p, c);
	put_slot(p, idx, c, len);
	return 0;
}

void ut_page_delete(uint8_t *p, unsigned idx)
{
	unsigned n = ut_page_nslots(p);
	unsigned off = ut_ld16(slot(p, idx)), len = ut_ld16(slot(p, idx) + 2);

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

int ut_page_replace(uint8_t *p, unsigned idx, const void *cell, unsigned len)
{
	unsigned old = ut_page_cell_len(p, idx);

	if (len == old) {
		memcpy(ut_page_cell(p, idx), cell, len);
		return 0;
	}
	if (len > old && len - old > ut_page_free(p))
		return -1;
	ut_page_delete(p, idx);
	return ut_page_insert(p, idx, cell, len);
}

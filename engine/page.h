/*
 * engine/page.h - the on-disk page format and slotted-page helpers.
 *
 * Contract: pure functions over one UT_PAGE_SIZE buffer; no I/O, no locking.
 * The cell layouts below are the B+tree's (btree.h says what they mean);
 * they are stated here because they are part of the file format, and a
 * page read from a file is checked whole, cells included, before anyone
 * reads it (ut_page_verify): a file may come from elsewhere with checksums
 * that pass (design.md, "Untrusted files").
 *
 * Every page starts with a 32-byte header (little-endian, unaligned-safe):
 *
 *   0  u32 crc     CRC32C of bytes 4..16383 (ut_page_seal / ut_page_verify)
 *   4  u8  type    UT_PT_*
 *   5  u8  flags   reserved, 0
 *   6  u16 nslots  cells in the slot array
 *   8  u64 lsn     LSN of the last change (log record / commit) on the page
 *  16  u32 pgno    the page's own number (catches misdirected writes)
 *  20  u16 content start of the cell content area (grows down from the end)
 *  22  u16 frag    free bytes inside the content area (holes)
 *  24  u32 right   interior: rightmost child; overflow: next page;
 *                  free: next free page; 0 = none
 *  28  u32 aux     overflow: payload bytes used in this page
 *
 * Slotted pages (leaf, interior): after the header an array of 4-byte slots
 * {u16 offset, u16 length}, in key order, grows up; cells grow down from the
 * end.  Free space = gap between the two + frag; inserting compacts when the
 * gap alone is too small.  Invariant: frag + the cells' lengths = the
 * content area's size, and no two cells overlap.  Page 0 (UT_PT_META)
 * holds the database header after the common header; see pager.h.
 *
 * Cells (slotted pages):
 *   leaf:     u16 klen, u8 flags, u32 vlen, key, value
 *             (flags & UT_CELL_OVFL: instead of the value a u32 page number
 *             of a UT_PT_OVERFLOW chain holding all vlen bytes)
 *   interior: u32 child, u16 klen, key
 * Keys are 1..UT_MAX_KEY bytes, strictly increasing within a page (memcmp,
 * then length); values 0..UT_MAX_VALUE bytes.  An overflow page holds
 * aux = 1..UT_OVFL_CAP value bytes after the header, every page of a chain
 * but the last one full.
 */
#ifndef UT_PAGE_H
#define UT_PAGE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "untorn.h"

#define UT_PG_HDR 32u
#define UT_PG_SLOT 4u
#define UT_PG_USABLE (UT_PAGE_SIZE - UT_PG_HDR)

#define UT_LEAF_HDR 7u
#define UT_INT_HDR 6u
#define UT_CELL_OVFL 1u
#define UT_OVFL_CAP (UT_PAGE_SIZE - UT_PG_HDR) /* value bytes per overflow page */

enum {
	UT_PT_FREE = 1,
	UT_PT_META = 2,
	UT_PT_LEAF = 3,
	UT_PT_INTERIOR = 4,
	UT_PT_OVERFLOW = 5,
};

static inline uint16_t ut_ld16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t ut_ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t ut_ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void ut_st16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void ut_st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void ut_st64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static inline int ut_page_type(const uint8_t *p) { return p[4]; }
static inline unsigned ut_page_nslots(const uint8_t *p) { return ut_ld16(p + 6); }
static inline uint64_t ut_page_lsn(const uint8_t *p) { return ut_ld64(p + 8); }
static inline void ut_page_set_lsn(uint8_t *p, uint64_t l) { ut_st64(p + 8, l); }
static inline uint32_t ut_page_pgno(const uint8_t *p) { return ut_ld32(p + 16); }
static inline uint32_t ut_page_right(const uint8_t *p) { return ut_ld32(p + 24); }

/* 1 when every byte of the page is zero (a page never written). */
static inline int ut_page_is_zero(const uint8_t *p)
{
	for (size_t i = 0; i < UT_PAGE_SIZE; i++)
		if (p[i])
			return 0;
	return 1;
}
static inline void ut_page_set_right(uint8_t *p, uint32_t v) { ut_st32(p + 24, v); }
static inline uint32_t ut_page_aux(const uint8_t *p) { return ut_ld32(p + 28); }
static inline void ut_page_set_aux(uint8_t *p, uint32_t v) { ut_st32(p + 28, v); }

/* A free page (UT_PT_FREE) is a free-list trunk: "right" is the next
 * trunk, aux counts the member pages whose numbers follow the header as
 * u32s -- free pages that were put on the list without being written
 * (format 3, pager.h).  A member's content is whatever it held last. */
#define UT_FREE_CAP ((UT_PAGE_SIZE - UT_PG_HDR) / 4u)
static inline uint32_t ut_free_member(const uint8_t *p, unsigned i)
{
	return ut_ld32(p + UT_PG_HDR + 4 * i);
}

/* Cell i of a slotted page and its length (i < nslots: the engine's own
 * invariant; asserts are on in the Debug and sanitizer builds only). */
static inline uint8_t *ut_page_cell(uint8_t *p, unsigned i)
{
	assert(i < ut_page_nslots(p));
	return p + ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT);
}
static inline unsigned ut_page_cell_len(const uint8_t *p, unsigned i)
{
	assert(i < ut_page_nslots(p));
	return ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT + 2);
}

/* Zero the page and write a fresh header (LSN 0, no cells). */
void ut_page_init(uint8_t *p, uint32_t pgno, int type);

/* Store the CRC32C; call right before the page goes to a file. */
void ut_page_seal(uint8_t *p);

/* UT_OK, or UT_ECORRUPT with ut_errdetail "<path>: page N: ..." when the
 * checksum is wrong or ut_page_check fails. */
int ut_page_verify(const uint8_t *p, uint32_t pgno, const char *path);
/* The page without its checksum (a page changed in memory, e.g. by redo):
 * UT_OK, or UT_ECORRUPT with ut_errdetail naming the page and the field.
 * Checks the stored page number (== pgno), the type, and per type: slotted
 * pages' slot array, content start, frag, every cell inside the content
 * area, no two overlapping, each cell's lengths against its slot and the
 * limits above, keys strictly increasing, child pointers non-zero and not
 * the page itself; overflow pages' byte count; a chain pointer ("right")
 * never the page itself.  Page numbers beyond the file and the type of the
 * page a pointer leads to are checked where the pointer is followed. */
int ut_page_check(const uint8_t *p, uint32_t pgno, const char *path);
/* The slotted layout alone, the cells taken as opaque bytes: the slot
 * array below the content start, every cell (1 byte or more) inside the
 * content area, none overlapping, frag = the bytes no cell uses.  Part of
 * ut_page_check for leaf and interior pages. */
int ut_page_check_slots(const uint8_t *p, uint32_t pgno, const char *path);
/* 1 when the page's CRC matches (no error detail set either way). */
int ut_page_checksum_ok(const uint8_t *p);

/* A pointer in page `from` (its field `what`) led to page pgno, image p:
 * UT_OK when that page is of type want, else UT_ECORRUPT naming both. */
int ut_page_expect_type(const uint8_t *p, uint32_t pgno, int want,
			uint32_t from, const char *what, const char *path);
/* Page pgno (image p) is the next page of an overflow chain that holds
 * vlen bytes, done of them in the pages before it: UT_OK when it is an
 * overflow page holding the bytes due (a full page, or the rest) and its
 * next pointer ends the chain exactly after the last byte, else
 * UT_ECORRUPT.  Following only such steps reads every chain in at most
 * vlen / UT_OVFL_CAP + 1 pages, so a cycle is caught at its first page
 * too many. */
int ut_page_ovfl_step(const uint8_t *p, uint32_t pgno, uint64_t vlen,
		      uint64_t done, const char *path);

/* Bytes a new cell of len bytes may use (slot included) = free space. */
unsigned ut_page_free(const uint8_t *p);
/* Bytes used by cells and slots. */
unsigned ut_page_used(const uint8_t *p);

/* Which bytes of a page a change touched, as one bit per UT_TOUCH_BLOCK
 * bytes: the log then compares only those blocks with the pre-image
 * (pager.h, ut_pager_write_tracked).  Bits are only ever added.  touched
 * NULL: the page is new in the transaction and logged whole, so there is
 * nothing to record, and moving cells costs the log nothing. */
#define UT_TOUCH_BLOCK (UT_PAGE_SIZE / 64)
static inline void ut_page_touch(uint64_t *touched, unsigned off, unsigned len)
{
	unsigned first = off / UT_TOUCH_BLOCK, last;

	if (!len || !touched)
		return;
	last = (off + len - 1) / UT_TOUCH_BLOCK;
	*touched |= (~0ull >> (63 - last)) & (~0ull << first);
}

/* Insert a cell of len bytes at slot idx (0..nslots), shifting later slots.
 * Compacts when needed.  Returns 0, or -1 when it does not fit (page
 * unchanged).  The _tracked forms add the blocks they change to *touched. */
int ut_page_insert(uint8_t *p, unsigned idx, const void *cell, unsigned len);
int ut_page_insert_tracked(uint8_t *p, unsigned idx, const void *cell,
			   unsigned len, uint64_t *touched);

/* Remove the cell at slot idx. */
void ut_page_delete(uint8_t *p, unsigned idx);
void ut_page_delete_tracked(uint8_t *p, unsigned idx, uint64_t *touched);

/* Replace cell idx by a cell of len bytes; 0, or -1 if it does not fit (page
 * unchanged). */
int ut_page_replace(uint8_t *p, unsigned idx, const void *cell, unsigned len);
int ut_page_replace_tracked(uint8_t *p, unsigned idx, const void *cell,
			    unsigned len, uint64_t *touched);

/* Move all cells to the end of the page, removing holes. */
void ut_page_compact(uint8_t *p);

#endif /* UT_PAGE_H */

/*
 * engine/flush_doublewrite.h - the double-write file and its recovery
 * (the "doublewrite" strategy of flush.h lives in flush_doublewrite.c).
 *
 * File PATH "-dw": a floor sector, then UT_DW_SLOTS slots of
 * UT_DW_SLOT_BYTES, reused (at most UT_DW_FILE_MAX bytes).  A slot is
 * a 4 KiB header sector followed by a copy of one 16 KiB page:
 *
 *   0  u64 magic     UT_DW_MAGIC
 *   8  u64 batch     batch id; grows for the life of the file
 *  16  u32 pgno      home page number of the copy
 *  20  u32 page_crc  the copy's own page checksum (its bytes 0..3, which
 *                    ut_page_verify checks over the copy)
 *  24  u32 slot      slot index (catches misdirected writes)
 *  28  u32 hdr_crc   CRC32C of bytes 0..27
 *
 * Write protocol per chunk of at most UT_DW_SLOTS pages: copies + headers to
 * the next free slots of the dw file, sync the dw file, pages in place, and
 * (for UT_FLUSH_DURABLE, or before the dw area is reused) sync the data
 * file.  Slots are reused only after the in-place writes they protect are
 * durable, so every in-place page that can be torn has a durable copy.
 *
 * Floor: the first 4 KiB sector,
 *
 *   0  u64 magic     UT_DW_FLOOR_MAGIC
 *   8  u64 floor     copies with a smaller batch id are obsolete
 *  16  u32 crc       CRC32C of bytes 0..15
 *
 * written and synced at the end of every UT_FLUSH_DURABLE call that made
 * copies: by then every in-place write those copies protect is durable, so
 * a page that fails its checksum later was not torn by them.  Recovery
 * ignores copies below the floor: restoring one would silently bring back
 * an old version of a page damaged some other way (or torn by a sync=0
 * write, which has no copy); it stays a reported checksum failure instead.
 *
 * UT_FLUSH_LAZY writes (sync=0 evictions) skip the copy: nothing syncs
 * them before the next DURABLE call, so a copy would protect nothing.
 *
 * Recovery: for every page number with a valid copy (header and page
 * checksums, ut_page_verify), the copy with the highest batch id; if the
 * page in place fails ut_page_verify (or is missing), it is rewritten from
 * that copy.  Pages in place that verify are left alone even when a copy
 * differs (the in-place write either completed or never started).
 *
 * Damage: a header sector that is neither zero nor valid is damaged, not
 * foreign, as long as anything else in the file (a slot header, the floor)
 * is ours; a file with nothing of ours is UT_ENOTDB.  A copy behind a
 * damaged header is ignored unless it is needed: its page (named by the
 * copy itself, when the copy verifies) fails in place and has no other
 * valid copy -- then UT_ECORRUPT naming the page, since its batch (current
 * or below the floor?) is unknown.  Likewise a page that would be restored
 * while the floor sector is damaged is UT_ECORRUPT.
 */
#ifndef UT_FLUSH_DOUBLEWRITE_H
#define UT_FLUSH_DOUBLEWRITE_H

#include <stdint.h>

#include "ut_io.h"

#define UT_DW_SUFFIX "-dw"
#define UT_DW_SLOTS 256u
#define UT_DW_HDR 4096u
#define UT_DW_SLOT_BYTES (UT_DW_HDR + UT_PAGE_SIZE)
#define UT_DW_MAGIC 0x31544c5357445455ull /* "UTDWSLT1" little-endian */
/* The floor sector comes first, then the slots. */
#define UT_DW_FLOOR_OFF 0u
#define UT_DW_SLOT_OFF(s) (UT_DW_HDR + (uint64_t)(s) * UT_DW_SLOT_BYTES)
#define UT_DW_FILE_MAX UT_DW_SLOT_OFF(UT_DW_SLOTS)
#define UT_DW_FLOOR_MAGIC 0x31524c4657445455ull /* "UTDWFLR1" little-endian */

typedef struct ut_dw_recovery {
	uint64_t slots;        /* slots examined */
	uint64_t valid;        /* slots holding a valid copy */
	uint64_t repaired;     /* in-place pages rewritten from a copy */
	uint64_t unrepairable; /* reserved: pages failing with no valid copy
				* are found by the pager, not here */
	uint64_t max_batch;    /* highest batch id seen (0 if none) */
	uint64_t floor;        /* copies below this batch id were ignored */
} ut_dw_recovery;

/* Repairs found but not yet written: the pages' good copies, held in
 * memory until whoever found them knows the open will not be refused (a
 * refused open changes no file: untorn.h). */
typedef struct ut_dw_pending {
	size_t n;
	uint32_t pgno[UT_DW_SLOTS];
	uint8_t *buf[UT_DW_SLOTS]; /* ut_io_alloc'd pages */
} ut_dw_pending;

/* Restore from dw every in-place page of data that fails its checksum and
 * has a valid copy; sync data if anything was written.  With pend, write
 * nothing: each repair is added to *pend (its copy read into memory, a
 * later repair of the same page replacing it) for ut_dw_apply.  path names
 * the data file in error details.  *out may be NULL. */
int ut_dw_recover(ut_file *data, ut_file *dw, const char *path,
		  ut_dw_recovery *out, ut_dw_pending *pend);
/* Write the repairs in *pend to data and sync it; *pend is then empty.
 * *written: pages written. */
int ut_dw_apply(ut_file *data, ut_dw_pending *pend, uint64_t *written);
/* The pending copy of pgno, or NULL. */
const uint8_t *ut_dw_pending_page(const ut_dw_pending *pend, uint32_t pgno);
void ut_dw_pending_free(ut_dw_pending *pend);

#endif /* UT_FLUSH_DOUBLEWRITE_H */

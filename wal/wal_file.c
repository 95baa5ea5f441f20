/*
 * wal/wal_file.c - the log's file writes: direct I/O through an aligned
 * staging buffer, partial blocks completed with the bytes already there,
 * room kept ahead with zeros, truncation and header slot writes.  Called
 * by the handle (wal.c) and recovery (wal_recover.c) with the handle's
 * mutex held or the handle otherwise theirs alone (see each function).
 */
#include <stdlib.h>

#include "wal_int.h"

/* ---- file writes ----
 *
 * The file is opened for direct I/O where the filesystem allows it.  A
 * buffered 100-byte commit costs the page cache's whole folio at writeback
 * (16 KiB on a filesystem of 16 KiB blocks) and, while the file grows, a
 * metadata commit for its size at every fdatasync.  Direct, the log writes
 * only the device blocks (dio_align, usually 512 bytes) its bytes touch,
 * from an aligned staging buffer, and keeps the file ahead of small batches
 * with zeros, so that the fdatasync of a commit has no metadata to carry.  The
 * partial block at the start of a write is completed with the bytes already
 * there (the kept copy of the last block written, else read back), so
 * durable records are rewritten with their own bytes, block by block; the
 * partial block at the end is read back too, or, at the end of the log,
 * filled with zeros, which no reader takes for a record.
 */

static int stage_reserve(ut_wal *w, size_t len)
{
	size_t cap = w->stage_cap ? w->stage_cap : 64 * 1024;
	unsigned char *p;

	if (len <= w->stage_cap)
		return UT_OK;
	while (cap < len)
		cap *= 2;
	p = ut_io_alloc(cap);
	if (!p)
		return UT_ENOMEM;
	free(w->stage);
	w->stage = p;
	w->stage_cap = cap;
	return UT_OK;
}

/* Copy the file's block at off (zeros past its end) to dst. */
static int read_block(ut_wal *w, unsigned char *dst, uint64_t off)
{
	uint32_t al = w->f->dio_align;
	int64_t n;

	if (w->last_off == off) {
		memcpy(dst, w->last, al);
		return UT_OK;
	}
	n = ut_file_read(w->f, w->blk, al, off);
	if (n < 0)
		return (int)n;
	memset(w->blk + n, 0, al - (size_t)n);
	memcpy(dst, w->blk, al);
	return UT_OK;
}

/* The span [*a, *b) a read of [off, off + len) must cover: whole device
 * blocks on a direct handle, the bytes themselves otherwise. */
void wal_read_span(const ut_file *f, uint64_t off, size_t len, uint64_t *a,
		      uint64_t *b)
{
	uint64_t al = f->direct ? f->dio_align : 1;

	*a = off & ~(al - 1);
	*b = (off + len + al - 1) & ~(al - 1);
}

/* Read up to len bytes at off, any alignment (bounced on a direct handle). */
int64_t wal_read_any(ut_file *f, void *buf, size_t len, uint64_t off)
{
	uint64_t a, b;
	unsigned char *tmp;
	int64_t n;

	if (!f->direct)
		return ut_file_read(f, buf, len, off);
	wal_read_span(f, off, len, &a, &b);
	tmp = ut_io_alloc((size_t)(b - a));
	if (!tmp)
		return UT_ENOMEM;
	n = ut_file_read(f, tmp, (size_t)(b - a), a);
	if (n >= 0) {
		n = n > (int64_t)(off - a) ? n - (int64_t)(off - a) : 0;
		if (n > (int64_t)len)
			n = (int64_t)len;
		memcpy(buf, tmp + (off - a), (size_t)n);
	}
	free(tmp);
	return n;
}

/* Write len bytes at off; at_end: nothing of this epoch lies past them. */
int wal_log_write(ut_wal *w, const void *buf, size_t len, uint64_t off,
		     int at_end)
{
	uint32_t al = w->f->dio_align;
	uint64_t end = off + len, a, b;
	int rc;

	if (!w->f->direct)
		return ut_file_write(w->f, buf, len, off, 0);
	a = off & ~(uint64_t)(al - 1);
	b = (end + al - 1) & ~(uint64_t)(al - 1);
	if ((rc = stage_reserve(w, (size_t)(b - a))))
		return rc;
	if (a < off && (rc = read_block(w, w->stage, a)))
		return rc;
	if (end < b && at_end)
		memset(w->stage + (end - a), 0, (size_t)(b - end));
	else if (end < b && (b - al != a || a == off) &&
		 (rc = read_block(w, w->stage + (b - al - a), b - al)))
		return rc;
	memcpy(w->stage + (off - a), buf, len);
	rc = ut_file_write(w->f, w->stage, (size_t)(b - a), a, 0);
	if (rc != UT_OK) {
		w->last_off = NO_BLOCK;
		return rc;
	}
	memcpy(w->last, w->stage + (b - al - a), al);
	w->last_off = b - al;
	if (b > w->file_size)
		w->file_size = b;
	return UT_OK;
}

/* Direct handles: after a small write (under GROW_MIN), keep GROW_MIN of
 * zeros ahead of the log's end.  Small commits then overwrite written
 * blocks and their fdatasync carries no size change but once per piece.
 * The zeros go out a piece at a time, at least as much as the write used
 * up (so the room never shrinks) and GROW_PIECE for a small one: a write
 * queued behind zeros on the device waits for them, and on a slow device
 * (the VM benchmark's, 1.5 MB/s) the 256 KiB one write put there when
 * the log doubled held the next commit back ~200 ms (issue 31); a piece
 * costs a commit about one page write, and comes once per 16 KiB of
 * records.  A large write extends the file itself: its one size update is
 * cheap beside its bytes, and zeros ahead of it would double them.  Best
 * effort: on a full disk the file just stays shorter; the log works
 * either way. */
static void grow_ahead(ut_wal *w, uint64_t end, size_t len)
{
	uint32_t al = w->f->dio_align;
	uint64_t e = (end + al - 1) & ~(uint64_t)(al - 1), at, to;
	unsigned char *zeros;

	if (!w->f->direct || len >= GROW_MIN || w->file_size >= e + GROW_MIN)
		return;
	/* a lazy write may have left the size unaligned: past it is a hole */
	at = (w->file_size + al - 1) & ~(uint64_t)(al - 1);
	if (at < e)
		at = e;
	/* to a GROW_PIECE boundary (whole filesystem blocks) */
	to = (at + (len > GROW_PIECE ? len : 1) + GROW_PIECE - 1) / GROW_PIECE *
	     GROW_PIECE;
	zeros = ut_io_alloc(GROW_PIECE);
	if (!zeros)
		return;
	while (at < to) {
		size_t n = to - at < GROW_PIECE ? (size_t)(to - at) : GROW_PIECE;

		if (ut_file_write(w->f, zeros, n, at, 0) != UT_OK)
			break;
		at += n;
		w->file_size = at;
	}
	free(zeros);
}

/* Write a batch at the log's end, and keep the file ahead of it. */
int wal_append_batch(ut_wal *w, const void *buf, size_t len, uint64_t off)
{
	int rc = wal_log_write(w, buf, len, off, 1);

	if (rc == UT_OK)
		grow_ahead(w, off + len, len);
	return rc;
}

int wal_truncate_log(ut_wal *w, uint64_t size)
{
	int rc = ut_file_truncate(w->f, size);

	w->last_off = NO_BLOCK;
	if (rc == UT_OK)
		w->file_size = size;
	return rc;
}

int wal_write_header(ut_wal *w, uint64_t epoch, uint64_t salt,
			uint64_t start_lsn)
{
	unsigned char h[WAL_HDR_BYTES];
	int rc;

	wal_encode_header(h, w->version, epoch, salt, start_lsn);
	rc = wal_log_write(w, h, sizeof(h), (epoch % 2) * WAL_SLOT_BYTES, 0);
	if (rc == UT_OK) {
		rc = ut_file_sync(w->f);
		w->st.syncs++;
	}
	return rc;
}

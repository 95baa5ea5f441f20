/*
 * wal/wal.c - the write-ahead log (contract and file format in wal.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "ut_crc32c.h"
#include "wal.h"

#define WAL_MAGIC "UTORNWAL"
#define WAL_VERSION 1u        /* DELTA and COMMIT records only */
#define WAL_VERSION_IMAGES 2u /* may hold IMAGE records too (wal.h) */
#define WAL_HDR_BYTES 64u
#define WAL_SLOT_BYTES 4096u

#define REC_DELTA 1u
#define REC_COMMIT 2u
#define REC_IMAGE 3u
#define IMAGE_PAYLOAD (8u + UT_PAGE_SIZE) /* u32 pgno | u32 0 | the page */
#define DELTA_ENTRY_HDR 8u
#define COMMIT_PAYLOAD 16u
#define REC_TARGET (64u * 1024u) /* pack deltas into records up to this size */
#define REC_MAX_BYTES (UT_WAL_REC_HDR + REC_TARGET + 8u) /* a sealed record */
#define STREAM_BYTES (8u << 20) /* a bigger transaction streams (below) */
#define GROW_MIN (64u * 1024u)    /* direct logs keep this much room ahead */
#define GROW_PIECE (16u * 1024u)  /* ... zero-filled at most this much a write */
#define NO_BLOCK UINT64_MAX

_Static_assert(UT_WAL_DATA_OFF == 2 * WAL_SLOT_BYTES, "two header slots");
_Static_assert(UT_PAGE_SIZE <= 0xffffu + 1u, "delta offset/len fit u16");
_Static_assert(UT_WAL_REC_HDR % 8 == 0, "record header aligned");

typedef struct walbuf {
	unsigned char *p;
	size_t len, cap;
	uint64_t lsn; /* LSN of p[0] */
} walbuf;

struct ut_wal {
	ut_vfs *vfs;
	ut_file *f;
	ut_file *fb; /* f is direct: a buffered handle for lazy (sync=0) writes */
	char *path;
	ut_wal_config cfg;

	pthread_mutex_t mu;
	pthread_cond_t cv;

	/* current epoch, from the header */
	uint64_t epoch, salt, start_lsn;
	uint32_t version; /* WAL_VERSION or WAL_VERSION_IMAGES */
	int slots_valid; /* header slots that passed their checks at open */
	/* ut_wal_set_prefetch: recovery's page hints */
	void (*hint)(void *ctx, uint32_t pgno);
	void *hint_ctx;
	/* ut_wal_require_end: the log must reach this LSN (0: no evidence) */
	uint64_t need_end;
	char need_what[160];

	int ready;      /* recovered (or new): appends allowed */
	int flushing;   /* a leader is writing/syncing */
	int streaming;  /* an append is handing its records out (see below) */
	int failed;     /* 0 or the code that failed the handle */
	int created;    /* this open started a new log (create_log) */
	/* ut_wal_recover in progress (for ut_wal_recover_decide): the file's
	 * size, the redo start, the start of the transaction being replayed
	 * and the transactions replayed before it; decided: 1 once the rest
	 * of the log was found to end where recovery may accept. */
	struct {
		int on, decided;
		uint64_t size, from_lsn, txn_start, replayed;
	} rcv;
	/* Threads in ut_wal_flush_to whose LSN is not yet durable, and the
	 * largest such LSN since their count was last zero (the page
	 * cleaner lets them go first: ut_wal_sync_waiting). */
	unsigned sync_waiters;
	uint64_t sync_want;
	/* written_lsn: handed to the OS (ut_wal_write_to); durable_lsn: synced */
	uint64_t next_lsn, written_lsn, durable_lsn, ckpt_lsn, next_txn_id;
	walbuf active, spare;

	/* Direct writes (see "file writes"); the leader's, or the mutex
	 * holder's while no flush runs. */
	unsigned char *stage;  /* aligned staging buffer */
	size_t stage_cap;
	unsigned char *blk;    /* one aligned block, for read-back */
	unsigned char *last;   /* copy of the last block written ... */
	uint64_t last_off;     /* ... and its offset, or NO_BLOCK */
	uint64_t file_size;    /* as far as this handle knows */

	ut_wal_stats st;
};

/* ---- little-endian helpers ---- */

static void put16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static uint64_t off_of(const ut_wal *w, uint64_t lsn)
{
	return UT_WAL_DATA_OFF + (lsn - w->start_lsn);
}

static uint64_t new_salt(uint64_t epoch)
{
	uint64_t s = 0;
	struct timespec ts;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		s = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^
		    (uint64_t)ts.tv_sec ^ (uintptr_t)&s;
	}
	s ^= epoch * 0xbf58476d1ce4e5b9ull;
	return s ? s : 1;
}

/* ut_strerror lives with the engine; keep this layer self-contained. */
static const char *rc_name(int rc)
{
	switch (rc) {
	case UT_ENOSPC: return "no space";
	case UT_EIO: return "I/O error";
	case UT_ENOMEM: return "out of memory";
	case UT_ECORRUPT: return "corrupt log";
	default: return "error";
	}
}

const char *ut_wal_stop_name(int r)
{
	switch (r) {
	case UT_WAL_STOP_END: return "clean end";
	case UT_WAL_STOP_TAIL: return "torn or stale tail cut";
	case UT_WAL_STOP_CORRUPT: return "corrupt record in the middle of the log";
	case UT_WAL_STOP_APPLY: return "apply callback failed";
	default: return "?";
	}
}

/* ---- header ---- */

static void encode_header(unsigned char *h, uint32_t version, uint64_t epoch,
			  uint64_t salt, uint64_t start_lsn)
{
	memset(h, 0, WAL_HDR_BYTES);
	memcpy(h, WAL_MAGIC, 8);
	put32(h + 8, version);
	put32(h + 12, WAL_HDR_BYTES);
	put64(h + 16, epoch);
	put64(h + 24, salt);
	put64(h + 32, start_lsn);
	put32(h + 40, UT_PAGE_SIZE);
	put32(h + 44, UT_WAL_DATA_OFF);
	put32(h + 60, ut_crc32c(0, h, 60));
}

/* 1 valid, 0 no magic, UT_ECORRUPT bad crc, UT_EVERSION other version */
static int decode_header(const unsigned char *h, uint32_t *version,
			 uint64_t *epoch, uint64_t *salt, uint64_t *start_lsn)
{
	if (memcmp(h, WAL_MAGIC, 8) != 0)
		return 0;
	if (get32(h + 60) != ut_crc32c(0, h, 60))
		return UT_ECORRUPT;
	*version = get32(h + 8);
	if ((*version != WAL_VERSION && *version != WAL_VERSION_IMAGES) ||
	    get32(h + 12) != WAL_HDR_BYTES ||
	    get32(h + 40) != UT_PAGE_SIZE || get32(h + 44) != UT_WAL_DATA_OFF)
		return UT_EVERSION;
	*epoch = get64(h + 16);
	*salt = get64(h + 24);
	*start_lsn = get64(h + 32);
	return 1;
}

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
static void read_span(const ut_file *f, uint64_t off, size_t len, uint64_t *a,
		      uint64_t *b)
{
	uint64_t al = f->direct ? f->dio_align : 1;

	*a = off & ~(al - 1);
	*b = (off + len + al - 1) & ~(al - 1);
}

/* Read up to len bytes at off, any alignment (bounced on a direct handle). */
static int64_t read_any(ut_file *f, void *buf, size_t len, uint64_t off)
{
	uint64_t a, b;
	unsigned char *tmp;
	int64_t n;

	if (!f->direct)
		return ut_file_read(f, buf, len, off);
	read_span(f, off, len, &a, &b);
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
static int log_write(ut_wal *w, const void *buf, size_t len, uint64_t off,
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
static int append_batch(ut_wal *w, const void *buf, size_t len, uint64_t off)
{
	int rc = log_write(w, buf, len, off, 1);

	if (rc == UT_OK)
		grow_ahead(w, off + len, len);
	return rc;
}

static int truncate_log(ut_wal *w, uint64_t size)
{
	int rc = ut_file_truncate(w->f, size);

	w->last_off = NO_BLOCK;
	if (rc == UT_OK)
		w->file_size = size;
	return rc;
}

static int write_header(ut_wal *w, uint64_t epoch, uint64_t salt,
			uint64_t start_lsn)
{
	unsigned char h[WAL_HDR_BYTES];
	int rc;

	encode_header(h, w->version, epoch, salt, start_lsn);
	rc = log_write(w, h, sizeof(h), (epoch % 2) * WAL_SLOT_BYTES, 0);
	if (rc == UT_OK) {
		rc = ut_file_sync(w->f);
		w->st.syncs++;
	}
	return rc;
}

/* ---- open / close ---- */

static int create_log(ut_wal *w)
{
	unsigned char *blk = calloc(1, UT_WAL_DATA_OFF);
	int rc;

	if (!blk)
		return UT_ENOMEM;
	w->created = 1;
	w->epoch = 1;
	w->salt = new_salt(1);
	w->start_lsn = w->cfg.initial_lsn;
	w->version = w->cfg.images ? WAL_VERSION_IMAGES : WAL_VERSION;
	encode_header(blk + WAL_SLOT_BYTES, w->version, w->epoch, w->salt,
		      w->start_lsn);
	rc = truncate_log(w, 0);
	if (rc == UT_OK)
		rc = log_write(w, blk, UT_WAL_DATA_OFF, 0, 1);
	free(blk);
	if (rc == UT_OK) {
		rc = ut_file_sync(w->f);
		w->st.syncs++;
	}
	if (rc == UT_OK)
		rc = w->vfs->sync_dir(w->vfs, w->path);
	if (rc == UT_OK) {
		w->ready = 1;
		w->next_lsn = w->written_lsn = w->durable_lsn = w->ckpt_lsn =
			w->start_lsn;
		w->active.lsn = w->start_lsn;
		w->next_txn_id = 1;
	}
	return rc;
}

static int load_header(ut_wal *w, uint64_t size)
{
	unsigned char *blk = ut_io_alloc(UT_WAL_DATA_OFF);
	int best = 0, magic = 0, version = 0, zero = 1;
	int64_t n;

	if (!blk)
		return UT_ENOMEM;
	n = ut_file_read(w->f, blk, UT_WAL_DATA_OFF, 0);
	if (n < 0) {
		free(blk);
		return (int)n;
	}
	for (int64_t i = 0; i < n; i++)
		if (blk[i]) {
			zero = 0;
			break;
		}
	for (int s = 0; s < 2; s++) {
		uint64_t e, salt, start;
		uint32_t v = 0;
		int r;

		if ((uint64_t)n < s * WAL_SLOT_BYTES + WAL_HDR_BYTES)
			continue;
		r = decode_header(blk + s * WAL_SLOT_BYTES, &v, &e, &salt, &start);
		if (r != 0)
			magic = 1;
		if (r == UT_EVERSION)
			version = 1;
		w->slots_valid += r == 1;
		if (r == 1 && (!best || e > w->epoch)) {
			best = 1;
			w->epoch = e;
			w->salt = salt;
			w->start_lsn = start;
			w->version = v;
		}
	}
	free(blk);
	if (best && size >= UT_WAL_DATA_OFF)
		return UT_OK;
	if (!magic && zero && size <= UT_WAL_DATA_OFF)
		return create_log(w); /* a crash during creation left zeros */
	if (!magic) {
		ut_set_errdetail("%s: not an untorn write-ahead log (no magic)",
				 w->path);
		return UT_ENOTDB;
	}
	if (version) {
		ut_set_errdetail("%s: write-ahead log of another format version",
				 w->path);
		return UT_EVERSION;
	}
	ut_set_errdetail("%s: write-ahead log header damaged (%s, %llu bytes)",
			 w->path, best ? "file too short" : "both slots fail CRC",
			 (unsigned long long)size);
	return UT_ECORRUPT;
}

int ut_wal_open(ut_vfs *vfs, const char *path, const ut_wal_config *cfg,
		ut_wal **out)
{
	ut_wal *w;
	uint64_t size = 0;
	int rc;

	if (!vfs || !path || !out)
		return UT_EINVAL;
	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		return UT_ENOMEM;
	}
	w->vfs = vfs;
	if (cfg)
		w->cfg = *cfg;
	if (!w->cfg.initial_lsn)
		w->cfg.initial_lsn = 1;
	if (!w->cfg.reset_min_bytes)
		w->cfg.reset_min_bytes = 1u << 20;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);

	w->last_off = NO_BLOCK;
	w->blk = ut_io_alloc(UT_IO_ALIGN);
	w->last = ut_io_alloc(UT_IO_ALIGN);
	rc = w->blk && w->last ? UT_OK : UT_ENOMEM;
	if (rc == UT_OK)
		rc = vfs->open(vfs, path, UT_OPEN_CREATE |
			       (w->cfg.direct ? UT_OPEN_DIRECT : 0), &w->f);
	if (rc == UT_OK && w->f->direct)
		rc = vfs->open(vfs, path, 0, &w->fb);
	if (rc == UT_OK)
		rc = ut_file_size(w->f, &size);
	w->file_size = size;
	if (rc == UT_OK)
		rc = size == 0 ? create_log(w) : load_header(w, size);
	if (rc != UT_OK) {
		ut_wal_close(w);
		return rc;
	}
	w->st.epoch = w->epoch;
	*out = w;
	return UT_OK;
}

int ut_wal_close(ut_wal *w)
{
	int rc = UT_OK;

	if (!w)
		return UT_OK;
	if (w->f && w->ready && !w->failed)
		rc = ut_wal_flush_to(w, UINT64_MAX);
	/* Fully checkpointed and reset: what follows the header slots is
	 * stale epochs only; give the space back. */
	if (rc == UT_OK && w->f && w->ready && !w->failed &&
	    w->start_lsn == w->next_lsn) {
		uint64_t size;

		if (ut_file_size(w->f, &size) == UT_OK && size > UT_WAL_DATA_OFF &&
		    truncate_log(w, UT_WAL_DATA_OFF) == UT_OK)
			(void)ut_file_sync(w->f);
	}
	ut_file_close(w->fb);
	ut_file_close(w->f);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->active.p);
	free(w->spare.p);
	free(w->stage);
	free(w->blk);
	free(w->last);
	free(w->path);
	free(w);
	return rc;
}

/* ---- append ---- */

static int reserve(walbuf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 64 * 1024;
	unsigned char *p;

	if (b->len + more <= b->cap)
		return UT_OK;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return UT_ENOMEM;
	b->p = p;
	b->cap = cap;
	return UT_OK;
}

/* Fill in the header of the record at b->p + at, of unpadded length len, and
 * its CRC; zero the padding. */
static void seal_record(walbuf *b, size_t at, unsigned type, size_t len,
			uint32_t count, uint64_t salt, uint64_t floor)
{
	unsigned char *r = b->p + at;
	size_t plen = pad8(len);

	memset(r + len, 0, plen - len);
	r[4] = (unsigned char)type;
	r[5] = 0;
	put16(r + 6, 0);
	put32(r + 8, (uint32_t)len);
	put32(r + 12, count);
	put64(r + 16, b->lsn + at);
	put64(r + 24, salt);
	put64(r + 32, floor);
	put32(r, ut_crc32c(0, r + 4, plen - 4));
}

static int lead_flush(ut_wal *w, int sync);

/* A transaction over STREAM_BYTES is not assembled whole: its sealed delta
 * records go to the file (written, not synced) whenever the buffer holds
 * STREAM_BYTES, so the log's memory stays bounded whatever the transaction's
 * size.  Records without their COMMIT are nothing to recovery: a crash
 * mid-stream leaves a trailing unfinished transaction, which is cut.
 * Mutex held; released while a flush writes. */
static int stream_out(ut_wal *w, size_t more)
{
	for (;;) {
		if (w->failed) /* also a chunk this call just handed out */
			return w->failed;
		if (!w->active.len || w->active.len + more <= STREAM_BYTES)
			return reserve(&w->active, more);
		if (w->flushing)
			pthread_cond_wait(&w->cv, &w->mu);
		else
			lead_flush(w, 0);
	}
}

/* Streaming: hand out the sealed records before *at (where the next
 * record starts) if the buffer is full, and move *at with the buffer. */
static int stream_at(ut_wal *w, size_t *at)
{
	int rc;

	w->active.len = *at;
	rc = stream_out(w, REC_MAX_BYTES);
	*at = w->active.len;
	return rc;
}

/* Pack the deltas into records, then the COMMIT.  Mutex held. */
static int append_records(ut_wal *w, const ut_wal_delta *d, size_t n,
			  int stream)
{
	walbuf *b = &w->active;
	uint64_t first_lsn = b->lsn + b->len;
	size_t at = b->len, rec = 0, rec_len = 0;
	uint32_t count = 0;
	int rc;

	for (size_t i = 0; i < n; i++) {
		size_t e = DELTA_ENTRY_HDR + d[i].len;

		if (d[i].image) {
			/* a record of its own, between delta records */
			if (count) {
				seal_record(b, rec, REC_DELTA, rec_len, count,
					    w->salt, w->durable_lsn);
				at = rec + pad8(rec_len);
				count = 0;
			}
			if (stream && (rc = stream_at(w, &at)))
				return rc;
			put32(b->p + at + UT_WAL_REC_HDR, d[i].pgno);
			put32(b->p + at + UT_WAL_REC_HDR + 4, 0);
			memcpy(b->p + at + UT_WAL_REC_HDR + 8, d[i].data,
			       UT_PAGE_SIZE);
			seal_record(b, at, REC_IMAGE, UT_WAL_REC_HDR + IMAGE_PAYLOAD,
				    1, w->salt, w->durable_lsn);
			at += pad8(UT_WAL_REC_HDR + IMAGE_PAYLOAD);
			continue;
		}
		if (count && rec_len + e > REC_TARGET) {
			seal_record(b, rec, REC_DELTA, rec_len, count, w->salt,
				    w->durable_lsn);
			at = rec + pad8(rec_len);
			count = 0;
		}
		if (!count) {
			if (stream && (rc = stream_at(w, &at)))
				return rc;
			rec = at;
			rec_len = UT_WAL_REC_HDR;
		}
		unsigned char *p = b->p + rec + rec_len;
		put32(p, d[i].pgno);
		put16(p + 4, (uint16_t)d[i].offset);
		put16(p + 6, (uint16_t)d[i].len);
		memcpy(p + 8, d[i].data, d[i].len);
		rec_len += e;
		count++;
	}
	if (count) {
		seal_record(b, rec, REC_DELTA, rec_len, count, w->salt,
			    w->durable_lsn);
		at = rec + pad8(rec_len);
	}
	if (stream && (rc = stream_at(w, &at)))
		return rc;
	put64(b->p + at + UT_WAL_REC_HDR, w->next_txn_id);
	put64(b->p + at + UT_WAL_REC_HDR + 8, first_lsn);
	seal_record(b, at, REC_COMMIT, UT_WAL_REC_HDR + COMMIT_PAYLOAD,
		    (uint32_t)n, w->salt, w->durable_lsn);
	b->len = at + pad8(UT_WAL_REC_HDR + COMMIT_PAYLOAD);
	w->st.bytes_appended += b->lsn + b->len - first_lsn;
	return UT_OK;
}

int ut_wal_append_txn(ut_wal *w, const ut_wal_delta *d, size_t n,
		      uint64_t *commit_lsn)
{
	size_t need = 0;
	int rc, stream;

	if (!w || (n && !d))
		return UT_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!d[i].len || d[i].offset >= UT_PAGE_SIZE ||
		    d[i].len > UT_PAGE_SIZE - d[i].offset || !d[i].data ||
		    (d[i].image && d[i].len != UT_PAGE_SIZE)) {
			ut_set_errdetail("wal: bad delta %zu (page %u, %u+%u%s)", i,
					 d[i].pgno, d[i].offset, d[i].len,
					 d[i].image ? ", image" : "");
			return UT_EINVAL;
		}
		if (d[i].image && w->version < WAL_VERSION_IMAGES) {
			ut_set_errdetail("%s: a page image for a log of format "
					 "%u (open it with images enabled)",
					 w->path, w->version);
			return UT_EINVAL;
		}
		need += DELTA_ENTRY_HDR + d[i].len;
	}
	/* worst case: one record per delta */
	need += n * (UT_WAL_REC_HDR + 8) + UT_WAL_REC_HDR + COMMIT_PAYLOAD + 8;
	stream = need > STREAM_BYTES;

	pthread_mutex_lock(&w->mu);
	while (w->streaming && !w->failed)
		pthread_cond_wait(&w->cv, &w->mu); /* one transaction's records */
	if (w->failed || !w->ready) {
		rc = w->failed ? UT_EFATAL : UT_EINVAL;
		if (w->failed)
			ut_set_errdetail("%s: log failed earlier (%s); reopen",
					 w->path, rc_name(w->failed));
		else
			ut_set_errdetail("%s: recover the log before appending",
					 w->path);
		pthread_mutex_unlock(&w->mu);
		return rc;
	}
	w->streaming = stream;
	rc = stream ? UT_OK : reserve(&w->active, need);
	if (rc == UT_OK)
		rc = append_records(w, d, n, stream);
	if (rc == UT_OK) {
		w->next_txn_id++;
		w->st.commits++;
		w->next_lsn = w->active.lsn + w->active.len;
		if (commit_lsn)
			*commit_lsn = w->next_lsn;
	} else if (stream) {
		/* Streamed records are in the log with no COMMIT: the
		 * handle fails, and recovery cuts them. */
		if (!w->failed)
			w->failed = rc;
		ut_set_errdetail("%s: log write failed (%s) while a large "
				 "transaction was written out; reopen",
				 w->path, rc_name(rc));
	}
	if (stream) {
		/* Wake the appenders that waited for this one; not after every
		 * commit, which would wake every committer waiting for a
		 * flush on the same condition variable. */
		w->streaming = 0;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* ---- flush / group commit ---- */

/* Write b at its position and sync.  Called with the mutex released (leader)
 * or held (reset); touches no shared state except the file. */
static int write_sync(ut_wal *w, const walbuf *b, uint64_t start_lsn)
{
	int rc = append_batch(w, b->p, b->len,
			      UT_WAL_DATA_OFF + (b->lsn - start_lsn));

	if (rc == UT_OK)
		rc = ut_file_sync(w->f);
	return rc;
}

/* Leader: take the active buffer and write it; with sync, also fdatasync
 * (which covers bytes an earlier unsynced write handed to the OS).  Mutex
 * held on entry and on return, released during I/O. */
static int lead_flush(ut_wal *w, int sync)
{
	walbuf take = w->active;
	uint64_t start = w->start_lsn, end = take.lsn + take.len;
	uint64_t off = UT_WAL_DATA_OFF + (take.lsn - start);
	int rc = UT_OK;

	w->active = w->spare;
	w->active.len = 0;
	w->active.lsn = end;
	w->flushing = 1;
	pthread_mutex_unlock(&w->mu);

	if (take.len && !sync && w->fb) {
		/* Handing the bytes to the OS is all a lazy write owes; a
		 * direct one would wait for the device. */
		rc = ut_file_write(w->fb, take.p, take.len, off, 0);
		w->last_off = NO_BLOCK;
		if (rc == UT_OK && off + take.len > w->file_size)
			w->file_size = off + take.len;
	} else if (take.len) {
		rc = append_batch(w, take.p, take.len, off);
	}
	if (rc == UT_OK && sync)
		rc = ut_file_sync(w->f);
	if (rc != UT_OK) {
		/* Best effort: drop what this call may have landed, so an
		 * unacknowledged commit does not come back after reopen.  Bytes
		 * an earlier unsynced write handed over belong to sync=0 commits
		 * that returned (and whose pages may be in the data file): keep
		 * them. */
		if (truncate_log(w, off) == UT_OK)
			(void)ut_file_sync(w->f);
	}

	pthread_mutex_lock(&w->mu);
	w->flushing = 0;
	w->st.writes += take.len != 0;
	w->st.syncs += sync;
	if (rc == UT_OK) {
		w->written_lsn = end;
		if (sync)
			w->durable_lsn = end;
	} else {
		w->failed = rc;
	}
	take.len = 0;
	w->spare = take;
	pthread_cond_broadcast(&w->cv);
	return rc;
}

/* Wait until *mark (written_lsn or durable_lsn) reaches lsn, leading
 * flushes as needed. */
static int flush_until(ut_wal *w, const uint64_t *mark, uint64_t lsn, int sync)
{
	int rc = UT_OK, counted;

	if (!w)
		return UT_EINVAL;
	pthread_mutex_lock(&w->mu);
	if (lsn > w->next_lsn)
		lsn = w->next_lsn;
	counted = sync && *mark < lsn;
	if (counted) {
		w->sync_waiters++;
		if (lsn > w->sync_want)
			w->sync_want = lsn;
	}
	while (*mark < lsn) {
		if (w->failed) {
			rc = w->failed;
			ut_set_errdetail("%s: log write failed (%s); commit not durable",
					 w->path, rc_name(rc));
			break;
		}
		if (w->flushing) {
			pthread_cond_wait(&w->cv, &w->mu);
			continue;
		}
		lead_flush(w, sync);
	}
	if (counted && --w->sync_waiters == 0)
		w->sync_want = 0;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int ut_wal_flush_to(ut_wal *w, uint64_t lsn)
{
	return flush_until(w, w ? &w->durable_lsn : NULL, lsn, 1);
}

int ut_wal_write_to(ut_wal *w, uint64_t lsn)
{
	return flush_until(w, w ? &w->written_lsn : NULL, lsn, 0);
}

static uint64_t read_locked(ut_wal *w, const uint64_t *field)
{
	uint64_t v;

	pthread_mutex_lock(&w->mu);
	v = *field;
	pthread_mutex_unlock(&w->mu);
	return v;
}

uint64_t ut_wal_durable_lsn(ut_wal *w) { return read_locked(w, &w->durable_lsn); }

uint64_t ut_wal_sync_waiting(ut_wal *w)
{
	uint64_t lsn;

	pthread_mutex_lock(&w->mu);
	lsn = w->sync_waiters && !w->failed && w->sync_want > w->durable_lsn ?
		w->sync_want : 0;
	pthread_mutex_unlock(&w->mu);
	return lsn;
}
uint64_t ut_wal_next_lsn(ut_wal *w) { return read_locked(w, &w->next_lsn); }

int ut_wal_created(ut_wal *w)
{
	return w->created;
}

int ut_wal_failed(ut_wal *w)
{
	int rc;

	pthread_mutex_lock(&w->mu);
	rc = w->failed;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void ut_wal_stats_get(ut_wal *w, ut_wal_stats *st)
{
	pthread_mutex_lock(&w->mu);
	*st = w->st;
	st->next_lsn = w->next_lsn;
	st->durable_lsn = w->durable_lsn;
	st->written_lsn = w->written_lsn;
	st->bytes_since_checkpoint = w->next_lsn - w->ckpt_lsn;
	st->log_bytes = w->next_lsn - w->start_lsn;
	st->epoch = w->epoch;
	st->buffer_bytes = w->active.cap + w->spare.cap;
	pthread_mutex_unlock(&w->mu);
}

/* ---- record validation (shared by recovery and reset) ---- */

/* A record of a transaction's changes (counted by its COMMIT), as opposed
 * to the COMMIT itself. */
static int is_change(unsigned type)
{
	return type == REC_DELTA || type == REC_IMAGE;
}

/* Validate the record at r (avail bytes readable) expected at lsn with salt.
 * Returns its padded length, or 0 if invalid. */
static size_t check_record(const unsigned char *r, size_t avail, uint64_t lsn,
			   uint64_t salt)
{
	uint32_t len, count;
	size_t plen, pos;
	unsigned type;

	if (avail < UT_WAL_REC_HDR)
		return 0;
	len = get32(r + 8);
	type = r[4];
	if (len < UT_WAL_REC_HDR || len > UT_WAL_MAX_REC || get64(r + 16) != lsn ||
	    get64(r + 24) != salt || r[5] || get16(r + 6))
		return 0;
	plen = pad8(len);
	if (plen > avail || get32(r) != ut_crc32c(0, r + 4, plen - 4))
		return 0;
	count = get32(r + 12);
	if (type == REC_COMMIT)
		return len == UT_WAL_REC_HDR + COMMIT_PAYLOAD ? plen : 0;
	if (type == REC_IMAGE) /* one whole page; its page number the engine's */
		return len == UT_WAL_REC_HDR + IMAGE_PAYLOAD && count == 1 &&
		       !get32(r + UT_WAL_REC_HDR + 4) ? plen : 0;
	if (type != REC_DELTA || !count)
		return 0;
	pos = UT_WAL_REC_HDR;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t off, dl;

		if (pos + DELTA_ENTRY_HDR > len)
			return 0;
		off = get16(r + pos + 4);
		dl = get16(r + pos + 6);
		if (!dl || off + dl > UT_PAGE_SIZE || pos + DELTA_ENTRY_HDR + dl > len)
			return 0;
		pos += DELTA_ENTRY_HDR + dl;
	}
	return pos == len ? plen : 0;
}

/* A read-ahead window over the file.  Recovery reads its log twice over,
 * the walk ahead of replay (pages to prefetch) and replay itself, and a
 * direct log has no page cache between the two: replay's window copies
 * from the walk's (from) where that holds the bytes, and the walk's
 * refills keep what replay, at keep, has yet to reach, so that each byte
 * of the log is read from the file once. */
typedef struct reader {
	ut_file *f;
	unsigned char *buf;
	size_t cap, len;
	uint64_t off;
	const struct reader *from; /* a window over f to copy from, or NULL */
	uint64_t keep;             /* refills keep [keep, end); 0: nothing */
} reader;

static int rd_reserve(reader *r, size_t need)
{
	size_t cap = r->cap ? r->cap : (1u << 20);
	unsigned char *p;

	while (cap < need)
		cap *= 2;
	if (cap == r->cap)
		return UT_OK;
	if (!(p = realloc(r->buf, cap)))
		return UT_ENOMEM;
	r->buf = p;
	r->cap = cap;
	return UT_OK;
}

/* How much of the window a refill at off keeps: [keep, end) when off
 * continues the window and keep lies in it. */
static size_t rd_kept(const reader *r, uint64_t off)
{
	uint64_t end = r->off + r->len;

	if (!r->keep || r->keep < r->off || r->keep > off || off > end)
		return 0;
	return (size_t)(end - r->keep);
}

/* Refill r's window so that it starts at off (at keep, when kept) and
 * holds want bytes from off, short only at the end of the file: copied
 * from r->from when that holds them all, else read. */
static int rd_fill(reader *r, uint64_t off, size_t want)
{
	const reader *s = r->from;
	size_t kept = rd_kept(r, off);
	uint64_t start = kept ? r->keep : off;
	int64_t n;
	int rc;

	if ((rc = rd_reserve(r, (size_t)(off - start) + want)))
		return rc;
	/* a copy lands at buf[0] = off: only a window that keeps nothing */
	if (s && !kept && off >= s->off && off + want <= s->off + s->len) {
		n = (int64_t)(s->off + s->len - off);
		if (n > (int64_t)r->cap)
			n = (int64_t)r->cap;
		memcpy(r->buf, s->buf + (off - s->off), (size_t)n);
	} else {
		memmove(r->buf, r->buf + (start - r->off), kept);
		n = read_any(r->f, r->buf + kept, r->cap - kept, start + kept);
		if (n < 0)
			return (int)n;
		n += (int64_t)kept;
	}
	r->off = start;
	r->len = (size_t)n;
	return UT_OK;
}

/* Make [off, off+want) readable; returns pointer and sets *avail (may be
 * short at end of file), or NULL with *rc on error. */
static const unsigned char *rd_get(reader *r, uint64_t off, size_t want,
				   size_t *avail, int *rc)
{
	if (off < r->off || off + want > r->off + r->len) {
		int e = rd_fill(r, off, want);

		if (e) {
			*rc = e;
			return NULL;
		}
	}
	*avail = r->len - (size_t)(off - r->off);
	return r->buf + (off - r->off);
}

/* Cheap test before a CRC: could the 40 bytes at p start a record? */
static int plausible_header(const unsigned char *p)
{
	uint32_t len = get32(p + 8);

	return (p[4] == REC_DELTA || p[4] == REC_COMMIT || p[4] == REC_IMAGE) &&
	       !p[5] &&
	       !get16(p + 6) && len >= UT_WAL_REC_HDR && len <= UT_WAL_MAX_REC;
}

/* The record at file offset off if it is valid with this lsn and salt:
 * returns a pointer and *plen (0 when not valid), or NULL with *rc. */
static const unsigned char *record_at(reader *rd, uint64_t off, uint64_t lsn,
				      uint64_t salt, size_t *plen, int *rc)
{
	const unsigned char *p;
	size_t avail, want;

	*plen = 0;
	p = rd_get(rd, off, UT_WAL_REC_HDR, &avail, rc);
	if (!p)
		return NULL;
	want = avail >= UT_WAL_REC_HDR ? pad8(get32(p + 8)) : 0;
	if (want >= UT_WAL_REC_HDR && want <= UT_WAL_MAX_REC) {
		p = rd_get(rd, off, want, &avail, rc);
		if (!p)
			return NULL;
	}
	*plen = check_record(p, avail, lsn, salt);
	return p;
}

/* A COMMIT must name its transaction's first record and delta count. */
static int commit_matches(const unsigned char *p, uint64_t txn_start,
			  uint64_t deltas)
{
	return get64(p + UT_WAL_REC_HDR + 8) == txn_start &&
	       get32(p + 12) == deltas;
}

/* 1 when [off, size) holds only zeros (space a direct log grew into ahead
 * of its records: no tail to cut), 0 if not, or a negative code. */
static int zeros_to_end(reader *rd, uint64_t off, uint64_t size)
{
	while (off < size) {
		const unsigned char *p;
		size_t avail;
		int rc = UT_OK;

		p = rd_get(rd, off, 1, &avail, &rc);
		if (!p)
			return rc;
		if (!avail)
			break;
		if (avail > size - off)
			avail = (size_t)(size - off);
		for (size_t i = 0; i < avail; i++)
			if (p[i])
				return 0;
		off += avail;
	}
	return 1;
}

/* After a bad record at file offset bad_off (expected LSN bad_lsn): did the
 * log go on?  Evidence is a valid record of this epoch further on, at any
 * byte offset, that either (a) sits where its LSN does not belong -- bytes
 * were inserted or removed before it, which no crash does, since records
 * are only ever written at their own position -- or (b) has a durable floor
 * beyond bad_lsn: it was appended after the bad bytes had been synced.  The
 * records of a torn last batch have neither.  Returns 1 with *lost_end =
 * the highest LSN such records reach, 0 for none, or a negative code. */
static int later_evidence(ut_wal *w, reader *rd, uint64_t bad_off,
			  uint64_t bad_lsn, uint64_t size, uint64_t *lost_end)
{
	int found = 0;

	for (uint64_t off = bad_off + 1; off + UT_WAL_REC_HDR <= size; off++) {
		const unsigned char *p;
		size_t avail, plen;
		uint64_t lsn;
		int rc = UT_OK;

		p = rd_get(rd, off, UT_WAL_REC_HDR, &avail, &rc);
		if (!p)
			return rc;
		if (get64(p + 24) != w->salt || !plausible_header(p))
			continue;
		lsn = get64(p + 16);
		p = record_at(rd, off, lsn, w->salt, &plen, &rc);
		if (!p)
			return rc;
		if (!plen)
			continue;
		if (lsn != w->start_lsn + (off - UT_WAL_DATA_OFF) ||
		    get64(p + 32) > bad_lsn) {
			found = 1;
			if (lsn + plen > *lost_end)
				*lost_end = lsn + plen;
		}
		off += plen - 1;
	}
	return found;
}

/* Where the chain of valid records of the epoch (salt, start) beginning at
 * from ends: the end of its last whole transaction.  Nothing is applied. */
static int chain_end(reader *rd, uint64_t size, uint64_t salt, uint64_t start,
		     uint64_t from, uint64_t *end)
{
	uint64_t lsn = from, deltas = 0;
	int rc = UT_OK;

	*end = from;
	while (from >= start && UT_WAL_DATA_OFF + (lsn - start) < size) {
		size_t plen;
		const unsigned char *p = record_at(rd, UT_WAL_DATA_OFF + (lsn - start),
						   lsn, salt, &plen, &rc);
		if (!p)
			return rc;
		if (!plen || (p[4] == REC_COMMIT && !commit_matches(p, *end, deltas)))
			break;
		lsn += plen;
		if (is_change(p[4])) {
			deltas += get32(p + 12);
		} else {
			*end = lsn;
			deltas = 0;
		}
	}
	return UT_OK;
}

/* Only one header slot is valid: was the other the current epoch's,
 * damaged?  A valid record with another salt whose position implies an
 * epoch start above ours would show it (an older epoch's leftovers imply a
 * start below ours).  Returns 1 with its salt and start, 0, or a code. */
static int find_newer_epoch(ut_wal *w, reader *rd, uint64_t size,
			    uint64_t *salt, uint64_t *start)
{
	for (uint64_t off = UT_WAL_DATA_OFF; off + UT_WAL_REC_HDR <= size;
	     off += 8) {
		const unsigned char *p;
		size_t avail, plen;
		uint64_t lsn, rel = off - UT_WAL_DATA_OFF;
		int rc = UT_OK;

		p = rd_get(rd, off, UT_WAL_REC_HDR, &avail, &rc);
		if (!p)
			return rc;
		lsn = get64(p + 16);
		*salt = get64(p + 24);
		if (*salt == w->salt || lsn < rel || lsn - rel <= w->start_lsn ||
		    !plausible_header(p))
			continue;
		p = record_at(rd, off, lsn, *salt, &plen, &rc);
		if (!p)
			return rc;
		if (plen) {
			*start = lsn - rel;
			return 1;
		}
	}
	return 0;
}

/* The header slot of the current epoch may have been damaged, leaving the
 * previous epoch's slot to be taken for current: then the newer epoch's
 * records are in the file.  Adopt that epoch when its chain from the redo
 * start reaches further than ours.  (A reset cut short after copying the
 * live tail, before its header, leaves a newer-looking copy of our own
 * tail: its chain never reaches further, so it is not adopted.)  The
 * header is rewritten only once recovery has succeeded. */
static int adopt_newer_epoch(ut_wal *w, reader *rd, uint64_t size,
			     uint64_t from, int *adopted)
{
	uint64_t salt = 0, start = 0, ours, theirs;
	int rc = find_newer_epoch(w, rd, size, &salt, &start);

	/* A newer epoch starts at a redo start a checkpoint recorded first:
	 * the engine's redo start (from) is at or beyond it. */
	if (rc <= 0 || from < start)
		return rc < 0 ? rc : UT_OK;
	if ((rc = chain_end(rd, size, w->salt, w->start_lsn, from, &ours)) ||
	    (rc = chain_end(rd, size, salt, start, from, &theirs)))
		return rc;
	if (theirs <= ours)
		return UT_OK;
	w->epoch++;
	w->salt = salt;
	w->start_lsn = start;
	*adopted = 1;
	return UT_OK;
}

void ut_wal_require_end(ut_wal *w, uint64_t lsn, const char *what)
{
	pthread_mutex_lock(&w->mu);
	if (lsn > w->need_end) {
		w->need_end = lsn;
		snprintf(w->need_what, sizeof(w->need_what), "%s", what);
	}
	pthread_mutex_unlock(&w->mu);
}

/* ---- recovery ---- */

void ut_wal_set_prefetch(ut_wal *w, void (*hint)(void *ctx, uint32_t pgno),
			 void *ctx)
{
	pthread_mutex_lock(&w->mu);
	w->hint = hint;
	w->hint_ctx = ctx;
	pthread_mutex_unlock(&w->mu);
}

/* Recovery's walk ahead of replay, with its own reader: it names the
 * pages of the deltas in the records it checks, up to `upto`, so that
 * they are read while replay applies the records before them. */
typedef struct ahead {
	reader rd;
	uint64_t lsn;
	int stopped;
} ahead;

/* The delta entry at pos of delta record q (check_record kept it inside
 * the record). */
static ut_wal_delta delta_at(const unsigned char *q, size_t pos)
{
	ut_wal_delta d = {
		.pgno = get32(q + pos),
		.offset = get16(q + pos + 4),
		.len = get16(q + pos + 6),
		.data = q + pos + DELTA_ENTRY_HDR,
	};
	return d;
}

static void hint_deltas(ut_wal *w, const unsigned char *q, size_t plen)
{
	uint32_t count = get32(q + 12);
	size_t pos = UT_WAL_REC_HDR;

	for (uint32_t i = 0; i < count && pos + DELTA_ENTRY_HDR <= plen; i++) {
		ut_wal_delta d = delta_at(q, pos);

		w->hint(w->hint_ctx, d.pgno);
		pos += DELTA_ENTRY_HDR + d.len;
	}
}

static void ahead_to(ut_wal *w, ahead *a, uint64_t upto, uint64_t size)
{
	while (w->hint && !a->stopped && a->lsn < upto) {
		uint64_t off = off_of(w, a->lsn);
		const unsigned char *p = NULL;
		size_t plen = 0;
		int rc;

		if (off < size)
			p = record_at(&a->rd, off, a->lsn, w->salt, &plen, &rc);
		if (!p || !plen) {
			a->stopped = 1;
			break;
		}
		if (p[4] == REC_DELTA)
			hint_deltas(w, p, plen);
		else if (p[4] == REC_IMAGE)
			w->hint(w->hint_ctx, get32(p + UT_WAL_REC_HDR));
		a->lsn += plen;
	}
}

/* Replay the delta records in rec[0, len), with commit LSN lsn. */
static int replay_records(const unsigned char *rec, size_t len, uint64_t lsn,
			  int (*apply)(void *ctx, uint64_t lsn, const ut_wal_delta *d),
			  void *ctx, ut_wal_recovery_info *inf)
{
	for (size_t r = 0; r < len;) {
		const unsigned char *q = rec + r;
		uint32_t count = get32(q + 12);
		size_t pos = UT_WAL_REC_HDR;

		for (uint32_t i = 0; i < count; i++) {
			ut_wal_delta d = q[4] == REC_IMAGE
				? (ut_wal_delta){ .pgno = get32(q + pos),
						  .len = UT_PAGE_SIZE,
						  .data = q + pos + 8, .image = 1 }
				: delta_at(q, pos);

			if (apply) {
				int rc = apply(ctx, lsn, &d);

				if (rc) {
					inf->stop_reason = UT_WAL_STOP_APPLY;
					inf->bad_lsn = lsn;
					return rc;
				}
			}
			inf->deltas_applied++;
			pos += DELTA_ENTRY_HDR + d.len;
		}
		r += pad8(get32(q + 8));
	}
	return UT_OK;
}

/* Replay a transaction too big to have been kept in memory: read its
 * delta records [from, to) again, one at a time, with commit LSN lsn.  The
 * first pass validated them; a record that fails now means the file
 * changed under recovery. */
static int replay_from_file(ut_wal *w, uint64_t from, uint64_t to, uint64_t lsn,
			    int (*apply)(void *ctx, uint64_t lsn, const ut_wal_delta *d),
			    void *ctx, ut_wal_recovery_info *inf)
{
	reader rd = { .f = w->f };
	const unsigned char *p;
	size_t plen;
	int rc = UT_OK;

	for (uint64_t at = from; at < to && rc == UT_OK; at += plen) {
		p = record_at(&rd, off_of(w, at), at, w->salt, &plen, &rc);
		if (!p)
			break;
		if (!plen || !is_change(p[4])) {
			rc = UT_EIO;
			ut_set_errdetail("%s: log record at LSN %llu changed while "
					 "recovery read it", w->path,
					 (unsigned long long)at);
			break;
		}
		rc = replay_records(p, plen, lsn, apply, ctx, inf);
	}
	free(rd.buf);
	return rc;
}

static int append_copy(unsigned char **buf, size_t *len, size_t *cap,
		       const unsigned char *p, size_t n)
{
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 65536;
		unsigned char *np;

		while (c < *len + n)
			c *= 2;
		np = realloc(*buf, c);
		if (!np)
			return UT_ENOMEM;
		*buf = np;
		*cap = c;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	return UT_OK;
}

/* A bad record at off (expected LSN lsn) with valid records of this log
 * after it: recovery refuses (UT_ECORRUPT, detail set).  txn_start: the
 * first LSN not replayed. */
static int refuse_damage(ut_wal *w, uint64_t off, uint64_t lsn,
			 uint64_t txn_start, uint64_t lost_end, uint64_t replayed)
{
	ut_set_errdetail("%s: log record at offset %llu (LSN %llu) is damaged, "
			 "but valid records of this log follow it: committed "
			 "transactions in LSN range [%llu, %llu) cannot be "
			 "replayed (%llu replayed before it); log left untouched",
			 w->path, (unsigned long long)off, (unsigned long long)lsn,
			 (unsigned long long)txn_start, (unsigned long long)lost_end,
			 (unsigned long long)replayed);
	return UT_ECORRUPT;
}

/* The log ends at end (the last whole transaction): UT_OK when recovery
 * may accept that, else UT_ECORRUPT with the detail set. */
static int check_end(ut_wal *w, uint64_t from_lsn, uint64_t end, uint64_t size)
{
	if (off_of(w, end) > size) {
		ut_set_errdetail("%s: redo start %llu lies beyond the end of the "
				 "log (LSN %llu): durable log records are missing",
				 w->path, (unsigned long long)from_lsn,
				 (unsigned long long)(w->start_lsn + size -
						      UT_WAL_DATA_OFF));
		return UT_ECORRUPT;
	}
	if (w->need_end > end) {
		/* A page (or header) vouches that the log was durable further:
		 * what is missing was acknowledged. */
		ut_set_errdetail("%s: the log ends at LSN %llu, but %s carries LSN "
				 "%llu: durable log records in LSN range [%llu, %llu) "
				 "are missing (log damaged or cut short); log left "
				 "untouched",
				 w->path, (unsigned long long)end, w->need_what,
				 (unsigned long long)w->need_end,
				 (unsigned long long)end,
				 (unsigned long long)w->need_end);
		return UT_ECORRUPT;
	}
	return UT_OK;
}

/* Walk the log from lsn (a transaction's start) to its end as recovery
 * will, applying nothing: UT_OK if recovery will accept where it ends,
 * UT_ECORRUPT (detail set) if it will refuse, or an I/O error. */
static int walk_to_end(ut_wal *w, uint64_t lsn, uint64_t from_lsn,
		       uint64_t size, uint64_t replayed)
{
	reader rd = {0};
	uint64_t txn_start = lsn, deltas = 0;
	int rc = UT_OK;

	rd.f = w->f;
	for (;;) {
		uint64_t off = off_of(w, lsn), lost_end = 0;
		const unsigned char *p;
		size_t plen;
		int later;

		if (off >= size)
			break;
		p = record_at(&rd, off, lsn, w->salt, &plen, &rc);
		if (!p)
			goto out;
		if (plen && p[4] == REC_COMMIT &&
		    !commit_matches(p, txn_start, deltas))
			plen = 0;
		if (plen) {
			lsn += plen;
			if (is_change(p[4])) {
				deltas += get32(p + 12);
			} else {
				replayed++;
				deltas = 0;
				txn_start = lsn;
			}
			continue;
		}
		later = later_evidence(w, &rd, off, lsn, size, &lost_end);
		if (later < 0)
			rc = later;
		else if (later)
			rc = refuse_damage(w, off, lsn, txn_start, lost_end,
					   replayed);
		if (later)
			goto out;
		break;
	}
	rc = check_end(w, from_lsn, txn_start, size);
out:
	free(rd.buf);
	return rc;
}

int ut_wal_recover_decide(ut_wal *w)
{
	int rc;

	if (!w->rcv.on)
		return UT_EINVAL;
	if (w->rcv.decided)
		return UT_OK;
	rc = walk_to_end(w, w->rcv.txn_start, w->rcv.from_lsn, w->rcv.size,
			 w->rcv.replayed);
	w->rcv.decided = rc == UT_OK;
	return rc;
}

int ut_wal_recover(ut_wal *w, uint64_t from_lsn,
		   int (*apply)(void *ctx, uint64_t lsn, const ut_wal_delta *d),
		   void *ctx, ut_wal_recovery_info *info)
{
	ut_wal_recovery_info inf;
	reader rd = {0};
	ahead ah = {0};
	/* Pending delta records, copied while they fit in STREAM_BYTES;
	 * past that (spilled) they are read again at the COMMIT. */
	unsigned char *txn = NULL;
	size_t txn_len = 0, txn_cap = 0;
	uint64_t size, lsn, txn_start, last_txn_id = 0, txn_deltas = 0;
	int rc, adopted = 0, zeros, spilled = 0;

	if (!w)
		return UT_EINVAL;
	memset(&inf, 0, sizeof(inf));
	pthread_mutex_lock(&w->mu);
	if (w->flushing || w->active.len || w->failed) {
		pthread_mutex_unlock(&w->mu);
		ut_set_errdetail("wal: recover on a handle with pending appends");
		return UT_EINVAL;
	}
	rd.f = w->f;
	rc = ut_file_size(w->f, &size);
	if (rc)
		goto out;
	if (w->slots_valid == 1 &&
	    (rc = adopt_newer_epoch(w, &rd, size, from_lsn, &adopted)))
		goto out;
	inf.header_rebuilt = adopted;
	if (!from_lsn)
		from_lsn = w->start_lsn;
	if (from_lsn < w->start_lsn) {
		rc = UT_ECORRUPT;
		ut_set_errdetail("%s: redo start %llu precedes the log start %llu "
				 "(log reset past an unrecorded checkpoint?)",
				 w->path, (unsigned long long)from_lsn,
				 (unsigned long long)w->start_lsn);
		goto out;
	}
	inf.start_lsn = lsn = txn_start = from_lsn;
	inf.stop_reason = UT_WAL_STOP_END;
	w->rcv.on = 1;
	w->rcv.decided = 0;
	w->rcv.size = size;
	w->rcv.from_lsn = from_lsn;
	w->rcv.txn_start = from_lsn;
	w->rcv.replayed = 0;
	ah.rd.f = w->f;
	ah.lsn = from_lsn;
	rd.from = &ah.rd;

	for (;;) {
		uint64_t off = off_of(w, lsn), lost_end = 0;
		const unsigned char *p;
		size_t plen;
		int later;

		/* hints in steps of a quarter of the distance: few calls */
		ah.rd.keep = off;
		if (ah.lsn < lsn + UT_WAL_PREFETCH_AHEAD / 4 * 3)
			ahead_to(w, &ah, lsn + UT_WAL_PREFETCH_AHEAD, size);
		if (off >= size)
			break; /* clean end of file */
		p = record_at(&rd, off, lsn, w->salt, &plen, &rc);
		if (!p)
			goto out;
		if (plen && p[4] == REC_COMMIT &&
		    !commit_matches(p, txn_start, txn_deltas))
			plen = 0; /* commit does not match its transaction */
		if (plen) {
			inf.records++;
			lsn += plen;
			if (is_change(p[4])) {
				spilled |= txn_len + plen > STREAM_BYTES;
				if (!spilled &&
				    (rc = append_copy(&txn, &txn_len, &txn_cap, p,
						      plen)))
					goto out;
				txn_deltas += get32(p + 12);
				continue;
			}
			last_txn_id = get64(p + UT_WAL_REC_HDR);
			rc = spilled ? replay_from_file(w, txn_start, lsn - plen,
							lsn, apply, ctx, &inf)
				     : replay_records(txn, txn_len, lsn, apply,
						      ctx, &inf);
			if (rc)
				goto out;
			inf.txns_replayed++;
			inf.txns_reread += spilled;
			txn_len = 0;
			txn_deltas = 0;
			spilled = 0;
			txn_start = lsn;
			w->rcv.txn_start = lsn;
			w->rcv.replayed = inf.txns_replayed;
			continue;
		}
		inf.bad_offset = off;
		inf.bad_lsn = lsn;
		later = later_evidence(w, &rd, off, lsn, size, &lost_end);
		if (later < 0) {
			rc = later;
			goto out;
		}
		if (later) {
			inf.stop_reason = UT_WAL_STOP_CORRUPT;
			rc = refuse_damage(w, off, lsn, txn_start, lost_end,
					   inf.txns_replayed);
			goto out;
		}
		inf.stop_reason = UT_WAL_STOP_TAIL;
		break;
	}

	if (txn_start != lsn)
		inf.txns_discarded = 1;
	inf.end_lsn = txn_start;
	if ((rc = check_end(w, from_lsn, txn_start, size))) {
		inf.stop_reason = UT_WAL_STOP_CORRUPT;
		inf.bad_lsn = off_of(w, txn_start) > size ? from_lsn : txn_start;
		goto out;
	}
	/* Recovery has decided the log ends here: only now cut what follows
	 * the last commit, so stale bytes can never be read as records.  Zeros
	 * are kept: they are the room the log grew ahead into. */
	zeros = off_of(w, txn_start) < size ?
		zeros_to_end(&rd, off_of(w, txn_start), size) : 0;
	if (zeros < 0) {
		rc = zeros;
		goto out;
	}
	if (zeros) {
		inf.stop_reason = UT_WAL_STOP_END;
	} else if (off_of(w, txn_start) < size) {
		inf.bytes_discarded = size - off_of(w, txn_start);
		if (inf.stop_reason == UT_WAL_STOP_END)
			inf.stop_reason = UT_WAL_STOP_TAIL;
		rc = truncate_log(w, off_of(w, txn_start));
		if (rc == UT_OK) {
			rc = ut_file_sync(w->f);
			w->st.syncs++;
		}
		if (rc)
			goto out;
	}
	/* A log that will take page images says so in its header first, so
	 * that a build without them refuses it (UT_EVERSION) rather than cut
	 * the log at the first image as a damaged record.  The header is
	 * one 64-byte write within a sector, rewritten in its own slot. */
	if (w->cfg.images && w->version < WAL_VERSION_IMAGES) {
		w->version = WAL_VERSION_IMAGES;
		adopted = 1;
	}
	if (adopted && (rc = write_header(w, w->epoch, w->salt, w->start_lsn)))
		goto out;
	w->next_lsn = w->written_lsn = w->durable_lsn = txn_start;
	w->active.len = 0;
	w->active.lsn = txn_start;
	if (w->ckpt_lsn < from_lsn)
		w->ckpt_lsn = from_lsn;
	if (last_txn_id >= w->next_txn_id)
		w->next_txn_id = last_txn_id + 1;
	w->st.epoch = w->epoch;
	w->ready = 1;
	rc = UT_OK;
out:
	if (rc == UT_ECORRUPT)
		w->failed = UT_ECORRUPT; /* refuse appends over the evidence */
	w->rcv.on = 0;
	pthread_mutex_unlock(&w->mu);
	free(rd.buf);
	free(ah.rd.buf);
	free(txn);
	if (info)
		*info = inf;
	return rc;
}

/* ---- checkpoint / reclaim ---- */

/* Bytes of the live tail a reset moves at a time: memory stays bounded
 * whatever the tail's size, and a chunk holds any whole record. */
#define RESET_CHUNK ((size_t)UT_WAL_MAX_REC)

/* Move the live tail [redo_lsn, next_lsn) to the log's start, each record
 * re-stamped with the new salt, a chunk at a time.  The region overwritten
 * is below redo_lsn in the old epoch (tail <= reclaimable), so a crash, or
 * an error part way, leaves the records from redo_lsn on whole. */
static int move_tail(ut_wal *w, uint64_t redo_lsn, uint64_t salt)
{
	uint64_t tail = w->next_lsn - redo_lsn, at = 0;
	uint32_t al = w->f->direct ? w->f->dio_align : 1;
	size_t cap = tail < RESET_CHUNK ? (size_t)tail : RESET_CHUNK;
	/* read straight into an aligned buffer: no bounce buffer as well */
	unsigned char *buf = ut_io_alloc(cap + 2 * (size_t)al);
	int rc = UT_OK;

	if (!buf)
		return UT_ENOMEM;
	while (at < tail) {
		size_t want = tail - at < cap ? (size_t)(tail - at) : cap, done = 0;
		uint64_t off = off_of(w, redo_lsn + at), a, b;
		unsigned char *chunk;
		int64_t n;

		read_span(w->f, off, want, &a, &b);
		n = ut_file_read(w->f, buf, (size_t)(b - a), a);
		chunk = buf + (off - a);

		if (n < (int64_t)(off - a + want)) {
			ut_set_errdetail("%s: short read of the live log tail", w->path);
			rc = n < 0 ? (int)n : UT_EIO;
			break;
		}
		/* the records wholly in this chunk; the next starts at the rest */
		for (size_t plen; done < want; done += plen) {
			unsigned char *r = chunk + done;

			plen = check_record(r, want - done, redo_lsn + at + done, w->salt);
			if (!plen)
				break;
			put64(r + 24, salt);
			put32(r, ut_crc32c(0, r + 4, plen - 4));
		}
		if (!done) {
			ut_set_errdetail("%s: checkpoint LSN %llu is not a record boundary",
					 w->path, (unsigned long long)redo_lsn);
			rc = UT_EINVAL;
			break;
		}
		if ((rc = log_write(w, chunk, done, UT_WAL_DATA_OFF + at, 0)))
			break;
		at += done;
	}
	free(buf);
	if (rc == UT_OK) {
		rc = ut_file_sync(w->f);
		w->st.syncs++;
		w->st.writes++;
	}
	return rc;
}

/* Mutex held.  Everything appended is durable and no flush runs. */
static int reset_log(ut_wal *w, uint64_t redo_lsn)
{
	uint64_t epoch = w->epoch + 1, salt = new_salt(epoch);
	int rc;

	if (w->next_lsn > redo_lsn && (rc = move_tail(w, redo_lsn, salt)))
		return rc;
	rc = write_header(w, epoch, salt, redo_lsn);
	if (rc)
		return rc;
	w->epoch = epoch;
	w->salt = salt;
	w->start_lsn = redo_lsn;
	w->st.resets++;
	return UT_OK;
}

int ut_wal_checkpoint_done(ut_wal *w, uint64_t redo_lsn)
{
	int rc = UT_OK;

	if (!w)
		return UT_EINVAL;
	pthread_mutex_lock(&w->mu);
	if (!w->ready || redo_lsn > w->durable_lsn || redo_lsn < w->start_lsn) {
		ut_set_errdetail("%s: checkpoint LSN %llu outside the durable log "
				 "[%llu, %llu]",
				 w->path, (unsigned long long)redo_lsn,
				 (unsigned long long)w->start_lsn,
				 (unsigned long long)w->durable_lsn);
		pthread_mutex_unlock(&w->mu);
		return UT_EINVAL;
	}
	if (redo_lsn > w->ckpt_lsn)
		w->ckpt_lsn = redo_lsn;
	/* Reset when enough is reclaimable and the live tail fits below
	 * redo_lsn; or, cheaply (no copy), whenever everything is checkpointed. */
	if (w->failed || redo_lsn == w->start_lsn ||
	    w->next_lsn - redo_lsn > redo_lsn - w->start_lsn ||
	    (redo_lsn - w->start_lsn < w->cfg.reset_min_bytes &&
	     redo_lsn != w->next_lsn))
		goto out;
	while (w->flushing)
		pthread_cond_wait(&w->cv, &w->mu);
	if (w->failed || w->streaming)
		goto out; /* a reset would move records under the appender */
	if (w->active.len) {
		/* write the buffer with the mutex held: reset is rare */
		rc = write_sync(w, &w->active, w->start_lsn);
		w->st.writes++;
		w->st.syncs++;
		if (rc) {
			w->failed = rc;
			goto out;
		}
		w->durable_lsn = w->active.lsn + w->active.len;
		w->written_lsn = w->durable_lsn;
		w->active.lsn = w->durable_lsn;
		w->active.len = 0;
		pthread_cond_broadcast(&w->cv);
	}
	if (w->next_lsn - redo_lsn > redo_lsn - w->start_lsn)
		goto out;
	rc = reset_log(w, redo_lsn);
	if (rc && rc != UT_EINVAL)
		w->failed = rc;
out:
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/*
 * wal/wal_int.h - what the log's files share, and nothing the engine sees
 * (the engine's contract is wal.h).
 *
 * The log is four files, one job each:
 *   wal_format.c   the bytes on disk: header slots, records sealed and
 *                  checked, the epoch salt (a pure layer: no I/O, no handle)
 *   wal_file.c     file writes: direct I/O from an aligned staging buffer,
 *                  zero-filled room ahead, truncation, header slot writes
 *   wal.c          the handle: open/close, appends, streaming of big
 *                  transactions, group commit, checkpoint and reset
 *   wal_recover.c  recovery: the read-ahead windows, the walk to the log's
 *                  end, the damaged-log evidence rules, redo
 * Each calls the ones above it in this list, never one below.
 */
#ifndef UT_WAL_INT_H
#define UT_WAL_INT_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>

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

static inline void put16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static inline void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}
static inline uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static inline uint64_t off_of(const ut_wal *w, uint64_t lsn)
{
	return UT_WAL_DATA_OFF + (lsn - w->start_lsn);
}


/* ---- wal_format.c ---- */

/* A fresh epoch's salt: random, never 0 (records of older epochs carry
 * another salt, so they never pass as this epoch's). */
uint64_t wal_new_salt(uint64_t epoch);
/* A short name for an error code (ut_strerror lives with the engine). */
const char *wal_rc_name(int rc);
void wal_encode_header(unsigned char *h, uint32_t version, uint64_t epoch,
		       uint64_t salt, uint64_t start_lsn);
/* 1 valid, 0 no magic, UT_ECORRUPT bad crc, UT_EVERSION other version */
int wal_decode_header(const unsigned char *h, uint32_t *version,
		      uint64_t *epoch, uint64_t *salt, uint64_t *start_lsn);
/* Fill in the header of the record at b->p + at, of unpadded length len,
 * and its CRC; zero the padding. */
void wal_seal_record(walbuf *b, size_t at, unsigned type, size_t len,
		     uint32_t count, uint64_t salt, uint64_t floor);
/* A record of a transaction's changes (counted by its COMMIT). */
int wal_is_change(unsigned type);
/* The padded length of the valid record at r (avail bytes readable)
 * expected at lsn with salt, or 0 if it is not one. */
size_t wal_check_record(const unsigned char *r, size_t avail, uint64_t lsn,
			uint64_t salt);

/* ---- wal_file.c ---- */

/* The aligned span [*a, *b) a direct read of [off, off + len) needs. */
void wal_read_span(const ut_file *f, uint64_t off, size_t len, uint64_t *a,
		   uint64_t *b);
/* Read up to len bytes at off, direct or not; the count, or an error. */
int64_t wal_read_any(ut_file *f, void *buf, size_t len, uint64_t off);
/* Write buf at off (at_end: nothing valid follows it in the file). */
int wal_log_write(ut_wal *w, const void *buf, size_t len, uint64_t off,
		  int at_end);
/* A group commit's batch at the log's end, keeping room ahead. */
int wal_append_batch(ut_wal *w, const void *buf, size_t len, uint64_t off);
int wal_truncate_log(ut_wal *w, uint64_t size);
/* Write the header slot for this epoch and sync it. */
int wal_write_header(ut_wal *w, uint64_t epoch, uint64_t salt,
		     uint64_t start_lsn);

#endif

/*
 * wal/wal.c - the write-ahead log's handle (contract and format in wal.h):
 * open and close, appends (big transactions streamed out), group commit
 * (leader/follower over one fdatasync), stats, and the checkpoint's log
 * reset.  The bytes on disk are wal_format.c's, the file writes
 * wal_file.c's, recovery wal_recover.c's.
 */
#include <stdio.h>
#include <stdlib.h>

#include "wal_int.h"

/* ---- open / close ---- */

static int create_log(ut_wal *w)
{
	unsigned char *blk = calloc(1, UT_WAL_DATA_OFF);
	int rc;

	if (!blk)
		return UT_ENOMEM;
	w->created = 1;
	w->epoch = 1;
	w->salt = wal_new_salt(1);
	w->start_lsn = w->cfg.initial_lsn;
	w->version = w->cfg.images ? WAL_VERSION_IMAGES : WAL_VERSION;
	wal_encode_header(blk + WAL_SLOT_BYTES, w->version, w->epoch, w->salt,
		      w->start_lsn);
	rc = wal_truncate_log(w, 0);
	if (rc == UT_OK)
		rc = wal_log_write(w, blk, UT_WAL_DATA_OFF, 0, 1);
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
		r = wal_decode_header(blk + s * WAL_SLOT_BYTES, &v, &e, &salt, &start);
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
		    wal_truncate_log(w, UT_WAL_DATA_OFF) == UT_OK)
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
				wal_seal_record(b, rec, REC_DELTA, rec_len, count,
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
			wal_seal_record(b, at, REC_IMAGE, UT_WAL_REC_HDR + IMAGE_PAYLOAD,
				    1, w->salt, w->durable_lsn);
			at += pad8(UT_WAL_REC_HDR + IMAGE_PAYLOAD);
			continue;
		}
		if (count && rec_len + e > REC_TARGET) {
			wal_seal_record(b, rec, REC_DELTA, rec_len, count, w->salt,
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
		wal_seal_record(b, rec, REC_DELTA, rec_len, count, w->salt,
			    w->durable_lsn);
		at = rec + pad8(rec_len);
	}
	if (stream && (rc = stream_at(w, &at)))
		return rc;
	put64(b->p + at + UT_WAL_REC_HDR, w->next_txn_id);
	put64(b->p + at + UT_WAL_REC_HDR + 8, first_lsn);
	wal_seal_record(b, at, REC_COMMIT, UT_WAL_REC_HDR + COMMIT_PAYLOAD,
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
					 w->path, wal_rc_name(w->failed));
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
				 w->path, wal_rc_name(rc));
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
	int rc = wal_append_batch(w, b->p, b->len,
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
		rc = wal_append_batch(w, take.p, take.len, off);
	}
	if (rc == UT_OK && sync)
		rc = ut_file_sync(w->f);
	if (rc != UT_OK) {
		/* Best effort: drop what this call may have landed, so an
		 * unacknowledged commit does not come back after reopen.  Bytes
		 * an earlier unsynced write handed over belong to sync=0 commits
		 * that returned (and whose pages may be in the data file): keep
		 * them. */
		if (wal_truncate_log(w, off) == UT_OK)
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
					 w->path, wal_rc_name(rc));
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

		wal_read_span(w->f, off, want, &a, &b);
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

			plen = wal_check_record(r, want - done, redo_lsn + at + done, w->salt);
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
		if ((rc = wal_log_write(w, chunk, done, UT_WAL_DATA_OFF + at, 0)))
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
	uint64_t epoch = w->epoch + 1, salt = wal_new_salt(epoch);
	int rc;

	if (w->next_lsn > redo_lsn && (rc = move_tail(w, redo_lsn, salt)))
		return rc;
	rc = wal_write_header(w, epoch, salt, redo_lsn);
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

/*
 * wal/wal_recover.c - recovery (contract in wal.h, "Open/recover"): read
 * the log once through a read-ahead window, replay the deltas of committed
 * transactions in log order, find where the log ends and whether what lies
 * past a bad record is evidence of lost commits (a damaged log is
 * refused, a torn tail cut), adopt a newer epoch a crash left in the
 * other header slot.
 */
#include <stdio.h>
#include <stdlib.h>

#include "wal_int.h"

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
		n = wal_read_any(r->f, r->buf + kept, r->cap - kept, start + kept);
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
	*plen = wal_check_record(p, avail, lsn, salt);
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
		if (wal_is_change(p[4])) {
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
		if (!plen || !wal_is_change(p[4])) {
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
			if (wal_is_change(p[4])) {
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
			if (wal_is_change(p[4])) {
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
		rc = wal_truncate_log(w, off_of(w, txn_start));
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
	if (adopted && (rc = wal_write_header(w, w->epoch, w->salt, w->start_lsn)))
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

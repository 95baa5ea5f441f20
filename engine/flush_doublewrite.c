/*
 * engine/flush_doublewrite.c - the "doublewrite" flush strategy (flush.h),
 * InnoDB's scheme: every page goes first to the double-write file, which is
 * made durable, then to its home offset.  A page torn in place by a crash is
 * restored at open from its copy (ops->recover).  Layout and protocol:
 * flush_doublewrite.h.
 */
#include <stdlib.h>
#include <string.h>

#include "flush.h"
#include "flush_doublewrite.h"
#include "page.h"
#include "ut_crc32c.h"

struct dw_state {
	ut_file *dw;
	uint8_t *hdrs;       /* UT_DW_SLOTS header sectors, aligned */
	uint32_t used;       /* slots holding copies of not-yet-synced pages */
	uint64_t next_batch; /* next batch id */
	int above_floor;     /* copies made since the floor was last raised */
};

static void put_header(uint8_t *h, uint64_t batch, uint32_t pgno,
		       const void *page, uint32_t slot)
{
	memset(h, 0, UT_DW_HDR);
	ut_st64(h, UT_DW_MAGIC);
	ut_st64(h + 8, batch);
	ut_st32(h + 16, pgno);
	ut_st32(h + 20, ut_ld32(page)); /* the sealed page's own checksum */
	ut_st32(h + 24, slot);
	ut_st32(h + 28, ut_crc32c(0, h, 28));
}

static int header_ok(const uint8_t *h, uint32_t slot)
{
	return ut_ld64(h) == UT_DW_MAGIC && ut_ld32(h + 24) == slot &&
	       ut_ld32(h + 28) == ut_crc32c(0, h, 28);
}

static int all_zero(const uint8_t *b, size_t n);

/* The floor recorded in dw (0 when absent or not valid); *ours is 1 when
 * the floor sector is a valid one of ours, -1 when it is neither that nor
 * zero (damaged or foreign), else 0. */
static int read_floor(ut_file *dw, uint64_t *floor, int *ours)
{
	uint8_t *h = ut_io_alloc(UT_DW_HDR);
	int64_t n;

	if (!h)
		return UT_ENOMEM;
	*floor = 0;
	*ours = 0;
	n = ut_file_read(dw, h, UT_DW_HDR, UT_DW_FLOOR_OFF);
	if (n == (int64_t)UT_DW_HDR && ut_ld64(h) == UT_DW_FLOOR_MAGIC &&
	    ut_ld32(h + 16) == ut_crc32c(0, h, 16)) {
		*floor = ut_ld64(h + 8);
		*ours = 1;
	} else if (n > 0 && !all_zero(h, (size_t)n)) {
		*ours = -1;
	}
	free(h);
	return n < 0 ? (int)n : UT_OK;
}

static int all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* A header sector is written whole (one 4 KiB sector): zero, or ours.  A
 * file with nothing of ours (no valid slot header, no valid floor) but
 * something else is foreign; one damaged header among ours is damage,
 * which recovery judges slot by slot. */
static int check_ours(ut_file *dw, uint64_t ours, uint64_t damaged)
{
	if (damaged && !ours) {
		ut_set_errdetail("%s: not an untorn double-write file (no valid "
				 "slot header or floor, %llu foreign)", dw->path,
				 (unsigned long long)damaged);
		return UT_ENOTDB;
	}
	return UT_OK;
}

/* Every copy made so far protects a write that is now durable: raise the
 * floor above them (one sector, then sync). */
static int raise_floor(ut_flusher *fl)
{
	struct dw_state *st = fl->priv;
	uint8_t *h = ut_io_alloc(UT_DW_HDR);
	int rc;

	if (!h)
		return UT_ENOMEM;
	memset(h, 0, UT_DW_HDR);
	ut_st64(h, UT_DW_FLOOR_MAGIC);
	ut_st64(h + 8, st->next_batch);
	ut_st32(h + 16, ut_crc32c(0, h, 16));
	rc = ut_file_write(st->dw, h, UT_DW_HDR, UT_DW_FLOOR_OFF, 0);
	free(h);
	if (rc == UT_OK)
		rc = ut_file_sync(st->dw);
	if (rc)
		return rc;
	ut_ctr_add(&fl->ctr->syncs, 1);
	st->above_floor = 0;
	return UT_OK;
}

/* Highest batch id in the dw file (0 if none); UT_ENOTDB when the file
 * is not ours (check_ours). */
static int scan_max_batch(ut_file *dw, uint64_t *max)
{
	uint8_t *h = ut_io_alloc(UT_DW_HDR);
	uint64_t floor, ours = 0, damaged = 0;
	int rc, floor_ours;

	if (!h)
		return UT_ENOMEM;
	*max = 0;
	rc = read_floor(dw, &floor, &floor_ours);
	ours += floor_ours == 1;
	damaged += floor_ours == -1;
	for (uint32_t s = 0; s < UT_DW_SLOTS && rc == UT_OK; s++) {
		int64_t n = ut_file_read(dw, h, UT_DW_HDR,
					 UT_DW_SLOT_OFF(s));
		if (n < 0) {
			rc = (int)n;
			break;
		}
		if (n < (int64_t)UT_DW_HDR)
			break;
		if (header_ok(h, s)) {
			ours++;
			if (ut_ld64(h + 8) > *max)
				*max = ut_ld64(h + 8);
		} else if (!all_zero(h, UT_DW_HDR)) {
			damaged++;
		}
	}
	free(h);
	return rc ? rc : check_ours(dw, ours, damaged);
}

static int dw_open(ut_flusher *fl, ut_file **dw)
{
	size_t len = strlen(fl->path) + sizeof(UT_DW_SUFFIX);
	char *p = malloc(len);
	int rc;

	if (!p)
		return UT_ENOMEM;
	memcpy(p, fl->path, strlen(fl->path));
	memcpy(p + strlen(fl->path), UT_DW_SUFFIX, sizeof(UT_DW_SUFFIX));
	rc = fl->vfs->open(fl->vfs, p, UT_OPEN_CREATE | UT_OPEN_DIRECT, dw);
	/* The copies are only as durable as the file's directory entry. */
	if (rc == UT_OK && (rc = fl->vfs->sync_dir(fl->vfs, p)) != UT_OK) {
		ut_file_close(*dw);
		*dw = NULL;
	}
	free(p);
	return rc;
}

static void dw_fini(ut_flusher *fl)
{
	struct dw_state *st = fl->priv;

	if (!st)
		return;
	ut_file_close(st->dw);
	free(st->hdrs);
	free(st);
	fl->priv = NULL;
}

static int dw_init(ut_flusher *fl)
{
	struct dw_state *st = calloc(1, sizeof(*st));
	uint64_t floor = 0;
	int rc;

	if (!st)
		return UT_ENOMEM;
	fl->priv = st;
	st->hdrs = ut_io_alloc((size_t)UT_DW_SLOTS * UT_DW_HDR);
	if (!st->hdrs) {
		dw_fini(fl);
		return UT_ENOMEM;
	}
	rc = dw_open(fl, &st->dw);
	if (rc == UT_OK)
		rc = scan_max_batch(st->dw, &st->next_batch);
	if (rc == UT_OK) {
		int floor_ours;

		rc = read_floor(st->dw, &floor, &floor_ours);
	}
	if (rc) {
		dw_fini(fl);
		return rc;
	}
	st->next_batch++;
	if (st->next_batch < floor)
		st->next_batch = floor;
	return UT_OK;
}

/* The page number of the copy in slot s whose header is damaged, taken
 * from the copy itself when it verifies; UINT32_MAX when it does not (no
 * page can be named; a torn page it might have protected is still caught
 * by its checksum when read). */
static int damaged_copy(ut_file *dw, uint32_t s, uint8_t *copy,
			const char *path, uint32_t *pgno)
{
	int64_t n = ut_file_read(dw, copy, UT_PAGE_SIZE,
				 UT_DW_SLOT_OFF(s) + UT_DW_HDR);

	*pgno = UINT32_MAX;
	if (n < 0)
		return (int)n;
	if (n == (int64_t)UT_PAGE_SIZE &&
	    ut_page_verify(copy, ut_page_pgno(copy), path) == UT_OK)
		*pgno = ut_page_pgno(copy);
	return UT_OK;
}

/* 1 when page pgno of data fails ut_page_verify (or is missing), 0 when
 * it is whole, or a negative code. */
static int home_fails(ut_file *data, uint32_t pgno, uint8_t *home,
		      const char *path)
{
	int64_t n = ut_file_read(data, home, UT_PAGE_SIZE,
				 (uint64_t)pgno * UT_PAGE_SIZE);

	if (n < 0)
		return (int)n;
	return n != (int64_t)UT_PAGE_SIZE ||
	       ut_page_verify(home, pgno, path) != UT_OK;
}

const uint8_t *ut_dw_pending_page(const ut_dw_pending *pend, uint32_t pgno)
{
	for (size_t i = 0; pend && i < pend->n; i++)
		if (pend->pgno[i] == pgno)
			return pend->buf[i];
	return NULL;
}

void ut_dw_pending_free(ut_dw_pending *pend)
{
	for (size_t i = 0; pend && i < pend->n; i++)
		free(pend->buf[i]);
	if (pend)
		pend->n = 0;
}

int ut_dw_apply(ut_file *data, ut_dw_pending *pend, uint64_t *written)
{
	int rc = UT_OK;

	*written = 0;
	if (!pend || !pend->n)
		return UT_OK;
	for (size_t i = 0; rc == UT_OK && i < pend->n; i++)
		rc = ut_file_write(data, pend->buf[i], UT_PAGE_SIZE,
				   (uint64_t)pend->pgno[i] * UT_PAGE_SIZE, 0);
	if (rc == UT_OK)
		rc = ut_file_sync(data);
	if (rc == UT_OK) {
		*written = pend->n;
		ut_dw_pending_free(pend);
	}
	return rc;
}

/* Keep copy as the pending repair of pgno (pend), or write it now. */
static int repair(ut_file *data, ut_dw_pending *pend, uint32_t pgno,
		  const uint8_t *copy)
{
	uint8_t *b = (uint8_t *)ut_dw_pending_page(pend, pgno);

	if (!pend)
		return ut_file_write(data, copy, UT_PAGE_SIZE,
				     (uint64_t)pgno * UT_PAGE_SIZE, 0);
	if (!b) {
		if (pend->n == UT_DW_SLOTS || !(b = ut_io_alloc(UT_PAGE_SIZE)))
			return UT_ENOMEM;
		pend->pgno[pend->n] = pgno;
		pend->buf[pend->n++] = b;
	}
	memcpy(b, copy, UT_PAGE_SIZE);
	return UT_OK;
}

int ut_dw_recover(ut_file *data, ut_file *dw, const char *path,
		  ut_dw_recovery *out, ut_dw_pending *pend)
{
	struct best {
		uint32_t pgno;
		uint32_t slot;
		uint64_t batch;
	} best[UT_DW_SLOTS];
	/* copies whose page verifies but whose header does not */
	struct damaged {
		uint32_t pgno;
		uint32_t slot;
	} bad[UT_DW_SLOTS];
	size_t nbest = 0, nbad = 0;
	uint64_t nours = 0, ndamaged = 0;
	int floor_ours;
	uint8_t *h = ut_io_alloc(UT_DW_HDR), *copy = ut_io_alloc(UT_PAGE_SIZE),
		*home = ut_io_alloc(UT_PAGE_SIZE);
	ut_dw_recovery r;
	int rc = UT_OK;

	memset(&r, 0, sizeof(r));
	if (!h || !copy || !home) {
		rc = UT_ENOMEM;
		goto out;
	}
	if ((rc = read_floor(dw, &r.floor, &floor_ours)))
		goto out;
	nours = floor_ours == 1;
	ndamaged = floor_ours == -1;
	/* 1. The newest valid copy of each page. */
	for (uint32_t s = 0; s < UT_DW_SLOTS; s++) {
		uint64_t off = UT_DW_SLOT_OFF(s), batch;
		int64_t n = ut_file_read(dw, h, UT_DW_HDR, off);
		uint32_t pgno;
		size_t i;

		if (n < 0) {
			rc = (int)n;
			goto out;
		}
		if (n < (int64_t)UT_DW_HDR)
			break;
		r.slots++;
		if (!header_ok(h, s)) {
			if (all_zero(h, UT_DW_HDR))
				continue;
			ndamaged++;
			if ((rc = damaged_copy(dw, s, copy, path, &bad[nbad].pgno)))
				goto out;
			if (bad[nbad].pgno != UINT32_MAX)
				bad[nbad++].slot = s;
			continue;
		}
		nours++;
		if (ut_ld64(h + 8) < r.floor)
			continue;
		n = ut_file_read(dw, copy, UT_PAGE_SIZE, off + UT_DW_HDR);
		if (n < 0) {
			rc = (int)n;
			goto out;
		}
		pgno = ut_ld32(h + 16);
		batch = ut_ld64(h + 8);
		if (n < (int64_t)UT_PAGE_SIZE ||
		    ut_ld32(copy) != ut_ld32(h + 20) ||
		    ut_page_verify(copy, pgno, path) != UT_OK)
			continue;
		r.valid++;
		if (batch > r.max_batch)
			r.max_batch = batch;
		for (i = 0; i < nbest && best[i].pgno != pgno; i++)
			;
		if (i == nbest)
			best[nbest++] = (struct best){ pgno, s, batch };
		else if (batch > best[i].batch)
			best[i] = (struct best){ pgno, s, batch };
	}
	if ((rc = check_ours(dw, nours, ndamaged)))
		goto out;
	/* 1b. A copy behind a damaged header cannot be trusted (its batch,
	 * hence whether it is current, is unknown).  It is needed only when
	 * its page fails in place and has no other valid copy. */
	for (size_t k = 0; k < nbad; k++) {
		size_t i;

		for (i = 0; i < nbest && best[i].pgno != bad[k].pgno; i++)
			;
		if (i < nbest)
			continue;
		if ((rc = home_fails(data, bad[k].pgno, home, path)) < 0)
			goto out;
		if (rc) {
			ut_set_errdetail("%s: page %u fails its checksum in place, "
					 "and its only copy (%s, slot %u) has a "
					 "damaged header: cannot tell whether the "
					 "copy is current", path, bad[k].pgno,
					 dw->path, bad[k].slot);
			rc = UT_ECORRUPT;
			goto out;
		}
	}
	/* 2. Restore each page that fails in place. */
	for (size_t i = 0; i < nbest; i++) {
		uint64_t home_off = (uint64_t)best[i].pgno * UT_PAGE_SIZE;
		const uint8_t *was = ut_dw_pending_page(pend, best[i].pgno);
		int64_t n = was ? (int64_t)UT_PAGE_SIZE
				: ut_file_read(data, home, UT_PAGE_SIZE, home_off);

		if (n < 0) {
			rc = (int)n;
			goto out;
		}
		if (was)
			memcpy(home, was, UT_PAGE_SIZE);
		if (n == (int64_t)UT_PAGE_SIZE &&
		    ut_page_verify(home, best[i].pgno, path) == UT_OK)
			continue;
		if (floor_ours == -1) {
			/* copies below a lost floor would bring back old pages */
			ut_set_errdetail("%s: page %u fails its checksum in place, "
					 "and the floor of %s is damaged: cannot "
					 "tell whether its copy is current", path,
					 best[i].pgno, dw->path);
			rc = UT_ECORRUPT;
			goto out;
		}
		n = ut_file_read(dw, copy, UT_PAGE_SIZE,
				 UT_DW_SLOT_OFF(best[i].slot) + UT_DW_HDR);
		if (n != (int64_t)UT_PAGE_SIZE) {
			rc = n < 0 ? (int)n : UT_EIO;
			goto out;
		}
		rc = repair(data, pend, best[i].pgno, copy);
		if (rc)
			goto out;
		r.repaired++;
	}
	if (r.repaired && !pend) {
		rc = ut_file_sync(data);
		if (rc)
			goto out;
	}
	ut_set_errdetail("%s: double-write recovery: %llu of %llu slots valid, "
			 "%llu pages restored", path,
			 (unsigned long long)r.valid, (unsigned long long)r.slots,
			 (unsigned long long)r.repaired);
out:
	free(h);
	free(copy);
	free(home);
	if (out)
		*out = r;
	return rc;
}

static int dw_recover(ut_flusher *fl, ut_file *data, ut_dw_pending *pend)
{
	struct dw_state *st = fl->priv;
	ut_dw_recovery r;
	int rc = ut_dw_recover(data, st->dw, fl->path, &r, pend);

	if (!pend) {
		ut_ctr_add(&fl->ctr->torn_repaired, r.repaired);
		if (r.repaired)
			ut_ctr_add(&fl->ctr->syncs, 1);
	}
	if (r.max_batch >= st->next_batch)
		st->next_batch = r.max_batch + 1;
	if (r.floor > st->next_batch)
		st->next_batch = r.floor;
	return rc;
}

static int sync_data(ut_flusher *fl, ut_file *data)
{
	int rc = ut_flush_sync_data(fl, data);

	if (rc == UT_OK)
		((struct dw_state *)fl->priv)->used = 0;
	return rc;
}

static int dw_write_pages(ut_flusher *fl, ut_file *data,
			  const ut_flush_page *pages, size_t n, unsigned flags)
{
	struct dw_state *st = fl->priv;
	ut_iowrite w[2 * UT_DW_SLOTS];
	int rc;

	/* sync=0 eviction: no sync follows, so a copy would protect nothing. */
	if (flags & UT_FLUSH_LAZY)
		return ut_flush_in_place(fl, data, pages, n, flags, 0);
	for (size_t i = 0; i < n;) {
		size_t k = n - i < UT_DW_SLOTS ? n - i : UT_DW_SLOTS;
		uint64_t batch;

		/* Reuse slots only once the pages they protect are durable. */
		if (st->used + k > UT_DW_SLOTS) {
			rc = sync_data(fl, data);
			if (rc)
				return rc;
			st->used = 0;
		}
		batch = st->next_batch++;
		for (size_t j = 0; j < k; j++) {
			uint32_t slot = st->used + (uint32_t)j;
			uint8_t *h = st->hdrs + (size_t)slot * UT_DW_HDR;
			uint64_t off = UT_DW_SLOT_OFF(slot);

			put_header(h, batch, pages[i + j].pgno, pages[i + j].buf,
				   slot);
			w[2 * j] = (ut_iowrite){ h, UT_DW_HDR, off };
			w[2 * j + 1] = (ut_iowrite){ pages[i + j].buf,
						     UT_PAGE_SIZE, off + UT_DW_HDR };
		}
		rc = ut_file_write_batch(st->dw, w, 2 * k, 0);
		if (rc == UT_OK)
			rc = ut_file_sync(st->dw);
		if (rc)
			return rc;
		ut_ctr_add(&fl->ctr->dw_page_writes, k);
		ut_ctr_add(&fl->ctr->syncs, 1);
		st->above_floor = 1;
		/* From here until the data sync, a crash may tear these pages
		 * in place; their copies are durable. */
		st->used += (uint32_t)k;
		rc = ut_flush_in_place(fl, data, pages + i, k, 0,
				       UT_WRITE_WRITEBACK);
		if (rc)
			return rc;
		i += k;
	}
	if (!(flags & UT_FLUSH_DURABLE))
		return UT_OK;
	rc = sync_data(fl, data);
	if (rc == UT_OK && st->above_floor)
		rc = raise_floor(fl);
	return rc;
}

const struct ut_flusher_ops ut_flush_doublewrite_ops = {
	.name = "doublewrite",
	.protect = UT_PROTECT_DOUBLEWRITE,
	.init = dw_init,
	.recover = dw_recover,
	.write_pages = dw_write_pages,
	.fini = dw_fini,
};

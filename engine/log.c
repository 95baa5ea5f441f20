/*
 * engine/log.c - pager log hooks on top of the WAL (contract in log.h).
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct ut_log {
	ut_wal *wal;
	char *path;
	ut_log_hooks hooks;
	ut_wal_delta *d;
	size_t capd;
	int failed;
};

static const uint8_t zero_page[UT_PAGE_SIZE];

static int add_delta(ut_log *lg, size_t *n, uint32_t pgno, uint32_t off,
		     uint32_t len, const uint8_t *post)
{
	if (*n == lg->capd) {
		size_t c = lg->capd ? lg->capd * 2 : 256;
		ut_wal_delta *nd = realloc(lg->d, c * sizeof(*nd));
		if (!nd)
			return UT_ENOMEM;
		lg->d = nd;
		lg->capd = c;
	}
	lg->d[(*n)++] = (ut_wal_delta){ pgno, off, len, post + off, 0 };
	return UT_OK;
}

static inline uint64_t word_xor(const uint8_t *a, const uint8_t *b)
{
	uint64_t x, y;

	memcpy(&x, a, 8);
	memcpy(&y, b, 8);
	return x ^ y;
}

/* First i' >= i where pre and post differ (to if none), a word at a time. */
static uint32_t skip_equal(const uint8_t *pre, const uint8_t *post,
			   uint32_t i, uint32_t to)
{
	/* most of a page is unchanged: let libc's vector memcmp skip it */
	while (i + 512 <= to && !memcmp(pre + i, post + i, 512))
		i += 512;
	while (i + 64 <= to && !memcmp(pre + i, post + i, 64))
		i += 64;
	while (i + 8 <= to && !word_xor(pre + i, post + i))
		i += 8;
	while (i < to && pre[i] == post[i])
		i++;
	return i;
}

/* 1 + the index of the last byte of a word whose xor is x (x != 0). */
static inline uint32_t past_last_diff(uint64_t x)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return 8 - (uint32_t)__builtin_clzll(x) / 8;
#else
	return 8 - (uint32_t)__builtin_ctzll(x) / 8;
#endif
}

/* Byte ranges of post that differ from pre, in [from, to); ranges at most
 * UT_LOG_MERGE_GAP equal bytes apart are merged (a few more, at a word's
 * end).  Inside a range the scan goes a word at a time without looking
 * for equal bytes: the slot array a put shifts differs in most words but
 * not in every byte. */
static int diff_range(ut_log *lg, size_t *n, uint32_t pgno, const uint8_t *pre,
		      const uint8_t *post, uint32_t from, uint32_t to)
{
	uint32_t i = skip_equal(pre, post, from, to);

	while (i < to) {
		uint32_t start = i, end = i + 1; /* pre[i] != post[i] */
		int rc;

		for (i = end; i < to && i - end <= UT_LOG_MERGE_GAP;) {
			if (i + 8 <= to) {
				uint64_t x = word_xor(pre + i, post + i);

				if (x)
					end = i + past_last_diff(x);
				i += 8;
			} else {
				if (pre[i] != post[i])
					end = i + 1;
				i++;
			}
		}
		if ((rc = add_delta(lg, n, pgno, start, end - start, post)))
			return rc;
		i = skip_equal(pre, post, i, to);
	}
	return UT_OK;
}

/* The changes of one page: its touched blocks, compared with the
 * pre-image, but for crc [0,4) and lsn [8,16), which are stamped at seal. */
static int diff_page(ut_log *lg, size_t *n, const ut_log_page *pg)
{
	const uint8_t *pre = pg->pre ? pg->pre : zero_page;
	uint64_t t = pg->pre ? pg->touched : ~0ull;
	int rc;

	if (pg->image) { /* the page whole: one IMAGE record */
		if ((rc = add_delta(lg, n, pg->pgno, 0, UT_PAGE_SIZE, pg->post)))
			return rc;
		lg->d[*n - 1].image = 1;
		return UT_OK;
	}
	if ((t & 1) && (rc = diff_range(lg, n, pg->pgno, pre, pg->post, 4, 8)))
		return rc;
	while (t) {
		unsigned first = (unsigned)__builtin_ctzll(t);
		uint64_t rest = ~(t >> first); /* zero past the run of touched blocks */
		unsigned end = rest ? first + (unsigned)__builtin_ctzll(rest) : 64;
		uint32_t from = first * UT_TOUCH_BLOCK;

		if ((rc = diff_range(lg, n, pg->pgno, pre, pg->post,
				     from < 16 ? 16 : from, end * UT_TOUCH_BLOCK)))
			return rc;
		t &= end < 64 ? ~0ull << end : 0;
	}
	return UT_OK;
}

/* A log write or sync failure fails the handle for good (wal.h). */
static int failed_if(ut_log *lg, int rc)
{
	if (rc)
		__atomic_store_n(&lg->failed, rc, __ATOMIC_RELEASE);
	return rc;
}

static int hook_commit(void *ctx, const ut_log_page *pages, size_t np,
		       int sync, uint64_t *lsn)
{
	ut_log *lg = ctx;
	ut_wal_stats st;
	size_t n = 0;
	int rc;

	(void)sync; /* durability is the caller's, outside its lock */
	if (__atomic_load_n(&lg->failed, __ATOMIC_ACQUIRE))
		return UT_EFATAL;
	for (size_t i = 0; i < np; i++)
		if ((rc = diff_page(lg, &n, &pages[i])))
			return rc;
	rc = ut_wal_append_txn(lg->wal, lg->d, n, lsn);
	if (rc) /* a big transaction's records may have gone out, and failed */
		return ut_wal_failed(lg->wal) ? failed_if(lg, rc) : rc;
	/* Bound the append buffer while committers queue up for a flush. */
	ut_wal_stats_get(lg->wal, &st);
	if (st.next_lsn - st.written_lsn > UT_LOG_BUF_MAX)
		return failed_if(lg, ut_wal_write_to(lg->wal, st.next_lsn));
	return UT_OK;
}

int ut_log_flush_to(ut_log *lg, uint64_t lsn)
{
	return failed_if(lg, ut_wal_flush_to(lg->wal, lsn));
}

int ut_log_write_to(ut_log *lg, uint64_t lsn)
{
	return failed_if(lg, ut_wal_write_to(lg->wal, lsn));
}

static int hook_flush_to(void *ctx, uint64_t lsn)
{
	return ut_log_flush_to(ctx, lsn);
}

static int hook_write_to(void *ctx, uint64_t lsn)
{
	return ut_log_write_to(ctx, lsn);
}

static uint64_t hook_waiting(void *ctx)
{
	return ut_wal_sync_waiting(((ut_log *)ctx)->wal);
}

static int hook_ckpt_done(void *ctx, uint64_t redo_lsn)
{
	ut_log *lg = ctx;
	int rc = ut_wal_checkpoint_done(lg->wal, redo_lsn);

	return rc == UT_EINVAL ? rc : failed_if(lg, rc);
}

int ut_log_open(ut_vfs *vfs, const char *dbpath, uint64_t initial_lsn,
		int images, ut_log **out, int *existed)
{
	ut_wal_config cfg = { .initial_lsn = initial_lsn, .direct = 1,
			      .images = images };
	size_t len = strlen(dbpath);
	ut_log *lg;
	int rc;

	*out = NULL;
	lg = calloc(1, sizeof(*lg));
	if (!lg || !(lg->path = malloc(len + sizeof(UT_WAL_SUFFIX)))) {
		free(lg);
		return UT_ENOMEM;
	}
	memcpy(lg->path, dbpath, len);
	memcpy(lg->path + len, UT_WAL_SUFFIX, sizeof(UT_WAL_SUFFIX));
	rc = vfs->exists(vfs, lg->path);
	if (rc < 0)
		goto fail;
	*existed = rc == 1;
	if (*existed) {
		/* What recovery replays must be durable before any page it
		 * produces reaches the data file (a crash of the process
		 * leaves the log's tail in the OS cache only). */
		ut_file *f;

		rc = vfs->open(vfs, lg->path, 0, &f);
		if (rc == UT_OK) {
			rc = ut_file_sync(f);
			ut_file_close(f);
		}
		if (rc)
			goto fail;
	}
	rc = ut_wal_open(vfs, lg->path, &cfg, &lg->wal);
	if (rc)
		goto fail;
	lg->hooks.ctx = lg;
	lg->hooks.log_commit = hook_commit;
	lg->hooks.log_flush_to = hook_flush_to;
	lg->hooks.log_write_to = hook_write_to;
	lg->hooks.log_waiting = hook_waiting;
	lg->hooks.log_checkpoint_done = hook_ckpt_done;
	*out = lg;
	return UT_OK;
fail:
	free(lg->path);
	free(lg);
	return rc;
}

static int apply(void *ctx, uint64_t lsn, const ut_wal_delta *d)
{
	if (d->image)
		return ut_pager_redo_image(ctx, lsn, d->pgno, d->data);
	return ut_pager_redo(ctx, lsn, d->pgno, d->offset, d->len, d->data);
}

/* Redo's gate: the log's verdict on its own end (called by the pager from
 * inside apply, so inside ut_wal_recover). */
static int redo_gate(void *ctx)
{
	return ut_wal_recover_decide(ctx);
}

int ut_log_recover(ut_log *lg, ut_pager *p, uint64_t redo_lsn,
		   ut_wal_recovery_info *info)
{
	int rc, end;

	ut_pager_set_redo_gate(p, redo_gate, lg->wal);
	if ((rc = ut_pager_redo_begin(p)))
		goto out;
	ut_wal_set_prefetch(lg->wal, ut_pager_redo_hint, p);
	rc = ut_wal_recover(lg->wal, redo_lsn, apply, p, info);
	ut_wal_set_prefetch(lg->wal, NULL, NULL);
	end = ut_pager_redo_end(p); /* checks the last transaction's pages */
	if (rc || (rc = end))
		goto out;
	ut_pager_set_lsn(p, ut_wal_next_lsn(lg->wal));
out:
	ut_pager_set_redo_gate(p, NULL, NULL);
	return rc;
}

const ut_log_hooks *ut_log_hooks_of(ut_log *lg) { return &lg->hooks; }
int ut_log_failed(ut_log *lg)
{
	return __atomic_load_n(&lg->failed, __ATOMIC_ACQUIRE);
}
ut_wal *ut_log_wal(ut_log *lg) { return lg->wal; }

int ut_log_close(ut_log *lg)
{
	int rc;

	if (!lg)
		return UT_OK;
	rc = ut_wal_close(lg->wal);
	free(lg->d);
	free(lg->path);
	free(lg);
	return rc;
}

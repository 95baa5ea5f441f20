/*
 * engine/pager.c - buffer pool, page I/O, free list and the write
 * transaction's page journal (contract in pager.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "flush_doublewrite.h"
#include "pager.h"

#define EVICT_BATCH 64
/* Pages per page-cleaner batch: one strategy call, so one double-write
 * copy write and sync for up to this many pages (InnoDB's
 * innodb_doublewrite_pages gained most going to 128). */
#define CLEAN_BATCH 128
#define POOL_SLACK 64 /* spare page buffers kept resident beyond the bound */
#define SLAB_PAGES 64 /* page buffers per mmap'd slab */
/* Pre-images beyond this many count against the cache bound (evicting
 * clean frames); up to it they ride on top of it.  24 MiB keeps resident
 * memory within cache_bytes + 32 MiB for ordinary transactions without
 * shrinking the cache for them. */
#define PRE_SLACK ((24u << 20) / UT_PAGE_SIZE)

struct frame {
	ut_pg pg; /* first: a ut_pg * is a struct frame * */
	uint8_t *pre;
	uint64_t touched; /* blocks changed in the transaction (ut_log_page) */
	struct frame *hnext;
	uint32_t pin;
	uint32_t wgen; /* bumped by every ut_pager_write: changed since a snapshot? */
	uint8_t valid, dirty, txn, predirty, ref;
	uint8_t flushing; /* a snapshot of it is being written by the cleaner */
	uint8_t ckpt;     /* dirty when the pending checkpoint began */
};

struct ut_pager {
	ut_vfs *vfs;
	ut_file *file;  /* direct (where allowed), locked */
	ut_file *rfile; /* buffered: page reads (== file when no O_DIRECT) */
	ut_file *wfile; /* page writes: file when atomic, else rfile */
	int lazy;       /* sync=0: evictions write UT_FLUSH_LAZY */
	char *path;
	ut_flusher *fl;
	ut_io_counters ctr;
	ut_log_hooks hooks;
	pthread_mutex_t mu;

	struct frame **frames;
	size_t nframes, capframes, maxframes, hand;
	struct frame **buckets;
	size_t nbuckets; /* power of two */
	struct frame *meta;

	int in_txn;
	struct frame **tx;
	size_t ntx, captx;
	uint8_t **pool; /* spare page buffers (frames and pre-images share them) */
	size_t npool, cappool;
	size_t nresident; /* buffers in the pool whose memory is resident */
	void **slabs;
	size_t nslabs;
	size_t preout; /* pre-images held by the transaction */
	ut_log_page *logpages;
	ut_flush_page *fpages;
	size_t capfpages;

	uint64_t lsn, durable_lsn, written_lsn;
	int fatal;
	int poisoned;   /* cached state may be uncommitted: refuse reads too */
	int recovering; /* redo in progress: no WAL rule (log already durable) */
	int closing;    /* the final checkpoint marks the header clean */
	int readonly;   /* cfg->readonly: no file is written, none created */
	/* Pages the header vouched for at open (the last checkpoint's page
	 * count).  A page at or past it was allocated after that checkpoint:
	 * all of it is in the log, so a partial one (a torn extension, e.g.
	 * a write cut short by a full disk) is rebuilt by redo from zeros. */
	uint32_t durable_pages;
	int dw_existed; /* PATH "-dw" existed before this open */
	int page1_untorn; /* page 1 in the file passes its checksum */
	int created;    /* the data file was empty: initialised by this open */
	uint32_t last_mode, last_clean; /* header as found at open */

	/* The page cleaner (see pager.h).  flush_mu serializes strategy calls
	 * once the thread runs and is always taken before mu. */
	int cleaner_inline;   /* cfg: never start the thread */
	int cleaner_running;  /* the thread exists */
	int cleaner_stop;
	pthread_t cleaner;
	pthread_mutex_t flush_mu;
	pthread_cond_t work_cv;  /* the cleaner waits here for work */
	pthread_cond_t done_cv;  /* frame and checkpoint waiters wait here */
	unsigned waiters;        /* threads waiting for a clean frame */
	size_t ndirty_est;       /* dirty frames, as last counted (+ commits since) */
	uint8_t *snap;           /* CLEAN_BATCH page snapshots */
	struct frame *snapf[CLEAN_BATCH];
	uint32_t snapgen[CLEAN_BATCH];
	uint64_t batches;        /* cleaner batches written */
	uint64_t frame_waits;    /* times a thread waited for the cleaner */
	void (*batch_hook)(void *); /* tests: between copy and write */
	void *batch_hook_ctx;
	char fatal_detail[256];  /* why a cleaner write failed */
	/* Checkpoint: requested (header image taken, dirty frames marked
	 * ckpt), then run by the cleaner or the caller. */
	int ckpt_pending;
	uint64_t ckpt_redo, ckpt_req, ckpt_done, checkpoints;
	uint32_t ckpt_meta_gen;
	int ckpt_rc;
	int ckpt_blocked;     /* its remaining frames are in a transaction */
	int ckpt_write_hdr;   /* the header image differs from the disk's */
	int fatal_rc;         /* the error that made the handle fatal */
	uint8_t *ckpt_hdr;
};

/* Read without the pool mutex by writers' fast paths; set by whoever saw
 * a write fail, the cleaner thread included. */
static inline int fatal_now(const ut_pager *p)
{
	return __atomic_load_n(&p->fatal, __ATOMIC_ACQUIRE);
}

static inline size_t pre_charged(const ut_pager *p)
{
	return p->preout > PRE_SLACK ? p->preout - PRE_SLACK : 0;
}

static inline size_t hslot(ut_pager *p, uint32_t pgno)
{
	return (size_t)(pgno * 2654435761u) & (p->nbuckets - 1);
}

static struct frame *hfind(ut_pager *p, uint32_t pgno)
{
	struct frame *f = p->buckets[hslot(p, pgno)];

	while (f && f->pg.pgno != pgno)
		f = f->hnext;
	return f;
}

static void hinsert(ut_pager *p, struct frame *f)
{
	size_t s = hslot(p, f->pg.pgno);

	f->hnext = p->buckets[s];
	p->buckets[s] = f;
}

static void hremove(ut_pager *p, struct frame *f)
{
	struct frame **pp = &p->buckets[hslot(p, f->pg.pgno)];

	while (*pp && *pp != f)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = f->hnext;
	f->hnext = NULL;
}

static int hgrow(ut_pager *p)
{
	size_t n = p->nbuckets * 2;
	struct frame **nb = calloc(n, sizeof(*nb));

	if (!nb)
		return UT_ENOMEM;
	for (size_t i = 0; i < p->nbuckets; i++) {
		struct frame *f = p->buckets[i], *next;
		for (; f; f = next) {
			next = f->hnext;
			size_t s = (size_t)(f->pg.pgno * 2654435761u) & (n - 1);
			f->hnext = nb[s];
			nb[s] = f;
		}
	}
	free(p->buckets);
	p->buckets = nb;
	p->nbuckets = n;
	return UT_OK;
}

/* Page buffers: frames and pre-images draw from one pool of 16 KiB
 * buffers in mmap'd slabs (page-aligned, no allocator overhead), so memory
 * is reused instead of fragmenting the heap.  A slab is made only when the
 * pool is empty, for buffers about to be used, so it is populated at once:
 * one call instead of a page fault per 4 KiB (8% of a bulk load).
 * Resident memory is bounded by frames + pre-images + resident spares <=
 * the bound + PRE_SLACK + POOL_SLACK (+ one slab's spares): a buffer
 * returned beyond that is given back to the kernel with MADV_DONTNEED (it
 * stays in the pool; touching it again faults in a zero page).  A
 * transaction's pre-images, returned at its end, stay resident as spares
 * for the next one: no fault storm per transaction, and no more memory
 * than the transaction itself held. */
static int pool_push(ut_pager *p, uint8_t *b)
{
	if (p->npool == p->cappool) {
		size_t c = p->cappool ? p->cappool * 2 : SLAB_PAGES;
		uint8_t **np = realloc(p->pool, c * sizeof(*np));
		if (!np)
			return UT_ENOMEM;
		p->pool = np;
		p->cappool = c;
	}
	p->pool[p->npool++] = b;
	return UT_OK;
}

static uint8_t *buf_get(ut_pager *p)
{
	if (!p->npool) {
		void **ns = realloc(p->slabs, (p->nslabs + 1) * sizeof(*ns));
		if (!ns)
			return NULL;
		p->slabs = ns;
		uint8_t *slab = mmap(NULL, (size_t)SLAB_PAGES * UT_PAGE_SIZE,
				     PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				     -1, 0);
		if (slab == MAP_FAILED)
			return NULL;
		p->slabs[p->nslabs++] = slab;
		for (int i = SLAB_PAGES - 1; i >= 0; i--)
			if (pool_push(p, slab + (size_t)i * UT_PAGE_SIZE))
				return NULL;
	}
	if (p->nresident)
		p->nresident--;
	return p->pool[--p->npool];
}

static void buf_put(ut_pager *p, uint8_t *b)
{
	if (pool_push(p, b))
		return; /* leaks one buffer into its slab until close */
	if (p->nframes + p->preout + p->nresident <
	    p->maxframes + PRE_SLACK + POOL_SLACK) {
		p->nresident++;
	} else {
		madvise(b, UT_PAGE_SIZE, MADV_DONTNEED);
	}
}

static uint8_t *pre_get(ut_pager *p)
{
	return buf_get(p);
}

static void pre_put(ut_pager *p, uint8_t *b)
{
	buf_put(p, b);
}

/* ---- meta helpers ---------------------------------------------------- */

static inline uint32_t meta32(ut_pager *p, int off)
{
	return ut_ld32(p->meta->pg.data + off);
}

uint32_t ut_pager_root(ut_pager *p) { return meta32(p, UT_META_ROOT); }
uint32_t ut_pager_page_count(ut_pager *p) { return meta32(p, UT_META_PAGECOUNT); }
uint32_t ut_pager_free_count(ut_pager *p) { return meta32(p, UT_META_FREECOUNT); }
const char *ut_pager_path(ut_pager *p) { return p->path; }
ut_io_counters *ut_pager_counters(ut_pager *p) { return &p->ctr; }
void ut_pager_counters_copy(ut_pager *p, ut_io_counters *out)
{
	pthread_mutex_lock(&p->mu);
	*out = p->ctr;
	pthread_mutex_unlock(&p->mu);
}
int ut_pager_protect(ut_pager *p)
{
	return p->readonly ? (int)p->last_mode : p->fl->ops->protect;
}
int ut_pager_fatal(ut_pager *p) { return fatal_now(p); }
size_t ut_pager_frames(ut_pager *p) { return p->nframes; }

size_t ut_pager_pinned(ut_pager *p)
{
	size_t n = 0;

	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->nframes; i++)
		n += p->frames[i]->valid && p->frames[i]->pin;
	pthread_mutex_unlock(&p->mu);
	return n;
}

/* ---- flushing -------------------------------------------------------- */

static int ensure_fpages(ut_pager *p, size_t n)
{
	if (n <= p->capfpages)
		return UT_OK;
	size_t c = p->capfpages ? p->capfpages : 64;
	while (c < n)
		c *= 2;
	ut_flush_page *np = realloc(p->fpages, c * sizeof(*np));
	if (!np)
		return UT_ENOMEM;
	p->fpages = np;
	p->capfpages = c;
	return UT_OK;
}

/* WAL rule: the log must be durable up to maxlsn before a page stamped
 * with it is written; for a lazy write, handed to the OS is enough
 * (sync=0).  Called by whoever holds the right to flush (flush_mu once the
 * cleaner runs, else the pool mutex). */
static int wal_rule(ut_pager *p, uint64_t maxlsn, unsigned flags)
{
	int rc;

	if (!p->hooks.log_flush_to || p->recovering || maxlsn <= p->durable_lsn)
		return UT_OK;
	if ((flags & UT_FLUSH_LAZY) && p->hooks.log_write_to) {
		if (maxlsn <= p->written_lsn)
			return UT_OK;
		rc = p->hooks.log_write_to(p->hooks.ctx, maxlsn);
		if (rc == UT_OK)
			p->written_lsn = maxlsn;
		return rc;
	}
	rc = p->hooks.log_flush_to(p->hooks.ctx, maxlsn);
	if (rc == UT_OK)
		p->durable_lsn = maxlsn;
	return rc;
}

/* A page write failed: the handle refuses writes from now on.  Its code
 * is returned once (then UT_EFATAL), as for any failed call: to the caller
 * that hit it, or -- when the cleaner thread hit it -- to the first thread
 * that waits for the cleaner, with the cleaner's detail. */
static void note_fatal(ut_pager *p, int rc)
{
	if (!fatal_now(p)) {
		snprintf(p->fatal_detail, sizeof(p->fatal_detail), "%s",
			 ut_errdetail());
		p->fatal_rc = pthread_equal(pthread_self(), p->cleaner) &&
			      p->cleaner_running ? rc : 0;
	}
	__atomic_store_n(&p->fatal, UT_EFATAL, __ATOMIC_RELEASE);
}

static int fatal_rc(ut_pager *p)
{
	int rc = p->fatal_rc ? p->fatal_rc : UT_EFATAL;

	if (p->fatal_detail[0])
		ut_set_errdetail("%s", p->fatal_detail);
	p->fatal_rc = 0;
	return rc;
}

/* Write frames fs[0..n) through the strategy; they become clean.  Used
 * where the caller itself must see the pages written (a log-less sync
 * commit); everything else goes through clean_batch. */
static int flush_frames(ut_pager *p, struct frame **fs, size_t n, unsigned flags)
{
	uint64_t maxlsn = 0;
	int rc;

	if (fatal_now(p))
		return UT_EFATAL;
	if ((rc = ensure_fpages(p, n)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		uint64_t l = ut_page_lsn(fs[i]->pg.data);
		if (l > maxlsn)
			maxlsn = l;
	}
	if ((rc = wal_rule(p, maxlsn, flags)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		ut_page_seal(fs[i]->pg.data);
		p->fpages[i].pgno = fs[i]->pg.pgno;
		p->fpages[i].buf = fs[i]->pg.data;
	}
	rc = p->fl->ops->write_pages(p->fl, p->wfile, p->fpages, n, flags);
	if (rc) {
		note_fatal(p, rc);
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		fs[i]->dirty = 0;
	return UT_OK;
}

/* ---- the page cleaner ------------------------------------------------- */

/* Above this many dirty frames the cleaner flushes in the background. */
static size_t dirty_high(const ut_pager *p)
{
	return p->maxframes / 2;
}

static int flushable(const ut_pager *p, const struct frame *f)
{
	return f->valid && f->dirty && !f->txn && !f->flushing && f != p->meta;
}

/* A frame the pending checkpoint needs and may write now: flushable, or in
 * the running transaction, whose pre-image (the last committed version,
 * newer than the checkpoint's start) is then what gets written.  Under a
 * stream of big transactions the checkpoint would otherwise wait for a
 * moment when none of its frames is in one. */
static int ckpt_flushable(const ut_pager *p, const struct frame *f)
{
	return f->ckpt && f->valid && f->dirty && !f->flushing &&
	       f != p->meta && (!f->txn || f->pre);
}

/* Up to CLEAN_BATCH flushable frames (only those the pending checkpoint
 * needs, with ckpt_only), in clock order from the eviction hand: the
 * frames eviction reaches next are cleaned first. */
static size_t pick_batch(ut_pager *p, int ckpt_only)
{
	size_t n = 0, at = p->hand < p->nframes ? p->hand : 0;

	for (size_t i = 0; i < p->nframes && n < CLEAN_BATCH;
	     i++, at = (at + 1) % p->nframes) {
		struct frame *f = p->frames[at];

		if (ckpt_only ? ckpt_flushable(p, f) : flushable(p, f))
			p->snapf[n++] = f;
	}
	return n;
}

static int by_pgno(const void *a, const void *b)
{
	uint32_t x = ((const ut_flush_page *)a)->pgno;
	uint32_t y = ((const ut_flush_page *)b)->pgno;

	return x < y ? -1 : x > y;
}

static int snap_alloc(ut_pager *p)
{
	if (p->snap)
		return UT_OK;
	if (ensure_fpages(p, CLEAN_BATCH))
		return UT_ENOMEM;
	p->snap = ut_io_alloc((size_t)CLEAN_BATCH * UT_PAGE_SIZE);
	return p->snap ? UT_OK : UT_ENOMEM;
}

/* Write one batch of dirty frames through the strategy.  The pages are
 * copied first, so the writer may change a frame while its copy is being
 * written: a frame becomes clean only if it was not written to since
 * (wgen).  With drop_lock (the cleaner thread, holding flush_mu) the pool
 * mutex is released during the I/O; inline, the caller keeps it.  *done =
 * pages written (0: nothing to flush).  Called with p->mu held. */
static int clean_batch(ut_pager *p, int ckpt_only, int drop_lock, size_t *done)
{
	unsigned flags = p->lazy && !p->ckpt_pending ? UT_FLUSH_LAZY : 0;
	uint64_t maxlsn = 0, req = p->ckpt_req;
	size_t n;
	int rc;

	*done = 0;
	if (fatal_now(p))
		return fatal_rc(p);
	if ((rc = snap_alloc(p)))
		return rc;
	n = pick_batch(p, ckpt_only);
	if (!n)
		return UT_OK;
	for (size_t i = 0; i < n; i++) {
		struct frame *f = p->snapf[i];
		uint8_t *copy = p->snap + i * (size_t)UT_PAGE_SIZE;

		memcpy(copy, f->txn ? f->pre : f->pg.data, UT_PAGE_SIZE);
		/* a pre-image is older than the frame: never mark it clean for
		 * it (the transaction may commit before the write completes) */
		p->snapgen[i] = f->txn ? f->wgen - 1 : f->wgen;
		f->flushing = 1;
		if (ut_page_lsn(copy) > maxlsn)
			maxlsn = ut_page_lsn(copy);
		p->fpages[i].pgno = f->pg.pgno;
		p->fpages[i].buf = copy;
	}
	if (drop_lock) {
		pthread_mutex_unlock(&p->mu);
		if (p->batch_hook)
			p->batch_hook(p->batch_hook_ctx);
	}
	rc = wal_rule(p, maxlsn, flags);
	if (rc == UT_OK) {
		for (size_t i = 0; i < n; i++)
			ut_page_seal((uint8_t *)p->fpages[i].buf);
		qsort(p->fpages, n, sizeof(*p->fpages), by_pgno);
		rc = p->fl->ops->write_pages(p->fl, p->wfile, p->fpages, n, flags);
	}
	if (drop_lock)
		pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < n; i++) {
		struct frame *f = p->snapf[i];

		f->flushing = 0;
		if (rc != UT_OK)
			continue;
		if (f->wgen == p->snapgen[i] && !f->txn) {
			f->dirty = 0;
			f->ckpt = 0;
		} else if (req == p->ckpt_req) {
			/* changed since the copy, but the copy is newer than
			 * the checkpoint's start: the checkpoint has its page */
			f->ckpt = 0;
		}
	}
	p->batches++;
	if (rc)
		note_fatal(p, rc);
	*done = n;
	pthread_cond_broadcast(&p->done_cv);
	return rc;
}

/* Begin a checkpoint at the last commit: mark every dirty frame as needed
 * by it and take the header image it will write, with redo start = that
 * LSN.  Taken now, under the writer's exclusion (no transaction is
 * running), the image describes the database exactly at the redo point;
 * later commits are in the log after it.  p->mu held. */
static void ckpt_request(ut_pager *p)
{
	uint8_t *h = p->ckpt_hdr;
	uint64_t redo = p->lsn;
	uint32_t clean = p->closing ? 1u : 0u, mode = (uint32_t)ut_pager_protect(p);

	for (size_t i = 0; i < p->nframes; i++) {
		struct frame *f = p->frames[i];

		f->ckpt = f->valid && f->dirty && f != p->meta;
	}
	memcpy(h, p->meta->pg.data, UT_PAGE_SIZE);
	p->ckpt_write_hdr = p->meta->dirty || ut_ld64(h + UT_META_CKPT_LSN) != redo ||
			    ut_ld64(h + UT_META_MAXLSN) != redo ||
			    ut_ld32(h + UT_META_MODE) != mode ||
			    ut_ld32(h + UT_META_CLEAN) != clean;
	ut_st64(h + UT_META_CKPT_LSN, redo);
	ut_st64(h + UT_META_MAXLSN, redo);
	ut_st32(h + UT_META_MODE, mode);
	ut_st32(h + UT_META_CLEAN, clean);
	p->ckpt_meta_gen = p->meta->wgen;
	p->ckpt_redo = redo;
	p->ckpt_pending = 1;
	p->ckpt_blocked = 0;
	p->ckpt_req++;
}

static int ckpt_frames_left(const ut_pager *p)
{
	for (size_t i = 0; i < p->nframes; i++)
		if (p->frames[i]->valid && p->frames[i]->ckpt && p->frames[i]->dirty)
			return 1;
	return 0;
}

/* The header's checkpoint fields, in the frame too, once they are durable
 * on disk.  A running transaction's pre-image gets them as well, so they
 * never differ between pre- and post-image (never logged) and a rollback
 * keeps them. */
static void meta_set_ckpt_fields(ut_pager *p)
{
	uint8_t *imgs[2] = { p->meta->pg.data, p->meta->pre };

	for (int i = 0; i < 2; i++)
		if (imgs[i])
			memcpy(imgs[i] + UT_META_CKPT_LSN, p->ckpt_hdr + UT_META_CKPT_LSN,
			       UT_META_CLEAN + 4 - UT_META_CKPT_LSN);
	if (p->meta->wgen == p->ckpt_meta_gen && !p->meta->txn)
		p->meta->dirty = 0;
}

/* Every page the checkpoint needed is written: make them durable, then
 * the log up to the redo point, then the header image on its own (it must
 * never be durable before the pages it vouches for), then let the log
 * reclaim space.  p->mu held (released during the I/O with drop_lock). */
static int finish_checkpoint(ut_pager *p, int drop_lock)
{
	ut_flush_page hp = { 0, p->ckpt_hdr };
	uint64_t redo = p->ckpt_redo;
	int rc;

	if (drop_lock)
		pthread_mutex_unlock(&p->mu);
	rc = p->fl->ops->write_pages(p->fl, p->wfile, NULL, 0, UT_FLUSH_DURABLE);
	if (rc == UT_OK)
		rc = wal_rule(p, redo, 0);
	if (rc == UT_OK && p->ckpt_write_hdr) {
		ut_page_seal(p->ckpt_hdr);
		rc = p->fl->ops->write_pages(p->fl, p->wfile, &hp, 1, UT_FLUSH_DURABLE);
	}
	if (drop_lock)
		pthread_mutex_lock(&p->mu);
	if (rc == UT_OK)
		meta_set_ckpt_fields(p);
	if (rc == UT_OK && p->hooks.log_checkpoint_done) {
		if (drop_lock)
			pthread_mutex_unlock(&p->mu);
		rc = p->hooks.log_checkpoint_done(p->hooks.ctx, redo);
		if (drop_lock)
			pthread_mutex_lock(&p->mu);
	}
	if (rc)
		note_fatal(p, rc);
	else
		p->checkpoints++;
	p->ckpt_pending = 0;
	p->ckpt_rc = rc;
	p->ckpt_done = p->ckpt_req;
	pthread_cond_broadcast(&p->done_cv);
	return rc;
}

/* The checkpoint, run to its end by the calling thread (no cleaner
 * thread).  p->mu held throughout. */
static int run_checkpoint_here(ut_pager *p)
{
	size_t n;
	int rc;

	do {
		rc = clean_batch(p, 1, 0, &n);
	} while (rc == UT_OK && n);
	if (rc) {
		p->ckpt_pending = 0;
		return rc;
	}
	return finish_checkpoint(p, 0);
}

static size_t count_dirty(const ut_pager *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nframes; i++)
		n += flushable(p, p->frames[i]);
	return n;
}

static int cleaner_has_work(const ut_pager *p)
{
	if (fatal_now(p) || p->cleaner_stop)
		return 0;
	return p->waiters || (p->ckpt_pending && !p->ckpt_blocked) ||
	       p->ndirty_est > dirty_high(p);
}

/* One unit of the cleaner's work: a batch of the pending checkpoint, or
 * its end; else a batch for a waiting thread or over the dirty mark.  The
 * checkpoint goes first: under steady eviction pressure it would otherwise
 * never end, and until it does the log cannot be reclaimed and, with
 * sync=0, no batch may skip the protection copy.  Its batches free frames
 * as well.  When it waits for a transaction (blocked), evictions go on.
 * flush_mu and p->mu held. */
static void cleaner_step(ut_pager *p)
{
	size_t n, dirty = count_dirty(p);
	int pressed = p->waiters || dirty > dirty_high(p);

	p->ndirty_est = dirty;
	if (p->ckpt_pending && !(p->ckpt_blocked && pressed)) {
		if (clean_batch(p, 1, 1, &n) != UT_OK || n)
			return;
		if (ckpt_frames_left(p))
			p->ckpt_blocked = 1; /* in a transaction: end_txn wakes us */
		else
			finish_checkpoint(p, 1);
		return;
	}
	if (pressed && clean_batch(p, 0, 1, &n) == UT_OK && n == 0) {
		/* nothing flushable: let waiters look again */
		p->batches++;
		p->ndirty_est = 0;
		pthread_cond_broadcast(&p->done_cv);
	}
}

static void *cleaner_main(void *arg)
{
	ut_pager *p = arg;

	pthread_mutex_lock(&p->mu);
	while (!p->cleaner_stop) {
		if (!cleaner_has_work(p)) {
			pthread_cond_wait(&p->work_cv, &p->mu);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		pthread_mutex_lock(&p->flush_mu);
		pthread_mutex_lock(&p->mu);
		cleaner_step(p);
		pthread_mutex_unlock(&p->flush_mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Is there (or can there now be) a cleaner thread?  Never during redo
 * (the log hooks are off and redo runs without the pool mutex), for a
 * read-only handle, or when the caller asked for inline flushing.
 * p->mu held. */
static int cleaner_usable(ut_pager *p)
{
	if (p->cleaner_running)
		return 1;
	if (p->cleaner_inline || p->recovering || p->readonly || fatal_now(p))
		return 0;
	if (snap_alloc(p))
		return 0;
	p->cleaner_stop = 0;
	if (pthread_create(&p->cleaner, NULL, cleaner_main, p)) {
		p->cleaner_inline = 1; /* no thread to be had: flush inline */
		return 0;
	}
	p->cleaner_running = 1;
	return 1;
}

static void stop_cleaner(ut_pager *p)
{
	if (!p->cleaner_running)
		return;
	pthread_mutex_lock(&p->mu);
	p->cleaner_stop = 1;
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->cleaner, NULL);
	p->cleaner_running = 0;
}

/* No frame is clean and evictable: have some written.  With the cleaner
 * thread, wait for its next batch (the pool mutex is released meanwhile);
 * inline, write a batch here.  p->mu held. */
static int make_clean(ut_pager *p)
{
	size_t n;

	if (cleaner_usable(p)) {
		uint64_t b = p->batches;

		p->waiters++;
		p->frame_waits++;
		pthread_cond_signal(&p->work_cv);
		while (p->batches == b && !fatal_now(p))
			pthread_cond_wait(&p->done_cv, &p->mu);
		p->waiters--;
		return fatal_now(p) ? fatal_rc(p) : UT_OK;
	}
	return clean_batch(p, 0, 0, &n);
}

/* ---- frames ---------------------------------------------------------- */

static struct frame *new_frame(ut_pager *p)
{
	struct frame *f;

	if (p->nframes == p->capframes) {
		size_t c = p->capframes ? p->capframes * 2 : 64;
		struct frame **nf = realloc(p->frames, c * sizeof(*nf));
		if (!nf)
			return NULL;
		p->frames = nf;
		p->capframes = c;
	}
	if (p->nframes >= p->nbuckets && hgrow(p))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->pg.data = buf_get(p);
	if (!f->pg.data) {
		free(f);
		return NULL;
	}
	p->frames[p->nframes++] = f;
	return f;
}

/* One more frame, past the bound if need be. */
static int grow(ut_pager *p, struct frame **out, size_t *idx)
{
	*out = new_frame(p);
	if (!*out)
		return UT_ENOMEM;
	*idx = p->nframes - 1;
	return UT_OK;
}

/* Clock sweep for a clean frame nobody uses; 0 if there is none. */
static int sweep(ut_pager *p, size_t *vidx)
{
	for (size_t step = 0; step < 2 * p->nframes + 1; step++) {
		struct frame *f = p->frames[p->hand];
		size_t at = p->hand;

		p->hand = (p->hand + 1) % p->nframes;
		if (!f->valid) {
			*vidx = at;
			return 1;
		}
		if (f->pin || f->txn)
			continue;
		if (f->ref) {
			f->ref = 0;
			continue;
		}
		if (!f->dirty) {
			*vidx = at;
			return 1;
		}
	}
	return 0;
}

/* Could writing pages free a frame?  (A dirty frame that is neither
 * pinned nor in the transaction, maybe being written right now.) */
static int dirty_evictable(const ut_pager *p)
{
	for (size_t i = 0; i < p->nframes; i++) {
		const struct frame *f = p->frames[i];

		if (f->valid && f->dirty && !f->pin && !f->txn && f != p->meta)
			return 1;
	}
	return 0;
}

/* A frame to load a page into (not in the hash, not valid), and its index
 * in p->frames.  Frames plus the transaction's pre-images stay within the
 * bound while anything is evictable: a clean frame is reused; when every
 * candidate is dirty, pages are written first (make_clean: the cleaner
 * thread's next batch, or inline) unless !may_wait.  Called with p->mu
 * held. */
static int get_frame_idx(ut_pager *p, struct frame **out, size_t *idx,
			 int may_wait)
{
	struct frame *victim;
	size_t vidx;
	int rc;

	for (;;) {
		/* Below the bound, or every frame but page 0 belongs to the
		 * running transaction (nothing evictable): a new frame. */
		if (p->nframes + pre_charged(p) < p->maxframes ||
		    p->ntx + 1 >= p->nframes)
			return grow(p, out, idx);
		if (sweep(p, &vidx))
			break;
		if (!dirty_evictable(p))
			return grow(p, out, idx); /* all pinned or in the txn */
		if (!may_wait)
			return UT_EBUSY;
		if ((rc = make_clean(p)))
			return rc;
	}
	victim = p->frames[vidx];
	if (victim->valid)
		hremove(p, victim);
	victim->valid = 0;
	victim->ckpt = 0;
	*out = victim;
	*idx = vidx;
	return UT_OK;
}

static int get_frame(ut_pager *p, struct frame **out)
{
	size_t idx;

	return get_frame_idx(p, out, &idx, 1);
}

/* Over the bound (pre-images count): free one clean evictable frame, if
 * one is at hand without writing anything. */
static void drop_one(ut_pager *p)
{
	struct frame *f;
	size_t idx;

	if (p->ntx + 1 >= p->nframes || get_frame_idx(p, &f, &idx, 0))
		return;
	p->frames[idx] = p->frames[--p->nframes];
	if (p->hand >= p->nframes)
		p->hand = 0;
	buf_put(p, f->pg.data);
	free(f);
}

static int read_page(ut_pager *p, uint32_t pgno, uint8_t *buf)
{
	int64_t n = ut_file_read(p->rfile, buf, UT_PAGE_SIZE,
				 (uint64_t)pgno * UT_PAGE_SIZE);

	if (n < 0)
		return (int)n;
	p->ctr.page_reads++;
	if (n != UT_PAGE_SIZE) {
		ut_set_errdetail("%s: page %u: short read (%lld bytes): file truncated",
				 p->path, pgno, (long long)n);
		return UT_ECORRUPT;
	}
	return ut_page_verify(buf, pgno, p->path);
}

int ut_pager_get(ut_pager *p, uint32_t pgno, ut_pg **out)
{
	struct frame *f;
	int rc;

	if (__atomic_load_n(&p->poisoned, __ATOMIC_ACQUIRE))
		return UT_EFATAL;
	pthread_mutex_lock(&p->mu);
	f = hfind(p, pgno);
	if (f) {
		f->pin++;
		f->ref = 1;
		pthread_mutex_unlock(&p->mu);
		*out = &f->pg;
		return UT_OK;
	}
	if (pgno == 0 || pgno >= ut_pager_page_count(p)) {
		pthread_mutex_unlock(&p->mu);
		ut_set_errdetail("%s: page %u: reference beyond the page count %u",
				 p->path, pgno, ut_pager_page_count(p));
		return UT_ECORRUPT;
	}
	rc = get_frame(p, &f);
	if (rc) {
		pthread_mutex_unlock(&p->mu);
		return rc;
	}
	rc = read_page(p, pgno, f->pg.data);
	if (rc) {
		if (rc == UT_ECORRUPT)
			p->ctr.corrupt_pages++;
		memset(f->pg.data, 0, UT_PAGE_SIZE); /* never hand it out */
		pthread_mutex_unlock(&p->mu);
		return rc;
	}
	f->pg.pgno = pgno;
	f->valid = 1;
	f->dirty = f->txn = f->predirty = 0;
	f->pin = 1;
	f->ref = 1;
	hinsert(p, f);
	pthread_mutex_unlock(&p->mu);
	*out = &f->pg;
	return UT_OK;
}

void ut_pager_release(ut_pager *p, ut_pg *pg)
{
	struct frame *f = (struct frame *)pg;

	if (!pg)
		return;
	pthread_mutex_lock(&p->mu);
	if (f->pin)
		f->pin--;
	pthread_mutex_unlock(&p->mu);
}

static int tx_add(ut_pager *p, struct frame *f)
{
	if (p->ntx == p->captx) {
		size_t c = p->captx ? p->captx * 2 : 64;
		struct frame **nt = realloc(p->tx, c * sizeof(*nt));
		if (!nt)
			return UT_ENOMEM;
		p->tx = nt;
		p->captx = c;
	}
	p->tx[p->ntx++] = f;
	return UT_OK;
}

static int write_locked(ut_pager *p, struct frame *f)
{
	if (f->txn)
		return UT_OK;
	if (!p->in_txn)
		return UT_EINVAL;
	f->pre = pre_get(p);
	if (!f->pre)
		return UT_ENOMEM;
	if (tx_add(p, f)) {
		pre_put(p, f->pre);
		f->pre = NULL;
		return UT_ENOMEM;
	}
	memcpy(f->pre, f->pg.data, UT_PAGE_SIZE);
	f->touched = 0;
	f->predirty = f->dirty;
	f->txn = 1;
	f->dirty = 1;
	f->wgen++;
	p->preout++;
	if (p->nframes + pre_charged(p) > p->maxframes && p->nframes > 1)
		drop_one(p);
	return UT_OK;
}

int ut_pager_write_tracked(ut_pager *p, ut_pg *pg, uint64_t **touched)
{
	struct frame *f = (struct frame *)pg;
	int rc;

	*touched = f->pre || !f->txn ? &f->touched : NULL;
	if (f->txn)
		return UT_OK;
	if (fatal_now(p))
		return UT_EFATAL;
	pthread_mutex_lock(&p->mu);
	rc = write_locked(p, f);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int ut_pager_write(ut_pager *p, ut_pg *pg)
{
	uint64_t *touched;
	int rc = ut_pager_write_tracked(p, pg, &touched);

	if (!rc && touched)
		*touched = ~0ull;
	return rc;
}

static int meta_write(ut_pager *p)
{
	return ut_pager_write(p, &p->meta->pg);
}

int ut_pager_set_root(ut_pager *p, uint32_t root)
{
	int rc = meta_write(p);

	if (!rc)
		ut_st32(p->meta->pg.data + UT_META_ROOT, root);
	return rc;
}

int ut_pager_alloc(ut_pager *p, int type, ut_pg **out)
{
	uint32_t head = meta32(p, UT_META_FREEHEAD);
	struct frame *f;
	ut_pg *pg;
	int rc;

	if ((rc = meta_write(p)))
		return rc;
	if (head) {
		uint32_t left = meta32(p, UT_META_FREECOUNT), next;

		if (left == 0) {
			ut_set_errdetail("%s: page 0: free-list head %u, but the free "
					 "count is 0", p->path, head);
			return UT_ECORRUPT;
		}
		if ((rc = ut_pager_get(p, head, &pg)))
			return rc;
		/* a page popped before is no longer free: a cycle ends here */
		if (ut_page_type(pg->data) != UT_PT_FREE) {
			ut_set_errdetail("%s: page %u: on the free list but of type %d",
					 p->path, head, ut_page_type(pg->data));
			ut_pager_release(p, pg);
			return UT_ECORRUPT;
		}
		next = ut_page_right(pg->data);
		if ((left == 1) != (next == 0)) {
			ut_set_errdetail("%s: page %u: free-list next pointer %u, with "
					 "%u free pages counted", p->path, head, next,
					 left);
			ut_pager_release(p, pg);
			return UT_ECORRUPT;
		}
		if ((rc = ut_pager_write(p, pg))) {
			ut_pager_release(p, pg);
			return rc;
		}
		ut_st32(p->meta->pg.data + UT_META_FREEHEAD, ut_page_right(pg->data));
		ut_st32(p->meta->pg.data + UT_META_FREECOUNT,
			meta32(p, UT_META_FREECOUNT) - 1);
		ut_page_init(pg->data, head, type);
		*out = pg;
		return UT_OK;
	}
	uint32_t pgno = meta32(p, UT_META_PAGECOUNT);
	if (pgno == UINT32_MAX) {
		ut_set_errdetail("%s: database full (2^32 pages)", p->path);
		return UT_ENOSPC;
	}
	pthread_mutex_lock(&p->mu);
	rc = get_frame(p, &f);
	if (!rc && (rc = tx_add(p, f)))
		f->valid = 0;
	if (rc) {
		pthread_mutex_unlock(&p->mu);
		return rc;
	}
	ut_page_init(f->pg.data, pgno, type);
	f->pg.pgno = pgno;
	f->pre = NULL; /* new to the file */
	f->touched = ~0ull;
	f->valid = 1;
	f->txn = f->dirty = 1;
	f->wgen++;
	f->predirty = 0;
	f->pin = 1;
	f->ref = 1;
	hinsert(p, f);
	pthread_mutex_unlock(&p->mu);
	ut_st32(p->meta->pg.data + UT_META_PAGECOUNT, pgno + 1);
	*out = &f->pg;
	return UT_OK;
}

int ut_pager_free(ut_pager *p, ut_pg *pg)
{
	int rc;

	if ((rc = meta_write(p)) || (rc = ut_pager_write(p, pg))) {
		ut_pager_release(p, pg);
		return rc;
	}
	ut_page_init(pg->data, pg->pgno, UT_PT_FREE);
	ut_page_set_right(pg->data, meta32(p, UT_META_FREEHEAD));
	ut_st32(p->meta->pg.data + UT_META_FREEHEAD, pg->pgno);
	ut_st32(p->meta->pg.data + UT_META_FREECOUNT, meta32(p, UT_META_FREECOUNT) + 1);
	ut_pager_release(p, pg);
	return UT_OK;
}

/* ---- transactions ---------------------------------------------------- */

int ut_pager_begin(ut_pager *p)
{
	if (p->readonly) {
		ut_set_errdetail("%s: opened read-only", p->path);
		return UT_EREADONLY;
	}
	if (fatal_now(p))
		return fatal_rc(p);
	if (p->in_txn)
		return UT_EBUSY;
	p->in_txn = 1;
	p->ntx = 0;
	return UT_OK;
}

/* Free frames beyond the bound once the transaction no longer pins them.
 * Inline, dirty ones are written first; the cleaner thread cleans them in
 * its own time, and a later shrink frees them. */
static void shrink(ut_pager *p)
{
	struct frame *batch[EVICT_BATCH];
	size_t nb = 0;

	if (p->nframes <= p->maxframes)
		return;
	for (size_t i = 0; i < p->nframes && !p->cleaner_running; i++) {
		struct frame *f = p->frames[i];
		if (f->valid && f->dirty && !f->pin && !f->txn)
			batch[nb++] = f;
		if (nb == EVICT_BATCH || (nb && i + 1 == p->nframes)) {
			int rc = flush_frames(p, batch, nb, 0);

			if (rc) {
				/* no caller to return it to: the next one */
				p->fatal_rc = rc;
				return;
			}
			nb = 0;
		}
	}
	for (size_t i = 0; i < p->nframes && p->nframes > p->maxframes;) {
		struct frame *f = p->frames[i];
		if (!f->valid || (!f->pin && !f->txn && !f->dirty)) {
			if (f->valid)
				hremove(p, f);
			p->frames[i] = p->frames[--p->nframes];
			buf_put(p, f->pg.data);
			free(f);
		} else {
			i++;
		}
	}
	p->hand = 0;
}

static void end_txn(ut_pager *p, int restore)
{
	for (size_t i = 0; i < p->ntx; i++) {
		struct frame *f = p->tx[i];
		if (restore) {
			if (f->pre) {
				memcpy(f->pg.data, f->pre, UT_PAGE_SIZE);
				f->dirty = f->predirty;
			} else {
				hremove(p, f);
				f->valid = 0;
				f->dirty = 0;
				f->pin = 0;
			}
		}
		if (f->pre) {
			p->preout--;
			pre_put(p, f->pre);
		}
		f->pre = NULL;
		f->txn = 0;
	}
	if (p->cleaner_running) {
		p->ndirty_est += p->ntx;
		if (p->ckpt_blocked || p->ndirty_est > dirty_high(p)) {
			p->ckpt_blocked = 0;
			pthread_cond_signal(&p->work_cv);
		}
	}
	p->ntx = 0;
	p->in_txn = 0;
	shrink(p);
}

void ut_pager_rollback(ut_pager *p)
{
	if (!p->in_txn)
		return;
	pthread_mutex_lock(&p->mu);
	end_txn(p, 1);
	pthread_mutex_unlock(&p->mu);
}

#ifdef UT_CHECK_TOUCHED
/* A tracked writer that changed a byte it did not record would leave that
 * change out of the log: stop the (test) program at once. */
static void check_touched(const struct frame *f)
{
	for (unsigned i = 0; f->pre && i < UT_PAGE_SIZE; i++) {
		int stamped = i < 4 || (i >= 8 && i < 16); /* crc, lsn */

		if (!stamped && !(f->touched >> (i / UT_TOUCH_BLOCK) & 1) &&
		    f->pre[i] != f->pg.data[i]) {
			fprintf(stderr, "untorn: page %u: byte %u changed outside "
				"the blocks its writer recorded\n", f->pg.pgno, i);
			abort();
		}
	}
}
#else
static void check_touched(const struct frame *f) { (void)f; }
#endif

int ut_pager_commit(ut_pager *p, int sync)
{
	/* (flush_mu whether or not a cleaner runs yet: a reader may start
	 * one at any moment) */
	int sync_flush = sync && !p->hooks.log_commit;
	uint64_t lsn;
	int rc = UT_OK;

	if (!p->in_txn)
		return UT_EINVAL;
	/* A log-less sync commit writes pages itself: no cleaner batch may
	 * be in flight meanwhile (it could land an older copy after it). */
	if (sync_flush)
		pthread_mutex_lock(&p->flush_mu);
	pthread_mutex_lock(&p->mu);
	if (p->ntx == 0)
		goto done;
	if (p->hooks.log_commit) {
		ut_log_page *lp = realloc(p->logpages, p->ntx * sizeof(*lp));
		if (!lp) {
			rc = UT_ENOMEM;
			goto fail;
		}
		p->logpages = lp;
		for (size_t i = 0; i < p->ntx; i++) {
			lp[i].pgno = p->tx[i]->pg.pgno;
			lp[i].pre = p->tx[i]->pre;
			lp[i].post = p->tx[i]->pg.data;
			lp[i].touched = p->tx[i]->touched;
			check_touched(p->tx[i]);
		}
		/* The hook appends; durability (sync) is the caller's
		 * business outside the writer lock (group commit). */
		rc = p->hooks.log_commit(p->hooks.ctx, lp, p->ntx, sync, &lsn);
		if (rc)
			goto fail;
	} else {
		lsn = p->lsn + 1;
	}
	p->lsn = lsn;
	for (size_t i = 0; i < p->ntx; i++)
		ut_page_set_lsn(p->tx[i]->pg.data, lsn);
	if (sync_flush) {
		/* No log yet: make the transaction's pages durable in place.
		 * Not crash-atomic across pages -- the WAL will make it so. */
		rc = flush_frames(p, p->tx, p->ntx, UT_FLUSH_DURABLE);
		if (rc)
			goto fail;
	}
done:
	end_txn(p, 0);
	pthread_mutex_unlock(&p->mu);
	if (sync_flush)
		pthread_mutex_unlock(&p->flush_mu);
	return UT_OK;
fail:
	end_txn(p, 1);
	pthread_mutex_unlock(&p->mu);
	if (sync_flush)
		pthread_mutex_unlock(&p->flush_mu);
	return rc;
}

/* ---- checkpoint, open, close ---------------------------------------- */

static int ckpt_check(ut_pager *p)
{
	if (p->in_txn)
		return UT_EBUSY;
	if (p->readonly) {
		ut_set_errdetail("%s: opened read-only", p->path);
		return UT_EREADONLY;
	}
	return fatal_now(p) ? fatal_rc(p) : UT_OK;
}

/* Checkpoint order: (1) every page dirty at the last commit (p->lsn)
 * written through the strategy, each batch after the log is durable up to
 * its pages' LSNs, then made durable, (2) the log durable up to p->lsn,
 * (3) the header image taken at the start, with redo_lsn = p->lsn (and
 * max LSN, mode, clean flag), DURABLE, as a separate write so it can never
 * be durable before the pages it vouches for, (4)
 * hooks.log_checkpoint_done(redo_lsn).  With the cleaner thread it does
 * the work and this waits; without one, this thread does it. */
int ut_pager_checkpoint(ut_pager *p)
{
	uint64_t gen;
	int rc;

	if ((rc = ckpt_check(p)))
		return rc;
	pthread_mutex_lock(&p->mu);
	if (!p->cleaner_running) {
		ckpt_request(p);
		rc = run_checkpoint_here(p);
		pthread_mutex_unlock(&p->mu);
		return rc;
	}
	while (p->ckpt_pending && !fatal_now(p))
		pthread_cond_wait(&p->done_cv, &p->mu);
	if (!fatal_now(p)) {
		ckpt_request(p);
		gen = p->ckpt_req;
		pthread_cond_signal(&p->work_cv);
		while (p->ckpt_done < gen && !fatal_now(p))
			pthread_cond_wait(&p->done_cv, &p->mu);
	}
	rc = fatal_now(p) ? fatal_rc(p) : p->ckpt_rc;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int ut_pager_checkpoint_async(ut_pager *p, int *started)
{
	int rc;

	*started = 0;
	if ((rc = ckpt_check(p)))
		return rc;
	pthread_mutex_lock(&p->mu);
	if (!cleaner_usable(p)) {
		pthread_mutex_unlock(&p->mu);
		*started = 1;
		return ut_pager_checkpoint(p);
	}
	if (!p->ckpt_pending) {
		ckpt_request(p);
		*started = 1;
		pthread_cond_signal(&p->work_cv);
	}
	pthread_mutex_unlock(&p->mu);
	return UT_OK;
}

void ut_pager_set_batch_hook(ut_pager *p, void (*hook)(void *), void *ctx)
{
	pthread_mutex_lock(&p->mu);
	p->batch_hook = hook;
	p->batch_hook_ctx = ctx;
	pthread_mutex_unlock(&p->mu);
}

void ut_pager_cleaner_stats(ut_pager *p, uint64_t *batches, uint64_t *checkpoints,
			    uint64_t *waits)
{
	pthread_mutex_lock(&p->mu);
	*batches = p->batches;
	*checkpoints = p->checkpoints;
	*waits = p->frame_waits;
	pthread_mutex_unlock(&p->mu);
}

size_t ut_pager_dirty_frames(ut_pager *p)
{
	size_t n = 0;

	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->nframes; i++)
		n += p->frames[i]->valid && p->frames[i]->dirty;
	pthread_mutex_unlock(&p->mu);
	return n;
}

uint64_t ut_pager_lsn(ut_pager *p) { return p->lsn; }
uint64_t ut_pager_redo_lsn(ut_pager *p)
{
	return ut_ld64(p->meta->pg.data + UT_META_CKPT_LSN);
}
uint64_t ut_pager_header_max_lsn(ut_pager *p)
{
	uint64_t a = ut_ld64(p->meta->pg.data + UT_META_CKPT_LSN),
		 b = ut_ld64(p->meta->pg.data + UT_META_MAXLSN);
	return a > b ? a : b;
}
void ut_pager_set_lsn(ut_pager *p, uint64_t lsn)
{
	if (lsn > p->lsn)
		p->lsn = lsn;
	if (lsn > p->durable_lsn)
		p->durable_lsn = lsn;
}
void ut_pager_set_fatal(ut_pager *p, int poison_reads)
{
	pthread_mutex_lock(&p->mu);
	__atomic_store_n(&p->fatal, UT_EFATAL, __ATOMIC_RELEASE);
	if (poison_reads)
		__atomic_store_n(&p->poisoned, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->mu);
}
int ut_pager_poisoned(ut_pager *p)
{
	return __atomic_load_n(&p->poisoned, __ATOMIC_ACQUIRE);
}
int ut_pager_created(ut_pager *p) { return p->created; }
static int dw_name(const char *path, char **out);

int ut_pager_was_clean(ut_pager *p) { return !p->created && p->last_clean; }

/* Raise *max to the LSN of every page of f that passes its checksum: pages
 * in place (off 0, stride one page) or double-write copies. */
static int max_lsn_in(ut_file *f, uint64_t first, uint64_t stride,
		      uint64_t count, uint8_t *buf, uint64_t *max, uint64_t *where)
{
	for (uint64_t i = 0; i < count; i++) {
		int64_t n = ut_file_read(f, buf, UT_PAGE_SIZE, first + i * stride);

		if (n < 0)
			return (int)n;
		if (n == UT_PAGE_SIZE && ut_page_checksum_ok(buf) &&
		    ut_page_lsn(buf) > *max) {
			*max = ut_page_lsn(buf);
			*where = i;
		}
	}
	return UT_OK;
}

int ut_pager_max_page_lsn(ut_pager *p, uint64_t *max, char *what, size_t wn)
{
	uint8_t *buf = ut_io_alloc(UT_PAGE_SIZE);
	uint64_t size, dmax = 0, dpg = 0, cmax = 0, cslot = 0;
	ut_file *dw = NULL;
	char *dwpath = NULL;
	int rc;

	*max = 0;
	if (!buf)
		return UT_ENOMEM;
	rc = ut_file_size(p->rfile, &size);
	if (rc == UT_OK)
		rc = max_lsn_in(p->rfile, 0, UT_PAGE_SIZE, size / UT_PAGE_SIZE, buf,
				&dmax, &dpg);
	if (rc == UT_OK)
		rc = dw_name(p->path, &dwpath);
	if (rc == UT_OK && p->vfs->exists(p->vfs, dwpath) == 1 &&
	    p->vfs->open(p->vfs, dwpath, UT_OPEN_RDONLY, &dw) == UT_OK) {
		if ((rc = ut_file_size(dw, &size)) == UT_OK && size > UT_DW_HDR) {
			uint64_t slots = (size - UT_DW_HDR) / UT_DW_SLOT_BYTES;

			rc = max_lsn_in(dw, UT_DW_SLOT_OFF(0) + UT_DW_HDR,
					UT_DW_SLOT_BYTES,
					slots > UT_DW_SLOTS ? UT_DW_SLOTS : slots, buf,
					&cmax, &cslot);
		}
		ut_file_close(dw);
	}
	if (rc == UT_OK && dmax >= cmax) {
		*max = dmax;
		snprintf(what, wn, "page %llu of %s", (unsigned long long)dpg,
			 p->path);
	} else if (rc == UT_OK) {
		*max = cmax;
		snprintf(what, wn, "the copy in slot %llu of %s",
			 (unsigned long long)cslot, dwpath);
	}
	free(dwpath);
	free(buf);
	return rc;
}
ut_file *ut_pager_file(ut_pager *p) { return p->wfile; }
const char *ut_pager_direct_note(ut_pager *p)
{
	if (p->wfile != p->file)
		return "page writes go through the OS page cache (only atomic "
		       "writes need O_DIRECT), made durable by fdatasync";
	return ut_file_direct_note(p->file);
}
ut_file *ut_pager_read_file(ut_pager *p) { return p->rfile; }
const char *ut_pager_protect_reason(ut_pager *p)
{
	return p->readonly ? "read-only open: no page writes (the mode is the "
			     "one the database last ran in)" : p->fl->reason;
}
int ut_pager_readonly(ut_pager *p) { return p->readonly; }

/* ---- redo (recovery) -------------------------------------------------- */

void ut_pager_set_hooks(ut_pager *p, const ut_log_hooks *hooks)
{
	if (hooks)
		p->hooks = *hooks;
	else
		memset(&p->hooks, 0, sizeof(p->hooks));
}

int ut_pager_redo_begin(ut_pager *p)
{
	if (p->in_txn)
		return UT_EBUSY;
	p->recovering = 1;
	p->ntx = 0;
	return UT_OK;
}

/* The transaction being replayed is complete: stamp its LSN on the pages it
 * changed; they become ordinary dirty (evictable) frames.  A log record
 * whose checksum passes may still carry bytes that break a page, or name a
 * page the database does not have: each page is checked whole
 * (ut_page_check) as a page read from the file is, and against the page
 * count the header has after the transaction. */
static int redo_finish_txn(ut_pager *p)
{
	int rc = UT_OK;

	for (size_t i = 0; i < p->ntx; i++) {
		struct frame *f = p->tx[i];
		ut_page_set_lsn(f->pg.data, p->lsn);
		f->txn = 0;
		if (rc == UT_OK)
			rc = ut_page_check(f->pg.data, f->pg.pgno, p->path);
		/* a committed transaction's pages are all below its page count */
		if (rc == UT_OK && f->pg.pgno >= meta32(p, UT_META_PAGECOUNT)) {
			ut_set_errdetail("%s: page %u: changed by the log record of "
					 "LSN %llu, beyond the page count %u", p->path,
					 f->pg.pgno, (unsigned long long)p->lsn,
					 meta32(p, UT_META_PAGECOUNT));
			rc = UT_ECORRUPT;
		}
	}
	p->ntx = 0;
	return rc;
}

static int all_zero(const uint8_t *b)
{
	for (size_t i = 0; i < UT_PAGE_SIZE; i++)
		if (b[i])
			return 0;
	return 1;
}

/* The frame of pgno as the data file has it (a page beyond the end of the
 * file, or never written -- all zeroes -- is a zero page, LSN 0).  p->mu held. */
static int redo_get(ut_pager *p, uint32_t pgno, struct frame **out)
{
	struct frame *f = hfind(p, pgno);
	int64_t n;
	int rc;

	if (f) {
		*out = f;
		return UT_OK;
	}
	if ((rc = get_frame(p, &f)))
		return rc;
	n = ut_file_read(p->rfile, f->pg.data, UT_PAGE_SIZE,
			 (uint64_t)pgno * UT_PAGE_SIZE);
	if (n < 0)
		return (int)n;
	p->ctr.page_reads++;
	if (n < (int64_t)UT_PAGE_SIZE && n > 0 && pgno >= p->durable_pages)
		n = 0; /* a torn extension: redo rebuilds it whole */
	if (n < (int64_t)UT_PAGE_SIZE)
		memset(f->pg.data + n, 0, UT_PAGE_SIZE - (size_t)n);
	if (!all_zero(f->pg.data) &&
	    (rc = ut_page_verify(f->pg.data, pgno, p->path)) != UT_OK) {
		p->ctr.corrupt_pages++;
		memset(f->pg.data, 0, UT_PAGE_SIZE);
		return rc;
	}
	f->pg.pgno = pgno;
	f->valid = 1;
	f->dirty = f->txn = f->predirty = 0;
	f->pin = 0;
	f->ref = 1;
	f->pre = NULL;
	hinsert(p, f);
	*out = f;
	return UT_OK;
}

int ut_pager_redo(ut_pager *p, uint64_t lsn, uint32_t pgno, uint32_t off,
		  uint32_t len, const void *data)
{
	struct frame *f = NULL;
	int rc;

	if (!p->recovering || off + (uint64_t)len > UT_PAGE_SIZE)
		return UT_EINVAL;
	/* No pool mutex: redo runs inside ut_wal_recover (under the log's
	 * mutex) at open, before the handle exists for any other thread;
	 * taking p->mu here would invert the p->mu -> log order of commit. */
	if (lsn != p->lsn) {
		if ((rc = redo_finish_txn(p)))
			return rc;
		if (lsn > p->lsn)
			p->lsn = lsn;
	}
	rc = redo_get(p, pgno, &f);
	if (rc)
		goto out;
	/* The page LSN is the one read from the file: deltas never cover the
	 * LSN field, and the LSN is stamped only when the transaction ends. */
	if (ut_page_lsn(f->pg.data) < lsn) {
		if (!f->txn) {
			if ((rc = tx_add(p, f)))
				goto out;
			f->txn = 1;
		}
		memcpy(f->pg.data + off, data, len);
		f->dirty = 1;
	}
out:
	return rc;
}

int ut_pager_redo_end(ut_pager *p)
{
	int rc;

	pthread_mutex_lock(&p->mu);
	rc = redo_finish_txn(p);
	p->recovering = 0;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

static void pager_free_all(ut_pager *p)
{
	stop_cleaner(p);
	free(p->snap);
	free(p->ckpt_hdr);
	pthread_cond_destroy(&p->work_cv);
	pthread_cond_destroy(&p->done_cv);
	pthread_mutex_destroy(&p->flush_mu);
	for (size_t i = 0; i < p->nframes; i++)
		free(p->frames[i]);
	for (size_t i = 0; i < p->nslabs; i++)
		munmap(p->slabs[i], (size_t)SLAB_PAGES * UT_PAGE_SIZE);
	free(p->slabs);
	free(p->pool);
	free(p->frames);
	free(p->buckets);
	free(p->tx);
	free(p->logpages);
	free(p->fpages);
	ut_flusher_destroy(p->fl);
	if (p->rfile != p->file)
		ut_file_close(p->rfile);
	ut_file_close(p->file);
	pthread_mutex_destroy(&p->mu);
	free(p->path);
	free(p);
}

int ut_pager_close(ut_pager *p)
{
	int rc = UT_OK;

	if (!p)
		return UT_OK;
	if (p->in_txn)
		ut_pager_rollback(p);
	p->closing = 1;
	if (p->readonly)
		rc = UT_OK; /* nothing was changed, nothing is written */
	else
		rc = fatal_now(p) ? UT_EFATAL : ut_pager_checkpoint(p);
	stop_cleaner(p);
	if (rc)
		ut_set_errdetail("%s: close: dirty pages could not be written (%s)",
				 p->path, ut_strerror(rc));
	pager_free_all(p);
	return rc;
}

static int dw_name(const char *path, char **out)
{
	size_t n = strlen(path);
	char *s = malloc(n + sizeof(UT_DW_SUFFIX));

	if (!s)
		return UT_ENOMEM;
	memcpy(s, path, n);
	memcpy(s + n, UT_DW_SUFFIX, sizeof(UT_DW_SUFFIX));
	*out = s;
	return UT_OK;
}

static void init_meta(uint8_t *m, int mode)
{
	ut_page_init(m, 0, UT_PT_META);
	memcpy(m + UT_META_MAGIC, UT_MAGIC, 8);
	ut_st32(m + UT_META_VERSION, UT_FORMAT_VERSION);
	ut_st32(m + UT_META_PAGESIZE, UT_PAGE_SIZE);
	ut_st32(m + UT_META_ROOT, 1);
	ut_st32(m + UT_META_FREEHEAD, 0);
	ut_st32(m + UT_META_PAGECOUNT, 2);
	ut_st32(m + UT_META_FREECOUNT, 0);
	ut_st64(m + UT_META_CKPT_LSN, 0);
	ut_st64(m + UT_META_MAXLSN, 0);
	ut_st32(m + UT_META_MODE, (uint32_t)mode);
	ut_st32(m + UT_META_CLEAN, 0);
}

static int page_all_zero(const uint8_t *b)
{
	for (size_t i = 0; i < UT_PAGE_SIZE; i++)
		if (b[i])
			return 0;
	return 1;
}

/* Creation writes the root (page 1, an empty leaf, LSN 0) and then the
 * header (page 0), each durably, and it removes a stale log first.  So a
 * file of at most two pages with an all-zero page 0 is a creation the power
 * cut short only if page 1 is missing, zero or that empty root, and no log
 * exists; anything else held data (a zeroed header is damage).  page0 holds
 * the first page as read (zero-filled past the end).  Sets p->page1_untorn. */
static int never_held_data(ut_pager *p, const char *path, const uint8_t *page0,
			   uint64_t size, int *never)
{
	uint8_t *b = ut_io_alloc(UT_PAGE_SIZE);
	int64_t n;
	int rc = UT_OK;
	char *wpath;

	*never = 0;
	if (!b)
		return UT_ENOMEM;
	memset(b, 0, UT_PAGE_SIZE);
	n = ut_file_read(p->rfile, b, UT_PAGE_SIZE, UT_PAGE_SIZE);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	p->page1_untorn = n == UT_PAGE_SIZE && ut_page_checksum_ok(b);
	if (!page_all_zero(page0) || size > 2 * (uint64_t)UT_PAGE_SIZE)
		goto out;
	if (!page_all_zero(b) &&
	    !(p->page1_untorn && ut_page_type(b) == UT_PT_LEAF &&
	      ut_page_nslots(b) == 0 && ut_page_lsn(b) == 0))
		goto out;
	wpath = malloc(strlen(path) + sizeof(UT_WAL_SUFFIX));
	if (!wpath) {
		rc = UT_ENOMEM;
		goto out;
	}
	strcpy(wpath, path);
	strcat(wpath, UT_WAL_SUFFIX);
	rc = p->vfs->exists(p->vfs, wpath);
	free(wpath);
	if (rc >= 0) {
		*never = rc == 0;
		rc = UT_OK;
	}
out:
	free(b);
	return rc;
}

/* A new database: a log or double-write file left at this path by a
 * deleted one is not ours (its records must never be replayed into the new
 * file).  Removed before the first page is written, so that a log beside a
 * file with a zero header proves the file held data. */
static int remove_stale(ut_vfs *vfs, const char *path, const char *suffix)
{
	char *s = malloc(strlen(path) + strlen(suffix) + 1);
	int rc;

	if (!s)
		return UT_ENOMEM;
	strcpy(s, path);
	strcat(s, suffix);
	rc = vfs->remove(vfs, s);
	free(s);
	return rc == UT_NOTFOUND ? UT_OK : rc;
}

static int check_meta(ut_pager *p, const uint8_t *m, uint64_t size)
{
	uint32_t v, ps, pc, root, fh;

	if (size < UT_META_MAGIC + 8 || memcmp(m + UT_META_MAGIC, UT_MAGIC, 8) ||
	    ut_page_type(m) != UT_PT_META) {
		if (page_all_zero(m)) {
			ut_set_errdetail("%s: page 0 (the database header) is all "
					 "zeroes, but the file (%llu bytes) or its log "
					 "shows it held a database: damaged, not new",
					 p->path, (unsigned long long)size);
			return UT_ECORRUPT;
		}
		if (p->page1_untorn) {
			ut_set_errdetail("%s: page 0 (the database header) is "
					 "damaged (no magic), but page 1 is an untorn "
					 "page", p->path);
			return UT_ECORRUPT;
		}
		ut_set_errdetail("%s: not an untorn database (no magic in page 0)",
				 p->path);
		return UT_ENOTDB;
	}
	if (size < UT_META_CKPT_LSN) {
		ut_set_errdetail("%s: truncated: %llu bytes, less than one page",
				 p->path, (unsigned long long)size);
		return UT_ECORRUPT;
	}
	v = ut_ld32(m + UT_META_VERSION);
	ps = ut_ld32(m + UT_META_PAGESIZE);
	/* A flipped bit in the version field must read as damage, not as
	 * another version: trust the fields only once the page checks. */
	if (size >= UT_PAGE_SIZE && !ut_page_checksum_ok(m)) {
		ut_set_errdetail("%s: page 0: checksum mismatch (the database "
				 "header; it reads format version %u, page size %u)",
				 p->path, v, ps);
		return UT_ECORRUPT;
	}
	if (v != UT_FORMAT_VERSION || ps != UT_PAGE_SIZE) {
		ut_set_errdetail("%s: format version %u, page size %u; this build "
				 "reads version %u with %u-byte pages",
				 p->path, v, ps, UT_FORMAT_VERSION, UT_PAGE_SIZE);
		return UT_EVERSION;
	}
	if (size < UT_PAGE_SIZE) {
		ut_set_errdetail("%s: truncated: size %llu is less than a page",
				 p->path, (unsigned long long)size);
		return UT_ECORRUPT;
	}
	if (ut_page_verify(m, 0, p->path))
		return UT_ECORRUPT;
	pc = ut_ld32(m + UT_META_PAGECOUNT);
	if (size % UT_PAGE_SIZE && size / UT_PAGE_SIZE < pc) {
		/* the partial page is one the checkpoint vouched for */
		ut_set_errdetail("%s: truncated or damaged: size %llu is not a "
				 "multiple of the page size %u, and page %llu "
				 "is below the %u pages of the last checkpoint",
				 p->path, (unsigned long long)size, UT_PAGE_SIZE,
				 (unsigned long long)(size / UT_PAGE_SIZE), pc);
		return UT_ECORRUPT;
	}
	root = ut_ld32(m + UT_META_ROOT);
	fh = ut_ld32(m + UT_META_FREEHEAD);
	if ((uint64_t)pc * UT_PAGE_SIZE > size) {
		ut_set_errdetail("%s: truncated: header says %u pages, file has %llu",
				 p->path, pc, (unsigned long long)(size / UT_PAGE_SIZE));
		return UT_ECORRUPT;
	}
	if (pc < 2 || root == 0 || root >= pc || fh >= pc) {
		ut_set_errdetail("%s: page 0: inconsistent header (pages %u, root %u, "
				 "free head %u)", p->path, pc, root, fh);
		return UT_ECORRUPT;
	}
	return UT_OK;
}

/* Read-only: one buffered O_RDONLY handle under a shared lock; no
 * double-write file is opened or created, no recovery runs.  A database
 * that was not closed cleanly may need recovery (log redo, torn-page
 * repair), which writes: refused. */
static int open_readonly(ut_pager *p, const ut_pager_config *cfg,
			 ut_pager **out)
{
	struct frame *mf = new_frame(p);
	uint64_t size;
	int64_t n;
	int rc;

	if (!mf) {
		rc = UT_ENOMEM;
		goto fail;
	}
	rc = p->vfs->open(p->vfs, p->path, UT_OPEN_RDONLY | UT_OPEN_LOCK |
			  UT_OPEN_WAIT(cfg->lock_wait_ms), &p->file);
	if (rc == UT_NOTFOUND) {
		ut_set_errdetail("%s: open: No such file or directory (read-only)",
				 p->path);
		rc = UT_EIO;
	}
	if (rc)
		goto fail;
	p->rfile = p->wfile = p->file;
	if ((rc = ut_file_size(p->file, &size)))
		goto fail;
	/* a flusher that never writes: it only completes the pager */
	rc = ut_flusher_create(UT_PROTECT_UNSAFE, p->vfs, p->path, p->file,
			       &p->ctr, &p->fl);
	if (rc)
		goto fail;
	if (size == 0) {
		ut_set_errdetail("%s: empty file, not an untorn database", p->path);
		rc = UT_ENOTDB;
		goto fail;
	}
	n = ut_file_read(p->rfile, mf->pg.data, UT_PAGE_SIZE, 0);
	if (n < 0) {
		rc = (int)n;
		goto fail;
	}
	if ((rc = check_meta(p, mf->pg.data, size))) {
		if (rc == UT_ECORRUPT)
			p->ctr.corrupt_pages++;
		goto fail;
	}
	p->last_mode = ut_ld32(mf->pg.data + UT_META_MODE);
	if (!ut_ld32(mf->pg.data + UT_META_CLEAN)) {
		ut_set_errdetail("%s: not closed cleanly, so opening it needs "
				 "recovery (log redo, torn-page repair), which "
				 "writes; a read-only open refuses (open it "
				 "read-write once to recover)", p->path);
		rc = UT_EREADONLY;
		goto fail;
	}
	mf->pg.pgno = 0;
	mf->valid = 1;
	mf->pin = 1;
	hinsert(p, mf);
	p->meta = mf;
	p->lsn = ut_ld64(mf->pg.data + UT_META_CKPT_LSN);
	p->durable_lsn = p->lsn;
	*out = p;
	return UT_OK;
fail:
	pager_free_all(p);
	return rc;
}

int ut_pager_open(ut_vfs *vfs, const char *path, const ut_pager_config *cfg,
		  ut_pager **out)
{
	ut_pager *p;
	uint64_t size;
	struct frame *mf;
	char *dwpath = NULL;
	int rc;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup(path))) {
		free(p);
		return UT_ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->flush_mu, NULL);
	pthread_cond_init(&p->work_cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	p->cleaner_inline = cfg->inline_flush;
	p->ckpt_hdr = ut_io_alloc(UT_PAGE_SIZE);
	if (!p->ckpt_hdr) {
		pager_free_all(p);
		return UT_ENOMEM;
	}
	p->vfs = vfs;
	if (cfg->hooks)
		p->hooks = *cfg->hooks;
	p->maxframes = cfg->cache_bytes / UT_PAGE_SIZE;
	if (p->maxframes < UT_PAGER_MIN_FRAMES)
		p->maxframes = UT_PAGER_MIN_FRAMES;
	p->nbuckets = 64;
	while (p->nbuckets < 2 * p->maxframes)
		p->nbuckets *= 2;
	p->buckets = calloc(p->nbuckets, sizeof(*p->buckets));
	if (!p->buckets) {
		rc = UT_ENOMEM;
		goto fail;
	}

	p->readonly = cfg->readonly;
	if (p->readonly)
		return open_readonly(p, cfg, out);
	rc = vfs->open(vfs, path, (cfg->create ? UT_OPEN_CREATE : 0) |
			   UT_OPEN_DIRECT | UT_OPEN_LOCK |
			   UT_OPEN_WAIT(cfg->lock_wait_ms), &p->file);
	if (rc == UT_NOTFOUND) {
		/* with create, ENOENT means the directory is missing */
		ut_set_errdetail(cfg->create ? "%s: open: No such file or directory "
				 "(its directory does not exist)"
				 : "%s: open: No such file or directory (create is off)",
				 path);
		rc = UT_EIO;
	}
	if (rc)
		goto fail;
	/* Reads go through a second, buffered handle (the OS page cache
	 * serves them; direct writes invalidate what it caches). */
	if (p->file->direct) {
		rc = vfs->open(vfs, path, 0, &p->rfile);
		if (rc)
			goto fail;
	} else {
		p->rfile = p->file;
	}
	if ((rc = ut_file_size(p->file, &size)))
		goto fail;
	if ((rc = dw_name(path, &dwpath)))
		goto fail;
	rc = vfs->exists(vfs, dwpath);
	if (rc < 0)
		goto fail;
	p->dw_existed = rc == 1;
	if (size == 0 && cfg->create) {
		/* copies left by a deleted database must not be "restored" */
		if ((rc = remove_stale(vfs, path, UT_DW_SUFFIX)) ||
		    (rc = remove_stale(vfs, path, UT_WAL_SUFFIX)))
			goto fail;
		p->dw_existed = 0;
	}
	rc = ut_flusher_create(cfg->protect, vfs, path, p->file, &p->ctr, &p->fl);
	if (rc)
		goto fail;
	if (p->fl->ops->recover && (rc = p->fl->ops->recover(p->fl, p->file)))
		goto fail;
	/* A double-write file left by an earlier run in another mode may
	 * hold the only whole copy of a page torn then: use it too. */
	if (p->dw_existed && size && p->fl->ops->protect != UT_PROTECT_DOUBLEWRITE) {
		ut_file *dw;
		ut_dw_recovery r;

		rc = vfs->open(vfs, dwpath, UT_OPEN_DIRECT, &dw);
		if (rc == UT_OK) {
			rc = ut_dw_recover(p->file, dw, path, &r);
			ut_file_close(dw);
			p->ctr.torn_repaired += r.repaired;
		}
		if (rc)
			goto fail;
	}
	/* Only atomic writes need O_DIRECT.  Double-write and unsafe page
	 * writes go through the OS page cache and are made durable by the
	 * flusher's fdatasync: a direct write would drop the cached copy, so
	 * every page evicted and read again would cost a device read (0.9 per
	 * commit in bench_durable at data 16x the cache, against SQLite's
	 * 0.1). */
	p->lazy = cfg->lazy;
	p->wfile = ut_pager_protect(p) != UT_PROTECT_ATOMIC ? p->rfile : p->file;
	/* Recovery may have rewritten (and extended) the file. */
	if ((rc = ut_file_size(p->file, &size)))
		goto fail;

	mf = new_frame(p);
	if (!mf) {
		rc = UT_ENOMEM;
		goto fail;
	}
	if (size > 0) {
		int64_t n = ut_file_read(p->rfile, mf->pg.data, UT_PAGE_SIZE, 0);
		int never;

		if (n < 0) {
			rc = (int)n;
			goto fail;
		}
		memset(mf->pg.data + n, 0, UT_PAGE_SIZE - (size_t)n);
		if ((rc = never_held_data(p, path, mf->pg.data, size, &never)))
			goto fail;
		if (never && cfg->create)
			size = 0; /* a creation the power cut short: redo it */
		if (never && !cfg->create) {
			ut_set_errdetail("%s: an interrupted creation, not an untorn "
					 "database (create is off)", path);
			rc = UT_ENOTDB;
			goto fail;
		}
	}
	p->created = size == 0;
	if (size == 0) {
		struct frame *rf;
		ut_flush_page fp[2];

		if (!cfg->create) {
			ut_set_errdetail("%s: empty file, not an untorn database", path);
			rc = UT_ENOTDB;
			goto fail;
		}
		rf = new_frame(p);
		if (!rf) {
			rc = UT_ENOMEM;
			goto fail;
		}
		init_meta(mf->pg.data, ut_pager_protect(p));
		ut_page_init(rf->pg.data, 1, UT_PT_LEAF);
		ut_page_seal(mf->pg.data);
		ut_page_seal(rf->pg.data);
		fp[0].pgno = 1;
		fp[0].buf = rf->pg.data;
		fp[1].pgno = 0;
		fp[1].buf = mf->pg.data;
		/* the root first, then the header that makes it a database */
		rc = p->fl->ops->write_pages(p->fl, p->file, fp, 1, UT_FLUSH_DURABLE);
		if (rc == UT_OK)
			rc = p->fl->ops->write_pages(p->fl, p->file, fp + 1, 1,
						     UT_FLUSH_DURABLE);
		if (rc)
			goto fail;
		if ((rc = vfs->sync_dir(vfs, path)))
			goto fail;
		rf->pg.pgno = 1;
		rf->valid = 1;
		hinsert(p, rf);
	} else {
		int64_t n = ut_file_read(p->rfile, mf->pg.data, UT_PAGE_SIZE, 0);
		if (n < 0) {
			rc = (int)n;
			goto fail;
		}
		if (n == UT_PAGE_SIZE &&
		    !memcmp(mf->pg.data + UT_META_MAGIC, UT_MAGIC, 8) &&
		    ut_page_verify(mf->pg.data, 0, path) == UT_OK) {
			p->last_mode = ut_ld32(mf->pg.data + UT_META_MODE);
			p->last_clean = ut_ld32(mf->pg.data + UT_META_CLEAN);
		}
		if (p->last_mode == UT_PROTECT_DOUBLEWRITE && !p->last_clean &&
		    !p->dw_existed) {
			ut_set_errdetail("%s: the database last ran in doublewrite "
					 "mode and was not closed cleanly, but its "
					 "double-write file %s is missing: torn pages "
					 "could not be repaired (restore the file; to "
					 "open anyway, create it empty, then run "
					 "`untorn check`)", path, dwpath);
			rc = UT_ECORRUPT;
			/* do not leave the empty dw file this open created */
			ut_flusher_destroy(p->fl);
			p->fl = NULL;
			(void)vfs->remove(vfs, dwpath);
			goto fail;
		}
		rc = check_meta(p, mf->pg.data, size);
		if (rc) {
			if (rc == UT_ECORRUPT)
				p->ctr.corrupt_pages++;
			goto fail;
		}
	}
	mf->pg.pgno = 0;
	mf->valid = 1;
	mf->pin = 1; /* page 0 stays pinned while open */
	hinsert(p, mf);
	p->meta = mf;
	p->lsn = ut_ld64(mf->pg.data + UT_META_CKPT_LSN);
	p->durable_lsn = p->lsn;
	p->durable_pages = ut_ld32(mf->pg.data + UT_META_PAGECOUNT);
	free(dwpath);
	*out = p;
	return UT_OK;
fail:
	free(dwpath);
	pager_free_all(p);
	return rc;
}

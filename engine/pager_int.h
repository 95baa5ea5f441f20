/*
 * engine/pager_int.h - the pager's internals, shared by its files (pool.c,
 * version.c, journal.c, cleaner.c, checkpoint.c, redo.c, pager.c) and by
 * nothing else: the handle, frames and versions, and the functions one of
 * those files offers the others.  Locking: p->mu guards every field
 * below but those the single writer owns (tx, ntx outside the pool's
 * reading of them, logpages) and the atomics (fatal, poisoned).
 * The page table (the table, each frame's hnext and pgno) and a frame's
 * cur change under p->mu with atomic stores, because a reader's pool hit
 * reads them with no lock at all (pool.c: frames and tables are never
 * freed while the handle is open, a version's pin is taken unless its
 * count is 0 and then checked).
 */
#ifndef UT_PAGER_INT_H
#define UT_PAGER_INT_H

#include <pthread.h>
#include <stdint.h>

#include "pace.h"
#include "pager.h"

#define VBUCKETS 4096u /* version store hash buckets (a power of two) */
#define EVICT_BATCH 64
/* Pages per page-cleaner batch: one strategy call, so one double-write
 * copy write and sync for up to this many pages (InnoDB's
 * innodb_doublewrite_pages gained most going to 128). */
#define CLEAN_BATCH 128
#define POOL_SLACK 64 /* spare page buffers kept resident beyond the bound */
#define SLAB_PAGES 64 /* page buffers per mmap'd slab */
/* Pre-images beyond this many count against the cache bound (evicting
 * clean frames); up to it they ride on top of it.  24 MiB holds a
 * 1000-update transaction's copies over a million keys without shrinking
 * the cache for them; it is part of the documented budget, cache_bytes +
 * 41 MiB resident (include/untorn.h, "Memory"). */
#define PRE_SLACK ((24u << 20) / UT_PAGE_SIZE)
/* The writer's memo: slots (a power of two), and the frames it pins at
 * most (and at most an eighth of the bound: pinned frames are not
 * evictable). */
#define WMEMO 128u
#define WMEMO_MAX 64u
/* Version objects in the writer's stash.  (Spare ones, p->vfree, are
 * never freed while the handle is open: a reader's hit may still hold the
 * address of one, and its pin attempt must find a version object there,
 * pool.c.) */
#define VSTASH 256u

/* A committed version of a page.  Its data never changes once published
 * (but for the CRC a flush seals in place), so readers use it without a
 * lock.  It is owned by its frame while current, then by the youngest live
 * snapshot that sees it (version.c), and freed when neither owns it and no
 * reader pins it. */
struct pver {
	ut_pg pg;       /* first: a reader's ut_pg * is a struct pver * */
	/* Readers' pins, plus one while owned (current in a frame, or kept
	 * in the version store); whoever drops the last one frees it.
	 * Atomic: a reader pins with no lock (pver_pin: never from 0) and
	 * releases with none; an owner that frees a version it may still be
	 * found by takes the count from 1 to 0 (pver_freeze), so that no
	 * pin can come after. */
	uint32_t refs;
	/* What a reader derived from the page (ut_pager_set_aux), or NULL;
	 * atomic, set once, freed with the version. */
	void *aux;
	/* The page LSN of its data as published (the commit that made it,
	 * or the file's for a page read): what a hit compares with its
	 * snapshot before it pins anything -- a hint there (the object may
	 * be reused under it), atomic. */
	uint64_t created;
	/* kept: LSN of the commit that replaced it; 0 while current.
	 * Atomic: a reader's hit checks it (pool.c, older_hit), stored once
	 * when the version is retired (release: after its data and pgno). */
	uint64_t until;
	/* The page's versions a snapshot may still read, newest first: the
	 * frame's cur, then the kept ones (versions no snapshot sees are
	 * spliced out).  A reader whose snapshot is older than cur follows
	 * older with no lock, and trusts what it finds only once pinned and
	 * checked (pool.c, older_hit): older is a hint, read atomically
	 * (the writer splices under p->mu while readers follow it).  newer:
	 * the version whose older this is, for the splice (p->mu only). */
	struct pver *older, *newer;
	struct pver *hnext; /* kept: store bucket chain, newest first */
	struct pver **hpprev; /* kept: what points at it in that chain */
	struct pver *qnext; /* kept: next in its owner snapshot's list */
};

/* Reader slots (version.c): a read transaction claims one (an atomic
 * compare-and-swap on a slot no other thread writes, as LMDB's reader
 * table) and publishes its snapshot's LSN in it; the writer scans the
 * slots in use to learn which snapshots live.  lsn1: the LSN + 1, 0 when
 * the slot is free.  One cache line each. */
#define RSLOTS 128u
struct rslot {
	uint64_t lsn1;
} __attribute__((aligned(64)));

/* The live snapshots of one LSN, as the version store sees them: the
 * owner of the replaced versions it is the youngest to see (version.c).
 * Made by the writer (or by a reader that found every slot taken) under
 * p->mu; dropped once no slot holds its LSN and nheld is 0. */
struct snapgrp {
	uint64_t lsn;
	struct snapgrp *prev, *next;
	struct pver *kept, *kept_tail;
	uint32_t nheld; /* readers registered under p->mu (no slot free) */
	int extra;      /* malloc'ed past the preallocated ones: freed */
};
/* Groups made at open: the writer never allocates one (a commit cannot
 * fail once logged).  Live groups at most: one per LSN a slot holds,
 * one the readers without a slot hold, one the writer is making. */
#define SNAPGRPS (RSLOTS + 2u)

/* What a snapshot begun now sees: the last commit's LSN and header
 * fields.  Two copies, the current one info[info_seq & 1]; every field
 * is read and written with atomics (relaxed), a reader checks info_seq
 * after reading them. */
struct snapinfo {
	uint64_t lsn, defkeys;
	uint32_t root, npages, catroot;
};

/* Readers pinning v, which its owner holds. */
static inline uint32_t pver_readers(const struct pver *v)
{
	return __atomic_load_n(&v->refs, __ATOMIC_ACQUIRE) - 1;
}

/* A reader's pin on v, unless v is not owned (count 0: freed, or being
 * freed by pver_freeze): then 0. */
static inline int pver_pin(struct pver *v)
{
	uint32_t r = __atomic_load_n(&v->refs, __ATOMIC_RELAXED);

	do {
		if (!r)
			return 0;
	} while (!__atomic_compare_exchange_n(&v->refs, &r, r + 1, 1,
					      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED));
	return 1;
}

/* The owner lets v go if no reader pins it: 1, and no pin can follow
 * (pver_pin fails from now on); 0 if a reader pins it. */
static inline int pver_freeze(struct pver *v)
{
	uint32_t one = 1;

	return __atomic_compare_exchange_n(&v->refs, &one, 0, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

/* A page in the pool.  pg is the writer's view: outside the write
 * transaction pg.data is cur's data; inside it a private copy the writer
 * changes (cur, the last committed version, stays what readers see and
 * what the cleaner writes).  What a reader's hit reads (pg.pgno, cur,
 * hnext, ref) shares the first cache line; those are stored atomically
 * (pgno by frame_set_pgno, cur by pager_frame_set_cur). */
struct frame {
	ut_pg pg; /* first: a ut_pg * is a struct frame * */
	struct pver *cur; /* NULL: not valid, loading, or new to the file in the txn */
	struct frame *hnext;
	uint8_t ref;      /* clock bit; atomic: set by readers with no lock */
	uint8_t valid, txn;
	uint8_t dirty;    /* cur differs from the data file */
	uint8_t loading;  /* being read from the file (pinned meanwhile) */
	uint8_t flushing; /* a snapshot of it is being written by the cleaner */
	uint8_t ckpt;     /* dirty when the pending checkpoint began */
	uint32_t pin; /* the writer's pins; atomic: released without p->mu
		       * (taken under it, so an evictor under p->mu sees at
		       * worst a pin about to go: it skips the frame) */
	uint32_t wgen; /* bumped when a commit replaces cur */
	uint64_t touched; /* blocks changed in the transaction (ut_log_page) */
	/* The writer's next private copy, made ahead (journal.c): a buffer
	 * holding an earlier image of the page, equal to cur's data but in
	 * the blocks of shadow_stale; NULL: none.  Only the writer uses it,
	 * under p->mu. */
	uint8_t *shadow;
	uint64_t shadow_stale;
	struct frame *sh_prev, *sh_next; /* p->shadow_old..shadow_new */
	struct frame *fnext; /* p->ffree: a frame out of the pool */
};

static inline void frame_set_pgno(struct frame *f, uint32_t pgno)
{
	__atomic_store_n(&f->pg.pgno, pgno, __ATOMIC_RELAXED);
}

/* The page table: pgno -> frame, chained through hnext.  A reader finds
 * it with one atomic load; a grown table replaces it and the old one is
 * kept (old) until close, for readers still walking it. */
struct ptable {
	struct ptable *old;
	size_t mask; /* buckets - 1, a power of two less one */
	struct frame *b[];
};

static inline uint32_t frame_pins(const struct frame *f)
{
	return __atomic_load_n(&f->pin, __ATOMIC_ACQUIRE);
}

static inline void frame_set_pins(struct frame *f, uint32_t n)
{
	__atomic_store_n(&f->pin, n, __ATOMIC_RELEASE);
}

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
	struct ptable *ptab; /* atomic: readers load it with no lock */
	size_t nbuckets;     /* ptab's, for the writer (p->mu) */
	/* Frames taken out of the pool, for reuse: never freed while open,
	 * a reader may be looking at one (pool.c). */
	struct frame *ffree;
	struct frame *meta;

	int in_txn;
	struct frame **tx;
	size_t ntx, captx;
	uint8_t **pool; /* spare page buffers (frames and pre-images share them) */
	size_t npool, cappool;
	size_t nresident; /* buffers in the pool whose memory is resident */
	/* Buffers the running transaction took from the pool, and the
	 * last one's count: how many pager_pool_refill maps ahead. */
	size_t txn_gets, last_txn_gets;
	void **slabs;
	size_t nslabs;
	size_t preout; /* pre-images held by the transaction */
	/* Frames holding a shadow, in the order they got it (oldest first,
	 * the first to go when the room is needed: journal.c); nshadow of
	 * them. */
	struct frame *shadow_old, *shadow_new;
	size_t nshadow;
	uint64_t shadows_dropped; /* for the budget (tests: ut_pager_shadows) */
	/* PRE_SLACK, or ut_pager_test_pre_slack's when set at open */
	size_t pre_slack;
	/* The writer's memo (pool.c): interior pages' frames it holds a pin
	 * on across transactions, by page number (direct-mapped), so that
	 * its descents find them without p->mu.  A pinned frame is never
	 * evicted, so the page-number-to-frame mapping holds while it is
	 * here.  The writer's alone. */
	struct frame *wmemo[WMEMO];
	size_t nwmemo;
	/* Spare version objects: vfree (a list through qnext, p->mu), and
	 * the writer's stash, refilled from it at the end of each
	 * transaction, so a commit allocates its versions without a lock
	 * and without malloc.  nvbuf: the commit's array of them. */
	struct pver *vfree;
	size_t nvfree;
	/* Version objects made since open, all kept until close (spares
	 * included): at most as many as were ever in use at once.  Atomic:
	 * the writer makes them without p->mu (tests read it). */
	size_t nvobj;
	struct pver *vstash[VSTASH];
	size_t nvstash;
	struct pver **nvbuf;
	size_t capnvbuf;
	/* Buffers to give back to the kernel once p->mu is let go, before
	 * they join the pool (pool.c, pager_advise_drain). */
	uint8_t **advise;
	size_t nadvise, capadvise;
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
	/* Torn pages open found with a good copy in PATH "-dw": reads see
	 * the copy, and it is written only once the open goes through -- at
	 * the first page write or checkpoint, which come after recovery's
	 * gate (a refused open changes no file).  NULL or empty: none. */
	struct ut_dw_pending *pend;
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
	/* A thread waiting for a clean frame waits for the batch that brings
	 * batches to this count; the cleaner owes waiters a batch only while
	 * batches is below it.  (Not "while anyone waits": a woken waiter
	 * that has not yet run would have it run empty batches back to back,
	 * issue 31's busy loop.) */
	uint64_t clean_want;
	size_t ndirty_est;       /* dirty frames, as last counted (+ commits since) */
	uint8_t *snap;           /* CLEAN_BATCH page snapshots */
	struct frame *snapf[CLEAN_BATCH];
	uint32_t snapgen[CLEAN_BATCH];
	ut_pace pace;            /* the thread's batch size (pace.h) */
	uint64_t batches;        /* cleaner batches written */
	uint64_t frame_waits;    /* times a thread waited for the cleaner */
	void (*batch_hook)(void *); /* tests: between copy and write */
	void *batch_hook_ctx;
	/* Why the handle went fatal (the failing call's detail), written
	 * once, under p->mu, before fatal and poisoned are set: a reader that
	 * saw poisoned reads it without the lock. */
	char fatal_detail[384];
	/* Checkpoint: requested (header image taken, dirty frames marked
	 * ckpt), then run by the cleaner or the caller. */
	int ckpt_pending;
	uint64_t ckpt_redo, ckpt_req, ckpt_done, checkpoints;
	/* The redo LSN of the latest checkpoint requested (or, before any,
	 * the header's): with a log_images strategy, a page whose committed
	 * LSN is at or below it is logged whole at its next change.  Set
	 * under the writer's exclusion, read by the writer. */
	uint64_t fpi_redo;
	/* fullpage was asked for, but this open's recovery writes through
	 * double-write (pager.c, fullpage_recovery_via_dw) until
	 * ut_pager_recovered */
	int fpi_pending;
	uint32_t ckpt_meta_gen;
	int ckpt_rc;
	/* A caller's checkpoint (no cleaner thread) writes with p->mu let go,
	 * holding flush_mu: a thread that would write inline waits for it. */
	int ckpt_unlocked;
	int ckpt_write_hdr;   /* the header image differs from the disk's */
	int pager_fatal_rc;         /* the error that made the handle fatal */
	uint8_t *ckpt_hdr;
	/* The header's checkpoint fields (UT_META_CKPT_LSN up to the end of
	 * UT_META_CLEAN) as the data file has them.  Kept here, not in page
	 * 0's frame, so that no version of page 0 ever changes after it is
	 * published. */
	uint8_t hdr_ckpt[UT_META_CLEAN + 4 - UT_META_CKPT_LSN];

	/* Page-write bound (bound.c), changed only by whoever may write
	 * pages (flush_mu once the cleaner runs, else p->mu). */
	uint8_t *hdr_disk;    /* page 0 as the data file has it */
	/* Its format version, which a checkpoint's start (under p->mu, not
	 * flush_mu) compares: atomic, hdr_disk being the page writer's. */
	uint32_t disk_format;
	/* Sealed copies of published pages pager_flush_frames writes
	 * (EVICT_BATCH pages, allocated on first need; p->mu). */
	uint8_t *sealbuf;
	uint8_t *bound_buf;   /* the image a bound raise writes */
	/* Every header written from now on says at least this format (0:
	 * as ut_meta_format says): set by a format raise (bound.c). */
	uint32_t format_floor;
	uint64_t bound_disk;  /* B durable in the header (or UNKNOWN) */
	uint64_t bound_open;  /* B as found at open */
	/* The highest LSN any page on disk may carry: recovery's evidence,
	 * then every page handed to the strategy.  Atomic: page reads check
	 * against it without a lock.  Meaningful once bound_known. */
	uint64_t bound_hi;
	int bound_known;
	/* Redo's gate (redo.c): asked before redo first writes a page. */
	int (*redo_gate)(void *ctx);
	void *redo_gate_ctx;
	int redo_decided;
	/* Redo's prefetch (redo.c): pages already hinted, one bit each. */
	uint8_t *hinted;
	uint64_t nhinted;

	/* Snapshots (see pager.h, version.c): the groups of live readers,
	 * oldest first (so in LSN order), each owning the kept versions it
	 * is the youngest to see (kept), also found by page (vbuckets); free
	 * groups (grp_free) and the array they came from (grp_pool). */
	struct snapgrp *snap_head, *snap_tail, *grp_free, *grp_pool;
	/* Readers without a lock: what a snapshot begun now sees (info,
	 * info_seq; 0: not yet published, the first reader does it), and the
	 * slots (rslot_hwm: slots [0, rslot_hwm) may be in use; atomic, only
	 * grows). */
	uint64_t info_seq __attribute__((aligned(64)));
	struct snapinfo info[2];
	/* The pool holds more frames than its bound (readers pinned every
	 * one): a reader's snapshot end trims it (pool.c).  Atomic. */
	int past_bound;
	unsigned rslot_hwm __attribute__((aligned(64)));
	struct rslot rslots[RSLOTS];
	struct pver **vbuckets;
	size_t nkept, kept_cap;  /* versions kept; the budget in versions */
	uint64_t kept_dropped;   /* versions dropped for the budget */
	uint64_t lost_below;     /* snapshots older than this lost a version */
	pthread_cond_t load_cv;  /* a page finished loading */
	/* The free list checked against every tree (freecheck.c), by the
	 * writer: FREE_UNCHECKED, no free page is taken (allocations append);
	 * FREE_OK; FREE_BAD, taking one is UT_ECORRUPT with free_detail. */
	int free_state;
	char free_detail[384];
};
enum { FREE_UNCHECKED, FREE_OK, FREE_BAD };

/* Read without the pool mutex by writers' fast paths; set by whoever saw
 * a write fail, the cleaner thread included. */
static inline int fatal_now(const ut_pager *p)
{
	return __atomic_load_n(&p->fatal, __ATOMIC_ACQUIRE);
}

/* Pre-images beyond PRE_SLACK count against the bound.  Shadows do not:
 * they live in the room frames and pre-images leave (pager_shadow_room),
 * and go before any frame has to. */
static inline size_t pre_charged(const ut_pager *p)
{
	return p->preout > p->pre_slack ? p->preout - p->pre_slack : 0;
}

/* Page buffers frames, pre-images and shadows may hold together: the
 * bound plus the pre-image slack. */
static inline size_t pager_buf_budget(const ut_pager *p)
{
	return p->maxframes + p->pre_slack;
}

/* The format a header image h is written as: ut_meta_format's, or the
 * raised floor (bound.c, ut_pager_raise_format). */
static inline uint32_t pager_hdr_format(const ut_pager *p, const uint8_t *h)
{
	uint32_t f = ut_meta_format(h);

	return f > p->format_floor ? f : p->format_floor;
}

static inline uint32_t meta32(ut_pager *p, int off)
{
	return ut_ld32(p->meta->pg.data + off);
}

static inline uint64_t hdr_field64(const ut_pager *p, int off)
{
	return ut_ld64(p->hdr_ckpt + off - UT_META_CKPT_LSN);
}

/* pool.c */
/* The page table, n buckets (a power of two), and all of its sizes. */
int pager_ptable_init(ut_pager *p, size_t n);
void pager_ptable_free(ut_pager *p);
struct frame *pager_hfind(ut_pager *p, uint32_t pgno);
void pager_hinsert(ut_pager *p, struct frame *f);
uint8_t *pager_buf_get(ut_pager *p);
void pager_buf_put(ut_pager *p, uint8_t *b);
/* Buffers pager_buf_put set aside are given back to the kernel, without
 * p->mu, and join the pool.  Called without p->mu. */
void pager_advise_drain(ut_pager *p);
/* Map page buffers ahead for the writer's transaction (the last one's
 * need, within the resident bound) without p->mu, so that it takes them
 * from the pool instead of mapping under the mutex.  Called by the
 * writer without p->mu. */
void pager_pool_refill(ut_pager *p);
struct frame *pager_new_frame(ut_pager *p);
/* UT_EBUSY, and f stays, if a reader pinned f's version meanwhile. */
int pager_frame_forget(ut_pager *p, struct frame *f);
/* f's committed version becomes v (readers' hits see it at once). */
void pager_frame_set_cur(ut_pager *p, struct frame *f, struct pver *v);
int pager_get_frame(ut_pager *p, struct frame **out);
void pager_drop_one(ut_pager *p);
void pager_shrink(ut_pager *p);
/* Free clean frames nobody uses while the pool is past its bound; writes
 * nothing.  p->mu held; not during redo (whose frames it may be setting
 * up without the mutex). */
void pager_trim(ut_pager *p);

/* The pins of s's memo go (s ends). */
void pager_memo_release(ut_pager *p, ut_snap *s);

/* version.c */
/* A new version object (counted in p->nvobj).  Only where no spare is at
 * hand: one is never freed while the handle is open, so every object made
 * beside an idle spare would stay for good. */
struct pver *pager_pver_new(ut_pager *p, uint8_t *data, uint32_t pgno);
/* v (new, spare or stashed) made as pager_pver_new makes one. */
void pager_pver_init(struct pver *v, uint8_t *data, uint32_t pgno);
/* A spare version object if one is at hand, else a new one.  p->mu held. */
struct pver *pager_pver_get(ut_pager *p, uint8_t *data, uint32_t pgno);
/* v (no longer referenced) kept for reuse, or freed.  p->mu held. */
void pager_pver_free(ut_pager *p, struct pver *v);
/* Every kept version goes (close). */
void pager_kept_free_all(ut_pager *p);
void pager_retire(ut_pager *p, struct pver *v, uint64_t until);
/* Does a live snapshot see v, a version being replaced?  p->mu held,
 * after pager_snap_publish for the commit replacing it. */
int pager_snap_sees(const ut_pager *p, const struct pver *v);
/* A commit's new versions are all in place (p->lsn is its LSN): new
 * snapshots see it from now on, and the version store learns which older
 * snapshots live (so which replaced versions to keep).  p->mu held;
 * cannot fail. */
void pager_snap_publish(ut_pager *p);
/* The snapshot groups' storage (open, close). */
int pager_snap_init(ut_pager *p);
void pager_snap_fini(ut_pager *p);
int pager_version_for(ut_pager *p, ut_snap *s, struct frame *f, struct pver **out);

/* The older-version chain (version.c): nv, about to replace old as its
 * frame's cur, links to it; v leaves it, its neighbours joined (the
 * owner lets v go: freed, evicted, or no snapshot sees it); a version
 * read from the file links to the newest kept version of its page.
 * p->mu held. */
void pager_chain_link(struct pver *nv, struct pver *old);
void pager_chain_unlink(struct pver *v);
void pager_chain_loaded(ut_pager *p, struct pver *v);

/* cleaner.c */
int pager_wal_rule(ut_pager *p, uint64_t maxlsn, unsigned flags);
void pager_note_fatal(ut_pager *p, int rc);
void pager_wake_all(ut_pager *p);
int pager_fatal_rc(ut_pager *p);
void pager_record_fatal(ut_pager *p, int rc);
void pager_fatal_errdetail(ut_pager *p);
int pager_flush_frames(ut_pager *p, struct frame **fs, size_t n, unsigned flags);
size_t pager_dirty_high(const ut_pager *p);
/* How a batch runs: CLEAN_UNLOCKED, p->mu is let go during its I/O (the
 * caller holds flush_mu); CLEAN_PACED (the cleaner thread), its size is
 * the pacer's and a log flush a committer waits for goes first.  0:
 * inline, p->mu held throughout (inline_flush, redo). */
#define CLEAN_UNLOCKED 1u
#define CLEAN_PACED 2u
int pager_clean_batch(ut_pager *p, int ckpt_only, unsigned how, size_t *done);
int pager_cleaner_usable(ut_pager *p);
void pager_stop_cleaner(ut_pager *p);
int pager_make_clean(ut_pager *p);

/* bound.c */
int pager_bound_before_write(ut_pager *p, uint64_t maxlsn, uint64_t last,
			     unsigned flags);
uint64_t pager_bound_for_checkpoint(ut_pager *p, uint64_t redo);
void pager_bound_header_written(ut_pager *p, const uint8_t *hdr);
int pager_bound_check_read(ut_pager *p, const uint8_t *page, uint32_t pgno);
void pager_bound_open(ut_pager *p, const uint8_t *hdr);

/* checkpoint.c */
int pager_finish_checkpoint(ut_pager *p, int drop_lock);

/* journal.c */
int pager_tx_add(ut_pager *p, struct frame *f);
/* f's shadow, if any, goes back to the pool (f leaves the pool, or its
 * page is no longer the one the shadow was of).  p->mu held. */
void pager_shadow_drop(ut_pager *p, struct frame *f);
/* Drop the oldest shadows until frames, pre-images and shadows leave
 * room for `more` buffers within pager_buf_budget.  p->mu held. */
void pager_shadow_room(ut_pager *p, size_t more);

/* pager.c */
int pager_dw_name(const char *path, char **out);
/* Page pgno as the data file has it -- or as open's pending torn-page
 * repair will have it (p->pend): what every read of a page from the
 * file goes through.  Returns the bytes read, or a negative code. */
int64_t pager_read_page(ut_pager *p, uint32_t pgno, uint8_t *buf);
/* Write open's pending repairs (once; without a pending one a no-op).
 * Called before any other page write (bound.c, checkpoint.c). */
int pager_apply_repairs(ut_pager *p);

#endif /* UT_PAGER_INT_H */

/*
 * engine/pool.c - the pager's frame pool: page buffers, the page table,
 * frames, eviction, and getting and releasing pages.
 *
 * Contract (pager.h, "Buffer pool" and "Thread safety"): a reader's pool
 * hit -- the page's frame is in the table and its committed version is
 * one the reader's snapshot sees -- takes no lock: the page table, its
 * chains and the frame's version are read with atomic loads while the
 * writer (or another reader's miss, or the cleaner) changes them under
 * p->mu, and the version is pinned (its count raised, never from 0) and
 * then checked to still be the frame's: readers never meet one another
 * or the writer on a lock, only on the cache line of a version both use.
 * So for a snapshot older than the frame's version: the kept version it
 * sees is reached from that one's older link, pinned, and checked to be
 * of the page and to cover the snapshot's LSN (older_hit) -- a reader
 * holding a snapshot while the writer commits (a long scan) reads
 * without the mutex the writer takes for every commit.
 * What makes the loads safe: the table and the frames are never freed
 * while the handle is open (a grown table keeps the one it replaced, a
 * frame out of the pool waits for reuse on p->ffree), nor are version
 * objects (spares are kept), so an address a hit read is always one of
 * those; whoever frees a version a hit may still find, or reuses its
 * buffer (eviction, a commit's replaced version), first takes its count
 * from 1 to 0 (pver_freeze), after which no pin succeeds, and keeps it
 * when that fails (a reader pinned it).  Why a pin and not epochs (a
 * version reused only once every reader active when it went has ended):
 * a value handed out stays valid until its transaction ends, so an epoch
 * would have to cover the whole transaction, and one long or idle read
 * transaction would then keep every buffer evicted or version dropped
 * for the snapshot budget meanwhile -- no cache bound, no budget.  A pin
 * keeps exactly what a reader holds.  Everything else (the writer's
 * gets, misses, versions kept for older snapshots) runs under p->mu.  A
 * miss takes a frame (a clean, unpinned one by clock sweep, or a new one
 * within the bound, or past it when nothing is evictable), marks it
 * loading and reads the page without the mutex.  The writer gets the frame itself; a reader gets the
 * version its snapshot sees (version.c).  Frames a reader pins (through a
 * version) or the writer pins or has in its transaction are never evicted.
 * A page read from the file must pass its checksum and be no newer than
 * the page-write bound's evidence (bound.c).  An interior page a
 * snapshot read stays pinned in its memo (ut_snap) until it ends, and is
 * handed out again from there: no lock, no pin, no shared write.  The
 * writer's interior pages stay pinned in its own memo (p->wmemo, at most
 * WMEMO_MAX of them) for the handle's life, and its gets of them take no
 * lock either: a commit's descents meet a reader's misses on p->mu only
 * at the leaves.
 */
#include <assert.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pager_int.h"

static inline size_t hslot(const struct ptable *t, uint32_t pgno)
{
	return (size_t)(pgno * 2654435761u) & t->mask;
}

static inline struct frame *ld_frame(struct frame *const *x)
{
	return __atomic_load_n(x, __ATOMIC_ACQUIRE);
}

static inline void st_frame(struct frame **x, struct frame *f)
{
	__atomic_store_n(x, f, __ATOMIC_RELEASE);
}

/* p->mu held. */
struct frame *pager_hfind(ut_pager *p, uint32_t pgno)
{
	struct frame *f = p->ptab->b[hslot(p->ptab, pgno)];

	while (f && f->pg.pgno != pgno)
		f = f->hnext;
	return f;
}

/* p->mu held; f's pgno and cur (NULL, or its version) are set. */
void pager_hinsert(ut_pager *p, struct frame *f)
{
	struct frame **b = &p->ptab->b[hslot(p->ptab, f->pg.pgno)];

	st_frame(&f->hnext, *b);
	st_frame(b, f);
}

void pager_frame_set_cur(ut_pager *p, struct frame *f, struct pver *v)
{
	(void)p;
	/* release: v's fields and data before a reader that finds it */
	__atomic_store_n(&f->cur, v, __ATOMIC_RELEASE);
	f->loading = 0;
}

/* p->mu held.  A reader walking the chain at f may go on to the frames
 * after it, or stop: either way it misses at worst (its slow path, under
 * p->mu, looks again). */
static void hremove(ut_pager *p, struct frame *f)
{
	struct frame **pp = &p->ptab->b[hslot(p->ptab, f->pg.pgno)];

	while (*pp && *pp != f)
		pp = &(*pp)->hnext;
	if (*pp)
		st_frame(pp, f->hnext);
	st_frame(&f->hnext, NULL);
}

static struct ptable *ptable_new(size_t n)
{
	struct ptable *t = calloc(1, sizeof(*t) + n * sizeof(t->b[0]));

	if (t)
		t->mask = n - 1;
	return t;
}

int pager_ptable_init(ut_pager *p, size_t n)
{
	p->ptab = ptable_new(n);
	p->nbuckets = n;
	return p->ptab ? UT_OK : UT_ENOMEM;
}

void pager_ptable_free(ut_pager *p)
{
	for (struct ptable *t = p->ptab, *old; t; t = old) {
		old = t->old;
		free(t);
	}
	p->ptab = NULL;
}

/* p->mu held.  Readers walking the old table meanwhile may miss (the
 * frames' chains change under them) but find only frames: it stays,
 * linked from the new one, until close (the sizes double: all of them
 * together are smaller than the last). */
static int hgrow(ut_pager *p)
{
	struct ptable *o = p->ptab, *t = ptable_new(p->nbuckets * 2);

	if (!t)
		return UT_ENOMEM;
	for (size_t i = 0; i <= o->mask; i++) {
		struct frame *f = o->b[i], *next;
		for (; f; f = next) {
			next = f->hnext;
			st_frame(&f->hnext, t->b[hslot(t, f->pg.pgno)]);
			t->b[hslot(t, f->pg.pgno)] = f;
		}
	}
	t->old = o;
	__atomic_store_n(&p->ptab, t, __ATOMIC_RELEASE);
	p->nbuckets *= 2;
	return UT_OK;
}

/* Page buffers: frames and pre-images draw from one pool of 16 KiB
 * buffers in mmap'd slabs (page-aligned, no allocator overhead), so memory
 * is reused instead of fragmenting the heap.  Slabs are made for buffers
 * about to be used, so they are populated at once: one call instead of a
 * page fault per 4 KiB (8% of a bulk load).  The writer maps them ahead of
 * its transaction without the mutex (pager_pool_refill: as many as its
 * last transaction took); only a transaction that takes more maps one
 * under it, when the pool is empty.
 * Resident memory is bounded by frames + pre-images + resident spares <=
 * the bound + the pre-image slack + POOL_SLACK (+ one slab's spares): a buffer
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

/* nadvise changes under p->mu, but is read without it (a drain with
 * nothing to do takes no lock): atomic.  Returns n. */
static size_t adv_set(ut_pager *p, size_t n)
{
	__atomic_store_n(&p->nadvise, n, __ATOMIC_RELAXED);
	return n;
}

static uint8_t *slabs_map(size_t nslabs)
{
	uint8_t *m = mmap(NULL, nslabs * SLAB_PAGES * (size_t)UT_PAGE_SIZE,
			  PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

/* nslabs slabs mapped at m join the pool (resident: just populated).
 * On failure the unrecorded rest is unmapped.  p->mu held. */
static int slabs_add(ut_pager *p, uint8_t *m, size_t nslabs)
{
	size_t bytes = (size_t)SLAB_PAGES * UT_PAGE_SIZE;
	void **ns = realloc(p->slabs, (p->nslabs + nslabs) * sizeof(*ns));
	size_t i;

	if (!ns) {
		munmap(m, nslabs * bytes);
		return UT_ENOMEM;
	}
	p->slabs = ns;
	for (i = 0; i < nslabs; i++)
		p->slabs[p->nslabs++] = m + i * bytes; /* unmapped one by one */
	for (i = nslabs * SLAB_PAGES; i-- > 0;) {
		if (pool_push(p, m + i * UT_PAGE_SIZE))
			return UT_ENOMEM; /* the rest stay in their slabs */
		p->nresident++;
	}
	return UT_OK;
}

uint8_t *pager_buf_get(ut_pager *p)
{
	p->txn_gets++;
	if (!p->npool && p->nadvise)
		return p->advise[adv_set(p, p->nadvise - 1)]; /* still resident */
	if (!p->npool) {
		/* the refill fell short (a transaction bigger than the last):
		 * one slab here, under the mutex */
		uint8_t *slab = slabs_map(1);

		if (!slab || slabs_add(p, slab, 1) || !p->npool)
			return NULL;
	}
	if (p->nresident)
		p->nresident--;
	return p->pool[--p->npool];
}

#define REFILL_MAX 1024u /* buffers (16 MiB) mapped ahead at most */

void pager_pool_refill(ut_pager *p)
{
	size_t want, held, limit, nslabs = 0;
	uint8_t *m;

	pthread_mutex_lock(&p->mu);
	want = p->last_txn_gets < SLAB_PAGES ? SLAB_PAGES
	       : p->last_txn_gets > REFILL_MAX ? REFILL_MAX : p->last_txn_gets;
	held = p->nframes + p->preout + p->nshadow + p->nresident + p->nadvise;
	limit = pager_buf_budget(p) + POOL_SLACK;
	if (p->npool < want && held < limit) {
		size_t n = want - p->npool;

		if (n > limit - held)
			n = limit - held;
		nslabs = (n + SLAB_PAGES - 1) / SLAB_PAGES;
	}
	pthread_mutex_unlock(&p->mu);
	if (!nslabs || !(m = slabs_map(nslabs)))
		return; /* (a failed map: pager_buf_get tries again) */
	pthread_mutex_lock(&p->mu);
	(void)slabs_add(p, m, nslabs);
	pthread_mutex_unlock(&p->mu);
}

/* One more buffer to advise once p->mu is let go; 0 if the list cannot
 * grow.  p->mu held. */
static int advise_later(ut_pager *p, uint8_t *b)
{
	if (p->nadvise == p->capadvise) {
		size_t c = p->capadvise ? 2 * p->capadvise : 64;
		uint8_t **na = realloc(p->advise, c * sizeof(*na));

		if (!na)
			return 0;
		p->advise = na;
		p->capadvise = c;
	}
	p->advise[p->nadvise] = b;
	adv_set(p, p->nadvise + 1);
	return 1;
}

void pager_buf_put(ut_pager *p, uint8_t *b)
{
	if (p->nframes + p->preout + p->nshadow + p->nresident + p->nadvise <
	    p->maxframes + p->pre_slack + POOL_SLACK) {
		if (pool_push(p, b))
			return; /* leaks one buffer into its slab until close */
		p->nresident++;
	} else if (!advise_later(p, b)) {
		/* advised once p->mu is let go (a system call, and page table
		 * work, that would hold up every thread on it) -- but for a
		 * list that could not grow: here, as the last resort */
		madvise(b, UT_PAGE_SIZE, MADV_DONTNEED);
		if (pool_push(p, b))
			return;
	}
}

void pager_advise_drain(ut_pager *p)
{
	uint8_t **b;
	size_t n, cap;

	if (!__atomic_load_n(&p->nadvise, __ATOMIC_RELAXED))
		return;
	/* the list is taken whole (buffers put meanwhile start another) */
	pthread_mutex_lock(&p->mu);
	b = p->advise;
	n = p->nadvise;
	cap = p->capadvise;
	p->advise = NULL;
	p->capadvise = 0;
	adv_set(p, 0);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < n; i++)
		madvise(b[i], UT_PAGE_SIZE, MADV_DONTNEED);
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < n; i++)
		if (pool_push(p, b[i]))
			break; /* leaks the rest into their slabs until close */
	if (!p->advise) { /* the array serves again */
		p->advise = b;
		p->capadvise = cap;
	} else {
		free(b);
	}
	pthread_mutex_unlock(&p->mu);
}


/* f, out of the table and the pool, is kept for reuse: a reader's hit
 * that loaded its address from the table before it left may still read
 * its pgno, hnext and cur (never freed while open; pager.c frees them at
 * close). */
static void frame_out(ut_pager *p, struct frame *f)
{
	f->fnext = p->ffree;
	p->ffree = f;
}

struct frame *pager_new_frame(ut_pager *p)
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
	if ((f = p->ffree)) {
		/* as calloc makes one, but for what a reader's hit may be
		 * reading: out of the table, no version (a hit misses) */
		p->ffree = f->fnext;
		assert(!f->cur && !f->hnext && !f->shadow);
		f->valid = f->txn = f->dirty = f->loading = 0;
		f->flushing = f->ckpt = 0;
		f->touched = f->shadow_stale = 0;
		f->wgen = 0;
		frame_set_pins(f, 0);
		__atomic_store_n(&f->ref, 0, __ATOMIC_RELAXED);
	} else if (!(f = calloc(1, sizeof(*f)))) {
		return NULL;
	}
	f->pg.data = pager_buf_get(p);
	if (!f->pg.data) {
		frame_out(p, f);
		return NULL;
	}
	p->frames[p->nframes++] = f;
	if (p->nframes > p->maxframes)
		__atomic_store_n(&p->past_bound, 1, __ATOMIC_RELAXED);
	return f;
}

/* One more frame, past the bound if need be. */
static int grow(ut_pager *p, struct frame **out, size_t *idx)
{
	pager_shadow_room(p, 1); /* a frame is worth more than a shadow */
	*out = pager_new_frame(p);
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
		if (frame_pins(f) || f->txn || pver_readers(f->cur))
			continue;
		if (__atomic_load_n(&f->ref, __ATOMIC_RELAXED)) {
			__atomic_store_n(&f->ref, 0, __ATOMIC_RELAXED);
			continue;
		}
		if (!f->dirty) {
			*vidx = at;
			return 1;
		}
	}
	return 0;
}

/* Could writing pages free a frame?  (A dirty frame that nobody pins --
 * neither the writer nor a reader, through its version -- and that is
 * not in the transaction, maybe being written right now.)  A frame a
 * reader pins stays in the pool however clean it is: waiting for its
 * write would only have the caller wait, and the cleaner write, for
 * nothing (issue 31). */
static int dirty_evictable(const ut_pager *p)
{
	for (size_t i = 0; i < p->nframes; i++) {
		const struct frame *f = p->frames[i];

		if (f->valid && f->dirty && !frame_pins(f) && !f->txn &&
		    f != p->meta && !pver_readers(f->cur))
			return 1;
	}
	return 0;
}

/* Make a valid frame that no one pins invalid; its cur's buffer becomes the
 * frame's spare buffer again.  A reader's hit may have pinned cur since the
 * caller looked (it takes no lock): then the frame stays.  Else cur's
 * count goes from 1 to 0 first, so that a hit that still finds it can no
 * longer pin it (pver_pin), before the buffer is reused. */
int pager_frame_forget(ut_pager *p, struct frame *f)
{
	struct pver *v = f->cur;

	assert(!frame_pins(f) && !f->txn && !f->loading);
#ifdef UT_PLANT_FORGET_NOFREEZE
	/* planted bug (tests): checked, not frozen -- a hit may pin v
	 * between the check and the buffer's reuse */
	if (v && pver_readers(v))
		return UT_EBUSY;
	sched_yield();
#else
	if (v && !pver_freeze(v))
		return UT_EBUSY;
#endif
	hremove(p, f);
	pager_frame_set_cur(p, f, NULL);
	f->valid = 0;
	f->dirty = 0;
	f->ckpt = 0;
	pager_shadow_drop(p, f);
	if (v) {
		pager_chain_unlink(v);
		pager_pver_free(p, v);
	}
	return UT_OK;
}

/* A frame to load a page into (not in the hash, not valid), and its index
 * in p->frames.  Frames plus the transaction's pre-images stay within the
 * bound while anything is evictable: a clean frame is reused; when every
 * candidate is dirty, pages are written first (pager_make_clean: the cleaner
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
		if (sweep(p, &vidx)) {
			victim = p->frames[vidx];
			if (!victim->valid || pager_frame_forget(p, victim) == UT_OK)
				break;
			continue; /* a reader took it meanwhile */
		}
		if (!dirty_evictable(p))
			return grow(p, out, idx); /* all pinned (readers too) or in the txn */
		if (!may_wait)
			return UT_EBUSY;
		if ((rc = pager_make_clean(p)))
			return rc;
	}
	*out = victim;
	*idx = vidx;
	return UT_OK;
}

int pager_get_frame(ut_pager *p, struct frame **out)
{
	size_t idx;

	return get_frame_idx(p, out, &idx, 1);
}

/* Over the bound (pre-images count): free one clean evictable frame, if
 * one is at hand without writing anything. */
void pager_drop_one(ut_pager *p)
{
	struct frame *f;
	size_t idx;

	if (p->ntx + 1 >= p->nframes || get_frame_idx(p, &f, &idx, 0))
		return;
	p->frames[idx] = p->frames[--p->nframes];
	if (p->hand >= p->nframes)
		p->hand = 0;
	pager_buf_put(p, f->pg.data);
	frame_out(p, f);
}

/* Called without the pool mutex (the caller counts the read). */
static int read_page(ut_pager *p, uint32_t pgno, uint8_t *buf)
{
	int rc;
	int64_t n = pager_read_page(p, pgno, buf);

	if (n < 0)
		return (int)n;
	if (n != UT_PAGE_SIZE) {
		ut_set_errdetail("%s: page %u: short read (%lld bytes): file truncated",
				 p->path, pgno, (long long)n);
		return UT_ECORRUPT;
	}
	if ((rc = ut_page_verify(buf, pgno, p->path)))
		return rc;
	return pager_bound_check_read(p, buf, pgno);
}

#define LOAD_RACED 1 /* another thread loaded the page meanwhile: look again */

/* Load pgno into a frame.  The frame is in the hash, pinned and marked
 * loading while the page is read without the pool mutex, so other threads
 * go on (one that wants the same page waits for load_cv).  p->mu held;
 * on success *out is valid with cur set and pinned once, for the caller.
 * Getting a frame may wait for the cleaner (the mutex released): if the
 * page was loaded meanwhile, LOAD_RACED, and the frame stays free -- two
 * frames of one page would let the writer change one while the other,
 * stale, is found later. */
static int load(ut_pager *p, uint32_t pgno, struct frame **out)
{
	struct frame *f;
	struct pver *v = NULL;
	int rc, rc2;

	if ((rc = pager_get_frame(p, &f)))
		return rc;
	if (pager_hfind(p, pgno))
		return LOAD_RACED;
	assert(!f->cur);
	frame_set_pgno(f, pgno);
	f->valid = 1;
	f->loading = 1;
	f->dirty = f->txn = 0;
	frame_set_pins(f, 1);
	__atomic_store_n(&f->ref, 1, __ATOMIC_RELAXED);
	pager_hinsert(p, f);
	pthread_mutex_unlock(&p->mu);
	rc = read_page(p, pgno, f->pg.data);
	pthread_mutex_lock(&p->mu);
	ut_ctr_add(&p->ctr.page_reads, 1);
	if (rc == UT_OK && !(v = pager_pver_get(p, f->pg.data, pgno)))
		rc = UT_ENOMEM;
	if (rc == UT_OK)
		pager_chain_loaded(p, v);
	pager_frame_set_cur(p, f, rc ? NULL : v);
	pthread_cond_broadcast(&p->load_cv);
	if (rc) {
		if (rc == UT_ECORRUPT)
			ut_ctr_add(&p->ctr.corrupt_pages, 1);
		memset(f->pg.data, 0, UT_PAGE_SIZE); /* never hand it out */
		frame_set_pins(f, 0);
		rc2 = pager_frame_forget(p, f);
		assert(rc2 == UT_OK); /* no version: no reader */
		(void)rc2;
		return rc;
	}
	*out = f;
	return UT_OK;
}

/* A reader's pin on v goes; the last one frees a version no one owns. */
static void pver_unpin(ut_pager *p, struct pver *v)
{
	if (!__atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL)) {
		pthread_mutex_lock(&p->mu);
		pager_buf_put(p, v->pg.data);
		pager_pver_free(p, v);
		pthread_mutex_unlock(&p->mu);
		pager_advise_drain(p);
	}
}

/* Chain steps a hit takes before it gives up (a miss): chains are short
 * (as many buckets as frames), but one the writer relinks meanwhile could
 * lead a reader round. */
#define HIT_STEPS 64
/* Older versions a hit looks at before it gives up (the slow path finds
 * the rest): a snapshot mostly needs the first kept one. */
#define OLDER_STEPS 4

/* A hit for a snapshot older than pgno's current version: the kept
 * version s sees, found from cur's older link with no lock, pinned; NULL
 * sends the caller to the slow path (kept_find under p->mu).  A link may
 * be stale (the writer splices versions out meanwhile, and version
 * objects are reused), so what it leads to is trusted only once pinned
 * (its fields then stay) and checked: retired (until set, which the
 * writer stores after its data and pgno), of pgno, and seen by s --
 * created at or before s's LSN, replaced after it.  A page's versions
 * cover disjoint LSN ranges, so that is the one s sees, whatever link
 * led to it; and kept_find would return the same (the snapshot keeps
 * it, or the budget dropped it -- then the pin still keeps its buffer
 * for this reader: the data is right, only no longer kept). */
static struct pver *older_hit(ut_pager *p, ut_snap *s, uint32_t pgno,
			      struct pver *o)
{
	for (unsigned steps = 0; o && steps < OLDER_STEPS; steps++) {
		struct pver *next;

#ifdef UT_PLANT_OLDER_NOCHECK
		/* planted bug (tests): the link is trusted as found -- a
		 * version spliced out and reused meanwhile (for another page,
		 * or another range of this one) is handed out; the pause
		 * widens the window the checks close */
		(void)pgno;
		sched_yield();
		if (!pver_pin(o))
			return NULL;
		if (ut_page_lsn(o->pg.data) <= s->lsn)
			return o;
#else
		uint64_t until;

		if (!pver_pin(o))
			return NULL;
		until = __atomic_load_n(&o->until, __ATOMIC_ACQUIRE);
		if (!until || o->pg.pgno != pgno) {
			pver_unpin(p, o);
			return NULL;
		}
		if (ut_page_lsn(o->pg.data) <= s->lsn) {
			if (until > s->lsn)
				return o;
			pver_unpin(p, o);
			return NULL;
		}
#endif
		next = __atomic_load_n(&o->older, __ATOMIC_ACQUIRE);
		pver_unpin(p, o);
		o = next;
	}
	return NULL;
}

/* The frame's clock bit, stored only when clear: a store dirties the
 * frame's cache line for every reader of the page. */
static inline void ref_set(struct frame *f)
{
	if (!__atomic_load_n(&f->ref, __ATOMIC_RELAXED))
		__atomic_store_n(&f->ref, 1, __ATOMIC_RELAXED);
}

/* A reader's pool hit: pgno's frame holds a committed version snapshot s
 * sees, pinned for the caller; NULL sends it to the slow path.  No lock:
 * the table, the chain and the frame are read with atomic loads (the
 * writer changes them meanwhile, under p->mu: frames and tables are never
 * freed while open, so whatever the loads find is a frame or NULL); the
 * version found is pinned unless its owner let it go (count 0), and only
 * then checked to still be the frame's current version of pgno -- a
 * version its frame still holds after the pin cannot be freed or its
 * buffer reused until the pin goes. */
static struct pver *hit(ut_pager *p, ut_snap *s, uint32_t pgno)
{
	const struct ptable *t = __atomic_load_n(&p->ptab, __ATOMIC_ACQUIRE);
	struct frame *f = ld_frame(&t->b[hslot(t, pgno)]);
	struct pver *v;
	unsigned steps = 0;

	while (f && __atomic_load_n(&f->pg.pgno, __ATOMIC_RELAXED) != pgno) {
		if (++steps == HIT_STEPS)
			return NULL;
		f = ld_frame(&f->hnext);
	}
	if (!f || !(v = __atomic_load_n(&f->cur, __ATOMIC_ACQUIRE)))
		return NULL;
	if (__atomic_load_n(&v->created, __ATOMIC_RELAXED) > s->lsn) {
		/* changed since s began (a hint: v may have been reused
		 * since it was cur; older_hit trusts nothing unchecked): a
		 * kept version, if s's is at hand -- v is not pinned, a line
		 * the writer's next commit of the page would take back */
		struct pver *o = __atomic_load_n(&v->older, __ATOMIC_ACQUIRE);

		if (o && (o = older_hit(p, s, pgno, o)))
			ref_set(f); /* the way to its kept versions */
		return o;
	}
#ifdef UT_PLANT_HIT_NORECHECK
	/* planted bug (tests): the pin is not checked (a version evicted
	 * and reused meanwhile is handed out); the pause widens the window
	 * the check closes */
	sched_yield();
#endif
	if (!pver_pin(v))
		return NULL;
#ifndef UT_PLANT_HIT_NORECHECK
	/* still the frame's version (so of pgno: a frame's cur is of its
	 * page), now that it is pinned */
	if (__atomic_load_n(&f->cur, __ATOMIC_ACQUIRE) != v || v->pg.pgno != pgno) {
		pver_unpin(p, v);
		return NULL;
	}
#endif
	if (ut_page_lsn(v->pg.data) > s->lsn) {
		/* changed since s began: a kept version, if s's is at hand */
		struct pver *o = __atomic_load_n(&v->older, __ATOMIC_ACQUIRE);

		pver_unpin(p, v);
		if (o && (o = older_hit(p, s, pgno, o)))
			ref_set(f);
		return o;
	}
	ref_set(f);
	return v;
}

static inline unsigned memo_hash(uint32_t pgno)
{
	return (pgno * 2654435761u) & (UT_SNAP_MEMO - 1);
}

/* The memo's view of pgno, or NULL.  Page 0 is never in the memo (not an
 * interior page), so key 0 marks an empty slot; the set is at most 3/4
 * full, so the probe ends. */
static ut_pg *memo_find(ut_snap *s, uint32_t pgno)
{
	for (unsigned i = memo_hash(pgno); s->memo_key[i];
	     i = (i + 1) & (UT_SNAP_MEMO - 1))
		if (s->memo_key[i] == pgno)
			return &s->memo[i];
	return NULL;
}

/* An interior page v, pinned by the caller for s, not in s's memo: while
 * the memo has room the caller's pin becomes the memo's, held until s
 * ends, and the memo's view (UT_PG_HELD, released by nobody) is what the
 * caller hands out; else v's own pinned page. */
static ut_pg *memo_keep(ut_pager *p, ut_snap *s, struct pver *v)
{
	unsigned i;

	if (s->nmemo >= UT_SNAP_MEMO_MAX ||
	    ut_page_type(v->pg.data) != UT_PT_INTERIOR)
		return &v->pg;
	for (i = memo_hash(v->pg.pgno); s->memo_key[i];
	     i = (i + 1) & (UT_SNAP_MEMO - 1))
		assert(s->memo_key[i] != v->pg.pgno);
	s->memo_key[i] = v->pg.pgno;
	s->memo_v[i] = v;
	s->memo[i].data = v->pg.data;
	s->memo[i].pgno = v->pg.pgno;
	s->memo[i].snap = UT_PG_HELD;
	s->memo_used[s->nmemo++] = (uint8_t)i;
#ifdef UT_PLANT_MEMO_NOPIN
	/* planted bug (tests): the memo holds v without a pin */
	ut_pager_release(p, &v->pg);
#else
	(void)p;
#endif
	return &s->memo[i];
}

/* s ends: the memo's pins go. */
void pager_memo_release(ut_pager *p, ut_snap *s)
{
	(void)p; /* unused with the planted bug */
	while (s->nmemo) {
		unsigned i = s->memo_used[--s->nmemo];

		assert(s->memo_key[i]);
		/* held since it was found: the pin kept it alive */
		assert(__atomic_load_n(&s->memo_v[i]->refs, __ATOMIC_RELAXED) > 0);
		assert(s->memo_v[i]->pg.data == s->memo[i].data);
#ifndef UT_PLANT_MEMO_NOPIN
		ut_pager_release(p, &s->memo_v[i]->pg);
#endif
		s->memo_key[i] = 0;
	}
}

/* The frame of pgno, pinned (loaded on a miss).  p->mu held. */
static int get_frame_of(ut_pager *p, uint32_t pgno, uint32_t limit,
			struct frame **out)
{
	struct frame *f;
	int rc;

	for (;;) {
		while ((f = pager_hfind(p, pgno)) && f->loading)
			pthread_cond_wait(&p->load_cv, &p->mu);
		if (f) {
			__atomic_add_fetch(&f->pin, 1, __ATOMIC_RELAXED);
			if (!__atomic_load_n(&f->ref, __ATOMIC_RELAXED))
				__atomic_store_n(&f->ref, 1, __ATOMIC_RELAXED);
			*out = f;
			return UT_OK;
		}
		if (pgno == 0 || pgno >= limit) {
			ut_set_errdetail("%s: page %u: reference beyond the page "
					 "count %u", p->path, pgno, limit);
			return UT_ECORRUPT;
		}
		rc = load(p, pgno, out);
		if (rc != LOAD_RACED)
			return rc;
	}
}

static inline unsigned wmemo_slot(uint32_t pgno)
{
	return (pgno * 2654435761u) >> 7 & (WMEMO - 1);
}

/* The writer's get, under p->mu: the frame of pgno, pinned; a committed
 * interior page joins the writer's memo (one more pin, its own) while
 * the memo has room -- the pages every descent reads, and few. */
static int writer_get_locked(ut_pager *p, uint32_t pgno, struct frame **out)
{
	struct frame **m = &p->wmemo[wmemo_slot(pgno)];
	size_t cap = p->maxframes / 8 < WMEMO_MAX ? p->maxframes / 8 : WMEMO_MAX;
	int rc = get_frame_of(p, pgno, ut_pager_page_count(p), out);

	if (rc == UT_OK && !*m && p->nwmemo < cap && (*out)->cur &&
	    ut_page_type((*out)->cur->pg.data) == UT_PT_INTERIOR) {
		*m = *out;
		p->nwmemo++;
#ifndef UT_PLANT_WMEMO_NOPIN
		/* planted bug (tests) without it: the memo holds no pin, so
		 * the frame may be evicted and reused under it */
		__atomic_add_fetch(&(*out)->pin, 1, __ATOMIC_RELAXED);
#endif
	}
	return rc;
}

size_t ut_pager_pinned(ut_pager *p)
{
	size_t n = 0;

	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->nframes; i++) {
		struct frame *f = p->frames[i];
		/* the writer's memo's own pin is not a caller's */
		uint32_t own = p->wmemo[wmemo_slot(f->pg.pgno)] == f;

		n += f->valid && frame_pins(f) > own;
	}
	pthread_mutex_unlock(&p->mu);
	return n;
}

int ut_pager_get_at(ut_pager *p, ut_snap *s, uint32_t pgno, ut_pg **out)
{
	struct frame *f;
	struct pver *v;
	ut_pg *m;
	int rc;

	if (__atomic_load_n(&p->poisoned, __ATOMIC_ACQUIRE)) {
		pager_fatal_errdetail(p);
		return UT_EFATAL;
	}
	if (!s) {
		f = p->wmemo[wmemo_slot(pgno)];
		if (f && f->pg.pgno == pgno) {
			/* the memo's pin keeps f this page's frame: no lock
			 * (without it a reader's miss could evict and reload
			 * f under this very check) */
			assert(frame_pins(f) && f->valid && !f->loading);
			__atomic_add_fetch(&f->pin, 1, __ATOMIC_RELAXED);
			*out = &f->pg;
			return UT_OK;
		}
		pthread_mutex_lock(&p->mu);
		rc = writer_get_locked(p, pgno, &f);
		if (rc == UT_EIO && !fatal_now(p)) {
			/* The writer cannot read the data file: no later
			 * transaction gets further (issue 31: the soak's writer
			 * met UT_EIO forever after the device went).  The
			 * handle refuses writes from now on, with this read's
			 * detail as the cause; readers keep what they can
			 * read. */
			char why[256];

			snprintf(why, sizeof(why), "%s", ut_errdetail());
			ut_set_errdetail("%s: page %u: the write transaction's "
					 "page read failed: %s", p->path, pgno,
					 why);
			pager_note_fatal(p, rc);
		}
		pthread_mutex_unlock(&p->mu);
		if (rc == UT_OK)
			*out = &f->pg;
		return rc;
	}
	if ((m = memo_find(s, pgno))) {
		/* s holds it (a pin until s ends): no pin of its own */
		*out = m;
		return UT_OK;
	}
	if (!(v = hit(p, s, pgno))) {
		pthread_mutex_lock(&p->mu);
		rc = get_frame_of(p, pgno, s->npages, &f);
		if (rc == UT_OK) {
			__atomic_sub_fetch(&f->pin, 1, __ATOMIC_RELEASE);
			rc = pager_version_for(p, s, f, &v);
			if (rc == UT_OK)
				__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&p->mu);
		if (rc)
			return rc;
	}
	*out = memo_keep(p, s, v);
	return UT_OK;
}

int ut_pager_get(ut_pager *p, uint32_t pgno, ut_pg **out)
{
	return ut_pager_get_at(p, NULL, pgno, out);
}

void ut_pager_release(ut_pager *p, ut_pg *pg)
{
	if (!pg)
		return;
	if (pg->snap == UT_PG_HELD)
		return; /* the snapshot's memo holds it until the snapshot ends */
	if (pg->snap) {
		/* no lock unless this was the last pin of a version no one
		 * owns any more */
		pver_unpin(p, (struct pver *)pg);
		return;
	}
	struct frame *f = (struct frame *)pg;
	uint32_t was = __atomic_fetch_sub(&f->pin, 1, __ATOMIC_RELEASE);

	assert(was);
	(void)was;
}

/* The committed version a reader's page (from ut_pager_get_at with s) is,
 * or NULL for the writer's. */
static struct pver *pg_version(ut_snap *s, const ut_pg *pg)
{
	if (pg->snap == UT_PG_HELD)
		return s->memo_v[pg - s->memo];
	return pg->snap ? (struct pver *)pg : NULL;
}

void *ut_pager_aux(ut_snap *s, const ut_pg *pg)
{
	struct pver *v = s ? pg_version(s, pg) : NULL;

	return v ? __atomic_load_n(&v->aux, __ATOMIC_ACQUIRE) : NULL;
}

void *ut_pager_set_aux(ut_snap *s, ut_pg *pg, void *aux)
{
	struct pver *v = s ? pg_version(s, pg) : NULL;
	void *kept = NULL;

	if (v && __atomic_compare_exchange_n(&v->aux, &kept, aux, 0,
					     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return aux;
	free(aux);
	return kept;
}

/* Dirty frames a write would let pager_shrink free. */
static int dirty_unpinned(const ut_pager *p)
{
	for (size_t i = 0; i < p->nframes; i++) {
		const struct frame *f = p->frames[i];

		if (f->valid && f->dirty && !f->flushing && !frame_pins(f) &&
		    !f->txn && f != p->meta)
			return 1;
	}
	return 0;
}

/* Free frames beyond the bound once the transaction no longer pins them.
 * Dirty ones must be written first: by the cleaner thread (started here if
 * there is none yet) in its next batch, after which it calls this again --
 * never by this thread, which holds the pool mutex every reader may need
 * (pager.h: the pool is never locked during page I/O).  Only without a
 * thread to be had (inline_flush, redo) are they written here.  p->mu
 * held. */
void pager_shrink(ut_pager *p)
{
	struct frame *batch[EVICT_BATCH];
	size_t nb = 0;
	int here;

	if (p->nframes <= p->maxframes)
		return;
	here = !pager_cleaner_usable(p) && !p->ckpt_unlocked;
	if (!here && dirty_unpinned(p)) {
		/* one batch owed; the cleaner shrinks after it (cleaner.c) */
		if (p->clean_want < p->batches + 1)
			p->clean_want = p->batches + 1;
		pthread_cond_signal(&p->work_cv);
	}
	for (size_t i = 0; i < p->nframes && here; i++) {
		struct frame *f = p->frames[i];
		if (f->valid && f->dirty && !frame_pins(f) && !f->txn)
			batch[nb++] = f;
		if (nb == EVICT_BATCH || (nb && i + 1 == p->nframes)) {
			int rc = pager_flush_frames(p, batch, nb, 0);

			if (rc) {
				/* no caller to return it to: the next one */
				p->pager_fatal_rc = rc;
				return;
			}
			nb = 0;
		}
	}
	pager_trim(p);
}

void pager_trim(ut_pager *p)
{
	if (p->nframes <= p->maxframes) {
		__atomic_store_n(&p->past_bound, 0, __ATOMIC_RELAXED);
		return;
	}
	for (size_t i = 0; i < p->nframes && p->nframes > p->maxframes;) {
		struct frame *f = p->frames[i];
		if (!f->valid || (!frame_pins(f) && !f->txn && !f->dirty &&
				  !pver_readers(f->cur) &&
				  pager_frame_forget(p, f) == UT_OK)) {
			p->frames[i] = p->frames[--p->nframes];
			pager_buf_put(p, f->pg.data);
			frame_out(p, f);
		} else {
			i++;
		}
	}
	p->hand = 0;
	if (p->nframes <= p->maxframes)
		__atomic_store_n(&p->past_bound, 0, __ATOMIC_RELAXED);
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

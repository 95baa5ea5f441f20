/*
 * engine/version.c - page versions and snapshots.
 *
 * Contract (pager.h, "Versions"): a committed version (struct pver) never
 * changes after it is published.  A version V a commit replaces is seen by
 * the snapshots whose LSN lies in [created, replaced) (created: V's page
 * LSN; replaced: V->until); it is kept exactly while one of them lives,
 * and a snapshot reads the newest version at or before its LSN, or none.
 *
 * Snapshots are known by LSN: the live snapshots of one LSN form a group
 * (struct snapgrp), and "snapshot" below means such a group.  A reader
 * begins and ends without a lock: it claims a reader slot and publishes
 * its LSN there (as LMDB's reader table), and the writer, after each
 * commit's versions are in place, publishes the commit to new snapshots
 * and then scans the slots (pager_snap_publish): the live LSNs older than
 * the commit.  Each gets its group at the first commit after it began
 * (it is the youngest then); a group no slot holds any more is dropped
 * (snap_reclaim: at the next commit, at the end of a reader that saw a
 * commit go by, and when the stats are read), handing its versions on as
 * an ending snapshot did.
 *
 * Lifetime: V is owned by the youngest live snapshot that sees it (its
 * list kept..kept_tail).  At the commit that replaces V every live snapshot
 * is older than that commit, so the youngest of all (snap_tail) sees V iff
 * any does: V goes to it, or is freed at once.  When the owner ends, the
 * next-older live snapshot is the youngest that may still see V: V goes to
 * it if its LSN is at or past V's creation, else nobody can see V any more
 * (older snapshots are older still) and V is freed.  O(1) per version per
 * hand-off, and a whole list moves in O(1) to a neighbour of the same LSN
 * (it sees the same versions).  So the store holds, per live snapshot, at
 * most one version of each page changed since it began, whatever number
 * of short snapshots come and go beside a long one.
 *
 * Budget: beyond cfg->snapshot_bytes the versions of the oldest owner are
 * dropped, first kept first: they are needed only by snapshots at or older
 * than it, which then get UT_ESNAPSHOT ("too old"), never another version
 * (kept_find checks V's whole visibility range).  Versions are also found
 * by page number (vbuckets, newest first), and from the page's current
 * version through older links (cur, then its kept versions newest first;
 * a version no snapshot sees is spliced out as it goes, a page read from
 * the file links to its kept ones): readers follow those with no lock
 * and check what they find (pool.c, older_hit).  Everything here but a
 * reader's slot claim and release runs under p->mu; a version no owner
 * holds is freed by its last reader's release.
 */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pager_int.h"

struct pver *pager_pver_new(ut_pager *p, uint8_t *data, uint32_t pgno)
{
	struct pver *v = calloc(1, sizeof(*v));

	if (v) {
		v->pg.data = data;
		v->pg.pgno = pgno;
		v->pg.snap = UT_PG_PINNED;
		v->created = data ? ut_page_lsn(data) : 0;
		v->refs = 1; /* the owner's */
		__atomic_add_fetch(&p->nvobj, 1, __ATOMIC_RELAXED);
	}
	return v;
}

size_t ut_pager_version_objects(ut_pager *p)
{
	return __atomic_load_n(&p->nvobj, __ATOMIC_RELAXED);
}

/* A spare v made new.  A reader's hit may still try to pin v (it read
 * its address before v was freed): the count is stored atomically, and
 * last, so that a pin that finds it 1 sees the rest (pool.c, hit). */
void pager_pver_init(struct pver *v, uint8_t *data, uint32_t pgno)
{
	v->pg.data = data;
	v->pg.pgno = pgno;
	v->pg.snap = UT_PG_PINNED;
	v->aux = NULL;
	__atomic_store_n(&v->created, data ? ut_page_lsn(data) : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->until, 0, __ATOMIC_RELAXED);
	/* (a hit may load older from a stale address: atomic) */
	__atomic_store_n(&v->older, NULL, __ATOMIC_RELAXED);
	v->newer = NULL;
	v->hnext = v->qnext = NULL;
	v->hpprev = NULL;
	__atomic_store_n(&v->refs, 1, __ATOMIC_RELEASE); /* the owner's */
}

struct pver *pager_pver_get(ut_pager *p, uint8_t *data, uint32_t pgno)
{
	struct pver *v = p->vfree;

	if (!v)
		return pager_pver_new(p, data, pgno);
	p->vfree = v->qnext;
	p->nvfree--;
	pager_pver_init(v, data, pgno);
	return v;
}

/* Kept however many there are (freed at close): a reader's hit may hold
 * v's address and try to pin it (pool.c). */
void pager_pver_free(ut_pager *p, struct pver *v)
{
	free(v->aux); /* no one holds v: no one uses it */
	v->aux = NULL;
	v->qnext = p->vfree;
	p->vfree = v;
	p->nvfree++;
}

/* Its owner lets v go: freed now, or by the last reader's release.
 * p->mu held. */
static void pver_disown(ut_pager *p, struct pver *v)
{
	if (!__atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL)) {
		pager_buf_put(p, v->pg.data);
		pager_pver_free(p, v);
	}
}

static inline struct pver **vbucket(ut_pager *p, uint32_t pgno)
{
	return &p->vbuckets[(pgno * 2654435761u) & (VBUCKETS - 1)];
}

void pager_chain_link(struct pver *nv, struct pver *old)
{
	nv->newer = NULL;
	old->newer = nv;
	/* release: nv is published (its frame's cur) after this */
	__atomic_store_n(&nv->older, old, __ATOMIC_RELEASE);
}

void pager_chain_unlink(struct pver *v)
{
	struct pver *o = __atomic_load_n(&v->older, __ATOMIC_RELAXED);

	if (v->newer)
		__atomic_store_n(&v->newer->older, o, __ATOMIC_RELEASE);
	if (o)
		o->newer = v->newer;
	v->newer = NULL;
	__atomic_store_n(&v->older, NULL, __ATOMIC_RELAXED);
}

static inline uint64_t until_of(const struct pver *v)
{
	return __atomic_load_n(&v->until, __ATOMIC_RELAXED);
}

static inline uint64_t created(const struct pver *v)
{
	return ut_page_lsn(v->pg.data);
}

/* The kept version of pgno that snapshot LSN lsn sees: the newest one
 * created at or before it, if it was still current at lsn (when it was
 * not, the one lsn saw was dropped: NULL).  Chains hold the newest first
 * (a page's versions are replaced in commit order). */
static struct pver *kept_find(ut_pager *p, uint32_t pgno, uint64_t lsn)
{
	for (struct pver *v = *vbucket(p, pgno); v; v = v->hnext)
		if (v->pg.pgno == pgno && created(v) <= lsn)
			return until_of(v) > lsn ? v : NULL;
	return NULL;
}

void pager_chain_loaded(ut_pager *p, struct pver *v)
{
	/* its newest kept version, whose newer (the frame's cur when it
	 * was evicted) left the chain then */
	for (struct pver *k = *vbucket(p, v->pg.pgno); k; k = k->hnext) {
		if (k->pg.pgno == v->pg.pgno) {
			if (!k->newer)
				pager_chain_link(v, k);
			return;
		}
	}
}

static void own_append(struct snapgrp *s, struct pver *v)
{
	v->qnext = NULL;
	if (s->kept_tail)
		s->kept_tail->qnext = v;
	else
		s->kept = v;
	s->kept_tail = v;
}

/* v, no longer owned by a snapshot, leaves the store. */
static void kept_free(ut_pager *p, struct pver *v)
{
	pager_chain_unlink(v);
	*v->hpprev = v->hnext;
	if (v->hnext)
		v->hnext->hpprev = v->hpprev;
	p->nkept--;
	pver_disown(p, v);
}

/* Over the budget: drop the first version of the oldest snapshot that owns
 * any.  Only snapshots at or older than that owner see it (it is the
 * youngest that does), so the oldest pay for the budget. */
static void kept_drop_one(ut_pager *p)
{
	struct snapgrp *s = p->snap_head;
	struct pver *v;

	while (!s->kept) /* nkept > 0: some live snapshot owns a version */
		s = s->next;
	v = s->kept;
	s->kept = v->qnext;
	if (!s->kept)
		s->kept_tail = NULL;
	if (s->lsn + 1 > p->lost_below)
		p->lost_below = s->lsn + 1;
	p->kept_dropped++;
	kept_free(p, v);
}

int pager_snap_sees(const ut_pager *p, const struct pver *v)
{
	return p->snap_tail && p->snap_tail->lsn >= created(v);
}

/* The commit at LSN until replaced v.  Live snapshots are all older than
 * that commit, so the youngest of them sees v iff any does: it owns v,
 * or v goes now. */
void pager_retire(ut_pager *p, struct pver *v, uint64_t until)
{
	struct snapgrp *s = p->snap_tail;
	struct pver **b;

	if (!pager_snap_sees(p, v)) {
		pager_chain_unlink(v);
		pver_disown(p, v);
		return;
	}
	/* release: a hit that reads it reads v's data and pgno after */
	__atomic_store_n(&v->until, until, __ATOMIC_RELEASE);
	b = vbucket(p, v->pg.pgno);
	v->hnext = *b;
	v->hpprev = b;
	if (*b)
		(*b)->hpprev = &v->hnext;
	*b = v;
	own_append(s, v);
	p->nkept++;
	while (p->nkept > p->kept_cap)
		kept_drop_one(p);
}

/* Snapshot s ends: each version it owns goes to the next-older live
 * snapshot if that one sees it, else nobody does any more. */
static void kept_hand_off(ut_pager *p, struct snapgrp *s)
{
	struct snapgrp *to = s->prev;
	struct pver *v = s->kept, *next;

	if (!v)
		return;
	if (to && to->lsn == s->lsn) {
		/* it sees what s sees: the list moves whole */
		if (to->kept_tail)
			to->kept_tail->qnext = v;
		else
			to->kept = v;
		to->kept_tail = s->kept_tail;
	} else {
		for (; v; v = next) {
			next = v->qnext;
			if (to && to->lsn >= created(v))
				own_append(to, v);
			else
				kept_free(p, v);
		}
	}
	s->kept = s->kept_tail = NULL;
}

void pager_kept_free_all(ut_pager *p)
{
	for (struct snapgrp *s = p->snap_head; s; s = s->next) {
		struct pver *v = s->kept, *next;

		for (; v; v = next) {
			next = v->qnext;
			kept_free(p, v);
		}
		s->kept = s->kept_tail = NULL;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* a ms figure for a detail: the cheap clock */
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The version snapshot s sees of the page in frame f (cur, or one kept
 * for older snapshots).  p->mu held. */
int pager_version_for(ut_pager *p, ut_snap *s, struct frame *f,
		       struct pver **out)
{
	struct pver *v = f->cur;

	if (!v || ut_page_lsn(v->pg.data) > s->lsn)
		v = kept_find(p, f->pg.pgno, s->lsn);
	if (v) {
		*out = v;
		return UT_OK;
	}
	if (s->lsn < p->lost_below) {
		ut_set_errdetail("%s: page %u: snapshot too old: this read "
				 "transaction (begun %lld ms ago, at LSN %llu) "
				 "needs a page version dropped for the snapshot "
				 "memory budget (%zu versions, %zu bytes kept)",
				 p->path, f->pg.pgno, (long long)(now_ms() - s->began_ms),
				 (unsigned long long)s->lsn, p->nkept,
				 p->nkept * (size_t)UT_PAGE_SIZE);
		return UT_ESNAPSHOT;
	}
	/* Live snapshots keep every version they see, so the page claims a
	 * commit this snapshot cannot have missed: its LSN lies (a crafted
	 * or damaged page whose checksum passes). */
	ut_set_errdetail("%s: page %u: LSN %llu is newer than the snapshot "
			 "(LSN %llu) and no older version of it was kept: the "
			 "page's LSN is damaged", p->path, f->pg.pgno,
			 (unsigned long long)(f->cur ? ut_page_lsn(f->cur->pg.data) : 0),
			 (unsigned long long)s->lsn);
	return UT_ECORRUPT;
}

/* ---- snapshot groups and reader slots ------------------------------- */

int pager_snap_init(ut_pager *p)
{
	p->grp_pool = calloc(SNAPGRPS, sizeof(*p->grp_pool));
	if (!p->grp_pool)
		return UT_ENOMEM;
	for (unsigned i = 0; i < SNAPGRPS; i++) {
		p->grp_pool[i].next = p->grp_free;
		p->grp_free = &p->grp_pool[i];
	}
	return UT_OK;
}

static void grp_put(ut_pager *p, struct snapgrp *g)
{
	if (g->extra) {
		free(g);
		return;
	}
	g->next = p->grp_free;
	p->grp_free = g;
}

/* After pager_kept_free_all. */
void pager_snap_fini(ut_pager *p)
{
	while (p->snap_head) {
		struct snapgrp *g = p->snap_head;

		p->snap_head = g->next;
		grp_put(p, g);
	}
	p->snap_tail = NULL;
	p->grp_free = NULL;
	free(p->grp_pool);
	p->grp_pool = NULL;
}

/* A new group of LSN lsn, the youngest: appended.  extra: readers make
 * theirs with malloc (NULL when it fails), so that the preallocated
 * ones always suffice for the writer (SNAPGRPS). */
static struct snapgrp *grp_append(ut_pager *p, uint64_t lsn, int extra)
{
	struct snapgrp *g;

	assert(!p->snap_tail || p->snap_tail->lsn < lsn);
	if (extra) {
		if (!(g = malloc(sizeof(*g))))
			return NULL;
	} else {
		g = p->grp_free;
		assert(g); /* SNAPGRPS: live groups the writer made <= RSLOTS + 1 */
		p->grp_free = g->next;
	}
	memset(g, 0, sizeof(*g));
	g->lsn = lsn;
	g->extra = extra;
	g->prev = p->snap_tail;
	if (p->snap_tail)
		p->snap_tail->next = g;
	else
		p->snap_head = g;
	p->snap_tail = g;
	return g;
}

/* The LSNs the reader slots in use hold, into live (RSLOTS of them);
 * returns how many.  Sequentially consistent loads: a reader that
 * published its LSN before the writer's last info_seq store is seen. */
static unsigned live_lsns(ut_pager *p, uint64_t *live)
{
	unsigned n = 0, hwm = __atomic_load_n(&p->rslot_hwm, __ATOMIC_SEQ_CST);

#ifdef UT_PLANT_SLOT_MISSED
	/* planted bug (tests): the scan misses the last slot in use, so its
	 * reader's versions are freed under it */
	hwm -= hwm > 0;
#endif
	for (unsigned i = 0; i < hwm; i++) {
		uint64_t v = __atomic_load_n(&p->rslots[i].lsn1, __ATOMIC_SEQ_CST);

		if (v)
			live[n++] = v - 1;
	}
	return n;
}

static int lsn_in(const uint64_t *live, unsigned n, uint64_t lsn)
{
	for (unsigned i = 0; i < n; i++)
		if (live[i] == lsn)
			return 1;
	return 0;
}

/* Groups no reader holds any more go, youngest first: each hands its
 * versions to the next older group (which, if dead too, hands them on in
 * turn).  p->mu held. */
static void snap_reclaim(ut_pager *p, const uint64_t *live, unsigned n)
{
	for (struct snapgrp *g = p->snap_tail, *prev; g; g = prev) {
		prev = g->prev;
		if (g->nheld || lsn_in(live, n, g->lsn))
			continue;
		kept_hand_off(p, g);
		if (g->prev)
			g->prev->next = g->next;
		else
			p->snap_head = g->next;
		if (g->next)
			g->next->prev = g->prev;
		else
			p->snap_tail = g->prev;
		grp_put(p, g);
	}
}

static inline uint64_t ld64(const uint64_t *x)
{
	return __atomic_load_n(x, __ATOMIC_RELAXED);
}

static inline uint32_t ld32(const uint32_t *x)
{
	return __atomic_load_n(x, __ATOMIC_RELAXED);
}

static inline void st64(uint64_t *x, uint64_t v)
{
	__atomic_store_n(x, v, __ATOMIC_RELAXED);
}

static inline void st32(uint32_t *x, uint32_t v)
{
	__atomic_store_n(x, v, __ATOMIC_RELAXED);
}

/* A commit is in place (or, info_seq 0, the state open left): snapshots
 * begun from now on see it.  Then the readers the slots show are the
 * live snapshots older than it (a reader that read the old info after
 * this store sees info_seq change and reads again: Dekker's pattern, both
 * sides sequentially consistent), so the groups no one holds go, and the
 * youngest live snapshot older than the commit, which owns the versions
 * it replaces (pager_retire), has a group. */
void pager_snap_publish(ut_pager *p)
{
	uint64_t live[RSLOTS], seq = ld64(&p->info_seq) + 1, young = 0;
	const uint8_t *m = p->meta->cur->pg.data;
	struct snapinfo *in = &p->info[seq & 1];
	unsigned n;
	int any = 0;

	st64(&in->lsn, p->lsn);
	st64(&in->defkeys, ut_ld64(m + UT_META_DEFKEYS));
	st32(&in->root, ut_ld32(m + UT_META_ROOT));
	st32(&in->npages, ut_ld32(m + UT_META_PAGECOUNT));
	st32(&in->catroot, ut_ld32(m + UT_META_CATROOT));
	__atomic_store_n(&p->info_seq, seq, __ATOMIC_SEQ_CST);
	n = live_lsns(p, live);
	snap_reclaim(p, live, n);
	for (unsigned i = 0; i < n; i++) {
		if (live[i] < p->lsn && (!any || live[i] > young)) {
			young = live[i];
			any = 1;
		}
	}
	/* every older live snapshot got its group at an earlier commit: it
	 * was the youngest then */
	if (any && (!p->snap_tail || p->snap_tail->lsn < young))
		grp_append(p, young, 0);
#ifndef NDEBUG
	for (unsigned i = 0; i < n; i++) {
		int found = live[i] >= p->lsn;

		for (struct snapgrp *g = p->snap_head; g && !found; g = g->next)
			found = g->lsn == live[i];
		assert(found);
	}
#endif
}

/* Where a thread starts looking for a free reader slot: threads spread
 * over the slots, each mostly finding its own free (no cache line two
 * threads write). */
static __thread unsigned slot_hint = UINT32_MAX;
static unsigned next_hint;

/* Claim a free slot publishing lsn1; -1 if every one is taken. */
static int slot_claim(ut_pager *p, uint64_t lsn1)
{
	if (slot_hint == UINT32_MAX)
		slot_hint = __atomic_fetch_add(&next_hint, 1, __ATOMIC_RELAXED);
	for (unsigned k = 0; k < RSLOTS; k++) {
		unsigned i = (slot_hint + k) % RSLOTS, h;
		uint64_t zero = 0;

		if (__atomic_load_n(&p->rslots[i].lsn1, __ATOMIC_RELAXED) ||
		    !__atomic_compare_exchange_n(&p->rslots[i].lsn1, &zero, lsn1, 0,
						 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			continue;
		h = __atomic_load_n(&p->rslot_hwm, __ATOMIC_SEQ_CST);
		while (h <= i && !__atomic_compare_exchange_n(&p->rslot_hwm, &h, i + 1,
							      0, __ATOMIC_SEQ_CST,
							      __ATOMIC_SEQ_CST))
			;
		return (int)i;
	}
	return -1;
}

static void snap_fill(ut_snap *s, const struct snapinfo *in)
{
	s->lsn = ld64(&in->lsn);
	s->defkeys = ld64(&in->defkeys);
	s->root = ld32(&in->root);
	s->npages = ld32(&in->npages);
	s->catroot = ld32(&in->catroot);
}

/* Every slot was taken: s registers in the group of the current LSN
 * under p->mu. */
static int snap_begin_locked(ut_pager *p, ut_snap *s)
{
	struct snapgrp *g;

	pthread_mutex_lock(&p->mu);
	snap_fill(s, &p->info[p->info_seq & 1]);
	g = p->snap_tail;
	if ((!g || g->lsn != s->lsn) && !(g = grp_append(p, s->lsn, 1))) {
		pthread_mutex_unlock(&p->mu);
		return UT_ENOMEM;
	}
	g->nheld++;
	s->grp = g;
	pthread_mutex_unlock(&p->mu);
	return UT_OK;
}

int ut_pager_snap_begin(ut_pager *p, ut_snap *s)
{
	uint64_t seq;

	if (__atomic_load_n(&p->poisoned, __ATOMIC_ACQUIRE)) {
		pager_fatal_errdetail(p);
		return UT_EFATAL;
	}
	if (!__atomic_load_n(&p->info_seq, __ATOMIC_ACQUIRE)) {
		/* the first snapshot since open publishes what open left */
		pthread_mutex_lock(&p->mu);
		if (!p->info_seq)
			pager_snap_publish(p);
		pthread_mutex_unlock(&p->mu);
	}
	s->began_ms = now_ms();
	memset(s->memo_key, 0, sizeof(s->memo_key));
	s->nmemo = 0;
	s->slot = -1;
	s->grp = NULL;
	for (;;) {
		seq = __atomic_load_n(&p->info_seq, __ATOMIC_ACQUIRE);
		snap_fill(s, &p->info[seq & 1]);
		if (s->slot < 0) {
			if ((s->slot = slot_claim(p, s->lsn + 1)) < 0)
				return snap_begin_locked(p, s);
		} else {
			__atomic_store_n(&p->rslots[s->slot].lsn1, s->lsn + 1,
					 __ATOMIC_SEQ_CST);
		}
		/* unchanged since the fields were read (so they are one
		 * commit's), and the writer's next publish sees the slot */
		if (__atomic_load_n(&p->info_seq, __ATOMIC_SEQ_CST) == seq)
			return UT_OK;
	}
}

/* The LSN a snapshot begun now would get (a later one, possibly, never
 * an earlier one). */
static uint64_t current_lsn(ut_pager *p)
{
	uint64_t seq = __atomic_load_n(&p->info_seq, __ATOMIC_ACQUIRE);

	return ld64(&p->info[seq & 1].lsn);
}

void ut_pager_snap_end(ut_pager *p, ut_snap *s)
{
	uint64_t live[RSLOTS];

	pager_memo_release(p, s);
	if (s->slot >= 0) {
		__atomic_store_n(&p->rslots[s->slot].lsn1, 0, __ATOMIC_RELEASE);
		/* no commit since s began: no group holds its LSN (the
		 * writer makes one only at a commit), so there is nothing to
		 * hand on; and the pool is within its bound */
		if (current_lsn(p) == s->lsn &&
		    !__atomic_load_n(&p->past_bound, __ATOMIC_RELAXED))
			return;
	}
	pthread_mutex_lock(&p->mu);
	if (s->slot < 0)
		s->grp->nheld--;
	snap_reclaim(p, live, live_lsns(p, live));
	/* frames the pool took past its bound because readers pinned every
	 * one (pool.c) go back now, not at the next write */
	pager_trim(p);
	pthread_mutex_unlock(&p->mu);
	pager_advise_drain(p);
}

void ut_pager_snap_stats(ut_pager *p, ut_snap_stats *out)
{
	uint64_t live[RSLOTS];
	unsigned n;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&p->mu);
	n = live_lsns(p, live);
	snap_reclaim(p, live, n);
	out->snapshots = n;
	for (struct snapgrp *g = p->snap_head; g; g = g->next)
		out->snapshots += g->nheld;
	out->versions = p->nkept;
	out->version_bytes = (uint64_t)p->nkept * UT_PAGE_SIZE;
	out->dropped = p->kept_dropped;
	pthread_mutex_unlock(&p->mu);
}

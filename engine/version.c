/*
 * engine/version.c - page versions and snapshots.
 *
 * Contract (pager.h, "Versions"): a committed version (struct pver) never
 * changes after it is published.  A version V a commit replaces is seen by
 * the snapshots whose LSN lies in [created, replaced) (created: V's page
 * LSN; replaced: V->until); it is kept exactly while one of them lives,
 * and a snapshot reads the newest version at or before its LSN, or none.
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
 * by page number (vbuckets, newest first).  Everything here runs under
 * p->mu; a version no owner holds is freed by its last reader's release.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pager_int.h"

struct pver *pager_pver_new(uint8_t *data, uint32_t pgno)
{
	struct pver *v = calloc(1, sizeof(*v));

	if (v) {
		v->pg.data = data;
		v->pg.pgno = pgno;
		v->pg.snap = UT_PG_PINNED;
		v->refs = 1; /* the owner's */
	}
	return v;
}

static void pver_init(struct pver *v, uint8_t *data, uint32_t pgno)
{
	memset(v, 0, sizeof(*v));
	v->pg.data = data;
	v->pg.pgno = pgno;
	v->pg.snap = UT_PG_PINNED;
	v->refs = 1; /* the owner's */
}

struct pver *pager_pver_get(ut_pager *p, uint8_t *data, uint32_t pgno)
{
	struct pver *v = p->vfree;

	if (!v)
		return pager_pver_new(data, pgno);
	p->vfree = v->qnext;
	p->nvfree--;
	pver_init(v, data, pgno);
	return v;
}

void pager_pver_free(ut_pager *p, struct pver *v)
{
	if (p->nvfree >= VFREE_MAX) {
		free(v);
		return;
	}
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
			return v->until > lsn ? v : NULL;
	return NULL;
}

static void own_append(ut_snap *s, struct pver *v)
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
	ut_snap *s = p->snap_head;
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
	ut_snap *s = p->snap_tail;
	struct pver **b;

	if (!pager_snap_sees(p, v)) {
		pver_disown(p, v);
		return;
	}
	v->until = until;
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
static void kept_hand_off(ut_pager *p, ut_snap *s)
{
	ut_snap *to = s->prev;
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
	for (ut_snap *s = p->snap_head; s; s = s->next) {
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

	clock_gettime(CLOCK_MONOTONIC, &ts);
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

int ut_pager_snap_begin(ut_pager *p, ut_snap *s)
{
	const uint8_t *m;

	pthread_mutex_lock(&p->mu);
	if (__atomic_load_n(&p->poisoned, __ATOMIC_ACQUIRE)) {
		pager_fatal_errdetail(p);
		pthread_mutex_unlock(&p->mu);
		return UT_EFATAL;
	}
	m = p->meta->cur->pg.data;
	s->lsn = p->lsn;
	s->root = ut_ld32(m + UT_META_ROOT);
	s->npages = ut_ld32(m + UT_META_PAGECOUNT);
	s->catroot = ut_ld32(m + UT_META_CATROOT);
	s->defkeys = ut_ld64(m + UT_META_DEFKEYS);
	s->began_ms = now_ms();
	memset(s->memo_key, 0, sizeof(s->memo_key));
	s->nmemo = 0;
	s->kept = s->kept_tail = NULL;
	s->next = NULL;
	s->prev = p->snap_tail;
	if (p->snap_tail)
		p->snap_tail->next = s;
	else
		p->snap_head = s;
	p->snap_tail = s;
	pthread_mutex_unlock(&p->mu);
	return UT_OK;
}

void ut_pager_snap_end(ut_pager *p, ut_snap *s)
{
	pager_memo_release(p, s);
	pthread_mutex_lock(&p->mu);
	kept_hand_off(p, s);
	if (s->prev)
		s->prev->next = s->next;
	else
		p->snap_head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		p->snap_tail = s->prev;
	/* frames the pool took past its bound because readers pinned every
	 * one (pool.c) go back now, not at the next write */
	pager_trim(p);
	pthread_mutex_unlock(&p->mu);
	pager_advise_drain(p);
}

void ut_pager_snap_stats(ut_pager *p, ut_snap_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&p->mu);
	for (ut_snap *s = p->snap_head; s; s = s->next)
		out->snapshots++;
	out->versions = p->nkept;
	out->version_bytes = (uint64_t)p->nkept * UT_PAGE_SIZE;
	out->dropped = p->kept_dropped;
	pthread_mutex_unlock(&p->mu);
}

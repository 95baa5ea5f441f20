/*
 * engine/version.c - page versions and snapshots.
 *
 * Contract (pager.h, "Versions"): a committed version (struct pver) never
 * changes after it is published.  A version a commit replaces is kept
 * while a live snapshot sees it, in a store by page number (newest first)
 * and in the order versions were replaced; a snapshot reads the newest
 * version at or before its LSN.  The store is bounded by the snapshot
 * budget: past it the versions replaced first go, and a snapshot that then
 * misses a version gets UT_ESNAPSHOT, never another version.  Versions are
 * freed when the oldest snapshot no longer needs them and no reader pins
 * them.  Everything here runs under p->mu.
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
		v->pg.snap = 1;
		v->refs = 1; /* the owner's */
	}
	return v;
}

/* Its owner lets v go: freed now, or by the last reader's release.
 * p->mu held. */
static void pver_disown(ut_pager *p, struct pver *v)
{
	if (!__atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL)) {
		pager_buf_put(p, v->pg.data);
		free(v);
	}
}

static inline struct pver **vbucket(ut_pager *p, uint32_t pgno)
{
	return &p->vbuckets[(pgno * 2654435761u) & (VBUCKETS - 1)];
}

/* The kept version of pgno that snapshot LSN lsn sees: the newest one
 * published at or before it.  Bucket chains hold the newest first. */
static struct pver *kept_find(ut_pager *p, uint32_t pgno, uint64_t lsn)
{
	for (struct pver *v = *vbucket(p, pgno); v; v = v->hnext)
		if (v->pg.pgno == pgno && ut_page_lsn(v->pg.data) <= lsn)
			return v;
	return NULL;
}

/* Drop the oldest kept version (the one replaced first). */
void pager_kept_pop(ut_pager *p)
{
	struct pver *v = p->vhead, **pp = vbucket(p, v->pg.pgno);

	while (*pp != v)
		pp = &(*pp)->hnext;
	*pp = v->hnext;
	p->vhead = v->qnext;
	if (!p->vhead)
		p->vtail = NULL;
	p->nkept--;
	pver_disown(p, v);
}

/* Free the kept versions no live snapshot can need: those replaced at or
 * before the oldest snapshot's LSN (snapshots begin in LSN order). */
static void kept_gc(ut_pager *p)
{
	uint64_t oldest = p->snap_head ? p->snap_head->lsn : UINT64_MAX;

	while (p->vhead && p->vhead->until <= oldest)
		pager_kept_pop(p);
}

/* The commit at LSN until replaced v.  Live snapshots are all older than
 * that commit: keep v for them if one of them sees it; over the budget, drop the oldest kept
 * versions: a snapshot older than what they were replaced at may no
 * longer find its page (UT_ESNAPSHOT), a younger one always does. */
void pager_retire(ut_pager *p, struct pver *v, uint64_t until)
{
	struct pver **b;

	/* needed by a live snapshot iff one began at or after v's commit
	 * (a later snapshot sees the new version): the newest one decides */
	if (!p->snap_tail || p->snap_tail->lsn < ut_page_lsn(v->pg.data)) {
		pver_disown(p, v);
		return;
	}
	b = vbucket(p, v->pg.pgno);
	v->until = until;
	v->hnext = *b;
	*b = v;
	v->qnext = NULL;
	if (p->vtail)
		p->vtail->qnext = v;
	else
		p->vhead = v;
	p->vtail = v;
	p->nkept++;
	while (p->nkept > p->kept_cap) {
		if (p->vhead->until > p->lost_below)
			p->lost_below = p->vhead->until;
		p->kept_dropped++;
		pager_kept_pop(p);
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
		pthread_mutex_unlock(&p->mu);
		ut_set_errdetail("%s: an earlier commit failed; the handle refuses "
				 "further use until reopened", p->path);
		return UT_EFATAL;
	}
	m = p->meta->cur->pg.data;
	s->lsn = p->lsn;
	s->root = ut_ld32(m + UT_META_ROOT);
	s->npages = ut_ld32(m + UT_META_PAGECOUNT);
	s->catroot = ut_ld32(m + UT_META_CATROOT);
	s->began_ms = now_ms();
	memset(s->memo, 0, sizeof(s->memo));
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
	for (unsigned i = 0; i < UT_SNAP_MEMO; i++)
		ut_pager_release(p, s->memo[i]);
	pthread_mutex_lock(&p->mu);
	if (s->prev)
		s->prev->next = s->next;
	else
		p->snap_head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		p->snap_tail = s->prev;
	kept_gc(p);
	pthread_mutex_unlock(&p->mu);
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

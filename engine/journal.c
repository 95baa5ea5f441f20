/*
 * engine/journal.c - the write transaction: private copies, allocation
 * and the free list, commit and rollback.
 *
 * Contract (pager.h, "Versions", "Commit"): the writer's first change to a
 * page gives it a private copy; rollback drops the copies; commit logs
 * them (the log hook runs without p->mu), stamps the commit LSN, and
 * publishes them all as the pages' new committed versions under p->mu.
 * Everything here is called by the single writer.
 */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "freecheck.h"
#include "pager_int.h"

int pager_tx_add(ut_pager *p, struct frame *f)
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

/* f leaves the list of frames with a shadow; its shadow is the caller's. */
static uint8_t *shadow_unlink(ut_pager *p, struct frame *f)
{
	uint8_t *b = f->shadow;

	if (f->sh_prev)
		f->sh_prev->sh_next = f->sh_next;
	else
		p->shadow_old = f->sh_next;
	if (f->sh_next)
		f->sh_next->sh_prev = f->sh_prev;
	else
		p->shadow_new = f->sh_prev;
	f->sh_prev = f->sh_next = NULL;
	f->shadow = NULL;
	p->nshadow--;
	return b;
}

void pager_shadow_drop(ut_pager *p, struct frame *f)
{
	if (f->shadow)
		pager_buf_put(p, shadow_unlink(p, f));
}

void pager_shadow_room(ut_pager *p, size_t more)
{
	while (p->shadow_old &&
	       p->nframes + p->preout + p->nshadow + more > pager_buf_budget(p)) {
		pager_shadow_drop(p, p->shadow_old);
		p->shadows_dropped++;
	}
}

void ut_pager_shadows(ut_pager *p, size_t *held, uint64_t *dropped)
{
	pthread_mutex_lock(&p->mu);
	*held = p->nshadow;
	*dropped = p->shadows_dropped;
	pthread_mutex_unlock(&p->mu);
}

/* buf, an image of f's page equal to cur's data but in the blocks of
 * stale, becomes f's shadow, the newest, if the budget has room for it
 * once older shadows made way; else it goes back to the pool.  Every
 * page may have one while the cache has room (a database within the
 * cache: no full copy at all); past it the pages changed last keep
 * theirs -- the ones every commit changes (root, interior pages, page 0)
 * always.  p->mu held. */
static void shadow_keep(ut_pager *p, struct frame *f, uint8_t *buf,
			uint64_t stale)
{
	assert(!f->shadow);
	pager_shadow_room(p, 1);
	if (p->nframes + p->preout + p->nshadow + 1 > pager_buf_budget(p)) {
		pager_buf_put(p, buf);
		return;
	}
	f->shadow = buf;
	f->shadow_stale = stale;
	f->sh_next = NULL;
	f->sh_prev = p->shadow_new;
	if (p->shadow_new)
		p->shadow_new->sh_next = f;
	else
		p->shadow_old = f;
	p->shadow_new = f;
	p->nshadow++;
}

/* Debug builds (and UT_DEBUG_COPY ones: the sanitizer build) check every
 * incremental copy against the version it copies. */
#if !defined(NDEBUG) && !defined(UT_DEBUG_COPY)
#define UT_DEBUG_COPY 1
#endif

/* Tests: the refresh skips the lowest stale block above block 0 (a
 * planted bug the check above, or a test's oracle, must catch). */
int ut_pager_sabotage_shadow;

/* Bring f's shadow up to date with cur: only the blocks that changed
 * since it was an exact image (block 0 always: the LSN and CRC are
 * stamped there outside any touched mask). */
static void shadow_refresh(struct frame *f, uint8_t *copy, uint64_t stale)
{
	const uint8_t *src = f->cur->pg.data;
	uint64_t m = stale | 1;

	if (__atomic_load_n(&ut_pager_sabotage_shadow, __ATOMIC_RELAXED) &&
	    (m & ~1ull))
		m &= ~(m & ~1ull & -(m & ~1ull));
	while (m) {
		unsigned b = (unsigned)__builtin_ctzll(m);
		uint64_t rest = ~(m >> b); /* the run of blocks from b */
		unsigned n = rest ? (unsigned)__builtin_ctzll(rest) : 64 - b;

		memcpy(copy + (size_t)b * UT_TOUCH_BLOCK,
		       src + (size_t)b * UT_TOUCH_BLOCK, (size_t)n * UT_TOUCH_BLOCK);
		m = b + n >= 64 ? 0 : m & ~(((1ull << n) - 1) << b);
	}
#ifdef UT_DEBUG_COPY
	/* checked against the full copy it replaces: a stale block here
	 * would reach the next commit, and the log, as the page's content */
	for (unsigned b = 0; b < UT_PAGE_SIZE / UT_TOUCH_BLOCK; b++) {
		size_t off = (size_t)b * UT_TOUCH_BLOCK;

		if (memcmp(copy + off, src + off, UT_TOUCH_BLOCK)) {
			fprintf(stderr, "untorn: page %u: the writer's incremental "
				"copy differs from the committed version in block "
				"%u (stale mask %#llx)\n", f->pg.pgno, b,
				(unsigned long long)stale);
			abort();
		}
	}
#endif
}

/* How a private copy taken under p->mu is filled once it is let go. */
enum fill { FILL_NONE, FILL_REFRESH, FILL_WHOLE };

/* The writer's first change to f in the transaction: it gets a private
 * copy to change; cur stays the committed version for readers, the
 * cleaner and the log's pre-image.  The copy is f's shadow when it has
 * one (to be brought up to date in the blocks changed since: *stale),
 * else a spare buffer to fill whole -- or not at all when the caller
 * rewrites the page whole.  p->mu held; *fill says what write_fill does
 * without it (the copy is the writer's alone, cur never changes: no
 * reader's miss or snapshot waits for 16 KiB of copying). */
static int write_locked(ut_pager *p, struct frame *f, int whole,
			enum fill *fill, uint64_t *stale)
{
	uint8_t *copy;

	*fill = FILL_NONE;
	if (f->txn)
		return UT_OK;
	if (!p->in_txn)
		return UT_EINVAL;
	assert(f->valid && f->cur && f->pg.data == f->cur->pg.data);
	if (pager_tx_add(p, f))
		return UT_ENOMEM;
	if (f->shadow) {
		*stale = f->shadow_stale;
		copy = shadow_unlink(p, f);
		*fill = whole ? FILL_NONE : FILL_REFRESH;
	} else {
		pager_shadow_room(p, 1);
		copy = pager_buf_get(p);
		if (!copy) {
			p->ntx--;
			return UT_ENOMEM;
		}
		*fill = whole ? FILL_NONE : FILL_WHOLE;
	}
	f->pg.data = copy;
	f->touched = 0;
	f->txn = 1;
	p->preout++;
	if (p->nframes + pre_charged(p) > p->maxframes && p->nframes > 1)
		pager_drop_one(p);
	return UT_OK;
}

/* Fill f's private copy as write_locked said, without p->mu. */
static void write_fill(struct frame *f, enum fill fill, uint64_t stale)
{
	if (fill == FILL_REFRESH)
		shadow_refresh(f, f->pg.data, stale);
	else if (fill == FILL_WHOLE)
		memcpy(f->pg.data, f->cur->pg.data, UT_PAGE_SIZE);
}

int ut_pager_write_tracked(ut_pager *p, ut_pg *pg, uint64_t **touched)
{
	struct frame *f = (struct frame *)pg;
	uint64_t stale = 0;
	enum fill fill;
	int rc;

	*touched = f->cur ? &f->touched : NULL;
	if (f->txn)
		return UT_OK;
	if (fatal_now(p)) {
		pthread_mutex_lock(&p->mu);
		pager_fatal_errdetail(p);
		pthread_mutex_unlock(&p->mu);
		return UT_EFATAL;
	}
	pthread_mutex_lock(&p->mu);
	rc = write_locked(p, f, 0, &fill, &stale);
	pthread_mutex_unlock(&p->mu);
	if (rc == UT_OK)
		write_fill(f, fill, stale);
	return rc;
}

int ut_pager_write_whole(ut_pager *p, ut_pg *pg)
{
	struct frame *f = (struct frame *)pg;
	uint64_t stale;
	enum fill fill;
	int rc;

	if (!f->txn) {
		pthread_mutex_lock(&p->mu);
		if (fatal_now(p)) {
			pager_fatal_errdetail(p);
			pthread_mutex_unlock(&p->mu);
			return UT_EFATAL;
		}
		rc = write_locked(p, f, f->cur != NULL, &fill, &stale);
		pthread_mutex_unlock(&p->mu);
		if (rc)
			return rc;
	}
	if (f->cur)
		f->touched = ~0ull;
#ifndef NDEBUG
	/* the caller rewrites every byte: make one it forgets visible */
	memset(f->pg.data, 0xa5, UT_PAGE_SIZE);
#endif
	return UT_OK;
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

uint32_t ut_pager_catalog_root(ut_pager *p)
{
	return meta32(p, UT_META_CATROOT);
}

int ut_pager_set_catalog_root(ut_pager *p, uint32_t root)
{
	int rc = meta_write(p);

	if (!rc) {
		ut_st32(p->meta->pg.data + UT_META_CATROOT, root);
		ut_st32(p->meta->pg.data + UT_META_VERSION,
			ut_meta_format(p->meta->pg.data));
	}
	return rc;
}

uint64_t ut_pager_default_keys(ut_pager *p)
{
	return ut_ld64(p->meta->pg.data + UT_META_DEFKEYS);
}

/* Tracked: a commit of default-table puts alone then logs and compares
 * 8 bytes of the header, not the page. */
int ut_pager_set_default_keys(ut_pager *p, uint64_t keys)
{
	uint64_t *touched;
	int rc = ut_pager_write_tracked(p, &p->meta->pg, &touched);

	if (!rc) {
		ut_st64(p->meta->pg.data + UT_META_DEFKEYS, keys);
		ut_page_touch(touched, UT_META_DEFKEYS, 8);
	}
	return rc;
}

int ut_pager_new_table_id(ut_pager *p, uint64_t floor, uint64_t *id)
{
	int rc = meta_write(p);

	if (!rc) {
		uint64_t last = ut_ld64(p->meta->pg.data + UT_META_TABLEID);

		/* ids start at 1: 0 is no table */
		*id = (last > floor ? last : floor) + 1;
		ut_st64(p->meta->pg.data + UT_META_TABLEID, *id);
	}
	return rc;
}

/* The free-list trunk at head (a UT_PT_FREE page), checked against the
 * header's free count: the last trunk holds the last pages counted. */
static int trunk_get(ut_pager *p, uint32_t head, ut_pg **out)
{
	uint32_t left = meta32(p, UT_META_FREECOUNT), next, n;
	ut_pg *pg;
	int rc;

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
	n = ut_page_aux(pg->data);
	if (left <= n || (left == n + 1) != (next == 0)) {
		ut_set_errdetail("%s: page %u: free-list next pointer %u and %u "
				 "listed pages, with %u free pages counted",
				 p->path, head, next, n, left);
		ut_pager_release(p, pg);
		return UT_ECORRUPT;
	}
	*out = pg;
	return UT_OK;
}

/* Take the last member page the trunk lists (not read for its content:
 * it is rewritten whole). */
static int alloc_member(ut_pager *p, ut_pg *trunk, int type, ut_pg **out)
{
	unsigned n = ut_page_aux(trunk->data);
	uint32_t m = ut_free_member(trunk->data, n - 1);
	uint64_t *touched;
	ut_pg *pg;
	int rc;

	if (m == 0 || m == trunk->pgno || m >= meta32(p, UT_META_PAGECOUNT)) {
		ut_set_errdetail("%s: page %u: free-list entry %u names page %u "
				 "(the file has %u pages)", p->path, trunk->pgno,
				 n - 1, m, meta32(p, UT_META_PAGECOUNT));
		ut_pager_release(p, trunk);
		return UT_ECORRUPT;
	}
	if ((rc = ut_pager_write_tracked(p, trunk, &touched))) {
		ut_pager_release(p, trunk);
		return rc;
	}
	ut_page_set_aux(trunk->data, n - 1);
	ut_page_touch(touched, 28, 4);
	ut_pager_release(p, trunk);
	if ((rc = ut_pager_get(p, m, &pg)))
		return rc;
	if ((rc = ut_pager_write_whole(p, pg))) {
		ut_pager_release(p, pg);
		return rc;
	}
	ut_st32(p->meta->pg.data + UT_META_FREECOUNT,
		meta32(p, UT_META_FREECOUNT) - 1);
	ut_page_init(pg->data, m, type);
	*out = pg;
	return UT_OK;
}

int ut_pager_alloc(ut_pager *p, int type, ut_pg **out)
{
	uint32_t head = meta32(p, UT_META_FREEHEAD), next;
	struct frame *f;
	ut_pg *pg;
	int rc;

	if (head && p->free_state == FREE_BAD) {
		ut_set_errdetail("%s", p->free_detail);
		return UT_ECORRUPT;
	}
	if ((rc = meta_write(p)))
		return rc;
	if (head && p->free_state == FREE_OK) {
		if ((rc = trunk_get(p, head, &pg)))
			return rc;
		/* the listed pages first: the trunk goes last */
		if (ut_page_aux(pg->data))
			return alloc_member(p, pg, type, out);
		next = ut_page_right(pg->data); /* before the page is rewritten */
		if ((rc = ut_pager_write_whole(p, pg))) {
			ut_pager_release(p, pg);
			return rc;
		}
		ut_st32(p->meta->pg.data + UT_META_FREEHEAD, next);
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
	rc = pager_get_frame(p, &f);
	if (!rc && (rc = pager_tx_add(p, f)))
		f->valid = 0;
	if (rc) {
		pthread_mutex_unlock(&p->mu);
		return rc;
	}
	ut_page_init(f->pg.data, pgno, type);
	frame_set_pgno(f, pgno);
	/* new to the file: the frame's buffer is the copy */
	pager_frame_set_cur(p, f, NULL);
	f->touched = ~0ull;
	f->valid = 1;
	f->txn = 1;
	f->dirty = 0;
	frame_set_pins(f, 1);
	__atomic_store_n(&f->ref, 1, __ATOMIC_RELAXED);
	pager_hinsert(p, f);
	pthread_mutex_unlock(&p->mu);
	ut_st32(p->meta->pg.data + UT_META_PAGECOUNT, pgno + 1);
	*out = &f->pg;
	return UT_OK;
}

/* Format 3: list pgno in the head trunk when it has room, without
 * writing the page itself -- so a drop of many pages neither copies nor
 * logs them, only the trunk's 4 bytes each.  1: listed; 0: no room (or
 * an older format), the page becomes a trunk. */
static int free_listed(ut_pager *p, uint32_t pgno)
{
	uint32_t head = meta32(p, UT_META_FREEHEAD);
	uint64_t *touched;
	unsigned n;
	ut_pg *t;
	int rc;

	if (!head || ut_meta_format(p->meta->pg.data) < UT_FORMAT_VERSION)
		return 0;
	if ((rc = trunk_get(p, head, &t)))
		return rc;
	n = ut_page_aux(t->data);
	if (n >= UT_FREE_CAP) {
		ut_pager_release(p, t);
		return 0;
	}
	if ((rc = ut_pager_write_tracked(p, t, &touched))) {
		ut_pager_release(p, t);
		return rc;
	}
	ut_st32(t->data + UT_PG_HDR + 4 * n, pgno);
	ut_page_set_aux(t->data, n + 1);
	ut_page_touch(touched, 28, 4);
	ut_page_touch(touched, UT_PG_HDR + 4 * n, 4);
	ut_pager_release(p, t);
	return 1;
}

int ut_pager_free(ut_pager *p, ut_pg *pg)
{
	int rc;

	if ((rc = meta_write(p)) == UT_OK)
		rc = free_listed(p, pg->pgno);
	if (rc < 0) {
		ut_pager_release(p, pg);
		return rc;
	}
	if (rc == 1) {
		ut_st32(p->meta->pg.data + UT_META_FREECOUNT,
			meta32(p, UT_META_FREECOUNT) + 1);
		ut_pager_release(p, pg);
		return UT_OK;
	}
	if ((rc = ut_pager_write_whole(p, pg))) {
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

uint32_t ut_pager_free_head(ut_pager *p)
{
	return meta32(p, UT_META_FREEHEAD);
}

/* At a transaction's start (nothing changed yet): the first time the
 * free list is not empty, check it against every tree (freecheck.c)
 * before any of its pages is reused.  A failure to read (I/O, memory)
 * leaves it unchecked, to try again at the next transaction; meanwhile
 * allocations append to the file. */
static void free_list_check(ut_pager *p)
{
	int rc;

	if (p->free_state != FREE_UNCHECKED || !meta32(p, UT_META_FREEHEAD))
		return;
	rc = ut_free_verify(p);
	if (rc == UT_OK) {
		p->free_state = FREE_OK;
	} else if (rc == UT_ECORRUPT) {
		/* whatever the walk found (a lying free list, a page reached
		 * twice, a page failing its checksum), the refusal says why */
		snprintf(p->free_detail, sizeof(p->free_detail), "%s (free pages "
			 "are not reused: the free list did not pass its check "
			 "against the trees; run untorn check)", ut_errdetail());
		p->free_state = FREE_BAD;
	}
	ut_clear_errdetail(); /* the transaction itself began */
}

int ut_pager_begin(ut_pager *p)
{
	if (p->readonly) {
		ut_set_errdetail("%s: opened read-only", p->path);
		return UT_EREADONLY;
	}
	if (fatal_now(p)) {
		int rc;

		pthread_mutex_lock(&p->mu);
		rc = pager_fatal_rc(p);
		pthread_mutex_unlock(&p->mu);
		return rc;
	}
	if (p->in_txn)
		return UT_EBUSY;
	/* (readers' evictions look at ntx) */
	pthread_mutex_lock(&p->mu);
	p->in_txn = 1;
	p->ntx = 0;
	p->txn_gets = 0;
	pthread_mutex_unlock(&p->mu);
	free_list_check(p);
	pager_pool_refill(p);
	return UT_OK;
}

/* The transaction is over: wake the cleaner for what it dirtied, and
 * give back frames past the bound.  p->mu held. */
static void end_txn(ut_pager *p)
{
	/* the next commit's version objects, taken without a lock */
	while (p->nvstash < VSTASH && p->vfree) {
		struct pver *v = p->vfree;

		p->vfree = v->qnext;
		p->nvfree--;
		p->vstash[p->nvstash++] = v;
	}
	if (p->cleaner_running) {
		p->ndirty_est += p->ntx;
		if (p->ndirty_est > pager_dirty_high(p))
			pthread_cond_signal(&p->work_cv);
	}
	p->last_txn_gets = p->txn_gets;
	p->ntx = 0;
	p->in_txn = 0;
	pager_shrink(p);
}

/* Rollback drops the private copies: cur never changed. */
static void discard_txn(ut_pager *p)
{
	for (size_t i = 0; i < p->ntx; i++) {
		struct frame *f = p->tx[i];

		f->txn = 0;
		if (f->cur) {
			/* differs from cur in the blocks it changed (no longer
			 * a private copy: counted as a shadow, if kept) */
			p->preout--;
			shadow_keep(p, f, f->pg.data, f->touched);
			f->pg.data = f->cur->pg.data;
		} else {
			int rc;

			frame_set_pins(f, 0); /* new to the file: no page to go back to */
			rc = pager_frame_forget(p, f);
			assert(rc == UT_OK); /* no version: no reader */
			(void)rc;
		}
	}
	end_txn(p);
}

/* Commit at lsn: each private copy becomes its page's committed version
 * (nv[i], allocated beforehand so this cannot fail), and the version it
 * replaces is kept for older snapshots or freed.  Readers see all of the
 * transaction or none of it: a snapshot gets lsn only once every new
 * version is in place (pager_snap_publish), else it is older than lsn
 * (and finds an old version: a hit, or kept, both decided under p->mu,
 * which its miss takes).  With
 * written (a log-less sync commit) the new versions are on disk already. */
static void publish_txn(ut_pager *p, uint64_t lsn, struct pver **nv, int written)
{
	p->lsn = lsn;
	/* every new version in place first (nv[i] then holds the one it
	 * replaced), then snapshots begun from now on see the commit, and
	 * the versions replaced are kept for the live older ones
	 * (version.c) */
	for (size_t i = 0; i < p->ntx; i++) {
		struct frame *f = p->tx[i];
		struct pver *old = f->cur;

		nv[i]->pg.data = f->pg.data;
		nv[i]->pg.pgno = f->pg.pgno;
		__atomic_store_n(&nv[i]->created, lsn, __ATOMIC_RELAXED);
		/* older snapshots' hits reach old, or what it leads to, from
		 * the new version (pool.c, older_hit) */
		if (old)
			pager_chain_link(nv[i], old);
		/* swapped before the old one is retired: a reader's hit that
		 * pins old after this finds the frame holds another version
		 * and lets it go (pool.c) */
		pager_frame_set_cur(p, f, nv[i]);
		nv[i] = old;
	}
	pager_snap_publish(p);
	for (size_t i = 0; i < p->ntx; i++) {
		struct frame *f = p->tx[i];
		struct pver *old = nv[i];

		if (old) {
			/* the private copy is the frame's page now; no
			 * snapshot sees old and no reader pins it (frozen: a
			 * hit that read its address before the swap cannot pin
			 * it now): its buffer, which differs from the new
			 * version in the blocks this commit touched, is the
			 * next private copy */
			p->preout--;
			if (!pager_snap_sees(p, old) && pver_freeze(old)) {
				pager_chain_unlink(old);
				shadow_keep(p, f, old->pg.data, f->touched);
				pager_pver_free(p, old);
			} else {
				pager_retire(p, old, lsn);
			}
		}
		f->dirty = !written;
		f->wgen++;
		f->txn = 0;
	}
	end_txn(p);
}

void ut_pager_rollback(ut_pager *p)
{
	if (!p->in_txn)
		return;
	pthread_mutex_lock(&p->mu);
	discard_txn(p);
	pthread_mutex_unlock(&p->mu);
	pager_advise_drain(p);
}

#ifdef UT_CHECK_TOUCHED
/* A tracked writer that changed a byte it did not record would leave that
 * change out of the log: stop the (test) program at once. */
static void check_touched(const struct frame *f)
{
	const uint8_t *pre = f->cur ? f->cur->pg.data : NULL;

	for (unsigned i = 0; pre && i < UT_PAGE_SIZE; i++) {
		int stamped = i < 4 || (i >= 8 && i < 16); /* crc, lsn */

		if (!stamped && !(f->touched >> (i / UT_TOUCH_BLOCK) & 1) &&
		    pre[i] != f->pg.data[i]) {
			fprintf(stderr, "untorn: page %u: byte %u changed outside "
				"the blocks its writer recorded\n", f->pg.pgno, i);
			abort();
		}
	}
}
#else
static void check_touched(const struct frame *f) { (void)f; }
#endif

/* An unused version object back to the writer's stash, or the spares
 * (never freed: a reader may still try to pin it).  locked: p->mu held. */
static void stash_put(ut_pager *p, struct pver *v, int locked)
{
	if (p->nvstash < VSTASH) {
		p->vstash[p->nvstash++] = v;
		return;
	}
	if (!locked)
		pthread_mutex_lock(&p->mu);
	pager_pver_free(p, v);
	if (!locked)
		pthread_mutex_unlock(&p->mu);
}

/* A committed version for each page of the transaction, allocated before
 * the commit is logged so that publishing cannot fail: from the writer's
 * stash (no lock), then -- a commit of more pages than the stash holds --
 * from the spares under p->mu, and only then new.  (New ones beside idle
 * spares would never be freed while the handle is open: a million-key
 * load left 0.6 million spare objects, 50 MiB, before the spares were
 * taken here.) */
static struct pver **new_versions(ut_pager *p, size_t n)
{
	size_t i = 0;

	if (n > p->capnvbuf) {
		struct pver **nb = realloc(p->nvbuf, n * sizeof(*nb));

		if (!nb)
			return NULL;
		p->nvbuf = nb;
		p->capnvbuf = n;
	}
	while (i < n && p->nvstash)
		p->nvbuf[i++] = p->vstash[--p->nvstash];
	if (i < n) {
		pthread_mutex_lock(&p->mu);
		while (i < n && p->vfree) {
			p->nvbuf[i++] = p->vfree;
			p->vfree = p->vfree->qnext;
			p->nvfree--;
		}
		pthread_mutex_unlock(&p->mu);
	}
	for (; i < n; i++) {
		if (!(p->nvbuf[i] = pager_pver_new(p, NULL, 0))) {
			while (i--)
				stash_put(p, p->nvbuf[i], 0);
			return NULL;
		}
	}
	/* recycled or new: as pager_pver_new makes them */
	for (i = 0; i < n; i++)
		pager_pver_init(p->nvbuf[i], NULL, 0);
	return p->nvbuf;
}

/* The log hook runs without the pool mutex: the private copies are the
 * writer's and the committed versions never change, so readers and the
 * cleaner go on while the commit's records are appended. */
int ut_pager_sabotage_images;

/* Does f's change go to the log whole?  With a log_images strategy, when
 * it is the page's first since the latest checkpoint request (its
 * committed LSN at or below that redo point, or the page new): the
 * recovery that may find it torn starts at or below that point, and
 * finds the image before any delta of the page (flush_fullpage.c).  Page
 * 0 never: it cannot tear (untorn.h, "Full-page images"). */
static int needs_image(ut_pager *p, const struct frame *f)
{
	if (!p->fl->ops->log_images || f->pg.pgno == 0 ||
	    __atomic_load_n(&ut_pager_sabotage_images, __ATOMIC_RELAXED))
		return 0;
	return !f->cur || ut_page_lsn(f->cur->pg.data) <=
		__atomic_load_n(&p->fpi_redo, __ATOMIC_ACQUIRE);
}

static int log_txn(ut_pager *p, int sync, uint64_t *lsn)
{
	ut_log_page *lp = realloc(p->logpages, p->ntx * sizeof(*lp));
	uint64_t images = 0;
	int rc;

	if (!lp)
		return UT_ENOMEM;
	p->logpages = lp;
	for (size_t i = 0; i < p->ntx; i++) {
		struct frame *f = p->tx[i];

		lp[i].pgno = f->pg.pgno;
		lp[i].pre = f->cur ? f->cur->pg.data : NULL;
		lp[i].post = f->pg.data;
		lp[i].touched = f->touched;
		lp[i].image = needs_image(p, f);
		images += (uint64_t)lp[i].image;
		check_touched(f);
	}
	/* The hook appends; durability (sync) is the caller's business
	 * outside the writer lock (group commit). */
	rc = p->hooks.log_commit(p->hooks.ctx, lp, p->ntx, sync, lsn);
	if (rc == UT_OK && images)
		ut_ctr_add(&p->ctr.page_images, images);
	return rc;
}

int ut_pager_commit(ut_pager *p, int sync)
{
	int sync_flush = sync && !p->hooks.log_commit;
	struct pver **nv = NULL;
	uint64_t lsn = p->lsn + 1;
	int rc = UT_OK;

	if (!p->in_txn)
		return UT_EINVAL;
	if (p->ntx && !(nv = new_versions(p, p->ntx)))
		rc = UT_ENOMEM;
	if (rc == UT_OK && p->ntx && p->hooks.log_commit)
		rc = log_txn(p, sync, &lsn);
	for (size_t i = 0; rc == UT_OK && i < p->ntx; i++)
		ut_page_set_lsn(p->tx[i]->pg.data, lsn);
	/* A log-less sync commit writes pages itself (flush_mu whether or
	 * not a cleaner runs yet: a reader may start one at any moment): no
	 * cleaner batch may be in flight meanwhile (it could land an older
	 * copy after it).  Not crash-atomic across pages: the log makes
	 * commits so. */
	if (sync_flush)
		pthread_mutex_lock(&p->flush_mu);
	pthread_mutex_lock(&p->mu);
	if (rc == UT_OK && p->ntx && sync_flush)
		rc = pager_flush_frames(p, p->tx, p->ntx, UT_FLUSH_DURABLE);
	if (rc == UT_OK && p->ntx) {
		publish_txn(p, lsn, nv, sync_flush);
	} else if (rc == UT_OK) {
		end_txn(p);
	} else {
		for (size_t i = 0; nv && i < p->ntx; i++)
			stash_put(p, nv[i], 1);
		discard_txn(p);
	}
	pthread_mutex_unlock(&p->mu);
	if (sync_flush)
		pthread_mutex_unlock(&p->flush_mu);
	pager_advise_drain(p);
	return rc;
}

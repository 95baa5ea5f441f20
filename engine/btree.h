/*
 * engine/btree.h - the B+tree over pager pages.
 *
 * Contract: keys 1..UT_MAX_KEY bytes ordered by memcmp then length, values
 * 0..UT_MAX_VALUE bytes.  All data lives in leaves; interior pages route.
 * The tree reaches pages only through pager.h (get/release/write/alloc/free),
 * so every change is journaled by the pager's write transaction.  The
 * default tree's root page number lives in the header (ut_pager_root /
 * ut_pager_set_root: the calls without _in); the _in calls take any tree's
 * root (a named table's, from the catalog, catalog.h) and rewrite it in the
 * caller's slot when a split adds a level or a delete removes one -- the
 * caller stores it back.  Callers
 * (db.c) check argument limits and hold the right lock: mutating calls need
 * the pager's write transaction.
 *
 * Cells (their layout is in page.h): a leaf cell holds its value inline
 * unless the cell would exceed UT_BT_MAX_LOCAL bytes, then in an overflow
 * chain; an interior cell's child holds keys < its key, the page header's
 * "right" keys >= the last key.
 *
 * A full leaf first shares its cells with a sibling under the same parent
 * (the roomier neighbour, then a window of three), and only when they are
 * all full does the window gain a page: three full leaves become four 3/4
 * full ones, so random inserts keep leaves about 90% full rather than the
 * 70% of halving splits.  An insert at a leaf's end splits there, leaving
 * the left page full (ascending loads).  Interior pages split in halves
 * (at the tree's right edge: at the end).  Deletes free empty
 * leaves, merge underfull neighbours that fit in one page, and collapse a
 * root left with a single child, so a tree deleted down to empty is one
 * empty leaf again and its pages are on the free list.
 */
#ifndef UT_BTREE_H
#define UT_BTREE_H

#include <stddef.h>
#include <stdint.h>

#include "pager.h"

#define UT_BT_MAX_LOCAL 4000u  /* max leaf cell bytes stored in the page */
#define UT_BT_MAXDEPTH 40

/* Reads take a snapshot s (pager.h), or NULL for the writer's view. */
int ut_bt_get(ut_pager *p, ut_snap *s, const void *key, size_t klen,
	      void **val, size_t *vlen);
/* The same without copying: *val points into the leaf, pinned in *pin
 * (release it with ut_pager_release when done), or for a value kept in
 * overflow pages into *owned, a malloc'd copy for the caller to free. */
int ut_bt_get_ref(ut_pager *p, ut_snap *s, const void *key, size_t klen,
		  ut_pg **pin, void **owned, const void **val, size_t *vlen);
/* added (may be NULL): 1 when the key was new (ut_bt_put_in's). */
int ut_bt_put(ut_pager *p, const void *key, size_t klen, const void *val,
	      size_t vlen, int *added);
int ut_bt_del(ut_pager *p, const void *key, size_t klen);

/* The same on the tree rooted at root (reads) or *root (changes, which
 * may rewrite *root).  *added: 1 when the put inserted a new key, 0 when
 * it replaced one. */
int ut_bt_get_in(ut_pager *p, ut_snap *s, uint32_t root, const void *key,
		 size_t klen, void **val, size_t *vlen);
int ut_bt_get_ref_in(ut_pager *p, ut_snap *s, uint32_t root, const void *key,
		     size_t klen, ut_pg **pin, void **owned, const void **val,
		     size_t *vlen);
int ut_bt_put_in(ut_pager *p, uint32_t *root, const void *key, size_t klen,
		 const void *val, size_t vlen, int *added);
int ut_bt_del_in(ut_pager *p, uint32_t *root, const void *key, size_t klen);
/* Put every page of the tree at root -- leaves, interior pages, overflow
 * chains -- on the free list (a table's drop), streaming: only the path
 * from the root is held, and freed pages are listed, not rewritten
 * (pager.h), so the cost is reading the tree once.  Each page is checked
 * before it is freed: a page reached twice (a shared subtree or chain,
 * kept in a bitmap of the file's pages), a page of the wrong type, a
 * child pointer to an ancestor or a tree deeper than UT_BT_MAXDEPTH is
 * UT_ECORRUPT, and the caller's transaction must roll back. */
int ut_bt_free_tree(ut_pager *p, uint32_t root);
/* Levels from root to leaf (1 = the root is a leaf). */
int ut_bt_depth(ut_pager *p, int *depth);
/* How full the leaves are (a walk of the whole tree; for tests and tools):
 * leaf_bytes / (leaves * UT_PG_USABLE) is the fill factor. */
typedef struct ut_bt_fill {
	uint64_t leaves, interior;
	uint64_t leaf_bytes;     /* cells + slots over all leaves */
	uint32_t min_leaf_bytes; /* of the emptiest leaf */
} ut_bt_fill;
int ut_bt_fill_get(ut_pager *p, ut_bt_fill *out);

/* Tests: when on, every redistribution rebuilds its pages from scratch,
 * the path it otherwise takes only when moving cells gets stuck. */
void ut_bt_set_always_rebuild(int on);

/* A cursor: keeps the path from the root and pins only the current leaf, so
 * next() moves along the leaf and climbs only at page boundaries. */
typedef struct ut_btcur {
	ut_pager *pager;
	ut_snap *snap; /* NULL: the writer's view */
	/* the tree's root slot (a table's, read at every seek: a put may
	 * move it); NULL: the default tree's, from the header or snap */
	const uint32_t *root;
	int depth; /* interior levels in pgno[]/idx[] */
	uint32_t pgno[UT_BT_MAXDEPTH];
	unsigned idx[UT_BT_MAXDEPTH];
	ut_pg *leaf;
	unsigned li;
	int valid;
	uint8_t *vbuf; /* overflow values are assembled here */
	size_t vcap;
	/* the last key of the leaf left behind: the next leaf's keys must be
	 * above it, or the tree is damaged (a scan would repeat keys, or
	 * loop through shared subtrees) */
	size_t lastkl; /* 0: no leaf left yet */
	uint8_t lastkey[UT_MAX_KEY];
} ut_btcur;

void ut_btcur_init(ut_btcur *c, ut_pager *p, ut_snap *s);
/* A cursor over the tree whose root is *root (the slot must outlive it). */
void ut_btcur_init_in(ut_btcur *c, ut_pager *p, ut_snap *s,
		      const uint32_t *root);
/* First key >= key (klen 0: the first key); UT_NOTFOUND if none. */
int ut_btcur_seek(ut_btcur *c, const void *key, size_t klen);
int ut_btcur_next(ut_btcur *c);
int ut_btcur_get(ut_btcur *c, const void **key, size_t *klen,
		 const void **val, size_t *vlen);
/* Release the pinned leaf; the cursor becomes unpositioned. */
void ut_btcur_reset(ut_btcur *c);
void ut_btcur_fini(ut_btcur *c);

#endif /* UT_BTREE_H */

/*
 * engine/freecheck.c - the free list checked against every tree before
 * the engine reuses a free page (freecheck.h).
 *
 * Why: a free-list entry is trusted when a page is allocated -- the page
 * is rewritten whole, its old content unread (pager.h) -- so a file whose
 * free list names a page that a tree still uses (a crafted file with
 * valid checksums, or a damaged one) would have the engine overwrite live
 * data, and only `untorn check` would say so, after the fact.  SQLite
 * refuses a free page that is still referenced only when a cursor holds it
 * (btreeGetUnusedPage); LMDB trusts its free-page tree.  A page's content
 * cannot tell a live page from a free one here (a drop lists pages without
 * rewriting them: page.h), so the only sound test is the set of live
 * pages itself: this walk.
 *
 * What it does: every page the free list names (trunks and the pages they
 * list) is marked free -- each at most once, inside the file -- then every
 * tree is walked from its root: the default table, the catalog and each
 * table the catalog names, their interior pages, leaves and overflow
 * chains.  A page reached that is free, reached twice (shared by two trees
 * or two places in one), outside the file, or of the wrong type is
 * UT_ECORRUPT with a detail naming the table and both pages.  It reads
 * every live page once, through the pool (the writer's view: committed
 * pages not yet checkpointed included), and holds two bitmaps of the
 * file's page count.  No key order or count is checked (`untorn check`
 * does that); a page neither live nor free (leaked) is not an error.
 *
 * When (journal.c): at the start of the handle's first write transaction
 * that finds the free list non-empty -- a consistent state, no change in
 * flight -- once per handle.  Until it has passed, the pager takes no page
 * from the free list (it appends to the file: a transaction that frees
 * pages reuses them from the next one on); once it failed with
 * UT_ECORRUPT, every allocation that would take a free page is refused
 * with that detail.  After it passed, the engine's own frees and
 * allocations keep live and free pages apart (one writer; a drop refuses
 * a subtree reached twice).
 *
 * What it does not guarantee: damage made to the file while it is open
 * (the lock keeps other untorn writers out, not other programs); pages
 * read by readers are not checked against the free list (they change
 * nothing); a read-only handle never walks (it never allocates).
 *
 * Cost, and why no lighter walk yet: it reads every live page, ~0.8 s per
 * GiB at the first write (file in the OS cache).  Interior pages alone
 * name every tree page (1-2% of the reads); the leaves are read only for
 * their overflow pointers, and nothing in today's format says which
 * leaves have none.  Checking a free page only when it is taken is not
 * sound either: its content cannot show whether a chain or a tree still
 * reaches it (a drop lists pages without rewriting them), and a chain
 * page reused under a lying list would read back as another value.  No
 * header flag can vouch for the list (the threat is a crafted file with
 * valid checksums).  The format change that would make it cheap: a leaf
 * header bit "holds no overflow cell", set by every leaf write and checked
 * by ut_page_verify against the cells (a leaf that lies is refused whole
 * on read, so none of its values can be read wrong), and a file version
 * that says the bit is kept (older leaves, bit clear, are read as now);
 * the walk then reads interior pages, the leaves without the bit, and
 * their chains.  Moving the walk off the first write (a background pass
 * over a read snapshot, appending until it passes) is sound without a
 * format change but only moves the cost (and holds page versions while
 * it runs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"
#include "catalog.h"
#include "freecheck.h"
#include "pager.h"

struct fv {
	ut_pager *p;
	uint32_t count;         /* the header's page count */
	uint8_t *free_bits;     /* on the free list */
	uint8_t *live_bits;     /* reached through a tree */
	char table[UT_TABLE_NAME_MAX + 32]; /* what is walked, for details */
};

static int bit(const uint8_t *b, uint32_t i) { return b[i >> 3] >> (i & 7) & 1; }
static void set_bit(uint8_t *b, uint32_t i) { b[i >> 3] |= (uint8_t)(1u << (i & 7)); }

/* Page pgno, named by page `from`, joins the free set. */
static int mark_free(struct fv *v, uint32_t pgno, uint32_t from)
{
	if (pgno == 0 || pgno >= v->count) {
		ut_set_errdetail("%s: page %u: the free list names page %u "
				 "(the file has %u pages)", ut_pager_path(v->p),
				 from, pgno, v->count);
		return UT_ECORRUPT;
	}
	if (bit(v->free_bits, pgno)) {
		ut_set_errdetail("%s: page %u: the free list names page %u "
				 "twice", ut_pager_path(v->p), from, pgno);
		return UT_ECORRUPT;
	}
	set_bit(v->free_bits, pgno);
	return UT_OK;
}

/* Page pgno, reached from page `from` through the tree being walked. */
static int mark_live(struct fv *v, uint32_t pgno, uint32_t from)
{
	const char *path = ut_pager_path(v->p);

	if (pgno == 0 || pgno >= v->count) {
		ut_set_errdetail("%s: page %u: %s: a pointer to page %u (the "
				 "file has %u pages)", path, from, v->table,
				 pgno, v->count);
		return UT_ECORRUPT;
	}
	if (bit(v->free_bits, pgno)) {
		ut_set_errdetail("%s: page %u: %s uses it (from page %u) but "
				 "the free list names it", path, pgno, v->table,
				 from);
		return UT_ECORRUPT;
	}
	if (bit(v->live_bits, pgno)) {
		ut_set_errdetail("%s: page %u: %s reaches it a second time "
				 "(from page %u)", path, pgno, v->table, from);
		return UT_ECORRUPT;
	}
	set_bit(v->live_bits, pgno);
	return UT_OK;
}

static int walk_free(struct fv *v)
{
	uint32_t next = ut_pager_free_head(v->p), from = 0;
	int rc;

	while (next) {
		uint32_t pgno = next;
		ut_pg *pg;

		if ((rc = mark_free(v, pgno, from)))
			return rc;
		if ((rc = ut_pager_get(v->p, pgno, &pg)))
			return rc;
		if (ut_page_type(pg->data) != UT_PT_FREE) {
			ut_set_errdetail("%s: page %u: on the free list but of "
					 "type %d", ut_pager_path(v->p), pgno,
					 ut_page_type(pg->data));
			ut_pager_release(v->p, pg);
			return UT_ECORRUPT;
		}
		unsigned n = ut_page_aux(pg->data);
		for (unsigned i = 0; !rc && i < n && i < UT_FREE_CAP; i++)
			rc = mark_free(v, ut_free_member(pg->data, i), pgno);
		next = ut_page_right(pg->data);
		ut_pager_release(v->p, pg);
		if (rc)
			return rc;
		from = pgno;
	}
	return UT_OK;
}

static int walk_ovfl(struct fv *v, uint32_t pgno, uint32_t from)
{
	int rc;

	/* ut_pager_get checked each page's own fields; the chain's length
	 * against the value is btree.c's and check.c's.  Marking ends a
	 * cycle. */
	while (pgno) {
		ut_pg *pg;

		if ((rc = mark_live(v, pgno, from)) ||
		    (rc = ut_pager_get(v->p, pgno, &pg)))
			return rc;
		if (ut_page_type(pg->data) != UT_PT_OVERFLOW) {
			ut_set_errdetail("%s: page %u: %s: of type %d in an "
					 "overflow chain (from page %u)",
					 ut_pager_path(v->p), pgno, v->table,
					 ut_page_type(pg->data), from);
			ut_pager_release(v->p, pg);
			return UT_ECORRUPT;
		}
		from = pgno;
		pgno = ut_page_right(pg->data);
		ut_pager_release(v->p, pg);
	}
	return UT_OK;
}

static int walk_tree(struct fv *v, uint32_t pgno, uint32_t from, int depth,
		     int catalog);

/* A catalog leaf cell: the table it names is walked now. */
static int walk_table(struct fv *v, uint32_t leaf, const uint8_t *k,
		      size_t kl, const uint8_t *val, size_t vl)
{
	char saved[sizeof(v->table)], name[UT_TABLE_NAME_MAX + 1];
	ut_catent e;
	int rc;

	if (kl > UT_TABLE_NAME_MAX) {
		ut_set_errdetail("%s: page %u: catalog: a table name of %zu "
				 "bytes", ut_pager_path(v->p), leaf, kl);
		return UT_ECORRUPT;
	}
	memcpy(name, k, kl);
	name[kl] = 0;
	if ((rc = ut_cat_decode(val, vl, name, kl, ut_pager_path(v->p), &e)))
		return rc;
	memcpy(saved, v->table, sizeof(saved));
	snprintf(v->table, sizeof(v->table), "table \"%s\"", name);
	rc = walk_tree(v, e.root, leaf, 1, 0);
	memcpy(v->table, saved, sizeof(saved));
	return rc;
}

static int walk_tree(struct fv *v, uint32_t pgno, uint32_t from, int depth,
		     int catalog)
{
	ut_pg *pg;
	int rc;

	if (depth > UT_BT_MAXDEPTH) {
		ut_set_errdetail("%s: page %u: %s: deeper than %d levels",
				 ut_pager_path(v->p), from, v->table,
				 UT_BT_MAXDEPTH);
		return UT_ECORRUPT;
	}
	if ((rc = mark_live(v, pgno, from)) ||
	    (rc = ut_pager_get(v->p, pgno, &pg)))
		return rc;
	uint8_t *d = pg->data;
	int type = ut_page_type(d);
	unsigned n = ut_page_nslots(d);

	if (type != UT_PT_LEAF && type != UT_PT_INTERIOR) {
		ut_set_errdetail("%s: page %u: %s: of type %d in the tree "
				 "(from page %u)", ut_pager_path(v->p), pgno,
				 v->table, type, from);
		rc = UT_ECORRUPT;
	}
	/* ut_pager_get verified the cells' bounds and lengths (page.h) */
	for (unsigned i = 0; !rc && i < n; i++) {
		uint8_t *cell = ut_page_cell(d, i);

		if (type == UT_PT_INTERIOR) {
			rc = walk_tree(v, ut_ld32(cell), pgno, depth + 1, catalog);
			continue;
		}
		size_t kl = ut_ld16(cell);
		const uint8_t *k = cell + UT_LEAF_HDR;
		int ovfl = cell[2] & UT_CELL_OVFL;

		if (catalog && ovfl) {
			ut_set_errdetail("%s: page %u: catalog: an entry in "
					 "overflow pages", ut_pager_path(v->p),
					 pgno);
			rc = UT_ECORRUPT;
		} else if (catalog) {
			rc = walk_table(v, pgno, k, kl, k + kl, ut_ld32(cell + 3));
		} else if (ovfl) {
			rc = walk_ovfl(v, ut_ld32(k + kl), pgno);
		}
	}
	if (!rc && type == UT_PT_INTERIOR)
		rc = walk_tree(v, ut_page_right(d), pgno, depth + 1, catalog);
	ut_pager_release(v->p, pg);
	return rc;
}

int ut_free_verify(ut_pager *p)
{
	struct fv v = { .p = p, .count = ut_pager_page_count(p) };
	size_t bytes = ((size_t)v.count + 7) / 8;
	uint32_t catroot = ut_pager_catalog_root(p);
	int rc;

	v.free_bits = calloc(bytes ? bytes : 1, 1);
	v.live_bits = calloc(bytes ? bytes : 1, 1);
	if (!v.free_bits || !v.live_bits) {
		rc = UT_ENOMEM;
		goto out;
	}
	if ((rc = walk_free(&v)))
		goto out;
	snprintf(v.table, sizeof(v.table), "the default table");
	if ((rc = walk_tree(&v, ut_pager_root(p), 0, 1, 0)))
		goto out;
	if (catroot) {
		snprintf(v.table, sizeof(v.table), "the catalog");
		rc = walk_tree(&v, catroot, 0, 1, 1);
	}
out:
	free(v.free_bits);
	free(v.live_bits);
	return rc;
}

/*
 * engine/catalog.c - the catalog of named tables (contract in catalog.h).
 *
 * Design.  A database holds the default, unnamed table -- the B+tree whose
 * root is the header's root, exactly as before tables existed -- and any
 * number of named tables, each a B+tree of the same pages (btree.h).  The
 * catalog maps a name to {root, id, key count, page count} and is itself a
 * B+tree of those pages, its root in the header (UT_META_CATROOT) beside
 * the default tree's.  So the catalog needs nothing of its own: its pages
 * are journaled, logged as deltas, recovered by redo, versioned for
 * snapshots, copied by ut_backup and checked by ut_check like every other
 * page, and a transaction that changes several tables and the catalog
 * commits them in one log commit.
 *
 * A transaction keeps the state of each table it uses (root, counts) in
 * memory (db.c) and writes the entries of the tables it changed into the
 * catalog at commit, once per table, so a put into a named table costs
 * what a put into the default table costs.  A create writes its entry at
 * once (so the transaction lists it); a drop removes the entry and frees
 * every page of the table to the free list in the same transaction,
 * without rewriting or logging the pages (pager.h, the free list).
 *
 * Format: the header's fields at 96 (catalog root) and 104 (next table id)
 * are zero in every older file, and read as "no tables": a database of
 * format 1 or 2 opens unchanged, its keys in the default table.  The
 * first create sets the catalog root and with it the header's version to 3
 * (pager.h); until then nothing is written differently, so a database
 * that never gets a table stays format 2.  Older builds refuse format 3
 * (UT_EVERSION).
 *
 * Crafted files: every catalog leaf a lookup, change or listing lands on
 * is checked whole first (names of 1..255 bytes, 32-byte values held in
 * the page), so a catalog root or child pointer leading into a table's
 * tree is refused before a table is looked up or created there.  An entry
 * is checked where it is read (ut_cat_get): its size, a root inside the
 * file, not the default tree's or the catalog's root; with verify (ut_table_open), the root page's type and no other
 * entry naming the same root.  A cycle or shared subtree below a table's
 * root is caught where the walk meets it (btree.c: child pointers to an
 * ancestor, a page met twice in a drop; check.c: every page reached
 * once).  Every detail names the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"
#include "catalog.h"

static uint32_t cat_root(ut_pager *p, ut_snap *s)
{
	return s ? s->catroot : ut_pager_catalog_root(p);
}

static uint32_t main_root(ut_pager *p, ut_snap *s)
{
	return s ? s->root : ut_pager_root(p);
}

static uint32_t npages(ut_pager *p, ut_snap *s)
{
	return s ? s->npages : ut_pager_page_count(p);
}

static int bad_entry(const char *path, const char *name, size_t nlen,
		     const char *fmt, unsigned long long a, unsigned long long b)
{
	char what[160];

	snprintf(what, sizeof(what), fmt, a, b);
	ut_set_errdetail("%s: catalog: table \"%.*s\": %s", path, (int)nlen,
			 name, what);
	return UT_ECORRUPT;
}

int ut_cat_decode(const void *v, size_t len, const char *name, size_t nlen,
		  const char *path, ut_catent *e)
{
	const uint8_t *b = v;

	if (len != UT_CATENT_BYTES)
		return bad_entry(path, name, nlen, "entry of %llu bytes, not %llu",
				 len, UT_CATENT_BYTES);
	e->root = ut_ld32(b);
	e->flags = ut_ld32(b + 4);
	e->id = ut_ld64(b + 8);
	e->keys = ut_ld64(b + 16);
	e->pages = ut_ld64(b + 24);
	if (e->root == 0 || e->id == 0)
		return bad_entry(path, name, nlen, "root page %llu, id %llu",
				 e->root, e->id);
	return UT_OK;
}

static void encode(uint8_t *b, const ut_catent *e)
{
	ut_st32(b, e->root);
	ut_st32(b + 4, e->flags);
	ut_st64(b + 8, e->id);
	ut_st64(b + 16, e->keys);
	ut_st64(b + 24, e->pages);
}

static int cat_seek(ut_pager *p, ut_snap *s, uint32_t *root, ut_btcur *c,
		    const char *name, size_t nlen);
static int cat_step(ut_pager *p, ut_btcur *c);

/* Does an entry other than name's name root too?  One pass of a cursor
 * over the catalog's leaves (each checked whole); other entries' damage
 * is theirs to report when they are opened. */
static int root_shared(ut_pager *p, ut_snap *s, const char *name, size_t nlen,
		       uint32_t root)
{
	uint32_t croot = cat_root(p, s);
	ut_btcur c;
	int rc;

	for (rc = cat_seek(p, s, &croot, &c, NULL, 0); rc == UT_OK;
	     rc = cat_step(p, &c)) {
		const void *k, *v;
		size_t kl, vl;

		if ((rc = ut_btcur_get(&c, &k, &kl, &v, &vl)))
			break;
		if (ut_ld32(v) != root || (kl == nlen && !memcmp(k, name, nlen)))
			continue;
		ut_set_errdetail("%s: catalog: table \"%.*s\": root page %u is "
				 "also the root of table \"%.*s\"",
				 ut_pager_path(p), (int)nlen, name, root, (int)kl,
				 (const char *)k);
		rc = UT_ECORRUPT;
		break;
	}
	ut_btcur_fini(&c);
	return rc == UT_NOTFOUND ? UT_OK : rc;
}

/* What an entry says, against the header it is read with. */
static int verify_entry(ut_pager *p, ut_snap *s, const char *name, size_t nlen,
			const ut_catent *e)
{
	const char *path = ut_pager_path(p);

	if (e->root >= npages(p, s))
		return bad_entry(path, name, nlen, "root page %llu beyond the "
				 "file (%llu pages)", e->root, npages(p, s));
	if (e->root == main_root(p, s) || e->root == cat_root(p, s)) {
		ut_set_errdetail("%s: catalog: table \"%.*s\": root page %u is "
				 "the %s's root", path, (int)nlen, name, e->root,
				 e->root == main_root(p, s) ? "default table"
							    : "catalog");
		return UT_ECORRUPT;
	}
	if (e->pages == 0 || e->pages >= npages(p, s))
		return bad_entry(path, name, nlen, "a page count of %llu in a "
				 "file of %llu pages", e->pages, npages(p, s));
	return UT_OK;
}

/* The root page is a tree page (read through the pager: its checksum and
 * cells are checked there). */
static int verify_root_page(ut_pager *p, ut_snap *s, const char *name,
			    size_t nlen, const ut_catent *e)
{
	ut_pg *pg;
	int rc, t;

	if ((rc = ut_pager_get_at(p, s, e->root, &pg))) {
		char d[400];

		snprintf(d, sizeof(d), "%s", ut_errdetail());
		ut_set_errdetail("catalog: table \"%.*s\": %s", (int)nlen, name, d);
		return rc;
	}
	t = ut_page_type(pg->data);
	ut_pager_release(p, pg);
	if (t != UT_PT_LEAF && t != UT_PT_INTERIOR)
		return bad_entry(ut_pager_path(p), name, nlen, "root page %llu is "
				 "of type %llu, not a tree page", e->root,
				 (unsigned)t);
	return UT_OK;
}

/* Every cell of the catalog leaf c stands on: a name and an entry. */
static int leaf_ok(ut_pager *p, const ut_btcur *c)
{
	uint8_t *d = c->leaf->data;

	for (unsigned i = 0; i < ut_page_nslots(d); i++) {
		const uint8_t *cell = ut_page_cell(d, i);
		size_t kl = ut_ld16(cell);

		if (kl > UT_TABLE_NAME_MAX || (cell[2] & UT_CELL_OVFL) ||
		    ut_ld32(cell + 3) != UT_CATENT_BYTES) {
			ut_set_errdetail("%s: page %u: not a catalog page (cell %u: "
					 "a key of %zu bytes, a value of %u bytes%s), "
					 "but reached from the catalog's root",
					 ut_pager_path(p), c->leaf->pgno, i, kl,
					 ut_ld32(cell + 3), (cell[2] & UT_CELL_OVFL)
					 ? " in overflow pages" : "");
			return UT_ECORRUPT;
		}
	}
	return UT_OK;
}

/* The one walk of the catalog (lookups, changes, listings, the shared
 * root check): position c at the first name >= name (nlen 0: the
 * first), on a leaf checked whole.  UT_NOTFOUND past the last name. */
static int cat_seek(ut_pager *p, ut_snap *s, uint32_t *root, ut_btcur *c,
		    const char *name, size_t nlen)
{
	int rc;

	ut_btcur_init_in(c, p, s, root);
	rc = ut_btcur_seek(c, name, nlen);
	if (c->leaf && (rc == UT_OK || rc == UT_NOTFOUND)) {
		int lrc = leaf_ok(p, c);

		if (lrc)
			return lrc;
	}
	return rc;
}

/* The next name after c's, checking each leaf the walk arrives on whole. */
static int cat_step(ut_pager *p, ut_btcur *c)
{
	uint32_t at = c->leaf ? c->leaf->pgno : 0;
	int rc = ut_btcur_next(c);

	if (rc == UT_OK && c->leaf->pgno != at)
		rc = leaf_ok(p, c);
	return rc;
}

/* The catalog pages a change of name's entry will touch are catalog
 * pages (the leaf it lands on: a crafted root must not make the catalog
 * write into a table's tree). */
static int check_target(ut_pager *p, uint32_t root, const char *name,
			size_t nlen)
{
	ut_btcur c;
	int rc = cat_seek(p, NULL, &root, &c, name, nlen);

	ut_btcur_fini(&c);
	return rc == UT_NOTFOUND ? UT_OK : rc;
}

int ut_cat_get(ut_pager *p, ut_snap *s, const char *name, size_t nlen,
	       int verify, ut_catent *e)
{
	uint32_t root = cat_root(p, s);
	const void *k, *v;
	size_t kl, vlen;
	ut_btcur c;
	int rc;

	if (!root)
		return UT_NOTFOUND;
	rc = cat_seek(p, s, &root, &c, name, nlen);
	if (rc == UT_OK)
		rc = ut_btcur_get(&c, &k, &kl, &v, &vlen);
	if (rc == UT_OK && (kl != nlen || memcmp(k, name, nlen)))
		rc = UT_NOTFOUND;
	if (rc == UT_OK)
		rc = ut_cat_decode(v, vlen, name, nlen, ut_pager_path(p), e);
	ut_btcur_fini(&c);
	if (rc)
		return rc;
	if (rc == UT_OK)
		rc = verify_entry(p, s, name, nlen, e);
	if (rc == UT_OK && verify)
		rc = ut_cat_verify(p, s, name, nlen, e);
	return rc;
}

int ut_cat_verify(ut_pager *p, ut_snap *s, const char *name, size_t nlen,
		  const ut_catent *e)
{
	int rc = verify_root_page(p, s, name, nlen, e);

	return rc ? rc : root_shared(p, s, name, nlen, e->root);
}

int ut_cat_put(ut_pager *p, const char *name, size_t nlen, const ut_catent *e)
{
	uint8_t b[UT_CATENT_BYTES];
	uint32_t root = ut_pager_catalog_root(p), r0 = root;
	int added, rc;

	if (!root) {
		ut_pg *pg;

		if ((rc = ut_pager_alloc(p, UT_PT_LEAF, &pg)))
			return rc;
		root = pg->pgno;
		ut_pager_release(p, pg);
	} else if ((rc = check_target(p, root, name, nlen))) {
		return rc;
	}
	encode(b, e);
	rc = ut_bt_put_in(p, &root, name, nlen, b, sizeof(b), &added);
	if (root != r0) {
		int rc2 = ut_pager_set_catalog_root(p, root);

		if (rc == UT_OK)
			rc = rc2;
	}
	return rc;
}

int ut_cat_del(ut_pager *p, const char *name, size_t nlen)
{
	uint32_t root = ut_pager_catalog_root(p), r0 = root;
	int rc;

	if (!root)
		return UT_NOTFOUND;
	if ((rc = check_target(p, root, name, nlen)))
		return rc;
	rc = ut_bt_del_in(p, &root, name, nlen);
	if (root != r0) {
		int rc2 = ut_pager_set_catalog_root(p, root);

		if (rc == UT_OK)
			rc = rc2;
	}
	return rc;
}

int ut_cat_next(ut_pager *p, ut_snap *s, const char *after, size_t alen,
		char *name, size_t *nlen, ut_catent *e)
{
	uint32_t root = cat_root(p, s);
	const void *k, *v;
	size_t kl, vl;
	ut_btcur c;
	int rc;

	if (!root)
		return UT_NOTFOUND;
	rc = cat_seek(p, s, &root, &c, after, alen);
	if (rc == UT_OK && alen) {
		rc = ut_btcur_get(&c, &k, &kl, NULL, NULL);
		if (rc == UT_OK && kl == alen && memcmp(k, after, alen) == 0)
			rc = cat_step(p, &c);
	}
	if (rc == UT_OK)
		rc = ut_btcur_get(&c, &k, &kl, &v, &vl);
	if (rc == UT_OK && (kl == 0 || kl > UT_TABLE_NAME_MAX ||
			    memchr(k, 0, kl))) {
		ut_set_errdetail("%s: catalog: a table name of %zu bytes%s",
				 ut_pager_path(p), kl, kl && kl <= UT_TABLE_NAME_MAX
				 ? " holding a NUL byte" : "");
		rc = UT_ECORRUPT;
	}
	if (rc == UT_OK) {
		memcpy(name, k, kl);
		name[kl] = 0;
		*nlen = kl;
		rc = ut_cat_decode(v, vl, name, kl, ut_pager_path(p), e);
		if (rc == UT_OK)
			rc = verify_entry(p, s, name, kl, e);
	}
	ut_btcur_fini(&c);
	return rc;
}

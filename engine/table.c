/*
 * engine/table.c - named tables (untorn.h: ut_table_*, ut_t*): handles,
 * the state of each table a transaction uses, and the changes of a
 * table's tree and catalog entry.  The catalog itself (entries, their
 * checks) is catalog.c; transactions and the default table are db.c
 * (what the two share: txn.h).
 *
 * Contract: a ut_table handle names one table (name, id) of one database
 * for the handle's life (until ut_close); a table dropped and created
 * again under its name is another table, and the old handle answers
 * UT_EINVAL.  A transaction reads a table's catalog entry once, keeps
 * its root and counts in memory (struct ut_tstate) while its puts and
 * deletes change them, and stores the entries it changed at commit
 * (ut_tables_store), so a put into a named table costs what a put into
 * the default table costs and the catalog changes commit in the same
 * log commit as the trees.  Creates write their entry at once; a drop
 * frees every page of the table and deletes its entry in the same
 * transaction.  Locking: handles are listed under db->mu (readers open
 * them too); everything else runs in the caller's transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"
#include "catalog.h"
#include "db.h"
#include "pager.h"
#include "txn.h"

/* A named table's handle: its name and the id of the table it was opened
 * on (a table dropped and created again under the name is another). */
#define TABLE_MAGIC 0x7461626cu
struct ut_table {
	uint32_t magic; /* TABLE_MAGIC until ut_close */
	ut_db *db;
	uint64_t id;
	size_t nlen;
	char name[UT_TABLE_NAME_MAX + 1];
	ut_table *next;
	/* the root its entry had when ut_cat_verify passed (atomic; 0:
	 * never): the file changes only through this handle's own writes,
	 * so the check is run again only when the root moved */
	uint32_t verified_root;
};

/* A table as one transaction sees it: its catalog entry, changed in
 * memory by the writer's puts and deletes and stored back at commit
 * (dirty), so a put costs no catalog write. */
struct ut_tstate {
	ut_table *h;
	uint32_t root;
	uint64_t keys, pages;
	int dirty; /* counts or root changed since the entry was stored */
	int gone;  /* dropped by this transaction */
	struct ut_tstate *next;
};

void ut_tables_free(ut_db *db)
{
	for (ut_table *h = db->tables, *n; h; h = n) {
		n = h->next;
		h->magic = 0;
		free(h);
	}
	db->tables = NULL;
}

void ut_tables_release(ut_txn *t)
{
	for (struct ut_tstate *s = t->tables, *n; s; s = n) {
		n = s->next;
		free(s);
	}
	t->tables = NULL;
}

int ut_tstate_check(const struct ut_tstate *s)
{
	if (s->gone) {
		ut_set_errdetail("table \"%s\" was dropped", s->h->name);
		return UT_EINVAL;
	}
	return UT_OK;
}

/* The handle of table (name, id) of db: the one given out before, or a
 * new one. */
static int handle_of(ut_db *db, const char *name, size_t nlen, uint64_t id,
		     ut_table **out)
{
	ut_table *h;

	pthread_mutex_lock(&db->mu);
	for (h = db->tables; h; h = h->next)
		if (h->id == id && h->nlen == nlen && !memcmp(h->name, name, nlen))
			break;
	if (!h && (h = calloc(1, sizeof(*h)))) {
		h->magic = TABLE_MAGIC;
		h->db = db;
		h->id = id;
		h->nlen = nlen;
		memcpy(h->name, name, nlen);
		h->next = db->tables;
		db->tables = h;
	}
	pthread_mutex_unlock(&db->mu);
	*out = h;
	return h ? UT_OK : UT_ENOMEM;
}

static int check_name(const char *name, size_t *nlen)
{
	if (!name || !*name) {
		ut_set_errdetail("table name is empty (names are 1..%u bytes)",
				 UT_TABLE_NAME_MAX);
		return UT_EINVAL;
	}
	*nlen = strnlen(name, UT_TABLE_NAME_MAX + 1);
	if (*nlen > UT_TABLE_NAME_MAX) {
		ut_set_errdetail("table name of %zu bytes is longer than %u",
				 strlen(name), UT_TABLE_NAME_MAX);
		return UT_EINVAL;
	}
	return UT_OK;
}

static struct ut_tstate *tstate_add(ut_txn *t, ut_table *h, const ut_catent *e)
{
	struct ut_tstate *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->h = h;
	s->root = e->root;
	s->keys = e->keys;
	s->pages = e->pages;
	s->next = t->tables;
	t->tables = s;
	return s;
}

/* The state of the table behind handle h in t: the one t has, or read
 * from t's view of the catalog. */
static int tstate_of(ut_txn *t, ut_table *h, struct ut_tstate **out)
{
	ut_catent e;
	int rc;

	if (!h || h->magic != TABLE_MAGIC)
		return UT_EINVAL;
	if (h->db != t->db) {
		ut_set_errdetail("table \"%s\": the handle belongs to another "
				 "database (%s)", h->name,
				 ut_pager_path(h->db->pager));
		return UT_EINVAL;
	}
	for (struct ut_tstate *s = t->tables; s; s = s->next)
		if (s->h == h) {
			if (s->gone) {
				ut_set_errdetail("table \"%s\" was dropped in this "
						 "transaction", h->name);
				return UT_EINVAL;
			}
			*out = s;
			return UT_OK;
		}
	rc = ut_cat_get(t->db->pager, ut_txn_snap(t), h->name, h->nlen, 0, &e);
	if (rc == UT_NOTFOUND || (rc == UT_OK && e.id != h->id)) {
		ut_set_errdetail("table \"%s\" was dropped (or the transaction "
				 "that created it did not commit)", h->name);
		return UT_EINVAL;
	}
	if (rc)
		return rc;
	*out = tstate_add(t, h, &e);
	return *out ? UT_OK : UT_ENOMEM;
}

/* A damaged page met below a table's root: the detail names the table. */
int ut_tstate_rc(const struct ut_tstate *s, int rc)
{
	if (rc == UT_ECORRUPT || rc == UT_ESNAPSHOT) {
		char d[400];

		snprintf(d, sizeof(d), "%s", ut_errdetail());
		if (strncmp(d, "table \"", 7))
			ut_set_errdetail("table \"%s\": %s", s->h->name, d);
	}
	return rc;
}

static void entry_of(const struct ut_tstate *s, ut_catent *e)
{
	memset(e, 0, sizeof(*e));
	e->root = s->root;
	e->id = s->h->id;
	e->keys = s->keys;
	e->pages = s->pages;
}

/* Store the entries of the tables t changed (at commit, and before t
 * lists the catalog). */
int ut_tables_store(ut_txn *t)
{
	for (struct ut_tstate *s = t->tables; s; s = s->next) {
		ut_catent e;
		int rc;

		if (!s->dirty || s->gone)
			continue;
		entry_of(s, &e);
		if ((rc = ut_cat_put(t->db->pager, s->h->name, s->h->nlen, &e)))
			return rc;
		s->dirty = 0;
	}
	return UT_OK;
}

/* Pages in use (not free): what a tree change allocated or freed is the
 * difference, since the writer changes one tree at a time. */
static uint64_t pages_in_use(ut_pager *p)
{
	return (uint64_t)ut_pager_page_count(p) - ut_pager_free_count(p);
}

int ut_tables_store_default(ut_txn *t)
{
	ut_pager *p = t->db->pager;
	int rc = UT_OK;

	/* format 2 keeps no count: the create that makes format 3 counts */
	if (ut_pager_catalog_root(p))
		rc = ut_pager_set_default_keys(p, ut_pager_default_keys(p) +
						      (uint64_t)t->defdelta);
	if (rc == UT_OK)
		t->defdelta = 0;
	return rc;
}

/* The default table's keys by a walk of its tree, in t's view. */
static int count_default(ut_txn *t, uint64_t *n)
{
	ut_btcur c;
	int rc;

	*n = 0;
	ut_btcur_init(&c, t->db->pager, ut_txn_snap(t));
	for (rc = ut_btcur_seek(&c, NULL, 0); rc == UT_OK; rc = ut_btcur_next(&c))
		++*n;
	ut_btcur_fini(&c);
	return rc == UT_NOTFOUND ? UT_OK : rc;
}

/* The first create makes the file format 3: from then on the header
 * keeps the default table's key count, so count it now, once (a walk
 * of the default tree: the one O(keys) step; nothing counted before). */
static int start_default_count(ut_txn *t)
{
	uint64_t n;
	int rc;

	if (ut_pager_catalog_root(t->db->pager))
		return UT_OK;
	if ((rc = count_default(t, &n)) ||
	    (rc = ut_pager_set_default_keys(t->db->pager, n)))
		return rc;
	t->defdelta = 0;
	return UT_OK;
}

static int table_create(ut_txn *t, const char *name, size_t nlen,
			ut_table **out)
{
	ut_pager *p = t->db->pager;
	ut_catent e = { 0 };
	ut_table *h;
	ut_pg *pg;
	int rc;

	if ((rc = start_default_count(t)) ||
	    (rc = ut_pager_new_table_id(p, t->db->last_table_id, &e.id)) ||
	    (rc = ut_pager_alloc(p, UT_PT_LEAF, &pg)))
		return rc;
	t->db->last_table_id = e.id;
	e.root = pg->pgno;
	e.pages = 1;
	ut_pager_release(p, pg);
	if ((rc = ut_cat_put(p, name, nlen, &e)) ||
	    (rc = handle_of(t->db, name, nlen, e.id, &h)))
		return rc;
	if (!tstate_add(t, h, &e))
		return UT_ENOMEM;
	*out = h;
	return UT_OK;
}

int ut_table_open(ut_txn *t, const char *name, unsigned flags, ut_table **out)
{
	ut_catent e;
	size_t nlen;
	int rc;

	ut_clear_errdetail();
	if (!t || !out || (flags & ~UT_CREATE))
		return UT_EINVAL;
	*out = NULL;
	if ((rc = check_name(name, &nlen)))
		return rc;
	for (struct ut_tstate *s = t->tables; s; s = s->next)
		if (!s->gone && s->h->nlen == nlen && !memcmp(s->h->name, name, nlen)) {
			*out = s->h;
			return UT_OK;
		}
	rc = ut_cat_get(t->db->pager, ut_txn_snap(t), name, nlen, 0, &e);
	if (rc == UT_OK) {
		if ((rc = handle_of(t->db, name, nlen, e.id, out)))
			return rc;
		if (__atomic_load_n(&(*out)->verified_root, __ATOMIC_ACQUIRE) !=
		    e.root) {
			if ((rc = ut_cat_verify(t->db->pager, ut_txn_snap(t), name,
						nlen, &e))) {
				*out = NULL;
				return rc;
			}
			__atomic_store_n(&(*out)->verified_root, e.root,
					 __ATOMIC_RELEASE);
		}
		return tstate_add(t, *out, &e) ? UT_OK : UT_ENOMEM;
	}
	if (rc != UT_NOTFOUND)
		return rc;
	if (!(flags & UT_CREATE)) {
		ut_set_errdetail("no table \"%s\"", name);
		return UT_NOTFOUND;
	}
	if ((rc = ut_txn_check_write(t)))
		return rc;
	return ut_txn_change_rc(t, table_create(t, name, nlen, out));
}

/* Free the table's pages: exactly as many as its entry counts, or the
 * entry or the tree is damaged. */
static int table_free_pages(ut_txn *t, struct ut_tstate *s)
{
	ut_pager *p = t->db->pager;
	uint64_t before = pages_in_use(p), freed;
	int rc = ut_bt_free_tree(p, s->root);

	if (rc) {
		char d[400];

		snprintf(d, sizeof(d), "%s", ut_errdetail());
		ut_set_errdetail("table \"%s\": %s", s->h->name, d);
		return rc;
	}
	freed = before - pages_in_use(p);
	if (freed != s->pages) {
		ut_set_errdetail("%s: table \"%s\": its catalog entry counts %llu "
				 "pages, its tree held %llu", ut_pager_path(p),
				 s->h->name, (unsigned long long)s->pages,
				 (unsigned long long)freed);
		return UT_ECORRUPT;
	}
	return UT_OK;
}

int ut_table_drop(ut_txn *t, ut_table *h)
{
	struct ut_tstate *s;
	int rc;

	ut_clear_errdetail();
	if ((rc = ut_txn_check_write(t)) || (rc = tstate_of(t, h, &s)))
		return rc;
	ut_txn_changing(t);
	if ((rc = table_free_pages(t, s)) ||
	    (rc = ut_cat_del(t->db->pager, h->name, h->nlen)))
		return ut_txn_change_rc(t, rc == UT_NOTFOUND ? UT_ECORRUPT : rc);
	s->gone = 1;
	return UT_OK;
}

int ut_table_clear(ut_txn *t, ut_table *h)
{
	struct ut_tstate *s;
	ut_pg *pg;
	int rc;

	ut_clear_errdetail();
	if ((rc = ut_txn_check_write(t)) || (rc = tstate_of(t, h, &s)))
		return rc;
	ut_txn_changing(t);
	if ((rc = table_free_pages(t, s)) ||
	    (rc = ut_pager_alloc(t->db->pager, UT_PT_LEAF, &pg)))
		return ut_txn_change_rc(t, rc);
	s->root = pg->pgno;
	ut_pager_release(t->db->pager, pg);
	s->keys = 0;
	s->pages = 1;
	s->dirty = 1;
	return UT_OK;
}

static void info_of(const char *name, size_t nlen, const ut_catent *e,
		    ut_table_info *info)
{
	memset(info, 0, sizeof(*info));
	memcpy(info->name, name, nlen);
	info->keys = e->keys;
	info->pages = e->pages;
}

/* The catalog tree's pages (*cat) and the pages its entries count
 * (*tables), as s sees them (NULL: the writer).  The walk stops past
 * npages visits, so a crafted catalog whose interior pages share a child
 * costs at most a visit per page of the file. */
static int catalog_pages(ut_pager *p, ut_snap *s, uint32_t pgno, int depth,
			 uint32_t npages, uint64_t *cat, uint64_t *tables)
{
	ut_pg *pg;
	int rc;

	if (depth > UT_BT_MAXDEPTH || *cat >= npages) {
		ut_set_errdetail("%s: page %u: catalog: deeper than %d levels "
				 "or more pages than the file's %u",
				 ut_pager_path(p), pgno, UT_BT_MAXDEPTH, npages);
		return UT_ECORRUPT;
	}
	if ((rc = ut_pager_get_at(p, s, pgno, &pg)))
		return rc;
	++*cat;
	uint8_t *d = pg->data;
	unsigned n = ut_page_nslots(d);
	int type = ut_page_type(d);

	if (type != UT_PT_LEAF && type != UT_PT_INTERIOR) {
		ut_set_errdetail("%s: page %u: catalog: of type %d in the tree",
				 ut_pager_path(p), pgno, type);
		rc = UT_ECORRUPT;
	}
	/* the cells' bounds and lengths were checked when the page was read */
	for (unsigned i = 0; !rc && i < n; i++) {
		uint8_t *cell = ut_page_cell(d, i);
		char name[UT_TABLE_NAME_MAX + 1];
		size_t kl = ut_ld16(cell);
		ut_catent e;

		if (type == UT_PT_INTERIOR) {
			rc = catalog_pages(p, s, ut_ld32(cell), depth + 1, npages,
					   cat, tables);
			continue;
		}
		if (kl > UT_TABLE_NAME_MAX || (cell[2] & UT_CELL_OVFL)) {
			ut_set_errdetail("%s: page %u: catalog: cell %u is no "
					 "table's entry", ut_pager_path(p), pgno, i);
			rc = UT_ECORRUPT;
			break;
		}
		memcpy(name, cell + UT_LEAF_HDR, kl);
		name[kl] = 0;
		rc = ut_cat_decode(cell + UT_LEAF_HDR + kl, ut_ld32(cell + 3),
				   name, kl, ut_pager_path(p), &e);
		*tables += e.pages;
	}
	if (!rc && type == UT_PT_INTERIOR)
		rc = catalog_pages(p, s, ut_page_right(d), depth + 1, npages, cat,
				   tables);
	ut_pager_release(p, pg);
	return rc;
}

/* The default table's pages, without walking it: every page in use
 * (the header's page count less page 0 and the free pages) but the
 * catalog's and those the catalog's entries count -- each table's count
 * is kept exact by every change of its tree (ut_tput, ut_tdel, drop).
 * A page neither reachable nor free (none, unless a file was damaged) is
 * counted here.  O(catalog pages), for a snapshot s or the writer (NULL:
 * its changed entries stored first, as ut_table_next does). */
static int default_pages(ut_txn *t, ut_snap *s, uint32_t catroot,
			 uint64_t *out)
{
	ut_pager *p = t->db->pager;
	uint64_t cat = 0, tables = 0, used;
	uint32_t npages, nfree;
	int rc;

	if (!s && t->tables && !t->err && (rc = ut_tables_store(t)))
		return ut_txn_change_rc(t, rc);
	if (s) {
		ut_pg *meta;

		if ((rc = ut_pager_get_at(p, s, 0, &meta)))
			return rc;
		npages = s->npages;
		nfree = ut_ld32(meta->data + UT_META_FREECOUNT);
		ut_pager_release(p, meta);
	} else {
		npages = ut_pager_page_count(p);
		nfree = ut_pager_free_count(p);
		catroot = ut_pager_catalog_root(p);
	}
	if (catroot &&
	    (rc = catalog_pages(p, s, catroot, 1, npages, &cat, &tables)))
		return rc;
	used = npages > (uint64_t)nfree ? npages - 1ull - nfree : 0;
	if (used < cat + tables + 1) {
		ut_set_errdetail("%s: %llu pages in use, but the catalog (%llu "
				 "pages) and its tables (%llu) leave none to the "
				 "default table", ut_pager_path(p),
				 (unsigned long long)used,
				 (unsigned long long)cat,
				 (unsigned long long)tables);
		return UT_ECORRUPT;
	}
	*out = used - cat - tables;
	return UT_OK;
}

/* The default table: its name "", its key count from the header (format
 * 3) or by a walk (format 2: no count is kept), its pages derived from
 * the counts (default_pages). */
static int default_stat(ut_txn *t, ut_table_info *info)
{
	ut_snap *s = ut_txn_snap(t);
	uint32_t catroot = s ? s->catroot : ut_pager_catalog_root(t->db->pager);
	uint64_t n;
	int rc;

	memset(info, 0, sizeof(*info));
	if ((rc = default_pages(t, s, catroot, &info->pages)))
		return rc;
	if (!catroot) {
		if ((rc = count_default(t, &n)))
			return rc;
	} else {
		n = s ? s->defkeys : ut_pager_default_keys(t->db->pager) +
				     (uint64_t)t->defdelta;
	}
	info->keys = n;
	return UT_OK;
}

int ut_table_stat(ut_txn *t, ut_table *h, ut_table_info *info)
{
	struct ut_tstate *s;
	ut_catent e;
	int rc;

	ut_clear_errdetail();
	if (!t || !info)
		return UT_EINVAL;
	if (!h)
		return default_stat(t, info);
	if ((rc = tstate_of(t, h, &s)))
		return rc;
	entry_of(s, &e);
	info_of(h->name, h->nlen, &e, info);
	return UT_OK;
}

int ut_table_next(ut_txn *t, const char *after, ut_table_info *info)
{
	char name[UT_TABLE_NAME_MAX + 1];
	size_t alen = after ? strlen(after) : 0, nlen;
	ut_catent e;
	int rc;

	ut_clear_errdetail();
	if (!t || !info)
		return UT_EINVAL;
	if (alen > UT_MAX_KEY)
		alen = UT_MAX_KEY; /* no name is that long: past the last */
	/* the writer lists what it changed, counts included */
	if (!t->rdonly && !t->err && t->tables && (rc = ut_tables_store(t)))
		return ut_txn_change_rc(t, rc);
	rc = ut_cat_next(t->db->pager, ut_txn_snap(t), after, alen, name, &nlen,
			 &e);
	if (rc == UT_OK)
		info_of(name, nlen, &e, info);
	return rc;
}

const char *ut_table_name(ut_table *h)
{
	return h && h->magic == TABLE_MAGIC ? h->name : NULL;
}

/* ut_tput and the other calls below take the default table (h NULL) before
 * anything else; the named table's work is a function of its own, kept
 * out of line, so the default table's call has no stack frame to build
 * (a shared body saved six registers first: ~25 instructions a put). */
static __attribute__((noinline)) int named_put(ut_txn *t, ut_table *h,
					       const void *key, size_t klen,
					       const void *val, size_t vlen)
{
	struct ut_tstate *s;
	uint64_t before;
	int rc, added;

	ut_clear_errdetail();
	if ((rc = ut_txn_check_put(t, key, klen, val, vlen)))
		return rc;
	if ((rc = tstate_of(t, h, &s)))
		return rc;
	ut_txn_changing(t);
	before = pages_in_use(t->db->pager);
	rc = ut_tstate_rc(s, ut_bt_put_in(t->db->pager, &s->root, key, klen, val,
				      vlen, &added));
	s->pages += pages_in_use(t->db->pager) - before;
	s->keys += rc == UT_OK && added;
	s->dirty = 1;
	return ut_txn_change_rc(t, rc);
}

int ut_tput(ut_txn *t, ut_table *h, const void *key, size_t klen,
	    const void *val, size_t vlen)
{
	return h ? named_put(t, h, key, klen, val, vlen)
		 : ut_put(t, key, klen, val, vlen);
}

static __attribute__((noinline)) int named_del(ut_txn *t, ut_table *h,
					       const void *key, size_t klen)
{
	struct ut_tstate *s;
	uint64_t before;
	int rc;

	ut_clear_errdetail();
	if ((rc = ut_txn_check_write(t)) || (rc = ut_txn_check_key(key, klen)))
		return rc;
	if ((rc = tstate_of(t, h, &s)))
		return rc;
	ut_txn_changing(t);
	before = pages_in_use(t->db->pager);
	rc = ut_tstate_rc(s, ut_bt_del_in(t->db->pager, &s->root, key, klen));
	s->pages -= before - pages_in_use(t->db->pager);
	s->keys -= rc == UT_OK;
	s->dirty = 1;
	return ut_txn_change_rc(t, rc);
}

int ut_tdel(ut_txn *t, ut_table *h, const void *key, size_t klen)
{
	return h ? named_del(t, h, key, klen) : ut_del(t, key, klen);
}

static __attribute__((noinline)) int named_get(ut_txn *t, ut_table *h,
					       const void *key, size_t klen,
					       void **val, size_t *vlen)
{
	struct ut_tstate *s;
	int rc;

	if ((rc = ut_txn_check_get(t, key, klen, val, vlen)) ||
	    (rc = tstate_of(t, h, &s)))
		return rc;
	return ut_tstate_rc(s, ut_bt_get_in(t->db->pager, ut_txn_snap(t), s->root,
					key, klen, val, vlen));
}

int ut_tget(ut_txn *t, ut_table *h, const void *key, size_t klen, void **val,
	    size_t *vlen)
{
	return h ? named_get(t, h, key, klen, val, vlen)
		 : ut_get(t, key, klen, val, vlen);
}

static __attribute__((noinline)) int named_get_ref(ut_txn *t, ut_table *h,
						   const void *key, size_t klen,
						   const void **val,
						   size_t *vlen)
{
	struct ut_tstate *s;
	int rc;

	if ((rc = ut_txn_check_get(t, key, klen, val, vlen)) ||
	    (rc = tstate_of(t, h, &s)))
		return rc;
	return ut_tstate_rc(s, ut_txn_get_ref_at(t, &s->root, key, klen, val, vlen));
}

int ut_tget_ref(ut_txn *t, ut_table *h, const void *key, size_t klen,
		const void **val, size_t *vlen)
{
	return h ? named_get_ref(t, h, key, klen, val, vlen)
		 : ut_get_ref(t, key, klen, val, vlen);
}

int ut_tcursor_open(ut_txn *t, ut_table *h, ut_cursor **out)
{
	struct ut_tstate *s;
	int rc;

	if (!h)
		return ut_cursor_open(t, out);
	ut_clear_errdetail();
	if (!t || !out)
		return UT_EINVAL;
	if ((rc = tstate_of(t, h, &s)) || (rc = ut_cursor_open(t, out)))
		return rc;
	(*out)->ts = s;
	ut_btcur_init_in(&(*out)->bc, t->db->pager, ut_txn_snap(t), &s->root);
	return UT_OK;
}

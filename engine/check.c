/*
 * engine/check.c - integrity check of a database (ut_check in untorn.h;
 * the entry point is in db.c so that a static link always carries it).
 *
 * Walks the B+tree from the root through the pager (the cached state),
 * then the free list, then reads every page of the data file directly and
 * verifies its checksum (the on-disk state).  Invariants: page types, cell
 * bounds, keys strictly increasing within a page and bounded by the
 * separators of the parent ([previous separator, separator) for a child,
 * >= the last separator for the right child), every leaf at the same depth,
 * overflow chains of the right type and length, free-list pages of type
 * free and counted by the header, no page reachable twice, every page
 * 1..count-1 reachable (tree, overflow or free list), the file holding the
 * header's page count.  With named tables (catalog.h) the catalog tree
 * is walked the same way, then every table's tree, each with its own leaf
 * depth; a table's keys and pages must be what its catalog entry counts,
 * the header's default-table key count (format 3) what its tree holds,
 * and every problem below a table's root names the table.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"
#include "catalog.h"
#include "check.h"

#define LEAF_HDR UT_LEAF_HDR
#define INT_HDR UT_INT_HDR

struct ck {
	ut_pager *p;
	FILE *out;
	ut_check_result *r;
	uint8_t *seen; /* 1 reached, 2 reached but unreadable (bad checksum) */
	uint32_t count;
	int leaf_depth;
	char first[800]; /* the first problem: the detail of UT_ECORRUPT */
	const char *table; /* the named table being walked, NULL: none */
	uint64_t visited;  /* pages visited so far */
	int catalog;       /* walking the catalog: collect its entries */
	struct catcell { char name[UT_TABLE_NAME_MAX + 1]; uint8_t v[UT_CATENT_BYTES];
			 size_t nlen, vlen; uint32_t pgno; } *cat;
	size_t ncat, capcat;
};

static void problem(struct ck *c, uint32_t pgno, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void problem(struct ck *c, uint32_t pgno, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	char tab[UT_TABLE_NAME_MAX + 16] = "";

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (c->table)
		snprintf(tab, sizeof(tab), "table \"%s\": ", c->table);
	if (!c->first[0])
		snprintf(c->first, sizeof(c->first), "%s: page %u: %s%s",
			 ut_pager_path(c->p), pgno, tab, what);
	c->r->invariant_errors++;
	if (c->out)
		fprintf(c->out, "page %u: %s%s\n", pgno, tab, what);
}

static int keycmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	size_t n = al < bl ? al : bl;
	int x = memcmp(a, b, n);

	if (x)
		return x;
	return al < bl ? -1 : al > bl;
}

/* Mark pgno visited; 0 if it cannot be (out of range, seen twice). */
static int visit(struct ck *c, uint32_t pgno, uint32_t from, const char *what)
{
	if (pgno == 0 || pgno >= c->count) {
		problem(c, from, "%s page %u outside 1..%u", what, pgno, c->count - 1);
		return 0;
	}
	if (c->seen[pgno]) {
		problem(c, pgno, "reachable twice (again as %s from page %u)", what,
			from);
		return 0;
	}
	c->seen[pgno] = 1;
	c->visited++;
	return 1;
}

/* A catalog leaf cell: kept for the tables' walk after the catalog's. */
static int collect(struct ck *c, uint32_t pgno, const uint8_t *k, size_t kl,
		   const uint8_t *v, size_t vl)
{
	struct catcell *e;

	if (kl > UT_TABLE_NAME_MAX || memchr(k, 0, kl)) {
		problem(c, pgno, "catalog: a table name of %zu bytes%s", kl,
			kl > UT_TABLE_NAME_MAX ? "" : " holding a NUL byte");
		return UT_OK;
	}
	if (c->ncat == c->capcat) {
		size_t n = c->capcat ? 2 * c->capcat : 16;
		struct catcell *nc = realloc(c->cat, n * sizeof(*nc));

		if (!nc)
			return UT_ENOMEM;
		c->cat = nc;
		c->capcat = n;
	}
	e = &c->cat[c->ncat++];
	memcpy(e->name, k, kl);
	e->name[kl] = 0;
	e->nlen = kl;
	e->vlen = vl;
	memcpy(e->v, v, vl < sizeof(e->v) ? vl : sizeof(e->v));
	e->pgno = pgno;
	return UT_OK;
}

/* Get a page; a checksum failure is counted, not fatal to the check. */
static int get(struct ck *c, uint32_t pgno, ut_pg **pg)
{
	int rc = ut_pager_get(c->p, pgno, pg);

	if (rc == UT_ECORRUPT) {
		if (!c->first[0])
			snprintf(c->first, sizeof(c->first), "%s", ut_errdetail());
		c->r->bad_checksums++;
		if (pgno < c->count)
			c->seen[pgno] = 2;
		if (c->out)
			fprintf(c->out, "page %u: %s\n", pgno, ut_errdetail());
		return 1;
	}
	if (rc)
		return rc;
	c->r->pages_checked++;
	return 0;
}

static int check_ovfl(struct ck *c, uint32_t from, uint32_t pgno, uint64_t vlen)
{
	uint64_t got = 0;

	while (got < vlen) {
		ut_pg *pg;
		int rc;

		if (!pgno) {
			problem(c, from, "overflow chain ends after %llu of %llu bytes",
				(unsigned long long)got, (unsigned long long)vlen);
			return 0;
		}
		if (!visit(c, pgno, from, "overflow"))
			return 0;
		if ((rc = get(c, pgno, &pg)))
			return rc > 0 ? 0 : rc;
		uint32_t n = ut_page_aux(pg->data);
		if (ut_page_type(pg->data) != UT_PT_OVERFLOW || n == 0 ||
		    n > UT_OVFL_CAP || n > vlen - got) {
			problem(c, pgno, "bad overflow page (type %d, %u bytes)",
				ut_page_type(pg->data), n);
			ut_pager_release(c->p, pg);
			return 0;
		}
		got += n;
		from = pgno;
		pgno = ut_page_right(pg->data);
		ut_pager_release(c->p, pg);
	}
	if (pgno)
		problem(c, from, "overflow chain continues past the value's end");
	return 0;
}

/* Cell i of a slotted page lies within the page after the slot array. */
static int cell_ok(struct ck *c, uint32_t pgno, uint8_t *d, unsigned i,
		   unsigned min)
{
	unsigned n = ut_page_nslots(d);
	unsigned off = ut_ld16(d + UT_PG_HDR + i * UT_PG_SLOT);
	unsigned len = ut_page_cell_len(d, i);

	if (off < UT_PG_HDR + n * UT_PG_SLOT || len < min ||
	    off + len > UT_PAGE_SIZE) {
		problem(c, pgno, "cell %u at %u+%u out of bounds", i, off, len);
		return 0;
	}
	return 1;
}

/* Walk the subtree at pgno; keys must be in [lo, hi) (NULL = open). */
static int walk(struct ck *c, uint32_t pgno, uint32_t from, int depth,
		const uint8_t *lo, size_t lol, const uint8_t *hi, size_t hil)
{
	const uint8_t *prev = NULL;
	size_t prevl = 0;
	ut_pg *pg;
	int rc = 0;

	if (depth > UT_BT_MAXDEPTH) {
		problem(c, from, "tree deeper than %d levels", UT_BT_MAXDEPTH);
		return 0;
	}
	if (!visit(c, pgno, from, "tree"))
		return 0;
	if ((rc = get(c, pgno, &pg)))
		return rc > 0 ? 0 : rc;
	uint8_t *d = pg->data;
	int type = ut_page_type(d);
	unsigned n = ut_page_nslots(d);

	if (type != UT_PT_LEAF && type != UT_PT_INTERIOR) {
		problem(c, pgno, "type %d in the tree (child of page %u)", type, from);
		goto out;
	}
	if (type == UT_PT_LEAF) {
		if (c->leaf_depth == 0)
			c->leaf_depth = depth;
		else if (c->leaf_depth != depth)
			problem(c, pgno, "leaf at depth %d, others at %d", depth,
				c->leaf_depth);
	} else if (n == 0 && !ut_page_right(d)) {
		problem(c, pgno, "interior page without children");
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *k;
		size_t kl;
		uint8_t *cell;

		if (!cell_ok(c, pgno, d, i, type == UT_PT_LEAF ? LEAF_HDR : INT_HDR))
			goto out;
		cell = ut_page_cell(d, i);
		unsigned len = ut_page_cell_len(d, i);
		if (type == UT_PT_LEAF) {
			kl = ut_ld16(cell);
			k = cell + LEAF_HDR;
			uint32_t vlen = ut_ld32(cell + 3);
			int ovfl = cell[2] & UT_CELL_OVFL;
			if (kl == 0 || kl > UT_MAX_KEY ||
			    LEAF_HDR + kl + (ovfl ? 4u : vlen) != len) {
				problem(c, pgno, "leaf cell %u: bad lengths (key %zu, "
					"value %u, cell %u)", i, kl, vlen, len);
				goto out;
			}
			if (c->catalog) {
				if (ovfl)
					problem(c, pgno, "catalog: an entry in "
						"overflow pages");
				else if ((rc = collect(c, pgno, k, kl, k + kl, vlen)))
					goto out;
			} else {
				c->r->keys++;
			}
			if (ovfl && (rc = check_ovfl(c, pgno, ut_ld32(k + kl), vlen)))
				goto out;
		} else {
			kl = ut_ld16(cell + 4);
			k = cell + INT_HDR;
			if (kl == 0 || kl > UT_MAX_KEY || INT_HDR + kl != len) {
				problem(c, pgno, "interior cell %u: bad lengths", i);
				goto out;
			}
		}
		if (prev && keycmp(prev, prevl, k, kl) >= 0)
			problem(c, pgno, "key %u not above key %u", i, i - 1);
		if (lo && keycmp(k, kl, lo, lol) < 0)
			problem(c, pgno, "key %u below its parent's separator", i);
		if (hi && keycmp(k, kl, hi, hil) >= 0)
			problem(c, pgno, "key %u not below its parent's separator", i);
		if (type == UT_PT_INTERIOR) {
			rc = walk(c, ut_ld32(cell), pgno, depth + 1,
				  prev ? prev : lo, prev ? prevl : lol, k, kl);
			if (rc)
				goto out;
		}
		prev = k;
		prevl = kl;
	}
	if (type == UT_PT_INTERIOR)
		rc = walk(c, ut_page_right(d), pgno, depth + 1,
			  prev ? prev : lo, prev ? prevl : lol, hi, hil);
out:
	ut_pager_release(c->p, pg);
	return rc;
}

static int check_free(struct ck *c)
{
	uint32_t pgno = 0, next, n = 0, want = ut_pager_free_count(c->p);
	ut_pg *pg, *meta;
	int rc;

	if ((rc = ut_pager_get(c->p, 0, &meta)))
		return rc;
	next = ut_ld32(meta->data + UT_META_FREEHEAD);
	ut_pager_release(c->p, meta);
	while (next) {
		if (!visit(c, next, pgno, "free-list"))
			break;
		pgno = next;
		if ((rc = get(c, pgno, &pg)))
			return rc > 0 ? 0 : rc;
		if (ut_page_type(pg->data) != UT_PT_FREE) {
			problem(c, pgno, "on the free list but of type %d",
				ut_page_type(pg->data));
		} else {
			/* the pages it lists (page.h): free, not read */
			for (unsigned i = 0; i < ut_page_aux(pg->data); i++)
				n += visit(c, ut_free_member(pg->data, i), pgno,
					   "free-list entry");
		}
		next = ut_page_right(pg->data);
		ut_pager_release(c->p, pg);
		n++;
	}
	if (n != want)
		problem(c, 0, "header counts %u free pages, the free list has %u",
			want, n);
	return UT_OK;
}

/* Every page in the file, read directly: the on-disk checksums. */
static int check_disk(struct ck *c)
{
	ut_file *f = ut_pager_read_file(c->p);
	uint8_t *buf = ut_io_alloc(UT_PAGE_SIZE);
	uint64_t size;
	int rc;

	if (!buf)
		return UT_ENOMEM;
	if ((rc = ut_file_size(f, &size)))
		goto out;
	if (size < (uint64_t)c->count * UT_PAGE_SIZE) {
		/* pages past the end may still be only in the cache */
		if (c->out)
			fprintf(c->out, "note: the file holds %llu of %u pages (the "
				"rest are in the cache, not yet checkpointed)\n",
				(unsigned long long)(size / UT_PAGE_SIZE), c->count);
	}
	for (uint32_t i = 0; (uint64_t)(i + 1) * UT_PAGE_SIZE <= size; i++) {
		int64_t n = ut_file_read(f, buf, UT_PAGE_SIZE, (uint64_t)i * UT_PAGE_SIZE);
		int zero = 1;

		if (n < 0) {
			rc = (int)n;
			goto out;
		}
		for (size_t j = 0; j < UT_PAGE_SIZE && zero; j++)
			zero = !buf[j];
		if (zero)
			continue; /* not written yet (its content is in the cache) */
		if (i < c->count && c->seen[i] == 2)
			continue; /* reported by the walk already */
		if (ut_page_verify(buf, i, ut_pager_path(c->p)) != UT_OK) {
			if (!c->first[0])
				snprintf(c->first, sizeof(c->first), "%s (on disk)",
					 ut_errdetail());
			c->r->bad_checksums++;
			if (c->out)
				fprintf(c->out, "page %u: on disk: %s\n", i, ut_errdetail());
		}
	}
out:
	free(buf);
	return rc;
}

/* The catalog's tree, then every table's: its entry decoded, its tree
 * walked (with its own leaf depth), its keys and pages as counted. */
static int check_tables(struct ck *c)
{
	uint32_t root = ut_pager_catalog_root(c->p);
	int rc;

	if (!root)
		return UT_OK;
	c->catalog = 1;
	c->leaf_depth = 0;
	rc = walk(c, root, 0, 1, NULL, 0, NULL, 0);
	c->catalog = 0;
	for (size_t i = 0; !rc && i < c->ncat; i++) {
		struct catcell *e = &c->cat[i];
		uint64_t keys = c->r->keys, pages = c->visited;
		ut_catent ent;

		c->table = e->name;
		if (ut_cat_decode(e->v, e->vlen, e->name, e->nlen,
				  ut_pager_path(c->p), &ent)) {
			problem(c, e->pgno, "catalog entry: %s", ut_errdetail());
			continue;
		}
		c->leaf_depth = 0;
		rc = walk(c, ent.root, e->pgno, 1, NULL, 0, NULL, 0);
		keys = c->r->keys - keys;
		pages = c->visited - pages;
		if (!rc && keys != ent.keys)
			problem(c, e->pgno, "the catalog counts %llu keys, the "
				"tree holds %llu", (unsigned long long)ent.keys,
				(unsigned long long)keys);
		if (!rc && pages != ent.pages)
			problem(c, e->pgno, "the catalog counts %llu pages, the "
				"tree has %llu", (unsigned long long)ent.pages,
				(unsigned long long)pages);
	}
	c->table = NULL;
	return rc;
}

int ut_check_pager(ut_pager *p, FILE *out, ut_check_result *r)
{
	struct ck c = { .p = p, .out = out, .r = r };
	int rc;

	memset(r, 0, sizeof(*r));
	c.count = ut_pager_page_count(p);
	r->pages_total = c.count;
	c.seen = calloc(c.count ? c.count : 1, 1);
	if (!c.seen)
		return UT_ENOMEM;
	r->pages_checked = 1; /* page 0, verified at open */
	rc = walk(&c, ut_pager_root(p), 0, 1, NULL, 0, NULL, 0);
	r->depth = (uint32_t)c.leaf_depth; /* the default table's */
	/* format 3 keeps the default table's key count in the header */
	if (!rc && ut_pager_catalog_root(p) &&
	    ut_pager_default_keys(p) != r->keys)
		problem(&c, 0, "the header counts %llu keys in the default "
			"table, its tree holds %llu",
			(unsigned long long)ut_pager_default_keys(p),
			(unsigned long long)r->keys);
	if (!rc)
		rc = check_tables(&c);
	if (!rc)
		rc = check_free(&c);
	uint32_t unreached = 0, bad = 0;
	for (uint32_t i = 1; i < c.count; i++) {
		unreached += !c.seen[i];
		bad += c.seen[i] == 2;
	}
	if (!rc && unreached && bad) {
		/* below an unreadable page nothing more can be said */
		problem(&c, 0, "%u pages not reached (the walk stopped at %u "
			"unreadable pages)", unreached, bad);
	} else {
		for (uint32_t i = 1; !rc && i < c.count; i++)
			if (!c.seen[i])
				problem(&c, i, "unreachable (neither in the tree nor free)");
	}
	if (!rc)
		rc = check_disk(&c);
	free(c.seen);
	free(c.cat);
	if (rc)
		return rc;
	if (!r->bad_checksums && !r->invariant_errors)
		return UT_OK;
	ut_set_errdetail("%s", c.first);
	return UT_ECORRUPT;
}

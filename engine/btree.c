/*
 * engine/btree.c - B+tree search, insert with splits, delete with merges,
 * overflow chains and cursors (contract in btree.h).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"

#define LEAF_HDR UT_LEAF_HDR
#define INT_HDR UT_INT_HDR
#define MAX_CELLS (UT_PG_USABLE / (UT_PG_SLOT + LEAF_HDR) + 2)
#define UNDERFULL (UT_PG_USABLE / 4)

struct path {
	int depth; /* interior levels: pgno[0] = root ... pgno[depth-1] */
	uint32_t pgno[UT_BT_MAXDEPTH];
	unsigned idx[UT_BT_MAXDEPTH]; /* child index taken; nslots = right */
	int rightmost;                /* every idx was the right pointer */
	/* the tree's root page: read by descend, rewritten (in the caller's
	 * slot: the header's root or a catalog entry's) when a split adds a
	 * level or a delete removes one */
	uint32_t *rootslot;
};

/* memcmp order, then length.  Inlined and a word at a time: a get
 * compares ~8 keys per page, mostly decided in their first 8 bytes, and a
 * libc memcmp call per probe was 11-13% of an in-cache get's time. */
static inline uint64_t be_word(const uint8_t *p)
{
	uint64_t w = ut_ld64(p);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

static inline int keycmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	size_t n = al < bl ? al : bl, i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x = be_word(a + i), y = be_word(b + i);
		if (x != y)
			return x < y ? -1 : 1;
	}
	for (; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return al < bl ? -1 : al > bl;
}

/* ---- cell accessors -------------------------------------------------- */

static inline void leaf_key(uint8_t *p, unsigned i, const uint8_t **k, size_t *kl)
{
	uint8_t *c = ut_page_cell(p, i);

	*kl = ut_ld16(c);
	*k = c + LEAF_HDR;
}

static inline void int_key(uint8_t *p, unsigned i, const uint8_t **k, size_t *kl)
{
	uint8_t *c = ut_page_cell(p, i);

	*kl = ut_ld16(c + 4);
	*k = c + INT_HDR;
}

static inline uint32_t child_at(uint8_t *p, unsigned i)
{
	return i < ut_page_nslots(p) ? ut_ld32(ut_page_cell(p, i)) : ut_page_right(p);
}

static inline void set_child_at(uint8_t *p, unsigned i, uint32_t child)
{
	assert(ut_page_type(p) == UT_PT_INTERIOR && i <= ut_page_nslots(p) && child);
	if (i < ut_page_nslots(p))
		ut_st32(ut_page_cell(p, i), child);
	else
		ut_page_set_right(p, child);
}

static void set_child_tracked(uint8_t *p, unsigned i, uint32_t child,
			      uint64_t *touched)
{
	if (i < ut_page_nslots(p))
		ut_page_touch(touched, ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT), 4);
	else
		ut_page_touch(touched, 0, UT_PG_HDR); /* the right pointer */
	set_child_at(p, i, child);
}

/* The cell at the slot a search may probe next, fetched into the cache
 * while this probe's cell is compared: a binary search over a 16 KiB page
 * otherwise waits for one cache miss per probe in turn.  The slot array
 * is small and read anyway; hint only, i may be any slot < nslots. */
static inline void prefetch_cell(const uint8_t *p, unsigned i)
{
	__builtin_prefetch(p + ut_ld16(p + UT_PG_HDR + i * UT_PG_SLOT));
}

#define LEAF_SLOT_LINES 12 /* 32-byte header + 184 slots */

/* First slot whose key >= key; *found when equal (keys are strictly
 * increasing in a page, so an equal key is that slot: stop there). */
static unsigned leaf_search(uint8_t *p, const uint8_t *key, size_t klen, int *found)
{
	/* A leaf is seldom in the CPU cache: ask for its slot array's lines
	 * (at most LEAF_SLOT_LINES) all at once, before the header's nslots
	 * arrives, rather than one miss per probe in turn. */
	for (unsigned l = 1; l < LEAF_SLOT_LINES; l++)
		__builtin_prefetch(p + 64 * l);
	unsigned lo = 0, hi = ut_page_nslots(p);

	*found = 0;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		const uint8_t *k;
		size_t kl;
		prefetch_cell(p, (lo + mid) / 2);
		if (mid + 1 < hi)
			prefetch_cell(p, (mid + 1 + hi) / 2);
		leaf_key(p, mid, &k, &kl);
		int c = keycmp(k, kl, key, klen);
		if (c < 0) {
			lo = mid + 1;
		} else if (c > 0) {
			hi = mid;
		} else {
			*found = 1;
			return mid;
		}
	}
	return lo;
}

/* Child index for key: first slot whose key > key (nslots = right). */
static unsigned int_search(uint8_t *p, const uint8_t *key, size_t klen)
{
	unsigned lo = 0, hi = ut_page_nslots(p);

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		const uint8_t *k;
		size_t kl;
		prefetch_cell(p, (lo + mid) / 2);
		if (mid + 1 < hi)
			prefetch_cell(p, (mid + 1 + hi) / 2);
		int_key(p, mid, &k, &kl);
		if (keycmp(k, kl, key, klen) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A reader's search of an interior page goes through an index of its
 * keys' first 8 bytes (big-endian words, zero-padded: their order is the
 * keys' order but where they are equal), built once per committed version
 * and kept with it for every snapshot (ut_pager_set_aux): a binary search
 * over one dense array instead of a slot and a cell per probe -- at 16-byte
 * keys two levels of it were a third of an in-cache get's instructions.
 * Keys whose first 8 bytes equal the key's are searched in full. */
struct int_index {
	unsigned n;
	uint64_t pfx[];
};

static inline uint64_t key_prefix(const uint8_t *k, size_t kl)
{
	uint8_t b[8] = { 0 };

	if (kl >= 8)
		return be_word(k);
	memcpy(b, k, kl);
	return be_word(b);
}

static struct int_index *int_index_build(uint8_t *p)
{
	unsigned n = ut_page_nslots(p);
	struct int_index *x = malloc(sizeof(*x) + n * sizeof(x->pfx[0]));

	if (!x)
		return NULL;
	x->n = n;
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *k;
		size_t kl;

		int_key(p, i, &k, &kl);
		x->pfx[i] = key_prefix(k, kl);
	}
	return x;
}

/* First index whose prefix is >= want (n when none): branch-free, the
 * probes' outcome being a coin toss. */
static inline unsigned pfx_lower(const uint64_t *a, unsigned n, uint64_t want)
{
	const uint64_t *b = a;

	if (!n)
		return 0;
	while (n > 1) {
		unsigned half = n / 2;

		b = b[half] < want ? b + half : b;
		n -= half;
	}
	return (unsigned)(b - a) + (*b < want);
}

/* int_search of page pg, which snapshot s got: through its index (built
 * here if no reader built it yet; without memory, the plain search). */
static unsigned int_search_snap(ut_snap *s, ut_pg *pg, const uint8_t *key,
				size_t klen)
{
	const struct int_index *x = ut_pager_aux(s, pg);
	uint64_t want = key_prefix(key, klen);
	unsigned lo, hi;

	if (!x) {
		struct int_index *b = int_index_build(pg->data);

		if (!b || !(x = ut_pager_set_aux(s, pg, b)))
			return int_search(pg->data, key, klen);
	}
	lo = pfx_lower(x->pfx, x->n, want);
	if (lo == x->n || x->pfx[lo] != want)
		return lo; /* no key shares the first 8 bytes: lo's is greater */
	hi = want == UINT64_MAX ? x->n : pfx_lower(x->pfx, x->n, want + 1);
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		const uint8_t *k;
		size_t kl;

		int_key(pg->data, mid, &k, &kl);
		if (keycmp(k, kl, key, klen) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	assert(lo == int_search(pg->data, key, klen));
	return lo;
}

static int bad_page(ut_pager *p, uint32_t pgno, const char *what)
{
	ut_set_errdetail("%s: page %u: %s", ut_pager_path(p), pgno, what);
	return UT_ECORRUPT;
}

/* The child pointer of page path[depth-1] leads to child: not back to a
 * page on the path (a cycle), and not deeper than UT_BT_MAXDEPTH. */
static int child_on_path(ut_pager *p, const uint32_t *path, int depth,
			 uint32_t child)
{
	if (depth >= UT_BT_MAXDEPTH)
		return bad_page(p, path[depth - 1], "tree deeper than its limit "
				"(a cycle of child pointers?)");
	for (int i = 0; i < depth; i++)
		if (path[i] == child) {
			ut_set_errdetail("%s: page %u: child pointer to page %u, "
					 "its own ancestor", ut_pager_path(p),
					 path[depth - 1], child);
			return UT_ECORRUPT;
		}
	return UT_OK;
}

/* Descend to the leaf for key (key NULL: leftmost), recording the path. */
static int descend(ut_pager *p, ut_snap *s, uint32_t root, const uint8_t *key,
		   size_t klen, struct path *pa, ut_pg **leaf)
{
	uint32_t pgno = root;
	ut_pg *pg;
	int rc;

	pa->depth = 0;
	pa->rightmost = 1;
	for (;;) {
		if ((rc = ut_pager_get_at(p, s, pgno, &pg)))
			return rc;
		int t = ut_page_type(pg->data);
		if (t == UT_PT_LEAF) {
			*leaf = pg;
			return UT_OK;
		}
		if (t != UT_PT_INTERIOR) {
			rc = pa->depth ? ut_page_expect_type(pg->data, pgno,
				UT_PT_INTERIOR, pa->pgno[pa->depth - 1],
				"child pointer", ut_pager_path(p))
				       : bad_page(p, pgno, "the root is not a tree page");
			ut_pager_release(p, pg);
			return rc;
		}
		unsigned i = !key ? 0 : s ? int_search_snap(s, pg, key, klen)
				    : int_search(pg->data, key, klen);
		if (i != ut_page_nslots(pg->data))
			pa->rightmost = 0;
		pa->pgno[pa->depth] = pgno;
		pa->idx[pa->depth] = i;
		pa->depth++;
		pgno = child_at(pg->data, i);
		ut_pager_release(p, pg);
		if ((rc = child_on_path(p, pa->pgno, pa->depth, pgno)))
			return rc;
	}
}

/* ---- overflow chains ------------------------------------------------- */

static int ovfl_write(ut_pager *p, const uint8_t *val, size_t vlen, uint32_t *head)
{
	ut_pg *prev = NULL, *pg;
	size_t off = 0;
	int rc;

	*head = 0;
	while (off < vlen) {
		size_t n = vlen - off < UT_OVFL_CAP ? vlen - off : UT_OVFL_CAP;
		if ((rc = ut_pager_alloc(p, UT_PT_OVERFLOW, &pg))) {
			ut_pager_release(p, prev);
			return rc;
		}
		memcpy(pg->data + UT_PG_HDR, val + off, n);
		ut_page_set_aux(pg->data, (uint32_t)n);
		if (prev) {
			ut_page_set_right(prev->data, pg->pgno);
			ut_pager_release(p, prev);
		} else {
			*head = pg->pgno;
		}
		prev = pg;
		off += n;
	}
	ut_pager_release(p, prev);
	return UT_OK;
}

static int ovfl_read(ut_pager *p, ut_snap *s, uint32_t pgno, uint8_t *out,
		     size_t vlen)
{
	size_t off = 0;
	ut_pg *pg;
	int rc;

	assert(vlen <= UT_MAX_VALUE); /* the cell was checked (page.h) */
	while (off < vlen) {
		if ((rc = ut_pager_get_at(p, s, pgno, &pg)))
			return rc;
		if ((rc = ut_page_ovfl_step(pg->data, pgno, vlen, off,
					    ut_pager_path(p)))) {
			ut_pager_release(p, pg);
			return rc;
		}
		uint32_t n = ut_page_aux(pg->data);
		memcpy(out + off, pg->data + UT_PG_HDR, n);
		off += n;
		pgno = ut_page_right(pg->data);
		ut_pager_release(p, pg);
	}
	return UT_OK;
}

/* Free the chain at pgno holding vlen bytes.  Each page is checked
 * before it is freed; on an error the caller's transaction is rolled
 * back, so a chain freed in part is never committed. */
/* A drop's record of the pages it reached (one bit each): a freed page
 * is not rewritten (pager.h: listed in a free-list trunk), so its type
 * no longer tells that the walk met it before. */
struct reached {
	uint8_t *bits;
	uint32_t n;
};

/* Mark pgno reached; UT_ECORRUPT when it was already (a page shared by
 * two subtrees or chains), or is beyond the file. */
static int reach(ut_pager *p, struct reached *r, uint32_t pgno, uint32_t from)
{
	if (!r)
		return UT_OK;
	if (pgno >= r->n || (r->bits[pgno / 8] >> (pgno % 8) & 1)) {
		ut_set_errdetail("%s: page %u: points to page %u, %s",
				 ut_pager_path(p), from, pgno, pgno >= r->n
				 ? "beyond the file" : "reached before in the "
				 "same tree (a shared subtree or chain)");
		return UT_ECORRUPT;
	}
	r->bits[pgno / 8] |= (uint8_t)(1u << (pgno % 8));
	return UT_OK;
}

/* Free the overflow chain at pgno (r: the drop's reached pages, or NULL). */
static int ovfl_free_in(ut_pager *p, struct reached *r, uint32_t from,
			uint32_t pgno, uint64_t vlen)
{
	uint64_t done = 0;
	ut_pg *pg;
	int rc;

	while (done < vlen) {
		if ((rc = reach(p, r, pgno, from)))
			return rc;
		from = pgno;
		if ((rc = ut_pager_get(p, pgno, &pg)))
			return rc;
		if ((rc = ut_page_ovfl_step(pg->data, pgno, vlen, done,
					    ut_pager_path(p)))) {
			ut_pager_release(p, pg);
			return rc;
		}
		uint32_t next = ut_page_right(pg->data);
		done += ut_page_aux(pg->data);
		if ((rc = ut_pager_free(p, pg)))
			return rc;
		pgno = next;
	}
	return UT_OK;
}

static int ovfl_free(ut_pager *p, uint32_t pgno, uint64_t vlen)
{
	return ovfl_free_in(p, NULL, 0, pgno, vlen);
}

/* Value of leaf cell c; *ovfl set to the chain head when not inline. */
static inline void cell_value(const uint8_t *c, const uint8_t **v, size_t *vl,
			      uint32_t *ovfl)
{
	size_t kl = ut_ld16(c);

	*vl = ut_ld32(c + 3);
	*ovfl = (c[2] & UT_CELL_OVFL) ? ut_ld32(c + LEAF_HDR + kl) : 0;
	*v = c + LEAF_HDR + kl;
}

/* ---- get ------------------------------------------------------------- */

/* The root of the default tree as s (NULL: the writer) sees it. */
static uint32_t main_root(ut_pager *p, ut_snap *s)
{
	return s ? s->root : ut_pager_root(p);
}

int ut_bt_get_ref(ut_pager *p, ut_snap *s, const void *key, size_t klen,
		  ut_pg **pin, void **owned, const void **val, size_t *vlen)
{
	return ut_bt_get_ref_in(p, s, main_root(p, s), key, klen, pin, owned,
				val, vlen);
}

int ut_bt_get_ref_in(ut_pager *p, ut_snap *s, uint32_t root, const void *key,
		     size_t klen, ut_pg **pin, void **owned, const void **val,
		     size_t *vlen)
{
	struct path pa;
	ut_pg *leaf;
	int found, rc;

	*pin = NULL;
	*owned = NULL;
	if ((rc = descend(p, s, root, key, klen, &pa, &leaf)))
		return rc;
	unsigned i = leaf_search(leaf->data, key, klen, &found);
	if (!found) {
		ut_pager_release(p, leaf);
		return UT_NOTFOUND;
	}
	const uint8_t *v;
	size_t vl;
	uint32_t ovfl;
	cell_value(ut_page_cell(leaf->data, i), &v, &vl, &ovfl);
	*vlen = vl;
	if (!ovfl) {
		*pin = leaf;
		*val = v;
		return UT_OK;
	}
	ut_pager_release(p, leaf);
	uint8_t *out = malloc(vl ? vl : 1);
	if (!out)
		return UT_ENOMEM;
	if ((rc = ovfl_read(p, s, ovfl, out, vl))) {
		free(out);
		return rc;
	}
	*owned = out;
	*val = out;
	return UT_OK;
}

int ut_bt_get(ut_pager *p, ut_snap *s, const void *key, size_t klen,
	      void **val, size_t *vlen)
{
	return ut_bt_get_in(p, s, main_root(p, s), key, klen, val, vlen);
}

int ut_bt_get_in(ut_pager *p, ut_snap *s, uint32_t root, const void *key,
		 size_t klen, void **val, size_t *vlen)
{
	const void *v;
	void *owned;
	ut_pg *pin;
	int rc = ut_bt_get_ref_in(p, s, root, key, klen, &pin, &owned, &v, vlen);

	if (rc || owned) {
		*val = owned;
		return rc;
	}
	*val = malloc(*vlen ? *vlen : 1);
	if (*val)
		memcpy(*val, v, *vlen);
	ut_pager_release(p, pin);
	return *val ? UT_OK : UT_ENOMEM;
}

int ut_bt_depth(ut_pager *p, int *depth)
{
	struct path pa;
	ut_pg *leaf;
	int rc = descend(p, NULL, ut_pager_root(p), NULL, 0, &pa, &leaf);

	if (rc)
		return rc;
	ut_pager_release(p, leaf);
	*depth = pa.depth + 1;
	return UT_OK;
}

/* Leaves and the bytes their cells and slots use under page pgno. */
static int leaf_fill(ut_pager *p, uint32_t pgno, int depth, ut_bt_fill *out)
{
	ut_pg *pg;
	int rc;

	if (depth >= UT_BT_MAXDEPTH)
		return bad_page(p, pgno, "tree too deep");
	/* shared subtrees could make the walk exponential: it may reach no
	 * more tree pages than the file has */
	if (out->leaves + out->interior >= ut_pager_page_count(p))
		return bad_page(p, pgno, "reached more tree pages than the file has");
	if ((rc = ut_pager_get(p, pgno, &pg)))
		return rc;
	if (ut_page_type(pg->data) == UT_PT_LEAF) {
		unsigned used = ut_page_used(pg->data);

		out->leaves++;
		out->leaf_bytes += used;
		if (out->leaves == 1 || used < out->min_leaf_bytes)
			out->min_leaf_bytes = used;
	} else if (ut_page_type(pg->data) == UT_PT_INTERIOR) {
		out->interior++;
		for (unsigned i = 0; i <= ut_page_nslots(pg->data); i++)
			if ((rc = leaf_fill(p, child_at(pg->data, i), depth + 1, out)))
				break;
	} else {
		rc = bad_page(p, pgno, "not a tree page");
	}
	ut_pager_release(p, pg);
	return rc;
}

int ut_bt_fill_get(ut_pager *p, ut_bt_fill *out)
{
	memset(out, 0, sizeof(*out));
	return leaf_fill(p, ut_pager_root(p), 0, out);
}

/* ---- insert with splits ---------------------------------------------- */

struct ent {
	const uint8_t *p;
	unsigned len;
};

static int fill(uint8_t *page, const struct ent *e, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (ut_page_insert(page, ut_page_nslots(page), e[i].p, e[i].len))
			return -1;
	return 0;
}

/* Build an interior cell (child, key) into buf; returns its length. */
static unsigned make_int_cell(uint8_t *buf, uint32_t child, const uint8_t *k, size_t kl)
{
	ut_st32(buf, child);
	ut_st16(buf + 4, (uint16_t)kl);
	memcpy(buf + INT_HDR, k, kl);
	return INT_HDR + (unsigned)kl;
}

/* Pin page pgno and make it writable: whole (touched NULL), or tracked
 * (pager.h, ut_pager_write_tracked). */
static int get_w(ut_pager *p, uint32_t pgno, ut_pg **out, uint64_t **touched)
{
	int rc = ut_pager_get(p, pgno, out);

	if (rc)
		return rc;
	rc = touched ? ut_pager_write_tracked(p, *out, touched)
		     : ut_pager_write(p, *out);
	if (rc)
		ut_pager_release(p, *out);
	return rc;
}

/* ---- redistribution among siblings (SQLite's balance, for leaves) ----- */

#define BAL_SIBS 3 /* the widest window of siblings that share cells */
#define BAL_DECLINED 1

static int always_rebuild;
void ut_bt_set_always_rebuild(int on) { always_rebuild = on; }

/* Split entries e[0..m) (sizes incl. slot) into k pages as evenly as the
 * cell sizes allow; start[j] = first entry of page j, start[k] = m.
 * Returns 0, or -1 when some page would overflow or be empty. */
static int even_cut(const struct ent *e, unsigned m, unsigned k, size_t total,
		    unsigned *start)
{
	size_t cum = 0, acc = 0;
	unsigned j = 0;

	start[0] = 0;
	for (unsigned i = 0; i < m; i++) {
		size_t sz = e[i].len + UT_PG_SLOT;
		/* next page when this cell's middle lies past page j's share, or
		 * when it does not fit */
		if (j + 1 < k && i > start[j] &&
		    (2 * (cum + sz) > total * 2 * (j + 1) / k + sz ||
		     acc + sz > UT_PG_USABLE)) {
			start[++j] = i;
			acc = 0;
		}
		if (acc + sz > UT_PG_USABLE)
			return -1;
		acc += sz;
		cum += sz;
	}
	if (j + 1 != k)
		return -1;
	start[k] = m;
	return 0;
}

/* Move cells across the boundaries of pages pg[0..k) until page j holds the
 * window's old cells tb[j]..tb[j+1).  Cells that stay are not touched, so
 * the log's page diffs cover only what moved.  0, or -1 when the moves get
 * stuck (the caller then rebuilds the pages). */
static int shift_cells(ut_pg **pg, uint64_t **tch, unsigned k,
		       const unsigned *tb)
{
	unsigned cb[BAL_SIBS + 2];

	cb[0] = 0;
	for (unsigned j = 0; j < k; j++)
		cb[j + 1] = cb[j] + ut_page_nslots(pg[j]->data);
	for (int pass = 0; pass < 2 * BAL_SIBS; pass++) {
		int moved = 0, done = 1;

		for (unsigned j = 1; j < k; j++) {
			uint8_t *l = pg[j - 1]->data, *r = pg[j]->data;

			while (cb[j] > tb[j]) { /* l's last cell to r's front */
				unsigned last = ut_page_nslots(l) - 1;
				if (ut_page_insert_tracked(r, 0, ut_page_cell(l, last),
							   ut_page_cell_len(l, last),
							   tch[j]))
					break;
				ut_page_delete_tracked(l, last, tch[j - 1]);
				cb[j]--;
				moved = 1;
			}
			while (cb[j] < tb[j]) { /* r's first cell to l's end */
				if (ut_page_insert_tracked(l, ut_page_nslots(l),
							   ut_page_cell(r, 0),
							   ut_page_cell_len(r, 0),
							   tch[j - 1]))
					break;
				ut_page_delete_tracked(r, 0, tch[j]);
				cb[j]++;
				moved = 1;
			}
			done &= cb[j] == tb[j];
		}
		if (done)
			return 0;
		if (!moved)
			return -1;
	}
	return -1;
}

/* Give pages pg[0..k) the cells e[start[j]..start[j+1]) by moving cells
 * between neighbours, then insert the new cell (entry newat). */
static int place_cells(ut_pg **pg, uint64_t **tch, unsigned k,
		       const unsigned *start, unsigned newat,
		       const uint8_t *cell, unsigned len)
{
	unsigned tb[BAL_SIBS + 2], j = 0;

	/* boundaries counted in old cells (the new one is in no page yet) */
	for (unsigned i = 0; i <= k; i++)
		tb[i] = start[i] > newat ? start[i] - 1 : start[i];
	if (shift_cells(pg, tch, k, tb))
		return -1;
	while (start[j + 1] <= newat)
		j++;
	return ut_page_insert_tracked(pg[j]->data, newat - start[j], cell, len,
				      tch[j]);
}

/* Bytes of the interior cell for a separator before leaf cell c. */
static unsigned sep_len_of(const uint8_t *c)
{
	return INT_HDR + ut_ld16(c);
}

/* Share the cells of the window of children first..first+nsib-1 of parent
 * (pg, which overflows with cell at pos, among them) evenly over as few
 * pages as hold them, adding a page only when grow is set.  Returns UT_OK
 * (every pin but parent's consumed), BAL_DECLINED (nothing changed: a new
 * page would be needed without grow, or the parent has no room for the new
 * separators), or an error; in the last two, pg and parent stay pinned. */
static int balance_window(ut_pager *p, ut_pg *parent, uint64_t *ptch,
			  unsigned first, unsigned nsib, int grow, ut_pg *pg,
			  unsigned pos, const uint8_t *cell, unsigned len)
{
	static _Thread_local uint8_t copy[BAL_SIBS][UT_PAGE_SIZE];
	static _Thread_local struct ent e[BAL_SIBS * MAX_CELLS + 1];
	ut_pg *sib[BAL_SIBS + 1] = { 0 };
	uint64_t *tch[BAL_SIBS + 1];
	unsigned start[BAL_SIBS + 2], m = 0, k, newat = 0;
	size_t total = 0;
	long more = 0;
	int rc;
	size_t used = len + UT_PG_SLOT;

	for (unsigned s = 0; s < nsib; s++) {
		uint32_t no = child_at(parent->data, first + s);

		for (unsigned q = 0; q < s; q++)
			if (sib[q]->pgno == no)
				no = parent->pgno; /* refused just below */
		if (no == parent->pgno) {
			rc = bad_page(p, parent->pgno, "two child pointers to one page");
			goto unpin;
		}
		if (no == pg->pgno) {
			sib[s] = pg;
		} else if ((rc = ut_pager_get(p, no, &sib[s]))) {
			goto unpin;
		} else if ((rc = ut_page_expect_type(sib[s]->data, no, UT_PT_LEAF,
						     parent->pgno, "child pointer",
						     ut_pager_path(p)))) {
			goto unpin;
		}
		used += ut_page_used(sib[s]->data);
	}
	/* decline before the pages are journaled when they are all full */
	if (!grow && used > nsib * UT_PG_USABLE) {
		rc = BAL_DECLINED;
		goto unpin;
	}
	for (unsigned s = 0; s < nsib; s++)
		if ((rc = ut_pager_write_tracked(p, sib[s], &tch[s])))
			goto unpin;
	/* every cell of the window in key order, the new one included */
	for (unsigned s = 0; s < nsib; s++) {
		memcpy(copy[s], sib[s]->data, UT_PAGE_SIZE);
		for (unsigned i = 0, n = ut_page_nslots(copy[s]); i <= n; i++) {
			if (sib[s] == pg && i == pos) {
				newat = m;
				e[m].p = cell;
				e[m++].len = len;
			}
			if (i < n) {
				e[m].p = ut_page_cell(copy[s], i);
				e[m++].len = ut_page_cell_len(copy[s], i);
			}
		}
	}
	assert(m <= BAL_SIBS * MAX_CELLS + 1);
	for (unsigned i = 0; i < m; i++)
		total += e[i].len + UT_PG_SLOT;
	k = (unsigned)((total + UT_PG_USABLE - 1) / UT_PG_USABLE);
	while (k <= nsib + 1 && even_cut(e, m, k, total, start))
		k++;
	if (k > nsib + 1) { /* cannot happen with the cell size limits */
		rc = bad_page(p, pg->pgno, "balance does not fit");
		goto unpin;
	}
	/* the parent must take the new separators without splitting */
	for (unsigned s = 0; s + 1 < nsib; s++)
		more -= (long)ut_page_cell_len(parent->data, first + s) + UT_PG_SLOT;
	for (unsigned j = 1; j < k; j++)
		more += (long)sep_len_of(e[start[j]].p) + UT_PG_SLOT;
	if ((k > nsib && !grow) || more > (long)ut_page_free(parent->data)) {
		rc = BAL_DECLINED;
		goto unpin;
	}
	if (k > nsib && ((rc = ut_pager_alloc(p, UT_PT_LEAF, &sib[nsib])) ||
			 (rc = ut_pager_write_tracked(p, sib[nsib], &tch[nsib]))))
		goto unpin;
	if (k < nsib || always_rebuild ||
	    place_cells(sib, tch, k, start, newat, cell, len)) {
		/* rebuild the pages from the copies */
		for (unsigned j = 0; j < k; j++) {
			if (tch[j])
				*tch[j] = ~0ull;
			ut_page_init(sib[j]->data, sib[j]->pgno, UT_PT_LEAF);
			if (fill(sib[j]->data, e + start[j], start[j + 1] - start[j])) {
				rc = bad_page(p, sib[j]->pgno, "balance does not fit");
				goto unpin;
			}
		}
	}
	/* parent: drop the old separators, point the window's last child at
	 * the last page, then add one separator per page boundary */
	for (unsigned s = 0; s + 1 < nsib; s++)
		ut_page_delete_tracked(parent->data, first, ptch);
	set_child_tracked(parent->data, first, sib[k - 1]->pgno, ptch);
	for (unsigned j = 0; j + 1 < k; j++) {
		uint8_t sep[INT_HDR + UT_MAX_KEY];
		const uint8_t *c = e[start[j + 1]].p;
		unsigned sl = make_int_cell(sep, sib[j]->pgno, c + LEAF_HDR, ut_ld16(c));

		if (ut_page_insert_tracked(parent->data, first + j, sep, sl, ptch)) {
			rc = bad_page(p, parent->pgno, "separator does not fit");
			goto unpin;
		}
	}
	for (unsigned j = 0; j < k; j++)
		ut_pager_release(p, sib[j]);
	/* fewer pages than before (the siblings were underfull) */
	for (unsigned s = k; s < nsib; s++)
		if ((rc = ut_pager_free(p, sib[s]))) {
			while (++s < nsib)
				ut_pager_release(p, sib[s]);
			return rc;
		}
	return UT_OK;
unpin:
	for (unsigned s = 0; s <= nsib; s++)
		if (sib[s] && sib[s] != pg)
			ut_pager_release(p, sib[s]);
	return rc;
}

/* Free bytes of child i of parent, or -1 when it cannot be read. */
static long child_free(ut_pager *p, ut_pg *parent, unsigned i)
{
	ut_pg *c;
	long f;

	if (ut_pager_get(p, child_at(parent->data, i), &c))
		return -1;
	f = ut_page_free(c->data);
	ut_pager_release(p, c);
	return f;
}

/* The leaf pg (pinned, writable, at tree level `level` > 0) has no room for
 * cell at pos.  Before splitting, move cells to the neighbour with more
 * room; when both pages of that pair are full, spread three siblings over
 * four pages (the split then leaves pages 3/4 full rather than 1/2).
 * Random inserts so keep leaves about 90% full, as SQLite's balance does.
 * Consumes the pin on pg unless it returns BAL_DECLINED (nothing changed:
 * no sibling, or the parent has no room for the new separators). */
static int balance_leaf(ut_pager *p, struct path *pa, int level, ut_pg *pg,
			unsigned pos, const uint8_t *cell, unsigned len)
{
	unsigned pidx = pa->idx[level - 1], pn, first;
	uint64_t *ptch;
	ut_pg *parent;
	int rc;

	if ((rc = get_w(p, pa->pgno[level - 1], &parent, &ptch))) {
		ut_pager_release(p, pg);
		return rc;
	}
	pn = ut_page_nslots(parent->data); /* pn + 1 children */
	if (child_at(parent->data, pidx) != pg->pgno) {
		rc = bad_page(p, parent->pgno, "child pointer mismatch");
		goto out;
	}
	if (pn == 0) {
		ut_pager_release(p, parent);
		return BAL_DECLINED;
	}
	/* the pair with the roomier neighbour */
	first = pidx;
	if (pidx == pn || (pidx > 0 && child_free(p, parent, pidx - 1) >
					  child_free(p, parent, pidx + 1)))
		first = pidx - 1;
	rc = balance_window(p, parent, ptch, first, 2, pn < 2, pg, pos, cell, len);
	if (rc == BAL_DECLINED && pn >= 2) {
		first = pidx == 0 ? 0 : pidx == pn ? pidx - 2 : pidx - 1;
		rc = balance_window(p, parent, ptch, first, 3, 1, pg, pos, cell, len);
	}
	if (rc == BAL_DECLINED) {
		ut_pager_release(p, parent);
		return rc;
	}
	if (rc == UT_OK) {
		ut_pager_release(p, parent);
		return UT_OK;
	}
out:
	ut_pager_release(p, pg);
	ut_pager_release(p, parent);
	return rc;
}

/* A leaf full at the end (pos == n: appends) or at the front (pos == 0:
 * descending inserts) splits there: the new cell goes alone into a new page
 * beside pg, which stays as it is, full, and unlogged.  Sets the separator
 * (child = the left page) and the two page numbers.  Consumes pg's pin. */
static int split_at_edge(ut_pager *p, ut_pg *pg, unsigned pos,
			 const uint8_t *cell, unsigned len, uint8_t *sep,
			 unsigned *seplen, uint32_t *leftno, uint32_t *rightno)
{
	const uint8_t *first = pos == 0 ? ut_page_cell(pg->data, 0) : cell;
	ut_pg *np;
	int rc;

	if ((rc = ut_pager_alloc(p, UT_PT_LEAF, &np))) {
		ut_pager_release(p, pg);
		return rc;
	}
	ut_page_insert(np->data, 0, cell, len); /* fits: an empty page */
	*leftno = pos == 0 ? np->pgno : pg->pgno;
	*rightno = pos == 0 ? pg->pgno : np->pgno;
	/* the right page's first key */
	*seplen = make_int_cell(sep, *leftno, first + LEAF_HDR, ut_ld16(first));
	ut_pager_release(p, np);
	ut_pager_release(p, pg);
	return UT_OK;
}

/* Split pg (pinned, writable) with cell inserted at pos into pg (left) and a
 * new page (right): leaves in halves, interior pages in halves or, at the
 * tree's right edge, at the end.  Sets the separator (child = pg) and the
 * page numbers.  Consumes pg's pin. */
static int split_page(ut_pager *p, struct path *pa, ut_pg *pg, unsigned pos,
		      const uint8_t *cell, unsigned len, uint8_t *sep,
		      unsigned *seplen, uint32_t *leftno, uint32_t *rightno)
{
	static _Thread_local uint8_t scratch[UT_PAGE_SIZE];
	static _Thread_local struct ent e[MAX_CELLS + 1];
	int type = ut_page_type(pg->data);
	unsigned n = ut_page_nslots(pg->data), k;
	uint32_t oldright = ut_page_right(pg->data);
	size_t total = 0, acc = 0;
	ut_pg *np;
	int rc;

	if ((rc = ut_pager_write(p, pg))) { /* rewritten whole */
		ut_pager_release(p, pg);
		return rc;
	}
	memcpy(scratch, pg->data, UT_PAGE_SIZE);
	for (unsigned i = 0, j = 0; i <= n; i++) {
		if (i == pos) {
			e[i].p = cell;
			e[i].len = len;
		} else {
			e[i].p = ut_page_cell(scratch, j);
			e[i].len = ut_page_cell_len(scratch, j);
			j++;
		}
		total += e[i].len + UT_PG_SLOT;
	}
	/* entries e[0..n] */
	assert(n < MAX_CELLS && pos <= n);
	if (type == UT_PT_INTERIOR && pa->rightmost && pos == n) {
		k = n;
	} else {
		for (k = 0; k < n && acc + e[k].len + UT_PG_SLOT <= total / 2; k++)
			acc += e[k].len + UT_PG_SLOT;
		if (k == 0 && (type == UT_PT_LEAF || n > 1))
			k = 1;
	}
	if ((rc = ut_pager_alloc(p, type, &np))) {
		ut_pager_release(p, pg);
		return rc;
	}
	ut_page_init(pg->data, pg->pgno, type);
	if (type == UT_PT_LEAF) {
		/* left e[0..k), right e[k..n] */
		*seplen = make_int_cell(sep, pg->pgno, e[k].p + LEAF_HDR,
					ut_ld16(e[k].p));
		rc = fill(pg->data, e, k) | fill(np->data, e + k, n + 1 - k);
	} else {
		/* left e[0..k), e[k] moves up, right e[k+1..n] */
		*seplen = make_int_cell(sep, pg->pgno, e[k].p + INT_HDR,
					ut_ld16(e[k].p + 4));
		rc = fill(pg->data, e, k) | fill(np->data, e + k + 1, n - k);
		ut_page_set_right(pg->data, ut_ld32(e[k].p));
		ut_page_set_right(np->data, oldright);
	}
	*leftno = pg->pgno;
	*rightno = np->pgno;
	ut_pager_release(p, np);
	ut_pager_release(p, pg);
	/* cannot happen with the cell size limits */
	return rc ? bad_page(p, *leftno, "split does not fit") : UT_OK;
}

/* Insert cell at slot pos of page pg (pinned, writable) at tree level
 * `level` (pa->depth = leaf level), sharing or splitting upward as needed.
 * Consumes the pin on pg. */
static int insert_split(ut_pager *p, struct path *pa, int level, ut_pg *pg,
			unsigned pos, const uint8_t *cell, unsigned len)
{
	uint8_t sepbuf[2][INT_HDR + UT_MAX_KEY];
	int which = 0, rc;

	for (;;) {
		uint64_t *touched;

		if ((rc = ut_pager_write_tracked(p, pg, &touched))) {
			ut_pager_release(p, pg);
			return rc;
		}
		if (ut_page_insert_tracked(pg->data, pos, cell, len, touched) == 0) {
			ut_pager_release(p, pg);
			return UT_OK;
		}
		int leaf = ut_page_type(pg->data) == UT_PT_LEAF;
		unsigned n = ut_page_nslots(pg->data), seplen;
		uint32_t oldno = pg->pgno, leftno, rightno;
		uint8_t *sep = sepbuf[which ^= 1];

		/* where the inserts go: at an edge, split there; elsewhere share
		 * with the siblings first */
		if (leaf && level > 0 && pos > 0 && pos < n) {
			rc = balance_leaf(p, pa, level, pg, pos, cell, len);
			if (rc != BAL_DECLINED)
				return rc;
		}
		if (leaf && (pos == 0 || pos == n))
			rc = split_at_edge(p, pg, pos, cell, len, sep, &seplen,
					   &leftno, &rightno);
		else
			rc = split_page(p, pa, pg, pos, cell, len, sep, &seplen,
					&leftno, &rightno);
		if (rc)
			return rc;
		if (level == 0) {
			ut_pg *root;
			if ((rc = ut_pager_alloc(p, UT_PT_INTERIOR, &root)))
				return rc;
			ut_page_insert(root->data, 0, sep, seplen);
			ut_page_set_right(root->data, rightno);
			*pa->rootslot = root->pgno;
			ut_pager_release(p, root);
			return UT_OK;
		}
		level--;
		assert(level >= 0 && level < pa->depth);
		if ((rc = ut_pager_get(p, pa->pgno[level], &pg)))
			return rc;
		if ((rc = ut_pager_write(p, pg))) {
			ut_pager_release(p, pg);
			return rc;
		}
		pos = pa->idx[level];
		if (child_at(pg->data, pos) != oldno) {
			ut_pager_release(p, pg);
			return bad_page(p, pa->pgno[level], "child pointer mismatch");
		}
		/* the separator's child (left) takes slot pos, the right page
		 * the pointer after it */
		set_child_at(pg->data, pos, rightno);
		cell = sep;
		len = seplen;
	}
}

/* The default tree's calls: its root lives in the header. */
static int main_root_set(ut_pager *p, uint32_t before, uint32_t after, int rc)
{
	if (after != before) {
		int rc2 = ut_pager_set_root(p, after);

		if (rc == UT_OK)
			rc = rc2;
	}
	return rc;
}

/* The put of ut_bt_put and ut_bt_put_in, inlined into both: the
 * default table's put (bench_kv's load and updates) pays no second call
 * frame for the root slot named tables need. */
static inline __attribute__((always_inline)) int
put_at(ut_pager *p, uint32_t *root, const void *key, size_t klen,
       const void *val, size_t vlen, int *added)
{
	uint8_t cell[UT_BT_MAX_LOCAL];
	unsigned len;
	struct path pa;
	ut_pg *leaf;
	int found, rc;
	uint32_t ovfl = 0;
	uint64_t *touched;

	*added = 0;
	if ((rc = descend(p, NULL, *root, key, klen, &pa, &leaf)))
		return rc;
	pa.rootslot = root;
	/* an insert or replace that fits changes a few hundred bytes: let the
	 * log compare only those blocks with the pre-image */
	if ((rc = ut_pager_write_tracked(p, leaf, &touched))) {
		ut_pager_release(p, leaf);
		return rc;
	}
	unsigned i = leaf_search(leaf->data, key, klen, &found);

	*added = !found;
	ut_st16(cell, (uint16_t)klen);
	ut_st32(cell + 3, (uint32_t)vlen);
	memcpy(cell + LEAF_HDR, key, klen);
	if (LEAF_HDR + klen + vlen <= UT_BT_MAX_LOCAL) {
		cell[2] = 0;
		if (vlen)
			memcpy(cell + LEAF_HDR + klen, val, vlen);
		len = LEAF_HDR + (unsigned)(klen + vlen);
	} else {
		cell[2] = UT_CELL_OVFL;
		if ((rc = ovfl_write(p, val, vlen, &ovfl))) {
			ut_pager_release(p, leaf);
			return rc;
		}
		ut_st32(cell + LEAF_HDR + klen, ovfl);
		len = LEAF_HDR + (unsigned)klen + 4;
	}
	if (found) {
		const uint8_t *v;
		size_t vl;
		uint32_t old;
		cell_value(ut_page_cell(leaf->data, i), &v, &vl, &old);
		if (old && (rc = ovfl_free(p, old, vl))) {
			ut_pager_release(p, leaf);
			return rc;
		}
		if (ut_page_replace_tracked(leaf->data, i, cell, len, touched) == 0) {
			ut_pager_release(p, leaf);
			return UT_OK;
		}
		ut_page_delete_tracked(leaf->data, i, touched);
	}
	return insert_split(p, &pa, pa.depth, leaf, i, cell, len);
}

int ut_bt_put(ut_pager *p, const void *key, size_t klen, const void *val,
	      size_t vlen, int *added)
{
	uint32_t r0 = ut_pager_root(p), root = r0;
	int dummy, rc;

	/* (not in main_root_set's arguments: root must be read after) */
	rc = put_at(p, &root, key, klen, val, vlen, added ? added : &dummy);
	return main_root_set(p, r0, root, rc);
}

int ut_bt_put_in(ut_pager *p, uint32_t *root, const void *key, size_t klen,
		 const void *val, size_t vlen, int *added)
{
	return put_at(p, root, key, klen, val, vlen, added);
}

/* ---- delete with merges ---------------------------------------------- */

/* Remove the pointer at pa->idx[level] from the interior page at `level`
 * (the child was freed); the page keeps its pin and stays writable. */
static void drop_child(uint8_t *page, unsigned idx)
{
	unsigned n = ut_page_nslots(page);

	if (idx < n) {
		ut_page_delete(page, idx);
	} else {
		ut_page_set_right(page, child_at(page, n - 1));
		ut_page_delete(page, n - 1);
	}
}

/* Merge the two children of parent at slots a and a+1 if they fit in one
 * page; returns 1 if merged, 0 if not, negative on error. */
static int try_merge(ut_pager *p, ut_pg *parent, unsigned a)
{
	ut_pg *l, *r;
	int rc, merged = 0;
	uint32_t lno = child_at(parent->data, a), rno = child_at(parent->data, a + 1);

	if (lno == rno || lno == parent->pgno || rno == parent->pgno)
		return bad_page(p, parent->pgno, "two child pointers to one page");
	if ((rc = get_w(p, lno, &l, NULL)))
		return rc;
	if ((rc = get_w(p, rno, &r, NULL))) {
		ut_pager_release(p, l);
		return rc;
	}
	int type = ut_page_type(l->data);
	if (type != UT_PT_LEAF && type != UT_PT_INTERIOR)
		rc = ut_page_expect_type(l->data, lno, UT_PT_LEAF, parent->pgno,
					 "child pointer", ut_pager_path(p));
	else
		rc = ut_page_expect_type(r->data, rno, type, parent->pgno,
					 "child pointer", ut_pager_path(p));
	if (rc) {
		ut_pager_release(p, l);
		ut_pager_release(p, r);
		return rc;
	}
	unsigned need = ut_page_used(l->data) + ut_page_used(r->data);
	uint8_t sep[INT_HDR + UT_MAX_KEY];
	unsigned seplen = 0;
	if (type == UT_PT_INTERIOR) {
		const uint8_t *k;
		size_t kl;
		int_key(parent->data, a, &k, &kl);
		seplen = make_int_cell(sep, ut_page_right(l->data), k, kl);
		need += seplen + UT_PG_SLOT;
	}
	if (need <= UT_PG_USABLE) {
		uint8_t *L = l->data, *R = r->data;
		if (type == UT_PT_INTERIOR) {
			ut_page_insert(L, ut_page_nslots(L), sep, seplen);
			ut_page_set_right(L, ut_page_right(R));
		}
		for (unsigned i = 0; i < ut_page_nslots(R); i++)
			ut_page_insert(L, ut_page_nslots(L), ut_page_cell(R, i),
				       ut_page_cell_len(R, i));
		/* parent: slot a+1 now points to l, slot a goes away */
		set_child_at(parent->data, a + 1, lno);
		ut_page_delete(parent->data, a);
		ut_pager_release(p, l);
		if ((rc = ut_pager_free(p, r)))
			return rc;
		merged = 1;
	} else {
		ut_pager_release(p, l);
		ut_pager_release(p, r);
	}
	return merged;
}

/* After a delete at tree level `level` of page pg (pinned, writable):
 * free empty pages, merge underfull ones, collapse the root. */
static int rebalance(ut_pager *p, struct path *pa, int level, ut_pg *pg)
{
	int rc;

	for (;;) {
		unsigned n = ut_page_nslots(pg->data);
		int type = ut_page_type(pg->data);
		if (level == 0) {
			/* root: an interior root with one child hands over */
			while (type == UT_PT_INTERIOR && n == 0) {
				uint32_t child = ut_page_right(pg->data);
				ut_pg *cp;

				if ((rc = get_w(p, child, &cp, NULL))) {
					ut_pager_release(p, pg);
					return rc;
				}
				type = ut_page_type(cp->data);
				if (type != UT_PT_LEAF && type != UT_PT_INTERIOR) {
					rc = ut_page_expect_type(cp->data, child,
								 UT_PT_LEAF, pg->pgno,
								 "child pointer",
								 ut_pager_path(p));
					ut_pager_release(p, cp);
					ut_pager_release(p, pg);
					return rc;
				}
				*pa->rootslot = child;
				if ((rc = ut_pager_free(p, pg))) {
					ut_pager_release(p, cp);
					return rc;
				}
				pg = cp;
				n = ut_page_nslots(pg->data);
			}
			ut_pager_release(p, pg);
			return UT_OK;
		}
		ut_pg *parent;
		unsigned pidx = pa->idx[level - 1];
		if (type == UT_PT_LEAF && n == 0) {
			/* empty leaf: unlink and free it, and any ancestor left
			 * without children */
			if ((rc = ut_pager_free(p, pg)))
				return rc;
			for (;;) {
				level--;
				if ((rc = get_w(p, pa->pgno[level], &parent, NULL)))
					return rc;
				if (ut_page_nslots(parent->data) > 0 || level == 0)
					break;
				if ((rc = ut_pager_free(p, parent)))
					return rc;
			}
			if (ut_page_nslots(parent->data) == 0) {
				/* the root lost its only child: empty tree */
				ut_page_init(parent->data, parent->pgno, UT_PT_LEAF);
				ut_pager_release(p, parent);
				return UT_OK;
			}
			drop_child(parent->data, pa->idx[level]);
			pg = parent;
			continue;
		}
		if (ut_page_used(pg->data) >= UNDERFULL) {
			ut_pager_release(p, pg);
			return UT_OK;
		}
		ut_pager_release(p, pg);
		if ((rc = get_w(p, pa->pgno[level - 1], &parent, NULL)))
			return rc;
		unsigned pn = ut_page_nslots(parent->data);
		if (pn > 0) {
			/* with the right neighbour, else with the left one */
			rc = 0;
			if (pidx < pn)
				rc = try_merge(p, parent, pidx);
			if (rc == 0 && pidx > 0)
				rc = try_merge(p, parent, pidx - 1);
			if (rc < 0) {
				ut_pager_release(p, parent);
				return rc;
			}
		}
		pg = parent;
		level--;
	}
}

int ut_bt_del(ut_pager *p, const void *key, size_t klen)
{
	uint32_t r0 = ut_pager_root(p), root = r0;
	int rc = ut_bt_del_in(p, &root, key, klen);

	return main_root_set(p, r0, root, rc);
}

int ut_bt_del_in(ut_pager *p, uint32_t *root, const void *key, size_t klen)
{
	struct path pa;
	ut_pg *leaf;
	int found, rc;

	if ((rc = descend(p, NULL, *root, key, klen, &pa, &leaf)))
		return rc;
	pa.rootslot = root;
	unsigned i = leaf_search(leaf->data, key, klen, &found);
	if (!found) {
		ut_pager_release(p, leaf);
		return UT_NOTFOUND;
	}
	if ((rc = ut_pager_write(p, leaf))) {
		ut_pager_release(p, leaf);
		return rc;
	}
	const uint8_t *v;
	size_t vl;
	uint32_t ovfl;
	cell_value(ut_page_cell(leaf->data, i), &v, &vl, &ovfl);
	if (ovfl && (rc = ovfl_free(p, ovfl, vl))) {
		ut_pager_release(p, leaf);
		return rc;
	}
	ut_page_delete(leaf->data, i);
	return rebalance(p, &pa, pa.depth, leaf);
}

/* ---- freeing a whole tree (a table's drop) ---------------------------- */

/* Free the subtree at pgno, children first; path[0..depth) are its
 * ancestors, still unfreed (pinned by the callers up the recursion).
 * Only the ancestors are held: every other page is released once
 * freed, so memory stays bounded by the depth, whatever the tree's size. */
static int free_sub(ut_pager *p, struct reached *r, uint32_t *path, int depth,
		    uint32_t pgno)
{
	ut_pg *pg;
	int rc, t;

	if ((rc = reach(p, r, pgno, depth ? path[depth - 1] : 0)) ||
	    (rc = ut_pager_get(p, pgno, &pg)))
		return rc;
	t = ut_page_type(pg->data);
	if (t != UT_PT_LEAF && t != UT_PT_INTERIOR) {
		rc = depth ? ut_page_expect_type(pg->data, pgno, UT_PT_LEAF,
						 path[depth - 1], "child pointer",
						 ut_pager_path(p))
			   : bad_page(p, pgno, "the root is not a tree page");
		ut_pager_release(p, pg);
		return rc;
	}
	if (t == UT_PT_INTERIOR) {
		path[depth] = pgno;
		for (unsigned i = 0; i <= ut_page_nslots(pg->data); i++) {
			uint32_t child = child_at(pg->data, i);

			if ((rc = child_on_path(p, path, depth + 1, child)) ||
			    (rc = free_sub(p, r, path, depth + 1, child))) {
				ut_pager_release(p, pg);
				return rc;
			}
		}
	} else {
		for (unsigned i = 0; i < ut_page_nslots(pg->data); i++) {
			const uint8_t *v;
			size_t vl;
			uint32_t ovfl;

			cell_value(ut_page_cell(pg->data, i), &v, &vl, &ovfl);
			if (ovfl && (rc = ovfl_free_in(p, r, pgno, ovfl, vl))) {
				ut_pager_release(p, pg);
				return rc;
			}
		}
	}
	return ut_pager_free(p, pg);
}

int ut_bt_free_tree(ut_pager *p, uint32_t root)
{
	uint32_t path[UT_BT_MAXDEPTH];
	struct reached r;
	int rc;

	r.n = ut_pager_page_count(p);
	if (!(r.bits = calloc(r.n / 8 + 1, 1)))
		return UT_ENOMEM;
	rc = free_sub(p, &r, path, 0, root);
	free(r.bits);
	return rc;
}

/* ---- cursors --------------------------------------------------------- */

void ut_btcur_init(ut_btcur *c, ut_pager *p, ut_snap *s)
{
	memset(c, 0, sizeof(*c));
	c->pager = p;
	c->snap = s;
}

void ut_btcur_init_in(ut_btcur *c, ut_pager *p, ut_snap *s,
		      const uint32_t *root)
{
	ut_btcur_init(c, p, s);
	c->root = root;
}

void ut_btcur_reset(ut_btcur *c)
{
	if (c->leaf)
		ut_pager_release(c->pager, c->leaf);
	c->leaf = NULL;
	c->valid = 0;
}

void ut_btcur_fini(ut_btcur *c)
{
	ut_btcur_reset(c);
	free(c->vbuf);
	c->vbuf = NULL;
	c->vcap = 0;
}

/* Remember the last key of the leaf the cursor leaves. */
static void keep_last_key(ut_btcur *c)
{
	unsigned n = ut_page_nslots(c->leaf->data);
	const uint8_t *k;
	size_t kl;

	if (!n)
		return;
	leaf_key(c->leaf->data, n - 1, &k, &kl);
	memcpy(c->lastkey, k, kl);
	c->lastkl = kl;
}

/* The leaf the cursor arrived at (not the root) holds keys, all above
 * the last key of the leaf before it. */
static int leaf_follows(ut_btcur *c, uint32_t pgno)
{
	const uint8_t *k;
	size_t kl;

	if (ut_page_nslots(c->leaf->data) == 0)
		return bad_page(c->pager, pgno, "an empty leaf below the root");
	leaf_key(c->leaf->data, 0, &k, &kl);
	if (c->lastkl && keycmp(k, kl, c->lastkey, c->lastkl) <= 0)
		return bad_page(c->pager, pgno, "first key not above the previous "
				"leaf's last key (a child pointer leads to the "
				"wrong page)");
	return UT_OK;
}

/* Move to the first entry of the next leaf. */
static int next_leaf(ut_btcur *c)
{
	ut_pager *p = c->pager;
	uint32_t child = 0;
	ut_pg *pg;
	int lvl, rc;

	if (c->leaf) {
		keep_last_key(c);
		ut_pager_release(p, c->leaf);
	}
	c->leaf = NULL;
	c->valid = 0;
	for (lvl = c->depth - 1; lvl >= 0; lvl--) {
		if ((rc = ut_pager_get_at(p, c->snap, c->pgno[lvl], &pg)))
			return rc;
		if (c->idx[lvl] < ut_page_nslots(pg->data)) {
			c->idx[lvl]++;
			child = child_at(pg->data, c->idx[lvl]);
			ut_pager_release(p, pg);
			break;
		}
		ut_pager_release(p, pg);
	}
	if (lvl < 0)
		return UT_NOTFOUND;
	if ((rc = child_on_path(p, c->pgno, lvl + 1, child)))
		return rc;
	/* leftmost descent below level lvl */
	for (int l = lvl + 1;; l++) {
		if ((rc = ut_pager_get_at(p, c->snap, child, &pg)))
			return rc;
		int t = ut_page_type(pg->data);
		if (t == UT_PT_LEAF) {
			c->depth = l;
			break;
		}
		if (t != UT_PT_INTERIOR) {
			rc = ut_page_expect_type(pg->data, child, UT_PT_INTERIOR,
						 c->pgno[l - 1], "child pointer",
						 ut_pager_path(p));
			ut_pager_release(p, pg);
			return rc;
		}
		c->pgno[l] = child;
		c->idx[l] = 0;
		child = child_at(pg->data, 0);
		ut_pager_release(p, pg);
		if ((rc = child_on_path(p, c->pgno, l + 1, child)))
			return rc;
	}
	c->leaf = pg;
	c->li = 0;
	if ((rc = leaf_follows(c, child)))
		return rc;
	c->valid = 1;
	return UT_OK;
}

int ut_btcur_seek(ut_btcur *c, const void *key, size_t klen)
{
	struct path pa;
	ut_pg *leaf;
	int found, rc;

	ut_btcur_reset(c);
	c->lastkl = 0;
	rc = descend(c->pager, c->snap,
		     c->root ? *c->root : main_root(c->pager, c->snap),
		     klen ? key : NULL, klen, &pa, &leaf);
	if (rc)
		return rc;
	c->depth = pa.depth;
	memcpy(c->pgno, pa.pgno, sizeof(pa.pgno[0]) * (size_t)pa.depth);
	memcpy(c->idx, pa.idx, sizeof(pa.idx[0]) * (size_t)pa.depth);
	c->leaf = leaf;
	c->li = klen ? leaf_search(leaf->data, key, klen, &found) : 0;
	if (c->li < ut_page_nslots(leaf->data)) {
		c->valid = 1;
		return UT_OK;
	}
	return next_leaf(c);
}

int ut_btcur_next(ut_btcur *c)
{
	if (!c->valid)
		return UT_NOTFOUND;
	if (++c->li < ut_page_nslots(c->leaf->data))
		return UT_OK;
	return next_leaf(c);
}

int ut_btcur_get(ut_btcur *c, const void **key, size_t *klen,
		 const void **val, size_t *vlen)
{
	const uint8_t *k, *v;
	size_t kl, vl;
	uint32_t ovfl;
	int rc;

	if (!c->valid)
		return UT_NOTFOUND;
	uint8_t *cell = ut_page_cell(c->leaf->data, c->li);
	leaf_key(c->leaf->data, c->li, &k, &kl);
	cell_value(cell, &v, &vl, &ovfl);
	if (ovfl) {
		if (vl > c->vcap) {
			uint8_t *nb = realloc(c->vbuf, vl);
			if (!nb)
				return UT_ENOMEM;
			c->vbuf = nb;
			c->vcap = vl;
		}
		if ((rc = ovfl_read(c->pager, c->snap, ovfl, c->vbuf, vl)))
			return rc;
		v = c->vbuf;
	}
	if (key)
		*key = k;
	if (klen)
		*klen = kl;
	if (val)
		*val = v;
	if (vlen)
		*vlen = vl;
	return UT_OK;
}

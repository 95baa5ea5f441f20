/*
 * engine/catalog.h - the catalog of named tables (design in catalog.c).
 *
 * Contract: the catalog is a B+tree (btree.h) whose keys are table names
 * (1..UT_TABLE_NAME_MAX bytes) and whose values are ut_catent records;
 * its root is the header's catalog root (pager.h, UT_META_CATROOT; 0 = no
 * table was ever created).  Reads take a snapshot s (NULL: the writer's
 * view); changes need the pager's write transaction.  Every entry read is
 * checked before it is returned: a damaged entry is UT_ECORRUPT with a
 * detail naming the table.
 */
#ifndef UT_CATALOG_H
#define UT_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "pager.h"

/* A catalog entry, stored as UT_CATENT_BYTES little-endian bytes:
 *   0 u32 root   the table's B+tree root page
 *   4 u32 flags  reserved, 0
 *   8 u64 id     unique for the database's life (a dropped and recreated
 *                table gets a new one, so old handles stay dropped)
 *  16 u64 keys   keys in the table
 *  24 u64 pages  its pages: leaves, interior pages, overflow pages */
#define UT_CATENT_BYTES 32u
typedef struct ut_catent {
	uint32_t root, flags;
	uint64_t id, keys, pages;
} ut_catent;

/* Look name up.  UT_OK with *e, UT_NOTFOUND, or UT_ECORRUPT when the entry
 * is damaged: a value of the wrong size, a root of 0, beyond the file
 * (the snapshot's page count), or the default tree's or the catalog's own
 * root.  verify: also ut_cat_verify. */
int ut_cat_get(ut_pager *p, ut_snap *s, const char *name, size_t nlen,
	       int verify, ut_catent *e);
/* The checks of an entry that cost more, for its first use: its root page
 * is a leaf or interior page, and no other entry names the same root (a
 * walk of the catalog, O(tables)). */
int ut_cat_verify(ut_pager *p, ut_snap *s, const char *name, size_t nlen,
		  const ut_catent *e);
/* Insert or replace name's entry (creating the catalog tree first). */
int ut_cat_put(ut_pager *p, const char *name, size_t nlen, const ut_catent *e);
/* Remove name's entry; UT_NOTFOUND when absent. */
int ut_cat_del(ut_pager *p, const char *name, size_t nlen);
/* The first table whose name is above after[0..alen) (alen 0: the first
 * table): its name in name[0..*nlen) (name holds UT_TABLE_NAME_MAX + 1
 * bytes; it is NUL-terminated) and entry.  UT_NOTFOUND past the last. */
int ut_cat_next(ut_pager *p, ut_snap *s, const char *after, size_t alen,
		char *name, size_t *nlen, ut_catent *e);
/* Decode a stored entry (len bytes) of table name; UT_ECORRUPT naming it
 * when it is not one (wrong size, no root). */
int ut_cat_decode(const void *v, size_t len, const char *name, size_t nlen,
		  const char *path, ut_catent *e);

#endif /* UT_CATALOG_H */

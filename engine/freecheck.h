/*
 * engine/freecheck.h - the free list checked against every tree before
 * a free page is reused (what it guarantees and what not: freecheck.c).
 */
#ifndef UT_FREECHECK_H
#define UT_FREECHECK_H

#include "pager.h"

/* Walk the free list, then every tree (default table, catalog, each
 * table), in the writer's view with no change in flight: UT_OK when no
 * page is both live and free, and none is reached twice; UT_ECORRUPT
 * naming the page and the table otherwise; or the error of a page read
 * (a page failing its checksum is UT_ECORRUPT too) or UT_ENOMEM. */
int ut_free_verify(ut_pager *p);

#endif /* UT_FREECHECK_H */

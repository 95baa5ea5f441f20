/*
 * engine/db.h - engine-internal view of a ut_db, for tests and tools that
 * need to look below the public API (tree depth, free pages).  Not part of
 * the public API; untorn.h users never need it.
 */
#ifndef UT_DB_H
#define UT_DB_H

#include "untorn.h"
#include "pager.h"

/* The pager behind an open handle. */
ut_pager *ut_db_pager(ut_db *db);

#endif /* UT_DB_H */

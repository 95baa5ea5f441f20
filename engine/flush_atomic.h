/*
 * engine/flush_atomic.h - the "atomic" flush strategy's own entry points
 * (the strategy itself is ut_flush_atomic_ops, see flush.h).
 */
#ifndef UT_FLUSH_ATOMIC_H
#define UT_FLUSH_ATOMIC_H

#include "ut_io.h"

/* Can pages of the open data file be written with RWF_ATOMIC?  UT_OK, or
 * UT_ENOTSUP with ut_errdetail saying why (no O_DIRECT, statx without the
 * atomic fields, STATX_ATTR_WRITE_ATOMIC not set, unit range without 16384),
 * or another negative code if statx itself failed.  The strategy's probe;
 * also what `untorn info` can print to explain the mode in use. */
int ut_flush_atomic_check(ut_file *data, const char *path);

#endif /* UT_FLUSH_ATOMIC_H */

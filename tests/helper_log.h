/*
 * tests/helper_log.h - a stand-in for the write-ahead log in tests that
 * drive the pager directly (helper_*.c is linked into every test program):
 * each commit gets the next LSN, nothing is written, every flush succeeds.
 */
#ifndef UT_TEST_HELPER_LOG_H
#define UT_TEST_HELPER_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "pager.h"

/* ut_log_hooks.log_commit: *lsn = the next LSN (thread-safe). */
int stub_log_commit(void *ctx, const ut_log_page *pages, size_t n, int sync,
		    uint64_t *lsn);
/* The last LSN stub_log_commit handed out. */
uint64_t stub_log_last(void);

#endif /* UT_TEST_HELPER_LOG_H */

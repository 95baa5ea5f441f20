/*
 * tests/helper_log.c - the log stand-in of helper_log.h.
 */
#include "helper_log.h"

static uint64_t next_lsn;

int stub_log_commit(void *ctx, const ut_log_page *pages, size_t n, int sync,
		    uint64_t *lsn)
{
	(void)ctx;
	(void)pages;
	(void)n;
	(void)sync;
	*lsn = __atomic_add_fetch(&next_lsn, 1, __ATOMIC_RELAXED);
	return UT_OK;
}

uint64_t stub_log_last(void)
{
	return __atomic_load_n(&next_lsn, __ATOMIC_RELAXED);
}

/*
 * engine/check.h - the integrity check behind ut_check (untorn.h).
 * Caller holds a read transaction (readers excluded from writers).
 */
#ifndef UT_CHECK_H
#define UT_CHECK_H

#include <stdio.h>

#include "pager.h"

int ut_check_pager(ut_pager *p, FILE *report, ut_check_result *res);

#endif /* UT_CHECK_H */

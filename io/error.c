/*
 * io/error.c - error detail and errno mapping shared by every layer.
 *
 * The calling thread's last error is kept as text so that ut_errdetail() can
 * say which file and page an error concerns; codes alone cannot.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "ut_io.h"

static _Thread_local char errdetail[512];

void ut_set_errdetail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errdetail, sizeof(errdetail), fmt, ap);
	va_end(ap);
}

void ut_clear_errdetail(void)
{
	errdetail[0] = 0;
}

const char *ut_errdetail(void)
{
	return errdetail;
}

int ut_errno_to_rc(int err)
{
	switch (err) {
	case 0:
		return UT_OK;
	case ENOMEM:
		return UT_ENOMEM;
	case ENOSPC:
	case EDQUOT:
		return UT_ENOSPC;
	case EINVAL:
		return UT_EINVAL;
	case EOPNOTSUPP:
		return UT_ENOTSUP;
	case EWOULDBLOCK:
		return UT_ELOCKED;
	case EROFS:
	case EACCES:
	case EPERM:
		return UT_EREADONLY;
	default:
		return UT_EIO;
	}
}

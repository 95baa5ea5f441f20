/*
 * io/error.c - error codes' names, error detail and errno mapping shared by
 * every layer.  ut_strerror lives here, at the bottom, so that any layer may
 * name a code without pointing up into the engine.
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

const char *ut_strerror(int rc)
{
	switch (rc) {
	case UT_OK: return "success";
	case UT_NOTFOUND: return "not found";
	case UT_EINVAL: return "invalid argument";
	case UT_ENOMEM: return "out of memory";
	case UT_EIO: return "I/O error";
	case UT_ECORRUPT: return "database corrupt (checksum or invariant failure)";
	case UT_ELOCKED: return "database locked by another process or handle";
	case UT_ETOOBIG: return "key or value too large";
	case UT_ENOSPC: return "no space left on device";
	case UT_EREADONLY: return "write through a read-only transaction or file";
	case UT_ENOTDB: return "not an untorn database";
	case UT_EVERSION: return "untorn database of another format version or page size";
	case UT_ENOTSUP: return "protection mode not supported";
	case UT_EFATAL: return "an earlier write failed; the handle refuses writes";
	case UT_EBUSY: return "transactions still open";
	case UT_ESNAPSHOT: return "snapshot too old: a page version this read transaction needs was dropped for the snapshot memory budget";
	default: return "unknown error";
	}
}

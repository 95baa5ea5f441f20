/*
 * io/probe.c - statx(STATX_WRITE_ATOMIC): can this file's stack write a page
 * untorn?  See ut_io.h for the contract and ut_atomic_compat.h for the uapi
 * definitions this needs on older toolchains.
 */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "ut_atomic_compat.h"
#include "ut_io.h"

void ut_atomic_info_from_statx(const struct ut_statx *sx, ut_atomic_info *out)
{
	memset(out, 0, sizeof(*out));
	if (!(sx->stx_mask & STATX_WRITE_ATOMIC)) {
		out->mask_missing = 1;
		return;
	}
	out->supported = (sx->stx_attributes & STATX_ATTR_WRITE_ATOMIC) != 0;
	out->unit_min = sx->stx_atomic_write_unit_min;
	out->unit_max = sx->stx_atomic_write_unit_max;
	out->segments_max = sx->stx_atomic_write_segments_max;
	out->unit_max_opt = sx->stx_atomic_write_unit_max_opt;
}

static int statx_failed(const char *what, int err, ut_atomic_info *out)
{
	memset(out, 0, sizeof(*out));
	out->statx_errno = err;
	out->mask_missing = 1;
	/* No statx at all (old kernel, seccomp sandbox): nothing is supported,
	 * which *out says; that is an answer, not an error. */
	if (err == ENOSYS || err == EPERM)
		return UT_OK;
	ut_set_errdetail("%s: statx(STATX_WRITE_ATOMIC): %s", what,
			 strerror(err));
	return err == ENOENT || err == ENOTDIR ? UT_NOTFOUND
					       : ut_errno_to_rc(err);
}

int ut_probe_atomic_fd(int fd, ut_atomic_info *out)
{
	struct ut_statx sx;

	memset(&sx, 0, sizeof(sx));
	if (ut_statx_call(fd, "", AT_EMPTY_PATH, STATX_WRITE_ATOMIC, &sx))
		return statx_failed("open file", errno, out);
	ut_atomic_info_from_statx(&sx, out);
	return UT_OK;
}

int ut_probe_atomic(const char *path, ut_atomic_info *out)
{
	struct ut_statx sx;
	char *copy;
	int rc;

	if (!path || !out)
		return UT_EINVAL;
	memset(&sx, 0, sizeof(sx));
	if (ut_statx_call(AT_FDCWD, path, 0, STATX_WRITE_ATOMIC, &sx) == 0) {
		ut_atomic_info_from_statx(&sx, out);
		return UT_OK;
	}
	if (errno != ENOENT)
		return statx_failed(path, errno, out);
	/* Not created yet: ask about the directory it will live in. */
	copy = strdup(path);
	if (!copy)
		return UT_ENOMEM;
	if (ut_statx_call(AT_FDCWD, dirname(copy), 0, STATX_WRITE_ATOMIC,
			  &sx) == 0) {
		ut_atomic_info_from_statx(&sx, out);
		rc = UT_OK;
	} else {
		rc = statx_failed(path, errno, out);
	}
	free(copy);
	return rc;
}

int ut_atomic_fits(const ut_atomic_info *ai, uint32_t len)
{
	if (!ai || !ai->supported || len == 0)
		return 0;
	if (len & (len - 1))
		return 0;
	return ai->unit_min <= len && len <= ai->unit_max;
}

int ut_atomic_fast(const ut_atomic_info *ai, uint32_t len)
{
	if (!ut_atomic_fits(ai, len))
		return 0;
	return ai->unit_max_opt == 0 || len <= ai->unit_max_opt;
}

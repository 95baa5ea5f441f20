/*
 * engine/flush.c - choosing and owning a flush strategy (flush.h).
 */
#include <stdlib.h>
#include <string.h>

#include "flush.h"

static const struct ut_flusher_ops *builtin(int protect)
{
	switch (protect) {
	case UT_PROTECT_ATOMIC:
		return &ut_flush_atomic_ops ? &ut_flush_atomic_ops : NULL;
	case UT_PROTECT_DOUBLEWRITE:
		return &ut_flush_doublewrite_ops ? &ut_flush_doublewrite_ops : NULL;
	case UT_PROTECT_UNSAFE:
		return &ut_flush_unsafe_ops;
	default:
		return NULL;
	}
}

static int try_ops(const struct ut_flusher_ops *ops, ut_vfs *vfs,
		   const char *path, ut_file *data)
{
	if (!ops)
		return UT_ENOTSUP;
	return ops->probe ? ops->probe(vfs, data, path) : UT_OK;
}

int ut_flusher_create(int protect, ut_vfs *vfs, const char *path,
		      ut_file *data, ut_io_counters *ctr, ut_flusher **out)
{
	const struct ut_flusher_ops *ops = NULL;
	ut_flusher *fl;
	int rc;

	*out = NULL;
	if (protect == UT_PROTECT_AUTO) {
		static const int order[] = { UT_PROTECT_ATOMIC,
					     UT_PROTECT_DOUBLEWRITE,
					     UT_PROTECT_UNSAFE };
		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			if (try_ops(builtin(order[i]), vfs, path, data) == UT_OK) {
				ops = builtin(order[i]);
				break;
			}
		}
	} else if (protect >= UT_PROTECT_ATOMIC && protect <= UT_PROTECT_UNSAFE) {
		ops = builtin(protect);
		if (!ops) {
			ut_set_errdetail("%s: protection mode %s is not built in",
					 path, ut_protect_name(protect));
			return UT_ENOTSUP;
		}
		rc = try_ops(ops, vfs, path, data);
		if (rc)
			return rc;
	} else {
		ut_set_errdetail("%s: unknown protection mode %d", path, protect);
		return UT_EINVAL;
	}
	if (!ops)
		return UT_ENOTSUP;
	fl = calloc(1, sizeof(*fl));
	if (!fl || !(fl->path = strdup(path))) {
		free(fl);
		return UT_ENOMEM;
	}
	fl->ops = ops;
	fl->vfs = vfs;
	fl->ctr = ctr;
	if (ops->init && (rc = ops->init(fl)) != UT_OK) {
		free(fl->path);
		free(fl);
		return rc;
	}
	*out = fl;
	return UT_OK;
}

void ut_flusher_destroy(ut_flusher *fl)
{
	if (!fl)
		return;
	if (fl->ops->fini)
		fl->ops->fini(fl);
	free(fl->path);
	free(fl);
}

/*
 * engine/flush.c - choosing and owning a flush strategy (flush.h), and the
 * names of the protection modes (ut_protect_name), which belong to the layer
 * that implements them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flush.h"

/* Strong references: every strategy is linked in, static link included. */
static const struct ut_flusher_ops *const strategies[] = {
	&ut_flush_atomic_ops,
	&ut_flush_doublewrite_ops,
	&ut_flush_unsafe_ops,
	&ut_flush_fullpage_ops,
};

const char *ut_protect_name(int protect)
{
	switch (protect) {
	case UT_PROTECT_AUTO: return "auto";
	case UT_PROTECT_ATOMIC: return "atomic";
	case UT_PROTECT_DOUBLEWRITE: return "doublewrite";
	case UT_PROTECT_UNSAFE: return "unsafe";
	case UT_PROTECT_FULLPAGE: return "fullpage";
	default: return "unknown";
	}
}

static const struct ut_flusher_ops *builtin(int protect)
{
	for (size_t i = 0; i < sizeof(strategies) / sizeof(strategies[0]); i++)
		if (strategies[i]->protect == protect)
			return strategies[i];
	return NULL;
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
	char reason[sizeof(((ut_flusher *)0)->reason)];
	ut_flusher *fl;
	int rc;

	*out = NULL;
	if (protect == UT_PROTECT_AUTO) {
		ut_atomic_info ai;

		rc = try_ops(builtin(UT_PROTECT_ATOMIC), vfs, path, data);
		memset(&ai, 0, sizeof(ai));
		if (rc == UT_OK)
			(void)ut_file_atomic_info(data, &ai);
		if (rc == UT_OK && !ut_atomic_fast(&ai, UT_PAGE_SIZE)) {
			/* Atomic would work, through the filesystem's slow
			 * emulation: a double write costs less. */
			snprintf(reason, sizeof(reason),
				 "auto: not atomic (statx atomic write unit "
				 "%u..%u, but unit_max_opt %u: a %u-byte page "
				 "would take the slow software path)",
				 ai.unit_min, ai.unit_max, ai.unit_max_opt,
				 UT_PAGE_SIZE);
			ops = builtin(UT_PROTECT_DOUBLEWRITE);
		} else if (rc == UT_OK) {
			snprintf(reason, sizeof(reason),
				 "auto: O_DIRECT and statx atomic write unit "
				 "%u..%u (opt %u) covers a %u-byte page",
				 ai.unit_min, ai.unit_max, ai.unit_max_opt,
				 UT_PAGE_SIZE);
			ops = builtin(UT_PROTECT_ATOMIC);
		} else if (rc == UT_ENOTSUP) {
			/* The probe's detail says why atomic does not fit. */
			snprintf(reason, sizeof(reason), "auto: not atomic (%s)",
				 ut_errdetail());
			ops = builtin(UT_PROTECT_DOUBLEWRITE);
		} else {
			return rc;
		}
	} else if (protect >= UT_PROTECT_ATOMIC && protect <= UT_PROTECT_FULLPAGE) {
		ops = builtin(protect);
		if (!ops) {
			ut_set_errdetail("%s: protection mode %s is not built in",
					 path, ut_protect_name(protect));
			return UT_ENOTSUP;
		}
		rc = try_ops(ops, vfs, path, data);
		if (rc)
			return rc;
		snprintf(reason, sizeof(reason), "requested by name");
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
	memcpy(fl->reason, reason, sizeof(reason));
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

/* Writes with UT_WRITE_WRITEBACK (double-write's) go in groups of
 * UT_FLUSH_INFLIGHT_PAGES, each on the device before the next; the others
 * (atomic's, through io_uring; unsafe's) in batches of IN_PLACE_BATCH. */
#define IN_PLACE_BATCH 64

int ut_flush_sync_data(ut_flusher *fl, ut_file *data)
{
	int rc;

	if (!fl->unsynced)
		return UT_OK;
	rc = ut_file_sync(data);
	if (rc)
		return rc;
	ut_ctr_add(&fl->ctr->syncs, 1);
	fl->unsynced = 0;
	return UT_OK;
}

int ut_flush_in_place(ut_flusher *fl, ut_file *data, const ut_flush_page *pages,
		      size_t n, unsigned flags, unsigned wflags)
{
	ut_iowrite w[IN_PLACE_BATCH];
	size_t per_write = wflags & UT_WRITE_WRITEBACK ?
		UT_FLUSH_INFLIGHT_PAGES : IN_PLACE_BATCH;
	int rc;

	for (size_t i = 0; i < n;) {
		size_t k = 0;

		for (; k < per_write && i < n; k++, i++) {
			w[k].buf = pages[i].buf;
			w[k].len = UT_PAGE_SIZE;
			w[k].off = (uint64_t)pages[i].pgno * UT_PAGE_SIZE;
		}
		fl->unsynced = 1;
		rc = ut_file_write_batch(data, w, k, wflags);
		if (rc)
			return rc;
		ut_ctr_add(&fl->ctr->page_writes, k);
	}
	if (flags & UT_FLUSH_DURABLE)
		return ut_flush_sync_data(fl, data);
	return UT_OK;
}

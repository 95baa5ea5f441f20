/*
 * tests/helper_shim.c - a pass-through ut_vfs for tests to change a few
 * calls of (helper_shim.h).
 */
#include <stdlib.h>

#include "helper_shim.h"

int64_t shim_read(ut_file *f, void *buf, size_t len, uint64_t off)
{
	return ut_file_read(shim_in(f), buf, len, off);
}

int shim_write(ut_file *f, const void *buf, size_t len, uint64_t off,
	       unsigned wflags)
{
	return ut_file_write(shim_in(f), buf, len, off, wflags);
}

int shim_write_batch(ut_file *f, const ut_iowrite *w, size_t n, unsigned wflags)
{
	return ut_file_write_batch(shim_in(f), w, n, wflags);
}

int shim_sync(ut_file *f) { return ut_file_sync(shim_in(f)); }
int shim_size(ut_file *f, uint64_t *bytes) { return ut_file_size(shim_in(f), bytes); }
int shim_truncate(ut_file *f, uint64_t bytes) { return ut_file_truncate(shim_in(f), bytes); }

int shim_atomic_info(ut_file *f, ut_atomic_info *out)
{
	return ut_file_atomic_info(shim_in(f), out);
}

void shim_close(ut_file *f)
{
	ut_file_close(shim_in(f));
	free(f);
}

static int shim_open(ut_vfs *v, const char *path, unsigned oflags, ut_file **out)
{
	shim_vfs *s = (shim_vfs *)v;
	shim_file *sf = calloc(1, sizeof(*sf));
	int rc;

	if (!sf)
		return UT_ENOMEM;
	if ((rc = s->in->open(s->in, path, oflags, &sf->in))) {
		free(sf);
		return rc;
	}
	sf->f = *sf->in;	/* path, direct, dio_align */
	sf->f.ops = s->ops;
	sf->v = s;
	sf->tag = s->tag_of ? s->tag_of(path) : 0;
	*out = &sf->f;
	return UT_OK;
}

static int shim_remove(ut_vfs *v, const char *path)
{
	return ((shim_vfs *)v)->in->remove(((shim_vfs *)v)->in, path);
}

static int shim_exists(ut_vfs *v, const char *path)
{
	return ((shim_vfs *)v)->in->exists(((shim_vfs *)v)->in, path);
}

static int shim_sync_dir(ut_vfs *v, const char *path)
{
	return ((shim_vfs *)v)->in->sync_dir(((shim_vfs *)v)->in, path);
}

void shim_init(shim_vfs *s, ut_vfs *in, const struct ut_file_ops *ops)
{
	s->v.open = shim_open;
	s->v.remove = shim_remove;
	s->v.exists = shim_exists;
	s->v.sync_dir = shim_sync_dir;
	s->in = in;
	s->ops = ops;
	s->tag_of = NULL;
}

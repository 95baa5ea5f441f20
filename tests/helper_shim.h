/*
 * tests/helper_shim.h - a ut_vfs over another that passes every call
 * through, for the tests that change a few (a disk that fills, a sync
 * held at a gate, slow page writes, writes counted).
 *
 * A test embeds shim_vfs first in its own vfs struct (so that the vfs a
 * file points to casts to it) and gives it a ut_file_ops table: the
 * shim_* forwarders below, with the calls it changes replaced by its
 * own.  Every file the shim opens is a shim_file: the inner file's fields
 * with that table, the inner file, the vfs, and a tag the test's tag_of
 * made of the path (which file it is).  remove, exists and sync_dir go
 * to the inner vfs as they are.
 */
#ifndef UT_TEST_HELPER_SHIM_H
#define UT_TEST_HELPER_SHIM_H

#include "ut_io.h"

typedef struct shim_vfs shim_vfs;

typedef struct shim_file {
	ut_file f;       /* first: what the engine holds */
	ut_file *in;     /* the inner vfs's file */
	shim_vfs *v;     /* the shim that opened it */
	int tag;         /* v->tag_of(path), 0 without tag_of */
} shim_file;

struct shim_vfs {
	ut_vfs v;                          /* first: what the engine is given */
	ut_vfs *in;
	const struct ut_file_ops *ops;     /* every file's */
	int (*tag_of)(const char *path);   /* NULL: every tag 0 */
};

/* s over in, its files with ops; tag_of may be set afterwards. */
void shim_init(shim_vfs *s, ut_vfs *in, const struct ut_file_ops *ops);

static inline ut_file *shim_in(ut_file *f) { return ((shim_file *)f)->in; }
static inline shim_vfs *shim_of(ut_file *f) { return ((shim_file *)f)->v; }

/* The forwarders: each calls the same on the inner file (shim_close
 * closes it and frees the shim's). */
int64_t shim_read(ut_file *f, void *buf, size_t len, uint64_t off);
int shim_write(ut_file *f, const void *buf, size_t len, uint64_t off,
	       unsigned wflags);
int shim_write_batch(ut_file *f, const ut_iowrite *w, size_t n, unsigned wflags);
int shim_sync(ut_file *f);
int shim_size(ut_file *f, uint64_t *bytes);
int shim_truncate(ut_file *f, uint64_t bytes);
int shim_atomic_info(ut_file *f, ut_atomic_info *out);
void shim_close(ut_file *f);

#endif /* UT_TEST_HELPER_SHIM_H */

/*
 * bench/count_vfs.c - an SQLite VFS shim, "count", over the default VFS:
 * it counts the bytes written to main database files and to -wal files,
 * and the xSync calls, for bench_durable's SQLite figures (count_vfs.h).
 */
#include <string.h>

#include "count_vfs.h"

static sqlite3_vfs *base_vfs;
static uint64_t cnt_main_bytes, cnt_wal_bytes, cnt_other_bytes, cnt_syncs;

struct cfile {
	sqlite3_file base;
	int kind; /* 0 main, 1 wal, 2 other */
	sqlite3_file *real;
};

static int c_close(sqlite3_file *f)
{
	struct cfile *p = (struct cfile *)f;
	int rc = p->real->pMethods ? p->real->pMethods->xClose(p->real) : SQLITE_OK;

	sqlite3_free(p->real);
	return rc;
}
#define REAL(f) (((struct cfile *)(f))->real)
static int c_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{ return REAL(f)->pMethods->xRead(REAL(f), b, n, o); }
static int c_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
	struct cfile *p = (struct cfile *)f;

	/* threads (--threads) share the counters */
	__atomic_fetch_add(p->kind == 0 ? &cnt_main_bytes : p->kind == 1 ?
			   &cnt_wal_bytes : &cnt_other_bytes, (uint64_t)n,
			   __ATOMIC_RELAXED);
	return p->real->pMethods->xWrite(p->real, b, n, o);
}
static int c_trunc(sqlite3_file *f, sqlite3_int64 s)
{ return REAL(f)->pMethods->xTruncate(REAL(f), s); }
static int c_sync(sqlite3_file *f, int fl)
{ __atomic_fetch_add(&cnt_syncs, 1, __ATOMIC_RELAXED); return REAL(f)->pMethods->xSync(REAL(f), fl); }
static int c_size(sqlite3_file *f, sqlite3_int64 *s)
{ return REAL(f)->pMethods->xFileSize(REAL(f), s); }
static int c_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int c_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int c_check(sqlite3_file *f, int *o)
{ return REAL(f)->pMethods->xCheckReservedLock(REAL(f), o); }
static int c_fctl(sqlite3_file *f, int op, void *a)
{ return REAL(f)->pMethods->xFileControl(REAL(f), op, a); }
static int c_sect(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int c_dev(sqlite3_file *f)
{ return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int c_shmmap(sqlite3_file *f, int i, int sz, int e, void volatile **pp)
{ return REAL(f)->pMethods->xShmMap(REAL(f), i, sz, e, pp); }
static int c_shmlock(sqlite3_file *f, int o, int n, int fl)
{ return REAL(f)->pMethods->xShmLock(REAL(f), o, n, fl); }
static void c_shmbar(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int c_shmunmap(sqlite3_file *f, int d)
{ return REAL(f)->pMethods->xShmUnmap(REAL(f), d); }

static const sqlite3_io_methods c_methods = {
	2, c_close, c_read, c_write, c_trunc, c_sync, c_size, c_lock, c_unlock,
	c_check, c_fctl, c_sect, c_dev, c_shmmap, c_shmlock, c_shmbar, c_shmunmap,
	NULL, NULL,
};

static int c_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags,
		  int *out)
{
	struct cfile *p = (struct cfile *)f;
	int rc;

	(void)v;
	p->real = sqlite3_malloc(base_vfs->szOsFile);
	if (!p->real)
		return SQLITE_NOMEM;
	memset(p->real, 0, (size_t)base_vfs->szOsFile);
	p->kind = (flags & SQLITE_OPEN_MAIN_DB) ? 0 : (flags & SQLITE_OPEN_WAL) ? 1 : 2;
	rc = base_vfs->xOpen(base_vfs, name, p->real, flags, out);
	if (rc != SQLITE_OK || !p->real->pMethods) {
		sqlite3_free(p->real);
		p->real = NULL;
		p->base.pMethods = NULL;
		return rc;
	}
	p->base.pMethods = &c_methods;
	return rc;
}

static sqlite3_vfs count_vfs;

void register_count_vfs(void)
{
	if (base_vfs)
		return;
	base_vfs = sqlite3_vfs_find(NULL);
	count_vfs = *base_vfs;
	count_vfs.zName = "count";
	count_vfs.szOsFile = (int)sizeof(struct cfile);
	count_vfs.xOpen = c_open;
	count_vfs.pNext = NULL;
	sqlite3_vfs_register(&count_vfs, 0);
}

void count_vfs_totals(uint64_t *main_bytes, uint64_t *wal_bytes, uint64_t *syncs)
{
	*main_bytes = __atomic_load_n(&cnt_main_bytes, __ATOMIC_RELAXED);
	*wal_bytes = __atomic_load_n(&cnt_wal_bytes, __ATOMIC_RELAXED);
	*syncs = __atomic_load_n(&cnt_syncs, __ATOMIC_RELAXED);
}

/*
 * engine/backup.c - ut_backup: a copy of the database as of one snapshot,
 * taken while the writer goes on.
 *
 * Contract: a read transaction's snapshot (pager.h) gives every page below
 * its page count in the version it sees; they are written in page order to
 * a new file, page 0 with its checkpoint fields rewritten so that the copy
 * is a cleanly closed database that needs no log (redo start and max LSN =
 * the snapshot's LSN, clean; page-write bound = that LSN too, format
 * UT_FORMAT_VERSION), each page sealed, then the file and its
 * directory entry made durable.  Nothing is written where a file exists:
 * DEST, DEST "-wal" and DEST "-dw" must all be absent (a stale log beside
 * the copy would be replayed into it), DEST is created exclusively (a file
 * that appeared since the check is neither written nor removed).  The
 * source's log is made durable up to the snapshot first, so the copy holds
 * no commit that a crash of the source could still lose.  On failure the
 * partial copy is removed.  The writer never waits for it; it costs the buffer pool the
 * pages it reads and the snapshot budget the versions it keeps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "pager.h"
#include "wal.h"

#define COPY_PAGES 64u /* pages per write */

static int absent(ut_vfs *vfs, const char *dest, const char *suffix)
{
	size_t n = strlen(dest);
	char *path = malloc(n + strlen(suffix) + 1);
	int rc;

	if (!path)
		return UT_ENOMEM;
	memcpy(path, dest, n);
	strcpy(path + n, suffix);
	rc = vfs->exists(vfs, path);
	if (rc == 1) {
		ut_set_errdetail("%s: exists; a backup writes only a new database "
				 "(remove it, or choose another name)", path);
		rc = UT_EINVAL;
	}
	free(path);
	return rc;
}

/* The header of the copy: cleanly closed at the snapshot's LSN. */
static void seal_header(uint8_t *m, uint64_t lsn, int mode)
{
	ut_st64(m + UT_META_CKPT_LSN, lsn);
	ut_st64(m + UT_META_MAXLSN, lsn);
	ut_st32(m + UT_META_MODE, (uint32_t)mode);
	ut_st32(m + UT_META_CLEAN, 1);
	/* no page of the snapshot is newer than it */
	ut_st32(m + UT_META_VERSION, ut_meta_format(m));
	ut_st64(m + UT_META_PAGEBOUND, lsn);
}

static int copy_pages(ut_pager *p, ut_snap *s, ut_file *out, uint8_t *buf)
{
	for (uint32_t first = 0; first < s->npages; first += COPY_PAGES) {
		uint32_t n = s->npages - first < COPY_PAGES ? s->npages - first
							     : COPY_PAGES;
		int rc;

		for (uint32_t i = 0; i < n; i++) {
			uint8_t *dst = buf + (size_t)i * UT_PAGE_SIZE;
			ut_pg *pg;

			if ((rc = ut_pager_get_at(p, s, first + i, &pg)))
				return rc;
			memcpy(dst, pg->data, UT_PAGE_SIZE);
			ut_pager_release(p, pg);
			if (first + i == 0)
				seal_header(dst, s->lsn, ut_pager_protect(p));
			ut_page_seal(dst);
		}
		rc = ut_file_write(out, buf, (size_t)n * UT_PAGE_SIZE,
				   (uint64_t)first * UT_PAGE_SIZE, 0);
		if (rc)
			return rc;
	}
	return ut_file_sync(out);
}

int ut_backup(ut_db *db, const char *dest)
{
	ut_pager *p;
	ut_vfs *vfs;
	ut_file *out = NULL;
	uint8_t *buf = NULL;
	ut_txn *t;
	int rc;

	ut_clear_errdetail();

	if (!db || !dest || !*dest)
		return UT_EINVAL;
	p = ut_db_pager(db);
	vfs = ut_pager_vfs(p);
	if ((rc = absent(vfs, dest, "")) || (rc = absent(vfs, dest, UT_WAL_SUFFIX)) ||
	    (rc = absent(vfs, dest, UT_DW_SUFFIX)))
		return rc;
	if ((rc = ut_begin(db, UT_RDONLY, &t)))
		return rc;
	buf = ut_io_alloc((size_t)COPY_PAGES * UT_PAGE_SIZE);
	if (!buf)
		rc = UT_ENOMEM;
	if (rc == UT_OK && ut_db_wal(db))
		rc = ut_wal_flush_to(ut_db_wal(db), ut_txn_snap(t)->lsn);
	if (rc == UT_OK)
		rc = vfs->open(vfs, dest, UT_OPEN_CREATE | UT_OPEN_EXCL, &out);
	if (rc == UT_OK)
		rc = copy_pages(p, ut_txn_snap(t), out, buf);
	ut_file_close(out);
	if (rc == UT_OK)
		rc = vfs->sync_dir(vfs, dest);
	if (rc && out) {
		char detail[512];

		snprintf(detail, sizeof(detail), "%s", ut_errdetail());
		(void)vfs->remove(vfs, dest);
		ut_set_errdetail("%s", detail);
	}
	ut_abort(t);
	free(buf);
	return rc;
}

/*
 * engine/probe.c - ut_probe (untorn.h): what the file layer reports for a
 * path, and what UT_PROTECT_AUTO would choose there, without a database.
 *
 * Contract: reads the io layer only (statx probe, a trial open through the
 * POSIX vfs); changes no file but a scratch file it creates and removes
 * when the path does not exist yet (O_DIRECT, io_uring and the statx
 * atomic unit are per file: a directory reports no atomic unit).  The
 * prediction follows the rule flush.c applies at open; an existing
 * database's own choice is ut_protect_reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "untorn.h"
#include "ut_io.h"

/* What UT_PROTECT_AUTO would choose from the probe and the trial open. */
static int predict_auto(const ut_atomic_info *ai, int open_rc, int direct,
			const char **why)
{
	if (ai->statx_errno)
		*why = "statx failed";
	else if (ai->mask_missing)
		*why = "statx did not report STATX_WRITE_ATOMIC";
	else if (!ai->supported)
		*why = "STATX_ATTR_WRITE_ATOMIC not set";
	else if (!ut_atomic_fits(ai, UT_PAGE_SIZE))
		*why = "16384 outside [atomic_unit_min, atomic_unit_max]";
	else if (!ut_atomic_fast(ai, UT_PAGE_SIZE))
		*why = "16384 above atomic_unit_max_opt (slow software atomic writes)";
	else if (open_rc || !direct)
		*why = "no O_DIRECT on this file";
	else {
		*why = "O_DIRECT and the statx atomic write unit covers a 16384-byte page";
		return UT_PROTECT_ATOMIC;
	}
	return UT_PROTECT_DOUBLEWRITE;
}

/* The directory a not-yet-created path would live in (malloc'd). */
static char *parent_dir(const char *path)
{
	char *dir = strdup(path), *slash;

	if (!dir)
		return NULL;
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = 0;
	else if (slash)
		slash[1] = 0;
	else
		strcpy(dir, ".");
	return dir;
}

/* The trial open: path itself, or a scratch file in dir.  *scratch is the
 * scratch file's name when one was created (the caller removes it). */
static void trial_open(ut_vfs *v, const char *path, const char *dir,
		       ut_probe_info *pi, ut_file **f, char **scratch)
{
	*f = NULL;
	*scratch = NULL;
	if (pi->exists) {
		pi->open_rc = v->open(v, path, UT_OPEN_RDONLY | UT_OPEN_DIRECT, f);
	} else {
		size_t n = strlen(dir) + 64;

		*scratch = malloc(n);
		if (!*scratch) {
			pi->open_rc = UT_ENOMEM;
			return;
		}
		snprintf(*scratch, n, "%s/.untorn-info-%ld", dir, (long)getpid());
		pi->open_rc = v->open(v, *scratch, UT_OPEN_CREATE | UT_OPEN_DIRECT, f);
		if (pi->open_rc) {
			free(*scratch);
			*scratch = NULL;
		}
		pi->probed = *scratch ? UT_PROBED_SCRATCH : UT_PROBED_DIR;
	}
	if (pi->open_rc) {
		*f = NULL;
		snprintf(pi->open_detail, sizeof(pi->open_detail), "%s: %s",
			 ut_strerror(pi->open_rc), ut_errdetail());
		return;
	}
	pi->direct_io = (*f)->direct;
	pi->uring = ut_file_uses_uring(*f);
	if (ut_file_direct_note(*f))
		snprintf(pi->direct_note, sizeof(pi->direct_note), "%s",
			 ut_file_direct_note(*f));
	if (pi->exists)
		(void)ut_file_size(*f, &pi->file_size);
}

static void fill_atomic(ut_probe_info *pi, const ut_atomic_info *ai)
{
	const char *why;

	pi->statx_errno = ai->statx_errno;
	pi->statx_atomic_reported = !ai->mask_missing;
	pi->atomic_supported = ai->supported;
	pi->atomic_unit_min = ai->unit_min;
	pi->atomic_unit_max = ai->unit_max;
	pi->atomic_segments_max = ai->segments_max;
	pi->atomic_unit_max_opt = ai->unit_max_opt;
	pi->atomic_fits_page = ut_atomic_fits(ai, UT_PAGE_SIZE);
	pi->auto_protect = predict_auto(ai, pi->open_rc, pi->direct_io, &why);
	snprintf(pi->auto_reason, sizeof(pi->auto_reason), "%s", why);
}

static int probe(const char *path, ut_probe_info *pi)
{
	ut_vfs *v = ut_vfs_posix();
	ut_atomic_info ai;
	ut_file *f;
	char *dir = NULL, *scratch;
	int rc;

	pi->exists = v->exists(v, path) == 1;
	if (!pi->exists && !(dir = parent_dir(path)))
		return UT_ENOMEM;
	trial_open(v, path, dir, pi, &f, &scratch);
	memset(&ai, 0, sizeof(ai));
	rc = ut_probe_atomic(scratch ? scratch : pi->exists ? path : dir, &ai);
	ut_file_close(f);
	if (scratch)
		v->remove(v, scratch);
	free(scratch);
	free(dir);
	if (rc == UT_NOTFOUND) {
		ut_set_errdetail("%s: neither it nor its directory exists", path);
		return UT_EIO;
	}
	if (rc != UT_OK && !ai.statx_errno)
		return rc; /* the probe itself could not run (no memory) */
	fill_atomic(pi, &ai);
	return UT_OK;
}

int ut_probe_read(const char *path, ut_probe_info *pi, size_t size)
{
	ut_probe_info full;
	int rc;

	ut_clear_errdetail();
	if (!path || !*path || !pi || size < sizeof(size_t))
		return UT_EINVAL;
	memset(&full, 0, sizeof(full));
	rc = probe(path, &full);
	full.size = size < sizeof(full) ? size : sizeof(full);
	memcpy(pi, &full, full.size);
	if (size > full.size)
		memset((char *)pi + full.size, 0, size - full.size);
	return rc;
}

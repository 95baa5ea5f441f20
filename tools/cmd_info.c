/*
 * tools/cmd_info.c - the untorn tool's info (cli.h): what the file layer
 * reports for a path (ut_probe) and the protection mode the engine would
 * take there, as NAME<TAB>VALUE lines.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/*
 * info: what ut_probe reports for PATH (or, when PATH does not exist yet,
 * for a scratch file in the directory it would be created in, or the
 * directory itself when no file can be created there), then the protection
 * mode: for an existing database the engine's own choice and reason
 * (ut_protect_reason), else what UT_PROTECT_AUTO would choose.
 * Output is NAME<TAB>VALUE lines.
 */
static const char *yesno(int b) { return b ? "yes" : "no"; }

static void info_file(const char *path, const ut_probe_info *pi)
{
	printf("path\t%s\n", path);
	printf("exists\t%s\n", yesno(pi->exists));
	printf("probed\t%s\n",
	       pi->probed == UT_PROBED_FILE ? "the file itself"
	       : pi->probed == UT_PROBED_SCRATCH ? "scratch file in its directory"
	       : "directory: no scratch file could be created");
	if (pi->exists && !pi->open_rc)
		printf("size\t%llu\n", (unsigned long long)pi->file_size);
}

static void info_atomic(const ut_probe_info *pi)
{
	if (pi->statx_errno)
		printf("statx\tfailed: %s\n", strerror(pi->statx_errno));
	else
		printf("statx\tok\n");
	printf("statx_mask_write_atomic\t%s\n",
	       pi->statx_errno ? "unknown" : yesno(pi->statx_atomic_reported));
	printf("statx_attr_write_atomic\t%s\n", yesno(pi->atomic_supported));
	if (pi->statx_errno)
		printf("atomic_write\tunknown (statx: %s)\n", strerror(pi->statx_errno));
	else if (!pi->statx_atomic_reported)
		printf("atomic_write\tunknown (statx did not report STATX_WRITE_ATOMIC)\n");
	else
		printf("atomic_write\t%s\n",
		       pi->atomic_supported ? "supported" : "not supported");
	printf("atomic_unit_min\t%u\n", pi->atomic_unit_min);
	printf("atomic_unit_max\t%u\n", pi->atomic_unit_max);
	printf("atomic_segments_max\t%u\n", pi->atomic_segments_max);
	printf("atomic_unit_max_opt\t%u%s\n", pi->atomic_unit_max_opt,
	       pi->atomic_unit_max_opt ? "" : " (none reported)");
	printf("atomic_fits_page\t%s (%u bytes)\n", yesno(pi->atomic_fits_page),
	       UT_PAGE_SIZE);
	if (pi->open_rc)
		printf("o_direct\tunknown (open: %s)\n", pi->open_detail);
	else if (pi->direct_io)
		printf("o_direct\tyes (accepted)\n");
	else
		printf("o_direct\tno (%s)\n", pi->direct_note[0]
		       ? pi->direct_note : "refused; buffered I/O");
	if (pi->open_rc)
		printf("io_uring\tunknown\n");
	else
		printf("io_uring\t%s\n", pi->uring ? "yes (page write batches)"
						   : "no (pwrite loop)");
}

static void info_protect(const char *path, const ut_probe_info *pi)
{
	const char *mode = ut_protect_name(pi->auto_protect);
	ut_options o = cli.opt;
	ut_db *db;
	ut_stats st;
	int rc;

	printf("page_size\t%u\n", UT_PAGE_SIZE);
	printf("protect_auto\t%s (%s)\n", mode, pi->auto_reason);
	if (cli.opt.protect != UT_PROTECT_AUTO)
		printf("protect_requested\t%s\n", ut_protect_name(cli.opt.protect));
	if (!pi->exists) {
		if (cli.opt.protect == UT_PROTECT_AUTO)
			printf("mode\t%s (auto, predicted from the probe: %s)\n",
			       mode, pi->auto_reason);
		else
			printf("mode\t%s (requested by name)\n",
			       ut_protect_name(cli.opt.protect));
		return;
	}
	/* An existing file: the mode it last ran in (a read-only open reports
	 * it; it refuses a database that needs recovery), then the engine's
	 * choice for this open, and why. */
	o.create = 0;
	o.readonly = 1;
	if (ut_open(path, &o, &db) == UT_OK) {
		if (!ut_stats_get(db, &st))
			printf("protect_last\t%s\n", ut_protect_name(st.protect));
		ut_close(db);
	}
	o.readonly = cli.opt.readonly;
	rc = ut_open(path, &o, &db);
	if (rc) {
		printf("database\tnot opened: %s: %s\n", ut_strerror(rc), ut_errdetail());
		return;
	}
	printf("database\tyes\n");
	if (!ut_stats_get(db, &st)) {
		const char *note = ut_direct_note(db);

		printf("protect_in_use\t%s\n", ut_protect_name(st.protect));
		printf("mode\t%s (%s)\n", ut_protect_name(st.protect),
		       ut_protect_reason(db));
		printf("db_o_direct\t%s%s%s\n", yesno(st.direct_io),
		       note ? ": " : "", note ? note : "");
		printf("db_io_uring\t%s\n", yesno(st.uring));
	}
	ut_close(db);
}

int cmd_info(int argc, char **argv, long batch)
{
	ut_probe_info pi;
	int rc;

	(void)argc; (void)batch;
	rc = ut_probe(argv[0], &pi);
	if (rc)
		return fail_rc(rc, argv[0]);
	info_file(argv[0], &pi);
	info_atomic(&pi);
	info_protect(argv[0], &pi);
	return EXIT_OK;
}

/*
 * tools/cmd_copy.c - the untorn tool's compact and backup (cli.h): a new
 * database from an old one.  compact copies every table in key order
 * (full leaves, no free pages) into a DEST that must not exist, complete
 * only when it exits 0; backup copies one snapshot page for page
 * (ut_backup) while writers go on.  Both print the sizes.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "cli.h"

/* Copy every record of table name (NULL: the default one) of src into
 * dst's table of that name (created) in key order, batch per transaction:
 * ascending inserts leave each leaf full. */
static int copy_table(ut_txn *src, const char *name, ut_db *dst, long batch,
		      long long *n)
{
	ut_cursor *c;
	ut_txn *t = NULL;
	ut_table *stb = NULL, *dtb = NULL;
	long in_txn = 0;
	int rc = name ? ut_table_open(src, name, 0, &stb) : UT_OK;

	if (rc || (rc = ut_tcursor_open(src, stb, &c)))
		return rc;
	if (name) { /* created even when empty */
		if ((rc = ut_begin(dst, 0, &t)) ||
		    (rc = ut_table_open(t, name, UT_CREATE, &dtb))) {
			ut_cursor_close(c);
			if (t)
				ut_abort(t);
			return rc;
		}
	}
	rc = ut_cursor_seek(c, NULL, 0);
	while (rc == UT_OK) {
		const void *k, *v;
		size_t kl, vl;

		if ((rc = ut_cursor_get(c, &k, &kl, &v, &vl)))
			break;
		if (!t && (rc = ut_begin(dst, 0, &t)))
			break;
		if ((rc = ut_tput(t, dtb, k, kl, v, vl)))
			break;
		(*n)++;
		if (++in_txn >= batch) {
			rc = ut_commit(t);
			t = NULL;
			in_txn = 0;
			if (rc)
				break;
		}
		rc = ut_cursor_next(c);
	}
	ut_cursor_close(c);
	if (rc == UT_NOTFOUND)
		rc = t ? ut_commit(t) : UT_OK;
	else if (t)
		ut_abort(t);
	return rc;
}

/* Every table of src: the default one, then the named ones. */
static int copy_records(ut_txn *src, ut_db *dst, long batch, long long *n)
{
	ut_table_info ti;
	int rc = copy_table(src, NULL, dst, batch, n);

	for (const char *after = NULL; rc == UT_OK; after = ti.name) {
		if ((rc = ut_table_next(src, after, &ti)))
			return rc == UT_NOTFOUND ? UT_OK : rc;
		rc = copy_table(src, ti.name, dst, batch, n);
	}
	return rc;
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long long)st.st_size;
}

int cmd_compact(int argc, char **argv, long batch)
{
	ut_options o = cli.opt;
	ut_db *src, *dst;
	ut_txn *t;
	long long n = 0, before, after;
	int rc, ex;

	(void)argc;
	if (file_size(argv[1]) >= 0 || errno != ENOENT) {
		cli_warn("%s: exists (compact writes a new database)", argv[1]);
		return EXIT_ERROR;
	}
	if ((ex = open_db(argv[0], 0, READER, &src)))
		return ex;
	/* A fresh copy needs no per-commit sync: ut_close makes it durable,
	 * and DEST is complete only when compact succeeds. */
	o.create = 1;
	o.readonly = 0;
	o.sync = 0;
	rc = ut_open(argv[1], &o, &dst);
	if (rc)
		return close_db(src, argv[0], fail_rc(rc, argv[1]));
	rc = ut_begin(src, UT_RDONLY, &t);
	if (!rc) {
		rc = copy_records(t, dst, batch, &n);
		ut_abort(t);
	}
	ex = rc ? fail_rc(rc, argv[0]) : EXIT_OK;
	ex = close_db(dst, argv[1], ex);
	ex = close_db(src, argv[0], ex);
	if (ex)
		return ex;
	before = file_size(argv[0]);
	after = file_size(argv[1]);
	printf("%s: %lld bytes\n%s: %lld bytes (%.1f%%), %lld keys\n", argv[0],
	       before, argv[1], after, before > 0 ? 100.0 * after / before : 0.0,
	       n);
	return EXIT_OK;
}

/* A hot backup: the database as of one snapshot, page for page, while
 * writers (of another process: none, it holds the lock; of this one: the
 * engine's own) go on. */
int cmd_backup(int argc, char **argv, long batch)
{
	ut_db *db;
	int ex;

	(void)argc; (void)batch;
	if ((ex = open_db(argv[0], 0, READER, &db)))
		return ex;
	ex = EXIT_OK;
	if ((ex = ut_backup(db, argv[1])))
		ex = fail_rc(ex, argv[0]);
	ex = close_db(db, argv[0], ex);
	if (ex == EXIT_OK)
		printf("%s: backup of %s: %lld bytes\n", argv[1], argv[0],
		       file_size(argv[1]));
	return ex;
}

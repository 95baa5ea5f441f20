/*
 * tools/cmd_inspect.c - the untorn tool's check, tables and stats
 * (cli.h): what a database holds and counts, opened read-only unless
 * --readwrite (check must not change what it checks).  check lists every
 * problem, then a summary (exit 2 when corrupt); tables and stats print
 * NAME<TAB>VALUE lines.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_check(int argc, char **argv, long batch)
{
	ut_db *db;
	ut_check_result r;
	int rc, ex = EXIT_OK;
	ut_options o = cli.opt;

	(void)argc; (void)batch;
	o.create = 0;
	o.readonly = readonly_for(READER); /* check must not change what it checks */
	rc = ut_open(argv[0], &o, &db);
	if (rc == UT_ECORRUPT) {
		fail_rc(rc, argv[0]);
		printf("%s: CORRUPT (the database could not be opened)\n", argv[0]);
		return EXIT_CORRUPT;
	}
	if (rc)
		return fail_rc(rc, argv[0]);
	if (cli.table) { /* the table must exist; its counts are printed */
		ut_table_info ti;
		ut_table *tb;
		ut_txn *t;

		rc = ut_begin(db, UT_RDONLY, &t);
		if (rc) {
			ex = fail_rc(rc, argv[0]);
		} else {
			if (!(ex = table_of(t, argv[0], 0, &tb))) {
				if ((rc = ut_table_stat(t, tb, &ti)))
					ex = fail_rc(rc, argv[0]);
				else
					printf("%s: table %s: %llu keys, %llu pages\n",
					       argv[0], ti.name,
					       (unsigned long long)ti.keys,
					       (unsigned long long)ti.pages);
			}
			ut_abort(t);
		}
		if (ex) {
			(void)ut_close(db);
			return ex;
		}
	}
	memset(&r, 0, sizeof(r));
	rc = ut_check(db, stdout, &r);
	if (rc == UT_OK) {
		printf("%s: clean: %llu pages, %llu checked, %llu keys, depth %u\n",
		       argv[0], (unsigned long long)r.pages_total,
		       (unsigned long long)r.pages_checked,
		       (unsigned long long)r.keys, r.depth);
	} else if (rc == UT_ECORRUPT) {
		printf("%s: CORRUPT: %llu bad checksums, %llu invariant errors "
		       "(%llu of %llu pages checked)\n", argv[0],
		       (unsigned long long)r.bad_checksums,
		       (unsigned long long)r.invariant_errors,
		       (unsigned long long)r.pages_checked,
		       (unsigned long long)r.pages_total);
		ex = EXIT_CORRUPT;
	} else {
		ex = fail_rc(rc, argv[0]);
	}
	fflush(stdout);
	rc = ut_close(db);
	if (rc && ex == EXIT_OK)
		ex = fail_rc(rc, argv[0]);
	return ex;
}

int cmd_tables(int argc, char **argv, long batch)
{
	ut_table_info ti;
	ut_db *db;
	ut_txn *t;
	int rc, ex;

	(void)argc; (void)batch;
	if ((ex = open_db(argv[0], 0, READER, &db)))
		return ex;
	if ((rc = ut_begin(db, UT_RDONLY, &t)))
		return close_db(db, argv[0], fail_rc(rc, argv[0]));
	/* the default table first: no name (names have 1..255 bytes) */
	if ((rc = ut_table_stat(t, NULL, &ti))) {
		ut_abort(t);
		return close_db(db, argv[0], fail_rc(rc, argv[0]));
	}
	printf("\t%llu\t%llu\n", (unsigned long long)ti.keys,
	       (unsigned long long)ti.pages);
	for (rc = ut_table_next(t, NULL, &ti); rc == UT_OK;
	     rc = ut_table_next(t, ti.name, &ti)) {
		put_escaped(stdout, (const unsigned char *)ti.name, strlen(ti.name));
		printf("\t%llu\t%llu\n", (unsigned long long)ti.keys,
		       (unsigned long long)ti.pages);
	}
	ut_abort(t);
	ex = rc != UT_NOTFOUND ? fail_rc(rc, argv[0]) : EXIT_OK;
	return close_db(db, argv[0], ex);
}

int cmd_stats(int argc, char **argv, long batch)
{
	ut_db *db;
	ut_stats s;
	int rc, ex;

	(void)argc; (void)batch;
	if ((ex = open_db(argv[0], 0, READER, &db)))
		return ex;
	rc = ut_stats_get(db, &s);
	if (rc)
		return close_db(db, argv[0], fail_rc(rc, argv[0]));
	printf("protect\t%s\n", ut_protect_name(s.protect));
	printf("page_writes\t%llu\n", (unsigned long long)s.page_writes);
	printf("dw_page_writes\t%llu\n", (unsigned long long)s.dw_page_writes);
	printf("log_bytes\t%llu\n", (unsigned long long)s.log_bytes);
	printf("syncs\t%llu\n", (unsigned long long)s.syncs);
	printf("torn_repaired\t%llu\n", (unsigned long long)s.torn_repaired);
	printf("corrupt_pages\t%llu\n", (unsigned long long)s.corrupt_pages);
	printf("direct_io\t%d\n", s.direct_io);
	printf("uring\t%d\n", s.uring);
	printf("flush_batches\t%llu\n", (unsigned long long)s.flush_batches);
	printf("checkpoints\t%llu\n", (unsigned long long)s.checkpoints);
	printf("frame_waits\t%llu\n", (unsigned long long)s.frame_waits);
	printf("page_images\t%llu\n", (unsigned long long)s.page_images);
	return close_db(db, argv[0], EXIT_OK);
}

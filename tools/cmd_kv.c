/*
 * tools/cmd_kv.c - the untorn tool's put, get, del and scan (cli.h): one
 * transaction each on the default table or --table's; get prints the
 * value (escaped under --escaped), scan escaped KEY<TAB>VALUE lines in
 * the engine's key order from FROM (inclusive) to TO (exclusive).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_put(int argc, char **argv, long batch)
{
	ut_db *db;
	ut_txn *t;
	size_t kl, vl;
	int rc, ex;

	(void)argc; (void)batch;
	if (arg_bytes(argv[1], "KEY", &kl) || arg_bytes(argv[2], "VALUE", &vl))
		return EXIT_USAGE;
	if ((ex = open_db(argv[0], 1, WRITER, &db)))
		return ex;
	rc = ut_begin(db, 0, &t);
	if (!rc) {
		ut_table *tb;

		if ((ex = table_of(t, argv[0], 1, &tb))) {
			ut_abort(t);
			return close_db(db, argv[0], ex);
		}
		rc = ut_tput(t, tb, argv[1], kl, argv[2], vl);
		if (rc)
			ut_abort(t);
		else
			rc = ut_commit(t);
	}
	ex = rc ? fail_rc(rc, argv[0]) : EXIT_OK;
	return close_db(db, argv[0], ex);
}

int cmd_get(int argc, char **argv, long batch)
{
	ut_db *db;
	ut_txn *t;
	void *v = NULL;
	size_t kl, vl = 0;
	int rc, ex;

	(void)argc; (void)batch;
	if (arg_bytes(argv[1], "KEY", &kl))
		return EXIT_USAGE;
	if ((ex = open_db(argv[0], 0, READER, &db)))
		return ex;
	rc = ut_begin(db, UT_RDONLY, &t);
	if (!rc) {
		ut_table *tb;

		if ((ex = table_of(t, argv[0], 0, &tb))) {
			ut_abort(t);
			return close_db(db, argv[0], ex);
		}
		rc = ut_tget(t, tb, argv[1], kl, &v, &vl);
		ut_abort(t);
	}
	if (rc == UT_NOTFOUND) {
		ex = EXIT_NOTFOUND;
	} else if (rc) {
		ex = fail_rc(rc, argv[0]);
	} else if ((ex = lengths_ok(argv[0], NULL, 0, v, vl))) {
		/* said why */
	} else {
		if (cli.escaped)
			put_escaped(stdout, v, vl);
		else if (vl)
			fwrite(v, 1, vl, stdout);
		putchar('\n');
		ex = EXIT_OK;
	}
	free(v);
	return close_db(db, argv[0], ex);
}

int cmd_del(int argc, char **argv, long batch)
{
	ut_db *db;
	ut_txn *t;
	size_t kl;
	int rc, ex;

	(void)argc; (void)batch;
	if (arg_bytes(argv[1], "KEY", &kl))
		return EXIT_USAGE;
	if ((ex = open_db(argv[0], 0, WRITER, &db)))
		return ex;
	rc = ut_begin(db, 0, &t);
	if (!rc) {
		ut_table *tb;

		if ((ex = table_of(t, argv[0], 0, &tb))) {
			ut_abort(t);
			return close_db(db, argv[0], ex);
		}
		rc = ut_tdel(t, tb, argv[1], kl);
		if (rc)
			ut_abort(t);
		else
			rc = ut_commit(t);
	}
	if (rc == UT_NOTFOUND)
		ex = EXIT_NOTFOUND;
	else
		ex = rc ? fail_rc(rc, argv[0]) : EXIT_OK;
	return close_db(db, argv[0], ex);
}

/* memcmp order, then length: the engine's key order. */
static int keycmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

int cmd_scan(int argc, char **argv, long batch)
{
	ut_db *db;
	ut_txn *t;
	ut_cursor *c = NULL;
	size_t fl = 0, tl = 0;
	int rc, ex, bad = 0;

	(void)batch;
	if (argc > 1 && arg_bytes(argv[1], "FROM", &fl))
		return EXIT_USAGE;
	if (argc > 2 && arg_bytes(argv[2], "TO", &tl))
		return EXIT_USAGE;
	if ((ex = open_db(argv[0], 0, READER, &db)))
		return ex;
	rc = ut_begin(db, UT_RDONLY, &t);
	if (rc)
		return close_db(db, argv[0], fail_rc(rc, argv[0]));
	{
		ut_table *tb;

		if ((ex = table_of(t, argv[0], 0, &tb))) {
			ut_abort(t);
			return close_db(db, argv[0], ex);
		}
		rc = ut_tcursor_open(t, tb, &c);
	}
	if (!rc)
		rc = ut_cursor_seek(c, argc > 1 ? argv[1] : NULL, fl);
	while (rc == UT_OK) {
		const void *k, *v;
		size_t klen, vlen;

		rc = ut_cursor_get(c, &k, &klen, &v, &vlen);
		if (rc)
			break;
		if ((bad = lengths_ok(argv[0], k, klen, v, vlen)))
			break;
		if (argc > 2 && keycmp(k, klen, argv[2], tl) >= 0)
			break;
		put_escaped(stdout, k, klen);
		putc_unlocked('\t', stdout);
		put_escaped(stdout, v, vlen);
		putc_unlocked('\n', stdout);
		rc = ut_cursor_next(c);
	}
	if (c)
		ut_cursor_close(c);
	ut_abort(t);
	ex = bad ? bad : (rc && rc != UT_NOTFOUND) ? fail_rc(rc, argv[0]) : EXIT_OK;
	if (fflush(stdout) && ex == EXIT_OK) {
		cli_warn("stdout: %s", strerror(errno));
		ex = EXIT_ERROR;
	}
	return close_db(db, argv[0], ex);
}

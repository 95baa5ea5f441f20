/*
 * tools/cli_db.c - what every command of the untorn tool does (cli.h):
 * open a database with the global options (read-only for a reader unless
 * --readwrite), close it without losing an earlier error, find the table
 * --table names, take a KEY/VALUE argument as bytes, check what the
 * engine hands out before printing it, and turn an engine error into a
 * message on stderr and an exit code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct globals cli;

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("untorn: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Report an engine error and return the exit code for it.  what names the
 * file (or the command) when the engine's detail does not. */
int fail_rc(int rc, const char *what)
{
	const char *d = ut_errdetail();

	if (!d)
		d = "";
	if (what && *what && !strstr(d, what))
		fprintf(stderr, "untorn: %s: %s%s%s\n", ut_strerror(rc), what,
			*d ? ": " : "", d);
	else
		fprintf(stderr, "untorn: %s: %s\n", ut_strerror(rc), d);
	return rc == UT_ECORRUPT ? EXIT_CORRUPT : EXIT_ERROR;
}

/* A key (k non-NULL) and value the engine handed out, against the limits
 * of untorn.h, before a byte of them is printed.  The engine checks every
 * length it reads from a file; this is the tool's own check, so that a
 * length the engine let through by mistake is a refusal, never a read past
 * a buffer.  0, or EXIT_CORRUPT with the reason on stderr. */
int lengths_ok(const char *db, const void *k, size_t kl, const void *v,
		      size_t vl)
{
	if ((k && (kl == 0 || kl > UT_MAX_KEY)) || vl > UT_MAX_VALUE ||
	    (vl && !v)) {
		cli_warn("%s: database corrupt: the engine returned a key of %zu "
		      "bytes and a value of %zu (limits %u and %u); not printed",
		      db, kl, vl, UT_MAX_KEY, UT_MAX_VALUE);
		return EXIT_CORRUPT;
	}
	return 0;
}

/* An argument as bytes: literal, or unescaped under --escaped (in place:
 * unescaping never lengthens). */
int arg_bytes(char *arg, const char *what, size_t *len)
{
	long n;

	if (!cli.escaped) {
		*len = strlen(arg);
		return 0;
	}
	n = unescape(arg, strlen(arg), (unsigned char *)arg);
	if (n < 0) {
		cli_warn("%s: malformed escape in '%s'", what, arg);
		return -1;
	}
	*len = (size_t)n;
	return 0;
}

/* Read-only for a READER unless --readwrite, for anyone under --readonly. */
int readonly_for(int reader)
{
	return cli.access == ACCESS_READONLY ||
	       (reader && cli.access != ACCESS_READWRITE);
}

int open_db(const char *path, int create, int reader, ut_db **db)
{
	ut_options o = cli.opt;
	int rc;

	o.readonly = readonly_for(reader);
	o.create = create && !o.readonly;
	rc = ut_open(path, &o, db);
	if (rc)
		return fail_rc(rc, path);
	if (*ut_errdetail()) /* a loss the open accepted (an empty -wal) */
		fprintf(stderr, "untorn: warning: %s\n", ut_errdetail());
	return EXIT_OK;
}

int close_db(ut_db *db, const char *path, int ex)
{
	int rc = ut_close(db);

	if (rc && ex == EXIT_OK)
		return fail_rc(rc, path);
	return ex;
}

/* The table --table names, as transaction t sees it (NULL without
 * --table: the default table); created when create is set.  An exit code:
 * EXIT_NOTFOUND (said) when there is no such table. */
int table_of(ut_txn *t, const char *db, int create, ut_table **tb)
{
	int rc;

	*tb = NULL;
	if (!cli.table)
		return EXIT_OK;
	rc = ut_table_open(t, cli.table, create ? UT_CREATE : 0, tb);
	if (rc == UT_NOTFOUND) {
		cli_warn("%s: no table '%s'", db, cli.table);
		return EXIT_NOTFOUND;
	}
	return rc ? fail_rc(rc, db) : EXIT_OK;
}

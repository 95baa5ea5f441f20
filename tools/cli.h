/*
 * tools/cli.h - what the files of the untorn tool share (its commands,
 * options and exit codes: untorn.c).  Public API only: nothing of the
 * library's but include/untorn.h.
 *
 * The tool is these files, one job each; each calls only the ones below
 * it in this list:
 *   untorn.c       the global options, the commands' table and help,
 *                  dispatch
 *   cmd_kv.c       put, get, del, scan: one key or a range
 *   cmd_dump.c     dump and load: the dump format (its versions), and
 *                  scan's escaped lines read back
 *   cmd_copy.c     compact and backup: a new database from an old one
 *   cmd_inspect.c  check, tables, stats: what a database holds and counts
 *   cmd_info.c     info: what the file layer reports for a path
 *   cli_db.c       what every command does: open and close a database,
 *                  find --table's table, report errors as exit codes
 *   cli_text.c     bytes as text: the escapes and hex digits
 */
#ifndef UT_TOOL_CLI_H
#define UT_TOOL_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "untorn.h"

#define EXIT_OK 0
#define EXIT_NOTFOUND 1
#define EXIT_CORRUPT 2
#define EXIT_ERROR 3
#define EXIT_USAGE 64

/* The global options, whichever command they stand beside. */
struct globals {
	ut_options opt;
	int escaped;     /* KEY/VALUE/FROM/TO arguments use cli_text.c's escapes */
	int access;      /* ACCESS_DEFAULT, --readonly or --readwrite */
	const char *table; /* --table NAME, or NULL: the default table */
};

extern struct globals cli;	/* set by untorn.c's option parsing */

enum { ACCESS_DEFAULT, ACCESS_READONLY, ACCESS_READWRITE };
/* get, scan, dump, check, stats and compact's source open read-only
 * unless --readwrite. */
#define READER 1
#define WRITER 0

/* A command: argv[0..argc) its positional arguments (their number
 * checked against the table's), batch from --batch; returns the exit code. */
int cmd_put(int argc, char **argv, long batch);
int cmd_get(int argc, char **argv, long batch);
int cmd_del(int argc, char **argv, long batch);
int cmd_scan(int argc, char **argv, long batch);
int cmd_load(int argc, char **argv, long batch);
int cmd_dump(int argc, char **argv, long batch);
int cmd_compact(int argc, char **argv, long batch);
int cmd_backup(int argc, char **argv, long batch);
int cmd_check(int argc, char **argv, long batch);
int cmd_tables(int argc, char **argv, long batch);
int cmd_stats(int argc, char **argv, long batch);
int cmd_info(int argc, char **argv, long batch);

/* ---- cli_db.c */

/* "untorn: " and the message on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Report an engine error and return the exit code for it (EXIT_CORRUPT
 * or EXIT_ERROR).  what names the file (or the command) when the
 * engine's detail does not. */
int fail_rc(int rc, const char *what);
/* A key (k non-NULL) and value the engine handed out, against the limits
 * of untorn.h: 0, or EXIT_CORRUPT with the reason on stderr. */
int lengths_ok(const char *db, const void *k, size_t kl, const void *v,
	       size_t vl);
/* An argument as bytes: literal, or unescaped in place under --escaped;
 * 0, or -1 (said) on a malformed escape. */
int arg_bytes(char *arg, const char *what, size_t *len);
/* Read-only for a READER unless --readwrite, for anyone under --readonly. */
int readonly_for(int reader);
/* Open path with the global options (reader: READER or WRITER); an exit
 * code, the reason said. */
int open_db(const char *path, int create, int reader, ut_db **db);
/* Close db; the exit code ex, or the close's failure when ex is EXIT_OK. */
int close_db(ut_db *db, const char *path, int ex);
/* The table --table names as t sees it (NULL without --table: the
 * default table), created when create is set; an exit code. */
int table_of(ut_txn *t, const char *db, int create, ut_table **tb);

/* ---- cli_text.c */

/* Write len bytes escaped to f. */
void put_escaped(FILE *f, const unsigned char *p, size_t len);
/* Unescape src[0..len) into dst (at most len bytes); returns the length or
 * -1 on a malformed escape. */
long unescape(const char *src, size_t len, unsigned char *dst);
/* Write len bytes to f as lowercase hex, two digits a byte. */
void put_hex(FILE *f, const unsigned char *p, size_t len);
/* Hex digits src[0..len) into dst; the byte count, or -1 when malformed. */
long get_hex(const char *src, size_t len, unsigned char *dst);

#endif /* UT_TOOL_CLI_H */

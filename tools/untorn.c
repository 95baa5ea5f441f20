/*
 * tools/untorn.c - the untorn command-line tool.
 *
 *   untorn [GLOBAL OPTIONS] COMMAND [OPTIONS] ARGS...
 *
 * One process, one short-lived handle per command: open, do the work in one
 * transaction (load: one per batch), close.  Everything the tool knows about
 * the engine comes through include/untorn.h (nothing else of the library's
 * is included).
 *
 * Exit codes: 0 ok, 1 not found, 2 corrupt, 3 error, 64 usage.
 *
 * Tables: --table NAME points get, put, del, scan, load and dump at a named
 * table (put and load create it); without it they use the default table,
 * as before tables existed.  A dump of a database with named tables holds
 * every table (format version 2); one without them is written as version
 * 1, as before, so older tools read it.
 *
 * Escapes (scan output, load input, and arguments under --escaped):
 *   \t TAB   \n newline   \r CR   \\ backslash   \xHH any byte
 * Every byte outside printable ASCII (0x20..0x7e) is written as \xHH, so
 * `untorn scan A | untorn load B` copies A's contents into B exactly.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "untorn.h"

#define EXIT_OK 0
#define EXIT_NOTFOUND 1
#define EXIT_CORRUPT 2
#define EXIT_ERROR 3
#define EXIT_USAGE 64

struct globals {
	ut_options opt;
	int escaped;     /* KEY/VALUE/FROM/TO arguments use the escapes above */
	int access;      /* ACCESS_DEFAULT, --readonly or --readwrite */
	const char *table; /* --table NAME, or NULL: the default table */
	const char *prog;
};

static struct globals g;

enum { ACCESS_DEFAULT, ACCESS_READONLY, ACCESS_READWRITE };
/* get, scan, dump, check, stats and compact's source open read-only
 * unless --readwrite. */
#define READER 1
#define WRITER 0

/* ---------------------------------------------------------------- help */

static const char usage_main[] =
	"usage: untorn [GLOBAL OPTIONS] COMMAND [OPTIONS] ARGS...\n"
	"\n"
	"Commands:\n"
	"  put DB KEY VALUE     insert or overwrite KEY\n"
	"  get DB KEY           print KEY's value and a newline (exit 1 if absent)\n"
	"  del DB KEY           delete KEY (exit 1 if absent)\n"
	"  scan DB [FROM [TO]]  print KEY<TAB>VALUE lines in key order, escaped;\n"
	"                       FROM is inclusive, TO is exclusive\n"
	"  load DB [FILE]       put the records of a dump, or of escaped\n"
	"                       KEY<TAB>VALUE lines, from FILE or stdin\n"
	"  dump DB [FILE]       write every record to FILE or stdout in the\n"
	"                       versioned dump format (untorn-dump 1, hex)\n"
	"  compact DB DEST      copy DB into a new, compact database DEST\n"
	"  backup DB DEST       copy DB as of one snapshot into a new database\n"
	"                       DEST, page for page, while writers go on\n"
	"  check DB             verify every page checksum and B+tree invariant\n"
	"  tables DB            list the named tables: NAME<TAB>KEYS<TAB>PAGES\n"
	"  stats DB             print the engine's statistics for DB\n"
	"  info PATH            what the file layer reports for PATH: O_DIRECT,\n"
	"                       statx atomic-write limits, protection mode\n"
	"\n"
	"Global options (before or after COMMAND):\n"
	"  --protect MODE   auto|atomic|doublewrite|fullpage|unsafe (default auto)\n"
	"  --cache SIZE     buffer pool size, suffix K, M or G (default 64M)\n"
	"  --nosync         commit without waiting for durability\n"
	"  --batch N        load, compact: records per transaction (default 1000)\n"
	"  --table NAME     get, put, del, scan, load, dump, check: the named\n"
	"                   table NAME instead of the default one (put and load\n"
	"                   create it)\n"
	"  --readonly       open read-only: write and create no file (the\n"
	"                   default for get, scan, dump, check, stats and\n"
	"                   compact's source); a database not closed cleanly\n"
	"                   needs recovery: exit 3\n"
	"  --readwrite      open those read-write (recovers a database that\n"
	"                   was not closed cleanly)\n"
	"  --escaped        KEY, VALUE, FROM and TO arguments use the escapes below\n"
	"  --help           this text; COMMAND --help for one command\n"
	"  --version        print the version\n"
	"  --               end of options (for keys that start with --)\n"
	"\n"
	"Escapes (scan output, load input, --escaped arguments):\n"
	"  \\t TAB, \\n newline, \\r CR, \\\\ backslash, \\xHH any byte; scan writes\n"
	"  every byte outside printable ASCII as \\xHH, so scan | load round-trips.\n"
	"\n"
	"Exit status:\n"
	"  0   success\n"
	"  1   key not found (get, del)\n"
	"  2   database corrupt (check found problems, or a command met a bad page)\n"
	"  3   error (I/O, not a database, locked, ...); the reason is on stderr\n"
	"  64  usage error\n";

struct cmd {
	const char *name;
	int min_args, max_args;
	int (*run)(int argc, char **argv, long batch);
	const char *help;
};

/* --------------------------------------------------------- small helpers */

static void warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warnx(const char *fmt, ...)
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
static int fail_rc(int rc, const char *what)
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

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	unsigned long long mul = 1;

	if (*s < '0' || *s > '9') /* strtoull would take "-5" as 2^64 - 5 */
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	default: break;
	}
	if (mul > 1 && *end == 'i')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -1;
	if (v > SIZE_MAX / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static int parse_protect(const char *s, enum ut_protect *p)
{
	static const struct { const char *n; enum ut_protect p; } t[] = {
		{ "auto", UT_PROTECT_AUTO },
		{ "atomic", UT_PROTECT_ATOMIC },
		{ "doublewrite", UT_PROTECT_DOUBLEWRITE },
		{ "unsafe", UT_PROTECT_UNSAFE },
		{ "fullpage", UT_PROTECT_FULLPAGE },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(s, t[i].n)) {
			*p = t[i].p;
			return 0;
		}
	return -1;
}

/* A key (k non-NULL) and value the engine handed out, against the limits
 * of untorn.h, before a byte of them is printed.  The engine checks every
 * length it reads from a file; this is the tool's own check, so that a
 * length the engine let through by mistake is a refusal, never a read past
 * a buffer.  0, or EXIT_CORRUPT with the reason on stderr. */
static int lengths_ok(const char *db, const void *k, size_t kl, const void *v,
		      size_t vl)
{
	if ((k && (kl == 0 || kl > UT_MAX_KEY)) || vl > UT_MAX_VALUE ||
	    (vl && !v)) {
		warnx("%s: database corrupt: the engine returned a key of %zu "
		      "bytes and a value of %zu (limits %u and %u); not printed",
		      db, kl, vl, UT_MAX_KEY, UT_MAX_VALUE);
		return EXIT_CORRUPT;
	}
	return 0;
}

/* Write len bytes escaped to f. */
static void put_escaped(FILE *f, const unsigned char *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];

		if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c == '\\') {
			fputs("\\\\", f);
		} else if (c < 0x20 || c > 0x7e) {
			char b[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
			fwrite(b, 1, 4, f);
		} else {
			putc_unlocked(c, f);
		}
	}
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Unescape src[0..len) into dst (at most len bytes); returns the length or
 * -1 on a malformed escape. */
static long unescape(const char *src, size_t len, unsigned char *dst)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		if (src[i] != '\\') {
			dst[o++] = (unsigned char)src[i];
			continue;
		}
		if (++i >= len)
			return -1;
		switch (src[i]) {
		case 't': dst[o++] = '\t'; break;
		case 'n': dst[o++] = '\n'; break;
		case 'r': dst[o++] = '\r'; break;
		case '\\': dst[o++] = '\\'; break;
		case 'x': {
			int h, l;

			if (i + 2 >= len)
				return -1;
			h = hexval((unsigned char)src[i + 1]);
			l = hexval((unsigned char)src[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			dst[o++] = (unsigned char)(h << 4 | l);
			i += 2;
			break;
		}
		default:
			return -1;
		}
	}
	return (long)o;
}

/* An argument as bytes: literal, or unescaped under --escaped (in place:
 * unescaping never lengthens). */
static int arg_bytes(char *arg, const char *what, size_t *len)
{
	long n;

	if (!g.escaped) {
		*len = strlen(arg);
		return 0;
	}
	n = unescape(arg, strlen(arg), (unsigned char *)arg);
	if (n < 0) {
		warnx("%s: malformed escape in '%s'", what, arg);
		return -1;
	}
	*len = (size_t)n;
	return 0;
}

/* Read-only for a READER unless --readwrite, for anyone under --readonly. */
static int readonly_for(int reader)
{
	return g.access == ACCESS_READONLY ||
	       (reader && g.access != ACCESS_READWRITE);
}

static int open_db(const char *path, int create, int reader, ut_db **db)
{
	ut_options o = g.opt;
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

static int close_db(ut_db *db, const char *path, int ex)
{
	int rc = ut_close(db);

	if (rc && ex == EXIT_OK)
		return fail_rc(rc, path);
	return ex;
}

/* The table --table names, as transaction t sees it (NULL without
 * --table: the default table); created when create is set.  An exit code:
 * EXIT_NOTFOUND (said) when there is no such table. */
static int table_of(ut_txn *t, const char *db, int create, ut_table **tb)
{
	int rc;

	*tb = NULL;
	if (!g.table)
		return EXIT_OK;
	rc = ut_table_open(t, g.table, create ? UT_CREATE : 0, tb);
	if (rc == UT_NOTFOUND) {
		warnx("%s: no table '%s'", db, g.table);
		return EXIT_NOTFOUND;
	}
	return rc ? fail_rc(rc, db) : EXIT_OK;
}

/* ------------------------------------------------------------ commands */

static int cmd_put(int argc, char **argv, long batch)
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

static int cmd_get(int argc, char **argv, long batch)
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
		if (g.escaped)
			put_escaped(stdout, v, vl);
		else if (vl)
			fwrite(v, 1, vl, stdout);
		putchar('\n');
		ex = EXIT_OK;
	}
	free(v);
	return close_db(db, argv[0], ex);
}

static int cmd_del(int argc, char **argv, long batch)
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

static int cmd_scan(int argc, char **argv, long batch)
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
		warnx("stdout: %s", strerror(errno));
		ex = EXIT_ERROR;
	}
	return close_db(db, argv[0], ex);
}

static void progress(long long recs, long long done, long long total, int last)
{
	if (total > 0) {
		int pct = (int)(done * 100 / total), bar = pct * 30 / 100;

		fprintf(stderr, "\r[%.*s%*s] %3d%% %lld records", bar,
			"##############################", 30 - bar, "", pct, recs);
	} else {
		fprintf(stderr, "\r%lld records", recs);
	}
	if (last)
		fputc('\n', stderr);
	fflush(stderr);
}

/*
 * The dump format, version 1 (untorn.1, tools/README.md):
 *
 *   untorn-dump 1
 *   KEYHEX VALUEHEX          one line per record, in key order
 *   ...
 *   end N                    N = the number of record lines
 *
 * KEYHEX is the key's bytes as hex (two digits a byte, 2..2*UT_MAX_KEY
 * digits), VALUEHEX the value's (empty for an empty value).  The end line
 * tells a complete dump from one cut short.
 *
 * Version 2 (a database with named tables): "untorn-dump 2", the default
 * table's records, then for each named table, in name order, a line
 * "table NAMEHEX" followed by its records; "end N" counts every record.
 * A table without records still has its line, so load recreates it.
 */
#define DUMP_MAGIC "untorn-dump "
#define DUMP_VERSION 1
#define DUMP_VERSION_TABLES 2

static void put_hex(FILE *f, const unsigned char *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		putc_unlocked(hex[p[i] >> 4], f);
		putc_unlocked(hex[p[i] & 15], f);
	}
}

/* Hex digits src[0..len) into dst; the byte count, or -1 when malformed. */
static long get_hex(const char *src, size_t len, unsigned char *dst)
{
	if (len % 2)
		return -1;
	for (size_t i = 0; i < len; i += 2) {
		int h = hexval((unsigned char)src[i]);
		int l = hexval((unsigned char)src[i + 1]);

		if (h < 0 || l < 0)
			return -1;
		dst[i / 2] = (unsigned char)(h << 4 | l);
	}
	return (long)(len / 2);
}

/* Input records for load: escaped KEY<TAB>VALUE lines, or a dump. */
struct reader {
	FILE *in;
	const char *name;    /* for messages */
	int dump;            /* the first line was a dump header: its version */
	int ended;           /* dump: its end line was read */
	int pending;         /* line holds a record not returned yet */
	char *line;
	size_t cap;
	ssize_t n;
	unsigned char *buf;  /* the record: key, then value */
	size_t bufcap;
	long long lineno, records;
};

static int reader_fail(struct reader *r, const char *what)
{
	warnx("%s:%lld: %s", r->name, r->lineno, what);
	return -1;
}

/* The next line, without its newline: 1, or 0 at the end of input. */
static int read_line(struct reader *r)
{
	r->n = getline(&r->line, &r->cap, r->in);
	if (r->n < 0)
		return 0;
	r->lineno++;
	if (r->n > 0 && r->line[r->n - 1] == '\n')
		r->line[--r->n] = 0;
	if ((size_t)r->n > r->bufcap) {
		free(r->buf);
		r->bufcap = (size_t)r->n * 2;
		r->buf = malloc(r->bufcap);
		if (!r->buf) {
			r->bufcap = 0;
			return reader_fail(r, "out of memory");
		}
	}
	return 1;
}

/* The first line decides the format: a dump header, or the first record
 * of escaped lines (which has a TAB, so a key "untorn-dump 1" stays one). */
static int reader_start(struct reader *r)
{
	long v;
	char *end;
	int rc = read_line(r);

	if (rc <= 0)
		return rc;
	if (strncmp(r->line, DUMP_MAGIC, strlen(DUMP_MAGIC)) ||
	    memchr(r->line, '\t', (size_t)r->n)) {
		r->pending = 1;
		return 0;
	}
	errno = 0;
	v = strtol(r->line + strlen(DUMP_MAGIC), &end, 10);
	if (errno || *end || v < 1)
		return reader_fail(r, "malformed dump header");
	if (v != DUMP_VERSION && v != DUMP_VERSION_TABLES) {
		warnx("%s: dump format version %ld; this untorn reads versions "
		      "%d and %d", r->name, v, DUMP_VERSION, DUMP_VERSION_TABLES);
		return -1;
	}
	r->dump = (int)v;
	return 0;
}

static int parse_escaped(struct reader *r, size_t *kl, size_t *vl)
{
	char *tab = memchr(r->line, '\t', (size_t)r->n);
	long k, v;

	if (!tab)
		return reader_fail(r, "no TAB between key and value");
	k = unescape(r->line, (size_t)(tab - r->line), r->buf);
	v = k < 0 ? -1 : unescape(tab + 1, (size_t)(r->n - (tab + 1 - r->line)),
				  r->buf + k);
	if (k < 0 || v < 0)
		return reader_fail(r, "malformed escape");
	*kl = (size_t)k;
	*vl = (size_t)v;
	return 1;
}

static int parse_end(struct reader *r)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(r->line + 4, &end, 10);
	if (errno || *end || end == r->line + 4 || n != r->records) {
		warnx("%s:%lld: end line says '%s', but %lld records were read",
		      r->name, r->lineno, r->line + 4, r->records);
		return -1;
	}
	r->ended = 1;
	return 0;
}

static int parse_dump(struct reader *r, size_t *kl, size_t *vl)
{
	char *sp;
	long k, v;

	if (r->ended)
		return reader_fail(r, "data after the end line");
	if (!strncmp(r->line, "end ", 4))
		return parse_end(r);
	if (r->dump >= DUMP_VERSION_TABLES && !strncmp(r->line, "table ", 6)) {
		/* a table's name: 2, the name in r->buf, NUL-terminated */
		k = get_hex(r->line + 6, (size_t)r->n - 6, r->buf);
		if (k < 1 || k > UT_TABLE_NAME_MAX || memchr(r->buf, 0, (size_t)k))
			return reader_fail(r, "malformed table line");
		r->buf[k] = 0;
		*kl = (size_t)k;
		return 2;
	}
	sp = memchr(r->line, ' ', (size_t)r->n);
	if (!sp)
		return reader_fail(r, "no space between key and value");
	k = get_hex(r->line, (size_t)(sp - r->line), r->buf);
	v = k < 0 ? -1 : get_hex(sp + 1, (size_t)(r->n - (sp + 1 - r->line)),
				 r->buf + k);
	if (k < 0 || v < 0)
		return reader_fail(r, "malformed hex");
	*kl = (size_t)k;
	*vl = (size_t)v;
	return 1;
}

/* The next record in r->buf: 1, 2 for a table line of a version-2 dump
 * (the table's name in r->buf), 0 at the end of input, -1 on an error
 * (reported). */
static int next_record(struct reader *r, size_t *kl, size_t *vl)
{
	for (;;) {
		int rc = r->pending ? 1 : read_line(r);

		r->pending = 0;
		if (rc <= 0)
			break;
		if (!r->dump && r->n == 0)
			continue; /* blank lines are allowed between escaped records */
		rc = r->dump ? parse_dump(r, kl, vl) : parse_escaped(r, kl, vl);
		if (rc) {
			r->records += rc == 1;
			return rc;
		}
	}
	if (ferror(r->in)) {
		warnx("%s: %s", r->name, strerror(errno));
		return -1;
	}
	if (r->dump && !r->ended)
		return reader_fail(r, "the dump ends without its end line (cut short?)");
	return 0;
}

/* Put every record from r, one transaction per batch records, into the
 * --table table (or the default one), or, from a version-2 dump, into
 * the tables it names (created; a table handle outlives the batch's
 * transaction). */
static int load_records(ut_db *db, struct reader *r, long batch, int *ex)
{
	ut_txn *t = NULL;
	ut_table *tb = NULL;
	long long in_txn = 0, total = -1;
	int tty = isatty(2), rc = 0, got = 0;
	size_t kl, vl;
	struct stat st;

	if (tty && !fstat(fileno(r->in), &st) && S_ISREG(st.st_mode))
		total = st.st_size;
	if (g.table) { /* created even when the input has no records */
		if (r->dump >= DUMP_VERSION_TABLES) {
			warnx("%s: a dump of every table: load it without --table",
			      r->name);
			*ex = EXIT_USAGE;
			return UT_OK;
		}
		if ((rc = ut_begin(db, 0, &t)))
			return rc;
		if ((*ex = table_of(t, r->name, 1, &tb))) {
			ut_abort(t);
			return UT_OK;
		}
	}
	while (!*ex && (got = next_record(r, &kl, &vl)) > 0) {
		if (!t && (rc = ut_begin(db, 0, &t)))
			break;
		if (got == 2) {
			if ((rc = ut_table_open(t, (char *)r->buf, UT_CREATE, &tb))) {
				warnx("%s:%lld: table '%s'", r->name, r->lineno,
				      (char *)r->buf);
				break;
			}
			continue;
		}
		rc = ut_tput(t, tb, r->buf, kl, r->buf + kl, vl);
		if (rc) {
			warnx("%s:%lld: put failed", r->name, r->lineno);
			break;
		}
		if (++in_txn >= batch) {
			rc = ut_commit(t);
			t = NULL;
			in_txn = 0;
			if (rc)
				break;
			if (tty)
				progress(r->records, total > 0 ? ftello(r->in) : 0, total, 0);
		}
	}
	if (got < 0 && !*ex)
		*ex = EXIT_ERROR;
	if (t) {
		if (rc || *ex)
			ut_abort(t);
		else
			rc = ut_commit(t);
	}
	if (tty)
		progress(r->records - in_txn * (rc || *ex), total > 0 ? total : 0,
			 total, 1);
	return rc;
}

/* FILE, or stdin/stdout for a missing FILE or "-". */
static FILE *open_stream(const char *path, const char *mode)
{
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return *mode == 'r' ? stdin : stdout;
	f = fopen(path, mode);
	if (!f)
		warnx("%s: %s", path, strerror(errno));
	return f;
}

/* Close a stream from open_stream; a write error not seen before is one. */
static int close_stream(FILE *f, const char *path, int ex)
{
	int bad = ferror(f) || (f == stdout ? fflush(f) : fclose(f));

	if (bad && ex == EXIT_OK) {
		warnx("%s: %s", path ? path : "stdout", strerror(errno));
		return EXIT_ERROR;
	}
	return ex;
}

static int cmd_load(int argc, char **argv, long batch)
{
	ut_db *db;
	struct reader r;
	int rc = 0, ex;

	memset(&r, 0, sizeof(r));
	r.name = argc > 1 && strcmp(argv[1], "-") ? argv[1] : "stdin";
	if (!(r.in = open_stream(argc > 1 ? argv[1] : NULL, "r")))
		return EXIT_ERROR;
	if ((ex = open_db(argv[0], 1, WRITER, &db))) {
		if (r.in != stdin)
			fclose(r.in);
		return ex;
	}
	if (reader_start(&r) < 0)
		ex = EXIT_ERROR;
	else
		rc = load_records(db, &r, batch, &ex);
	if (rc)
		ex = fail_rc(rc, argv[0]);
	if (ex)
		fprintf(stderr, "untorn: load stopped at line %lld; batches before it "
			"are committed\n", r.lineno);
	if (r.in != stdin)
		fclose(r.in);
	free(r.line);
	free(r.buf);
	return close_db(db, argv[0], ex);
}

/* Write every record of table tb (NULL: the default one) of t to out in
 * the dump format's record lines; *n counts them. */
static int dump_table(ut_txn *t, ut_table *tb, FILE *out, long long *n)
{
	ut_cursor *c;
	int rc = ut_tcursor_open(t, tb, &c);

	if (rc)
		return rc;
	rc = ut_cursor_seek(c, NULL, 0);
	while (rc == UT_OK) {
		const void *k, *v;
		size_t kl, vl;

		if ((rc = ut_cursor_get(c, &k, &kl, &v, &vl)))
			break;
		put_hex(out, k, kl);
		putc_unlocked(' ', out);
		put_hex(out, v, vl);
		putc_unlocked('\n', out);
		(*n)++;
		rc = ut_cursor_next(c);
	}
	ut_cursor_close(c);
	return rc == UT_NOTFOUND ? UT_OK : rc;
}

/* Write t to out in the dump format: version 1 when it has no named
 * tables (or --table picks one), else version 2 with every table. */
static int dump_records(ut_txn *t, ut_table *tb, FILE *out)
{
	ut_table_info ti;
	long long n = 0;
	int rc = tb ? UT_NOTFOUND : ut_table_next(t, NULL, &ti);

	if (rc != UT_OK && rc != UT_NOTFOUND)
		return rc;
	fprintf(out, "%s%d\n", DUMP_MAGIC,
		rc == UT_OK ? DUMP_VERSION_TABLES : DUMP_VERSION);
	if (rc == UT_NOTFOUND)
		rc = dump_table(t, tb, out, &n);
	else if ((rc = dump_table(t, NULL, out, &n)) == UT_OK)
		do {
			ut_table *nt;

			fputs("table ", out);
			put_hex(out, (const unsigned char *)ti.name, strlen(ti.name));
			putc_unlocked('\n', out);
			if ((rc = ut_table_open(t, ti.name, 0, &nt)) ||
			    (rc = dump_table(t, nt, out, &n)))
				break;
		} while ((rc = ut_table_next(t, ti.name, &ti)) == UT_OK);
	if (rc != UT_OK && rc != UT_NOTFOUND)
		return rc; /* no end line: load refuses the partial dump */
	fprintf(out, "end %lld\n", n);
	return UT_OK;
}

static int cmd_dump(int argc, char **argv, long batch)
{
	const char *path = argc > 1 ? argv[1] : NULL;
	ut_db *db;
	ut_txn *t;
	FILE *out;
	int rc, ex;

	(void)batch;
	if ((ex = open_db(argv[0], 0, READER, &db)))
		return ex;
	if (!(out = open_stream(path, "w")))
		return close_db(db, argv[0], EXIT_ERROR);
	rc = ut_begin(db, UT_RDONLY, &t);
	if (!rc) {
		ut_table *tb;

		if ((ex = table_of(t, argv[0], 0, &tb))) {
			ut_abort(t);
			ex = close_stream(out, path, ex);
			return close_db(db, argv[0], ex);
		}
		rc = dump_records(t, tb, out);
		ut_abort(t);
	}
	ex = rc ? fail_rc(rc, argv[0]) : EXIT_OK;
	ex = close_stream(out, path, ex);
	return close_db(db, argv[0], ex);
}

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

static int cmd_compact(int argc, char **argv, long batch)
{
	ut_options o = g.opt;
	ut_db *src, *dst;
	ut_txn *t;
	long long n = 0, before, after;
	int rc, ex;

	(void)argc;
	if (file_size(argv[1]) >= 0 || errno != ENOENT) {
		warnx("%s: exists (compact writes a new database)", argv[1]);
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
static int cmd_backup(int argc, char **argv, long batch)
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

static int cmd_check(int argc, char **argv, long batch)
{
	ut_db *db;
	ut_check_result r;
	int rc, ex = EXIT_OK;
	ut_options o = g.opt;

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
	if (g.table) { /* the table must exist; its counts are printed */
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

static int cmd_tables(int argc, char **argv, long batch)
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

static int cmd_stats(int argc, char **argv, long batch)
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
	ut_options o = g.opt;
	ut_db *db;
	ut_stats st;
	int rc;

	printf("page_size\t%u\n", UT_PAGE_SIZE);
	printf("protect_auto\t%s (%s)\n", mode, pi->auto_reason);
	if (g.opt.protect != UT_PROTECT_AUTO)
		printf("protect_requested\t%s\n", ut_protect_name(g.opt.protect));
	if (!pi->exists) {
		if (g.opt.protect == UT_PROTECT_AUTO)
			printf("mode\t%s (auto, predicted from the probe: %s)\n",
			       mode, pi->auto_reason);
		else
			printf("mode\t%s (requested by name)\n",
			       ut_protect_name(g.opt.protect));
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
	o.readonly = g.opt.readonly;
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

static int cmd_info(int argc, char **argv, long batch)
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

static const struct cmd cmds[] = {
	{ "put", 3, 3, cmd_put,
	  "usage: untorn put DB KEY VALUE\n"
	  "Insert or overwrite KEY with VALUE (one committed transaction).\n"
	  "Creates DB if missing.\n" },
	{ "get", 2, 2, cmd_get,
	  "usage: untorn get DB KEY\n"
	  "Print KEY's value followed by a newline.  Exit 1 if KEY is absent.\n" },
	{ "del", 2, 2, cmd_del,
	  "usage: untorn del DB KEY\n"
	  "Delete KEY.  Exit 1 if KEY is absent.\n" },
	{ "scan", 1, 3, cmd_scan,
	  "usage: untorn scan DB [FROM [TO]]\n"
	  "Print KEY<TAB>VALUE lines in key order (bytewise, shorter first on a\n"
	  "tie), escaped (\\t \\n \\r \\\\ \\xHH).  FROM is inclusive, TO exclusive.\n" },
	{ "load", 1, 2, cmd_load,
	  "usage: untorn load [--batch N] DB [FILE]\n"
	  "Put the records of FILE (default stdin) into DB, one transaction per\n"
	  "N records (default 1000); existing keys are overwritten.  FILE is a\n"
	  "dump (first line \"untorn-dump 1\" or 2, see dump) or escaped KEY<TAB>VALUE\n"
	  "lines (the scan format; blank lines skipped).  Shows progress on\n"
	  "stderr when it is a terminal.  On an error (a malformed line, a dump\n"
	  "without its end line) the current batch is aborted; earlier batches\n"
	  "stay committed.\n" },
	{ "dump", 1, 2, cmd_dump,
	  "usage: untorn dump [--table NAME] DB [FILE]\n"
	  "Write every record of DB to FILE (default stdout) in the dump format,\n"
	  "version 1, from one read transaction:\n"
	  "  untorn-dump 1\n"
	  "  KEYHEX VALUEHEX    one line per record, in key order, bytes as\n"
	  "                     lowercase hex (VALUEHEX empty for an empty value)\n"
	  "  end N              N = the number of records\n"
	  "A database with named tables is written as version 2: \"untorn-dump 2\",\n"
	  "the default table's records, then per table in name order a line\n"
	  "\"table NAMEHEX\" and its records; N counts every record.  With\n"
	  "--table, only that table, as version 1.  `untorn load` reads either\n"
	  "back byte for byte, tables included; a dump without its end line\n"
	  "(cut short) is refused.\n" },
	{ "compact", 2, 2, cmd_compact,
	  "usage: untorn compact [--batch N] DB DEST\n"
	  "Copy DB into a new database DEST (which must not exist) in key order,\n"
	  "so its leaves are full and it holds no free pages, then print both\n"
	  "data files' sizes.  DEST is complete only when compact exits 0.\n" },
	{ "backup", 2, 2, cmd_backup,
	  "usage: untorn backup DB DEST\n"
	  "Copy DB as of one snapshot into a new database DEST (DEST, DEST-wal and\n"
	  "DEST-dw must not exist), page for page; the copy opens without a log.\n"
	  "Writers of DB are not blocked while it runs.\n" },
	{ "check", 1, 1, cmd_check,
	  "usage: untorn check DB\n"
	  "Verify every page checksum and every B+tree invariant.  Problems are\n"
	  "listed one per line, then a summary.  Exit 0 clean, 2 corrupt.\n" },
	{ "tables", 1, 1, cmd_tables,
	  "usage: untorn tables DB\n"
	  "List the named tables of DB in name order, one NAME<TAB>KEYS<TAB>PAGES\n"
	  "line each (NAME escaped as scan's keys; counts from the catalog, no\n"
	  "scan), after the default table's line, whose NAME is empty.\n" },
	{ "stats", 1, 1, cmd_stats,
	  "usage: untorn stats DB\n"
	  "Open DB and print its ut_stats fields as NAME<TAB>VALUE lines.\n" },
	{ "info", 1, 1, cmd_info,
	  "usage: untorn info PATH\n"
	  "Print what the file layer reports for PATH (or, if PATH does not exist,\n"
	  "for a scratch file beside it): statx STATX_WRITE_ATOMIC mask and\n"
	  "attribute, atomic write unit min/max/segments, O_DIRECT accepted,\n"
	  "io_uring in use, and `mode` (atomic|doublewrite|fullpage|unsafe) with\n"
	  "the reason: the engine's own for an existing database (opened with\n"
	  "--protect, default auto; `protect_last` is the mode it last ran in),\n"
	  "else what --protect auto would choose.\n" },
};

int main(int argc, char **argv)
{
	const struct cmd *cmd = NULL;
	char **pos;
	int npos = 0, help = 0, opts_done = 0;
	long batch = 1000;

	g.prog = argv[0];
	ut_options_default(&g.opt);
	pos = argv; /* positional arguments are compacted in place: npos < i */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;

		if (opts_done || a[0] != '-' || a[1] == 0 ||
		    (a[1] != '-' && strcmp(a, "-h"))) {
			if (!cmd) {
				for (size_t j = 0; j < sizeof(cmds) / sizeof(cmds[0]); j++)
					if (!strcmp(a, cmds[j].name))
						cmd = &cmds[j];
				if (!cmd) {
					warnx("unknown command '%s' (try --help)", a);
					return EXIT_USAGE;
				}
			} else {
				pos[npos++] = argv[i];
			}
			continue;
		}
		if (!strcmp(a, "--")) {
			opts_done = 1;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help = 1;
			continue;
		}
		if (!strcmp(a, "--version")) {
			printf("untorn %s\n", UT_VERSION_STRING);
			return EXIT_OK;
		}
		if (!strcmp(a, "--nosync")) {
			g.opt.sync = 0;
			continue;
		}
		if (!strcmp(a, "--escaped")) {
			g.escaped = 1;
			continue;
		}
		if (!strcmp(a, "--readonly") || !strcmp(a, "--readwrite")) {
			int want = a[6] == 'o' ? ACCESS_READONLY : ACCESS_READWRITE;

			if (g.access && g.access != want) {
				warnx("--readonly and --readwrite exclude each other");
				return EXIT_USAGE;
			}
			g.access = want;
			continue;
		}
		/* options with a value: --opt VALUE or --opt=VALUE */
		{
			const char *eq = strchr(a, '=');
			size_t nl = eq ? (size_t)(eq - a) : strlen(a);
			char name[32];

			if (nl >= sizeof(name)) {
				warnx("unknown option '%s' (try --help)", a);
				return EXIT_USAGE;
			}
			memcpy(name, a, nl);
			name[nl] = 0;
			if (strcmp(name, "--protect") && strcmp(name, "--cache") &&
			    strcmp(name, "--batch") && strcmp(name, "--table")) {
				warnx("unknown option '%s' (try --help)", a);
				return EXIT_USAGE;
			}
			if (eq) {
				val = eq + 1;
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				warnx("%s needs a value", name);
				return EXIT_USAGE;
			}
			if (!strcmp(name, "--table")) {
				if (!*val || strlen(val) > UT_TABLE_NAME_MAX) {
					warnx("--table: a name is 1..%u bytes",
					      UT_TABLE_NAME_MAX);
					return EXIT_USAGE;
				}
				g.table = val;
			} else if (!strcmp(name, "--protect")) {
				if (parse_protect(val, &g.opt.protect)) {
					warnx("--protect: '%s' is not auto, atomic, "
					      "doublewrite, fullpage or unsafe", val);
					return EXIT_USAGE;
				}
			} else if (!strcmp(name, "--cache")) {
				if (parse_size(val, &g.opt.cache_bytes) ||
				    g.opt.cache_bytes == 0) {
					warnx("--cache: bad size '%s' (e.g. 64M)", val);
					return EXIT_USAGE;
				}
			} else {
				char *end;

				errno = 0;
				batch = strtol(val, &end, 10);
				if (errno || *end || batch < 1) {
					warnx("--batch: '%s' is not a positive number", val);
					return EXIT_USAGE;
				}
			}
		}
	}
	if (help) {
		fputs(cmd ? cmd->help : usage_main, stdout);
		return EXIT_OK;
	}
	if (!cmd) {
		fputs(usage_main, stderr);
		return EXIT_USAGE;
	}
	if (npos < cmd->min_args || npos > cmd->max_args) {
		fputs(cmd->help, stderr);
		return EXIT_USAGE;
	}
	{
		int ex = cmd->run(npos, pos, batch);

		if (fflush(stdout) && ex == EXIT_OK) {
			warnx("stdout: %s", strerror(errno));
			ex = EXIT_ERROR;
		}
		return ex;
	}
}

/*
 * tools/cmd_dump.c - the untorn tool's dump and load (cli.h): dump
 * writes every record from one read transaction in the versioned dump
 * format (below; untorn.1, tools/README.md); load reads a dump, or scan's
 * escaped KEY<TAB>VALUE lines, and commits a transaction per --batch
 * records.  A dump cut short (no end line, or a count that differs) is
 * refused; the batches before the error stay committed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

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

/* load's progress on a terminal (stderr): a bar when the input's size is
 * known, else the records so far. */
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
	cli_warn("%s:%lld: %s", r->name, r->lineno, what);
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
		cli_warn("%s: dump format version %ld; this untorn reads versions "
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
		cli_warn("%s:%lld: end line says '%s', but %lld records were read",
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
		cli_warn("%s: %s", r->name, strerror(errno));
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
	if (cli.table) { /* created even when the input has no records */
		if (r->dump >= DUMP_VERSION_TABLES) {
			cli_warn("%s: a dump of every table: load it without --table",
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
				cli_warn("%s:%lld: table '%s'", r->name, r->lineno,
				      (char *)r->buf);
				break;
			}
			continue;
		}
		rc = ut_tput(t, tb, r->buf, kl, r->buf + kl, vl);
		if (rc) {
			cli_warn("%s:%lld: put failed", r->name, r->lineno);
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
		cli_warn("%s: %s", path, strerror(errno));
	return f;
}

/* Close a stream from open_stream; a write error not seen before is one. */
static int close_stream(FILE *f, const char *path, int ex)
{
	int bad = ferror(f) || (f == stdout ? fflush(f) : fclose(f));

	if (bad && ex == EXIT_OK) {
		cli_warn("%s: %s", path ? path : "stdout", strerror(errno));
		return EXIT_ERROR;
	}
	return ex;
}

int cmd_load(int argc, char **argv, long batch)
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

int cmd_dump(int argc, char **argv, long batch)
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

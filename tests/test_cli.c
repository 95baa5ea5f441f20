/*
 * tests/test_cli.c - the untorn command-line tool, run as a program.
 *
 * UT_TOOL names the binary (ctest sets it); UT_TMPDIR where databases go.
 * Every case runs the tool through fork/exec with stdin from a file and
 * stdout/stderr captured, and checks exit codes and output.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "helper_fs.h"
#include "untorn.h"
#include "page.h" /* the page format: find a leaf to corrupt */

static const char *tool;
static char dir[512];

struct out {
	int status; /* exit code, or 128+signal */
	char *out, *err;
	size_t outlen;
};

static void out_free(struct out *o)
{
	free(o->out);
	free(o->err);
	memset(o, 0, sizeof(*o));
}

/* Run UT_TOOL with the NULL-terminated arguments, stdin from in (inlen bytes,
 * or none when in is NULL). */
static int runv(struct out *o, const char *in, size_t inlen, const char *const *args)
{
	char pin[600], pout[600], perr[600];
	const char *argv[64];
	int n = 0;
	pid_t pid;
	int st;

	snprintf(pin, sizeof(pin), "%s/stdin", dir);
	snprintf(pout, sizeof(pout), "%s/stdout", dir);
	snprintf(perr, sizeof(perr), "%s/stderr", dir);
	write_file(pin, in, in ? inlen : 0);
	argv[n++] = tool;
	while (*args && n < 63)
		argv[n++] = *args++;
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fi = open(pin, O_RDONLY), fo = open(pout, O_WRONLY | O_CREAT | O_TRUNC, 0644),
		    fe = open(perr, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fi < 0 || fo < 0 || fe < 0)
			_exit(126);
		dup2(fi, 0);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(tool, (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	memset(o, 0, sizeof(*o));
	o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	o->out = read_file(pout, &o->outlen);
	o->err = read_file(perr, NULL);
	return o->status;
}

#define MAXARGS 32
static int run(struct out *o, const char *in, ...)
{
	const char *args[MAXARGS + 1];
	va_list ap;
	int n = 0;
	const char *a;

	va_start(ap, in);
	while ((a = va_arg(ap, const char *)) && n < MAXARGS)
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	return runv(o, in, in ? strlen(in) : 0, args);
}

/* Assert an exit status, showing the tool's stderr when it differs. */
#define EXPECT_STATUS(o, want)                                              \
	do {                                                                \
		if ((o)->status != (want))                                  \
			fprintf(stderr, "tool exited %d (want %d); stderr:\n%s\n", \
				(o)->status, (want), (o)->err);             \
		assert_int_equal((o)->status, (want));                      \
	} while (0)

static char *dbpath(const char *name)
{
	static char p[8][700];
	static int i;
	char *r = p[i++ & 7];

	snprintf(r, sizeof(p[0]), "%s/%s", dir, name);
	return r;
}

/* ------------------------------------------------------------------ cases */

static void test_help(void **state)
{
	struct out o;

	(void)state;
	run(&o, NULL, "--help", NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, "usage"));
	assert_non_null(strstr(o.out, "64"));  /* exit codes are documented */
	out_free(&o);
	static const char *const cmds[] = { "put", "get", "del", "scan", "load",
					     "dump", "compact", "check", "stats",
					     "info" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		run(&o, NULL, cmds[i], "--help", NULL);
		EXPECT_STATUS(&o, 0);
		assert_non_null(strstr(o.out, cmds[i]));
		out_free(&o);
	}
	run(&o, NULL, NULL);
	EXPECT_STATUS(&o, 64);
	out_free(&o);
	run(&o, NULL, "frobnicate", "x", NULL);
	EXPECT_STATUS(&o, 64);
	out_free(&o);
	run(&o, NULL, "get", dbpath("h.db"), NULL); /* missing KEY */
	EXPECT_STATUS(&o, 64);
	out_free(&o);
	run(&o, NULL, "--protect", "sometimes", "get", dbpath("h.db"), "k", NULL);
	EXPECT_STATUS(&o, 64);
	out_free(&o);
	run(&o, NULL, "--cache", "12Q", "get", dbpath("h.db"), "k", NULL);
	EXPECT_STATUS(&o, 64);
	out_free(&o);
	run(&o, NULL, "--bogus", "get", dbpath("h.db"), "k", NULL);
	EXPECT_STATUS(&o, 64);
	out_free(&o);
	run(&o, NULL, "--version", NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, UT_VERSION_STRING));
	out_free(&o);
}

static void test_put_get_del(void **state)
{
	struct out o;
	const char *db = dbpath("pgd.db");

	(void)state;
	run(&o, NULL, "put", db, "alpha", "one", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "");
	out_free(&o);
	run(&o, NULL, "get", db, "alpha", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "one\n");
	out_free(&o);
	run(&o, NULL, "get", db, "beta", NULL);
	EXPECT_STATUS(&o, 1);
	assert_string_equal(o.out, "");
	out_free(&o);
	/* overwrite, empty value, global options after the command */
	run(&o, NULL, "put", "--cache", "1M", db, "alpha", "uno", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "get", db, "alpha", "--cache=2M", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "uno\n");
	out_free(&o);
	run(&o, NULL, "put", db, "empty", "", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "get", db, "empty", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "\n");
	out_free(&o);
	/* a key that looks like an option */
	run(&o, NULL, "put", db, "--", "--weird", "w", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "get", db, "--", "--weird", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "w\n");
	out_free(&o);
	/* escaped arguments: binary key and value */
	run(&o, NULL, "--escaped", "put", db, "b\\x00in", "v\\tal\\xff", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "--escaped", "get", db, "b\\x00in", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "v\\tal\\xff\n");
	out_free(&o);
	run(&o, NULL, "get", db, "b", NULL); /* a prefix is another key */
	EXPECT_STATUS(&o, 1);
	out_free(&o);
	/* del */
	run(&o, NULL, "del", db, "alpha", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "del", db, "alpha", NULL);
	EXPECT_STATUS(&o, 1);
	out_free(&o);
	run(&o, NULL, "get", db, "alpha", NULL);
	EXPECT_STATUS(&o, 1);
	out_free(&o);
	run(&o, NULL, "stats", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, "protect\t"));
	assert_non_null(strstr(o.out, "page_writes\t"));
	out_free(&o);
	run(&o, NULL, "info", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, "protect_auto\t"));
	assert_non_null(strstr(o.out, "atomic_write\t"));
	out_free(&o);
	run(&o, NULL, "info", dbpath("not-yet.db"), NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, "exists\tno"));
	out_free(&o);
	/* fullpage by name: stats counts its page images, info names the
	 * mode the database last ran in */
	const char *fp = dbpath("fullpage.db");
	run(&o, NULL, "--protect", "fullpage", "put", fp, "k", "v", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "--protect", "fullpage", "stats", fp, NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, "protect\tfullpage\n"));
	assert_non_null(strstr(o.out, "page_images\t"));
	out_free(&o);
	run(&o, NULL, "info", fp, NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, "protect_last\tfullpage\n"));
	out_free(&o);
}

static void test_scan(void **state)
{
	struct out o;
	const char *db = dbpath("scan.db");
	static const char *const kv[][2] = {
		{ "b", "2" }, { "a", "1" }, { "c", "3" }, { "ab", "12" },
		{ "a\xff", "hi" }, { "d", "4" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		run(&o, NULL, "put", db, kv[i][0], kv[i][1], NULL);
		EXPECT_STATUS(&o, 0);
		out_free(&o);
	}
	run(&o, NULL, "scan", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "a\t1\nab\t12\na\\xff\thi\nb\t2\nc\t3\nd\t4\n");
	out_free(&o);
	run(&o, NULL, "scan", db, "ab", NULL); /* FROM inclusive */
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "ab\t12\na\\xff\thi\nb\t2\nc\t3\nd\t4\n");
	out_free(&o);
	run(&o, NULL, "scan", db, "a", "c", NULL); /* TO exclusive */
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "a\t1\nab\t12\na\\xff\thi\nb\t2\n");
	out_free(&o);
	run(&o, NULL, "scan", db, "aa", "bb", NULL); /* bounds need not exist */
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "ab\t12\na\\xff\thi\nb\t2\n");
	out_free(&o);
	run(&o, NULL, "scan", db, "e", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "");
	out_free(&o);
	run(&o, NULL, "scan", db, "c", "c", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "");
	out_free(&o);
}

/* Escape as the tool does. */
static size_t esc(char *dst, const unsigned char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (c == '\t') { dst[o++] = '\\'; dst[o++] = 't'; }
		else if (c == '\n') { dst[o++] = '\\'; dst[o++] = 'n'; }
		else if (c == '\r') { dst[o++] = '\\'; dst[o++] = 'r'; }
		else if (c == '\\') { dst[o++] = '\\'; dst[o++] = '\\'; }
		else if (c < 0x20 || c > 0x7e) {
			dst[o++] = '\\'; dst[o++] = 'x';
			dst[o++] = hex[c >> 4]; dst[o++] = hex[c & 15];
		} else {
			dst[o++] = (char)c;
		}
	}
	return o;
}

struct rec {
	unsigned char k[40];
	size_t kl;
	unsigned char v[300];
	size_t vl;
};

static int reccmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c = memcmp(x->k, y->k, x->kl < y->kl ? x->kl : y->kl);

	if (c)
		return c;
	return x->kl < y->kl ? -1 : x->kl > y->kl;
}

#define NREC 3000

/* Random binary records, loaded as escaped TSV; scan must print them back
 * in key order exactly, and scan | load must copy a database. */
static void test_load_roundtrip(void **state)
{
	struct out o, o2;
	struct rec *r = calloc(NREC, sizeof(*r));
	char *in = malloc((size_t)NREC * 1400), *want = malloc((size_t)NREC * 1400);
	size_t inl = 0, wl = 0, n = 0;
	uint64_t x = 12345;
	const char *db = dbpath("load.db"), *db2 = dbpath("load2.db");

	(void)state;
	assert_non_null(r);
	for (int i = 0; i < NREC; i++) {
		struct rec *e = &r[n];

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		e->kl = 1 + (x >> 33) % 24;
		for (size_t j = 0; j < e->kl; j++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			e->k[j] = (unsigned char)(x >> 56);
			if (j == 0 && i % 2)
				e->k[j] = (unsigned char)"\t\n\\a"[(x >> 40) & 3];
		}
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		e->vl = (x >> 33) % 300;
		for (size_t j = 0; j < e->vl; j++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			e->v[j] = (unsigned char)(x >> 56);
		}
		/* drop duplicate keys: the last one would win */
		int dup = 0;
		for (size_t j = 0; j < n && !dup; j++)
			dup = r[j].kl == e->kl && !memcmp(r[j].k, e->k, e->kl);
		if (dup)
			continue;
		inl += esc(in + inl, e->k, e->kl);
		in[inl++] = '\t';
		inl += esc(in + inl, e->v, e->vl);
		in[inl++] = '\n';
		n++;
	}
	qsort(r, n, sizeof(*r), reccmp);
	for (size_t i = 0; i < n; i++) {
		wl += esc(want + wl, r[i].k, r[i].kl);
		want[wl++] = '\t';
		wl += esc(want + wl, r[i].v, r[i].vl);
		want[wl++] = '\n';
	}
	want[wl] = 0;
	{
		const char *a[] = { "load", "--batch", "7", db, NULL };

		runv(&o, in, inl, a);
	}
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.err, ""); /* no progress bar: stderr is a file */
	out_free(&o);
	run(&o, NULL, "scan", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_int_equal(o.outlen, wl);
	assert_memory_equal(o.out, want, wl);
	/* scan | load into a second database, default batch */
	{
		const char *a[] = { "load", db2, NULL };

		runv(&o2, o.out, o.outlen, a);
	}
	EXPECT_STATUS(&o2, 0);
	out_free(&o2);
	run(&o2, NULL, "scan", db2, NULL);
	EXPECT_STATUS(&o2, 0);
	assert_int_equal(o2.outlen, o.outlen);
	assert_memory_equal(o2.out, o.out, o.outlen);
	out_free(&o2);
	out_free(&o);
	/* a malformed line stops load with exit 3 */
	run(&o, "good\tline\nno tab here\n", "load", db2, NULL);
	EXPECT_STATUS(&o, 3);
	assert_non_null(strstr(o.err, ":2:"));
	out_free(&o);
	run(&o, "bad\\q\tx\n", "load", db2, NULL);
	EXPECT_STATUS(&o, 3);
	out_free(&o);
	free(r);
	free(in);
	free(want);
}

static int page_is_zero(const unsigned char *p)
{
	for (size_t i = 0; i < UT_PAGE_SIZE; i++)
		if (p[i])
			return 0;
	return 1;
}

/* check: clean on a good database, exit 2 once a page byte is flipped.
 * --protect unsafe so no double-write copy can repair the flipped page. */
/* ------------------------------------------------- dump, load, compact */

#define DUMP_NREC 2000

struct brec {
	unsigned char *k, *v;
	size_t kl, vl;
};

static uint64_t next_rand(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 33;
}

static int brec_cmp(const void *a, const void *b)
{
	const struct brec *x = a, *y = b;
	int c = memcmp(x->k, y->k, x->kl < y->kl ? x->kl : y->kl);

	return c ? c : (x->kl > y->kl) - (x->kl < y->kl);
}

/* Random binary records: every byte value in keys and values, keys of 1
 * byte up to UT_MAX_KEY, empty values and values past a page (overflow
 * chains); sorted, without duplicate keys.  Returns the count. */
static size_t make_brecs(struct brec *r, size_t n, uint64_t seed)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		struct brec *e = &r[m];

		e->kl = i % 97 == 0 ? UT_MAX_KEY : 1 + next_rand(&seed) % 40;
		e->vl = i % 13 == 0 ? 0 : i % 101 == 0 ? 3 * UT_PAGE_SIZE + 7
			: next_rand(&seed) % 500;
		e->k = malloc(e->kl);
		e->v = malloc(e->vl + 1);
		assert_non_null(e->k);
		assert_non_null(e->v);
		for (size_t j = 0; j < e->kl; j++)
			e->k[j] = (unsigned char)next_rand(&seed);
		for (size_t j = 0; j < e->vl; j++)
			e->v[j] = (unsigned char)next_rand(&seed);
		m++;
	}
	qsort(r, m, sizeof(*r), brec_cmp);
	for (size_t i = 1; i < m; i++) /* drop duplicate keys */
		if (!brec_cmp(&r[i - 1], &r[i])) {
			free(r[i].k);
			free(r[i].v);
			memmove(&r[i], &r[i + 1], (m - i - 1) * sizeof(*r));
			m--;
			i--;
		}
	return m;
}

static void free_brecs(struct brec *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].k);
		free(r[i].v);
	}
	free(r);
}

static void put_brecs(const char *path, const struct brec *r, size_t n)
{
	ut_db *db;
	ut_txn *t;

	assert_int_equal(ut_open(path, NULL, &db), UT_OK);
	assert_int_equal(ut_begin(db, 0, &t), UT_OK);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(ut_put(t, r[i].k, r[i].kl, r[i].v, r[i].vl), UT_OK);
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_close(db), UT_OK);
}

/* The database at path holds exactly r[0..n), byte for byte. */
static void expect_brecs(const char *path, const struct brec *r, size_t n)
{
	ut_db *db;
	ut_txn *t;
	ut_cursor *c;
	size_t i = 0;
	int rc;

	assert_int_equal(ut_open(path, NULL, &db), UT_OK);
	assert_int_equal(ut_begin(db, UT_RDONLY, &t), UT_OK);
	assert_int_equal(ut_cursor_open(t, &c), UT_OK);
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c), i++) {
		const void *k, *v;
		size_t kl, vl;

		assert_int_equal(ut_cursor_get(c, &k, &kl, &v, &vl), UT_OK);
		assert_true(i < n);
		assert_int_equal(kl, r[i].kl);
		assert_memory_equal(k, r[i].k, kl);
		assert_int_equal(vl, r[i].vl);
		if (vl)
			assert_memory_equal(v, r[i].v, vl);
	}
	assert_int_equal(rc, UT_NOTFOUND);
	assert_int_equal(i, n);
	ut_cursor_close(c);
	ut_abort(t);
	assert_int_equal(ut_close(db), UT_OK);
}

static void hex_into(char **p, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*p += sprintf(*p, "%02x", b[i]);
}

/* The dump text of r[0..n), as the format says it must be. */
static char *dump_text(const struct brec *r, size_t n)
{
	size_t cap = 64;
	char *t, *p;

	for (size_t i = 0; i < n; i++)
		cap += 2 * (r[i].kl + r[i].vl) + 2;
	t = p = malloc(cap);
	assert_non_null(t);
	p += sprintf(p, "untorn-dump 1\n");
	for (size_t i = 0; i < n; i++) {
		hex_into(&p, r[i].k, r[i].kl);
		*p++ = ' ';
		hex_into(&p, r[i].v, r[i].vl);
		*p++ = '\n';
	}
	sprintf(p, "end %zu\n", n);
	return t;
}

/* dump writes the documented format; load reads it back into a new
 * database byte for byte, from a file or stdin; compact copies too. */
static void test_dump_load_roundtrip(void **state)
{
	struct brec *r = calloc(DUMP_NREC, sizeof(*r));
	const char *db = dbpath("dump.db"), *db2 = dbpath("dump2.db"),
		   *db3 = dbpath("dump3.db"), *file = dbpath("dump.txt");
	struct out o;
	size_t n;
	char *want;

	(void)state;
	assert_non_null(r);
	n = make_brecs(r, DUMP_NREC, 777);
	put_brecs(db, r, n);
	want = dump_text(r, n);

	run(&o, NULL, "dump", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_int_equal(o.outlen, strlen(want));
	assert_memory_equal(o.out, want, o.outlen);
	out_free(&o);

	run(&o, NULL, "dump", db, file, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "load", "--batch", "50", db2, file, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	expect_brecs(db2, r, n);

	run(&o, want, "load", db3, NULL); /* from stdin */
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	expect_brecs(db3, r, n);
	run(&o, NULL, "dump", db3, NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, want);
	out_free(&o);
	free(want);
	free_brecs(r, n);
}

/* Named tables: --table on put/get/del/scan/load/dump/check, `tables`,
 * and a dump of every table (version 2) that load turns back into the
 * same tables: dump | load | dump identical; compact and backup keep
 * every table. */
static void test_tables(void **state)
{
	const char *db = dbpath("tab.db"), *db2 = dbpath("tab2.db"),
		   *db3 = dbpath("tab3.db"), *db4 = dbpath("tab4.db"),
		   *file = dbpath("tab.dump");
	struct out o;
	char *first;

	(void)state;
	run(&o, NULL, "put", db, "k", "in default", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "--table", "users", "put", db, "alice", "1", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "put", "--table=users", db, "bob", "2", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "put", "--table", "logins", db, "k", "in logins", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, "", "load", "--table", "empty", db, NULL); /* created, empty */
	EXPECT_STATUS(&o, 0);
	out_free(&o);

	run(&o, NULL, "tables", db, NULL);
	EXPECT_STATUS(&o, 0);
	/* the default table first, unnamed: one key in its root leaf */
	assert_string_equal(o.out, "\t1\t1\nempty\t0\t1\nlogins\t1\t1\n"
			    "users\t2\t1\n");
	out_free(&o);
	run(&o, NULL, "get", "--table", "logins", db, "k", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "in logins\n");
	out_free(&o);
	run(&o, NULL, "get", db, "k", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "in default\n");
	out_free(&o);
	run(&o, NULL, "get", "--table", "nope", db, "k", NULL);
	EXPECT_STATUS(&o, 1);
	assert_non_null(strstr(o.err, "no table 'nope'"));
	out_free(&o);
	run(&o, NULL, "scan", "--table", "users", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "alice\t1\nbob\t2\n");
	out_free(&o);
	run(&o, NULL, "check", "--table", "users", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, "table users: 2 keys, 1 pages"));
	out_free(&o);
	run(&o, NULL, "--table", "", "get", db, "k", NULL);
	EXPECT_STATUS(&o, 64);
	out_free(&o);

	/* every table in the dump, named; load recreates them */
	run(&o, NULL, "dump", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out,
		"untorn-dump 2\n"
		"6b 696e2064656661756c74\n"
		"table 656d707479\n"
		"table 6c6f67696e73\n"
		"6b 696e206c6f67696e73\n"
		"table 7573657273\n"
		"616c696365 31\n"
		"626f62 32\n"
		"end 4\n");
	first = strdup(o.out);
	out_free(&o);
	run(&o, NULL, "dump", db, file, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "load", db2, file, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "dump", db2, NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, first);
	out_free(&o);
	/* one table: version 1, as before; a full dump refuses --table */
	run(&o, NULL, "dump", "--table", "users", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "untorn-dump 1\n616c696365 31\n626f62 32\nend 2\n");
	out_free(&o);
	run(&o, NULL, "load", "--table", "x", db2, file, NULL);
	EXPECT_STATUS(&o, 64);
	out_free(&o);
	/* compact and backup keep every table */
	run(&o, NULL, "compact", db, db3, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "backup", db, db4, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "dump", db3, NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, first);
	out_free(&o);
	run(&o, NULL, "dump", db4, NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, first);
	out_free(&o);
	run(&o, NULL, "del", "--table", "users", db, "alice", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "del", "--table", "users", db, "alice", NULL);
	EXPECT_STATUS(&o, 1);
	out_free(&o);
	run(&o, NULL, "check", db, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	free(first);
}

/* A dump that is cut short, of another version, or malformed is refused
 * with exit 3 and a message naming the line; nothing of the batch in
 * progress is committed. */
static void test_load_refuses_bad_dumps(void **state)
{
	static const struct { const char *in, *msg; } bad[] = {
		{ "untorn-dump 1\n61 62\n", "end line" },           /* cut short */
		{ "untorn-dump 1\n61 62\nend 2\n", "end line says" }, /* wrong count */
		{ "untorn-dump 1\n61 62\nend 1\n63 64\n", "after the end" },
		{ "untorn-dump 1\n6 62\nend 1\n", "malformed hex" },   /* odd digits */
		{ "untorn-dump 1\n61 6g\nend 1\n", "malformed hex" },
		{ "untorn-dump 1\n6162\nend 1\n", "no space" },
		{ "untorn-dump 1\n 62\nend 1\n", "put failed" },      /* empty key */
		{ "untorn-dump 3\n61 62\nend 1\n", "version 3" },
		{ "untorn-dump 1\ntable 61\n61 62\nend 1\n", "malformed hex" },
		{ "untorn-dump 2\ntable \n61 62\nend 1\n", "malformed table" },
		{ "untorn-dump 2\ntable 6100\n61 62\nend 1\n", "malformed table" },
		{ "untorn-dump x\n", "malformed dump header" },
	};
	const char *db = dbpath("bad.db");
	struct out o;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run(&o, bad[i].in, "load", db, NULL);
		EXPECT_STATUS(&o, 3);
		if (!strstr(o.err, bad[i].msg))
			fprintf(stderr, "case %zu: stderr: %s\n", i, o.err);
		assert_non_null(strstr(o.err, bad[i].msg));
		out_free(&o);
		run(&o, NULL, "get", db, "a", NULL); /* the batch was aborted */
		EXPECT_STATUS(&o, 1);
		out_free(&o);
	}
	/* a first line that only looks like a header is an escaped record */
	run(&o, "untorn-dump 1\tv\n", "load", db, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "get", db, "untorn-dump 1", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "v\n");
	out_free(&o);
}

/* compact copies every record into a new database that is no larger (and,
 * after many deletes, smaller), reports both sizes, and refuses to
 * overwrite. */
static void test_compact(void **state)
{
	struct brec *r = calloc(DUMP_NREC, sizeof(*r));
	const char *db = dbpath("compact.db"), *dest = dbpath("compact2.db");
	struct out o;
	struct stat a, b;
	size_t n, kept = 0;
	ut_db *h;
	ut_txn *t;

	(void)state;
	assert_non_null(r);
	n = make_brecs(r, DUMP_NREC, 4242);
	put_brecs(db, r, n);
	/* delete two records in three: leaves go part empty, pages free */
	assert_int_equal(ut_open(db, NULL, &h), UT_OK);
	assert_int_equal(ut_begin(h, 0, &t), UT_OK);
	for (size_t i = 0; i < n; i++) {
		if (i % 3 == 0) {
			r[kept++] = r[i];
			continue;
		}
		assert_int_equal(ut_del(t, r[i].k, r[i].kl), UT_OK);
		free(r[i].k);
		free(r[i].v);
	}
	assert_int_equal(ut_commit(t), UT_OK);
	assert_int_equal(ut_close(h), UT_OK);

	run(&o, NULL, "compact", db, dest, NULL);
	EXPECT_STATUS(&o, 0);
	assert_int_equal(stat(db, &a), 0);
	assert_int_equal(stat(dest, &b), 0);
	{
		char line[200];

		snprintf(line, sizeof(line), "%s: %lld bytes\n%s: %lld bytes (",
			 db, (long long)a.st_size, dest, (long long)b.st_size);
		assert_non_null(strstr(o.out, line));
		snprintf(line, sizeof(line), "%zu keys\n", kept);
		assert_non_null(strstr(o.out, line));
	}
	assert_true(b.st_size < a.st_size);
	out_free(&o);
	expect_brecs(dest, r, kept);
	run(&o, NULL, "check", dest, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);

	run(&o, NULL, "compact", db, dest, NULL); /* DEST exists */
	EXPECT_STATUS(&o, 3);
	assert_non_null(strstr(o.err, "exists"));
	out_free(&o);
	expect_brecs(dest, r, kept);
	free_brecs(r, kept);
}

static void test_backup(void **state)
{
	struct brec *r = calloc(DUMP_NREC, sizeof(*r));
	const char *db = dbpath("backup.db"), *dest = dbpath("backup2.db");
	struct out o;
	size_t n;

	(void)state;
	assert_non_null(r);
	n = make_brecs(r, DUMP_NREC, 777);
	put_brecs(db, r, n);
	run(&o, NULL, "backup", db, dest, NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, "backup of"));
	out_free(&o);
	/* the copy holds every record byte for byte and checks clean */
	expect_brecs(dest, r, n);
	run(&o, NULL, "check", dest, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	run(&o, NULL, "backup", db, dest, NULL); /* DEST exists */
	EXPECT_STATUS(&o, 3);
	assert_non_null(strstr(o.err, "exists"));
	out_free(&o);
	expect_brecs(dest, r, n);
	free_brecs(r, n);
}

static void test_check(void **state)
{
	struct out o;
	const char *db = dbpath("check.db");
	char *in = malloc(2000 * 140);
	size_t inl = 0;
	unsigned char *page;
	long npages, victim = -1;

	(void)state;
	for (int i = 0; i < 2000; i++)
		inl += (size_t)sprintf(in + inl, "key%06d\t%0120d\n", i * 7919 % 2000, i);
	{
		const char *a[] = { "--protect", "unsafe", "load", db, NULL };

		runv(&o, in, inl, a);
	}
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	free(in);
	run(&o, NULL, "--protect", "unsafe", "check", db, NULL);
	EXPECT_STATUS(&o, 0);
	assert_non_null(strstr(o.out, "clean"));
	out_free(&o);

	/* Flip a byte in the middle of the last leaf page. */
	npages = (long)(file_bytes(db) / UT_PAGE_SIZE);
	assert_true(npages >= 2);
	page = malloc(UT_PAGE_SIZE);
	for (long p = npages - 1; p >= 1; p--) {
		read_page(db, (uint32_t)p, page);
		if (!page_is_zero(page) && ut_page_type(page) == UT_PT_LEAF) {
			victim = p;
			break;
		}
	}
	assert_true(victim >= 1);
	page[UT_PAGE_SIZE / 2 + 123] ^= 0x5a;
	write_page(db, (uint32_t)victim, page);
	free(page);
	/* a scan reads every leaf: the bad one must stop it, exit 2 */
	run(&o, NULL, "--protect", "unsafe", "scan", db, NULL);
	if (o.status != 2)
		fprintf(stderr, "flipped leaf page %ld; scan stderr: %s\n", victim,
			o.err);
	EXPECT_STATUS(&o, 2);
	{
		char pg[32];

		snprintf(pg, sizeof(pg), "page %ld", victim);
		assert_non_null(strstr(o.err, pg));
	}
	out_free(&o);
	run(&o, NULL, "--protect", "unsafe", "check", db, NULL);
	if (o.status != 2)
		fprintf(stderr, "flipped page %ld of %ld; check said:\n%s%s\n",
			victim, npages, o.out, o.err);
	EXPECT_STATUS(&o, 2);
	assert_non_null(strstr(o.out, "CORRUPT"));
	out_free(&o);
}

/* Files that are not databases: a clear error naming the file, exit 3. */
static void test_not_a_db(void **state)
{
	struct out o;
	const char *f1 = dbpath("text.txt"), *f2 = dbpath("small.txt"),
		   *f3 = dbpath("missing.db");
	FILE *f;

	(void)state;
	f = fopen(f1, "w");
	assert_non_null(f);
	for (int i = 0; i < 3000; i++)
		fprintf(f, "this is line %d of a text file, not a database\n", i);
	fclose(f);
	f = fopen(f2, "w");
	assert_non_null(f);
	fputs("hello\n", f);
	fclose(f);

	static const char *const cmds[] = { "get", "scan", "check", "stats" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *files[] = { f1, f2 };

		for (int j = 0; j < 2; j++) {
			const char *a[] = { cmds[i], files[j], "k", NULL };

			if (strcmp(cmds[i], "get"))
				a[2] = NULL;
			runv(&o, NULL, 0, a);
			if (o.status != 3)
				fprintf(stderr, "%s %s: stderr: %s", cmds[i],
					files[j], o.err);
			EXPECT_STATUS(&o, 3);
			assert_non_null(strstr(o.err, "untorn: "));
			assert_non_null(strstr(o.err, files[j]));
			out_free(&o);
		}
	}
	/* the text file must be left as it was */
	assert_int_equal(access(f1, F_OK), 0);
	{
		struct stat st;

		assert_int_equal(stat(f2, &st), 0);
		assert_int_equal(st.st_size, 6);
	}
	/* get on a database that does not exist: not created, exit 3 */
	run(&o, NULL, "get", f3, "k", NULL);
	EXPECT_STATUS(&o, 3);
	assert_non_null(strstr(o.err, f3));
	out_free(&o);
	assert_int_not_equal(access(f3, F_OK), 0);
}

/* Errors name their own cause: a negative size is a usage error, a bad
 * key does not repeat a detail left over from the open, a missing
 * directory is called that. */
static void test_error_messages(void **state)
{
	struct out o;
	const char *db = dbpath("err.db");
	char longkey[UT_MAX_KEY + 2], missing[800];

	(void)state;
	run(&o, NULL, "--cache", "-5", "put", db, "k", "v", NULL);
	EXPECT_STATUS(&o, 64);
	assert_non_null(strstr(o.err, "--cache"));
	assert_int_not_equal(access(db, F_OK), 0);
	out_free(&o);

	run(&o, NULL, "put", db, "k", "v", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	memset(longkey, 'x', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = 0;
	static const char *const cmds[] = { "put", "get", "del" };
	for (size_t i = 0; i < 3; i++) {
		for (int empty = 0; empty < 2; empty++) {
			const char *a[] = { cmds[i], db, empty ? "" : longkey, "v",
					    NULL };

			if (i)
				a[3] = NULL;
			runv(&o, NULL, 0, a);
			EXPECT_STATUS(&o, 3);
			assert_non_null(strstr(o.err, empty ? "empty" : "longer"));
			assert_null(strstr(o.err, "slots")); /* open's detail */
			assert_null(strstr(o.err, "double-write"));
			out_free(&o);
		}
	}

	snprintf(missing, sizeof(missing), "%s/no-such-dir/x.db", dir);
	run(&o, NULL, "put", missing, "k", "v", NULL);
	EXPECT_STATUS(&o, 3);
	assert_non_null(strstr(o.err, "directory does not exist"));
	assert_null(strstr(o.err, "create is off"));
	out_free(&o);
}

/* A file's bytes and modification time, to prove nothing wrote to it. */
struct snap {
	int exists;
	char *data;
	size_t len;
	struct timespec mtime;
};

static void snap_take(struct snap *sn, const char *path)
{
	struct stat st;

	memset(sn, 0, sizeof(*sn));
	if (stat(path, &st))
		return;
	sn->exists = 1;
	sn->mtime = st.st_mtim;
	sn->data = read_file(path, &sn->len);
}

static void snap_same(struct snap *sn, const char *path)
{
	struct snap now;

	snap_take(&now, path);
	if (now.exists != sn->exists)
		fail_msg("%s: %s", path, sn->exists ? "removed" : "created");
	if (sn->exists) {
		assert_int_equal(now.len, sn->len);
		assert_memory_equal(now.data, sn->data, sn->len);
		assert_true(now.mtime.tv_sec == sn->mtime.tv_sec &&
			    now.mtime.tv_nsec == sn->mtime.tv_nsec);
	}
	free(now.data);
	free(sn->data);
	sn->data = NULL;
}

/* Set or clear FS_IMMUTABLE_FL (even root cannot write such a file);
 * 0 when the filesystem does not do it. */
static int set_immutable(const char *path, int on)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK), flags, ok = 0;

	if (fd < 0)
		return 0;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
		flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
		ok = ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
	}
	close(fd);
	return ok;
}

static char rodir[700];

static int ro_teardown(void **state)
{
	char p[800];
	static const char *const names[] = { "", "/ro.db", "/ro.db-wal",
					     "/ro.db-dw" };

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s%s", rodir, names[i]);
		set_immutable(p, 0);
	}
	return 0;
}

/* Read-only: get, scan, check and stats by default write and create
 * nothing, work on files nobody may write, and refuse a database that
 * needs recovery; --readwrite recovers it. */
static void test_readonly(void **state)
{
	static const char *const names[] = { "/ro.db", "/ro.db-wal", "/ro.db-dw" };
	char db[800], paths[3][800];
	struct snap sn[3];
	struct out o;
	int immutable;

	(void)state;
	snprintf(rodir, sizeof(rodir), "%s/ro", dir);
	assert_int_equal(mkdir(rodir, 0755), 0);
	snprintf(db, sizeof(db), "%s/ro.db", rodir);
	for (int i = 0; i < 3; i++)
		snprintf(paths[i], sizeof(paths[i]), "%s%s", rodir, names[i]);
	run(&o, "a\t1\nb\t2\n", "load", db, NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);
	/* a database whose -dw is gone: no command may bring it back */
	unlink(paths[2]);

	for (int pass = 0; pass < 2; pass++) {
		immutable = 0;
		for (int i = 0; i < 3; i++)
			snap_take(&sn[i], paths[i]);
		if (pass == 1) /* nobody, not even root, may write here */
			immutable = set_immutable(db, 1) &&
				    set_immutable(paths[1], 1) &&
				    set_immutable(rodir, 1);
		run(&o, NULL, "get", db, "b", NULL);
		EXPECT_STATUS(&o, 0);
		assert_string_equal(o.out, "2\n");
		out_free(&o);
		run(&o, NULL, "scan", db, NULL);
		EXPECT_STATUS(&o, 0);
		assert_string_equal(o.out, "a\t1\nb\t2\n");
		out_free(&o);
		run(&o, NULL, "check", db, NULL);
		EXPECT_STATUS(&o, 0);
		assert_non_null(strstr(o.out, "clean"));
		out_free(&o);
		run(&o, NULL, "stats", db, NULL);
		EXPECT_STATUS(&o, 0);
		out_free(&o);
		run(&o, NULL, "--readonly", "put", db, "c", "3", NULL);
		EXPECT_STATUS(&o, 3);
		assert_non_null(strstr(o.err, "read-only"));
		out_free(&o);
		ro_teardown(NULL);
		for (int i = 0; i < 3; i++)
			snap_same(&sn[i], paths[i]);
		if (pass == 1 && !immutable)
			fprintf(stderr, "test_readonly: no FS_IMMUTABLE_FL here; "
				"read-only permissions not exercised\n");
	}

	/* a crash: the writer exits without closing */
	{
		pid_t pid = fork();
		int st;

		assert_true(pid >= 0);
		if (pid == 0) {
			ut_db *h;
			ut_txn *t;

			if (ut_open(db, NULL, &h) || ut_begin(h, 0, &t) ||
			    ut_put(t, "c", 1, "3", 1) || ut_commit(t))
				_exit(1);
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	for (int i = 0; i < 3; i++)
		snap_take(&sn[i], paths[i]);
	run(&o, NULL, "check", db, NULL);
	EXPECT_STATUS(&o, 3);
	assert_non_null(strstr(o.err, "not closed cleanly"));
	out_free(&o);
	run(&o, NULL, "get", db, "c", NULL);
	EXPECT_STATUS(&o, 3);
	out_free(&o);
	for (int i = 0; i < 3; i++)
		snap_same(&sn[i], paths[i]);
	run(&o, NULL, "--readwrite", "get", db, "c", NULL);
	EXPECT_STATUS(&o, 0);
	assert_string_equal(o.out, "3\n");
	out_free(&o);
	run(&o, NULL, "get", db, "c", NULL);
	EXPECT_STATUS(&o, 0);
	out_free(&o);

	/* read-only openers share; a writer is excluded while they are in */
	{
		ut_options ro;
		ut_db *a, *b, *w;

		ut_options_default(&ro);
		ro.readonly = 1;
		ro.lock_timeout_ms = 0;
		assert_int_equal(ut_open(db, &ro, &a), UT_OK);
		assert_int_equal(ut_open(db, &ro, &b), UT_OK);
		ro.readonly = 0;
		assert_int_equal(ut_open(db, &ro, &w), UT_ELOCKED);
		assert_int_equal(ut_checkpoint(a), UT_EREADONLY);
		assert_int_equal(ut_close(a), UT_OK);
		assert_int_equal(ut_close(b), UT_OK);
	}
	run(&o, NULL, "--readonly", "--readwrite", "get", db, "c", NULL);
	EXPECT_STATUS(&o, 64);
	out_free(&o);
}

int main(void)
{
	const char *tmp = getenv("UT_TMPDIR");
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_put_get_del),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_load_roundtrip),
		cmocka_unit_test(test_dump_load_roundtrip),
		cmocka_unit_test(test_load_refuses_bad_dumps),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_compact),
		cmocka_unit_test(test_backup),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_not_a_db),
		cmocka_unit_test(test_error_messages),
		cmocka_unit_test_teardown(test_readonly, ro_teardown),
	};

	tool = getenv("UT_TOOL");
	if (!tool || access(tool, X_OK)) {
		fprintf(stderr, "test_cli: UT_TOOL (%s) is not an executable\n",
			tool ? tool : "unset");
		return 1;
	}
	if (!tmp || !*tmp)
		tmp = "/tmp";
	mkdir(tmp, 0777);
	snprintf(dir, sizeof(dir), "%s/cli-XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	rc = cmocka_run_group_tests_name("cli", tests, NULL, NULL);
	if (rc == 0)
		rm_tree(dir);
	else
		fprintf(stderr, "test_cli: files kept in %s\n", dir);
	return rc;
}

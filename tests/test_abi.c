/*
 * tests/test_abi.c - ut_options and ut_stats across header versions.
 *
 * A program built against an older untorn.h passes shorter structs; one
 * built against a newer header passes longer ones.  Here the older header
 * is a copy of an earlier, shorter layout (the same fields, in the same
 * places, cut after lock_timeout_ms's predecessors or after readonly), set
 * in a buffer whose bytes past the struct are poisoned: the library must
 * read and write only the caller's bytes, give the missing fields their
 * defaults, and refuse a struct larger than it knows with UT_EVERSION.
 * (The shared library's exported symbols: tests/exported_symbols.sh.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "db.h"
#include "helper_fs.h"
#include "untorn.h"

#define POISON 0xa5

static char dir[512], dbpath[600];

/* The oldest accepted layout: size and the four original fields. */
struct options_core {
	size_t size;
	size_t cache_bytes;
	enum ut_protect protect;
	int create;
	int sync;
};

/* A later one: cut before flush_inline. */
struct options_no_flush_inline {
	size_t size;
	size_t cache_bytes;
	enum ut_protect protect;
	int create;
	int sync;
	unsigned lock_timeout_ms;
	int readonly;
};

/* The caller's struct at the start of a buffer that is poisoned after it:
 * a library reading past the struct would see readonly, flush_inline and
 * lock_timeout_ms as 0xa5a5a5a5. */
union poisoned_options {
	struct options_core core;
	struct options_no_flush_inline mid;
	unsigned char bytes[sizeof(ut_options) + 64];
};

static void poison(union poisoned_options *p)
{
	memset(p, POISON, sizeof(*p));
}

/* What ut_options_default does in a program whose header has the layout
 * of *o: the macro passes that program's sizeof. */
static void init_as(void *o, size_t size)
{
	assert_int_equal(ut_options_init(o, size), UT_OK);
}

static void open_and_expect(const void *o, const ut_options *want)
{
	const ut_options *got;
	ut_db *db;

	assert_int_equal(ut_open(dbpath, o, &db), UT_OK);
	got = ut_db_options(db);
	assert_int_equal(got->size, sizeof(ut_options));
	assert_int_equal(got->cache_bytes, want->cache_bytes);
	assert_int_equal(got->protect, want->protect);
	assert_int_equal(got->create, want->create);
	assert_int_equal(got->sync, want->sync);
	assert_int_equal(got->lock_timeout_ms, want->lock_timeout_ms);
	assert_int_equal(got->readonly, want->readonly);
	assert_int_equal(got->flush_inline, want->flush_inline);
	assert_int_equal(ut_close(db), UT_OK);
}

/* ut_options_default writes exactly the caller's sizeof: an older
 * program's struct is filled, nothing after it. */
static void test_default_fills_only_the_callers_struct(void **state)
{
	union poisoned_options p;

	(void)state;
	poison(&p);
	init_as(&p.core, sizeof(p.core));
	assert_int_equal(p.core.size, sizeof(p.core));
	assert_int_equal(p.core.cache_bytes, 64u << 20);
	assert_int_equal(p.core.protect, UT_PROTECT_AUTO);
	assert_int_equal(p.core.create, 1);
	assert_int_equal(p.core.sync, 1);
	for (size_t i = sizeof(p.core); i < sizeof(p.bytes); i++)
		assert_int_equal(p.bytes[i], POISON);

	poison(&p);
	assert_int_equal(ut_options_init((ut_options *)p.bytes, 3), UT_EINVAL);
	for (size_t i = 0; i < sizeof(p.bytes); i++)
		assert_int_equal(p.bytes[i], POISON);
}

/* An older program's options open the database; the fields its header
 * did not have take their defaults, whatever lies past its struct. */
static void test_old_layout_opens_with_defaults(void **state)
{
	union poisoned_options p;
	ut_options want;

	(void)state;
	ut_options_default(&want);
	poison(&p);
	init_as(&p.core, sizeof(p.core));
	p.core.cache_bytes = 1u << 20;
	p.core.sync = 0;
	want.cache_bytes = 1u << 20;
	want.sync = 0;
	open_and_expect(&p.core, &want);

	ut_options_default(&want);
	poison(&p);
	init_as(&p.mid, sizeof(p.mid));
	assert_int_equal(p.mid.size, sizeof(p.mid));
	assert_int_equal(p.mid.lock_timeout_ms, UT_DEFAULT_LOCK_TIMEOUT_MS);
	p.mid.lock_timeout_ms = 7;
	want.lock_timeout_ms = 7;
	open_and_expect(&p.mid, &want);

	open_and_expect(NULL, &(ut_options){ .size = sizeof(ut_options),
		.cache_bytes = 64u << 20, .protect = UT_PROTECT_AUTO,
		.create = 1, .sync = 1,
		.lock_timeout_ms = UT_DEFAULT_LOCK_TIMEOUT_MS });
}

/* A newer program's options (a size this library does not know) are
 * refused, not half read; a size never set is refused as well. */
static void test_bad_sizes_are_refused(void **state)
{
	union poisoned_options p;
	ut_options *o = (ut_options *)p.bytes;
	ut_db *db = (ut_db *)1;

	(void)state;
	poison(&p);
	assert_int_equal(ut_options_init(o, sizeof(ut_options) + 16), UT_EVERSION);
	assert_int_equal(o->size, sizeof(ut_options) + 16);
	for (size_t i = sizeof(ut_options); i < sizeof(ut_options) + 16; i++)
		assert_int_equal(p.bytes[i], 0);
	assert_int_equal(p.bytes[sizeof(ut_options) + 16], POISON);
	assert_int_equal(ut_open(dbpath, o, &db), UT_EVERSION);
	assert_null(db);
	assert_non_null(strstr(ut_errdetail(), "newer untorn.h"));

	o->size = (size_t)0xdeadbeef;
	assert_int_equal(ut_open(dbpath, o, &db), UT_EVERSION);

	ut_options_default(o);
	o->size = 0; /* built by hand, never filled by ut_options_default */
	assert_int_equal(ut_open(dbpath, o, &db), UT_EINVAL);
	assert_non_null(strstr(ut_errdetail(), "ut_options_default"));
	o->size = UT_OPTIONS_SIZE_MIN - 1;
	assert_int_equal(ut_open(dbpath, o, &db), UT_EINVAL);
}

/* An older program's ut_stats gets its own fields, nothing past them; a
 * newer program's gets the fields this library knows and zeros after. */
static void test_stats_sizes(void **state)
{
	struct stats_old { size_t size; int protect; uint64_t page_writes; };
	union {
		struct stats_old old;
		ut_stats st;
		unsigned char bytes[sizeof(ut_stats) + 32];
	} p;
	ut_db *db;

	(void)state;
	assert_int_equal(ut_open(dbpath, NULL, &db), UT_OK);
	memset(&p, POISON, sizeof(p));
	assert_int_equal(ut_stats_read(db, &p.st, sizeof(p.old)), UT_OK);
	assert_int_equal(p.old.size, sizeof(p.old));
	assert_true(p.old.protect == UT_PROTECT_ATOMIC ||
		    p.old.protect == UT_PROTECT_DOUBLEWRITE);
	for (size_t i = sizeof(p.old); i < sizeof(p.bytes); i++)
		assert_int_equal(p.bytes[i], POISON);

	memset(&p, POISON, sizeof(p));
	assert_int_equal(ut_stats_read(db, &p.st, sizeof(p.bytes)), UT_OK);
	assert_int_equal(p.st.size, sizeof(ut_stats));
	for (size_t i = sizeof(ut_stats); i < sizeof(p.bytes); i++)
		assert_int_equal(p.bytes[i], 0);

	memset(&p, POISON, sizeof(p));
	assert_int_equal(ut_stats_read(db, &p.st, UT_STATS_SIZE_MIN - 1), UT_EINVAL);
	assert_int_equal(p.bytes[0], POISON);
	assert_int_equal(ut_close(db), UT_OK);
}

int main(void)
{
	const char *tmp = getenv("UT_TMPDIR");
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_fills_only_the_callers_struct),
		cmocka_unit_test(test_old_layout_opens_with_defaults),
		cmocka_unit_test(test_bad_sizes_are_refused),
		cmocka_unit_test(test_stats_sizes),
	};

	if (!tmp || !*tmp)
		tmp = "/tmp";
	mkdir(tmp, 0777);
	snprintf(dir, sizeof(dir), "%s/abi-XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	snprintf(dbpath, sizeof(dbpath), "%s/db", dir);
	rc = cmocka_run_group_tests_name("abi", tests, NULL, NULL);
	if (rc == 0)
		rm_tree(dir);
	else
		fprintf(stderr, "test_abi: files kept in %s\n", dir);
	return rc;
}

/*
 * bench/tables_part.c - the named-table figures bench_tables and
 * bench_kv -T print (issue 33): opening a table by name (p50/p99) and
 * dropping a big one (time, log bytes, peak RSS, the file's size after
 * the load, the drop and a reload that reuses the freed pages).  What
 * each measures is in tables_part.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sys/resource.h>

#include "tables_part.h"
#include "untorn.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static long long fsize(const char *p)
{
	struct stat st;

	return stat(p, &st) ? -1 : (long long)st.st_size;
}

#define CHECK(x)                                                            \
	do {                                                                \
		int rc_ = (x);                                              \
		if (rc_ < 0) {                                              \
			fprintf(stderr, "%s: %s (%s)\n", #x, ut_strerror(rc_), \
				ut_errdetail());                            \
			exit(1);                                            \
		}                                                           \
	} while (0)

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void pct(const char *what, double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmpd);
	printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", what, v[n / 2] * 1e6,
	       v[n * 99 / 100] * 1e6, v[n * 999 / 1000] * 1e6, v[n - 1] * 1e6);
}

static void bench_open(ut_db *db, long ntables, long opens)
{
	double *open_s = malloc((size_t)opens * sizeof(double));
	double *all_s = malloc((size_t)opens * sizeof(double));
	char name[32];
	ut_table *tb;
	ut_txn *t;

	for (long i = 0; i < ntables; i++) {
		if (i % 500 == 0)
			CHECK(ut_begin(db, 0, &t));
		snprintf(name, sizeof(name), "table%05ld", i);
		CHECK(ut_table_open(t, name, UT_CREATE, &tb));
		for (int k = 0; k < 10; k++) {
			char key[8];

			snprintf(key, sizeof(key), "k%d", k);
			CHECK(ut_tput(t, tb, key, strlen(key), "value", 5));
		}
		if (i % 500 == 499 || i + 1 == ntables)
			CHECK(ut_commit(t));
	}
	CHECK(ut_checkpoint(db));
	for (long i = 0; i < opens; i++) {
		double t0, t1, t2;
		void *v;
		size_t vl;

		snprintf(name, sizeof(name), "table%05ld",
			 (long)(mix((uint64_t)i) % (uint64_t)ntables));
		t0 = now();
		CHECK(ut_begin(db, UT_RDONLY, &t));
		t1 = now();
		CHECK(ut_table_open(t, name, 0, &tb));
		t2 = now();
		CHECK(ut_tget(t, tb, "k3", 2, &v, &vl));
		ut_abort(t);
		open_s[i] = t2 - t1;
		all_s[i] = now() - t0;
		free(v);
	}
	printf("open by name, %ld tables, %ld opens (read transactions):\n\n"
	       "| what | p50 us | p99 us | p99.9 us | max us |\n"
	       "|---|---:|---:|---:|---:|\n", ntables, opens);
	pct("ut_table_open", open_s, opens);
	pct("begin + open + get + end", all_s, opens);
	printf("\n");
	free(open_s);
	free(all_s);
}

static void load(ut_db *db, const char *name, long nkeys, const char *val,
		 size_t vlen)
{
	ut_table *tb;
	ut_txn *t = NULL;

	for (long i = 0; i < nkeys; i++) {
		char key[32];

		if (!t) {
			CHECK(ut_begin(db, 0, &t));
			CHECK(ut_table_open(t, name, UT_CREATE, &tb));
		}
		snprintf(key, sizeof(key), "%016llx",
			 (unsigned long long)mix((uint64_t)i));
		CHECK(ut_tput(t, tb, key, 16, val, vlen));
		if (i % 1000 == 999 || i + 1 == nkeys) {
			CHECK(ut_commit(t));
			t = NULL;
		}
	}
}

static void bench_drop(ut_db *db, const char *path, long long bytes)
{
	static char val[1000];
	long nkeys = (long)(bytes / (long long)sizeof(val));
	ut_table_info ti;
	ut_table *tb;
	ut_txn *t;
	double t0, t1, t2, t3;
	long long after_load, after_drop, after_reload;

	memset(val, 'v', sizeof(val));
	t0 = now();
	load(db, "big", nkeys, val, sizeof(val));
	CHECK(ut_checkpoint(db));
	t1 = now();
	after_load = fsize(path);
	CHECK(ut_begin(db, 0, &t));
	CHECK(ut_table_open(t, "big", 0, &tb));
	CHECK(ut_table_stat(t, tb, &ti));
	ut_stats s0, s1;
	struct rusage ru;

	CHECK(ut_stats_get(db, &s0));
	t2 = now();
	CHECK(ut_table_drop(t, tb));
	t3 = now();
	CHECK(ut_commit(t));
	double t4 = now();
	CHECK(ut_stats_get(db, &s1));
	getrusage(RUSAGE_SELF, &ru);
	CHECK(ut_checkpoint(db));
	double t5 = now();
	after_drop = fsize(path);
	load(db, "again", nkeys, val, sizeof(val));
	CHECK(ut_checkpoint(db));
	after_reload = fsize(path);
	printf("drop of a table of %ld keys, %llu pages (%.1f MiB), loaded in "
	       "%.1f s:\n\n"
	       "| what | value |\n|---|---:|\n"
	       "| ut_table_drop | %.2f s |\n| its commit (sync off) | %.2f s |\n"
	       "| the checkpoint after it | %.2f s |\n"
	       "| log bytes of the drop's commit | %llu |\n"
	       "| peak RSS of the process so far | %.1f MiB |\n"
	       "| file after the load | %.1f MiB |\n"
	       "| file after the drop | %.1f MiB |\n"
	       "| file after loading the same into a new table | %.1f MiB |\n\n",
	       nkeys, (unsigned long long)ti.pages,
	       (double)ti.pages * UT_PAGE_SIZE / 1048576.0, t1 - t0, t3 - t2,
	       t4 - t3, t5 - t4,
	       (unsigned long long)(s1.log_bytes - s0.log_bytes),
	       (double)ru.ru_maxrss / 1024.0,
	       after_load / 1048576.0, after_drop / 1048576.0,
	       after_reload / 1048576.0);
}

/* The free list checked against every tree (engine/freecheck.c): a
 * small table dropped so that the list is not empty, the handle closed
 * and opened again; the first write transaction's begin walks every live
 * page (the reloaded table's), the second does not. */
static ut_db *bench_freecheck(ut_db *db, const char *path,
			      const ut_options *o)
{
	static char val[1000];
	ut_table *tb;
	ut_txn *t;
	double t0, t1, t2, t3, t4;

	memset(val, 'w', sizeof(val));
	load(db, "tiny", 1000, val, sizeof(val));
	CHECK(ut_begin(db, 0, &t));
	CHECK(ut_table_open(t, "tiny", 0, &tb));
	CHECK(ut_table_drop(t, tb));
	CHECK(ut_commit(t));
	CHECK(ut_close(db));
	t0 = now();
	CHECK(ut_open(path, o, &db));
	t1 = now();
	CHECK(ut_begin(db, 0, &t));
	t2 = now();
	ut_abort(t);
	t3 = now();
	CHECK(ut_begin(db, 0, &t));
	t4 = now();
	ut_abort(t);
	printf("the free list checked against every tree (%.1f MiB file, %u "
	       "pages; the pages are in the OS page cache):\n\n"
	       "| what | value |\n|---|---:|\n"
	       "| open | %.3f s |\n"
	       "| first write transaction's begin (the check) | %.3f s |\n"
	       "| second begin | %.6f s |\n\n",
	       fsize(path) / 1048576.0, (unsigned)(fsize(path) / UT_PAGE_SIZE),
	       t1 - t0, t2 - t1, t4 - t3);
	return db;
}

int bench_tables_run(const char *dir, size_t cache_mib, long ntables,
		     long opens, long long bytes)
{
	char path[1024];
	ut_options o;
	ut_db *db;

	snprintf(path, sizeof(path), "%s/bench-tables.db", dir);
	for (const char *s = ""; s; s = *s ? NULL : "-wal") {
		char p[1100];

		snprintf(p, sizeof(p), "%s%s", path, s);
		unlink(p);
		if (!*s) {
			snprintf(p, sizeof(p), "%s-dw", path);
			unlink(p);
		}
	}
	ut_options_default(&o);
	o.cache_bytes = cache_mib << 20;
	o.sync = 0;
	CHECK(ut_open(path, &o, &db));
	printf("named tables: cache %zu MiB, sync off, %s\n\n", cache_mib, path);
	bench_open(db, ntables, opens);
	bench_drop(db, path, bytes);
	db = bench_freecheck(db, path, &o);
	CHECK(ut_close(db));
	for (const char *s = ""; s; s = *s ? NULL : "-wal") {
		char p[1100];

		snprintf(p, sizeof(p), "%s%s", path, s);
		unlink(p);
	}
	return 0;
}

/*
 * bench/kv_profile.c - bench_kv's untorn workload (the same keys, values,
 * 1000 operations per transaction and cache) in one process, each phase a
 * function of its own, for instruction counts that do not depend on the
 * machine's load: bench_kv's random gets and full scan miss the cache
 * (a million keys, ~140 MiB of pages, 64 MiB of cache), unlike
 * get_profile's in-cache gets.  Under callgrind only the get and scan
 * phases are instrumented (the load and the updates run uninstrumented):
 *
 *   kv_profile DB N CACHE_MIB
 *   valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no \
 *       --toggle-collect=get_phase --toggle-collect=scan_phase \
 *       kv_profile /var/tmp/x.db 200000 13
 *   callgrind_annotate --inclusive=yes callgrind.out.PID | grep _phase
 *
 * Instructions per get = get_phase's inclusive count / N; per scan step =
 * scan_phase's / N.  DB is created anew (and removed after).  It builds
 * against any version of the library that has ut_get and cursors, so the
 * same program measures a build from before a change.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "untorn.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

#define BATCH 1000

/* bench_kv.c's keys (its default seed, 1), values and random order */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void make_key(long i, unsigned char *k)
{
	uint64_t a = mix64((uint64_t)i ^ 1), b = mix64(a + 0x9e3779b97f4a7c15ull);

	for (int j = 0; j < 8; j++) {
		k[j] = (unsigned char)(a >> (56 - 8 * j));
		k[8 + j] = (unsigned char)(b >> (56 - 8 * j));
	}
}

static void make_val(long i, int version, const unsigned char *k, unsigned char *v)
{
	uint64_t x = mix64((uint64_t)i * 31 + (uint64_t)version);

	memcpy(v, k, 16);
	for (int j = 16; j < 100; j++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		v[j] = (unsigned char)(x >> 56);
	}
}

static uint64_t rs = 1 ^ 0x1234;

static long rnd_below(long n)
{
	rs += 0x9e3779b97f4a7c15ull;
	return (long)(mix64(rs) % (uint64_t)n);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "kv_profile: %s: %s: %s\n", what, ut_strerror(rc),
		ut_errdetail());
	exit(1);
}

/* puts of keys i (load: in order of i, version 0) or random ones */
static void put_phase(ut_db *db, long n, int update)
{
	unsigned char k[16], v[100];
	ut_txn *t = NULL;
	int rc;

	for (long i = 0; i < n; i++) {
		long j = update ? rnd_below(n) : i;

		if (!t && (rc = ut_begin(db, 0, &t)))
			die("begin", rc);
		make_key(j, k);
		make_val(j, update, k, v);
		if ((rc = ut_put(t, k, 16, v, 100)))
			die("put", rc);
		if ((i + 1) % BATCH == 0 || i + 1 == n) {
			if ((rc = ut_commit(t)))
				die("commit", rc);
			t = NULL;
		}
	}
}

__attribute__((noinline)) void get_phase(ut_db *db, long n)
{
	unsigned char k[16];
	ut_txn *t = NULL;
	int rc;

	for (long i = 0; i < n; i++) {
		void *val;
		size_t vl;

		if (!t && (rc = ut_begin(db, UT_RDONLY, &t)))
			die("begin", rc);
		make_key(rnd_below(n), k);
		if ((rc = ut_get(t, k, 16, &val, &vl)))
			die("get", rc);
		if (vl != 100 || memcmp(val, k, 16))
			die("get: wrong value", UT_OK);
		free(val);
		if ((i + 1) % BATCH == 0 || i + 1 == n) {
			ut_abort(t);
			t = NULL;
		}
	}
}

__attribute__((noinline)) long scan_phase(ut_db *db)
{
	ut_txn *t;
	ut_cursor *c;
	long n = 0;
	int rc;

	if ((rc = ut_begin(db, UT_RDONLY, &t)) || (rc = ut_cursor_open(t, &c)))
		die("scan", rc);
	for (rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c)) {
		const void *k, *v;
		size_t kl, vl;

		if ((rc = ut_cursor_get(c, &k, &kl, &v, &vl)))
			break;
		n += vl == 100;
	}
	if (rc != UT_NOTFOUND)
		die("scan", rc);
	ut_cursor_close(c);
	ut_abort(t);
	return n;
}

int main(int argc, char **argv)
{
	ut_options o;
	ut_db *db;
	char wal[4096], dw[4096];
	long n;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: kv_profile DB N CACHE_MIB\n");
		return 2;
	}
	n = atol(argv[2]);
	snprintf(wal, sizeof(wal), "%s-wal", argv[1]);
	snprintf(dw, sizeof(dw), "%s-dw", argv[1]);
	unlink(argv[1]);
	unlink(wal);
	unlink(dw);
	ut_options_default(&o);
	o.sync = 0;
	o.cache_bytes = (size_t)atol(argv[3]) << 20;
	if ((rc = ut_open(argv[1], &o, &db)))
		die("open", rc);
	put_phase(db, n, 0);
	CALLGRIND_START_INSTRUMENTATION;
	get_phase(db, n);
	CALLGRIND_STOP_INSTRUMENTATION;
	put_phase(db, n, 1);
	CALLGRIND_START_INSTRUMENTATION;
	long seen = scan_phase(db);
	CALLGRIND_STOP_INSTRUMENTATION;
	if ((rc = ut_close(db)))
		die("close", rc);
	unlink(argv[1]);
	unlink(wal);
	unlink(dw);
	printf("kv_profile: %ld keys, %ld scanned\n", n, seen);
	return seen != n;
}

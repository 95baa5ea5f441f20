/*
 * bench/commit_profile.c - bench_snapshot's writer (transactions of 10
 * random updates, sync=0, its keys and values, a 64 MiB cache) in one
 * thread, alone or beside bench_snapshot's scanning reader (one thread
 * holding one snapshot for the whole run and scanning every key again and
 * again), for an instruction count that does not depend on the machine's
 * load: run it under callgrind with commit_phase collected, and the
 * reader's scans (scan_one) if wanted: each function's inclusive count
 * is its own thread's.
 *
 *   commit_profile DB KEYS TXNS READER [LOAD]
 *       READER=1: the scanning reader runs beside the writer;
 *       LOAD=1: create DB with KEYS keys first (1000 a transaction)
 *   valgrind --tool=callgrind --toggle-collect=commit_phase \
 *       --toggle-collect=scan_one commit_profile DB 200000 10000 1
 *
 * Before the measured commit_phase, TXNS/2 transactions (not collected)
 * give every page its writer's copy and the reader its first scans;
 * instructions per commit = commit_phase's inclusive count / TXNS, per
 * scan = scan_one's / the scans printed (all of the run's; under
 * callgrind the threads take turns, so they are a count, not a rate).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "untorn.h"

#define UPDATES 10 /* per transaction, as bench_snapshot's -w default */

static long keys_n;
static unsigned char (*keys)[16];
static int stop;     /* atomic */
static long scans;   /* atomic: full scans the reader finished */

static void make_key(long i, unsigned char *k)
{
	uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
	char hex[17]; /* (8 used: keys < 2^32) */
	snprintf(hex, sizeof(hex), "%08lx", i);
	memcpy(k, &z, 8);
	memcpy(k + 8, hex, 8);
}

static void make_val(long i, int v, unsigned char *out)
{
	for (int j = 0; j < 100; j++)
		out[j] = (unsigned char)(i * 31 + v * 7 + j);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void run_txns(ut_db *db, long txns, uint64_t *s, int *v)
{
	unsigned char val[100];

	for (long t = 0; t < txns; t++) {
		ut_txn *w;

		if (ut_begin(db, 0, &w))
			abort();
		for (int i = 0; i < UPDATES; i++) {
			long k = (long)(rnd(s) % (uint64_t)keys_n);

			make_val(k, *v, val);
			if (ut_put(w, keys[k], 16, val, 100))
				abort();
		}
		if (ut_commit(w))
			abort();
		++*v;
	}
}

__attribute__((noinline)) void commit_phase(ut_db *db, long txns, uint64_t *s, int *v)
{
	run_txns(db, txns, s, v);
}

/* One full scan in the reader's snapshot (bench_snapshot's u_scan). */
__attribute__((noinline)) long scan_one(ut_txn *t)
{
	ut_cursor *c;
	long n = 0;

	if (ut_cursor_open(t, &c))
		abort();
	for (int rc = ut_cursor_seek(c, NULL, 0); rc == UT_OK; rc = ut_cursor_next(c))
		n++;
	ut_cursor_close(c);
	return n;
}

static void *reader_main(void *arg)
{
	ut_db *db = arg;
	ut_txn *t;

	if (ut_begin(db, UT_RDONLY, &t))
		abort();
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		long n = scan_one(t);

		if (n != keys_n) {
			fprintf(stderr, "scan: %ld keys, not %ld\n", n, keys_n);
			abort();
		}
		__atomic_add_fetch(&scans, 1, __ATOMIC_RELAXED);
	}
	ut_abort(t);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: commit_profile DB KEYS TXNS READER [LOAD]\n");
		return 2;
	}
	const char *path = argv[1];
	long txns = atol(argv[3]);
	int reader = atoi(argv[4]), load = argc > 5 && atoi(argv[5]);
	uint64_t s = 88172645463325252ull;
	int v = 1;
	long before, during;
	pthread_t th;
	ut_options o;
	ut_db *db;

	keys_n = atol(argv[2]);
	ut_options_default(&o);
	o.sync = 0;
	o.cache_bytes = 64u << 20;
	if (ut_open(path, &o, &db)) {
		fprintf(stderr, "open: %s\n", ut_errdetail());
		return 1;
	}
	keys = malloc((size_t)keys_n * 16);
	for (long i = 0; i < keys_n; i++)
		make_key(i, keys[i]);
	if (load) {
		unsigned char val[100];

		for (long i = 0; i < keys_n; i += 1000) {
			ut_txn *t;

			if (ut_begin(db, 0, &t))
				abort();
			for (long j = i; j < i + 1000 && j < keys_n; j++) {
				make_val(j, 0, val);
				if (ut_put(t, keys[j], 16, val, 100))
					abort();
			}
			if (ut_commit(t))
				abort();
		}
	}
	if (reader && pthread_create(&th, NULL, reader_main, db))
		abort();
	run_txns(db, txns / 2, &s, &v);
	before = __atomic_load_n(&scans, __ATOMIC_RELAXED);
	commit_phase(db, txns, &s, &v);
	during = __atomic_load_n(&scans, __ATOMIC_RELAXED) - before;
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	if (reader)
		pthread_join(th, NULL);
	printf("commits %ld; reader scans during them %ld, in all %ld\n", txns,
	       during, __atomic_load_n(&scans, __ATOMIC_RELAXED));
	if (ut_close(db)) {
		fprintf(stderr, "close: %s\n", ut_errdetail());
		return 1;
	}
	free(keys);
	return 0;
}

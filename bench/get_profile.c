/*
 * bench/get_profile.c - the in-cache get of bench_snapshot's "random
 * gets" (read transactions of 100 ut_get_ref, its keys and values) in one
 * thread, for an instruction count that does not depend on the machine's
 * load: run it under callgrind with only get_phase collected.
 *
 *   get_profile DB KEYS TXNS [LOAD]   (LOAD=1: create DB with KEYS keys first)
 *   valgrind --tool=callgrind --toggle-collect=get_phase \
 *       get_profile DB 200000 2000
 *
 * get_phase runs twice: KEYS/50 transactions to bring every page into the
 * 256 MiB cache, then TXNS; instructions per get = the collected count /
 * ((KEYS/50 + TXNS) * 100).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "untorn.h"

static void make_key(long i, unsigned char *k)
{
	uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
	char hex[17]; /* (8 used: keys < 2^32) */
	snprintf(hex, sizeof(hex), "%08lx", i);
	memcpy(k, &z, 8);
	memcpy(k + 8, hex, 8);
}

static long keys_n;
static unsigned char (*keys)[16];

__attribute__((noinline)) long get_phase(ut_db *db, long txns)
{
	uint64_t r = 88172645463325252ull;
	long bad = 0;
	for (long t = 0; t < txns; t++) {
		ut_txn *rt;
		if (ut_begin(db, UT_RDONLY, &rt))
			abort();
		for (int i = 0; i < 100; i++) {
			r ^= r << 13; r ^= r >> 7; r ^= r << 17;
			const void *v; size_t vl;
			if (ut_get_ref(rt, keys[r % keys_n], 16, &v, &vl))
				bad++;
		}
		ut_abort(rt);
	}
	return bad;
}

int main(int argc, char **argv)
{
	const char *path = argv[1];
	keys_n = atol(argv[2]);
	long txns = atol(argv[3]);
	int load = argc > 4 && atoi(argv[4]);
	ut_options o; ut_db *db;
	ut_options_default(&o);
	o.sync = 0;
	o.cache_bytes = 256u << 20;
	if (ut_open(path, &o, &db)) { fprintf(stderr, "open: %s\n", ut_errdetail()); return 1; }
	keys = malloc(keys_n * 16);
	for (long i = 0; i < keys_n; i++) make_key(i, keys[i]);
	if (load) {
		unsigned char val[100];
		for (long i = 0; i < keys_n; i += 1000) {
			ut_txn *t; ut_begin(db, 0, &t);
			for (long j = i; j < i + 1000 && j < keys_n; j++) {
				for (int b = 0; b < 100; b++) val[b] = (unsigned char)(j * 31 + b);
				ut_put(t, keys[j], 16, val, 100);
			}
			if (ut_commit(t)) abort();
		}
	}
	/* warm: every page in the cache */
	get_phase(db, keys_n / 50);
	long bad = get_phase(db, txns);
	printf("bad %ld\n", bad);
	ut_close(db);
	return bad != 0;
}

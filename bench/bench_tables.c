/*
 * bench/bench_tables.c - what named tables cost beyond their puts and gets
 * (issue 33): opening a table by name, and dropping a big one (what is
 * measured: tables_part.h; bench_kv -T prints the same beside its
 * default-table and named-table workloads).
 *
 *   bench_tables [-n TABLES] [-o OPENS] [-s SIZE] [-c CACHE_MIB] [-d DIR]
 *
 * Printed, not a test: the figures go to bench/RESULTS.md by hand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tables_part.h"

int main(int argc, char **argv)
{
	long ntables = 1000, opens = 200000;
	long long bytes = 256ll << 20;
	size_t cache_mib = 64;
	const char *dir = ".";
	int opt;

	while ((opt = getopt(argc, argv, "n:o:s:c:d:h")) != -1) {
		char *end;

		switch (opt) {
		case 'n': ntables = strtol(optarg, NULL, 10); break;
		case 'o': opens = strtol(optarg, NULL, 10); break;
		case 'c': cache_mib = strtoul(optarg, NULL, 10); break;
		case 'd': dir = optarg; break;
		case 's':
			bytes = strtoll(optarg, &end, 10);
			bytes <<= *end == 'G' ? 30 : *end == 'M' ? 20 : *end == 'K' ? 10 : 0;
			break;
		default:
			fprintf(stderr, "usage: bench_tables [-n TABLES] [-o OPENS] "
				"[-s SIZE] [-c CACHE_MIB] [-d DIR]\n");
			return 64;
		}
	}
	if (ntables < 1 || opens < 1 || bytes < 1000) {
		fprintf(stderr, "bench_tables: bad arguments\n");
		return 64;
	}
	return bench_tables_run(dir, cache_mib, ntables, opens, bytes);
}

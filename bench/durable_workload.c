/*
 * bench/durable_workload.c - the data bench_durable writes (durable.h):
 * keys from the seed, values new to every version, a thread's random
 * choices, the clock, and the preload's cache size.  Pure functions of
 * their arguments (and, for now(), of the monotonic clock).
 */
#include <string.h>
#include <time.h>

#include "durable.h"

const char *const wl_names[] = { "update", "load", "mix" };

uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Key i: 16 pseudo-random bytes, distinct for distinct i (the first 8 are
 * a bijection of i: multiply by an odd constant and xor-shift both invert). */
void make_key(uint64_t seed, long i, unsigned char *k)
{
	uint64_t x = (uint64_t)i ^ seed, b = mix64(seed + (uint64_t)i);

	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 29;
	memcpy(k, &x, 8);
	memcpy(k + 8, &b, 8);
}

void make_val(long i, uint64_t version, unsigned char *v)
{
	uint64_t s = mix64((uint64_t)i * 31 + version);

	for (int j = 0; j < VAL_LEN; j += 8) {
		s = mix64(s);
		memcpy(v + j, &s, (VAL_LEN - j) < 8 ? (size_t)(VAL_LEN - j) : 8);
	}
}

static uint64_t rnd(struct rng *r) { return mix64(r->s++); }
long rnd_below(struct rng *r, long n) { return (long)(rnd(r) % (uint64_t)n); }

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Preload only: a cache that holds the whole tree (2x the data, at least
 * 256 MiB, at most 4 GiB), so loading random keys is not an exercise in
 * eviction.  The measured runs get -c. */
size_t preload_cache(const struct cfg *c)
{
	uint64_t b = c->data_bytes * 2;

	if (b < (256ull << 20))
		b = 256ull << 20;
	if (b > (4ull << 30))
		b = 4ull << 30;
	return (size_t)b;
}

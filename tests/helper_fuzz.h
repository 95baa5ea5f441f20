/*
 * tests/helper_fuzz.h - what the file fuzz tests share (test_fuzz_files.c,
 * test_fuzz_crafted.c): deterministic randomness, whole-file read/write,
 * and running one iteration in a child process with a timeout, so that a
 * crash, a sanitizer report or a hang is an outcome, not the end of the run.
 */
#ifndef UT_TEST_HELPER_FUZZ_H
#define UT_TEST_HELPER_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64's finaliser: a well-mixed 64-bit hash of x. */
uint64_t fz_mix64(uint64_t x);

typedef struct fz_rng {
	uint64_t s;
} fz_rng;

uint64_t fz_rnd(fz_rng *r);
/* 0..n-1 (0 when n is 0). */
uint64_t fz_below(fz_rng *r, uint64_t n);
/* 1 with probability pct percent. */
int fz_chance(fz_rng *r, unsigned pct);

/* A whole file in memory; exists is 0 when it could not be opened. */
typedef struct fz_blob {
	uint8_t *p;
	size_t n;
	int exists;
} fz_blob;

fz_blob fz_slurp(const char *path);
/* Write p[0..n) as the whole file path: 0, or -1 with errno. */
int fz_spill(const char *path, const uint8_t *p, size_t n);

/* The environment variable name as a number, dflt when unset or empty. */
long fz_env_long(const char *name, long dflt);

/* Fork; the child runs child(ctx, fd), which must write exactly reslen
 * bytes to fd and _exit(0).  The parent reads them into res, waiting at
 * most timeout_s seconds.  Returns FZ_ANSWERED, or FZ_CRASH (a signal, or
 * another exit: a sanitizer report) / FZ_HANG (killed after the timeout)
 * with why filled in. */
enum { FZ_ANSWERED = 0, FZ_CRASH = 1, FZ_HANG = 2 };
int fz_run_child(void (*child)(void *ctx, int fd), void *ctx, void *res,
		 size_t reslen, long timeout_s, char *why, size_t whylen);

#endif /* UT_TEST_HELPER_FUZZ_H */

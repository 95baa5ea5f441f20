/*
 * bench/child.h - run one measurement in a child process, so that each
 * engine's peak RSS and I/O counters are its own.
 */
#ifndef BENCH_CHILD_H
#define BENCH_CHILD_H

#include <stddef.h>

/* Fork; the child runs fn(arg, res) on a zeroed copy of res and sends the
 * size bytes of res back through a pipe.  Returns fn's return value, or -1
 * with res zeroed and why[] saying how the child died. */
int bench_run_child(int (*fn)(void *arg, void *res), void *arg, void *res,
		    size_t size, char *why, size_t whylen);

#endif /* BENCH_CHILD_H */

// SPDX-License-Identifier: MIT
/*
 * guest_common.h - what atomic_tests and race_tests share: the check line
 * format both print (and run.sh parses), errno names, aligned buffers and
 * the shutdown ioctl.  One definition, in guest_common.c.
 *
 * Line format, one per check:
 *     <check>: PASS got=<v> want=<v>  /  FAIL ...  /  INFO got=<v>  /  SKIP why=<r>
 * A want value may list alternatives separated by '|'.
 */
#ifndef GUEST_COMMON_H
#define GUEST_COMMON_H

#include <stddef.h>
#include <sys/ioctl.h>
#include <linux/types.h>

#define KiB 1024

#ifndef FS_IOC_GOINGDOWN
#define FS_IOC_GOINGDOWN _IOR('X', 125, __u32)
/* Open (creating) MNT/FNAME read-write with extra flags; its path in path. */
int open_test_file(const char *mnt, const char *fname, int flags, char *path, size_t plen);

#endif
#define GOINGDOWN_NOLOGFLUSH 2	/* XFS_FSOP_GOING_FLAGS_ / EXT4_GOING_FLAGS_ */

/* Checks passed and failed so far (the exit status and the summary). */
extern int n_pass, n_fail;

/* PASS when got is want or one of its '|'-separated alternatives. */
void check(const char *name, const char *got, const char *want);
void checku(const char *name, unsigned long long got, unsigned long long want);
void info(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void skip(const char *name, const char *why);

/* "EINVAL", ... ("errno<N>" when unnamed); a per-thread buffer. */
const char *errname(int e);

/* A buffer aligned for O_DIRECT (64 KiB), filled with the byte pattern;
 * exits on failure. */
void *abuf(size_t len, int pattern);

/* Open (creating) MNT/FNAME read-write with extra flags; its path in path. */
int open_test_file(const char *mnt, const char *fname, int flags, char *path, size_t plen);

#endif

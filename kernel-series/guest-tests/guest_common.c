// SPDX-License-Identifier: MIT
/*
 * guest_common.c - the helpers atomic_tests and race_tests share (see
 * guest_common.h): check lines, errno names, aligned buffers.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest_common.h"

int n_pass, n_fail;

static int want_matches(const char *got, const char *want)
{
	const char *p = want;
	size_t glen = strlen(got);

	while (*p) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == glen && strncmp(p, got, len) == 0)
			return 1;
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

void check(const char *name, const char *got, const char *want)
{
	if (want_matches(got, want)) {
		n_pass++;
		printf("%s: PASS got=%s want=%s\n", name, got, want);
	} else {
		n_fail++;
		printf("%s: FAIL got=%s want=%s\n", name, got, want);
	}
	fflush(stdout);
}

void checku(const char *name, unsigned long long got, unsigned long long want)
{
	char g[32], w[32];

	snprintf(g, sizeof(g), "%llu", got);
	snprintf(w, sizeof(w), "%llu", want);
	check(name, g, w);
}

void info(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s: INFO got=", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void skip(const char *name, const char *why)
{
	printf("%s: SKIP why=%s\n", name, why);
	fflush(stdout);
}

const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	static __thread char buf[32];

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "errno%d", e);
	return buf;
}

void *abuf(size_t len, int pattern)
{
	void *p = aligned_alloc(64 * KiB, len < 64 * KiB ? 64 * KiB : len);

	if (!p) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(p, pattern, len);
	return p;
}

int open_test_file(const char *mnt, const char *fname, int flags, char *path, size_t plen)
{
	snprintf(path, plen, "%s/%s", mnt, fname);
	return open(path, O_RDWR | O_CREAT | flags, 0644);
}

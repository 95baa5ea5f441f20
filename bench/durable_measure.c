/*
 * bench/durable_measure.c - what a run measures beside the engines' own
 * counters (durable.h): its transactions' latency percentiles, the
 * figures of the block device under the databases, and the peak RSS of
 * the process running it.  Unreadable /proc and /sys files give zeros
 * (sysstat.h), never a failed run.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "durable.h"

/* ------------------------------------------------------------ latencies */

void lat_add(struct lat *l, double us)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 65536;
		float *nv = realloc(l->v, nc * sizeof(*nv));

		if (!nv)
			return;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n++] = (float)us;
}
static int fcmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}
void lat_done(struct lat *l, struct result *r)
{
	if (!l->n)
		return;
	qsort(l->v, l->n, sizeof(float), fcmp);
	r->p50_us = l->v[l->n / 2];
	r->p99_us = l->v[(size_t)((double)l->n * 0.99)];
	r->p999_us = l->v[(size_t)((double)l->n * 0.999)];
	r->max_us = l->v[l->n - 1];
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ------------------------------------------------------------ device, RSS */

/* The block device holding dir: /sys/dev/block/MAJ:MIN/stat (a partition's
 * stat has the same fields). */

/* BENCH_DEVSTAT (colon-separated stat files, summed) names the devices
 * when st_dev does not: XFS realtime file data lives on the rt device. */
void devstat_read(const char *dir, struct devstat *d)
{
	const char *list = getenv("BENCH_DEVSTAT");
	char p[256];

	memset(d, 0, sizeof(*d));
	if (list && *list) {
		for (const char *s = list, *e; *s; s = *e ? e + 1 : e) {
			e = s + strcspn(s, ":");
			snprintf(p, sizeof(p), "%.*s", (int)(e - s), s);
			devstat_add(p, d);
		}
		return;
	}
	devstat_path(dir, p, sizeof(p));
	devstat_add(p, d);
}

void rss_reset(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, "5", 1) != 1) { /* peak RSS stays process-lifetime */ }
		close(fd);
	}
}

double rss_peak_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	double v = 0;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			v = atof(line + 6);
	if (f)
		fclose(f);
	return v;
}

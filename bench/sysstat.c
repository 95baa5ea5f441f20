/*
 * bench/sysstat.c - what the benchmarks read from /sys and /proc (contract
 * in sysstat.h).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "sysstat.h"

void devstat_add(const char *stat_path, struct devstat *d)
{
	unsigned long long f[17] = { 0 };
	FILE *fp = *stat_path ? fopen(stat_path, "r") : NULL;

	if (!fp)
		return;
	for (int i = 0; i < 17; i++)
		if (fscanf(fp, "%llu", &f[i]) != 1)
			break;
	fclose(fp);
	d->wreqs += (double)f[4];
	d->wbytes += (double)f[6] * 512;
	d->flushes += (double)f[15];
	d->rreqs += (double)f[0];
}

void devstat_path(const char *path, char *buf, size_t n)
{
	struct stat st;
	dev_t dev;

	buf[0] = 0;
	if (stat(path, &st))
		return;
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	snprintf(buf, n, "/sys/dev/block/%u:%u/stat", major(dev), minor(dev));
}

void cpu_read(double *busy, double *total)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	*busy = *total = 0;
	if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
			&v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
		for (int i = 0; i < 8; i++)
			*total += (double)v[i];
		*busy = *total - (double)v[3] - (double)v[4];
	}
	if (f)
		fclose(f);
}

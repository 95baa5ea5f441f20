/*
 * bench/sysstat.h - what the benchmarks read from /sys and /proc.
 *
 * Contract: every reader fills its output with zeros when the file is
 * missing or unreadable (a container, a pseudo filesystem): figures then
 * show as 0 rather than failing a run.
 */
#ifndef UT_BENCH_SYSSTAT_H
#define UT_BENCH_SYSSTAT_H

#include <stddef.h>

/* Writes (and reads) at a block device since boot. */
struct devstat { double wreqs, wbytes, flushes, rreqs; };

/* Add the figures of one /sys/.../stat file to *d. */
void devstat_add(const char *stat_path, struct devstat *d);
/* The stat file of the block device holding path -- or being it, for a
 * device node -- into buf ("" when path does not exist). */
void devstat_path(const char *path, char *buf, size_t n);
/* Busy and total jiffies of all CPUs (/proc/stat; idle and iowait count as
 * not busy): in a VM, whether the CPUs or the disk set the pace. */
void cpu_read(double *busy, double *total);

#endif

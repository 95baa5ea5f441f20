/*
 * engine/pace.h - how many pages the page cleaner may put on the device
 * at once (issue 23): a bound from the device's measured write bandwidth
 * and a latency target, so that a commit's log write issued while a
 * cleaner batch is on the device waits for at most that batch, about
 * UT_PACE_TARGET_NS of device time (Linux's writeback throttling and
 * RocksDB's rate limiter bound the same thing).
 *
 * Contract: after each batch the cleaner reports its pages, how long the
 * strategy's write_pages took (wall clock) and whether a commit was
 * waiting for the log when it ended; the pacer keeps a bandwidth estimate
 * (a slower batch sets it at once, a faster one moves it by a quarter of
 * the difference) and sets the next batch's size:
 *
 *   bound = bandwidth * UT_PACE_TARGET_NS / page size, within [1, max]
 *   next  = min(bound, waited && took >= target / 2 ? pages + 1
 *                                                   : 2 * pages)
 *
 * so a batch shrinks to the bound at once, and near the target grows
 * fast only while no commit waits, by one page a batch while one does.  The
 * time of a small batch includes the device's fixed latency, so the
 * bandwidth it shows is low and the bound converges on the size whose
 * device time is the target.  Pure arithmetic, no clock and no lock: its
 * owner (the cleaner thread) serializes the calls.
 */
#ifndef UT_PACE_H
#define UT_PACE_H

#include <stddef.h>
#include <stdint.h>

/* A batch's device time the cleaner aims at.  At 1.5 MB/s (the VM
 * benchmark's device) that is one or two 16 KiB pages; on a local NVMe
 * disk a full batch fits well within it. */
#define UT_PACE_TARGET_NS 20000000ull
/* The first batch, before anything was measured: 64 KiB, a few
 * milliseconds on the slowest device the benchmark models. */
#define UT_PACE_FIRST 4u

typedef struct ut_pace {
	double bw;     /* bytes per second, estimated; 0 until a batch ran */
	size_t pages;  /* the next batch's size, 1..max */
	size_t max;    /* the cleaner's batch capacity */
} ut_pace;

void ut_pace_init(ut_pace *pc, size_t max);
/* A batch of n pages (n >= 1) took ns nanoseconds; waited: a commit was
 * waiting for the log when it ended.  Sets pc->pages for the next one. */
void ut_pace_done(ut_pace *pc, size_t n, uint64_t ns, int waited);

#endif /* UT_PACE_H */

/*
 * bench/throttle_vfs.h - the VM benchmark's device model on the host:
 * a ut_vfs over the POSIX one whose writes pass QEMU's write throttle
 * (bench/vm-bench.sh: throttling.bps-write, iops-write per iops-size
 * 16 KiB; reads not throttled; flushes free, as with cache.no-flush=on:
 * a sync is not passed on, so files written under it are not durable,
 * and the host disk's flushes stay out of the latencies).
 *
 * Contract: every write request (each member of a write_batch is one, as
 * each is one NVMe command in the guest) is admitted in arrival order, as
 * QEMU's throttle does (leaky buckets, a FIFO of waiting requests): when
 * the bytes bucket is at most bps/10 full and the operations bucket at
 * most iops/10, then both fill by the request (bytes; its size in 16 KiB
 * units, at least 1) and leak at bps and iops per second.  A call
 * returns once its last request is admitted and written.  With
 * fake_atomic, a direct file reports a 4..16 KiB atomic write unit and
 * UT_WRITE_ATOMIC is dropped before the POSIX write (a host without
 * atomic writes runs atomic mode's I/O pattern, not its guarantee: for
 * latency only).
 */
#ifndef BENCH_THROTTLE_VFS_H
#define BENCH_THROTTLE_VFS_H

#include "ut_io.h"

ut_vfs *throttle_vfs(double bps, double iops, int fake_atomic);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * atomic_compat.h - uapi bits for atomic writes that Debian 12's glibc 2.36
 * and linux-libc-dev predate.  Values and layout copied from Linux 6.12
 * include/uapi/linux/stat.h and include/uapi/linux/fs.h.
 *
 * We use our own struct (untorn_statx) and call syscall(SYS_statx) directly so
 * we never depend on which struct statx the system headers happen to define.
 */
#ifndef UNTORN_ATOMIC_COMPAT_H
#define UNTORN_ATOMIC_COMPAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#ifndef SYS_statx
#define SYS_statx 332 /* x86_64 */
#endif

#define UNTORN_STATX_TYPE        0x00000001U
#define UNTORN_STATX_MODE        0x00000002U
#define UNTORN_STATX_BASIC_STATS 0x000007ffU
#define UNTORN_STATX_DIOALIGN    0x00002000U
#define UNTORN_STATX_WRITE_ATOMIC 0x00010000U  /* Want/got atomic_write_* fields */
#define UNTORN_STATX_ATTR_WRITE_ATOMIC 0x00400000ULL /* File supports atomic write operations */

#ifndef RWF_ATOMIC
#define RWF_ATOMIC 0x00000040 /* per-IO, write atomically */
#endif

struct untorn_statx_timestamp {
	int64_t  tv_sec;
	uint32_t tv_nsec;
	int32_t  __reserved;
};

struct untorn_statx {
	/* 0x00 */
	uint32_t stx_mask;
	uint32_t stx_blksize;
	uint64_t stx_attributes;
	/* 0x10 */
	uint32_t stx_nlink;
	uint32_t stx_uid;
	uint32_t stx_gid;
	uint16_t stx_mode;
	uint16_t __spare0[1];
	/* 0x20 */
	uint64_t stx_ino;
	uint64_t stx_size;
	uint64_t stx_blocks;
	uint64_t stx_attributes_mask;
	/* 0x40 */
	struct untorn_statx_timestamp stx_atime;
	struct untorn_statx_timestamp stx_btime;
	struct untorn_statx_timestamp stx_ctime;
	struct untorn_statx_timestamp stx_mtime;
	/* 0x80 */
	uint32_t stx_rdev_major;
	uint32_t stx_rdev_minor;
	uint32_t stx_dev_major;
	uint32_t stx_dev_minor;
	/* 0x90 */
	uint64_t stx_mnt_id;
	uint32_t stx_dio_mem_align;
	uint32_t stx_dio_offset_align;
	/* 0xa0 */
	uint64_t stx_subvol;
	uint32_t stx_atomic_write_unit_min;
	uint32_t stx_atomic_write_unit_max;
	/* 0xb0 */
	uint32_t stx_atomic_write_segments_max;
	uint32_t __spare1[1];
	/* 0xb8 */
	uint64_t __spare3[9];
	/* 0x100 */
};

_Static_assert(sizeof(struct untorn_statx) == 0x100, "statx size");
_Static_assert(offsetof(struct untorn_statx, stx_attributes) == 0x08, "stx_attributes");
_Static_assert(offsetof(struct untorn_statx, stx_mnt_id) == 0x90, "stx_mnt_id");
_Static_assert(offsetof(struct untorn_statx, stx_atomic_write_unit_min) == 0xa8, "unit_min");
_Static_assert(offsetof(struct untorn_statx, stx_atomic_write_unit_max) == 0xac, "unit_max");
_Static_assert(offsetof(struct untorn_statx, stx_atomic_write_segments_max) == 0xb0, "segments_max");

#endif

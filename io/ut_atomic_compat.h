/*
 * io/ut_atomic_compat.h - statx atomic-write fields and RWF_ATOMIC for
 * toolchains that predate them.
 *
 * Debian 12 ships glibc 2.36 and Linux 6.1 uapi headers: no
 * STATX_WRITE_ATOMIC, no STATX_ATTR_WRITE_ATOMIC, no RWF_ATOMIC, and a
 * struct statx without stx_atomic_write_*.  Everything missing is defined
 * here, taken from the Linux uapi (include/uapi/linux/stat.h and
 * include/uapi/linux/fs.h, 6.11 and later; stx_atomic_write_unit_max_opt
 * from 6.16).  Each macro is guarded with
 * #ifndef so newer headers win.  The structure is our own name (struct
 * ut_statx) so it never collides with the libc's struct statx; it is filled
 * by calling the statx system call directly (ut_statx_call()).
 *
 * This is the only place in the tree that knows these numbers.
 */
#ifndef UT_ATOMIC_COMPAT_H
#define UT_ATOMIC_COMPAT_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* include/uapi/linux/stat.h */
#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x00002000U /* want/got direct I/O alignment info (6.1) */
#endif
#ifndef STATX_WRITE_ATOMIC
#define STATX_WRITE_ATOMIC 0x00010000U /* want/got atomic_write_* fields (6.11) */
#endif
#ifndef STATX_ATTR_WRITE_ATOMIC
#define STATX_ATTR_WRITE_ATOMIC 0x00400000 /* [I] file supports atomic write operations */
#endif

/* include/uapi/linux/fs.h */
#ifndef RWF_ATOMIC
#define RWF_ATOMIC 0x00000040 /* per-IO: write untorn or not at all (6.11) */
#endif

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

#ifndef SYS_statx
#if defined(__x86_64__)
#define SYS_statx 332
#elif defined(__aarch64__)
#define SYS_statx 291
#else
#error "SYS_statx unknown for this architecture"
#endif
#endif

/* struct statx_timestamp, uapi */
struct ut_statx_timestamp {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t __reserved;
};

/* struct statx, uapi layout of Linux 6.16 (256 bytes).  Older kernels zero
 * the fields they do not know, so unit_max_opt reads 0 ("no slower range"). */
struct ut_statx {
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
	struct ut_statx_timestamp stx_atime;
	struct ut_statx_timestamp stx_btime;
	struct ut_statx_timestamp stx_ctime;
	struct ut_statx_timestamp stx_mtime;
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
	uint32_t stx_dio_read_offset_align;     /* 6.14+ (STATX_DIO_READ_ALIGN) */
	/* 0xb8 */
	uint32_t stx_atomic_write_unit_max_opt; /* 6.16+, under STATX_WRITE_ATOMIC;
						 * 0 = no slower range */
	uint32_t __spare2[1];
	/* 0xc0 */
	uint64_t __spare3[8];
	/* 0x100 */
};

_Static_assert(sizeof(struct ut_statx_timestamp) == 16, "statx_timestamp");
_Static_assert(offsetof(struct ut_statx, stx_attributes) == 0x08, "stx_attributes");
_Static_assert(offsetof(struct ut_statx, stx_mode) == 0x1c, "stx_mode");
_Static_assert(offsetof(struct ut_statx, stx_ino) == 0x20, "stx_ino");
_Static_assert(offsetof(struct ut_statx, stx_attributes_mask) == 0x38, "stx_attributes_mask");
_Static_assert(offsetof(struct ut_statx, stx_atime) == 0x40, "stx_atime");
_Static_assert(offsetof(struct ut_statx, stx_rdev_major) == 0x80, "stx_rdev_major");
_Static_assert(offsetof(struct ut_statx, stx_mnt_id) == 0x90, "stx_mnt_id");
_Static_assert(offsetof(struct ut_statx, stx_dio_mem_align) == 0x98, "stx_dio_mem_align");
_Static_assert(offsetof(struct ut_statx, stx_dio_offset_align) == 0x9c, "stx_dio_offset_align");
_Static_assert(offsetof(struct ut_statx, stx_subvol) == 0xa0, "stx_subvol");
_Static_assert(offsetof(struct ut_statx, stx_atomic_write_unit_min) == 0xa8,
	       "stx_atomic_write_unit_min");
_Static_assert(offsetof(struct ut_statx, stx_atomic_write_unit_max) == 0xac,
	       "stx_atomic_write_unit_max");
_Static_assert(offsetof(struct ut_statx, stx_atomic_write_segments_max) == 0xb0,
	       "stx_atomic_write_segments_max");
_Static_assert(offsetof(struct ut_statx, stx_dio_read_offset_align) == 0xb4,
	       "stx_dio_read_offset_align");
_Static_assert(offsetof(struct ut_statx, stx_atomic_write_unit_max_opt) == 0xb8,
	       "stx_atomic_write_unit_max_opt");
_Static_assert(offsetof(struct ut_statx, __spare3) == 0xc0, "__spare3");
_Static_assert(sizeof(struct ut_statx) == 256, "struct statx is 256 bytes");

/* statx(2) through syscall(), so the libc's struct does not matter.
 * Returns 0 or -1 with errno set. */
static inline int ut_statx_call(int dirfd, const char *path, int flags,
				unsigned mask, struct ut_statx *out)
{
	return (int)syscall(SYS_statx, dirfd, path, flags, mask, out);
}

#endif /* UT_ATOMIC_COMPAT_H */

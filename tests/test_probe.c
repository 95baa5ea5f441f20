/*
 * tests/test_probe.c - the statx compat header matches the uapi, and
 * ut_probe_atomic reports exactly what statx says on this host.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ut_atomic_compat.h"
#include "ut_io.h"

static char dir[512];

static int setup(void **state)
{
	const char *t = getenv("UT_TMPDIR");
	char cmd[600];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/probe.%d", t && *t ? t : "build/tmp",
		 (int)getpid());
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_uapi_constants(void **state)
{
	(void)state;
	assert_int_equal(STATX_WRITE_ATOMIC, 0x00010000U);
	assert_int_equal(STATX_ATTR_WRITE_ATOMIC, 0x00400000);
	assert_int_equal(RWF_ATOMIC, 0x00000040);
	assert_int_equal(STATX_DIOALIGN, 0x00002000U);
}

static void test_struct_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct ut_statx), 256);
	assert_int_equal(offsetof(struct ut_statx, stx_mask), 0x00);
	assert_int_equal(offsetof(struct ut_statx, stx_attributes), 0x08);
	assert_int_equal(offsetof(struct ut_statx, stx_ino), 0x20);
	assert_int_equal(offsetof(struct ut_statx, stx_size), 0x28);
	assert_int_equal(offsetof(struct ut_statx, stx_attributes_mask), 0x38);
	assert_int_equal(offsetof(struct ut_statx, stx_mtime), 0x70);
	assert_int_equal(offsetof(struct ut_statx, stx_dev_major), 0x88);
	assert_int_equal(offsetof(struct ut_statx, stx_mnt_id), 0x90);
	assert_int_equal(offsetof(struct ut_statx, stx_dio_offset_align), 0x9c);
	assert_int_equal(offsetof(struct ut_statx, stx_atomic_write_unit_min), 0xa8);
	assert_int_equal(offsetof(struct ut_statx, stx_atomic_write_unit_max), 0xac);
	assert_int_equal(offsetof(struct ut_statx, stx_atomic_write_segments_max),
			 0xb0);
	assert_int_equal(offsetof(struct ut_statx, stx_dio_read_offset_align), 0xb4);
	assert_int_equal(offsetof(struct ut_statx, stx_atomic_write_unit_max_opt),
			 0xb8);
	/* The fields glibc knows sit where glibc puts them. */
	assert_int_equal(sizeof(struct statx), 256);
	assert_int_equal(offsetof(struct ut_statx, stx_attributes),
			 offsetof(struct statx, stx_attributes));
	assert_int_equal(offsetof(struct ut_statx, stx_size),
			 offsetof(struct statx, stx_size));
	assert_int_equal(offsetof(struct ut_statx, stx_mtime),
			 offsetof(struct statx, stx_mtime));
	assert_int_equal(offsetof(struct ut_statx, stx_dev_minor),
			 offsetof(struct statx, stx_dev_minor));
}

/* The syscall through ut_statx fills the basic fields like glibc's statx. */
static void test_statx_call_agrees_with_glibc(void **state)
{
	char path[600];
	struct ut_statx ux;
	struct statx gx;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "12345", 5), 5);
	memset(&ux, 0xee, sizeof(ux));
	assert_int_equal(ut_statx_call(fd, "", AT_EMPTY_PATH,
				       STATX_BASIC_STATS | STATX_WRITE_ATOMIC, &ux),
			 0);
	assert_int_equal(statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &gx), 0);
	assert_int_equal(ux.stx_size, 5);
	assert_int_equal(ux.stx_ino, gx.stx_ino);
	assert_int_equal(ux.stx_mode, gx.stx_mode);
	assert_int_equal(ux.stx_mtime.tv_sec, gx.stx_mtime.tv_sec);
	close(fd);
}

static void expect_matches_statx(const char *what, const ut_atomic_info *ai)
{
	struct ut_statx sx;

	memset(&sx, 0, sizeof(sx));
	assert_int_equal(ut_statx_call(AT_FDCWD, what, 0, STATX_WRITE_ATOMIC, &sx), 0);
	print_message("statx %s: mask %#x attributes %#llx attributes_mask %#llx "
		      "atomic unit %u..%u segments %u => supported %d "
		      "mask_missing %d\n", what, sx.stx_mask,
		      (unsigned long long)sx.stx_attributes,
		      (unsigned long long)sx.stx_attributes_mask,
		      sx.stx_atomic_write_unit_min, sx.stx_atomic_write_unit_max,
		      sx.stx_atomic_write_segments_max, ai->supported,
		      ai->mask_missing);
	assert_int_equal(ai->mask_missing, !(sx.stx_mask & STATX_WRITE_ATOMIC));
	assert_int_equal(ai->supported,
			 (sx.stx_mask & STATX_WRITE_ATOMIC) &&
			 (sx.stx_attributes & STATX_ATTR_WRITE_ATOMIC));
	assert_int_equal(ai->statx_errno, 0);
	if (!ai->mask_missing) {
		assert_int_equal(ai->unit_min, sx.stx_atomic_write_unit_min);
		assert_int_equal(ai->unit_max, sx.stx_atomic_write_unit_max);
		assert_int_equal(ai->segments_max, sx.stx_atomic_write_segments_max);
	}
}

static void test_probe_existing_file(void **state)
{
	char path[600];
	ut_atomic_info ai, fi;
	ut_file *f = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/data", dir);
	assert_int_equal(ut_vfs_posix()->open(ut_vfs_posix(), path,
					      UT_OPEN_CREATE | UT_OPEN_DIRECT, &f),
			 UT_OK);
	memset(&ai, 0x55, sizeof(ai));
	assert_int_equal(ut_probe_atomic(path, &ai), UT_OK);
	expect_matches_statx(path, &ai);
	/* The open file's atomic_info says the same. */
	memset(&fi, 0x55, sizeof(fi));
	assert_int_equal(ut_file_atomic_info(f, &fi), UT_OK);
	assert_memory_equal(&ai, &fi, sizeof(ai));
	assert_int_equal(ut_atomic_fits(&ai, UT_PAGE_SIZE),
			 ai.supported && ai.unit_min <= UT_PAGE_SIZE &&
			 UT_PAGE_SIZE <= ai.unit_max);
	ut_file_close(f);
}

static void test_probe_missing_file_uses_parent(void **state)
{
	char path[600];
	ut_atomic_info ai;

	(void)state;
	snprintf(path, sizeof(path), "%s/not-yet", dir);
	memset(&ai, 0x55, sizeof(ai));
	assert_int_equal(ut_probe_atomic(path, &ai), UT_OK);
	expect_matches_statx(dir, &ai);
	snprintf(path, sizeof(path), "%s/no/such/dir/file", dir);
	assert_int_equal(ut_probe_atomic(path, &ai), UT_NOTFOUND);
	assert_int_equal(ai.statx_errno, ENOENT);
	assert_int_equal(ai.supported, 0);
	assert_int_equal(ut_probe_atomic(NULL, &ai), UT_EINVAL);
}

static void test_probe_tmpfs(void **state)
{
	ut_atomic_info ai;

	(void)state;
	if (access("/dev/shm", F_OK) != 0)
		skip();
	assert_int_equal(ut_probe_atomic("/dev/shm", &ai), UT_OK);
	expect_matches_statx("/dev/shm", &ai);
}

static void test_atomic_fits(void **state)
{
	ut_atomic_info ai = { .supported = 1, .unit_min = 4096, .unit_max = 65536,
			      .segments_max = 1 };

	(void)state;
	assert_true(ut_atomic_fits(&ai, 4096));
	assert_true(ut_atomic_fits(&ai, 16384));
	assert_true(ut_atomic_fits(&ai, 65536));
	assert_false(ut_atomic_fits(&ai, 2048));
	assert_false(ut_atomic_fits(&ai, 131072));
	assert_false(ut_atomic_fits(&ai, 12288)); /* not a power of two */
	assert_false(ut_atomic_fits(&ai, 0));
	ai.unit_max = 4096;
	assert_false(ut_atomic_fits(&ai, 16384));
	ai.unit_max = 65536;
	ai.supported = 0;
	assert_false(ut_atomic_fits(&ai, 16384));
	assert_false(ut_atomic_fits(NULL, 16384));
}

/* A faked statx reply laid out byte by byte as a 6.16 kernel writes it, so
 * a wrong field offset in the compat header shows up as a wrong value. */
static void fake_statx(struct ut_statx *sx, uint32_t attr, uint32_t unit_min,
		       uint32_t unit_max, uint32_t unit_max_opt)
{
	unsigned char *raw = (unsigned char *)sx;
	uint32_t mask = STATX_WRITE_ATOMIC, one = 1, dio_read_align = 512;
	uint64_t attributes = attr;

	memset(sx, 0, sizeof(*sx));
	memcpy(raw + 0x00, &mask, 4);
	memcpy(raw + 0x08, &attributes, 8);
	memcpy(raw + 0xa8, &unit_min, 4);
	memcpy(raw + 0xac, &unit_max, 4);
	memcpy(raw + 0xb0, &one, 4);
	memcpy(raw + 0xb4, &dio_read_align, 4);
	memcpy(raw + 0xb8, &unit_max_opt, 4);
}

static void test_fake_statx_unit_max_opt(void **state)
{
	struct ut_statx sx;
	ut_atomic_info ai;

	(void)state;
	/* XFS on 6.16: software atomic writes to 1 MiB, hardware to 4 KiB. */
	fake_statx(&sx, STATX_ATTR_WRITE_ATOMIC, 4096, 1 << 20, 4096);
	ut_atomic_info_from_statx(&sx, &ai);
	assert_int_equal(ai.supported, 1);
	assert_int_equal(ai.mask_missing, 0);
	assert_int_equal(ai.unit_min, 4096);
	assert_int_equal(ai.unit_max, 1 << 20);
	assert_int_equal(ai.segments_max, 1);
	assert_int_equal(ai.unit_max_opt, 4096);
	assert_true(ut_atomic_fits(&ai, UT_PAGE_SIZE));
	assert_false(ut_atomic_fast(&ai, UT_PAGE_SIZE));
	assert_true(ut_atomic_fast(&ai, 4096));
	/* Hardware path up to exactly one page: fast. */
	fake_statx(&sx, STATX_ATTR_WRITE_ATOMIC, 4096, 1 << 20, UT_PAGE_SIZE);
	ut_atomic_info_from_statx(&sx, &ai);
	assert_true(ut_atomic_fast(&ai, UT_PAGE_SIZE));
	assert_false(ut_atomic_fast(&ai, 2 * UT_PAGE_SIZE));
	/* A kernel before 6.16 leaves the field 0: only the unit range counts. */
	fake_statx(&sx, STATX_ATTR_WRITE_ATOMIC, 4096, 65536, 0);
	ut_atomic_info_from_statx(&sx, &ai);
	assert_int_equal(ai.unit_max_opt, 0);
	assert_true(ut_atomic_fast(&ai, UT_PAGE_SIZE));
	/* unit_max_opt never widens the range. */
	fake_statx(&sx, STATX_ATTR_WRITE_ATOMIC, 4096, 8192, 65536);
	ut_atomic_info_from_statx(&sx, &ai);
	assert_false(ut_atomic_fast(&ai, UT_PAGE_SIZE));
	/* Not supported at all. */
	fake_statx(&sx, 0, 4096, 65536, 65536);
	ut_atomic_info_from_statx(&sx, &ai);
	assert_int_equal(ai.supported, 0);
	assert_false(ut_atomic_fast(&ai, UT_PAGE_SIZE));
	assert_false(ut_atomic_fast(NULL, UT_PAGE_SIZE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uapi_constants),
		cmocka_unit_test(test_fake_statx_unit_max_opt),
		cmocka_unit_test(test_struct_layout),
		cmocka_unit_test(test_statx_call_agrees_with_glibc),
		cmocka_unit_test(test_probe_existing_file),
		cmocka_unit_test(test_probe_missing_file_uses_parent),
		cmocka_unit_test(test_probe_tmpfs),
		cmocka_unit_test(test_atomic_fits),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

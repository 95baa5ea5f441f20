/*
 * tests/helper_fs.c - file-system chores shared by the tests (helper_fs.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "helper_fs.h"
#include "untorn.h" /* UT_PAGE_SIZE */

void rm_tree(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	char p[1024];

	if (!dp)
		return;
	while ((e = readdir(dp))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(dp);
	rmdir(dir);
}

void remove_db_files(const char *path)
{
	static const char *const suffix[] = { "", "-wal", "-dw" };
	char s[1024];

	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		snprintf(s, sizeof(s), "%s%s", path, suffix[i]);
		unlink(s);
	}
}

char *tmp_db_path(const char *prefix, const char *name)
{
	const char *dir = getenv("UT_TMPDIR");
	char *p = malloc(1024);

	if (!p)
		abort();
	if (!dir || !*dir)
		dir = "/tmp";
	mkdir(dir, 0755);
	snprintf(p, 1024, "%s/%s-%s-%d.db", dir, prefix, name, (int)getpid());
	remove_db_files(p);
	return p;
}

char *tmp_seq_path(const char *prefix, const char *name)
{
	static int seq;
	const char *dir = getenv("UT_TMPDIR");
	char *p = malloc(1024);

	assert_non_null(p);
	if (!dir || !*dir)
		dir = "/tmp";
	mkdir(dir, 0755);
	snprintf(p, 1024, "%s/%s-%s-%d-%d.db", dir, prefix, name, (int)getpid(),
		 seq++);
	unlink(p);
	return p;
}

void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	size_t n = 0, cap = 0, r;

	assert_non_null(f);
	do {	/* to the end, whatever the size said before */
		if (n + 4096 + 1 > cap) {
			cap = (n + 4096 + 1) * 2;
			b = realloc(b, cap);
			assert_non_null(b);
		}
		r = fread(b + n, 1, 4096, f);
		n += r;
	} while (r);
	assert_false(ferror(f));
	fclose(f);
	b[n] = 0;
	if (len)
		*len = n;
	return b;
}

void write_file(const char *path, const void *b, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	if (len)
		assert_int_equal(fwrite(b, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

uint64_t file_bytes(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* One page at pgno, read (buf) or written (wbuf). */
static void page_io(const char *path, uint32_t pgno, void *buf, const void *wbuf)
{
	int fd = open(path, wbuf ? O_WRONLY : O_RDONLY);
	off_t off = (off_t)pgno * UT_PAGE_SIZE;

	assert_true(fd >= 0);
	if (wbuf)
		assert_int_equal(pwrite(fd, wbuf, UT_PAGE_SIZE, off), UT_PAGE_SIZE);
	else
		assert_int_equal(pread(fd, buf, UT_PAGE_SIZE, off), UT_PAGE_SIZE);
	assert_int_equal(close(fd), 0);
}

void read_page(const char *path, uint32_t pgno, void *buf)
{
	page_io(path, pgno, buf, NULL);
}

void write_page(const char *path, uint32_t pgno, const void *buf)
{
	page_io(path, pgno, NULL, buf);
}

void vfs_create_file(ut_vfs *v, const char *path)
{
	ut_file *f;

	assert_int_equal(v->open(v, path, UT_OPEN_CREATE, &f), UT_OK);
	ut_file_close(f);
}

void vfs_truncate_file(ut_vfs *v, const char *path, uint64_t bytes)
{
	ut_file *f;

	assert_int_equal(v->open(v, path, 0, &f), UT_OK);
	assert_int_equal(ut_file_truncate(f, bytes), UT_OK);
	assert_int_equal(ut_file_sync(f), UT_OK);
	ut_file_close(f);
}

void vfs_write_file(ut_vfs *v, const char *path, const void *b, size_t len)
{
	ut_file *f;

	assert_int_equal(v->open(v, path, UT_OPEN_CREATE, &f), UT_OK);
	assert_int_equal(ut_file_truncate(f, 0), UT_OK);
	assert_int_equal(ut_file_write(f, b, len, 0, 0), UT_OK);
	assert_int_equal(ut_file_sync(f), UT_OK);
	ut_file_close(f);
}

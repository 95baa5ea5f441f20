/*
 * bench/durable_files.c - the benchmark's database files (durable.h): a
 * database is a file with companions ("-wal", "-dw", ...) or, for
 * RocksDB, a flat directory; these copy, remove, size them and take them
 * out of the OS page cache, so that every run starts cold.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "durable.h"

void path_of(const struct cfg *c, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", c->dir, name);
}

static const char *const companions[] = { "", "-wal", "-dw", "-shm", "-journal", "-lock" };

/* Remove a directory's files and the directory (RocksDB keeps a flat one). */
static void remove_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char p[4600];

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(path);
}

static int is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

void remove_db(const char *path)
{
	char p[4200];

	if (is_dir(path)) {
		remove_dir(path);
		return;
	}

	for (size_t i = 0; i < sizeof(companions) / sizeof(companions[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", path, companions[i]);
		unlink(p);
	}
}

int exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

static void drop_cache(const char *p)
{
	int fd = open(p, O_RDONLY);

	if (fd < 0)
		return;
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out;
	static char buf[1 << 20];
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	fdatasync(out);
	posix_fadvise(out, 0, 0, POSIX_FADV_DONTNEED);
	close(out);
	close(in);
	return n < 0 ? -1 : 0;
}

/* Copy DB and its "-wal" (if any) to a fresh path; both dropped from cache. */
int copy_db(const char *from, const char *to)
{
	char a[4600], b[4600];

	remove_db(to);
	if (is_dir(from)) {	/* RocksDB: every file of the directory */
		DIR *d = opendir(from);
		struct dirent *e;
		int rc = 0;

		if (!d || mkdir(to, 0755)) {
			if (d)
				closedir(d);
			return -1;
		}
		while (!rc && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(a, sizeof(a), "%s/%s", from, e->d_name);
				snprintf(b, sizeof(b), "%s/%s", to, e->d_name);
				rc = copy_file(a, b);
				drop_cache(a);
			}
		closedir(d);
		return rc;
	}
	if (copy_file(from, to))
		return -1;
	snprintf(a, sizeof(a), "%s-wal", from);
	snprintf(b, sizeof(b), "%s-wal", to);
	if (exists(a) && copy_file(a, b))
		return -1;
	drop_cache(from);
	return 0;
}

/* the files of a database (a RocksDB directory's too) out of the page cache */
void drop_db_cache(const char *path)
{
	char a[4600];

	if (is_dir(path)) {
		DIR *d = opendir(path);
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.') {
				snprintf(a, sizeof(a), "%s/%s", path, e->d_name);
				drop_cache(a);
			}
		if (d)
			closedir(d);
		return;
	}
	for (size_t i = 0; i < sizeof(companions) / sizeof(companions[0]); i++) {
		snprintf(a, sizeof(a), "%s%s", path, companions[i]);
		drop_cache(a);
	}
}

long long file_size(const char *p)
{
	struct stat st;

	if (is_dir(p)) {
		DIR *d = opendir(p);
		struct dirent *e;
		long long sum = 0;
		char q[4600];

		while (d && (e = readdir(d))) {
			snprintf(q, sizeof(q), "%s/%s", p, e->d_name);
			if (e->d_name[0] != '.' && stat(q, &st) == 0)
				sum += (long long)st.st_size;
		}
		if (d)
			closedir(d);
		return sum;
	}
	return stat(p, &st) ? 0 : (long long)st.st_size;
}

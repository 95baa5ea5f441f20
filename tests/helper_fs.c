/*
 * tests/helper_fs.c - file-system chores shared by the tests (helper_fs.h).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helper_fs.h"

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

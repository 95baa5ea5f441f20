/*
 * tests/helper_fs.c - file-system chores shared by the tests (helper_fs.h).
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
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

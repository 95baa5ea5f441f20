/*
 * bench/child.c - run one measurement in a child process (child.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"

struct reply {
	int rc;
};

int bench_run_child(int (*fn)(void *arg, void *res), void *arg, void *res,
		    size_t size, char *why, size_t whylen)
{
	struct reply rep = { -1 };
	int p[2], st = 0;
	ssize_t got = 0, hdr = 0;
	pid_t pid;

	memset(res, 0, size);
	if (pipe(p))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		rep.rc = fn(arg, res);
		if (write(p[1], &rep, sizeof(rep)) != (ssize_t)sizeof(rep) ||
		    write(p[1], res, size) != (ssize_t)size)
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	hdr = read(p[0], &rep, sizeof(rep));
	if (hdr == (ssize_t)sizeof(rep))
		while ((size_t)got < size) {
			ssize_t n = read(p[0], (char *)res + got, size - (size_t)got);
			if (n <= 0)
				break;
			got += n;
		}
	close(p[0]);
	waitpid(pid, &st, 0);
	if (hdr != (ssize_t)sizeof(rep) || (size_t)got != size) {
		memset(res, 0, size);
		snprintf(why, whylen, "child died (%s %d)",
			 WIFSIGNALED(st) ? "signal" : "status",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		return -1;
	}
	return rep.rc;
}

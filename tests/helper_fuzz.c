/*
 * tests/helper_fuzz.c - what the file fuzz tests share (helper_fuzz.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helper_fuzz.h"

uint64_t fz_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t fz_rnd(fz_rng *r) { return fz_mix64(r->s++ * 0x2545f4914f6cdd1dull + 7); }
uint64_t fz_below(fz_rng *r, uint64_t n) { return n ? fz_rnd(r) % n : 0; }
int fz_chance(fz_rng *r, unsigned pct) { return fz_below(r, 100) < pct; }

fz_blob fz_slurp(const char *path)
{
	fz_blob b = { NULL, 0, 0 };
	struct stat st;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return b;
	b.exists = 1;
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		b.p = malloc((size_t)st.st_size);
		if (b.p && read(fd, b.p, (size_t)st.st_size) == st.st_size)
			b.n = (size_t)st.st_size;
	}
	close(fd);
	return b;
}

int fz_spill(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < n) {
		ssize_t w = write(fd, p + done, n - done);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	return close(fd);
}

long fz_env_long(const char *name, long dflt)
{
	const char *s = getenv(name);

	return s && *s ? strtol(s, NULL, 0) : dflt;
}

int fz_run_child(void (*child)(void *ctx, int fd), void *ctx, void *res,
		 size_t reslen, long timeout_s, char *why, size_t whylen)
{
	int fds[2], st;
	pid_t pid;
	struct pollfd pf;
	size_t got = 0;
	time_t t0 = time(NULL);

	if (pipe(fds)) {
		perror("pipe");
		exit(2);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		close(fds[0]);
		child(ctx, fds[1]);
		_exit(4); /* the child must _exit itself */
	}
	close(fds[1]);
	pf.fd = fds[0];
	pf.events = POLLIN;
	while (got < reslen) {
		long left = timeout_s - (long)(time(NULL) - t0);
		int n = left > 0 ? poll(&pf, 1, (int)(left * 1000)) : 0;
		ssize_t rd;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			close(fds[0]);
			snprintf(why, whylen, "no answer in %ld s (killed)", timeout_s);
			return FZ_HANG;
		}
		rd = read(fds[0], (char *)res + got, reslen - got);
		if (rd <= 0)
			break;
		got += (size_t)rd;
	}
	close(fds[0]);
	if (waitpid(pid, &st, 0) != pid) {
		perror("waitpid");
		exit(2);
	}
	if (got == reslen && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return FZ_ANSWERED;
	if (WIFSIGNALED(st))
		snprintf(why, whylen, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(why, whylen, "exit status %d (sanitizer report above?)",
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return FZ_CRASH;
}

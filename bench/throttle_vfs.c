/*
 * bench/throttle_vfs.c - QEMU's write throttle as a ut_vfs (contract in
 * throttle_vfs.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "throttle_vfs.h"

struct bucket {
	double rate, level; /* units per second; units in the bucket */
};

static struct {
	ut_vfs v;
	pthread_mutex_t mu;
	struct bucket bytes, ops;
	double t_last; /* when the levels were last brought up to date */
	double tail;   /* when the last request queued is admitted */
	int fake_atomic;
} tv = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct tfile {
	ut_file f;
	ut_file *in;
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void leak(struct bucket *b, double dt)
{
	b->level -= b->rate * dt;
	if (b->level < 0)
		b->level = 0;
}

/* How long after now bucket b can take a request (level <= rate / 10). */
static double wait_of(const struct bucket *b)
{
	double extra = b->level - b->rate / 10;

	return extra > 0 ? extra / b->rate : 0;
}

/* Admit n requests of the given lengths, queued behind those before them;
 * returns when the last is admitted (the time to sleep until). */
static double admit(const size_t *len, size_t n)
{
	double now, at = 0;

	pthread_mutex_lock(&tv.mu);
	now = mono();
	at = now > tv.tail ? now : tv.tail;
	for (size_t i = 0; i < n; i++) {
		double w;
		size_t units = (len[i] + 16383) / 16384;

		/* bring both buckets to time at, then wait for them */
		leak(&tv.bytes, at - tv.t_last);
		leak(&tv.ops, at - tv.t_last);
		tv.t_last = at;
		w = wait_of(&tv.bytes);
		if (wait_of(&tv.ops) > w)
			w = wait_of(&tv.ops);
		if (w > 0) {
			leak(&tv.bytes, w);
			leak(&tv.ops, w);
			at += w;
			tv.t_last = at;
		}
		tv.bytes.level += (double)len[i];
		tv.ops.level += (double)(units ? units : 1);
	}
	tv.tail = at;
	pthread_mutex_unlock(&tv.mu);
	return at;
}

static void sleep_until(double t)
{
	double d = t - mono();

	if (d > 0) {
		struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };

		nanosleep(&ts, NULL);
	}
}

static int64_t t_read(ut_file *f, void *buf, size_t len, uint64_t off)
{
	return ut_file_read(((struct tfile *)f)->in, buf, len, off);
}

static unsigned strip(unsigned wflags)
{
	return tv.fake_atomic ? wflags & ~UT_WRITE_ATOMIC : wflags;
}

static int t_write(ut_file *f, const void *buf, size_t len, uint64_t off,
		   unsigned wflags)
{
	sleep_until(admit(&len, 1));
	return ut_file_write(((struct tfile *)f)->in, buf, len, off, strip(wflags));
}

static int t_write_batch(ut_file *f, const ut_iowrite *w, size_t n,
			 unsigned wflags)
{
	size_t lens[256];

	for (size_t i = 0; i < n; i += 256) {
		size_t k = n - i < 256 ? n - i : 256;

		for (size_t j = 0; j < k; j++)
			lens[j] = w[i + j].len;
		sleep_until(admit(lens, k));
	}
	return ut_file_write_batch(((struct tfile *)f)->in, w, n, strip(wflags));
}

/* Free, as with cache.no-flush=on (and no host disk's flush in the
 * measured latencies): the files are not durable under this model. */
static int t_sync(ut_file *f)
{
	(void)f;
	return UT_OK;
}
static int t_size(ut_file *f, uint64_t *b) { return ut_file_size(((struct tfile *)f)->in, b); }
static int t_truncate(ut_file *f, uint64_t b) { return ut_file_truncate(((struct tfile *)f)->in, b); }

static int t_atomic_info(ut_file *f, ut_atomic_info *ai)
{
	int rc = ut_file_atomic_info(((struct tfile *)f)->in, ai);

	if (rc == UT_OK && tv.fake_atomic && f->direct) {
		ai->supported = 1;
		ai->unit_min = 4096;
		ai->unit_max = 16384;
		ai->segments_max = 1;
		ai->mask_missing = 0;
	}
	return rc;
}

static void t_close(ut_file *f)
{
	ut_file_close(((struct tfile *)f)->in);
	free(f);
}

static void t_prefetch(ut_file *f, uint64_t off, size_t len)
{
	ut_file *in = ((struct tfile *)f)->in;

	if (in->ops->prefetch)
		in->ops->prefetch(in, off, len);
}

static const struct ut_file_ops t_ops = {
	t_read, t_write, t_write_batch, t_sync, t_size, t_truncate,
	t_atomic_info, t_close, t_prefetch,
};

static int t_open(ut_vfs *v, const char *path, unsigned oflags, ut_file **out)
{
	ut_vfs *in = ut_vfs_posix();
	struct tfile *tf = calloc(1, sizeof(*tf));
	int rc;

	(void)v;
	if (!tf)
		return UT_ENOMEM;
	if ((rc = in->open(in, path, oflags, &tf->in))) {
		free(tf);
		return rc;
	}
	tf->f = *tf->in;
	tf->f.ops = &t_ops;
	*out = &tf->f;
	return UT_OK;
}

static int t_remove(ut_vfs *v, const char *p) { (void)v; return ut_vfs_posix()->remove(ut_vfs_posix(), p); }
static int t_exists(ut_vfs *v, const char *p) { (void)v; return ut_vfs_posix()->exists(ut_vfs_posix(), p); }
static int t_sync_dir(ut_vfs *v, const char *p) { (void)v; return ut_vfs_posix()->sync_dir(ut_vfs_posix(), p); }

ut_vfs *throttle_vfs(double bps, double iops, int fake_atomic)
{
	pthread_mutex_lock(&tv.mu);
	tv.v = (ut_vfs){ t_open, t_remove, t_exists, t_sync_dir };
	tv.bytes = (struct bucket){ bps, 0 };
	tv.ops = (struct bucket){ iops, 0 };
	tv.t_last = tv.tail = mono();
	tv.fake_atomic = fake_atomic;
	pthread_mutex_unlock(&tv.mu);
	return &tv.v;
}

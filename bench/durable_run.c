/*
 * bench/durable_run.c - one measured run of bench_durable (durable.h): a
 * child process opens the system, starts K driver threads (the workload's
 * transactions, each timed), runs the warm-up, then the measured interval
 * between two readings of the device, CPU and engine counters, and sends
 * the figures back; with --recover it exits without closing, and a fresh
 * child times the recovery of the files left behind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "durable.h"

/* ------------------------------------------------------------ the driver */

struct drv_shared {
	struct sys *s;
	double tend;
	long op_limit;           /* per thread, 0 = none */
	volatile int stop;
	int err;
	long next_key;           /* load: next unloaded key */
};
struct drv_thread {
	struct drv_shared *sh;
	void *tc;
	int id;
	struct rng g;
	uint64_t ver;
	long ops, commits;
	struct lat lat;
	pthread_t th;
};

static void *drv_main(void *arg)
{
	struct drv_thread *me = arg;
	struct drv_shared *sh = me->sh;
	struct sys *s = sh->s;
	const struct cfg *c = s->c;
	unsigned char k[KEY_LEN], v[VAL_LEN];

	while (!sh->stop) {
		double a = now();
		long i, nops = 1, ncommits = 1;
		int rc;

		if (a >= sh->tend || (sh->op_limit && me->ops >= sh->op_limit))
			break;
		if (c->wl == W_LOAD) {
			i = __atomic_fetch_add(&sh->next_key, c->batch, __ATOMIC_RELAXED);
			if (i >= c->nkeys)
				break;
			nops = c->batch < c->nkeys - i ? c->batch : c->nkeys - i;
			rc = s->d->load(s, me->tc, i, nops);
		} else {
			i = rnd_below(&me->g, c->nkeys);
			make_key(c->seed, i, k);
			if (c->wl == W_MIX && rnd_below(&me->g, 100) < c->get_pct) {
				ncommits = 0;
				rc = s->d->get1(s, me->tc, k);
			} else {
				make_val(i, ++me->ver, v);
				rc = s->d->put1(s, me->tc, k, v);
			}
		}
		if (rc) {
			sh->err = 1;
			sh->stop = 1;
			break;
		}
		lat_add(&me->lat, (now() - a) * 1e6);
		me->ops += nops;
		me->commits += ncommits;
	}
	return NULL;
}

/* Where a thread's value versions start: a run must never write a value
 * its key already holds.  Runs share files across rounds, thread counts
 * and invocations (--no-copy), and the key sequence is the seed's, the
 * same in every run: versions counted from a fixed start made later runs
 * rewrite the values earlier ones left, and an engine that skips an
 * update which changes nothing (SQLite does: its commit then writes no
 * frame and syncs nothing) was measured committing without writing.  A
 * random start per run and thread, from the clock: no two runs' versions
 * meet within 2^64, and each version makes a different value. */
static uint64_t run_nonce(int thread)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return mix64(((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
		     ((uint64_t)getpid() << 32) ^ (uint64_t)(thread + 1) * 0x9e3779b97f4a7c15ull);
}

static int run_system(const struct cfg *c, const struct sysdef *d, const char *path,
		      int nth, struct result *r)
{
	struct sys s;
	struct drv_shared sh;
	struct drv_thread *th = calloc((size_t)nth, sizeof(*th));
	struct devstat d0, d1;
	struct lat all = { 0 };
	double t0 = now(), cb0 = 0, ct0 = 0, cb1, ct1;
	int rc = -1, opened = 0;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.d = d;
	s.path = path;
	s.nth = nth;
	pthread_mutex_init(&s.mu, NULL);
	memset(&sh, 0, sizeof(sh));
	sh.s = &s;
	rss_reset();
	if (!th || d->open(&s))
		goto out;
	for (; opened < nth; opened++) {
		th[opened].sh = &sh;
		th[opened].id = opened;
		/* one thread: the same key sequence as before --threads existed */
		th[opened].g.s = nth == 1 ? c->seed * 7 + 1 :
			c->seed * 1000003 + (uint64_t)opened * 7919 + 11;
		th[opened].ver = run_nonce(opened);
		if (!(th[opened].tc = d->thr_open(&s)))
			goto close;
	}
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0 && c->warmup <= 0)
			continue;
		if (pass == 1) {
			devstat_read(c->dir, &d0);
			cpu_read(&cb0, &ct0);
			if (d->ctrs)
				d->ctrs(&s, r, -1);
			for (int i = 0; i < nth; i++) {
				free(th[i].lat.v);
				memset(&th[i].lat, 0, sizeof(th[i].lat));
				th[i].ops = th[i].commits = 0;
			}
		}
		t0 = now();
		sh.tend = pass ? (c->ops ? 1e300 : t0 + c->secs) : t0 + c->warmup;
		sh.op_limit = pass && c->ops ? (c->ops + nth - 1) / nth : 0;
		for (int i = 0; i < nth; i++)
			pthread_create(&th[i].th, NULL, drv_main, &th[i]);
		for (int i = 0; i < nth; i++)
			pthread_join(th[i].th, NULL);
		if (sh.err)
			goto close;
	}
	r->secs = now() - t0;
	devstat_read(c->dir, &d1);
	cpu_read(&cb1, &ct1);
	r->cpu_busy = ct1 > ct0 ? (cb1 - cb0) / (ct1 - ct0) : 0;
	if (d->ctrs)
		d->ctrs(&s, r, 1);
	r->dev_wbytes = d1.wbytes - d0.wbytes;
	r->dev_wreqs = d1.wreqs - d0.wreqs;
	r->dev_flushes = d1.flushes - d0.flushes;
	r->dev_rreqs = d1.rreqs - d0.rreqs;
	for (int i = 0; i < nth; i++) {
		r->ops += th[i].ops;
		r->commits += th[i].commits;
		for (size_t j = 0; j < th[i].lat.n; j++)
			lat_add(&all, th[i].lat.v[j]);
	}
	lat_done(&all, r);
	r->rss_kib = rss_peak_kib();
	rc = 0;
	/* --recover: the handles are left open and the child exits with the
	 * engine's threads running: no close, no checkpoint, what a SIGKILL
	 * leaves (the OS page cache keeps what was written; the parent syncs
	 * and drops it before timing the recovery, as after a reboot) */
	if (c->recover)
		goto out;
close:
	for (int i = 0; i < opened; i++) {
		d->thr_close(&s, th[i].tc);
		free(th[i].lat.v);
	}
	if (d->close(&s) && !rc) {
		rc = -1;
		if (!s.err[0])
			sys_err(&s, "close failed%s%s", "", "");
	}
out:
	r->na = s.na;
	if (!rc && r->frame_waits > 0)
		snprintf(r->note, sizeof(r->note), "%.200s, %.0f waits for the page cleaner",
			 s.note, r->frame_waits);
	else
		snprintf(r->note, sizeof(r->note), "%s", rc ? s.err : s.note);
	free(th);
	return rc;
}

/* ------------------------------------------------------------ children */

struct child_job {
	const struct cfg *c;
	const struct sysdef *d;
	const char *path;
	int nth;
};

static int child_main(void *arg, void *res)
{
	const struct child_job *cj = arg;
	struct result *r = res;

	r->ok = run_system(cj->c, cj->d, cj->path, cj->nth, r) == 0;
	return r->ok ? 0 : -1;
}

int run_child(const struct cfg *c, const struct sysdef *d, const char *path,
		     int nth, struct result *r)
{
	struct child_job cj = { c, d, path, nth };

	return bench_run_child(child_main, &cj, r, sizeof(*r), r->note,
			       sizeof(r->note));
}

/* --recover: the time to recover after the kill that ended a run: from
 * the open of the killed files (untorn: evidence, redo, its checkpoint;
 * SQLite: the WAL index rebuilt from the -wal at the first read) to the
 * first read's answer, in a fresh process with the files out of the page
 * cache.  The handle is then closed cleanly (not timed), so the next run
 * of --no-copy starts from a clean close as before. */
struct recovery {
	double secs;
	char err[256];
};

static int recover_main(void *arg, void *res)
{
	const struct child_job *cj = arg;
	struct recovery *rv = res;
	unsigned char k[KEY_LEN];
	struct sys s;
	void *tc;
	double t0;
	int rc;

	memset(&s, 0, sizeof(s));
	s.c = cj->c;
	s.d = cj->d;
	s.path = cj->path;
	s.nth = 1;
	pthread_mutex_init(&s.mu, NULL);
	make_key(cj->c->seed, 0, k);
	t0 = now();
	if (cj->d->open(&s)) {
		snprintf(rv->err, sizeof(rv->err), "%s", s.err);
		return -1;
	}
	if (!(tc = cj->d->thr_open(&s))) {
		snprintf(rv->err, sizeof(rv->err), "%s", s.err);
		cj->d->close(&s);
		return -1;
	}
	rc = cj->d->get1(&s, tc, k);
	rv->secs = now() - t0;
	cj->d->thr_close(&s, tc);
	if (cj->d->close(&s) && !rc) {
		rc = -1;
		if (!s.err[0])
			sys_err(&s, "close failed%s%s", "", "");
	}
	if (rc)
		snprintf(rv->err, sizeof(rv->err), "%s", s.err);
	return rc;
}

void run_recovery(const struct cfg *c, const struct sysdef *d, const char *path,
			 struct result *r)
{
	struct child_job cj = { c, d, path, 1 };
	struct recovery rv;
	size_t len = strlen(r->note);

	drop_db_cache(path);
	if (bench_run_child(recover_main, &cj, &rv, sizeof(rv), rv.err, sizeof(rv.err))) {
		snprintf(r->note + len, sizeof(r->note) - len, "%sRECOVERY FAILED: %.150s",
			 len ? ", " : "", rv.err);
		return;
	}
	r->recover_s = rv.secs;
	r->recovered = 1;
}

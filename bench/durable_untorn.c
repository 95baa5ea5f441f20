/*
 * bench/durable_untorn.c - untorn in bench_durable (durable.h): its
 * preload (UT_PROTECT_UNSAFE, sync=0, one checkpoint at close; with
 * --no-copy the "-dw" file primed) and its runner, one system per
 * protection, each a single handle shared by the driver's threads, sync=1,
 * the engine's counters from ut_stats and ut_wal_stats.  BENCH_THROTTLE
 * puts the files behind throttle_vfs.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "durable.h"
#include "db.h"  /* ut_db_set_checkpoint_bytes (preload), ut_db_wal */
#include "wal.h" /* ut_wal_stats_get: log syncs apart from page-flush syncs */
#include "throttle_vfs.h" /* BENCH_THROTTLE */

/* -- preload */

int preload_untorn(const struct cfg *c, const char *path)
{
	ut_options o;
	ut_db *db;
	ut_txn *t = NULL;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	const long batch = c->preload_txn > 0 ? c->preload_txn : c->nkeys;
	double t0 = now();
	int rc;

	remove_db(path);
	ut_options_default(&o);
	o.protect = UT_PROTECT_UNSAFE;
	o.sync = 0;
	o.cache_bytes = preload_cache(c);
	if ((rc = ut_open(path, &o, &db))) {
		fprintf(stderr, "preload untorn: open: %s: %s\n", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	/* one checkpoint, at close: no rewrite of the tree per 64 MiB of log */
	ut_db_set_checkpoint_bytes(db, 1ull << 40);
	for (long i = 0; i < c->nkeys; i++) {
		if (!t && (rc = ut_begin(db, 0, &t)))
			break;
		make_key(c->seed, i, k);
		make_val(i, 0, v);
		if ((rc = ut_put(t, k, KEY_LEN, v, VAL_LEN)))
			break;
		if ((i + 1) % batch == 0 || i + 1 == c->nkeys) {
			rc = ut_commit(t);
			t = NULL;
			if (rc)
				break;
		}
	}
	if (rc) {
		fprintf(stderr, "preload untorn: %s: %s\n", ut_strerror(rc), ut_errdetail());
		if (t)
			ut_abort(t);
		ut_close(db);
		return -1;
	}
	if ((rc = ut_close(db))) {
		fprintf(stderr, "preload untorn: close: %s: %s\n", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	fprintf(stderr, "preload untorn: %ld keys in %.1f s, file %.1f MiB\n",
		c->nkeys, now() - t0, file_size(path) / 1048576.0);
	if (c->no_copy) {
		/* The runs use this file itself: let doublewrite's first run not
		 * pay for creating the "-dw" file.  Open it in doublewrite mode,
		 * update keys spread over most leaves (sync=0), close: the closing
		 * checkpoint writes those pages through every double-write slot. */
		t0 = now();
		o.protect = UT_PROTECT_DOUBLEWRITE;
		if ((rc = ut_open(path, &o, &db))) {
			fprintf(stderr, "preload untorn: prime -dw: %s: %s\n", ut_strerror(rc),
				ut_errdetail());
			return -1;
		}
		for (long i = 0; i < 1000 && !rc; i++) {
			long j = (long)(mix64(c->seed + 99 + (uint64_t)i) % (uint64_t)c->nkeys);

			make_key(c->seed, j, k);
			make_val(j, 0, v);
			if (!(rc = ut_begin(db, 0, &t)) && !(rc = ut_put(t, k, KEY_LEN, v, VAL_LEN)))
				rc = ut_commit(t);
		}
		if (rc || (rc = ut_close(db))) {
			fprintf(stderr, "preload untorn: prime -dw: %s: %s\n", ut_strerror(rc),
				ut_errdetail());
			return -1;
		}
		fprintf(stderr, "preload untorn: -dw primed (1000 updates, doublewrite close) in %.1f s\n",
			now() - t0);
	}
	return 0;
}

/* -- the runner */

static int uts_open(struct sys *s)
{
	ut_options o;
	ut_db *db;
	ut_stats st;
	int rc;

	ut_options_default(&o);
	o.protect = s->d->prot;
	o.sync = 1;
	o.create = s->c->wl == W_LOAD;
	o.cache_bytes = s->c->cache_mib << 20;
	if (getenv("BENCH_THROTTLE")) {
		/* BENCH_THROTTLE=BPS,IOPS: the VM's device model on the host
		 * (throttle_vfs.h; untorn only, atomic writes faked) */
		double bps = 0, iops = 0;

		if (sscanf(getenv("BENCH_THROTTLE"), "%lf,%lf", &bps, &iops) != 2 ||
		    bps <= 0 || iops <= 0) {
			sys_err(s, "BENCH_THROTTLE: want BPS,IOPS%s%s", "", "");
			return -1;
		}
		rc = ut_db_open_vfs(throttle_vfs(bps, iops, 1), s->path, &o, &db);
	} else {
		rc = ut_open(s->path, &o, &db);
	}
	if (rc == UT_ENOTSUP || (rc && s->d->prot == UT_PROTECT_ATOMIC)) {
		const char *d = ut_errdetail(), *sx = strstr(d, "statx");

		s->na = 1;
		sys_err(s, "n/a (%s)%s", sx ? sx : *d ? d : ut_strerror(rc), "");
		return -1;
	}
	if (rc) {
		sys_err(s, "open: %s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	s->h = db;
	if (s->c->ckpt_bytes)
		ut_db_set_checkpoint_bytes(db, s->c->ckpt_bytes);
	ut_stats_get(db, &st);
	snprintf(s->note, sizeof(s->note), "%s%s", st.direct_io ? "O_DIRECT" : "buffered",
		 st.uring ? ", io_uring" : "");
	return 0;
}

static void *uts_thr_open(struct sys *s) { return s->h; }
static void uts_thr_close(struct sys *s, void *tc) { (void)s; (void)tc; }

static int uts_put1(struct sys *s, void *tc, const unsigned char *k, const unsigned char *v)
{
	ut_txn *t;
	int rc;

	if ((rc = ut_begin(tc, 0, &t)) || (rc = ut_put(t, k, KEY_LEN, v, VAL_LEN)) ||
	    (rc = ut_commit(t))) {
		sys_err(s, "%s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	return 0;
}

static int uts_get1(struct sys *s, void *tc, const unsigned char *k)
{
	ut_txn *t;
	void *v = NULL;
	size_t vl;
	int rc;

	if ((rc = ut_begin(tc, UT_RDONLY, &t))) {
		sys_err(s, "%s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	rc = ut_get(t, k, KEY_LEN, &v, &vl);
	free(v);
	ut_abort(t);
	if (rc < 0) {
		sys_err(s, "get: %s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	return 0;
}

static int uts_load(struct sys *s, void *tc, long first, long n)
{
	unsigned char k[KEY_LEN], v[VAL_LEN];
	ut_txn *t;
	int rc;

	if ((rc = ut_begin(tc, 0, &t)))
		goto fail;
	for (long i = first; i < first + n; i++) {
		make_key(s->c->seed, i, k);
		make_val(i, 0, v);
		if ((rc = ut_put(t, k, KEY_LEN, v, VAL_LEN))) {
			ut_abort(t);
			goto fail;
		}
	}
	if ((rc = ut_commit(t)))
		goto fail;
	return 0;
fail:
	sys_err(s, "%s: %s", ut_strerror(rc), ut_errdetail());
	return -1;
}

static void uts_ctrs(struct sys *s, struct result *r, double sign)
{
	ut_stats st;
	ut_wal_stats ws;

	ut_stats_get(s->h, &st);
	memset(&ws, 0, sizeof(ws));
	ut_wal_stats_get(ut_db_wal(s->h), &ws);
	r->page_bytes += sign * (double)st.page_writes * UT_PAGE_SIZE;
	r->dw_bytes += sign * (double)st.dw_page_writes * UT_PAGE_SIZE;
	r->log_bytes += sign * (double)st.log_bytes;
	r->syncs += sign * (double)st.syncs;
	r->log_syncs += sign * (double)ws.syncs;
	r->frame_waits += sign * (double)st.frame_waits;
	r->images += sign * (double)st.page_images;
}

static int uts_close(struct sys *s)
{
	int rc = ut_close(s->h);

	if (rc) {
		sys_err(s, "close: %s: %s", ut_strerror(rc), ut_errdetail());
		return -1;
	}
	return 0;
}

#define UTSYS(k, n, p) { k, n, 0, p, uts_open, uts_thr_open, uts_thr_close, uts_put1, \
		uts_get1, uts_load, uts_ctrs, uts_close }
const struct sysdef untorn_systems[4] = {
	UTSYS("doublewrite", "untorn doublewrite", UT_PROTECT_DOUBLEWRITE),
	UTSYS("fullpage", "untorn fullpage", UT_PROTECT_FULLPAGE),
	UTSYS("unsafe", "untorn unsafe", UT_PROTECT_UNSAFE),
	UTSYS("atomic", "untorn atomic", UT_PROTECT_ATOMIC),
};

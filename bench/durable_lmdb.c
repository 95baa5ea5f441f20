/*
 * bench/durable_lmdb.c - LMDB in bench_durable (durable.h; built with
 * UT_BENCH_LMDB): its preload (MDB_NOSYNC, then mdb_env_sync) and its
 * runner: default durable commits, the memory map shared by the threads
 * (no cache bound: the OS page cache holds the data).
 */
#include <stdio.h>
#include <unistd.h>

#include <lmdb.h>

#include "durable.h"

/* -- preload */

static size_t lmdb_mapsize(const struct cfg *c)
{
	return (size_t)(c->data_bytes * 4 + (256ull << 20));
}

int preload_lmdb(const struct cfg *c, const char *path)
{
	MDB_env *env;
	MDB_txn *t = NULL;
	MDB_dbi dbi;
	MDB_val mk, mv;
	unsigned char k[KEY_LEN], v[VAL_LEN];
	char lock[4200];
	double t0 = now();
	int rc;

	remove_db(path);
	if ((rc = mdb_env_create(&env)) || (rc = mdb_env_set_mapsize(env, lmdb_mapsize(c))) ||
	    (rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOMETASYNC, 0644)) ||
	    (rc = mdb_txn_begin(env, NULL, 0, &t)) || (rc = mdb_dbi_open(t, NULL, 0, &dbi))) {
		fprintf(stderr, "preload lmdb: %s\n", mdb_strerror(rc));
		return -1;
	}
	for (long i = 0; i < c->nkeys; i++) {
		if (!t && (rc = mdb_txn_begin(env, NULL, 0, &t)))
			break;
		make_key(c->seed, i, k);
		make_val(i, 0, v);
		mk.mv_size = KEY_LEN;
		mk.mv_data = k;
		mv.mv_size = VAL_LEN;
		mv.mv_data = v;
		if ((rc = mdb_put(t, dbi, &mk, &mv, 0)))
			break;
		if ((i + 1) % 10000 == 0 || i + 1 == c->nkeys) {
			rc = mdb_txn_commit(t);
			t = NULL;
			if (rc)
				break;
		}
	}
	if (t)
		mdb_txn_abort(t);
	if (rc || (rc = mdb_env_sync(env, 1))) {
		fprintf(stderr, "preload lmdb: %s\n", mdb_strerror(rc));
		mdb_env_close(env);
		return -1;
	}
	mdb_env_close(env);
	snprintf(lock, sizeof(lock), "%s-lock", path);
	unlink(lock);
	fprintf(stderr, "preload lmdb: %ld keys in %.1f s, file %.1f MiB\n",
		c->nkeys, now() - t0, file_size(path) / 1048576.0);
	return 0;
}

/* -- the runner */

static int lms_open(struct sys *s)
{
	MDB_env *env;
	MDB_txn *t;
	int rc;

	if ((rc = mdb_env_create(&env)))
		goto fail;
	if ((rc = mdb_env_set_mapsize(env, lmdb_mapsize(s->c))) ||
	    (rc = mdb_env_open(env, s->path, MDB_NOSUBDIR, 0644))) {
		mdb_env_close(env);
		goto fail;
	}
	if ((rc = mdb_txn_begin(env, NULL, 0, &t)) || (rc = mdb_dbi_open(t, NULL, 0, &s->dbi)) ||
	    (rc = mdb_txn_commit(t))) {
		mdb_env_close(env);
		goto fail;
	}
	s->h = env;
	snprintf(s->note, sizeof(s->note), "%s, durable commits, memory map (RSS includes it)",
		 mdb_version(NULL, NULL, NULL));
	return 0;
fail:
	sys_err(s, "lmdb open: %s%s", mdb_strerror(rc), "");
	return -1;
}

static void *lms_thr_open(struct sys *s) { return s->h; }
static void lms_thr_close(struct sys *s, void *tc) { (void)s; (void)tc; }

static int lms_put1(struct sys *s, void *tc, const unsigned char *k, const unsigned char *v)
{
	MDB_txn *t;
	MDB_val mk = { KEY_LEN, (void *)k }, mv = { VAL_LEN, (void *)v };
	int rc;

	if ((rc = mdb_txn_begin(tc, NULL, 0, &t)))
		goto fail;
	if ((rc = mdb_put(t, s->dbi, &mk, &mv, 0))) {
		mdb_txn_abort(t);
		goto fail;
	}
	if ((rc = mdb_txn_commit(t)))
		goto fail;
	return 0;
fail:
	sys_err(s, "lmdb put: %s%s", mdb_strerror(rc), "");
	return -1;
}

static int lms_get1(struct sys *s, void *tc, const unsigned char *k)
{
	MDB_txn *t;
	MDB_val mk = { KEY_LEN, (void *)k }, mv;
	int rc;

	if ((rc = mdb_txn_begin(tc, NULL, MDB_RDONLY, &t)))
		goto fail;
	rc = mdb_get(t, s->dbi, &mk, &mv);
	mdb_txn_abort(t);
	if (rc && rc != MDB_NOTFOUND)
		goto fail;
	return 0;
fail:
	sys_err(s, "lmdb get: %s%s", mdb_strerror(rc), "");
	return -1;
}

static int lms_load(struct sys *s, void *tc, long first, long n)
{
	unsigned char k[KEY_LEN], v[VAL_LEN];
	MDB_val mk = { KEY_LEN, k }, mv = { VAL_LEN, v };
	MDB_txn *t;
	int rc;

	if ((rc = mdb_txn_begin(tc, NULL, 0, &t)))
		goto fail;
	for (long i = first; i < first + n; i++) {
		make_key(s->c->seed, i, k);
		make_val(i, 0, v);
		if ((rc = mdb_put(t, s->dbi, &mk, &mv, 0))) {
			mdb_txn_abort(t);
			goto fail;
		}
	}
	if ((rc = mdb_txn_commit(t)))
		goto fail;
	return 0;
fail:
	sys_err(s, "lmdb load: %s%s", mdb_strerror(rc), "");
	return -1;
}

static int lms_close(struct sys *s)
{
	mdb_env_close(s->h);
	return 0;
}

const struct sysdef lmdb_system = {
	"lmdb", "lmdb durable", 2, 0, lms_open, lms_thr_open, lms_thr_close, lms_put1,
	lms_get1, lms_load, NULL, lms_close
};

/*
 * bench/durable_rocksdb.c - RocksDB in bench_durable (durable.h; built
 * with UT_BENCH_ROCKSDB): its preload (no WAL, then a memtable flush) and
 * its runner: WAL with sync=true per write, write_buffer_size = -c, LRU
 * block cache -c, one handle shared by the threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "durable.h"

/* -- the handle, for the preload and the runner */

struct rks {
	rocksdb_t *db;
	rocksdb_options_t *o;
	rocksdb_block_based_table_options_t *bo;
	rocksdb_cache_t *cache;
	rocksdb_writeoptions_t *wo;
	rocksdb_readoptions_t *ro;
};

/* memtable = the cache budget (-c), LRU block cache -c, 2 memtables */
static int rks_open(const struct cfg *c, const char *path, int create, size_t membuf,
		    struct rks *x, char *err, size_t errlen)
{
	char *e = NULL;

	memset(x, 0, sizeof(*x));
	x->o = rocksdb_options_create();
	x->bo = rocksdb_block_based_options_create();
	x->cache = rocksdb_cache_create_lru(c->cache_mib << 20);
	rocksdb_block_based_options_set_block_cache(x->bo, x->cache);
	rocksdb_options_set_block_based_table_factory(x->o, x->bo);
	rocksdb_options_set_create_if_missing(x->o, create);
	rocksdb_options_set_write_buffer_size(x->o, membuf);
	rocksdb_options_set_max_write_buffer_number(x->o, 2);
	x->wo = rocksdb_writeoptions_create();
	x->ro = rocksdb_readoptions_create();
	x->db = rocksdb_open(x->o, path, &e);
	if (e) {
		snprintf(err, errlen, "rocksdb_open: %s", e);
		rocksdb_free(e);
		return -1;
	}
	return 0;
}

static void rks_close(struct rks *x)
{
	if (x->db)
		rocksdb_close(x->db);
	rocksdb_writeoptions_destroy(x->wo);
	rocksdb_readoptions_destroy(x->ro);
	rocksdb_options_destroy(x->o);
	rocksdb_block_based_options_destroy(x->bo);
	rocksdb_cache_destroy(x->cache);
}

/* -- preload */

int preload_rocksdb(const struct cfg *c, const char *path)
{
	struct rks x;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
	unsigned char k[KEY_LEN], v[VAL_LEN];
	char err[512], *e = NULL;
	double t0 = now();

	remove_db(path);
	if (rks_open(c, path, 1, 64 << 20, &x, err, sizeof(err))) {
		fprintf(stderr, "preload rocksdb: %s\n", err);
		return -1;
	}
	rocksdb_writeoptions_disable_WAL(x.wo, 1);
	for (long i = 0; i < c->nkeys && !e; i++) {
		make_key(c->seed, i, k);
		make_val(i, 0, v);
		rocksdb_writebatch_put(wb, (const char *)k, KEY_LEN, (const char *)v, VAL_LEN);
		if ((i + 1) % 10000 == 0 || i + 1 == c->nkeys) {
			rocksdb_write(x.db, x.wo, wb, &e);
			rocksdb_writebatch_clear(wb);
		}
	}
	if (!e) {
		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(x.db, fo, &e);
	}
	rocksdb_flushoptions_destroy(fo);
	rocksdb_writebatch_destroy(wb);
	rks_close(&x);
	if (e) {
		fprintf(stderr, "preload rocksdb: %s\n", e);
		rocksdb_free(e);
		return -1;
	}
	fprintf(stderr, "preload rocksdb: %ld keys in %.1f s, files %.1f MiB\n",
		c->nkeys, now() - t0, file_size(path) / 1048576.0);
	return 0;
}

/* -- the runner */

static int rks_sys_open(struct sys *s)
{
	struct rks *x = calloc(1, sizeof(*x));

	if (!x || rks_open(s->c, s->path, s->c->wl == W_LOAD, s->c->cache_mib << 20, x,
			   s->err, sizeof(s->err))) {
		if (x)
			rks_close(x);
		free(x);
		return -1;
	}
	rocksdb_writeoptions_set_sync(x->wo, 1);
	s->h = x;
	snprintf(s->note, sizeof(s->note), "WAL sync=true, memtable %zu MiB, block cache %zu MiB",
		 s->c->cache_mib, s->c->cache_mib);
	return 0;
}

static void *rks_thr_open(struct sys *s) { return s->h; }
static void rks_thr_close(struct sys *s, void *tc) { (void)s; (void)tc; }

static int rks_put1(struct sys *s, void *tc, const unsigned char *k, const unsigned char *v)
{
	struct rks *x = tc;
	char *e = NULL;

	rocksdb_put(x->db, x->wo, (const char *)k, KEY_LEN, (const char *)v, VAL_LEN, &e);
	if (e) {
		sys_err(s, "rocksdb put: %s%s", e, "");
		rocksdb_free(e);
		return -1;
	}
	return 0;
}

static int rks_get1(struct sys *s, void *tc, const unsigned char *k)
{
	struct rks *x = tc;
	char *e = NULL, *v;
	size_t vl;

	v = rocksdb_get(x->db, x->ro, (const char *)k, KEY_LEN, &vl, &e);
	if (e) {
		sys_err(s, "rocksdb get: %s%s", e, "");
		rocksdb_free(e);
		return -1;
	}
	rocksdb_free(v);
	return 0;
}

static int rks_load(struct sys *s, void *tc, long first, long n)
{
	struct rks *x = tc;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	unsigned char k[KEY_LEN], v[VAL_LEN];
	char *e = NULL;

	for (long i = first; i < first + n; i++) {
		make_key(s->c->seed, i, k);
		make_val(i, 0, v);
		rocksdb_writebatch_put(wb, (const char *)k, KEY_LEN, (const char *)v, VAL_LEN);
	}
	rocksdb_write(x->db, x->wo, wb, &e);
	rocksdb_writebatch_destroy(wb);
	if (e) {
		sys_err(s, "rocksdb write: %s%s", e, "");
		rocksdb_free(e);
		return -1;
	}
	return 0;
}

static int rks_sys_close(struct sys *s)
{
	rks_close(s->h);
	free(s->h);
	return 0;
}

const struct sysdef rocksdb_system = {
	"rocksdb", "rocksdb WAL sync", 3, 0, rks_sys_open, rks_thr_open, rks_thr_close,
	rks_put1, rks_get1, rks_load, NULL, rks_sys_close
};

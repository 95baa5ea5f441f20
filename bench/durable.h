/*
 * bench/durable.h - what the files of bench_durable share: the run's
 * configuration and figures, the systems' interface, and each file's
 * functions (what the program measures and prints: bench_durable.c).
 *
 * The program is these files, one job each; each calls only the ones
 * below it in this list (durable_run.c reaches a system through its
 * struct sysdef):
 *   bench_durable.c     options, the systems' list, the rounds, the
 *                       group-commit table
 *   durable_report.c    the Markdown table's rows and the CSV lines
 *   durable_run.c       one measured run: driver threads over a system,
 *                       in a child process; the recovery after a kill
 *   durable_untorn.c    untorn's four protections: preload and runner
 *   durable_sqlite.c    SQLite: preload and runner (through count_vfs.c)
 *   durable_lmdb.c      LMDB (built with UT_BENCH_LMDB only)
 *   durable_rocksdb.c   RocksDB (built with UT_BENCH_ROCKSDB only)
 *   durable_files.c     the databases' files: copy, remove, size, out of
 *                       the page cache
 *   durable_measure.c   latency percentiles, the block device's figures,
 *                       the process's peak RSS
 *   durable_workload.c  keys, values, random choices, the clock
 */
#ifndef BENCH_DURABLE_H
#define BENCH_DURABLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sysstat.h"
#include "untorn.h"

#define KEY_LEN 16
#define VAL_LEN 100
#define MAX_THREADS 64

enum workload { W_UPDATE, W_LOAD, W_MIX };
extern const char *const wl_names[];	/* by enum workload */

struct cfg {
	uint64_t data_bytes;
	long nkeys;
	size_t cache_mib;
	double secs;        /* measured interval (if ops == 0) */
	long ops;           /* measured operations (overrides secs) */
	double warmup;
	const char *dir;
	const char *modes;
	int modes_given;
	int keep;
	int threads[8];
	int nthreads;       /* --threads given */
	enum ut_protect gc_protect;
	uint64_t seed;
	enum workload wl;
	long batch;         /* load: puts per transaction */
	int get_pct;        /* mix: share of gets */
	int rounds;
	int csv;
	int no_copy;        /* runs use the preloaded files themselves */
	int warm_round;     /* a round 0 first, printed, not meant to be counted */
	long preload_txn;   /* puts per untorn preload transaction; 0: one */
	uint64_t ckpt[8];   /* --ckpt-sweep: checkpoint intervals, bytes */
	int nckpt;
	uint64_t ckpt_bytes; /* this run's interval (0: the engine's default) */
	int recover;        /* --recover: each run ends in a kill, recovery timed */
};

struct result {
	int ok;
	int na;              /* mode not available on this stack */
	long ops;            /* operations (puts, gets, loaded keys) */
	long commits;        /* durable write transactions */
	double secs;
	double page_bytes, dw_bytes, log_bytes, syncs; /* engine totals over the run */
	double log_syncs;    /* of syncs, the log's fdatasyncs (ut_wal_stats) */
	double dev_wbytes, dev_wreqs, dev_flushes;     /* block device, over the run */
	double dev_rreqs;                              /* (table only, not in the CSV) */
	double p50_us, p99_us, p999_us, max_us;
	double rss_kib;      /* peak RSS of the child */
	double images;       /* untorn: page images logged (fullpage) */
	double cpu_busy;     /* share of the machine's CPU time busy (/proc/stat) */
	double frame_waits;  /* untorn: waits for the page cleaner */
	double recover_s;    /* --recover: open after the kill to the first read */
	int recovered;       /* recover_s was measured */
	char note[256];
};

/* ---- the workload (durable_workload.c) */

/* splitmix64's finalizer: a bijection that scatters every bit */
uint64_t mix64(uint64_t z);
/* Key i: 16 pseudo-random bytes, distinct for distinct i. */
void make_key(uint64_t seed, long i, unsigned char *k);
/* Key i's value at version: VAL_LEN bytes, different for each version. */
void make_val(long i, uint64_t version, unsigned char *v);
struct rng { uint64_t s; };
long rnd_below(struct rng *r, long n);
double now(void);	/* seconds, CLOCK_MONOTONIC */
/* The preload's cache, holding the whole tree (the runs get -c). */
size_t preload_cache(const struct cfg *c);

/* ---- what a run measures beside the engines' counters (durable_measure.c) */

/* A run's transaction latencies, microseconds. */
struct lat { float *v; size_t n, cap; };
void lat_add(struct lat *l, double us);
/* Percentiles and maximum into r; l freed and emptied. */
void lat_done(struct lat *l, struct result *r);
/* The figures of the block device holding dir (or BENCH_DEVSTAT's). */
void devstat_read(const char *dir, struct devstat *d);
/* Peak RSS (VmHWM) from now on, and what it is. */
void rss_reset(void);
double rss_peak_kib(void);

/* ---- the databases' files (durable_files.c) */

/* DIR/name into buf. */
void path_of(const struct cfg *c, const char *name, char *buf, size_t n);
/* Remove a database: the file and its companions, or a directory. */
void remove_db(const char *path);
int exists(const char *p);
/* Copy DB and its "-wal" (a directory: every file) to a fresh path, both
 * dropped from the page cache; 0 or -1. */
int copy_db(const char *from, const char *to);
/* The files of a database (a directory's too) out of the page cache. */
void drop_db_cache(const char *path);
/* Bytes of a file, or of the files of a directory. */
long long file_size(const char *p);

/* ---- the systems */

struct sys;
struct sysdef {
	const char *key, *name;
	int family;              /* preload and file: 0 untorn, 1 sqlite, 2 lmdb, 3 rocksdb */
	enum ut_protect prot;    /* untorn */
	int (*open)(struct sys *s);
	void *(*thr_open)(struct sys *s);          /* NULL on failure */
	void (*thr_close)(struct sys *s, void *tc);
	/* one durable single-put transaction / one read transaction / one
	 * transaction putting keys first..first+n-1 (load); 0 or -1 (s->err) */
	int (*put1)(struct sys *s, void *tc, const unsigned char *k, const unsigned char *v);
	int (*get1)(struct sys *s, void *tc, const unsigned char *k);
	int (*load)(struct sys *s, void *tc, long first, long n);
	/* add sign * the engine's own counters into r (NULL: none) */
	void (*ctrs)(struct sys *s, struct result *r, double sign);
	int (*close)(struct sys *s);
};

struct sys {
	const struct cfg *c;
	const struct sysdef *d;
	const char *path;
	int nth;
	int na;
	void *h;
	unsigned int dbi;        /* LMDB MDB_dbi */
	pthread_mutex_t mu;      /* SQLite: one writer at a time */
	char err[256];
	char note[256];
};

/* The message of a failed call into s->err (fmt takes two strings). */
static inline void sys_err(struct sys *s, const char *fmt, const char *a,
			   const char *b)
{
	snprintf(s->err, sizeof(s->err), fmt, a, b);
}

/* Each family's preload of c->nkeys keys into path (0, or -1 said on
 * stderr) and its systems, for bench_durable.c's list. */
int preload_untorn(const struct cfg *c, const char *path);
extern const struct sysdef untorn_systems[4]; /* doublewrite, fullpage, unsafe, atomic */
int preload_sqlite(const struct cfg *c, const char *path);
extern const struct sysdef sqlite_system;
#ifdef UT_BENCH_LMDB
int preload_lmdb(const struct cfg *c, const char *path);
extern const struct sysdef lmdb_system;
#endif
#ifdef UT_BENCH_ROCKSDB
int preload_rocksdb(const struct cfg *c, const char *path);
extern const struct sysdef rocksdb_system;
#endif

/* ---- one run (durable_run.c) */

/* Run system d on the database at path with nth threads, in a child
 * process: the figures in r (r->ok), 0, or -1 with r->note saying why. */
int run_child(const struct cfg *c, const struct sysdef *d, const char *path,
	      int nth, struct result *r);
/* --recover: time the recovery of the files a run left at path (its
 * recover_s), in a fresh child; a failure is added to r->note. */
void run_recovery(const struct cfg *c, const struct sysdef *d, const char *path,
		  struct result *r);

/* ---- output (durable_report.c) */

/* 4M, 1G, 65536: a size as --ckpt-sweep takes it */
void fmt_size(char *b, size_t n, uint64_t v);
/* fullpage: the page images per commit, added to r->note */
void note_images(struct result *r);
void print_header(void);
void print_row(const char *name, int round, int nth, const struct result *r);
void print_csv(const struct cfg *c, const char *key, int round, int nth,
	       const struct result *r);

#endif /* BENCH_DURABLE_H */

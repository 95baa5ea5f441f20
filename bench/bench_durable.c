/*
 * bench/bench_durable.c - durable commits: what each torn-page protection
 * costs, side by side with SQLite (and LMDB, RocksDB when built with them),
 * on one filesystem, in one run.
 *
 * Workloads (-W; keys from the seed, 16-byte keys, 100-byte values new to
 * every run, run_nonce):
 *   update   (default) single-put transactions (begin, put of a random
 *            existing key with a new value, commit) with sync=1.  With the
 *            data several times the cache (-s >> -c) page flushing
 *            (eviction + checkpoints) dominates, not just the log (issue 11
 *            workload 1; with --threads, workload 2); with the data in the
 *            cache (-c > -s) it measures the log and checkpoints (workload 3).
 *   load     bulk load into an empty database: transactions of -b puts
 *            (keys in the preload's random order) with sync=1, for -t
 *            seconds or until every key is in (workload 4).  ops = keys.
 *   mix      -g percent (default 90) single-get read transactions, the rest
 *            single-put sync=1 transactions (workload 5).  ops = gets + puts.
 *   Each runs T seconds (-t) or N operations (-n) after a warm-up (-w
 *   seconds, not counted), with K threads (--threads, default 1).
 *
 * Preload (update, mix): D bytes of data (-s, default 1 GiB): D / 116 keys,
 * random order, done ONCE per engine family.  untorn is preloaded in one
 * transaction (--preload-txn N: N puts each) with UT_PROTECT_UNSAFE,
 * sync=0, a cache holding the whole tree and the automatic checkpoint out
 * of the way (engine/db.h ut_db_set_checkpoint_bytes), then ut_close
 * (checkpoint: every page in the data file, the log reclaimed).  Each
 * mode opens a byte copy.  SQLite is loaded in one transaction with
 * journal_mode=OFF, switched to WAL, checkpointed, closed; LMDB with
 * MDB_NOSYNC, then mdb_env_sync; RocksDB without its WAL, then a memtable
 * flush.  Every run gets its own copy, fdatasync'ed and dropped
 * from the OS page cache (POSIX_FADV_DONTNEED), so each starts cold.
 * --no-copy (for a slow, throttled disk where copies cost more than the
 * runs): the runs open the preloaded files themselves, each continuing from
 * the clean close of the one before (updates overwrite existing keys, so the
 * data stays the same size), dropped from the page cache before each run;
 * the preloads are named by their key count and seed, kept, and reused by
 * a later invocation with the same -d, -s and --seed.
 *
 * Systems (-m, in this order within a round; --rounds R repeats the list R
 * times, interleaved, after one preload):
 *   doublewrite, fullpage, unsafe, atomic   untorn with that protection
 *            (atomic: "n/a" with the engine's reason where statx reports no
 *            16 KiB unit; fullpage: page images in the log, whose count per
 *            commit the notes give as "images/c")
 *   sqlite   WAL, synchronous=FULL, page_size 16384, WITHOUT ROWID, upsert
 *            through INSERT ... ON CONFLICT DO UPDATE, cache -c (split over
 *            the threads' connections); writers serialized by an
 *            application mutex (SQLite has one writer; no group commit)
 *   lmdb     default durable commits (no MDB_NOSYNC/NOMETASYNC), memory map
 *            (no cache bound: the OS page cache holds the data)
 *   rocksdb  WAL with sync=true per write, write_buffer_size = -c, LRU block
 *            cache -c
 *
 * Figures per run (measured interval only; close excluded):
 *   ops/s, commits (durable transactions), p50/p99/p99.9 latency of one
 *   transaction in microseconds; at the device (the block device holding -d,
 *   from /sys/dev/block/MAJ:MIN/stat, or the stat files listed in
 *   BENCH_DEVSTAT: what the filesystem and engine really sent): bytes
 *   written, write requests, flushes, and read requests (table only, "dev
 *   r/c"); untorn's own counters (ut_stats): in-place page bytes,
 *   double-write bytes, log bytes, syncs;
 *   SQLite's from a counting VFS shim: main-file bytes (its checkpoints) as
 *   page bytes, -wal bytes as log bytes, xSync calls as syncs; peak RSS of
 *   the child process running it (VmHWM, reset at its start); the share of
 *   the machine's CPU time that was busy (/proc/stat; in the VM: is it the
 *   guest CPUs or the disk that sets the pace).
 * BENCH_THROTTLE=BPS,IOPS (environment): untorn's files pass the VM
 * benchmark's write throttle, modelled on the host (throttle_vfs.h), with
 * atomic writes faked where the host has none: the VM's latencies from
 * the device's side, for a quick look before a VM run.
 * Each run is a child process.  Output: a Markdown table on stdout and, per
 * run, one machine-readable line (--csv, or always with --rounds):
 *   csv,round,workload,system,threads,ops,commits,secs,ops_s,p50_us,p99_us,
 *   p999_us,dev_wbytes,dev_wreqs,dev_flushes,page_bytes,dw_bytes,log_bytes,
 *   syncs,rss_kib,cpu_busy,note,recover_s
 * (recover_s last, so that older CSVs read the same; empty without
 * --recover)
 * (bench/raw_atomic.c prints the same columns for the raw-device ceiling).
 *
 * Group-commit table (--threads L without -m): untorn with -p (default
 * doublewrite), K threads for each K in L: commits/s, syncs/commit (all
 * fdatasyncs) and log syncs/commit (the log's own, from ut_wal_stats).
 *
 *   bench_durable [--quick] [-s SIZE] [-c CACHE_MIB] [-t SECS] [-n OPS]
 *                 [-w WARMUP_SECS] [-d DIR] [-m SYSTEMS] [-k] [-W WORKLOAD]
 *                 [-b BATCH] [-g GET_PCT] [--rounds R] [--csv]
 *                 [--threads LIST] [-p PROTECT] [--seed N] [--no-copy]
 *                 [--warm-round] [--ckpt-sweep LIST] [--recover]
 *
 * Recovery after a kill (--recover): every run ends without a close (the
 * child exits with the engine's threads running: what SIGKILL leaves),
 * then a fresh child opens the killed files, out of the page cache, and
 * the time from the open to the first read's answer is the run's
 * "recov s" (CSV recover_s): untorn's evidence check, redo from the last
 * checkpoint and recovery's checkpoint; SQLite's WAL index rebuilt from
 * the -wal.  It depends on the log since the last checkpoint, so on the
 * checkpoint interval (--ckpt-sweep); bench_recovery measures it at a
 * chosen log length.
 *
 * Checkpoint-interval sweep (--ckpt-sweep 4M,16M,64M,256M): every untorn
 * system runs once per interval (the log bytes between automatic
 * checkpoints, engine/db.h ut_db_set_checkpoint_bytes; default 64 MiB),
 * named "MODE ckpt=SIZE" in the table and "MODE@SIZE" in the CSV's system
 * column; the peers run once.  Full-page writes cost less with a longer
 * interval (fewer first changes after a checkpoint), double-write does not
 * depend on it: the sweep shows where the two cross.
 *   --quick = -s 64M -c 16 -t 10 -w 2
 *
 * This file holds the options, the systems' list, the rounds and the
 * group-commit table; durable.h lists the program's other files.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "durable.h"

/* ------------------------------------------------------------ systems */

/* in this order within a round */
static const struct sysdef *const systems[] = {
	&untorn_systems[0], &untorn_systems[1], &untorn_systems[2], &untorn_systems[3],
	&sqlite_system,
#ifdef UT_BENCH_LMDB
	&lmdb_system,
#endif
#ifdef UT_BENCH_ROCKSDB
	&rocksdb_system,
#endif
};
#define NSYSTEMS (sizeof(systems) / sizeof(systems[0]))
static const char *const family_file[] = { "ut", "sqlite", "lmdb", "rocksdb" };

static const struct sysdef *sys_find(const char *key, size_t n)
{
	for (size_t i = 0; i < NSYSTEMS; i++)
		if (strlen(systems[i]->key) == n && !strncmp(systems[i]->key, key, n))
			return systems[i];
	return NULL;
}

/* ------------------------------------------------------------ main */

static uint64_t parse_size(const char *s)
{
	char *e;
	double v = strtod(s, &e);

	switch (*e) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1048576; break;
	case 'g': case 'G': v *= 1073741824.0; break;
	default: break;
	}
	return (uint64_t)v;
}


static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_durable [--quick] [-s SIZE] [-c CACHE_MIB] [-t SECS] [-n OPS]\n"
		"                     [-w WARMUP] [-d DIR] [-m SYSTEMS] [-k] [-W WORKLOAD]\n"
		"                     [-b BATCH] [-g GET_PCT] [--rounds R] [--csv] [--seed N]\n"
		"                     [--threads LIST] [--ckpt-sweep LIST] [--recover]\n"
		"       bench_durable --threads 1,4,16 [-p PROTECT] [same options]\n"
		"  -s SIZE     data to preload (K/M/G suffix; default 1G = SIZE/116 keys)\n"
		"  -c MIB      cache in the measured runs (default 64)\n"
		"  -t SECS     measured seconds per run (default 30)\n"
		"  -n OPS      measured operations per run instead of -t\n"
		"  -w SECS     warm-up per run, not counted (default 5)\n"
		"  -d DIR      directory for the databases (default .)\n"
		"  -m SYSTEMS  in this order: doublewrite,fullpage,unsafe,atomic,sqlite"
#ifdef UT_BENCH_LMDB
		",lmdb"
#endif
#ifdef UT_BENCH_ROCKSDB
		",rocksdb"
#endif
		"\n"
		"              (default doublewrite,fullpage,unsafe,atomic,sqlite)\n"
		"  -W WL       update (default), load (bulk load, -b puts per sync=1\n"
		"              transaction), mix (-g %% gets, the rest sync=1 puts)\n"
		"  -b N        load: puts per transaction (default 1000)\n"
		"  -g PCT      mix: percent of operations that are gets (default 90)\n"
		"  --rounds R  run the system list R times, interleaved (one preload)\n"
		"  --csv       print a csv line per run (always with --rounds)\n"
		"  -k          keep the database files\n"
		"  --no-copy   runs use the (kept, reused) preloaded files, no copies\n"
		"  --warm-round  run a round 0 first (each system's first run after the\n"
		"              preload), printed as round 0, for the caller to discard\n"
		"  --preload-txn N  puts per transaction of untorn's preload (default:\n"
		"              all in one, as SQLite's)\n"
		"  --quick     -s 64M -c 16 -t 10 -w 2\n"
		"  --ckpt-sweep L  untorn systems once per checkpoint interval in L\n"
		"              (log bytes between checkpoints, K/M/G; e.g. 4M,16M,64M,256M)\n"
		"  --recover   end each run with a kill (no close) and time the recovery:\n"
		"              open of the killed files to the first read, cache dropped\n"
		"  --threads L K threads for each K in L; without -m: the group-commit\n"
		"              table for untorn with -p PROTECT (default doublewrite)\n");
}

static int parse_modes(const char *list, const struct sysdef **out, int max)
{
	int n = 0;

	for (const char *p = list; *p && n < max;) {
		size_t len = strcspn(p, ",");
		const struct sysdef *d = sys_find(p, len);

		if (!d && len) {
			fprintf(stderr, "bench_durable: unknown system '%.*s' (not built in?)\n",
				(int)len, p);
			return -1;
		}
		if (d)
			out[n++] = d;
		p += len;
		if (*p == ',')
			p++;
	}
	return n;
}

static int group_table(const struct cfg *c, const char *upre)
{
	const struct sysdef *d = NULL;
	char p[4096];

	for (size_t i = 0; i < NSYSTEMS; i++)
		if (systems[i]->family == 0 && systems[i]->prot == c->gc_protect)
			d = systems[i];
	if (!d) {
		fprintf(stderr, "bench_durable: -p auto has no group table; use -m\n");
		return 1;
	}
	printf("\ngroup commit: untorn %s, sync=1, single-put transactions, "
	       "K threads\n\n", ut_protect_name(c->gc_protect));
	printf("| threads | commits/s | syncs/commit | log syncs/commit | log B/c "
	       "| p50 µs | p99 µs | commits | notes |\n");
	printf("|--------:|----------:|-------------:|-----------------:|--------:"
	       "|-------:|-------:|--------:|---|\n");
	fflush(stdout);
	for (int i = 0; i < c->nthreads; i++) {
		struct result r;

		path_of(c, "durable-run.ut", p, sizeof(p));
		if (copy_db(upre, p)) {
			perror("copy");
			return 1;
		}
		if (run_child(c, d, p, c->threads[i], &r)) {
			printf("| %7d | %s |\n", c->threads[i], r.note);
		} else {
			double n = r.commits ? (double)r.commits : 1;

			printf("| %7d | %9.0f | %12.3f | %16.3f | %7.0f | %6.0f | %6.0f | %7ld | %s |\n",
			       c->threads[i], r.commits / r.secs, r.syncs / n,
			       r.log_syncs / n, r.log_bytes / n, r.p50_us, r.p99_us, r.commits,
			       r.note);
		}
		if (c->csv)
			print_csv(c, d->key, 1, c->threads[i], &r);
		fflush(stdout);
		remove_db(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "quick", no_argument, NULL, 'Q' },
		{ "threads", required_argument, NULL, 'T' },
		{ "rounds", required_argument, NULL, 'R' },
		{ "csv", no_argument, NULL, 'C' },
		{ "seed", required_argument, NULL, 'S' },
		{ "no-copy", no_argument, NULL, 'N' },
		{ "warm-round", no_argument, NULL, 'V' },
		{ "preload-txn", required_argument, NULL, 'P' },
		{ "ckpt-sweep", required_argument, NULL, 'K' },
		{ "recover", no_argument, NULL, 'X' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct cfg c = {
		.data_bytes = 1ull << 30, .cache_mib = 64, .secs = 30, .warmup = 5,
		.dir = ".", .modes = "doublewrite,fullpage,unsafe,atomic,sqlite",
		.gc_protect = UT_PROTECT_DOUBLEWRITE, .seed = 42, .wl = W_UPDATE,
		.batch = 1000, .get_pct = 90, .rounds = 1,
	};
	const struct sysdef *list[16];
	char pre[4][4096], p[4096];
	int need[4] = { 0 }, nsys, opt;

	while ((opt = getopt_long(argc, argv, "s:c:t:n:w:d:m:kp:W:b:g:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'Q':
			c.data_bytes = 64ull << 20;
			c.cache_mib = 16;
			c.secs = 10;
			c.warmup = 2;
			break;
		case 's': c.data_bytes = parse_size(optarg); break;
		case 'c': c.cache_mib = (size_t)atol(optarg); break;
		case 't': c.secs = atof(optarg); break;
		case 'n': c.ops = atol(optarg); break;
		case 'w': c.warmup = atof(optarg); break;
		case 'd': c.dir = optarg; break;
		case 'm': c.modes = optarg; c.modes_given = 1; break;
		case 'k': c.keep = 1; break;
		case 'b': c.batch = atol(optarg); break;
		case 'g': c.get_pct = atoi(optarg); break;
		case 'R': c.rounds = atoi(optarg); c.csv = 1; break;
		case 'C': c.csv = 1; break;
		case 'N': c.no_copy = 1; c.keep = 1; break;
		case 'V': c.warm_round = 1; break;
		case 'P': c.preload_txn = atol(optarg); break;
		case 'X': c.recover = 1; break;
		case 'K': {
			char *s = optarg;

			c.nckpt = 0;
			while (*s && c.nckpt < 8) {
				size_t len = strcspn(s, ",");
				char one[32];
				double v;

				snprintf(one, sizeof(one), "%.*s", (int)len, s);
				v = parse_size(one);
				if (!(v >= 1 << 16)) {
					usage(stderr);
					return 64;
				}
				c.ckpt[c.nckpt++] = (uint64_t)v;
				s += len;
				if (*s == ',')
					s++;
			}
			break;
		}
		case 'S': c.seed = strtoull(optarg, NULL, 0); break;
		case 'W':
			if (!strcmp(optarg, "update")) c.wl = W_UPDATE;
			else if (!strcmp(optarg, "load")) c.wl = W_LOAD;
			else if (!strcmp(optarg, "mix")) c.wl = W_MIX;
			else { usage(stderr); return 64; }
			break;
		case 'p':
			if (!strcmp(optarg, "doublewrite")) c.gc_protect = UT_PROTECT_DOUBLEWRITE;
			else if (!strcmp(optarg, "unsafe")) c.gc_protect = UT_PROTECT_UNSAFE;
			else if (!strcmp(optarg, "atomic")) c.gc_protect = UT_PROTECT_ATOMIC;
			else if (!strcmp(optarg, "fullpage")) c.gc_protect = UT_PROTECT_FULLPAGE;
			else if (!strcmp(optarg, "auto")) c.gc_protect = UT_PROTECT_AUTO;
			else { usage(stderr); return 64; }
			break;
		case 'T': {
			char *s = optarg, *e;

			c.nthreads = 0;
			while (*s && c.nthreads < 8) {
				long v = strtol(s, &e, 10);

				if (e == s || v < 1 || v > MAX_THREADS) {
					usage(stderr);
					return 64;
				}
				c.threads[c.nthreads++] = (int)v;
				s = *e == ',' ? e + 1 : e;
			}
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 64;
		}
	}
	if (c.rounds < 1 || c.batch < 1 || c.get_pct < 0 || c.get_pct > 100) {
		usage(stderr);
		return 64;
	}
	c.nkeys = (long)(c.data_bytes / (KEY_LEN + VAL_LEN));
	if (c.nkeys < 1000)
		c.nkeys = 1000;
	for (int f = 0; f < 4; f++) {
		char name[64];

		if (c.no_copy)
			snprintf(name, sizeof(name), "durable-%ld-%llu.%s", c.nkeys,
				 (unsigned long long)c.seed, family_file[f]);
		else
			snprintf(name, sizeof(name), "durable-preload.%s", family_file[f]);
		path_of(&c, name, pre[f], sizeof(pre[f]));
	}

	printf("bench_durable: workload %s, %ld keys (%.0f MiB of 16+100-byte records), "
	       "cache %zu MiB, ", wl_names[c.wl], c.nkeys, c.nkeys * 116.0 / 1048576,
	       c.cache_mib);
	if (c.wl == W_LOAD)
		printf("%ld puts per sync=1 transaction into an empty database, ", c.batch);
	if (c.wl == W_MIX)
		printf("%d%% gets, %d%% sync=1 single puts, ", c.get_pct, 100 - c.get_pct);
	printf("%.0f s warm-up, dir %s\n", c.warmup, c.dir);
	if (c.ops)
		printf("measured: %ld operations per run\n", c.ops);
	else
		printf("measured: %.0f s per run\n", c.secs);
	fflush(stdout);

	if (c.nthreads && !c.modes_given) {
		int rc;

		if (preload_untorn(&c, pre[0]))
			return 1;
		rc = group_table(&c, pre[0]);
		if (!c.keep)
			remove_db(pre[0]);
		return rc;
	}
	if (!c.nthreads) {
		c.threads[0] = 1;
		c.nthreads = 1;
	}
	if ((nsys = parse_modes(c.modes, list, 16)) < 0)
		return 64;
	for (int i = 0; i < nsys; i++)
		need[list[i]->family] = 1;
	if (c.wl != W_LOAD) {
		for (int f = 0; f < 4; f++)
			if (need[f] && c.no_copy && exists(pre[f])) {
				fprintf(stderr, "preload %s: reusing %s\n", family_file[f], pre[f]);
				need[f] = 0;
			}
		if (need[0] && preload_untorn(&c, pre[0]))
			return 1;
		if (need[1] && preload_sqlite(&c, pre[1]))
			return 1;
#ifdef UT_BENCH_LMDB
		if (need[2] && preload_lmdb(&c, pre[2]))
			return 1;
#endif
#ifdef UT_BENCH_ROCKSDB
		if (need[3] && preload_rocksdb(&c, pre[3]))
			return 1;
#endif
	}
	printf("\n");
	print_header();
	fflush(stdout);
	for (int round = c.warm_round ? 0 : 1; round <= c.rounds; round++)
		for (int ti = 0; ti < c.nthreads; ti++)
			for (int i = 0, ci = 0; i < nsys; ci = 0, i++)
			for (; ci < (list[i]->family == 0 && c.nckpt ? c.nckpt : 1); ci++) {
				const struct sysdef *d = list[i];
				struct result r;
				char name[64], label[64], key[64];
				struct cfg cc = c;

				snprintf(name, sizeof(name), "durable-run.%s", family_file[d->family]);
				path_of(&c, name, p, sizeof(p));
				if (c.wl == W_LOAD) {
					remove_db(p);
				} else if (c.no_copy) {
					snprintf(p, sizeof(p), "%s", pre[d->family]);
					drop_db_cache(p);
				} else if (copy_db(pre[d->family], p)) {
					perror("copy");
					return 1;
				}
				snprintf(label, sizeof(label), "%s", d->name);
				snprintf(key, sizeof(key), "%s", d->key);
				if (d->family == 0 && c.nckpt) {
					char sz[32];

					cc.ckpt_bytes = c.ckpt[ci];
					fmt_size(sz, sizeof(sz), cc.ckpt_bytes);
					snprintf(label, sizeof(label), "%s ckpt=%s", d->key, sz);
					snprintf(key, sizeof(key), "%s@%s", d->key, sz);
				}
				if (!run_child(&cc, d, p, c.threads[ti], &r) && c.recover)
					run_recovery(&cc, d, p, &r);
				note_images(&r);
				print_row(label, round, c.threads[ti], &r);
				if (c.csv)
					print_csv(&c, key, round, c.threads[ti], &r);
				fflush(stdout);
				if (c.wl == W_LOAD || !c.no_copy)
					remove_db(p);
			}
	if (!c.keep)
		for (int f = 0; f < 4; f++)
			remove_db(pre[f]);
	return 0;
}

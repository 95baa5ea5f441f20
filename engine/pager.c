/*
 * engine/pager.c - the pager's life: open (create, header checks, the
 * flush strategy and its recovery), close, and the handle's accessors.
 * The rest of the pager lives beside it: pool.c (frames and page access),
 * version.c (snapshots), journal.c (the write transaction), cleaner.c and
 * checkpoint.c (page writes), redo.c (recovery).  Contract in pager.h;
 * the shared internals in pager_int.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "flush_doublewrite.h"
#include "pager_int.h"

size_t ut_pager_test_pre_slack;

uint32_t ut_pager_root(ut_pager *p) { return meta32(p, UT_META_ROOT); }
uint32_t ut_pager_page_count(ut_pager *p) { return meta32(p, UT_META_PAGECOUNT); }
uint32_t ut_pager_free_count(ut_pager *p) { return meta32(p, UT_META_FREECOUNT); }
const char *ut_pager_path(ut_pager *p) { return p->path; }
ut_vfs *ut_pager_vfs(ut_pager *p) { return p->vfs; }
ut_io_counters *ut_pager_counters(ut_pager *p) { return &p->ctr; }
void ut_pager_counters_copy(ut_pager *p, ut_io_counters *out)
{
	/* every field a uint64_t bumped by ut_ctr_add (flush.h) */
	_Static_assert(sizeof(ut_io_counters) % sizeof(uint64_t) == 0,
		       "ut_io_counters holds uint64_t fields only");
	const uint64_t *src = (const uint64_t *)&p->ctr;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}
int ut_pager_protect(ut_pager *p)
{
	return p->readonly ? (int)p->last_mode : p->fl->ops->protect;
}

int ut_pager_logs_images(ut_pager *p)
{
	return !p->readonly && (p->fl->ops->log_images || p->fpi_pending);
}

/* fullpage protects a page by its image in the log, and a log written in
 * another mode has none: opening such a database after a crash in
 * fullpage mode, its recovery's page writes (redo's evictions, the
 * checkpoint that ends it) would be unprotected, and a crash during them
 * would tear pages whose log holds only deltas.  So they go through the
 * double-write file; ut_pager_recovered hands over to fullpage after that
 * checkpoint.  Called once the header is read. */
static int fullpage_recovery_via_dw(ut_pager *p)
{
	ut_flusher *dw;
	int rc;

	if (p->fl->ops->protect != UT_PROTECT_FULLPAGE || p->last_clean ||
	    p->last_mode == UT_PROTECT_FULLPAGE)
		return UT_OK;
	rc = ut_flusher_create(UT_PROTECT_DOUBLEWRITE, p->vfs, p->path, p->file,
			       &p->ctr, &dw);
	/* (its recover: the batch ids of copies a double-write run left;
	 * repairs it finds wait in p->pend like the others) */
	if (rc == UT_OK && (rc = dw->ops->recover(dw, p->file, p->pend)) != UT_OK)
		ut_flusher_destroy(dw);
	if (rc)
		return rc;
	ut_flusher_destroy(p->fl);
	p->fl = dw;
	p->fpi_pending = 1;
	return UT_OK;
}

int ut_pager_recovered(ut_pager *p)
{
	ut_flusher *fl;
	int rc;

	if (!p->fpi_pending)
		return UT_OK;
	rc = ut_flusher_create(UT_PROTECT_FULLPAGE, p->vfs, p->path, p->file,
			       &p->ctr, &fl);
	if (rc)
		return rc;
	snprintf(fl->reason, sizeof(fl->reason), "requested by name (the "
		 "recovery of a crash in %s mode wrote through the double-write "
		 "file)", ut_protect_name((int)p->last_mode));
	pthread_mutex_lock(&p->flush_mu);
	pthread_mutex_lock(&p->mu);
	ut_flusher_destroy(p->fl);
	p->fl = fl;
	p->fpi_pending = 0;
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->flush_mu);
	return UT_OK;
}
int ut_pager_fatal(ut_pager *p) { return fatal_now(p); }
size_t ut_pager_frames(ut_pager *p)
{
	size_t n;

	/* the cleaner thread shrinks the pool too (cleaner.c) */
	pthread_mutex_lock(&p->mu);
	n = p->nframes;
	pthread_mutex_unlock(&p->mu);
	return n;
}

uint64_t ut_pager_lsn(ut_pager *p) { return p->lsn; }
void ut_pager_set_lsn(ut_pager *p, uint64_t lsn)
{
	if (lsn > p->lsn)
		p->lsn = lsn;
	if (lsn > p->durable_lsn)
		p->durable_lsn = lsn;
}
void ut_pager_set_fatal(ut_pager *p, int poison_reads)
{
	pthread_mutex_lock(&p->mu);
	if (!fatal_now(p))
		pager_record_fatal(p, UT_EFATAL); /* the caller's failure */
	__atomic_store_n(&p->fatal, UT_EFATAL, __ATOMIC_RELEASE);
	if (poison_reads)
		__atomic_store_n(&p->poisoned, 1, __ATOMIC_RELEASE);
	pager_wake_all(p);
	pthread_mutex_unlock(&p->mu);
}
int ut_pager_poisoned(ut_pager *p)
{
	return __atomic_load_n(&p->poisoned, __ATOMIC_ACQUIRE);
}
int ut_pager_created(ut_pager *p) { return p->created; }

int ut_pager_was_clean(ut_pager *p) { return !p->created && p->last_clean; }

void ut_pager_set_hooks(ut_pager *p, const ut_log_hooks *hooks)
{
	if (hooks)
		p->hooks = *hooks;
	else
		memset(&p->hooks, 0, sizeof(p->hooks));
}

static void pager_free_all(ut_pager *p)
{
	pager_stop_cleaner(p);
	free(p->snap);
	free(p->ckpt_hdr);
	free(p->hdr_disk);
	free(p->sealbuf);
	free(p->bound_buf);
	free(p->hinted);
	ut_dw_pending_free(p->pend);
	free(p->pend);
	pthread_cond_destroy(&p->work_cv);
	pthread_cond_destroy(&p->done_cv);
	pthread_mutex_destroy(&p->flush_mu);
	if (p->vbuckets)
		pager_kept_free_all(p);
	pager_snap_fini(p);
	free(p->vbuckets);
	pthread_cond_destroy(&p->load_cv);
	for (size_t i = 0; i < p->nframes; i++) {
		if (p->frames[i]->cur)
			free(p->frames[i]->cur->aux);
		free(p->frames[i]->cur);
		free(p->frames[i]);
	}
	while (p->ffree) {
		struct frame *f = p->ffree;

		p->ffree = f->fnext;
		free(f);
	}
	while (p->vfree) {
		struct pver *v = p->vfree;

		p->vfree = v->qnext;
		free(v);
	}
	while (p->nvstash)
		free(p->vstash[--p->nvstash]);
	free(p->nvbuf);
	for (size_t i = 0; i < p->nslabs; i++)
		munmap(p->slabs[i], (size_t)SLAB_PAGES * UT_PAGE_SIZE);
	free(p->slabs);
	free(p->pool);
	free(p->advise);
	free(p->frames);
	pager_ptable_free(p);
	free(p->tx);
	free(p->logpages);
	free(p->fpages);
	ut_flusher_destroy(p->fl);
	if (p->rfile != p->file)
		ut_file_close(p->rfile);
	ut_file_close(p->file);
	pthread_mutex_destroy(&p->mu);
	free(p->path);
	free(p);
}

int ut_pager_close(ut_pager *p)
{
	int rc = UT_OK;

	if (!p)
		return UT_OK;
	if (p->in_txn)
		ut_pager_rollback(p);
	p->closing = 1;
	if (p->readonly)
		rc = UT_OK; /* nothing was changed, nothing is written */
	else
		rc = fatal_now(p) ? UT_EFATAL : ut_pager_checkpoint(p);
	pager_stop_cleaner(p);
	if (rc)
		ut_set_errdetail("%s: close: dirty pages could not be written (%s)",
				 p->path, ut_strerror(rc));
	pager_free_all(p);
	return rc;
}

int64_t pager_read_page(ut_pager *p, uint32_t pgno, uint8_t *buf)
{
	const uint8_t *c = ut_dw_pending_page(p->pend, pgno);

	if (c) {
		memcpy(buf, c, UT_PAGE_SIZE);
		return UT_PAGE_SIZE;
	}
	return ut_file_read(p->rfile, buf, UT_PAGE_SIZE,
			    (uint64_t)pgno * UT_PAGE_SIZE);
}

int pager_apply_repairs(ut_pager *p)
{
	uint64_t n;
	int rc;

	if (!p->pend || !p->pend->n)
		return UT_OK;
	rc = ut_dw_apply(p->file, p->pend, &n);
	if (rc == UT_OK) {
		ut_ctr_add(&p->ctr.torn_repaired, n);
		ut_ctr_add(&p->ctr.syncs, 1);
	}
	return rc;
}

int pager_dw_name(const char *path, char **out)
{
	size_t n = strlen(path);
	char *s = malloc(n + sizeof(UT_DW_SUFFIX));

	if (!s)
		return UT_ENOMEM;
	memcpy(s, path, n);
	memcpy(s + n, UT_DW_SUFFIX, sizeof(UT_DW_SUFFIX));
	*out = s;
	return UT_OK;
}

static void init_meta(uint8_t *m, int mode)
{
	ut_page_init(m, 0, UT_PT_META);
	memcpy(m + UT_META_MAGIC, UT_MAGIC, 8);
	ut_st32(m + UT_META_VERSION, UT_FORMAT_NO_TABLES);
	ut_st32(m + UT_META_PAGESIZE, UT_PAGE_SIZE);
	ut_st32(m + UT_META_ROOT, 1);
	ut_st32(m + UT_META_FREEHEAD, 0);
	ut_st32(m + UT_META_PAGECOUNT, 2);
	ut_st32(m + UT_META_FREECOUNT, 0);
	ut_st64(m + UT_META_CKPT_LSN, 0);
	ut_st64(m + UT_META_MAXLSN, 0);
	ut_st32(m + UT_META_MODE, (uint32_t)mode);
	ut_st32(m + UT_META_CLEAN, 0);
	ut_st64(m + UT_META_PAGEBOUND, 0); /* the root and header: LSN 0 */
}

/* Creation writes the root (page 1, an empty leaf, LSN 0) and then the
 * header (page 0), each durably, and it removes a stale log first.  So a
 * file of at most two pages with an all-zero page 0 is a creation the power
 * cut short only if page 1 is missing, zero or that empty root, and no log
 * exists; anything else held data (a zeroed header is damage).  page0 holds
 * the first page as read (zero-filled past the end).  Sets p->page1_untorn. */
/* b (page 1 as read, zeros past the file's end) is creation's write of
 * the new empty root, maybe in part: each 4 KiB sector zeros or that
 * sector of the root.  A mode without a copy (fullpage, unsafe) can leave
 * it torn so when the power goes before the header is written: nothing
 * was ever committed.  A root that held keys differs in its first sector
 * (slot count, LSN). */
static int part_of_new_root(const uint8_t *b)
{
	uint8_t *r = ut_io_alloc(UT_PAGE_SIZE);
	int part = 1;

	if (!r)
		return 0;
	ut_page_init(r, 1, UT_PT_LEAF);
	ut_page_seal(r);
	for (size_t s = 0; s < UT_PAGE_SIZE && part; s += 4096) {
		int zero = 1;

		for (size_t i = s; i < s + 4096 && zero; i++)
			zero = !b[i];
		part = zero || !memcmp(b + s, r + s, 4096);
	}
	free(r);
	return part;
}

static int never_held_data(ut_pager *p, const char *path, const uint8_t *page0,
			   uint64_t size, int *never)
{
	uint8_t *b = ut_io_alloc(UT_PAGE_SIZE);
	int64_t n;
	int rc = UT_OK;
	char *wpath;

	*never = 0;
	if (!b)
		return UT_ENOMEM;
	memset(b, 0, UT_PAGE_SIZE);
	n = pager_read_page(p, 1, b);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	p->page1_untorn = n == UT_PAGE_SIZE && ut_page_checksum_ok(b);
	if (!ut_page_is_zero(page0) || size > 2 * (uint64_t)UT_PAGE_SIZE)
		goto out;
	if (!ut_page_is_zero(b) &&
	    !(p->page1_untorn && ut_page_type(b) == UT_PT_LEAF &&
	      ut_page_nslots(b) == 0 && ut_page_lsn(b) == 0) &&
	    !part_of_new_root(b))
		goto out;
	wpath = malloc(strlen(path) + sizeof(UT_WAL_SUFFIX));
	if (!wpath) {
		rc = UT_ENOMEM;
		goto out;
	}
	strcpy(wpath, path);
	strcat(wpath, UT_WAL_SUFFIX);
	rc = p->vfs->exists(p->vfs, wpath);
	free(wpath);
	if (rc >= 0) {
		*never = rc == 0;
		rc = UT_OK;
	}
out:
	free(b);
	return rc;
}

/* A new database: a log or double-write file left at this path by a
 * deleted one is not ours (its records must never be replayed into the new
 * file).  Removed before the first page is written, so that a log beside a
 * file with a zero header proves the file held data. */
static int remove_stale(ut_vfs *vfs, const char *path, const char *suffix)
{
	char *s = malloc(strlen(path) + strlen(suffix) + 1);
	int rc;

	if (!s)
		return UT_ENOMEM;
	strcpy(s, path);
	strcat(s, suffix);
	rc = vfs->remove(vfs, s);
	free(s);
	return rc == UT_NOTFOUND ? UT_OK : rc;
}

static int check_meta(ut_pager *p, const uint8_t *m, uint64_t size)
{
	uint32_t v, ps, pc, root, fh;

	if (size < UT_META_MAGIC + 8 || memcmp(m + UT_META_MAGIC, UT_MAGIC, 8) ||
	    ut_page_type(m) != UT_PT_META) {
		if (ut_page_is_zero(m)) {
			ut_set_errdetail("%s: page 0 (the database header) is all "
					 "zeroes, but the file (%llu bytes) or its log "
					 "shows it held a database: damaged, not new",
					 p->path, (unsigned long long)size);
			return UT_ECORRUPT;
		}
		if (p->page1_untorn) {
			ut_set_errdetail("%s: page 0 (the database header) is "
					 "damaged (no magic), but page 1 is an untorn "
					 "page", p->path);
			return UT_ECORRUPT;
		}
		ut_set_errdetail("%s: not an untorn database (no magic in page 0)",
				 p->path);
		return UT_ENOTDB;
	}
	if (size < UT_META_CKPT_LSN) {
		ut_set_errdetail("%s: truncated: %llu bytes, less than one page",
				 p->path, (unsigned long long)size);
		return UT_ECORRUPT;
	}
	v = ut_ld32(m + UT_META_VERSION);
	ps = ut_ld32(m + UT_META_PAGESIZE);
	/* A flipped bit in the version field must read as damage, not as
	 * another version: trust the fields only once the page checks. */
	if (size >= UT_PAGE_SIZE && !ut_page_checksum_ok(m)) {
		ut_set_errdetail("%s: page 0: checksum mismatch (the database "
				 "header; it reads format version %u, page size %u)",
				 p->path, v, ps);
		return UT_ECORRUPT;
	}
	if (v < UT_FORMAT_VERSION_MIN || v > UT_FORMAT_VERSION ||
	    ps != UT_PAGE_SIZE) {
		ut_set_errdetail("%s: format version %u, page size %u; this build "
				 "reads versions %u..%u with %u-byte pages",
				 p->path, v, ps, UT_FORMAT_VERSION_MIN,
				 UT_FORMAT_VERSION, UT_PAGE_SIZE);
		return UT_EVERSION;
	}
	if (size < UT_PAGE_SIZE) {
		ut_set_errdetail("%s: truncated: size %llu is less than a page",
				 p->path, (unsigned long long)size);
		return UT_ECORRUPT;
	}
	if (ut_page_verify(m, 0, p->path))
		return UT_ECORRUPT;
	pc = ut_ld32(m + UT_META_PAGECOUNT);
	if (size % UT_PAGE_SIZE && size / UT_PAGE_SIZE < pc) {
		/* the partial page is one the checkpoint vouched for */
		ut_set_errdetail("%s: truncated or damaged: size %llu is not a "
				 "multiple of the page size %u, and page %llu "
				 "is below the %u pages of the last checkpoint",
				 p->path, (unsigned long long)size, UT_PAGE_SIZE,
				 (unsigned long long)(size / UT_PAGE_SIZE), pc);
		return UT_ECORRUPT;
	}
	root = ut_ld32(m + UT_META_ROOT);
	fh = ut_ld32(m + UT_META_FREEHEAD);
	if ((uint64_t)pc * UT_PAGE_SIZE > size) {
		ut_set_errdetail("%s: truncated: header says %u pages, file has %llu",
				 p->path, pc, (unsigned long long)(size / UT_PAGE_SIZE));
		return UT_ECORRUPT;
	}
	if (pc < 2 || root == 0 || root >= pc || fh >= pc ||
	    ut_ld32(m + UT_META_CATROOT) >= pc) {
		ut_set_errdetail("%s: page 0: inconsistent header (pages %u, root %u, "
				 "free head %u, catalog root %u)", p->path, pc,
				 root, fh, ut_ld32(m + UT_META_CATROOT));
		return UT_ECORRUPT;
	}
	return UT_OK;
}

/* Read-only: one buffered O_RDONLY handle under a shared lock; no
 * double-write file is opened or created, no recovery runs.  A database
 * that was not closed cleanly may need recovery (log redo, torn-page
 * repair), which writes: refused. */
/* Frame f, holding page pgno as read or written at open, becomes valid. */
static int adopt(ut_pager *p, struct frame *f, uint32_t pgno)
{
	struct pver *v = pager_pver_new(p, f->pg.data, pgno);

	if (!v)
		return UT_ENOMEM;
	pager_frame_set_cur(p, f, v);
	frame_set_pgno(f, pgno);
	f->valid = 1;
	pager_hinsert(p, f);
	return UT_OK;
}

/* The header page read at open: page 0 stays pinned while open. */
static int adopt_meta(ut_pager *p, struct frame *mf)
{
	int rc = adopt(p, mf, 0);

	if (rc)
		return rc;
	frame_set_pins(mf, 1);
	p->meta = mf;
	memcpy(p->hdr_ckpt, mf->pg.data + UT_META_CKPT_LSN, sizeof(p->hdr_ckpt));
	p->lsn = ut_ld64(mf->pg.data + UT_META_CKPT_LSN);
	p->durable_lsn = p->lsn;
	pager_bound_open(p, mf->pg.data);
	return UT_OK;
}

static int open_readonly(ut_pager *p, const ut_pager_config *cfg,
			 ut_pager **out)
{
	struct frame *mf = pager_new_frame(p);
	uint64_t size;
	int64_t n;
	int rc;

	if (!mf) {
		rc = UT_ENOMEM;
		goto fail;
	}
	rc = p->vfs->open(p->vfs, p->path, UT_OPEN_RDONLY | UT_OPEN_LOCK |
			  UT_OPEN_WAIT(cfg->lock_wait_ms), &p->file);
	if (rc == UT_NOTFOUND) {
		ut_set_errdetail("%s: open: No such file or directory (read-only)",
				 p->path);
		rc = UT_EIO;
	}
	if (rc)
		goto fail;
	p->rfile = p->wfile = p->file;
	if ((rc = ut_file_size(p->file, &size)))
		goto fail;
	/* a flusher that never writes: it only completes the pager */
	rc = ut_flusher_create(UT_PROTECT_UNSAFE, p->vfs, p->path, p->file,
			       &p->ctr, &p->fl);
	if (rc)
		goto fail;
	if (size == 0) {
		ut_set_errdetail("%s: empty file, not an untorn database", p->path);
		rc = UT_ENOTDB;
		goto fail;
	}
	n = ut_file_read(p->rfile, mf->pg.data, UT_PAGE_SIZE, 0);
	if (n < 0) {
		rc = (int)n;
		goto fail;
	}
	if ((rc = check_meta(p, mf->pg.data, size))) {
		if (rc == UT_ECORRUPT)
			ut_ctr_add(&p->ctr.corrupt_pages, 1);
		goto fail;
	}
	p->last_mode = ut_ld32(mf->pg.data + UT_META_MODE);
	if (!ut_ld32(mf->pg.data + UT_META_CLEAN)) {
		ut_set_errdetail("%s: not closed cleanly, so opening it needs "
				 "recovery (log redo, torn-page repair), which "
				 "writes; a read-only open refuses (open it "
				 "read-write once to recover)", p->path);
		rc = UT_EREADONLY;
		goto fail;
	}
	if ((rc = adopt_meta(p, mf)))
		goto fail;
	*out = p;
	return UT_OK;
fail:
	pager_free_all(p);
	return rc;
}

int ut_pager_open(ut_vfs *vfs, const char *path, const ut_pager_config *cfg,
		  ut_pager **out)
{
	ut_pager *p;
	uint64_t size;
	struct frame *mf;
	char *dwpath = NULL;
	int rc;

	*out = NULL;
	/* over-aligned (its reader slots sit on cache lines of their own):
	 * calloc promises only max_align_t */
	p = aligned_alloc(_Alignof(ut_pager),
			  (sizeof(*p) + _Alignof(ut_pager) - 1) /
				  _Alignof(ut_pager) * _Alignof(ut_pager));
	if (p)
		memset(p, 0, sizeof(*p));
	if (!p || !(p->path = strdup(path))) {
		free(p);
		return UT_ENOMEM;
	}
	{
		/* held for moments by readers and the writer alike: spin a
		 * little before sleeping */
		pthread_mutexattr_t ma;

		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
		pthread_mutex_init(&p->mu, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	pthread_mutex_init(&p->flush_mu, NULL);
	pthread_cond_init(&p->work_cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	pthread_cond_init(&p->load_cv, NULL);
	p->cleaner_inline = cfg->inline_flush;
	p->kept_cap = (cfg->snapshot_bytes ? cfg->snapshot_bytes
			  : cfg->cache_bytes > UT_SNAPSHOT_BYTES_MIN ? cfg->cache_bytes
			  : UT_SNAPSHOT_BYTES_MIN) / UT_PAGE_SIZE;
	p->ckpt_hdr = ut_io_alloc(UT_PAGE_SIZE);
	p->hdr_disk = ut_io_alloc(UT_PAGE_SIZE);
	p->bound_buf = ut_io_alloc(UT_PAGE_SIZE);
	if (!p->ckpt_hdr || !p->hdr_disk || !p->bound_buf) {
		pager_free_all(p);
		return UT_ENOMEM;
	}
	p->vfs = vfs;
	if (cfg->hooks)
		p->hooks = *cfg->hooks;
	p->pre_slack = __atomic_load_n(&ut_pager_test_pre_slack, __ATOMIC_RELAXED);
	if (!p->pre_slack)
		p->pre_slack = PRE_SLACK;
	p->maxframes = cfg->cache_bytes / UT_PAGE_SIZE;
	if (p->maxframes < UT_PAGER_MIN_FRAMES)
		p->maxframes = UT_PAGER_MIN_FRAMES;
	size_t nb = 64;

	while (nb < 2 * p->maxframes)
		nb *= 2;
	p->vbuckets = calloc(VBUCKETS, sizeof(*p->vbuckets));
	if (pager_ptable_init(p, nb) || !p->vbuckets || pager_snap_init(p)) {
		rc = UT_ENOMEM;
		goto fail;
	}

	p->readonly = cfg->readonly;
	if (p->readonly)
		return open_readonly(p, cfg, out);
	rc = vfs->open(vfs, path, (cfg->create ? UT_OPEN_CREATE : 0) |
			   UT_OPEN_DIRECT | UT_OPEN_LOCK |
			   UT_OPEN_WAIT(cfg->lock_wait_ms), &p->file);
	if (rc == UT_NOTFOUND) {
		/* with create, ENOENT means the directory is missing */
		ut_set_errdetail(cfg->create ? "%s: open: No such file or directory "
				 "(its directory does not exist)"
				 : "%s: open: No such file or directory (create is off)",
				 path);
		rc = UT_EIO;
	}
	if (rc)
		goto fail;
	/* Reads go through a second, buffered handle (the OS page cache
	 * serves them; direct writes invalidate what it caches). */
	if (p->file->direct) {
		rc = vfs->open(vfs, path, 0, &p->rfile);
		if (rc)
			goto fail;
	} else {
		p->rfile = p->file;
	}
	if ((rc = ut_file_size(p->file, &size)))
		goto fail;
	if ((rc = pager_dw_name(path, &dwpath)))
		goto fail;
	rc = vfs->exists(vfs, dwpath);
	if (rc < 0)
		goto fail;
	p->dw_existed = rc == 1;
	if (size == 0 && cfg->create) {
		/* copies left by a deleted database must not be "restored" */
		if ((rc = remove_stale(vfs, path, UT_DW_SUFFIX)) ||
		    (rc = remove_stale(vfs, path, UT_WAL_SUFFIX)))
			goto fail;
		p->dw_existed = 0;
	}
	rc = ut_flusher_create(cfg->protect, vfs, path, p->file, &p->ctr, &p->fl);
	if (rc)
		goto fail;
	if (!(p->pend = calloc(1, sizeof(*p->pend)))) {
		rc = UT_ENOMEM;
		goto fail;
	}
	if (p->fl->ops->recover &&
	    (rc = p->fl->ops->recover(p->fl, p->file, p->pend)))
		goto fail;
	/* A double-write file left by an earlier run in another mode may
	 * hold the only whole copy of a page torn then: use it too. */
	if (p->dw_existed && size && p->fl->ops->protect != UT_PROTECT_DOUBLEWRITE) {
		ut_file *dw;
		ut_dw_recovery r;

		rc = vfs->open(vfs, dwpath, UT_OPEN_DIRECT, &dw);
		if (rc == UT_OK) {
			rc = ut_dw_recover(p->file, dw, path, &r, p->pend);
			ut_file_close(dw);
		}
		if (rc)
			goto fail;
	}
	/* Only atomic writes need O_DIRECT.  Double-write and unsafe page
	 * writes go through the OS page cache and are made durable by the
	 * flusher's fdatasync: a direct write would drop the cached copy, so
	 * every page evicted and read again would cost a device read (0.9 per
	 * commit in bench_durable at data 16x the cache, against SQLite's
	 * 0.1). */
	p->lazy = cfg->lazy;
	p->wfile = ut_pager_protect(p) != UT_PROTECT_ATOMIC ? p->rfile : p->file;
	/* Recovery's pending repairs may extend the file. */
	if ((rc = ut_file_size(p->file, &size)))
		goto fail;
	for (size_t i = 0; i < p->pend->n; i++)
		if (((uint64_t)p->pend->pgno[i] + 1) * UT_PAGE_SIZE > size)
			size = ((uint64_t)p->pend->pgno[i] + 1) * UT_PAGE_SIZE;

	mf = pager_new_frame(p);
	if (!mf) {
		rc = UT_ENOMEM;
		goto fail;
	}
	if (size > 0) {
		int64_t n = pager_read_page(p, 0, mf->pg.data);
		int never;

		if (n < 0) {
			rc = (int)n;
			goto fail;
		}
		memset(mf->pg.data + n, 0, UT_PAGE_SIZE - (size_t)n);
		if ((rc = never_held_data(p, path, mf->pg.data, size, &never)))
			goto fail;
		if (never && cfg->create)
			size = 0; /* a creation the power cut short: redo it */
		if (never && !cfg->create) {
			ut_set_errdetail("%s: an interrupted creation, not an untorn "
					 "database (create is off)", path);
			rc = UT_ENOTDB;
			goto fail;
		}
	}
	p->created = size == 0;
	if (size == 0) {
		struct frame *rf;
		ut_flush_page fp[2];

		if (!cfg->create) {
			ut_set_errdetail("%s: empty file, not an untorn database", path);
			rc = UT_ENOTDB;
			goto fail;
		}
		rf = pager_new_frame(p);
		if (!rf) {
			rc = UT_ENOMEM;
			goto fail;
		}
		init_meta(mf->pg.data, ut_pager_protect(p));
		ut_page_init(rf->pg.data, 1, UT_PT_LEAF);
		ut_page_seal(mf->pg.data);
		ut_page_seal(rf->pg.data);
		fp[0].pgno = 1;
		fp[0].buf = rf->pg.data;
		fp[1].pgno = 0;
		fp[1].buf = mf->pg.data;
		/* the root first, then the header that makes it a database */
		rc = p->fl->ops->write_pages(p->fl, p->file, fp, 1, UT_FLUSH_DURABLE);
		if (rc == UT_OK)
			rc = p->fl->ops->write_pages(p->fl, p->file, fp + 1, 1,
						     UT_FLUSH_DURABLE);
		if (rc)
			goto fail;
		if ((rc = vfs->sync_dir(vfs, path)))
			goto fail;
		if ((rc = adopt(p, rf, 1)))
			goto fail;
	} else {
		int64_t n = pager_read_page(p, 0, mf->pg.data);
		if (n < 0) {
			rc = (int)n;
			goto fail;
		}
		if (n == UT_PAGE_SIZE &&
		    !memcmp(mf->pg.data + UT_META_MAGIC, UT_MAGIC, 8) &&
		    ut_page_verify(mf->pg.data, 0, path) == UT_OK) {
			p->last_mode = ut_ld32(mf->pg.data + UT_META_MODE);
			p->last_clean = ut_ld32(mf->pg.data + UT_META_CLEAN);
		}
		if ((rc = fullpage_recovery_via_dw(p)))
			goto fail;
		if (p->last_mode == UT_PROTECT_DOUBLEWRITE && !p->last_clean &&
		    !p->dw_existed) {
			ut_set_errdetail("%s: the database last ran in doublewrite "
					 "mode and was not closed cleanly, but its "
					 "double-write file %s is missing: torn pages "
					 "could not be repaired (restore the file; to "
					 "open anyway, create it empty, then run "
					 "`untorn check`)", path, dwpath);
			rc = UT_ECORRUPT;
			/* do not leave the empty dw file this open created */
			ut_flusher_destroy(p->fl);
			p->fl = NULL;
			(void)vfs->remove(vfs, dwpath);
			goto fail;
		}
		rc = check_meta(p, mf->pg.data, size);
		if (rc) {
			if (rc == UT_ECORRUPT)
				ut_ctr_add(&p->ctr.corrupt_pages, 1);
			goto fail;
		}
	}
	if ((rc = adopt_meta(p, mf)))
		goto fail;
	p->durable_pages = ut_ld32(mf->pg.data + UT_META_PAGECOUNT);
	p->fpi_redo = ut_pager_redo_lsn(p);
	free(dwpath);
	*out = p;
	return UT_OK;
fail:
	free(dwpath);
	pager_free_all(p);
	return rc;
}

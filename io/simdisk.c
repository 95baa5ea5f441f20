/*
 * io/simdisk.c - the simulated disk (see ut_simdisk.h for the model).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ut_simdisk.h"

#define SECTOR 4096u
/* Like a 512e drive: direct I/O in 512-byte blocks, torn in 4 KiB sectors
 * (a write within one sector lands whole or not at all). */
#define SIM_DIO_ALIGN 512u

enum { OP_WRITE, OP_TRUNC };

struct sim_op {
	int kind;
	int atomic;
	uint64_t off; /* write offset, or the truncate size */
	size_t len;
	uint8_t *data;
};

struct image {
	uint8_t *p;
	uint64_t size, cap;
};

struct sim_node {
	struct sim_node *next; /* disk's list of linked files */
	char *name;            /* NULL once unlinked */
	int refs;              /* handles, plus one while linked */
	uint64_t unlink_gen;   /* d->gen when unlinked: after a reboot the
				* file is gone and no longer counted in used */
	struct image dur, cur;
	struct sim_op *ops;
	size_t nops, ops_cap;
	struct sim_handle *locker;
};

struct sim_handle {
	ut_file base;
	ut_simdisk *d;
	struct sim_node *node;
	uint64_t gen;
	int rdonly;
};

struct ut_simdisk {
	ut_vfs vfs; /* first: the vfs callbacks cast back */
	pthread_mutex_t mu;
	struct sim_node *nodes;
	uint64_t events;
	uint64_t crash_at;
	int off;
	uint64_t gen;
	uint64_t capacity;
	uint64_t used;
	uint32_t amin, amax;
	uint32_t amax_opt; /* reported only: the sim has no slow path */
	ut_simdisk_reboot_stats last;
	ut_simdisk_fault_fn fault; /* under mu; called without it */
	void *fault_ctx;
};

static const struct ut_file_ops sim_ops;

/* ---- images ---------------------------------------------------------- */

static int img_resize(struct image *im, uint64_t size)
{
	if (size > im->cap) {
		uint64_t cap = im->cap ? im->cap : SECTOR;
		uint8_t *p;

		while (cap < size)
			cap *= 2;
		p = realloc(im->p, (size_t)cap);
		if (!p)
			return UT_ENOMEM;
		im->p = p;
		im->cap = cap;
	}
	if (size > im->size)
		memset(im->p + im->size, 0, (size_t)(size - im->size));
	im->size = size;
	return UT_OK;
}

static int img_write(struct image *im, uint64_t off, const void *buf,
		     size_t len)
{
	if (off + len > im->size) {
		int rc = img_resize(im, off + len);
		if (rc)
			return rc;
	}
	memcpy(im->p + off, buf, len);
	return UT_OK;
}

static int img_copy(struct image *dst, const struct image *src)
{
	dst->size = 0;
	if (img_resize(dst, src->size))
		return UT_ENOMEM;
	if (src->size)
		memcpy(dst->p, src->p, (size_t)src->size);
	return UT_OK;
}

static void ops_clear(struct sim_node *n)
{
	for (size_t i = 0; i < n->nops; i++)
		free(n->ops[i].data);
	n->nops = 0;
}

static void node_free(struct sim_node *n)
{
	ops_clear(n);
	free(n->ops);
	free(n->dur.p);
	free(n->cur.p);
	free(n->name);
	free(n);
}

static struct sim_node *find(ut_simdisk *d, const char *name)
{
	for (struct sim_node *n = d->nodes; n; n = n->next)
		if (strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

static void unref(ut_simdisk *d, struct sim_node *n)
{
	if (--n->refs > 0)
		return;
	if (n->unlink_gen == d->gen)
		d->used -= n->cur.size;
	node_free(n);
}

/* Current size change, keeping d->used in step. */
static int set_cur_size(ut_simdisk *d, struct sim_node *n, uint64_t size)
{
	uint64_t old = n->cur.size;
	int rc = img_resize(&n->cur, size);

	if (rc == UT_OK)
		d->used = d->used - old + size;
	return rc;
}

static int add_op(struct sim_node *n, int kind, int atomic, uint64_t off,
		  const void *buf, size_t len)
{
	struct sim_op *op;

	if (n->nops == n->ops_cap) {
		size_t cap = n->ops_cap ? n->ops_cap * 2 : 16;
		struct sim_op *p = realloc(n->ops, cap * sizeof(*p));
		if (!p)
			return UT_ENOMEM;
		n->ops = p;
		n->ops_cap = cap;
	}
	op = &n->ops[n->nops];
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->atomic = atomic;
	op->off = off;
	op->len = len;
	if (len) {
		op->data = malloc(len);
		if (!op->data)
			return UT_ENOMEM;
		memcpy(op->data, buf, len);
	}
	n->nops++;
	return UT_OK;
}

/* ---- power and events ------------------------------------------------ */

static int power_fail(ut_simdisk *d, const char *path)
{
	ut_set_errdetail("%s: simulated power loss (disk off since event %llu)",
			 path ? path : "simdisk",
			 (unsigned long long)d->crash_at);
	return UT_EIO;
}

/* Checks that a handle may be used; caller holds d->mu. */
static int usable(struct sim_handle *h)
{
	ut_simdisk *d = h->d;

	if (d->off) {
		h->base.last_errno = EIO;
		return power_fail(d, h->base.path);
	}
	if (h->gen != d->gen) {
		h->base.last_errno = EIO;
		ut_set_errdetail("%s: handle opened before a simulated power "
				 "loss; reopen the file", h->base.path);
		return UT_EIO;
	}
	return UT_OK;
}

/* One I/O event: UT_OK to go ahead, or UT_EIO if the power goes now. */
static int event(ut_simdisk *d, ut_file *f, const char *path)
{
	uint64_t ev = d->events++;

	if (ev == d->crash_at) {
		d->off = 1;
		if (f)
			f->last_errno = EIO;
		ut_set_errdetail("%s: simulated power loss at event %llu",
				 path ? path : "simdisk",
				 (unsigned long long)ev);
		return UT_EIO;
	}
	return UT_OK;
}

/* The fault hook's verdict on op (0: go ahead).  Called before d->mu is
 * taken: the hook may sleep or block. */
static int fault(ut_simdisk *d, ut_file *f, enum ut_simdisk_op op)
{
	ut_simdisk_fault_fn fn;
	void *ctx;
	int rc;

	pthread_mutex_lock(&d->mu);
	fn = d->fault;
	ctx = d->fault_ctx;
	pthread_mutex_unlock(&d->mu);
	if (!fn || !(rc = fn(ctx, op, f->path)))
		return UT_OK;
	f->last_errno = EIO;
	ut_set_errdetail("%s: simulated %s failure (simdisk fault hook: %s)",
			 f->path, op == UT_SIMDISK_OP_SYNC ? "sync"
			 : op == UT_SIMDISK_OP_WRITE ? "write" : "truncate",
			 ut_strerror(rc));
	return rc;
}

/* ---- file ops -------------------------------------------------------- */

static struct sim_handle *h_of(ut_file *f)
{
	return (struct sim_handle *)f;
}

static int misaligned(ut_file *f, const void *buf, size_t len, uint64_t off,
		      const char *what)
{
	if (!f->direct)
		return 0;
	if ((uintptr_t)buf % UT_IO_ALIGN == 0 && len % f->dio_align == 0 &&
	    off % f->dio_align == 0)
		return 0;
	f->last_errno = EINVAL;
	ut_set_errdetail("%s: direct %s of %zu bytes at offset %llu from "
			 "buffer %p: not aligned (buffer %u, length and offset "
			 "%u) (simdisk)", f->path, what, len,
			 (unsigned long long)off, buf, UT_IO_ALIGN, f->dio_align);
	return 1;
}

static int64_t sim_read(ut_file *f, void *buf, size_t len, uint64_t off)
{
	struct sim_handle *h = h_of(f);
	ut_simdisk *d = h->d;
	int64_t rc;

	pthread_mutex_lock(&d->mu);
	rc = usable(h);
	if (rc == UT_OK && misaligned(f, buf, len, off, "read"))
		rc = UT_EINVAL;
	if (rc == UT_OK) {
		const struct image *im = &h->node->cur;
		size_t n = 0;

		if (off < im->size)
			n = im->size - off < len ? (size_t)(im->size - off) : len;
		if (n)
			memcpy(buf, im->p + off, n);
		rc = (int64_t)n;
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

/* Argument checks of one write; caller holds d->mu. */
static int check_write(struct sim_handle *h, const void *buf, size_t len,
		       uint64_t off, unsigned wflags)
{
	ut_file *f = &h->base;
	ut_simdisk *d = h->d;

	if (wflags & ~(UT_WRITE_ATOMIC | UT_WRITE_WRITEBACK)) {
		ut_set_errdetail("%s: unknown write flags %#x", f->path, wflags);
		return UT_EINVAL;
	}
	if (h->rdonly) {
		f->last_errno = EBADF;
		ut_set_errdetail("%s: write through a read-only handle", f->path);
		return UT_EREADONLY;
	}
	if (misaligned(f, buf, len, off, "write"))
		return UT_EINVAL;
	if (wflags & UT_WRITE_ATOMIC) {
		if (!d->amin || !d->amax) {
			f->last_errno = EOPNOTSUPP;
			ut_set_errdetail("%s: RWF_ATOMIC write of %zu bytes at "
					 "offset %llu: atomic writes not "
					 "supported (simdisk)", f->path, len,
					 (unsigned long long)off);
			return UT_ENOTSUP;
		}
		if (!f->direct) {
			f->last_errno = EOPNOTSUPP;
			ut_set_errdetail("%s: RWF_ATOMIC write of %zu bytes at "
					 "offset %llu on a buffered handle: "
					 "needs O_DIRECT (simdisk)", f->path,
					 len, (unsigned long long)off);
			return UT_ENOTSUP;
		}
		if (len < d->amin || len > d->amax || (len & (len - 1)) ||
		    off % len) {
			f->last_errno = EINVAL;
			ut_set_errdetail("%s: RWF_ATOMIC write of %zu bytes at "
					 "offset %llu does not fit unit %u..%u "
					 "(power of two, offset aligned to "
					 "length) (simdisk)", f->path, len,
					 (unsigned long long)off, d->amin,
					 d->amax);
			return UT_EINVAL;
		}
	}
	return UT_OK;
}

static int space_for(struct sim_handle *h, size_t len, uint64_t off)
{
	ut_simdisk *d = h->d;
	uint64_t end = off + len, size = h->node->cur.size;

	if (!d->capacity || end <= size || d->used - size + end <= d->capacity)
		return UT_OK;
	h->base.last_errno = ENOSPC;
	ut_set_errdetail("%s: write of %zu bytes at offset %llu: no space "
			 "(simdisk capacity %llu, used %llu)", h->base.path,
			 len, (unsigned long long)off,
			 (unsigned long long)d->capacity,
			 (unsigned long long)d->used);
	return UT_ENOSPC;
}

/* Caller holds d->mu and has checked the arguments. */
static int do_write(struct sim_handle *h, const void *buf, size_t len,
		    uint64_t off, unsigned wflags)
{
	struct sim_node *n = h->node;
	ut_simdisk *d = h->d;
	int rc = space_for(h, len, off);

	if (rc)
		return rc;
	rc = event(d, &h->base, h->base.path);
	if (rc)
		return rc;
	if (off + len > n->cur.size && (rc = set_cur_size(d, n, off + len)))
		return rc;
	if (len)
		memcpy(n->cur.p + off, buf, len);
	return add_op(n, OP_WRITE, (wflags & UT_WRITE_ATOMIC) != 0, off, buf,
		      len);
}

/* The sync itself (d->mu held): a crash point, then the file is durable. */
static int sync_locked(ut_file *f)
{
	struct sim_handle *h = h_of(f);
	int rc = event(h->d, f, f->path);

	if (rc == UT_OK) {
		rc = img_copy(&h->node->dur, &h->node->cur);
		if (rc == UT_OK)
			ops_clear(h->node);
	}
	return rc;
}

/* UT_WRITE_DSYNC: the write, then a sync of the whole file (stronger than
 * RWF_DSYNC, which makes only the range durable: nothing may rely on it). */
static int sim_write(ut_file *f, const void *buf, size_t len, uint64_t off,
		     unsigned wflags)
{
	struct sim_handle *h = h_of(f);
	ut_simdisk *d = h->d;
	int dsync = wflags == UT_WRITE_DSYNC, rc;

	if (dsync)
		wflags = 0;
	if ((rc = fault(d, f, UT_SIMDISK_OP_WRITE)) ||
	    (dsync && (rc = fault(d, f, UT_SIMDISK_OP_SYNC))))
		return rc;
	pthread_mutex_lock(&d->mu);
	rc = usable(h);
	if (rc == UT_OK)
		rc = check_write(h, buf, len, off, wflags);
	if (rc == UT_OK)
		rc = do_write(h, buf, len, off, wflags);
	if (rc == UT_OK && dsync)
		rc = sync_locked(f);
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int sim_write_batch(ut_file *f, const ut_iowrite *w, size_t n,
			   unsigned wflags)
{
	struct sim_handle *h = h_of(f);
	ut_simdisk *d = h->d;
	int rc;

	if ((rc = fault(d, f, UT_SIMDISK_OP_WRITE)))
		return rc;
	pthread_mutex_lock(&d->mu);
	rc = usable(h);
	for (size_t i = 0; i < n && rc == UT_OK; i++)
		rc = check_write(h, w[i].buf, w[i].len, w[i].off, wflags);
	for (size_t i = 0; i < n && rc == UT_OK; i++)
		rc = do_write(h, w[i].buf, w[i].len, w[i].off, wflags);
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int sim_sync(ut_file *f)
{
	struct sim_handle *h = h_of(f);
	ut_simdisk *d = h->d;
	int rc;

	if ((rc = fault(d, f, UT_SIMDISK_OP_SYNC)))
		return rc;
	pthread_mutex_lock(&d->mu);
	rc = usable(h);
	if (rc == UT_OK)
		rc = sync_locked(f);
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int sim_size(ut_file *f, uint64_t *bytes)
{
	struct sim_handle *h = h_of(f);
	ut_simdisk *d = h->d;
	int rc;

	pthread_mutex_lock(&d->mu);
	rc = usable(h);
	if (rc == UT_OK)
		*bytes = h->node->cur.size;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int sim_truncate(ut_file *f, uint64_t bytes)
{
	struct sim_handle *h = h_of(f);
	ut_simdisk *d = h->d;
	int rc;

	if ((rc = fault(d, f, UT_SIMDISK_OP_TRUNCATE)))
		return rc;
	pthread_mutex_lock(&d->mu);
	rc = usable(h);
	if (rc == UT_OK && h->rdonly) {
		f->last_errno = EBADF;
		ut_set_errdetail("%s: truncate through a read-only handle",
				 f->path);
		rc = UT_EREADONLY;
	}
	if (rc == UT_OK)
		rc = event(d, f, f->path);
	if (rc == UT_OK)
		rc = set_cur_size(d, h->node, bytes);
	if (rc == UT_OK)
		rc = add_op(h->node, OP_TRUNC, 0, bytes, NULL, 0);
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int sim_atomic_info(ut_file *f, ut_atomic_info *out)
{
	struct sim_handle *h = h_of(f);
	ut_simdisk *d = h->d;
	int rc;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&d->mu);
	rc = usable(h);
	if (rc == UT_OK) {
		out->supported = d->amin && d->amax;
		out->unit_min = d->amin;
		out->unit_max = d->amax;
		out->segments_max = out->supported ? 1 : 0;
		out->unit_max_opt = out->supported ? d->amax_opt : 0;
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static void sim_close(ut_file *f)
{
	struct sim_handle *h = h_of(f);
	ut_simdisk *d = h->d;

	pthread_mutex_lock(&d->mu);
	if (h->node->locker == h)
		h->node->locker = NULL;
	unref(d, h->node);
	pthread_mutex_unlock(&d->mu);
	free(f->path);
	free(h);
}

static const struct ut_file_ops sim_ops = {
	.read = sim_read,
	.write = sim_write,
	.write_batch = sim_write_batch,
	.sync = sim_sync,
	.size = sim_size,
	.truncate = sim_truncate,
	.atomic_info = sim_atomic_info,
	.close = sim_close,
};

/* ---- vfs ------------------------------------------------------------- */

static ut_simdisk *d_of(ut_vfs *v)
{
	return (ut_simdisk *)v;
}

static int sim_open(ut_vfs *v, const char *path, unsigned oflags,
		    ut_file **out)
{
	ut_simdisk *d = d_of(v);
	struct sim_handle *h;
	struct sim_node *n;
	int rc = UT_OK;

	if (!path || !*path || !out)
		return UT_EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h || !(h->base.path = strdup(path))) {
		free(h);
		return UT_ENOMEM;
	}
	pthread_mutex_lock(&d->mu);
	if (d->off) {
		rc = power_fail(d, path);
		goto out;
	}
	n = find(d, path);
	if (!n) {
		struct sim_node **tail;

		if (!(oflags & UT_OPEN_CREATE) || (oflags & UT_OPEN_RDONLY)) {
			ut_set_errdetail("%s: open: no such file (simdisk)",
					 path);
			rc = UT_NOTFOUND;
			goto out;
		}
		n = calloc(1, sizeof(*n));
		if (!n || !(n->name = strdup(path))) {
			free(n);
			rc = UT_ENOMEM;
			goto out;
		}
		n->refs = 1;
		for (tail = &d->nodes; *tail; tail = &(*tail)->next)
			;
		*tail = n; /* creation order: reboot is deterministic */
	} else if ((oflags & UT_OPEN_CREATE) && (oflags & UT_OPEN_EXCL)) {
		ut_set_errdetail("%s: open: File exists (simdisk)", path);
		rc = UT_EINVAL;
		goto out;
	}
	if ((oflags & UT_OPEN_LOCK) && n->locker) {
		ut_set_errdetail("%s: locked by another handle (simdisk)", path);
		rc = UT_ELOCKED;
		goto out;
	}
	n->refs++;
	h->node = n;
	h->d = d;
	h->gen = d->gen;
	h->rdonly = (oflags & UT_OPEN_RDONLY) != 0;
	h->base.ops = &sim_ops;
	h->base.direct = (oflags & UT_OPEN_DIRECT) != 0;
	h->base.dio_align = h->base.direct ? SIM_DIO_ALIGN : 1;
	if (oflags & UT_OPEN_LOCK)
		n->locker = h;
	*out = &h->base;
out:
	pthread_mutex_unlock(&d->mu);
	if (rc) {
		free(h->base.path);
		free(h);
	}
	return rc;
}

static int sim_remove(ut_vfs *v, const char *path)
{
	ut_simdisk *d = d_of(v);
	struct sim_node **pp, *n;
	int rc = UT_NOTFOUND;

	pthread_mutex_lock(&d->mu);
	if (d->off) {
		rc = power_fail(d, path);
		goto out;
	}
	for (pp = &d->nodes; (n = *pp); pp = &n->next) {
		if (strcmp(n->name, path) == 0) {
			*pp = n->next;
			n->next = NULL;
			free(n->name);
			n->name = NULL;
			n->unlink_gen = d->gen;
			unref(d, n);
			rc = UT_OK;
			break;
		}
	}
out:
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int sim_exists(ut_vfs *v, const char *path)
{
	ut_simdisk *d = d_of(v);
	int rc;

	pthread_mutex_lock(&d->mu);
	rc = d->off ? power_fail(d, path) : find(d, path) != NULL;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int sim_sync_dir(ut_vfs *v, const char *path)
{
	ut_simdisk *d = d_of(v);
	int rc;

	pthread_mutex_lock(&d->mu);
	rc = d->off ? power_fail(d, path) : event(d, NULL, path);
	pthread_mutex_unlock(&d->mu);
	return rc;
}

/* ---- the disk -------------------------------------------------------- */

ut_simdisk *ut_simdisk_new(void)
{
	ut_simdisk *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->vfs.open = sim_open;
	d->vfs.remove = sim_remove;
	d->vfs.exists = sim_exists;
	d->vfs.sync_dir = sim_sync_dir;
	d->crash_at = UT_SIMDISK_NEVER;
	d->amin = 4096;
	d->amax = 65536;
	pthread_mutex_init(&d->mu, NULL);
	return d;
}

void ut_simdisk_free(ut_simdisk *d)
{
	struct sim_node *n, *next;

	if (!d)
		return;
	for (n = d->nodes; n; n = next) {
		next = n->next;
		node_free(n);
	}
	pthread_mutex_destroy(&d->mu);
	free(d);
}

ut_vfs *ut_simdisk_vfs(ut_simdisk *d)
{
	return &d->vfs;
}

void ut_simdisk_crash_at(ut_simdisk *d, uint64_t n)
{
	pthread_mutex_lock(&d->mu);
	d->crash_at = n;
	pthread_mutex_unlock(&d->mu);
}

uint64_t ut_simdisk_event_count(ut_simdisk *d)
{
	uint64_t n;

	pthread_mutex_lock(&d->mu);
	n = d->events;
	pthread_mutex_unlock(&d->mu);
	return n;
}

int ut_simdisk_crashed(ut_simdisk *d)
{
	int off;

	pthread_mutex_lock(&d->mu);
	off = d->off;
	pthread_mutex_unlock(&d->mu);
	return off;
}

static uint64_t rnd(uint64_t *s) /* splitmix64 */
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Replay the pending operations of n onto its durable image. */
static int replay(ut_simdisk *d, struct sim_node *n, uint64_t *seed,
		  enum ut_simdisk_policy pol)
{
	ut_simdisk_reboot_stats *st = &d->last;
	int rc = img_copy(&n->cur, &n->dur);

	for (size_t i = 0; i < n->nops && rc == UT_OK; i++) {
		const struct sim_op *op = &n->ops[i];
		int keep, tear = 0;

		if (pol == UT_SIMDISK_KEEP_ALL)
			keep = 1;
		else if (pol == UT_SIMDISK_DROP_ALL)
			keep = 0;
		else if (pol == UT_SIMDISK_TEAR_ALL)
			keep = 1, tear = op->kind == OP_WRITE && !op->atomic;
		else if (op->kind == OP_WRITE && !op->atomic) {
			uint64_t r = rnd(seed) % 3;
			keep = r == 0;
			tear = r == 2;
		} else {
			keep = rnd(seed) & 1;
		}
		if (op->kind == OP_TRUNC) {
			if (keep)
				rc = img_resize(&n->cur, op->off);
			st->ops_kept += keep;
			st->ops_dropped += !keep;
			continue;
		}
		if (!tear) {
			if (keep && op->len)
				rc = img_write(&n->cur, op->off, op->data, op->len);
			st->ops_kept += keep;
			st->ops_dropped += !keep;
			continue;
		}
		/* Sector by sector. */
		{
			uint64_t pos = op->off, end = op->off + op->len;
			unsigned idx = 0, kept = 0, dropped = 0;

			while (pos < end && rc == UT_OK) {
				uint64_t next = (pos / SECTOR + 1) * SECTOR;
				int k;

				if (next > end)
					next = end;
				k = pol == UT_SIMDISK_TEAR_ALL ? (idx % 2 == 0)
							       : (int)(rnd(seed) & 1);
				if (k) {
					rc = img_write(&n->cur, pos,
						       op->data + (pos - op->off),
						       (size_t)(next - pos));
					kept++;
				} else {
					dropped++;
				}
				pos = next;
				idx++;
			}
			if (kept && dropped) {
				st->ops_torn++;
				st->sectors_kept += kept;
				st->sectors_dropped += dropped;
			} else {
				st->ops_kept += kept != 0;
				st->ops_dropped += kept == 0;
			}
		}
	}
	if (rc == UT_OK)
		rc = img_copy(&n->dur, &n->cur);
	ops_clear(n);
	return rc;
}

int ut_simdisk_reboot_policy(ut_simdisk *d, uint64_t seed,
			     enum ut_simdisk_policy pol)
{
	uint64_t s = seed;
	int rc = UT_OK;

	pthread_mutex_lock(&d->mu);
	memset(&d->last, 0, sizeof(d->last));
	d->used = 0;
	for (struct sim_node *n = d->nodes; n; n = n->next) {
		int r = replay(d, n, &s, pol);

		if (r && !rc)
			rc = r;
		n->locker = NULL;
		d->used += n->cur.size;
	}
	/* Unlinked files still held open are gone; their handles die with
	 * every other pre-reboot handle (gen). */
	d->gen++;
	d->off = 0;
	d->crash_at = UT_SIMDISK_NEVER;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

int ut_simdisk_reboot(ut_simdisk *d, uint64_t seed)
{
	return ut_simdisk_reboot_policy(d, seed, UT_SIMDISK_RANDOM);
}

void ut_simdisk_last_reboot(ut_simdisk *d, ut_simdisk_reboot_stats *st)
{
	pthread_mutex_lock(&d->mu);
	*st = d->last;
	pthread_mutex_unlock(&d->mu);
}

void ut_simdisk_set_fault_hook(ut_simdisk *d, ut_simdisk_fault_fn fn, void *ctx)
{
	pthread_mutex_lock(&d->mu);
	d->fault = fn;
	d->fault_ctx = ctx;
	pthread_mutex_unlock(&d->mu);
}

void ut_simdisk_set_capacity(ut_simdisk *d, uint64_t bytes)
{
	pthread_mutex_lock(&d->mu);
	d->capacity = bytes;
	pthread_mutex_unlock(&d->mu);
}

uint64_t ut_simdisk_used(ut_simdisk *d)
{
	uint64_t u;

	pthread_mutex_lock(&d->mu);
	u = d->used;
	pthread_mutex_unlock(&d->mu);
	return u;
}

void ut_simdisk_set_atomic(ut_simdisk *d, uint32_t unit_min, uint32_t unit_max)
{
	pthread_mutex_lock(&d->mu);
	if (!unit_min || !unit_max)
		unit_min = unit_max = 0;
	d->amin = unit_min;
	d->amax = unit_max;
	pthread_mutex_unlock(&d->mu);
}

void ut_simdisk_set_atomic_opt(ut_simdisk *d, uint32_t unit_max_opt)
{
	pthread_mutex_lock(&d->mu);
	d->amax_opt = unit_max_opt;
	pthread_mutex_unlock(&d->mu);
}

static int64_t peek_img(ut_simdisk *d, const char *path, uint64_t off,
			void *buf, size_t len, int durable)
{
	struct sim_node *n;
	int64_t rc;

	pthread_mutex_lock(&d->mu);
	n = find(d, path);
	if (!n) {
		rc = UT_NOTFOUND;
	} else {
		const struct image *im = durable ? &n->dur : &n->cur;
		size_t k = 0;

		if (off < im->size)
			k = im->size - off < len ? (size_t)(im->size - off) : len;
		if (k)
			memcpy(buf, im->p + off, k);
		rc = (int64_t)k;
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

int64_t ut_simdisk_peek(ut_simdisk *d, const char *path, uint64_t off,
			void *buf, size_t len)
{
	return peek_img(d, path, off, buf, len, 0);
}

int64_t ut_simdisk_peek_durable(ut_simdisk *d, const char *path, uint64_t off,
				void *buf, size_t len)
{
	return peek_img(d, path, off, buf, len, 1);
}

int ut_simdisk_file_size(ut_simdisk *d, const char *path, uint64_t *size)
{
	struct sim_node *n;
	int rc = UT_NOTFOUND;

	pthread_mutex_lock(&d->mu);
	if ((n = find(d, path))) {
		*size = n->cur.size;
		rc = UT_OK;
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

int64_t ut_simdisk_pending(ut_simdisk *d, const char *path)
{
	struct sim_node *n;
	int64_t rc = UT_NOTFOUND;

	pthread_mutex_lock(&d->mu);
	if ((n = find(d, path)))
		rc = (int64_t)n->nops;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

int ut_simdisk_poke(ut_simdisk *d, const char *path, uint64_t off,
		    const void *buf, size_t len)
{
	struct sim_node *n;
	int rc = UT_NOTFOUND;

	pthread_mutex_lock(&d->mu);
	if ((n = find(d, path))) {
		uint64_t old = n->cur.size;

		rc = img_write(&n->cur, off, buf, len);
		if (rc == UT_OK)
			d->used = d->used - old + n->cur.size;
		if (rc == UT_OK)
			rc = img_write(&n->dur, off, buf, len);
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

int ut_simdisk_corrupt(ut_simdisk *d, const char *path, uint64_t off,
		       size_t len)
{
	struct sim_node *n;
	int rc = UT_NOTFOUND;

	pthread_mutex_lock(&d->mu);
	if ((n = find(d, path))) {
		struct image *im[2] = { &n->cur, &n->dur };

		rc = UT_OK;
		for (int k = 0; k < 2; k++)
			for (uint64_t i = off; i < off + len && i < im[k]->size; i++)
				im[k]->p[i] ^= 0xff;
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

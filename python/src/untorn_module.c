/*
 * untorn_module.c - the CPython extension untorn._untorn: Db, Txn and the
 * range iterator over libuntorn's public API (include/untorn.h) only.
 *
 * Contract:
 * - Bytes in, bytes out.  Keys and values are any bytes-like object
 *   (bytes, bytearray, memoryview); str raises TypeError.
 * - Every engine call that may do I/O or wait (open, begin, commit, abort,
 *   get, put, delete, cursor seek/next, checkpoint, check, close) runs with
 *   the GIL released.  ut_errdetail() is thread-local; it is read after the
 *   GIL comes back, on the same OS thread, before any other engine call.
 * - A transaction belongs to the thread that began it: the engine's rwlock
 *   is owned by that thread (glibc unlocks a write lock only from its
 *   owner), so use from another thread raises BusyError instead.  Because
 *   of that rule a transaction is never in two calls at once.
 * - The engine serializes transactions with one rwlock: a thread that
 *   already holds a transaction and begins another, checkpoints or checks
 *   would wait for itself forever.  Those calls raise BusyError instead,
 *   as they do once a leaked transaction (below) holds the lock.
 * - db.close() ends (aborts) the calling thread's open transactions, then
 *   closes.  It raises BusyError, leaving the handle open, while another
 *   thread holds a transaction or is inside a call on this database.
 * - Ending a transaction closes its iterators' cursors; using a closed
 *   database, an ended transaction or its iterators raises ClosedError.
 * - Objects may be freed in any order: a Txn holds its Db, an iterator its
 *   Txn.  A Txn freed on a thread other than its owner while still open
 *   cannot be aborted there (see above); it is leaked with the engine lock
 *   it holds, and its Db then stays open until the process exits (recovery
 *   at the next open replays what was committed); begin, checkpoint and
 *   check on it raise BusyError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "untorn.h"

/* ------------------------------------------------------------------ errors */

static PyObject *Error;          /* untorn.Error: base, .code and .detail */
static PyObject *ClosedError;    /* use after close / end (Python side) */
static PyObject *BusyError;      /* UT_EBUSY and the thread rules above */
static PyObject *NoTableError;   /* a table named for a read that is absent */

struct code_class {
	int code;
	const char *name;       /* untorn.<name> */
	PyObject **extra_base;  /* a builtin it also derives from, or NULL */
	PyObject *cls;
};

static struct code_class code_classes[] = {
	{UT_EINVAL, "InvalidParameterError", &PyExc_ValueError, NULL},
	{UT_ENOMEM, "NoMemoryError", &PyExc_MemoryError, NULL},
	{UT_EIO, "DiskError", NULL, NULL},
	{UT_ECORRUPT, "CorruptError", NULL, NULL},
	{UT_ELOCKED, "LockedError", NULL, NULL},
	{UT_ETOOBIG, "TooBigError", &PyExc_ValueError, NULL},
	{UT_ENOSPC, "DiskFullError", NULL, NULL},
	{UT_EREADONLY, "ReadOnlyError", NULL, NULL},
	{UT_ENOTDB, "NotADatabaseError", NULL, NULL},
	{UT_EVERSION, "VersionError", NULL, NULL},
	{UT_ENOTSUP, "NotSupportedError", NULL, NULL},
	{UT_EFATAL, "FatalError", NULL, NULL},
	{UT_EBUSY, "BusyError", NULL, NULL},
	{UT_ESNAPSHOT, "SnapshotTooOldError", NULL, NULL},
};
#define N_CODE_CLASSES (sizeof(code_classes) / sizeof(code_classes[0]))

static PyObject *class_for_code(int code)
{
	for (size_t i = 0; i < N_CODE_CLASSES; i++)
		if (code_classes[i].code == code)
			return code_classes[i].cls;
	return Error;
}

/* Raise cls("strerror: detail") (engine errors) or cls(detail) (the
 * binding's own ClosedError and BusyError) with .code and .detail set. */
static void raise_with(PyObject *cls, int code, const char *detail,
		       int engine)
{
	PyObject *pdetail, *pcode, *exc;

	if (!detail)
		detail = "";
	pdetail = PyUnicode_DecodeUTF8(detail, (Py_ssize_t)strlen(detail),
				       "replace");
	if (!pdetail)
		return;
	if (!engine)
		exc = PyObject_CallOneArg(cls, pdetail);
	else if (*detail)
		exc = PyObject_CallFunction(cls, "N", PyUnicode_FromFormat(
			"%s: %U", ut_strerror(code), pdetail));
	else
		exc = PyObject_CallFunction(cls, "s", ut_strerror(code));
	pcode = PyLong_FromLong(code);
	if (exc && pcode && !PyObject_SetAttrString(exc, "code", pcode) &&
	    !PyObject_SetAttrString(exc, "detail", pdetail))
		PyErr_SetObject(cls, exc);
	Py_XDECREF(pcode);
	Py_XDECREF(exc);
	Py_DECREF(pdetail);
}

/* An engine error: call right after reacquiring the GIL. */
static PyObject *raise_ut(int rc)
{
	raise_with(class_for_code(rc), rc, ut_errdetail(), 1);
	return NULL;
}

static PyObject *raise_closed(const char *what)
{
	raise_with(ClosedError, UT_EINVAL, what, 0);
	return NULL;
}

static PyObject *raise_busy(const char *what)
{
	raise_with(BusyError, UT_EBUSY, what, 0);
	return NULL;
}

/* ------------------------------------------------------------ the objects */

typedef struct TxnObject TxnObject;
typedef struct IterObject IterObject;

typedef struct {
	PyObject_HEAD
	ut_db *db;             /* NULL once closed */
	PyObject *path;        /* str, for repr and info() */
	int requested_protect; /* what open() asked for */
	int readonly;
	int inflight;          /* calls on the database with the GIL released */
	int leaked_txns;       /* open txns freed on a foreign thread */
	int leaked_writes;     /* ... of them write txns: the writer lock held */
	TxnObject *txns;       /* open transactions (borrowed) */
} DbObject;

struct TxnObject {
	PyObject_HEAD
	DbObject *db;          /* strong */
	ut_txn *t;             /* NULL once ended */
	unsigned long owner;   /* thread that began it */
	int write;
	int busy;              /* owner is in an engine call on t */
	uint64_t writes;       /* put/delete count: iterators re-seek after */
	IterObject *iters;     /* iterators with an open cursor (borrowed) */
	ut_cursor **orphans;   /* cursors of iterators freed while busy */
	size_t norphans;
	TxnObject *prev, *next;
};

enum iter_yield { YIELD_KEYS, YIELD_VALUES, YIELD_ITEMS };

struct IterObject {
	PyObject_HEAD
	TxnObject *txn;        /* strong */
	ut_cursor *c;          /* NULL: finished or the txn ended */
	int done;              /* ran to its end: StopIteration from now on */
	enum iter_yield what;
	PyObject *start, *stop, *prefix; /* bytes or NULL */
	PyObject *last;        /* last key returned (re-seek after a write) */
	uint64_t writes_seen;
	IterObject *prev, *next;
};

static PyTypeObject DbType, TxnType, IterType;

/* The table named by name (None: the default table, *tb NULL) in txn,
 * created when create is set: 0, or -1 with an exception (NoTableError,
 * a KeyError, when it does not exist).  str names are UTF-8. */
static int table_arg(TxnObject *txn, PyObject *name, int create, ut_table **tb)
{
	const char *s;
	int rc;

	*tb = NULL;
	if (!name || name == Py_None)
		return 0;
	if (PyUnicode_Check(name)) {
		s = PyUnicode_AsUTF8(name);
	} else if (PyBytes_Check(name)) {
		s = PyBytes_AS_STRING(name);
		if (strlen(s) != (size_t)PyBytes_GET_SIZE(name)) {
			PyErr_SetString(PyExc_ValueError, "table name holds a NUL byte");
			return -1;
		}
	} else {
		PyErr_SetString(PyExc_TypeError, "table name must be str or bytes");
		return -1;
	}
	if (!s)
		return -1;
	Py_BEGIN_ALLOW_THREADS
	rc = ut_table_open(txn->t, s, create ? UT_CREATE : 0, tb);
	Py_END_ALLOW_THREADS
	if (rc == UT_NOTFOUND) {
		PyErr_Format(NoTableError, "no table %R", name);
		return -1;
	}
	if (rc) {
		raise_ut(rc);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ byte args */

/* Fill view from a bytes-like object; str gets a TypeError that says so. */
static int get_bytes(PyObject *o, Py_buffer *view, const char *what)
{
	if (PyUnicode_Check(o)) {
		PyErr_Format(PyExc_TypeError,
			     "%s must be bytes-like, not str (encode it first, "
			     "e.g. s.encode())", what);
		return -1;
	}
	if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) < 0) {
		PyErr_Format(PyExc_TypeError, "%s must be bytes-like, not %.100s",
			     what, Py_TYPE(o)->tp_name);
		return -1;
	}
	return 0;
}

/* A bytes copy of a bytes-like argument (None stays NULL). */
static int bytes_arg(PyObject *o, PyObject **out, const char *what)
{
	Py_buffer v;

	*out = NULL;
	if (!o || o == Py_None)
		return 0;
	if (get_bytes(o, &v, what) < 0)
		return -1;
	*out = PyBytes_FromStringAndSize(v.buf, v.len);
	PyBuffer_Release(&v);
	return *out ? 0 : -1;
}

/* ------------------------------------------------------ transaction state */

/* May the calling thread use txn now? */
static int txn_usable(TxnObject *txn)
{
	if (!txn->t) {
		raise_closed(txn->db->db ? "the transaction has ended"
			     : "the database is closed");
		return 0;
	}
	if (txn->owner != PyThread_get_thread_ident()) {
		raise_busy("a transaction belongs to the thread that began it");
		return 0;
	}
	return 1;
}

static void close_orphans(TxnObject *txn)
{
	for (size_t i = 0; i < txn->norphans; i++)
		ut_cursor_close(txn->orphans[i]);
	PyMem_Free(txn->orphans);
	txn->orphans = NULL;
	txn->norphans = 0;
}

/* Brackets of every engine call on txn made with the GIL released. */
static void txn_enter(TxnObject *txn)
{
	txn->busy = 1;
}

static void txn_leave(TxnObject *txn)
{
	txn->busy = 0;
	close_orphans(txn);
}

static void iter_unlink(IterObject *it)
{
	if (it->prev)
		it->prev->next = it->next;
	else if (it->txn->iters == it)
		it->txn->iters = it->next;
	if (it->next)
		it->next->prev = it->prev;
	it->prev = it->next = NULL;
}

static void txn_unlink(TxnObject *txn)
{
	if (txn->prev)
		txn->prev->next = txn->next;
	else if (txn->db->txns == txn)
		txn->db->txns = txn->next;
	if (txn->next)
		txn->next->prev = txn->prev;
	txn->prev = txn->next = NULL;
}

/* End txn (commit or abort) on its owner thread: its iterators' cursors
 * close first, then the engine call runs with the GIL released.  The db
 * counts it in flight so a close() on another thread waits its turn. */
static int txn_end(TxnObject *txn, int commit)
{
	ut_txn *t = txn->t;
	DbObject *db = txn->db;
	int rc = UT_OK;

	while (txn->iters) {
		IterObject *it = txn->iters;
		ut_cursor_close(it->c);
		it->c = NULL;
		iter_unlink(it);
	}
	close_orphans(txn);
	txn_unlink(txn);
	txn->t = NULL;
	db->inflight++;
	Py_BEGIN_ALLOW_THREADS
	if (commit)
		rc = ut_commit(t);
	else
		ut_abort(t);
	Py_END_ALLOW_THREADS
	db->inflight--;
	return rc;
}

/* Would the calling thread wait for a lock it holds itself, or for one a
 * leaked transaction holds for good? (raises BusyError) */
/* Would a call that needs the writer's lock (a write transaction,
 * checkpoint, check) wait forever?  It would if this thread holds a write
 * transaction, or one was leaked open.  Read transactions are snapshots:
 * they wait for nothing and hold nothing up. */
static int would_wait_forever(DbObject *db, const char *what)
{
	unsigned long me = PyThread_get_thread_ident();

	if (db->leaked_writes) {
		raise_busy("a transaction was dropped open by another thread and "
			   "holds the database's lock until the process exits");
		return 1;
	}
	for (TxnObject *t = db->txns; t; t = t->next)
		if (t->owner == me && t->write) {
			raise_busy(what);
			return 1;
		}
	return 0;
}

static int db_usable(DbObject *db)
{
	if (!db->db) {
		raise_closed("the database is closed");
		return 0;
	}
	return 1;
}

/* ----------------------------------------------------------------- Db */

/* indexed by enum ut_protect */
static const char *protect_names[] = {"auto", "atomic", "doublewrite", "unsafe",
				      "fullpage"};

static int parse_protect(PyObject *o, int *out)
{
	if (!PyUnicode_Check(o)) {
		PyErr_SetString(PyExc_TypeError, "protect must be a str");
		return -1;
	}
	for (int i = 0; i < (int)(sizeof(protect_names) / sizeof(protect_names[0]));
	     i++)
		if (PyUnicode_CompareWithASCIIString(o, protect_names[i]) == 0) {
			*out = i;
			return 0;
		}
	PyErr_SetString(PyExc_ValueError, "protect must be 'auto', 'atomic', "
			"'doublewrite', 'fullpage' or 'unsafe'");
	return -1;
}

static int parse_lock_timeout(PyObject *o, unsigned *ms)
{
	double s;

	if (!o || o == Py_None)
		return 0;
	s = PyFloat_AsDouble(o);
	if (s == -1.0 && PyErr_Occurred())
		return -1;
	if (!(s >= 0 && s <= 65.535)) {
		PyErr_SetString(PyExc_ValueError,
				"lock_timeout must be 0 .. 65.535 seconds");
		return -1;
	}
	*ms = (unsigned)(s * 1000.0 + 0.5);
	return 0;
}

static PyObject *mod_open(PyObject *mod, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"path", "cache", "sync", "protect", "readonly",
				 "create", "lock_timeout", "snapshot_bytes", NULL};
	PyObject *path_bytes = NULL, *protect = NULL, *timeout = NULL;
	Py_ssize_t cache = 0, snapshot_bytes = 0;
	int sync = 1, readonly = 0, create = 1, prot = UT_PROTECT_AUTO, rc;
	ut_options o;
	ut_db *udb = NULL;
	DbObject *db;

	(void)mod;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$npOppOn:open", kwlist,
					 PyUnicode_FSConverter, &path_bytes,
					 &cache, &sync, &protect, &readonly,
					 &create, &timeout, &snapshot_bytes))
		return NULL;
	ut_options_default(&o);
	if (cache < 0 || snapshot_bytes < 0) {
		PyErr_SetString(PyExc_ValueError, "cache and snapshot_bytes must "
				"be >= 0 bytes");
		goto fail;
	}
	o.snapshot_bytes = (size_t)snapshot_bytes;
	if (cache)
		o.cache_bytes = (size_t)cache;
	if (protect && parse_protect(protect, &prot) < 0)
		goto fail;
	if (parse_lock_timeout(timeout, &o.lock_timeout_ms) < 0)
		goto fail;
	o.protect = prot;
	o.sync = sync;
	o.readonly = readonly;
	o.create = create;
	{
		const char *p = PyBytes_AS_STRING(path_bytes);
		Py_BEGIN_ALLOW_THREADS
		rc = ut_open(p, &o, &udb);
		Py_END_ALLOW_THREADS
	}
	if (rc) {
		raise_ut(rc);
		goto fail;
	}
	db = PyObject_New(DbObject, &DbType);
	if (!db) {
		Py_BEGIN_ALLOW_THREADS
		ut_close(udb);
		Py_END_ALLOW_THREADS
		goto fail;
	}
	db->db = udb;
	db->path = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path_bytes));
	db->requested_protect = prot;
	db->readonly = readonly;
	db->inflight = 0;
	db->leaked_txns = 0;
	db->leaked_writes = 0;
	db->txns = NULL;
	Py_DECREF(path_bytes);
	if (!db->path) {
		Py_DECREF(db);
		return NULL;
	}
	return (PyObject *)db;
fail:
	Py_DECREF(path_bytes);
	return NULL;
}

static PyObject *db_begin(DbObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"write", NULL};
	int write = 0, rc;
	ut_txn *t = NULL;
	TxnObject *txn;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:begin", kwlist, &write))
		return NULL;
	if (!db_usable(self))
		return NULL;
	if (write && would_wait_forever(self, "this thread already holds a write "
					"transaction on this database; a second one "
					"would wait for it"))
		return NULL;
	self->inflight++;
	Py_BEGIN_ALLOW_THREADS
	rc = ut_begin(self->db, write ? 0 : UT_RDONLY, &t);
	Py_END_ALLOW_THREADS
	self->inflight--;
	if (rc)
		return raise_ut(rc);
	txn = PyObject_New(TxnObject, &TxnType);
	if (!txn) {
		Py_BEGIN_ALLOW_THREADS
		ut_abort(t);
		Py_END_ALLOW_THREADS
		return NULL;
	}
	Py_INCREF(self);
	txn->db = self;
	txn->t = t;
	txn->owner = PyThread_get_thread_ident();
	txn->write = write;
	txn->busy = 0;
	txn->writes = 0;
	txn->iters = NULL;
	txn->orphans = NULL;
	txn->norphans = 0;
	txn->prev = NULL;
	txn->next = self->txns;
	if (self->txns)
		self->txns->prev = txn;
	self->txns = txn;
	return (PyObject *)txn;
}

/* Close: abort this thread's transactions, then ut_close. */
static PyObject *db_close(DbObject *self, PyObject *unused)
{
	unsigned long me = PyThread_get_thread_ident();
	ut_db *d = self->db;
	int rc;

	(void)unused;
	if (!d)
		Py_RETURN_NONE;
	if (self->inflight)
		return raise_busy("another thread is inside a call on this database");
	for (TxnObject *t = self->txns; t; t = t->next)
		if (t->owner != me)
			return raise_busy("another thread holds a transaction on this "
					  "database; it must end it first");
	if (self->leaked_txns)
		return raise_busy("a transaction was dropped open by another "
				  "thread; this handle stays open until exit");
	while (self->txns)
		txn_end(self->txns, 0);
	self->db = NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = ut_close(d);
	Py_END_ALLOW_THREADS
	if (rc)
		return raise_ut(rc);
	Py_RETURN_NONE;
}

static void db_dealloc(DbObject *self)
{
	/* No Txn is alive (each holds this Db), so only a leaked one can
	 * keep the engine handle busy. */
	if (self->db && !self->leaked_txns) {
		ut_db *d = self->db;
		self->db = NULL;
		Py_BEGIN_ALLOW_THREADS
		ut_close(d);
		Py_END_ALLOW_THREADS
	}
	Py_XDECREF(self->path);
	PyObject_Free(self);
}

static PyObject *db_enter(DbObject *self, PyObject *unused)
{
	(void)unused;
	if (!db_usable(self))
		return NULL;
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *db_exit(DbObject *self, PyObject *args)
{
	PyObject *r;

	(void)args;
	r = db_close(self, NULL);
	Py_XDECREF(r);
	if (!r)
		return NULL;
	Py_RETURN_FALSE;
}

static int dict_set_u64(PyObject *d, const char *k, uint64_t v)
{
	PyObject *o = PyLong_FromUnsignedLongLong(v);
	int rc = o ? PyDict_SetItemString(d, k, o) : -1;
	Py_XDECREF(o);
	return rc;
}

static int dict_set_str(PyObject *d, const char *k, const char *v)
{
	PyObject *o = PyUnicode_FromString(v);
	int rc = o ? PyDict_SetItemString(d, k, o) : -1;
	Py_XDECREF(o);
	return rc;
}

static int dict_set_bool(PyObject *d, const char *k, int v)
{
	return PyDict_SetItemString(d, k, v ? Py_True : Py_False);
}

static PyObject *db_stats(DbObject *self, PyObject *unused)
{
	ut_stats st;
	PyObject *d;
	int rc;

	(void)unused;
	if (!db_usable(self))
		return NULL;
	if ((rc = ut_stats_get(self->db, &st)))
		return raise_ut(rc);
	if (!(d = PyDict_New()))
		return NULL;
	if (dict_set_str(d, "protect", ut_protect_name(st.protect)) ||
	    dict_set_u64(d, "page_writes", st.page_writes) ||
	    dict_set_u64(d, "dw_page_writes", st.dw_page_writes) ||
	    dict_set_u64(d, "log_bytes", st.log_bytes) ||
	    dict_set_u64(d, "syncs", st.syncs) ||
	    dict_set_u64(d, "torn_repaired", st.torn_repaired) ||
	    dict_set_u64(d, "corrupt_pages", st.corrupt_pages) ||
	    dict_set_bool(d, "direct_io", st.direct_io) ||
	    dict_set_bool(d, "io_uring", st.uring) ||
	    dict_set_u64(d, "flush_batches", st.flush_batches) ||
	    dict_set_u64(d, "checkpoints", st.checkpoints) ||
	    dict_set_u64(d, "frame_waits", st.frame_waits) ||
	    dict_set_u64(d, "snapshots", st.snapshots) ||
	    dict_set_u64(d, "snapshot_versions", st.snapshot_versions) ||
	    dict_set_u64(d, "snapshot_bytes", st.snapshot_bytes) ||
	    dict_set_u64(d, "snapshot_dropped", st.snapshot_dropped) ||
	    dict_set_u64(d, "page_images", st.page_images)) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *db_info(DbObject *self, PyObject *unused)
{
	ut_stats st;
	PyObject *d;
	int rc;

	(void)unused;
	if (!db_usable(self))
		return NULL;
	if ((rc = ut_stats_get(self->db, &st)))
		return raise_ut(rc);
	if (!(d = PyDict_New()))
		return NULL;
	if (PyDict_SetItemString(d, "path", self->path) ||
	    dict_set_str(d, "protect", ut_protect_name(st.protect)) ||
	    dict_set_str(d, "requested", ut_protect_name(self->requested_protect)) ||
	    dict_set_str(d, "reason", ut_protect_reason(self->db)) ||
	    dict_set_bool(d, "readonly", self->readonly) ||
	    dict_set_bool(d, "direct_io", st.direct_io) ||
	    dict_set_bool(d, "io_uring", st.uring) ||
	    dict_set_str(d, "version", UT_VERSION_STRING)) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *db_checkpoint(DbObject *self, PyObject *unused)
{
	int rc;

	(void)unused;
	if (!db_usable(self))
		return NULL;
	if (would_wait_forever(self, "checkpoint starts when no write transaction "
			       "runs, and this thread holds one"))
		return NULL;
	self->inflight++;
	Py_BEGIN_ALLOW_THREADS
	rc = ut_checkpoint(self->db);
	Py_END_ALLOW_THREADS
	self->inflight--;
	if (rc)
		return raise_ut(rc);
	Py_RETURN_NONE;
}

/* ut_backup: a snapshot of its own, so it waits for no transaction of
 * this thread's and holds none up. */
static PyObject *db_backup(DbObject *self, PyObject *dest)
{
	PyObject *bytes = NULL;
	int rc;

	if (!db_usable(self) || !PyUnicode_FSConverter(dest, &bytes))
		return NULL;
	self->inflight++;
	Py_BEGIN_ALLOW_THREADS
	rc = ut_backup(self->db, PyBytes_AS_STRING(bytes));
	Py_END_ALLOW_THREADS
	self->inflight--;
	Py_DECREF(bytes);
	if (rc)
		return raise_ut(rc);
	Py_RETURN_NONE;
}

/* The report's lines as a list of str. */
static PyObject *report_lines(const char *buf, size_t len)
{
	PyObject *text = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "replace");
	PyObject *lines;

	if (!text)
		return NULL;
	lines = PyUnicode_Splitlines(text, 0);
	Py_DECREF(text);
	return lines;
}

static PyObject *check_result(int rc, const ut_check_result *r,
			      const char *buf, size_t len)
{
	PyObject *d = PyDict_New(), *lines;

	if (!d)
		return NULL;
	if (dict_set_bool(d, "ok", rc == UT_OK) ||
	    dict_set_u64(d, "pages_total", r->pages_total) ||
	    dict_set_u64(d, "pages_checked", r->pages_checked) ||
	    dict_set_u64(d, "bad_checksums", r->bad_checksums) ||
	    dict_set_u64(d, "invariant_errors", r->invariant_errors) ||
	    dict_set_u64(d, "keys", r->keys) ||
	    dict_set_u64(d, "depth", r->depth) ||
	    !(lines = report_lines(buf, len))) {
		Py_DECREF(d);
		return NULL;
	}
	if (PyDict_SetItemString(d, "report", lines)) {
		Py_DECREF(lines);
		Py_DECREF(d);
		return NULL;
	}
	Py_DECREF(lines);
	return d;
}

/* check(): a dict; a database with problems is a result ("ok": False),
 * not an exception.  Raises only when the check could not run. */
static PyObject *db_check(DbObject *self, PyObject *unused)
{
	ut_check_result r;
	char *buf = NULL;
	size_t len = 0;
	FILE *report;
	PyObject *res;
	int rc;

	(void)unused;
	if (!db_usable(self))
		return NULL;
	if (would_wait_forever(self, "check excludes writers, and this thread "
			       "holds a write transaction"))
		return NULL;
	if (!(report = open_memstream(&buf, &len)))
		return PyErr_NoMemory();
	memset(&r, 0, sizeof(r));
	self->inflight++;
	Py_BEGIN_ALLOW_THREADS
	rc = ut_check(self->db, report, &r);
	Py_END_ALLOW_THREADS
	self->inflight--;
	if (fclose(report) != 0) {
		free(buf);
		return PyErr_NoMemory();
	}
	if (rc != UT_OK && rc != UT_ECORRUPT) {
		free(buf);
		return raise_ut(rc);
	}
	res = check_result(rc, &r, buf, len);
	free(buf);
	return res;
}

static PyObject *db_repr(DbObject *self)
{
	return PyUnicode_FromFormat("<untorn.Db %R%s>", self->path,
				    self->db ? "" : " closed");
}

static PyObject *db_get_closed(DbObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->db == NULL);
}

static PyObject *db_get_path(DbObject *self, void *unused)
{
	(void)unused;
	Py_INCREF(self->path);
	return self->path;
}

static PyObject *table_view(PyObject *self, PyObject *name);

static PyMethodDef db_methods[] = {
	{"begin", (PyCFunction)(void (*)(void))db_begin,
	 METH_VARARGS | METH_KEYWORDS,
	 "begin(write=False) -> Txn: a read-only transaction by default"},
	{"close", (PyCFunction)db_close, METH_NOARGS,
	 "Abort this thread's open transactions, checkpoint and close."},
	{"stats", (PyCFunction)db_stats, METH_NOARGS, "Counters as a dict."},
	{"info", (PyCFunction)db_info, METH_NOARGS,
	 "Protection mode in use and why, as a dict."},
	{"checkpoint", (PyCFunction)db_checkpoint, METH_NOARGS,
	 "Write every dirty page through the protection mode."},
	{"check", (PyCFunction)db_check, METH_NOARGS,
	 "Verify every page and B+tree invariant; a dict with 'ok'."},
	{"table", (PyCFunction)table_view, METH_O,
	 "table(name): untorn.Table(self, name), each call its own transaction."},
	{"backup", (PyCFunction)db_backup, METH_O,
	 "backup(dest): copy the database as of one snapshot to the new file\n"
	 "dest (which, with dest-wal and dest-dw, must not exist) while\n"
	 "writers go on; the copy opens without a log."},
	{"__enter__", (PyCFunction)db_enter, METH_NOARGS, NULL},
	{"__exit__", (PyCFunction)db_exit, METH_VARARGS, NULL},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef db_getset[] = {
	{"closed", (getter)db_get_closed, NULL, "True once closed", NULL},
	{"path", (getter)db_get_path, NULL, "the data file's path", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DbType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "untorn.Db",
	.tp_basicsize = sizeof(DbObject),
	.tp_dealloc = (destructor)db_dealloc,
	.tp_repr = (reprfunc)db_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "An open untorn database; made by untorn.open().",
	.tp_methods = db_methods,
	.tp_getset = db_getset,
};

/* ----------------------------------------------------------------- Txn */

static PyObject *txn_get(TxnObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"key", "default", "table", NULL};
	PyObject *key, *dflt = Py_None, *res, *table = NULL;
	ut_table *tb;
	Py_buffer k;
	void *val = NULL;
	size_t vlen = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$O:get", kwlist, &key,
					 &dflt, &table))
		return NULL;
	if (!txn_usable(self) || get_bytes(key, &k, "key") < 0)
		return NULL;
	txn_enter(self);
	if (table_arg(self, table, 0, &tb) < 0) {
		PyBuffer_Release(&k);
		txn_leave(self);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = ut_tget(self->t, tb, k.buf, (size_t)k.len, &val, &vlen);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&k);
	if (rc < 0) {
		raise_ut(rc);
		txn_leave(self);
		return NULL;
	}
	txn_leave(self);
	if (rc == UT_NOTFOUND) {
		Py_INCREF(dflt);
		return dflt;
	}
	res = PyBytes_FromStringAndSize(val ? val : "", (Py_ssize_t)vlen);
	free(val);
	return res;
}

static PyObject *txn_put(TxnObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"key", "value", "table", NULL};
	PyObject *key, *value, *table = NULL;
	ut_table *tb;
	Py_buffer k, v;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:put", kwlist, &key,
					 &value, &table))
		return NULL;
	if (!txn_usable(self) || get_bytes(key, &k, "key") < 0)
		return NULL;
	if (get_bytes(value, &v, "value") < 0) {
		PyBuffer_Release(&k);
		return NULL;
	}
	txn_enter(self);
	if (table_arg(self, table, self->write, &tb) < 0) {
		PyBuffer_Release(&k);
		PyBuffer_Release(&v);
		txn_leave(self);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = ut_tput(self->t, tb, k.buf, (size_t)k.len, v.buf, (size_t)v.len);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&k);
	PyBuffer_Release(&v);
	if (rc)
		raise_ut(rc);
	self->writes++;
	txn_leave(self);
	if (rc)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *txn_delete(TxnObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"key", "table", NULL};
	PyObject *key, *table = NULL;
	ut_table *tb;
	Py_buffer k;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$O:delete", kwlist, &key,
					 &table))
		return NULL;
	if (!txn_usable(self) || get_bytes(key, &k, "key") < 0)
		return NULL;
	txn_enter(self);
	if (table_arg(self, table, 0, &tb) < 0) {
		PyBuffer_Release(&k);
		txn_leave(self);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = ut_tdel(self->t, tb, k.buf, (size_t)k.len);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&k);
	if (rc < 0)
		raise_ut(rc);
	self->writes++;
	txn_leave(self);
	if (rc < 0)
		return NULL;
	return PyBool_FromLong(rc == UT_OK);
}

static int txn_contains(TxnObject *self, PyObject *key)
{
	Py_buffer k;
	void *val = NULL;
	size_t vlen = 0;
	int rc;

	if (!txn_usable(self) || get_bytes(key, &k, "key") < 0)
		return -1;
	txn_enter(self);
	Py_BEGIN_ALLOW_THREADS
	rc = ut_get(self->t, k.buf, (size_t)k.len, &val, &vlen);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&k);
	free(val);
	if (rc < 0)
		raise_ut(rc);
	txn_leave(self);
	return rc < 0 ? -1 : rc == UT_OK;
}

static PyObject *txn_commit(TxnObject *self, PyObject *unused)
{
	int rc;

	(void)unused;
	if (!txn_usable(self))
		return NULL;
	if ((rc = txn_end(self, 1)))
		return raise_ut(rc);
	Py_RETURN_NONE;
}

static PyObject *txn_abort(TxnObject *self, PyObject *unused)
{
	(void)unused;
	if (!txn_usable(self))
		return NULL;
	txn_end(self, 0);
	Py_RETURN_NONE;
}

static PyObject *txn_enter_ctx(TxnObject *self, PyObject *unused)
{
	(void)unused;
	if (!txn_usable(self))
		return NULL;
	Py_INCREF(self);
	return (PyObject *)self;
}

/* Commit on success, abort on an exception; a transaction the block
 * already ended is left alone. */
static PyObject *txn_exit_ctx(TxnObject *self, PyObject *args)
{
	PyObject *exc_type = Py_None, *exc, *tb;
	int rc;

	if (!PyArg_ParseTuple(args, "|OOO", &exc_type, &exc, &tb))
		return NULL;
	if (!self->t)
		Py_RETURN_FALSE;
	if (!txn_usable(self))
		return NULL;
	if (exc_type != Py_None) {
		txn_end(self, 0);
		Py_RETURN_FALSE;
	}
	if ((rc = txn_end(self, 1)))
		return raise_ut(rc);
	Py_RETURN_FALSE;
}

static PyObject *iter_new(TxnObject *txn, enum iter_yield what,
			  PyObject *start, PyObject *stop, PyObject *prefix,
			  PyObject *table);

static PyObject *txn_range(TxnObject *self, PyObject *args, PyObject *kw,
			   enum iter_yield what)
{
	static char *kwlist[] = {"start", "stop", "prefix", "reverse", "table",
				 NULL};
	PyObject *start = NULL, *stop = NULL, *prefix = NULL, *it, *list;
	PyObject *table = NULL;
	int reverse = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOpO", kwlist, &start,
					 &stop, &prefix, &reverse, &table))
		return NULL;
	if (!(it = iter_new(self, what, start, stop, prefix, table)))
		return NULL;
	if (!reverse)
		return it;
	/* Only forward cursors: collect the range, hand it back reversed. */
	list = PySequence_List(it);
	Py_DECREF(it);
	if (!list || PyList_Reverse(list) < 0) {
		Py_XDECREF(list);
		return NULL;
	}
	it = PyObject_GetIter(list);
	Py_DECREF(list);
	return it;
}

static PyObject *txn_items(TxnObject *self, PyObject *args, PyObject *kw)
{
	return txn_range(self, args, kw, YIELD_ITEMS);
}

static PyObject *txn_keys(TxnObject *self, PyObject *args, PyObject *kw)
{
	return txn_range(self, args, kw, YIELD_KEYS);
}

static PyObject *txn_values(TxnObject *self, PyObject *args, PyObject *kw)
{
	return txn_range(self, args, kw, YIELD_VALUES);
}

/* The named tables as txn sees them: [(name, keys, pages), ...]. */
static PyObject *txn_tables(TxnObject *self, PyObject *unused)
{
	PyObject *list;
	ut_table_info ti;
	int rc;

	(void)unused;
	if (!txn_usable(self) || !(list = PyList_New(0)))
		return NULL;
	txn_enter(self);
	for (rc = ut_table_next(self->t, NULL, &ti); rc == UT_OK;
	     rc = ut_table_next(self->t, ti.name, &ti)) {
		PyObject *e = Py_BuildValue("(sKK)", ti.name,
					    (unsigned long long)ti.keys,
					    (unsigned long long)ti.pages);

		if (!e || PyList_Append(list, e) < 0) {
			Py_XDECREF(e);
			Py_DECREF(list);
			txn_leave(self);
			return NULL;
		}
		Py_DECREF(e);
	}
	txn_leave(self);
	if (rc != UT_NOTFOUND) {
		Py_DECREF(list);
		return raise_ut(rc);
	}
	return list;
}

/* drop_table(name) and clear_table(name): NoTableError when absent. */
static PyObject *table_op(TxnObject *self, PyObject *name, int drop)
{
	ut_table *tb;
	int rc;

	if (!txn_usable(self))
		return NULL;
	if (name == Py_None) {
		PyErr_SetString(PyExc_TypeError, "a table name is needed");
		return NULL;
	}
	txn_enter(self);
	if (table_arg(self, name, 0, &tb) < 0) {
		txn_leave(self);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = drop ? ut_table_drop(self->t, tb) : ut_table_clear(self->t, tb);
	Py_END_ALLOW_THREADS
	self->writes++;
	txn_leave(self);
	if (rc)
		return raise_ut(rc);
	Py_RETURN_NONE;
}

static PyObject *txn_drop_table(TxnObject *self, PyObject *name)
{
	return table_op(self, name, 1);
}

static PyObject *txn_clear_table(TxnObject *self, PyObject *name)
{
	return table_op(self, name, 0);
}

/* db.table(name) and txn.table(name): untorn.Table(self, name). */
static PyObject *table_view(PyObject *self, PyObject *name)
{
	PyObject *mod = PyImport_ImportModule("untorn"), *cls, *res;

	if (!mod)
		return NULL;
	cls = PyObject_GetAttrString(mod, "Table");
	Py_DECREF(mod);
	if (!cls)
		return NULL;
	res = PyObject_CallFunctionObjArgs(cls, self, name, NULL);
	Py_DECREF(cls);
	return res;
}

static PyObject *txn_iter(TxnObject *self)
{
	return iter_new(self, YIELD_KEYS, NULL, NULL, NULL, NULL);
}

/* Freed while open: abort on the owner thread; elsewhere leak (see the
 * file's contract). */
static void txn_dealloc(TxnObject *self)
{
	if (self->t) {
		if (self->owner == PyThread_get_thread_ident()) {
			txn_end(self, 0);
		} else {
			txn_unlink(self);
			self->db->leaked_txns++;
			self->db->leaked_writes += self->write;
		}
	}
	Py_DECREF(self->db);
	PyObject_Free(self);
}

static PyObject *txn_repr(TxnObject *self)
{
	return PyUnicode_FromFormat("<untorn.Txn %s%s>",
				    self->write ? "write" : "read",
				    self->t ? "" : " ended");
}

static PyObject *txn_get_write(TxnObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->write);
}

static PyObject *txn_get_active(TxnObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->t != NULL);
}

static PyMethodDef txn_methods[] = {
	{"get", (PyCFunction)(void (*)(void))txn_get, METH_VARARGS | METH_KEYWORDS,
	 "get(key, default=None) -> bytes or default"},
	{"put", (PyCFunction)(void (*)(void))txn_put, METH_VARARGS | METH_KEYWORDS,
	 "put(key, value, *, table=None); a named table is created"},
	{"tables", (PyCFunction)txn_tables, METH_NOARGS,
	 "The named tables: [(name, keys, pages), ...] in name order."},
	{"drop_table", (PyCFunction)txn_drop_table, METH_O,
	 "drop_table(name): drop the table, its pages to the free list."},
	{"clear_table", (PyCFunction)txn_clear_table, METH_O,
	 "clear_table(name): delete every key of the table."},
	{"table", (PyCFunction)table_view, METH_O,
	 "table(name): untorn.Table(self, name), the table in this transaction."},
	{"delete", (PyCFunction)(void (*)(void))txn_delete, METH_VARARGS | METH_KEYWORDS,
	 "delete(key) -> True if the key was there"},
	{"commit", (PyCFunction)txn_commit, METH_NOARGS, NULL},
	{"abort", (PyCFunction)txn_abort, METH_NOARGS, NULL},
	{"items", (PyCFunction)(void (*)(void))txn_items,
	 METH_VARARGS | METH_KEYWORDS,
	 "items(*, start=None, stop=None, prefix=None, reverse=False): "
	 "(key, value) pairs in key order, start <= key < stop"},
	{"keys", (PyCFunction)(void (*)(void))txn_keys,
	 METH_VARARGS | METH_KEYWORDS, "keys(*, start, stop, prefix, reverse)"},
	{"values", (PyCFunction)(void (*)(void))txn_values,
	 METH_VARARGS | METH_KEYWORDS, "values(*, start, stop, prefix, reverse)"},
	{"__enter__", (PyCFunction)txn_enter_ctx, METH_NOARGS, NULL},
	{"__exit__", (PyCFunction)txn_exit_ctx, METH_VARARGS, NULL},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef txn_getset[] = {
	{"write", (getter)txn_get_write, NULL, "True for a write transaction", NULL},
	{"active", (getter)txn_get_active, NULL, "False once ended", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods txn_as_sequence = {
	.sq_contains = (objobjproc)txn_contains,
};

static PyTypeObject TxnType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "untorn.Txn",
	.tp_basicsize = sizeof(TxnObject),
	.tp_dealloc = (destructor)txn_dealloc,
	.tp_repr = (reprfunc)txn_repr,
	.tp_as_sequence = &txn_as_sequence,
	.tp_iter = (getiterfunc)txn_iter,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A transaction; made by Db.begin().",
	.tp_methods = txn_methods,
	.tp_getset = txn_getset,
};

/* ------------------------------------------------------------ iterator */

static PyObject *iter_new(TxnObject *txn, enum iter_yield what,
			  PyObject *start, PyObject *stop, PyObject *prefix,
			  PyObject *table)
{
	IterObject *it;
	ut_cursor *c = NULL;
	ut_table *tb;
	int rc;

	if (!txn_usable(txn))
		return NULL;
	if (!(it = PyObject_New(IterObject, &IterType)))
		return NULL;
	Py_INCREF(txn);
	it->txn = txn;
	it->c = NULL;
	it->done = 0;
	it->what = what;
	it->last = NULL;
	it->writes_seen = txn->writes;
	it->prev = it->next = NULL;
	it->start = it->stop = it->prefix = NULL;
	if (bytes_arg(start, &it->start, "start") < 0 ||
	    bytes_arg(stop, &it->stop, "stop") < 0 ||
	    bytes_arg(prefix, &it->prefix, "prefix") < 0) {
		Py_DECREF(it);
		return NULL;
	}
	if (table_arg(txn, table, 0, &tb) < 0) {
		Py_DECREF(it);
		return NULL;
	}
	if ((rc = ut_tcursor_open(txn->t, tb, &c))) {
		Py_DECREF(it);
		return raise_ut(rc);
	}
	it->c = c;
	it->next = txn->iters;
	if (txn->iters)
		txn->iters->prev = it;
	txn->iters = it;
	return (PyObject *)it;
}

static void iter_finish(IterObject *it)
{
	ut_cursor_close(it->c);
	it->c = NULL;
	it->done = 1;
	iter_unlink(it);
}

/* Where the first seek goes: the larger of start and prefix. */
static PyObject *iter_first_key(IterObject *it)
{
	if (!it->prefix)
		return it->start;
	if (!it->start)
		return it->prefix;
	return PyObject_RichCompareBool(it->start, it->prefix, Py_GT) > 0
	       ? it->start : it->prefix;
}

/* Move the cursor to the entry after the last one returned. */
static int iter_step(IterObject *it)
{
	ut_cursor *c = it->c;
	const void *k, *v;
	size_t kl, vl;
	PyObject *seek;
	int rc;

	if (!it->last) {
		it->writes_seen = it->txn->writes;
		seek = iter_first_key(it);
		Py_BEGIN_ALLOW_THREADS
		rc = ut_cursor_seek(c, seek ? PyBytes_AS_STRING(seek) : "",
				    seek ? (size_t)PyBytes_GET_SIZE(seek) : 0);
		Py_END_ALLOW_THREADS
		return rc;
	}
	if (it->writes_seen == it->txn->writes) {
		Py_BEGIN_ALLOW_THREADS
		rc = ut_cursor_next(c);
		Py_END_ALLOW_THREADS
		return rc;
	}
	/* A put/delete through the txn invalidated the cursor: re-seek to the
	 * last key returned and skip it if it is still there. */
	it->writes_seen = it->txn->writes;
	Py_BEGIN_ALLOW_THREADS
	rc = ut_cursor_seek(c, PyBytes_AS_STRING(it->last),
			    (size_t)PyBytes_GET_SIZE(it->last));
	if (rc == UT_OK && (rc = ut_cursor_get(c, &k, &kl, &v, &vl)) == UT_OK &&
	    kl == (size_t)PyBytes_GET_SIZE(it->last) &&
	    memcmp(k, PyBytes_AS_STRING(it->last), kl) == 0)
		rc = ut_cursor_next(c);
	Py_END_ALLOW_THREADS
	return rc;
}

/* Is key past the range (at or beyond stop, or out of the prefix)? */
static int iter_beyond(IterObject *it, const void *k, size_t kl)
{
	if (it->prefix) {
		size_t pl = (size_t)PyBytes_GET_SIZE(it->prefix);
		if (kl < pl || memcmp(k, PyBytes_AS_STRING(it->prefix), pl) != 0)
			return 1;
	}
	if (it->stop) {
		size_t sl = (size_t)PyBytes_GET_SIZE(it->stop);
		int c = memcmp(k, PyBytes_AS_STRING(it->stop), kl < sl ? kl : sl);
		if (c > 0 || (c == 0 && kl >= sl))
			return 1;
	}
	return 0;
}

static PyObject *iter_yield_entry(IterObject *it, const void *k, size_t kl,
				  const void *v, size_t vl)
{
	PyObject *key = PyBytes_FromStringAndSize(k, (Py_ssize_t)kl), *val;

	if (!key)
		return NULL;
	Py_XSETREF(it->last, key);
	if (it->what == YIELD_KEYS) {
		Py_INCREF(key);
		return key;
	}
	if (!(val = PyBytes_FromStringAndSize(vl ? v : "", (Py_ssize_t)vl)))
		return NULL;
	if (it->what == YIELD_VALUES)
		return val;
	Py_INCREF(key);
	return Py_BuildValue("(NN)", key, val);
}

static PyObject *iter_next(IterObject *it)
{
	TxnObject *txn = it->txn;
	const void *k = NULL, *v = NULL;
	size_t kl = 0, vl = 0;
	PyObject *res;
	int rc;

	if (it->done)
		return NULL;
	if (!it->c)
		return raise_closed(txn->db->db ? "the iterator's transaction has ended"
				    : "the database is closed");
	if (!txn_usable(txn))
		return NULL;
	txn_enter(txn);
	rc = iter_step(it);
	if (rc == UT_OK)
		rc = ut_cursor_get(it->c, &k, &kl, &v, &vl);
	if (rc < 0) {
		raise_ut(rc);
		txn_leave(txn);
		return NULL;
	}
	if (rc == UT_NOTFOUND || iter_beyond(it, k, kl)) {
		iter_finish(it);
		txn_leave(txn);
		return NULL;
	}
	res = iter_yield_entry(it, k, kl, v, vl);
	txn_leave(txn);
	return res;
}

/* Freed on another thread while the owner is in an engine call: the
 * cursor is closed by the owner when that call returns. */
static void iter_dealloc(IterObject *it)
{
	TxnObject *txn = it->txn;

	if (it->c) {
		iter_unlink(it);
		if (!txn->busy) {
			ut_cursor_close(it->c);
		} else {
			ut_cursor **o = PyMem_Realloc(txn->orphans,
				(txn->norphans + 1) * sizeof(*o));
			if (o) {
				o[txn->norphans++] = it->c;
				txn->orphans = o;
			} /* else: the cursor is freed when the txn ends */
		}
	}
	Py_XDECREF(it->start);
	Py_XDECREF(it->stop);
	Py_XDECREF(it->prefix);
	Py_XDECREF(it->last);
	Py_DECREF(txn);
	PyObject_Free(it);
}

static PyTypeObject IterType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "untorn.Iterator",
	.tp_basicsize = sizeof(IterObject),
	.tp_dealloc = (destructor)iter_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Keys, values or items of a transaction in key order.",
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = (iternextfunc)iter_next,
};

/* -------------------------------------------------------------- module */

static PyMethodDef module_methods[] = {
	{"open", (PyCFunction)(void (*)(void))mod_open, METH_VARARGS | METH_KEYWORDS,
	 "open(path, *, cache=64 MiB, sync=True, protect='auto', readonly=False, "
	 "create=True, lock_timeout=0.5) -> Db"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef untorn_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "untorn._untorn",
	.m_doc = "The C core of the untorn binding (import untorn instead).",
	.m_size = -1,
	.m_methods = module_methods,
};

static int add_error_classes(PyObject *m)
{
	Error = PyErr_NewExceptionWithDoc("untorn.Error",
		"An untorn error; .code is the UT_E* code, .detail ut_errdetail().",
		NULL, NULL);
	if (!Error || PyModule_AddObjectRef(m, "Error", Error) < 0)
		return -1;
	for (size_t i = 0; i < N_CODE_CLASSES; i++) {
		struct code_class *cc = &code_classes[i];
		char name[64];
		PyObject *bases = cc->extra_base
			? PyTuple_Pack(2, Error, *cc->extra_base)
			: PyTuple_Pack(1, Error);
		if (!bases)
			return -1;
		snprintf(name, sizeof(name), "untorn.%s", cc->name);
		cc->cls = PyErr_NewException(name, bases, NULL);
		Py_DECREF(bases);
		if (!cc->cls || PyModule_AddObjectRef(m, cc->name, cc->cls) < 0)
			return -1;
	}
	BusyError = class_for_code(UT_EBUSY);
	ClosedError = PyErr_NewExceptionWithDoc("untorn.ClosedError",
		"Use of a closed database, an ended transaction or its iterators.",
		Error, NULL);
	if (!ClosedError || PyModule_AddObjectRef(m, "ClosedError", ClosedError) < 0)
		return -1;
	{
		PyObject *bases = PyTuple_Pack(2, Error, PyExc_KeyError);

		if (!bases)
			return -1;
		NoTableError = PyErr_NewException("untorn.NoTableError", bases, NULL);
		Py_DECREF(bases);
		if (!NoTableError ||
		    PyModule_AddObjectRef(m, "NoTableError", NoTableError) < 0)
			return -1;
	}
	return 0;
}

static int add_constants(PyObject *m)
{
	if (PyModule_AddIntConstant(m, "MAX_KEY", UT_MAX_KEY) < 0 ||
	    PyModule_AddIntConstant(m, "MAX_VALUE", UT_MAX_VALUE) < 0 ||
	    PyModule_AddIntConstant(m, "PAGE_SIZE", UT_PAGE_SIZE) < 0 ||
	    PyModule_AddStringConstant(m, "__version__", UT_VERSION_STRING) < 0)
		return -1;
	return 0;
}

PyMODINIT_FUNC PyInit__untorn(void)
{
	PyObject *m;

	if (PyType_Ready(&DbType) < 0 || PyType_Ready(&TxnType) < 0 ||
	    PyType_Ready(&IterType) < 0)
		return NULL;
	if (!(m = PyModule_Create(&untorn_module)))
		return NULL;
	if (add_error_classes(m) < 0 || add_constants(m) < 0 ||
	    PyModule_AddObjectRef(m, "Db", (PyObject *)&DbType) < 0 ||
	    PyModule_AddObjectRef(m, "Txn", (PyObject *)&TxnType) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}

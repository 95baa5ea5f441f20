"""untorn: an embedded ordered key-value store (Python binding).

    import untorn
    with untorn.open("data.ut") as db:
        with db.begin(write=True) as txn:
            txn.put(b"k", b"v")
        with db.begin() as txn:
            print(txn.get(b"k"))

Named tables: every Txn call takes table=NAME (put creates the table;
the others raise NoTableError, a KeyError, when it does not exist), and
db.table(NAME) / txn.table(NAME) give a Table, a Mapping of one table:

    with db.begin(write=True) as txn:            # one commit, both tables
        txn.put(b"alice", b"a@example.org", table="users")
        txn.put(b"a@example.org", b"alice", table="by_email")
    users = db.table("users")
    print(users[b"alice"], list(users.keys()))

The C core is untorn._untorn (Db, Txn, the iterators and the exceptions);
this package adds Mapping, a MutableMapping view, Table, and untorn.dbm
(which keeps to the default table).
"""
from collections.abc import MutableMapping

from ._untorn import (  # noqa: F401  (re-exported API)
    MAX_KEY, MAX_VALUE, PAGE_SIZE, BusyError, ClosedError, CorruptError, Db,
    DiskError, DiskFullError, Error, FatalError, InvalidParameterError,
    LockedError, NoMemoryError, NoTableError, NotADatabaseError,
    NotSupportedError, ReadOnlyError, SnapshotTooOldError, TooBigError, Txn,
    VersionError, __version__, open)

_MISSING = object()


class Mapping(MutableMapping):
    """A dict-like view of a database, keys and values bytes.

    Mapping(db): every operation runs in its own transaction (a write
    commits before it returns); iteration reads the keys in batches of
    `batch`, each batch its own read transaction, so it never holds the
    database for long and tolerates writes in between (each key is seen
    at most once, in order; keys added behind the position are missed).
    Mapping(txn): every operation runs inside that transaction.
    table=NAME: the named table instead of the default one (a write
    creates it; reading one that does not exist raises NoTableError).
    len() counts by walking every key.
    """

    def __init__(self, source, batch=1000, table=None):
        if isinstance(source, Txn):
            self._txn, self._db = source, None
        elif isinstance(source, Db):
            self._txn, self._db = None, source
        else:
            raise TypeError("Mapping needs an untorn.Db or untorn.Txn")
        self._batch = batch
        self._table = table

    def _run(self, write, fn):
        if self._txn is not None:
            return fn(self._txn)
        with self._db.begin(write=write) as txn:
            return fn(txn)

    def __getitem__(self, key):
        value = self._run(False, lambda t: t.get(key, _MISSING,
                                                  table=self._table))
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        self._run(True, lambda t: t.put(key, value, table=self._table))

    def __delitem__(self, key):
        if not self._run(True, lambda t: t.delete(key, table=self._table)):
            raise KeyError(key)

    def __contains__(self, key):
        return self._run(False, lambda t: t.get(
            key, _MISSING, table=self._table) is not _MISSING)

    def __iter__(self):
        if self._txn is not None:
            yield from self._txn.keys(table=self._table)
            return
        last = None
        while True:
            with self._db.begin() as txn:
                batch = []
                for key in txn.keys(start=last, table=self._table):
                    if key == last:
                        continue
                    batch.append(key)
                    if len(batch) == self._batch:
                        break
            yield from batch
            if len(batch) < self._batch:
                return
            last = batch[-1]

    def __len__(self):
        return sum(1 for _ in self)


class Table(Mapping):
    """One named table: db.table(name) (each call its own transaction, as
    Mapping(db)) or txn.table(name) (inside that transaction).

    Beside the Mapping operations: get/put/delete and items/keys/values
    (with start, stop, prefix, reverse) as on a Txn, stat() -> (keys,
    pages) from the catalog, clear() and drop().  A put creates the
    table; reading a table that does not exist raises NoTableError.
    """

    def __init__(self, source, name, batch=1000):
        if not isinstance(name, (str, bytes)) or not name:
            raise TypeError("a table name is a non-empty str or bytes")
        super().__init__(source, batch=batch, table=name)
        self.name = name

    def get(self, key, default=None):
        return self._run(False, lambda t: t.get(key, default,
                                                table=self._table))

    def put(self, key, value):
        self._run(True, lambda t: t.put(key, value, table=self._table))

    def delete(self, key):
        """True when key was there."""
        return self._run(True, lambda t: t.delete(key, table=self._table))

    def _range(self, what, **kw):
        if self._txn is not None:
            return getattr(self._txn, what)(table=self._table, **kw)
        with self._db.begin() as txn:
            return list(getattr(txn, what)(table=self._table, **kw))

    def items(self, **kw):
        return self._range("items", **kw)

    def keys(self, **kw):
        return self._range("keys", **kw)

    def values(self, **kw):
        return self._range("values", **kw)

    def stat(self):
        """(keys, pages) of the table, from the catalog (no scan)."""
        name = self._table.decode() if isinstance(self._table, bytes) \
            else self._table
        for n, keys, pages in self._run(False, lambda t: t.tables()):
            if n == name:
                return keys, pages
        raise NoTableError("no table %r" % (self._table,))

    def clear(self):
        self._run(True, lambda t: t.clear_table(self._table))

    def drop(self):
        self._run(True, lambda t: t.drop_table(self._table))

    def __repr__(self):
        return "<untorn.Table %r>" % (self._table,)

"""untorn: an embedded ordered key-value store (Python binding).

    import untorn
    with untorn.open("data.ut") as db:
        with db.begin(write=True) as txn:
            txn.put(b"k", b"v")
        with db.begin() as txn:
            print(txn.get(b"k"))

The C core is untorn._untorn (Db, Txn, the iterators and the exceptions);
this package adds Mapping, a MutableMapping view, and untorn.dbm.
"""
from collections.abc import MutableMapping

from ._untorn import (  # noqa: F401  (re-exported API)
    MAX_KEY, MAX_VALUE, PAGE_SIZE, BusyError, ClosedError, CorruptError, Db,
    DiskError, DiskFullError, Error, FatalError, InvalidParameterError,
    LockedError, NoMemoryError, NotADatabaseError, NotSupportedError,
    ReadOnlyError, SnapshotTooOldError, TooBigError, Txn, VersionError,
    __version__, open)

_MISSING = object()


class Mapping(MutableMapping):
    """A dict-like view of a database, keys and values bytes.

    Mapping(db): every operation runs in its own transaction (a write
    commits before it returns); iteration reads the keys in batches of
    `batch`, each batch its own read transaction, so it never holds the
    database for long and tolerates writes in between (each key is seen
    at most once, in order; keys added behind the position are missed).
    Mapping(txn): every operation runs inside that transaction.
    len() counts by walking every key.
    """

    def __init__(self, source, batch=1000):
        if isinstance(source, Txn):
            self._txn, self._db = source, None
        elif isinstance(source, Db):
            self._txn, self._db = None, source
        else:
            raise TypeError("Mapping needs an untorn.Db or untorn.Txn")
        self._batch = batch

    def _run(self, write, fn):
        if self._txn is not None:
            return fn(self._txn)
        with self._db.begin(write=write) as txn:
            return fn(txn)

    def __getitem__(self, key):
        value = self._run(False, lambda t: t.get(key, _MISSING))
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        self._run(True, lambda t: t.put(key, value))

    def __delitem__(self, key):
        if not self._run(True, lambda t: t.delete(key)):
            raise KeyError(key)

    def __contains__(self, key):
        return self._run(False, lambda t: key in t)

    def __iter__(self):
        if self._txn is not None:
            yield from self._txn.keys()
            return
        last = None
        while True:
            with self._db.begin() as txn:
                batch = []
                for key in txn.keys(start=last):
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

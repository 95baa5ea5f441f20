"""untorn.dbm: the standard library's dbm interface over an untorn database.

    db = untorn.dbm.open("cache.ut", "c")
    db["key"] = "value"          # str is encoded as UTF-8, as dbm.gnu does
    db[b"key"]                   # -> b'value' (values come back as bytes)

open(file, flag='r', mode=0o666): 'r' read-only, 'w' read-write, both on an
existing database; 'c' creates it when missing; 'n' always starts a new,
empty one (removing FILE, FILE-wal and FILE-dw first).  A file created
here gets mode & ~umask (the engine's -wal and -dw files get its default).
Every write is its own transaction, durable when it returns.  A missing
key raises KeyError; every other failure raises `error`, a subclass of
both untorn.Error and OSError (the stdlib's dbm modules' errors are
OSErrors), with the engine's .code and .detail.
"""
import contextlib
import os
from collections.abc import MutableMapping

from . import Error, Mapping
from . import open as _open_db


class error(Error, OSError):
    """An untorn.dbm failure; .code and .detail as in untorn.Error."""


@contextlib.contextmanager
def _translated():
    try:
        yield
    except error:
        raise
    except Error as e:
        new = error(str(e))
        new.code, new.detail = e.code, e.detail
        raise new from e


def _as_bytes(s):
    if isinstance(s, str):
        return s.encode("utf-8")
    return s


class _Database(MutableMapping):
    def __init__(self, db):
        self._db = db
        self._map = Mapping(db)

    def __getitem__(self, key):
        with _translated():
            return self._map[_as_bytes(key)]

    def __setitem__(self, key, value):
        with _translated():
            self._map[_as_bytes(key)] = _as_bytes(value)

    def __delitem__(self, key):
        with _translated():
            del self._map[_as_bytes(key)]

    def __contains__(self, key):
        with _translated():
            return _as_bytes(key) in self._map

    def __iter__(self):
        with _translated():
            yield from self._map

    def __len__(self):
        with _translated():
            return len(self._map)

    def keys(self):
        """All keys as a list of bytes, as dbm.gnu and dbm.ndbm return."""
        with _translated():
            return list(self._map)

    def setdefault(self, key, default=b""):
        try:
            return self[key]
        except KeyError:
            self[key] = default
            return self[key]

    def close(self):
        with _translated():
            self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _remove_database(path):
    for name in (path, path + "-wal", path + "-dw"):
        try:
            os.remove(name)
        except FileNotFoundError:
            pass


def _create_file(path, mode):
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))
    except FileExistsError:
        pass


def open(file, flag="r", mode=0o666):
    """Open an untorn database with the dbm module interface."""
    path = os.fsdecode(file)
    if flag not in ("r", "w", "c", "n"):
        raise ValueError("flag must be one of 'r', 'w', 'c', or 'n'")
    if flag == "n":
        _remove_database(path)
    if flag in ("c", "n"):
        _create_file(path, mode)
    with _translated():
        return _Database(_open_db(path, readonly=(flag == "r"),
                                  create=flag in ("c", "n")))

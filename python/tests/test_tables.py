"""Named tables: table= on Txn calls, db.table() / txn.table(), Table,
Mapping(db, table=...), atomic commits across tables, snapshots."""
import pytest

import untorn


def test_two_tables_in_one_transaction(db):
    with db.begin(write=True) as txn:
        txn.put(b"alice", b"a@example.org", table="users")
        txn.put(b"a@example.org", b"alice", table="by_email")
        txn.put(b"alice", b"default")
    with db.begin() as txn:
        assert txn.get(b"alice", table="users") == b"a@example.org"
        assert txn.get(b"a@example.org", table="by_email") == b"alice"
        assert txn.get(b"alice") == b"default"
        assert txn.tables() == [("by_email", 1, 1), ("users", 1, 1)]
        assert list(txn.keys(table="users")) == [b"alice"]
        assert list(txn.items(table=b"by_email")) == [(b"a@example.org", b"alice")]
        with pytest.raises(untorn.NoTableError):
            txn.get(b"x", table="nope")
        with pytest.raises(KeyError):             # NoTableError is a KeyError
            list(txn.keys(table="nope"))


def test_abort_undoes_creates_and_drops(db):
    with db.begin(write=True) as txn:
        txn.put(b"k", b"v", table="keep")
    txn = db.begin(write=True)
    txn.put(b"k", b"v", table="new")
    txn.drop_table("keep")
    with pytest.raises(untorn.NoTableError):
        txn.get(b"k", table="keep")
    txn.abort()
    with db.begin() as txn:
        assert [t[0] for t in txn.tables()] == ["keep"]
        assert txn.get(b"k", table="keep") == b"v"


def test_reader_keeps_a_dropped_table(db):
    with db.begin(write=True) as txn:
        for i in range(100):
            txn.put(b"%03d" % i, b"x" * 100, table="t")
    reader = db.begin()
    with db.begin(write=True) as txn:
        txn.drop_table("t")
    assert len(list(reader.keys(table="t"))) == 100
    reader.abort()
    with db.begin() as txn:
        assert txn.tables() == []


def test_table_view(db):
    users = db.table("users")
    assert isinstance(users, untorn.Table)
    users[b"bob"] = b"2"
    users.put(b"alice", b"1")
    assert users[b"alice"] == b"1" and users.get(b"zed") is None
    assert list(users) == [b"alice", b"bob"] and len(users) == 2
    assert users.keys(prefix=b"a") == [b"alice"]
    assert users.items(reverse=True) == [(b"bob", b"2"), (b"alice", b"1")]
    assert users.stat() == (2, 1)
    assert users.delete(b"bob") and not users.delete(b"bob")
    with db.begin(write=True) as txn:            # inside one transaction
        t = txn.table("users")
        t[b"carol"] = b"3"
        assert dict(t.items()) == {b"alice": b"1", b"carol": b"3"}
    users.clear()
    assert len(users) == 0 and users.stat() == (0, 1)
    users.drop()
    with pytest.raises(untorn.NoTableError):
        users[b"alice"]
    with pytest.raises(untorn.NoTableError):
        users.stat()


def test_mapping_of_a_table_and_dbm_keeps_default(db):
    m = untorn.Mapping(db, table="m")
    m[b"k"] = b"v"
    assert b"k" in m and dict(m.items()) == {b"k": b"v"}
    assert untorn.Mapping(db).get(b"k") is None
    with db.begin() as txn:
        assert txn.tables() == [("m", 1, 1)]


def test_bad_names(db):
    with db.begin(write=True) as txn:
        with pytest.raises(untorn.InvalidParameterError):
            txn.put(b"k", b"v", table="")
        with pytest.raises(untorn.InvalidParameterError):
            txn.put(b"k", b"v", table="n" * 256)
        with pytest.raises(ValueError):
            txn.put(b"k", b"v", table=b"a\0b")
        with pytest.raises(TypeError):
            txn.put(b"k", b"v", table=5)
        txn.put(b"k", b"v", table="n" * 255)


def test_tables_survive_reopen(path):
    with untorn.open(path) as db:
        db.table("a")[b"1"] = b"one"
    with untorn.open(path) as db:
        assert db.table("a")[b"1"] == b"one"
        assert db.check()["ok"]

"""untorn.Mapping and shelve on top of it."""
import random
import shelve

import pytest

import untorn


def test_mapping_over_db_behaves_like_a_dict(db):
    m = untorn.Mapping(db, batch=7)
    oracle = {}
    rng = random.Random(5)
    for _ in range(400):
        k = rng.randbytes(rng.randint(1, 8))
        if rng.random() < 0.7:
            oracle[k] = m[k] = rng.randbytes(rng.randint(0, 50))
        elif k in oracle:
            del oracle[k]
            del m[k]
    assert len(m) == len(oracle)
    assert list(m) == sorted(oracle)          # batches of 7 stitched in order
    assert dict(m.items()) == oracle
    for k in oracle:
        assert k in m and m[k] == oracle[k]
    with pytest.raises(KeyError):
        m[b"\xff" * 20]
    with pytest.raises(KeyError):
        del m[b"\xff" * 20]
    assert m.get(b"\xff" * 20) is None
    assert m.pop(min(oracle)) == oracle.pop(min(oracle))
    m.update({b"u1": b"1", b"u2": b"2"})
    assert m[b"u2"] == b"2"
    m.clear()
    assert len(m) == 0


def test_mapping_writes_during_iteration_of_db(db):
    m = untorn.Mapping(db, batch=3)
    for i in range(20):
        m[b"%02d" % i] = b"x"
    seen = []
    for k in m:                 # no transaction is held between batches
        seen.append(k)
        m[k] = b"y"             # so a write here does not wait
    assert seen == [b"%02d" % i for i in range(20)]
    assert set(m.values()) == {b"y"}


def test_mapping_inside_a_transaction_aborts_as_one(db):
    m = untorn.Mapping(db)
    m[b"a"] = b"1"
    with pytest.raises(ZeroDivisionError):
        with db.begin(write=True) as txn:
            tm = untorn.Mapping(txn)
            tm[b"a"] = b"2"
            tm[b"b"] = b"3"
            assert dict(tm) == {b"a": b"2", b"b": b"3"}
            1 / 0
    assert dict(m) == {b"a": b"1"}


def test_mapping_needs_db_or_txn():
    with pytest.raises(TypeError):
        untorn.Mapping({})


def test_shelve_over_mapping(path):
    data = {"list": [1, 2, 3], "nested": {"x": (1.5, None)}, "ü": "unicode"}
    with untorn.open(path) as db:
        with shelve.Shelf(untorn.Mapping(db)) as sh:
            sh.update(data)
            sh["list"].append(4)          # no writeback: not stored
            assert sh["list"] == [1, 2, 3]
    with untorn.open(path) as db:
        with shelve.Shelf(untorn.Mapping(db), writeback=True) as sh:
            assert dict(sh) == data
            sh["list"].append(4)          # writeback: stored on close
        with shelve.Shelf(untorn.Mapping(db)) as sh:
            assert sh["list"] == [1, 2, 3, 4]
            assert sorted(sh) == sorted(data)

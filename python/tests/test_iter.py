"""Iteration: order and ranges against a sorted-dict oracle."""
import random

import pytest

import untorn


@pytest.fixture
def loaded(db):
    rng = random.Random(3)
    oracle = {}
    alphabet = [b"", b"\x00", b"a", b"ab", b"b", b"\xff"]
    while len(oracle) < 1500:
        k = rng.choice(alphabet) + rng.randbytes(rng.randint(0, 12))
        if k:
            oracle[k] = rng.randbytes(rng.randint(0, 300))
    with db.begin(write=True) as txn:
        for k, v in oracle.items():
            txn.put(k, v)
    return db, oracle


def expected(oracle, start=None, stop=None, prefix=None, reverse=False):
    keys = sorted(k for k in oracle
                  if (start is None or k >= start)
                  and (stop is None or k < stop)
                  and (prefix is None or k.startswith(prefix)))
    if reverse:
        keys.reverse()
    return [(k, oracle[k]) for k in keys]


def test_full_scan_is_in_bytes_order(loaded):
    db, oracle = loaded
    with db.begin() as txn:
        items = list(txn.items())
        assert items == expected(oracle)
        assert list(txn.keys()) == [k for k, _ in items]
        assert list(txn.values()) == [v for _, v in items]
        assert list(txn) == [k for k, _ in items]


def test_random_ranges_match_the_oracle(loaded):
    db, oracle = loaded
    rng = random.Random(11)
    keys = sorted(oracle)
    bounds = [None, b"", b"a", b"ab\x00", b"\xff\xff", b"\x00\x00"] + \
        rng.sample(keys, 20) + [k + b"\x00" for k in rng.sample(keys, 5)]
    with db.begin() as txn:
        for _ in range(300):
            kw = dict(start=rng.choice(bounds), stop=rng.choice(bounds),
                      reverse=rng.random() < 0.5)
            if rng.random() < 0.4:
                kw["prefix"] = rng.choice([b"a", b"ab", b"\x00", b"b",
                                           keys[rng.randrange(len(keys))][:2]])
            assert list(txn.items(**kw)) == expected(oracle, **kw), kw
            assert list(txn.keys(**kw)) == [k for k, _ in expected(oracle, **kw)]


def test_empty_database_and_empty_ranges(db, loaded):
    with db.begin() as txn:
        assert list(txn.items(start=b"b", stop=b"a")) == []
        assert list(txn.items(prefix=b"\xff\xff\xff\xff\xff\xff\xff")) == []
        assert list(txn.items(start=b"\xff" * 40)) == []


def test_empty_database_iterates_nothing(tmp_path):
    with untorn.open(str(tmp_path / "e.ut")) as db, db.begin() as txn:
        assert list(txn.items()) == []
        assert list(txn.items(reverse=True)) == []


def test_writes_during_iteration_do_not_break_it(loaded):
    db, oracle = loaded
    with db.begin(write=True) as txn:
        seen = []
        for i, (k, v) in enumerate(txn.items()):
            seen.append(k)
            if i % 3 == 0:
                txn.put(k, b"rewritten")       # the current key
            if i % 5 == 0:
                txn.delete(k)                   # the current key, gone
            if i == 10:
                txn.put(b"\xff" * 30, b"added ahead")
        assert seen == sorted(list(oracle) + [b"\xff" * 30])
        txn.abort()


def test_iterator_after_its_transaction_ended(loaded):
    db, _ = loaded
    txn = db.begin()
    it = txn.items()
    next(it)
    done = txn.keys(prefix=b"\x01\x02\x03")
    assert list(done) == []
    txn.abort()
    with pytest.raises(untorn.ClosedError):
        next(it)
    with pytest.raises(StopIteration):
        next(done)  # an exhausted iterator stays exhausted
    with pytest.raises(untorn.ClosedError):
        txn.items()


def test_many_open_iterators_in_one_transaction(loaded):
    db, oracle = loaded
    with db.begin() as txn:
        its = [txn.keys() for _ in range(50)]
        heads = [next(it) for it in its]
        assert heads == [min(oracle)] * 50
        del its[::2]
    # the transaction ended with 25 iterators open: each lost its cursor
    for it in its:
        with pytest.raises(untorn.ClosedError):
            next(it)

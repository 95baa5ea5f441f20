"""Round-trips, transactions, argument types and errors."""
import os
import random

import pytest

import untorn


def random_pairs(rng, n, max_key=64, max_val=2000):
    pairs = {}
    while len(pairs) < n:
        k = rng.randbytes(rng.randint(1, max_key))
        pairs[k] = rng.randbytes(rng.randint(0, max_val))
    return pairs


def test_random_binary_round_trip_survives_reopen(path):
    rng = random.Random(24)
    pairs = random_pairs(rng, 2000)
    with untorn.open(path) as db:
        with db.begin(write=True) as txn:
            for k, v in pairs.items():
                txn.put(k, v)
        with db.begin() as txn:
            for k, v in pairs.items():
                assert txn.get(k) == v
    with untorn.open(path, create=False) as db, db.begin() as txn:
        got = dict(txn.items())
    assert got == pairs


def test_bytes_like_arguments_are_accepted(db):
    with db.begin(write=True) as txn:
        txn.put(bytearray(b"ba"), memoryview(b"mv-value"))
        txn.put(memoryview(b"xmvx")[1:3], bytearray(b"slice"))
        assert txn.get(memoryview(b"ba")) == b"mv-value"
        assert txn.get(b"mv") == b"slice"
        assert bytearray(b"ba") in txn
    with db.begin() as txn:
        value = txn.get(b"ba")
    assert type(value) is bytes


@pytest.mark.parametrize("call", [
    lambda t: t.put("key", b"v"),
    lambda t: t.put(b"key", "v"),
    lambda t: t.get("key"),
    lambda t: t.delete("key"),
    lambda t: "key" in t,
    lambda t: list(t.items(start="a")),
])
def test_str_is_a_type_error(db, call):
    with db.begin(write=True) as txn:
        with pytest.raises(TypeError, match="not str"):
            call(txn)


def test_non_buffer_is_a_type_error(db):
    with db.begin(write=True) as txn, pytest.raises(TypeError):
        txn.put(42, b"v")


def test_get_default_delete_and_contains(db):
    with db.begin(write=True) as txn:
        txn.put(b"a", b"")
        assert txn.get(b"a") == b""
        assert txn.get(b"missing") is None
        assert txn.get(b"missing", b"dflt") == b"dflt"
        assert txn.get(b"missing", default=7) == 7
        assert b"a" in txn and b"missing" not in txn
        assert txn.delete(b"a") is True
        assert txn.delete(b"a") is False
        assert b"a" not in txn


def test_context_manager_commits_on_success_aborts_on_exception(db):
    with db.begin(write=True) as txn:
        txn.put(b"kept", b"1")
    with pytest.raises(RuntimeError):
        with db.begin(write=True) as txn:
            txn.put(b"kept", b"changed")
            txn.put(b"gone", b"2")
            raise RuntimeError("boom")
    assert not txn.active
    with db.begin() as txn:
        assert dict(txn.items()) == {b"kept": b"1"}


def test_abort_leaves_no_trace_after_reopen(path):
    rng = random.Random(7)
    before = random_pairs(rng, 300)
    with untorn.open(path) as db:
        with db.begin(write=True) as txn:
            for k, v in before.items():
                txn.put(k, v)
        txn = db.begin(write=True)
        for k in list(before)[:100]:
            txn.delete(k)
        for k, v in random_pairs(rng, 300).items():
            txn.put(k, v)
        txn.abort()
        with db.begin() as t:
            assert dict(t.items()) == before
    with untorn.open(path) as db, db.begin() as t:
        assert dict(t.items()) == before


def test_explicit_commit_and_abort_end_the_transaction(db):
    txn = db.begin(write=True)
    txn.put(b"k", b"v")
    txn.commit()
    assert not txn.active
    with pytest.raises(untorn.ClosedError):
        txn.put(b"k2", b"v")
    with pytest.raises(untorn.ClosedError):
        txn.commit()
    with db.begin() as t:
        assert t.get(b"k") == b"v"


def test_errors_carry_code_and_detail(db, path):
    with db.begin(write=True) as txn:
        with pytest.raises(untorn.TooBigError) as e:
            txn.put(b"k", bytes(untorn.MAX_VALUE + 1))
        assert e.value.code == -6
        assert isinstance(e.value, untorn.Error)
        assert isinstance(e.value, ValueError)
        with pytest.raises(untorn.TooBigError):
            txn.put(bytes(untorn.MAX_KEY + 1), b"v")
        with pytest.raises(untorn.InvalidParameterError) as e:
            txn.put(b"", b"v")
        assert e.value.code == -1
        txn.put(bytes(untorn.MAX_KEY), bytes(untorn.MAX_VALUE))
    with db.begin() as txn:
        with pytest.raises(untorn.ReadOnlyError) as e:
            txn.put(b"k", b"v")
        assert e.value.code == -8
        assert txn.get(bytes(untorn.MAX_KEY)) == bytes(untorn.MAX_VALUE)
    with pytest.raises(untorn.LockedError) as e:
        untorn.open(path, lock_timeout=0)
    assert e.value.code == -5 and e.value.detail
    assert e.value.detail in str(e.value)


def test_open_missing_without_create_names_the_file(tmp_path):
    missing = str(tmp_path / "nope.ut")
    with pytest.raises(untorn.DiskError) as e:
        untorn.open(missing, create=False)
    assert e.value.code == -3
    assert "nope.ut" in e.value.detail
    assert not os.path.exists(missing)


def test_not_a_database(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"hello, not a database" * 2000)
    with pytest.raises(untorn.NotADatabaseError) as e:
        untorn.open(str(junk))
    assert e.value.code == -9 and "junk" in e.value.detail


def test_readonly_open_refuses_writes(path):
    with untorn.open(path) as db, db.begin(write=True) as txn:
        txn.put(b"k", b"v")
    with untorn.open(path, readonly=True) as db:
        with pytest.raises(untorn.ReadOnlyError):
            db.begin(write=True)
        with pytest.raises(untorn.ReadOnlyError):
            db.checkpoint()
        with db.begin() as txn:
            assert txn.get(b"k") == b"v"


def test_open_options_are_checked(path):
    with pytest.raises(ValueError):
        untorn.open(path, protect="sometimes")
    with pytest.raises(ValueError):
        untorn.open(path, cache=-1)
    with pytest.raises(ValueError):
        untorn.open(path, lock_timeout=100)
    with pytest.raises(TypeError):
        untorn.open(path, 1 << 20)  # options are keyword-only
    with untorn.open(path, protect="doublewrite", sync=False) as db:
        assert db.info()["protect"] == "doublewrite"
        assert db.info()["reason"] == "requested by name"


def test_fullpage_mode(tmp_path):
    """protect="fullpage" is accepted by name and logs page images."""
    path = str(tmp_path / "fp.db")
    with untorn.open(path, protect="fullpage") as db:
        assert db.info()["protect"] == "fullpage"
        with db.begin(write=True) as t:
            for i in range(200):
                t.put(b"k%05d" % i, b"v" * 100)
        assert db.stats()["page_images"] > 0
    with untorn.open(path, protect="fullpage") as db:
        with db.begin() as t:
            assert t.get(b"k00042") == b"v" * 100

"""Use after close, thread rules, GIL release, freeing in any order."""
import subprocess
import sys
import threading
import time

import pytest

import untorn


def test_close_aborts_this_threads_transactions(path):
    db = untorn.open(path)
    with db.begin(write=True) as txn:
        txn.put(b"committed", b"1")
    txn = db.begin(write=True)
    txn.put(b"uncommitted", b"2")
    it = txn.keys()
    db.close()
    assert db.closed and not txn.active
    for call in (lambda: txn.get(b"committed"), lambda: txn.put(b"a", b"b"),
                 lambda: txn.commit(), lambda: next(it), lambda: db.begin(),
                 lambda: db.stats(), lambda: db.checkpoint(), lambda: db.check(),
                 lambda: db.info()):
        with pytest.raises(untorn.ClosedError) as e:
            call()
        assert "closed" in e.value.detail
    db.close()  # closing twice is harmless
    with untorn.open(path) as db, db.begin() as t:
        assert dict(t.items()) == {b"committed": b"1"}


def test_a_transaction_belongs_to_its_thread(db):
    txn = db.begin(write=True)
    it = txn.keys()
    errors = []

    def other():
        for call in (lambda: txn.get(b"k"), lambda: txn.put(b"k", b"v"),
                     lambda: txn.commit(), lambda: txn.abort(),
                     lambda: next(it), lambda: db.close()):
            try:
                call()
                errors.append("no error")
            except untorn.BusyError as e:
                errors.append(e.code)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert errors == [-13] * 6
    assert not db.closed
    txn.put(b"k", b"v")
    txn.commit()
    with db.begin() as t2:
        assert t2.get(b"k") == b"v"


def test_a_second_writer_in_one_thread_raises_instead_of_hanging(db):
    with db.begin(write=True) as txn:
        txn.put(b"k", b"uncommitted")
        for call in (lambda: db.begin(write=True), db.checkpoint, db.check):
            with pytest.raises(untorn.BusyError, match="this thread"):
                call()
        # a reader is a snapshot: it waits for no one, sees no uncommitted
        with db.begin() as r:
            assert r.get(b"k") is None
        assert txn.active


def test_a_reader_holds_nothing_up_in_its_own_thread(db):
    with db.begin() as r:
        with db.begin(write=True) as w:
            w.put(b"k", b"v")
        db.checkpoint()
        assert db.check()["ok"]
        assert r.get(b"k") is None   # its snapshot predates the commit
        with db.begin() as r2:
            assert r2.get(b"k") == b"v"


def test_threads_overlap_while_one_waits_in_the_engine(db):
    """A writer blocked in begin() (the GIL released) lets others run."""
    holder = db.begin(write=True)
    holder.put(b"k", b"from holder")
    got = []

    def writer():
        with db.begin(write=True) as t:
            got.append(t.get(b"k"))
            t.put(b"k", b"from writer")

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(0.2)
    assert t.is_alive()          # waiting for the write lock
    spins = sum(1 for _ in range(10000))  # this thread still runs
    assert spins == 10000
    holder.commit()
    t.join(10)
    assert not t.is_alive()
    assert got == [b"from holder"]
    with db.begin() as r:
        assert r.get(b"k") == b"from writer"


def test_close_from_another_thread_waits_for_no_one(db):
    txn = db.begin()
    result = []

    def closer():
        try:
            db.close()
            result.append("closed")
        except untorn.BusyError as e:
            result.append(e.detail)

    t = threading.Thread(target=closer)
    t.start()
    t.join()
    assert "another thread holds a transaction" in result[0]
    txn.abort()
    t = threading.Thread(target=closer)
    t.start()
    t.join()
    assert result[1] == "closed" and db.closed


def test_readers_and_writers_on_many_threads(db):
    n, rounds = 4, 200
    errors = []

    def work(i):
        try:
            for r in range(rounds):
                with db.begin(write=True) as t:
                    t.put(b"t%d-%04d" % (i, r), b"%d" % r)
                with db.begin() as t:
                    assert t.get(b"t%d-%04d" % (i, r)) == b"%d" % r
                    assert len(list(t.keys(prefix=b"t%d-" % i))) == r + 1
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with db.begin() as t:
        assert len(list(t.keys())) == n * rounds


def test_dropped_references_in_any_order(path):
    db = untorn.open(path)
    txn = db.begin(write=True)
    txn.put(b"k", b"v")
    it = txn.items()
    del db            # the txn keeps the database alive
    del txn           # the iterator keeps the txn alive
    with pytest.raises(untorn.LockedError):
        untorn.open(path, lock_timeout=0)
    del it            # now all go: the txn aborts, the database closes
    with untorn.open(path, lock_timeout=0) as db, db.begin() as t:
        assert t.get(b"k") is None


EXIT_SCRIPT = r"""
import sys, threading, untorn
path, order = sys.argv[1], sys.argv[2]
db = untorn.open(path)
with db.begin(write=True) as t:
    t.put(b"committed", b"yes")
txn = db.begin(write=(order != "read"))
it = txn.items()
next(iter(txn.items()))
keep = [db, txn, it] if order == "forward" else [it, txn, db]
if order == "thread":
    def other():
        global otxn
        otxn = odb.begin(write=True)  # its lock is owned by that thread
    odb = untorn.open(path + ".2")
    th = threading.Thread(target=other); th.start(); th.join()
    keep.append(otxn)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("order", ["forward", "backward", "read", "thread"])
def test_interpreter_exit_with_objects_alive(path, order):
    r = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, path, order],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "exiting\n"
    with untorn.open(path) as db, db.begin() as t:
        assert dict(t.items()) == {b"committed": b"yes"}


def test_a_write_txn_dropped_on_another_thread_is_leaked_not_aborted(tmp_path):
    """Its lock belongs to the thread that took it: aborting it from here
    would unlock another thread's rwlock, so the handle stays open."""
    db = untorn.open(str(tmp_path / "leak.ut"))
    kept = []
    t = threading.Thread(target=lambda: kept.append(db.begin(write=True)))
    t.start()
    t.join()
    kept.clear()                 # freed here, on the main thread
    with pytest.raises(untorn.BusyError, match="dropped open"):
        db.close()
    assert not db.closed
    for call in (lambda: db.begin(write=True), db.checkpoint, db.check):
        with pytest.raises(untorn.BusyError, match="dropped open"):
            call()                                # instead of hanging
    with db.begin() as r:        # a reader is a snapshot: no lock to wait for
        assert r.get(b"k") is None
    assert db.stats()["protect"]

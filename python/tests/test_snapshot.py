"""Read transactions are snapshots; backups copy one."""
import os
import threading

import pytest

import untorn


def test_a_reader_keeps_its_snapshot_while_a_writer_commits(tmp_path):
    with untorn.open(str(tmp_path / "s.ut"), sync=False) as db:
        with db.begin(write=True) as w:
            for i in range(2000):
                w.put(b"k%05d" % i, b"old")
        r = db.begin()
        done = threading.Event()

        def writer():
            for n in range(50):
                with db.begin(write=True) as w:
                    for i in range(0, 2000, 7):
                        w.put(b"k%05d" % i, b"new%d" % n)
                    w.delete(b"k%05d" % n)
            done.set()

        t = threading.Thread(target=writer)
        t.start()
        t.join(60)
        assert done.is_set()           # the writer never waited for r
        assert dict(r.items()) == {b"k%05d" % i: b"old" for i in range(2000)}
        assert db.stats()["snapshots"] == 1
        r.abort()
        with db.begin() as r2:
            assert r2.get(b"k00007") == b"new49"
            assert r2.get(b"k00001") is None   # deleted at n == 1


def test_snapshot_too_old_is_an_error_never_wrong_data(tmp_path):
    with untorn.open(str(tmp_path / "b.ut"), sync=False,
                     snapshot_bytes=4 * untorn.PAGE_SIZE) as db:
        with db.begin(write=True) as w:
            for i in range(3000):
                w.put(b"k%05d" % i, b"v" * 50)
        with db.begin() as r:
            for n in range(20):
                with db.begin(write=True) as w:
                    for i in range(0, 3000, 5):
                        w.put(b"k%05d" % i, b"x")
            assert db.stats()["snapshot_dropped"] > 0
            with pytest.raises(untorn.SnapshotTooOldError) as e:
                for k, v in r.items():
                    assert v == b"v" * 50
            assert e.value.code == -14
            assert "snapshot too old" in e.value.detail


def test_backup_is_a_database_that_opens_without_its_log(tmp_path):
    src, dst = str(tmp_path / "src.ut"), str(tmp_path / "dst.ut")
    with untorn.open(src) as db:
        with db.begin(write=True) as w:
            for i in range(500):
                w.put(b"%04d" % i, os.urandom(i % 300))
        with db.begin() as r:
            expect = dict(r.items())
        db.backup(dst)
        with pytest.raises(untorn.InvalidParameterError, match="exists"):
            db.backup(dst)
    with untorn.open(dst, create=False) as copy:
        assert copy.check()["ok"]
        with copy.begin() as r:
            assert dict(r.items()) == expect

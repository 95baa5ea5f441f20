"""stats(), info(), check() and checkpoint()."""
import os

import pytest

import untorn


def fill(db, n=3000):
    with db.begin(write=True) as txn:
        for i in range(n):
            txn.put(b"key%06d" % i, b"v" * 100)


def test_stats_count_what_happened(db):
    before = db.stats()
    assert before["protect"] in ("atomic", "doublewrite")
    assert isinstance(before["direct_io"], bool)
    fill(db)
    db.checkpoint()
    after = db.stats()
    assert after["log_bytes"] > before["log_bytes"] + 3000 * 100
    assert after["checkpoints"] == before["checkpoints"] + 1
    assert after["page_writes"] > before["page_writes"]
    assert after["corrupt_pages"] == 0


def test_info_names_mode_and_reason(path):
    with untorn.open(path) as db:
        info = db.info()
        assert info["path"] == path and info["requested"] == "auto"
        assert info["protect"] == db.stats()["protect"]
        assert info["reason"].startswith("auto: ")
        assert info["readonly"] is False
    with untorn.open(path, readonly=True) as db:
        assert "read-only" in db.info()["reason"]


def test_check_a_clean_database(db):
    fill(db)
    r = db.check()
    assert r["ok"] is True
    assert not [line for line in r["report"] if line.startswith("page ")]
    assert r["keys"] == 3000 and r["depth"] >= 2
    assert r["pages_checked"] == r["pages_total"] > 1


def test_check_reports_a_damaged_page_and_get_refuses_it(path):
    with untorn.open(path, protect="doublewrite") as db:
        fill(db)
    with open(path, "r+b") as f:   # flip bytes inside a leaf (page 2)
        f.seek(2 * untorn.PAGE_SIZE + 5000)
        f.write(b"\xa5" * 16)
    for name in (path + "-dw",):    # no copy to repair it from
        if os.path.exists(name):
            os.truncate(name, 0)
    with untorn.open(path) as db:
        r = db.check()
        assert r["ok"] is False and r["bad_checksums"] >= 1
        assert any(line.startswith("page 2:") for line in r["report"]), r
        with db.begin() as txn, pytest.raises(untorn.CorruptError) as e:
            list(txn.keys())
        assert e.value.code == -4 and "page 2" in e.value.detail

"""untorn.dbm against what the stdlib's test_dbm asks of every dbm module
(AnyDBMTestCase in CPython's Lib/test/test_dbm.py, ported), plus shelve."""
import os
import pathlib
import shelve
import stat

import pytest

import untorn
import untorn.dbm as udbm

DATA = {"a": b"Python:", "b": b"Programming", "c": b"the", "d": b"way",
        "f": b"Guido", "g": b"intended"}


@pytest.fixture
def fname(tmp_path):
    return str(tmp_path / "dbm.ut")


def init_db(fname):
    f = udbm.open(fname, "n")
    for k in DATA:
        f[k.encode("ascii")] = DATA[k]
    f.close()


def read_helper(f):
    assert sorted(k.decode("ascii") for k in f.keys()) == sorted(DATA)
    for k in DATA:
        assert f[k.encode("ascii")] == DATA[k]


def test_error_is_an_oserror_and_an_untorn_error():
    assert issubclass(udbm.error, OSError)
    assert issubclass(udbm.error, untorn.Error)


def test_not_existing(fname):
    with pytest.raises(udbm.error) as e:
        udbm.open(fname)
    assert e.value.code == -3 and "dbm.ut" in e.value.detail
    with pytest.raises(udbm.error):
        udbm.open(fname, "w")


def test_creation(fname):
    f = udbm.open(fname, "c")
    assert list(f.keys()) == []
    for k in DATA:
        f[k.encode("ascii")] = DATA[k]
    read_helper(f)
    f.close()


def test_creation_n_with_invalid_contents(fname):
    open(fname, "wb").close()
    with udbm.open(fname, "n") as f:
        assert len(f) == 0
    with open(fname, "wb") as junk:
        junk.write(b"not a database" * 3000)
    with udbm.open(fname, "n") as f:
        assert len(f) == 0


def test_modification(fname):
    init_db(fname)
    f = udbm.open(fname, "c")
    expected = dict(DATA)
    expected["g"] = f[b"g"] = b"indented"
    assert f[b"g"] == b"indented"
    assert f.setdefault(b"xxx", b"foo") == b"foo"
    assert f[b"xxx"] == b"foo"
    f.close()


def test_read(fname):
    init_db(fname)
    f = udbm.open(fname, "r")
    read_helper(f)
    assert f.get(b"a") == DATA["a"]
    assert f.get(b"xxx", b"foo") == b"foo"
    assert f.get(b"xxx") is None
    with pytest.raises(KeyError):
        f[b"xxx"]
    with pytest.raises(udbm.error) as e:
        f[b"a"] = b"write to a read-only database"
    assert e.value.code == -8
    f.close()


def test_empty_value(fname):
    f = udbm.open(fname, "c")
    assert f.keys() == []
    f[b"empty"] = b""
    assert f.keys() == [b"empty"]
    assert b"empty" in f
    assert f[b"empty"] == b""
    assert f.get(b"empty") == b""
    assert f.setdefault(b"empty") == b""
    f.close()


def test_access_and_str_keys(fname):
    init_db(fname)
    with udbm.open(fname, "w") as f:
        assert b"a" in f and "a" in f
        assert f["a"] == b"Python:"
        f["ü"] = "ö"                       # str is UTF-8, as dbm.gnu does
        assert f["ü".encode()] == "ö".encode()
        del f["ü"]
        assert "ü" not in f


def test_open_with_bytes_and_pathlike(fname):
    udbm.open(os.fsencode(fname), "c").close()
    udbm.open(pathlib.Path(fname), "c").close()


def test_keys_and_clear(fname):
    with udbm.open(fname, "c") as d:
        a = [(b"a", b"b"), (b"12345678910", b"019237410982340912840198242")]
        for k, v in a:
            d[k] = v
        assert sorted(d.keys()) == sorted(k for k, _ in a)
        assert b"xxx" not in d
        with pytest.raises(KeyError):
            d[b"xxx"]
        assert len(d) == 2
        d.clear()
        assert len(d) == 0


def test_use_after_close_raises_error(fname):
    d = udbm.open(fname, "c")
    d.close()
    with pytest.raises(udbm.error):
        d[b"k"] = b"v"
    with pytest.raises(udbm.error):
        d.keys()


def test_bad_flag(fname):
    with pytest.raises(ValueError):
        udbm.open(fname, "x")


def test_mode_of_a_new_file(fname):
    old = os.umask(0o022)
    try:
        udbm.open(fname, "n", mode=0o640).close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(fname).st_mode) == 0o640


def test_shelve_over_dbm(fname):
    with shelve.Shelf(udbm.open(fname, "c")) as sh:
        sh["k"] = {"any": ["picklable", 1]}
    with shelve.Shelf(udbm.open(fname, "r")) as sh:
        assert sh["k"] == {"any": ["picklable", 1]}
        assert list(sh.keys()) == ["k"]

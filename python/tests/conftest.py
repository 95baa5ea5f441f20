"""Fixtures: a fresh database path and an open database per test.

The module under test is the one on sys.path: python/test.sh builds it
into build-python/lib and puts that first on PYTHONPATH.
"""
import pytest

import untorn


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "db.ut")


@pytest.fixture
def db(path):
    d = untorn.open(path, cache=4 << 20)
    yield d
    d.close()

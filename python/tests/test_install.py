"""`pip install ./python` into a fresh venv, offline, then import and use.

The repository's python/ and the engine's sources are copied to a scratch
directory first so that pip's in-tree build leaves the worktree alone.
"""
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

USE = r"""
import sys, untorn, untorn.dbm
assert untorn.__file__.startswith(sys.prefix), untorn.__file__
with untorn.open(sys.argv[1]) as db:
    with db.begin(write=True) as t:
        t.put(b"k", b"v")
    with db.begin() as t:
        print(t.get(b"k"))
"""


@pytest.mark.skipif(sys.prefix != sys.base_prefix,
                    reason="run from the system Python, not a venv")
def test_pip_install_into_a_venv_offline(tmp_path):
    src = tmp_path / "src"
    for d in ("python", "engine", "wal", "io", "include"):
        shutil.copytree(os.path.join(REPO, d), src / d,
                        ignore=shutil.ignore_patterns(
                            "build", "*.egg-info", "__pycache__", "*.so"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                    str(venv)], check=True)
    # no proxy, no index reachable: a download attempt fails at once
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1",
               http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9",
               PIP_RETRIES="0", PIP_TIMEOUT="2")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "./python"],
                       cwd=src, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(venv / "bin" / "python"), "-c", USE,
                        str(tmp_path / "db.ut")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "b'v'\n"
    so = next((venv / "lib").glob("python3*/site-packages/untorn/_untorn*.so"))
    nm = subprocess.run(["nm", "-D", "--defined-only", str(so)],
                        capture_output=True, text=True, check=True)
    exported = [line.split()[-1] for line in nm.stdout.splitlines()]
    assert exported == ["PyInit__untorn"]   # the engine's symbols stay hidden

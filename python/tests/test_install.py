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


system_python = pytest.mark.skipif(sys.prefix != sys.base_prefix,
                                   reason="run from the system Python, not a venv")


def offline_env():
    # no proxy, no index reachable: a download attempt fails at once
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1",
               http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9",
               PIP_RETRIES="0", PIP_TIMEOUT="2")
    env.pop("PYTHONPATH", None)
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """The README's install: a venv over the system site-packages, then
    `pip install ./python` from a copy of the sources, offline."""
    tmp_path = tmp_path_factory.mktemp("install")
    src = tmp_path / "src"
    for d in ("python", "engine", "wal", "io", "include"):
        shutil.copytree(os.path.join(REPO, d), src / d,
                        ignore=shutil.ignore_patterns(
                            "build", "*.egg-info", "__pycache__", "*.so"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                    str(venv)], check=True)
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "./python"],
                       cwd=src, env=offline_env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return venv


@system_python
def test_pip_install_into_a_venv_offline(venv, tmp_path):
    env = offline_env()
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


def readme_block(text, after, fence):
    """The body of the first block fenced by `fence` after the line that
    starts with `after`."""
    lines = text.split("\n")
    i = next(n for n, line in enumerate(lines) if line.startswith(after))
    i = next(n for n in range(i + 1, len(lines)) if lines[n] == fence)
    j = next(n for n in range(i + 1, len(lines)) if lines[n] == "```")
    return "\n".join(lines[i + 1:j]) + "\n"


@system_python
def test_readme_python_example_prints_what_the_readme_says(venv, tmp_path):
    with open(os.path.join(REPO, "README.md")) as f:
        readme = f.read()
    # the install line names the system Python: another python3 (pyenv)
    # has no setuptools for pip to use offline
    install = readme_block(readme, "## Using it from Python", "```sh")
    assert install.startswith(sys.executable + " -m venv --system-site-packages"), install
    example = readme_block(readme, "## Using it from Python", "```python")
    expected = readme_block(readme, "prints (run as written", "```")
    r = subprocess.run([str(venv / "bin" / "python"), "-c", example],
                       cwd=tmp_path, env=offline_env(), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    # the protection mode depends on the filesystem the test runs on
    mode = r.stdout.split("\n")[2].split()[0]
    assert mode in ("atomic", "doublewrite"), r.stdout
    assert r.stdout == expected.replace("doublewrite 0", mode + " 0")

"""Build the untorn extension from the engine's own C sources.

The extension compiles engine/, wal/ and io/ (every .c file, as CMake's
libuntorn does) together with src/untorn_module.c, which includes only
include/untorn.h.  No prebuilt library, no CMake step, no rpath: pip
install ./python needs a C compiler, Python's headers and liburing-dev.
The engine's symbols are hidden (-fvisibility=hidden) so the module
exports only PyInit__untorn.  There is no pyproject.toml on purpose: pip
then builds with the setuptools already installed instead of fetching one
into an isolated environment, so the install works offline.
"""
import glob
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
os.chdir(HERE)  # setuptools takes the sources relative to the cwd


def engine_sources():
    found = []
    for layer in ("engine", "wal", "io"):
        found += sorted(glob.glob(os.path.join(ROOT, layer, "*.c")))
    if not found:
        raise SystemExit("setup.py: the engine's sources are not beside "
                         "python/ (build from the untorn repository)")
    return [os.path.relpath(p, HERE) for p in found]


def private_includes():
    return [os.path.relpath(os.path.join(ROOT, d), HERE)
            for d in ("engine", "wal", "io")]


core = Extension(
    "untorn._untorn",
    sources=["src/untorn_module.c"] + engine_sources(),
    include_dirs=[os.path.relpath(os.path.join(ROOT, "include"), HERE)]
    + private_includes(),
    libraries=["uring", "pthread"],
    extra_compile_args=["-std=gnu11", "-D_GNU_SOURCE", "-Wall", "-Wextra",
                        "-Werror", "-fvisibility=hidden",
                        "-DUT_API="],
)

setup(
    name="untorn",
    version="0.3.0",
    description="Python binding of untorn, an embedded ordered key-value "
                "store that writes its pages untorn",
    packages=["untorn"],
    ext_modules=[core],
    python_requires=">=3.10",  # PyModule_AddObjectRef
)

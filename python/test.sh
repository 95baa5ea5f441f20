#!/usr/bin/env bash
# python/test.sh - build the untorn extension with the system Python
# (Debian's python3-dev) and run its pytest suite (Debian's python3-pytest).
#
#   bash python/test.sh [--asan] [pytest args...]
#
# The build goes to build-python/ (build-python-asan/ with --asan: the
# engine and the module compiled with AddressSanitizer + UBSan, run under
# the system interpreter with libasan preloaded and PYTHONMALLOC=malloc;
# leak detection is off because CPython keeps much of its memory until the
# process ends).
# Exits non-zero on any failure, when pytest collected no tests, and
# after 15 minutes (a hang).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
out=$PWD/build-python
if [ "${1:-}" = --asan ]; then
	shift
	out=$PWD/build-python-asan
	export CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
	export LDFLAGS="-fsanitize=address,undefined"
fi
# --force: setuptools does not track the headers the sources include
"$PY" python/setup.py -q build --force --build-lib "$out/lib" \
	--build-temp "$out/tmp" 2>&1 | { grep -v "byte-compiling is disabled" || true; }
export PYTHONPATH=$out/lib
if [ -n "${CFLAGS:-}" ]; then
	export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
	# PYTHONMALLOC=malloc: Python objects from malloc, not pymalloc's
	# arenas, so ASan sees a freed Db or Txn used again
	export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
		PYTHONMALLOC=malloc
fi
rc=0
# a binding bug that keeps the GIL while the engine waits hangs, not fails
timeout 900 "$PY" -m pytest -q -p no:cacheprovider python/tests "$@" || rc=$?
if [ "$rc" = 5 ]; then
	echo "python/test.sh: pytest collected no tests" >&2
	exit 1
fi
exit "$rc"

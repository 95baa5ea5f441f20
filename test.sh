#!/usr/bin/env bash
# untorn's test command: installs what it needs, then runs
#   1. the unit, differential and in-process crash tests (ctest),
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer, and
#      the multi-threaded tests under ThreadSanitizer,
#   3. the Python binding's pytest suite (python/test.sh),
#   4. the kernel series: build (cached) and the guest tests in QEMU,
#      patched kernel against the unpatched one,
#   5. the VM crash harness's short pass: QEMU SIGKILLed mid-write 5 times
#      per mode (atomic, doublewrite, unsafe as the negative control), each
#      recovery checked against an SQLite oracle (crashtests/vm-crash.sh --ci;
#      the long pass is in crashtests/README.md).
# Exits non-zero if any suite fails; the last line sums the suites up.
set -uo pipefail
cd "$(dirname "$0")"
bash scripts/install-deps.sh || exit 1

passed=0 failed=0 failures=()
suite() {
	local name=$1
	shift
	echo "=== $name"
	local t0=$SECONDS
	if "$@"; then
		passed=$((passed + 1))
		echo "=== $name: ok ($((SECONDS - t0)) s)"
	else
		failed=$((failed + 1))
		failures+=("$name")
		echo "=== $name: FAILED ($((SECONDS - t0)) s)"
	fi
}

ctest_in() {
	local dir=$1
	shift
	cmake -S . -B "$dir" "$@" >/dev/null &&
		cmake --build "$dir" -j"$(nproc)" >/dev/null &&
		(cd "$dir" && ctest -j"$(nproc)" --output-on-failure --timeout 1500)
}

# The tests that run threads against one handle (snapshot readers beside
# the writer, the page cleaner and its waiters, group commit, the soak,
# failure paths, the page table growing under readers, readers across
# tables beside a writer creating and dropping them, lock-free pool hits
# beside eviction), under ThreadSanitizer.
tsan_tests() {
	local tests=(test_snapshot test_snapshot_life test_engine_concurrency test_wal_group test_soak
		test_failpath test_pager_races test_backup test_cleaner_idle test_tables
		test_lazy_protect test_hit_races)
	cmake -S . -B build-tsan -DUT_TSAN=ON -DCMAKE_BUILD_TYPE=Debug \
		-DUT_BUILD_BENCH=OFF >/dev/null &&
		cmake --build build-tsan -j"$(nproc)" --target "${tests[@]}" >/dev/null &&
		(cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest \
			-R "^($(IFS='|'; echo "${tests[*]}"))\$" --output-on-failure --timeout 900)
}

suite "unit tests" ctest_in build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The crash test runs all 14 seeds per mode in the run above; under the
# sanitizers (several times slower, and on a 2-core machine it came near
# ctest's 1500 s limit) 4 seeds per mode check the same code paths for
# memory errors.
UT_CRASH_SEEDS=4 suite "unit tests (asan+ubsan)" ctest_in build-asan -DUT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
suite "concurrency tests (threadsanitizer)" tsan_tests
suite "python binding" bash python/test.sh
if [ "${UT_SKIP_VM:-0}" != 1 ]; then
	suite "kernel build (cached by series+config hash)" bash kernel-series/build.sh
	suite "kernel series checkpatch" bash kernel-series/checkpatch.sh
	suite "guest tests: unpatched vs patched kernel in QEMU" bash kernel-series/guest-tests/run.sh
	suite "VM crash harness: short pass (5 kills per mode)" bash crashtests/vm-crash.sh --ci
fi

((failed)) && echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
((failed == 0))

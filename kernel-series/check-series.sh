#!/bin/bash
# Developer check of the kernel series (slow: run it in the background).
#
#  1. scripts/checkpatch.pl (default options) on every patch in `series`;
#  2. reset the build tree to the pristine baseline, build it, then apply
#     the patches one at a time and rebuild (incrementally) after each, so
#     every patch is shown to build on its own;
#  3. compare the warning lines of each build with those of the baseline:
#     a patch must add none.
#
# Uses the build tree and lock of build.sh (UNTORN_KBUILD), so it never runs
# at the same time as build.sh.  It does not touch the image cache.  The
# tree is left with the whole series applied.
#
# Output: a per-patch summary, also written to $UNTORN_KBUILD/logs/check-series.txt.
# Exit status: 0 when every patch is clean and builds, 1 otherwise.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
UNTORN_BUILD_LIB=1
# shellcheck source=build.sh
source "$HERE/build.sh"

ensure_packages
take_lock
setup_make_env

REPORT=$LOGDIR/check-series.txt
: > "$REPORT"
say() { echo "$*" | tee -a "$REPORT"; }
warnings_of() {	# normalised warning lines of a build log
	grep -E '(warning|WARNING):' "$1" 2>/dev/null | sed -e 's/^ *//' | sort -u || true
}

T0=$(date +%s)
FAIL=0
mapfile -t PATCHES < <(series_patches)
say "check-series: ${#PATCHES[@]} patches, tree $TREE, $(date -u +%Y-%m-%dT%H:%MZ)"

prepare_tree

say "== checkpatch (default options)"
for p in "${PATCHES[@]}"; do
	out=$(cd "$TREE" && ./scripts/checkpatch.pl "$HERE/patches/$p" 2>&1) || true
	total=$(echo "$out" | grep -E '^total:' | tail -1)
	say "  $p: ${total:-no result}"
	if ! echo "$total" | grep -q '^total: 0 errors, 0 warnings'; then
		echo "$out" | grep -E '^(ERROR|WARNING)' | sed 's/^/      /' | tee -a "$REPORT"
		FAIL=1
	fi
done

say "== builds (make -j$JOBS bzImage after each patch)"
configure_tree
t=$(date +%s)
if ( run_make check-00-baseline ); then
	say "  baseline: builds ($(( $(date +%s) - t ))s)"
else
	say "  baseline: BUILD FAILED, see $LOGDIR/check-00-baseline.log"
	exit 1
fi
BASEW=$LOGDIR/check-baseline-warnings.txt
{ warnings_of "$LOGDIR/unpatched.log"; warnings_of "$LOGDIR/check-00-baseline.log"; } |
	sort -u > "$BASEW"

i=0
for p in "${PATCHES[@]}"; do
	i=$((i + 1))
	name=$(printf 'check-%02d' "$i")
	if ! git -C "$TREE" apply --index "$HERE/patches/$p"; then
		say "  $p: DOES NOT APPLY"
		FAIL=1
		break
	fi
	t=$(date +%s)
	if ( run_make "$name" ); then
		new=$(warnings_of "$LOGDIR/$name.log" | comm -23 - "$BASEW" | wc -l)
		say "  $p: builds ($(( $(date +%s) - t ))s), new warnings: $new"
		if [ "$new" -ne 0 ]; then
			warnings_of "$LOGDIR/$name.log" | comm -23 - "$BASEW" |
				sed 's/^/      /' | tee -a "$REPORT"
			FAIL=1
		fi
	else
		say "  $p: BUILD FAILED, see $LOGDIR/$name.log"
		FAIL=1
		break
	fi
done

say "== done in $(( $(date +%s) - T0 ))s: $([ $FAIL = 0 ] && echo PASS || echo FAIL)"
exit $FAIL

#!/bin/bash
# checkpatch.sh - run the 6.12 tree's own scripts/checkpatch.pl (default
# options) on every patch of the series; exit 1 on any error or warning.
#
# Uses the unpacked build tree when build.sh left one, otherwise extracts
# just scripts/ from the linux-source-6.12 tarball into a temporary folder
# and runs with --no-tree.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TREE=${UNTORN_KBUILD:-/var/tmp/untorn-kbuild}/linux-source-6.12
TARBALL=/usr/src/linux-source-6.12.tar.xz
opts=(--quiet)
tmp=""
trap '[ -n "$tmp" ] && rm -rf "$tmp"' EXIT

if [ ! -x "$TREE/scripts/checkpatch.pl" ]; then
	tmp=$(mktemp -d)
	tar -xJf "$TARBALL" -C "$tmp" linux-source-6.12/scripts
	TREE=$tmp/linux-source-6.12
	opts+=(--no-tree)
fi

bad=0
while read -r p; do
	case $p in '#'*|'') continue ;; esac
	if out=$(cd "$TREE" && perl scripts/checkpatch.pl "${opts[@]}" "$HERE/patches/$p" 2>&1); then
		echo "checkpatch: $p: clean"
	else
		echo "checkpatch: $p: NOT clean"
		echo "$out"
		bad=1
	fi
	if grep -qE '^(WARNING|ERROR)' <<<"$out"; then
		echo "$out"
		bad=1
	fi
done <"$HERE/series"
exit $bad

#!/bin/bash
# kernel-key.sh - the crash ledger's kernel key of a filesystem: a hash of
# the code of the kernel series that the filesystem's atomic writes run.
#
# usage: crashtests/kernel-key.sh [--at COMMIT] [--show] FS...
#
# Prints "FS KEY" per FS (KEY: 16 hex digits).  The patches FS runs are
# listed in crashtests/fs-patches (whole patches or one file's diff of a
# patch); the key hashes the kernel source package's version and the diff
# text of those selections, in series order, normalized so that a patch
# regenerated with identical code keeps its key:
#   - only the diff counts: the mail header, commit message and diffstat
#     do not (authorship or wording fixes do not restart a count);
#   - "index" lines (blob hashes), the format-patch version trailer
#     ("-- " and the git version) and the line numbers of "@@" headers
#     (shifted by an earlier patch to the same file) are dropped;
#   - Documentation/ diffs are dropped.
# A comment change inside a diff does change the key (it is code text).
# --at COMMIT: the series, patches and fs-patches as they were at COMMIT
# (for passes run before the ledger existed).  --show: the normalized text
# instead of the key (to see why two keys differ).
# Exit 3 when a patch of the series is on no line of fs-patches, a
# selection names a patch or file that is not there, or FS is not listed.
# KERNEL_BASE overrides the source version (default: the installed
# linux-source-6.12 package's version, as kernel-series/build.sh uses it).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
at="" show=0
while [ $# -gt 0 ]; do
	case $1 in
	--at) at=${2:?}; shift ;;
	--show) show=1 ;;
	-h|--help) sed -n '2,28p' "$0" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 1 ] || { sed -n '2,28p' "$0" >&2; exit 2; }

src=$ROOT
if [ -n "$at" ]; then
	src=$(mktemp -d /tmp/kernel-key.XXXXXX)
	trap 'rm -rf "$src"' EXIT
	git -C "$ROOT" archive "$at" kernel-series/series kernel-series/patches |
		tar -x -C "$src"
	mkdir -p "$src/crashtests"
	# fs-patches is newer than most commits: the current one then
	git -C "$ROOT" show "$at:crashtests/fs-patches" >"$src/crashtests/fs-patches" 2>/dev/null ||
		cp "$HERE/fs-patches" "$src/crashtests/fs-patches"
fi
SERIES=$src/kernel-series/series
PATCHES=$src/kernel-series/patches
MAP=$src/crashtests/fs-patches
base=${KERNEL_BASE:-$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown)}
die() { echo "kernel-key.sh: $*" >&2; exit 3; }

mapfile -t series < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$SERIES" | grep -v '^$')
patch_of() { # patch_of NNNN -> file name in the series
	local p
	for p in "${series[@]}"; do
		case $p in "$1"-*) echo "$p"; return 0 ;; esac
	done
	return 1
}
sels_of() { # sels_of FS -> its selections, one a line
	awk -v fs="$1" -F: '!/^#/ && $1 == fs { sub(/^[^:]*:[[:space:]]*/, ""); n = split($0, w, /[[:space:]]+/)
		for (i = 1; i <= n; i++) if (w[i] != "") print w[i]; found = 1 }
		END { exit !found }' "$MAP"
}

# every patch of the series must be placed (on some line, "none:" included)
all=$(grep -v '^#' "$MAP" | sed 's/^[^:]*://' | tr ' \t' '\n\n' | sed 's/:.*//' | grep . | sort -u || true)
for p in "${series[@]}"; do
	grep -qx "${p%%-*}" <<<"$all" || die "patch $p is on no line of $MAP: place it first"
done

# normalize PATCHFILE [PATH]: the diff text, as described above
normalize() {
	awk -v want="${2:-}" '
	/^diff --git / { indiff = 1; path = $3; sub(/^a\//, "", path)
		keep = (path !~ /^Documentation\//) && (want == "" || path == want); if (keep) found = 1 }
	!indiff { next }
	/^-- $/ { trailer = 1 }
	trailer { next }
	keep && /^index [0-9a-f]+\.\.[0-9a-f]+/ { next }
	keep && /^@@ / { sub(/^@@ -[0-9,]+ \+[0-9,]+ @@/, "@@") }
	keep { print }
	END { if (!found) exit 4 }' "$1"
}

for fs in "$@"; do
	sels=$(sels_of "$fs") || die "$fs is not listed in $MAP"
	text=$( {
		echo "base linux-source-6.12 $base"
		# in series order, whatever order the line gives
		for p in "${series[@]}"; do
			n=${p%%-*}
			while read -r sel; do
				[ "${sel%%:*}" = "$n" ] || continue
				path=""; [ "$sel" != "${sel#*:}" ] && path=${sel#*:}
				echo "== section ${path:-whole patch}"
				normalize "$PATCHES/$p" "$path" ||
					{ echo "kernel-key.sh: $fs: $sel: no such diff in $p" >&2; echo "@@BAD@@"; }
			done <<<"$sels"
		done
		# a selection naming a patch the series does not have
		while read -r sel; do
			[ -n "$sel" ] || continue
			patch_of "${sel%%:*}" >/dev/null || { echo "kernel-key.sh: $fs: $sel: not in the series" >&2; echo "@@BAD@@"; }
		done <<<"$sels"
	} )
	grep -q '^@@BAD@@$' <<<"$text" && exit 3
	if [ "$show" = 1 ]; then
		printf '%s\n' "$text"
	else
		echo "$fs $(printf '%s\n' "$text" | sha256sum | cut -c1-16)"
	fi
done

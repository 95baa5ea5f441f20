#!/bin/bash
# ledger-test.sh - checks of the crash ledger's tools, on the host, no VM:
#   kernel-key.sh: a regenerated patch with identical code (new blob
#     hashes, mail header, wording, git version, shifted hunk line numbers,
#     Documentation) keeps every key; a code change restarts exactly the
#     filesystems whose fs-patches selections contain it (0010's
#     realtime-only xfs_iomap.c: xfsrt only; its xfs_file.c: both XFS;
#     0011: ext4 bigalloc only); a patch on no line of fs-patches stops it;
#   ledger-add.sh: a pass stopped midway keeps its finished cycles, marked
#     interrupted; an existing ledger directory is not overwritten;
#   crash-table.sh: sums by fs x mode x key, counts a tear in atomic as a
#     violation, and counts only current-key passes toward the 200.
# usage: crashtests/ledger-test.sh   (exit 0 = all passed)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
T=$(mktemp -d /tmp/ledger-test.XXXXXX)
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

# a copy of the tree's series and tools, edited below
mkdir -p "$T/tree/crashtests" "$T/tree/kernel-series"
cp "$HERE"/{kernel-key.sh,fs-patches,ledger-add.sh,crash-table.sh} "$T/tree/crashtests/"
cp -r "$ROOT/kernel-series/series" "$ROOT/kernel-series/patches" "$T/tree/kernel-series/"
KK=$T/tree/crashtests/kernel-key.sh
P=$T/tree/kernel-series/patches
keys() { KERNEL_BASE=test bash "$KK" xfs16k xfsrt ext4bigalloc 2>&1 | tr '\n' ' '; }
key_of() { awk -v f="$1" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' <<<"$2"; }
base=$(keys)
check "three distinct keys: $base" test "$(wc -w <<<"$base")" = 6

# regenerated, same code
p5=$(ls "$P"/0005-*.patch) p3=$(ls "$P"/0003-*.patch)
sed -i -e 's/^index [0-9a-f]*\.\.[0-9a-f]*/index 1234567..89abcde/' \
	-e '1s/^From [0-9a-f]*/From 4b825dc642cb6eb9a060e54bf8d69288fbee4904/' \
	-e 's/^From: untorn developers.*/From: A Real Person <a@example.org>/' \
	-e 's/^Date: .*/Date: Mon, 7 Dec 2026 01:00:00 +0000/' \
	-e 's/^Subject: \[PATCH 05\/13\]/Subject: [PATCH v2 05\/13]/' \
	-e 's/^@@ -\([0-9]*\),\([0-9]*\) +\([0-9]*\),\([0-9]*\) @@/@@ -1\1,\2 +1\3,\4 @@/' "$p5"
printf '%s\n' '-- ' '2.47.0' '' >>"$p5"	# a second trailer: the last one counts
sed -i 's/^+   An untorn write is/+   An untorn write (reworded) is/' "$P"/0009-*.patch
sed -i '0,/^+   /s/^+   /+   Reworded: /' "$p3"
check "the regenerated 0005 differs from the original" bash -c "! cmp -s '$p5' '$ROOT/kernel-series/patches/$(basename "$p5")'"
check "regenerated 0005, reworded Documentation: keys unchanged" test "$(keys)" = "$base"

# a realtime-only change in 0010's xfs_iomap.c
cp -r "$P" "$T/patches.orig"
p10=$(ls "$P"/0010-*.patch)
# only the xfs_iomap.c diff's copy: 0010's xfs_file.c has the same line
awk '/^diff --git/ { f = $3 }
     f ~ /xfs_iomap\.c$/ && /^\+\terror = blkdev_issue_flush\(/ { $0 = $0 " /* changed */" }
     { print }' "$p10" >"$p10.new" && mv "$p10.new" "$p10"
k=$(keys)
check "0010 xfs_iomap.c changed: xfsrt's key changes" test "$(key_of xfsrt "$k")" != "$(key_of xfsrt "$base")"
check "0010 xfs_iomap.c changed: xfs16k's key stays" test "$(key_of xfs16k "$k")" = "$(key_of xfs16k "$base")"
check "0010 xfs_iomap.c changed: ext4bigalloc's key stays" test "$(key_of ext4bigalloc "$k")" = "$(key_of ext4bigalloc "$base")"
rm -rf "$P"; cp -r "$T/patches.orig" "$P"

# 0010's xfs_file.c: both XFS filesystems run it
sed -i 's/^+		if (ocount < ip->i_mount->m_sb.sb_blocksize ||/+		if (ocount <= ip->i_mount->m_sb.sb_blocksize - 1 ||/' "$p10"
k=$(keys)
check "0010 xfs_file.c changed: xfs16k's key changes" test "$(key_of xfs16k "$k")" != "$(key_of xfs16k "$base")"
check "0010 xfs_file.c changed: xfsrt's key changes" test "$(key_of xfsrt "$k")" != "$(key_of xfsrt "$base")"
check "0010 xfs_file.c changed: ext4bigalloc's key stays" test "$(key_of ext4bigalloc "$k")" = "$(key_of ext4bigalloc "$base")"
rm -rf "$P"; cp -r "$T/patches.orig" "$P"

# 0011: ext4 bigalloc only
sed -i '0,/^+	/s/^+	/+	\/* changed *\/ /' "$P"/0011-*.patch
k=$(keys)
check "0011 changed: ext4bigalloc's key changes" test "$(key_of ext4bigalloc "$k")" != "$(key_of ext4bigalloc "$base")"
check "0011 changed: both XFS keys stay" test "$(key_of xfs16k "$k") $(key_of xfsrt "$k")" = "$(key_of xfs16k "$base") $(key_of xfsrt "$base")"
rm -rf "$P"; cp -r "$T/patches.orig" "$P"

# a new patch nobody placed
cp "$P"/0013-*.patch "$P/0099-new.patch"
echo 0099-new.patch >>"$T/tree/kernel-series/series"
KERNEL_BASE=test bash "$KK" xfs16k >/dev/null 2>&1
check "an unplaced patch 0099: kernel-key.sh exits 3" test $? = 3
sed -i '/^0099-new.patch$/d' "$T/tree/kernel-series/series"

# ledger-add: a pass stopped after its 3rd verdict (4th boot running)
cur16=$(bash "$HERE/kernel-key.sh" xfs16k | awk '{print $2}')
out=$T/out
mkdir -p "$out/atomic-j1"
cat >"$out/meta.txt" <<EOF
pass_start=2026-12-07T02:50:00Z
fs=xfs16k
modes=atomic
seed=5
fs_kernel_key=$cur16
engine_commit=abc
mode_start_atomic=2026-12-07T02:50:05Z
EOF
h="mode,fs,job,cycle,seed,epoch,kill,events_before_kill,ms_since_event,run_s,ready_from,acked,started,acked_in_cycle,k,verdict,open,check,bad_checksums,torn_repaired,corrupt_pages,verify_s,cycle_s,why"
echo "$h" >"$out/cycles.csv"
{
	echo 'atomic,xfs16k,1,1,7924,1,after-flush,1,300,1.0,201,210,211,10,210,ok,ok,clean,0,0,0,1.0,20.0,""'
	echo 'atomic,xfs16k,1,2,7924,1,timed,0,,2.0,211,230,231,20,230,tear,corrupt,-,1,0,1,1.0,20.0,"page 3"'
	echo 'atomic,xfs16k,1,3,7924,2,after-flush,2,200,1.0,201,220,222,20,221,ok,ok,clean,0,2,0,1.0,20.0,""'
} >"$out/atomic-j1/cycles.csv"
for c in 1 2 3 4; do echo "### cycle $c 2026-12-07T02:5$c:00Z plan=event"; echo "verdict ok k=1"; done >"$out/atomic-j1/guest.log"
R=$T/results
d=$(bash "$T/tree/crashtests/ledger-add.sh" --results "$R" "$out")
check "ledger-add: one directory, named by date, fs, mode, seed" test "$d" = "$R/2026-12-07/xfs16k-atomic-s5"
check "ledger-add: the 3 finished cycles kept" test "$(grep -vc '^mode,' "$d/cycles.csv")" = 3
check "ledger-add: status interrupted" grep -qx 'status=interrupted' "$d/meta.txt"
check "ledger-add: ends at the boot that gave the 3rd verdict" grep -q '^mode_end=2026-12-07T02:54:00Z' "$d/meta.txt"
bash "$T/tree/crashtests/ledger-add.sh" --results "$R" "$out" >/dev/null 2>&1
check "ledger-add: refuses to overwrite" test $? = 1
# another pass with the same seed that day (the CI's stop check and a
# campaign pass): kept beside, named by its start time
out1=$T/out1
cp -r "$out" "$out1"
sed -i 's/^pass_start=.*/pass_start=2026-12-07T05:19:00Z/' "$out1/meta.txt"
d1=$(bash "$T/tree/crashtests/ledger-add.sh" --results "$R" "$out1")
check "ledger-add: a second pass of one seed named by its start" test "$d1" = "$R/2026-12-07/xfs16k-atomic-s5-t051900Z"
rm -rf "$d1" # the table checks below count one pass

# a pass whose job stopped on a harness error: its cycles, status says so
out2=$T/out2
cp -r "$out" "$out2"
sed -i 's/^seed=5$/seed=6/' "$out2/meta.txt"
printf 'mode_end_atomic=2026-12-07T02:55:00Z wall_s=300\npass_end=2026-12-07T02:55:01Z\nresult=FAIL\n' >>"$out2/meta.txt"
printf 'HARNESS ERROR: a job stopped early (see the job logs)\nRESULT: FAIL\n' >"$out2/summary.txt"
d2=$(bash "$T/tree/crashtests/ledger-add.sh" --results "$T/results2" "$out2")
check "ledger-add: a harness error keeps its 3 cycles" test "$(grep -vc '^mode,' "$d2/cycles.csv")" = 3
check "ledger-add: status harness-error" grep -qx 'status=harness-error' "$d2/meta.txt"

# a second pass on an older kernel key
mkdir -p "$R/2026-12-06/xfs16k-atomic-s4"
cp "$d/cycles.csv" "$R/2026-12-06/xfs16k-atomic-s4/"
sed "s/^fs_kernel_key=.*/fs_kernel_key=0000000000000000/; s/^status=.*/status=complete/" "$d/meta.txt" >"$R/2026-12-06/xfs16k-atomic-s4/meta.txt"
tab=$(bash "$T/tree/crashtests/crash-table.sh" "$R"/*/*/ 2>&1)
check "crash-table: current key row: 1 pass, 3 cycles, the tear a violation" \
	grep -q "^| xfs16k | atomic | $cur16 | \*\*yes\*\* | 1 | 3 | 2 / 1 | 50 | \*\*1\*\* | 1 | 2 (in 1 cycles) | 60.0 |" <<<"$tab"
check "crash-table: old key row apart, not counted now" \
	grep -q "^| xfs16k | atomic | 0000000000000000 | no | 1 | 3 |" <<<"$tab"
check "crash-table: 200-count has only the current pass" \
	grep -q "^| xfs16k | atomic | 3 | 197 | \*\*1\*\* |" <<<"$tab"

# a fullpage pass with no torn page repaired: its control is not shown yet
fp=$R/2026-12-07/xfs16k-fullpage-s7
mkdir -p "$fp"
{ sed -n 1p "$d/cycles.csv"
  echo 'fullpage,xfs16k,1,1,7926,1,after-flush,1,300,1.0,201,210,211,10,210,ok,ok,clean,0,0,0,1.0,20.0,""'; } >"$fp/cycles.csv"
sed "s/^status=.*/status=complete/" "$d/meta.txt" >"$fp/meta.txt"
tab=$(bash "$T/tree/crashtests/crash-table.sh" "$R"/*/*/ 2>&1)
check "crash-table: fullpage without a repair says so" \
	grep -q "^| xfs16k | fullpage | 1 | 199 | 0 | 0 | 0 | no repair yet |" <<<"$tab"

echo "$fails failed"
[ $fails = 0 ]

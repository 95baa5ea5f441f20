#!/bin/bash
# run.sh - the long pass: upstream fstests' atomic-write tests in the test VM
# against the patched kernel, one boot per filesystem section.  Not part of
# ./test.sh (it takes about an hour under TCG; see README.md).
#
# usage: run.sh --fstests DIR --tools DIR [options]
#   --fstests DIR    a built fstests tree (README.md: which commit)
#   --tools DIR      prefix holding bin/fio and sbin/{xfs_io,mkfs.xfs,...}
#                    built from upstream (Debian 12's are too old)
#   -k BZIMAGE       guest kernel (default: the patched kernel of
#                    `kernel-series/build.sh --print`, else
#                    /var/cache/untorn/kernel/latest-patched)
#   --sections "S.." default "xfs16k xfsrt ext4bigalloc"
#   --tests "T.."    default: the 16 atomic-write tests (TESTS below)
#   --root IMG       reuse this root image (else built by mkroot.sh)
#   -o DIR           output directory (default /var/tmp/untorn-fstests/<time>)
#   -t SECS          per-boot timeout (default 5400)
# Output: DIR/<section>.out (guest output), DIR/results/<section>/ (fstests'
# own result files, copied out of the root image), DIR/table.md (test x
# section: pass / fail / notrun with the reason).  Exit 0 when every boot
# finished (the table says what passed), 1 otherwise.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KS=$(dirname "$HERE")
VM=$KS/vm
# shellcheck source=../vm/config.sh
. "$VM/config.sh"

# Quick ones first, the fio runs (773, 774, ext4/061-062) last.
TESTS="generic/765 generic/767 generic/768 generic/769 generic/770 generic/775
generic/776 generic/778 xfs/838 xfs/839 xfs/840 ext4/063 generic/773
generic/774 ext4/061 ext4/062"
sections="xfs16k xfsrt ext4bigalloc"
fst="" tools="" kernel="" root="" out="" tmo=5400
while [ $# -gt 0 ]; do
	case $1 in
	--fstests) fst=$2; shift 2 ;;
	--tools) tools=$2; shift 2 ;;
	-k) kernel=$2; shift 2 ;;
	--sections) sections=$2; shift 2 ;;
	--tests) TESTS=$2; shift 2 ;;
	--root) root=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-t) tmo=$2; shift 2 ;;
	*) sed -n '2,24p' "$0" >&2; exit 2 ;;
	esac
done
log() { echo "[fstests/run.sh $(date +%H:%M:%S)] $*" >&2; }
[ -n "$fst" ] && [ -n "$tools" ] || { sed -n '2,24p' "$0" >&2; exit 2; }
if [ -z "$kernel" ] && [ -x "$KS/build.sh" ]; then
	kernel=$("$KS/build.sh" --print 2>/dev/null | sed -n 's/^PATCHED=//p' | tail -n1)
fi
[ -n "$kernel" ] && [ -f "$kernel" ] || kernel=$(readlink -f /var/cache/untorn/kernel/latest-patched 2>/dev/null)
[ -f "$kernel" ] || { log "no patched kernel (-k)"; exit 1; }
out=${out:-/var/tmp/untorn-fstests/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/disks"
log "kernel $kernel; output $out"

if [ -z "$root" ]; then
	root=$out/fstroot.img
	"$HERE/mkroot.sh" -o "$root" --fstests "$fst" --tools "$tools" || exit 1
fi
# Fixes to tests' own bugs (patches/, one labelled patch each) go into the
# root image's copy of the fstests tree: each file the patch names is
# dumped, patched and written back (debugfs, no mount).  A patch already
# in (it reverses cleanly) is skipped, so a reused image is patched once.
apply_test_patches() {
	local p f tmp files
	for p in "$HERE"/patches/*.patch; do
		[ -e "$p" ] || continue
		files=$(sed -n 's|^+++ b/||p' "$p")
		tmp=$(mktemp -d)
		for f in $files; do
			mkdir -p "$tmp/$(dirname "$f")"
			debugfs -R "dump /fstests/$f $tmp/$f" "$root" >/dev/null 2>&1
			[ -s "$tmp/$f" ] || { log "$(basename "$p"): /fstests/$f not in $root"; rm -rf "$tmp"; return 1; }
		done
		if (cd "$tmp" && patch -p1 -s -R --dry-run <"$p" >/dev/null 2>&1); then
			log "test patch $(basename "$p"): already in the image"
		elif (cd "$tmp" && patch -p1 -s --no-backup-if-mismatch <"$p"); then
			for f in $files; do
				printf 'cd /fstests/%s\nrm %s\nwrite %s %s\nsif %s mode 0100775\n' \
					"$(dirname "$f")" "$(basename "$f")" "$tmp/$f" \
					"$(basename "$f")" "$(basename "$f")" >"$tmp/cmds"
				debugfs -w -f "$tmp/cmds" "$root" >/dev/null 2>&1
			done
			log "test patch $(basename "$p"): applied"
		else
			log "test patch $(basename "$p") does not apply"
			rm -rf "$tmp"
			return 1
		fi
		rm -rf "$tmp"
	done
}
apply_test_patches || exit 1
"$VM/mkinitramfs.sh" -o "$out/initramfs.cpio.gz" \
	"$HERE/guest-boot.sh:/bin/guest-boot.sh" "$HERE/guest-check.sh:/bin/guest-check.sh" \
	"$VM/guest-disks.sh:/bin/guest-disks.sh" || exit 1

rc=0
for s in $sections; do
	# Fresh sparse disks for every section.  Scratch is large because
	# generic/778 sizes its file from the measured write speed and
	# ext4/062 and generic/769-770 make filesystems of fixed sizes.
	d=$out/disks
	rm -f "$d"/*.img
	truncate -s 2G "$d/fst-test.img"
	truncate -s 8G "$d/fst-scratch.img"
	truncate -s 2G "$d/fst-testrt.img"
	truncate -s 8G "$d/fst-scratchrt.img"
	log "section $s: booting (timeout ${tmo}s)"
	t0=$(date +%s)
	"$VM/boot.sh" -k "$kernel" -i "$out/initramfs.cpio.gz" -d none -m 2048M \
		-D "fstroot=$root" -D "fst-test=$d/fst-test.img" -D "fst-scratch=$d/fst-scratch.img" \
		-D "fst-testrt=$d/fst-testrt.img" -D "fst-scratchrt=$d/fst-scratchrt.img" \
		-a "$NVME_AID_PARAM=$NVME_AID_ON" -t "$tmo" -o "$out/boot-$s" \
		-- /bin/guest-boot.sh "$s" $TESTS > >(tee "$out/$s.out") &
	# In the background so that a signal to this script is handled at
	# once (the trap kills this boot's QEMU), not after the boot.
	bpid=$!
	trap 'kill "$(cat "$out/boot-$s/qemu.pid" 2>/dev/null)" 2>/dev/null; exit 130' INT TERM
	wait "$bpid"
	brc=$?
	trap - INT TERM
	log "section $s: guest status $brc after $(( $(date +%s) - t0 ))s"
	[ "$brc" = 0 ] || rc=1
	rm -f "$d"/*.img
done

# fstests' own result files, out of the root image (no mount needed).
rm -rf "$out/results"
debugfs -R "rdump /fstests/results $out" "$root" >/dev/null 2>&1 || log "could not copy results out of $root"

# The table: one row per test, one column per section.
{
	printf '| test |'; for s in $sections; do printf ' %s |' "$s"; done; echo
	printf '|---|'; for s in $sections; do printf -- '---|'; done; echo
	for t in $TESTS; do
		printf '| %s |' "$t"
		for s in $sections; do
			l=$(grep -h "^FSTESTS-RESULT $s $t " "$out/$s.out" 2>/dev/null | tail -n1 | tr -d '\r|')
			if [ -z "$l" ]; then printf ' not run (boot ended before it) |'; continue; fi
			set -- $l
			st=$4 secs=$5; shift 5
			case $st in
			pass) printf ' pass (%ss) |' "$secs" ;;
			notrun) printf ' notrun: %s |' "$*" ;;
			*) printf ' **%s** (%ss): %s |' "$st" "$secs" "$(cut -c1-120 <<<"$*")" ;;
			esac
		done
		echo
	done
} >"$out/table.md"
cat "$out/table.md"
log "done: $out/table.md"
exit $rc

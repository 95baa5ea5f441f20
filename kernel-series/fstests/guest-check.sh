#!/bin/bash
# guest-check.sh - runs INSIDE the VM, chrooted into the fstests root image
# (guest-boot.sh): write fstests' local.config for the section, run ./check,
# print one machine-readable line per test:
#   FSTESTS-RESULT <section> <test> pass|fail|notrun <seconds> <reason...>
# followed, for every failure, by its .out.bad diff and the tail of .full.
#
# usage: guest-check.sh SECTION TEST...
#   SECTION: xfs16k | xfsrt | ext4bigalloc (see local.config below)
# Disks are found by NVMe serial (run.sh names them): fst-test,
# fst-scratch, fst-testrt, fst-scratchrt.
set -u
section=${1:?section}; shift
export PATH=/opt/fst/sbin:/opt/fst/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin
export HOME=/root LANG=C LC_ALL=C TERM=dumb
hostname untorn-guest 2>/dev/null

dev_of() {  # dev_of SERIAL -> /dev/nvmeXn1
	local b
	for b in /sys/block/nvme*n1; do
		[ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}
TD=$(dev_of fst-test) && SD=$(dev_of fst-scratch) || { echo "guest-check: test/scratch disks missing"; exit 1; }
TRT=$(dev_of fst-testrt || true)
SRT=$(dev_of fst-scratchrt || true)
mkdir -p /mnt/test /mnt/scratch

# The sections.  XFS: mkfs.xfs 6.19 turns on exchange-range and parent
# pointers by default, which 6.12 (the kernel of this series) calls
# experimental; its own 6.12 LTS profile (-c options=lts_6.12.conf) turns
# them off, but a profile cannot be combined with the -m/-b options the
# tests add, so they are spelled out.  Realtime: no reflink on rt in 6.12.
xcommon="-i exchange=0 -n parent=0"
# Only this section is written: check sources common/rc (and init_rc
# mounts TEST_DEV) with the first section of the file before it applies -s.
case $section in
xfs16k) fsopts='FSTYP=xfs
MKFS_OPTIONS="'"$xcommon"' -b size=16k"' ;;
xfsrt) fsopts='FSTYP=xfs
USE_EXTERNAL=yes
TEST_RTDEV='"$TRT"'
SCRATCH_RTDEV='"$SRT"'
MKFS_OPTIONS="'"$xcommon"' -m reflink=0 -d rtinherit=1 -r extsize=16k"' ;;
ext4bigalloc) fsopts='FSTYP=ext4
MKFS_OPTIONS="-O bigalloc -C 16384"' ;;
*) echo "guest-check: unknown section $section"; exit 1 ;;
esac
cat >/fstests/local.config <<CFG
[$section]
TEST_DEV=$TD
TEST_DIR=/mnt/test
SCRATCH_DEV=$SD
SCRATCH_MNT=/mnt/scratch
RECREATE_TEST_DEV=true
LOAD_FACTOR=1
TIME_FACTOR=1
$fsopts
CFG
echo "guest-check: kernel $(uname -r); cmdline $(cat /proc/cmdline)"
echo "guest-check: test=$TD scratch=$SD testrt=$TRT scratchrt=$SRT section=$section"
echo "guest-check: xfs_io $(xfs_io -V); $(fio --version); $(mke2fs -V 2>&1 | head -1)"
sed 's/^/guest-check: config: /' /fstests/local.config

# check mounts TEST_DEV (init_rc) before RECREATE_TEST_DEV formats it, so
# give it this section's filesystem first.
case $section in
xfs16k) mkfs.xfs -q -f $xcommon -b size=16k "$TD" ;;
xfsrt) mkfs.xfs -q -f $xcommon -m reflink=0 -d rtinherit=1 -r extsize=16k,rtdev="$TRT" "$TD" ;;
ext4bigalloc) mkfs.ext4 -q -F -O bigalloc -C 16384 "$TD" ;;
*) echo "guest-check: unknown section $section"; exit 1 ;;
esac || { echo "guest-check: mkfs of the test device failed"; exit 1; }

# ./check runs every test named on its command line whatever FSTYP is:
# ext4/061-062 on XFS fall back to a default mkfs.xfs (4 KiB blocks, no
# realtime inherit) and measure nothing of the section.  Pass only the
# generic tests and those of the section's filesystem; report the others.
fstyp=$(sed -n 's/^FSTYP=//p' /fstests/local.config)
run=()
for t in "$@"; do
	case $t in
	generic/* | "$fstyp"/*) run+=("$t") ;;
	*) echo "FSTESTS-RESULT $section $t notrun - ${t%%/*}-only test, FSTYP=$fstyp" ;;
	esac
done
set -- "${run[@]}"

cd /fstests || exit 1
rm -rf "results/$section"
start=$(date +%s)
./check -s "$section" "$@" 2>&1 | tee /tmp/check.out
echo "guest-check: ./check took $(( $(date +%s) - start ))s"

res=results/$section
failed=$(sed -n 's/^Failures: //p' /tmp/check.out | tail -n1)
for t in "$@"; do
	secs=$(cat "$res/check.time" results/check.time 2>/dev/null | awk -v t="$t" '$1 == t {print $2}' | tail -n1)
	if [ -f "$res/$t.notrun" ]; then
		echo "FSTESTS-RESULT $section $t notrun ${secs:--} $(tr '\n' ' ' <"$res/$t.notrun")"
	elif [[ " $failed " == *" $t "* ]]; then
		echo "FSTESTS-RESULT $section $t fail ${secs:--} $(head -c 300 "$res/$t.out.bad" 2>/dev/null | tr '\n' ' ')"
	elif [ -n "$secs" ]; then
		echo "FSTESTS-RESULT $section $t pass $secs"
	else
		echo "FSTESTS-RESULT $section $t unknown - not in check's results"
	fi
done
for t in $failed; do
	echo "===== $section $t: diff against golden output"
	diff -u "tests/$t.out" "$res/$t.out.bad" 2>&1 | head -60
	echo "===== $section $t: tail of $t.full"
	tail -n 60 "$res/$t.full" 2>/dev/null
	[ -f "$res/$t.dmesg" ] && { echo "===== $section $t: dmesg"; tail -n 60 "$res/$t.dmesg"; }
done
sync
exit 0

#!/bin/sh
# guest.sh EXPECT AID - runs INSIDE the VM (busybox sh): find the NVMe disks
# by serial (= image name, see vm/mkdisks.sh), mount them, run atomic_tests.
EXPECT=${1:?expect}
AID=${2:?aid}
# untorn.race_iters=N / untorn.race_rounds=N size race_tests (below);
# untorn.race_only=1 runs race_tests alone (a quick developer pass).
# untorn.shutdown_rounds=N runs the shutdown test N times per filesystem
# (default 1), untorn.shutdown_hogs=N with N CPU-hog threads,
# untorn.shutdown_appenders=N with N more atomic writers appending, and
# untorn.shutdown_only=FS runs nothing but those rounds on FS (a loop to
# measure how often an acknowledged write is lost).
# untorn.fsx_ops=N: operations of stress_tests --fsx (default 400).
# untorn.mixsd_rounds=N: rounds of race_tests --mixed-shutdown-* per
# filesystem (default 2); untorn.mixsd_only=FS runs nothing but those.
RACE_ITERS=20 RACE_ROUNDS=2 RACE_ONLY=0 SD_ROUNDS=1 SD_HOGS=0 SD_APPENDERS=0 SD_ONLY="" FSX_OPS=400
# untorn.shconv_only=FS runs nothing but race_tests --shared-convert on FS
# (untorn.race_iters=N iterations: a loop that reaches the window).
# untorn.bench_prealloc=FS runs nothing but prealloc_bench on FS (a
# measurement, see prealloc_bench.c; untorn.bench_args="..." passes options).
MIX_ROUNDS=2 MIX_ONLY="" BENCH_FS="" BENCH_ARGS="" SHCONV_FS=""
for w in $(cat /proc/cmdline); do
	case $w in
	untorn.race_iters=*) RACE_ITERS=${w#untorn.race_iters=} ;;
	untorn.race_rounds=*) RACE_ROUNDS=${w#untorn.race_rounds=} ;;
	untorn.race_only=1) RACE_ONLY=1 ;;
	untorn.shutdown_rounds=*) SD_ROUNDS=${w#untorn.shutdown_rounds=} ;;
	untorn.shutdown_hogs=*) SD_HOGS=${w#untorn.shutdown_hogs=} ;;
	untorn.shutdown_appenders=*) SD_APPENDERS=${w#untorn.shutdown_appenders=} ;;
	untorn.shutdown_only=*) SD_ONLY=${w#untorn.shutdown_only=}; RACE_ONLY=1 ;;
	untorn.fsx_ops=*) FSX_OPS=${w#untorn.fsx_ops=} ;;
	untorn.mixsd_rounds=*) MIX_ROUNDS=${w#untorn.mixsd_rounds=} ;;
	untorn.mixsd_only=*) MIX_ONLY=${w#untorn.mixsd_only=}; RACE_ONLY=1 ;;
	untorn.bench_prealloc=*) BENCH_FS=${w#untorn.bench_prealloc=}; RACE_ONLY=1 ;;
	untorn.shconv_only=*) SHCONV_FS=${w#untorn.shconv_only=}; RACE_ONLY=1 ;;
	untorn.bench_args=*) BENCH_ARGS=$(echo "${w#untorn.bench_args=}" | tr '+' ' ') ;;
	esac
done
echo "env.kernel: INFO got=$(uname -r)"
echo "env.cmdline: INFO got=$(cat /proc/cmdline)"

# nvme_wait, dev_of SERIAL -> nvmeXn1 (../vm/guest-disks.sh)
. /bin/guest-disks.sh
nvme_wait
# scsi_debug disk (if scsi_debug.* is on the command line)
SCSI=""
if grep -q 'scsi_debug\.' /proc/cmdline; then
	i=0
	while [ $i -lt 100 ]; do
		for b in /sys/block/sd*; do
			[ -e "$b" ] && SCSI=$(basename "$b")   # the guest has no other SCSI disk
		done
		[ -n "$SCSI" ] && break
		i=$((i + 1)); sleep 0.2
	done
fi

args="--expect $EXPECT --aid $AID"
mnt() {  # mnt NAME FSTYPE [OPTS [TESTDEV]] -> adds --NAME /mnt/NAME:DEV
	name=$1 fstype=$2 opts=${3:-} testdev=${4:-}
	d=$(dev_of "$name") || { echo "setup.$name: FAIL got=no_disk want=ok"; return; }
	mkdir -p "/mnt/$name"
	if mount -t "$fstype" ${opts:+-o "$opts"} "/dev/$d" "/mnt/$name" 2>/tmp/mnt.err; then
		echo "setup.$name: PASS got=ok want=ok"
		args="$args --$name /mnt/$name:${testdev:-$d}"
	else
		echo "setup.$name: FAIL got=mount_failed($(tr '\n' ' ' </tmp/mnt.err)) want=ok"
	fi
}
mnt xfs16k xfs
mnt xfs4k xfs
mnt ext4 ext4
if rtd=$(dev_of xfsrtdev); then
	# file data goes to the realtime device: test its limits
	mnt xfsrt xfs "rtdev=/dev/$rtd" "$rtd"
fi
mnt ext4bigalloc ext4
mnt ext4j ext4 data=journal
raw=$(dev_of raw) && args="$args --raw $raw"
[ -n "$SCSI" ] && args="$args --scsi $SCSI"
echo "env.disks: INFO got=$(for b in /sys/block/*; do printf '%s=%s ' "$(basename $b)" "$(cat $b/device/serial 2>/dev/null | tr -d ' ')"; done)"

rc=0
[ "$RACE_ONLY" = 1 ] || { /bin/atomic_tests $args; rc=$?; }
# A filesystem on the scsi_debug disk (generic/767's setup): ext4 bigalloc,
# 16 KiB clusters, made here (the host's e2fsprogs mke2fs, in the initramfs
# as mke2fs.e2fsprogs: busybox's mke2fs makes no ext4).
if [ "$RACE_ONLY" != 1 ] && [ -n "$SCSI" ]; then
	mkdir -p /mnt/scsifs
	if /bin/mke2fs.e2fsprogs -q -F -t ext4 -O bigalloc -C 16384 -b 4096 "/dev/$SCSI" >/tmp/mkfs.err 2>&1 &&
		mount -t ext4 "/dev/$SCSI" /mnt/scsifs 2>>/tmp/mkfs.err; then
		echo "setup.scsifs: PASS got=ok want=ok"
		/bin/atomic_tests --expect "$EXPECT" --aid "$AID" --scsifs "/mnt/scsifs:$SCSI" \
			>/tmp/scsifs.out || rc=1
		grep -v 'SKIP why=not_given' /tmp/scsifs.out
		umount /mnt/scsifs
	else
		echo "setup.scsifs: FAIL got=mkfs_or_mount_failed($(tr '\n' ' ' </tmp/mkfs.err)) want=ok"
		rc=1
	fi
fi
# Per-file data journalling (chattr +j) only takes effect on a nodelalloc
# mount: remount the data=journal disk that way for the ext4 per-file checks.
if [ "$RACE_ONLY" != 1 ] && grep -q " /mnt/ext4j " /proc/mounts && d=$(dev_of ext4j); then
	umount /mnt/ext4j
	mkdir -p /mnt/ext4nd
	if mount -t ext4 -o nodelalloc "/dev/$d" /mnt/ext4nd 2>/tmp/mnt.err; then
		echo "setup.ext4nd: PASS got=ok want=ok"
		/bin/atomic_tests --expect "$EXPECT" --aid "$AID" --ext4nd "/mnt/ext4nd:$d" \
			>/tmp/ext4nd.out
		[ $? = 0 ] || rc=1
		grep -v 'SKIP why=not_given' /tmp/ext4nd.out
	else
		echo "setup.ext4nd: FAIL got=mount_failed($(tr '\n' ' ' </tmp/mnt.err)) want=ok"
		rc=1
	fi
fi
# Shutdown mid-write (as xfstests generic/775, 778): atomic_tests writes
# RWF_ATOMIC|RWF_DSYNC units and shuts the filesystem down (no log flush)
# part way; after a remount (log recovery) it checks every unit.
# sd_round NAME FSTYPE OPTS DEV TAG DELAY_US: one write phase, shutdown,
# remount (log recovery), verify.  Status 1 if the remount failed.
sd_round() {
	/bin/atomic_tests --expect "$EXPECT" --aid "$AID" \
		--shutdown-delay-us "$6" --shutdown-hogs "$SD_HOGS" \
		--shutdown-appenders "$SD_APPENDERS" \
		--shutdown-write "$5:/mnt/$1" >/tmp/shutdown.out || rc=1
	grep -v 'SKIP why=not_given' /tmp/shutdown.out
	umount "/mnt/$1"
	if ! mount -t "$2" ${3:+-o "$3"} "/dev/$4" "/mnt/$1" 2>/tmp/mnt.err; then
		echo "shutdown.$5.remount: FAIL got=mount_failed($(tr '\n' ' ' </tmp/mnt.err)) want=ok"
		rc=1
		return 1
	fi
	echo "shutdown.$5.remount: PASS got=ok want=ok"
	/bin/atomic_tests --expect "$EXPECT" --aid "$AID" \
		--shutdown-verify "$5:/mnt/$1" >/tmp/shutdown.out || rc=1
	grep -v 'SKIP why=not_given' /tmp/shutdown.out
}
# Round 0 shuts down after 1 s; round r > 0 (tag NAME.rR) after a delay
# spread over 0.25-1 s, so the shutdown meets the writes at other steps.
shutdown_test() {  # shutdown_test NAME FSTYPE [OPTS]
	name=$1 fstype=$2 opts=${3:-}
	grep -q " /mnt/$name " /proc/mounts && d=$(dev_of "$name") || return 0
	r=0 lost=0
	while [ $r -lt "$SD_ROUNDS" ]; do
		tag=$name delay=1000000
		[ $r -gt 0 ] && tag=$name.r$r delay=$((250000 + (r * 7919 % 1000) * 750))
		sd_round "$name" "$fstype" "$opts" "$d" "$tag" "$delay" || return 0
		grep -q 'lost_or_torn: FAIL' /tmp/shutdown.out && lost=$((lost + 1))
		r=$((r + 1))
	done
	[ "$SD_ROUNDS" -gt 1 ] && echo "shutdown.$name.rounds_failed: INFO got=$lost/$SD_ROUNDS"
}
# The negative control: the same writes plain (no RWF_ATOMIC, no RWF_DSYNC)
# must be seen lost after the shutdown, or the check above could not see a
# loss.  On the patched kernel's boot only (the writes are plain: the
# kernel does not matter, the time does).
shutdown_control() {  # shutdown_control NAME FSTYPE [OPTS]
	grep -q " /mnt/$1 " /proc/mounts && d=$(dev_of "$1") || return 0
	sd_round "$1" "$2" "${3:-}" "$d" "$1.control" 500000 || true
}
if [ -n "$SD_ONLY" ]; then
	case $SD_ONLY in
	xfsrt) [ -n "${rtd:-}" ] && shutdown_test xfsrt xfs "rtdev=/dev/$rtd" ;;
	ext4bigalloc) shutdown_test ext4bigalloc ext4 ;;
	*) shutdown_test "$SD_ONLY" xfs ;;
	esac
fi
if [ "$RACE_ONLY" != 1 ]; then
	shutdown_test xfs16k xfs
	[ -n "${rtd:-}" ] && shutdown_test xfsrt xfs "rtdev=/dev/$rtd"
	shutdown_test ext4bigalloc ext4
	if [ "$EXPECT" = patched ] && [ "$AID" = on ]; then
		[ -n "${rtd:-}" ] && shutdown_control xfsrt xfs "rtdev=/dev/$rtd"
		shutdown_control ext4bigalloc ext4
	fi
fi
# Multi-block untorn writes vs other writers, and at the end of file
# (race_tests): thousands of conversion races with no acknowledged byte lost
# (untorn.race_iters=N on the kernel command line, default 20 per
# scenario), then rounds of a race ended by a shutdown without log flush
# (untorn.race_rounds=N, default 2) and the end-of-file shutdown test,
# each followed by a remount (log recovery) and a check.
remount() {  # remount NAME FSTYPE OPTS DEV
	umount "/mnt/$1"
	if mount -t "$2" ${3:+-o "$3"} "/dev/$4" "/mnt/$1" 2>/tmp/mnt.err; then
		return 0
	fi
	echo "race.$1.remount: FAIL got=mount_failed($(tr '\n' ' ' </tmp/mnt.err)) want=ok"
	rc=1
	return 1
}
race_test() {  # race_test NAME FSTYPE [OPTS]
	name=$1 fstype=$2 opts=${3:-}
	grep -q " /mnt/$name " /proc/mounts && d=$(dev_of "$name") || return 0
	s=$(date +%s)
	/bin/race_tests --race "$name:/mnt/$name" --iters "$RACE_ITERS" || rc=1
	echo "race.$name.seconds: INFO got=$(( $(date +%s) - s ))"
	/bin/race_tests --probe "$name:/mnt/$name" || return 0
	# fragmented free space (generic/770's idea) and an fsx-style run with
	# atomic writes mixed in (generic/776's), against a model of the file
	s=$(date +%s)
	/bin/stress_tests --fragmented "$name:/mnt/$name" || rc=1
	/bin/stress_tests --fsx "$name:/mnt/$name" --ops "$FSX_OPS" || rc=1
	echo "stress.$name.seconds: INFO got=$(( $(date +%s) - s ))"
	s=$(date +%s)
	r=0
	while [ $r -lt "$RACE_ROUNDS" ]; do
		/bin/race_tests --race-shutdown-write "$name.round$r:/mnt/$name" || rc=1
		remount "$name" "$fstype" "$opts" "$d" || return 0
		/bin/race_tests --race-shutdown-verify "$name.round$r:/mnt/$name" || rc=1
		r=$((r + 1))
	done
	/bin/race_tests --eof-shutdown-write "$name:/mnt/$name" || rc=1
	remount "$name" "$fstype" "$opts" "$d" || return 0
	/bin/race_tests --eof-shutdown-verify "$name:/mnt/$name" || rc=1
	mixed_shutdown "$name" "$fstype" "$opts" "$d"
	echo "race.$name.shutdown_seconds: INFO got=$(( $(date +%s) - s ))"
}
# Mixed units converted by atomic writers while the filesystem is shut
# down (race_tests --mixed-shutdown-*): round r shuts down after 0.1-0.4 s.
mixed_shutdown() {  # mixed_shutdown NAME FSTYPE OPTS DEV
	r=0 torn=0
	while [ $r -lt "$MIX_ROUNDS" ]; do
		/bin/race_tests --mixed-shutdown-write "$1.mix$r:/mnt/$1" \
			--delay-us $((100000 + (r * 7919 % 1000) * 300)) || rc=1
		remount "$1" "$2" "$3" "$4" || return 0
		/bin/race_tests --mixed-shutdown-verify "$1.mix$r:/mnt/$1" >/tmp/mix.out || rc=1
		cat /tmp/mix.out
		grep -q '\.torn: FAIL' /tmp/mix.out && torn=$((torn + 1))
		r=$((r + 1))
	done
	echo "mixed_shutdown.$1.rounds_torn: INFO got=$torn/$MIX_ROUNDS"
}
if [ -n "$MIX_ONLY" ]; then
	case $MIX_ONLY in
	xfsrt) [ -n "${rtd:-}" ] && d=$(dev_of xfsrt) && mixed_shutdown xfsrt xfs "rtdev=/dev/$rtd" "$d" ;;
	*) d=$(dev_of "$MIX_ONLY") && mixed_shutdown "$MIX_ONLY" ext4 "" "$d" ;;
	esac
fi
if [ -n "$BENCH_FS" ]; then
	grep -q " /mnt/$BENCH_FS " /proc/mounts &&
		/bin/prealloc_bench $BENCH_ARGS "$BENCH_FS:/mnt/$BENCH_FS" || rc=1
fi
if [ -n "$SHCONV_FS" ]; then
	grep -q " /mnt/$SHCONV_FS " /proc/mounts &&
		/bin/race_tests --shared-convert "$SHCONV_FS:/mnt/$SHCONV_FS" --iters "$RACE_ITERS" || rc=1
fi
if [ -z "$SD_ONLY" ] && [ -z "$MIX_ONLY" ] && [ -z "$BENCH_FS" ] && [ -z "$SHCONV_FS" ]; then
	[ -n "${rtd:-}" ] && race_test xfsrt xfs "rtdev=/dev/$rtd"
	race_test ext4bigalloc ext4
fi
# ext4 bigalloc without its journal (mounted noload, allowed on a clean
# filesystem): a mixed cluster cannot be committed first, so the unit is
# one block there.
if [ "$RACE_ONLY" != 1 ] && grep -q " /mnt/ext4bigalloc " /proc/mounts &&
	d=$(dev_of ext4bigalloc); then
	umount /mnt/ext4bigalloc
	mkdir -p /mnt/ext4nojournal
	if mount -t ext4 -o noload "/dev/$d" /mnt/ext4nojournal 2>/tmp/mnt.err; then
		echo "setup.ext4nojournal: PASS got=ok want=ok"
		/bin/atomic_tests --expect "$EXPECT" --aid "$AID" \
			--ext4nojournal "/mnt/ext4nojournal:$d" >/tmp/ext4nojournal.out
		[ $? = 0 ] || rc=1
		grep -v 'SKIP why=not_given' /tmp/ext4nojournal.out
	else
		echo "setup.ext4nojournal: FAIL got=mount_failed($(tr '\n' ' ' </tmp/mnt.err)) want=ok"
		rc=1
	fi
fi
# The test-only NVMe parameter must announce itself when it applies, and
# only then: exactly one line per controller (every controller of this VM
# is QEMU's, PCI vendor 0x1b36), however the parallel scans interleave.
ctrls=$(ls -d /sys/class/nvme/nvme* 2>/dev/null | wc -l)
warn=$(dmesg | grep 'TEST ONLY: controller reports AWUPF 0')
lines=$(printf '%s' "$warn" | grep -c . || true)
distinct=$(printf '%s' "$warn" | grep -o 'nvme nvme[0-9]*' | sort -u | grep -c . || true)
want_n=0; [ "$EXPECT" = patched ] && [ "$AID" = on ] && want_n=$ctrls
got="$distinct,$lines"; want="$want_n,$want_n"
if [ "$got" = "$want" ]; then st=PASS; else st=FAIL; rc=1; fi
echo "dmesg.test_awupf_warning_per_ctrl: $st got=$got want=$want"
# Setting the parameter (to any value) taints the kernel: TAINT_USER, bit 6.
t=$(cat /proc/sys/kernel/tainted)
got=$(( (t >> 6) & 1 ))
want=0; [ "$EXPECT" = patched ] && want=1
if [ "$got" = "$want" ]; then st=PASS; else st=FAIL; rc=1; fi
echo "kernel.tainted_user: $st got=$got want=$want"
# No test may trigger a kernel warning (a user-reachable WARN is a bug, a
# panic with panic_on_warn): e.g. the partly unmapped buffer case.
n=$(dmesg | grep -c 'WARNING: CPU' || true)
if [ "$n" = 0 ]; then st=PASS; else st=FAIL; rc=1; fi
echo "dmesg.no_kernel_warning: $st got=$n want=0"
for m in /mnt/*; do grep -q " $m " /proc/mounts && umount "$m"; done
# Kernel messages that may explain a failure (prefixed: ignored by the parser).
dmesg | grep -iE 'atomic|xfs|ext4|nvme|scsi_debug|warn|bug|error|unknown' | tail -n 40 | sed 's/^/# dmesg: /'
exit $rc

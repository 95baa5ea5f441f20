#!/bin/sh
# demo-guest.sh STEP [ARGS] - runs INSIDE the VM (busybox sh) for demo.sh.
#
#   modes            untorn info on XFS 16 KiB, XFS 4 KiB, ext4, XFS realtime
#                    (16 KiB rt extents) and ext4 bigalloc (16 KiB clusters), then a
#                    short durable-update benchmark on each filesystem
#   crash FS MODE    start the crash workload on FS (prints "committed N";
#                    the host kills the VM part-way)
#   verify FS MODE N recover the crashed database and compare it with the
#                    SQLite oracle after N (or N+1) acknowledged commits
#   bench FS ARGS... bench_durable ARGS on FS (longer runs than the demo's)
set -u

# NVMe controllers probe asynchronously; disks are found by serial (= image).
i=0
while [ $i -lt 150 ]; do
	n=0
	for b in /sys/block/nvme*n1; do [ -e "$b" ] && n=$((n + 1)); done
	[ "$n" -gt 0 ] && [ "$n" -ge "$(ls -d /sys/class/nvme/nvme* | wc -l)" ] && break
	i=$((i + 1))
	sleep 0.2
done
dev_of() {
	for b in /sys/block/nvme*n1; do
		[ "$(tr -d ' ' <"$b/device/serial")" = "$1" ] && { basename "$b"; return 0; }
	done
	return 1
}
mount_fs() { # mount_fs NAME FSTYPE -> /mnt/NAME
	d=$(dev_of "$1") || { echo "no disk $1"; exit 3; }
	mkdir -p "/mnt/$1"
	opts=""
	if [ "$1" = xfsrt ]; then	# file data lives on the realtime device
		rtd=$(dev_of xfsrtdev) || { echo "no disk xfsrtdev"; exit 3; }
		opts="-o rtdev=/dev/$rtd"
	fi
	mount -t "$2" $opts "/dev/$d" "/mnt/$1" || exit 3
}
fstype() { case $1 in ext4*) echo ext4 ;; *) echo xfs ;; esac; }

# Small enough for TCG (~10x slower than the host), still 4x the cache.
BENCH="-s 16M -c 4 -t 5 -w 1"

step=${1:?step}
shift
case $step in
modes)
	for fs in xfs16k xfs4k ext4 xfsrt ext4bigalloc; do
		mount_fs "$fs" "$(fstype $fs)"
	done
	echo "== mode selection: what statx reports and the mode untorn picks"
	for fs in xfs16k xfs4k ext4 xfsrt ext4bigalloc; do
		echo "--- $fs"
		untorn info "/mnt/$fs/demo.db"
	done
	echo
	echo "== short durable-update benchmark (sync=1), XFS 16 KiB blocks: atomic vs doublewrite vs unsafe"
	bench_durable $BENCH -d /mnt/xfs16k
	echo
	echo "== the same on ext4 (4 KiB blocks: no 16 KiB atomic unit, so no atomic column)"
	bench_durable $BENCH -d /mnt/ext4
	;;
crash)
	mount_fs "$1" "$(fstype "$1")"
	rm -f "/mnt/$1/crash.db" "/mnt/$1/crash.db-wal" "/mnt/$1/crash.db-dw"
	exec crash_workload run "/mnt/$1/crash.db" --protect "$2"
	;;
bench)
	fs=$1
	shift
	mount_fs "$fs" "$(fstype "$fs")"
	bench_durable "$@" -d "/mnt/$fs"
	;;
verify)
	mount_fs "$1" "$(fstype "$1")"
	crash_workload verify "/mnt/$1/crash.db" "$3" --protect "$2"
	;;
*)
	echo "demo-guest.sh: unknown step $step"
	exit 64
	;;
esac

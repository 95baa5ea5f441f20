#!/bin/sh
# bench/vm-guest.sh STEP [ARGS] - runs INSIDE the VM (busybox sh) for
# bench/vm-bench.sh, which writes the per-boot command script calling it.
#
#   setup FS              find the disks by NVMe serial, mount FS (xfs16k,
#                         xfsrt with its realtime disk xfsrtdev,
#                         ext4bigalloc, ext4) on /mnt/FS, print the stack
#                         (kernel, atomic unit, the mode untorn picks)
#   raw SECS ROUND        the ceiling: raw_atomic on the raw disk (16 KiB
#                         RWF_ATOMIC O_DIRECT writes, fdatasync after each)
#   bench FS ARGS...      bench_durable ARGS -d /mnt/FS, device counters
#                         summed over FS's disks
set -u

dev_of() {
	for b in /sys/block/nvme*n1; do
		[ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = "$1" ] && { basename "$b"; return 0; }
	done
	return 1
}
disks_of() { # the disks holding filesystem $1's data
	echo "$1"
	[ "$1" = xfsrt ] && echo xfsrtdev
	return 0
}
wait_disks() { # wait_disks NAME...: NVMe controllers probe asynchronously
	i=0
	while [ $i -lt 150 ]; do
		ok=1
		for n in "$@" raw; do
			dev_of "$n" >/dev/null || ok=0
		done
		[ $ok = 1 ] && return 0
		i=$((i + 1))
		sleep 0.2
	done
	echo "vm-guest: disks $* raw not found"
	exit 3
}

step=${1:?step}
shift
case $step in
setup)
	fs=${1:?fs}
	wait_disks $(disks_of "$fs")
	d=$(dev_of "$fs")
	r=$(dev_of raw)
	mkdir -p "/mnt/$fs"
	case $fs in
	xfsrt) mount -t xfs -o "rtdev=/dev/$(dev_of xfsrtdev)" "/dev/$d" "/mnt/$fs" || exit 3 ;;
	xfs*) mount -t xfs "/dev/$d" "/mnt/$fs" || exit 3 ;;
	ext4*) mount -t ext4 "/dev/$d" "/mnt/$fs" || exit 3 ;;
	*) echo "vm-guest: unknown filesystem $fs"; exit 3 ;;
	esac
	echo "guest: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) vCPUs, $fs=/dev/$d raw=/dev/$r"
	for x in $(for n in $(disks_of "$fs"); do dev_of "$n"; done) $r; do
		q=/sys/block/$x/queue
		echo "guest: $x atomic_write_unit_min/max $(cat $q/atomic_write_unit_min_bytes 2>/dev/null)/$(cat $q/atomic_write_unit_max_bytes 2>/dev/null)," \
			"write cache: $(cat $q/write_cache 2>/dev/null), size $(($(cat /sys/block/$x/size) / 2048)) MiB"
	done
	untorn info "/mnt/$fs/probe.db" 2>&1 | grep -E '^(atomic_unit_min|atomic_unit_max|mode)' | sed 's/^/guest: /'
	rm -f "/mnt/$fs/probe.db"*
	;;
raw)
	wait_disks
	raw_atomic -d "/dev/$(dev_of raw)" -t "${1:-5}" -w 1 --round "${2:-0}"
	;;
bench)
	fs=${1:?fs}
	shift
	BENCH_DEVSTAT=$(for n in $(disks_of "$fs"); do printf '/sys/block/%s/stat:' "$(dev_of "$n")"; done)
	export BENCH_DEVSTAT
	bench_durable "$@" -d "/mnt/$fs"
	;;
*)
	echo "vm-guest: unknown step $step"
	exit 64
	;;
esac

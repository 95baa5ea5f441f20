#!/bin/sh
# bench/vm-guest.sh STEP [ARGS] - runs INSIDE the VM (busybox sh) for
# bench/vm-bench.sh, which writes the per-boot command script calling it.
#
#   setup                 find the disks by NVMe serial, mount xfs16k on
#                         /mnt/xfs16k, print the stack (kernel, atomic unit,
#                         the mode untorn picks)
#   raw SECS ROUND        the ceiling: raw_atomic on the raw disk (16 KiB
#                         RWF_ATOMIC O_DIRECT writes, fdatasync after each)
#   bench ARGS...         bench_durable ARGS -d /mnt/xfs16k
set -u

dev_of() {
	for b in /sys/block/nvme*n1; do
		[ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = "$1" ] && { basename "$b"; return 0; }
	done
	return 1
}
wait_disks() { # NVMe controllers probe asynchronously
	i=0
	while [ $i -lt 150 ]; do
		dev_of xfs16k >/dev/null && dev_of raw >/dev/null && return 0
		i=$((i + 1))
		sleep 0.2
	done
	echo "vm-guest: disks xfs16k/raw not found"
	exit 3
}

step=${1:?step}
shift
case $step in
setup)
	wait_disks
	d=$(dev_of xfs16k)
	r=$(dev_of raw)
	mkdir -p /mnt/xfs16k
	mount -t xfs "/dev/$d" /mnt/xfs16k || exit 3
	echo "guest: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) vCPUs, xfs16k=/dev/$d raw=/dev/$r"
	for x in $d $r; do
		q=/sys/block/$x/queue
		echo "guest: $x atomic_write_unit_min/max $(cat $q/atomic_write_unit_min_bytes 2>/dev/null)/$(cat $q/atomic_write_unit_max_bytes 2>/dev/null)," \
			"write cache: $(cat $q/write_cache 2>/dev/null), size $(($(cat /sys/block/$x/size) / 2048)) MiB"
	done
	untorn info /mnt/xfs16k/probe.db 2>&1 | grep -E '^(atomic_unit_min|atomic_unit_max|mode)' | sed 's/^/guest: /'
	rm -f /mnt/xfs16k/probe.db*
	;;
raw)
	wait_disks
	raw_atomic -d "/dev/$(dev_of raw)" -t "${1:-5}" -w 1 --round "${2:-0}"
	;;
bench)
	bench_durable "$@" -d /mnt/xfs16k
	;;
*)
	echo "vm-guest: unknown step $step"
	exit 64
	;;
esac

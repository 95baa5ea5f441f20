#!/bin/sh
# demo-guest.sh STEP [ARGS] - runs INSIDE the VM (busybox sh) for demo.sh.
#
#   modes   untorn info on XFS 16 KiB, XFS 4 KiB, ext4, XFS realtime (16 KiB
#           rt extents) and ext4 bigalloc (16 KiB clusters)
# (The benchmark and the crash runs have guest scripts of their own:
# bench/vm-guest.sh, crashtests/vm-guest.sh.)
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
	;;
*)
	echo "demo-guest.sh: unknown step $step"
	exit 64
	;;
esac

#!/bin/sh
# vm-guest.sh STEP FS MODE [ARGS] - runs INSIDE the VM (busybox sh) for
# crashtests/vm-crash.sh.
#
#   cycle FS MODE VMCRASH-ARGS...   mount FS (disk serial FS) and the oracle
#       disk (serial "oracle", ext4), set FS's queue/max_sectors_kb to 4 (a
#       plain 16 KiB write becomes four requests; an RWF_ATOMIC one stays
#       one), then `vmcrash cycle /mnt/FS/crash.db /mnt/oracle/oracle.db
#       --protect MODE VMCRASH-ARGS...`: check what the last kill left, then
#       run the workload until the host kills the VM.
#   refuse FS MODE   `vmcrash refuse` on FS: the open must be refused (used
#       with the NVMe aid off and MODE atomic)
set -u

# "timing STAGE uptime=U": the guest's clock (seconds since the kernel
# started) at the harness's stages, for the per-phase cost of a cycle
# (vm-crash.sh's phases.csv); the host ignores these lines otherwise.
timing() { echo "timing $1 uptime=$(cut -d' ' -f1 /proc/uptime)"; }
timing init

# NVMe controllers probe asynchronously; disks are found by serial (= image).
i=0
while [ $i -lt 150 ]; do
	n=0
	for b in /sys/block/nvme*n1; do [ -e "$b" ] && n=$((n + 1)); done
	[ "$n" -gt 0 ] && [ "$n" -ge "$(ls -d /sys/class/nvme/nvme* | wc -l)" ] && break
	i=$((i + 1))
	sleep 0.2
done
timing disks
dev_of() {
	for b in /sys/block/nvme*n1; do
		[ "$(tr -d ' ' <"$b/device/serial")" = "$1" ] && { basename "$b"; return 0; }
	done
	return 1
}
fstype() { case $1 in ext4*|oracle) echo ext4 ;; *) echo xfs ;; esac; }
mount_fs() { # mount_fs NAME -> /mnt/NAME
	d=$(dev_of "$1") || { echo "vm-guest: no disk $1"; exit 3; }
	mkdir -p "/mnt/$1"
	opts=""
	if [ "$1" = xfsrt ]; then	# file data lives on the realtime device
		rtd=$(dev_of xfsrtdev) || { echo "vm-guest: no disk xfsrtdev"; exit 3; }
		opts="-o rtdev=/dev/$rtd"
	fi
	mount -t "$(fstype "$1")" $opts "/dev/$d" "/mnt/$1" ||
		{ echo "vm-guest: mount $1 failed"; exit 3; }
}
split_writes() { # split_writes NAME: max_sectors_kb=4 on the disk (and rtdev)
	for n in "$@"; do
		d=$(dev_of "$n") || continue
		echo 4 >"/sys/block/$d/queue/max_sectors_kb" ||
			{ echo "vm-guest: cannot set max_sectors_kb on $d"; exit 3; }
		echo "disk $n=$d max_sectors_kb=$(cat /sys/block/$d/queue/max_sectors_kb)" \
			"atomic_write_unit_max_bytes=$(cat /sys/block/$d/queue/atomic_write_unit_max_bytes 2>/dev/null)"
	done
}

step=${1:?step}
fs=${2:?fs}
mode=${3:?mode}
shift 3
case $step in
cycle)
	split_writes "$fs" $([ "$fs" = xfsrt ] && echo xfsrtdev)
	mount_fs "$fs"
	mount_fs oracle
	timing mounted
	# the kernel's own boot milestones (timestamps are kept for every
	# record; printk.time only says whether dmesg prints them)
	echo Y >/sys/module/printk/parameters/time 2>/dev/null
	dmesg | awk '/Unpacking initramfs|Freeing initrd memory|Run \/init as init/ {
		t = $0; sub(/^\[ */, "", t); sub(/\].*/, "", t)
		m = $0; sub(/^\[[^]]*\] */, "", m)
		print "timing kmsg " t " " m }'
	vmcrash cycle "/mnt/$fs/crash.db" /mnt/oracle/oracle.db --protect "$mode" "$@"
	rc=$?
	umount /mnt/oracle
	umount "/mnt/$fs"
	exit $rc
	;;
refuse)
	mount_fs "$fs"
	echo "kernel command line: $(cat /proc/cmdline)"
	untorn info "/mnt/$fs/refuse.db" 2>&1 | sed 's/^/info: /'
	vmcrash refuse "/mnt/$fs/refuse.db" --protect "$mode"
	rc=$?
	rm -f "/mnt/$fs/refuse.db" "/mnt/$fs/refuse.db-wal" "/mnt/$fs/refuse.db-dw"
	umount "/mnt/$fs"
	exit $rc
	;;
*)
	echo "vm-guest.sh: unknown step $step"
	exit 64
	;;
esac

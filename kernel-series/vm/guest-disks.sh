# guest-disks.sh - sourced INSIDE the VM (busybox sh) by the guest scripts
# (guest-tests/guest.sh, fstests/guest-boot.sh): the NVMe disks they are
# given, found by serial (= the image name run.sh / mkdisks.sh used).
# Installed in the initramfs as /bin/guest-disks.sh.

# NVMe controllers probe asynchronously: wait (up to 30 s) until every
# controller has its namespace's disk.
nvme_wait() {
	want=$(ls -d /sys/class/nvme/nvme* 2>/dev/null | wc -l)
	i=0
	while :; do
		have=0
		for b in /sys/block/nvme*n1; do [ -e "$b" ] && have=$((have + 1)); done
		[ "$have" -ge "$want" ] && [ "$want" -gt 0 ] && break
		i=$((i + 1)); [ $i -gt 150 ] && break
		sleep 0.2
		want=$(ls -d /sys/class/nvme/nvme* 2>/dev/null | wc -l)
	done
}

# dev_of SERIAL -> nvmeXn1 (status 1 when no disk has that serial)
dev_of() {
	for b in /sys/block/nvme*n1; do
		s=$(tr -d ' ' 2>/dev/null <"$b/device/serial")
		[ "$s" = "$1" ] && { basename "$b"; return 0; }
	done
	return 1
}

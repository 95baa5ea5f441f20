#!/bin/sh
# guest-boot.sh - runs INSIDE the VM as the busybox initramfs's command:
# mount the fstests root image (NVMe serial "fstroot", see mkroot.sh) and
# run guest-check.sh (carried in the initramfs) in it with bash.  Arguments are passed through.
# NVMe controllers probe asynchronously: wait until every one has its disk.
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
root=""
for b in /sys/block/nvme*n1; do
	[ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = fstroot ] && root=/dev/$(basename "$b")
done
[ -n "$root" ] || { echo "guest-boot: no NVMe disk with serial fstroot"; exit 1; }
mkdir -p /newroot
mount -t ext4 "$root" /newroot || exit 1
mount --bind /proc /newroot/proc
mount --bind /sys /newroot/sys
mount --bind /dev /newroot/dev
mount -t tmpfs tmpfs /newroot/tmp
mount -t tmpfs tmpfs /newroot/run
# devtmpfs has no /dev/fd: bash's process substitution <(...), which
# fstests uses (e.g. _require_fio's engine check), needs it.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
[ -e /dev/stdin ] || ln -s /proc/self/fd/0 /dev/stdin
[ -e /dev/stdout ] || ln -s /proc/self/fd/1 /dev/stdout
[ -e /dev/stderr ] || ln -s /proc/self/fd/2 /dev/stderr
[ -d /sys/kernel/debug ] && mount -t debugfs debugfs /newroot/sys/kernel/debug 2>/dev/null
cp /bin/guest-check.sh /newroot/tmp/guest-check.sh   # from the initramfs: no image rebuild when it changes
chroot /newroot /bin/bash /tmp/guest-check.sh "$@"
rc=$?
sync
umount /newroot/tmp /newroot/run 2>/dev/null
umount /newroot/sys/kernel/debug 2>/dev/null
umount /newroot/dev /newroot/sys /newroot/proc 2>/dev/null
umount /newroot || mount -o remount,ro /newroot
exit $rc

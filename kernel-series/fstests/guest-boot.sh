#!/bin/sh
# guest-boot.sh - runs INSIDE the VM as the busybox initramfs's command:
# mount the fstests root image (NVMe serial "fstroot", see mkroot.sh) and
# run guest-check.sh (carried in the initramfs) in it with bash.  Arguments are passed through.
# nvme_wait, dev_of SERIAL -> nvmeXn1 (../vm/guest-disks.sh)
. /bin/guest-disks.sh
nvme_wait
root=/dev/$(dev_of fstroot) || { echo "guest-boot: no NVMe disk with serial fstroot"; exit 1; }
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

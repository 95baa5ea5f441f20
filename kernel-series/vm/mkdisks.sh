#!/bin/bash
# mkdisks.sh - make the raw (sparse) disk images for the untorn test VM.
#
# usage: mkdisks.sh [DIR [NAME...]]  (default: ${UNTORN_VM_DIR:-/var/tmp/untorn-vm}/disks)
#
# With NAMEs, only those images (xfsrt brings xfsrtdev, and the reverse);
# e.g. the crash harness makes the one filesystem it tests.
#
# Images (each becomes one NVMe controller in boot.sh, serial = image name):
#   xfs16k.img      XFS, 16 KiB blocks, 4 KiB sectors  (mkfs.xfs -b size=16k -s size=4k)
#   xfs4k.img       XFS, 4 KiB blocks
#   ext4.img        ext4, 4 KiB blocks
#   xfsrt.img       XFS data device (4 KiB blocks, rtinherit=1) ...
#   xfsrtdev.img    ... and its realtime device (rt extents $RT_EXTSIZE)
#   ext4bigalloc.img  ext4, 4 KiB blocks, bigalloc with 16 KiB clusters
#   ext4j.img       ext4, 4 KiB blocks (the guest mounts it data=journal)
#   raw.img         no filesystem: raw block-device atomic/split checks
# Re-running recreates all images (fresh filesystems).  Prints DIR on stdout.
set -euo pipefail

dir=${1:-${UNTORN_VM_DIR:-/var/tmp/untorn-vm}/disks}
[ $# -gt 0 ] && shift
want=" $* "
[ "$want" = "  " ] && want=" xfs16k xfs4k ext4 xfsrt ext4bigalloc ext4j raw "
case $want in *" xfsrtdev "*) want="$want xfsrt " ;; esac
wanted() { case $want in *" $1 "*) return 0 ;; esac; return 1; }
SIZE=${DISK_SIZE:-384M}
RT_EXTSIZE=${RT_EXTSIZE:-16k}

ensure_pkg() {
	dpkg -s "$1" >/dev/null 2>&1 && return 0
	echo "mkdisks.sh: installing $1" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >&2
}
ensure_pkg xfsprogs
ensure_pkg e2fsprogs

mkdir -p "$dir"
mk() {  # mk NAME : fresh sparse image
	rm -f "$dir/$1.img"
	truncate -s "$SIZE" "$dir/$1.img"
}
q() { "$@" >/dev/null 2>"$dir/mkfs.err" || { cat "$dir/mkfs.err" >&2; exit 1; }; }

if wanted xfs16k; then mk xfs16k; q mkfs.xfs -q -f -L xfs16k -b size=16k -s size=4k "$dir/xfs16k.img"; fi
if wanted xfs4k; then mk xfs4k; q mkfs.xfs -q -f -L xfs4k -b size=4k -s size=4k "$dir/xfs4k.img"; fi
if wanted ext4; then mk ext4; q mkfs.ext4 -q -F -L ext4 -b 4096 "$dir/ext4.img"; fi
if wanted xfsrt; then
	mk xfsrt; mk xfsrtdev
	q mkfs.xfs -q -f -L xfsrt -b size=4k -s size=4k -d rtinherit=1 \
		-r rtdev="$dir/xfsrtdev.img",extsize="$RT_EXTSIZE" "$dir/xfsrt.img"
fi
if wanted ext4bigalloc; then
	mk ext4bigalloc
	q mkfs.ext4 -q -F -L ext4bigalloc -b 4096 -O bigalloc -C 16384 "$dir/ext4bigalloc.img"
fi
if wanted ext4j; then mk ext4j; q mkfs.ext4 -q -F -L ext4j -b 4096 "$dir/ext4j.img"; fi
if wanted raw; then mk raw; fi
rm -f "$dir/mkfs.err"
echo "$dir"

#!/bin/bash
# mkinitramfs.sh - build a busybox initramfs (cpio.gz) for the untorn test VM.
#
# usage: mkinitramfs.sh -o OUT.cpio.gz [-s SCRIPT] [FILE[:DEST] ...]
#
#   -o OUT      output archive (required)
#   -s SCRIPT   default command script, installed as /untorn/cmd (optional;
#               boot.sh normally appends its own /untorn/cmd per boot)
#   FILE[:DEST] extra files/binaries; DEST defaults to /bin/<basename>.
#               Dynamically linked ELF files get their shared libraries
#               (from ldd) and the ELF loader copied in at the same paths,
#               so the guest can run them.
#
# The guest /init (see INIT below):
#   mounts proc, sysfs, devtmpfs (+ tmpfs /tmp), picks the output channel (/dev/hvc0 = QEMU virtconsole,
#   a tty so stdio in the guest is line buffered, set raw), runs /untorn/cmd,
#   or the command from "untorn.cmd=PATH" on the kernel command line, with
#   stdout+stderr on the channel, then writes "@@UNTORN-EXIT <status>" and
#   powers off (poweroff -f).
set -euo pipefail

out=""
script=""
while getopts "o:s:h" opt; do
	case $opt in
	o) out=$OPTARG ;;
	s) script=$OPTARG ;;
	*) sed -n '2,20p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ -n "$out" ] || { echo "mkinitramfs.sh: -o OUT required" >&2; exit 2; }

ensure_pkg() {  # ensure_pkg PACKAGE  (idempotent)
	dpkg -s "$1" >/dev/null 2>&1 && return 0
	echo "mkinitramfs.sh: installing $1" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >&2
}
ensure_pkg busybox-static
ensure_pkg cpio
BUSYBOX=/bin/busybox
file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' ||
	{ echo "mkinitramfs.sh: $BUSYBOX is not static (install busybox-static)" >&2; exit 1; }

stage=$(mktemp -d /tmp/untorn-initramfs.XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,mnt,untorn,etc,lib,lib64,root}
cp "$BUSYBOX" "$stage/bin/busybox"
# Static symlinks for every applet (so /init needs no --install at boot).
for a in $("$BUSYBOX" --list-full); do
	[ -e "$stage/$a" ] || ln -s /bin/busybox "$stage/$a"
done

copy_file() {  # copy_file SRC DEST-IN-IMAGE
	mkdir -p "$stage/$(dirname "$2")"
	cp -L "$1" "$stage/$2"
}

copy_libs() {  # copy_libs ELF : copy shared libs + loader at their own paths
	local f=$1 lib
	file -L "$f" | grep -q 'dynamically linked' || return 0
	for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ )]*'); do
		[ -e "$stage/$lib" ] || copy_file "$lib" "$lib"
	done
}

for spec in "$@"; do
	src=${spec%%:*}
	dest=${spec#*:}
	[ "$dest" = "$spec" ] && dest=/bin/$(basename "$src")
	[ -e "$src" ] || { echo "mkinitramfs.sh: no such file: $src" >&2; exit 1; }
	copy_file "$src" "$dest"
	chmod +x "$stage/$dest" 2>/dev/null || true
	copy_libs "$src"
done
[ -n "$script" ] && { cp "$script" "$stage/untorn/cmd"; chmod +x "$stage/untorn/cmd"; }

cat >"$stage/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
EOF
echo "127.0.0.1 localhost" >"$stage/etc/hosts"

cat >"$stage/init" <<'INIT'
#!/bin/busybox sh
# untorn guest init: run one command, stream its output, report status, power off.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
[ -e /sys/kernel/debug ] && mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
hostname untorn-guest

# Output channel: the QEMU virtconsole (hvc0) when present, else the console
# (then the host must rely on the marker lines and filter kernel messages).
OUT=/dev/console
i=0
while [ ! -c /dev/hvc0 ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
if [ -c /dev/hvc0 ]; then
	OUT=/dev/hvc0
	stty -F /dev/hvc0 raw -echo 2>/dev/null
fi

cmd=""
if [ -f /untorn/cmd ]; then
	cmd=/untorn/cmd
else
	for w in $(cat /proc/cmdline); do
		case $w in untorn.cmd=*) cmd=${w#untorn.cmd=} ;; esac
	done
fi

cd /root
if [ -z "$cmd" ]; then
	echo "init: no /untorn/cmd and no untorn.cmd= on the kernel command line" >$OUT
	rc=127
elif [ -f "$cmd" ]; then
	chmod +x "$cmd" 2>/dev/null
	/bin/sh "$cmd" </dev/null >$OUT 2>&1
	rc=$?
else
	$cmd </dev/null >$OUT 2>&1
	rc=$?
fi
sync
# Marker on its own line (the leading newline guards against output that
# did not end with one; the host ignores empty lines right before it).
printf '\n@@UNTORN-EXIT %s\n' "$rc" >$OUT
sleep 0.2 2>/dev/null
poweroff -f
# not reached; never let init exit
while :; do sleep 1000; done
INIT
chmod +x "$stage/init"

mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) |
	gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
echo "mkinitramfs.sh: wrote $out ($(du -h "$out" | cut -f1))" >&2

#!/bin/bash
# mkroot.sh - assemble the guest root filesystem image that upstream fstests
# runs in (the test VM's own initramfs is busybox only; fstests' ./check
# needs bash, perl, gawk, coreutils, util-linux, e2fsprogs, ...).
#
# usage: mkroot.sh -o ROOT.img --fstests DIR --tools DIR [-s SIZE]
#
#   --fstests DIR  an fstests tree already built (ltp/fsx, src/ binaries);
#                  copied to /fstests in the image
#   --tools DIR    a prefix whose bin/ and sbin/ hold the userspace the tests
#                  need newer than Debian 12's (xfs_io with `pwrite -A` and
#                  the statx atomic fields, mkfs.xfs, fio >= 3.38); copied
#                  to /opt/fst, which comes first in the guest's PATH
#   -o ROOT.img    output: an ext4 image (sparse, SIZE default 3G) made with
#                  `mke2fs -d`, so no mount on the host is needed
#   --stage DIR    keep the assembled tree in DIR (empty or new) as well, e.g.
#                  to try it with `chroot DIR /bin/bash` on the host
#
# Contents: every file that the host's Debian packages listed in PKGS
# install under bin/, sbin/, lib/ (the host's own binaries: same libc as the
# tools built on this host), plus the shared libraries of every ELF file in
# the image (ldd closure), plus /etc basics.  Nothing is downloaded.
set -euo pipefail

out="" fst="" tools="" size=3G keep=""
while [ $# -gt 0 ]; do
	case $1 in
	-o) out=$2; shift 2 ;;
	--fstests) fst=$2; shift 2 ;;
	--tools) tools=$2; shift 2 ;;
	-s) size=$2; shift 2 ;;
	--stage) keep=$2; shift 2 ;;
	*) sed -n '2,24p' "$0" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] && [ -d "$fst/ltp" ] && [ -d "$tools" ] || { sed -n '2,24p' "$0" >&2; exit 2; }
[ -x "$fst/ltp/fsx" ] || { echo "mkroot.sh: $fst is not built (no ltp/fsx)" >&2; exit 1; }

# Debian packages whose programs fstests' common/ code and these tests call.
PKGS="dash bash coreutils util-linux mount gawk sed grep bc perl-base findutils
diffutils e2fsprogs attr acl procps psmisc hostname xz-utils gzip libc-bin
bsdutils bsdextrautils debianutils tar ncurses-bin sysvinit-utils xxd file
libmagic1 libmagic-mgc"

if [ -n "$keep" ]; then
	mkdir -p "$keep"; [ -z "$(ls -A "$keep")" ] || { echo "mkroot.sh: $keep not empty" >&2; exit 1; }
	stage=$(cd "$keep" && pwd)
else
	stage=$(mktemp -d /var/tmp/fstests-root.XXXXXX)
	trap 'rm -rf "$stage"' EXIT
fi
# Debian 12 is merged-/usr: keep the same symlinks so packaged paths work.
mkdir -p "$stage"/usr/{bin,sbin,lib,lib64} "$stage"/{etc,proc,sys,dev,tmp,mnt,root,run,var/tmp,opt}
ln -s usr/bin "$stage/bin"; ln -s usr/sbin "$stage/sbin"
ln -s usr/lib "$stage/lib"; ln -s usr/lib64 "$stage/lib64"

copy_path() {  # copy_path ABS-PATH : into the stage at the same path
	local p=$1 rel
	rel=${p#/}
	case $rel in bin/* | sbin/* | lib/* | lib64/*) rel=usr/$rel ;; esac
	[ -e "$stage/$rel" ] || [ -L "$stage/$rel" ] && return 0
	mkdir -p "$stage/$(dirname "$rel")"
	cp -a "$p" "$stage/$rel"
}

for pkg in $PKGS; do
	dpkg -s "$pkg" >/dev/null 2>&1 || { echo "mkroot.sh: host package $pkg missing, skipped" >&2; continue; }
	dpkg -L "$pkg" | while read -r f; do
		case $f in
		/bin/* | /sbin/* | /usr/bin/* | /usr/sbin/* | /lib/* | /usr/lib/* | /lib64/* | /usr/libexec/* | /usr/share/misc/* | /usr/share/file/*) ;;
		*) continue ;;
		esac
		[ -f "$f" ] || [ -L "$f" ] || continue
		copy_path "$f"
	done
done
# Debian's alternatives (/etc/alternatives/...) and dash's diverted
# /bin/sh are not in dpkg -L; xfs_info, xfs_admin, ... are /bin/sh scripts.
ln -sf gawk "$stage/usr/bin/awk"
ln -sf dash "$stage/usr/bin/sh"
for f in /etc/mke2fs.conf /etc/e2scrub.conf /etc/nsswitch.conf; do [ -e "$f" ] && copy_path "$f"; done

mkdir -p "$stage/opt/fst" "$stage/fstests"
cp -a "$tools/." "$stage/opt/fst/"
cp -a "$fst/." "$stage/fstests/"
rm -rf "$stage/fstests/results" "$stage/fstests/.git"

# Shared libraries of every ELF file in the stage, at their host paths.
find "$stage" -type f -perm -u+x -print0 | while IFS= read -r -d '' f; do
	file -b "$f" | grep -q 'ELF.*dynamically linked' || continue
	ldd "$f" 2>/dev/null | grep -o '/[^ )]*' | while read -r lib; do
		[ -e "$lib" ] || continue
		rel=${lib#/}
		case $rel in lib/* | lib64/*) rel=usr/$rel ;; esac
		[ -e "$stage/$rel" ] && continue
		mkdir -p "$stage/$(dirname "$rel")"
		cp -L "$lib" "$stage/$rel"
	done
done

cat >"$stage/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
fsgqa:x:1000:1000:fsgqa:/root:/bin/bash
P
cat >"$stage/etc/group" <<'G'
root:x:0:
daemon:x:1:
fsgqa:x:1000:
nogroup:x:65534:
G
echo untorn-guest >"$stage/etc/hostname"
echo "127.0.0.1 localhost untorn-guest" >"$stage/etc/hosts"
ln -s /proc/self/mounts "$stage/etc/mtab"

rm -f "$out"
truncate -s "$size" "$out"
mke2fs -q -t ext4 -O ^has_journal -L fstroot -d "$stage" "$out"
echo "mkroot.sh: wrote $out ($(du -h "$out" | cut -f1) used, $(find "$stage" | wc -l) files)" >&2

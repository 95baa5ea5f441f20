#!/bin/bash
# boot.sh - boot the untorn test VM (QEMU/TCG), run one guest command, stream
# its output to stdout live, exit with the guest command's exit status.
#
# usage: boot.sh -k BZIMAGE -i INITRAMFS [options] [--] COMMAND [ARGS...]
#        boot.sh -k BZIMAGE -i INITRAMFS [options] -f SCRIPT
#
#   -k BZIMAGE    guest kernel (or env KERNEL)
#   -i INITRAMFS  base initramfs from mkinitramfs.sh (or env INITRAMFS)
#   -f SCRIPT     guest shell script to run (else COMMAND ARGS...; a single
#                 COMMAND argument is taken as a shell command line)
#   -a ARGS       extra kernel command-line arguments (repeatable), e.g.
#                 "nvme_core.test_awupf=3" or "scsi_debug.atomic_wr=1 ..."
#   -d DIR        attach every DIR/*.img as an NVMe controller, serial = image
#                 name without .img (default: ${UNTORN_VM_DIR:-/var/tmp/untorn-vm}/disks
#                 if it exists; -d none = no disks)
#   -D NAME=IMG   attach one image as NVMe with serial NAME (repeatable)
#   -W OPTS       extra -drive options for every disk, comma-separated
#                 (repeatable), e.g. "throttling.iops-write=400" so that
#                 writes are still in flight when a crash harness kills QEMU
#   -x NAME=PROPS extra -drive properties for disk NAME ('*' = every disk),
#                 appended after -W's (repeatable), e.g. a device
#                 model: -x 'xfs16k=cache.no-flush=on,throttling.bps-write=4000000'
#   -t SECS       timeout; QEMU is always killed after it (default 300)
#   -m MEM        guest RAM (default 1536M)      -c N  vCPUs (default 2)
#   -P PIDFILE    write QEMU's pid here (for a crash harness that kills it)
#   -Q SOCKET     a QMP monitor on this unix socket (e.g. to change a disk's
#                 throttle while the guest runs: crashtests/qmp-throttle.py)
#   -o DIR        keep run files (console.log, out.log) in DIR (default: temp,
#                 removed unless KEEP=1)
#   VERBOSE=1     also copy the kernel console to stderr live
#
# Channel: the guest command's stdout+stderr go to a QEMU virtconsole
# (guest /dev/hvc0, a tty, so guest stdio is line buffered) whose chardev is
# a host file that is followed line by line (tail -F) and copied to stdout as
# it grows.  The kernel console is on ttyS0 -> console.log, never on stdout.
# The guest init ends with a marker line "@@UNTORN-EXIT <rc>" which is
# consumed here and becomes this script's exit status.
# Exit: guest status; 124 = timeout; 125 = QEMU ended without the marker
# (guest panic / crash / QEMU killed from outside, e.g. via -P); 2 = usage.
set -uo pipefail

kernel=${KERNEL:-}
initrd=${INITRAMFS:-}
script=""
kargs=()
disk_dir=""
disks=()
drive_opts=""
xprops=()
timeout_s=${BOOT_TIMEOUT:-300}
mem=${VM_MEM:-1536M}
cpus=${VM_CPUS:-2}
pidfile=""
rundir=""
qmp=()

usage() { sed -n '2,40p' "$0" >&2; exit 2; }
while getopts "k:i:f:a:d:D:W:x:t:m:c:P:Q:o:h" opt; do
	case $opt in
	k) kernel=$OPTARG ;;
	i) initrd=$OPTARG ;;
	f) script=$OPTARG ;;
	a) kargs+=("$OPTARG") ;;
	d) disk_dir=$OPTARG ;;
	D) disks+=("$OPTARG") ;;
	W) drive_opts+=",$OPTARG" ;;
	x) xprops+=("$OPTARG") ;;
	t) timeout_s=$OPTARG ;;
	m) mem=$OPTARG ;;
	c) cpus=$OPTARG ;;
	P) pidfile=$OPTARG ;;
	Q) qmp=(-qmp "unix:$OPTARG,server=on,wait=off") ;;
	o) rundir=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ -n "$kernel" ] && [ -f "$kernel" ] || { echo "boot.sh: kernel '$kernel' not found (-k)" >&2; usage; }
[ -n "$initrd" ] && [ -f "$initrd" ] || { echo "boot.sh: initramfs '$initrd' not found (-i)" >&2; usage; }
[ -n "$script" ] || [ $# -gt 0 ] || { echo "boot.sh: no guest command" >&2; usage; }

if [ -z "$rundir" ]; then
	rundir=$(mktemp -d /tmp/untorn-boot.XXXXXX)
	[ "${KEEP:-0}" = 1 ] || cleanup_rundir=1
fi
mkdir -p "$rundir"
out=$rundir/out.log
console=$rundir/console.log
: >"$out"
: >"$console"
rm -f "$rundir/rc"

# Per-boot initramfs = base archive + a small appended cpio holding /untorn/cmd
# (the kernel unpacks concatenated gzip'd cpio archives in order).
stage=$(mktemp -d /tmp/untorn-cmd.XXXXXX)
mkdir -p "$stage/untorn"
if [ -n "$script" ]; then
	cp "$script" "$stage/untorn/cmd"
elif [ $# -eq 1 ]; then
	printf '%s\n' "$1" >"$stage/untorn/cmd"
else
	{ printf 'exec'; printf ' %q' "$@"; printf '\n'; } >"$stage/untorn/cmd"
fi
chmod +x "$stage/untorn/cmd"
(cd "$stage" && find untorn | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$rundir/cmd.cpio.gz"
rm -rf "$stage"
cat "$initrd" "$rundir/cmd.cpio.gz" >"$rundir/initrd.img"

# Disks.
if [ -z "$disk_dir" ] && [ ${#disks[@]} -eq 0 ]; then
	disk_dir=${UNTORN_VM_DIR:-/var/tmp/untorn-vm}/disks
	[ -d "$disk_dir" ] || disk_dir=none
fi
if [ -n "$disk_dir" ] && [ "$disk_dir" != none ]; then
	for img in "$disk_dir"/*.img; do
		[ -e "$img" ] || continue
		disks+=("$(basename "$img" .img)=$img")
	done
fi
qdisk=()
n=0
for d in "${disks[@]}"; do
	name=${d%%=*}
	img=${d#*=}
	extra=$drive_opts
	for x in "${xprops[@]}"; do
		case ${x%%=*} in "$name" | "*") extra+=",${x#*=}" ;; esac
	done
	qdisk+=(-drive "file=$img,if=none,id=d$n,format=raw,cache=none,aio=native$extra"
		-device "nvme,serial=$name,drive=d$n,logical_block_size=4096,physical_block_size=4096")
	n=$((n + 1))
done

# QEMU always writes a pidfile (ours, or the caller's -P one).
[ -n "$pidfile" ] || pidfile=$rundir/qemu.pid
rm -f "$pidfile"
qpid=(-pidfile "$pidfile")

# no_timer_check: on a loaded host TCG can miss the early IO-APIC timer
# check's ticks, and the kernel panics ("IO-APIC + timer doesn't work!",
# seen at load average 32, both boots of one bench run); the check finds
# broken hardware, which QEMU's emulated timer is not.
cmdline="console=ttyS0,115200 quiet loglevel=3 panic=-1 oops=panic no_timer_check rdinit=/init ${kargs[*]}"

# One boot: QEMU in the background, the guest output streamed to stdout
# (marker line dropped, status saved in $rundir/rc), until QEMU exits.
boot_once() {
	rm -f "$out" "$console" "$rundir/rc" "$rundir/qemu.rc" "$pidfile"
	: >"$out"
	start=$(date +%s.%N)
	# The braces make the background job a subshell that exits normally,
	# so bash prints no "Killed" job notice when QEMU is killed from outside.
	{ timeout -k 5 "$timeout_s" qemu-system-x86_64 \
		-accel tcg,thread=multi -M pc -cpu max -smp "$cpus" -m "$mem" \
		-display none -vga none -monitor none -no-reboot -nodefaults \
		-serial "file:$console" \
		-kernel "$kernel" -initrd "$rundir/initrd.img" -append "$cmdline" \
		-device virtio-serial-pci,id=vser0 \
		-chardev "file,id=untornout,path=$out,append=on" \
		-device virtconsole,chardev=untornout,name=untorn.out \
		"${qdisk[@]}" "${qpid[@]}" "${qmp[@]}" \
		</dev/null >"$rundir/qemu.stderr" 2>&1; echo $? >"$rundir/qemu.rc"; } 2>/dev/null &
	tpid=$!
	trap '[ -s "$pidfile" ] && kill -TERM "$(cat "$pidfile")" 2>/dev/null' INT TERM HUP

	if [ "${VERBOSE:-0}" = 1 ]; then
		tail -n +1 -F --pid=$tpid "$console" 2>/dev/null >&2 &
	fi

	# Stream the guest output; drop the marker (and the blank line before it).
	# tail checks every -s seconds whether QEMU is gone (default 1 s: up
	# to a second lost per boot, which a crash harness pays on every kill).
	tail -n +1 -F -s 0.1 --pid=$tpid "$out" 2>/dev/null | {
		blank=0
		while IFS= read -r line || [ -n "$line" ]; do
			line=${line%$'\r'}
			case $line in
			*"@@UNTORN-EXIT "*)
				pre=${line%%@@UNTORN-EXIT *}
				[ -n "$pre" ] && printf '%s\n' "$pre"
				printf '%s\n' "${line##*@@UNTORN-EXIT }" >"$rundir/rc"
				blank=0
				continue ;;
			"")
				[ $blank = 1 ] && printf '\n'
				blank=1
				continue ;;
			esac
			[ $blank = 1 ] && printf '\n'
			blank=0
			printf '%s\n' "$line"
		done
	}
	wait $tpid
	qrc=$(cat "$rundir/qemu.rc" 2>/dev/null || echo 125)
	end=$(date +%s.%N)
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
}

boot_once
# A kernel that panics before the guest init has printed anything, and not
# at the timeout: once in many boots, multi-threaded TCG lets a vCPU run a
# stale translation of code the other vCPU is live-patching, and the guest
# dies on an int3 in early boot ("Oops: int3" in sched_clock_cpu).  Boot once
# more, saying so; a kernel that really cannot boot fails twice.
if [ ! -s "$rundir/rc" ] && [ ! -s "$out" ] && [ "$qrc" != 124 ] &&
	grep -q 'Kernel panic' "$console" 2>/dev/null; then
	echo "boot.sh: the kernel panicked before userspace (console tail below);" \
		"booting once more" >&2
	tail -n 12 "$console" >&2
	cp "$console" "$rundir/console.first-boot.log"
	boot_once
fi

if [ -s "$rundir/rc" ]; then
	rc=$(tr -dc '0-9' <"$rundir/rc")
	rc=${rc:-125}
	echo "boot.sh: guest exit status $rc, VM ran ${secs}s" >&2
elif [ $qrc = 124 ] || { [ $qrc = 137 ] && awk -v a="$secs" -v t="$timeout_s" 'BEGIN{exit !(a >= t)}'; }; then
	# 124: timeout(1) expired and QEMU obeyed SIGTERM; 137 after the full
	# timeout: it needed SIGKILL.  137 earlier = QEMU killed from outside.
	rc=124
	echo "boot.sh: TIMEOUT after ${timeout_s}s, QEMU killed; console tail:" >&2
	tail -n 30 "$console" >&2
else
	rc=125
	echo "boot.sh: QEMU exited ($qrc) without guest exit marker after ${secs}s; console tail:" >&2
	tail -n 40 "$console" >&2
	cat "$rundir/qemu.stderr" >&2
fi
[ "${cleanup_rundir:-0}" = 1 ] && rm -rf "$rundir"
exit "$rc"

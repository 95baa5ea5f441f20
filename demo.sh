#!/usr/bin/env bash
# untorn's main job, the demo: installs what it needs, builds the engine and
# the kernel series (cached), boots the patched kernel in QEMU (TCG) with
# NVMe disks formatted XFS 16 KiB, XFS 4 KiB and ext4, and shows
#   1. the protection mode untorn picks on each filesystem, and why;
#   2. a short durable-update benchmark: atomic vs double-write vs unsafe;
#   3. a crash run: the VM is killed (SIGKILL to QEMU) while the workload
#      commits, booted again, and the recovered database is checked against
#      an SQLite oracle, for atomic mode on XFS 16 KiB and double-write on ext4.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
VM=$ROOT/kernel-series/vm
. "$VM/config.sh"
DEMO=$UNTORN_VM_DIR/demo
mkdir -p "$DEMO"
say() { printf '\n\033[1m### %s\033[0m\n' "$*"; }

say "dependencies"
bash scripts/install-deps.sh

say "build the engine, CLI, benchmark and crash workload"
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DUT_BUILD_TESTS=OFF >/dev/null
cmake --build build-demo -j"$(nproc)" >/dev/null
B=$ROOT/build-demo

say "kernel: linux-source-6.12 + kernel-series (cached by hash)"
kernels=$(bash kernel-series/build.sh)
PATCHED=$(sed -n 's/^PATCHED=//p' <<<"$kernels")
echo "patched kernel: $PATCHED"

say "guest image and disks"
DISK_SIZE=2G bash "$VM/mkdisks.sh" "$DEMO/disks" >/dev/null
bash "$VM/mkinitramfs.sh" -o "$DEMO/initramfs.cpio.gz" \
	"$B/untorn:/bin/untorn" "$B/bench/bench_durable:/bin/bench_durable" \
	"$B/crash_workload:/bin/crash_workload" \
	"$ROOT/scripts/demo-guest.sh:/bin/demo-guest.sh" >/dev/null
boot() { # boot TIMEOUT [boot.sh options] -- guest command
	local t=$1
	shift
	bash "$VM/boot.sh" -k "$PATCHED" -i "$DEMO/initramfs.cpio.gz" \
		-d "$DEMO/disks" -t "$t" -a "$NVME_AID_PARAM=$NVME_AID_ON" "$@"
}

say "boot 1: mode selection and a short benchmark (QEMU/TCG, $NVME_AID_PARAM=$NVME_AID_ON)"
boot 900 -- /bin/demo-guest.sh modes

crash_run() { # crash_run FS MODE COMMITS
	local fs=$1 mode=$2 target=$3 acked=0 line
	say "crash run: $mode on $fs: kill QEMU after $target acknowledged commits"
	rm -f "$DEMO/qemu.pid"
	# boot.sh's own complaint about the missing exit marker is expected
	# after the kill: keep its stderr out of the way.
	exec 3< <(boot 600 -P "$DEMO/qemu.pid" -- /bin/demo-guest.sh crash "$fs" "$mode" \
		2>"$DEMO/crash-$fs.boot.err")
	while IFS= read -r line <&3; do
		case $line in
		"committed "*) acked=${line#committed } ;;
		*) echo "  guest: $line" ;;
		esac
		if ((acked >= target)); then
			kill -9 "$(cat "$DEMO/qemu.pid")"
			break
		fi
	done
	exec 3<&-
	echo "QEMU killed (SIGKILL) after 'committed $acked'"
	sleep 1
	say "boot again: recover and check against the SQLite oracle"
	boot 600 -- /bin/demo-guest.sh verify "$fs" "$mode" "$acked"
}
crash_run xfs16k atomic $((150 + RANDOM % 150))
crash_run ext4 doublewrite $((150 + RANDOM % 150))
say "demo done"

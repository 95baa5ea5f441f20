#!/usr/bin/env bash
# bench/vm-bench.sh - untorn's torn-page protections (atomic writes,
# double-write, full-page images in the log) against each other in the VM,
# on a device model that makes the emulated disk (not TCG) the bottleneck,
# with the peers beside them and the raw device as the ceiling.
#
# One command: installs what is missing, builds the engine (Release, in
# build-vmbench/), takes the patched kernel (kernel-series/build.sh: cached,
# or built), makes the guest image and two fresh disks, boots the patched
# kernel once per device-model profile and runs, inside that one guest, on
# XFS with 16 KiB blocks (--fs: XFS realtime, ext4 bigalloc, ext4 too):
#   ceiling  raw_atomic: 16 KiB RWF_ATOMIC O_DIRECT writes at random aligned
#            offsets of the raw disk, fdatasync after each (before and after
#            each workload)
#   w1  durable single-put updates, 8 MiB of data, 2 MiB cache (4x: flush-bound)
#   w2  the same with 4 and 16 committing threads (1 thread = w1)
#   w3  durable single-put updates, 4 MiB of data in a 16 MiB cache
#   w4  bulk load into an empty database, 1000 puts per sync=1 transaction
#   w5  90% single gets, 10% durable single puts, data 4x the cache
# Each run opens the preloaded files themselves (bench_durable --no-copy:
# copies through the throttled disk would cost more than the runs), cold.
# Each w1 run ends in a kill (bench_durable --recover: no close) and the
# time to recover (open of the killed files to the first read, cold) is
# its "recovery after a kill" column.
# for the systems untorn atomic, doublewrite (forced), fullpage (page
# images in the log), unsafe, SQLite (WAL,
# 16 KiB pages, synchronous=FULL), LMDB (durable commits), RocksDB (WAL,
# sync=true), in interleaved rounds (bench_durable --rounds).
#
# Device model (QEMU -drive properties on both NVMe disks, boot.sh -x):
#   plp    a datacenter SSD with power-loss protection, scaled down:
#          throttling.bps-write=BPS (default 1.5 MB/s), iops-write=IOPS (1000
#          per s, in units of iops-size=16 KiB), cache.no-flush=on (a flush
#          costs nothing, as with a PLP drive's write cache)
#   flush  the same limits with real flushes: each guest flush is an
#          fdatasync of the image file on the host
# Reads are not throttled.  Absolute rates are emulated (QEMU/TCG, 2 vCPUs,
# on a shared 2-core host); the ratios and the bytes are the result.
#
# usage: bench/vm-bench.sh [--quick] [options]
#   --quick            CI/demo form: profile plp, w1 only, systems atomic,
#                      doublewrite, fullpage, unsafe, sqlite, 3 rounds
#                      (~9 min)
#   --profiles LIST    plp,flush (default both; --quick: plp)
#   --workloads LIST   for the first profile (default 1,2,3,4,5; --quick: 1)
#   --flush-workloads LIST  for the flush profile (default 1)
#   --systems LIST     default atomic,doublewrite,fullpage,unsafe,sqlite,lmdb,
#                      rocksdb
#   --flush-systems LIST  for the flush profile (default the first five)
#   --ckpt-sweep LIST  w1 runs every untorn system once per checkpoint
#                      interval in LIST (log bytes between checkpoints,
#                      bench_durable --ckpt-sweep, e.g. 1M,4M,16M,64M;
#                      rows "MODE@SIZE"): where fullpage and doublewrite
#                      cross
#   --rounds N         rounds of w1 (default 5; --quick 3), after a round 0
#                      that is run and logged but not counted (each system's
#                      first run after the preload runs slower, in -dw
#                      set-up and first-write effects)
#   --rounds-other N   rounds of w2..w5 (default 3)
#   --secs-w1 T        measured seconds per w1 run (default 15; --quick 12):
#                      long enough to average several checkpoints
#   --secs T --warmup W  per measured run of w2..w5 (default 8) and warm-up
#                      before each (default 3)
#   --bps N --iops N   device model limits (default 1500000, 1000)
#   --fs LIST          filesystems (default xfs16k): the first runs every
#                      profile and workload above; each further one (xfsrt:
#                      XFS realtime, 4 KiB blocks, 16 KiB rt extents;
#                      ext4bigalloc: 4 KiB blocks, 16 KiB clusters; ext4:
#                      4 KiB blocks, no atomic unit) runs profile plp,
#                      workload 1, as profile "plp-FS", with --fs-systems
#   --fs-systems LIST  default atomic,doublewrite,fullpage,unsafe,sqlite (ext4:
#                      without atomic)
#   --out DIR          results (default bench/results): NAME.csv, NAME.txt
#                      (summary), NAME.log (guest output), NAME-*.png
#   --name NAME        default vm-bench (--quick: vm-bench-quick)
#   --kernel BZIMAGE   default: kernel-series/build.sh (cached by hash)
# Environment: UNTORN_VM_DIR (images, default /var/tmp/untorn-vm) -> DIR/vmbench.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VM=$ROOT/kernel-series/vm
. "$VM/config.sh"

quick=0
profiles="" workloads="" flush_wl=1 systems="" flush_sys=atomic,doublewrite,fullpage,unsafe,sqlite rounds="" rounds_other=3
secs=8 secs1="" warm=3 bps=1500000 iops=1000 out=$ROOT/bench/results name="" kernel=${KERNEL:-}
fslist=xfs16k fs_systems=atomic,doublewrite,fullpage,unsafe,sqlite ckpt_sweep=""
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--profiles) profiles=$2; shift ;;
	--workloads) workloads=$2; shift ;;
	--flush-workloads) flush_wl=$2; shift ;;
	--systems) systems=$2; shift ;;
	--flush-systems) flush_sys=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--rounds-other) rounds_other=$2; shift ;;
	--secs) secs=$2; shift ;;
	--secs-w1) secs1=$2; shift ;;
	--warmup) warm=$2; shift ;;
	--bps) bps=$2; shift ;;
	--iops) iops=$2; shift ;;
	--fs) fslist=$2; shift ;;
	--fs-systems) fs_systems=$2; shift ;;
	--out) out=$2; shift ;;
	--name) name=$2; shift ;;
	--kernel) kernel=$2; shift ;;
	--ckpt-sweep) ckpt_sweep=$2; shift ;;
	-h | --help) sed -n '2,/^# Environment/p' "$0"; exit 0 ;;
	*) echo "vm-bench.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
if [ $quick = 1 ]; then
	: "${profiles:=plp}" "${workloads:=1}" "${systems:=atomic,doublewrite,fullpage,unsafe,sqlite}"
	: "${rounds:=3}" "${name:=vm-bench-quick}" "${secs1:=12}"
fi
: "${secs1:=15}"
: "${profiles:=plp,flush}" "${workloads:=1,2,3,4,5}" "${rounds:=5}" "${name:=vm-bench}"
: "${systems:=atomic,doublewrite,fullpage,unsafe,sqlite,lmdb,rocksdb}"
WORK=$UNTORN_VM_DIR/vmbench
mkdir -p "$WORK" "$out"
t_start=$(date +%s)
say() { printf '\n### %s\n' "$*" >&2; }

say "dependencies"
bash scripts/install-deps.sh >&2

say "build (Release, build-vmbench/)"
cmake -S . -B build-vmbench -DCMAKE_BUILD_TYPE=Release -DUT_BUILD_TESTS=OFF >/dev/null
cmake --build build-vmbench -j"$(nproc)" --target untorn bench_durable raw_atomic >/dev/null
B=$ROOT/build-vmbench
for lib in lmdb rocksdb; do
	case ",$systems," in *",$lib,"*)
		"$B/bench/bench_durable" --help | grep -q "$lib" ||
			{ echo "vm-bench.sh: bench_durable built without $lib (lib$lib-dev missing?)" >&2; exit 1; } ;;
	esac
done

say "kernel"
if [ -z "$kernel" ]; then
	kernel=$(bash kernel-series/build.sh --print 2>/dev/null | sed -n 's/^PATCHED=//p') ||
		true
	[ -n "$kernel" ] || kernel=$(bash kernel-series/build.sh | sed -n 's/^PATCHED=//p')
fi
[ -f "$kernel" ] || { echo "vm-bench.sh: no patched kernel ($kernel)" >&2; exit 1; }
echo "patched kernel: $kernel" >&2

say "guest image"
bash "$VM/mkinitramfs.sh" -o "$WORK/initramfs.cpio.gz" \
	"$B/untorn:/bin/untorn" "$B/bench/bench_durable:/bin/bench_durable" \
	"$B/bench/raw_atomic:/bin/raw_atomic" "$ROOT/bench/vm-guest.sh:/bin/vm-guest.sh" >&2

commit=$(git rev-parse --short HEAD)
dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo "+dirty" || true)
stamp=$(date -u '+%Y-%m-%d %H:%M UTC')
csv=$out/$name.csv
log=$out/$name.log
summary=$out/$name.txt
: >"$log"
echo "profile,wl,round,workload,system,threads,ops,commits,secs,ops_s,p50_us,p99_us,p999_us,dev_wbytes,dev_wreqs,dev_flushes,page_bytes,dw_bytes,log_bytes,syncs,rss_kib,cpu_busy,note,recover_s" >"$csv"

# Guest command script for one boot: the workloads of LIST, each between two
# ceiling runs.  "wl,NAME" lines tell the host which workload follows.
guest_script() { # guest_script LIST ROUNDS1 ROUNDS_OTHER SYSTEMS FS
	local w
	echo "/bin/vm-guest.sh setup $5 || exit 3"
	for w in ${1//,/ }; do
		local args r=$3 t=$secs
		case $w in
		1) args="-W update -s 8M -c 2 --warm-round --recover${ckpt_sweep:+ --ckpt-sweep $ckpt_sweep}"
		   r=$2 t=$secs1 ;;
		2) args="-W update -s 8M -c 2 --threads 4,16" ;;
		3) args="-W update -s 4M -c 16" ;;
		4) args="-W load -s 8M -c 2 -b 1000" ;;
		5) args="-W mix -g 90 -s 8M -c 2" ;;
		*) echo "vm-bench.sh: unknown workload $w" >&2; exit 2 ;;
		esac
		[ "$w" = 4 ] && args+=" -w 0" || args+=" -w $warm"
		echo "echo wl,ceiling; /bin/vm-guest.sh raw $secs 0"
		echo "echo wl,w$w; /bin/vm-guest.sh bench $5 $args -t $t -m $4 --rounds $r --no-copy"
	done
	echo "echo wl,ceiling; /bin/vm-guest.sh raw $secs 0"
}

# Fresh, fully allocated images (no host hole-filling in the measured runs),
# written in full by mkfs (no lazy initialisation during the runs).
make_disks() { # make_disks FS
	rm -f "$WORK"/*.img
	fallocate -l 1G "$WORK/$1.img"
	fallocate -l 256M "$WORK/raw.img"
	case $1 in
	xfs16k) mkfs.xfs -q -f -K -L xfs16k -b size=16k -s size=4k "$WORK/$1.img" ;;
	xfsrt)
		fallocate -l 1G "$WORK/xfsrtdev.img"
		mkfs.xfs -q -f -K -L xfsrt -b size=4k -s size=4k -d rtinherit=1 \
			-r rtdev="$WORK/xfsrtdev.img",extsize=16k "$WORK/$1.img" ;;
	ext4bigalloc) mkfs.ext4 -q -F -L ext4bigalloc -b 4096 -O bigalloc -C 16384 \
			-E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$WORK/$1.img" ;;
	ext4) mkfs.ext4 -q -F -L ext4 -b 4096 \
			-E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$WORK/$1.img" ;;
	*) echo "vm-bench.sh: unknown filesystem $1" >&2; exit 2 ;;
	esac >/dev/null
}

# One boot per run: LABEL:PROFILE:FS:WORKLOADS:SYSTEMS
runs=()
first_fs=${fslist%%,*}
for prof in ${profiles//,/ }; do
	label=$prof
	[ "$first_fs" = xfs16k ] || label=$prof-$first_fs
	case $prof in
	plp) runs+=("$label:$prof:$first_fs:$workloads:$systems") ;;
	flush) runs+=("$label:$prof:$first_fs:$flush_wl:$flush_sys") ;;
	*) echo "vm-bench.sh: unknown profile $prof" >&2; exit 2 ;;
	esac
done
for fs in $(echo "${fslist#"$first_fs"}" | tr , ' '); do
	sys=$fs_systems
	[ "$fs" = ext4 ] && sys=$(echo ",$sys," | sed 's/,atomic,/,/; s/^,//; s/,$//')
	runs+=("plp-$fs:plp:$fs:1:$sys")
done

for run in "${runs[@]}"; do
	IFS=: read -r label prof fs wl sys <<<"$run"
	case $prof in
	plp) model="cache.no-flush=on" ;;
	flush) model="cache.no-flush=off" ;;
	esac
	model+=",throttling.bps-write=$bps,throttling.iops-write=$iops,throttling.iops-size=16384"
	say "run $label: $fs, fresh disks, device model $model"
	make_disks "$fs"
	disks=(-D "$fs=$WORK/$fs.img" -x "$fs=$model" -D "raw=$WORK/raw.img" -x "raw=$model")
	[ "$fs" = xfsrt ] && disks+=(-D "xfsrtdev=$WORK/xfsrtdev.img" -x "xfsrtdev=$model")
	guest_script "$wl" "$rounds" "$rounds_other" "$sys" "$fs" >"$WORK/guest-$label.sh"
	echo "guest script:" >&2
	sed 's/^/  /' "$WORK/guest-$label.sh" >&2
	# time limit: generous (TCG on a shared host), so a slow host still ends:
	# 75 s per run beyond its measured and warm-up seconds, every round
	# counted with its round 0; w1 runs each untorn mode once per interval
	nsys=$(echo "${sys//,/ }" | wc -w)
	nut=$(echo ",$sys," | grep -o ',\(atomic\|doublewrite\|fullpage\|unsafe\)' | wc -l)
	nck=$(echo "${ckpt_sweep//,/ }" | wc -w)
	tmo=600
	for w in ${wl//,/ }; do
		case $w in
		1) tmo=$((tmo + (rounds + 1) * (nsys - nut + nut * (nck > 0 ? nck : 1)) * (secs1 + warm + 75))) ;;
		2) tmo=$((tmo + rounds_other * nsys * 2 * (secs + warm + 75))) ;;
		*) tmo=$((tmo + rounds_other * nsys * (secs + warm + 75))) ;;
		esac
	done
	say "boot: patched kernel, $NVME_AID_PARAM=$NVME_AID_ON (16 KiB atomic unit), timeout ${tmo}s"
	set +e
	bash "$VM/boot.sh" -k "$kernel" -i "$WORK/initramfs.cpio.gz" -t "$tmo" \
		-a "$NVME_AID_PARAM=$NVME_AID_ON" "${disks[@]}" -f "$WORK/guest-$label.sh" |
		{ echo "=== profile $label ($fs): $model" >>"$log"; tee -a "$log"; } |
		awk -v p="$label" -v csv="$csv" -F, '/^wl,/ { wl = $2; next }
			/^csv,/ { sub(/^csv,/, ""); print p "," wl "," $0 >>csv; fflush(csv); next }
			{ print; fflush() }'
	rc=${PIPESTATUS[0]}
	set -e
	[ "$rc" = 0 ] || { echo "vm-bench.sh: guest failed (exit $rc), see $log" >&2; exit 1; }
done

say "summary"
{
	echo "vm-bench: $stamp, commit $commit$dirty, kernel $(basename "$kernel"), QEMU $(qemu-system-x86_64 --version | head -1 | awk '{print $4}') TCG"
	echo "command: bench/vm-bench.sh $([ $quick = 1 ] && echo --quick) $([ "$fslist" = xfs16k ] || echo "--fs $fslist ")$([ -z "$ckpt_sweep" ] || echo "--ckpt-sweep $ckpt_sweep ")(systems $systems, profiles $profiles, workloads $workloads, flush-profile workloads $flush_wl, w1 rounds $rounds x $secs1 s, other rounds $rounds_other x $secs s, ${warm} s warm-up each)"
	echo "device model: NVMe; filesystems $fslist (profiles plp and flush on $first_fs; plp-FS on FS); throttling.bps-write=$bps, iops-write=$iops per iops-size=16384; plp: cache.no-flush=on; flush: real flushes (host fdatasync)"
	echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (host load average at the end; 2 host cores shared with other jobs: rates are emulated and noisy)"
	echo
	bash "$ROOT/bench/vm-report.sh" "$csv" "$bps"
} | tee "$summary"
plots=$(bash "$ROOT/bench/vm-plot.sh" "$csv" "$out/$name" "$commit$dirty" "$stamp" 2>&1 >/dev/null) ||
	echo "vm-bench.sh: plots failed: $plots" >&2
t_end=$(date +%s)
{
	echo "vm-bench.sh: done in $((t_end - t_start)) s; $csv, $summary, $log"
	echo "plots drawn by this run:"
	grep '\.png$' <<<"$plots" | sed 's/^/  /'
} | tee -a "$summary" >&2

#!/bin/bash
# vm-crash.sh - kill the untorn VM mid-write, many times, and check every
# recovery against an SQLite oracle (issue 12).
#
# usage: crashtests/vm-crash.sh --mode atomic|doublewrite|fullpage|unsafe|all --kills N
#            [--fs xfs16k|xfs4k|ext4|ext4bigalloc|xfsrt] [--seed S] [--jobs J]
#            [--iops N] [--threads N] [--cache BYTES] [--out DIR] [--aid-check]
#            [--quiet]
#        crashtests/vm-crash.sh --ci   # = --mode all --kills 5 --aid-check, EXTEND=20,
#                                      #   UNSAFE_MIN_SHARE=0
#
# A cycle: boot the patched kernel on the carried-over disk image; the guest
# (crashtests/vm-guest.sh, crashtests/vmcrash.c) checks what the previous
# kill left, then runs the workload, printing "start N", "committed N",
# "checkpoint N" and "flush B dirty=D ckpt=K" (the cleaner starts a batch of
# at most D pages); this script SIGKILLs QEMU either inside the in-place
# page writes of the 1st-3rd cleaner batch (EVENT_SHARE, 75% of the cycles:
# EVENT_LEAD_MS after its "flush" line, past doublewrite's copies, then a
# uniform point within D pages' requests at the throttled rate) or at a
# random moment 0.3-5.3 s into the workload.  A fresh
# database is first filled with WARMUP (200) transactions.  The next boot recovers and
# checks: open succeeded, ut_check clean, the database equals the oracle
# after exactly k transactions, last "committed" <= k <= last "start".  N
# kills take N+1 boots (the last one only checks).
#
# Tears are made possible: the guest sets max_sectors_kb=4 on the disk (a
# plain 16 KiB write = 4 requests, RWF_ATOMIC = 1) and QEMU throttles the
# drives under test (throttling.iops-write=N, --iops, default 100; not
# the oracle's), so writes are in flight when the kill lands.
#
# Verdicts: atomic, doublewrite and fullpage must have zero violations (a
# tear there is one too); doublewrite and fullpage (from the page images in
# its log) must repair torn pages in at least one cycle;
# unsafe (the negative control) must show torn pages -- a checksum failure
# at open, in ut_check or in the scan -- in at least UNSAFE_MIN_SHARE
# (default 0.1) of its cycles and in at least one, else the pass FAILS
# (the kills would not be reaching mid-write).  With EXTEND=E (--ci: 20)
# a mode whose control has not shown after N kills gets up to E more
# cycles, stopping at the first.  CONTROLS=reported (the demo's 3 kills)
# prints a missing control instead of failing on it.  --aid-check: one extra boot with the NVMe
# aid off (nvme_core.test_awupf=0), where --protect atomic must be refused.
#
# Output: DIR/cycles.csv (one line per cycle), DIR/summary.txt, per-job
# logs (DIR/<mode>-j<J>/); default DIR is $UNTORN_VM_DIR/crash/<time>.
# Exit 0 = every verdict as required, 1 = a violation or a failed control,
# 2 = usage, 3 = setup/harness error.
#
# Environment: KERNEL_PATCHED (else kernel-series/build.sh --print; this
# script never builds a kernel), UNTORN_VM_DIR (default /var/tmp/untorn-vm),
# UNSAFE_MIN_SHARE, EXTEND, WARMUP, CKPT_MIN/CKPT_MAX, KILL_PLAN
# (mixed|event|timed), EVENT_SHARE, EVENT_LINES, EVENT_LEAD_MS,
# EVENT_DELAY_MS, THROTTLE_FROM (ready|boot), BUILD_DIR (build-crash),
# PLANT=noimage (with --mode fullpage: the planted bug, no page images
# logged, so torn pages cannot be repaired; such a pass must FAIL).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
VM=$ROOT/kernel-series/vm
. "$VM/config.sh"

modes=""
kills=""
fs=xfs16k
seed=""
jobs=1
iops=${IOPS:-100}
threads=4
cache=1048576
out=""
aid_check=0
quiet=0
usage() { sed -n '2,51p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--mode) modes=${2:?}; shift ;;
	--kills) kills=${2:?}; shift ;;
	--fs) fs=${2:?}; shift ;;
	--seed) seed=${2:?}; shift ;;
	--jobs) jobs=${2:?}; shift ;;
	--iops) iops=${2:?}; shift ;;
	--threads) threads=${2:?}; shift ;;
	--cache) cache=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--aid-check) aid_check=1 ;;
	--quiet) quiet=1 ;;
	--ci) modes=${modes:-all}; kills=${kills:-5}; aid_check=1; EXTEND=${EXTEND:-20}
	      UNSAFE_MIN_SHARE=${UNSAFE_MIN_SHARE:-0} ;;
	-h|--help) usage ;;
	*) echo "vm-crash.sh: unknown argument $1" >&2; usage ;;
	esac
	shift
done
[ -n "$modes" ] && [ -n "$kills" ] || usage
# (all: the three modes of the CI pass; fullpage is asked for by name)
[ "$modes" = all ] && modes="atomic doublewrite unsafe"
for m in $modes; do
	case $m in atomic|doublewrite|fullpage|unsafe) ;; *) echo "vm-crash.sh: bad mode $m" >&2; usage ;; esac
done
case $fs in xfs16k|xfs4k|ext4|ext4bigalloc|xfsrt) ;; *) echo "vm-crash.sh: bad fs $fs" >&2; usage ;; esac
[[ $kills =~ ^[0-9]+$ ]] && [ "$kills" -ge 1 ] || usage
[[ $jobs =~ ^[0-9]+$ ]] && [ "$jobs" -ge 1 ] || usage
seed=${seed:-$(( (RANDOM << 15) | RANDOM ))}
UNSAFE_MIN_SHARE=${UNSAFE_MIN_SHARE:-0.1}
# required: a pass without its controls (unsafe tears, doublewrite and fullpage repairs)
# FAILS.  reported (the demo): they are counted and printed, not required.
# --ci requires them, one at least (UNSAFE_MIN_SHARE=0: a share needs more
# cycles than a short pass has): at the 25-33% of unsafe cycles that tore
# with kills inside cleaner batches, 5 + 20 cycles show none in fewer than
# 1 pass in 1,000.  Violations fail either way.
CONTROLS=${CONTROLS:-required}
CKPT_MIN=${CKPT_MIN:-4} CKPT_MAX=${CKPT_MAX:-20}  # explicit checkpoint every C commits, C random
EXTEND=${EXTEND:-0}                    # extra cycles allowed for the controls
# A boot whose guest printed nothing (an early-boot hang or panic under a
# loaded host: the kernel never ran /init, so no disk was touched) is booted
# again, up to SILENT_RETRIES times per job, instead of ending the job.
SILENT_RETRIES=${SILENT_RETRIES:-3}
SILENT_TEST=${SILENT_TEST:-}           # harness test: boots (job-wide numbers) that fake silence
WARMUP=${WARMUP:-200}                  # transactions that fill a fresh database
KILL_PLAN=${KILL_PLAN:-mixed}          # mixed | event | timed (tests of the harness)
EVENT_SHARE=${EVENT_SHARE:-75}         # percent of the cycles (mixed plan) with an event kill
EVENT_DELAY_MS=${EVENT_DELAY_MS:-300}  # event window when a line gives no batch size
EVENT_LINES=${EVENT_LINES:-flush}      # lines that may trigger an event kill (a regex)
# Requests per page of a cleaner batch, which the throttle serves one per
# 1/iops s: unsafe writes 16 KiB in place (4 requests of max_sectors_kb=4),
# doublewrite its copy first (4, skipped: a kill there tears no page in
# place) and then in place (4), fullpage in place as unsafe (4: its page
# images went to the log with their commits), atomic one RWF_ATOMIC
# request (1).  An
# event kill lands uniformly within the batch's in-place writes, which
# start EVENT_LEAD_MS after the line (plus the copies): the batch first
# makes the log durable up to its pages (the WAL rule: commits of other
# threads), about 200 ms at 100 IOPS (measured: pages written by the
# batch, read raw after the kill, against the kill's delay).
EVENT_LEAD_MS=${EVENT_LEAD_MS:-200}
THROTTLE_FROM=${THROTTLE_FROM:-ready}  # ready | boot: see disk_args below
req_per_page() { case $1 in unsafe|doublewrite|fullpage) echo 4 ;; *) echo 1 ;; esac; }
req_skipped() { case $1 in doublewrite) echo 4 ;; *) echo 0 ;; esac; }
out=${out:-$UNTORN_VM_DIR/crash/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
say() { [ "$quiet" = 1 ] || printf '%s\n' "$*" >&2; }
now() { printf '%s' "$EPOCHREALTIME"; }
t_pass=$(now)

# ------------------------------------------------------------------ setup
B=$ROOT/${BUILD_DIR:-build-crash}
say "== build ($B)"
{ cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release -DUT_BUILD_TESTS=OFF \
	-DUT_BUILD_BENCH=OFF >/dev/null &&
	cmake --build "$B" -j"$(nproc)" --target vmcrash untorn >/dev/null; } ||
	{ echo "vm-crash.sh: build failed" >&2; exit 3; }

PATCHED=${KERNEL_PATCHED:-}
if [ -z "$PATCHED" ]; then
	PATCHED=$(bash "$ROOT/kernel-series/build.sh" --print 2>/dev/null | sed -n 's/^PATCHED=//p')
fi
[ -n "$PATCHED" ] && [ -f "$PATCHED" ] || {
	echo "vm-crash.sh: no patched kernel (set KERNEL_PATCHED or run kernel-series/build.sh)" >&2
	exit 3; }
say "== kernel $PATCHED"

# The pass's metadata (meta.txt, key=value), for the crash ledger
# (crashtests/ledger-add.sh, crash-table.sh): what ran, on which kernel and
# engine, with which options; pass_end and result are added at the end, so
# a pass stopped midway has none.
kcache=$(basename "$(dirname "$PATCHED")")
[[ $kcache =~ ^[0-9a-f]{16}$ ]] || kcache=unknown
series_key=$( (UNTORN_BUILD_LIB=1; . "$ROOT/kernel-series/build.sh"; compute_hash) 2>/dev/null || echo unknown)
fs_key=$(bash "$HERE/kernel-key.sh" "$fs" 2>/dev/null | awk '{print $2}')
{
	echo "pass_start=$(date -u +%FT%TZ)"
	echo "fs=$fs"
	echo "modes=$modes"
	echo "kills=$kills"
	echo "seed=$seed"
	echo "jobs=$jobs"
	echo "options=iops=$iops throttled=$fs$([ "$fs" = xfsrt ] && echo ,xfsrtdev) throttle_from=$THROTTLE_FROM initramfs=uncompressed threads=$threads cache=$cache warmup=$WARMUP ckpt_every=$CKPT_MIN-$CKPT_MAX kill_plan=$KILL_PLAN event_share=$EVENT_SHARE event_lines=$EVENT_LINES event_lead_ms=$EVENT_LEAD_MS extend=$EXTEND unsafe_min_share=$UNSAFE_MIN_SHARE controls=$CONTROLS aid_check=$aid_check max_sectors_kb=4 $NVME_AID_PARAM=$NVME_AID_ON"
	echo "kernel=$PATCHED"
	echo "kernel_cache_key=$kcache"
	echo "series_cache_key=$series_key"
	echo "fs_kernel_key=${fs_key:-unknown}"
	echo "fs_patches=$(awk -v fs="$fs" -F: '$1 == fs { sub(/^[^:]*:[[:space:]]*/, ""); print }' "$HERE/fs-patches")"
	echo "harness_commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- crashtests kernel-series/vm 2>/dev/null || echo -dirty)"
	# the newest commit (merges left out: a merge of main into a branch
	# would name itself) that changed the engine's sources, and a hash of
	# those sources' trees, which says exactly what ran
	epaths=(engine wal io include tools CMakeLists.txt crashtests/vmcrash.c)
	echo "engine_commit=$(git -C "$ROOT" log -1 --no-merges --format=%h --abbrev=12 -- "${epaths[@]}" 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- "${epaths[@]}" 2>/dev/null || echo -dirty)"
	echo "engine_tree=$(for p in "${epaths[@]}"; do git -C "$ROOT" rev-parse "HEAD:$p" 2>/dev/null; done | sha256sum | cut -c1-12)"
	echo "host=$(hostname) cores=$(nproc) load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/meta.txt"
[ "$kcache" = "$series_key" ] || say "== note: kernel cache key $kcache is not the series' $series_key"

# The initramfs is stored uncompressed: every boot unpacks it, and under
# TCG inflating its 3.5 MiB of gzip cost more than reading 7 MiB of cpio
# (phases.csv's kmsg_unpack .. kmsg_freed).
INITRD=$out/initramfs.cpio
bash "$VM/mkinitramfs.sh" -o "$INITRD.gz" "$B/vmcrash:/bin/vmcrash" \
	"$B/untorn:/bin/untorn" "$HERE/vm-guest.sh:/bin/vm-guest.sh" 2>/dev/null &&
	gzip -dc "$INITRD.gz" >"$INITRD" && rm -f "$INITRD.gz" ||
	{ echo "vm-crash.sh: mkinitramfs failed" >&2; exit 3; }

# Fresh images: the filesystem under test (and xfs16k for --aid-check;
# copied per job) and a small ext4 "oracle" disk that no
# kill ever finds mid-write (the oracle is written only before the run).
TEMPLATE=$out/template
DISK_SIZE=${DISK_SIZE:-1G} bash "$VM/mkdisks.sh" "$TEMPLATE" "$fs" \
	$([ "$aid_check" = 1 ] && echo xfs16k) >/dev/null ||
	{ echo "vm-crash.sh: mkdisks failed" >&2; exit 3; }
truncate -s 256M "$TEMPLATE/oracle.img"
mkfs.ext4 -q -F -L oracle -b 4096 "$TEMPLATE/oracle.img" >/dev/null ||
	{ echo "vm-crash.sh: mkfs oracle failed" >&2; exit 3; }
fs_images() { echo "$fs"; [ "$fs" = xfsrt ] && echo xfsrtdev; echo oracle; }
# The throttle is there so that a kill finds the tested disk's writes in
# flight: it is needed from the workload's start ("ready") to the kill,
# not before.  So the disks are attached in fs_images' order (the disk
# under test is QEMU drive d0, xfsrt's realtime device d1) without a
# throttle, and when the guest prints "throttle" (vmcrash --throttle-wait,
# after the check and the warm-up) qmp-throttle.py sets
# throttling.iops-write on the disks under test over QMP; the guest starts
# the workload once a probe write shows the throttle (THROTTLE_FROM=boot:
# throttled from the boot on, as before).  The oracle disk, written only
# during the check, is never throttled.
disk_args() { # disk_args DIR: boot.sh -D options, the disk under test first
	local img
	for img in $(fs_images); do
		printf '%s\0' -D "$img=$1/$img.img"
		[ "$THROTTLE_FROM" = boot ] && [ "$img" != oracle ] &&
			printf '%s\0' -x "$img=throttling.iops-write=$iops"
	done
}
throttle_drives=$(n=0; for img in $(fs_images); do [ "$img" != oracle ] && printf 'd%s ' "$n"; n=$((n + 1)); done)
# probe writes are 4 requests: throttled, >= 4/iops s; 3/4 of that
throttle_ms=$((3000 / iops))

# phases.csv (per job): one line per boot; times in s from the boot's start
# on the host clock: first guest line, disks found, filesystems mounted,
# verdict (the previous kill checked), ready (warm-up done), kill, boot.sh
# done; then the guest's uptime at init and the kernel's own timestamps of
# "Unpacking initramfs", "Freeing initrd memory" and "Run /init"; fresh = 1
# when this boot filled a new database (WARMUP transactions).
PHASES_HEAD="boot,t0,first_line,disks,mounted,verdict,ready,kill,end,guest_uptime_init,kmsg_unpack,kmsg_freed,kmsg_run_init,fresh"
CSV_HEAD="mode,fs,job,cycle,seed,epoch,kill,events_before_kill,ms_since_event,run_s,ready_from,acked,started,acked_in_cycle,k,verdict,open,check,bad_checksums,torn_repaired,corrupt_pages,verify_s,cycle_s,why"

# ------------------------------------------------------------------ one job
# run_job MODE JOB NCYCLES SEED: NCYCLES kill cycles on this job's image;
# writes $dir/cycles.csv.  Exit 0, or 3 on a harness error.
run_job() {
	local mode=$1 job=$2 ncyc=$3 jseed=$4
	local dir=$out/$mode-j$job img
	mkdir -p "$dir/disks"
	for img in $(fs_images); do
		cp --sparse=always "$TEMPLATE/$img.img" "$dir/disks/$img.img"
	done
	local csv=$dir/cycles.csv log=$dir/guest.log
	: >"$csv"
	: >"$log"
	echo "$PHASES_HEAD" >"$dir/phases.csv"
	RANDOM=$jseed
	local acked=0 started=0 have=0 c
	# the previous cycle's facts, written out when its verdict arrives
	local p_kill="" p_events=0 p_since="" p_run="" p_from=0 p_acked=0 p_started=0
	local p_t0=0 p_tkill=0

	local controls=0 extra=0 silent=0 nboot=0
	for ((c = 1; c <= ncyc + 1; c++)); do
		# The controls (a tear in unsafe, a repair in doublewrite) are
		# known one boot late; without one yet, run up to EXTEND more
		# cycles (stopping at the first), so that a control fails only
		# when many kills showed nothing.
		if ((c == ncyc + 1 && controls == 0 && extra < EXTEND)) &&
			[ "$mode" != atomic ]; then
			ncyc=$((ncyc + 1)); extra=$((extra + 1))
			echo "### control not seen yet: extra cycle $extra of $EXTEND" >>"$log"
			say "  $mode j$job: no $([ $mode = unsafe ] && echo tear || echo repair) yet: extra cycle $extra (of up to $EXTEND)"
		fi
		local last=$((c == ncyc + 1)) plan nth delay ckpt
		# event: kill the nth "flush" line's batch (the cleaner prints
		# it when the batch's I/O starts, with dirty=D >= its page count
		# B, B <= 128) at a point drawn now: EVENT_LEAD_MS (and the
		# copies, B * req_skipped / iops s), then efrac/1000 of the way
		# through the batch's in-place writes, B * req_per_page / iops s
		local efrac=$((RANDOM % 1000)) edelay="" rpp rskip
		rpp=$(req_per_page "$mode") rskip=$(req_skipped "$mode")
		local coin=$((RANDOM % 100 < EVENT_SHARE))
		[ "$KILL_PLAN" = event ] && coin=1
		[ "$KILL_PLAN" = timed ] && coin=0
		if ((coin)); then
			plan=event; nth=$((1 + RANDOM % 3)); delay=20
		else
			plan=timed; nth=0; delay=$(printf '%d.%03d' $((RANDOM % 5)) $((300 + RANDOM % 700)))
		fi
		ckpt=$((CKPT_MIN + RANDOM % (CKPT_MAX - CKPT_MIN + 1)))
		local gargs=(--seed "$jseed" --threads "$threads" --cache "$cache" --ckpt-every "$ckpt"
			--warmup "$WARMUP")
		[ "$THROTTLE_FROM" = ready ] && gargs+=(--throttle-wait "$throttle_ms")
		((have)) && gargs+=(--acked "$acked" --started "$started")
		((last)) && gargs+=(--verify-only)
		[ "${PLANT:-}" = noimage ] && [ "$mode" = fullpage ] && gargs+=(--plant noimage)
		local pidf=$dir/qemu.pid killf=$dir/killed
		rm -f "$pidf" "$killf"
		local t0 tready=0 events=0 tlast_event="" ready=0 verdict_line="" tverdict=0
		local from=0 c_acked=0 c_started=0 line fd timer="" etimer=""
		# host receive times of the stage lines (phases.csv) and the
		# guest's own clock at its init and kernel milestones
		local tfirst="" tdisks="" tmounted="" up_init="" k_unpack="" k_freed="" k_init=""
		# kill_after SECS KIND: SIGKILL QEMU after SECS unless a kill
		# came first (killf is created with noclobber: one kill wins)
		kill_after() {
			sleep "$1"
			( set -C; echo "$EPOCHREALTIME $2" >"$killf" ) 2>/dev/null || exit 0
			kill -9 "$(cat "$pidf")" 2>/dev/null
		}
		t0=$(now)
		echo "### cycle $c $(date -u +%FT%TZ) plan=$plan nth=$nth delay=$delay efrac=$efrac args=${gargs[*]}" >>"$log"
		local dargs thr_fail=0
		mapfile -d '' dargs < <(disk_args "$dir/disks")
		rm -f "$dir/qmp.sock"
		nboot=$((nboot + 1))
		if [[ " $SILENT_TEST " == *" $nboot "* ]]; then
			exec {fd}< <(sleep 1; echo "SILENT_TEST: boot $nboot faked silent" >"$dir/boot.err")
		else
		exec {fd}< <(bash "$VM/boot.sh" -k "$PATCHED" -i "$INITRD" "${dargs[@]}" \
			-Q "$dir/qmp.sock" -t 400 -P "$pidf" -o "$dir/boot" \
			-a "$NVME_AID_PARAM=$NVME_AID_ON" \
			-- /bin/vm-guest.sh cycle "$fs" "$mode" "${gargs[@]}" 2>"$dir/boot.err")
		fi
		local bootpid=$!
		while IFS= read -r -u "$fd" line; do
			echo "$line" >>"$log"
			[ -z "$tfirst" ] && tfirst=$EPOCHREALTIME
			case $line in
			"timing init uptime="*) up_init=${line##*=} ;;
			"timing disks "*) tdisks=$EPOCHREALTIME ;;
			"timing mounted "*) tmounted=$EPOCHREALTIME ;;
			"timing kmsg "*"Unpacking initramfs"*) k_unpack=${line#timing kmsg }; k_unpack=${k_unpack%% *} ;;
			"timing kmsg "*"Freeing initrd memory"*) k_freed=${line#timing kmsg }; k_freed=${k_freed%% *} ;;
			"timing kmsg "*"Run /init"*) k_init=${line#timing kmsg }; k_init=${k_init%% *} ;;
			"verdict "*) verdict_line=$line; tverdict=$(now) ;;
			throttle)
				# the workload is about to start: throttle the disks
				# under test now (the guest waits until it sees it)
				if ! /usr/bin/python3 "$HERE/qmp-throttle.py" "$dir/qmp.sock" "$iops" \
					$throttle_drives >>"$log" 2>&1; then
					echo "### qmp-throttle.py FAILED: stopping this boot" >>"$log"
					thr_fail=1
					kill -9 "$(cat "$pidf")" 2>/dev/null
				else
					echo "### throttled ${throttle_drives% }: iops-write=$iops" >>"$log"
				fi
				;;
			"ready from "*)
				from=${line#ready from }; from=${from%% *}
				c_acked=$((from - 1)); c_started=$((from - 1))
				ready=1; tready=$(now)
				# timed plan: the kill; event plan: a fallback when
				# too few flush/checkpoint lines come
				kill_after "$delay" "$([ $plan = timed ] && echo timed || echo fallback)" &
				timer=$!
				;;
			"start "*) ((${line#start } > c_started)) && c_started=${line#start } ;;
			"committed "*) ((${line#committed } > c_acked)) && c_acked=${line#committed } ;;
			"flush "*|"checkpoint "*)
				[ -n "$EVENT_LINES" ] && [[ ! $line =~ ^($EVENT_LINES) ]] && continue
				if ((ready)) && [ ! -e "$killf" ]; then
					events=$((events + 1)); tlast_event=$(now)
					if [ "$plan" = event ] && ((events == nth)); then
						local b=${line##*dirty=} win skip=0
						b=${b%% *}
						if [[ $b =~ ^[0-9]+$ ]] && ((b > 0)); then
							((b > 128)) && b=128
							win=$((b * rpp * 1000 / iops))
							skip=$((b * rskip * 1000 / iops))
						else
							b="?" win=$EVENT_DELAY_MS
						fi
						win=$((EVENT_LEAD_MS + skip + efrac * win / 1000))
						edelay=$(printf '%d.%03d' $((win / 1000)) $((win % 1000)))
						echo "### event kill in ${edelay}s (batch of <= ${b} pages)" >>"$log"
						# a batch begun inside an explicit
						# checkpoint counts as a kill after
						# a checkpoint (the guest's ckpt=1)
						kill_after "$edelay" "$([[ $line == *" ckpt=1"* ]] && echo checkpoint || echo flush)" &
						etimer=$!
					fi
				fi
				;;
			esac
		done
		exec {fd}<&-
		wait "$bootpid" 2>/dev/null
		for p in $timer $etimer; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
		local tend tkill kind since="" runs tk=""
		tend=$(now)
		[ -s "$killf" ] && read -r tk _ <"$killf"
		# one line per boot: host times relative to the boot's start
		# (t0), the guest's uptime at init and its kernel milestones
		awk -v b="$c" -v t0="$t0" -v f="$tfirst" -v d="$tdisks" -v m="$tmounted" \
			-v v="$([ "$tverdict" != 0 ] && echo "$tverdict")" \
			-v r="$([ "$tready" != 0 ] && echo "$tready")" -v k="$tk" -v e="$tend" \
			-v ui="$up_init" -v ku="$k_unpack" -v kf="$k_freed" -v ki="$k_init" \
			-v from="$from" -v warm="$WARMUP" 'function rel(x) { return x == "" ? "" : sprintf("%.3f", x - t0) }
			BEGIN { printf "%d,%.3f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d\n", b, t0, rel(f), rel(d), rel(m),
				rel(v), rel(r), rel(k), rel(e), ui, ku, kf, ki, (from == warm + 1) }' >>"$dir/phases.csv"

		if ((thr_fail)); then
			echo "vm-crash.sh: $mode job $job cycle $c: could not throttle the disk (see $log)" >&2
			return 3
		fi
		# no line at all from the guest: it never reached /init, the disks
		# are as the last kill left them; this boot is done again (its
		# plan drawn afresh: the kill distribution does not change)
		if [ -z "$tfirst" ] && ((silent < SILENT_RETRIES)); then
			silent=$((silent + 1))
			cp -r "$dir/boot" "$dir/boot-silent-$c-$silent" 2>/dev/null
			echo "### boot of cycle $c printed nothing ($(tail -c 200 "$dir/boot.err" | tr '\n' ' ')): booting again ($silent of $SILENT_RETRIES)" >>"$log"
			say "  $mode j$job cycle $c: the guest printed nothing: booting again ($silent of $SILENT_RETRIES)"
			c=$((c - 1))
			continue
		fi
		# the previous cycle's verdict came in this boot
		if ((c > 1)); then
			if [ -z "$verdict_line" ]; then
				echo "vm-crash.sh: $mode job $job cycle $c: no verdict line (boot log: $dir/boot.err, guest log: $log)" >&2
				cp -r "$dir/boot" "$dir/boot-noverdict-$c" 2>/dev/null
				return 3
			fi
			emit_csv "$mode" "$job" $((c - 1)) "$jseed" "$verdict_line" "$p_kill" \
				"$p_events" "$p_since" "$p_run" "$p_from" "$p_acked" "$p_started" \
				"$p_t0" "$p_tkill" "$t0" "$tverdict" >>"$csv"
			case $verdict_line in
			"verdict ok "*) ;;
			*) cp -r "$dir/boot" "$dir/boot-verdict-$((c - 1))" 2>/dev/null
			   cp "$log" "$dir/guest-upto-$((c - 1)).log" ;;
			esac
			[ "$quiet" = 1 ] || printf '  %s j%s cycle %d: %s\n' "$mode" "$job" $((c - 1)) \
				"$(cut -c1-150 <<<"$verdict_line")" >&2
			case $mode:$verdict_line in
			unsafe:"verdict tear "*) controls=$((controls + 1)) ;;
			doublewrite:*" torn_repaired=0 "*|fullpage:*" torn_repaired=0 "*) ;;
			doublewrite:"verdict ok "*|fullpage:"verdict ok "*) controls=$((controls + 1)) ;;
			esac
			# a tear or a violation: the guest started afresh
			case $verdict_line in "verdict ok "*) ;; *) have=0 ;; esac
		fi
		((last)) && break
		if ((!ready)) || [ ! -e "$killf" ]; then
			echo "vm-crash.sh: $mode job $job cycle $c: the workload never started or was not killed (see $log, $dir/boot.err)" >&2
			cp -r "$dir/boot" "$dir/boot-error-$c" 2>/dev/null
			return 3
		fi
		read -r tkill kind <"$killf"
		[ "$kind" = fallback ] && kind=timed-fallback
		[ "$kind" = flush ] && kind=after-flush
		[ "$kind" = checkpoint ] && kind=after-checkpoint
		[ -n "$tlast_event" ] && since=$(awk -v a="$tlast_event" -v b="$tkill" 'BEGIN{printf "%d", (b-a)*1000}')
		runs=$(awk -v a="$tready" -v b="$tkill" 'BEGIN{printf "%.2f", b-a}')
		p_kill=$kind p_events=$events p_since=$since p_run=$runs p_from=$from
		p_acked=$c_acked p_started=$c_started p_t0=$t0 p_tkill=$tkill
		acked=$c_acked started=$c_started have=1
	done
	return 0
}

# emit_csv ... : one CSV line from the run facts and the verdict line.
emit_csv() {
	local mode=$1 job=$2 cyc=$3 jseed=$4 v=$5 kind=$6 events=$7 since=$8 runs=$9
	local from=${10} acked=${11} started=${12} t0=${13} tkill=${14} t1=${15} tverdict=${16}
	awk -v mode="$mode" -v fs="$fs" -v job="$job" -v cyc="$cyc" -v seed="$jseed" \
		-v kind="$kind" -v events="$events" -v since="$since" -v runs="$runs" \
		-v from="$from" -v acked="$acked" -v started="$started" \
		-v t0="$t0" -v tkill="$tkill" -v t1="$t1" -v tv="$tverdict" -v v="$v" 'BEGIN {
		n = split(v, w, " "); verdict = w[2]
		for (i = 3; i <= n; i++) if (split(w[i], kv, "=") >= 2 && !(kv[1] in f)) {
			f[kv[1]] = substr(w[i], length(kv[1]) + 2)
		}
		why = ""; p = index(v, " why=")
		if (p) why = substr(v, p + 5)
		gsub(/"/, "\"\"", why)
		# cycle time: this cycle'"'"'s boot until the kill, plus the next
		# boot until the verdict (the verify_s the guest measured is
		# part of it)
		cs = (tkill - t0) + (tv - t1)
		printf "%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%.1f,\"%s\"\n",
			mode, fs, job, cyc, seed, f["epoch"], kind, events, since, runs,
			from, acked, started, acked - from + 1, f["k"], verdict, f["open"],
			f["check"], f["bad_checksums"], f["torn_repaired"], f["corrupt_pages"],
			f["verify_s"], cs, why
	}'
}

# ------------------------------------------------------------------ aid off
aid_off_check() {
	local dir=$out/aid-off
	mkdir -p "$dir/disks"
	cp --sparse=always "$TEMPLATE/xfs16k.img" "$dir/disks/xfs16k.img"
	say "== NVMe aid off ($NVME_AID_PARAM=$NVME_AID_OFF): --protect atomic must be refused at open"
	bash "$VM/boot.sh" -k "$PATCHED" -i "$INITRD" -d "$dir/disks" -t 300 \
		-a "$NVME_AID_PARAM=$NVME_AID_OFF" -- /bin/vm-guest.sh refuse xfs16k atomic \
		>"$dir/guest.log" 2>"$dir/boot.err"
	local rc=$?
	[ "$quiet" = 1 ] || sed 's/^/  /' "$dir/guest.log" >&2
	AID_LINE=$(grep '^refuse:' "$dir/guest.log" | head -1)
	if [ $rc = 0 ] && grep -q '^refuse: .* refused: ' "$dir/guest.log"; then
		AID_OK=1
	else
		AID_OK=0
	fi
}

# ------------------------------------------------------------------ passes
echo "$CSV_HEAD" >"$out/cycles.csv"
fail=0
harness_err=0
summary=$out/summary.txt
{
	echo "vm-crash.sh pass $(date -u +%FT%TZ): modes '$modes', $kills kills per mode, fs $fs,"
	echo "  seed $seed, jobs $jobs, threads $threads, cache $cache, throttling.iops-write=$iops, max_sectors_kb=4,"
	echo "  kernel $PATCHED ($NVME_AID_PARAM=$NVME_AID_ON), host $(hostname), $(nproc) cores"
} >"$summary"
if [ "$aid_check" = 1 ]; then
	aid_off_check
	if [ "$AID_OK" = 1 ]; then
		echo "aid off: PASS: $AID_LINE" >>"$summary"
	else
		echo "aid off: FAIL: ${AID_LINE:-no refuse line; see $out/aid-off/}" >>"$summary"
		fail=1
	fi
fi

for mode in $modes; do
	say "== $mode on $fs: $kills kills, $jobs job(s), seed $seed"
	tm=$(now)
	echo "mode_start_$mode=$(date -u +%FT%TZ)" >>"$out/meta.txt"
	pids=()
	for ((j = 1; j <= jobs; j++)); do
		n=$((kills / jobs + (j <= kills % jobs ? 1 : 0)))
		((n > 0)) || continue
		run_job "$mode" "$j" "$n" $(((seed + 7919 * j) % 1000000007)) &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || harness_err=1
	done
	wall=$(awk -v a="$tm" -v b="$(now)" 'BEGIN{printf "%.0f", b-a}')
	echo "mode_end_$mode=$(date -u +%FT%TZ) wall_s=$wall" >>"$out/meta.txt"
	cat "$out/$mode"-j*/cycles.csv >>"$out/cycles.csv" 2>/dev/null
	cat "$out/$mode"-j*/cycles.csv 2>/dev/null | awk -F, -v mode="$mode" -v wall="$wall" \
		-v minshare="$UNSAFE_MIN_SHARE" -v want="$kills" -v controls="$CONTROLS" '
	{
		n++; kind[$7]++; acked += $14
		if ($16 == "VIOLATION") viol++
		if ($16 == "tear") tear++
		if ($20 > 0) { rep += $20; repc++ }
		if ($21 > 0 || $19 > 0) { cor += ($21 > $19 ? $21 : $19); corc++ }
		cs += $23
	}
	END {
		ok = 1; why = ""
		if (n > want) extra = sprintf(" (%d + %d extra for the control)", want, n - want)
		if (n < want) { ok = 0; why = why sprintf(" only %d of %d cycles ran;", n, want) }
		if (mode != "unsafe" && viol + tear > 0) { ok = 0; why = why sprintf(" %d violations, %d tears;", viol, tear) }
		cok = 1; cwhy = ""
		if ((mode == "doublewrite" || mode == "fullpage") && repc == 0) { cok = 0; cwhy = " no torn page repaired in any cycle;" }
		if (mode == "unsafe") {
			need = n * minshare; if (need < 1) need = 1
			if (tear < need) { cok = 0; cwhy = sprintf(" negative control: torn pages in %d of %d cycles, need >= %g;", tear, n, need) }
		}
		if (!cok && controls == "required") { ok = 0; why = why cwhy }
		else if (!cok) why = why " (reported, not required in a short pass:" cwhy ")"
		printf "%-11s cycles %d%s | kills after flush %d, after checkpoint %d, timed %d | acked commits %d | violations %d | tear cycles %d | torn repaired %d (in %d cycles) | corrupt pages %d (in %d cycles) | %.1f s/cycle (%d s wall) | %s%s\n",
			mode, n, extra, kind["after-flush"], kind["after-checkpoint"], kind["timed"] + kind["timed-fallback"],
			acked, viol + 0, tear + 0, rep, repc, cor, corc, n ? wall / n : 0, wall,
			ok ? "PASS" : "FAIL:", why
		exit !ok
	}' >>"$summary" || fail=1
done
total=$(awk -v a="$t_pass" -v b="$(now)" 'BEGIN{printf "%.0f", b-a}')
[ "$harness_err" = 1 ] && echo "HARNESS ERROR: a job stopped early (see the job logs)" >>"$summary"
echo "whole pass: ${total}s; CSV $out/cycles.csv" >>"$summary"
if [ "$fail" = 0 ] && [ "$harness_err" = 0 ]; then
	echo "RESULT: PASS" >>"$summary"
else
	echo "RESULT: FAIL" >>"$summary"
fi
{ echo "pass_end=$(date -u +%FT%TZ)"; echo "result=$(sed -n 's/^RESULT: //p' "$summary")"; } >>"$out/meta.txt"
cat "$summary"
[ "$harness_err" = 1 ] && exit 3
exit $fail

#!/bin/bash
# run.sh - ONE host command for the in-guest atomic-write tests.
#
# Builds the static test binary and the initramfs, makes fresh disk images,
# boots: UNPATCHED kernel, PATCHED kernel with the NVMe atomic-unit test
# parameter on (16 KiB), PATCHED kernel with it off; prints a side-by-side
# report and exits non-zero if any expectation failed (or a boot failed).
#
# Kernels: env KERNEL_UNPATCHED / KERNEL_PATCHED, else the UNPATCHED= and
# PATCHED= lines of `kernel-series/build.sh --print`, else the symlinks
# /var/cache/untorn/kernel/latest-{unpatched,patched}.
# A missing kernel skips its boots (column "-") and makes the run fail,
# unless ALLOW_MISSING=1.
#
# Env: UNTORN_VM_DIR (default /var/tmp/untorn-vm), BOOT_TIMEOUT (s, per boot),
#      ONLY="unpatched patched patched-noaid" (subset of boots to run),
#      RACE_ITERS / RACE_ROUNDS (longer race_tests runs, see guest.sh),
#      RACE_ONLY=1 (race_tests alone: a quick developer pass, not a full run),
#      SHUTDOWN_ROUNDS / SHUTDOWN_HOGS / SHUTDOWN_APPENDERS (the shutdown
#      test N times per filesystem, with N CPU hogs, with N more atomic
#      writers appending to files of their own), SHUTDOWN_ONLY=FS (only those rounds, on
#      FS: a loop that measures how often an acknowledged write is lost),
#      FSX_OPS=N (operations of the fsx-style stress run, default 400),
#      MIXSD_ROUNDS=N / MIXSD_ONLY=FS (rounds of the mixed-unit shutdown
#      test per filesystem, default 2; only those rounds, on FS),
#      BENCH_PREALLOC=FS [BENCH_ARGS="--mb 32 --threads 1,4"] (only
#      prealloc_bench on FS: atomic vs plain writes into preallocated space),
#      SHCONV_ONLY=FS (only race_tests --shared-convert on FS, RACE_ITERS
#      iterations).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KS=$(dirname "$HERE")
VM=$KS/vm
# shellcheck source=../vm/config.sh
. "$VM/config.sh"
BUILD=$UNTORN_VM_DIR/build
DISKS=$UNTORN_VM_DIR/disks
RUNS=$UNTORN_VM_DIR/runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$BUILD" "$RUNS"
t0=$(date +%s)
log() { echo "[run.sh $(date +%H:%M:%S)] $*" >&2; }

# ------------------------------------------------------------- kernels
ku=${KERNEL_UNPATCHED:-}
kp=${KERNEL_PATCHED:-}
if { [ -z "$ku" ] || [ -z "$kp" ]; } && [ -x "$KS/build.sh" ]; then
	printed=$("$KS/build.sh" --print 2>/dev/null || true)
	[ -z "$ku" ] && ku=$(sed -n 's/^UNPATCHED=//p' <<<"$printed" | tail -n1)
	[ -z "$kp" ] && kp=$(sed -n 's/^PATCHED=//p' <<<"$printed" | tail -n1)
fi
[ -z "$ku" ] && [ -e /var/cache/untorn/kernel/latest-unpatched ] && ku=$(readlink -f /var/cache/untorn/kernel/latest-unpatched)
[ -z "$kp" ] && [ -e /var/cache/untorn/kernel/latest-patched ] && kp=$(readlink -f /var/cache/untorn/kernel/latest-patched)
log "unpatched kernel: ${ku:-MISSING}"
log "patched kernel:   ${kp:-MISSING}"

# ------------------------------------------------------------- build
make -s -C "$HERE" OUT="$BUILD" >&2 || { log "test build failed"; exit 1; }
"$VM/mkinitramfs.sh" -o "$BUILD/initramfs.cpio.gz" \
	"$BUILD/atomic_tests:/bin/atomic_tests" "$BUILD/race_tests:/bin/race_tests" \
	"$BUILD/stress_tests:/bin/stress_tests" "$BUILD/prealloc_bench:/bin/prealloc_bench" \
	/sbin/mke2fs:/bin/mke2fs.e2fsprogs \
	"$HERE/guest.sh:/bin/guest.sh" "$VM/guest-disks.sh:/bin/guest-disks.sh" || exit 1
# Longer race runs: RACE_ITERS (per scenario, default 20) and RACE_ROUNDS
# (shutdown rounds, default 2) reach guest.sh on the kernel command line.
race_args=()
[ -n "${RACE_ITERS:-}" ] && race_args+=(-a "untorn.race_iters=$RACE_ITERS")
[ -n "${RACE_ROUNDS:-}" ] && race_args+=(-a "untorn.race_rounds=$RACE_ROUNDS")
[ "${RACE_ONLY:-0}" = 1 ] && race_args+=(-a "untorn.race_only=1")
[ -n "${SHUTDOWN_ROUNDS:-}" ] && race_args+=(-a "untorn.shutdown_rounds=$SHUTDOWN_ROUNDS")
[ -n "${SHUTDOWN_HOGS:-}" ] && race_args+=(-a "untorn.shutdown_hogs=$SHUTDOWN_HOGS")
[ -n "${SHUTDOWN_APPENDERS:-}" ] && race_args+=(-a "untorn.shutdown_appenders=$SHUTDOWN_APPENDERS")
[ -n "${SHUTDOWN_ONLY:-}" ] && race_args+=(-a "untorn.shutdown_only=$SHUTDOWN_ONLY")
[ -n "${FSX_OPS:-}" ] && race_args+=(-a "untorn.fsx_ops=$FSX_OPS")
[ -n "${MIXSD_ROUNDS:-}" ] && race_args+=(-a "untorn.mixsd_rounds=$MIXSD_ROUNDS")
[ -n "${MIXSD_ONLY:-}" ] && race_args+=(-a "untorn.mixsd_only=$MIXSD_ONLY")
[ -n "${BENCH_PREALLOC:-}" ] && race_args+=(-a "untorn.bench_prealloc=$BENCH_PREALLOC")
[ -n "${SHCONV_ONLY:-}" ] && race_args+=(-a "untorn.shconv_only=$SHCONV_ONLY")
[ -n "${BENCH_ARGS:-}" ] && race_args+=(-a "untorn.bench_args=${BENCH_ARGS// /+}")

# ------------------------------------------------------------- boots
declare -A rcs secs
boot() {  # boot COLUMN KERNEL EXPECT AID AIDVALUE
	local col=$1 k=$2 expect=$3 aid=$4 aidv=$5 s e
	if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $col "* ]]; then
		rcs[$col]=skipped; return
	fi
	if [ -z "$k" ] || [ ! -f "$k" ]; then
		log "$col: no kernel, skipped"; rcs[$col]=nokernel; return
	fi
	"$VM/mkdisks.sh" "$DISKS" >/dev/null || { rcs[$col]=nodisks; return; }
	log "$col: booting $k ($NVME_AID_PARAM=$aidv)"
	s=$(date +%s.%N)
	"$VM/boot.sh" -k "$k" -i "$BUILD/initramfs.cpio.gz" -d "$DISKS" \
		-t "${BOOT_TIMEOUT:-600}" -o "$RUNS/$col" \
		-a "$NVME_AID_PARAM=$aidv" -a "$SCSI_DEBUG_ARGS" "${race_args[@]}" \
		-- /bin/guest.sh "$expect" "$aid" | tee "$RUNS/$col.out" | sed "s/^/  [$col] /" >&2
	rcs[$col]=${PIPESTATUS[0]}
	e=$(date +%s.%N)
	secs[$col]=$(awk -v a="$s" -v b="$e" 'BEGIN{printf "%.0f", b-a}')
	log "$col: guest status ${rcs[$col]}, ${secs[$col]}s"
}
boot unpatched "$ku" unpatched off "$NVME_AID_ON"
boot patched "$kp" patched on "$NVME_AID_ON"
boot patched-noaid "$kp" patched off "$NVME_AID_OFF"

# ------------------------------------------------------------- report
cols="unpatched patched patched-noaid"
report() {
	local c
	for c in $cols; do
		[ -f "$RUNS/$c.out" ] && sed "s/^/$c\t/" "$RUNS/$c.out"
	done | awk -F'\t' -v cols="$cols" '
	function val(s, key,   i, r, j) {
		i = index(s, " " key "=")
		if (!i) return ""
		r = substr(s, i + length(key) + 2)
		if (key == "got") { j = index(r, " want="); if (j) r = substr(r, 1, j - 1) }
		return r
	}
	BEGIN { nc = split(cols, C, " ") }
	{
		col = $1; s = substr($0, length(col) + 2)
		if (s !~ /^[a-z][A-Za-z0-9_.-]*: (PASS|FAIL|INFO|SKIP)/) next
		split(s, f, " "); name = f[1]; sub(/:$/, "", name); st = f[2]
		if (name ~ /^env\./ && name != "env.kernel") next
		if (!(name in seen)) { seen[name] = 1; order[++n] = name }
		g = val(s, "got")
		if (st == "SKIP") g = "skip"
		cell[name, col] = g (st == "FAIL" ? " **FAIL**" : "")
		if (st == "INFO") isinfo[name] = 1
		if (st == "PASS" || st == "FAIL") want[name, col] = val(s, "want")
		if (st == "FAIL") fails++
	}
	END {
		printf "%-34s | %-18s | %-18s | %-18s | %s\n", "check", "unpatched", "patched", "patched aid-off", "expected (unpatched / patched / aid-off)"
		sep = sprintf("%150s", ""); gsub(/ /, "-", sep); print sep
		for (i = 1; i <= n; i++) {
			nm = order[i]; ex = ""
			if (nm in isinfo) continue
			for (k = 1; k <= nc; k++) {
				c = C[k]
				out[k] = ((nm, c) in cell) ? cell[nm, c] : "-"
				ex = ex (k > 1 ? " / " : "") (((nm, c) in want) ? want[nm, c] : (((nm, c) in cell) ? "info" : "-"))
			}
			printf "%-34s | %-18s | %-18s | %-18s | %s\n", nm, out[1], out[2], out[3], ex
		}
		print sep
		print "informational values (no expectation):"
		for (i = 1; i <= n; i++) {
			nm = order[i]
			if (!(nm in isinfo)) continue
			printf "  %s\n", nm
			for (k = 1; k <= nc; k++)
				if ((nm, C[k]) in cell) printf "      %-15s %s\n", C[k] ":", cell[nm, C[k]]
		}
		print sep
		printf "expectation failures: %d\n", fails + 0
	}'
}
{
	report
	status=0
	for c in $cols; do
		r=${rcs[$c]:-}
		printf 'boot %-14s status=%-9s time=%ss\n' "$c" "$r" "${secs[$c]:--}"
		case $r in
		0) ;;
		skipped) ;;
		nokernel) [ "${ALLOW_MISSING:-0}" = 1 ] || status=1 ;;
		*) status=1 ;;
		esac
	done
	# any failed expectation (including setup lines) fails the run
	cat "$RUNS"/*.out 2>/dev/null | grep -q '^[a-z][A-Za-z0-9_.-]*: FAIL ' && status=1
	echo "whole run: $(( $(date +%s) - t0 ))s; logs: $RUNS"
	echo "RESULT: $([ $status = 0 ] && echo PASS || echo FAIL)"
} | tee "$RUNS/report.txt"
exit "$(grep -q '^RESULT: PASS' "$RUNS/report.txt" && echo 0 || echo 1)"

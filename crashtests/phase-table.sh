#!/bin/bash
# phase-table.sh - where a kill cycle's time goes, from vm-crash.sh's
# phases.csv (one line per boot; a ledger directory's has a job column).
#
# usage: crashtests/phase-table.sh [--label L] DIR...   (DIR holds phases.csv)
#
# One markdown row per DIR (and one "all" row when several): the mean
# seconds per boot of each phase, on the host's clock unless marked guest:
#   boot      boot.sh started .. the guest's first line (QEMU start, firmware,
#             kernel, initramfs, init); of which, guest clock: "kernel" =
#             the guest's uptime when vm-guest.sh started, "unpack" = the
#             kernel's "Unpacking initramfs" .. "Freeing initrd memory"
#   disks     first line .. the NVMe disks found
#   mount     disks found .. filesystems mounted (XFS/ext4 log recovery)
#   check     mounted .. verdict: prescan, ut_open (recovery), ut_check,
#             the oracle advanced and compared (the previous kill checked)
#   warm-up   verdict (first boot: mounted) .. ready; "fresh" boots fill a
#             new database (the first, and after a tear), shown apart
#   run       ready .. kill: the workload (the kill plan: not overhead)
#   exit      kill .. boot.sh done;  gap: boot.sh done .. next boot's start
#   cycle     a boot's start .. the next boot's start
# Boots without a kill (the last, verification only) are left out.
set -euo pipefail
label=""
[ "${1:-}" = --label ] && { label=$2; shift 2; }
[ $# -ge 1 ] || { sed -n '2,22p' "$0" >&2; exit 2; }
for d in "$@"; do
	f=${d%/}/phases.csv
	[ -f "$f" ] || { echo "phase-table.sh: no $f" >&2; exit 1; }
	# drop a ledger's job column, keep the run's name (a ledger
	# directory's own; a job directory's with its pass's)
	name=$(basename "$(cd "$d" && pwd)")
	[ -f "$d/meta.txt" ] || name=$(basename "$(cd "$d/.." && pwd)")/$name
	awk -F, -v run="${label:-$name}" 'NR == 1 { j = ($1 == "job"); next }
		{ s = ""; for (i = 1 + j; i <= NF; i++) s = s "," $i; print run s }' "$f"
done | awk -F, '
function add(k, name, v) { if (v == "") return; sum[k, name] += v; cnt[k, name]++ }
function m(k, name) { return cnt[k, name] ? sprintf("%.2f", sum[k, name] / cnt[k, name]) : "-" }
{
	# run,boot,t0,first,disks,mounted,verdict,ready,kill,end,up_init,k_unpack,k_freed,k_init,fresh
	run = $1; b = $2; t0 = $3
	if (prev_run == run && prev_b == b - 1 && pend != "") gapv[run, b - 1] = t0 - (prevt0 + pend)
	prev_run = run; prev_b = b; prevt0 = t0; pend = $10
	nxt[run, b - 1] = t0
	line[++n] = $0
}
END {
	for (i = 1; i <= n; i++) {
		split(line[i], f, ",")
		run = f[1]; b = f[2]; t0 = f[3]
		if (f[9] == "") continue	# no kill: the verification boot
		for (pass = 0; pass < 2; pass++) {
			k = pass ? "all" : run
			if (!(k in seen)) { seen[k] = 1; order[++no] = k }
			nb[k]++
			add(k, "boot", f[4])
			add(k, "kernel", f[11])
			if (f[12] != "" && f[13] != "") add(k, "unpack", f[13] - f[12])
			if (f[5] != "" && f[4] != "") add(k, "disks", f[5] - f[4])
			if (f[6] != "" && f[5] != "") add(k, "mount", f[6] - f[5])
			if (f[7] != "" && f[6] != "") add(k, "check", f[7] - f[6])
			from = f[7] != "" ? f[7] : f[6]
			if (f[8] != "" && from != "") add(k, f[15] == 1 ? "warmf" : "warm", f[8] - from)
			if (f[9] != "" && f[8] != "") add(k, "run", f[9] - f[8])
			if (f[10] != "" && f[9] != "") add(k, "exit", f[10] - f[9])
			if ((run, b) in gapv) add(k, "gap", gapv[run, b])
			if ((run, b) in nxt) add(k, "cycle", nxt[run, b] - t0)
		}
	}
	print "| pass | boots | boot (guest: kernel / unpack) | disks | mount | check | warm-up (fresh: n x s) | run | exit | gap | s/cycle |"
	print "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|"
	order[++no] = "all"	# last
	for (i = 1; i <= no; i++) {
		k = order[i]
		if (k == "all" && (no == 3 || i < no)) continue
		printf "| %s | %d | %s (%s / %s) | %s | %s | %s | %s (%d x %s) | %s | %s | %s | %s |\n", k, nb[k],
			m(k, "boot"), m(k, "kernel"), m(k, "unpack"), m(k, "disks"), m(k, "mount"),
			m(k, "check"), m(k, "warm"), cnt[k, "warmf"], m(k, "warmf"), m(k, "run"),
			m(k, "exit"), m(k, "gap"), m(k, "cycle")
	}
}'

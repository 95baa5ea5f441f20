#!/bin/bash
# crash-table.sh - the README's table from vm-crash.sh results.
#
# usage: crashtests/crash-table.sh RUNDIR...
#
# RUNDIR holds one pass of one mode on one filesystem: its cycles.csv
# (vm-crash.sh's DIR/<mode>-j1/cycles.csv, with or without the header line;
# a pass stopped early leaves a partial one, which counts) and, optionally,
# cycle-starts.txt (the "### cycle N <time> ..." lines of its guest.log) and
# summary.txt.
# Prints one markdown row per (fs, mode, --seed) and a total row per (fs, mode)
# that has more than one pass.
#
# Columns: cycles (one kill and its verdict each); kills inside a cleaner
# batch (after-flush) / timed (timed, timed-fallback); acknowledged commits
# after `ready` (acked_in_cycle: warm-up commits not counted); violations
# (verdict VIOLATION); tear cycles (verdict tear: the control in unsafe, a
# violation in the other modes); torn pages repaired and the cycles with any
# (torn_repaired); s/cycle = wall time over cycles: the "s wall" of the
# pass's summary.txt where it ran to its end, else (a pass stopped early)
# from the first cycle's boot to the boot that gave the last verdict
# (cycle-starts.txt; else "-").
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,22p' "$0" >&2; exit 2; }

for d in "$@"; do
	csv=$d/cycles.csv
	[ -f "$csv" ] || { echo "crash-table.sh: no $csv" >&2; exit 1; }
	wall=-
	if [ -f "$d/summary.txt" ] && grep -q ' s wall)' "$d/summary.txt"; then
		# a pass that ran to its end: the harness's own figure (the
		# mode's wall time, last verification boot included)
		wall=$(sed -n 's/.*(\([0-9]*\) s wall).*/\1/p' "$d/summary.txt" | head -1)
	elif [ -f "$d/cycle-starts.txt" ]; then
		# "### cycle N 2026-12-06T17:05:01Z plan=..."; boot N+1 gives
		# cycle N's verdict, so N cycles span starts 1 .. N+1 (the last
		# boot's verification, a few seconds, is left out).
		n=$(grep -v '^mode,' "$csv" | grep -c . || true)
		t1=$(awk '$1 == "###" && $2 == "cycle" && $3 == 1 { print $4; exit }' "$d/cycle-starts.txt")
		tn=$(awk -v c=$((n + 1)) '$1 == "###" && $2 == "cycle" && $3 == c { print $4; exit }' "$d/cycle-starts.txt")
		if [ -n "$t1" ] && [ -n "$tn" ] && [ "$n" -gt 0 ]; then
			wall=$(( $(date -ud "$tn" +%s) - $(date -ud "$t1" +%s) ))
		fi
	fi
	grep -v '^mode,' "$csv" | sed "s|^|$wall,$d,|"
done | awk -F, '
function row(label, k) {
	printf "| %s | %s | %s | %d | %d / %d | %d | %s | %d | %d (in %d cycles) | %s |\n",
		fsn[k], mo[k], label, n[k], ev[k], ti[k], ack[k],
		(vi[k] ? "**" vi[k] "**" : "0"), te[k], rep[k], repc[k],
		(wok[k] && n[k] ? sprintf("%.1f", wall[k] / n[k]) : "-")
}
{
	# fields 1-2: the wall time and the run directory added above; the
	# CSV starts at field 3
	w = $1; run = $2; mode = $3; fs = $4; seed = $7; kind = $9; acked = $16
	# the CSV has the job seed, (--seed + 7919 * job) % 1000000007
	if ($5 == 1 && seed >= 7919) seed = seed - 7919; else seed = seed " (job " $5 ")"
	verdict = $18; rep_ = $22
	for (pass = 0; pass < 2; pass++) {
		k = pass ? fs SUBSEP mode SUBSEP "all" : fs SUBSEP mode SUBSEP seed
		if (!(k in n)) {
			order[++nk] = k; fsn[k] = fs; mo[k] = mode; wok[k] = 1
			if (!pass) nseeds[fs SUBSEP mode]++
		}
		n[k]++; ack[k] += acked
		if (kind == "after-flush" || kind == "after-checkpoint") ev[k]++; else ti[k]++
		if (verdict == "VIOLATION") vi[k]++
		if (verdict == "tear") te[k]++
		if (rep_ > 0) { rep[k] += rep_; repc[k]++ }
		if (!(k SUBSEP run in seen)) {
			seen[k SUBSEP run] = 1
			if (w == "-") wok[k] = 0; else wall[k] += w
		}
	}
}
END {
	print "| fs | mode | seed | cycles | kills in a batch / timed | acked commits | violations | tear cycles (unsafe: the control) | torn pages repaired | s/cycle |"
	print "|---|---|---|---:|---|---:|---:|---:|---:|---:|"
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, p, SUBSEP)
		if (p[3] != "all") row(p[3], k)
	}
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, p, SUBSEP)
		if (p[3] == "all" && nseeds[p[1] SUBSEP p[2]] > 1) row("all", k)
	}
}'

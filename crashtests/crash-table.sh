#!/bin/bash
# crash-table.sh - the crash ledger's tables, from the passes in
# crashtests/results (or the pass directories given).
#
# usage: crashtests/crash-table.sh [--passes] [--readme] [--update-readmes] [DIR...]
#
# DIR holds one pass of one mode on one filesystem (ledger-add.sh): its
# cycles.csv (with or without the header; a pass stopped early leaves a
# partial one, which counts), meta.txt (fs_kernel_key, kernel_cache_key,
# engine_commit, status, ...), and optionally cycle-starts.txt and
# summary.txt.  Default: every crashtests/results/*/*/ directory.
#
# Prints (markdown):
#  1. the ledger: one row per filesystem x mode x kernel key (the key of the
#     patches that filesystem's atomic path runs, crashtests/kernel-key.sh;
#     "current" = the key of the series in this tree), summed over its
#     passes, with the engine commits the cycles ran;
#  2. the count toward the current kernel: cycles per filesystem and mode
#     whose key is the current one, against the 200 per mode of issue 36,
#     and the verdict so far (atomic, doublewrite, fullpage: 0 violations;
#     doublewrite and fullpage repair torn pages in some cycle; unsafe, the negative control: tears in >= 10%
#     of its cycles);
#  3. with --passes, one row per pass.
# --readme: only the line for the top-level README's results table.
# --update-readmes: rewrite the part of crashtests/README.md between
# "<!-- ledger:begin -->" and "<!-- ledger:end -->" with 1-3, and the README
# line starting "| VM kill ledger" with the --readme line.
#
# Columns: cycles (one kill and its verdict each); kills inside a cleaner
# batch (after-flush; after-checkpoint in older passes) / timed (timed,
# timed-fallback); acknowledged commits after `ready` (acked_in_cycle:
# warm-up commits not counted); violations (verdict VIOLATION, and in
# atomic and doublewrite a tear too); tear cycles (verdict tear); torn pages
# repaired and the cycles with any (torn_repaired); s/cycle = wall time
# over cycles: meta.txt's wall_s or summary.txt's "s wall" for a pass run to
# its end, else (stopped early) from the first boot to the boot that gave
# the last verdict (cycle-starts.txt; else "-"), summed over the passes
# that have one.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
passes=0 readme=0 update=0
while [ $# -gt 0 ]; do
	case $1 in
	--passes) passes=1 ;;
	--readme) readme=1 ;;
	--update-readmes) update=1 ;;
	-h|--help) sed -n '2,38p' "$0" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
if [ $# = 0 ]; then
	set -- "$HERE"/results/*/*/
fi

# the current kernel key of every filesystem in the ledger
declare -A cur
fss=$(for d in "$@"; do sed -n 's/^fs=//p' "$d/meta.txt" 2>/dev/null; done | sort -u)
for f in $fss; do
	cur[$f]=$(bash "$HERE/kernel-key.sh" "$f" | awk '{print $2}') ||
		{ echo "crash-table.sh: no current kernel key for $f (see kernel-key.sh)" >&2; exit 1; }
done

rows() {
for d in "$@"; do
	d=${d%/}
	csv=$d/cycles.csv
	[ -f "$csv" ] || { echo "crash-table.sh: no $csv" >&2; exit 1; }
	m=$d/meta.txt
	get() { sed -n "s/^$1=//p" "$m" 2>/dev/null | head -1; }
	key=$(get fs_kernel_key); key=${key:-unknown}
	fs=$(get fs); mode=$(get mode)
	current=0
	[ -n "$fs" ] && [ "${cur[$fs]:-}" = "$key" ] && current=1
	engine=$(get engine_commit); engine=${engine:-unknown}
	status=$(get status); status=${status:-unknown}
	day=$(basename "$(dirname "$d")")
	n=$(grep -v '^mode,' "$csv" | grep -c . || true)
	wall=-
	ws=$(get mode_end | sed -n 's/.*wall_s=\([0-9]*\).*/\1/p')
	if [ "$status" = complete ] && [ -n "$ws" ]; then
		wall=$ws
	elif [ "$status" != interrupted ] && [ -f "$d/summary.txt" ] && grep -q ' s wall)' "$d/summary.txt"; then
		# a pass that ran to its end: the harness's own figure (the
		# mode's wall time, last verification boot included)
		wall=$(sed -n 's/.*(\([0-9]*\) s wall).*/\1/p' "$d/summary.txt" | head -1)
	elif [ -f "$d/cycle-starts.txt" ]; then
		# "### cycle N 2026-12-06T17:05:01Z plan=..."; boot N+1 gives
		# cycle N's verdict, so N cycles span starts 1 .. N+1 (the last
		# boot's verification, a few seconds, is left out).
		t1=$(awk '$1 == "###" && $2 == "cycle" && $3 == 1 { print $4; exit }' "$d/cycle-starts.txt")
		tn=$(awk -v c=$((n + 1)) '$1 == "###" && $2 == "cycle" && $3 == c { print $4; exit }' "$d/cycle-starts.txt")
		if [ -n "$t1" ] && [ -n "$tn" ] && [ "$n" -gt 0 ]; then
			wall=$(( $(date -ud "$tn" +%s) - $(date -ud "$t1" +%s) ))
		fi
	fi
	grep -v '^mode,' "$csv" | sed "s|^|$wall,$d,$key,$current,$engine,$status,$day,|"
done
}

table() {
awk -F, -v passes="$passes" -v readme="$readme" '
function vio(k) { return vi[k] + (mo[k] != "unsafe" ? te[k] : 0) }
function sc(k) { return (wn[k] ? sprintf("%.1f", wall[k] / wn[k]) : "-") }
function verdict(k,   need) {
	if (mo[k] != "unsafe") {
		if (vio(k)) return "**FAIL**: " vio(k) " violations"
		# double-write and full-page images repair torn pages: a pass
		# of either that never repaired one did not show its kills tear
		if ((mo[k] == "doublewrite" || mo[k] == "fullpage") && !repc[k]) return "no repair yet"
		return "0 violations"
	}
	need = n[k] * 0.1
	return te[k] >= need && te[k] > 0 ? "control shown (" sprintf("%.0f", 100 * te[k] / n[k]) "%)" : "**control short**: " te[k] " of " n[k]
}
{
	# fields 1-7: added above; the CSV starts at field 8
	w = $1; run = $2; key = $3; current = $4; engine = $5; status = $6; day = $7
	mode = $8; fs = $9; seed = $12; kind = $14; acked = $21
	# the CSV has the job seed, (--seed + 7919 * job) % 1000000007
	if ($10 == 1 && seed >= 7919) seed = seed - 7919; else seed = seed " (job " $10 ")"
	verdict_ = $23; rep_ = $27
	for (pass = 0; pass < 3; pass++) {
		if (pass == 0) k = "P" SUBSEP run
		else if (pass == 1) k = "K" SUBSEP fs SUBSEP mode SUBSEP key
		else { if (!current) continue; k = "C" SUBSEP fs SUBSEP mode }
		if (!(k in n)) {
			order[++nk] = k; fsn[k] = fs; mo[k] = mode; ke[k] = key; cu[k] = current
			sd[k] = seed; st[k] = status; dy[k] = day; en[k] = engine
		}
		n[k]++; ack[k] += acked
		if (kind == "after-flush" || kind == "after-checkpoint") ev[k]++; else ti[k]++
		if (verdict_ == "VIOLATION") vi[k]++
		if (verdict_ == "tear") te[k]++
		if (rep_ > 0) { rep[k] += rep_; repc[k]++ }
		if (!(k SUBSEP run in seen)) {
			seen[k SUBSEP run] = 1; np[k]++
			if (!(k SUBSEP "e" SUBSEP engine in seen)) { seen[k SUBSEP "e" SUBSEP engine] = 1; ens[k] = ens[k] (ens[k] == "" ? "" : ", ") engine }
			if (!(k SUBSEP "d" SUBSEP day in seen)) { seen[k SUBSEP "d" SUBSEP day] = 1; dys[k] = dys[k] (dys[k] == "" ? "" : ", ") day }
			if (w != "-") { wall[k] += w; wn[k] += 0 }
			wok[k SUBSEP run] = (w != "-")
		}
		if (wok[k SUBSEP run]) wn[k]++
	}
}
END {
	if (readme) {
		# one line for the top-level README: the current kernel
		tot = 0; bad = 0; ut = 0; un = 0; nf = 0
		for (i = 1; i <= nk; i++) { k = order[i]; if (substr(k, 1, 1) != "C") continue
			f = fsn[k]; if (!(f in cyc)) fl[++nf] = f
			cyc[f] = 1; c[f, mo[k]] = n[k]
			if (mo[k] != "unsafe") { tot += n[k]; bad += vio(k) } else { ut += te[k]; un += n[k] } }
		s = ""
		for (i = 1; i <= nf; i++) { f = fl[i]
			s = s (s == "" ? "" : ", ") f " " (c[f, "atomic"] + 0) " / " (c[f, "doublewrite"] + 0) " / " (c[f, "unsafe"] + 0) \
				((f, "fullpage") in c ? " (fullpage " c[f, "fullpage"] ")" : "") }
		printf "| VM kill ledger: cycles per mode (atomic / doublewrite / unsafe, of 200 each; fullpage where run) on each filesystem%s current kernel key ([table](crashtests/README.md#the-ledger)): %s | the protected modes **%d violations** in %d cycles; unsafe, the negative control, tore in %d of %d | `crashtests/crash-table.sh` | %s |\n",
			"\x27s", s, bad, tot, ut, un, days()
		exit
	}
	print "| fs | mode | kernel key (fs patches) | counts now | passes | cycles | kills in a batch / timed | acked commits | violations | tear cycles (unsafe: the control) | torn pages repaired | s/cycle | engine commits | dates |"
	print "|---|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|"
	for (i = 1; i <= nk; i++) { k = order[i]; if (substr(k, 1, 1) != "K") continue
		printf "| %s | %s | %s | %s | %d | %d | %d / %d | %d | %s | %d | %d (in %d cycles) | %s | %s | %s |\n",
			fsn[k], mo[k], ke[k], cu[k] ? "**yes**" : "no", np[k], n[k], ev[k], ti[k], ack[k],
			(vio(k) ? "**" vio(k) "**" : "0"), te[k], rep[k], repc[k], sc(k), ens[k], dys[k] }
	print ""
	print "Toward 200 cycles per mode on the current kernel (passes whose key is the current one):"
	print ""
	print "| fs | mode | cycles | still to run | violations | tear cycles | repairs (cycles) | verdict so far | s/cycle |"
	print "|---|---|---:|---:|---:|---:|---:|---|---:|"
	for (i = 1; i <= nk; i++) { k = order[i]; if (substr(k, 1, 1) != "C") continue
		printf "| %s | %s | %d | %d | %s | %d | %d | %s | %s |\n", fsn[k], mo[k], n[k], (n[k] < 200 ? 200 - n[k] : 0),
			(vio(k) ? "**" vio(k) "**" : "0"), te[k], repc[k], verdict(k), sc(k) }
	if (!passes) exit
	print ""
	print "| date | fs | mode | seed | status | kernel key | engine | cycles | kills in a batch / timed | acked commits | violations | tear cycles | torn pages repaired | s/cycle |"
	print "|---|---|---|---|---|---|---|---:|---|---:|---:|---:|---:|---:|"
	for (i = 1; i <= nk; i++) { k = order[i]; if (substr(k, 1, 1) != "P") continue
		printf "| %s | %s | %s | %s | %s | %s | %s | %d | %d / %d | %d | %s | %d | %d (in %d cycles) | %s |\n",
			dy[k], fsn[k], mo[k], sd[k], st[k], ke[k], en[k], n[k], ev[k], ti[k], ack[k],
			(vio(k) ? "**" vio(k) "**" : "0"), te[k], rep[k], repc[k], sc(k) }
}
function days(   i, k, a, b) { a = "9"; b = ""; for (i = 1; i <= nk; i++) { k = order[i]; if (substr(k, 1, 1) != "P" || !cu[k]) continue
	if (dy[k] < a) a = dy[k]; if (dy[k] > b) b = dy[k] }; return a == b ? a : a " to " b }'
}

if [ "$update" = 1 ]; then
	body=$(rows "$@" | sort -t, -k9,9 -k8,8 -k7,7 | { passes=1; readme=0; table; })
	row=$(rows "$@" | sort -t, -k9,9 -k8,8 -k7,7 | { passes=0; readme=1; table; })
	f=$HERE/README.md
	grep -q '^<!-- ledger:begin -->$' "$f" && grep -q '^<!-- ledger:end -->$' "$f" ||
		{ echo "crash-table.sh: $f lacks the ledger markers" >&2; exit 1; }
	awk -v body="$body" '/^<!-- ledger:begin -->$/ { print; print ""; print "Generated by `crashtests/crash-table.sh --update-readmes`; do not edit by hand."; print ""; print body; print ""; skip = 1; next }
		/^<!-- ledger:end -->$/ { skip = 0 } !skip' "$f" >"$f.tmp" && mv "$f.tmp" "$f"
	g=$ROOT/README.md
	grep -q '^| VM kill ledger' "$g" || { echo "crash-table.sh: $g has no '| VM kill ledger' line" >&2; exit 1; }
	awk -v row="$row" '/^\| VM kill ledger/ { print row; next } { print }' "$g" >"$g.tmp" && mv "$g.tmp" "$g"
	echo "crash-table.sh: updated $f and $g" >&2
	exit 0
fi
# order: filesystem, mode, then date and run directory
rows "$@" | sort -t, -k9,9 -k8,8 -k7,7 -k2,2 | table

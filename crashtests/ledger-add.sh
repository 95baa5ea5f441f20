#!/bin/bash
# ledger-add.sh - put one vm-crash.sh pass into the crash ledger.
#
# usage: crashtests/ledger-add.sh [--results DIR] OUT
#
# OUT is a vm-crash.sh output directory (--out): meta.txt, summary.txt,
# <mode>-j<J>/{cycles.csv,guest.log,phases.csv}.  For each mode of the pass
# that finished at least one cycle, writes
#   DIR/<date>/<fs>-<mode>-s<seed>/   (DIR: crashtests/results; <date>: the
#                                      pass's start, UTC; -t<HHMMSSZ> added
#                                      when another pass of that seed has
#                                      the name)
#     meta.txt         the pass's metadata (kernel keys, engine and harness
#                      commits, fs, seed, options, start) plus mode, cycles,
#                      status (complete | interrupted), mode_start, mode_end
#     cycles.csv       the per-cycle CSV (jobs concatenated, one header)
#     phases.csv       per-boot timestamps (vm-crash.sh), a job column first
#     verdicts.txt     the guest log's "###", "prescan", "verdict", "ready"
#                      and "timing" lines
#     cycle-starts.txt its "### cycle" lines
#     summary.txt      the pass's summary (absent if it was stopped)
#     harness-stderr.txt  OUT/harness-stderr.txt, if the caller kept one
# A pass stopped midway (no pass_end in meta.txt, or no mode_end for the
# mode) keeps the cycles whose verdict came: status=interrupted, mode_end =
# the start of the boot that gave the last verdict.  Refuses to overwrite
# an existing ledger directory (exit 1).  Prints the directories written.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
results=$HERE/results
while [ $# -gt 0 ]; do
	case $1 in
	--results) results=${2:?}; shift ;;
	-h|--help) sed -n '2,27p' "$0" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ $# = 1 ] || { sed -n '2,27p' "$0" >&2; exit 2; }
out=$1
meta=$out/meta.txt
[ -f "$meta" ] || { echo "ledger-add.sh: no $meta (a pass of vm-crash.sh from before the ledger?)" >&2; exit 1; }
get() { sed -n "s/^$1=//p" "$meta" | head -1; }
fs=$(get fs) seed=$(get seed) start=$(get pass_start)
day=${start%%T*}
[ -n "$fs" ] && [ -n "$seed" ] && [ -n "$day" ] || { echo "ledger-add.sh: $meta lacks fs, seed or pass_start" >&2; exit 1; }
wrote=0
for mode in $(get modes); do
	jobs=("$out/$mode"-j*)
	[ -e "${jobs[0]}/cycles.csv" ] || continue
	n=$(cat "$out/$mode"-j*/cycles.csv | grep -c . || true)
	[ "$n" -gt 0 ] || { echo "ledger-add.sh: $mode: no finished cycle, nothing to add" >&2; continue; }
	dest=$results/$day/$fs-$mode-s$seed
	# another pass with this seed that day (the CI's stop-check pass and
	# a campaign pass can share one): name this one by its start time
	if [ -e "$dest" ] && ! grep -qx "pass_start=$start" "$dest/meta.txt" 2>/dev/null; then
		t=${start#*T}
		dest=$dest-t${t//:/}
	fi
	[ -e "$dest" ] && { echo "ledger-add.sh: $dest exists; not overwriting" >&2; exit 1; }
	mkdir -p "$dest"
	{ sed -n '1p' "$out/cycles.csv" 2>/dev/null | grep '^mode,' ||
		echo "mode,fs,job,cycle,seed,epoch,kill,events_before_kill,ms_since_event,run_s,ready_from,acked,started,acked_in_cycle,k,verdict,open,check,bad_checksums,torn_repaired,corrupt_pages,verify_s,cycle_s,why"
	  cat "$out/$mode"-j*/cycles.csv; } >"$dest/cycles.csv"
	: >"$dest/verdicts.txt"
	: >"$dest/cycle-starts.txt"
	first=1
	for j in "${jobs[@]}"; do
		jn=${j##*-j}
		[ ${#jobs[@]} -gt 1 ] && echo "## job $jn" >>"$dest/verdicts.txt"
		grep -E '^(### |prescan |verdict |ready from |timing )' "$j/guest.log" >>"$dest/verdicts.txt" || true
		grep '^### cycle ' "$j/guest.log" >>"$dest/cycle-starts.txt" || true
		if [ -f "$j/phases.csv" ]; then
			if [ $first = 1 ]; then sed -n '1s/^/job,/p' "$j/phases.csv" >"$dest/phases.csv"; first=0; fi
			sed -n "2,\$s/^/$jn,/p" "$j/phases.csv" >>"$dest/phases.csv"
		fi
	done
	mstart=$(get "mode_start_$mode") mend=$(get "mode_end_$mode")
	status=complete
	# a job that stopped on a harness error (a boot without a verdict)
	# ran fewer cycles than asked: its finished ones count, as when a
	# pass is interrupted
	grep -q '^HARNESS ERROR' "$out/summary.txt" 2>/dev/null && status=harness-error
	if [ -z "$(get pass_end)" ] || [ -z "$mend" ]; then
		status=interrupted
		# cycle n's verdict came in boot n+1: its start bounds the pass
		mend=$(awk -v c=$((n + 1)) '$3 == c { print $4 }' "$dest/cycle-starts.txt" | tail -1)
		mend="${mend:-unknown} (start of the boot that gave the last verdict)"
	fi
	{
		grep -v -E '^(mode_start_|mode_end_|modes=)' "$meta"
		echo "mode=$mode"
		echo "cycles=$n"
		echo "status=$status"
		echo "mode_start=${mstart:-$start}"
		echo "mode_end=$mend"
		echo "source=$out"
	} >"$dest/meta.txt"
	[ -f "$out/summary.txt" ] && cp "$out/summary.txt" "$dest/summary.txt"
	[ -f "$out/harness-stderr.txt" ] && cp "$out/harness-stderr.txt" "$dest/harness-stderr.txt"
	echo "$dest"
	wrote=$((wrote + 1))
done
[ $wrote -gt 0 ] || { echo "ledger-add.sh: nothing added from $out" >&2; exit 1; }

#!/bin/bash
# campaign.sh - the VM kill campaign's driver: vm-crash.sh passes one after
# another, one VM at a time, each put into the crash ledger, committed and
# merged into main as it finishes (issue 36).
#
# usage: campaign.sh --fs FS --run-wt DIR --ledger-wt DIR --stop HH:MM
#            [--kills N] [--seed S] [--modes "atomic doublewrite unsafe"]
#            [--ctl DIR]
#
# Run a COPY of this script (it checks out DIR --run-wt between passes, and
# bash reads a script as it runs).  Each pass: check out the ref in
# CTL/ref (default main) in --run-wt, detached; run
#   vm-crash.sh --fs FS --mode M --kills K --seed S --jobs 1 --out ...
# from there (modes in rotation, seeds S, S+1, ...; K = --kills, fewer when
# less time is left before --stop at the mode's measured s/cycle); then
# ledger-add.sh into --ledger-wt (a worktree of branch campaign-ledger),
# commit "crashtests: ledger: FS MODE seed S, N cycles, V violations" and
# merge it into main under /work/merge.lock (main first merged into the
# branch; a failed merge is aborted, logged, and left for a person).
# No new pass starts at or after --stop; a pass still running at --stop
# is stopped (its finished cycles count: ledger-add.sh marks it
# interrupted).  CTL/pause: no new pass while it exists.  CTL/stop: stop
# as at --stop.  Log: CTL/driver.log.  Environment: UNTORN_VM_DIR
# (/var/tmp/untorn-vm-campaign), MERGE_MAIN (/work/main), SPC_atomic,
# SPC_doublewrite, SPC_unsafe (s/cycle for sizing, default 20/28/24),
# SETUP_S (a pass's setup, 40).
set -uo pipefail
fs="" runwt="" ledgerwt="" stop="" kills=30 seed=70000 modes="atomic doublewrite unsafe"
ctl=/var/tmp/untorn-campaign
while [ $# -gt 0 ]; do
	case $1 in
	--fs) fs=$2; shift ;;
	--run-wt) runwt=$2; shift ;;
	--ledger-wt) ledgerwt=$2; shift ;;
	--stop) stop=$2; shift ;;
	--kills) kills=$2; shift ;;
	--seed) seed=$2; shift ;;
	--modes) modes=$2; shift ;;
	--ctl) ctl=$2; shift ;;
	*) sed -n '2,27p' "$0" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$fs" ] && [ -n "$runwt" ] && [ -n "$ledgerwt" ] && [ -n "$stop" ] || { sed -n '2,27p' "$0" >&2; exit 2; }
export UNTORN_VM_DIR=${UNTORN_VM_DIR:-/var/tmp/untorn-vm-campaign}
MAIN=${MERGE_MAIN:-/work/main}
mkdir -p "$ctl"
LOG=$ctl/driver.log
log() { echo "$(date -u +%T) $*" >>"$LOG"; }
stop_s=$(date -ud "$(date -u +%F) $stop" +%s)
left() { echo $((stop_s - $(date +%s))); }
stopped() { [ -e "$ctl/stop" ] || [ "$(left)" -le 0 ]; }
spc() { local v="SPC_$1"; echo "${!v:-$(case $1 in atomic) echo 20 ;; doublewrite) echo 28 ;; *) echo 24 ;; esac)}"; }

# commit_pass OUT MODE SEED: ledger, commit, merge into main, all under
# the merge lock with main first merged into the branch, so that the merge
# into main is this commit alone on top of main (no conflict can come)
# (a lock not had within 10 min: the pass waits in CTL/pending for the
# next one)
commit_pass() {
	local rc=0 line
	echo "$*" >>"$ctl/pending"
	exec 8>/work/merge.lock
	if ! flock -w 600 8; then
		log "merge lock busy for 10 min: $1 waits for the next pass"
		exec 8>&-
		return 1
	fi
	while read -r line; do
		# shellcheck disable=SC2086
		_commit_pass $line || rc=1
	done <"$ctl/pending"
	: >"$ctl/pending"
	flock -u 8
	exec 8>&-
	return $rc
}
_commit_pass() {
	local out=$1 mode=$2 s=$3 dirs d n v t rep status subj res
	(cd "$ledgerwt" && git merge -q --no-edit main >>"$LOG" 2>&1) ||
		{ log "merge of main into the ledger branch failed; aborted, nothing committed"; (cd "$ledgerwt" && git merge --abort) 2>/dev/null; return 1; }
	dirs=$(bash "$runwt/crashtests/ledger-add.sh" --results "$ledgerwt/crashtests/results" "$out" 2>>"$LOG") ||
		{ log "ledger-add failed for $out"; return 1; }
	# the README tables, once the ledger's tools are on main
	if grep -q '^<!-- ledger:begin -->$' "$ledgerwt/crashtests/README.md" 2>/dev/null; then
		bash "$ledgerwt/crashtests/crash-table.sh" --update-readmes >>"$LOG" 2>&1 ||
			{ log "crash-table --update-readmes failed; README left as it was"; git -C "$ledgerwt" checkout -q -- README.md crashtests/README.md; }
	fi
	for d in $dirs; do
		n=$(grep -v '^mode,' "$d/cycles.csv" | grep -c . || true)
		v=$(awk -F, -v m="$mode" 'NR > 1 && ($16 == "VIOLATION" || (m != "unsafe" && $16 == "tear")) { c++ } END { print c + 0 }' "$d/cycles.csv")
		t=$(awk -F, 'NR > 1 && $16 == "tear" { c++ } END { print c + 0 }' "$d/cycles.csv")
		rep=$(awk -F, 'NR > 1 && $20 > 0 { c++; p += $20 } END { printf "%d pages in %d cycles", p, c }' "$d/cycles.csv")
		status=$(sed -n 's/^status=//p' "$d/meta.txt")
		res=$(sed -n 's/^result=//p' "$d/meta.txt"); res=${res:-no verdict (stopped)}
		subj="crashtests: ledger: $fs $mode seed $s, $n cycles, $v violations"
		(cd "$ledgerwt" && git add crashtests/results README.md crashtests/README.md &&
			git commit -q -m "$subj" -m "One pass of the VM kill campaign (issue 36), $status: $res; cycles with torn pages $t, torn pages repaired $rep.
Kernel key of $fs $(sed -n 's/^fs_kernel_key=//p' "$d/meta.txt") (cache $(sed -n 's/^kernel_cache_key=//p' "$d/meta.txt")), engine $(sed -n 's/^engine_commit=//p' "$d/meta.txt"), harness $(sed -n 's/^harness_commit=//p' "$d/meta.txt").
Committed as it finished so that the cycles count even if the session ends." >>"$LOG" 2>&1) ||
			{ log "commit failed for $d"; return 1; }
		log "committed: $subj ($status)"
	done
	if (cd "$MAIN" && git merge -q --no-ff campaign-ledger -m "Merge branch campaign-ledger: $fs $mode seed $s") >>"$LOG" 2>&1; then
		log "merged into main: $(git -C "$MAIN" rev-parse --short HEAD)"
	else
		log "merge into main FAILED; aborting it (the commit stays on campaign-ledger)"
		(cd "$MAIN" && git merge --abort) >>"$LOG" 2>&1
	fi
}

i=0
log "campaign start: fs $fs, stop $stop UTC, $kills kills per pass, modes '$modes', seeds from $seed"
read -ra mlist <<<"$modes"
while :; do
	if stopped; then log "stop time reached: no new pass"; break; fi
	if [ -e "$ctl/pause" ]; then sleep 20; continue; fi
	mode=${mlist[$((i % ${#mlist[@]}))]}
	s=$((seed + i))
	# size the pass to the time left (setup about 40 s)
	k=$(( ($(left) - ${SETUP_S:-40}) / $(spc "$mode") ))
	((k > kills)) && k=$kills
	if ((k < 3)); then log "only $(left) s left: no new pass"; break; fi
	ref=$(cat "$ctl/ref" 2>/dev/null || echo main)
	git -C "$runwt" checkout -q --detach "$ref" >>"$LOG" 2>&1 || { log "checkout $ref failed"; break; }
	out=$UNTORN_VM_DIR/crash/$fs-$mode-s$s
	rm -rf "$out"; mkdir -p "$out"
	log "start $fs $mode --kills $k --seed $s at $(git -C "$runwt" rev-parse --short HEAD) ($ref) -> $out"
	setsid bash "$runwt/crashtests/vm-crash.sh" --fs "$fs" --mode "$mode" --kills "$k" \
		--seed "$s" --jobs 1 --out "$out" >"$out/harness-stderr.txt" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 5
		if stopped && kill -0 "$pid" 2>/dev/null; then
			log "stop time: stopping the running pass (pid $pid)"
			kill -TERM -- "-$pid" 2>/dev/null
			sleep 3
			for q in "$out"/*/qemu.pid; do
				[ -s "$q" ] && kill -9 "$(cat "$q")" 2>/dev/null
			done
			kill -KILL -- "-$pid" 2>/dev/null
			break
		fi
	done
	wait "$pid"; rc=$?
	log "end $fs $mode seed $s rc=$rc: $(grep -h 'cycles' "$out/summary.txt" 2>/dev/null | tail -1 | cut -c1-200)"
	if ! cat "$out"/*-j*/cycles.csv 2>/dev/null | grep -q .; then
		# no cycle at all (a build or setup error, e.g. main broken for
		# a moment): do not spin; the same seed is tried again
		log "no cycle finished (see $out/harness-stderr.txt); waiting 120 s"
		sleep 120
		continue
	fi
	commit_pass "$out" "$mode" "$s"
	i=$((i + 1))
done
log "campaign done"

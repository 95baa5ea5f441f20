#!/usr/bin/env bash
# bench/report-test.sh BENCH_DURABLE - the benchmark's pipeline on this host,
# small: bench_durable --recover with a checkpoint-interval sweep gives every
# run a recovery time; bench/vm-report.sh turns its CSV (in vm-bench.sh's
# form) into the sweep table with that column, full-page against
# double-write per interval, and no empty or internally numbered headings;
# bench/vm-plot.sh (when gnuplot is here) draws the sweep and names only the
# plots it drew.  What a first real VM sweep would otherwise find broken.
set -euo pipefail
bd=${1:?usage: report-test.sh BENCH_DURABLE}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/report-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "report-test: FAIL: $*" >&2; exit 1; }

"$bd" -s 4M -c 1 -t 1 -w 0 -m doublewrite,fullpage,sqlite --ckpt-sweep 1M,64M \
	--rounds 1 --warm-round --recover --no-copy -d "$tmp" >"$tmp/out" 2>&1 ||
	{ cat "$tmp/out" >&2; fail "bench_durable exited $?"; }
csv=$tmp/run.csv
{
	echo "profile,wl,round,workload,system,threads,ops,commits,secs,ops_s,p50_us,p99_us,p999_us,dev_wbytes,dev_wreqs,dev_flushes,page_bytes,dw_bytes,log_bytes,syncs,rss_kib,cpu_busy,note,recover_s"
	sed -n 's/^csv,/plp,w1,/p' "$tmp/out"
} >"$csv"
# 2 rounds (0 and 1) x (2 untorn modes x 2 intervals + sqlite)
rows=$(($(wc -l <"$csv") - 1))
[ "$rows" = 10 ] || { cat "$tmp/out" >&2; fail "$rows CSV rows, want 10"; }
awk -F, 'NR > 1 && (NF != 24 || !($24 > 0) || $23 ~ /RECOVERY FAILED/) { print; bad = 1 } END { exit bad }' \
	"$csv" || fail "a run without a recovery time (column 24)"

rep=$(bash "$here/vm-report.sh" "$csv" 1500000)
for m in doublewrite fullpage; do
	for i in 1M 64M; do
		grep -Eq "^\| plp \| [^|]* \| $m \| $i \| 1 \| 1 \|( [0-9.]+ \|){9} [0-9]+\.[0-9]+ \|$" <<<"$rep" ||
			{ echo "$rep" >&2; fail "no sweep row with a recovery time for $m at $i"; }
	done
done
grep -Eq '^\| plp \| [^|]* \| sqlite \|.*\| [0-9]+\.[0-9]+ \| [0-9.]+ \| [0-9]+% \|$' <<<"$rep" ||
	{ echo "$rep" >&2; fail "no recovery time in SQLite's row"; }
for i in 1M 64M; do
	grep -q "^- plp, interval $i: full-page makes [0-9.]*x double-write's commits/s" <<<"$rep" ||
		{ echo "$rep" >&2; fail "no full-page/double-write line for $i"; }
done
grep -iq '^#.*issue [0-9]' <<<"$rep" && fail "a heading names an internal issue"
# every heading has something under it (one blank line, then text)
awk '/^## / { h = $0; getline; getline; if ($0 == "" || $0 ~ /^## /) { print h; bad = 1 } } END { exit bad }' \
	<<<"$rep" || fail "an empty section"

if command -v gnuplot >/dev/null; then
	touch "$tmp/p-old.png"	# an older plot with the run's prefix: not this run's
	plots=$(bash "$here/vm-plot.sh" "$csv" "$tmp/p" test now 2>&1 >/dev/null | grep '\.png$')
	grep -qx "$tmp/p-ckpt.png" <<<"$plots" || fail "no sweep plot listed: $plots"
	[ -s "$tmp/p-ckpt.png" ] || fail "sweep plot empty"
	grep -q "p-old.png" <<<"$plots" && fail "an older plot listed as drawn: $plots"
fi
echo "report-test: ok ($rows runs, each with its recovery time)"

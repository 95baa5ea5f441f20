#!/usr/bin/env bash
# bench/vm-plot.sh CSV PREFIX COMMIT STAMP - PNG plots (gnuplot) of a
# bench/vm-bench.sh run:
#   PREFIX-commits.png  w1 commits/s by system and profile (median, min-max bars)
#   PREFIX-bytes.png    w1 bytes per commit: at the device, and the engine's
#                       page / double-write / log split (untorn, SQLite)
#   PREFIX-latency.png  w1 p50 / p99 / p99.9 latency by system (log scale)
#   PREFIX-ratio.png    atomic/doublewrite ratio per round, median, +-10% band
#   PREFIX-threads.png  w1+w2 commits/s against committing threads (if run)
#   PREFIX-workloads.png ops/s per workload and system, first profile (if run)
set -euo pipefail
csv=$1 prefix=$2 commit=$3 stamp=$4
command -v gnuplot >/dev/null || { echo "vm-plot.sh: gnuplot missing (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/vm-plot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
label="untorn $commit, $stamp, QEMU/TCG: emulated rates"

# per (profile, wl, system, threads): median ops/s, min, max, p50, p99,
# p99.9 medians, bytes per commit (device, page, dw, log)
awk -F, '
function med(s,    a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function mn(s,    a, n, i, m) { n = split(s, a, " "); m = a[1] + 0; for (i = 2; i <= n; i++) if (a[i] + 0 < m) m = a[i] + 0; return m }
function mx(s,    a, n, i, m) { n = split(s, a, " "); m = a[1] + 0; for (i = 2; i <= n; i++) if (a[i] + 0 > m) m = a[i] + 0; return m }
NR == 1 || ($3 == 0 && $5 != "raw") || $7 + 0 == 0 { next }
{
	k = $1 "," $2 "," $5 "," $6
	if (!(k in o)) keys[++nk] = k
	o[k] = o[k] " " $10; a[k] = a[k] " " $11; b[k] = b[k] " " $12; c[k] = c[k] " " $13
	com[k] += $8; dev[k] += $14; pg[k] += $17; dw[k] += $18; lg[k] += $19
}
END {
	for (i = 1; i <= nk; i++) {
		k = keys[i]; cc = com[k] ? com[k] : 1
		printf "%s,%.1f,%.1f,%.1f,%.0f,%.0f,%.0f,%.2f,%.2f,%.2f,%.2f\n", k, med(o[k]), mn(o[k]), mx(o[k]),
			med(a[k]), med(b[k]), med(c[k]), dev[k] / cc / 1024, pg[k] / cc / 1024, dw[k] / cc / 1024, lg[k] / cc / 1024
	}
}' "$csv" >"$tmp/agg.csv"
# agg: 1 profile 2 wl 3 system 4 threads 5 med 6 min 7 max 8 p50 9 p99 10 p999 11 devKiB 12 pgKiB 13 dwKiB 14 lgKiB

order="atomic doublewrite unsafe sqlite lmdb rocksdb"
# profiles in the order of the CSV: all of them, those with workload 1 (1
# thread) and those with workload 2
profiles=$(awk -F, '{print $1}' "$tmp/agg.csv" | awk '!s[$0]++' | tr '\n' ' ')
w1profiles=$(awk -F, '$2 == "w1" && $4 == 1 {print $1}' "$tmp/agg.csv" | awk '!s[$0]++' | tr '\n' ' ')
w2profiles=$(awk -F, '$2 == "w2" {print $1}' "$tmp/agg.csv" | awk '!s[$0]++' | tr '\n' ' ')
first=${profiles%% *}
w1first=${w1profiles%% *}

if [ -z "$w1profiles" ]; then
	echo "vm-plot.sh: no workload 1 in $csv: no commits, bytes, latency, ratio plots" >&2
else
# w1 by system: one row per system, columns per profile (med min max)
for s in $order; do
	line=$s
	found=0
	for p in $w1profiles; do
		v=$(awk -F, -v p="$p" -v s="$s" '$1 == p && $2 == "w1" && $3 == s && $4 == 1 {print $5, $6, $7}' "$tmp/agg.csv")
		[ -n "$v" ] && found=1 || v="NaN NaN NaN"
		line="$line $v"
	done
	[ $found = 1 ] && echo "$line"
done >"$tmp/commits.dat"
awk -F, -v p="$w1first" '$1 == p && $2 == "w1" && $4 == 1 {print $3, $11, $12, $13, $14, $8, $9, $10}' "$tmp/agg.csv" |
	awk -v order="$order" 'BEGIN { n = split(order, o, " ") } { r[$1] = $0 } END { for (i = 1; i <= n; i++) if (o[i] in r) print r[o[i]] }' >"$tmp/w1.dat"

{
	echo "set terminal pngcairo size 900,520 font 'sans,10'"
	echo "set output '$prefix-commits.png'"
	echo "set title \"Workload 1: durable single-put commits/s, data 4x cache, XFS 16 KiB (median of rounds, bars min-max)\\n{/*0.8 $label}\""
	echo "set style data histogram; set style histogram errorbars gap 1 lw 1; set style fill solid 0.6 border -1"
	echo "set ylabel 'commits/s'; set yrange [0:*]; set grid ytics; set key top right"
	printf "plot "
	i=0
	for p in $w1profiles; do
		c=$((2 + 3 * i))
		[ $i -gt 0 ] && printf ", "
		printf "'%s' using %d:%d:%d:xtic(1) title 'profile %s'" "$tmp/commits.dat" $c $((c + 1)) $((c + 2)) "$p"
		i=$((i + 1))
	done
	echo
} >"$tmp/commits.gp"
gnuplot "$tmp/commits.gp"

gnuplot <<EOF
set terminal pngcairo size 900,520 font 'sans,10'
set output '$prefix-bytes.png'
set title "Workload 1, profile $w1first: KiB written per commit\n{/*0.8 $label}"
set style data histogram; set style histogram clustered gap 1; set style fill solid 0.6 border -1
set ylabel 'KiB per commit'; set yrange [0:*]; set grid ytics; set key top right
plot '$tmp/w1.dat' using 2:xtic(1) title 'at the device (/sys/block stat)', \
     '' using 3 title 'in-place pages (engine)', '' using 4 title 'double-write copies (engine)', \
     '' using 5 title 'log / WAL (engine)'
EOF

gnuplot <<EOF
set terminal pngcairo size 900,520 font 'sans,10'
set output '$prefix-latency.png'
set title "Workload 1, profile $w1first: commit latency percentiles (median of rounds)\n{/*0.8 $label}"
set style data histogram; set style histogram clustered gap 1; set style fill solid 0.6 border -1
set ylabel 'µs (log scale)'; set logscale y; set yrange [1000:*]; set grid ytics; set key top left
plot '$tmp/w1.dat' using 6:xtic(1) title 'p50', '' using 7 title 'p99', '' using 8 title 'p99.9'
EOF

# ratio per round, per profile with both atomic and doublewrite (w1, 1 thread)
awk -F, -v plist="$tmp/ratio.profiles" 'NR > 1 && $3 > 0 && $2 == "w1" && $6 == 1 && $7 + 0 > 0 && ($5 == "atomic" || $5 == "doublewrite") { v[$1 "," $3 "," $5] = $10; if (!($1 in seen)) { seen[$1] = 1; pl[++n] = $1 } if ($3 + 0 > mr) mr = $3 + 0 }
	END { for (i = 1; i <= n; i++) { m = 0; for (r = 1; r <= mr; r++) { a = v[pl[i] "," r ",atomic"]; d = v[pl[i] "," r ",doublewrite"]; if (a && d) { print r, a / d; m++ } }
		if (m) { print ""; print ""; print pl[i] >plist } } }' "$csv" >"$tmp/ratio.dat"
rprofiles=$(cat "$tmp/ratio.profiles" 2>/dev/null || true)
if [ -z "$rprofiles" ]; then
	echo "vm-plot.sh: no round with both atomic and doublewrite in workload 1: no ratio plot" >&2
else
{
	echo "set terminal pngcairo size 900,480 font 'sans,10'"
	echo "set output '$prefix-ratio.png'"
	echo "set title \"Workload 1: atomic / doublewrite commits/s in each round (line: median; band: median +-10%)\\n{/*0.8 $label}\""
	echo "set xlabel 'round'; set ylabel 'atomic / doublewrite'; set grid; set key top right; set xtics 1; set yrange [0:*]"
	printf "plot "
	i=0
	for p in $rprofiles; do
		m=$(awk -v blk=$i 'BEGIN { b = 0 } /^$/ { e++; if (e == 2) { b++; e = 0 } next } { e = 0; if (b == blk) print $2 }' "$tmp/ratio.dat" |
			sort -g | awk '{ a[++n] = $1 } END { if (n) print (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2); else print "NaN" }')
		[ $i -gt 0 ] && printf ", "
		printf "'%s' index %d using 1:2 with linespoints lw 2 pt 7 lc %d title 'profile %s', %s with lines lc %d dt 2 notitle, %s*0.9 with lines lc %d dt 3 notitle, %s*1.1 with lines lc %d dt 3 notitle" \
			"$tmp/ratio.dat" $i $((i + 1)) "$p" "$m" $((i + 1)) "$m" $((i + 1)) "$m" $((i + 1))
		i=$((i + 1))
	done
	echo
} >"$tmp/ratio.gp"
gnuplot "$tmp/ratio.gp"
fi
fi

# threads (w1 = 1 thread, w2 = 4, 16), first profile with workload 2
if [ -n "$w2profiles" ]; then
	w2first=${w2profiles%% *}
	tsys=
	for s in $order; do
		awk -F, -v p="$w2first" -v s="$s" '$1 == p && ($2 == "w1" || $2 == "w2") && $3 == s {print $4, $5}' "$tmp/agg.csv" | sort -n >"$tmp/threads-$s.dat"
		[ -s "$tmp/threads-$s.dat" ] && tsys="$tsys $s"
	done
	{
		echo "set terminal pngcairo size 900,520 font 'sans,10'"
		echo "set output '$prefix-threads.png'"
		echo "set title \"Workloads 1+2, profile $w2first: durable single-put commits/s against committing threads\\n{/*0.8 $label}\""
		echo "set xlabel 'threads'; set ylabel 'commits/s'; set logscale x 2; set xrange [0.8:20]; set xtics (1, 4, 16); set grid; set key outside right; set yrange [0:*]"
		printf "plot "
		i=0
		for s in $tsys; do
			[ $i -gt 0 ] && printf ", "
			printf "'%s' using 1:2 with linespoints lw 2 pt 7 title '%s'" "$tmp/threads-$s.dat" "$s"
			i=$((i + 1))
		done
		echo
	} >"$tmp/threads.gp"
	gnuplot "$tmp/threads.gp"
fi

# ops/s by workload (1 thread), first profile; columns for the workloads run
if awk -F, -v p="$first" '$1 == p && ($2 == "w3" || $2 == "w4" || $2 == "w5") { f = 1 } END { exit !f }' "$tmp/agg.csv"; then
	wls=$(awk -F, -v p="$first" '$1 == p && $4 == 1 && ($2 == "w1" || $2 == "w3" || $2 == "w4" || $2 == "w5") {print $2}' "$tmp/agg.csv" | sort -u | tr '\n' ' ')
	for s in $order; do
		line=$s found=0
		for w in $wls; do
			v=$(awk -F, -v p="$first" -v s="$s" -v w="$w" '$1 == p && $2 == w && $3 == s && $4 == 1 {print $5}' "$tmp/agg.csv")
			[ -n "$v" ] && found=1 || v=NaN
			line="$line $v"
		done
		[ $found = 1 ] && echo "$line"
	done >"$tmp/wl.dat"
	{
		echo "set terminal pngcairo size 900,520 font 'sans,10'"
		echo "set output '$prefix-workloads.png'"
		echo "set title \"Profile $first: operations/s by workload (1 thread; median of rounds; w4 counts loaded keys)\\n{/*0.8 $label}\""
		echo "set style data histogram; set style histogram clustered gap 1; set style fill solid 0.6 border -1"
		echo "set ylabel 'ops/s (log scale)'; set logscale y; set grid ytics; set key outside right"
		printf "plot "
		c=2
		for w in $wls; do
			case $w in
			w1) t='w1 update, 4x cache' ;;
			w3) t='w3 update, in cache' ;;
			w4) t='w4 bulk load' ;;
			w5) t='w5 90% get' ;;
			esac
			[ $c -gt 2 ] && printf ", "
			printf "'%s' using %d%s title '%s'" "$tmp/wl.dat" $c "$([ $c = 2 ] && echo ':xtic(1)')" "$t"
			c=$((c + 1))
		done
		echo
	} >"$tmp/wl.gp"
	gnuplot "$tmp/wl.gp"
fi
ls "$prefix"-*.png >&2

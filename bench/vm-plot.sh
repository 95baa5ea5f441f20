#!/usr/bin/env bash
# bench/vm-plot.sh CSV PREFIX COMMIT STAMP - PNG plots (gnuplot) of a
# bench/vm-bench.sh run.  Round 0 (the warm-up round) is not counted.
# Workload 1 (1 thread), from the profiles that ran it:
#   PREFIX-commits.png  commits/s by system and profile (median, min-max bars)
#   PREFIX-bytes.png    bytes per commit, first such profile: at the device,
#                       and the engine's page / double-write / log split
#   PREFIX-latency.png  p50 / p99 / p99.9 commit latency of every system in
#                       every counted round, one panel per profile (log ms)
#   PREFIX-ratio.png    atomic/doublewrite ratio per round, median, +-10% band
# Workload 2 (4 and 16 threads), if run:
#   PREFIX-latency-w2.png  p50 / p99 / p99.9 per system in every round, one
#                       panel per profile and thread count (log ms)
#   PREFIX-threads.png  commits/s against committing threads (w1 + w2),
#                       first profile with workload 2
# Workloads 3-5, if run:
#   PREFIX-workloads.png ops/s per workload and system, first profile
# The checkpoint-interval sweep (--ckpt-sweep), if run:
#   PREFIX-ckpt.png     commits/s and KiB per commit (device, log) against
#                       the interval, one line per mode, first profile, and
#                       the recovery after a kill when the CSV has it
# A plot whose data the CSV lacks (no workload 1, say) is skipped, with a
# message on stderr for the workload 1 plots.  In a sweep-only run the
# plots but PREFIX-ckpt.png show the untorn modes at the 64M interval.
set -euo pipefail
csv=$1 prefix=$2 commit=$3 stamp=$4
command -v gnuplot >/dev/null || { echo "vm-plot.sh: gnuplot missing (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/vm-plot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# the plots of this run are the files written after this mark (older ones
# with the same name prefix, e.g. NAME-flush-...-bytes.png, are not)
touch "$tmp/mark"
label="untorn $commit, $stamp, QEMU/TCG: emulated rates"
sweeplabel=$label
# A checkpoint sweep names its untorn rows MODE@SIZE only (vm-bench.sh
# --ckpt-sweep): the plots other than the sweep's show them at the engine's
# default interval (64M, engine/db.h), as MODE, and say so.
defiv=64M
if awk -F, -v d="@$defiv" 'NR > 1 && $5 ~ /@/ { sw = 1 } NR > 1 && $5 ~ /^(atomic|doublewrite|fullpage|unsafe)$/ && $2 == "w1" { plain = 1 }
	NR > 1 && substr($5, length($5) - length(d) + 1) == d { def = 1 } END { exit !(sw && def && !plain) }' "$csv"; then
	awk -F, -v OFS=, -v d="@$defiv" '{ print } NR > 1 && substr($5, length($5) - length(d) + 1) == d {
		$5 = substr($5, 1, length($5) - length(d)); print }' "$csv" >"$tmp/in.csv"
	csv=$tmp/in.csv
	label="$label; untorn modes at the $defiv checkpoint interval"
fi

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
	if ($24 != "") rec[k] = rec[k] " " $24
}
END {
	for (i = 1; i <= nk; i++) {
		k = keys[i]; cc = com[k] ? com[k] : 1
		printf "%s,%.1f,%.1f,%.1f,%.0f,%.0f,%.0f,%.2f,%.2f,%.2f,%.2f,%s\n", k, med(o[k]), mn(o[k]), mx(o[k]),
			med(a[k]), med(b[k]), med(c[k]), dev[k] / cc / 1024, pg[k] / cc / 1024, dw[k] / cc / 1024, lg[k] / cc / 1024,
			k in rec ? sprintf("%.3f", med(rec[k])) : "-" 
	}
}' "$csv" >"$tmp/agg.csv"
# agg: 1 profile 2 wl 3 system 4 threads 5 med 6 min 7 max 8 p50 9 p99 10 p999 11 devKiB 12 pgKiB 13 dwKiB 14 lgKiB
# 15 recovery after a kill, s (median; - if not measured)

order="atomic doublewrite fullpage unsafe sqlite lmdb rocksdb"
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

# Commit latency p50 / p99 / p99.9 in each counted round (round > 0), one
# panel per PANEL (profile:threads) of workload WL, systems along x and the
# rounds side by side within a system (round numbers on the top axis), log y
# in ms, one y range for all panels.
latency_plot() { # latency_plot OUT WL TITLE PANEL...
	local out=$1 wl=$2 title=$3 n=0 panel p t ymin ymax rows cols
	shift 3
	: >"$tmp/lat.dat"
	for panel in "$@"; do
		p=${panel%:*} t=${panel##*:}
		awk -F, -v wl="$wl" -v p="$p" -v t="$t" -v order="$order" -v dat="$tmp/lat.dat" -v idx=$n '
		function ms(us) { return us + 0 > 0 ? us / 1000 : "NaN" }
		NR == 1 || $3 + 0 == 0 || $1 != p || $2 != wl || $6 != t || $7 + 0 == 0 { next }
		{
			if (!($5 in seen)) { seen[$5] = 1; app[++na] = $5 }
			r = $3 + 0; if (r > mr) mr = r
			v[$5, r] = ms($11) " " ms($12) " " ms($13)
		}
		END {
			n = split(order, o, " ")
			for (i = 1; i <= n; i++) if (o[i] in seen) { sys[++ns] = o[i]; in_order[o[i]] = 1 }
			for (i = 1; i <= na; i++) if (!(app[i] in in_order)) sys[++ns] = app[i]
			w = mr > 1 ? 0.7 / (mr - 1) : 0
			if (w > 0.2) w = 0.2
			printf "# index %d\n", idx >>dat
			for (i = 1; i <= ns; i++) {
				xt = xt (i > 1 ? ", " : "") "\"" sys[i] "\" " i
				for (r = 1; r <= mr; r++) {
					x = i + (r - (mr + 1) / 2) * w
					x2 = x2 (x2 != "" ? ", " : "") "\"" r "\" " x
					if ((sys[i], r) in v) print x, v[sys[i], r], r, sys[i] >>dat
				}
				if (i > 1) printf "set arrow from %g, graph 0 to %g, graph 1 nohead lc rgb \"#c0c0c0\" back\n", i - 0.5, i - 0.5
			}
			printf "\n\n" >>dat
			printf "set xrange [0.5:%g]; set xtics (%s) nomirror scale 0; set x2tics (%s) font \",7\" scale 0.5; set link x2\n", ns + 0.5, xt, x2
		}' "$csv" >"$tmp/lat-$n.gp"
		n=$((n + 1))
	done
	# y range: whole decades around all the points
	read -r ymin ymax < <(awk '!/^#/ && NF >= 4 { for (i = 2; i <= 4; i++) if ($i != "NaN") { if (mn == "" || $i < mn) mn = $i; if ($i > mx) mx = $i } }
		END { if (mn == "") print 1, 10; else print 10 ^ int(log(mn) / log(10) - (mn < 1 ? 1 : 0)), 10 ^ (int(log(mx) / log(10)) + 1) }' "$tmp/lat.dat")
	cols=1 rows=$n
	[ "$wl" = w2 ] && { cols=$(($# > 1 ? 2 : 1)); rows=$(((n + cols - 1) / cols)); }
	{
		echo "set terminal pngcairo size $((cols * 900 - (cols - 1) * 300)),$((100 + rows * 420)) font 'sans,10'"
		echo "set output '$out'"
		echo "set multiplot layout $rows,$cols title \"$title\\n{/*0.8 $label}\""
		echo "set logscale y; set yrange [$ymin:$ymax]; set format y '%g'; set ylabel 'commit latency, ms (log scale)'"
		echo "set grid ytics mytics lt 1 lc rgb '#c8c8c8' lw 1, lt 1 lc rgb '#ececec' lw 1; set xlabel 'system (top axis: round)'"
		echo "set key outside right top vertical"
		n=0
		for panel in "$@"; do
			p=${panel%:*} t=${panel##*:}
			echo "unset arrow"
			cat "$tmp/lat-$n.gp"
			if [ "$wl" = w2 ]; then echo "set title 'profile $p, $t threads'"; else echo "set title 'profile $p'"; fi
			echo "plot '$tmp/lat.dat' index $n using 1:2:(0):(\$4-\$2) with vectors nohead lc rgb '#b0b0b0' lw 1 title 'one round', \\"
			echo "     '' index $n using 1:2 with points pt 7 ps 1.1 lc rgb '#0072b2' title 'p50', \\"
			echo "     '' index $n using 1:3 with points pt 9 ps 1.3 lc rgb '#e69f00' title 'p99', \\"
			echo "     '' index $n using 1:4 with points pt 5 ps 1.0 lc rgb '#d55e00' title 'p99.9'"
			n=$((n + 1))
		done
		echo "unset multiplot"
	} >"$tmp/lat.gp"
	gnuplot "$tmp/lat.gp"
}

if [ -n "$w1profiles" ]; then
	panels=
	for p in $w1profiles; do panels="$panels $p:1"; done
	latency_plot "$prefix-latency.png" w1 "Workload 1: commit latency p50 / p99 / p99.9 in each counted round (round 0, the warm-up, not shown)" $panels
fi
if [ -n "$w2profiles" ]; then
	panels=
	for p in $w2profiles; do
		for t in $(awk -F, -v p="$p" '$1 == p && $2 == "w2" {print $4}' "$tmp/agg.csv" | sort -n | uniq); do panels="$panels $p:$t"; done
	done
	latency_plot "$prefix-latency-w2.png" w2 "Workload 2: commit latency p50 / p99 / p99.9 in each round, by committing threads" $panels
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
# The checkpoint-interval sweep (vm-bench.sh --ckpt-sweep: systems named
# MODE@INTERVAL), workload 1, first profile that ran it: commits/s and KiB
# per commit (at the device, and in the log) against the interval, one
# line per mode, so that where fullpage and doublewrite cross shows.
sweepprof=$(awk -F, '$2 == "w1" && $4 == 1 && $3 ~ /@/ {print $1; exit}' "$tmp/agg.csv")
if [ -n "$sweepprof" ]; then
	# MODE MiB med min max devKiB logKiB recovery-s, by mode then interval
	awk -F, -v p="$sweepprof" '$1 == p && $2 == "w1" && $4 == 1 && $3 ~ /@/ {
		split($3, a, "@"); v = a[2] + 0; u = substr(a[2], length(a[2]))
		mib = u == "G" ? v * 1024 : u == "K" ? v / 1024 : v
		print a[1], mib, $5, $6, $7, $11, $14, $15 }' "$tmp/agg.csv" | sort -k1,1 -k2,2g >"$tmp/sweep.raw"
	smodes=$(awk '{print $1}' "$tmp/sweep.raw" | awk '!s[$0]++' | tr '\n' ' ')
	# a third panel, recovery after a kill, when the runs measured it
	spanels=2
	awk '$8 != "-" { f = 1 } END { exit !f }' "$tmp/sweep.raw" && spanels=3
	: >"$tmp/sweep.dat"
	for m in $smodes; do
		awk -v m="$m" '$1 == m' "$tmp/sweep.raw" >>"$tmp/sweep.dat"
		printf '\n\n' >>"$tmp/sweep.dat"
	done
	{
		echo "set terminal pngcairo size $((500 * spanels)),480 font 'sans,10'"
		echo "set output '$prefix-ckpt.png'"
		echo "set datafile missing '-'"
		echo "set multiplot layout 1,$spanels title \"Workload 1, profile $sweepprof: against the checkpoint interval (log bytes between checkpoints)\\n{/*0.8 $sweeplabel}\""
		echo "set logscale x 2; set xlabel 'checkpoint interval (MiB)'; set grid; set key bottom right"
		echo "set offsets graph 0.05, graph 0.05, 0, 0"
		echo "set ylabel 'commits/s (median, bars min-max)'; set yrange [0:*]"
		printf "plot "
		i=0
		for m in $smodes; do
			[ $i -gt 0 ] && printf ", "
			printf "'%s' index %d using 2:3:4:5 with yerrorlines lw 2 pt 7 lc %d title '%s'" "$tmp/sweep.dat" $i $((i + 1)) "$m"
			i=$((i + 1))
		done
		echo
		echo "set ylabel 'KiB per commit'; set key top right"
		printf "plot "
		i=0
		for m in $smodes; do
			[ $i -gt 0 ] && printf ", "
			printf "'%s' index %d using 2:6 with linespoints lw 2 pt 7 lc %d title '%s: at the device', '' index %d using 2:7 with linespoints lw 1 dt 2 pt 6 lc %d title '%s: log'" \
				"$tmp/sweep.dat" $i $((i + 1)) "$m" $i $((i + 1)) "$m"
			i=$((i + 1))
		done
		echo
		if [ $spanels = 3 ]; then
			echo "set ylabel 'recovery after a kill (s, median)'; set key top left; set yrange [0:*]"
			printf "plot "
			i=0
			for m in $smodes; do
				[ $i -gt 0 ] && printf ", "
				printf "'%s' index %d using 2:8 with linespoints lw 2 pt 7 lc %d title '%s'" "$tmp/sweep.dat" $i $((i + 1)) "$m"
				i=$((i + 1))
			done
			echo
		fi
		echo "unset multiplot"
	} >"$tmp/sweep.gp"
	gnuplot "$tmp/sweep.gp"
fi
find "$(dirname "$prefix")" -maxdepth 1 -name "$(basename "$prefix")-*.png" -newer "$tmp/mark" | sort >&2

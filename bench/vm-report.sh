#!/usr/bin/env bash
# bench/vm-report.sh CSV BPS - the summary of a bench/vm-bench.sh run: the
# table (medians over rounds), the atomic/doublewrite ratio per round with
# its median, min and max (stated only when every round is within 10% of the
# median), the raw-device ceiling and whether the device model binds, and
# the project's targets for the benchmark with the measured value, met or
# not.  With a checkpoint-interval sweep (rows MODE@SIZE): its table and,
# per interval, full-page against double-write.  Column 24 (recover_s,
# bench_durable --recover): the time to recover after the kill that ended
# each run, its median per row ("-" where not measured).
set -euo pipefail
csv=$1
bps=${2:-4000000}

awk -F, -v bps="$bps" '
function med(s,    a, n, i, j, t) {	# median of a space-separated list
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	if (!n) return 0
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function mn(s,    a, n, i, m) { n = split(s, a, " "); m = a[1] + 0; for (i = 2; i <= n; i++) if (a[i] + 0 < m) m = a[i] + 0; return m }
function mx(s,    a, n, i, m) { n = split(s, a, " "); m = a[1] + 0; for (i = 2; i <= n; i++) if (a[i] + 0 > m) m = a[i] + 0; return m }
function kib(x) { return sprintf("%.1f", x / 1024) }
function section(title, body) { if (body != "") { print ""; print "## " title; print ""; printf "%s", body } }	# a heading only over something
function recs(k) { return k in rec ? sprintf("%.2f", med(rec[k])) : "-" }	# median recovery s
BEGIN {
	nsys = split("atomic doublewrite fullpage unsafe sqlite lmdb rocksdb raw", sysorder, " ")
	nwl = split("ceiling w1 w2 w3 w4 w5", wlorder, " ")
	wlname["ceiling"] = "ceiling: raw 16 KiB RWF_ATOMIC + fdatasync"
	wlname["w1"] = "1: durable updates, data 4x cache"
	wlname["w2"] = "2: durable updates, K threads"
	wlname["w3"] = "3: durable updates, data in cache"
	wlname["w4"] = "4: bulk load, 1000 puts/sync"
	wlname["w5"] = "5: 90% get, 10% durable put"
}
NR == 1 || ($3 == 0 && $5 != "raw") { next }	# header; round 0 = warm-up round, not counted (raw: 0 = no rounds)
{
	p = $1; w = $2; r = $3; s = $5; t = $6
	if (!(p in seenp)) { seenp[p] = 1; plist[++np] = p }
	k = p SUBSEP w SUBSEP s SUBSEP t
	if (!(k in n)) { n[k] = 0; seent[p SUBSEP w SUBSEP t] = 1; if (!((w SUBSEP t) in tseen)) { tseen[w SUBSEP t] = 1; tl[w] = tl[w] " " t } }
	if (s ~ /@/ && !((p SUBSEP w SUBSEP s SUBSEP t) in swseen)) { swseen[k] = 1; swk[++nsw] = k; swp[nsw] = p; sww[nsw] = w; sws[nsw] = s; swt[nsw] = t }
	if ($7 + 0 == 0) { na[k] = $23; next }
	n[k]++
	ops[k] = ops[k] " " $10; p50[k] = p50[k] " " $11; p99[k] = p99[k] " " $12; p999[k] = p999[k] " " $13
	com[k] += $8; dwb[k] += $14; dwr[k] += $15; dfl[k] += $16
	pg[k] += $17; dw[k] += $18; lg[k] += $19; sy[k] += $20
	if ($21 + 0 > rss[k]) rss[k] = $21 + 0
	cpu[k] = cpu[k] " " $22
	if ($24 != "") rec[k] = rec[k] " " $24	# recovery after the kill that ended the run (bench_durable --recover)
	byps[k] = byps[k] " " ($9 > 0 ? $14 / $9 : 0)
	pgps[k] = pgps[k] " " ($9 > 0 ? $17 / 16384 / $9 : 0)
	rops[k SUBSEP r] = $10
	if (r + 0 > maxr[p SUBSEP w SUBSEP t]) maxr[p SUBSEP w SUBSEP t] = r + 0
}
END {
	print "## Table (medians over rounds; per-commit figures are totals over all rounds / commits; round 0, the warm-up round, not counted)"
	print ""
	print "| profile | workload | system | thr | rounds | ops/s median | min | max | p50 µs | p99 µs | p99.9 µs | device KiB/commit | device writes/commit | flushes/commit | page KiB/c | dw KiB/c | log KiB/c | recovery after a kill, s | peak RSS MiB | guest CPU busy |"
	print "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for (pi = 1; pi <= np; pi++) for (wi = 1; wi <= nwl; wi++) {
		p = plist[pi]; w = wlorder[wi]
		nt = split(tl[w], ts, " ")
		for (ti = 1; ti <= nt; ti++) for (si = 1; si <= nsys; si++) {
			t = ts[ti]; s = sysorder[si]; k = p SUBSEP w SUBSEP s SUBSEP t
			if (!(k in n)) continue
			if (!n[k]) { printf "| %s | %s | %s | %s | 0 | %s |\n", p, wlname[w], s, t, na[k]; continue }
			c = com[k] ? com[k] : 1
			printf "| %s | %s | %s | %s | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %.2f | %.3f | %s | %s | %s | %s | %.1f | %.0f%% |\n",
				p, wlname[w], s, t, n[k], med(ops[k]), mn(ops[k]), mx(ops[k]), med(p50[k]), med(p99[k]), med(p999[k]),
				kib(dwb[k] / c), dwr[k] / c, dfl[k] / c,
				(s == "lmdb" || s == "rocksdb" || s == "raw") ? "-" : kib(pg[k] / c),
				(s == "lmdb" || s == "rocksdb" || s == "raw") ? "-" : kib(dw[k] / c),
				(s == "lmdb" || s == "rocksdb" || s == "raw") ? "-" : kib(lg[k] / c), recs(k), rss[k] / 1024, 100 * med(cpu[k])
		}
	}
	if (nsw) {
		print ""
		print "## Checkpoint-interval sweep (untorn systems, one run per interval: MODE@SIZE = log bytes between checkpoints)"
		print ""
		print "| profile | workload | system | interval | thr | rounds | ops/s median | p50 µs | p99 µs | p99.9 µs | device KiB/commit | page KiB/c | dw KiB/c | log KiB/c | flushes/commit | recovery after a kill, s |"
		print "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		for (i = 1; i <= nsw; i++) {
			k = swk[i]; split(sws[i], nm, "@")
			if (!n[k]) { printf "| %s | %s | %s | %s | %s | 0 | %s |\n", swp[i], wlname[sww[i]], nm[1], nm[2], swt[i], na[k]; continue }
			c = com[k] ? com[k] : 1
			printf "| %s | %s | %s | %s | %s | %d | %.0f | %.0f | %.0f | %.0f | %s | %s | %s | %s | %.3f | %s |\n",
				swp[i], wlname[sww[i]], nm[1], nm[2], swt[i], n[k], med(ops[k]), med(p50[k]), med(p99[k]), med(p999[k]),
				kib(dwb[k] / c), kib(pg[k] / c), kib(dw[k] / c), kib(lg[k] / c), dfl[k] / c, recs(k)
		}
		# full-page against double-write at each interval: which costs less
		print ""
		for (i = 1; i <= nsw; i++) {
			split(sws[i], nm, "@")
			if (nm[1] != "fullpage") continue
			kf = swk[i]; kd = swp[i] SUBSEP sww[i] SUBSEP "doublewrite@" nm[2] SUBSEP swt[i]
			if (!n[kf] || !n[kd]) continue
			rf = med(ops[kf]) / med(ops[kd])
			bf = (dwb[kf] / (com[kf] ? com[kf] : 1)) / (dwb[kd] / (com[kd] ? com[kd] : 1))
			printf "- %s, interval %s: full-page makes %.2fx double-write'\''s commits/s with %.2fx its device bytes per commit: %s\n",
				swp[i], nm[2], rf, bf, (rf >= 1.05 ? "full-page is ahead" : rf <= 0.95 ? "double-write is ahead" : "within 5%: even")
		}
	}
	# the sections below per checkpoint interval too when the run swept it
	# ("" = the unswept systems; "@SIZE" = the rows the sweep ran of that interval)
	nsfx = 1; sfx[1] = ""
	for (i = 1; i <= nsw; i++) {
		split(sws[i], nm, "@")
		if (!(("@" nm[2]) in sfxseen)) { sfxseen["@" nm[2]] = 1; sfx[++nsfx] = "@" nm[2] }
	}
	o = ""
	for (pi = 1; pi <= np; pi++) for (wi = 2; wi <= nwl; wi++) for (x = 1; x <= nsfx; x++) {
		p = plist[pi]; w = wlorder[wi]; sx = sfx[x]
		nt = split(tl[w], ts, " ")
		for (ti = 1; ti <= nt; ti++) {
			t = ts[ti]; g = p SUBSEP w SUBSEP t SUBSEP sx
			ka = p SUBSEP w SUBSEP "atomic" sx SUBSEP t; kd = p SUBSEP w SUBSEP "doublewrite" sx SUBSEP t
			if (!n[ka] || !n[kd]) continue
			list = ""; shown = ""
			for (r = 1; r <= maxr[p SUBSEP w SUBSEP t]; r++)
				if ((ka SUBSEP r) in rops && (kd SUBSEP r) in rops && rops[kd SUBSEP r] > 0) {
					y = rops[ka SUBSEP r] / rops[kd SUBSEP r]
					list = list " " y; shown = shown sprintf(" %.2f", y)
				}
			m = med(list); lo = mn(list); hi = mx(list)
			worst = 0
			nn = split(list, a, " ")
			for (i = 1; i <= nn; i++) { d = a[i] / m - 1; if (d < 0) d = -d; if (d > worst) worst = d }
			ratio[g] = m; stable[g] = (worst <= 0.10); nrounds[g] = nn
			o = o sprintf("- %s, %s, %s thread(s)%s: rounds%s; median %.2fx (min %.2f, max %.2f): ", p, wlname[w], t,
				(sx == "" ? "" : ", interval " substr(sx, 2)), shown, m, lo, hi)
			if (worst <= 0.10) o = o sprintf("**%.2fx** (every round within 10%% of the median; worst %.0f%%)\n", m, worst * 100)
			else o = o sprintf("TOO NOISY, no ratio stated (a round is %.0f%% from the median)\n", worst * 100)
		}
	}
	section("atomic / doublewrite, per round (same round, same guest, interleaved)", o)
	o = ""
	for (pi = 1; pi <= np; pi++) {
		p = plist[pi]; k = p SUBSEP "ceiling" SUBSEP "raw" SUBSEP 1
		if (!n[k]) continue
		b = med(byps[k]); ceil[p] = med(ops[k])
		o = o sprintf("- %s: raw writer %.0f writes/s (median of %d runs, min %.0f, max %.0f), device %.0f B/s = %.1f%% of throttling.bps-write=%d: %s\n",
			p, ceil[p], n[k], mn(ops[k]), mx(ops[k]), b, 100 * b / bps, bps,
			((b >= 0.9 * bps && b <= 1.1 * bps) ? "the model binds (within 10%)" : "NOT within 10% of the limit"))
	}
	section("Ceiling (raw device) and the device model", o)
	o = ""
	for (pi = 1; pi <= np; pi++) for (x = 1; x <= nsfx; x++) {
		p = plist[pi]; sx = sfx[x]; g = p SUBSEP "w1" SUBSEP 1 SUBSEP sx
		pl = p (sx == "" ? "" : ", interval " substr(sx, 2))
		ka = p SUBSEP "w1" SUBSEP "atomic" sx SUBSEP 1; kd = p SUBSEP "w1" SUBSEP "doublewrite" sx SUBSEP 1
		if (g in ratio)
			o = o sprintf("- [%s] atomic >= 1.8x doublewrite commits/s on w1: %s\n", pl, (stable[g] ? sprintf("%.2fx over %d rounds: %s", ratio[g], nrounds[g], (ratio[g] >= 1.8 ? "MET" : "NOT MET")) : sprintf("too noisy (median %.2fx): NOT MET (no ratio stated)", ratio[g])))
		dd = 0; de = 0
		if (n[kd] && pg[kd] > 0) { dd = dwb[kd] / pg[kd]; de = (pg[kd] + dw[kd]) / pg[kd] }
		if (n[ka] && pg[ka] > 0)
			o = o sprintf("- [%s] device bytes per in-place page <= 1.05 x 16 KiB (atomic) vs ~2x (doublewrite), w1: atomic %.2fx (engine page+dw bytes %.2fx; the rest is the log: %.1f KiB of device writes per commit for %.0f B of log records), doublewrite %.2fx (engine %.2fx): %s\n", pl,
				dwb[ka] / pg[ka], (pg[ka] + dw[ka]) / pg[ka], (dwb[ka] - pg[ka] - dw[ka]) / (com[ka] ? com[ka] : 1) / 1024, lg[ka] / (com[ka] ? com[ka] : 1),
				dd, de,
				(dwb[ka] / pg[ka] <= 1.05 ? "MET" : "NOT MET at the device (the page bytes alone: met)"))
		if (n[ka] && (p in ceil) && ceil[p] > 0)
			o = o sprintf("- [%s] atomic page-write rate >= 80%% of the raw ceiling, w1: %.0f pages/s against %.0f writes/s = %.0f%%: %s\n", pl,
				med(pgps[ka]), ceil[p], 100 * med(pgps[ka]) / ceil[p], (med(pgps[ka]) >= 0.8 * ceil[p] ? "MET" : "NOT MET"))
		for (wi = 2; wi <= 3; wi++) {
			w = wlorder[wi]; nt = split(tl[w], ts, " ")
			for (ti = 1; ti <= nt; ti++) {
				t = ts[ti]; ka = p SUBSEP w SUBSEP "atomic" sx SUBSEP t; ks = p SUBSEP w SUBSEP "sqlite" SUBSEP t
				if (n[ka] && n[ks])
					o = o sprintf("- [%s] atomic ahead of SQLite WAL FULL, %s, %s thread(s): %.0f vs %.0f ops/s = %.2fx: %s\n", pl, wlname[w], t,
						med(ops[ka]), med(ops[ks]), med(ops[ka]) / med(ops[ks]), (med(ops[ka]) > med(ops[ks]) ? "MET" : "NOT MET"))
			}
		}
		for (wi = 2; wi <= nwl; wi++) {
			w = wlorder[wi]; nt = split(tl[w], ts, " ")
			for (ti = 1; ti <= nt; ti++) {
				t = ts[ti]; ka = p SUBSEP w SUBSEP "atomic" sx SUBSEP t
				if (!n[ka]) continue
				for (pe = 1; pe <= 2; pe++) {
					s = pe == 1 ? "lmdb" : "rocksdb"; kp = p SUBSEP w SUBSEP s SUBSEP t
					if (n[kp] && med(ops[kp]) > med(ops[ka]))
						o = o sprintf("- [%s] %s wins over untorn atomic on %s, %s thread(s): %.0f vs %.0f ops/s; device %.1f vs %.1f KiB and %.2f vs %.2f flushes per commit\n",
							pl, s, wlname[w], t, med(ops[kp]), med(ops[ka]), dwb[kp] / (com[kp] ? com[kp] : 1) / 1024,
							dwb[ka] / (com[ka] ? com[ka] : 1) / 1024, dfl[kp] / (com[kp] ? com[kp] : 1), dfl[ka] / (com[ka] ? com[ka] : 1))
				}
			}
		}
	}
	section("Targets: atomic against double-write, the device and SQLite (ratios from this run)", o)
}' "$csv"

/*
 * bench/durable_report.c - bench_durable's output (durable.h): the
 * Markdown table's header and rows and the machine-readable CSV line of a
 * run, whose columns (bench_durable.c) other scripts read: their order
 * and formats do not change.
 */
#include <stdio.h>
#include <string.h>

#include "durable.h"

/* ------------------------------------------------------------ output */

static void fmt_bytes(char *b, size_t n, double v)
{
	if (v >= 10 * 1024.0 * 1024)
		snprintf(b, n, "%.1f MiB", v / 1048576);
	else if (v >= 10 * 1024.0)
		snprintf(b, n, "%.1f KiB", v / 1024);
	else
		snprintf(b, n, "%.0f B", v);
}

/* 4M, 1G, 65536: a size as --ckpt-sweep takes it */
void fmt_size(char *b, size_t n, uint64_t v)
{
	if (v % (1ull << 30) == 0)
		snprintf(b, n, "%lluG", (unsigned long long)(v >> 30));
	else if (v % (1ull << 20) == 0)
		snprintf(b, n, "%lluM", (unsigned long long)(v >> 20));
	else if (v % 1024 == 0)
		snprintf(b, n, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(b, n, "%llu", (unsigned long long)v);
}

/* fullpage: the page images per commit, in the notes (the CSV's columns
 * stay as they are; log_bytes holds the images' bytes) */
void note_images(struct result *r)
{
	size_t len = strlen(r->note);

	if (r->ok && r->images > 0 && r->commits > 0)
		snprintf(r->note + len, sizeof(r->note) - len, "%simages/c %.3f",
			 len ? ", " : "", r->images / (double)r->commits);
}

void print_header(void)
{
	printf("| %-18s | %3s | %3s | %9s | %9s | %9s | %9s | %7s | %9s | %6s | %7s | %6s | "
	       "%8s | %8s | %8s | %7s | %4s | %7s | %7s | %s |\n",
	       "system", "rnd", "thr", "ops/s", "page B/c", "dw B/c", "log B/c", "syncs/c",
	       "dev B/c", "dev w/c", "flush/c", "dev r/c", "p50 µs", "p99 µs", "p99.9 µs",
	       "RSS MiB", "CPU%", "ops", "recov s", "notes");
	printf("|--------------------|----:|----:|----------:|----------:|----------:|"
	       "----------:|--------:|----------:|-------:|--------:|-------:|---------:|"
	       "---------:|---------:|--------:|-----:|--------:|--------:|---|\n");
}

void print_row(const char *name, int round, int nth, const struct result *r)
{
	char pb[32], db[32], lb[32], vb[32], rb[32] = "-";
	double n = r->commits ? (double)r->commits : 1;

	if (!r->ok) {
		printf("| %-18s | %3d | %3d | %s |\n", name, round, nth, r->note);
		return;
	}
	fmt_bytes(pb, sizeof(pb), r->page_bytes / n);
	fmt_bytes(db, sizeof(db), r->dw_bytes / n);
	fmt_bytes(lb, sizeof(lb), r->log_bytes / n);
	fmt_bytes(vb, sizeof(vb), r->dev_wbytes / n);
	if (r->recovered)
		snprintf(rb, sizeof(rb), "%.3f", r->recover_s);
	printf("| %-18s | %3d | %3d | %9.0f | %9s | %9s | %9s | %7.3f | %9s | %6.2f | %7.3f | "
	       "%6.2f | %8.0f | %8.0f | %8.0f | %7.1f | %4.0f | %7ld | %7s | %s |\n",
	       name, round, nth, r->ops / r->secs, pb, db, lb, r->syncs / n, vb,
	       r->dev_wreqs / n, r->dev_flushes / n, r->dev_rreqs / n, r->p50_us, r->p99_us,
	       r->p999_us,
	       r->rss_kib / 1024, r->cpu_busy * 100, r->ops, rb, r->note);
}

void print_csv(const struct cfg *c, const char *key, int round, int nth,
		      const struct result *r)
{
	char note[256], rb[32] = "";

	snprintf(note, sizeof(note), "%s", r->note);
	if (r->recovered)
		snprintf(rb, sizeof(rb), "%.3f", r->recover_s);
	for (char *p = note; *p; p++)
		if (*p == ',' || *p == '\n')
			*p = ';';
	printf("csv,%d,%s,%s,%d,%ld,%ld,%.3f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,"
	       "%.0f,%.0f,%.0f,%.3f,%s,%s\n",
	       round, wl_names[c->wl], key, nth, r->ok ? r->ops : 0, r->ok ? r->commits : 0,
	       r->secs, r->ok && r->secs > 0 ? r->ops / r->secs : 0, r->p50_us, r->p99_us,
	       r->p999_us, r->dev_wbytes, r->dev_wreqs, r->dev_flushes, r->page_bytes,
	       r->dw_bytes, r->log_bytes, r->syncs, r->rss_kib, r->cpu_busy, note, rb);
}

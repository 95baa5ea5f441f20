/*
 * tools/untorn.c - the untorn command-line tool.
 *
 *   untorn [GLOBAL OPTIONS] COMMAND [OPTIONS] ARGS...
 *
 * One process, one short-lived handle per command: open, do the work in one
 * transaction (load: one per batch), close.  Everything the tool knows about
 * the engine comes through include/untorn.h (nothing else of the library's
 * is included).
 *
 * Exit codes: 0 ok, 1 not found, 2 corrupt, 3 error, 64 usage.
 *
 * Tables: --table NAME points get, put, del, scan, load and dump at a named
 * table (put and load create it); without it they use the default table,
 * as before tables existed.  A dump of a database with named tables holds
 * every table (format version 2); one without them is written as version
 * 1, as before, so older tools read it.
 *
 * Escapes (scan output, load input, and arguments under --escaped):
 *   \t TAB   \n newline   \r CR   \\ backslash   \xHH any byte
 * Every byte outside printable ASCII (0x20..0x7e) is written as \xHH, so
 * `untorn scan A | untorn load B` copies A's contents into B exactly.
 *
 * This file holds the global options, the commands' table with their
 * help, and the dispatch; cli.h lists the tool's other files.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---------------------------------------------------------------- help */

static const char usage_main[] =
	"usage: untorn [GLOBAL OPTIONS] COMMAND [OPTIONS] ARGS...\n"
	"\n"
	"Commands:\n"
	"  put DB KEY VALUE     insert or overwrite KEY\n"
	"  get DB KEY           print KEY's value and a newline (exit 1 if absent)\n"
	"  del DB KEY           delete KEY (exit 1 if absent)\n"
	"  scan DB [FROM [TO]]  print KEY<TAB>VALUE lines in key order, escaped;\n"
	"                       FROM is inclusive, TO is exclusive\n"
	"  load DB [FILE]       put the records of a dump, or of escaped\n"
	"                       KEY<TAB>VALUE lines, from FILE or stdin\n"
	"  dump DB [FILE]       write every record to FILE or stdout in the\n"
	"                       versioned dump format (untorn-dump 1, hex)\n"
	"  compact DB DEST      copy DB into a new, compact database DEST\n"
	"  backup DB DEST       copy DB as of one snapshot into a new database\n"
	"                       DEST, page for page, while writers go on\n"
	"  check DB             verify every page checksum and B+tree invariant\n"
	"  tables DB            list the named tables: NAME<TAB>KEYS<TAB>PAGES\n"
	"  stats DB             print the engine's statistics for DB\n"
	"  info PATH            what the file layer reports for PATH: O_DIRECT,\n"
	"                       statx atomic-write limits, protection mode\n"
	"\n"
	"Global options (before or after COMMAND):\n"
	"  --protect MODE   auto|atomic|doublewrite|fullpage|unsafe (default auto)\n"
	"  --cache SIZE     buffer pool size, suffix K, M or G (default 64M)\n"
	"  --nosync         commit without waiting for durability\n"
	"  --batch N        load, compact: records per transaction (default 1000)\n"
	"  --table NAME     get, put, del, scan, load, dump, check: the named\n"
	"                   table NAME instead of the default one (put and load\n"
	"                   create it)\n"
	"  --readonly       open read-only: write and create no file (the\n"
	"                   default for get, scan, dump, check, stats and\n"
	"                   compact's source); a database not closed cleanly\n"
	"                   needs recovery: exit 3\n"
	"  --readwrite      open those read-write (recovers a database that\n"
	"                   was not closed cleanly)\n"
	"  --escaped        KEY, VALUE, FROM and TO arguments use the escapes below\n"
	"  --help           this text; COMMAND --help for one command\n"
	"  --version        print the version\n"
	"  --               end of options (for keys that start with --)\n"
	"\n"
	"Escapes (scan output, load input, --escaped arguments):\n"
	"  \\t TAB, \\n newline, \\r CR, \\\\ backslash, \\xHH any byte; scan writes\n"
	"  every byte outside printable ASCII as \\xHH, so scan | load round-trips.\n"
	"\n"
	"Exit status:\n"
	"  0   success\n"
	"  1   key not found (get, del)\n"
	"  2   database corrupt (check found problems, or a command met a bad page)\n"
	"  3   error (I/O, not a database, locked, ...); the reason is on stderr\n"
	"  64  usage error\n";

struct cmd {
	const char *name;
	int min_args, max_args;
	int (*run)(int argc, char **argv, long batch);
	const char *help;
};

/* ---------------------------------------------------- option values */

/* --cache: bytes, with an optional K, M or G (KiB, MB and the like too) */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	unsigned long long mul = 1;

	if (*s < '0' || *s > '9') /* strtoull would take "-5" as 2^64 - 5 */
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	default: break;
	}
	if (mul > 1 && *end == 'i')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -1;
	if (v > SIZE_MAX / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static int parse_protect(const char *s, enum ut_protect *p)
{
	static const struct { const char *n; enum ut_protect p; } t[] = {
		{ "auto", UT_PROTECT_AUTO },
		{ "atomic", UT_PROTECT_ATOMIC },
		{ "doublewrite", UT_PROTECT_DOUBLEWRITE },
		{ "unsafe", UT_PROTECT_UNSAFE },
		{ "fullpage", UT_PROTECT_FULLPAGE },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(s, t[i].n)) {
			*p = t[i].p;
			return 0;
		}
	return -1;
}

/* ------------------------------------------------------------ commands */

static const struct cmd cmds[] = {
	{ "put", 3, 3, cmd_put,
	  "usage: untorn put DB KEY VALUE\n"
	  "Insert or overwrite KEY with VALUE (one committed transaction).\n"
	  "Creates DB if missing.\n" },
	{ "get", 2, 2, cmd_get,
	  "usage: untorn get DB KEY\n"
	  "Print KEY's value followed by a newline.  Exit 1 if KEY is absent.\n" },
	{ "del", 2, 2, cmd_del,
	  "usage: untorn del DB KEY\n"
	  "Delete KEY.  Exit 1 if KEY is absent.\n" },
	{ "scan", 1, 3, cmd_scan,
	  "usage: untorn scan DB [FROM [TO]]\n"
	  "Print KEY<TAB>VALUE lines in key order (bytewise, shorter first on a\n"
	  "tie), escaped (\\t \\n \\r \\\\ \\xHH).  FROM is inclusive, TO exclusive.\n" },
	{ "load", 1, 2, cmd_load,
	  "usage: untorn load [--batch N] DB [FILE]\n"
	  "Put the records of FILE (default stdin) into DB, one transaction per\n"
	  "N records (default 1000); existing keys are overwritten.  FILE is a\n"
	  "dump (first line \"untorn-dump 1\" or 2, see dump) or escaped KEY<TAB>VALUE\n"
	  "lines (the scan format; blank lines skipped).  Shows progress on\n"
	  "stderr when it is a terminal.  On an error (a malformed line, a dump\n"
	  "without its end line) the current batch is aborted; earlier batches\n"
	  "stay committed.\n" },
	{ "dump", 1, 2, cmd_dump,
	  "usage: untorn dump [--table NAME] DB [FILE]\n"
	  "Write every record of DB to FILE (default stdout) in the dump format,\n"
	  "version 1, from one read transaction:\n"
	  "  untorn-dump 1\n"
	  "  KEYHEX VALUEHEX    one line per record, in key order, bytes as\n"
	  "                     lowercase hex (VALUEHEX empty for an empty value)\n"
	  "  end N              N = the number of records\n"
	  "A database with named tables is written as version 2: \"untorn-dump 2\",\n"
	  "the default table's records, then per table in name order a line\n"
	  "\"table NAMEHEX\" and its records; N counts every record.  With\n"
	  "--table, only that table, as version 1.  `untorn load` reads either\n"
	  "back byte for byte, tables included; a dump without its end line\n"
	  "(cut short) is refused.\n" },
	{ "compact", 2, 2, cmd_compact,
	  "usage: untorn compact [--batch N] DB DEST\n"
	  "Copy DB into a new database DEST (which must not exist) in key order,\n"
	  "so its leaves are full and it holds no free pages, then print both\n"
	  "data files' sizes.  DEST is complete only when compact exits 0.\n" },
	{ "backup", 2, 2, cmd_backup,
	  "usage: untorn backup DB DEST\n"
	  "Copy DB as of one snapshot into a new database DEST (DEST, DEST-wal and\n"
	  "DEST-dw must not exist), page for page; the copy opens without a log.\n"
	  "Writers of DB are not blocked while it runs.\n" },
	{ "check", 1, 1, cmd_check,
	  "usage: untorn check DB\n"
	  "Verify every page checksum and every B+tree invariant.  Problems are\n"
	  "listed one per line, then a summary.  Exit 0 clean, 2 corrupt.\n" },
	{ "tables", 1, 1, cmd_tables,
	  "usage: untorn tables DB\n"
	  "List the named tables of DB in name order, one NAME<TAB>KEYS<TAB>PAGES\n"
	  "line each (NAME escaped as scan's keys; counts from the catalog, no\n"
	  "scan), after the default table's line, whose NAME is empty.\n" },
	{ "stats", 1, 1, cmd_stats,
	  "usage: untorn stats DB\n"
	  "Open DB and print its ut_stats fields as NAME<TAB>VALUE lines.\n" },
	{ "info", 1, 1, cmd_info,
	  "usage: untorn info PATH\n"
	  "Print what the file layer reports for PATH (or, if PATH does not exist,\n"
	  "for a scratch file beside it): statx STATX_WRITE_ATOMIC mask and\n"
	  "attribute, atomic write unit min/max/segments, O_DIRECT accepted,\n"
	  "io_uring in use, and `mode` (atomic|doublewrite|fullpage|unsafe) with\n"
	  "the reason: the engine's own for an existing database (opened with\n"
	  "--protect, default auto; `protect_last` is the mode it last ran in),\n"
	  "else what --protect auto would choose.\n" },
};

int main(int argc, char **argv)
{
	const struct cmd *cmd = NULL;
	char **pos;
	int npos = 0, help = 0, opts_done = 0;
	long batch = 1000;

	ut_options_default(&cli.opt);
	pos = argv; /* positional arguments are compacted in place: npos < i */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;

		if (opts_done || a[0] != '-' || a[1] == 0 ||
		    (a[1] != '-' && strcmp(a, "-h"))) {
			if (!cmd) {
				for (size_t j = 0; j < sizeof(cmds) / sizeof(cmds[0]); j++)
					if (!strcmp(a, cmds[j].name))
						cmd = &cmds[j];
				if (!cmd) {
					cli_warn("unknown command '%s' (try --help)", a);
					return EXIT_USAGE;
				}
			} else {
				pos[npos++] = argv[i];
			}
			continue;
		}
		if (!strcmp(a, "--")) {
			opts_done = 1;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help = 1;
			continue;
		}
		if (!strcmp(a, "--version")) {
			printf("untorn %s\n", UT_VERSION_STRING);
			return EXIT_OK;
		}
		if (!strcmp(a, "--nosync")) {
			cli.opt.sync = 0;
			continue;
		}
		if (!strcmp(a, "--escaped")) {
			cli.escaped = 1;
			continue;
		}
		if (!strcmp(a, "--readonly") || !strcmp(a, "--readwrite")) {
			int want = a[6] == 'o' ? ACCESS_READONLY : ACCESS_READWRITE;

			if (cli.access && cli.access != want) {
				cli_warn("--readonly and --readwrite exclude each other");
				return EXIT_USAGE;
			}
			cli.access = want;
			continue;
		}
		/* options with a value: --opt VALUE or --opt=VALUE */
		{
			const char *eq = strchr(a, '=');
			size_t nl = eq ? (size_t)(eq - a) : strlen(a);
			char name[32];

			if (nl >= sizeof(name)) {
				cli_warn("unknown option '%s' (try --help)", a);
				return EXIT_USAGE;
			}
			memcpy(name, a, nl);
			name[nl] = 0;
			if (strcmp(name, "--protect") && strcmp(name, "--cache") &&
			    strcmp(name, "--batch") && strcmp(name, "--table")) {
				cli_warn("unknown option '%s' (try --help)", a);
				return EXIT_USAGE;
			}
			if (eq) {
				val = eq + 1;
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				cli_warn("%s needs a value", name);
				return EXIT_USAGE;
			}
			if (!strcmp(name, "--table")) {
				if (!*val || strlen(val) > UT_TABLE_NAME_MAX) {
					cli_warn("--table: a name is 1..%u bytes",
					      UT_TABLE_NAME_MAX);
					return EXIT_USAGE;
				}
				cli.table = val;
			} else if (!strcmp(name, "--protect")) {
				if (parse_protect(val, &cli.opt.protect)) {
					cli_warn("--protect: '%s' is not auto, atomic, "
					      "doublewrite, fullpage or unsafe", val);
					return EXIT_USAGE;
				}
			} else if (!strcmp(name, "--cache")) {
				if (parse_size(val, &cli.opt.cache_bytes) ||
				    cli.opt.cache_bytes == 0) {
					cli_warn("--cache: bad size '%s' (e.g. 64M)", val);
					return EXIT_USAGE;
				}
			} else {
				char *end;

				errno = 0;
				batch = strtol(val, &end, 10);
				if (errno || *end || batch < 1) {
					cli_warn("--batch: '%s' is not a positive number", val);
					return EXIT_USAGE;
				}
			}
		}
	}
	if (help) {
		fputs(cmd ? cmd->help : usage_main, stdout);
		return EXIT_OK;
	}
	if (!cmd) {
		fputs(usage_main, stderr);
		return EXIT_USAGE;
	}
	if (npos < cmd->min_args || npos > cmd->max_args) {
		fputs(cmd->help, stderr);
		return EXIT_USAGE;
	}
	{
		int ex = cmd->run(npos, pos, batch);

		if (fflush(stdout) && ex == EXIT_OK) {
			cli_warn("stdout: %s", strerror(errno));
			ex = EXIT_ERROR;
		}
		return ex;
	}
}

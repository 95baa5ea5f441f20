/*
 * tools/cli_text.c - bytes as text, for the untorn tool (cli.h): the
 * escapes of scan's output, load's input and --escaped arguments
 *   \t TAB   \n newline   \r CR   \\ backslash   \xHH any byte
 * (every byte outside printable ASCII 0x20..0x7e written as \xHH, so
 * what put_escaped writes unescape reads back exactly), and the dump
 * format's hex digits (written lowercase, read in either case).  No I/O
 * but the stream it is given.
 */
#include <stdio.h>

#include "cli.h"

/* Write len bytes escaped to f. */
void put_escaped(FILE *f, const unsigned char *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];

		if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c == '\\') {
			fputs("\\\\", f);
		} else if (c < 0x20 || c > 0x7e) {
			char b[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
			fwrite(b, 1, 4, f);
		} else {
			putc_unlocked(c, f);
		}
	}
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Unescape src[0..len) into dst (at most len bytes); returns the length or
 * -1 on a malformed escape. */
long unescape(const char *src, size_t len, unsigned char *dst)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		if (src[i] != '\\') {
			dst[o++] = (unsigned char)src[i];
			continue;
		}
		if (++i >= len)
			return -1;
		switch (src[i]) {
		case 't': dst[o++] = '\t'; break;
		case 'n': dst[o++] = '\n'; break;
		case 'r': dst[o++] = '\r'; break;
		case '\\': dst[o++] = '\\'; break;
		case 'x': {
			int h, l;

			if (i + 2 >= len)
				return -1;
			h = hexval((unsigned char)src[i + 1]);
			l = hexval((unsigned char)src[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			dst[o++] = (unsigned char)(h << 4 | l);
			i += 2;
			break;
		}
		default:
			return -1;
		}
	}
	return (long)o;
}

void put_hex(FILE *f, const unsigned char *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		putc_unlocked(hex[p[i] >> 4], f);
		putc_unlocked(hex[p[i] & 15], f);
	}
}

/* Hex digits src[0..len) into dst; the byte count, or -1 when malformed. */
long get_hex(const char *src, size_t len, unsigned char *dst)
{
	if (len % 2)
		return -1;
	for (size_t i = 0; i < len; i += 2) {
		int h = hexval((unsigned char)src[i]);
		int l = hexval((unsigned char)src[i + 1]);

		if (h < 0 || l < 0)
			return -1;
		dst[i / 2] = (unsigned char)(h << 4 | l);
	}
	return (long)(len / 2);
}

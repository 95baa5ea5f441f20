/*
 * io/crc32c.c - CRC32C with a hardware path and a table fallback.
 */
#include <string.h>

#include "ut_crc32c.h"

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t table[256];

static void init_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
		table[i] = c;
	}
}

uint32_t ut_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	static int ready;
	const unsigned char *p = buf;

	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		init_table(); /* idempotent: racing threads write equal values */
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
/*
 * The crc32 instruction has a latency of 3 cycles and a throughput of 1, so
 * one dependent chain runs at a third of its speed.  Long buffers are cut
 * into chunks of three BLOCK-byte streams computed side by side, then
 * joined: the CRC register is linear, so the state after s || t is
 * shift(state after s, |t|) ^ state of t from 0, where shift(x, n) is the
 * state reached from x over n zero bytes.  shift by BLOCK bytes is a
 * byte-wise table lookup (4 x 256 entries, built once).
 */
#define BLOCK 1024

static uint32_t shift_tab[4][256];

__attribute__((target("sse4.2")))
static void init_shift(void)
{
	for (int k = 0; k < 4; k++) {
		for (uint32_t b = 0; b < 256; b++) {
			uint64_t c = (uint64_t)b << (8 * k);

			for (int i = 0; i < BLOCK / 8; i++)
				c = __builtin_ia32_crc32di(c, 0);
			shift_tab[k][b] = (uint32_t)c;
		}
	}
}

static inline uint32_t shift_block(uint32_t x)
{
	return shift_tab[0][x & 0xff] ^ shift_tab[1][(x >> 8) & 0xff] ^
	       shift_tab[2][(x >> 16) & 0xff] ^ shift_tab[3][x >> 24];
}

static inline uint64_t load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	static int ready;
	const unsigned char *p = buf;
	uint64_t c = ~crc;

	if (len >= 3 * BLOCK && !__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		init_shift(); /* idempotent: racing threads write equal values */
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	while (len >= 3 * BLOCK) {
		uint64_t c1 = 0, c2 = 0;

		for (int i = 0; i < BLOCK; i += 8) {
			c = __builtin_ia32_crc32di(c, load64(p + i));
			c1 = __builtin_ia32_crc32di(c1, load64(p + BLOCK + i));
			c2 = __builtin_ia32_crc32di(c2, load64(p + 2 * BLOCK + i));
		}
		c = shift_block(shift_block((uint32_t)c) ^ (uint32_t)c1) ^
		    (uint32_t)c2;
		p += 3 * BLOCK;
		len -= 3 * BLOCK;
	}
	while (len >= 8) {
		c = __builtin_ia32_crc32di(c, load64(p));
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

uint32_t ut_crc32c(uint32_t crc, const void *buf, size_t len)
{
	static int has_hw = -1;

	if (has_hw < 0)
		has_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	return has_hw ? crc32c_hw(crc, buf, len) : ut_crc32c_sw(crc, buf, len);
}
#else
uint32_t ut_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return ut_crc32c_sw(crc, buf, len);
}
#endif

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
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc;

	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
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

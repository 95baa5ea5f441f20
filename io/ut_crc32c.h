/*
 * io/ut_crc32c.h - CRC32C (Castagnoli), the checksum of pages and log records.
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it, a table otherwise;
 * both give identical results.  ut_crc32c(0, buf, len) starts a checksum;
 * pass the previous result as crc to continue one.
 */
#ifndef UT_CRC32C_H
#define UT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t ut_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable path alone, so tests can compare the two. */
uint32_t ut_crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif /* UT_CRC32C_H */

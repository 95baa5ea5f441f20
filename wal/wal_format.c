/*
 * wal/wal_format.c - the log's bytes on disk (the format is in wal.h):
 * the header slot's encoding, records sealed and checked, epoch salts.
 * No I/O and no handle state.  Records are sealed and checked only here;
 * recovery's cheap pre-check before a CRC (plausible_header) and the
 * reset's re-salting of the live tail (move_tail) read and patch header
 * fields in place, at the offsets wal.h gives.
 */
#include <sys/random.h>
#include <time.h>

#include "wal_int.h"

uint64_t wal_new_salt(uint64_t epoch)
{
	uint64_t s = 0;
	struct timespec ts;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		s = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^
		    (uint64_t)ts.tv_sec ^ (uintptr_t)&s;
	}
	s ^= epoch * 0xbf58476d1ce4e5b9ull;
	return s ? s : 1;
}

/* ut_strerror lives with the engine; keep this layer self-contained. */
const char *wal_rc_name(int rc)
{
	switch (rc) {
	case UT_ENOSPC: return "no space";
	case UT_EIO: return "I/O error";
	case UT_ENOMEM: return "out of memory";
	case UT_ECORRUPT: return "corrupt log";
	default: return "error";
	}
}

const char *ut_wal_stop_name(int r)
{
	switch (r) {
	case UT_WAL_STOP_END: return "clean end";
	case UT_WAL_STOP_TAIL: return "torn or stale tail cut";
	case UT_WAL_STOP_CORRUPT: return "corrupt record in the middle of the log";
	case UT_WAL_STOP_APPLY: return "apply callback failed";
	default: return "?";
	}
}

/* ---- header ---- */

void wal_encode_header(unsigned char *h, uint32_t version, uint64_t epoch,
			  uint64_t salt, uint64_t start_lsn)
{
	memset(h, 0, WAL_HDR_BYTES);
	memcpy(h, WAL_MAGIC, 8);
	put32(h + 8, version);
	put32(h + 12, WAL_HDR_BYTES);
	put64(h + 16, epoch);
	put64(h + 24, salt);
	put64(h + 32, start_lsn);
	put32(h + 40, UT_PAGE_SIZE);
	put32(h + 44, UT_WAL_DATA_OFF);
	put32(h + 60, ut_crc32c(0, h, 60));
}

/* 1 valid, 0 no magic, UT_ECORRUPT bad crc, UT_EVERSION other version */
int wal_decode_header(const unsigned char *h, uint32_t *version,
			 uint64_t *epoch, uint64_t *salt, uint64_t *start_lsn)
{
	if (memcmp(h, WAL_MAGIC, 8) != 0)
		return 0;
	if (get32(h + 60) != ut_crc32c(0, h, 60))
		return UT_ECORRUPT;
	*version = get32(h + 8);
	if ((*version != WAL_VERSION && *version != WAL_VERSION_IMAGES) ||
	    get32(h + 12) != WAL_HDR_BYTES ||
	    get32(h + 40) != UT_PAGE_SIZE || get32(h + 44) != UT_WAL_DATA_OFF)
		return UT_EVERSION;
	*epoch = get64(h + 16);
	*salt = get64(h + 24);
	*start_lsn = get64(h + 32);
	return 1;
}

/* Fill in the header of the record at b->p + at, of unpadded length len, and
 * its CRC; zero the padding. */
void wal_seal_record(walbuf *b, size_t at, unsigned type, size_t len,
			uint32_t count, uint64_t salt, uint64_t floor)
{
	unsigned char *r = b->p + at;
	size_t plen = pad8(len);

	memset(r + len, 0, plen - len);
	r[4] = (unsigned char)type;
	r[5] = 0;
	put16(r + 6, 0);
	put32(r + 8, (uint32_t)len);
	put32(r + 12, count);
	put64(r + 16, b->lsn + at);
	put64(r + 24, salt);
	put64(r + 32, floor);
	put32(r, ut_crc32c(0, r + 4, plen - 4));
}

/* ---- record validation (shared by recovery and reset) ---- */

/* A record of a transaction's changes (counted by its COMMIT), as opposed
 * to the COMMIT itself. */
int wal_is_change(unsigned type)
{
	return type == REC_DELTA || type == REC_IMAGE;
}

/* Validate the record at r (avail bytes readable) expected at lsn with salt.
 * Returns its padded length, or 0 if invalid. */
size_t wal_check_record(const unsigned char *r, size_t avail, uint64_t lsn,
			   uint64_t salt)
{
	uint32_t len, count;
	size_t plen, pos;
	unsigned type;

	if (avail < UT_WAL_REC_HDR)
		return 0;
	len = get32(r + 8);
	type = r[4];
	if (len < UT_WAL_REC_HDR || len > UT_WAL_MAX_REC || get64(r + 16) != lsn ||
	    get64(r + 24) != salt || r[5] || get16(r + 6))
		return 0;
	plen = pad8(len);
	if (plen > avail || get32(r) != ut_crc32c(0, r + 4, plen - 4))
		return 0;
	count = get32(r + 12);
	if (type == REC_COMMIT)
		return len == UT_WAL_REC_HDR + COMMIT_PAYLOAD ? plen : 0;
	if (type == REC_IMAGE) /* one whole page; its page number the engine's */
		return len == UT_WAL_REC_HDR + IMAGE_PAYLOAD && count == 1 &&
		       !get32(r + UT_WAL_REC_HDR + 4) ? plen : 0;
	if (type != REC_DELTA || !count)
		return 0;
	pos = UT_WAL_REC_HDR;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t off, dl;

		if (pos + DELTA_ENTRY_HDR > len)
			return 0;
		off = get16(r + pos + 4);
		dl = get16(r + pos + 6);
		if (!dl || off + dl > UT_PAGE_SIZE || pos + DELTA_ENTRY_HDR + dl > len)
			return 0;
		pos += DELTA_ENTRY_HDR + dl;
	}
	return pos == len ? plen : 0;
}

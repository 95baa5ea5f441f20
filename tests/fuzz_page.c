/*
 * tests/fuzz_page.c - libFuzzer harness over one page (issue 21).
 *
 * The input is a page image (zero-padded to 16 KiB); its page number is
 * set to 7 and its checksum sealed, so every input reaches the structural
 * checks of ut_page_verify.  A page they accept must be safe for what the
 * engine then does with it without checking again: every cell's key and
 * value read the way the B+tree reads them (engine/btree.c, cell_value),
 * an overflow page's bytes, and the slotted-page operations (delete,
 * insert, replace, compact), after each of which the page must still pass
 * ut_page_check_slots.  Any out-of-bounds access is the sanitizers' to
 * report; a broken invariant aborts.
 *
 * Not part of ctest (it needs clang's libFuzzer).  Build and run:
 *   mkdir -p build-fuzz/corpus &&
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Iengine -Iio \
 *       tests/fuzz_page.c engine/page.c io/crc32c.c io/error.c \
 *       -o build-fuzz/fuzz_page &&
 *   split -b 16384 SOME.db build-fuzz/corpus/page- &&
 *   build-fuzz/fuzz_page -max_len=16384 -max_total_time=600 build-fuzz/corpus
 * (SOME.db: any database, e.g. one `untorn load` made: its pages are the
 * seeds, so mutations start from valid leaves, interiors and overflows.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "page.h"

#define PGNO 7u

static void must(int ok)
{
	if (!ok)
		abort();
}

/* Read every cell as the B+tree does; the sum keeps the reads alive. */
static unsigned read_cells(uint8_t *p)
{
	unsigned sum = 0;

	for (unsigned i = 0; i < ut_page_nslots(p); i++) {
		const uint8_t *c = ut_page_cell(p, i);
		unsigned len = ut_page_cell_len(p, i);

		if (ut_page_type(p) == UT_PT_LEAF) {
			unsigned kl = ut_ld16(c);
			uint32_t vl = ut_ld32(c + 3);
			const uint8_t *k = c + UT_LEAF_HDR;

			sum += k[0] + k[kl - 1];
			if (c[2] & UT_CELL_OVFL)
				sum += ut_ld32(k + kl);
			else if (vl)
				sum += k[kl] + k[kl + vl - 1];
			must(UT_LEAF_HDR + kl + ((c[2] & UT_CELL_OVFL) ? 4 : vl) == len);
		} else {
			unsigned kl = ut_ld16(c + 4);

			sum += ut_ld32(c) + c[UT_INT_HDR] + c[UT_INT_HDR + kl - 1];
			must(UT_INT_HDR + kl == len);
		}
	}
	return sum;
}

/* The slotted-page operations on a page the checks accepted. */
static void operate(uint8_t *p, const uint8_t *data, size_t size)
{
	uint8_t cell[64];
	uint64_t touched = 0;
	unsigned n = ut_page_nslots(p);

	memset(cell, 0, sizeof(cell));
	memcpy(cell, data, size < sizeof(cell) ? size : sizeof(cell));
	if (n) {
		ut_page_delete_tracked(p, (unsigned)(data[0] % n), &touched);
		must(ut_page_check_slots(p, PGNO, "fuzz") == UT_OK);
		n--;
	}
	if (ut_page_insert_tracked(p, n ? data[1] % (n + 1) : 0, cell,
				   1 + data[2] % sizeof(cell), &touched) == 0)
		n++;
	must(ut_page_check_slots(p, PGNO, "fuzz") == UT_OK);
	if (n) {
		ut_page_replace_tracked(p, (unsigned)(data[3] % n), cell,
					1 + data[4] % sizeof(cell), &touched);
		must(ut_page_check_slots(p, PGNO, "fuzz") == UT_OK);
	}
	ut_page_insert_tracked(p, 0, cell, sizeof(cell), NULL);
	ut_page_compact(p);
	must(ut_page_check_slots(p, PGNO, "fuzz") == UT_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t p[UT_PAGE_SIZE];
	volatile unsigned sink;

	if (size < 8)
		return 0;
	memset(p, 0, sizeof(p));
	memcpy(p, data, size < UT_PAGE_SIZE ? size : UT_PAGE_SIZE);
	ut_st32(p + 16, PGNO);
	ut_page_seal(p);
	if (ut_page_verify(p, PGNO, "fuzz") != UT_OK)
		return 0;
	if (ut_page_type(p) == UT_PT_OVERFLOW) {
		uint32_t n = ut_page_aux(p);

		sink = p[UT_PG_HDR] + p[UT_PG_HDR + n - 1];
		must(ut_page_ovfl_step(p, PGNO, n, 0, "fuzz") ==
		     (ut_page_right(p) ? UT_ECORRUPT : UT_OK));
		return 0;
	}
	if (ut_page_type(p) != UT_PT_LEAF && ut_page_type(p) != UT_PT_INTERIOR)
		return 0;
	sink = read_cells(p);
	(void)sink;
	operate(p, data, size);
	return 0;
}

/*
 * tests/test_page.c - page format: header, CRC32C seal/verify, slotted-page
 * insert/delete/replace/compaction, hole reuse and cell lifting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "page.h"
#include "ut_crc32c.h"
#include "ut_io.h"

static uint8_t *newpage(uint32_t pgno, int type)
{
	uint8_t *p = ut_io_alloc(UT_PAGE_SIZE);
	assert_non_null(p);
	ut_page_init(p, pgno, type);
	return p;
}

static void test_header(void **s)
{
	(void)s;
	uint8_t *p = newpage(42, UT_PT_LEAF);
	assert_int_equal(ut_page_type(p), UT_PT_LEAF);
	assert_int_equal(ut_page_pgno(p), 42);
	assert_int_equal(ut_page_nslots(p), 0);
	assert_int_equal(ut_page_free(p), UT_PG_USABLE);
	ut_page_set_lsn(p, 0x1122334455667788ull);
	assert_true(ut_page_lsn(p) == 0x1122334455667788ull);
	ut_page_set_right(p, 7);
	assert_int_equal(ut_page_right(p), 7);
	ut_page_seal(p);
	assert_int_equal(ut_page_verify(p, 42, "f"), UT_OK);
	free(p);
}

static void test_crc_detects_corruption(void **s)
{
	(void)s;
	uint8_t *p = newpage(3, UT_PT_LEAF);
	/* a leaf cell: key "k", value "hell" */
	assert_int_equal(ut_page_insert(p, 0, "\x01\x00\x00\x04\x00\x00\x00khell", 12), 0);
	ut_page_seal(p);
	assert_int_equal(ut_page_verify(p, 3, "db"), UT_OK);
	/* flip one byte anywhere: header, slot array, free space, cell */
	size_t offs[] = { 4, 8, 33, 5000, UT_PAGE_SIZE - 1 };
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		p[offs[i]] ^= 0x40;
		assert_int_equal(ut_page_verify(p, 3, "db"), UT_ECORRUPT);
		assert_non_null(strstr(ut_errdetail(), "db: page 3: checksum mismatch"));
		p[offs[i]] ^= 0x40;
		assert_int_equal(ut_page_verify(p, 3, "db"), UT_OK);
	}
	/* the stored CRC itself */
	p[0] ^= 1;
	assert_int_equal(ut_page_verify(p, 3, "db"), UT_ECORRUPT);
	p[0] ^= 1;
	/* right checksum, wrong place: misdirected write */
	assert_int_equal(ut_page_verify(p, 4, "db"), UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "page 4"));
	/* an all-zero page (hole) is not a valid page */
	memset(p, 0, UT_PAGE_SIZE);
	assert_int_equal(ut_page_verify(p, 3, "db"), UT_ECORRUPT);
	free(p);
}

static void check_cells(uint8_t *p, const int *vals, unsigned n)
{
	assert_int_equal(ut_page_nslots(p), n);
	for (unsigned i = 0; i < n; i++) {
		char want[64];
		int len = snprintf(want, sizeof(want), "cell-%d-%0*d", vals[i],
				   vals[i] % 40, 0);
		assert_int_equal(ut_page_cell_len(p, i), (unsigned)len);
		assert_memory_equal(ut_page_cell(p, i), want, (size_t)len);
	}
}

static unsigned put(uint8_t *p, unsigned idx, int v)
{
	char c[64];
	int len = snprintf(c, sizeof(c), "cell-%d-%0*d", v, v % 40, 0);
	return ut_page_insert(p, idx, c, (unsigned)len) == 0 ? (unsigned)len : 0;
}

/* The hardware path (three interleaved streams for long buffers) must
 * equal the table path for every length and split, and the standard check
 * value. */
static void test_crc32c_paths_agree(void **s)
{
	static unsigned char buf[20000];
	uint32_t seed = 12345;

	(void)s;
	assert_int_equal(ut_crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(ut_crc32c_sw(0, "123456789", 9), 0xe3069283u);
	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (unsigned char)(seed >> 16);
	}
	for (size_t len = 0; len <= sizeof(buf); len += len < 64 ? 1 : 997) {
		size_t cut = len / 3;
		uint32_t whole = ut_crc32c(0, buf + 1, len - (len > 0));

		assert_int_equal(whole, ut_crc32c_sw(0, buf + 1, len - (len > 0)));
		assert_int_equal(ut_crc32c(ut_crc32c(0, buf, cut), buf + cut, len - cut),
				 ut_crc32c_sw(0, buf, len));
	}
	assert_int_equal(ut_crc32c(0, buf + 4, UT_PAGE_SIZE - 4),
			 ut_crc32c_sw(0, buf + 4, UT_PAGE_SIZE - 4));
}

static void test_slotted_insert_delete(void **s)
{
	(void)s;
	uint8_t *p = newpage(1, UT_PT_LEAF);
	int model[2000];
	unsigned n = 0, used = 0;

	/* insert at front, back, middle */
	for (int v = 0; v < 300; v++) {
		unsigned idx = (unsigned)(v * 7919) % (n + 1);
		unsigned len = put(p, idx, v);
		assert_true(len > 0);
		memmove(model + idx + 1, model + idx, (n - idx) * sizeof(int));
		model[idx] = v;
		n++;
		used += len + UT_PG_SLOT;
		assert_int_equal(ut_page_used(p), used);
	}
	check_cells(p, model, n);
	/* delete every third */
	for (unsigned i = 0; i < n;) {
		if (model[i] % 3 == 0) {
			used -= ut_page_cell_len(p, i) + UT_PG_SLOT;
			ut_page_delete(p, i);
			memmove(model + i, model + i + 1, (n - i - 1) * sizeof(int));
			n--;
		} else {
			i++;
		}
	}
	check_cells(p, model, n);
	assert_int_equal(ut_page_used(p), used);
	ut_page_seal(p);
	assert_int_equal(ut_page_check_slots(p, 1, "x"), UT_OK);
	free(p);
}

static void test_fill_and_compaction(void **s)
{
	(void)s;
	uint8_t *p = newpage(1, UT_PT_LEAF);
	uint8_t cell[1000];
	unsigned n = 0;

	memset(cell, 'z', sizeof(cell));
	while (ut_page_insert(p, n, cell, sizeof(cell)) == 0)
		n++;
	assert_int_equal(n, UT_PG_USABLE / (sizeof(cell) + UT_PG_SLOT));
	assert_true(ut_page_free(p) < sizeof(cell) + UT_PG_SLOT);
	/* a full page rejects and stays unchanged */
	assert_int_equal(ut_page_insert(p, 0, cell, sizeof(cell)), -1);
	assert_int_equal(ut_page_nslots(p), n);
	/* free two non-adjacent cells: space is fragmented; a 2000-byte
	 * cell only fits after compaction, which insert does itself */
	ut_page_delete(p, 10);
	ut_page_delete(p, 3);
	uint8_t big[1990];
	memset(big, 'B', sizeof(big));
	assert_int_equal(ut_page_insert(p, 5, big, sizeof(big)), 0);
	assert_int_equal(ut_page_nslots(p), n - 1);
	assert_int_equal(ut_page_cell_len(p, 5), sizeof(big));
	assert_memory_equal(ut_page_cell(p, 5), big, sizeof(big));
	for (unsigned i = 0; i < n - 1; i++)
		if (i != 5)
			assert_memory_equal(ut_page_cell(p, i), cell, sizeof(cell));
	/* replace: same size in place, bigger after delete, too big refused */
	assert_int_equal(ut_page_replace(p, 0, big, 1000), 0);
	assert_memory_equal(ut_page_cell(p, 0), big, 1000);
	assert_int_equal(ut_page_replace(p, 1, big, 4000), -1);
	assert_memory_equal(ut_page_cell(p, 1), cell, sizeof(cell));
	ut_page_compact(p);
	assert_memory_equal(ut_page_cell(p, 5), big, sizeof(big));
	/* delete all: page empty with full free space */
	while (ut_page_nslots(p))
		ut_page_delete(p, 0);
	assert_int_equal(ut_page_free(p), UT_PG_USABLE);
	ut_page_seal(p);
	assert_int_equal(ut_page_check_slots(p, 1, "x"), UT_OK);
	free(p);
}

/* An insert that finds no contiguous gap fills a hole of the right size
 * and moves no other cell (a compaction would make the log record the
 * whole page). */
static void test_insert_reuses_hole(void **s)
{
	(void)s;
	uint8_t *p = newpage(1, UT_PT_LEAF);
	uint8_t cell[123], other[123];
	unsigned n = 0, off[200];

	for (unsigned i = 0; i < sizeof(cell); i++)
		cell[i] = (uint8_t)i;
	while (ut_page_insert(p, n, cell, sizeof(cell)) == 0)
		n++;
	/* two holes in the middle of the content area */
	ut_page_delete(p, n / 2);
	ut_page_delete(p, n / 3);
	for (unsigned i = 0; i < n - 2; i++)
		off[i] = (unsigned)(ut_page_cell(p, i) - p);
	memset(other, 'o', sizeof(other));
	assert_int_equal(ut_page_insert(p, 0, other, sizeof(other)), 0);
	assert_int_equal(ut_page_insert(p, 1, other, 100), 0); /* smaller */
	assert_int_equal(ut_page_nslots(p), n);
	for (unsigned i = 0; i < n - 2; i++) {
		assert_int_equal(ut_page_cell(p, i + 2) - p, off[i]);
		assert_memory_equal(ut_page_cell(p, i + 2), cell, sizeof(cell));
	}
	assert_memory_equal(ut_page_cell(p, 0), other, sizeof(other));
	assert_memory_equal(ut_page_cell(p, 1), other, 100);
	/* the 23 bytes left over are fragments: a 123-byte cell is refused */
	assert_int_equal(ut_page_insert(p, 0, other, sizeof(other)), -1);
	ut_page_seal(p);
	assert_int_equal(ut_page_check_slots(p, 1, "x"), UT_OK);
	assert_int_equal(ut_page_used(p), n * UT_PG_SLOT + (n - 1) * sizeof(cell) + 100);
	free(p);
}

static unsigned bytes_changed(const uint8_t *a, const uint8_t *b)
{
	unsigned n = 0;

	for (unsigned i = 0; i < UT_PAGE_SIZE; i++)
		n += a[i] != b[i];
	return n;
}

/* No gap and no hole big enough: the insert lifts the lowest cells into
 * holes higher up rather than compacting, so a few hundred bytes change,
 * not the whole page (the log records every changed byte). */
static void test_insert_lifts_cells(void **s)
{
	(void)s;
	uint8_t *p = newpage(1, UT_PT_LEAF), *before = malloc(UT_PAGE_SIZE);
	uint8_t cell[123], big[200];
	unsigned n = 0;

	assert_non_null(before);
	for (;;) {
		memset(cell, (int)n, sizeof(cell));
		if (ut_page_insert(p, n, cell, sizeof(cell)))
			break;
		n++;
	}
	/* three holes near the top: the first cells went in highest */
	ut_page_delete(p, 6);
	ut_page_delete(p, 4);
	ut_page_delete(p, 2);
	n -= 3;
	memcpy(before, p, UT_PAGE_SIZE);
	memset(big, 'B', sizeof(big));
	assert_int_equal(ut_page_insert(p, n, big, sizeof(big)), 0);
	assert_true(bytes_changed(before, p) < 3 * sizeof(cell) + sizeof(big) + 64);
	assert_memory_equal(ut_page_cell(p, n), big, sizeof(big));
	for (unsigned i = 0, v = 0; i < n; i++, v++) {
		v += v == 2 || v == 4 || v == 6;
		memset(cell, (int)v, sizeof(cell));
		assert_memory_equal(ut_page_cell(p, i), cell, sizeof(cell));
	}
	assert_int_equal(ut_page_used(p), (n + 1) * UT_PG_SLOT + n * sizeof(cell) + sizeof(big));
	ut_page_seal(p);
	assert_int_equal(ut_page_check_slots(p, 1, "x"), UT_OK);
	free(before);
	free(p);
}

/* A page new in the transaction is logged whole (touched NULL): an insert
 * that finds no gap compacts at once, so all free space becomes the gap
 * and the inserts after it need no hole search. */
static void test_insert_untracked_compacts(void **s)
{
	(void)s;
	uint8_t *p = newpage(1, UT_PT_LEAF);
	uint8_t cell[123], big[200];
	unsigned n = 0, free_before;

	for (;;) {
		memset(cell, (int)n, sizeof(cell));
		if (ut_page_insert_tracked(p, n, cell, sizeof(cell), NULL))
			break;
		n++;
	}
	for (unsigned i = 0; i < 10; i++)
		ut_page_delete_tracked(p, 2 * i, NULL); /* holes, no gap */
	n -= 10;
	free_before = ut_page_free(p);
	memset(big, 'B', sizeof(big));
	assert_int_equal(ut_page_insert_tracked(p, n, big, sizeof(big), NULL), 0);
	assert_int_equal(ut_page_free(p), free_before - sizeof(big) - UT_PG_SLOT);
	/* compacted: the free space is one gap between the slots and the
	 * lowest cell, the one just inserted */
	assert_int_equal((unsigned)(ut_page_cell(p, n) - p) -
				 (UT_PG_HDR + (n + 1) * UT_PG_SLOT),
			 ut_page_free(p));
	for (unsigned i = 0, v = 1; i < n; i++, v += 1 + (v < 27 && v % 3 == 2)) {
		memset(cell, (int)v, sizeof(cell)); /* 0, 3, .., 27 were deleted */
		assert_memory_equal(ut_page_cell(p, i), cell, sizeof(cell));
	}
	assert_memory_equal(ut_page_cell(p, n), big, sizeof(big));
	ut_page_seal(p);
	assert_int_equal(ut_page_check_slots(p, 1, "x"), UT_OK);
	free(p);
}

/* Random inserts, deletes and replaces of random sizes against a model:
 * every cell keeps its bytes, the free space adds up, the page verifies. */
static void test_random_ops_keep_cells(void **s)
{
	(void)s;
	uint8_t *p = newpage(3, UT_PT_LEAF);
	static uint8_t model[UT_PG_USABLE / UT_PG_SLOT][600];
	static unsigned mlen[UT_PG_USABLE / UT_PG_SLOT];
	uint8_t cell[600], before[UT_PAGE_SIZE];
	uint32_t seed = 7;
	unsigned n = 0, used = 0, narrow = 0;

	for (int op = 0; op < 60000; op++) {
		unsigned r = (seed = seed * 1103515245u + 12345u) >> 8;
		uint64_t touched = 0;

		memcpy(before, p, UT_PAGE_SIZE);
		unsigned len = 1 + r % (r & 1 ? 600 : 130), idx = n ? (r >> 10) % n : 0;

		memset(cell, (int)(op & 0xff), len);
		cell[0] = (uint8_t)(op >> 8);
		if (n && (r >> 4) % 3 == 0) {
			used -= mlen[idx] + UT_PG_SLOT;
			ut_page_delete(p, idx);
			memmove(model + idx, model + idx + 1, (n - idx - 1) * sizeof(model[0]));
			memmove(mlen + idx, mlen + idx + 1, (n - idx - 1) * sizeof(mlen[0]));
			n--;
		} else if (n && (r >> 4) % 3 == 1) {
			int fits = ut_page_free(p) + mlen[idx] >= len;

			assert_int_equal(ut_page_replace_tracked(p, idx, cell, len, &touched),
					 fits ? 0 : -1);
			if (fits) {
				used += len - mlen[idx];
				memcpy(model[idx], cell, len);
				mlen[idx] = len;
			}
		} else {
			int fits = ut_page_free(p) >= len + UT_PG_SLOT;

			idx = n ? (r >> 10) % (n + 1) : 0;
			assert_int_equal(ut_page_insert_tracked(p, idx, cell, len, &touched),
					 fits ? 0 : -1);
			if (fits) {
				memmove(model + idx + 1, model + idx, (n - idx) * sizeof(model[0]));
				memmove(mlen + idx + 1, mlen + idx, (n - idx) * sizeof(mlen[0]));
				memcpy(model[idx], cell, len);
				mlen[idx] = len;
				used += len + UT_PG_SLOT;
				n++;
			}
		}
		assert_int_equal(ut_page_nslots(p), n);
		assert_int_equal(ut_page_used(p), used);
		if ((r >> 4) % 3) { /* the tracked forms record every byte changed */
			for (unsigned b = 0; b < UT_PAGE_SIZE; b++)
				if (!(touched >> (b / UT_TOUCH_BLOCK) & 1) && p[b] != before[b])
					fail_msg("op %d: byte %u changed, block not recorded", op, b);
			narrow += touched != ~0ull;
		}
		if (op % 97 == 0 || op > 59000) {
			for (unsigned i = 0; i < n; i++) {
				assert_int_equal(ut_page_cell_len(p, i), mlen[i]);
				assert_memory_equal(ut_page_cell(p, i), model[i], mlen[i]);
			}
			ut_page_seal(p);
			assert_int_equal(ut_page_check_slots(p, 3, "x"), UT_OK);
		}
	}
	/* most changes stay within a few blocks (the log's saving) */
	assert_true(narrow > 30000);
	free(p);
}

static void test_verify_rejects_bad_slots(void **s)
{
	(void)s;
	uint8_t *p = newpage(9, UT_PT_LEAF);
	assert_int_equal(ut_page_insert(p, 0, "abc", 3), 0);
	/* slot pointing past the end, with a valid checksum */
	ut_st16(p + UT_PG_HDR, UT_PAGE_SIZE - 1);
	ut_page_seal(p);
	assert_int_equal(ut_page_verify(p, 9, "x"), UT_ECORRUPT);
	free(p);
}

/* A leaf with cells "k1" -> "v1" and "k2" -> "v2". */
static uint8_t *two_cell_leaf(uint32_t pgno)
{
	uint8_t *p = newpage(pgno, UT_PT_LEAF);

	assert_int_equal(ut_page_insert(p, 0, "\x02\x00\x00\x02\x00\x00\x00k1v1", 11), 0);
	assert_int_equal(ut_page_insert(p, 1, "\x02\x00\x00\x02\x00\x00\x00k2v2", 11), 0);
	ut_page_seal(p);
	assert_int_equal(ut_page_verify(p, pgno, "x"), UT_OK);
	return p;
}

/* Fields that lie with a valid checksum: each is refused with a detail
 * naming the page and the field. */
static void test_verify_rejects_lying_cells(void **s)
{
	(void)s;
	static const struct {
		unsigned off, width;
		uint32_t value;
		const char *detail;
	} lies[] = {
		{ UT_PAGE_SIZE - 11, 2, 2000, "key length" },     /* cell 0's klen */
		{ UT_PAGE_SIZE - 11 + 3, 4, 1u << 28, "value length" },
		{ UT_PAGE_SIZE - 11 + 3, 4, 3, "bytes for a key" },
		{ UT_PAGE_SIZE - 11 + 2, 1, 4, "flags" },
		{ UT_PAGE_SIZE - 11 + 2, 1, UT_CELL_OVFL, "bytes for a key" },
		{ UT_PAGE_SIZE - 11 + 8, 1, '3', "not above" },   /* "k3" > "k2" */
		{ UT_PG_HDR + 4, 2, UT_PAGE_SIZE - 16, "overlaps" },
		{ UT_PG_HDR + 2, 2, 12, "outside the content" },
		{ 22, 2, 5, "frag" },
		{ 20, 2, 40, "content area" },
		{ 6, 2, 3, "outside the content" },               /* nslots */
		{ 4, 1, 9, "unknown page type" },
		{ 16, 4, 8, "header says page" },
	};

	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		uint8_t *p = two_cell_leaf(9);

		if (lies[i].width == 1)
			p[lies[i].off] = (uint8_t)lies[i].value;
		else if (lies[i].width == 2)
			ut_st16(p + lies[i].off, (uint16_t)lies[i].value);
		else
			ut_st32(p + lies[i].off, lies[i].value);
		ut_page_seal(p);
		if (ut_page_verify(p, 9, "x") != UT_ECORRUPT)
			fail_msg("lie %zu accepted", i);
		if (!strstr(ut_errdetail(), "x: page 9: ") ||
		    !strstr(ut_errdetail(), lies[i].detail))
			fail_msg("lie %zu: detail \"%s\"", i, ut_errdetail());
		free(p);
	}
}

/* Overflow pages: byte count, and a chain step that does not match the
 * value's length or ends or goes on at the wrong page. */
static void test_overflow_steps(void **s)
{
	(void)s;
	uint8_t *p = newpage(5, UT_PT_OVERFLOW);

	ut_page_set_aux(p, UT_OVFL_CAP);
	ut_page_set_right(p, 6);
	assert_int_equal(ut_page_check(p, 5, "x"), UT_OK);
	assert_int_equal(ut_page_ovfl_step(p, 5, 2 * UT_OVFL_CAP, 0, "x"), UT_OK);
	/* the chain should end here */
	assert_int_equal(ut_page_ovfl_step(p, 5, UT_OVFL_CAP, 0, "x"), UT_ECORRUPT);
	/* a page past the value's end (a cycle goes on forever) */
	assert_int_equal(ut_page_ovfl_step(p, 5, 2 * UT_OVFL_CAP, 2 * UT_OVFL_CAP, "x"),
			 UT_ECORRUPT);
	/* fewer bytes than due */
	assert_int_equal(ut_page_ovfl_step(p, 5, 3 * UT_OVFL_CAP, 0, "x"), UT_OK);
	ut_page_set_aux(p, 100);
	assert_int_equal(ut_page_ovfl_step(p, 5, 3 * UT_OVFL_CAP, 0, "x"), UT_ECORRUPT);
	ut_page_set_right(p, 0);
	assert_int_equal(ut_page_ovfl_step(p, 5, 100, 0, "x"), UT_OK);
	ut_page_set_aux(p, UT_OVFL_CAP + 1);
	assert_int_equal(ut_page_check(p, 5, "x"), UT_ECORRUPT);
	ut_page_set_aux(p, 1);
	ut_page_set_right(p, 5);
	assert_int_equal(ut_page_check(p, 5, "x"), UT_ECORRUPT);
	p[4] = UT_PT_LEAF;
	assert_int_equal(ut_page_ovfl_step(p, 5, 1, 0, "x"), UT_ECORRUPT);
	assert_non_null(strstr(ut_errdetail(), "a leaf page"));
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_crc_detects_corruption),
		cmocka_unit_test(test_crc32c_paths_agree),
		cmocka_unit_test(test_slotted_insert_delete),
		cmocka_unit_test(test_fill_and_compaction),
		cmocka_unit_test(test_insert_reuses_hole),
		cmocka_unit_test(test_insert_lifts_cells),
		cmocka_unit_test(test_insert_untracked_compacts),
		cmocka_unit_test(test_random_ops_keep_cells),
		cmocka_unit_test(test_verify_rejects_bad_slots),
		cmocka_unit_test(test_verify_rejects_lying_cells),
		cmocka_unit_test(test_overflow_steps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * engine/pace.c - the page cleaner's batch size from measured bandwidth
 * and a latency target (contract in pace.h).
 */
#include <assert.h>

#include "pace.h"
#include "page.h"

void ut_pace_init(ut_pace *pc, size_t max)
{
	assert(max >= 1);
	pc->bw = 0;
	pc->max = max;
	pc->pages = UT_PACE_FIRST < max ? UT_PACE_FIRST : max;
}

/* Pages whose writing at pc->bw takes the target time, within [1, max]. */
static size_t bound(const ut_pace *pc)
{
	double b = pc->bw * (double)UT_PACE_TARGET_NS / 1e9 / UT_PAGE_SIZE;

	if (b < 1)
		return 1;
	return b > (double)pc->max ? pc->max : (size_t)b;
}

void ut_pace_done(ut_pace *pc, size_t n, uint64_t ns, int waited)
{
	double sample = (double)n * UT_PAGE_SIZE * 1e9 / (double)(ns ? ns : 1);
	size_t cap, grown;

	assert(n >= 1 && n <= pc->max);
	/* A batch's size is what a commit may wait for: a slower sample is
	 * believed at once, a faster one for a quarter, so one fast batch (a
	 * throttle's burst allowance, a write a cache absorbed) moves the
	 * size by little. */
	pc->bw = pc->bw > 0 && sample > pc->bw ? (3 * pc->bw + sample) / 4 :
						 sample;
	cap = bound(pc);
	/* Near the target a batch grows fast only while no commit waits for
	 * the log.  One that took under half of it may double either way: a
	 * commit behind one twice its size still waits less than the target
	 * (and on a fast device, where a batch's time is mostly fixed costs,
	 * the size reaches the bound in a few batches). */
	grown = waited && 2 * ns >= UT_PACE_TARGET_NS ? pc->pages + 1 :
							2 * pc->pages;
	pc->pages = grown < cap ? grown : cap;
	assert(pc->pages >= 1 && pc->pages <= pc->max);
}

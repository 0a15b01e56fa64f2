/* SPDX-License-Identifier: MIT */
/*
 * Where a tensor lies in the chunk pool: the runs of consecutive chunk
 * indices behind its pages, for policies that see the pool's layout
 * (Coop's sliding window on vmm.mode = contiguous). Coop asks for every
 * candidate at every choice, and a walk over the pages of all of them
 * took a fifth of a thrashing replay: the answer is kept with the tensor
 * until one of its pages changes chunk or residence.
 */
#include "config.h"

#include "base/array.h"
#include "pager/pager_int.h"

/* The runs of @t's RESIDENT pages, from its pages, each through @fn. */
static size_t scan_runs(const struct tp_tensor *t,
			void (*fn)(void *arg, size_t start, size_t len),
			void *arg)
{
	size_t runs = 0;

	for (size_t i = 0; i < t->nr_pages;) {
		const struct tp_chunk *c = t->pages[i].chunk;
		size_t j = i + 1;

		if (!c || t->pages[i].state != TP_PAGE_RESIDENT) {
			i++;
			continue;
		}
		while (j < t->nr_pages && t->pages[j].chunk &&
		       t->pages[j].state == TP_PAGE_RESIDENT &&
		       t->pages[j].chunk->index == c->index + (j - i))
			j++;
		fn(arg, c->index, j - i);
		runs++;
		i = j;
	}
	return runs;
}

/* scan_runs()'s runs into @arg's cache; a run that finds no room leaves
 * it invalid. */
static void keep_run(void *arg, size_t start, size_t len)
{
	struct tp_tensor *t = arg;
	struct tp_chunk_run *r;

	if (!t->runs_valid)
		return;
	r = tp_array_grow(t->runs, &t->runs_cap, t->nr_runs + 1, sizeof(*r),
			  4);
	if (!r) {
		t->runs_valid = false;
		return;
	}
	t->runs = r;
	t->runs[t->nr_runs++] = (struct tp_chunk_run){ start, len };
}

/* Where scan_runs() calls back with no cache: the caller's @fn. */
struct direct {
	const struct tp_tensor *t;
	void (*fn)(void *arg, const struct tp_tensor *t, size_t start,
		   size_t len);
	void *arg;
};

static void call_direct(void *arg, size_t start, size_t len)
{
	struct direct *d = arg;

	d->fn(d->arg, d->t, start, len);
}

size_t tp_pager_chunk_runs(struct tp_tensor *t,
			   void (*fn)(void *arg, const struct tp_tensor *t,
				      size_t start, size_t len),
			   void *arg)
{
	if (t->slab || !t->pages)
		return 0;
	if (!t->runs_valid) {
		t->nr_runs = 0;
		t->runs_valid = true;
		scan_runs(t, keep_run, t);
	}
	/* No memory for the cache: the pages, as they are. */
	if (!t->runs_valid) {
		struct direct d = { t, fn, arg };

		return scan_runs(t, call_direct, &d);
	}
	for (size_t i = 0; i < t->nr_runs; i++)
		fn(arg, t, t->runs[i].start, t->runs[i].len);
	return t->nr_runs;
}

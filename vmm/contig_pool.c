/* SPDX-License-Identifier: MIT */
/*
 * The contiguous pool: the fragmenting baseline (vmm.mode = contiguous).
 *
 * Why it exists: DTR, DELTA and Coop ran on caching allocators in which a
 * tensor's memory is one contiguous block of the pool. tpager maps any
 * free chunk at any page, so it never fragments; to show what that buys,
 * this pool behaves like those allocators. A tensor's memory is ONE run of
 * physically contiguous chunk indices, chosen best-fit among the free runs;
 * a tensor is backed whole or not at all (the pager backs every page of it
 * in one take); freeing coalesces with the free neighbours. (A tensor left
 * partly resident, as by an in-place update that drops its old version
 * page by page, has its missing pages backed as one run of their own.)
 * The run is still mapped at the tensor's reserved address, so addresses stay stable
 * and data is unchanged on host, but a take can fail while enough chunks
 * are free in total: that is fragmentation, and the pager must then send
 * victims away until a run fits.
 *
 * The free runs are kept in a sorted array (address order, coalesced, so
 * never adjacent): a put finds its place by binary search, and a take scans
 * the runs, never the chunks. The array is sized for the worst case (every
 * other chunk free) at creation, so neither take nor put allocates.
 *
 * Fragmentation rate (Coop §4.2: free memory / memory held by the
 * allocator): sampled at each allocation that finds no run long enough
 * while at least the requested number of chunks is free in total (the
 * pager asks once per allocation, before it makes room), as free chunks / pool chunks (the pool
 * holds its whole budget, like a caching allocator that has grown to it);
 * reported as the mean of those samples. A chunked pool never fails that
 * way, so its rate is 0.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/contig_pool.h"

struct tp_contig_pool *tp_contig_pool_new(size_t nr)
{
	struct tp_contig_pool *cp;

	if (!nr) {
		errno = EINVAL;
		return NULL;
	}
	cp = calloc(1, sizeof(*cp));
	if (!cp)
		return NULL;
	/* Coalesced runs are separated by a taken chunk: at most (nr+1)/2. */
	cp->runs = calloc(nr / 2 + 1, sizeof(*cp->runs));
	if (!cp->runs) {
		free(cp);
		errno = ENOMEM;
		return NULL;
	}
	cp->runs[0] = (struct tp_run){ .start = 0, .len = nr };
	cp->nruns = 1;
	cp->nr = nr;
	cp->nfree = nr;
	return cp;
}

void tp_contig_pool_free(struct tp_contig_pool *cp)
{
	if (!cp)
		return;
	free(cp->runs);
	free(cp);
}

size_t tp_contig_pool_largest(const struct tp_contig_pool *cp)
{
	size_t best = 0;

	for (size_t i = 0; i < cp->nruns; i++)
		if (cp->runs[i].len > best)
			best = cp->runs[i].len;
	return best;
}

uint64_t tp_contig_pool_frag_ppm(const struct tp_contig_pool *cp)
{
	return cp->frag_fails ? cp->frag_ppm_sum / cp->frag_fails : 0;
}

bool tp_contig_pool_sample(struct tp_contig_pool *cp, size_t n)
{
	if (cp->nfree < n || tp_contig_pool_largest(cp) >= n)
		return false;
	cp->frag_fails++;
	cp->frag_ppm_sum += (uint64_t)((double)cp->nfree * 1000000.0 /
				       (double)cp->nr);
	return true;
}

static void remove_run(struct tp_contig_pool *cp, size_t i)
{
	memmove(&cp->runs[i], &cp->runs[i + 1],
		(cp->nruns - i - 1) * sizeof(*cp->runs));
	cp->nruns--;
}

int tp_contig_pool_take(struct tp_contig_pool *cp, size_t n,
			enum tp_pool_side side, size_t *start)
{
	size_t best = cp->nruns;
	struct tp_run *r;

	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < cp->nruns; i++) {
		size_t len = cp->runs[i].len;

		if (len < n)
			continue;
		/* Ties: the run nearest the preferred end. */
		if (best == cp->nruns || len < cp->runs[best].len ||
		    (len == cp->runs[best].len && side == TP_SIDE_RIGHT))
			best = i;
		if (len == n && side == TP_SIDE_LEFT)
			break;		/* exact and leftmost: cannot do better */
	}
	if (best == cp->nruns)
		return -ENOMEM;
	r = &cp->runs[best];
	if (side == TP_SIDE_LEFT) {
		*start = r->start;
		r->start += n;
	} else {
		*start = r->start + r->len - n;
	}
	r->len -= n;
	cp->nfree -= n;
	if (!r->len)
		remove_run(cp, best);
	return 0;
}

/* The first run starting after @start (nruns when none). */
static size_t run_after(const struct tp_contig_pool *cp, size_t start)
{
	size_t lo = 0, hi = cp->nruns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp->runs[mid].start > start)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int tp_contig_pool_put(struct tp_contig_pool *cp, size_t start, size_t n)
{
	size_t i, end = start + n;
	struct tp_run *prev, *next;

	if (!n || start >= cp->nr || n > cp->nr - start)
		return -EINVAL;
	i = run_after(cp, start);
	prev = i ? &cp->runs[i - 1] : NULL;
	next = i < cp->nruns ? &cp->runs[i] : NULL;
	/* Overlap with a free run: a double free. */
	if ((prev && prev->start + prev->len > start) ||
	    (next && next->start < end))
		return -EINVAL;
	cp->nfree += n;
	if (prev && prev->start + prev->len == start) {
		prev->len += n;
		if (next && next->start == end) {
			prev->len += next->len;
			remove_run(cp, i);
		}
		return 0;
	}
	if (next && next->start == end) {
		next->start = start;
		next->len += n;
		return 0;
	}
	memmove(&cp->runs[i + 1], &cp->runs[i],
		(cp->nruns - i) * sizeof(*cp->runs));
	cp->runs[i] = (struct tp_run){ .start = start, .len = n };
	cp->nruns++;
	return 0;
}

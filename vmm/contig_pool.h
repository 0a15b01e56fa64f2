/* SPDX-License-Identifier: MIT */
/*
 * The contiguous pool (vmm.mode = contiguous): free runs of chunk indices,
 * best-fit, coalescing on free. See contig_pool.c for why it exists.
 */
#ifndef TP_VMM_CONTIG_POOL_H
#define TP_VMM_CONTIG_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/vmm.h"

/* A free run [start, start + len) of chunk indices. */
struct tp_run {
	size_t start;
	size_t len;
};

struct tp_contig_pool {
	struct tp_run *runs;	/* address order, never adjacent (coalesced) */
	size_t nruns;
	size_t nr;		/* chunks in the pool */
	size_t nfree;		/* sum of run lengths */
	/* Allocation failures with enough free chunks in total. */
	uint64_t frag_fails;
	/* Sum over them of free / nr, in ppm. */
	uint64_t frag_ppm_sum;
};

/**
 * tp_contig_pool_new() - a pool of @nr chunks, all in one free run.
 * Return: the pool, or NULL with errno set (EINVAL for 0, ENOMEM).
 */
struct tp_contig_pool *tp_contig_pool_new(size_t nr);

/** tp_contig_pool_free() - free the pool (nothing else is owned). */
void tp_contig_pool_free(struct tp_contig_pool *cp);

/**
 * tp_contig_pool_take() - take @n contiguous chunks, best fit.
 * @cp:    the pool
 * @n:     chunks wanted, at least 1
 * @side:  LEFT takes the lowest-addressed smallest fitting run from its
 *         low end; RIGHT the highest-addressed one from its high end
 * @start: set to the first index taken
 *
 * Return: 0; -ENOMEM when no free run is @n long (pool unchanged);
 * -EINVAL for @n = 0.
 */
int tp_contig_pool_take(struct tp_contig_pool *cp, size_t n,
			enum tp_pool_side side, size_t *start);

/**
 * tp_contig_pool_put() - return [@start, @start + @n), coalescing with the
 * free runs on either side.
 * Return: 0; -EINVAL when the range is outside the pool or overlaps a free
 * run (a double free; pool unchanged).
 */
int tp_contig_pool_put(struct tp_contig_pool *cp, size_t start, size_t n);

/** tp_contig_pool_largest() - the longest free run, in chunks. */
size_t tp_contig_pool_largest(const struct tp_contig_pool *cp);

/** tp_contig_pool_fits() - whether a take of @n would succeed now. */
static inline bool tp_contig_pool_fits(const struct tp_contig_pool *cp,
				       size_t n)
{
	return tp_contig_pool_largest(cp) >= n;
}

/**
 * tp_contig_pool_sample() - an allocation of @n found no room: when @n or
 * more chunks are free in total but no run is @n long, count it as a
 * fragmentation sample (free / nr). Return: whether it was counted.
 */
bool tp_contig_pool_sample(struct tp_contig_pool *cp, size_t n);

/**
 * tp_contig_pool_frag_ppm() - the fragmentation rate (Coop §4.2: free
 * memory / memory held by the allocator), averaged over the allocation
 * failures that had enough free chunks in total; 0 when there was none.
 */
uint64_t tp_contig_pool_frag_ppm(const struct tp_contig_pool *cp);

#endif /* TP_VMM_CONTIG_POOL_H */

/* SPDX-License-Identifier: MIT */
/*
 * The effective host link bandwidth b (DELTA eq. 6) and how busy the link
 * was over the last iteration (TSPLIT eq. 3's Oc), from completed copies.
 */
#ifndef TP_POLICY_BANDWIDTH_H
#define TP_POLICY_BANDWIDTH_H

#include <pthread.h>
#include <stdint.h>

#include "ctl/conf.h"

struct tp_bandwidth {
	pthread_mutex_t lock;	/* samples come from copy-completion threads */
	double bytes, ns;	/* decayed sums of completed copies */
	uint64_t samples;
	uint64_t busy_ns;	/* copy time in the current iteration */
	uint64_t iter_start_ns;
	double occupancy;	/* busy fraction of the last iteration */
};

/* Weight of a new sample in the moving averages (as TCP's SRTT gain). */
#define TP_BW_ALPHA 0.125

void tp_bw_init(struct tp_bandwidth *bw);
void tp_bw_destroy(struct tp_bandwidth *bw);

/**
 * tp_bw_sample() - one completed copy of @bytes that took @ns (from issue
 * to completion on its engine). Thread-safe. Zero-length or zero-time
 * samples are ignored.
 */
void tp_bw_sample(struct tp_bandwidth *bw, uint64_t bytes, uint64_t ns);

/**
 * tp_bw_get() - b in bytes per ns (= GB/s): the byte-weighted moving
 * average of completed copies, or, before the first one,
 * policy.link_bandwidth * policy.link_utilisation (DELTA §4.1: 35%).
 */
double tp_bw_get(struct tp_bandwidth *bw, const struct tp_conf *conf);

/* Iteration marks: the link occupancy of the iteration that ends. */
void tp_bw_iteration_begin(struct tp_bandwidth *bw, uint64_t now);
void tp_bw_iteration_end(struct tp_bandwidth *bw, uint64_t now);
/* Fraction of the last iteration the link was busy, 0..1 (0: unknown). */
double tp_bw_occupancy(struct tp_bandwidth *bw);

#endif /* TP_POLICY_BANDWIDTH_H */

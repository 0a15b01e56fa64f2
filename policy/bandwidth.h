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
	double link;		/* the backend's link, bytes per ns; 0:
				 * unknown (tp_bw_init()) */
};

/* The peak link taken, GB/s, where neither the key nor the backend says. */
#define TP_BW_PEAK_DEFAULT 32.0

/* Weight of a new sample in the moving averages (as TCP's SRTT gain). */
#define TP_BW_ALPHA 0.125

/* @link: what the backend says its host link achieves (struct tp_vmm's
 * link_bytes_per_ns), 0 where it does not know. */
void tp_bw_init(struct tp_bandwidth *bw, double link);
void tp_bw_destroy(struct tp_bandwidth *bw);

/**
 * tp_bw_sample() - one completed copy of @bytes that took @ns (from issue
 * to completion on its engine). Thread-safe. Zero-length or zero-time
 * samples are ignored.
 */
void tp_bw_sample(struct tp_bandwidth *bw, uint64_t bytes, uint64_t ns);

/**
 * tp_bw_get() - b in bytes per ns (= GB/s): the byte-weighted moving
 * average of completed copies; before the first one (or with
 * policy.costs = model), policy.link_bandwidth * policy.link_utilisation
 * (DELTA §4.1: 35% of the peak is achieved) where the key is set, else
 * what the backend says its link achieves, else 32 GB/s at that
 * utilisation. The backend's figure is an achieved one, and is not
 * scaled: taken at 35% of itself, a fast link looks as slow as an old
 * one, a director that believes it never offloads, and so never
 * measures the link that would correct it.
 */
double tp_bw_get(struct tp_bandwidth *bw, const struct tp_conf *conf);

/* Iteration marks: the link occupancy of the iteration that ends. */
void tp_bw_iteration_begin(struct tp_bandwidth *bw, uint64_t now);
void tp_bw_iteration_end(struct tp_bandwidth *bw, uint64_t now);
/* Fraction of the last iteration the link was busy, 0..1 (0: unknown). */
double tp_bw_occupancy(struct tp_bandwidth *bw);

#endif /* TP_POLICY_BANDWIDTH_H */

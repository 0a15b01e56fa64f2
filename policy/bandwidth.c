/* SPDX-License-Identifier: MIT */
/* Link bandwidth as a moving average of completed copies. */
#include "config.h"

#include "policy/bandwidth.h"

void tp_bw_init(struct tp_bandwidth *bw, double link)
{
	*bw = (struct tp_bandwidth){ .link = link > 0 ? link : 0 };
	pthread_mutex_init(&bw->lock, NULL);
}

void tp_bw_destroy(struct tp_bandwidth *bw)
{
	pthread_mutex_destroy(&bw->lock);
}

void tp_bw_sample(struct tp_bandwidth *bw, uint64_t bytes, uint64_t ns)
{
	if (!bytes || !ns)
		return;
	pthread_mutex_lock(&bw->lock);
	/*
	 * Decay bytes and time separately and divide: the average is
	 * weighted by bytes, so a burst of tiny copies dominated by latency
	 * does not hide what large ones achieve.
	 */
	if (!bw->samples) {
		bw->bytes = (double)bytes;
		bw->ns = (double)ns;
	} else {
		bw->bytes += TP_BW_ALPHA * ((double)bytes - bw->bytes);
		bw->ns += TP_BW_ALPHA * ((double)ns - bw->ns);
	}
	bw->samples++;
	bw->busy_ns += ns;
	pthread_mutex_unlock(&bw->lock);
}

/* b before a copy is measured (tp_bw_get()); GB/s is bytes per ns. */
static double prior(const struct tp_bandwidth *bw, const struct tp_conf *conf)
{
	/* A peak, of which DELTA §4.1 saw 35% achieved. */
	if (conf->policy_link_bandwidth > 0)
		return conf->policy_link_bandwidth *
		       conf->policy_link_utilisation;
	/* Achieved already, not a peak. */
	if (bw->link > 0)
		return bw->link;
	return TP_BW_PEAK_DEFAULT * conf->policy_link_utilisation;
}

double tp_bw_get(struct tp_bandwidth *bw, const struct tp_conf *conf)
{
	double b;

	pthread_mutex_lock(&bw->lock);
	if (bw->samples && conf->policy_costs == TP_COSTS_MEASURED)
		b = bw->bytes / bw->ns;
	else
		b = prior(bw, conf);
	pthread_mutex_unlock(&bw->lock);
	return b;
}

void tp_bw_iteration_begin(struct tp_bandwidth *bw, uint64_t now)
{
	pthread_mutex_lock(&bw->lock);
	bw->busy_ns = 0;
	bw->iter_start_ns = now;
	pthread_mutex_unlock(&bw->lock);
}

void tp_bw_iteration_end(struct tp_bandwidth *bw, uint64_t now)
{
	pthread_mutex_lock(&bw->lock);
	if (now > bw->iter_start_ns) {
		double occ = (double)bw->busy_ns /
			     (double)(now - bw->iter_start_ns);

		bw->occupancy = occ > 1 ? 1 : occ;
	}
	pthread_mutex_unlock(&bw->lock);
}

double tp_bw_occupancy(struct tp_bandwidth *bw)
{
	double occ;

	pthread_mutex_lock(&bw->lock);
	occ = bw->occupancy;
	pthread_mutex_unlock(&bw->lock);
	return occ;
}

/* SPDX-License-Identifier: MIT */
/* The read-only stats.* keys: one per field of struct tp_stats. */
#ifndef TP_CTL_STATS_H
#define TP_CTL_STATS_H

#include <stddef.h>
#include <stdint.h>

struct tp_stats;

struct tp_stat_key {
	const char *key;	/* "stats.<field>" */
	size_t offset;		/* of the uint64_t field in struct tp_stats */
	const char *help;
};

extern const struct tp_stat_key tp_stat_keys[];
extern const size_t tp_stat_nkeys;

/**
 * tp_stat_find() - the row of statistics key @key ("stats.evictions").
 * Return: the row, or NULL when @key is not a statistic.
 */
const struct tp_stat_key *tp_stat_find(const char *key);

/** tp_stat_value() - the field of @st that row @k names. */
uint64_t tp_stat_value(const struct tp_stats *st, const struct tp_stat_key *k);

#endif /* TP_CTL_STATS_H */

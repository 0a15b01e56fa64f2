/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <string.h>

#include "tpager.h"
#include "ctl/stats.h"

/* offsetof over the struct, so a reordered field still reads right; a
 * field that is not uint64_t fails to compile here. */
#define TP_STAT(field, help)						\
	{ "stats." #field, offsetof(struct tp_stats, field) +		\
	  0 * sizeof(char[_Generic(((struct tp_stats *)0)->field,	\
				   uint64_t: 1)]), help },
const struct tp_stat_key tp_stat_keys[] = {
#include "ctl/stats.def"
};
#undef TP_STAT

const size_t tp_stat_nkeys = sizeof(tp_stat_keys) / sizeof(tp_stat_keys[0]);

const struct tp_stat_key *tp_stat_find(const char *key)
{
	if (!key || strncmp(key, "stats.", 6))
		return NULL;
	for (size_t i = 0; i < tp_stat_nkeys; i++)
		if (!strcmp(tp_stat_keys[i].key, key))
			return &tp_stat_keys[i];
	return NULL;
}

uint64_t tp_stat_value(const struct tp_stats *st, const struct tp_stat_key *k)
{
	uint64_t v;

	memcpy(&v, (const char *)st + k->offset, sizeof(v));
	return v;
}

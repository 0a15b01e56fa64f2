/* SPDX-License-Identifier: MIT */
/* The known key nearest to a mistyped one, for error messages. */
#include "config.h"

#include <string.h>

#include "ctl/conf.h"
#include "ctl/stats.h"

#define TP_SUGGEST_MAX 96

/* Levenshtein distance of two strings of at most TP_SUGGEST_MAX bytes. */
static unsigned edit_distance(const char *a, const char *b)
{
	unsigned row[TP_SUGGEST_MAX + 1];
	size_t la = strlen(a), lb = strlen(b);

	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* How far @key is from @known; a bare last component ("budget" for
 * "pager.budget") counts as one edit. */
static unsigned distance(const char *key, const char *known)
{
	const char *dot = strrchr(known, '.');

	if (dot && !strcmp(key, dot + 1))
		return 1;
	return edit_distance(key, known);
}

/* The most edits at which a known key is still offered. */
static unsigned threshold(size_t len)
{
	return len / 3 > 2 ? (unsigned)(len / 3) : 2;
}

static void consider(const char *key, const char *known, const char **best,
		     unsigned *best_d)
{
	size_t lk = strlen(key), ln = strlen(known);
	size_t gap = lk > ln ? lk - ln : ln - lk;
	const char *dot = strrchr(known, '.');
	unsigned d;

	if (ln > TP_SUGGEST_MAX)
		return;
	/* The length difference bounds the distance from below: skip the
	 * quadratic part when it cannot win. */
	if ((gap >= *best_d || gap > threshold(lk)) &&
	    !(dot && !strcmp(key, dot + 1)))
		return;
	d = distance(key, known);
	if (d < *best_d) {
		*best_d = d;
		*best = known;
	}
}

const char *tp_conf_suggest(const char *key)
{
	const char *best = NULL;
	unsigned best_d = ~0u;
	size_t len;

	if (!key)
		return NULL;
	len = strlen(key);
	if (!len || len > TP_SUGGEST_MAX)
		return NULL;
	for (size_t i = 0; i < tp_conf_nkeys; i++)
		consider(key, tp_conf_keys[i].key, &best, &best_d);
	for (size_t i = 0; i < tp_stat_nkeys; i++)
		consider(key, tp_stat_keys[i].key, &best, &best_d);
	/* Beyond a third of the key, the "nearest" key is a guess. */
	if (best_d > threshold(len))
		return NULL;
	return best;
}

// SPDX-License-Identifier: MIT
/*
 * Batch invariance found on this machine (batching.h): a list of the
 * shapes met, each with the row counts checked and whether their rows
 * agreed with each alone. Shapes are few (a network's layers), so a list will do.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "kernels/batching.h"

struct checked {
	uint32_t rows;
	bool same;
};

struct shape {
	struct shape *next;
	struct checked *rows;		/* row counts checked */
	size_t nr_rows, cap_rows;
	size_t len;
	unsigned char key[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct shape *shapes;

static struct shape *find(const void *key, size_t len)
{
	struct shape *s;

	for (s = shapes; s; s = s->next)
		if (s->len == len && !memcmp(s->key, key, len))
			return s;
	return NULL;
}

enum tp_batching tp_batching_of(const void *key, size_t len, uint32_t rows)
{
	enum tp_batching b = TP_BATCHING_UNCHECKED;
	struct shape *s;

	pthread_mutex_lock(&lock);
	s = find(key, len);
	for (size_t i = 0; s && i < s->nr_rows; i++)
		if (s->rows[i].rows == rows)
			b = s->rows[i].same ? TP_BATCHING_SAME :
					      TP_BATCHING_DIFFERS;
	pthread_mutex_unlock(&lock);
	return b;
}

void tp_batching_note(const void *key, size_t len, uint32_t rows, bool same)
{
	struct checked *r;
	struct shape *s;

	pthread_mutex_lock(&lock);
	s = find(key, len);
	if (!s) {
		s = calloc(1, sizeof(*s) + len);
		if (!s)
			goto out;
		s->len = len;
		memcpy(s->key, key, len);
		s->next = shapes;
		shapes = s;
	}
	for (size_t i = 0; i < s->nr_rows; i++)
		if (s->rows[i].rows == rows) {
			s->rows[i].same = same;
			goto out;
		}
	r = tp_array_grow(s->rows, &s->cap_rows, s->nr_rows + 1, sizeof(*r),
			  4);
	if (r) {
		r[s->nr_rows++] = (struct checked){ rows, same };
		s->rows = r;
	}
out:
	pthread_mutex_unlock(&lock);
}

/* Run all @rows as one problem; the first time, check them and note it. */
static int run_checked(const void *key, size_t len, uint32_t rows,
		       const struct tp_batching_ops *ops, void *priv,
		       bool *same)
{
	uint32_t pick[3] = { 0, 1, rows - 1 };
	enum tp_batching st = tp_batching_of(key, len, rows);
	int ret;

	*same = st != TP_BATCHING_DIFFERS;
	ret = ops->all(priv, rows);
	if (ret || st != TP_BATCHING_UNCHECKED)
		return ret;
	ret = ops->compare(priv, pick, rows > 2 ? 3 : 2, same);
	if (!ret)
		tp_batching_note(key, len, rows, *same);
	return ret;
}

int tp_batching_run(const void *key, size_t len, uint32_t rows,
		    uint32_t whole, unsigned flags,
		    const struct tp_batching_ops *ops, void *priv)
{
	bool alone = flags & TP_BATCHING_ALONE, same;
	int ret;

	if (rows == whole) {
		if (rows < 2)
			return ops->all(priv, rows);
		if (alone &&
		    tp_batching_of(key, len, rows) == TP_BATCHING_DIFFERS)
			return ops->single(priv, rows);
		ret = run_checked(key, len, rows, ops, priv, &same);
		return ret || same || !alone ? ret : ops->single(priv, rows);
	}
	/* A part: the whole run's bits are the reference. */
	if (!alone && tp_batching_of(key, len, whole) == TP_BATCHING_DIFFERS)
		return -ENOTSUP;
	if (rows < 2 || tp_batching_of(key, len, rows) == TP_BATCHING_DIFFERS)
		return ops->single(priv, rows);
	ret = run_checked(key, len, rows, ops, priv, &same);
	return ret || same ? ret : ops->single(priv, rows);
}

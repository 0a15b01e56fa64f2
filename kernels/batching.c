// SPDX-License-Identifier: MIT
/*
 * Batch invariance found on this machine (batching.h): a list of the
 * shapes met, each with the row counts checked and whether it runs one
 * row at a time. Shapes are few (a network's layers), so a list will do.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "kernels/batching.h"

struct shape {
	struct shape *next;
	bool single;
	uint32_t *rows;			/* row counts checked */
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
	if (s && s->single)
		b = TP_BATCHING_SINGLE;
	for (size_t i = 0; s && !s->single && i < s->nr_rows; i++)
		if (s->rows[i] == rows)
			b = TP_BATCHING_CHECKED;
	pthread_mutex_unlock(&lock);
	return b;
}

void tp_batching_note(const void *key, size_t len, uint32_t rows, bool same)
{
	struct shape *s;
	uint32_t *r;

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
	if (!same) {
		s->single = true;
		goto out;
	}
	r = tp_array_grow(s->rows, &s->cap_rows, s->nr_rows + 1, sizeof(*r),
			  4);
	if (r) {
		r[s->nr_rows++] = rows;
		s->rows = r;
	}
out:
	pthread_mutex_unlock(&lock);
}

int tp_batching_run(const void *key, size_t len, uint32_t rows,
		    const struct tp_batching_ops *ops, void *priv)
{
	enum tp_batching st = tp_batching_of(key, len, rows);
	uint32_t pick[3] = { 0, 1, rows - 1 };
	bool same;
	int ret;

	if (st == TP_BATCHING_SINGLE || rows < 2)
		return ops->single(priv, rows);
	ret = ops->all(priv, rows);
	if (ret || st == TP_BATCHING_CHECKED)
		return ret;
	ret = ops->compare(priv, pick, rows > 2 ? 3 : 2, &same);
	if (ret)
		return ret;
	tp_batching_note(key, len, rows, same);
	return same ? 0 : ops->single(priv, rows);
}

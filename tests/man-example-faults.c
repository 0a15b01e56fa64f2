/* SPDX-License-Identifier: MIT */
/*
 * Linked into the man pages' examples by tests/man-examples.sh with
 * -Wl,--wrap for every function below: each call is counted, and the one
 * that TP_EXAMPLE_FAULT names ("tp_tensor_evict:2", the second call)
 * fails without reaching the library, -EIO or NULL with errno EIO. An
 * example that checks what it claims exits non-zero whichever call
 * fails, expected errors included: -EIO is none of theirs.
 * TP_EXAMPLE_CALLS names a file that gets one line per call.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"

static bool faulted(const char *name)
{
	static const char *fault;
	static size_t len;
	static unsigned long at, seen;
	static bool ready;
	const char *calls = getenv("TP_EXAMPLE_CALLS");

	if (calls && *calls) {
		FILE *f = fopen(calls, "a");

		if (f) {
			fprintf(f, "%s\n", name);
			fclose(f);
		}
	}
	if (!ready) {
		const char *colon;

		fault = getenv("TP_EXAMPLE_FAULT");
		colon = fault ? strchr(fault, ':') : NULL;
		if (colon) {
			len = (size_t)(colon - fault);
			at = strtoul(colon + 1, NULL, 10);
		} else {
			fault = NULL;
		}
		ready = true;
	}
	if (!fault || strlen(name) != len || strncmp(name, fault, len))
		return false;
	return ++seen == at;
}

/* A function that returns 0 or -errno. */
#define WRAP_INT(name, params, args)					\
	int __real_##name params;					\
	int __wrap_##name params;					\
	int __wrap_##name params					\
	{								\
		if (faulted(#name))					\
			return -EIO;					\
		return __real_##name args;				\
	}

/* A function that returns a pointer, or NULL with errno set. */
#define WRAP_PTR(type, name, params, args)				\
	type *__real_##name params;					\
	type *__wrap_##name params;					\
	type *__wrap_##name params					\
	{								\
		if (faulted(#name)) {					\
			errno = EIO;					\
			return NULL;					\
		}							\
		return __real_##name args;				\
	}

WRAP_PTR(struct tp_ctx, tp_ctx_create, (const char *opts), (opts))
WRAP_PTR(struct tp_tensor, tp_tensor_create,
	 (struct tp_ctx *ctx, size_t bytes, unsigned flags),
	 (ctx, bytes, flags))
WRAP_PTR(void, tp_tensor_acquire,
	 (struct tp_ctx *ctx, struct tp_tensor *t, unsigned mode),
	 (ctx, t, mode))
WRAP_PTR(void, tp_tensor_acquire_range,
	 (struct tp_ctx *ctx, struct tp_tensor *t, size_t off, size_t len,
	  unsigned mode),
	 (ctx, t, off, len, mode))
WRAP_PTR(struct tp_tensor, tp_tensor_lookup,
	 (struct tp_ctx *ctx, const void *addr), (ctx, addr))
WRAP_INT(tp_tensor_release, (struct tp_ctx *ctx, struct tp_tensor *t),
	 (ctx, t))
WRAP_INT(tp_tensor_release_range,
	 (struct tp_ctx *ctx, struct tp_tensor *t, size_t off, size_t len),
	 (ctx, t, off, len))
WRAP_INT(tp_tensor_write,
	 (struct tp_ctx *ctx, struct tp_tensor *t, size_t off, const void *src,
	  size_t len),
	 (ctx, t, off, src, len))
WRAP_INT(tp_tensor_read,
	 (struct tp_ctx *ctx, struct tp_tensor *t, size_t off, void *dst,
	  size_t len),
	 (ctx, t, off, dst, len))
WRAP_INT(tp_tensor_offload, (struct tp_ctx *ctx, struct tp_tensor *t),
	 (ctx, t))
WRAP_INT(tp_tensor_evict, (struct tp_ctx *ctx, struct tp_tensor *t),
	 (ctx, t))
WRAP_INT(tp_tensor_prefetch, (struct tp_ctx *ctx, struct tp_tensor *t),
	 (ctx, t))
WRAP_INT(tp_tensor_free, (struct tp_ctx *ctx, struct tp_tensor *t),
	 (ctx, t))
WRAP_INT(tp_sync, (struct tp_ctx *ctx), (ctx))
WRAP_INT(tp_iteration_begin, (struct tp_ctx *ctx), (ctx))
WRAP_INT(tp_iteration_end, (struct tp_ctx *ctx), (ctx))
WRAP_INT(tp_op_run,
	 (struct tp_ctx *ctx, const struct tp_op_type *type,
	  const void *params, size_t params_len,
	  struct tp_tensor *const *inputs, unsigned n_in,
	  struct tp_tensor **outputs, const size_t *out_bytes, unsigned n_out),
	 (ctx, type, params, params_len, inputs, n_in, outputs, out_bytes,
	  n_out))
WRAP_INT(tp_op_before_copy, (const struct tp_op_launch *l), (l))
WRAP_INT(tp_stats_get, (struct tp_ctx *ctx, struct tp_stats *st), (ctx, st))
WRAP_INT(tp_ctl_get,
	 (struct tp_ctx *ctx, const char *key, char *buf, size_t len),
	 (ctx, key, buf, len))
WRAP_INT(tp_ctl_set, (struct tp_ctx *ctx, const char *key, const char *value),
	 (ctx, key, value))

/* SPDX-License-Identifier: MIT */
/*
 * What a launch is told of the device's arithmetic: the math its products
 * may use (vmm.math) and the most scratch its algorithm may take
 * (vmm.workspace_max), the same at the first run and at a regeneration,
 * so that a recompute's bits are the first run's. Host backend: the
 * launch runs, with data. The key is fixed once the context runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "tests/tap.h"

static unsigned launches;
static enum tp_op_math seen_math[4];
static size_t seen_ws[4];

/* Out = in + 1, byte by byte; notes what the launch was told. */
static int inc_launch(const struct tp_op_launch *l)
{
	const unsigned char *in = l->in[0];
	unsigned char *out = l->out[0];

	if (launches < 4) {
		seen_math[launches] = l->math;
		seen_ws[launches] = l->workspace_max;
	}
	launches++;
	for (size_t i = 0; i < l->out_bytes[0]; i++)
		out[i] = (unsigned char)(in[i] + 1);
	return 0;
}

static const struct tp_op_type inc = { .name = "inc", .launch = inc_launch };

#define BYTES	(4u << 20)

static char logged[256];

static void keep_log(enum tp_log_level level, const char *msg, void *priv)
{
	snprintf(logged, sizeof(logged), "%s", msg);
}

/*
 * One op, its output evicted, its memory taken by another tensor, and
 * read back: regenerated, two launches (budget: two tensors).
 */
static int run_twice(struct tp_ctx *ctx)
{
	static unsigned char buf[BYTES];
	struct tp_tensor *a, *b = NULL, *c;
	size_t bytes = BYTES;
	int ret;

	a = tp_tensor_create(ctx, BYTES, TP_UNCOMPUTABLE);
	if (!a)
		return -1;
	memset(buf, 7, sizeof(buf));
	ret = tp_tensor_write(ctx, a, 0, buf, BYTES);
	ret = ret ?: tp_op_run(ctx, &inc, NULL, 0, &a, 1, &b, &bytes, 1);
	ret = ret ?: tp_tensor_evict(ctx, b);
	c = ret ? NULL : tp_tensor_create(ctx, BYTES, TP_UNCOMPUTABLE);
	ret = ret ?: (c ? tp_tensor_write(ctx, c, 0, buf, BYTES) : -1);
	ret = ret ?: tp_tensor_read(ctx, b, 0, buf, BYTES);
	if (ret)
		diag("run: %s", tp_strerror(ret));
	if (!ret && (buf[0] != 8 || buf[BYTES - 1] != 8))
		ret = -1;
	if (c)
		tp_tensor_free(ctx, c);
	tp_tensor_free(ctx, b);
	tp_tensor_free(ctx, a);
	return ret;
}

/*
 * A context of @opts runs the op twice (the run, the regeneration): each
 * launch told @math and @ws, the bytes right. Return: the context.
 */
static struct tp_ctx *told(const char *opts, enum tp_op_math math, size_t ws,
			   const char *what)
{
	struct tp_ctx *ctx = tp_ctx_create(opts);
	int ret;

	if (!ctx)
		bail_out("%s: %s", what, logged);
	launches = 0;
	ret = run_twice(ctx);
	ok(!ret && launches == 2 && seen_math[0] == math &&
	   seen_math[1] == math && seen_ws[0] == ws && seen_ws[1] == ws,
	   "%s: the run and its regeneration told so, the bytes right (%u launches, math %d %d, scratch %zu %zu)",
	   what, launches, seen_math[0], seen_math[1], seen_ws[0], seen_ws[1]);
	return ctx;
}

int main(void)
{
	struct tp_ctx *ctx;
	char buf[32];

	plan_tests(5);
	unsetenv("TPAGER_CONF");
	unsetenv("TPAGER_OPTS");
	setenv("TPAGER_SYSCONF", "/nonexistent/tpager.conf", 1);
	tp_set_log(keep_log, NULL);

	ctx = told("vmm.backend=host,pager.budget=8M", TP_MATH_FP32,
		   256u << 20, "defaults: FP32 and 256 MiB of scratch");
	tp_ctx_destroy(ctx);
	ctx = told("vmm.backend=host,pager.budget=8M,vmm.math=tf32,vmm.workspace_max=1M",
		   TP_MATH_TF32, 1u << 20,
		   "vmm.math=tf32, vmm.workspace_max=1M");
	ok(!tp_ctl_get(ctx, "vmm.math", buf, sizeof(buf)) &&
	   !strcmp(buf, "tf32"), "vmm.math reads tf32 (%s)", buf);
	ok(tp_ctl_set(ctx, "vmm.math", "fp32") < 0 &&
	   !tp_ctl_get(ctx, "vmm.math", buf, sizeof(buf)) &&
	   !strcmp(buf, "tf32"),
	   "a running context refuses a change of vmm.math and keeps tf32");
	tp_ctx_destroy(ctx);

	logged[0] = 0;
	errno = 0;
	ctx = tp_ctx_create("vmm.backend=host,vmm.math=fp16");
	ok(!ctx && errno == EINVAL && strstr(logged, "vmm.math"),
	   "vmm.math=fp16 is refused, naming the key: %s", logged);
	if (ctx)
		tp_ctx_destroy(ctx);
	return exit_status();
}

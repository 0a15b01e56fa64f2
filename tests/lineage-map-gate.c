/* SPDX-License-Identifier: MIT */
/*
 * Which ops wait for the maps made ahead on the device (vmm.map_gate):
 * on the sim's h200 profile, whose driver thread is played, an op whose
 * memory was just mapped ahead has its stream wait for the maps where
 * its type enqueues kernels alone (TP_OP_KERNELS_ONLY) and it is not in
 * place; any other op's launch waits on the host. vmm.map_gate = ops
 * lets every op not in place wait on the device, = host none.
 * Counted by stats.gate_device against stats.gate_waits.
 */
#include <stdio.h>
#include <string.h>

#include "tpager.h"
#include "tests/tap.h"

static int nothing(const struct tp_op_launch *l)
{
	return 0;
}

static const struct tp_op_type kern = {
	.name = "kern", .launch = nothing, .flags = TP_OP_KERNELS_ONLY,
};
static const struct tp_op_type lib = { .name = "lib", .launch = nothing };
static const struct tp_op_type kern_ = {
	.name = "kern_", .launch = nothing,
	.flags = TP_OP_KERNELS_ONLY | TP_OP_INPLACE,
};

#define BYTES	(8u << 20)

/*
 * Run @type on a fresh tensor (its memory and its output's mapped
 * ahead just before): the waits it added on the device and in all.
 */
static int run_one(struct tp_ctx *ctx, const struct tp_op_type *type,
		   uint64_t *device, uint64_t *waits)
{
	struct tp_tensor *x = tp_tensor_create(ctx, BYTES, TP_UNCOMPUTABLE);
	struct tp_tensor *y = NULL;
	struct tp_stats a, b;
	size_t bytes = BYTES;
	int ret;

	if (!x)
		return -1;
	ret = tp_stats_get(ctx, &a);
	ret = ret ?: tp_op_run(ctx, type, NULL, 0, &x, 1, &y, &bytes, 1);
	ret = ret ?: tp_stats_get(ctx, &b);
	ret = ret ?: tp_sync(ctx);
	*device = b.gate_device - a.gate_device;
	*waits = b.gate_waits - a.gate_waits;
	if (y && y != x)
		tp_tensor_free(ctx, y);
	tp_tensor_free(ctx, x);
	return ret;
}

static void check(const char *gate, const struct tp_op_type *type,
		  bool on_device)
{
	char opts[160];
	struct tp_ctx *ctx;
	uint64_t device = 0, waits = 0;
	int ret;

	snprintf(opts, sizeof(opts),
		 "vmm.backend=sim,vmm.sim.profile=h200,vmm.map_gate=%s,"
		 "pager.budget=1G", gate);
	ctx = tp_ctx_create(opts);
	if (!ctx)
		bail_out("a context with %s", opts);
	ret = run_one(ctx, type, &device, &waits);
	ok(!ret && waits >= 1 && device == (on_device ? 1u : 0u),
	   "map_gate=%s: %s waits for its maps %s (%llu of %llu waits on the device)",
	   gate, type->name, on_device ? "on the device" : "on the host",
	   (unsigned long long)device, (unsigned long long)waits);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	plan_tests(9);
	check("kernels", &kern, true);
	check("kernels", &lib, false);
	check("kernels", &kern_, false);
	check("ops", &kern, true);
	check("ops", &lib, true);
	check("ops", &kern_, false);
	check("host", &kern, false);
	check("host", &lib, false);
	check("host", &kern_, false);
	return exit_status();
}

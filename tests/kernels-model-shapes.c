// SPDX-License-Identifier: MIT
/*
 * The large models are built right: one training step of each on the sim
 * backend (shapes and costs, no data) succeeds, and the parameter count is
 * the published one: torchvision's ResNet-18/34/50/101 and VGG-16 with
 * 1000 classes, and for the BERT encoder the count its layout implies.
 * Options a model cannot take are EINVAL.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kernels/models.h"
#include "tests/tap.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void check(const char *what, const struct tp_model_opts *mo,
		  size_t want_params)
{
	struct tp_ctx *ctx = tp_ctx_create("vmm.backend=sim");
	struct tp_model *m = ctx ? tp_model_create(ctx, mo) : NULL;
	struct tp_stats st = { 0 };
	float loss = 0;
	double t0 = now();
	int rc = m ? tp_model_step(m, &loss) : -errno;

	if (ctx)
		tp_stats_get(ctx, &st);
	ok_rc(rc, "%s: one step on sim", what);
	ok(!rc && tp_model_param_bytes(m) == 4 * want_params && isnan(loss),
	   "%s: %zu parameters", what, want_params);
	diag("%s: physical peak %llu MiB, %.1f s", what,
	     (unsigned long long)(st.phys_peak >> 20),
	     now() - t0);
	tp_model_destroy(m);
	if (ctx)
		tp_ctx_destroy(ctx);
}

static size_t bert_params(size_t v, size_t s, size_t h, size_t l, size_t c)
{
	size_t layer = 4 * (h * h + h) + 2 * h + (4 * h * h + 4 * h) +
		       (4 * h * h + h) + 2 * h;

	return v * h + s * h + 2 * h + l * layer + h * c + c;
}

static bool refused(const struct tp_model_opts *mo)
{
	struct tp_ctx *ctx = tp_ctx_create("vmm.backend=sim");
	struct tp_model *m;
	bool ret;

	errno = 0;
	m = tp_model_create(ctx, mo);
	ret = !m && errno == EINVAL;
	tp_model_destroy(m);
	tp_ctx_destroy(ctx);
	return ret;
}

/*
 * ResNet-50's stem output holds 64 x 112 x 112 = 802816 floats an image:
 * past batch 5349 it has more than 2^32 elements, which the element-wise
 * ops cannot count, and the step must fail with -EOVERFLOW rather than
 * run on a truncated count; at 5349 it runs.
 */
static int r50_step(unsigned batch)
{
	struct tp_ctx *ctx = tp_ctx_create("vmm.backend=sim,"
					   "vmm.device_memory=4T");
	struct tp_model_opts mo = { .name = "resnet", .depth = 50,
				    .batch = batch };
	struct tp_model *m = ctx ? tp_model_create(ctx, &mo) : NULL;
	int rc = m ? tp_model_step(m, NULL) : -errno;

	tp_model_destroy(m);
	if (ctx)
		tp_ctx_destroy(ctx);
	return rc;
}

int main(void)
{
	static const struct {
		unsigned depth;
		size_t params;
	} resnets[] = {
		{ 18, 11689512 }, { 34, 21797672 }, { 50, 25557032 },
		{ 101, 44549160 },
	};
	struct tp_model_opts mo;
	char what[32];
	unsigned i;

	plan_tests(2 * 7 + 4 + 2);
	for (i = 0; i < 4; i++) {
		mo = (struct tp_model_opts){ .name = "resnet", .batch = 2,
					     .image = 64,
					     .depth = resnets[i].depth };
		snprintf(what, sizeof(what), "resnet-%u", resnets[i].depth);
		check(what, &mo, resnets[i].params);
	}
	mo = (struct tp_model_opts){ .name = "vgg16", .batch = 1 };
	/* 138357544 of configuration D, less its 4224 convolution biases,
	 * plus the batch-norms' gamma and beta */
	check("vgg16 at 224", &mo, 138357544 - 4224 + 2 * 4224);
	mo = (struct tp_model_opts){ .name = "bert", .batch = 1, .layers = 12,
				     .hidden = 768, .heads = 12, .seq = 128,
				     .vocab = 30522, .classes = 2,
				     .optim = "adam" };
	check("bert-base layout", &mo, bert_params(30522, 128, 768, 12, 2));
	mo = (struct tp_model_opts){ .name = "mlp" };
	check("mlp", &mo, 64 * 128 + 128 + 128 * 128 + 128 + 128 * 10 + 10);

	mo = (struct tp_model_opts){ .name = "resnet", .depth = 19 };
	ok(refused(&mo), "resnet depth 19 is EINVAL");
	mo = (struct tp_model_opts){ .name = "bert", .hidden = 100,
				     .heads = 3 };
	ok(refused(&mo), "bert hidden not a multiple of heads is EINVAL");
	mo = (struct tp_model_opts){ .name = "alexnet" };
	ok(refused(&mo), "an unknown model is EINVAL");
	mo = (struct tp_model_opts){ .name = "mlp", .optim = "lbfgs" };
	ok(refused(&mo), "an unknown optimizer is EINVAL");
	ok_rc(r50_step(5349), "resnet-50 at batch 5349: a step on sim");
	ok(r50_step(5350) == -EOVERFLOW,
	   "resnet-50 at batch 5350: 2^32 elements in one tensor is "
	   "EOVERFLOW");
	return exit_status();
}

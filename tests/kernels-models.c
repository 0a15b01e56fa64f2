// SPDX-License-Identifier: MIT
/*
 * Models train through tp_op_run on the host backend: over 20 steps the
 * loss of mlp, resnet-mini and a small BERT falls (the mean of the last
 * five steps below 60% of the first step's), and a run of the same model
 * under a budget of half the unconstrained physical peak, where the pager
 * must evict and offload, ends with weights equal bit for bit to the
 * unconstrained run's, having recomputed and offloaded. BERT on its own
 * defaults (SGD with momentum, its learning rate, bert-base's hidden 768,
 * 12 heads and vocabulary of 30522, cut to 2 layers and a sequence of 32)
 * trains too: no step's loss above the first's, and the mean of steps 6
 * to 8 below 85% of it (it rose from 2.96 to 10.14 in three steps on a
 * GPU, and from 3.23 to 11.33 in two here).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/models.h"
#include "tests/tap.h"

#define STEPS 20

struct run {
	float loss[STEPS];
	void *params;
	size_t bytes;
	struct tp_stats st;
	int rc;
};

static void train(const char *opts, const struct tp_model_opts *mo,
		  struct run *r)
{
	struct tp_ctx *ctx = tp_ctx_create(opts);
	struct tp_model *m;
	unsigned i;

	memset(r, 0, sizeof(*r));
	if (!ctx) {
		r->rc = -errno;
		return;
	}
	m = tp_model_create(ctx, mo);
	if (!m) {
		r->rc = -errno;
		goto out;
	}
	for (i = 0; i < STEPS && !r->rc; i++)
		r->rc = tp_model_step(m, &r->loss[i]);
	if (!r->rc) {
		r->bytes = tp_model_param_bytes(m);
		r->params = malloc(r->bytes);
		r->rc = r->params ? tp_model_read_params(m, r->params, r->bytes)
				  : -ENOMEM;
	}
	tp_stats_get(ctx, &r->st);
	tp_model_destroy(m);
out:
	tp_ctx_destroy(ctx);
}

static double tail_mean(const struct run *r)
{
	double s = 0;
	unsigned i;

	for (i = STEPS - 5; i < STEPS; i++)
		s += r->loss[i];
	return s / 5;
}

static void check_model(const struct tp_model_opts *mo)
{
	/*
	 * The policy prices ops by the cost model, not by their timings on
	 * this machine, and copies at 12 GB/s: under half the peak every
	 * model then both offloads and evicts, run after run (with measured
	 * costs and a 50 MB/s link, resnet-mini offloaded 0, 1 or 105
	 * times).
	 */
	const char *base = "vmm.backend=host,vmm.chunk_size=16K,"
			   "pager.budget=1G,pager.host_budget=1G,policy.link_bandwidth=12,"
			   "policy.costs=model";
	char opts[256];
	struct run full, tight;

	train(base, mo, &full);
	if (!ok_rc(full.rc, "%s: %d steps unconstrained", mo->name, STEPS)) {
		skip(5, "no reference run");
		return;
	}
	diag("%s: loss %.4f -> %.4f, %zu parameter bytes, peak %llu bytes",
	     mo->name, full.loss[0], tail_mean(&full), full.bytes,
	     (unsigned long long)full.st.phys_peak);
	ok(tail_mean(&full) < 0.6 * full.loss[0],
	   "%s: the loss falls below 60%% of the first step's", mo->name);

	snprintf(opts, sizeof(opts), "vmm.backend=host,vmm.chunk_size=16K,"
		 "pager.budget=%llu,pager.host_budget=1G,policy.link_bandwidth=12,"
		 "policy.costs=model",
		 (unsigned long long)full.st.phys_peak / 2);
	train(opts, mo, &tight);
	ok_rc(tight.rc, "%s: %d steps under half the peak (%llu bytes)",
	      mo->name, STEPS, (unsigned long long)full.st.phys_peak / 2);
	ok(!tight.rc && tight.bytes == full.bytes &&
	   !memcmp(tight.params, full.params, full.bytes),
	   "%s: final weights equal the unconstrained run's bit for bit",
	   mo->name);
	diag("%s: peak %llu, recomputes %llu, offloads %llu, evictions %llu",
	     mo->name, (unsigned long long)tight.st.phys_peak,
	     (unsigned long long)tight.st.recomputes,
	     (unsigned long long)tight.st.offloads,
	     (unsigned long long)tight.st.evictions);
	ok(tight.st.offloads > 0, "%s: the budget made the pager offload",
	   mo->name);
	ok(tight.st.recomputes > 0 && tight.st.evictions > 0,
	   "%s: the budget made the pager evict and recompute", mo->name);
	free(full.params);
	free(tight.params);
}

static void check_bert_default(void)
{
	struct tp_model_opts mo = { .name = "bert", .layers = 2,
				    .hidden = 768, .heads = 12, .seq = 32,
				    .vocab = 30522, .seed = 4 };
	struct tp_ctx *ctx = tp_ctx_create("vmm.backend=host,"
					   "vmm.chunk_size=64K");
	struct tp_model *m = ctx ? tp_model_create(ctx, &mo) : NULL;
	float loss[8], worst = 0, tail = 0;
	unsigned i;
	int rc = m ? 0 : -errno;

	for (i = 0; i < 8 && !rc; i++)
		rc = tp_model_step(m, &loss[i]);
	if (!ok_rc(rc, "bert defaults at hidden 768: 8 steps")) {
		skip(1, "no run");
		goto out;
	}
	for (i = 1; i < 8; i++)
		worst = loss[i] > worst ? loss[i] : worst;
	tail = (loss[5] + loss[6] + loss[7]) / 3;
	diag("bert defaults: loss %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f",
	     loss[0], loss[1], loss[2], loss[3], loss[4], loss[5], loss[6],
	     loss[7]);
	ok(worst <= loss[0] && tail < 0.85f * loss[0],
	   "bert defaults: the loss falls (%.4f, at most %.4f after, "
	   "%.4f at the end)", loss[0], worst, tail);
out:
	tp_model_destroy(m);
	if (ctx)
		tp_ctx_destroy(ctx);
}

int main(void)
{
	struct tp_model_opts mlp = { .name = "mlp", .seed = 1 };
	struct tp_model_opts mini = { .name = "resnet-mini", .seed = 2,
				      .lr = 0.05f };
	struct tp_model_opts bert = { .name = "bert", .seed = 3, .vocab = 32,
				      .batch = 8, .optim = "adam",
				      .lr = 0.003f };

	plan_tests(20);
	check_model(&mlp);
	check_model(&mini);
	check_model(&bert);
	check_bert_default();
	return exit_status();
}

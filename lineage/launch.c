/* SPDX-License-Identifier: MIT */
/*
 * Launching an op on the compute stream and measuring what it cost: the
 * host clock around the launch function on the host backend (it computes
 * on the caller's thread), the charged cost on sim (which holds no data,
 * so the launch function is not called), and on cuda the device's time
 * between two events around the launch, read later (op_timing.c): until
 * then the caller gets the prior the op type gives and a pair to claim.
 */
#include <errno.h>

#include "tracer/tracer.h"
#include "lineage/lineage_int.h"
#include "vmm/vmm.h"

struct launch_arg {
	struct tp_op_launch l;
	struct tp_vmm *vmm;
	uint64_t ns;
	int ret;
};

static int launch_fn(void *p)
{
	struct launch_arg *a = p;
	uint64_t t0 = tp_vmm_now_ns(a->vmm);

	a->ret = a->l.type->launch(&a->l);
	a->ns = tp_vmm_now_ns(a->vmm) - t0;
	return a->ret;
}

/*
 * What the op's launch enqueues, for the wait for maps made ahead. One in
 * place waits on the host, whatever it enqueues: it writes what the user
 * or an op before it wrote, and the host's wait sees a failed map before
 * anything is overwritten (a stream waiting on the device would run it
 * on a spare page instead, map_ahead.h).
 */
static enum tp_vmm_work gate_work(const struct tp_op_type *type)
{
	if (type->flags & TP_OP_INPLACE)
		return TP_WORK_ANY;
	return type->flags & TP_OP_KERNELS_ONLY ? TP_WORK_KERNELS : TP_WORK_OP;
}

int tp_lin_launch(struct tp_lineage *lin, const struct tp_op_type *type,
		  const void *params, size_t params_len,
		  void *const *in, const size_t *in_bytes, unsigned n_in,
		  void *const *out, const size_t *out_bytes, unsigned n_out,
		  bool recompute, const struct tp_lin_part *part, uint64_t *ns)
{
	struct tp_vmm *vmm = lin->vmm;
	const size_t *whole_in = part ? part->whole_in_bytes : in_bytes;
	uint64_t prior = tp_lin_type_prior_ns(vmm, type, params, params_len,
					      whole_in, n_in);
	struct tp_op_work w = { 0 }, *work = NULL;
	struct launch_arg a = {
		.l = {
			.ctx = lin->owner,
			.type = type,
			.params = params,
			.params_len = params_len,
			.in = in,
			.in_bytes = in_bytes,
			.n_in = n_in,
			.out = out,
			.out_bytes = out_bytes,
			.n_out = n_out,
			.recompute = recompute,
			.parts = 1,
			.device = tp_vmm_device(vmm),
			.workspace_max = tp_vmm_workspace_max(vmm),
			.math = tp_vmm_op_math(vmm),
		},
		.vmm = vmm,
	};
	struct tp_tracer *tr = lin->tracer;
	enum tp_vmm_work work_kind = gate_work(type);
	double share = 1;
	bool timed;
	int span, ret;

	if (part) {
		unsigned passes = part->passes > 1 ? part->passes : 1;

		a.l.part = part->part;
		a.l.parts = part->parts;
		a.l.row0 = part->row0;
		a.l.rows = part->rows;
		a.l.sums = part->sums;
		a.l.pass = part->pass;
		a.l.passes = part->passes;
		/*
		 * The prior is of the whole op: a part costs its rows' share,
		 * of its pass's share where the parts go over the rows twice.
		 */
		share = (double)part->rows / part->total / passes;
		prior = (uint64_t)((double)prior * part->rows / part->total /
				   passes);
	}
	/* What the trace says of the op: its work, where the type knows. */
	if (tr && type->work &&
	    !type->work(params, params_len, whole_in, n_in, &w)) {
		w.flops *= share;
		w.bytes *= share;
		work = &w;
	}
	/*
	 * The wait for maps made ahead comes before the op's events: the
	 * op's measured time and its span in the trace are the op's.
	 */
	ret = tp_vmm_gate_work(vmm, TP_STREAM_COMPUTE, work_kind);
	if (ret)
		return ret;
	if (!tp_vmm_has_data(vmm)) {
		*ns = prior;
		span = tp_tracer_op_begin(tr);
		ret = tp_vmm_launch_op(vmm, TP_STREAM_COMPUTE, type->name,
				       work_kind, prior, NULL, NULL);
		tp_tracer_op_end(tr, span, type->name, recompute, !ret, work);
		return ret;
	}
	a.l.stream = tp_vmm_stream_handle(vmm, TP_STREAM_COMPUTE);
	timed = a.l.stream && !tp_lin_timing_begin(lin);
	span = tp_tracer_op_begin(tr);
	ret = tp_vmm_launch_op(vmm, TP_STREAM_COMPUTE, type->name,
			       work_kind, prior, launch_fn, &a);
	if (!ret && a.ret)
		ret = a.ret;
	tp_tracer_op_end(tr, span, type->name, recompute, !ret, work);
	/* A failed launch leaves its pair unclaimed; the next one drops it. */
	if (timed && !ret)
		tp_lin_timing_end(lin, recompute);
	if (ret > 0)	/* a launch function that forgot the sign */
		ret = -ret;
	/* On a device the host clock saw only the enqueue. */
	*ns = a.l.stream ? prior : a.ns;
	return ret;
}

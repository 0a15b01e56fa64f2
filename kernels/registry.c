// SPDX-License-Identifier: MIT
/*
 * The op registry: one descriptor per op (its shapes, FLOPs and
 * implementations) and the launch function every op type shares, which
 * checks the launch against the shapes and runs the CPU or the CUDA code.
 *
 * One file, past the usual length: the table at the end points at each
 * op's shape, FLOP, row and split functions above it, so that an op is
 * read, and checked (tests/kernels-model-shapes), in one place.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "kernels/kernel.h"
#include "vmm/vmm.h"

#define F 4	/* sizeof(float) == sizeof(int32_t) */

/* --- shapes ----------------------------------------------------------- */

static int set_io(size_t *in, unsigned *n_in, size_t *out, unsigned *n_out,
		  unsigned ni, const size_t *iv, unsigned no, const size_t *ov)
{
	unsigned i;

	for (i = 0; i < ni; i++) {
		if (!iv[i])
			return -EINVAL;
		in[i] = iv[i];
	}
	for (i = 0; i < no; i++) {
		if (!ov[i])
			return -EINVAL;
		out[i] = ov[i];
	}
	*n_in = ni;
	*n_out = no;
	return 0;
}

#define IO(ni, no, ...) do { \
	const size_t v_[] = { __VA_ARGS__ }; \
	return set_io(in, n_in, out, n_out, ni, v_, no, v_ + (ni)); \
} while (0)

#define SHAPE_FN(name) \
	static int shape_##name(const void *p_, size_t *in, unsigned *n_in, \
				size_t *out, unsigned *n_out)

SHAPE_FN(linear)
{
	const struct tp_linear_params *p = p_;
	size_t x = (size_t)p->n * p->in * F, w = (size_t)p->out * p->in * F;
	size_t y = (size_t)p->n * p->out * F, b = (size_t)p->out * F;

	if (p->bias > 1)
		return -EINVAL;
	if (p->bias)
		IO(3, 1, x, w, b, y);
	IO(2, 1, x, w, y);
}

SHAPE_FN(linear_bwd)
{
	const struct tp_linear_params *p = p_;
	size_t x = (size_t)p->n * p->in * F, w = (size_t)p->out * p->in * F;
	size_t y = (size_t)p->n * p->out * F, b = (size_t)p->out * F;

	if (p->bias > 1)
		return -EINVAL;
	if (p->bias)
		IO(3, 3, y, x, w, x, w, b);
	IO(3, 2, y, x, w, x, w);
}

static int gemm_sizes(const struct tp_gemm_params *p, size_t *a, size_t *b,
		      size_t *c)
{
	if (!p->batch || p->trans_a > 1 || p->trans_b > 1)
		return -EINVAL;
	*a = (size_t)p->batch * p->m * p->k * F;
	*b = (size_t)p->batch * p->k * p->n * F;
	*c = (size_t)p->batch * p->m * p->n * F;
	return 0;
}

SHAPE_FN(gemm)
{
	size_t a, b, c;

	if (gemm_sizes(p_, &a, &b, &c))
		return -EINVAL;
	IO(2, 1, a, b, c);
}

SHAPE_FN(gemm_bwd)
{
	size_t a, b, c;

	if (gemm_sizes(p_, &a, &b, &c))
		return -EINVAL;
	IO(3, 2, c, a, b, a, b);
}

static int conv_sizes(const struct tp_conv2d_params *p, size_t *x, size_t *w,
		      size_t *b, size_t *y)
{
	uint32_t oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
	uint32_t ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);

	if (p->bias > 1 || !oh || !ow)
		return -EINVAL;
	*x = (size_t)p->n * p->c * p->h * p->w * F;
	*w = (size_t)p->k * p->c * p->r * p->s * F;
	*b = (size_t)p->k * F;
	*y = (size_t)p->n * p->k * oh * ow * F;
	return 0;
}

SHAPE_FN(conv2d)
{
	const struct tp_conv2d_params *p = p_;
	size_t x, w, b, y;

	if (conv_sizes(p, &x, &w, &b, &y))
		return -EINVAL;
	if (p->bias)
		IO(3, 1, x, w, b, y);
	IO(2, 1, x, w, y);
}

SHAPE_FN(conv2d_bwd)
{
	const struct tp_conv2d_params *p = p_;
	size_t x, w, b, y;

	if (conv_sizes(p, &x, &w, &b, &y))
		return -EINVAL;
	if (p->bias)
		IO(3, 3, y, x, w, x, w, b);
	IO(3, 2, y, x, w, x, w);
}

SHAPE_FN(batchnorm)
{
	const struct tp_batchnorm_params *p = p_;
	size_t x = (size_t)p->n * p->c * p->hw * F, c = (size_t)p->c * F;

	if (!(p->eps > 0))
		return -EINVAL;
	IO(3, 3, x, c, c, x, c, c);
}

SHAPE_FN(batchnorm_bwd)
{
	const struct tp_batchnorm_params *p = p_;
	size_t x = (size_t)p->n * p->c * p->hw * F, c = (size_t)p->c * F;

	if (!(p->eps > 0))
		return -EINVAL;
	IO(5, 3, x, x, c, c, c, x, c, c);
}

SHAPE_FN(eltwise)
{
	const struct tp_eltwise_params *p = p_;
	size_t x = (size_t)p->count * F;

	IO(1, 1, x, x);
}

SHAPE_FN(eltwise_bwd)
{
	const struct tp_eltwise_params *p = p_;
	size_t x = (size_t)p->count * F;

	IO(2, 1, x, x, x);
}

SHAPE_FN(add)
{
	const struct tp_eltwise_params *p = p_;
	size_t x = (size_t)p->count * F;

	IO(2, 1, x, x, x);
}

SHAPE_FN(add_bwd)
{
	const struct tp_eltwise_params *p = p_;
	size_t x = (size_t)p->count * F;

	IO(1, 2, x, x, x);
}

static int pool_sizes(const struct tp_pool_params *p, size_t *x, size_t *y)
{
	uint32_t oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
	uint32_t ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);

	/* A window made only of padding would have no maximum. */
	if (!oh || !ow || p->pad_h >= p->r || p->pad_w >= p->s)
		return -EINVAL;
	*x = (size_t)p->n * p->c * p->h * p->w * F;
	*y = (size_t)p->n * p->c * oh * ow * F;
	return 0;
}

SHAPE_FN(pool)
{
	size_t x, y;

	if (pool_sizes(p_, &x, &y))
		return -EINVAL;
	IO(1, 1, x, y);
}

SHAPE_FN(maxpool_bwd)
{
	size_t x, y;

	if (pool_sizes(p_, &x, &y))
		return -EINVAL;
	IO(3, 1, y, x, y, x);
}

SHAPE_FN(avgpool_bwd)
{
	size_t x, y;

	if (pool_sizes(p_, &x, &y))
		return -EINVAL;
	IO(1, 1, y, x);
}

SHAPE_FN(global_avgpool)
{
	const struct tp_gap_params *p = p_;
	size_t x = (size_t)p->n * p->c * p->hw * F, y = (size_t)p->n * p->c * F;

	IO(1, 1, x, y);
}

SHAPE_FN(global_avgpool_bwd)
{
	const struct tp_gap_params *p = p_;
	size_t x = (size_t)p->n * p->c * p->hw * F, y = (size_t)p->n * p->c * F;

	IO(1, 1, y, x);
}

SHAPE_FN(softmax)
{
	const struct tp_softmax_params *p = p_;
	size_t x = (size_t)p->rows * p->cols * F;

	IO(1, 1, x, x);
}

SHAPE_FN(softmax_bwd)
{
	const struct tp_softmax_params *p = p_;
	size_t x = (size_t)p->rows * p->cols * F;

	IO(2, 1, x, x, x);
}

SHAPE_FN(layernorm)
{
	const struct tp_layernorm_params *p = p_;
	size_t x = (size_t)p->rows * p->cols * F;
	size_t c = (size_t)p->cols * F, r = (size_t)p->rows * F;

	if (!(p->eps > 0))
		return -EINVAL;
	IO(3, 3, x, c, c, x, r, r);
}

SHAPE_FN(layernorm_bwd)
{
	const struct tp_layernorm_params *p = p_;
	size_t x = (size_t)p->rows * p->cols * F;
	size_t c = (size_t)p->cols * F, r = (size_t)p->rows * F;

	if (!(p->eps > 0))
		return -EINVAL;
	IO(5, 3, x, x, c, r, r, x, c, c);
}

SHAPE_FN(cross_entropy)
{
	const struct tp_xent_params *p = p_;
	size_t x = (size_t)p->n * p->classes * F, l = (size_t)p->n * F;

	IO(2, 2, x, l, F, x);
}

SHAPE_FN(cross_entropy_bwd)
{
	const struct tp_xent_params *p = p_;
	size_t x = (size_t)p->n * p->classes * F, l = (size_t)p->n * F;

	IO(3, 1, F, x, l, x);
}

SHAPE_FN(embedding)
{
	const struct tp_embedding_params *p = p_;
	size_t t = (size_t)p->vocab * p->dim * F, i = (size_t)p->n * F;
	size_t y = (size_t)p->n * p->dim * F;

	IO(2, 1, t, i, y);
}

SHAPE_FN(embedding_bwd)
{
	const struct tp_embedding_params *p = p_;
	size_t t = (size_t)p->vocab * p->dim * F, i = (size_t)p->n * F;
	size_t y = (size_t)p->n * p->dim * F;

	IO(2, 1, y, i, t);
}

SHAPE_FN(transpose12)
{
	const struct tp_transpose_params *p = p_;
	size_t x = (size_t)p->a * p->b * p->c * p->d * F;

	IO(1, 1, x, x);
}

SHAPE_FN(sgd_momentum)
{
	const struct tp_sgd_params *p = p_;
	size_t x = (size_t)p->count * F;

	IO(3, 1, x, x, x, x);
}

SHAPE_FN(sgd)
{
	const struct tp_sgd_params *p = p_;
	size_t x = (size_t)p->count * F;

	IO(2, 1, x, x, x);
}

SHAPE_FN(synth_image)
{
	const struct tp_synth_params *p = p_;

	if (!p->classes)
		return -EINVAL;
	IO(1, 1, (size_t)p->n * F, (size_t)p->n * p->per * F);
}

static int adam_valid(const struct tp_adam_params *p)
{
	return p->step && p->beta1 >= 0 && p->beta1 < 1 && p->beta2 >= 0 &&
	       p->beta2 < 1;
}

SHAPE_FN(adam_moments)
{
	const struct tp_adam_params *p = p_;
	size_t x = (size_t)p->count * F;

	if (!adam_valid(p))
		return -EINVAL;
	IO(3, 1, 2 * x, x, x, 2 * x);
}

SHAPE_FN(adam)
{
	const struct tp_adam_params *p = p_;
	size_t x = (size_t)p->count * F;

	if (!adam_valid(p))
		return -EINVAL;
	IO(2, 1, x, 2 * x, x);
}

/* --- FLOPs ------------------------------------------------------------ */

#define FLOPS_FN(name) static double flops_##name(const void *p_)

FLOPS_FN(linear)
{
	const struct tp_linear_params *p = p_;

	return 2.0 * p->n * p->in * p->out;
}

FLOPS_FN(linear_bwd)
{
	return 2.0 * flops_linear(p_);
}

FLOPS_FN(gemm)
{
	const struct tp_gemm_params *p = p_;

	return 2.0 * p->batch * p->m * p->n * p->k;
}

FLOPS_FN(gemm_bwd)
{
	return 2.0 * flops_gemm(p_);
}

FLOPS_FN(conv2d)
{
	const struct tp_conv2d_params *p = p_;
	double oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
	double ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);

	return 2.0 * p->n * p->k * oh * ow * p->c * p->r * p->s;
}

FLOPS_FN(conv2d_bwd)
{
	return 2.0 * flops_conv2d(p_);
}

FLOPS_FN(batchnorm)
{
	const struct tp_batchnorm_params *p = p_;

	return 8.0 * p->n * p->c * p->hw;
}

FLOPS_FN(eltwise)
{
	const struct tp_eltwise_params *p = p_;

	return 4.0 * p->count;
}

FLOPS_FN(pool)
{
	const struct tp_pool_params *p = p_;
	double oh = tp_out_dim(p->h, p->r, p->stride_h, p->pad_h);
	double ow = tp_out_dim(p->w, p->s, p->stride_w, p->pad_w);

	return (double)p->n * p->c * oh * ow * p->r * p->s;
}

FLOPS_FN(gap)
{
	const struct tp_gap_params *p = p_;

	return (double)p->n * p->c * p->hw;
}

FLOPS_FN(softmax)
{
	const struct tp_softmax_params *p = p_;

	return 8.0 * p->rows * p->cols;
}

FLOPS_FN(layernorm)
{
	const struct tp_layernorm_params *p = p_;

	return 8.0 * p->rows * p->cols;
}

FLOPS_FN(xent)
{
	const struct tp_xent_params *p = p_;

	return 8.0 * p->n * p->classes;
}

FLOPS_FN(embedding)
{
	const struct tp_embedding_params *p = p_;

	return (double)p->n * p->dim;
}

/* about ten integer operations per element, counted as two flops */
FLOPS_FN(synth)
{
	const struct tp_synth_params *p = p_;

	return 2.0 * p->n * p->per;
}

FLOPS_FN(transpose)
{
	const struct tp_transpose_params *p = p_;

	return (double)p->a * p->b * p->c * p->d;
}

FLOPS_FN(sgd)
{
	const struct tp_sgd_params *p = p_;

	return 5.0 * p->count;
}

FLOPS_FN(adam)
{
	const struct tp_adam_params *p = p_;

	return 14.0 * p->count;
}

/* --- rows ------------------------------------------------------------- */

/* The outermost extent of the tensors a split cuts: the batch, mostly. */
#define ROWS_FN(name) static uint32_t rows_##name(const void *p_)

ROWS_FN(conv)
{
	return ((const struct tp_conv2d_params *)p_)->n;
}

ROWS_FN(linear)
{
	return ((const struct tp_linear_params *)p_)->n;
}

/* A batched GEMM: each product of the batch on its own. */
ROWS_FN(gemm)
{
	return ((const struct tp_gemm_params *)p_)->batch;
}

ROWS_FN(batchnorm)
{
	return ((const struct tp_batchnorm_params *)p_)->n;
}

/* Element-wise ops have no batch in their params: any element will do. */
ROWS_FN(eltwise)
{
	return ((const struct tp_eltwise_params *)p_)->count;
}

ROWS_FN(pool)
{
	return ((const struct tp_pool_params *)p_)->n;
}

ROWS_FN(gap)
{
	return ((const struct tp_gap_params *)p_)->n;
}

ROWS_FN(softmax)
{
	return ((const struct tp_softmax_params *)p_)->rows;
}

ROWS_FN(layernorm)
{
	return ((const struct tp_layernorm_params *)p_)->rows;
}

ROWS_FN(transpose)
{
	return ((const struct tp_transpose_params *)p_)->a;
}

/* --- cost ------------------------------------------------------------- */

/*
 * The prior the policy uses before an op has been measured, and what the
 * sim backend charges: a roofline of a mid-range training GPU (20 TFLOP/s
 * of fp32 at the efficiency cuDNN reaches, 1 TB/s) plus a launch's
 * fixed cost; DELTA Table V puts a small batch-norm at 4-6 us.
 */
#define TP_KERNEL_FLOPS_PER_NS	20000.0
#define TP_KERNEL_BYTES_PER_NS	1000.0
#define TP_KERNEL_LAUNCH_NS	3000.0

uint64_t tp_kernel_cost(const struct tp_kernel *k, const void *params,
			size_t params_len, const size_t *in_bytes,
			unsigned n_in)
{
	size_t in[TP_KERNEL_MAX_IO], out[TP_KERNEL_MAX_IO];
	unsigned ni, no, i;
	double bytes = 0, t_flop, t_mem;

	if (!params || params_len != k->params_len ||
	    k->shape(params, in, &ni, out, &no))
		return (uint64_t)TP_KERNEL_LAUNCH_NS;
	for (i = 0; i < ni; i++)
		bytes += (double)(i < n_in && in_bytes ? in_bytes[i] : in[i]);
	for (i = 0; i < no; i++)
		bytes += (double)out[i];
	t_flop = k->flops(params) / TP_KERNEL_FLOPS_PER_NS;
	t_mem = bytes / TP_KERNEL_BYTES_PER_NS;
	return (uint64_t)(TP_KERNEL_LAUNCH_NS + (t_flop > t_mem ? t_flop : t_mem));
}

/* The largest of a shape's @ni input and @no output sizes. */
static size_t largest_of(const size_t *in, unsigned ni, const size_t *out,
			 unsigned no)
{
	size_t largest = 0;

	for (unsigned i = 0; i < ni + no; i++) {
		size_t b = i < ni ? in[i] : out[i - ni];

		largest = b > largest ? b : largest;
	}
	return largest;
}

/* The work callback of every registry op, through its descriptor. */
static int work_of(const struct tp_kernel *k, const void *params,
		   size_t params_len, const size_t *in_bytes, unsigned n_in,
		   struct tp_op_work *w)
{
	size_t in[TP_KERNEL_MAX_IO], out[TP_KERNEL_MAX_IO];
	unsigned ni, no, i;

	if (!params || params_len != k->params_len ||
	    k->shape(params, in, &ni, out, &no))
		return -EINVAL;
	w->bytes = 0;
	for (i = 0; i < ni; i++)
		w->bytes += (double)(i < n_in && in_bytes ? in_bytes[i] : in[i]);
	for (i = 0; i < no; i++)
		w->bytes += (double)out[i];
	w->flops = k->flops(params);
	w->largest = (double)largest_of(in, ni, out, no);
	return 0;
}

/* --- split ------------------------------------------------------------ */

static bool is_cut(uint64_t mask, unsigned i)
{
	return i < 64 && (mask >> i & 1);
}

/*
 * Whether a tensor of @bytes can take the place of one of @need: a cut
 * one must be exactly the shape's (its rows are found by dividing it), a
 * whole one may be larger.
 */
static bool split_fits(uint64_t mask, unsigned i, size_t bytes, size_t need)
{
	return is_cut(mask, i) ? bytes == need : bytes >= need;
}

/* The split callback of every splittable op, through its descriptor. */
static int split_sizes(const struct tp_kernel *k, const void *params,
		       size_t params_len, const size_t *in_bytes,
		       unsigned n_in, const size_t *out_bytes, unsigned n_out,
		       struct tp_op_split *s)
{
	size_t in[TP_KERNEL_MAX_IO], out[TP_KERNEL_MAX_IO];
	unsigned ni, no, i;
	uint32_t rows;

	if (!k->rows || !params || params_len != k->params_len ||
	    !in_bytes || !out_bytes || !s ||
	    k->shape(params, in, &ni, out, &no))
		return -EINVAL;
	/* a workspace is never cut, whatever its size */
	if (n_out != no || (n_in != ni && !(k->workspace && n_in == ni + 1)))
		return -EINVAL;
	rows = k->rows(params);
	if (rows < 2)
		return -EINVAL;
	for (i = 0; i < ni; i++)
		if (!split_fits(k->cut_in, i, in_bytes[i], in[i]))
			return -EINVAL;
	for (i = 0; i < no; i++)
		if (!split_fits(k->cut_out, i, out_bytes[i], out[i]))
			return -EINVAL;
	*s = (struct tp_op_split){
		.rows = rows, .in = k->cut_in, .out = k->cut_out,
	};
	if (k->sum_passes && rows > k->sum_granule) {
		s->sums = 1;
		s->passes = k->sum_passes;
		s->granule = k->sum_granule;
	}
	return 0;
}

/* --- dispatch --------------------------------------------------------- */

/*
 * The part @l runs, against the cut of its params (@s, zeroed for a
 * whole run). The parts of a run go in order: part 0 from row 0, the
 * last one to the last row.
 */
static int check_part(const struct tp_kernel *k, const struct tp_op_launch *l,
		      const size_t *in, unsigned ni, const size_t *out,
		      unsigned no, struct tp_op_split *s)
{
	*s = (struct tp_op_split){ 0 };
	if (!l->rows && l->parts <= 1)
		return l->part || l->row0 || l->sums ? -EINVAL : 0;
	if (!l->rows || l->part >= l->parts ||
	    split_sizes(k, l->params, l->params_len, in, ni, out, no, s))
		return -EINVAL;
	if (l->rows > s->rows || l->row0 > s->rows - l->rows)
		return -EINVAL;
	if ((l->part == 0) != (l->row0 == 0) ||
	    (l->part + 1 == l->parts) != (l->row0 + l->rows == s->rows))
		return -EINVAL;
	/* a split that sums: its passes, its parts from a granule's rows */
	if (l->sums && (!s->sums || l->passes != s->passes ||
			l->pass >= l->passes ||
			(s->granule > 1 && l->row0 % s->granule)))
		return -EINVAL;
	return 0;
}

/*
 * Whether a launch's tensor of @bytes fits: a cut one holds exactly its
 * part's rows; a whole one (or any in a whole run) may be larger than
 * the op needs, never smaller.
 */
static bool launch_fits(const struct tp_op_split *s, uint64_t mask,
			unsigned i, size_t rows, size_t bytes, size_t need)
{
	if (s->rows && is_cut(mask, i))
		return bytes == need / s->rows * rows;
	return bytes >= need;
}

static int check_launch(const struct tp_kernel *k,
			const struct tp_op_launch *l)
{
	size_t in[TP_KERNEL_MAX_IO], out[TP_KERNEL_MAX_IO];
	struct tp_op_split s;
	unsigned ni, no, i;
	int rc;

	if (!l->params || l->params_len != k->params_len)
		return -EINVAL;
	rc = k->shape(l->params, in, &ni, out, &no);
	if (rc)
		return rc;
	/* a workspace may follow the inputs; its size is the op's business */
	if (k->workspace && l->n_in == ni + 1 && l->in && l->in[ni])
		ni = l->n_in - 1;
	else if (l->n_in != ni)
		return -EINVAL;
	if (l->n_out != no || !l->in || !l->out)
		return -EINVAL;
	rc = check_part(k, l, in, ni, out, no, &s);
	if (rc)
		return rc;
	for (i = 0; i < ni; i++)
		if (!l->in[i] || (l->in_bytes &&
				  !launch_fits(&s, s.in, i, l->rows,
					       l->in_bytes[i], in[i])))
			return -EINVAL;
	for (i = 0; i < no; i++) {
		/* a pass before the last writes no cut output */
		if (l->sums && l->pass + 1 < l->passes && is_cut(s.out, i)) {
			if (l->out[i] || (l->out_bytes && l->out_bytes[i]))
				return -EINVAL;
			continue;
		}
		if (!l->out[i] || (l->out_bytes &&
				   !launch_fits(&s, s.out, i, l->rows,
						l->out_bytes[i], out[i])))
			return -EINVAL;
	}
	return 0;
}

int tp_kernels_launch_cpu(const struct tp_op_launch *l)
{
	const struct tp_kernel *k;
	int rc;

	if (!l || !l->type)
		return -EINVAL;
	k = tp_kernel_of(l->type);
	rc = check_launch(k, l);
	return rc ? rc : k->cpu(l);
}

int tp_kernels_launch_cuda(const struct tp_op_launch *l)
{
	const struct tp_kernel *k;
	int rc;

	if (!l || !l->type)
		return -EINVAL;
	k = tp_kernel_of(l->type);
	rc = check_launch(k, l);
	if (rc)
		return rc;
	rc = tp_kernels_cuda_available();
	if (rc)
		return rc;
	return k->cuda ? k->cuda(l) : -ENOTSUP;
}

/*
 * The device the data is on: a stream handle or TP_DEVICE_CUDA mean
 * device memory; anything else (host backend, a bare call from a test)
 * is CPU memory. The sim backend holds no data: it charges cost_ns on its
 * clock and there is nothing to compute.
 */
static int launch(const struct tp_op_launch *l)
{
	if (l && l->device == TP_DEVICE_NONE) {
		if (!l->type)
			return -EINVAL;
		return check_launch(tp_kernel_of(l->type), l);
	}
	if (l && (l->stream || l->device == TP_DEVICE_CUDA))
		return tp_kernels_launch_cuda(l);
	return tp_kernels_launch_cpu(l);
}

/* --- the table -------------------------------------------------------- */

#ifdef TP_HAVE_CUDA
#define CUDA_FN(name) tp_cuda_##name
#else
#define CUDA_FN(name) NULL
#endif

#define COST_FN(name) \
	static uint64_t cost_##name(const void *p, size_t len, \
				    const size_t *in, unsigned n_in); \
	static int work_##name(const void *p, size_t len, \
			       const size_t *in, unsigned n_in, \
			       struct tp_op_work *w);

/*
 * Whether an op's cuda launch enqueues kernels alone (TP_OP_KERNELS_ONLY),
 * so that it may be issued behind maps the stream waits for on the
 * device: the library's own kernels do, and cuDNN's convolution forward
 * did on an H200 (bench/enqueue-bench); a launch's own copies and memsets
 * (add_bwd's, embedding_bwd's, a batch invariance check's, a bias added
 * by cuDNN) wait on the host first, tp_op_before_copy(). Not yet shown:
 * cuBLAS's strided batched SGEMM and cuDNN's backward convolution, whose
 * ops wait on the host (vmm.map_gate = ops tries them on the device).
 */
#define NOT_SHOWN(op) \
	(K_##op == K_linear || K_##op == K_linear_bwd || K_##op == K_gemm || \
	 K_##op == K_gemm_bwd || K_##op == K_conv2d_bwd)
#define ENQUEUES(op)	(NOT_SHOWN(op) ? 0 : TP_OP_KERNELS_ONLY)

#define KERNEL_X(op, ptype, shp, flp, fl, ws, spl, rws, cin, cout) \
	KERNEL_XS(op, ptype, shp, flp, fl, ws, spl, rws, cin, cout, 0, 0)
#define KERNEL_XS(op, ptype, shp, flp, fl, ws, spl, rws, cin, cout, sp, sg) \
	[K_##op] = { \
		.type = { .name = #op, .launch = launch, \
			  .cost_ns = cost_##op, .flags = (fl) | ENQUEUES(op), \
			  .inplace_out = 0, .inplace_in = 0, \
			  .split = spl, .work = work_##op }, \
		.params_len = sizeof(struct ptype), \
		.shape = shape_##shp, .flops = flops_##flp, \
		.cpu = tp_cpu_##op, .cuda = CUDA_FN(op), \
		.workspace = ws, \
		.rows = rws, .cut_in = cin, .cut_out = cout, \
		.sum_passes = sp, .sum_granule = sg, \
	},
#define KERNEL(op, ptype, shp, flp) \
	KERNEL_X(op, ptype, shp, flp, 0, false, NULL, NULL, 0, 0)
/* output 0 takes input 0's pages */
#define KERNEL_INPLACE(op, ptype, shp, flp) \
	KERNEL_X(op, ptype, shp, flp, TP_OP_INPLACE, false, NULL, NULL, 0, 0)
/*
 * Runs in parts along the outermost dimension of @rws rows: the inputs
 * and outputs whose bits are set in @cin and @cout are cut, the others
 * whole (see the CPU ops for how each stays exact).
 */
#define KERNEL_CUT(op, ptype, shp, flp, rws, cin, cout) \
	KERNEL_X(op, ptype, shp, flp, TP_OP_SPLITTABLE, false, split_##op, \
		 rows_##rws, cin, cout)
/* the same, taking a workspace input (never cut) */
#define KERNEL_CUT_WS(op, ptype, shp, flp, rws, cin, cout) \
	KERNEL_X(op, ptype, shp, flp, TP_OP_SPLITTABLE, true, split_##op, \
		 rows_##rws, cin, cout)
/*
 * The same, whose parts may instead read only their rows of the cut
 * inputs and add to the whole outputs in @sp passes over the rows, from
 * multiples of @sg rows (struct tp_op_split, sums).
 */
#define KERNEL_SUMS(op, ptype, shp, flp, rws, cin, cout, sp, sg) \
	KERNEL_XS(op, ptype, shp, flp, TP_OP_SPLITTABLE, false, split_##op, \
		  rows_##rws, cin, cout, sp, sg)
#define KERNEL_SUMS_WS(op, ptype, shp, flp, rws, cin, cout, sp, sg) \
	KERNEL_XS(op, ptype, shp, flp, TP_OP_SPLITTABLE, true, split_##op, \
		  rows_##rws, cin, cout, sp, sg)
/*
 * Ops that cut every output: a part reads only its rows of the cut
 * inputs (TP_OP_SPLIT_LOCAL).
 */
#define KERNEL_LOCAL(op, ptype, shp, flp, rws, cin, cout) \
	KERNEL_X(op, ptype, shp, flp, TP_OP_SPLITTABLE | TP_OP_SPLIT_LOCAL, \
		 false, split_##op, rows_##rws, cin, cout)
#define KERNEL_LOCAL_WS(op, ptype, shp, flp, rws, cin, cout) \
	KERNEL_X(op, ptype, shp, flp, TP_OP_SPLITTABLE | TP_OP_SPLIT_LOCAL, \
		 true, split_##op, rows_##rws, cin, cout)

/* The ops whose table entries are KERNEL_CUT: one split callback each. */
#define TP_SPLIT_OPS(X) \
	X(linear) X(linear_bwd) X(gemm) X(gemm_bwd) X(conv2d) X(conv2d_bwd) X(batchnorm) X(batchnorm_bwd) \
	X(relu) X(relu_bwd) X(gelu) X(gelu_bwd) \
	X(maxpool) X(maxpool_bwd) X(avgpool) X(avgpool_bwd) \
	X(global_avgpool) X(global_avgpool_bwd) \
	X(softmax) X(softmax_bwd) X(layernorm) X(layernorm_bwd) \
	X(transpose12) X(transpose12_bwd) \
	X(add) X(add_bwd) X(scale) X(scale_bwd)

#define SPLIT_FN(name) \
	static int split_##name(const void *p, size_t len, \
				const size_t *in, unsigned n_in, \
				const size_t *out, unsigned n_out, \
				struct tp_op_split *s);

#define K_ENUM(name) K_##name,
enum { TP_CPU_OPS(K_ENUM) K_COUNT };
TP_CPU_OPS(COST_FN)
TP_SPLIT_OPS(SPLIT_FN)

/* Bit k of a mask: input or output k is cut (B(0) | B(1): the first two). */
#define B(k)	(1ull << (k))

static const struct tp_kernel kernels[K_COUNT] = {
	/* x | y; dy x | dx (dW, db: part 0, over every row) */
	KERNEL_LOCAL(linear, tp_linear_params, linear, linear, linear, B(0),
		   B(0))
	KERNEL_CUT(linear_bwd, tp_linear_params, linear_bwd, linear_bwd,
		   linear, B(0) | B(1), B(0))
	/* A B | C; dC A B | dA dB: every operand by its products */
	KERNEL_LOCAL(gemm, tp_gemm_params, gemm, gemm, gemm, B(0) | B(1), B(0))
	KERNEL_LOCAL(gemm_bwd, tp_gemm_params, gemm_bwd, gemm_bwd, gemm,
		   B(0) | B(1) | B(2), B(0) | B(1))
	/*
	 * x | y; dy x | dx (dW, db: part 0's, over the batch, or, in a run
	 * of more than TP_CONV_DW_ROWS images, summed by parts from
	 * multiples of it)
	 */
	KERNEL_LOCAL_WS(conv2d, tp_conv2d_params, conv2d, conv2d, conv,
		      B(0), B(0))
	KERNEL_SUMS_WS(conv2d_bwd, tp_conv2d_params, conv2d_bwd, conv2d_bwd,
		       conv, B(0) | B(1), B(0), 1, TP_CONV_DW_ROWS)
	/*
	 * x | y (mean, invstd: part 0's, or summed by the parts in two
	 * passes, y in a third, which only reads them: rows of y come
	 * again alone, TP_OP_SPLIT_LAST_READS); dy x | dx (dgamma, dbeta:
	 * part 0's, or summed in one pass, dx in a second)
	 */
	KERNEL_XS(batchnorm, tp_batchnorm_params, batchnorm, batchnorm,
		  TP_OP_SPLITTABLE | TP_OP_SPLIT_LAST_READS, false,
		  split_batchnorm, rows_batchnorm, B(0), B(0), 3, 0)
	KERNEL_SUMS(batchnorm_bwd, tp_batchnorm_params, batchnorm_bwd,
		    batchnorm, batchnorm, B(0) | B(1), B(0), 2, 0)
	KERNEL_LOCAL(relu, tp_eltwise_params, eltwise, eltwise, eltwise,
		   B(0), B(0))
	KERNEL_LOCAL(relu_bwd, tp_eltwise_params, eltwise_bwd, eltwise, eltwise,
		   B(0) | B(1), B(0))
	KERNEL_LOCAL(gelu, tp_eltwise_params, eltwise, eltwise, eltwise,
		   B(0), B(0))
	KERNEL_LOCAL(gelu_bwd, tp_eltwise_params, eltwise_bwd, eltwise, eltwise,
		   B(0) | B(1), B(0))
	KERNEL_LOCAL(maxpool, tp_pool_params, pool, pool, pool, B(0), B(0))
	KERNEL_LOCAL(maxpool_bwd, tp_pool_params, maxpool_bwd, pool, pool,
		   B(0) | B(1) | B(2), B(0))
	KERNEL_LOCAL(avgpool, tp_pool_params, pool, pool, pool, B(0), B(0))
	KERNEL_LOCAL(avgpool_bwd, tp_pool_params, avgpool_bwd, pool, pool,
		   B(0), B(0))
	KERNEL_LOCAL(global_avgpool, tp_gap_params, global_avgpool, gap, gap,
		   B(0), B(0))
	KERNEL_LOCAL(global_avgpool_bwd, tp_gap_params, global_avgpool_bwd, gap,
		   gap, B(0), B(0))
	KERNEL_LOCAL(softmax, tp_softmax_params, softmax, softmax, softmax,
		   B(0), B(0))
	KERNEL_LOCAL(softmax_bwd, tp_softmax_params, softmax_bwd, softmax,
		   softmax, B(0) | B(1), B(0))
	/* x | y mean invstd; dy x mean invstd | dx (dgamma, dbeta: part 0) */
	KERNEL_LOCAL(layernorm, tp_layernorm_params, layernorm, layernorm,
		   layernorm, B(0), B(0) | B(1) | B(2))
	KERNEL_CUT(layernorm_bwd, tp_layernorm_params, layernorm_bwd,
		   layernorm, layernorm, B(0) | B(1) | B(3) | B(4), B(0))
	KERNEL(cross_entropy, tp_xent_params, cross_entropy, xent)
	KERNEL(cross_entropy_bwd, tp_xent_params, cross_entropy_bwd, xent)
	KERNEL(embedding, tp_embedding_params, embedding, embedding)
	KERNEL(embedding_bwd, tp_embedding_params, embedding_bwd, embedding)
	KERNEL_LOCAL(transpose12, tp_transpose_params, transpose12, transpose,
		   transpose, B(0), B(0))
	KERNEL_LOCAL(transpose12_bwd, tp_transpose_params, transpose12,
		   transpose, transpose, B(0), B(0))
	KERNEL_LOCAL(add, tp_eltwise_params, add, eltwise, eltwise,
		   B(0) | B(1), B(0))
	KERNEL_LOCAL(add_bwd, tp_eltwise_params, add_bwd, eltwise, eltwise,
		   B(0), B(0) | B(1))
	KERNEL_LOCAL(scale, tp_eltwise_params, eltwise, eltwise, eltwise,
		   B(0), B(0))
	KERNEL_LOCAL(scale_bwd, tp_eltwise_params, eltwise, eltwise, eltwise,
		   B(0), B(0))
	KERNEL(synth_image, tp_synth_params, synth_image, synth)
	/* The optimizers update their state, then the parameter, in place. */
	KERNEL_INPLACE(sgd_momentum, tp_sgd_params, sgd_momentum, sgd)
	KERNEL_INPLACE(sgd, tp_sgd_params, sgd, sgd)
	KERNEL_INPLACE(adam_moments, tp_adam_params, adam_moments, adam)
	KERNEL_INPLACE(adam, tp_adam_params, adam, adam)
};

#define COST_BODY(name) \
	static uint64_t cost_##name(const void *p, size_t len, \
				    const size_t *in, unsigned n_in) \
	{ \
		return tp_kernel_cost(&kernels[K_##name], p, len, in, n_in); \
	} \
	static int work_##name(const void *p, size_t len, \
			       const size_t *in, unsigned n_in, \
			       struct tp_op_work *w) \
	{ \
		return work_of(&kernels[K_##name], p, len, in, n_in, w); \
	}
TP_CPU_OPS(COST_BODY)

#define SPLIT_BODY(name) \
	static int split_##name(const void *p, size_t len, \
				const size_t *in, unsigned n_in, \
				const size_t *out, unsigned n_out, \
				struct tp_op_split *s) \
	{ \
		return split_sizes(&kernels[K_##name], p, len, in, n_in, \
				   out, n_out, s); \
	}
TP_SPLIT_OPS(SPLIT_BODY)

const struct tp_op_type *tp_kernels_find(const char *name)
{
	unsigned i;

	for (i = 0; name && i < K_COUNT; i++)
		if (!strcmp(kernels[i].type.name, name))
			return &kernels[i].type;
	errno = ENOENT;
	return NULL;
}

unsigned tp_kernels_count(void)
{
	return K_COUNT;
}

const struct tp_op_type *tp_kernels_at(unsigned i)
{
	return i < K_COUNT ? &kernels[i].type : NULL;
}

int tp_kernels_shape(const struct tp_op_type *type, const void *params,
		     size_t params_len, size_t *in_bytes, unsigned *n_in,
		     size_t *out_bytes, unsigned *n_out)
{
	const struct tp_kernel *k;

	if (!type || type->launch != launch || !params)
		return -EINVAL;
	k = tp_kernel_of(type);
	if (params_len != k->params_len)
		return -EINVAL;
	return k->shape(params, in_bytes, n_in, out_bytes, n_out);
}

int tp_kernels_workspace_bytes(struct tp_vmm *vmm,
			       const struct tp_op_type *type,
			       const void *params, size_t params_len,
			       size_t *bytes)
{
	size_t in[TP_KERNEL_MAX_IO], out[TP_KERNEL_MAX_IO];
	unsigned ni, no;
	int rc;

	*bytes = 0;
	rc = tp_kernels_shape(type, params, params_len, in, &ni, out, &no);
	if (rc || !tp_kernel_of(type)->workspace || !vmm)
		return rc;
	if (tp_vmm_device(vmm) != TP_DEVICE_CUDA) {
		/* The sim's model of a GPU prices the scratch its
		 * algorithms take; nothing else has any. */
		if (tp_vmm_op_workspace(vmm, type->name,
					largest_of(in, ni, out, no), bytes))
			*bytes = 0;
		return 0;
	}
#ifdef TP_HAVE_CUDA
	if (tp_kernels_cuda_available())
		return 0;
	return tp_cuda_conv_workspace(params, tp_vmm_workspace_max(vmm),
				      tp_vmm_op_math(vmm), bytes);
#else
	return 0;
#endif
}

#ifndef TP_HAVE_CUDA
int tp_kernels_cuda_available(void)
{
	return -ENODEV;
}
#endif

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/ctx.h"
#include "pager/pager.h"
#include "tests/lineage-testops.h"
#include "tests/tap.h"

unsigned long tops_launches, tops_replays, tops_replay_mismatches;

static void count(const struct tp_op_launch *l)
{
	tops_launches++;
	if (l->recompute)
		tops_replays++;
	/* the pager must know a replay from the program's own run */
	if (l->ctx && l->ctx->pager &&
	    !!l->recompute != tp_pager_replaying(l->ctx->pager))
		tops_replay_mismatches++;
}

float tops_ref_scale(float a, float s, float c)
{
	return a * s + c;
}

float tops_ref_softsign(float a)
{
	return a / (1.0f + fabsf(a));
}

float tops_ref_relu(float a)
{
	return (a > 0 ? a : 0) * 0.5f + 0.25f;
}

static int add_launch(const struct tp_op_launch *l)
{
	const float *a, *b;
	size_t n, nb, i;
	float *o;

	if (l->n_in != 2 || l->n_out != 1 || l->out_bytes[0] != l->in_bytes[0])
		return -EINVAL;
	a = l->in[0];
	b = l->in[1];
	o = l->out[0];
	n = l->in_bytes[0] / sizeof(float);
	nb = l->in_bytes[1] / sizeof(float);
	if (!nb)
		return -EINVAL;
	count(l);
	for (i = 0; i < n; i++)
		o[i] = a[i] + b[i % nb];
	return 0;
}

/*
 * One input, one output of its size, out[i] = f(in[i]) (@p: the op's
 * parameters, checked to be @p_len bytes).
 */
static int map1(const struct tp_op_launch *l, size_t p_len,
		float (*f)(float a, const void *p))
{
	const float *a;
	size_t n, i;
	float *o;

	if (l->n_in != 1 || l->n_out != 1 || l->params_len != p_len ||
	    l->out_bytes[0] != l->in_bytes[0])
		return -EINVAL;
	/* Reads in[0], writes out[0]: the same buffer on an in-place op's
	 * first run, not necessarily on a replay. */
	a = l->in[0];
	o = l->out[0];
	n = l->in_bytes[0] / sizeof(float);
	count(l);
	for (i = 0; i < n; i++)
		o[i] = f(a[i], l->params);
	return 0;
}

static float scale_f(float a, const void *p)
{
	const struct tops_scale_params *sp = p;

	return tops_ref_scale(a, sp->s, sp->c);
}

static float softsign_f(float a, const void *p)
{
	return tops_ref_softsign(a);
}

static float relu_f(float a, const void *p)
{
	return tops_ref_relu(a);
}

static int scale_launch(const struct tp_op_launch *l)
{
	return map1(l, sizeof(struct tops_scale_params), scale_f);
}

static int softsign_launch(const struct tp_op_launch *l)
{
	return map1(l, 0, softsign_f);
}

static int relu_launch(const struct tp_op_launch *l)
{
	return map1(l, 0, relu_f);
}

static int reduce_launch(const struct tp_op_launch *l)
{
	const float *a;
	size_t n, m, i;
	float *o;

	if (l->n_in != 1 || l->n_out != 1 || l->out_bytes[0] > l->in_bytes[0] ||
	    l->out_bytes[0] % sizeof(float))
		return -EINVAL;
	a = l->in[0];
	o = l->out[0];
	n = l->in_bytes[0] / sizeof(float);
	m = l->out_bytes[0] / sizeof(float);
	count(l);
	for (i = 0; i < m; i++)
		o[i] = 0;
	for (i = 0; i < n; i++)
		o[i % m] += a[i] / 64.0f;
	return 0;
}

static int split2_launch(const struct tp_op_launch *l)
{
	const float *a;
	float *o0, *o1;
	size_t n, i;

	if (l->n_in != 1 || l->n_out != 2 || l->out_bytes[0] != l->in_bytes[0] ||
	    l->out_bytes[1] != l->in_bytes[0])
		return -EINVAL;
	a = l->in[0];
	o0 = l->out[0];
	o1 = l->out[1];
	n = l->in_bytes[0] / sizeof(float);
	count(l);
	for (i = 0; i < n; i++) {
		o0[i] = a[i] + 1.0f;
		o1[i] = tops_ref_softsign(a[i]) - a[i] / 2.0f;
	}
	return 0;
}

static int fail_launch(const struct tp_op_launch *l)
{
	int err = l->params_len == sizeof(int) ? *(const int *)l->params : 0;

	if (l->n_in != 1 || l->n_out != 1 || l->out_bytes[0] != l->in_bytes[0])
		return -EINVAL;
	if (err)
		return -err;
	count(l);
	memmove(l->out[0], l->in[0], l->in_bytes[0]);
	return 0;
}

static int nondet_launch(const struct tp_op_launch *l)
{
	static unsigned runs;
	const float *a;
	size_t n, i;
	float *o;

	if (l->n_in != 1 || l->n_out != 1 || l->out_bytes[0] != l->in_bytes[0])
		return -EINVAL;
	a = l->in[0];
	o = l->out[0];
	n = l->in_bytes[0] / sizeof(float);
	count(l);
	runs++;
	for (i = 0; i < n; i++)
		o[i] = a[i] + (float)runs;
	return 0;
}

const struct tp_op_type tops_add = { .name = "add", .launch = add_launch };
const struct tp_op_type tops_scale = { .name = "scale", .launch = scale_launch };
const struct tp_op_type tops_softsign = {
	.name = "softsign", .launch = softsign_launch,
};
const struct tp_op_type tops_reduce = { .name = "reduce", .launch = reduce_launch };
const struct tp_op_type tops_relu_ = {
	.name = "relu_", .launch = relu_launch, .flags = TP_OP_INPLACE,
	.inplace_out = 0, .inplace_in = 0,
};
const struct tp_op_type tops_split2 = { .name = "split2", .launch = split2_launch };
const struct tp_op_type tops_fail = { .name = "fail", .launch = fail_launch };
const struct tp_op_type tops_nondet = {
	.name = "nondet", .launch = nondet_launch,
	.flags = TP_OP_NONDETERMINISTIC,
};
const struct tp_op_type tops_fail_ = {
	.name = "fail_", .launch = fail_launch, .flags = TP_OP_INPLACE,
	.inplace_out = 0, .inplace_in = 0,
};

static int addrows_launch(const struct tp_op_launch *l)
{
	const float *a = l->in[0], *b = l->in[1];
	float *o = l->out[0];

	if (l->n_in != 2 || l->n_out != 1 ||
	    l->in_bytes[0] != l->out_bytes[0] ||
	    l->in_bytes[1] != l->out_bytes[0])
		return -EINVAL;
	count(l);
	for (size_t i = 0; i < l->out_bytes[0] / sizeof(float); i++)
		o[i] = a[i] + b[i];
	return 0;
}

static int addrows_split(const void *params, size_t params_len,
			 const size_t *in_bytes, unsigned n_in,
			 const size_t *out_bytes, unsigned n_out,
			 struct tp_op_split *s)
{
	(void)params;
	(void)params_len;
	if (n_in != 2 || n_out != 1 || in_bytes[0] != out_bytes[0] ||
	    in_bytes[1] != out_bytes[0])
		return -EINVAL;
	*s = (struct tp_op_split){
		.rows = out_bytes[0] / sizeof(float), .in = 3, .out = 1,
	};
	return 0;
}

/* m += x's @n rows (from 0 where @first); / rows where @last. */
static void center_sums(const struct tops_center_params *p, const float *x,
			size_t n, bool first, bool last, float *m)
{
	for (uint32_t j = 0; first && j < p->cols; j++)
		m[j] = 0;
	for (size_t r = 0; r < n; r++)
		for (uint32_t j = 0; j < p->cols; j++)
			m[j] += x[r * p->cols + j];
	for (uint32_t j = 0; last && j < p->cols; j++)
		m[j] /= (float)p->rows;
}

static int center_launch(const struct tp_op_launch *l)
{
	const struct tops_center_params *p = l->params;
	size_t n = l->rows ? l->rows : p->rows, row = p->cols * sizeof(float);
	bool last = !l->sums || l->pass + 1 == l->passes;
	const float *x = l->in[0];
	float *y = l->out[0], *m = l->out[1];

	if (l->params_len != sizeof(*p) || l->n_in != 1 || l->n_out != 2 ||
	    l->in_bytes[0] != n * row || l->out_bytes[1] != row ||
	    (l->sums && l->passes != 2) ||
	    (last ? !y || l->out_bytes[0] != n * row : y || l->out_bytes[0]))
		return -EINVAL;
	count(l);
	if (l->sums && !l->pass) {
		center_sums(p, x, n, !l->row0, l->row0 + n == p->rows, m);
		return 0;
	}
	/* a whole run, or part 0 of parts that read every row */
	if (!l->sums && !l->part)
		center_sums(p, x, p->rows, true, true, m);
	for (size_t i = 0; i < n * p->cols; i++)
		y[i] = x[i] - m[i % p->cols];
	return 0;
}

static int center_split(const void *params, size_t params_len,
			const size_t *in_bytes, unsigned n_in,
			const size_t *out_bytes, unsigned n_out,
			struct tp_op_split *s)
{
	const struct tops_center_params *p = params;

	(void)out_bytes;
	if (params_len != sizeof(*p) || n_in != 1 || n_out != 2 ||
	    in_bytes[0] != (size_t)p->rows * p->cols * sizeof(float))
		return -EINVAL;
	*s = (struct tp_op_split){
		.rows = p->rows, .in = 1, .out = 1, .sums = 1, .passes = 2,
	};
	return 0;
}

const struct tp_op_type tops_center = {
	.name = "center", .launch = center_launch,
	.flags = TP_OP_SPLITTABLE | TP_OP_SPLIT_LAST_READS,
	.split = center_split,
};

const struct tp_op_type tops_addrows = {
	.name = "addrows", .launch = addrows_launch,
	.flags = TP_OP_SPLITTABLE | TP_OP_SPLIT_LOCAL, .split = addrows_split,
};

uint64_t tops_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

struct tp_tensor *tops_input(struct tp_ctx *ctx, size_t n, uint64_t seed)
{
	uint64_t s = seed | 1;
	struct tp_tensor *t;
	float *buf;
	size_t i;
	int ret;

	buf = malloc(n * sizeof(*buf));
	if (!buf)
		return NULL;
	for (i = 0; i < n; i++)
		buf[i] = (float)((int64_t)(tops_rand(&s) % 2001) - 1000) / 250.0f;
	t = tp_tensor_create(ctx, n * sizeof(float), TP_KIND_INPUT);
	if (!t)
		goto out;
	ret = tp_tensor_write(ctx, t, 0, buf, n * sizeof(float));
	if (ret) {
		tp_tensor_free(ctx, t);
		t = NULL;
		errno = -ret;
	}
out:
	free(buf);
	return t;
}

struct tp_tensor *tops_run1(struct tp_ctx *ctx, const struct tp_op_type *type,
			    const void *p, size_t plen, struct tp_tensor *in,
			    size_t bytes)
{
	struct tp_tensor *out = NULL;
	int ret = tp_op_run(ctx, type, p, plen, &in, 1, &out, &bytes, 1);

	if (ret)
		diag("tp_op_run(%s): %s", type->name, tp_strerror(ret));
	return ret ? NULL : out;
}

static int nop(const struct tp_op_launch *l)
{
	(void)l;
	return 0;
}

const struct tp_op_type tops_nop = {
	.name = "nop",
	.launch = nop,
};

struct tp_tensor *tops_written(struct tp_ctx *ctx, size_t bytes)
{
	struct tp_tensor *t = tp_tensor_create(ctx, bytes, 0);

	if (!t || !tp_tensor_acquire(ctx, t, TP_WRITE))
		bail_out("a written tensor: %s", tp_last_error(ctx));
	tp_tensor_release(ctx, t);
	return t;
}

int tops_request(struct tp_ctx *ctx, size_t bytes, struct tp_tensor **out)
{
	struct tp_tensor *q = tp_tensor_create(ctx, bytes, 0);
	void *a;

	*out = NULL;
	if (!q)
		return -errno;
	a = tp_tensor_acquire(ctx, q, TP_WRITE);
	if (!a) {
		int err = -errno;

		tp_tensor_free(ctx, q);
		return err;
	}
	memset(a, 0x5a, bytes);
	tp_tensor_release(ctx, q);
	*out = q;
	return 0;
}

struct tp_tensor *tops_nop_run(struct tp_ctx *ctx, struct tp_tensor *a,
			       struct tp_tensor *b, size_t bytes)
{
	struct tp_tensor *in[2] = { a, b }, *out = NULL;
	int ret = tp_op_run(ctx, &tops_nop, NULL, 0, in, b ? 2 : 1, &out,
			    &bytes, 1);

	if (ret)
		bail_out("tp_op_run: %s (%s)", tp_strerror(ret),
			 tp_last_error(ctx));
	return out;
}

/* x[i] from a hash of (seed, i). */
static int gen_launch(const struct tp_op_launch *l)
{
	const struct tops_gen_params *p = l->params;
	float *x = l->out[0];

	if (l->n_out != 1 || l->out_bytes[0] != p->floats * sizeof(float))
		return -EINVAL;
	for (uint32_t i = 0; i < p->floats; i++) {
		uint32_t h = (i + 1) * 2654435761u ^ p->seed;

		h ^= h >> 15;
		h *= 2246822519u;
		h ^= h >> 13;
		x[i] = (float)(h % 20001) / 1000.0f - 10.0f;
	}
	return 0;
}

const struct tp_op_type tops_gen = { .name = "gen", .launch = gen_launch };

void *tops_contents(struct tp_ctx *ctx, struct tp_tensor *t)
{
	size_t len = tp_tensor_size(t);
	void *buf = malloc(len);

	if (!buf || tp_tensor_read(ctx, t, 0, buf, len))
		bail_out("reading tensor %p back", (void *)t);
	return buf;
}

bool tops_same(struct tp_ctx *ctx, struct tp_tensor *t, const void *ref)
{
	void *got = tops_contents(ctx, t);
	bool eq = !memcmp(got, ref, tp_tensor_size(t));

	free(got);
	return eq;
}

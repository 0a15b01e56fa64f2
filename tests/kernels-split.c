// SPDX-License-Identifier: MIT
/*
 * The registry's splittable ops (TP_OP_SPLITTABLE) run in parts give the
 * bits of a whole run.
 *
 * For each op, random inputs go through a whole run, then through runs in
 * parts (two halves, three uneven parts, one row each) called as
 * tp_op_run calls them: the cut tensors' pointers at the part's first
 * row, their sizes the part's rows. Each part sees, of a cut input, only
 * its rows to the end (those before are NaN; those after too for an op
 * whose parts read their rows alone), and a fresh cut output
 * whose bytes outside its rows must come back untouched; after part 0 the
 * whole outputs are read-only (a write there faults and fails the
 * point). Every output must equal the whole run's byte for byte.
 *
 * Then the split callbacks (rows, masks, refusing a cut tensor larger
 * than the shape and a batch of one) and the launch checks of parts that
 * do not fit the op's cut. On a device the same runs are repeated with
 * the CUDA ops; without one they are skipped. The seed is printed;
 * TPAGER_TEST_SEED=N reproduces a run.
 *
 * One file, past the usual length: every splittable op's case runs
 * through the same harness (parts, masks, write protection, the device),
 * which is most of the file.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef TP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "kernels/ops.h"
#include "tests/tap.h"
#include "tests/test-rand.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_IO 8
#define WS_BYTES 64
#define SENTINEL 0x5a
#define B(k) (1ull << (k))

struct split_case {
	const char *what, *op;
	const void *params;
	size_t params_len;
	size_t rows;		/* what the split callback must say */
	uint64_t in, out;
	bool ws;		/* give a workspace input (never cut) */
	size_t ws_max;		/* the launch's workspace_max (0: any) */
	enum tp_op_math math;	/* the launch's math (the CPU's: FP32) */
	bool ties;		/* inputs clamped at 0: max pooling ties */
	/* a split that sums: its passes over the rows (0: none), granule */
	unsigned passes;
	size_t granule;
};

/* --- random inputs --------------------------------------------------- */

static uint64_t rng_state;

static float rng_normal(void)
{
	return tt_normal(&rng_state);
}

/* --- faults on read-only whole outputs ------------------------------- */

static sigjmp_buf fault_jmp;
static volatile sig_atomic_t fault_armed;

static void on_fault(int sig)
{
	if (fault_armed)
		siglongjmp(fault_jmp, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The launch, a write to a protected page turned into -EFAULT. */
static int guarded_launch(const struct tp_op_launch *l)
{
	int rc;

	if (sigsetjmp(fault_jmp, 1)) {
		fault_armed = 0;
		return -EFAULT;
	}
	fault_armed = 1;
	rc = l->type->launch(l);
	fault_armed = 0;
	return rc;
}

/* --- one op's tensors ------------------------------------------------ */

/* A tensor as a launch sees it: @bytes at @base + @off. */
struct slot {
	char *base;
	size_t size, off, bytes;
	bool paged;		/* @base from mmap (whole outputs) */
};

struct op_io {
	const struct tp_op_type *t;
	unsigned n_in, n_out;
	size_t in_bytes[MAX_IO], out_bytes[MAX_IO];
	void *in[MAX_IO];
	void *want[MAX_IO];	/* the whole run's outputs */
};

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

static char *page_alloc(size_t n)
{
	void *p = mmap(NULL, page_round(n), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void slot_free(struct slot *s)
{
	if (s->paged && s->base)
		munmap(s->base, page_round(s->size));
	else
		free(s->base);
	s->base = NULL;
}

static void io_free(struct op_io *io)
{
	unsigned k;

	for (k = 0; k < MAX_IO; k++) {
		free(io->in[k]);
		free(io->want[k]);
	}
}

static int io_setup(const struct split_case *c, struct op_io *io)
{
	unsigned ni, no, k;
	size_t e;

	memset(io, 0, sizeof(*io));
	io->t = tp_kernels_find(c->op);
	if (!io->t || tp_kernels_shape(io->t, c->params, c->params_len,
				       io->in_bytes, &ni, io->out_bytes, &no))
		return -EINVAL;
	if (c->ws)
		io->in_bytes[ni++] = WS_BYTES;
	io->n_in = ni;
	io->n_out = no;
	for (k = 0; k < ni; k++) {
		float *f = calloc(1, io->in_bytes[k]);

		if (!f)
			return -ENOMEM;
		io->in[k] = f;
		/* the workspace stays zero: its contents never matter */
		for (e = 0; !(c->ws && k + 1 == ni) &&
			    e < io->in_bytes[k] / 4; e++) {
			f[e] = rng_normal();
			if (c->ties && f[e] < 0)
				f[e] = 0;
		}
	}
	for (k = 0; k < no; k++)
		if (!(io->want[k] = malloc(io->out_bytes[k])))
			return -ENOMEM;
	return 0;
}

/* --- launches on the host or the device ------------------------------ */

struct backend {
	bool device;
	void *stream;
	bool *refused;		/* set where the device refuses the parts */
};

static int host_launch(struct tp_op_launch *l, const struct op_io *io,
		       struct slot *in, struct slot *out)
{
	void *pin[MAX_IO], *pout[MAX_IO];
	unsigned k;

	for (k = 0; k < io->n_in; k++)
		pin[k] = in[k].base + in[k].off;
	/* a pass before the last has no cut output */
	for (k = 0; k < io->n_out; k++)
		pout[k] = out[k].base ? out[k].base + out[k].off : NULL;
	l->in = pin;
	l->out = pout;
	return guarded_launch(l);
}

#ifdef TP_HAVE_CUDA
/*
 * The same launch on device copies of the slots (whole, so the offsets
 * hold); the outputs come back into the host slots.
 */
static int device_launch(struct tp_op_launch *l, const struct op_io *io,
			 struct slot *in, struct slot *out)
{
	void *din[MAX_IO] = { 0 }, *dout[MAX_IO] = { 0 };
	void *pin[MAX_IO], *pout[MAX_IO];
	unsigned k;
	int rc = 0;

	for (k = 0; k < io->n_in && !rc; k++) {
		rc = cudaMalloc(&din[k], in[k].size) ||
		     cudaMemcpy(din[k], in[k].base, in[k].size,
				cudaMemcpyHostToDevice) ? -EIO : 0;
		pin[k] = (char *)din[k] + in[k].off;
	}
	for (k = 0; k < io->n_out && !rc; k++) {
		pout[k] = NULL;
		if (!out[k].base)
			continue;
		rc = cudaMalloc(&dout[k], out[k].size) ||
		     cudaMemcpy(dout[k], out[k].base, out[k].size,
				cudaMemcpyHostToDevice) ? -EIO : 0;
		pout[k] = (char *)dout[k] + out[k].off;
	}
	l->in = pin;
	l->out = pout;
	/* what a failed launch wrote comes back too */
	if (!rc) {
		rc = l->type->launch(l);
		if (cudaStreamSynchronize((cudaStream_t)l->stream) && !rc)
			rc = -EIO;
		for (k = 0; k < io->n_out; k++)
			if (out[k].base &&
			    cudaMemcpy(out[k].base, dout[k], out[k].size,
				       cudaMemcpyDeviceToHost) && !rc)
				rc = -EIO;
	}
	for (k = 0; k < MAX_IO; k++) {
		cudaFree(din[k]);
		cudaFree(dout[k]);
	}
	return rc;
}
#endif

/*
 * Where a launch is: part @part of @parts in pass @pass, its rows; @sums:
 * of parts that sum (struct tp_op_split).
 */
struct part_at {
	unsigned part, parts, pass;
	size_t row0, rows;
	bool sums;
};

static int launch_slots(const struct split_case *c, const struct op_io *io,
			struct slot *in, struct slot *out,
			const struct part_at *at, const struct backend *be)
{
	size_t in_bytes[MAX_IO], out_bytes[MAX_IO];
	bool sums = at->sums;
	struct tp_op_launch l = {
		.type = io->t, .params = c->params,
		.params_len = c->params_len, .in_bytes = in_bytes,
		.n_in = io->n_in, .out_bytes = out_bytes, .n_out = io->n_out,
		.stream = be->stream, .part = at->part, .parts = at->parts,
		.row0 = at->row0, .rows = at->rows,
		.workspace_max = c->ws_max, .math = c->math,
		.sums = sums, .pass = at->pass, .passes = sums ? c->passes : 0,
	};
	unsigned k;

	for (k = 0; k < io->n_in; k++)
		in_bytes[k] = in[k].bytes;
	for (k = 0; k < io->n_out; k++)
		out_bytes[k] = out[k].bytes;
#ifdef TP_HAVE_CUDA
	if (be->device)
		return device_launch(&l, io, in, out);
#endif
	return host_launch(&l, io, in, out);
}

/* The whole run, into io->want. */
static int run_whole(const struct split_case *c, struct op_io *io,
		     const struct backend *be)
{
	struct slot in[MAX_IO] = { 0 }, out[MAX_IO] = { 0 };
	unsigned k;

	for (k = 0; k < io->n_in; k++)
		in[k] = (struct slot){ .base = io->in[k],
				       .size = io->in_bytes[k],
				       .bytes = io->in_bytes[k] };
	for (k = 0; k < io->n_out; k++) {
		memset(io->want[k], SENTINEL, io->out_bytes[k]);
		out[k] = (struct slot){ .base = io->want[k],
					.size = io->out_bytes[k],
					.bytes = io->out_bytes[k] };
	}
	return launch_slots(c, io, in, out, &(struct part_at){ .parts = 1 },
			    be);
}

/* --- a run in parts -------------------------------------------------- */

static bool is_cut(uint64_t mask, unsigned k)
{
	return (mask >> k) & 1;
}

static bool untouched(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] != SENTINEL)
			return false;
	return true;
}

static void protect(struct slot *out, const struct op_io *io,
		    const struct split_case *c, int prot)
{
	unsigned k;

	for (k = 0; k < io->n_out; k++)
		if (!is_cut(c->out, k))
			mprotect(out[k].base, page_round(out[k].size), prot);
}

/*
 * Whether the op's parts read their rows alone: the registry says so
 * (TP_OP_SPLIT_LOCAL), or they sum (@sums).
 */
static bool split_local(const struct split_case *c, bool sums)
{
	const struct tp_op_type *t = tp_kernels_find(c->op);

	return sums || (t && (t->flags & TP_OP_SPLIT_LOCAL));
}

/*
 * Part [@r0, @r1)'s slots: cut inputs NaN before @r0 (and from @r1 on for
 * an op whose parts read their rows alone), fresh cut outputs, none in a
 * pass before the @last.
 */
static int part_slots(const struct split_case *c, const struct op_io *io,
		      const struct part_at *at, struct slot *in,
		      struct slot *out, struct slot *whole_out, bool last)
{
	size_t r0 = at->row0, r1 = at->row0 + at->rows;
	unsigned k;

	for (k = 0; k < io->n_in; k++) {
		size_t rb = io->in_bytes[k] / c->rows;

		if (!is_cut(c->in, k)) {
			in[k] = (struct slot){ .base = io->in[k],
					       .size = io->in_bytes[k],
					       .bytes = io->in_bytes[k] };
			continue;
		}
		in[k] = (struct slot){ .base = malloc(io->in_bytes[k]),
				       .size = io->in_bytes[k], .off = r0 * rb,
				       .bytes = (r1 - r0) * rb };
		if (!in[k].base)
			return -ENOMEM;
		memcpy(in[k].base, io->in[k], io->in_bytes[k]);
		memset(in[k].base, 0xff, r0 * rb);
		if (split_local(c, at->sums))
			memset((char *)in[k].base + r1 * rb, 0xff,
			       io->in_bytes[k] - r1 * rb);
	}
	for (k = 0; k < io->n_out; k++) {
		size_t rb = io->out_bytes[k] / c->rows;

		if (!is_cut(c->out, k)) {
			out[k] = whole_out[k];
			continue;
		}
		if (!last) {
			out[k] = (struct slot){ 0 };
			continue;
		}
		out[k] = (struct slot){ .base = malloc(io->out_bytes[k]),
					.size = io->out_bytes[k],
					.off = r0 * rb,
					.bytes = (r1 - r0) * rb };
		if (!out[k].base)
			return -ENOMEM;
		memset(out[k].base, SENTINEL, io->out_bytes[k]);
	}
	return 0;
}

/*
 * One part: launched, its cut outputs' rows kept in @got, nothing written
 * outside them; whole outputs unchanged after part 0, unless the split
 * sums into them.
 */
static bool run_part(const struct split_case *c, const struct op_io *io,
		     const struct part_at *at, struct slot *whole_out,
		     char **got, const struct backend *be)
{
	struct slot in[MAX_IO] = { 0 }, out[MAX_IO] = { 0 };
	char *before[MAX_IO] = { 0 };
	size_t r0 = at->row0, r1 = at->row0 + at->rows;
	unsigned i = at->part, parts = at->parts, k;
	bool fine = true, kept = i && !at->sums;
	bool last = !at->sums || at->pass + 1 == c->passes;
	int rc;

	rc = part_slots(c, io, at, in, out, whole_out, last);
	for (k = 0; !rc && kept && k < io->n_out; k++)
		if (!is_cut(c->out, k) &&
		    (before[k] = malloc(out[k].size)) != NULL)
			memcpy(before[k], out[k].base, out[k].size);
	if (!rc) {
		if (kept && !be->device)
			protect(out, io, c, PROT_READ);
		rc = launch_slots(c, io, in, out, at, be);
		if (kept && !be->device)
			protect(out, io, c, PROT_READ | PROT_WRITE);
	}
	if (rc == -ENOTSUP && be->device && !i && be->refused) {
		/* The device's whole run differs from rows alone: no parts
		 * (kernels/batching.h); the first part says so. */
		*be->refused = true;
		fine = false;
	} else if (rc) {
		diag("%s: part %u of %u (rows %zu-%zu): %s", c->op, i, parts,
		     r0, r1, strerror(-rc));
		fine = false;
	}
	for (k = 0; fine && k < io->n_out; k++) {
		size_t end = out[k].off + out[k].bytes;

		if (!is_cut(c->out, k)) {
			if (before[k] && memcmp(before[k], out[k].base,
						out[k].size)) {
				diag("%s: part %u changed whole output %u",
				     c->op, i, k);
				fine = false;
			}
			continue;
		}
		if (!out[k].base)
			continue;
		if (!untouched(out[k].base, out[k].off) ||
		    !untouched(out[k].base + end, out[k].size - end)) {
			diag("%s: part %u wrote output %u outside its rows",
			     c->op, i, k);
			fine = false;
		}
		memcpy(got[k] + out[k].off, out[k].base + out[k].off,
		       out[k].bytes);
	}
	for (k = 0; k < MAX_IO; k++) {
		if (is_cut(c->in, k))
			free(in[k].base);
		if (is_cut(c->out, k))
			free(out[k].base);
		free(before[k]);
	}
	return fine;
}

/* The run in the parts whose first rows are @bounds (then c->rows). */
static bool run_parts(const struct split_case *c, const struct op_io *io,
		      const size_t *bounds, unsigned parts, bool sums,
		      const struct backend *be)
{
	struct slot whole_out[MAX_IO] = { 0 };
	char *got[MAX_IO] = { 0 };
	bool fine = true;
	unsigned i, k, pass;

	for (k = 0; k < io->n_out; k++) {
		if (is_cut(c->out, k)) {
			got[k] = malloc(io->out_bytes[k]);
			fine &= got[k] != NULL;
			continue;
		}
		whole_out[k] = (struct slot){
			.base = page_alloc(io->out_bytes[k]),
			.size = io->out_bytes[k],
			.bytes = io->out_bytes[k], .paged = true,
		};
		fine &= whole_out[k].base != NULL;
		if (whole_out[k].base)
			memset(whole_out[k].base, SENTINEL, io->out_bytes[k]);
	}
	for (pass = 0; fine && pass < (sums ? c->passes : 1); pass++)
		for (i = 0; fine && i < parts; i++) {
			size_t end = i + 1 < parts ? bounds[i + 1] : c->rows;
			struct part_at at = {
				.part = i, .parts = parts, .pass = pass,
				.row0 = bounds[i], .rows = end - bounds[i],
				.sums = sums,
			};

			fine = run_part(c, io, &at, whole_out, got, be);
		}
	for (k = 0; fine && k < io->n_out; k++) {
		const char *have = is_cut(c->out, k) ? got[k] :
						      whole_out[k].base;

		if (memcmp(have, io->want[k], io->out_bytes[k])) {
			size_t e = 0;

			while (!memcmp((const char *)have + e,
				       (const char *)io->want[k] + e, 4))
				e += 4;
			diag("%s, %u parts: output %u float %zu: %.9g, whole "
			     "run %.9g", c->op, parts, k, e / 4,
			     *(const float *)(have + e),
			     *(const float *)((const char *)io->want[k] + e));
			fine = false;
		}
	}
	for (k = 0; k < MAX_IO; k++) {
		free(got[k]);
		slot_free(&whole_out[k]);
	}
	return fine;
}

enum { TWO, UNEVEN, ONES, N_CUTS };

static const char *const cut_name[N_CUTS] = {
	"two halves", "three uneven parts", "one row each",
};

/* The first row of each part of cut @how; returns the number of parts. */
/* The first rows of the parts, at multiples of @g rows (0: any). */
static unsigned cut_bounds(unsigned how, size_t rows, size_t g, size_t *b)
{
	size_t i, units;

	g = g > 1 ? g : 1;
	units = (rows + g - 1) / g;
	switch (how) {
	case TWO:
		b[0] = 0;
		b[1] = units / 2 * g;
		return 2;
	case UNEVEN:
		b[0] = 0;
		b[1] = g;
		b[2] = (units - 2) * g;
		return 3;
	default:
		for (i = 0; i < units; i++)
			b[i] = i * g;
		return (unsigned)units;
	}
}

/* --- the ops --------------------------------------------------------- */

static const struct tp_linear_params lin_bias = {
	.n = 6, .in = 5, .out = 4, .bias = 1,
};
static const struct tp_linear_params lin = { .n = 7, .in = 3, .out = 6 };
static const struct tp_gemm_params gemm_nt = {
	.batch = 5, .m = 3, .n = 4, .k = 6, .trans_b = 1, .alpha = 0.5f,
};
static const struct tp_gemm_params gemm_tn = {
	.batch = 7, .m = 4, .n = 3, .k = 5, .trans_a = 1, .alpha = 1.0f,
};
static const struct tp_conv2d_params conv = {
	.n = 5, .c = 3, .h = 7, .w = 6, .k = 4, .r = 3, .s = 3,
	.stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 1, .bias = 1,
};
static const struct tp_conv2d_params conv_1x1 = {
	.n = 7, .c = 5, .h = 4, .w = 3, .k = 6, .r = 1, .s = 1,
	.stride_h = 1, .stride_w = 1,
};
/* more images than a weight-gradient call takes: the parts sum dW */
static const struct tp_conv2d_params conv_tall = {
	.n = 400, .c = 2, .h = 5, .w = 4, .k = 3, .r = 3, .s = 3,
	.stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .bias = 1,
};
static const struct tp_batchnorm_params bn = {
	.n = 7, .c = 3, .hw = 10, .eps = 1e-5f,
};
static const struct tp_eltwise_params elt = { .count = 42, .alpha = 0.75f };
/* overlapping windows: a gradient element gathers several */
static const struct tp_pool_params maxp = {
	.n = 5, .c = 2, .h = 7, .w = 7, .r = 3, .s = 3,
	.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1,
};
static const struct tp_pool_params avgp = {
	.n = 5, .c = 2, .h = 6, .w = 7, .r = 2, .s = 3,
	.stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 0,
};
static const struct tp_gap_params gap = { .n = 5, .c = 3, .hw = 9 };
static const struct tp_softmax_params sm = { .rows = 7, .cols = 10 };
static const struct tp_layernorm_params ln = {
	.rows = 7, .cols = 12, .eps = 1e-5f,
};
static const struct tp_transpose_params tr = { .a = 5, .b = 3, .c = 4,
					       .d = 2 };

#define CASE(w, o, p, r, i, u, ...) \
	{ .what = w, .op = o, .params = &(p), .params_len = sizeof(p), \
	  .rows = r, .in = i, .out = u, __VA_ARGS__ }

static const struct split_case cases[] = {
	CASE("linear, bias", "linear", lin_bias, 6, B(0), B(0)),
	CASE("linear", "linear", lin, 7, B(0), B(0)),
	CASE("linear_bwd, bias", "linear_bwd", lin_bias, 6, B(0) | B(1),
	     B(0)),
	CASE("linear_bwd", "linear_bwd", lin, 7, B(0) | B(1), B(0)),
	CASE("gemm A B^T, alpha 0.5", "gemm", gemm_nt, 5, B(0) | B(1), B(0)),
	CASE("gemm A^T B", "gemm", gemm_tn, 7, B(0) | B(1), B(0)),
	CASE("gemm_bwd A B^T, alpha 0.5", "gemm_bwd", gemm_nt, 5,
	     B(0) | B(1) | B(2), B(0) | B(1)),
	CASE("gemm_bwd A^T B", "gemm_bwd", gemm_tn, 7, B(0) | B(1) | B(2),
	     B(0) | B(1)),
	CASE("conv2d 3x3 stride 2,1 bias, workspace", "conv2d", conv, 5,
	     B(0), B(0), .ws = true),
	CASE("conv2d 1x1", "conv2d", conv_1x1, 7, B(0), B(0)),
	CASE("conv2d_bwd 3x3 bias, workspace", "conv2d_bwd", conv, 5,
	     B(0) | B(1), B(0), .ws = true),
	CASE("conv2d_bwd 1x1", "conv2d_bwd", conv_1x1, 7, B(0) | B(1), B(0)),
	/* the leanest algorithms cuDNN has (vmm.workspace_max of a byte) */
	CASE("conv2d 3x3 stride 2,1 bias, lean", "conv2d", conv, 5, B(0),
	     B(0), .ws = true, .ws_max = 1),
	CASE("conv2d_bwd 3x3 bias, lean", "conv2d_bwd", conv, 5,
	     B(0) | B(1), B(0), .ws = true, .ws_max = 1),
	/* TF32 on the tensor cores (vmm.math): other bits, the same rules */
	CASE("conv2d 3x3 stride 2,1 bias, tf32", "conv2d", conv, 5, B(0),
	     B(0), .ws = true, .math = TP_MATH_TF32),
	CASE("conv2d_bwd 3x3 bias, tf32", "conv2d_bwd", conv, 5,
	     B(0) | B(1), B(0), .ws = true, .math = TP_MATH_TF32),
	CASE("linear_bwd, bias, tf32", "linear_bwd", lin_bias, 6,
	     B(0) | B(1), B(0), .math = TP_MATH_TF32),
	CASE("gemm A^T B, tf32", "gemm", gemm_tn, 7, B(0) | B(1), B(0),
	     .math = TP_MATH_TF32),
	CASE("conv2d_bwd 3x3 bias, 400 images, workspace", "conv2d_bwd",
	     conv_tall, 400, B(0) | B(1), B(0), .ws = true, .passes = 1,
	     .granule = TP_CONV_DW_ROWS),
	CASE("conv2d_bwd 3x3 bias, 400 images, tf32", "conv2d_bwd", conv_tall,
	     400, B(0) | B(1), B(0), .ws = true, .passes = 1,
	     .granule = TP_CONV_DW_ROWS, .math = TP_MATH_TF32),
	/* the sums, then the outputs: passes over the rows */
	CASE("batchnorm", "batchnorm", bn, 7, B(0), B(0), .passes = 3),
	CASE("batchnorm_bwd", "batchnorm_bwd", bn, 7, B(0) | B(1), B(0),
	     .passes = 2),
	CASE("relu", "relu", elt, 42, B(0), B(0)),
	CASE("relu_bwd", "relu_bwd", elt, 42, B(0) | B(1), B(0)),
	CASE("gelu", "gelu", elt, 42, B(0), B(0)),
	CASE("gelu_bwd", "gelu_bwd", elt, 42, B(0) | B(1), B(0)),
	CASE("maxpool 3x3/2 pad 1, ties", "maxpool", maxp, 5, B(0), B(0),
	     .ties = true),
	CASE("maxpool_bwd 3x3/2 pad 1, ties", "maxpool_bwd", maxp, 5,
	     B(0) | B(1) | B(2), B(0), .ties = true),
	CASE("avgpool 2x3", "avgpool", avgp, 5, B(0), B(0)),
	CASE("avgpool_bwd 2x3", "avgpool_bwd", avgp, 5, B(0), B(0)),
	CASE("global_avgpool", "global_avgpool", gap, 5, B(0), B(0)),
	CASE("global_avgpool_bwd", "global_avgpool_bwd", gap, 5, B(0), B(0)),
	CASE("softmax", "softmax", sm, 7, B(0), B(0)),
	CASE("softmax_bwd", "softmax_bwd", sm, 7, B(0) | B(1), B(0)),
	CASE("layernorm", "layernorm", ln, 7, B(0), B(0) | B(1) | B(2)),
	CASE("layernorm_bwd", "layernorm_bwd", ln, 7,
	     B(0) | B(1) | B(3) | B(4), B(0)),
	CASE("transpose12", "transpose12", tr, 5, B(0), B(0)),
	CASE("transpose12_bwd", "transpose12_bwd", tr, 5, B(0), B(0)),
	CASE("add", "add", elt, 42, B(0) | B(1), B(0)),
	CASE("add_bwd", "add_bwd", elt, 42, B(0), B(0) | B(1)),
	CASE("scale", "scale", elt, 42, B(0), B(0)),
	CASE("scale_bwd", "scale_bwd", elt, 42, B(0), B(0)),
};

#define N_CASES ARRAY_SIZE(cases)
#define POINTS_PER_CASE (3 + N_CUTS + 1)

/* --- the split callback ---------------------------------------------- */

static int call_split(const struct split_case *c, const void *params,
		      const struct op_io *io, const size_t *in_bytes,
		      const size_t *out_bytes, struct tp_op_split *s)
{
	if (!io->t->split)
		return -ENOSYS;
	return io->t->split(params, c->params_len, in_bytes, io->n_in,
			    out_bytes, io->n_out, s);
}

static void check_split(const struct split_case *c, const struct op_io *io)
{
	struct tp_op_split s = { 0 };
	size_t in[MAX_IO], out[MAX_IO];
	bool refused = true, larger_whole = true;
	unsigned char one[64];
	unsigned k;
	int rc;

	rc = call_split(c, c->params, io, io->in_bytes, io->out_bytes, &s);
	ok(!rc && (io->t->flags & TP_OP_SPLITTABLE) && s.rows == c->rows &&
	   s.in == c->in && s.out == c->out && !s.sums == !c->passes &&
	   s.passes == c->passes && s.granule == c->granule,
	   "%s: splittable, %zu rows, cut in %#" PRIx64 " out %#" PRIx64
	   ", sums in %u passes from multiples of %zu (got %d: %zu, %#"
	   PRIx64 ", %#" PRIx64 ", %u, %zu)", c->what, c->rows, c->in, c->out,
	   c->passes, c->granule, rc, s.rows, s.in, s.out, s.passes,
	   s.granule);

	/* one row more on a cut tensor: refused; on a whole one: fine */
	for (k = 0; k < io->n_in + io->n_out; k++) {
		bool input = k < io->n_in;
		unsigned j = input ? k : k - io->n_in;
		uint64_t mask = input ? c->in : c->out;
		size_t *v = input ? in : out;
		const size_t *bytes = input ? io->in_bytes : io->out_bytes;

		memcpy(in, io->in_bytes, sizeof(in));
		memcpy(out, io->out_bytes, sizeof(out));
		v[j] += is_cut(mask, j) ? bytes[j] / c->rows : 4096;
		rc = call_split(c, c->params, io, in, out, &s);
		if (is_cut(mask, j))
			refused &= rc != 0;
		else
			larger_whole &= rc == 0;
	}
	ok(refused && larger_whole,
	   "%s: a cut tensor larger than the shape is refused, a larger "
	   "whole one is not", c->what);

	/* every params struct here has its batch first */
	memcpy(one, c->params, c->params_len);
	*(uint32_t *)one = 1;
	tp_kernels_shape(io->t, one, c->params_len, in, &k, out, &k);
	if (c->ws)
		in[io->n_in - 1] = WS_BYTES;
	ok(call_split(c, one, io, in, out, &s) != 0,
	   "%s: a batch of one row is refused", c->what);
}

/* --- the cases on a backend ------------------------------------------ */

static void check_parts_host(const struct split_case *c, struct op_io *io)
{
	const struct backend host = { 0 };
	int rc = run_whole(c, io, &host);
	size_t bounds[512];
	unsigned how, parts;

	if (rc) {
		for (how = 0; how < N_CUTS; how++)
			ok(0, "%s: %s: the whole run failed: %s", c->what,
			   cut_name[how], strerror(-rc));
		return;
	}
	for (how = 0; how < N_CUTS; how++) {
		bool fine;

		parts = cut_bounds(how, c->rows, 0, bounds);
		fine = run_parts(c, io, bounds, parts, false, &host);
		if (c->passes) {
			parts = cut_bounds(how, c->rows, c->granule, bounds);
			fine &= run_parts(c, io, bounds, parts, true, &host);
		}
		ok(fine, "%s: %s give the whole run's bits%s", c->what,
		   cut_name[how], c->passes ? ", part 0 reading every row "
			"and the parts summing" : "");
	}
}

#ifdef TP_HAVE_CUDA
static void check_parts_device(const struct split_case *c, struct op_io *io,
			       void *stream)
{
	bool refused = false, fine = true;
	const struct backend dev = {
		.device = true, .stream = stream, .refused = &refused,
	};
	size_t bounds[512];
	unsigned how, parts, nr_refused = 0;
	int rc = run_whole(c, io, &dev);

	if (rc) {
		ok_rc(rc, "%s: cuda: the whole run", c->what);
		return;
	}
	for (how = 0; how < N_CUTS; how++) {
		bool same;

		parts = cut_bounds(how, c->rows, 0, bounds);
		refused = false;
		same = run_parts(c, io, bounds, parts, false, &dev);
		if (c->passes && !refused) {
			parts = cut_bounds(how, c->rows, c->granule, bounds);
			same &= run_parts(c, io, bounds, parts, true, &dev);
		}
		if (refused)
			nr_refused++;
		else
			fine &= same;
	}
	/*
	 * A shape whose whole run differs from its rows alone refuses every
	 * cut (the op then does not run in parts on this device); one that
	 * runs in parts must give the whole run's bits.
	 */
	ok(fine && (!nr_refused || nr_refused == N_CUTS),
	   "%s: cuda: parts give the whole run's bits%s", c->what,
	   nr_refused == N_CUTS ? " (refused: the whole run differs from "
				  "rows alone on this device)" : "");
}

static void *device_stream(const char **why)
{
	cudaStream_t s;
	int n = 0;

	if (tp_kernels_cuda_available() || cudaGetDeviceCount(&n) != cudaSuccess
	    || !n) {
		*why = "no CUDA device";
		return NULL;
	}
	if (cudaStreamCreate(&s) != cudaSuccess) {
		*why = "cudaStreamCreate failed";
		return NULL;
	}
	return s;
}
#endif

static void check_devices(void)
{
	const char *why = "a build without CUDA";
	void *stream = NULL;
	unsigned i;

#ifdef TP_HAVE_CUDA
	stream = device_stream(&why);
#endif
	if (!stream) {
		skip(N_CASES, "%s", why);
		return;
	}
#ifdef TP_HAVE_CUDA
	for (i = 0; i < N_CASES; i++) {
		struct op_io io;

		if (io_setup(&cases[i], &io))
			ok(0, "%s: cuda: set up", cases[i].what);
		else
			check_parts_device(&cases[i], &io, stream);
		io_free(&io);
	}
	cudaStreamDestroy((cudaStream_t)stream);
#else
	(void)i;
#endif
}

/* --- the launch checks ----------------------------------------------- */

/* Every op is splittable with a callback, or neither. */
static void check_registry(void)
{
	unsigned i, j, bad = 0, cut = 0;

	for (i = 0; i < tp_kernels_count(); i++) {
		const struct tp_op_type *t = tp_kernels_at(i);
		bool listed = false;

		for (j = 0; j < N_CASES; j++)
			listed |= !strcmp(cases[j].op, t->name);
		cut += listed;
		if (listed != !!(t->flags & TP_OP_SPLITTABLE) ||
		    listed != !!t->split) {
			diag("%s: flag %u, split %p", t->name,
			     t->flags & TP_OP_SPLITTABLE, (void *)t->split);
			bad++;
		}
	}
	ok(!bad && cut == 28,
	   "registry: the %u ops tested here are splittable, no other", cut);

	/* Parts read their rows alone exactly when no output is whole. */
	bad = 0;
	for (j = 0; j < N_CASES; j++) {
		const struct tp_op_type *t = tp_kernels_find(cases[j].op);
		size_t in[MAX_IO], out[MAX_IO];
		unsigned ni, no;

		if (!t || tp_kernels_shape(t, cases[j].params,
					   cases[j].params_len, in, &ni, out,
					   &no)) {
			bad++;
			continue;
		}
		if (!!(t->flags & TP_OP_SPLIT_LOCAL) !=
		    (cases[j].out == (1ull << no) - 1)) {
			diag("%s: local %u, cuts outputs 0x%llx of %u",
			     t->name, !!(t->flags & TP_OP_SPLIT_LOCAL),
			     (unsigned long long)cases[j].out, no);
			bad++;
		}
	}
	ok(!bad, "registry: TP_OP_SPLIT_LOCAL on every op that cuts all its outputs, no other");
}

/*
 * batchnorm with n = 7 on the host, through its type's launch: a part
 * that does not fit the cut is -EINVAL and writes nothing.
 */
static void check_launches(void)
{
	enum { N = 7, C = 3, HW = 10, X = N * C * HW, ROW = C * HW };
	static float x[X], y[X], mean[C], invstd[C];
	float gamma[C] = { 1, 1, 1 }, beta[C] = { 0 };
	struct tp_eltwise_params ep = { .count = 4 };
	struct tp_embedding_params emb = { .n = 2, .vocab = 2, .dim = 2 };
	size_t in_bytes[] = { 3 * ROW * 4, C * 4, C * 4 };
	size_t out_bytes[] = { 3 * ROW * 4, C * 4, C * 4 };
	void *in[] = { x + 2 * ROW, gamma, beta };
	void *out[] = { y + 2 * ROW, mean, invstd };
	struct tp_op_launch l = {
		.type = tp_kernels_find("batchnorm"), .params = &bn,
		.params_len = sizeof(bn), .in = in, .in_bytes = in_bytes,
		.n_in = 3, .out = out, .out_bytes = out_bytes, .n_out = 3,
		.part = 1, .parts = 3, .row0 = 2, .rows = 3,
		.sums = 1, .pass = 2, .passes = 3,	/* the outputs' pass */
	};
	size_t emb_in_bytes[] = { 16, 8 }, emb_out_bytes[] = { 16 };
	void *emb_in[] = { x, x + 4 }, *emb_out[] = { y };
	struct tp_op_launch bad;
	struct tp_ctx *ctx;
	unsigned i, n_bad = 0, n_wrote = 0;
	/* @in0: rows in input 0's size; @at: row of the pointers */
	const struct {
		const char *what;
		unsigned part, parts;
		size_t row0, rows, in0, gamma, at;
	} cases_bad[] = {
		{ "row0 + rows past the batch", 1, 3, 5, 3, 3, C, 2 },
		{ "part >= parts", 3, 3, 2, 3, 3, C, 2 },
		{ "rows 0 in 3 parts", 1, 3, 2, 0, 3, C, 2 },
		{ "part 0 not at row 0", 0, 3, 2, 3, 3, C, 2 },
		{ "a later part at row 0", 1, 3, 0, 3, 3, C, 2 },
		{ "the last part short of the end", 2, 3, 2, 3, 3, C, 2 },
		{ "a middle part to the end", 1, 3, 4, 3, 3, C, 2 },
		{ "a cut input of the whole size", 1, 3, 2, 3, N, C, 2 },
		{ "a cut input one row too big", 1, 3, 2, 3, 4, C, 2 },
		{ "a whole input smaller than the shape", 1, 3, 2, 3, 3, 2, 2 },
		{ "a whole run from row 2", 0, 1, 2, 0, N, C, 0 },
		{ "a whole run as part 1", 1, 1, 0, 0, N, C, 0 },
	};

	for (i = 0; i < X; i++)
		x[i] = rng_normal();
	for (i = 0; i < ARRAY_SIZE(cases_bad); i++) {
		bad = l;
		bad.part = cases_bad[i].part;
		bad.parts = cases_bad[i].parts;
		bad.row0 = cases_bad[i].row0;
		bad.rows = cases_bad[i].rows;
		in_bytes[0] = cases_bad[i].in0 * ROW * 4;
		in_bytes[1] = cases_bad[i].gamma * 4;
		out_bytes[0] = cases_bad[i].in0 * ROW * 4;
		in[0] = x + cases_bad[i].at * ROW;
		out[0] = y + cases_bad[i].at * ROW;
		memset(y, SENTINEL, sizeof(y));
		if (bad.type->launch(&bad) != -EINVAL) {
			diag("accepted: %s", cases_bad[i].what);
			n_bad++;
		}
		n_wrote += !untouched((const char *)y, sizeof(y));
	}
	ok(!n_bad && !n_wrote,
	   "launch: %zu parts that do not fit the cut are -EINVAL, nothing "
	   "written", ARRAY_SIZE(cases_bad));
	in_bytes[0] = out_bytes[0] = 3 * ROW * 4;
	in_bytes[1] = C * 4;
	in[0] = x + 2 * ROW;
	out[0] = y + 2 * ROW;
	/* part 1 reads part 0's statistics */
	mean[0] = 0;
	invstd[0] = 1;
	ok(!l.type->launch(&l) && y[2 * ROW] == x[2 * ROW],
	   "launch: rows 2-4 of 7 as part 1 of 3 run");

	/* embedding: T[2,2] ids[2] -> y[2,2], its first row as part 0 of 2 */
	bad = (struct tp_op_launch){
		.type = tp_kernels_find("embedding"), .params = &emb,
		.params_len = sizeof(emb), .in = emb_in,
		.in_bytes = emb_in_bytes, .n_in = 2, .out = emb_out,
		.out_bytes = emb_out_bytes, .n_out = 1, .parts = 2, .rows = 1,
	};
	memset(y, SENTINEL, sizeof(y));
	ok(bad.type->launch(&bad) == -EINVAL &&
	   untouched((const char *)y, sizeof(y)),
	   "launch: a part of an op that does not split is -EINVAL");

	bad = (struct tp_op_launch){
		.type = tp_kernels_find("relu"), .params = &ep,
		.params_len = sizeof(ep), .in = in, .n_in = 1, .out = out,
		.n_out = 1,
	};
	in[0] = x;
	out[0] = y;
	ok(!bad.type->launch(&bad) && y[3] == (x[3] > 0 ? x[3] : 0),
	   "launch: a zero-initialised launch is a whole run");

	ctx = tp_ctx_create("vmm.backend=sim");
	if (!ctx) {
		skip(1, "no sim context: %s", strerror(errno));
		return;
	}
	in_bytes[0] = 3 * ROW * 4;
	in_bytes[1] = C * 4;
	out_bytes[0] = 3 * ROW * 4;
	in[0] = x + 2 * ROW;
	out[0] = y + 2 * ROW;
	l.ctx = ctx;
	l.device = TP_DEVICE_NONE;
	bad = l;
	bad.row0 = 5;
	ok(!l.type->launch(&l) && bad.type->launch(&bad) == -EINVAL,
	   "launch on sim: a part that fits passes, one past the batch is "
	   "-EINVAL");
	tp_ctx_destroy(ctx);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_fault };
	const char *env = getenv("TPAGER_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 20240611;
	unsigned i;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	rng_state = seed;
	plan_tests(N_CASES * POINTS_PER_CASE + 7);
	diag("seed %" PRIu64, seed);
	for (i = 0; i < N_CASES; i++) {
		struct op_io io;

		if (io_setup(&cases[i], &io)) {
			ok(0, "%s: set up", cases[i].what);
			skip(POINTS_PER_CASE - 2, "no set up");
		} else {
			check_split(&cases[i], &io);
			check_parts_host(&cases[i], &io);
		}
		io_free(&io);
	}
	check_devices();
	check_registry();
	check_launches();
	return exit_status();
}

/* SPDX-License-Identifier: MIT */
/*
 * enqueue-bench: what the CUDA driver checks when work is enqueued on
 * memory that is not mapped yet, behind a stream that waits on the device
 * for a word the host sets once it has mapped it (cuStreamWaitValue32).
 *
 * The library's driver thread maps memory ahead of the thread that issues
 * ops, and that thread waits on the host for the maps queued so far before
 * it enqueues work (vmm/map_ahead.h): a copy into memory not mapped yet is
 * refused at the call, whatever the stream waits for first. Whether a
 * kernel launch, a cuBLAS call and a cuDNN call are refused the same way
 * decides whether ops could be gated on the device instead, which would
 * take the wait off the issuing thread.
 *
 *   enqueue-bench [--cublas LIB] [--cudnn LIB]
 *
 * Each case runs in a process of its own (a fault ends the context):
 * reserve 2 MiB, queue the wait, enqueue the work into the range unmapped,
 * then map it, grant access, set the word, and synchronise; the result,
 * and whether the work wrote what it should, are printed per case:
 *   control  a kernel (PTX loaded at run time) into memory mapped first
 *   memset   cuMemsetD8Async
 *   copy     cuMemcpyHtoDAsync
 *   kernel   the kernel
 *   cublas   cublasSgemm, its output in the range
 *   gemm-sb  cublasSgemmStridedBatched (the library's linear and gemm ops)
 *   cudnn    cudnnConvolutionForward (1x1, implicit GEMM), its output there
 *   bwd-data cudnnConvolutionBackwardData, deterministic algorithm 1
 *   bwd-filt cudnnConvolutionBackwardFilter, deterministic algorithm 1
 *   bwd-bias cudnnConvolutionBackwardBias
 *   add-bias the kernel, then cudnnAddTensor adding a bias to its output
 * The kernel and the libraries' calls run once first on mapped memory,
 * synchronised (handles, descriptors and kernels made), so that a case
 * times its enqueue alone. A case still running after 10 s is reported
 * as hung (the map waiting on the stream, or the enqueue on the map).
 *
 * It loads the driver and the libraries at run time, so it builds
 * everywhere and says so where there is no GPU.
 */
#include "config.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#define CALLS(X)				\
	X(cuInit)				\
	X(cuDeviceGet)				\
	X(cuDevicePrimaryCtxRetain)		\
	X(cuCtxSetCurrent)			\
	X(cuGetErrorString)			\
	X(cuMemAddressReserve)			\
	X(cuMemCreate)				\
	X(cuMemMap)				\
	X(cuMemSetAccess)			\
	X(cuMemGetAllocationGranularity)	\
	X(cuMemHostAlloc)			\
	X(cuMemHostGetDevicePointer)		\
	X(cuMemsetD8Async)			\
	X(cuMemcpyHtoDAsync)			\
	X(cuMemcpyHtoD)				\
	X(cuMemcpyDtoH)				\
	X(cuStreamCreate)			\
	X(cuStreamSynchronize)			\
	X(cuStreamWaitValue32)			\
	X(cuModuleLoadData)			\
	X(cuModuleGetFunction)			\
	X(cuLaunchKernel)

#include "bench/cuda-calls.h"

#define GRAN		(2u << 20)
#define N_FLOATS	1024u		/* what each case writes and checks */
#define DIM		32		/* the GEMM's and the convolution's */

/* fill(p, n, v): p[i] = v for i < n. Checked with ptxas for sm_90. */
static const char fill_ptx[] =
	".version 7.8\n.target sm_80\n.address_size 64\n"
	".visible .entry fill(.param .u64 p, .param .u32 n, .param .u32 v)\n"
	"{\n"
	".reg .pred %p1;\n.reg .b32 %r<7>;\n.reg .b64 %rd<5>;\n"
	"ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\n"
	"ld.param.u32 %r2, [v];\nmov.u32 %r3, %ctaid.x;\n"
	"mov.u32 %r4, %ntid.x;\nmov.u32 %r5, %tid.x;\n"
	"mad.lo.s32 %r6, %r3, %r4, %r5;\nsetp.ge.u32 %p1, %r6, %r1;\n"
	"@%p1 bra DONE;\ncvta.to.global.u64 %rd2, %rd1;\n"
	"mul.wide.u32 %rd3, %r6, 4;\nadd.s64 %rd4, %rd2, %rd3;\n"
	"st.global.u32 [%rd4], %r2;\nDONE:\nret;\n}\n";

/* The few library calls, by their ABI (enums as int), loaded at run time. */
typedef int (*blas_create_t)(void **h);
typedef int (*blas_stream_t)(void *h, CUstream s);
typedef int (*sgemm_t)(void *h, int ta, int tb, int m, int n, int k,
		       const float *alpha, const float *a, int lda,
		       const float *b, int ldb, const float *beta, float *c,
		       int ldc);
typedef int (*dnn_create_t)(void **h);
typedef int (*dnn_stream_t)(void *h, CUstream s);
typedef int (*dnn_desc_t)(void **d);
typedef int (*dnn_tensor4d_t)(void *d, int fmt, int type, int n, int c,
			      int h, int w);
typedef int (*dnn_filter4d_t)(void *d, int type, int fmt, int k, int c,
			      int h, int w);
typedef int (*dnn_conv2d_t)(void *d, int ph, int pw, int u, int v, int dh,
			    int dw, int mode, int type);
typedef int (*dnn_conv_fwd_t)(void *h, const void *alpha, void *xd,
			      const void *x, void *wd, const void *w,
			      void *cd, int algo, void *ws, size_t ws_bytes,
			      const void *beta, void *yd, void *y);
/* Backward data and filter take the same operand list, other descriptors. */
typedef dnn_conv_fwd_t dnn_conv_bwd_t;
typedef int (*dnn_bias_t)(void *h, const void *alpha, void *ad,
			  const void *a, const void *beta, void *cd, void *c);
typedef int (*sgemm_sb_t)(void *h, int ta, int tb, int m, int n, int k,
			  const float *alpha, const float *a, int lda,
			  long long sa, const float *b, int ldb, long long sb,
			  const float *beta, float *c, int ldc, long long sc,
			  int batches);

static const char *cublas_lib = "libcublas.so";
static const char *cudnn_lib = "libcudnn.so.9";

static CUstream stream;
static CUdeviceptr gated, inputs;	/* the range under test; mapped */
static CUmemGenericAllocationHandle gated_handle;
static volatile uint32_t *word;
static CUdeviceptr word_dev;

static const char *err(CUresult r)
{
	const char *s = "?";

	p_cuGetErrorString(r, &s);
	return s;
}


/* A 2 MiB handle on the device, with access for it. */
static CUresult handle_new(CUmemGenericAllocationHandle *h)
{
	CUmemAllocationProp prop = { 0 };

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	return p_cuMemCreate(h, GRAN, &prop, 0);
}

static CUresult map_rw(CUdeviceptr va, CUmemGenericAllocationHandle h)
{
	CUmemAccessDesc acc = { 0 };
	CUresult r;

	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = 0;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	r = p_cuMemMap(va, GRAN, 0, h, 0);
	return r ? r : p_cuMemSetAccess(va, GRAN, &acc, 1);
}

/* The context, a stream, the word, the gated range and the inputs. */
static CUresult setup(void)
{
	CUmemGenericAllocationHandle in;
	CUcontext ctx;
	CUdevice dev;
	CUresult r;
	void *w;

	if ((r = p_cuInit(0)) || (r = p_cuDeviceGet(&dev, 0)) ||
	    (r = p_cuDevicePrimaryCtxRetain(&ctx, dev)) ||
	    (r = p_cuCtxSetCurrent(ctx)) ||
	    (r = p_cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) ||
	    (r = p_cuMemHostAlloc(&w, 64, CU_MEMHOSTALLOC_DEVICEMAP)) ||
	    (r = p_cuMemAddressReserve(&gated, 2 * GRAN, GRAN, 0, 0)) ||
	    (r = handle_new(&gated_handle)) || (r = handle_new(&in)))
		return r;
	word = w;
	*word = 0;
	if ((r = p_cuMemHostGetDevicePointer(&word_dev, w, 0)))
		return r;
	inputs = gated + GRAN;
	return map_rw(inputs, in);
}

enum way {
	CONTROL, MEMSET, COPY, KERNEL, CUBLAS, GEMM_SB, CUDNN, BWD_DATA,
	BWD_FILTER, BWD_BIAS, ADD_BIAS, NR_WAYS
};
static const char *const way_name[] = {
	"control", "memset", "copy", "kernel", "cublas", "gemm-sb", "cudnn",
	"bwd-data", "bwd-filt", "bwd-bias", "add-bias",
};

static CUfunction fill_fn;

static CUresult launch_fill(CUdeviceptr p, uint32_t v)
{
	uint32_t n = N_FLOATS;
	void *args[] = { &p, &n, &v };

	return p_cuLaunchKernel(fill_fn, N_FLOATS / 256, 1, 1, 256, 1, 1, 0,
				stream, args, NULL);
}

static float ones[N_FLOATS];

/* cuDNN's handle, descriptors and calls, made by the first case. */
static struct {
	void *h, *x, *y, *w, *b, *conv;
	dnn_conv_fwd_t fwd;
	dnn_conv_bwd_t bwd_data, bwd_filter;
	dnn_bias_t bwd_bias, add;
} dnn;

static long dnn_setup(const char **what)
{
	dnn_create_t create;
	dnn_stream_t set;
	dnn_desc_t tensor, filter, convd;
	dnn_tensor4d_t t4;
	dnn_filter4d_t f4;
	dnn_conv2d_t c2;
	void *lib;
	long r;

	if (dnn.h)
		return 0;
	*what = "loading cuDNN";
	lib = dlopen(cudnn_lib, RTLD_NOW);
	if (!lib)
		return -1;
	create = (dnn_create_t)dlsym(lib, "cudnnCreate");
	set = (dnn_stream_t)dlsym(lib, "cudnnSetStream");
	tensor = (dnn_desc_t)dlsym(lib, "cudnnCreateTensorDescriptor");
	filter = (dnn_desc_t)dlsym(lib, "cudnnCreateFilterDescriptor");
	convd = (dnn_desc_t)dlsym(lib, "cudnnCreateConvolutionDescriptor");
	t4 = (dnn_tensor4d_t)dlsym(lib, "cudnnSetTensor4dDescriptor");
	f4 = (dnn_filter4d_t)dlsym(lib, "cudnnSetFilter4dDescriptor");
	c2 = (dnn_conv2d_t)dlsym(lib, "cudnnSetConvolution2dDescriptor");
	dnn.fwd = (dnn_conv_fwd_t)dlsym(lib, "cudnnConvolutionForward");
	dnn.bwd_data = (dnn_conv_bwd_t)dlsym(lib,
					     "cudnnConvolutionBackwardData");
	dnn.bwd_filter = (dnn_conv_bwd_t)dlsym(lib,
					       "cudnnConvolutionBackwardFilter");
	dnn.bwd_bias = (dnn_bias_t)dlsym(lib, "cudnnConvolutionBackwardBias");
	dnn.add = (dnn_bias_t)dlsym(lib, "cudnnAddTensor");
	if (!create || !set || !tensor || !filter || !convd || !t4 || !f4 ||
	    !c2 || !dnn.fwd || !dnn.bwd_data || !dnn.bwd_filter ||
	    !dnn.bwd_bias || !dnn.add)
		return -1;
	/* NCHW = 0, FLOAT = 0, CROSS_CORRELATION = 1. */
	*what = "cuDNN's descriptors";
	if ((r = create(&dnn.h)) || (r = set(dnn.h, stream)) ||
	    (r = tensor(&dnn.x)) || (r = tensor(&dnn.y)) ||
	    (r = tensor(&dnn.b)) || (r = filter(&dnn.w)) ||
	    (r = convd(&dnn.conv)) ||
	    (r = t4(dnn.x, 0, 0, 1, DIM, DIM, 1)) ||
	    (r = t4(dnn.y, 0, 0, 1, 1, DIM, 1)) ||
	    (r = t4(dnn.b, 0, 0, 1, DIM, 1, 1)) ||
	    (r = f4(dnn.w, 0, 0, 1, DIM, 1, 1)) ||
	    (r = c2(dnn.conv, 0, 0, 1, 1, 1, 1, 1, 0))) {
		dnn.h = NULL;
		return r;
	}
	return 0;
}

/*
 * Enqueue @way's work writing N_FLOATS floats at @dst; *@want: the value
 * each should hold. A nonzero return: the enqueue (or what it needs)
 * failed, with *@what naming the call.
 */
static long enqueue(enum way way, CUdeviceptr dst, float *want,
		    const char **what)
{
	static const float one = 1.0f, zero = 0.0f;
	/* Made on the first call (the warm-up, on mapped memory). */
	static void *h;		/* cuBLAS's */
	static sgemm_t sgemm;
	void *lib;

	switch (way) {
	case CONTROL:
	case KERNEL:
		*what = "cuLaunchKernel";
		*want = 7.0f;
		return launch_fill(dst, 0x40e00000u);	/* 7.0f */
	case MEMSET:
		/* 0x40 bytes: 0x40404040 is 3.00392f, not what fresh memory
		 * holds. */
		*what = "cuMemsetD8Async";
		*want = 3.00392151f;
		return p_cuMemsetD8Async(dst, 0x40, N_FLOATS * sizeof(float),
					 stream);
	case COPY:
		*what = "cuMemcpyHtoDAsync";
		*want = 1.0f;
		return p_cuMemcpyHtoDAsync(dst, ones, sizeof(ones), stream);
	case CUBLAS: {
		blas_create_t create;
		blas_stream_t set;
		long r;

		if (h)
			goto gemm;
		*what = "loading cuBLAS";
		lib = dlopen(cublas_lib, RTLD_NOW);
		create = lib ? (blas_create_t)dlsym(lib, "cublasCreate_v2") : NULL;
		set = lib ? (blas_stream_t)dlsym(lib, "cublasSetStream_v2") : NULL;
		sgemm = lib ? (sgemm_t)dlsym(lib, "cublasSgemm_v2") : NULL;
		if (!create || !set || !sgemm)
			return -1;
		*what = "cublasCreate";
		if ((r = create(&h)) || (r = set(h, stream)))
			return r;
gemm:
		/* C (32 x 32) = A B, both of ones: 32 each. */
		*what = "cublasSgemm";
		*want = DIM;
		return sgemm(h, 0, 0, DIM, DIM, DIM, &one,
			     (const float *)inputs, DIM,
			     (const float *)inputs, DIM, &zero,
			     (float *)dst, DIM);
	}
	case GEMM_SB: {
		static sgemm_sb_t sb;
		blas_create_t create;
		blas_stream_t set;
		long r;

		if (sb)
			goto gemm_sb;
		*what = "loading cuBLAS";
		lib = dlopen(cublas_lib, RTLD_NOW);
		create = lib ? (blas_create_t)dlsym(lib, "cublasCreate_v2") : NULL;
		set = lib ? (blas_stream_t)dlsym(lib, "cublasSetStream_v2") : NULL;
		sb = lib ? (sgemm_sb_t)dlsym(lib, "cublasSgemmStridedBatched") :
			   NULL;
		if (!create || !set || !sb)
			return -1;
		*what = "cublasCreate";
		if ((r = create(&h)) || (r = set(h, stream)))
			return r;
gemm_sb:
		/* Two products C_i (32 x 16) = A B_i, all of ones: 32 each. */
		*what = "cublasSgemmStridedBatched";
		*want = DIM;
		return sb(h, 0, 0, DIM, DIM / 2, DIM, &one,
			  (const float *)inputs, DIM, 0,
			  (const float *)inputs, DIM, DIM * DIM / 2, &zero,
			  (float *)dst, DIM, DIM * DIM / 2, 2);
	}
	case CUDNN:
	case BWD_DATA:
	case BWD_FILTER:
	case BWD_BIAS:
	case ADD_BIAS: {
		long r = dnn_setup(what);
		const void *in = (const void *)inputs;
		void *ws = (void *)(inputs + GRAN / 4);

		if (r)
			return r;
		/*
		 * x: one image of 32 channels of 32 x 1 (1024 floats), y: one
		 * channel of 32 x 1, w: 1x1 of 32 channels to one, b: one
		 * per channel of x; every input ones, from the mapped range.
		 */
		switch (way) {
		case CUDNN:
			*what = "cudnnConvolutionForward";
			*want = DIM;
			return dnn.fwd(dnn.h, &one, dnn.x, in, dnn.w, in,
				       dnn.conv, 0, NULL, 0, &zero, dnn.y,
				       (void *)dst);
		case BWD_DATA:
			/* dx = w * dy: ones. */
			*what = "cudnnConvolutionBackwardData";
			*want = 1.0f;
			return dnn.bwd_data(dnn.h, &one, dnn.w, in, dnn.y, in,
					    dnn.conv, 1, ws, GRAN / 4, &zero,
					    dnn.x, (void *)dst);
		case BWD_FILTER:
			/* dw = sum over the 32 positions of x dy: 32. */
			*what = "cudnnConvolutionBackwardFilter";
			*want = DIM;
			return dnn.bwd_filter(dnn.h, &one, dnn.x, in, dnn.y, in,
					      dnn.conv, 1, ws, GRAN / 4, &zero,
					      dnn.w, (void *)dst);
		case BWD_BIAS:
			/* db per channel of x over its 32 positions: 32. */
			*what = "cudnnConvolutionBackwardBias";
			*want = DIM;
			return dnn.bwd_bias(dnn.h, &one, dnn.x, in, &zero,
					    dnn.b, (void *)dst);
		default:
			/* A convolution's output (7), then its bias (+1). */
			*what = "cuLaunchKernel";
			if ((r = launch_fill(dst, 0x40e00000u)))
				return r;
			*what = "cudnnAddTensor";
			*want = 8.0f;
			return dnn.add(dnn.h, &one, dnn.b, in, &one, dnn.x,
				       (void *)dst);
		}
	}
	default:
		return -1;
	}
}

/* How many floats a case writes: a convolution's output, its filter's
 * gradient and its bias's are 32. */
static unsigned checked(enum way way)
{
	return way == CUDNN || way == BWD_FILTER || way == BWD_BIAS ?
	       DIM : N_FLOATS;
}

/* One case, in the process it has to itself; its line on stdout. */
static int run_case(enum way way)
{
	static float out[N_FLOATS];
	const char *what = "setup";
	CUresult r;
	CUmodule mod;
	double t0, map_us, wait_us;
	struct timespec ts;
	float want = 0;
	long er;
	unsigned bad = 0;

	for (unsigned i = 0; i < N_FLOATS; i++)
		ones[i] = 1.0f;
	r = setup();
	if (!r)
		r = p_cuMemcpyHtoD(inputs, ones, sizeof(ones));
	if (!r && (r = p_cuModuleLoadData(&mod, fill_ptx)) == CUDA_SUCCESS)
		r = p_cuModuleGetFunction(&fill_fn, mod, "fill");
	if (r) {
		printf("%-8s setup failed: %s\n", way_name[way], err(r));
		return 1;
	}
	if (way == CONTROL && (r = map_rw(gated, gated_handle))) {
		printf("%-8s map: %s\n", way_name[way], err(r));
		return 1;
	}
	/*
	 * Each way once on mapped memory first, synchronised: a library's
	 * handle, descriptors and kernels are made there, which may wait for
	 * the device, so that the case below times the enqueue alone.
	 */
	if (way >= KERNEL) {
		float skip;
		const char *skip_what;

		er = enqueue(way, inputs + GRAN / 2, &skip, &skip_what);
		r = er ? CUDA_SUCCESS : p_cuStreamSynchronize(stream);
		if (er || r) {
			printf("%-8s on mapped memory: %s failed (%ld, %s)\n",
			       way_name[way], skip_what, er, r ? err(r) : "-");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
	r = p_cuStreamWaitValue32(stream, word_dev, 1,
				  CU_STREAM_WAIT_VALUE_GEQ);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	wait_us = ts.tv_sec * 1e6 + ts.tv_nsec / 1e3 - t0;
	if (r) {
		printf("%-8s cuStreamWaitValue32: %s\n", way_name[way], err(r));
		return 1;
	}
	er = enqueue(way, gated, &want, &what);
	/* Mapped now, the stream still waiting; then the word. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
	r = way == CONTROL ? CUDA_SUCCESS : map_rw(gated, gated_handle);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	map_us = ts.tv_sec * 1e6 + ts.tv_nsec / 1e3 - t0;
	__atomic_store_n(word, 1, __ATOMIC_SEQ_CST);
	if (r) {
		printf("%-8s map while the stream waits: %s\n", way_name[way],
		       err(r));
		return 1;
	}
	r = p_cuStreamSynchronize(stream);
	if (er) {
		/* The driver's calls answer a CUresult, the libraries a
		 * status of their own. */
		if (er > 0 && (way <= KERNEL || !strcmp(what, "cuLaunchKernel")))
			printf("%-8s refused at the enqueue: %s: %s",
			       way_name[way], what, err((CUresult)er));
		else
			printf("%-8s refused at the enqueue: %s: status %ld",
			       way_name[way], what, er);
		printf(" (wait %.1f us, map %.0f us; sync %s)\n", wait_us,
		       map_us, r ? err(r) : "ok");
		return 0;
	}
	if (r) {
		printf("%-8s accepted, then the device failed: %s (wait %.1f us, map %.0f us)\n",
		       way_name[way], err(r), wait_us, map_us);
		return 0;
	}
	r = p_cuMemcpyDtoH(out, gated, checked(way) * sizeof(float));
	for (unsigned i = 0; !r && i < checked(way); i++)
		bad += out[i] != want;
	printf("%-8s accepted and ran once mapped: %s (wait %.1f us, map %.0f us)\n",
	       way_name[way],
	       r ? err(r) : bad ? "WRONG contents" : "contents right", wait_us,
	       map_us);
	return 0;
}

int main(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--cublas"))
			cublas_lib = argv[i + 1];
		else if (!strcmp(argv[i], "--cudnn"))
			cudnn_lib = argv[i + 1];
	}
	if (cuda_calls_load("enqueue-bench")) {
		printf("enqueue-bench: no CUDA driver here (libcuda.so.1): nothing to measure\n");
		return 0;
	}
	printf("work enqueued into 2 MiB not mapped yet, behind cuStreamWaitValue32 on a word the host sets once it has mapped the range:\n");
	fflush(stdout);
	for (int w = 0; w < NR_WAYS; w++) {
		pid_t pid = fork();
		int status;

		if (pid < 0) {
			perror("enqueue-bench: fork");
			return 1;
		}
		if (!pid) {
			int rc;

			alarm(10);
			rc = run_case(w);
			/* Its line, before an exit that flushes nothing. */
			fflush(stdout);
			_exit(rc);
		}
		if (waitpid(pid, &status, 0) < 0)
			return 1;
		if (WIFSIGNALED(status))
			printf("%-8s %s\n", way_name[w],
			       WTERMSIG(status) == SIGALRM ?
			       "hung: still running after 10 s" :
			       "ended by a signal");
		fflush(stdout);
	}
	return 0;
}

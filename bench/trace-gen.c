// SPDX-License-Identifier: MIT
/*
 * The synthetic training iterations of trace/trace_gen.c at the scale of
 * real models: a table of what each needs with unlimited memory (ops,
 * tensors, unconstrained peak, modelled compute time on an H100) and how
 * long generating it takes. With -o DIR, each trace is also written there
 * as DIR/NAME.trace (tpager-trace(5)) for tpager-sim.
 *
 *   bench/trace-gen [-i ITERATIONS] [-o DIR]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trace/trace_gen.h"

static const struct model {
	const char *name;
	struct tp_trace_gen_opts o;
} models[] = {
	/* ResNet-like after its stem (56x56), 16 blocks, SGD. */
	{ "cnn-b256", { TP_TRACE_GEN_CNN, TP_TRACE_GEN_SGD, 256, 16, 64, 56,
			0, 1000, 1 } },
	{ "cnn-b64", { TP_TRACE_GEN_CNN, TP_TRACE_GEN_SGD, 64, 16, 64, 56,
		       0, 1000, 1 } },
	/* BERT-base-like: 12 layers, 768 wide, 12 heads, Adam. */
	{ "tf-s512-b32", { TP_TRACE_GEN_TRANSFORMER, TP_TRACE_GEN_ADAM, 32,
			   12, 768, 512, 12, 30522, 1 } },
	{ "tf-s128-b32", { TP_TRACE_GEN_TRANSFORMER, TP_TRACE_GEN_ADAM, 32,
			   12, 768, 128, 12, 30522, 1 } },
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	unsigned iterations = 2;
	int c;

	while ((c = getopt(argc, argv, "i:o:")) != -1) {
		switch (c) {
		case 'i':
			iterations = (unsigned)atoi(optarg);
			break;
		case 'o':
			dir = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-i ITERATIONS] [-o DIR]\n",
				argv[0]);
			return 2;
		}
	}
	printf("# H100 roofline costs; the last of %u iterations measured\n",
	       iterations);
	printf("%-12s %8s %9s %10s %10s %11s %8s\n", "model", "ops/it",
	       "tensors", "state GB", "peak GB", "compute ms", "gen ms");
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		struct tp_trace_gen_opts o = models[i].o;
		struct tp_trace_summary s;
		struct tp_trace *t = NULL;
		double t0 = now();
		int rc;

		o.iterations = iterations;
		rc = tp_trace_generate(&o, &t);
		t0 = now() - t0;
		if (rc || tp_trace_peak(t, &s)) {
			fprintf(stderr, "%s: %s\n", models[i].name, strerror(-rc));
			return 1;
		}
		printf("%-12s %8llu %9zu %10.2f %10.2f %11.2f %8.1f\n",
		       models[i].name, (unsigned long long)s.region_ops,
		       t->n_tensors, s.start_bytes / 1e9, s.peak_bytes / 1e9,
		       s.compute_ns / 1e6, t0 * 1e3);
		if (dir) {
			char path[4400];
			FILE *f;

			snprintf(path, sizeof(path), "%.4000s/%s.trace", dir,
				 models[i].name);
			f = fopen(path, "w");
			if (!f || tp_trace_write(t, f) || fclose(f)) {
				fprintf(stderr, "cannot write %s\n", path);
				return 1;
			}
		}
		tp_trace_free(t);
	}
	return 0;
}

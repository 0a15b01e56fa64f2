// SPDX-License-Identifier: MIT
/*
 * The convolutions, in a CUDA build whose toolkit has no cuDNN: they exist
 * so the registry links, and say they are not supported.
 */
#include "config.h"

#include <errno.h>

#include "kernels/kernel.h"

#define NO_DNN(op) \
	int tp_cuda_##op(const struct tp_op_launch *l) \
	{ \
		return -ENOTSUP; \
	}

int tp_cuda_conv_workspace(const struct tp_conv2d_params *p, size_t limit,
			   enum tp_op_math math, size_t *bytes)
{
	*bytes = 0;
	return 0;
}

NO_DNN(conv2d)
NO_DNN(conv2d_bwd)

// SPDX-License-Identifier: MIT
/*
 * The ops cuDNN provides, in a CUDA build whose toolkit has no cuDNN: they
 * exist so the registry links, and say they are not supported.
 */
#include "config.h"

#include <errno.h>

#include "kernels/kernel.h"

#define NO_DNN(op) \
	int tp_cuda_##op(const struct tp_op_launch *l) \
	{ \
		return -ENOTSUP; \
	}

int tp_cuda_conv_workspace(const struct tp_conv2d_params *p, size_t *bytes)
{
	*bytes = 0;
	return 0;
}

NO_DNN(conv2d)
NO_DNN(conv2d_bwd)
NO_DNN(batchnorm)
NO_DNN(batchnorm_bwd)
NO_DNN(relu)
NO_DNN(relu_bwd)
NO_DNN(maxpool)
NO_DNN(maxpool_bwd)
NO_DNN(avgpool)
NO_DNN(avgpool_bwd)
NO_DNN(global_avgpool)
NO_DNN(global_avgpool_bwd)
NO_DNN(softmax)
NO_DNN(softmax_bwd)

/* SPDX-License-Identifier: MIT */
/*
 * Backend selection and what open() promises: auto falls back to host
 * where no GPU is usable, cuda alone reports ENODEV, each backend's
 * granularity and device size, a bad chunk size is refused.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"

int main(void)
{
	struct tp_vmm *vmm, *cuda;
	char why[256];

	plan_tests(13);

	cuda = vt_open("cuda", 64 << 10, NULL, why, sizeof(why));
	if (cuda)
		diag("a CUDA device opens: auto must pick it");
	else
		diag("%s", why);

	vmm = vt_open("auto", 64 << 10, NULL, why, sizeof(why));
	ok(vmm != NULL, "auto opens a backend");
	if (vmm) {
		ok(strcmp(vmm->ops->name, cuda ? "cuda" : "host") == 0,
		   "auto picked %s (cuda only when it opens)", vmm->ops->name);
		tp_vmm_close(vmm);
	} else {
		skip(1, "auto did not open");
	}
	if (cuda) {
		ok(cuda->granularity > 0 && cuda->device_bytes > 0,
		   "cuda: granularity %zu, device %llu bytes", cuda->granularity,
		   (unsigned long long)cuda->device_bytes);
		tp_vmm_close(cuda);
	} else {
		errno = 0;
		ok(tp_vmm_open(&(struct tp_vmm_conf){ .backend = TP_VMM_CUDA }) == NULL &&
		   errno == ENODEV, "cuda without a device: NULL, errno ENODEV");
	}

	vmm = vt_open("host", 64 << 10, NULL, why, sizeof(why));
	ok(vmm && vmm->granularity == 64 << 10 && vmm->device_bytes == 4ULL << 30,
	   "host: chunk 64K, device 4G by default");
	ok(vmm && tp_vmm_has_data(vmm), "host holds data");
	ok(vmm && tp_vmm_stream_handle(vmm, TP_STREAM_COMPUTE) == NULL,
	   "host has no native stream handle");
	ok(vmm && tp_vmm_chunks_take(vmm, NULL, 1) == -EINVAL,
	   "host: taking chunks before a pool exists is -EINVAL");
	ok(vmm && tp_vmm_pool_create(vmm, 0) == -EINVAL,
	   "host: a zero pool budget is -EINVAL");
	tp_vmm_close(vmm);

	vmm = vt_open("host", 2 << 20, "vmm.device_memory=1G", why, sizeof(why));
	ok(vmm && vmm->device_bytes == 1ULL << 30 && vmm->granularity == 2 << 20,
	   "host: vmm.device_memory and a 2M chunk are honoured");
	tp_vmm_close(vmm);

	errno = 0;
	vmm = vt_open("host", 6144, NULL, why, sizeof(why));
	ok(!vmm && errno == EINVAL,
	   "host: a chunk size that is not a page multiple is EINVAL");
	tp_vmm_close(vmm);

	vmm = vt_open("sim", 2 << 20, NULL, why, sizeof(why));
	ok(vmm && vmm->device_bytes == 80ULL << 30 && !tp_vmm_has_data(vmm),
	   "sim: device 80G by default, no data");
	tp_vmm_close(vmm);

	vmm = vt_open("sim", 2 << 20, NULL, why, sizeof(why));
	if (vmm) {
		int ret = tp_vmm_pool_create(vmm, (5ULL << 20) + 1);

		ok(!ret && vmm->nr_chunks == 2,
		   "a 5M+1 budget of 2M chunks is 2 chunks");
		ok(tp_vmm_pool_create(vmm, 8 << 20) == -EEXIST,
		   "a second pool is -EEXIST");
	} else {
		skip(2, "%s", why);
	}
	tp_vmm_close(vmm);
	return exit_status();
}

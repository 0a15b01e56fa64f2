/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend against the toolkit's stub libcuda.so, which exports
 * every driver entry point but has no driver behind it: each name the
 * backend looks up must resolve (no "lacks" message), and open must then
 * fail cleanly with ENODEV at cuInit. A library that is not there is
 * ENODEV too, and auto falls back to host.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "tests/tap.h"
#include "tests/vmm-util.h"
#include "vmm/backend_cuda.h"

static char logged[8192];

static void capture(enum tp_log_level level, const char *msg, void *priv)
{
	size_t n = strlen(logged);

	snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

int main(void)
{
	struct tp_vmm *vmm;
	char why[256];

	if (access(TP_CUDA_STUB, R_OK))
		plan_skip_all("no stub library at %s", TP_CUDA_STUB);
	plan_tests(6);
	tp_set_log(capture, NULL);
	tp_log_set_level(TP_LOG_DEBUG);

	tp_vmm_cuda_library = TP_CUDA_STUB;
	errno = 0;
	vmm = vt_open("cuda", 2 << 20, NULL, why, sizeof(why));
	ok(!vmm && errno == ENODEV, "stub driver: open fails with ENODEV");
	ok(!strstr(logged, "lacks"), "every entry point resolves in %s",
	   TP_CUDA_STUB);
	ok(strstr(logged, "no device") != NULL,
	   "the failure is at cuInit/device discovery");
	if (strstr(logged, "lacks") || !strstr(logged, "no device"))
		diag("log: %s", logged);
	tp_vmm_close(vmm);

	logged[0] = 0;
	tp_vmm_cuda_library = "/nonexistent/libcuda.so.1";
	errno = 0;
	vmm = vt_open("cuda", 2 << 20, NULL, why, sizeof(why));
	ok(!vmm && errno == ENODEV && strstr(logged, "cannot load"),
	   "no driver library: ENODEV, said so");
	tp_vmm_close(vmm);

	vmm = vt_open("auto", 2 << 20, NULL, why, sizeof(why));
	ok(vmm && strcmp(vmm->ops->name, "host") == 0,
	   "auto without a driver opens host");
	ok(vmm && tp_vmm_pool_create(vmm, 4 << 20) == 0,
	   "and it works");
	tp_vmm_close(vmm);
	tp_set_log(NULL, NULL);
	return exit_status();
}

/* SPDX-License-Identifier: MIT */
/*
 * Touching a page that is reserved but not mapped faults, before the first
 * map and again after unmap; so does a mapped page without access. Each
 * touch is made in a forked child, which must die of SIGSEGV.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"

#define PER_BACKEND 9

/* 0 when a write and a read of @p complete, else the signal that killed. */
static int touch(volatile unsigned char *p)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* The expected fault must not leave a core file behind. */
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		signal(SIGSEGV, SIG_DFL);
		p[0] = 0x5a;
		_exit(p[0] == 0x5a ? 0 : 3);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFSIGNALED(st))
		return WTERMSIG(st);
	return WEXITSTATUS(st) ? 1000 + WEXITSTATUS(st) : 0;
}

static void body(struct tp_vmm *vmm, const char *name)
{
	size_t g = vmm->granularity;
	struct tp_chunk *c[2];
	uintptr_t va;
	int sig;

	if (strcmp(name, "host") != 0) {
		skip(PER_BACKEND, "%s: device faults are not observable from the host",
		     name);
		return;
	}
	ok_rc(tp_vmm_reserve(vmm, 4 * g, &va), "reserve 4 chunks of VA");
	sig = touch((unsigned char *)va + g);
	ok(sig == SIGSEGV, "a reserved, never-mapped page faults (got %d)", sig);
	ok_rc(tp_vmm_chunks_take(vmm, c, 2), "take 2 chunks");
	ok_rc(tp_vmm_map(vmm, va + g, c, 2), "map pages 1-2");
	sig = touch((unsigned char *)va + 2 * g + g - 1);
	ok(sig == 0, "a mapped page can be written and read (got %d)", sig);
	sig = touch((unsigned char *)va + 3 * g);
	ok(sig == SIGSEGV, "the page after the run still faults (got %d)", sig);
	ok_rc(vmm->ops->set_access(vmm, va + g, c, 1, TP_PROT_NONE) ?:
	      ((sig = touch((unsigned char *)va + g)) == SIGSEGV ? 0 : -1),
	      "a mapped page without access faults");
	ok_rc(tp_vmm_unmap(vmm, va + g, c, 2), "unmap pages 1-2");
	sig = touch((unsigned char *)va + 2 * g);
	ok(sig == SIGSEGV, "an unmapped page faults again (got %d)", sig);
	tp_vmm_chunks_put(vmm, c, 2);
	tp_vmm_release(vmm, va, 4 * g);
}

int main(void)
{
	static const char *const backends[] = { "host", "cuda", NULL };

	return vt_run(backends, PER_BACKEND, 64 << 10, NULL, 4, body);
}

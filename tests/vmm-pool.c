/* SPDX-License-Identifier: MIT */
/*
 * The chunked pool (vmm.mapping = chunks): handles are created lazily up
 * to the budget and then recycled; a take beyond the budget is -ENOMEM
 * and changes nothing. The extent pool has tests/vmm-extents.c.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/vmm-util.h"

#define BUDGET 5
#define PER_BACKEND 13

static void body(struct tp_vmm *vmm, const char *name)
{
	struct tp_chunk *a[BUDGET], *b[BUDGET], *c[BUDGET + 1];
	uint64_t handles[BUDGET], creates;
	size_t i, j;
	bool same;

	ok(vmm->nr_chunks == BUDGET && tp_vmm_chunks_free(vmm) == BUDGET &&
	   vmm->stats.chunks_created == 0,
	   "%s: %d chunks free, none created yet", name, BUDGET);
	ok_rc(tp_vmm_chunks_take(vmm, a, 3), "%s: take 3", name);
	ok(vmm->stats.chunks_created == 3 && tp_vmm_chunks_free(vmm) == 2,
	   "%s: 3 handles created lazily, 2 free", name);

	memset(c, 0, sizeof(c));
	ok(tp_vmm_chunks_take(vmm, c, 3) == -ENOMEM,
	   "%s: taking 3 with 2 left is -ENOMEM", name);
	same = c[0] == NULL && c[1] == NULL && c[2] == NULL;
	ok(same && tp_vmm_chunks_free(vmm) == 2 &&
	   vmm->stats.chunks_created == 3,
	   "%s: ... and the pool is unchanged", name);

	ok_rc(tp_vmm_chunks_take(vmm, b, 2), "%s: take the last 2", name);
	ok(tp_vmm_chunks_take(vmm, c, 1) == -ENOMEM &&
	   tp_vmm_chunks_free(vmm) == 0, "%s: an empty pool is -ENOMEM", name);

	/* Every chunk distinct, by pointer and by handle. */
	for (i = 0; i < 3; i++)
		handles[i] = a[i]->handle;
	for (i = 0; i < 2; i++)
		handles[3 + i] = b[i]->handle;
	same = false;
	for (i = 0; i < BUDGET; i++)
		for (j = i + 1; j < BUDGET; j++)
			same |= handles[i] == handles[j];
	ok(!same, "%s: %d distinct handles", name, BUDGET);

	tp_vmm_chunks_put(vmm, a, 3);
	tp_vmm_chunks_put(vmm, b, 2);
	ok(tp_vmm_chunks_free(vmm) == BUDGET, "%s: all back", name);

	creates = vmm->stats.call[TP_CALL_CHUNK_CREATE].calls;
	ok_rc(tp_vmm_chunks_take(vmm, c, BUDGET), "%s: take all again", name);
	ok(vmm->stats.call[TP_CALL_CHUNK_CREATE].calls == creates &&
	   creates == BUDGET && vmm->stats.chunks_created == BUDGET,
	   "%s: recycled: still %d creations", name, BUDGET);
	same = true;
	for (i = 0; i < BUDGET; i++) {
		bool found = false;

		for (j = 0; j < BUDGET; j++)
			found |= c[i]->handle == handles[j];
		same &= found;
	}
	ok(same, "%s: the same handles come back", name);
	tp_vmm_chunks_put(vmm, c, BUDGET);
	ok(tp_vmm_chunks_take(vmm, c, BUDGET + 1) == -ENOMEM &&
	   tp_vmm_chunks_free(vmm) == BUDGET,
	   "%s: more than the budget at once is -ENOMEM, nothing taken", name);
}

int main(void)
{
	static const char *const backends[] = { "host", "sim", "cuda", NULL };

	return vt_run(backends, PER_BACKEND, 64 << 10, "vmm.mapping=chunks",
		      BUDGET, body);
}

/* SPDX-License-Identifier: MIT */
/*
 * Concurrency: while the caller creates, writes, offloads, prefetches,
 * acquires and frees tensors (the backend's copy threads moving pages
 * under it), two reader threads resolve addresses through
 * tp_tensor_lookup. A reader holds an RCU read-side section across its
 * lookup and its check, so a tensor it finds must still be intact: the
 * address inside its range, its id one it knows. Runs under TSan or
 * helgrind; TPAGER_TEST_OPS sets the length.
 */
#include <pthread.h>
#include <stdatomic.h>

#include <urcu-bp.h>

#include "config.h"
#include "ctx/ctx.h"
#include "pager/pager_int.h"
#include "tests/pager-util.h"

#define NR_SLOTS 64
#define NR_READERS 2

struct shared {
	_Atomic uintptr_t va[NR_SLOTS];		/* published addresses */
	_Atomic size_t bytes[NR_SLOTS];
	atomic_bool stop;
	atomic_ulong lookups, found, bad;
};

static struct shared sh;
static struct tp_ctx *ctx;

static void *reader(void *arg)
{
	uint64_t rng = (uintptr_t)arg;

	while (!atomic_load(&sh.stop)) {
		unsigned i = pt_rand(&rng) % NR_SLOTS;
		uintptr_t va = atomic_load(&sh.va[i]);
		size_t bytes = atomic_load(&sh.bytes[i]);
		uintptr_t addr;
		struct tp_tensor *t;

		if (!va || !bytes)
			continue;
		addr = va + pt_rand(&rng) % bytes;
		rcu_read_lock();
		t = tp_tensor_lookup(ctx, (void *)addr);
		if (t) {
			/* Read under RCU: the struct cannot be freed yet. */
			uintptr_t tva = CMM_LOAD_SHARED(t->va);
			size_t tb = CMM_LOAD_SHARED(t->bytes);

			atomic_fetch_add(&sh.found, 1);
			if (addr < tva || addr >= tva + tb)
				atomic_fetch_add(&sh.bad, 1);
		}
		rcu_read_unlock();
		atomic_fetch_add(&sh.lookups, 1);
	}
	return NULL;
}

int main(void)
{
	const char *env = getenv("TPAGER_TEST_OPS");
	unsigned long nops = env ? strtoul(env, NULL, 0) : 4000;
	struct tp_tensor *slot[NR_SLOTS] = { 0 };
	uint64_t seed[NR_SLOTS] = { 0 };
	pthread_t th[NR_READERS];
	unsigned long data_bad = 0, reads = 0;
	uint64_t rng = pt_seed();
	struct tp_stats st;
	size_t chunk;

	pt_probe();
	plan_tests(6);
	ctx = pt_ctx("pager.budget=16C,pager.host_budget=256C");
	chunk = pt_chunk(ctx);
	for (int i = 0; i < NR_READERS; i++)
		pthread_create(&th[i], NULL, reader, (void *)(uintptr_t)(i + 1));

	for (unsigned long n = 0; n < nops; n++) {
		unsigned i = pt_rand(&rng) % NR_SLOTS, r = pt_rand(&rng) % 10;
		struct tp_tensor *t = slot[i];

		if (!t) {
			size_t bytes = 1 + pt_rand(&rng) % (3 * chunk);
			unsigned char *buf = malloc(bytes);

			t = tp_tensor_create(ctx, bytes, 0);
			if (!t) {
				free(buf);
				continue;
			}
			seed[i] = pt_rand(&rng);
			pt_fill(buf, bytes, seed[i]);
			if (tp_tensor_write(ctx, t, 0, buf, bytes))
				data_bad++;
			free(buf);
			slot[i] = t;
			atomic_store(&sh.bytes[i], bytes);
			atomic_store(&sh.va[i], t->va);
			continue;
		}
		if (r < 3) {
			tp_tensor_offload(ctx, t);
		} else if (r < 6) {
			tp_tensor_prefetch(ctx, t);
		} else if (r < 9) {
			size_t bytes = tp_tensor_size(t);
			unsigned char *a = malloc(bytes), *b = malloc(bytes);

			pt_fill(a, bytes, seed[i]);
			if (tp_tensor_read(ctx, t, 0, b, bytes) || memcmp(a, b, bytes))
				data_bad++;
			reads++;
			free(a);
			free(b);
		} else {
			atomic_store(&sh.va[i], 0);
			if (tp_tensor_free(ctx, t))
				data_bad++;
			slot[i] = NULL;
		}
	}
	atomic_store(&sh.stop, true);
	for (int i = 0; i < NR_READERS; i++)
		pthread_join(th[i], NULL);
	tp_stats_get(ctx, &st);
	diag("%lu lookups, %lu found; offloads %" PRIu64 ", prefetches %" PRIu64
	     " (hits %" PRIu64 ", late %" PRIu64 ")", atomic_load(&sh.lookups),
	     atomic_load(&sh.found), st.offloads, st.prefetch_issued,
	     st.prefetch_hits, st.prefetch_late);
	ok(atomic_load(&sh.lookups) > 0 && atomic_load(&sh.found) > 0,
	   "readers ran and found tensors");
	ok(atomic_load(&sh.bad) == 0, "every tensor found contains its address");
	ok(data_bad == 0 && reads > nops / 5, "%lu reads, all byte for byte", reads);
	ok(st.offloads > 0 && st.prefetch_issued > 0, "copy threads moved pages");
	for (int i = 0; i < NR_SLOTS; i++)
		if (slot[i])
			tp_tensor_free(ctx, slot[i]);
	tp_stats_get(ctx, &st);
	ok(st.tensors_live == 0, "all freed");
	ok(st.phys_peak <= st.budget_bytes, "peak within budget");
	tp_ctx_destroy(ctx);
	return exit_status();
}

/* SPDX-License-Identifier: MIT */
/*
 * Randomised stress: 10,000 operations (create, write a seeded pattern,
 * read, acquire whole or a range, hold pins, offload, prefetch, evict,
 * free) on up to 200 tensors under a budget of 16 chunks and a host swap
 * of 64. A shadow copy of every tensor is kept; every byte read back must
 * equal it, a failed call must leave the tensor as it was, and the
 * physical peak must stay within the budget. TPAGER_TEST_SEED repeats a
 * run; TPAGER_TEST_OPS changes its length.
 */
#include "tests/dev-copy.h"
#include "tests/pager-util.h"

#define NR_SLOTS	200
#define BUDGET_CHUNKS	16
#define SWAP_CHUNKS	64
#define MAX_HELD	2

struct slot {
	struct tp_tensor *t;
	size_t bytes;
	unsigned char *shadow;
	bool valid;		/* every byte written at least once */
	unsigned held;		/* acquisitions we hold */
	bool small;
};

static struct slot slots[NR_SLOTS];
static struct tp_ctx *ctx;
static size_t chunk;
static unsigned long bad, checks, enomem, enospc, nfree;

__attribute__((format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (bad++ < 10)
		diag("FAIL: %s", msg);
}

/* Compare bytes [off, off+len) of slot @i read through the API. */
static int check_range(unsigned i, size_t off, size_t len)
{
	struct slot *s = &slots[i];
	unsigned char *buf = malloc(len);
	int ret;

	ret = tp_tensor_read(ctx, s->t, off, buf, len);
	if (ret == -ENOMEM) {
		enomem++;
	} else if (ret) {
		fail("read slot %u: %s", i, tp_strerror(ret));
	} else {
		checks++;
		if (memcmp(buf, s->shadow + off, len))
			fail("slot %u bytes [%zu, +%zu) differ from the shadow",
			     i, off, len);
	}
	free(buf);
	return ret;
}

static size_t random_size(uint64_t *rng, bool *small)
{
	uint64_t r = pt_rand(rng);

	*small = r % 10 < 3;
	if (*small)
		return 1 + (r >> 8) % (chunk / 8 - 1);
	return chunk / 4 + (r >> 8) % (2 * chunk);
}

static void op_create(unsigned i, uint64_t *rng)
{
	struct slot *s = &slots[i];
	bool small;
	size_t bytes = random_size(rng, &small);

	s->t = tp_tensor_create(ctx, bytes, TP_UNCOMPUTABLE);
	if (!s->t) {
		if (errno == ENOMEM)
			enomem++;
		else
			fail("create %zu: %s", bytes, strerror(errno));
		return;
	}
	s->bytes = bytes;
	s->small = small;
	s->shadow = calloc(1, bytes);
	s->valid = false;
	s->held = 0;
}

static void random_range(struct slot *s, uint64_t *rng, size_t *off,
			 size_t *len)
{
	*off = pt_rand(rng) % s->bytes;
	*len = 1 + pt_rand(rng) % (s->bytes - *off);
}

static void op_write(unsigned i, uint64_t *rng)
{
	struct slot *s = &slots[i];
	size_t off = 0, len = s->bytes;
	unsigned char *buf;
	int ret;

	if (s->valid)
		random_range(s, rng, &off, &len);
	buf = malloc(len);
	pt_fill(buf, len, pt_rand(rng));
	ret = tp_tensor_write(ctx, s->t, off, buf, len);
	if (!ret) {
		memcpy(s->shadow + off, buf, len);
		s->valid = true;
	} else if (ret == -ENOMEM) {
		enomem++;
	} else {
		fail("write slot %u: %s", i, tp_strerror(ret));
	}
	free(buf);
}

static void op_acquire(unsigned i, uint64_t *rng)
{
	struct slot *s = &slots[i];
	bool whole = pt_rand(rng) & 1, hold;
	size_t off = 0, len = s->bytes;
	unsigned char *p;
	int held = 0;

	for (unsigned j = 0; j < NR_SLOTS; j++)
		held += slots[j].held ? 1 : 0;
	hold = whole && !s->held && held < MAX_HELD && pt_rand(rng) % 4 == 0;
	if (!whole)
		random_range(s, rng, &off, &len);
	p = tp_tensor_acquire_range(ctx, s->t, off, len, TP_RW);
	if (!p) {
		if (errno == ENOMEM)
			enomem++;
		else
			fail("acquire slot %u: %s", i, strerror(errno));
		return;
	}
	if (s->valid) {
		unsigned char *buf = malloc(len);

		/* Read and write at the address, as an op would. */
		checks++;
		if (!buf || dev_load(ctx, buf, p, len))
			fail("slot %u: load [%zu, +%zu)", i, off, len);
		else if (memcmp(buf, s->shadow + off, len))
			fail("slot %u acquired [%zu, +%zu) differs", i, off, len);
		if (buf && (pt_rand(rng) & 1)) {
			pt_fill(buf, len, pt_rand(rng));
			if (dev_store(ctx, p, buf, len))
				fail("slot %u: store [%zu, +%zu)", i, off, len);
			else
				memcpy(s->shadow + off, buf, len);
		}
		free(buf);
	}
	if (hold) {
		s->held++;
		return;
	}
	if (tp_tensor_release_range(ctx, s->t, off, len))
		fail("release slot %u", i);
}

static void op_release_held(void)
{
	for (unsigned j = 0; j < NR_SLOTS; j++) {
		if (!slots[j].held)
			continue;
		if (tp_tensor_release(ctx, slots[j].t))
			fail("release held slot %u", j);
		slots[j].held--;
		return;
	}
}

static void op_offload(unsigned i)
{
	struct slot *s = &slots[i];
	int ret = tp_tensor_offload(ctx, s->t);

	if (s->small && ret != -EPERM)
		fail("offload of slab slot %u: %d, expected -EPERM", i, ret);
	else if (!s->small && s->held && ret != -EBUSY)
		fail("offload of pinned slot %u: %d, expected -EBUSY", i, ret);
	else if (!s->small && !s->held && ret && ret != -ENOSPC)
		fail("offload slot %u: %s", i, tp_strerror(ret));
	if (ret == -ENOSPC)
		enospc++;
}

static void op_free(unsigned i)
{
	struct slot *s = &slots[i];
	int ret = tp_tensor_free(ctx, s->t);

	if (s->held) {
		if (ret != -EBUSY)
			fail("free of pinned slot %u: %d", i, ret);
		return;
	}
	if (ret) {
		fail("free slot %u: %s", i, tp_strerror(ret));
		return;
	}
	free(s->shadow);
	memset(s, 0, sizeof(*s));
	nfree++;
}

static void check_all(void)
{
	for (unsigned i = 0; i < NR_SLOTS; i++)
		if (slots[i].t && slots[i].valid)
			check_range(i, 0, slots[i].bytes);
}

int main(void)
{
	const char *env = getenv("TPAGER_TEST_OPS");
	unsigned long nops = env ? strtoul(env, NULL, 0) : 10000;
	uint64_t rng = pt_seed();
	unsigned long final_bad = 0;
	struct tp_stats st;
	size_t budget;

	pt_probe();
	plan_tests(8);
	ctx = pt_ctx("pager.budget=%dC,pager.host_budget=%dC",
		     BUDGET_CHUNKS, SWAP_CHUNKS);
	chunk = pt_chunk(ctx);
	tp_stats_get(ctx, &st);
	budget = st.budget_bytes;

	for (unsigned long n = 0; n < nops; n++) {
		unsigned i = pt_rand(&rng) % NR_SLOTS;
		unsigned r = pt_rand(&rng) % 100;
		unsigned live = 0;

		for (unsigned j = 0; j < NR_SLOTS; j++)
			live += slots[j].t != NULL;
		if (!slots[i].t) {
			/* Creating half of the time keeps ~100 tensors live. */
			if (r % 2 == 0)
				op_create(i, &rng);
			continue;
		}
		if (r < 15)
			op_write(i, &rng);
		else if (r < 30)
			op_acquire(i, &rng);
		else if (r < 45 && slots[i].valid)
			check_range(i, 0, slots[i].bytes);
		else if (r < 55)
			op_offload(i);
		else if (r < 63) {
			int ret = tp_tensor_prefetch(ctx, slots[i].t);

			if (ret && ret != -ENOMEM)
				fail("prefetch slot %u: %s", i, tp_strerror(ret));
		} else if (r < 66) {
			int ret = tp_tensor_evict(ctx, slots[i].t);

			if (ret != -EPERM)
				fail("evict of uncomputable slot %u: %d", i, ret);
		} else if (r < 70) {
			op_release_held();
		} else if (r < 70 + live / 8) {
			op_free(i);
		} else {
			op_write(i, &rng);
		}
		if (n % 1000 == 999) {
			tp_stats_get(ctx, &st);
			if (st.phys_peak > budget)
				fail("physical peak %" PRIu64 " over budget %zu",
				     st.phys_peak, budget);
			check_all();
		}
	}
	while (slots[0].t && slots[0].held)
		op_release_held();
	for (unsigned j = 0; j < NR_SLOTS; j++)
		while (slots[j].held)
			op_release_held();

	/* Every tensor is read back whole; room is made by freeing. */
	for (unsigned i = 0; i < NR_SLOTS; i++) {
		if (!slots[i].t)
			continue;
		if (slots[i].valid) {
			unsigned long before = bad;

			for (unsigned j = 0; check_range(i, 0, slots[i].bytes) == -ENOMEM &&
			     j < NR_SLOTS; j++)
				if (j != i && slots[j].t)
					op_free(j);
			final_bad += bad - before;
		}
		op_free(i);
	}
	tp_stats_get(ctx, &st);
	diag("%lu checks, %lu -ENOMEM, %lu -ENOSPC, %lu frees; offloads %" PRIu64
	     " reloads %" PRIu64 " prefetches %" PRIu64 " (hits %" PRIu64
	     ", late %" PRIu64 ", wasted %" PRIu64 ") cache hits %" PRIu64,
	     checks, enomem, enospc, nfree, st.offloads, st.reloads,
	     st.prefetch_issued, st.prefetch_hits, st.prefetch_late,
	     st.prefetch_wasted, st.range_cache_hits);
	ok(bad == 0, "%lu failures in %lu operations", bad, nops);
	ok(final_bad == 0, "final read-back of every tensor matches");
	ok(checks > nops / 20, "%lu byte-for-byte checks ran", checks);
	ok(st.offloads > 0 && st.reloads > 0, "pages left and came back");
	ok(enospc > 0 || SWAP_CHUNKS > 1000, "host swap filled up (%lu)", enospc);
	ok(st.phys_peak <= budget, "physical peak %" PRIu64 " <= budget %zu",
	   st.phys_peak, budget);
	ok(st.tensors_live == 0, "no tensor left");
	ok(st.host_bytes == 0, "host swap empty (%" PRIu64 ")", st.host_bytes);
	tp_ctx_destroy(ctx);
	return exit_status();
}

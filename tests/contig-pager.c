/* SPDX-License-Identifier: MIT */
/*
 * vmm.mode = contiguous under the pager: an allocation that fails with
 * enough free chunks in total reports fragmentation, the same sequence in
 * chunked mode succeeds with none; victims leave until one run fits; data
 * written, offloaded and reloaded under pressure, whole and in part, reads
 * back byte for byte, and the chunk runs each tensor keeps follow its pages.
 */
#include "config.h"

#include "tests/dev-copy.h"
#include "tests/pager-util.h"
/* White box: the chunks behind a tensor's pages. */
#include "pager/pager_int.h"

#define NT 8
#define ROUNDS 400
#define RT 12

/* The first chunk index of @t when its pages are one run, else -1. */
static long one_run(const struct tp_tensor *t)
{
	for (size_t i = 0; i < t->nr_pages; i++)
		if (!t->pages[i].chunk ||
		    t->pages[i].chunk->index != t->pages[0].chunk->index + i)
			return -1;
	return (long)t->pages[0].chunk->index;
}

/* The runs tp_pager_chunk_runs() gives, up to RUNS_MAX of them. */
#define RUNS_MAX 16
struct runs_seen {
	size_t n;
	size_t start[RUNS_MAX], len[RUNS_MAX];
};

static void note_run(void *arg, const struct tp_tensor *t, size_t start,
		     size_t len)
{
	struct runs_seen *r = arg;

	(void)t;
	if (r->n < RUNS_MAX) {
		r->start[r->n] = start;
		r->len[r->n] = len;
	}
	r->n++;
}

/*
 * Whether tp_pager_chunk_runs(), which keeps its answer with the tensor,
 * says what @t's pages say now.
 */
static bool runs_agree(struct tp_tensor *t)
{
	struct runs_seen r = { 0 };
	size_t n = 0;

	tp_pager_chunk_runs(t, note_run, &r);
	for (size_t i = 0; i < t->nr_pages;) {
		const struct tp_page *p = &t->pages[i];
		size_t j = i + 1;

		if (!p->chunk || p->state != TP_PAGE_RESIDENT) {
			i++;
			continue;
		}
		while (j < t->nr_pages && t->pages[j].chunk &&
		       t->pages[j].state == TP_PAGE_RESIDENT &&
		       t->pages[j].chunk->index == p->chunk->index + (j - i))
			j++;
		if (n >= RUNS_MAX || r.start[n] != p->chunk->index ||
		    r.len[n] != j - i)
			return false;
		n++;
		i = j;
	}
	return n == r.n;
}

static uint64_t frag(struct tp_ctx *ctx, uint64_t *phys)
{
	struct tp_stats st;

	tp_stats_get(ctx, &st);
	if (phys)
		*phys = st.phys_bytes;
	return st.fragmentation_ppm;
}

/* Eight one-chunk tensors held; 1, 3 and 5 freed: 3 chunks free, apart. */
static void holes(const char *mode)
{
	struct tp_ctx *ctx = pt_ctx("vmm.mode=%s,pager.budget=8C,pager.range_cache=0,"
				    "pager.slab_fraction=0,pager.high_watermark=100,"
				    "pager.host_budget=64C", mode);
	size_t c = pt_chunk(ctx);
	bool contig = !strcmp(mode, "contiguous");
	struct tp_tensor *t[NT], *big;
	unsigned char *buf = malloc(3 * c), *back = malloc(3 * c);
	uint64_t phys = 0;
	void *p;
	int err;

	for (int i = 0; i < NT; i++) {
		t[i] = tp_tensor_create(ctx, c, TP_UNCOMPUTABLE);
		if (!t[i] || !tp_tensor_acquire(ctx, t[i], TP_WRITE))
			bail_out("%s: tensor %d", mode, i);
	}
	for (int i = 1; i < 6; i += 2) {
		tp_tensor_release(ctx, t[i]);
		tp_tensor_free(ctx, t[i]);
		t[i] = NULL;
	}
	big = tp_tensor_create(ctx, 3 * c, TP_UNCOMPUTABLE);
	p = tp_tensor_acquire(ctx, big, TP_WRITE);
	err = errno;
	if (contig) {
		ok(!p && err == ENOMEM,
		   "contiguous: 3 chunks with 3 free in 3 holes and the rest pinned: ENOMEM");
		ok(frag(ctx, &phys) == 375000 && phys == 5 * c,
		   "contiguous: fragmentation 3/8 = 375000 ppm, 5 chunks still mapped (%" PRIu64 " ppm)",
		   frag(ctx, NULL));
		/* Unpinned, tensor 2 can leave: its neighbours 1 and 3 are free. */
		pt_fill(buf, c, 2);
		p = tp_tensor_acquire(ctx, t[2], TP_RW);
		if (!p || dev_store(ctx, p, buf, c))
			bail_out("contiguous: write tensor 2");
		tp_tensor_release(ctx, t[2]);
		tp_tensor_release(ctx, t[2]);
		p = tp_tensor_acquire(ctx, big, TP_WRITE);
		ok(p != NULL, "contiguous: with tensor 2 unpinned, room is made for the run");
		ok(p && tp_tensor_lookup(ctx, p) == big && one_run(big) == 1,
		   "contiguous: one run of chunks [1,4), at the tensor's own address");
		if (p) {
			pt_fill(buf + c, 3 * c - c, 9);
			if (dev_store(ctx, p, buf + c, 2 * c))
				bail_out("contiguous: write the run");
			tp_tensor_release(ctx, big);
		}
		/* Tensor 2 comes back once big leaves too. */
		tp_tensor_free(ctx, big);
		big = NULL;
		ok(tp_tensor_read(ctx, t[2], 0, back, c) == 0 &&
		   !memcmp(back, buf, c),
		   "contiguous: tensor 2 was offloaded and reads back byte for byte");
	} else {
		ok(p != NULL, "chunked: the same 3 chunks are mapped from the 3 holes");
		ok(frag(ctx, &phys) == 0 && phys == 8 * c,
		   "chunked: fragmentation 0, 8 chunks mapped");
		if (p)
			tp_tensor_release(ctx, big);
		tp_tensor_free(ctx, big);
		big = NULL;
	}
	for (int i = 0; i < NT; i++) {
		if (!t[i])
			continue;
		if (i != 2)
			tp_tensor_release(ctx, t[i]);
		tp_tensor_free(ctx, t[i]);
	}
	free(buf);
	free(back);
	tp_ctx_destroy(ctx);
}

/* Tensors of 1..4 chunks, 2.6x the budget, written, read, offloaded. */
static void round_trip(uint64_t seed)
{
	struct tp_ctx *ctx = pt_ctx("vmm.mode=contiguous,pager.budget=8C,"
				    "pager.host_budget=64C,pager.slab_fraction=0");
	size_t c = pt_chunk(ctx), size[RT];
	unsigned char *ref[RT], *buf = malloc(4 * c);
	struct tp_tensor *t[RT];
	size_t bad = 0, reads = 0, split = 0, runs_wrong = 0;
	struct tp_stats st;
	uint64_t s = seed;

	for (int i = 0; i < RT; i++) {
		/* Not whole chunks: the last page is partial. */
		size[i] = (1 + pt_rand(&s) % 4) * c - (pt_rand(&s) % 64) * 8;
		ref[i] = malloc(size[i]);
		pt_fill(ref[i], size[i], seed + i);
		t[i] = tp_tensor_create(ctx, size[i], TP_UNCOMPUTABLE);
		if (!t[i] || tp_tensor_write(ctx, t[i], 0, ref[i], size[i]))
			bail_out("tensor %d: %s", i, tp_last_error(ctx));
	}
	for (int r = 0; r < ROUNDS && !bad; r++) {
		int i = (int)(pt_rand(&s) % RT);
		size_t off = pt_rand(&s) % size[i];
		size_t len = 1 + pt_rand(&s) % (size[i] - off);
		int ret;

		switch (pt_rand(&s) % 4) {
		case 0:		/* part of it rewritten: the rest must stay */
			pt_fill(ref[i] + off, len, seed ^ (uint64_t)r);
			ret = tp_tensor_write(ctx, t[i], off, ref[i] + off, len);
			if (ret) {
				diag("round %d: write %d: %d", r, i, ret);
				bad++;
			}
			break;
		case 1:
			ret = tp_tensor_offload(ctx, t[i]);
			if (ret && ret != -ENOSPC) {
				diag("round %d: offload %d: %d", r, i, ret);
				bad++;
			}
			break;
		default:
			ret = tp_tensor_read(ctx, t[i], off, buf, len);
			reads++;
			if (ret || memcmp(buf, ref[i] + off, len)) {
				diag("round %d: tensor %d [%zu, +%zu): %d", r,
				     i, off, len, ret);
				bad++;
			}
			/* Read whole or in part, it was backed whole. */
			if (t[i]->resident_pages + t[i]->inflight_pages !=
			    t[i]->nr_pages || one_run(t[i]) < 0)
				split++;
		}
		for (int k = 0; k < RT; k++)
			runs_wrong += !runs_agree(t[k]);
	}
	for (int i = 0; i < RT && !bad; i++) {
		if (tp_tensor_read(ctx, t[i], 0, buf, size[i]) ||
		    memcmp(buf, ref[i], size[i]))
			bad++;
	}
	tp_stats_get(ctx, &st);
	ok(!bad, "contiguous: %zu reads of %d tensors 2-3x the budget agree byte for byte",
	   reads, RT);
	ok(!split, "contiguous: after each read the tensor is one run of chunks (%zu not)",
	   split);
	ok(st.offloads > 0 && st.reloads > 0 && st.phys_peak <= 8 * c,
	   "contiguous: under pressure, %" PRIu64 " offloads, %" PRIu64
	   " reloads, peak %" PRIu64 " <= budget", st.offloads, st.reloads,
	   st.phys_peak);
	ok(!runs_wrong, "contiguous: the chunk runs kept with each tensor are its pages' after every round (%zu not)",
	   runs_wrong);
	diag("fragmentation %" PRIu64 " ppm", st.fragmentation_ppm);
	for (int i = 0; i < RT; i++) {
		tp_tensor_free(ctx, t[i]);
		free(ref[i]);
	}
	free(buf);
	tp_ctx_destroy(ctx);
}

int main(void)
{
	uint64_t seed;

	pt_skip_unless_contiguous_backend();
	pt_probe();
	seed = pt_seed();
	plan_tests(11);
	holes("contiguous");
	holes("chunked");
	round_trip(seed);
	return exit_status();
}

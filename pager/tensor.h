/* SPDX-License-Identifier: MIT */
/*
 * A tensor: a reserved virtual range and its pages. The fields under
 * "shared" are read by policy/ and lineage/ (never written, except their
 * own slots); everything else is the pager's.
 */
#ifndef TP_PAGER_TENSOR_H
#define TP_PAGER_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urcu/list.h>

struct tp_chunk_run;
struct tp_event;
struct tp_page;
struct tp_lnodes;
struct tp_slab;
struct tp_cached_range;

struct tp_tensor {
	/* --- shared --------------------------------------------------- */
	uintptr_t va;			/* device address (see addr_shown) */
	size_t bytes;			/* size given at creation */
	size_t nr_pages;		/* chunks covering bytes (1 in a slab) */
	unsigned flags;			/* TP_* flags */
	uint64_t id;			/* unique, increasing */
	uint64_t last_access_ns;	/* tp_vmm_now_ns() at last acquire */
	uint64_t access_seq;		/* global acquire counter at last acquire */
	size_t resident_pages;		/* pages RESIDENT now */
	size_t cached_pages;		/* of which host swap holds a copy
					 * (the swap cache): an offload of
					 * them copies nothing */
	unsigned pins;			/* acquisitions outstanding */
	bool computable;		/* produced by an op (lineage sets it) */
	/* policy/'s slot: index in its candidate structure, or private data */
	struct {
		int64_t idx;
		void *p;
		double key;
		/* read by the pager: back from the pool's right end
		 * (vmm.mode = contiguous; Coop §3.4 cheap tensors) */
		bool right;
		/* a value the policy keeps while a stamp holds */
		uint64_t memo_stamp;
		int64_t memo;
	} pol;
	/* lineage/'s slot: the record that produced it and which output */
	struct {
		void *rec;
		unsigned out;
		void *p;
		/* c_r's walk over evicted ancestors saw it in walk number
		 * mark (lineage/cost.c) */
		uint64_t mark;
	} lin;

	/* --- the pager's ---------------------------------------------- */
	struct tp_page *pages;		/* nr_pages of them; NULL in a slab */
	struct tp_lnodes *lk;		/* address lookup nodes; RCU-freed */
	struct tp_slab *slab;		/* slab holding it, or NULL */
	/*
	 * Ordered reuse: an event after the last work issued on its memory
	 * (a reference), the fence its pages leave behind.
	 */
	struct tp_event *last_use;
	unsigned slab_slot;
	size_t evicted_pages;		/* pages EVICTED now */
	size_t pinned_pages;		/* pages pinned and RESIDENT now
					 * (tp_pager_pinned_pages()) */
	size_t *pinned_sum;		/* the pager's sum of pinned_pages;
					 * NULL in a slab */
	size_t inflight_pages;		/* pages OFFLOADING or RELOADING */
	/*
	 * tp_pager_chunk_runs()'s last answer, while runs_valid: a page
	 * that takes or gives back a chunk, or becomes or stops being
	 * RESIDENT, clears it (tp_page_set(), tp_page_set_chunk()).
	 */
	struct tp_chunk_run *runs;
	size_t nr_runs, runs_cap;
	bool runs_valid;
	unsigned refs;			/* user's + lineage's references */
	unsigned rows_held;		/* ops in parts reading its rows:
					 * offload only (tp_pager_hold_rows) */
	bool dead;			/* the user freed it */
	bool unreserved;		/* memory gone with its range: no va
					 * (dead, or moved: range cache) */
	bool addr_shown;		/* the user was given its address
					 * (tp_tensor_acquire): it stays */
	struct tp_cached_range *own_range; /* moved: where its bytes are,
					 * until taken (pager.move_evicted) */
	bool candidate;			/* offered to the victim ops */
	bool prefetched;		/* reloaded by prefetch, not yet used */
	bool pol_prefetch;		/* owes the victim ops a prefetch_done */
	bool on_inflight;		/* linked on the pager's in-flight list */
	struct cds_list_head link;	/* the pager's list of tensors */
	struct cds_list_head inflight;	/* copies to poll */
	struct cds_list_head lru;	/* the default victim ops' order */
	struct cds_list_head cand;	/* the pager's candidates */
};

/*
 * @d pages of @t pinned and resident more (or fewer): counted for the
 * tensor and for its pager, whose room is then known without a walk.
 */
static inline void tp_tensor_pinned_add(struct tp_tensor *t, long d)
{
	t->pinned_pages += d;
	*t->pinned_sum += d;
}


#endif /* TP_PAGER_TENSOR_H */

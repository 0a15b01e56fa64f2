/* SPDX-License-Identifier: MIT */
/*
 * The victim index: the candidates and their filter keys, giving the one
 * with the largest value at a given time.
 *
 * Candidates sit in an array of slots (slot = t->pol.idx); a removal
 * leaves a hole that the next insertion fills, and the array is packed
 * when holes outnumber candidates, so sampling stays cheap. Over the slots
 * is a kinetic tournament: each internal node holds the winner of its two
 * children at the index's time and the time at which the loser's line
 * overtakes the winner's (its certificate). Advancing to a later time
 * replays only the nodes whose certificate failed, so the root is the exact
 * maximum at that time (up to rounding of the products), with every update
 * one leaf-to-root path. When the crossings and updates between queries
 * cost more than looking at every candidate, the index answers by a
 * linear scan instead (same answer, same ties) until that changes.
 */
#ifndef TP_POLICY_INDEX_H
#define TP_POLICY_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/filter.h"

struct tp_pol_index;

/*
 * How exact queries are answered: the tournament, a linear scan of the
 * slots, or whichever has been cheaper lately (the default).
 */
enum tp_pol_index_mode {
	TP_INDEX_AUTO,
	TP_INDEX_TREE,
	TP_INDEX_SCAN,
};

/** tp_pol_index_create() - an empty index; NULL with errno (ENOMEM). */
struct tp_pol_index *tp_pol_index_create(void);
void tp_pol_index_destroy(struct tp_pol_index *idx);

/**
 * tp_pol_index_add() - insert @t with @key, or re-key it if present.
 * Sets t->pol.idx. Return 0 or -ENOMEM (index unchanged).
 */
int tp_pol_index_add(struct tp_pol_index *idx, struct tp_tensor *t,
		     const struct tp_pol_key *key);

/** tp_pol_index_del() - remove @t; false if it was not in the index. */
bool tp_pol_index_del(struct tp_pol_index *idx, struct tp_tensor *t);

/** tp_pol_index_has() - whether @t is in the index. */
bool tp_pol_index_has(const struct tp_pol_index *idx,
		      const struct tp_tensor *t);

/**
 * tp_pol_index_top() - the candidate with the largest value at @now (the
 * filter's smallest score), or NULL when empty. @now earlier than a time
 * already seen is taken as that time (the clock is monotonic). Ties go to
 * the steeper line (it wins from then on).
 */
struct tp_tensor *tp_pol_index_top(struct tp_pol_index *idx, uint64_t now);

/* Candidates in the index. */
size_t tp_pol_index_count(const struct tp_pol_index *idx);
/* Slots in use: [0, slots) holds every candidate and fewer holes. */
size_t tp_pol_index_slots(const struct tp_pol_index *idx);
/* Slot @i's tensor (NULL: a hole) and its key, for sampling and re-keying. */
struct tp_tensor *tp_pol_index_at(const struct tp_pol_index *idx, size_t i);
const struct tp_pol_key *tp_pol_index_key(const struct tp_pol_index *idx,
					  size_t i);
/* Replace slot @i's key. */
void tp_pol_index_set_key(struct tp_pol_index *idx, size_t i,
			  const struct tp_pol_key *key);

/**
 * tp_pol_index_set_tree() - whether exact queries will come (exact
 * search) or not (sampling needs only the slots, so the tournament is not
 * kept). Turning the tournament on rebuilds it in O(n).
 */
void tp_pol_index_set_tree(struct tp_pol_index *idx, bool on);

/* Force the tournament or the scan (tests, benchmarks), or let it choose. */
void tp_pol_index_set_mode(struct tp_pol_index *idx,
			   enum tp_pol_index_mode mode);

/* Rebuild the tournament after many keys changed (O(n)). */
void tp_pol_index_rebuild(struct tp_pol_index *idx);

#endif /* TP_POLICY_INDEX_H */

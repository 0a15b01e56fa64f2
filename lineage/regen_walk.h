/* SPDX-License-Identifier: MIT */
/*
 * A regeneration walk's state, shared by the walk (regen.c) and its
 * replays (regen_replay.c). Internal to lineage.
 */
#ifndef TP_LINEAGE_REGEN_WALK_H
#define TP_LINEAGE_REGEN_WALK_H

#include <stdbool.h>
#include <stddef.h>

#include "lineage/lineage_int.h"

/* Regenerations nested through the pager (see input_mode()). */
#define TP_LIN_MAX_NESTING	4

struct frame {
	struct tp_tensor *t;
	size_t pin_base;	/* its pins start here on the pin stack */
};

struct regen {
	struct tp_lineage *lin;
	struct frame *f;
	size_t nf, cap_f;
	struct tp_tensor **pin;
	size_t np, cap_p;
	/* pins let go that leave by offload only until the walk ends */
	struct tp_tensor **kept;
	size_t nk, cap_k;
	/* one launch's arrays, sized for the widest record met */
	void **addr;
	size_t *bytes;
	struct tp_tensor **held;	/* acquired for this launch */
	bool *scratch;
	unsigned cap_io;
};

int tp_regen_grow(void **p, size_t *cap, size_t need, size_t elem);
void tp_regen_release_whole(struct tp_lineage *lin, struct tp_tensor *t);
/* Report that @t cannot be regenerated, and why: -TP_ENOREGEN. */
int tp_regen_cannot(struct tp_lineage *lin, struct tp_tensor *t,
		    const char *why);
/*
 * Replay @rec once, its inputs resident. Return 0, 1 when input *@stale
 * was found EVICTED (a frame must regenerate it first), or -errno.
 */
int tp_regen_replay(struct regen *r, struct tp_lin_rec *rec,
		    struct tp_tensor **stale);

#endif /* TP_LINEAGE_REGEN_WALK_H */

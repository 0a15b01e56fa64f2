/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <string.h>

#include "vmm/sim_copies.h"

void tp_sim_copies_note(struct tp_sim_copies *c, uintptr_t va, size_t len,
			uint64_t done)
{
	if (c->n == SIM_COPIES) {
		/* The oldest goes: the array is in the order noted. */
		memmove(&c->live[0], &c->live[1],
			(SIM_COPIES - 1) * sizeof(c->live[0]));
		c->n--;
	}
	c->live[c->n].va = va;
	c->live[c->n].end = va + len;
	c->live[c->n].done = done;
	c->n++;
}

bool tp_sim_copies_in_flight(struct tp_sim_copies *c, uintptr_t va,
			     uintptr_t end, uint64_t now, uint64_t floor)
{
	bool hit = false;
	unsigned i = 0, keep = 0;

	for (; i < c->n; i++) {
		if (c->live[i].done <= floor)
			continue;	/* done for good */
		hit |= c->live[i].va < end && va < c->live[i].end &&
		       c->live[i].done > now;
		c->live[keep++] = c->live[i];
	}
	c->n = keep;
	return hit;
}

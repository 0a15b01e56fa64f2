/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "vmm/sim_copies.h"

void tp_sim_copies_note(struct tp_sim_copies *c, uintptr_t va, size_t len,
			uint64_t done)
{
	unsigned i = c->head++ % SIM_COPIES;

	c->ring[i].va = va;
	c->ring[i].end = va + len;
	c->ring[i].done = done;
}

bool tp_sim_copies_in_flight(const struct tp_sim_copies *c, uintptr_t va,
			     uintptr_t end, uint64_t now)
{
	for (unsigned i = 0; i < SIM_COPIES; i++)
		if (c->ring[i].end && c->ring[i].va < end &&
		    va < c->ring[i].end && c->ring[i].done > now)
			return true;
	return false;
}

/* SPDX-License-Identifier: MIT */
/*
 * The sim backend's copies in flight over device addresses, kept so that
 * an unmap of any of them before the copy is done is caught: on a GPU it
 * pulls the memory from under the copy engine, and the device faults.
 * Copies every clock has passed are dropped as they are met; of more
 * than SIM_COPIES in flight, the oldest is not seen (a missed fault,
 * never a false one). The caller locks.
 */
#ifndef TP_VMM_SIM_COPIES_H
#define TP_VMM_SIM_COPIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_COPIES	512

struct tp_sim_copies {
	struct {
		uintptr_t va, end;
		uint64_t done;		/* its stream's clock at its end */
	} live[SIM_COPIES];
	unsigned n;
};

/* A copy over [@va, @va + @len), done at @done. */
void tp_sim_copies_note(struct tp_sim_copies *c, uintptr_t va, size_t len,
			uint64_t done);
/*
 * Whether a copy over any of [@va, @end) is still in flight at @now;
 * those done by @floor (before which no unmap can come: the clocks never
 * go back) are dropped.
 */
bool tp_sim_copies_in_flight(struct tp_sim_copies *c, uintptr_t va,
			     uintptr_t end, uint64_t now, uint64_t floor);

#endif /* TP_VMM_SIM_COPIES_H */

/* SPDX-License-Identifier: MIT */
/* tpager.h includes what it needs: it comes first, alone. */
#include "tpager.h"
#include "tpager.h"	/* and twice */

#include <string.h>

#include "tap.h"

int main(void)
{
	struct tp_stats st;

	plan_tests(3);
	memset(&st, 0, sizeof(st));
	ok(st.phys_bytes == 0, "struct tp_stats is complete");
	ok(strlen(tp_strerror(-TP_ENOREGEN)) > 0, "tp_strerror knows TP_ENOREGEN");
	ok(strcmp(tp_strerror(-12), tp_strerror(12)) == 0,
	   "tp_strerror takes either sign");
	return exit_status();
}

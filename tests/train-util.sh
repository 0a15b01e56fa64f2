# SPDX-License-Identifier: MIT
# Sourced by the tpager-train tests: TAP points and reading its --json.

n=0
# ok STATUS DESC: one TAP point, passing when STATUS is 0.
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

# field OBJECT KEY < json: KEY's value inside the object OBJECT ("" for top)
field() {
	if [ -n "$1" ]; then
		sed -n "s/.*\"$1\":{\([^}]*\)}.*/\1/p"
	else
		cat
	fi | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"
}

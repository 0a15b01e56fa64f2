#!/bin/sh
# SPDX-License-Identifier: MIT
# The EXAMPLE of every man3 page is a whole program: it compiles against
# include/tpager.h with warnings as errors, links against the built
# libtpager.so unless a function it calls is not in the library yet, and
# runs and exits 0 on the host backend. An example checks what it shows:
# run again with each of its library calls failing in turn (see
# tests/man-example-faults.c), it must exit non-zero every time, without
# a crash.
top_srcdir=${top_srcdir:-.}
top_builddir=$(cd "${top_builddir:-.}" && pwd)
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-man-examples.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

pages=
for f in "$top_srcdir"/man/*.3; do
	# A link is another function's name for a page listed already.
	[ -L "$f" ] || pages="$pages $f"
done
set -- $pages
echo "1..$(($# * 4))"
n=0
lib="$top_builddir/.libs/libtpager.so"

# The functions whose failure the examples are run under.
faults="$top_srcdir/tests/man-example-faults.c"
wrap=$(sed -n -e 's/^WRAP_INT(\(tp_[a-z_]*\),.*/\1/p' \
	      -e 's/^WRAP_PTR([^,]*, \(tp_[a-z_]*\),.*/\1/p' "$faults")
wrap_ldflags=$(for s in $wrap; do printf ' -Wl,--wrap=%s' "$s"; done)
$CC -std=c11 -Wall -Wextra -Werror $SANITIZE_CFLAGS -I"$top_srcdir/include" \
	-c "$faults" -o "$tmp/faults.o" > "$tmp/faults.err" 2>&1 ||
	{ echo "Bail out! $faults does not compile"; sed 's/^/# /' "$tmp/faults.err"; exit 1; }

# Run ./$1 in $tmp on the host backend, no configuration but the page's.
run_example() {
	(cd "$tmp" && TPAGER_SYSCONF=/nonexistent TPAGER_CONF= TPAGER_OPTS= \
	 timeout 60 "./$1")
}
for f; do
	name=$(basename "$f" .3)
	# The lines between .EX and .EE of the EXAMPLE section, unescaped.
	awk '/^\.SH /{ ex = ($0 == ".SH EXAMPLE") } ex && /^\.EE/{ on = 0 }
	     ex && on { print } ex && /^\.EX/{ on = 1 }' "$f" |
		sed -e 's/\\e/\\/g' -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" \
		    -e 's/\\(dq/"/g' -e 's/^\\&//' > "$tmp/$name.c"
	n=$((n + 1))
	if [ ! -s "$tmp/$name.c" ]; then
		echo "not ok $n - $name: no EXAMPLE"
		n=$((n + 1)); echo "not ok $n - $name: nothing to link"
		n=$((n + 1)); echo "not ok $n - $name: nothing to run"
		n=$((n + 1)); echo "not ok $n - $name: nothing to fail"
		continue
	fi
	if $CC -std=c11 -Wall -Wextra -Werror $SANITIZE_CFLAGS \
	       -I"$top_srcdir/include" -c "$tmp/$name.c" -o "$tmp/$name.o" \
	       > "$tmp/$name.err" 2>&1; then
		if nm -u "$tmp/$name.o" | awk '{ print $2 }' | grep -qx "$name"; then
			echo "ok $n - $name: EXAMPLE compiles and calls $name"
		else
			echo "not ok $n - $name: EXAMPLE compiles but never calls $name"
		fi
	else
		echo "not ok $n - $name: EXAMPLE compiles"
		sed 's/^/# /' "$tmp/$name.err"
		n=$((n + 1)); echo "ok $n - $name: link # SKIP does not compile"
		n=$((n + 1)); echo "ok $n - $name: run # SKIP does not compile"
		n=$((n + 1)); echo "ok $n - $name: faults # SKIP does not compile"
		continue
	fi
	n=$((n + 1))
	if [ ! -f "$lib" ]; then
		echo "ok $n - $name: link # SKIP no $lib"
		n=$((n + 1)); echo "ok $n - $name: run # SKIP no $lib"
		n=$((n + 1)); echo "ok $n - $name: faults # SKIP no $lib"
		continue
	fi
	missing=
	for s in $(nm -u "$tmp/$name.o" | awk '$2 ~ /^tp_/ { print $2 }'); do
		nm -D --defined-only "$lib" | awk '{ print $3 }' |
			sed 's/@.*//' | grep -qx "$s" || missing="$missing $s"
	done
	if [ -n "$missing" ]; then
		echo "ok $n - $name: link # SKIP not in libtpager yet:$missing"
		n=$((n + 1)); echo "ok $n - $name: run # SKIP not linked"
		n=$((n + 1)); echo "ok $n - $name: faults # SKIP not linked"
		continue
	elif $CC $SANITIZE_CFLAGS "$tmp/$name.o" "$tmp/faults.o" $wrap_ldflags \
		-L"$top_builddir/.libs" -ltpager -Wl,-rpath,"$top_builddir/.libs" \
		-o "$tmp/$name" > "$tmp/$name.err" 2>&1; then
		echo "ok $n - $name: EXAMPLE links"
	else
		echo "not ok $n - $name: EXAMPLE links"
		sed 's/^/# /' "$tmp/$name.err"
		n=$((n + 1)); echo "ok $n - $name: run # SKIP not linked"
		n=$((n + 1)); echo "ok $n - $name: faults # SKIP not linked"
		continue
	fi
	# What the page shows works: the program runs on the host backend.
	n=$((n + 1))
	: > "$tmp/$name.calls"
	if TP_EXAMPLE_CALLS="$tmp/$name.calls" run_example "$name" \
	    > "$tmp/$name.out" 2>&1; then
		echo "ok $n - $name: EXAMPLE runs and exits 0"
	else
		echo "not ok $n - $name: EXAMPLE runs and exits 0"
	fi
	sed 's/^/#   /' "$tmp/$name.out" | head -n 20

	# Each call made above fails in turn: the example must notice.
	n=$((n + 1))
	unchecked= crashed= runs=0
	for call in $(sort "$tmp/$name.calls" | uniq -c | awk '{ print $2 ":" $1 }'); do
		fn=${call%:*}
		k=0
		while [ $k -lt "${call##*:}" ]; do
			k=$((k + 1)) runs=$((runs + 1))
			TP_EXAMPLE_FAULT="$fn:$k" run_example "$name" \
				> "$tmp/$name.fault" 2>&1
			rc=$?
			if [ $rc = 0 ]; then
				unchecked="$unchecked $fn:$k"
			elif [ $rc -ge 124 ] ||
			     grep -q 'Sanitizer\|runtime error' "$tmp/$name.fault"; then
				crashed="$crashed $fn:$k"
				sed 's/^/#   /' "$tmp/$name.fault" | head -n 20
			fi
		done
	done
	if [ $runs = 0 ]; then
		echo "ok $n - $name: no library call to fail # SKIP"
	elif [ -z "$unchecked$crashed" ]; then
		echo "ok $n - $name: EXAMPLE exits non-zero when any of its $runs calls fails"
	else
		echo "not ok $n - $name: EXAMPLE exits non-zero when any of its $runs calls fails" \
		     "(exit 0:${unchecked:- none}; crashed:${crashed:- none})"
	fi
done

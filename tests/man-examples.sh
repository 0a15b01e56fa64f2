#!/bin/sh
# SPDX-License-Identifier: MIT
# The EXAMPLE of every man3 page is a whole program: it compiles against
# include/tpager.h with warnings as errors, and links against the built
# libtpager.so unless a function it calls is not in the library yet.
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
echo "1..$(($# * 3))"
n=0
lib="$top_builddir/.libs/libtpager.so"
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
		continue
	fi
	n=$((n + 1))
	if [ ! -f "$lib" ]; then
		echo "ok $n - $name: link # SKIP no $lib"
		n=$((n + 1)); echo "ok $n - $name: run # SKIP no $lib"
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
		continue
	elif $CC $SANITIZE_CFLAGS "$tmp/$name.o" -L"$top_builddir/.libs" \
		-ltpager -Wl,-rpath,"$top_builddir/.libs" -o "$tmp/$name" \
		> "$tmp/$name.err" 2>&1; then
		echo "ok $n - $name: EXAMPLE links"
	else
		echo "not ok $n - $name: EXAMPLE links"
		sed 's/^/# /' "$tmp/$name.err"
		n=$((n + 1)); echo "ok $n - $name: run # SKIP not linked"
		continue
	fi
	# What the page shows works: the program runs on the host backend.
	n=$((n + 1))
	if (cd "$tmp" && TPAGER_SYSCONF=/nonexistent TPAGER_CONF= TPAGER_OPTS= \
	    timeout 60 "./$name") > "$tmp/$name.out" 2>&1; then
		echo "ok $n - $name: EXAMPLE runs and exits 0"
	else
		echo "not ok $n - $name: EXAMPLE runs and exits 0"
	fi
	sed 's/^/#   /' "$tmp/$name.out" | head -n 20
done

#!/bin/sh
# SPDX-License-Identifier: MIT
# configure.ac expands without a warning from autoconf -Wall, which is
# what ./bootstrap runs: a fresh clone bootstraps quietly. Skipped where
# the tree was not bootstrapped here or autoconf is not installed.
top_srcdir=${top_srcdir:-.}
AUTOM4TE=${AUTOM4TE:-autom4te}

echo "1..1"
if ! command -v "$AUTOM4TE" > /dev/null 2>&1; then
	echo "ok 1 - configure.ac: no autoconf warning # SKIP no $AUTOM4TE"
	exit 0
fi
if [ ! -f "$top_srcdir/aclocal.m4" ]; then
	echo "ok 1 - configure.ac: no autoconf warning # SKIP no aclocal.m4"
	exit 0
fi
# No cache and no output: nothing is written into the source tree.
out=$(cd "$top_srcdir" && "$AUTOM4TE" --language=autoconf --no-cache \
	-Wall --output=/dev/null configure.ac 2>&1)
rc=$?
if [ $rc = 0 ] && [ -z "$out" ]; then
	echo "ok 1 - configure.ac: no autoconf warning"
else
	echo "not ok 1 - configure.ac: no autoconf warning (exit $rc)"
	echo "$out" | grep -v 'is expanded from\|the top level' | sed 's/^/# /'
fi

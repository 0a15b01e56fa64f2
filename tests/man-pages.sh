#!/bin/sh
# SPDX-License-Identifier: MIT
# Every man page renders without a warning (mandoc -Tlint, groff -ww), has
# the sections its kind needs, is installed (dist_man_MANS), and refers
# only to tpager pages that exist. A function that shares another's page
# has a symbolic link to it, which man -l reads in the tree and make
# install copies whole; a .so request would resolve against man's working
# directory, which the tree's layout does not match.
top_srcdir=${top_srcdir:-.}
MANDOC=${MANDOC:-$(command -v mandoc)}
GROFF=${GROFF:-$(command -v groff)}
man="$top_srcdir/man"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-man-pages.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

pages=$(cd "$man" && ls *.[1-8])
count=$(echo "$pages" | wc -w)
echo "1..$((count * 4 + 6))"

# Listed in dist_man_MANS of some directory's Makefile.inc.
installed() { cat "$top_srcdir"/*/Makefile.inc | grep -Fq "man/$1"; }

# The sections a page of each kind has, in order.
want_sections() {
	case $1 in
	*.3) echo "NAME SYNOPSIS DESCRIPTION RETURN_VALUE ERRORS EXAMPLE SEE_ALSO" ;;
	*.1) echo "NAME SYNOPSIS DESCRIPTION OPTIONS EXIT_STATUS SEE_ALSO" ;;
	tpager.7) echo "NAME SYNOPSIS DESCRIPTION PAGE_STATES LAYERS CONTROL_NAMESPACE SEE_ALSO" ;;
	*) echo "NAME SYNOPSIS DESCRIPTION SEE_ALSO" ;;
	esac
}

for p in $pages; do
	f="$man/$p"
	if [ -L "$f" ]; then
		target=$(readlink "$f")
		ok $([ "${target#*/}" = "$target" ] && [ -f "$man/$target" ] &&
		     [ ! -L "$man/$target" ] && [ "${target##*.}" = "${p##*.}" ] &&
		     echo 0 || echo 1) \
			"$p: links to a page of its section beside it ($target)"
		grep -q "^\.BI* .*${p%.3}(" "$man/$target" 2>/dev/null &&
			ok 0 "$p: its function is in the SYNOPSIS of $target" ||
			ok 1 "$p: its function is in the SYNOPSIS of $target"
		sed -n '/^\.SH NAME/{n;p;}' "$man/$target" | grep -q "\\b${p%.3}\\b" &&
			ok 0 "$p: named in the NAME line of $target" ||
			ok 1 "$p: named in the NAME line of $target"
		installed "$p" &&
			ok 0 "$p: installed" || ok 1 "$p: installed (dist_man_MANS)"
		continue
	fi
	# lint
	if [ -n "$MANDOC" ]; then
		"$MANDOC" -Tlint -Wwarning "$f" > "$tmp/lint" 2>&1
		ok $([ -s "$tmp/lint" ] && echo 1 || echo 0) "$p: mandoc -Tlint clean"
		sed 's/^/# /' "$tmp/lint"
	else
		skip "$p: mandoc -Tlint clean" "no mandoc"
	fi
	if [ -n "$GROFF" ]; then
		"$GROFF" -man -ww -z "$f" > "$tmp/groff" 2>&1
		ok $([ -s "$tmp/groff" ] && echo 1 || echo 0) "$p: groff -ww renders without a warning"
		sed 's/^/# /' "$tmp/groff"
	else
		skip "$p: groff -ww clean" "no groff"
	fi
	got=$(sed -n 's/^\.SH "*\([^"]*\)"*$/\1/p' "$f" | tr ' ' _ | tr '\n' ' ')
	want=$(want_sections "$p")
	missing=
	for s in $want; do
		echo " $got " | grep -q " $s " || missing="$missing $s"
	done
	# and in the order given
	order=$(for s in $got; do echo " $want " | grep -q " $s " && echo "$s"; done | tr '\n' ' ')
	ok $([ -z "$missing" ] && [ "$order" = "$want " ] && echo 0 || echo 1) \
		"$p: sections $want${missing:+ (missing:$missing)}"
	installed "$p" &&
		ok 0 "$p: installed" || ok 1 "$p: installed (dist_man_MANS)"
done

# References to tpager's own pages lead somewhere.
dangling=
for r in $(cat "$man"/*.[1-8] | sed -n 's/^\.BR \(tp[a-z_.\\-]*\) (\([1-8]\).*/\1.\2/p' | sed 's/\\-/-/g' | sort -u); do
	[ -f "$man/$r" ] || dangling="$dangling $r"
done
ok $([ -z "$dangling" ] && echo 0 || echo 1) "every tp*/tpager* page referred to exists${dangling:+ (missing:$dangling)}"

# Readable in the tree, as README says: no page sources another.
sourcing=$(cd "$man" && grep -l '^\.so ' $pages 2>/dev/null | tr '\n' ' ')
ok $([ -z "$sourcing" ] && echo 0 || echo 1) \
	"no page is a .so request${sourcing:+ (.so: ${sourcing% })}"
if command -v man > /dev/null 2>&1; then
	bad=
	for p in $pages; do
		(cd "$top_srcdir" && MANWIDTH=80 MAN_KEEP_FORMATTING= \
			man -l -P cat "man/$p") > "$tmp/out" 2> "$tmp/err"
		{ [ -s "$tmp/err" ] || ! grep -q '^NAME' "$tmp/out"; } &&
			bad="$bad $p"
	done
	ok $([ -z "$bad" ] && echo 0 || echo 1) \
		"man -l man/PAGE reads every page in the tree${bad:+ (not:$bad)}"
else
	skip "man -l man/PAGE reads every page in the tree" "no man"
fi

for t in tpager-train.1 tpager-sim.1 tpagerctl.1; do
	ok $([ -f "$man/$t" ] && echo 0 || echo 1) "$t exists"
done

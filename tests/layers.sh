#!/bin/sh
# SPDX-License-Identifier: MIT
# The layers hold: every #include "..." of every source file stays within
# what the table in tpager(7), LAYERS, allows its directory. A header that
# another directory must see anyway names it, with the reason, in a comment
# line "Layer exception: DIR[, DIR...]: reason".
#
# The checker then runs on copies of the tree with one rule broken each
# (a forbidden include, a private header, a cycle in the table, a stale
# exception) and must fail naming what was broken. Every source file over
# 600 lines says at its top why it is one file; a copy with a file grown
# past that must fail too.
top_srcdir=${top_srcdir:-.}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# The source files under $1, one path relative to it a line.
list_files()
{
	(cd "$1" && for d in */; do
		d=${d%/}
		[ -f "$d/config.status" ] && continue
		find "$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
			-o -name '*.cuh' -o -name '*.def' \
			-o -name '*.inc' \) ! -name Makefile.inc \
			-print 2>/dev/null
	done) | LC_ALL=C sort
}

# check ROOT WORK: write to WORK/out one line "ok - what" or "not ok -
# what" per check of the tree at ROOT, each followed by "# ..." details.
check()
{
	root=$1 w=$2
	mkdir -p "$w"

	# The table: "DIR DEP..." between the marker comments; \- for none.
	sed -n '/^\.\\" layers: begin/,/^\.\\" layers: end/p' \
		"$root/man/tpager.7" |
		grep -v '^\.' | sed 's/\\-//g; s/^ *//; s/ *$//' |
		awk 'NF' > "$w/table"

	list_files "$root" > "$w/files"

	# Every quoted include: "FILE LINE HEADER", the header as the
	# compiler finds it: beside the including file first, else from the
	# top (-I).
	(cd "$root" && grep -n \
		'^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
		$(cat "$w/files") /dev/null) |
		sed 's/^\([^:]*\):\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2 \3/' |
		(cd "$root" && awk '{
			dir = $1; sub(/\/[^\/]*$/, "", dir)
			h = $3
			if ((getline junk < (dir "/" h)) >= 0) {
				close(dir "/" h); h = dir "/" h
			}
			print $1, $2, h
		}') > "$w/includes"

	# Exceptions: "HEADER DIR REASON-WORDS" per directory a header names.
	(cd "$root" && grep -H 'Layer exception:' $(cat "$w/files") \
		/dev/null) |
		sed 's/^\([^:]*\):.*Layer exception:[[:space:]]*\([^:]*\):\(.*\)$/\1|\2|\3/' |
		awk -F'|' '{ n = split($2, d, /[ ,]+/); r = $3
			     gsub(/^[ \t]+/, "", r)
			     for (i = 1; i <= n; i++)
				     if (d[i] != "") print $1, d[i], r }' \
		> "$w/exceptions"

	# The table has no cycle: tsort names one if it does.
	loop=$(awk '{ for (i = 2; i <= NF; i++) if ($i != "*") print $i, $1 }' \
		"$w/table" | tsort 2>&1 >/dev/null | grep -v '^tsort: -:' |
		sed 's/^tsort: //' | tr "\n" " ")

	awk -v w="$w" -v loop="$loop" '
function layer(path) {
	return index(path, "/") ? substr(path, 1, index(path, "/") - 1) : ""
}
function private(h) { return h ~ /_(int|priv)\.h$/ }
function ok(cond, what) { print (cond ? "ok - " : "not ok - ") what }
BEGIN {
	while ((getline l < (w "/table")) > 0) {
		n = split(l, f, /[ \t]+/)
		order[++nt] = f[1]
		table[f[1]] = 1
		for (i = 2; i <= n; i++)
			allow[f[1], f[i]] = 1
		if (f[2] == "*")
			any[f[1]] = 1
	}
	while ((getline l < (w "/files")) > 0)
		srcdir[layer(l)] = 1
	while ((getline l < (w "/exceptions")) > 0) {
		split(l, f, " ")
		reason = l
		sub(/^[^ ]+ [^ ]+ ?/, "", reason)
		nexc++
		exc_h[nexc] = f[1]; exc_d[nexc] = f[2]; exc_r[nexc] = reason
		exc[f[1], f[2]] = nexc
	}
	# The table is there and names directories that exist.
	bad = ""
	for (d in table) {
		if (!(d in srcdir) && d != "include")
			bad = bad " " d
		for (k in allow) {
			split(k, p, SUBSEP)
			if (p[1] == d && p[2] != "*" && !(p[2] in table))
				bad = bad " " d "->" p[2]
		}
	}
	ok(nt > 0 && bad == "", "the table of tpager(7) LAYERS names " nt \
	   " directories" (bad != "" ? "; unknown:" bad : ""))
	# Every directory that holds sources has a line.
	bad = ""
	for (d in srcdir)
		if (!(d in table))
			bad = bad " " d
	ok(bad == "", "every directory holding sources is in the table" \
	   (bad != "" ? "; missing:" bad : ""))
	# The exceptions name directories and give a reason.
	bad = ""
	for (i = 1; i <= nexc; i++)
		if (!(exc_d[i] in table) || split(exc_r[i], rw, " ") < 2)
			bad = bad " " exc_h[i] "(" exc_d[i] ")"
	ok(bad == "", nexc + 0 " layer exceptions, each naming a directory" \
	   " and its reason" (bad != "" ? "; without:" bad : ""))

	ok(loop == "", "the table has no cycle" (loop != "" ? ": " loop : ""))

	# The includes, by the directory of the including file.
	while ((getline l < (w "/includes")) > 0) {
		split(l, f, " ")
		file = f[1]; line = f[2]; h = f[3]
		from = layer(file)
		if (h == "config.h")
			continue
		to = (h == "tpager.h") ? "include" : layer(h)
		nincl[from]++
		why = ""
		if (to == "")
			why = "a header of no directory"
		else if (to == from || to == "include" || any[from])
			why = ""
		else if (!allow[from, to])
			why = from " may not include " to "/"
		if (why == "" && to != from && !any[from] && private(h))
			why = "another directory'"'"'s private header"
		if (why != "" && ((h, from) in exc)) {
			used[exc[h, from]] = 1
			why = ""
		}
		if (why != "")
			viol[from] = viol[from] "\n# " file ":" line \
				     ": includes " h ": " why
	}
	for (i = 1; i <= nt; i++) {
		d = order[i]
		if (d == "include")
			continue
		ok(viol[d] == "", d "/: " nincl[d] + 0 \
		   " includes within its layer" viol[d])
	}
	# No exception is left that nothing uses.
	bad = ""
	for (i = 1; i <= nexc; i++)
		if (!used[i])
			bad = bad " " exc_h[i] "(" exc_d[i] ")"
	ok(bad == "", "every layer exception is used" \
	   (bad != "" ? "; stale:" bad : ""))
}' </dev/null > "$w/out"
}

# A copy of the tree's sources and table in $1.
copy_tree()
{
	mkdir -p "$1/man"
	cp "$top_srcdir/man/tpager.7" "$1/man/"
	(cd "$top_srcdir" && tar cf - $(cat "$tmp/real/files")) |
		(cd "$1" && tar xf -)
}

# expect NAME PATTERN: the run in $tmp/NAME failed, and one of its "not
# ok" lines or their details matches PATTERN (grep -E).
expect()
{
	if grep -q '^not ok' "$tmp/$1/out" &&
	   awk '/^not ok/ { on = 1; print; next }
		/^ok/ { on = 0 } on' "$tmp/$1/out" | grep -Eq -- "$2"; then
		echo "ok - $3"
	else
		echo "not ok - $3"
		sed 's/^/# /' "$tmp/$1/out"
	fi
}

# lengths ROOT: "ok - ..." when every source file of ROOT over 600 lines
# says at its top why it is one file ("past the usual length"), else
# "not ok - ..." naming those that do not.
lengths()
{
	bad=$(cd "$1" && while read -r f; do
		n=$(wc -l < "$f" | tr -d ' ')
		[ "$n" -gt 600 ] || continue
		sed -n '1,80p' "$f" | grep -q 'past the usual length' ||
			printf ' %s (%s lines)' "$f" "$n"
	done < "$tmp/real/files")
	if [ -z "$bad" ]; then
		echo "ok - every source file over 600 lines says why at its top"
	else
		echo "not ok - every source file over 600 lines says why at its top; not:$bad"
	fi
}

check "$top_srcdir" "$tmp/real"
cp "$tmp/real/out" "$tmp/results"
lengths "$top_srcdir" >> "$tmp/results"

# A forbidden include: the vmm, at the bottom, includes the policy.
copy_tree "$tmp/t1"
printf '#include "policy/policy.h"\n' >> "$tmp/t1/vmm/vmm.c"
n=$(wc -l < "$tmp/t1/vmm/vmm.c" | tr -d ' ')
check "$tmp/t1" "$tmp/r1"
expect r1 "^# vmm/vmm.c:$n: includes policy/policy.h: vmm may not include policy/" \
	"the checker fails on vmm/vmm.c:$n including policy/policy.h, and names it" \
	>> "$tmp/results"

# Another directory's private header, from a directory that may see it.
copy_tree "$tmp/t2"
printf '#include "pager/pager_int.h"\n' >> "$tmp/t2/lineage/lineage.c"
check "$tmp/t2" "$tmp/r2"
expect r2 "^# lineage/lineage.c:[0-9]+: includes pager/pager_int.h: another directory's private header" \
	"the checker fails on lineage/lineage.c including pager/pager_int.h" \
	>> "$tmp/results"

# A cycle in the table: vmm allowed to see pager, which sees vmm.
copy_tree "$tmp/t3"
sed 's/^vmm\( .*\)*$/vmm pager/' "$tmp/t3/man/tpager.7" > "$tmp/t3/tpager.7" &&
	mv "$tmp/t3/tpager.7" "$tmp/t3/man/tpager.7"
check "$tmp/t3" "$tmp/r3"
expect r3 "^not ok - the table has no cycle: .*(pager|vmm)" \
	"the checker fails on a table where vmm and pager see each other" \
	>> "$tmp/results"

# An exception nothing needs: vmm names pager as allowed to include it.
copy_tree "$tmp/t4"
printf '/* Layer exception: pager: a reason never needed */\n' \
	>> "$tmp/t4/vmm/vmm.h"
check "$tmp/t4" "$tmp/r4"
expect r4 "^not ok - every layer exception is used; stale:.* vmm/vmm.h\(pager\)" \
	"the checker fails on a stale exception in vmm/vmm.h, and names it" \
	>> "$tmp/results"

# A file grown past 600 lines without a word on why.
copy_tree "$tmp/t5"
yes '/* filler */' | head -n 700 >> "$tmp/t5/vmm/va_arena.c"
lengths "$tmp/t5" > "$tmp/r5"
if grep -q '^not ok.* vmm/va_arena.c ([0-9]* lines)' "$tmp/r5"; then
	echo "ok - the length rule fails on vmm/va_arena.c grown past 600 lines, and names it"
else
	echo "not ok - the length rule fails on vmm/va_arena.c grown past 600 lines, and names it"
	sed 's/^/# /' "$tmp/r5"
fi >> "$tmp/results"

awk '/^(not )?ok/ { sub(/ok -/, "ok " ++t " -") } { print }
     END { print "1.." t }' "$tmp/results"

#!/bin/sh
# SPDX-License-Identifier: MIT
# make install DESTDIR=...: library, header, tpager.pc, tpagerctl and man
# pages land where they should; a program built with nothing but
# `pkg-config --cflags --libs tpager` against that tree links to the
# TPAGER_0.1 symbols and runs.
top_builddir=${top_builddir:-.}
CC=${CC:-cc}
MAKE=${MAKE:-make}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
root="$tmp/root"

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
bail() { echo "Bail out! $*"; exit 1; }

echo "1..13"
# make check has built everything, so this install only copies; in a tree
# edited while the tests run it would rebuild under the other tests' feet.
# Parallel make's jobserver is not ours to share.
if ! env -u MAKEFLAGS -u MFLAGS $MAKE -C "$top_builddir" install DESTDIR="$root" \
		> "$tmp/install.log" 2>&1; then
	sed 's/^/# /' "$tmp/install.log" | tail -n 30
	bail "make install DESTDIR=$root failed"
fi
ok 0 "make install DESTDIR=... succeeds"

pc=$(find "$root" -name tpager.pc | head -n 1)
[ -n "$pc" ] || bail "no tpager.pc installed"
ok 0 "tpager.pc installed (${pc#$root})"
export PKG_CONFIG_PATH="$(dirname "$pc")"
export PKG_CONFIG_SYSROOT_DIR="$root"
cflags=$(pkg-config --cflags tpager) && libs=$(pkg-config --libs tpager) ||
	bail "pkg-config cannot read the installed tpager.pc"
# Paths as installed, without the sysroot some pkg-config versions prepend.
libdir=$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=libdir tpager)
includedir=$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=includedir tpager)
prefix=$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=prefix tpager)
echo "# cflags: $cflags"
echo "# libs:   $libs"

ok $([ -f "$root$includedir/tpager.h" ] && echo 0 || echo 1) "tpager.h in includedir"
# tpager.h includes nothing of liburcu's: its -I (a multiarch directory)
# is no business of a consumer's.
ok $([ "$(echo $cflags)" = "-I$root$includedir" ] && echo 0 || echo 1) \
	"pkg-config --cflags tpager names tpager's includedir alone"
static=$(pkg-config --static --libs tpager)
echo "# static: $static"
ok $(echo " $static " | grep -q ' -lurcu-cds ' && echo 0 || echo 1) \
	"pkg-config --static --libs tpager still names liburcu"
ok $([ -f "$root$libdir/libtpager.so" ] && [ -z "$(find "$root" -name 'libtpager_*')" ] &&
     echo 0 || echo 1) \
	"libtpager.so in libdir, the internal core and trace libraries not installed"

missing=
for p in man1/tpagerctl.1 man1/tpager-train.1 man1/tpager-sim.1 man3/tp_ctx_create.3 \
	 man3/tp_ctx_destroy.3 man3/tp_ctl_set.3 man5/tpager.conf.5 man7/tpager.7; do
	[ -f "$root$prefix/share/man/$p" ] || missing="$missing $p"
done
ok $([ -z "$missing" ] && echo 0 || echo 1) "man pages installed${missing:+ (missing:$missing)}"
# A page shared by two functions (a link in the tree) is installed whole.
f="$root$prefix/share/man/man3/tp_ctx_destroy.3"
ok $([ -f "$f" ] && [ ! -L "$f" ] && grep -q '^\.SH NAME' "$f" &&
     cmp -s "$f" "$root$prefix/share/man/man3/tp_ctx_create.3" && echo 0 || echo 1) \
	"tp_ctx_destroy.3 installed as the whole page of tp_ctx_create.3"

TPAGER_SYSCONF=/nonexistent "$root$prefix/bin/tpagerctl" -n vmm.chunk_size > "$tmp/ctl.out" 2>&1
ok $([ "$(cat "$tmp/ctl.out")" = "2M" ] && echo 0 || echo 1) "installed tpagerctl runs"

cat > "$tmp/consumer.c" <<'EOC'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <tpager.h>

static int errors;

static void on_log(enum tp_log_level level, const char *msg, void *priv)
{
	if (level == TP_LOG_ERROR)
		errors++;
	fprintf(stderr, "log: %s\n", msg);
}

int main(void)
{
	unsigned char in[100000], out[sizeof(in)];
	struct tp_ctx *ctx;
	struct tp_tensor *t;
	char v[64];
	int rc;

	tp_set_log(on_log, NULL);
	ctx = tp_ctx_create("vmm.backend=host,pager.budgt=1M");
	if (ctx || errno != EINVAL || errors != 1) {
		fprintf(stderr, "a misspelt key was not refused\n");
		return 1;
	}
	ctx = tp_ctx_create("vmm.backend=host,vmm.chunk_size=64K,pager.budget=1M");
	if (!ctx) {
		perror("tp_ctx_create");
		return 1;
	}
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7 + 3);
	t = tp_tensor_create(ctx, sizeof(in), 0);
	rc = t ? tp_tensor_write(ctx, t, 0, in, sizeof(in)) : -errno;
	if (!rc)
		rc = tp_tensor_read(ctx, t, 0, out, sizeof(out));
	if (rc || memcmp(in, out, sizeof(in))) {
		fprintf(stderr, "round trip: %s\n", tp_strerror(rc));
		return 1;
	}
	if (tp_ctl_get(ctx, "vmm.chunk_size", v, sizeof(v)) || strcmp(v, "64K")) {
		fprintf(stderr, "tp_ctl_get: %s\n", v);
		return 1;
	}
	tp_tensor_free(ctx, t);
	tp_ctx_destroy(ctx);
	printf("consumer ok\n");
	return 0;
}
EOC
# Only pkg-config's flags (and the sanitizer runtime of an ASan build).
if (cd "$tmp" && $CC $SANITIZE_CFLAGS $cflags consumer.c -o consumer $libs) > "$tmp/cc.log" 2>&1; then
	ok 0 "a consumer builds with pkg-config --cflags --libs tpager alone"
else
	ok 1 "a consumer builds with pkg-config --cflags --libs tpager alone"
	sed 's/^/# /' "$tmp/cc.log"
fi
ok $(objdump -T "$tmp/consumer" 2>/dev/null | grep -Eq 'TPAGER_0\.1\)? +tp_ctx_create$' && echo 0 || echo 1) \
	"the consumer binds to tp_ctx_create@TPAGER_0.1"
unversioned=$(objdump -T "$root$libdir/libtpager.so" | awk '!/\*UND\*/ && $NF ~ /^tp_/ && $(NF-1) != "TPAGER_0.1" { print $NF }')
ok $([ -z "$unversioned" ] && echo 0 || echo 1) "installed symbols all carry TPAGER_0.1"

out=$(cd "$tmp" && TPAGER_SYSCONF=/nonexistent LD_LIBRARY_PATH="$root$libdir" ./consumer 2>&1)
ok $([ "$(echo "$out" | tail -n 1)" = "consumer ok" ] && echo 0 || echo 1) \
	"the consumer runs against the installed library"
echo "$out" | sed 's/^/# /'

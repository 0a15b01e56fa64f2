// SPDX-License-Identifier: MIT
/*
 * gzip decompression through zlib's inflate (gunzip.h). The whole input
 * is in memory, as the parsers take a trace whole, so the output grows by
 * doubling from a guess and no stream state outlives the call.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#define ZLIB_CONST
#include <zlib.h>

#include "trace/gunzip.h"

/* inflateInit2()'s window bits: the largest window, gzip wrapper only. */
#define GZ_WINDOW_BITS	(15 + 16)

/* Traces compress about tenfold; a first guess at the output's size. */
#define GZ_RATIO	8
#define GZ_MIN_CAP	(64u << 10)

bool tp_gzip_magic(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/* zlib counts in uInt: at most that much at a time. */
static uInt clamp(size_t n)
{
	return n > UINT_MAX ? UINT_MAX : (uInt)n;
}

int tp_gunzip(const void *in, size_t len, char **out, size_t *out_len,
	      const char **why)
{
	const unsigned char *src = in;
	z_stream z = { 0 };
	size_t cap, n = 0, used;
	char *buf, *nb;
	int ret;

	cap = len < SIZE_MAX / GZ_RATIO ? len * GZ_RATIO : len;
	if (cap < GZ_MIN_CAP)
		cap = GZ_MIN_CAP;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	z.next_in = src;
	if (inflateInit2(&z, GZ_WINDOW_BITS) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	for (;;) {
		used = (size_t)(z.next_in - src);
		if (!z.avail_in)
			z.avail_in = clamp(len - used);
		if (n == cap) {
			nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				ret = -ENOMEM;
				goto err;
			}
			buf = nb;
			cap *= 2;
		}
		z.next_out = (Bytef *)buf + n;
		z.avail_out = clamp(cap - n);
		ret = inflate(&z, Z_NO_FLUSH);
		n = (size_t)((char *)z.next_out - buf);
		switch (ret) {
		case Z_OK:
			continue;
		case Z_STREAM_END:
			used = (size_t)(z.next_in - src);
			if (used == len)
				goto done;
			/* Members may follow one another; nothing else may. */
			if (!tp_gzip_magic(z.next_in, len - used)) {
				*why = "data after the end of the stream";
				ret = -EIO;
				goto err;
			}
			inflateReset(&z);
			continue;
		case Z_BUF_ERROR:
			/* No progress: the output is full or the input ended. */
			if (n == cap)
				continue;
			*why = "truncated";
			ret = -EIO;
			goto err;
		case Z_MEM_ERROR:
			ret = -ENOMEM;
			goto err;
		default:	/* Z_DATA_ERROR and what cannot be in gzip */
			*why = z.msg ? z.msg : "corrupt data";
			ret = -EIO;
			goto err;
		}
	}
done:
	inflateEnd(&z);
	*out = buf;
	*out_len = n;
	return 0;
err:
	inflateEnd(&z);
	free(buf);
	return ret;
}

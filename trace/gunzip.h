/* SPDX-License-Identifier: MIT */
/*
 * gzip (RFC 1952) decompression in memory through zlib, for compressed
 * traces: no child process, no gzip(1) needed where the tools run.
 */
#ifndef TP_TRACE_GUNZIP_H
#define TP_TRACE_GUNZIP_H

#include <stdbool.h>
#include <stddef.h>

/** tp_gzip_magic() - whether the @len bytes at @buf begin a gzip member. */
bool tp_gzip_magic(const void *buf, size_t len);

/**
 * tp_gunzip() - decompress the gzip stream in @in.
 * @in:      the compressed bytes: one gzip member, or several one after
 *           another (as gzip(1) reads what cat(1) joined)
 * @len:     their number
 * @out:     set to a malloc()ed buffer holding the data
 * @out_len: set to its length
 * @why:     set to a static description of what is wrong with the stream
 *
 * Every member's CRC and length are checked; bytes after the last member
 * that do not begin another are an error, not ignored.
 *
 * Return: 0; -EIO the stream is truncated or corrupt (*@why says which);
 * -ENOMEM. On error *@out is left alone.
 */
int tp_gunzip(const void *in, size_t len, char **out, size_t *out_len,
	      const char **why);

#endif /* TP_TRACE_GUNZIP_H */

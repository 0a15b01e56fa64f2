/* SPDX-License-Identifier: MIT */
/* Messages and number parsing of the command-line tools (cli.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl/conf.h"
#include "tools/cli.h"

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

bool parse_uint(const char *s, unsigned long long max, unsigned long long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end && *v <= max;
}

bool parse_bytes(const char *s, uint64_t *v)
{
	return tp_parse_size(s, v) == 0;
}

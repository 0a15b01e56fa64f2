/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

static unsigned int planned, ran, failed;
static bool no_plan;

void plan_tests(unsigned int n)
{
	planned = n;
	printf("1..%u\n", n);
	fflush(stdout);
}

void plan_no_plan(void)
{
	no_plan = true;
}

void plan_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(0);
}

static void vreport(bool cond, const char *fmt, va_list ap)
{
	char desc[1024];

	vsnprintf(desc, sizeof(desc), fmt, ap);
	ran++;
	/* A point marked "# TODO" is a known failure: TAP does not count it. */
	if (!cond && !strstr(desc, "# TODO"))
		failed++;
	printf("%sok %u - %s\n", cond ? "" : "not ", ran, desc);
}

bool ok_at(bool cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		printf("#   failed at %s:%d\n", file, line);
	fflush(stdout);
	return cond;
}

bool ok_rc_at(int rc, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(rc == 0, fmt, ap);
	va_end(ap);
	if (rc != 0)
		printf("#   failed at %s:%d: returned %d (%s)\n", file, line,
		       rc, rc < 0 ? strerror(-rc) : "positive");
	fflush(stdout);
	return rc == 0;
}

void skip(unsigned int n, const char *fmt, ...)
{
	va_list ap;

	while (n--) {
		ran++;
		printf("ok %u # SKIP ", ran);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	fflush(stdout);
}

void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void bail_out(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(255);
}

int exit_status(void)
{
	if (no_plan) {
		printf("1..%u\n", ran);
		planned = ran;
	}
	fflush(stdout);
	if (ran != planned) {
		printf("# planned %u tests but ran %u\n", planned, ran);
		return 255;
	}
	return failed ? (failed > 254 ? 254 : (int)failed) : 0;
}

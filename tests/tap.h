/* SPDX-License-Identifier: MIT */
/*
 * A minimal TAP producer for tpager's tests, read by automake's
 * tap-driver.sh. One test program per concern; each prints a plan.
 */
#ifndef TP_TESTS_TAP_H
#define TP_TESTS_TAP_H

#include <stdbool.h>

/* Announce n tests. Call once, before the first ok(). */
void plan_tests(unsigned int n);
/* Skip the whole program: prints "1..0 # SKIP why" and exits 0. */
__attribute__((noreturn, format(printf, 1, 2)))
void plan_skip_all(const char *fmt, ...);
/* Plan left to the end: exit_status() prints "1..N". */
void plan_no_plan(void);

/* One test point; returns cond so callers can chain diagnostics. A
 * description containing "# TODO reason" marks a known failure, which
 * the harness reports as XFAIL and exit_status() does not count. */
__attribute__((format(printf, 4, 5)))
bool ok_at(bool cond, const char *file, int line, const char *fmt, ...);
#define ok(cond, ...) ok_at(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define ok1(cond) ok_at(!!(cond), __FILE__, __LINE__, "%s", #cond)
/* ok() for a "0 or -errno" return: reports the errno text on failure. */
#define ok_rc(rc, ...) ok_rc_at((rc), __FILE__, __LINE__, __VA_ARGS__)
__attribute__((format(printf, 4, 5)))
bool ok_rc_at(int rc, const char *file, int line, const char *fmt, ...);

/* Mark n test points skipped, with a reason. */
__attribute__((format(printf, 2, 3)))
void skip(unsigned int n, const char *fmt, ...);
/* A "# " comment line on stdout (visible in the .log). */
__attribute__((format(printf, 1, 2)))
void diag(const char *fmt, ...);
/* Stop the run: "Bail out!" aborts the whole test program. */
__attribute__((noreturn, format(printf, 1, 2)))
void bail_out(const char *fmt, ...);

/* 0 when every planned test ran and passed, else non-zero. */
int exit_status(void);

#endif /* TP_TESTS_TAP_H */

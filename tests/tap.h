/* SPDX-License-Identifier: MIT */
/*
 * TAP for C tests, the format tests/tap-run reads (as it does the shell
 * tests' tests/tap.sh): "ok N - what" or "not ok N - what" per check, a
 * skipped check as "ok N - what # SKIP why", the plan "1..N" at the end.
 * For one test program: main() ends with "return tap_done();".
 */
#ifndef SANDCAP_TESTS_TAP_H
#define SANDCAP_TESTS_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned tap_n, tap_failed;

/* One check; returns cond, so that a caller can add what it saw. */
__attribute__((format(printf, 2, 3))) static inline bool ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!cond)
		tap_failed++;
	printf("%sok %u - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return cond;
}

/* A check that cannot run here (SANDCAP_MUST_WORK=1 makes it a failure). */
__attribute__((format(printf, 2, 3))) static inline void tap_skip(const char *what, const char *fmt,
								  ...)
{
	va_list ap;

	tap_n++;
	printf("ok %u - %s # SKIP ", tap_n, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* A line of diagnostics (what was seen, what was wanted). */
__attribute__((format(printf, 1, 2))) static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* The whole test cannot run here: exit 77, the skip status. */
__attribute__((format(printf, 1, 2), noreturn)) static inline void tap_skip_all(const char *fmt,
										...)
{
	va_list ap;

	fputs("1..0 # SKIP ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(77);
}

/* The plan, and the exit status: 1 when a check failed. */
static inline int tap_done(void)
{
	printf("1..%u\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif

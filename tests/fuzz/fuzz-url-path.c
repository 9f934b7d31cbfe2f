/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the path normaliser of the proxy's L7 rules: the
 * path comes from the sandboxed agent and decides what a rule with paths
 * allows. Checks, besides memory safety, what the rules rely on: a result
 * starts with "/", has no empty, "." or ".." segment and no escape of an
 * unreserved character, "/", "\" or NUL, and normalising it again changes
 * nothing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "policy/http-path.h"

#define FUZZ_MAX_PATH 16384u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_normal(const char *p, size_t n)
{
	if (n == 0 || p[0] != '/' || strlen(p) != n)
		abort();
	if (strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../") || strchr(p, '\\'))
		abort();
	if ((n >= 2 && strcmp(p + n - 2, "/.") == 0) || (n >= 3 && strcmp(p + n - 3, "/..") == 0))
		abort();
	for (const char *e = strchr(p, '%'); e; e = strchr(e + 1, '%')) {
		/* kept escapes: two upper-case hex digits, never of an unreserved
		 * character or of "/", "\" or NUL */
		const char *ok = "0123456789ABCDEF";

		if (!e[1] || !e[2] || !strchr(ok, e[1]) || !strchr(ok, e[2]))
			abort();
		if (strncmp(e, "%2F", 3) == 0 || strncmp(e, "%5C", 3) == 0 ||
		    strncmp(e, "%00", 3) == 0 || strncmp(e, "%2E", 3) == 0 ||
		    strncmp(e, "%7E", 3) == 0 || strncmp(e, "%2D", 3) == 0 ||
		    strncmp(e, "%5F", 3) == 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[FUZZ_MAX_PATH + 2], again[FUZZ_MAX_PATH + 2];
	const char *reason = NULL;
	int r, r2;

	if (size > FUZZ_MAX_PATH)
		return 0;
	r = http_path_normalise((const char *)data, size, out, sizeof(out), &reason);
	if (r == -EINVAL) {
		if (!reason)
			abort();
		return 0;
	}
	if (r < 0)
		abort(); /* the output is never longer than the input plus "/" */
	check_normal(out, (size_t)r);
	r2 = http_path_normalise(out, (size_t)r, again, sizeof(again), &reason);
	if (r2 != r || memcmp(out, again, (size_t)r) != 0)
		abort();
	if (!path_is_under(out, out) || !path_is_under(out, "/"))
		abort();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Unit tests for src/base/parse-num.c (TAP). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/parse-num.h"
#include "tap.h"

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 0;
	int r = parse_size(s, &v);

	ok(r == 0 && v == want, "size \"%s\"", s);
	if (r != 0 || v != want)
		printf("# got r=%d v=%" PRIu64 ", want %" PRIu64 "\n", r, v, want);
}

static void size_bad(const char *s, int err)
{
	uint64_t v = 12345;
	int r = parse_size(s, &v);

	ok(r == err && v == 12345, "size refused \"%s\"", s);
}

static void dur_ok(const char *s, uint64_t want)
{
	uint64_t v = 0;
	int r = parse_duration_ns(s, &v);

	ok(r == 0 && v == want, "duration \"%s\"", s);
}

static void dur_bad(const char *s, int err)
{
	uint64_t v = 12345;
	int r = parse_duration_ns(s, &v);

	ok(r == err && v == 12345, "duration refused \"%s\"", s);
}

static void rate_ok(const char *s, uint64_t count, uint64_t per)
{
	uint64_t c = 0, p = 0;
	int r = parse_rate(s, &c, &p);

	ok(r == 0 && c == count && p == per, "rate \"%s\"", s);
}

static void rate_bad(const char *s)
{
	uint64_t c = 7, p = 7;
	int r = parse_rate(s, &c, &p);

	ok(r == -EINVAL && c == 7 && p == 7, "rate refused \"%s\"", s);
}

static void bw_ok(const char *s, uint64_t want)
{
	uint64_t v = 0;
	int r = parse_bandwidth(s, &v);

	ok(r == 0 && v == want, "bandwidth \"%s\"", s);
}

static void bw_bad(const char *s, int err)
{
	uint64_t v = 12345;
	int r = parse_bandwidth(s, &v);

	ok(r == err && v == 12345, "bandwidth refused \"%s\"", s);
}

int main(void)
{
	const uint64_t S = 1000000000ULL;
	uint64_t v;

	size_ok("0", 0);
	size_ok("4096", 4096);
	size_ok("1K", 1024);
	size_ok("64M", 64ULL << 20);
	size_ok("2G", 2ULL << 30);
	size_ok("3T", 3ULL << 40);
	size_ok("18446744073709551615", UINT64_MAX);
	size_ok("16777215T", 16777215ULL << 40);
	size_bad("", -EINVAL);
	size_bad("M", -EINVAL);
	size_bad("64MB", -EINVAL);
	size_bad("64m", -EINVAL);
	size_bad("64 M", -EINVAL);
	size_bad(" 64M", -EINVAL);
	size_bad("+64", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("0x10", -EINVAL);
	size_bad("1.5M", -EINVAL);
	size_bad("64MM", -EINVAL);
	size_bad("18446744073709551616", -ERANGE);
	size_bad("16777216T", -ERANGE);
	size_bad("99999999999999999999999", -ERANGE);
	ok(parse_size(NULL, &v) == -EINVAL, "size refused (null)");

	dur_ok("0ms", 0);
	dur_ok("500ms", 500ULL * 1000000ULL);
	dur_ok("30s", 30 * S);
	dur_ok("2m", 120 * S);
	dur_ok("1h", 3600 * S);
	dur_bad("30", -EINVAL);
	dur_bad("", -EINVAL);
	dur_bad("s", -EINVAL);
	dur_bad("30S", -EINVAL);
	dur_bad("30sec", -EINVAL);
	dur_bad("1.5s", -EINVAL);
	dur_bad("30us", -EINVAL);
	dur_bad("1d", -EINVAL);
	dur_bad("-1s", -EINVAL);
	dur_bad("5124096h", -ERANGE);
	ok(parse_duration_ns(NULL, &v) == -EINVAL, "duration refused (null)");

	rate_ok("20/s", 20, S);
	rate_ok("100/m", 100, 60 * S);
	rate_bad("0/s");
	rate_bad("20");
	rate_bad("20/h");
	rate_bad("/s");
	rate_bad("20/s ");
	rate_bad("20/ms");
	rate_bad("-1/s");
	rate_bad("");

	bw_ok("1M/s", 1ULL << 20);
	bw_ok("512/s", 512);
	bw_ok("0/s", 0);
	bw_bad("1M", -EINVAL);
	bw_bad("/s", -EINVAL);
	bw_bad("1M/m", -EINVAL);
	bw_bad("1MB/s", -EINVAL);
	bw_bad("", -EINVAL);
	bw_bad("18446744073709551616/s", -ERANGE);
	bw_bad("1111111111111111111111111111111111111111111111111111111111111111111/s", -ERANGE);

	return tap_done();
}

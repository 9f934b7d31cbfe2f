/* SPDX-License-Identifier: MIT */
#include "base/parse-num.h"

#include <errno.h>
#include <string.h>

/* Hand-written: strtoull accepts signs, spaces and hex, which a policy must not. */
static int parse_digits(const char **s, uint64_t *ret)
{
	const char *p = *s;
	uint64_t v = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
			return -ERANGE;
	}
	*s = p;
	*ret = v;
	return 0;
}

/* *ret is left untouched on overflow (the builtin would store the wrapped value). */
static int scale(uint64_t v, uint64_t unit, uint64_t *ret)
{
	uint64_t r;

	if (__builtin_mul_overflow(v, unit, &r))
		return -ERANGE;
	*ret = r;
	return 0;
}

/* A size in the first n bytes of s (which need not be NUL-terminated there). */
static int parse_size_n(const char *s, size_t n, uint64_t *ret)
{
	static const struct {
		const char *suffix;
		uint64_t unit;
	} units[] = {
	    {"", 1}, {"K", 1ULL << 10}, {"M", 1ULL << 20}, {"G", 1ULL << 30}, {"T", 1ULL << 40},
	};
	const char *end = s + n;
	uint64_t v;
	int r;

	if (!s || n == 0 || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	r = parse_digits(&s, &v);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if ((size_t)(end - s) == strlen(units[i].suffix) &&
		    memcmp(s, units[i].suffix, (size_t)(end - s)) == 0)
			return scale(v, units[i].unit, ret);
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *ret)
{
	if (!s)
		return -EINVAL;
	return parse_size_n(s, strlen(s), ret);
}

int parse_duration_ns(const char *s, uint64_t *ret)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = {
	    {"ms", 1000000ULL},
	    {"s", 1000000000ULL},
	    {"m", 60ULL * 1000000000ULL},
	    {"h", 3600ULL * 1000000000ULL},
	};
	uint64_t v;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_digits(&s, &v);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(s, units[i].suffix) == 0)
			return scale(v, units[i].ns, ret);
	return -EINVAL; /* a bare number has no unit that makes sense */
}

int parse_rate(const char *s, uint64_t *ret_count, uint64_t *ret_per_ns)
{
	uint64_t v;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_digits(&s, &v);
	if (r < 0)
		return r;
	if (v == 0)
		return -EINVAL;
	if (strcmp(s, "/s") == 0)
		*ret_per_ns = 1000000000ULL;
	else if (strcmp(s, "/m") == 0)
		*ret_per_ns = 60ULL * 1000000000ULL;
	else
		return -EINVAL;
	*ret_count = v;
	return 0;
}

int parse_bandwidth(const char *s, uint64_t *ret_bytes_per_sec)
{
	size_t n;

	if (!s)
		return -EINVAL;
	n = strlen(s);
	if (n < 3 || strcmp(s + n - 2, "/s") != 0)
		return -EINVAL;
	return parse_size_n(s, n - 2, ret_bytes_per_sec);
}

/* SPDX-License-Identifier: MIT */
/* Path normalisation and prefix matching (http-path.h). */
#include "policy/http-path.h"

#include <errno.h>
#include <string.h>

#include "base/hex.h"
#include "base/path.h"

static bool unreserved(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

/*
 * 1 or 2 when seg[0..n) (decoded) is "." or "..", else 0. *ret_params: it is
 * one of them followed by ";" parameters (also encoded, "%3B"), which some
 * servers strip before they resolve dot segments ("/a/..;/b").
 */
static int dot_segment(const char *seg, size_t n, bool *ret_params)
{
	size_t dots = 0;

	*ret_params = false;
	while (dots < n && seg[dots] == '.')
		dots++;
	if (dots == 0 || dots > 2)
		return 0;
	if (dots == n)
		return (int)dots;
	*ret_params = seg[dots] == ';' || (n - dots >= 3 && strncmp(seg + dots, "%3B", 3) == 0);
	return 0;
}

int http_path_normalise(const char *path, size_t len, char *out, size_t size,
			const char **reterr_reason)
{
	const char *q = memchr(path, '?', len);
	size_t n = 0, i;

	if (q)
		len = (size_t)(q - path);
	if (size < 2)
		return -ENAMETOOLONG;
	if (len == 0) {
		strcpy(out, "/");
		return 1;
	}
	if (path[0] != '/') {
		*reterr_reason = "the path does not start with \"/\"";
		return -EINVAL;
	}
	/* Segment by segment: out holds "/seg/seg" (no trailing "/") so far. */
	i = 1;
	for (;;) {
		size_t start = n, seg_len;
		bool params = false, end, trail;
		int dots;

		if (n + 1 >= size)
			return -ENAMETOOLONG;
		out[n++] = '/';
		while (i < len && path[i] != '/') {
			unsigned char ch = (unsigned char)path[i];

			if (ch == '\\') {
				*reterr_reason = "the path has a \"\\\"";
				return -EINVAL;
			}
			if (ch <= ' ' || ch == 0x7f) {
				/* the request line cannot hold them; a policy must not */
				*reterr_reason = "the path has a space or control character";
				return -EINVAL;
			}
			if (ch == '%') {
				int hi = i + 2 < len ? hex_value(path[i + 1]) : -1;
				int lo = hi >= 0 ? hex_value(path[i + 2]) : -1;

				if (hi < 0 || lo < 0) {
					*reterr_reason =
					    "the path has a \"%\" not followed by two hex digits";
					return -EINVAL;
				}
				ch = (unsigned char)(hi << 4 | lo);
				if (ch == '/' || ch == '\\' || ch == 0) {
					*reterr_reason =
					    ch == '/'	 ? "the path has an encoded \"/\" (%2F)"
					    : ch == '\\' ? "the path has an encoded \"\\\" (%5C)"
							 : "the path has an encoded NUL (%00)";
					return -EINVAL;
				}
				i += 3;
				if (!unreserved(ch)) {
					static const char hex[] = "0123456789ABCDEF";

					if (n + 3 >= size)
						return -ENAMETOOLONG;
					out[n++] = '%';
					out[n++] = hex[ch >> 4];
					out[n++] = hex[ch & 15];
					continue;
				}
			} else {
				i++;
			}
			if (n + 1 >= size)
				return -ENAMETOOLONG;
			out[n++] = (char)ch;
		}
		end = i >= len;
		seg_len = n - start - 1;
		dots = dot_segment(out + start + 1, seg_len, &params);
		if (params) {
			*reterr_reason = "the path has a dot segment with \";\" parameters";
			return -EINVAL;
		}
		trail = seg_len == 0 || dots > 0;
		if (seg_len == 0 || dots == 1) {
			n = start; /* "//" and "/./": nothing */
		} else if (dots == 2) {
			if (start == 0) {
				*reterr_reason = "the path has a \"..\" above the root";
				return -EINVAL;
			}
			n = start;
			while (n > 0 && out[n - 1] != '/')
				n--;
			n--; /* the "/" before the segment ".." removes */
		}
		if (end) {
			/* a last segment that was empty, "." or ".." leaves a trailing "/" */
			if (trail && (n == 0 || out[n - 1] != '/')) {
				if (n + 1 >= size)
					return -ENAMETOOLONG;
				out[n++] = '/';
			}
			break;
		}
		i++; /* the "/" */
	}
	out[n] = 0;
	return (int)n;
}

bool http_paths_allow(char *const *prefixes, size_t n, const char *path)
{
	if (n == 0)
		return true;
	if (!path)
		return false;
	for (size_t i = 0; i < n; i++)
		if (path_is_under(path, prefixes[i]))
			return true;
	return false;
}

/* SPDX-License-Identifier: MIT */
/*
 * HTTP path rules: the request path in one normal form, and prefix
 * matching on segment boundaries (docs/proxy.md, "Path rules"). Pure: no
 * I/O, no allocation. The policy parser refuses a prefix unless it is
 * written in this form, and the proxy compares requests in it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Normalises the path of an origin-form request target (path[0..len), the
 * query from the first '?' on is not part of it; len 0 means "/") into out:
 *   - %XX of an unreserved character (ALPHA DIGIT - . _ ~) is decoded, any
 *     other escape is kept, its hex digits upper-case;
 *   - empty segments ("//") and "." segments are dropped, ".." removes the
 *     segment before it; a trailing "/" is kept ("/a/." is "/a/").
 * Refused (-EINVAL, *reterr_reason a short sentence): a path not starting
 * with "/", an escape that is not "%" and two hex digits, an encoded "/"
 * (%2F), "\" or NUL, a literal "\", space or control character, a ".." above the root, a dot
 * segment followed by ";" parameters ("..;"). -ENAMETOOLONG when out (size bytes, NUL included) is
 * too small. Returns the length of out otherwise.
 */
int http_path_normalise(const char *path, size_t len, char *out, size_t size,
			const char **reterr_reason);

/* Is path under one of the n prefixes (base/path.h, path_is_under())?
 * n == 0 (no list) allows any path; a NULL path (it did not normalise) is
 * under none. */
bool http_paths_allow(char *const *prefixes, size_t n, const char *path);

/* SPDX-License-Identifier: MIT */
/*
 * L7 path rules: the request path in one normal form, and prefix matching on
 * segment boundaries (docs/proxy.md, "Path rules"). Pure: no I/O, no
 * allocation. The policy parser uses the same normaliser, so that a prefix
 * is refused unless it is written in the form requests are compared in.
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
int px_path_normalise(const char *path, size_t len, char *out, size_t size,
		      const char **reterr_reason);

/*
 * Is the normalised path under prefix (itself normalised)? A prefix ending
 * in "/" matches what starts with it; any other prefix matches itself and
 * what continues it after a "/": "/v1" matches "/v1" and "/v1/x", not
 * "/v1x"; "/v1/" matches "/v1/x" and "/v1/", not "/v1". "/" matches all.
 */
bool px_path_under(const char *path, const char *prefix);

/* Is path under one of the n prefixes? n == 0 (no list) allows any path;
 * a NULL path (it did not normalise) is under none. */
bool px_paths_allow(char *const *prefixes, size_t n, const char *path);

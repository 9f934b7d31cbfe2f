/* SPDX-License-Identifier: MIT */
#include "base/path.h"

#include <string.h>

bool path_is_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n) != 0)
		return false;
	if (n > 0 && prefix[n - 1] == '/')
		return true;
	return path[n] == '\0' || path[n] == '/';
}

/* SPDX-License-Identifier: MIT */
#include "base/base64.h"

#include <stdint.h>

size_t b64_encode(const void *in, size_t len, char *out)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *p = in;
	char *o = out;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < len ? p[i + 2] : 0);

		*o++ = abc[v >> 18];
		*o++ = abc[(v >> 12) & 63];
		*o++ = i + 1 < len ? abc[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? abc[v & 63] : '=';
	}
	*o = '\0';
	return (size_t)(o - out);
}

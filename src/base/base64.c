/* SPDX-License-Identifier: MIT */
#include "base/base64.h"

#include <errno.h>
#include <stdlib.h>

static const char std_abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t encode(const uint8_t *p, size_t len, char *out, const char *abc, bool pad)
{
	char *o = out;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < len ? p[i + 2] : 0);

		*o++ = abc[v >> 18];
		*o++ = abc[(v >> 12) & 63];
		if (i + 1 < len)
			*o++ = abc[(v >> 6) & 63];
		else if (pad)
			*o++ = '=';
		if (i + 2 < len)
			*o++ = abc[v & 63];
		else if (pad)
			*o++ = '=';
	}
	*o = '\0';
	return (size_t)(o - out);
}

size_t b64_encode(const void *in, size_t len, char *out)
{
	return encode(in, len, out, std_abc, true);
}

size_t b64url_encode(const void *in, size_t len, char *out)
{
	return encode(in, len, out, url_abc, false);
}

static int value(unsigned char ch, bool url)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == (url ? '-' : '+'))
		return 62;
	if (ch == (url ? '_' : '/'))
		return 63;
	return -1;
}

bool b64url_is_char(int c)
{
	return c >= 0 && c <= 0xff && value((unsigned char)c, true) >= 0;
}

static int decode(const char *in, size_t len, bool url, uint8_t **ret, size_t *ret_len)
{
	uint32_t acc = 0;
	unsigned bits = 0;
	size_t o = 0;
	uint8_t *out;

	if (!url) {
		/* Whole quanta, the last one padded to four. */
		if (len % 4)
			return -EBADMSG;
		for (int i = 0; i < 2 && len > 0 && in[len - 1] == '='; i++)
			len--;
	}
	if (len % 4 == 1)
		return -EBADMSG;
	out = malloc(len / 4 * 3 + 3);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		int v = value((unsigned char)in[i], url);

		if (v < 0) {
			free(out);
			return -EBADMSG;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0) { /* non-zero unused bits: not the one encoding */
		free(out);
		return -EBADMSG;
	}
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 0;
}

int b64_decode(const char *in, size_t len, uint8_t **ret, size_t *ret_len)
{
	return decode(in, len, false, ret, ret_len);
}

int b64url_decode(const char *in, size_t len, uint8_t **ret, size_t *ret_len)
{
	return decode(in, len, true, ret, ret_len);
}

/* SPDX-License-Identifier: MIT */
#include "proxy/record.h"

#include <errno.h>
#include <string.h>

static void put(px_record *r, const char *s, size_t n)
{
	if (r->failed || n > r->size - r->len) {
		r->failed = true;
		return;
	}
	memcpy(r->buf + r->len, s, n);
	r->len += n;
}

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlong form, no surrogate, at most U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	uint32_t cp;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	cp = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also the NUL that ends the string */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static void put_string(px_record *r, const char *s)
{
	static const char hex[] = "0123456789ABCDEF"; /* as jansson writes them */
	static const char short_escape[0x80] = {
	    ['"'] = '"',  ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
	    ['\n'] = 'n', ['\r'] = 'r',	 ['\t'] = 't',
	};

	put(r, "\"", 1);
	for (const char *run = s;; s++) {
		unsigned char ch = (unsigned char)*s;
		char esc[6] = {'\\', 0, '0', '0', 0, 0};
		size_t n = 2;

		if (ch >= 0x20 && ch != '"' && ch != '\\' && ch < 0x80)
			continue;
		if (ch >= 0x80) {
			size_t u = utf8_len((const unsigned char *)s);

			if (u) {
				s += u - 1; /* kept as it is, in the run */
				continue;
			}
		}
		put(r, run, (size_t)(s - run));
		if (!ch)
			break;
		if (ch >= 0x80) {
			put(r, "\\ufffd", 6);
		} else if (short_escape[ch]) {
			esc[1] = short_escape[ch];
			put(r, esc, n);
		} else {
			esc[1] = 'u';
			esc[4] = hex[ch >> 4];
			esc[5] = hex[ch & 15];
			put(r, esc, 6);
		}
		run = s + 1;
	}
	put(r, "\"", 1);
}

static void key(px_record *r, const char *k)
{
	if (!r->first)
		put(r, ",", 1);
	r->first = false;
	put_string(r, k);
	put(r, ":", 1);
}

void px_record_start(px_record *r, char *buf, size_t size, const char *event)
{
	*r = (px_record){.buf = buf, .size = size, .first = true};
	put(r, "{\"event\":", 9);
	put_string(r, event);
	put(r, ",\"data\":{", 9);
}

void px_record_str(px_record *r, const char *k, const char *value)
{
	key(r, k);
	put_string(r, value);
}

void px_record_uint(px_record *r, const char *k, uint64_t value)
{
	char d[20];
	size_t n = 0;

	key(r, k);
	do
		d[sizeof(d) - ++n] = (char)('0' + value % 10);
	while ((value /= 10) && n < sizeof(d));
	put(r, d + sizeof(d) - n, n);
}

void px_record_true(px_record *r, const char *k)
{
	key(r, k);
	put(r, "true", 4);
}

void px_record_null(px_record *r, const char *k)
{
	key(r, k);
	put(r, "null", 4);
}

int px_record_end(px_record *r)
{
	put(r, "}}", 2);
	if (r->len >= r->size)
		r->failed = true; /* no room for the terminating NUL */
	if (r->failed)
		return -EINVAL;
	r->buf[r->len] = '\0';
	return (int)r->len;
}

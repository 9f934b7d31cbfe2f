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
		put(r, run, (size_t)(s - run));
		if (!ch)
			break;
		if (ch >= 0x80) {
			r->failed = true; /* jansson checks its UTF-8 */
			return;
		}
		if (short_escape[ch]) {
			esc[1] = short_escape[ch];
		} else {
			esc[1] = 'u';
			esc[4] = hex[ch >> 4];
			esc[5] = hex[ch & 15];
			n = 6;
		}
		put(r, esc, n);
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

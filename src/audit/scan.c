/* SPDX-License-Identifier: MIT */
/*
 * The verifier's fast path: a record line in the exact form the writer
 * gives it (audit-internal.h) is checked in one pass over its bytes, with
 * no JSON tree built.
 *
 * Why: building jansson's tree of every line was half of `audit verify`'s
 * time, and the chain needs only the envelope's members.
 *
 * Why it cannot loosen the strict rules: it never rejects. It answers
 * either "au_parse_record accepts this line, and these are its fields" or
 * "not sure"; then the caller parses the line with au_parse_record, which
 * decides it and words any error. So it takes only a subset of what
 * jansson (JSON_REJECT_DUPLICATES) and au_parse_record accept, and is "not
 * sure" of everything else: whitespace, \u0000 and surrogate escapes,
 * escaped keys, keys of an object not in strictly increasing byte order
 * (the writer sorts them; sorted and unescaped means no duplicates), a
 * number with an exponent or more than 18 integer digits (none can
 * overflow), nesting deeper than SCAN_MAX_DEPTH, and the events whose data
 * the chain reads (error, checkpoint, seal). Strings are checked as jansson
 * does: no control characters, valid escapes, RFC 3629 UTF-8.
 * tests/fuzz/fuzz-audit-scan.c checks the subset against au_parse_record.
 */
#include <string.h>

#include "audit/audit-internal.h"

/* Far below jansson's 2048; a deeper line goes to au_parse_record. */
#define SCAN_MAX_DEPTH 32u

typedef const unsigned char *pos;

/* Bytes that stand for themselves in a string: printable ASCII but " and \. */
static bool plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

static bool digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int hex_any_case(unsigned char c)
{
	if (digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* p at a backslash: past the escape, or NULL. */
static pos scan_escape(pos p, pos end)
{
	unsigned v = 0;

	if (end - p < 2)
		return NULL;
	if (p[1] && strchr("\"\\/bfnrt", p[1]))
		return p + 2;
	if (p[1] != 'u' || end - p < 6)
		return NULL;
	for (int i = 2; i < 6; i++) {
		int h = hex_any_case(p[i]);

		if (h < 0)
			return NULL;
		v = v << 4 | (unsigned)h;
	}
	/* jansson refuses U+0000 and pairs surrogates: its rules, not ours */
	if (v == 0 || (v >= 0xd800 && v <= 0xdfff))
		return NULL;
	return p + 6;
}

/* p past the opening quote: past the closing one, or NULL. A key may not
 * have escapes (its bytes are then its value, compared raw). */
static pos scan_string(pos p, pos end, bool key)
{
	while (p < end) {
		size_t k;

		if (plain(*p)) {
			p++;
			continue;
		}
		if (*p == '"')
			return p + 1;
		if (*p == '\\') {
			if (key)
				return NULL;
			p = scan_escape(p, end);
			if (!p)
				return NULL;
			continue;
		}
		if (*p < 0x80) /* a control character */
			return NULL;
		k = au_utf8_seq(p, (size_t)(end - p));
		if (k == 0)
			return NULL;
		p += k;
	}
	return NULL;
}

/* -?(0|[1-9][0-9]{0,17})(\.[0-9]+)?: a real without exponent whose integer
 * part has 18 digits at most cannot overflow a double, nor an integer
 * json_int_t. */
static pos scan_number(pos p, pos end)
{
	pos d;

	if (p < end && *p == '-')
		p++;
	d = p;
	while (p < end && digit(*p))
		p++;
	if (p == d || p - d > 18 || (*d == '0' && p - d > 1))
		return NULL;
	if (p < end && *p == '.') {
		d = ++p;
		while (p < end && digit(*p))
			p++;
		if (p == d)
			return NULL;
	}
	if (p < end && (*p == 'e' || *p == 'E'))
		return NULL;
	return p;
}

static pos scan_literal(pos p, pos end, const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0 ? p + n : NULL;
}

static pos scan_value(pos p, pos end, unsigned depth);

/* a strictly before b, bytewise (a prefix first) */
static bool key_before(pos a, size_t alen, pos b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c < 0 || (c == 0 && alen < blen);
}

/* p past the '{' */
static pos scan_object(pos p, pos end, unsigned depth)
{
	pos last = NULL;
	size_t last_len = 0;

	if (p < end && *p == '}')
		return p + 1;
	for (;;) {
		pos k = p + 1;

		if (p >= end || *p != '"')
			return NULL;
		p = scan_string(k, end, true);
		if (!p)
			return NULL;
		if (last && !key_before(last, last_len, k, (size_t)(p - 1 - k)))
			return NULL;
		last = k;
		last_len = (size_t)(p - 1 - k);
		if (p >= end || *p != ':')
			return NULL;
		p = scan_value(p + 1, end, depth);
		if (!p || p >= end)
			return NULL;
		if (*p == '}')
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

/* p past the '[' */
static pos scan_array(pos p, pos end, unsigned depth)
{
	if (p < end && *p == ']')
		return p + 1;
	for (;;) {
		p = scan_value(p, end, depth);
		if (!p || p >= end)
			return NULL;
		if (*p == ']')
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static pos scan_value(pos p, pos end, unsigned depth)
{
	if (p >= end)
		return NULL;
	switch (*p) {
	case '{':
		return depth < SCAN_MAX_DEPTH ? scan_object(p + 1, end, depth + 1) : NULL;
	case '[':
		return depth < SCAN_MAX_DEPTH ? scan_array(p + 1, end, depth + 1) : NULL;
	case '"':
		return scan_string(p + 1, end, false);
	case 't':
		return scan_literal(p, end, "true");
	case 'f':
		return scan_literal(p, end, "false");
	case 'n':
		return scan_literal(p, end, "null");
	default:
		return scan_number(p, end);
	}
}

/* The literal text lit at *p: advances past it. */
static bool take(pos *p, pos end, const char *lit)
{
	pos q = scan_literal(*p, end, lit);

	if (!q)
		return false;
	*p = q;
	return true;
}

static bool id_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || digit(c) || c == '.' ||
	       c == '_' || c == ':' || c == '-';
}

static bool event_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || digit(c) || c == '.' || c == '_';
}

/* A run of 1..max bytes for which ok() holds, then a quote: copied, NUL
 * terminated, into out (max + 1 bytes). */
static bool take_name(pos *p, pos end, bool (*ok)(unsigned char), size_t max, char *out)
{
	pos q = *p;

	while (q < end && ok(*q) && (size_t)(q - *p) <= max)
		q++;
	if (q == *p || (size_t)(q - *p) > max || q >= end || *q != '"')
		return false;
	memcpy(out, *p, (size_t)(q - *p));
	out[q - *p] = '\0';
	*p = q + 1;
	return true;
}

static bool take_hex(pos *p, pos end, uint8_t out[AU_HASH_BYTES])
{
	if ((size_t)(end - *p) < AU_HASH_HEX ||
	    au_unhex((const char *)*p, AU_HASH_HEX, out, AU_HASH_BYTES) < 0)
		return false;
	*p += AU_HASH_HEX;
	return true;
}

static bool ts_char_ok(pos s)
{
	static const char tmpl[] = "dddd-dd-ddTdd:dd:dd.dddddddddZ";

	for (size_t i = 0; i < AU_TS_LEN; i++)
		if (tmpl[i] == 'd' ? !digit(s[i]) : s[i] != (unsigned char)tmpl[i])
			return false;
	return true;
}

int au_scan_record(const char *line, size_t len, au_scan_buf *buf, au_record *ret)
{
	pos p = (pos)line, end = p + len;
	au_record r = {.schema = 1};

	if (take(&p, end, AU_SCHEMA_PREFIX "\"seq\":"))
		r.schema = AU_SCHEMA_VERSION;
	else if (!take(&p, end, "{\"seq\":"))
		return 0;
	/* seq: 0 or [1-9][0-9]{0,17}, as written */
	if (p < end && *p == '0')
		p++;
	else {
		pos d = p;

		while (p < end && digit(*p) && p - d < 18)
			r.seq = r.seq * 10 + (uint64_t)(*p++ - '0');
		if (p == d)
			return 0;
	}
	if (!take(&p, end, ",\"ts\":\"") || (size_t)(end - p) < AU_TS_LEN + 1 || !ts_char_ok(p) ||
	    p[AU_TS_LEN] != '"')
		return 0;
	memcpy(buf->ts, p, AU_TS_LEN);
	buf->ts[AU_TS_LEN] = '\0';
	p += AU_TS_LEN + 1;
	if (!take(&p, end, ",\"sandbox\":\"") ||
	    !take_name(&p, end, id_char, AU_SANDBOX_ID_MAX, buf->sandbox) ||
	    !take(&p, end, ",\"event\":\"") ||
	    !take_name(&p, end, event_char, AU_EVENT_MAX, buf->event) ||
	    !take(&p, end, ",\"data\":{"))
		return 0;
	if (strcmp(buf->event, AU_ERROR_EVENT) == 0 ||
	    strcmp(buf->event, AU_CHECKPOINT_EVENT) == 0 || strcmp(buf->event, AU_SEAL_EVENT) == 0)
		return 0;
	p = scan_object(p, end, 1);
	if (!p || !take(&p, end, ",\"prev\":\"") || !take_hex(&p, end, r.prev) ||
	    !take(&p, end, "\"" AU_HASH_SUFFIX_HEAD) || !take_hex(&p, end, r.hash) ||
	    !take(&p, end, "\"}") || p != end)
		return 0;
	r.ts = buf->ts;
	r.sandbox = buf->sandbox;
	r.event = buf->event;
	r.body_len = len - AU_HASH_SUFFIX_LEN;
	*ret = r;
	return 1;
}

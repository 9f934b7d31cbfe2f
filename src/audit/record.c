/* SPDX-License-Identifier: MIT */
/* The canonical record line and the chain hash (see audit-internal.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/hex.h"
#include "base/sha256.h"
#include "audit/audit-internal.h"
#include "base/cleanup.h"

void au_hex(const uint8_t *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 0xf];
	}
	out[2 * n] = '\0';
}

/* A digit of the log's hex: lower case only, the one canonical form. */
static int hexval(char c)
{
	return c >= 'A' && c <= 'F' ? -1 : hex_value((unsigned char)c);
}

int au_unhex(const char *s, size_t len, uint8_t *out, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned bad = 0;

	if (len != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval((char)u[2 * i]), lo = hexval((char)u[2 * i + 1]);

		bad |= (hi < 0) | (lo < 0);
		out[i] = (uint8_t)((unsigned)hi << 4 | (unsigned)lo);
	}
	return bad ? -EINVAL : 0;
}

static int sha256_3(const void *a, size_t alen, const void *b, size_t blen, const void *c,
		    size_t clen, uint8_t out[AU_HASH_BYTES])
{
	sha256_parts(a, alen, b, blen, c, clen, out);
	return 0;
}

int au_genesis(const char *sandbox_id, uint8_t out[AU_HASH_BYTES])
{
	return sha256_3(AU_GENESIS_PREFIX, strlen(AU_GENESIS_PREFIX), sandbox_id,
			strlen(sandbox_id), "", 0, out);
}

int au_chain_hash(const uint8_t prev[AU_HASH_BYTES], const char *body, size_t body_len,
		  uint8_t out[AU_HASH_BYTES])
{
	return sha256_3(prev, AU_HASH_BYTES, body, body_len, "}", 1, out);
}

int au_hmac(const uint8_t *key, size_t key_len, const uint8_t *msg, size_t msg_len,
	    uint8_t out[AU_HASH_BYTES])
{
	hmac_sha256(key, key_len, msg, msg_len, out);
	return 0;
}

char *au_member_hex(char *body, size_t body_len, const char *name, size_t hexlen)
{
	char key[32];
	int n = snprintf(key, sizeof(key), "\"%s\":\"", name);
	char *hit, *again;

	if (n < 0 || (size_t)n >= sizeof(key))
		return NULL;
	hit = memmem(body, body_len, key, (size_t)n);
	if (!hit)
		return NULL;
	again = memmem(hit + 1, body_len - (size_t)(hit + 1 - body), key, (size_t)n);
	if (again)
		return NULL;
	hit += n;
	if ((size_t)(hit - body) + hexlen + 1 > body_len || hit[hexlen] != '"')
		return NULL;
	for (size_t i = 0; i < hexlen; i++)
		if (hexval(hit[i]) < 0)
			return NULL;
	return hit;
}

int au_cover_message(const char *body, size_t body_len, bool for_hmac, uint8_t **ret,
		     size_t *ret_len)
{
	const char *domain = for_hmac ? AU_HMAC_DOMAIN : AU_SIG_DOMAIN;
	size_t dlen = strlen(domain) + 1, len;
	uint8_t *msg;
	char *copy, *slot;

	if (__builtin_add_overflow(dlen, body_len + 1, &len))
		return -EOVERFLOW;
	msg = malloc(len);
	if (!msg)
		return -ENOMEM;
	memcpy(msg, domain, dlen);
	copy = (char *)msg + dlen;
	memcpy(copy, body, body_len);
	copy[body_len] = '}';
	slot = au_member_hex(copy, body_len, "sig", 2 * AU_SIG_BYTES);
	if (slot)
		memset(slot, '0', 2 * AU_SIG_BYTES);
	slot = for_hmac ? au_member_hex(copy, body_len, "hmac", AU_HASH_HEX) : NULL;
	if (slot)
		memset(slot, '0', AU_HASH_HEX);
	*ret = msg;
	*ret_len = len;
	return 0;
}

/* Restricted so that the id needs no JSON escaping and cannot smuggle
 * terminal controls into reports. */
bool au_valid_sandbox_id(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > AU_SANDBOX_ID_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("._:-", *s)))
			return false;
	return true;
}

bool au_valid_event(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > AU_EVENT_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '.' ||
		      *s == '_'))
			return false;
	return true;
}

/* Writes the n low decimal digits of v, zero-padded, at out. */
static void put_digits(char *out, unsigned long v, size_t n)
{
	while (n-- > 0) {
		out[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/*
 * Every record carries one of these, and a busy sandbox writes thousands a
 * second: the date and time are formatted once per second (gmtime_r and
 * strftime cost more than the rest of a record's text) and the nanoseconds
 * by hand.
 */
int au_format_ts(const struct timespec *ts, char out[AU_TS_LEN + 1])
{
	static _Thread_local time_t cached_sec = -1;
	static _Thread_local char cached[20]; /* 2026-11-29T08:30:00 */

	if (ts->tv_nsec < 0 || ts->tv_nsec > 999999999)
		return -ERANGE;
	if (ts->tv_sec != cached_sec) {
		struct tm tm;

		if (!gmtime_r(&ts->tv_sec, &tm) || tm.tm_year + 1900 < 1000 ||
		    tm.tm_year + 1900 > 9999)
			return -ERANGE;
		if (strftime(cached, sizeof(cached), "%Y-%m-%dT%H:%M:%S", &tm) != 19)
			return -ERANGE;
		cached_sec = ts->tv_sec;
	}
	memcpy(out, cached, 19);
	out[19] = '.';
	put_digits(out + 20, (unsigned long)ts->tv_nsec, 9);
	out[29] = 'Z';
	out[30] = '\0';
	return 0;
}

/* Appends n bytes at *p. */
static void put(char **p, const char *s, size_t n)
{
	memcpy(*p, s, n);
	*p += n;
}

#define PUT_LITERAL(p, lit) put(p, lit, sizeof(lit) - 1)

/* The record's text is assembled with memcpy, not snprintf: it is on the
 * path of every exec the sandbox makes. */
int au_record_build(uint64_t seq, const struct timespec *ts, const char *sandbox_id,
		    const char *event, const char *data_json, const uint8_t prev[AU_HASH_BYTES],
		    char **ret_line, size_t *ret_len, uint8_t ret_hash[AU_HASH_BYTES])
{
	_cleanup_free_ char *line = NULL;
	char tsbuf[AU_TS_LEN + 1], seqbuf[20], *p;
	uint8_t hash[AU_HASH_BYTES];
	size_t fixed, total, data_len = strlen(data_json), id_len = strlen(sandbox_id),
			     event_len = strlen(event), seq_len = 0;
	int r;

	r = au_format_ts(ts, tsbuf);
	if (r < 0)
		return r;
	if (id_len > AU_SANDBOX_ID_MAX || event_len > AU_EVENT_MAX)
		return -EOVERFLOW;
	do /* seq, most significant digit last */
		seqbuf[seq_len++] = (char)('0' + seq % 10);
	while ((seq /= 10) > 0);

	/* Everything but data: bounded by the id and event limits. */
	fixed = 256 + AU_SANDBOX_ID_MAX + AU_EVENT_MAX + 2 * AU_HASH_HEX;
	if (__builtin_add_overflow(fixed, data_len, &total))
		return -EOVERFLOW;
	line = malloc(total);
	if (!line)
		return -ENOMEM;
	p = line;
	PUT_LITERAL(&p, AU_SCHEMA_PREFIX "\"seq\":");
	while (seq_len > 0)
		*p++ = seqbuf[--seq_len];
	PUT_LITERAL(&p, ",\"ts\":\"");
	put(&p, tsbuf, AU_TS_LEN);
	PUT_LITERAL(&p, "\",\"sandbox\":\"");
	put(&p, sandbox_id, id_len);
	PUT_LITERAL(&p, "\",\"event\":\"");
	put(&p, event, event_len);
	PUT_LITERAL(&p, "\",\"data\":");
	put(&p, data_json, data_len);
	PUT_LITERAL(&p, ",\"prev\":\"");
	au_hex(prev, AU_HASH_BYTES, p);
	p += AU_HASH_HEX;
	*p++ = '"';
	r = au_chain_hash(prev, line, (size_t)(p - line), hash);
	if (r < 0)
		return r;
	PUT_LITERAL(&p, AU_HASH_SUFFIX_HEAD);
	au_hex(hash, AU_HASH_BYTES, p);
	p += AU_HASH_HEX;
	PUT_LITERAL(&p, "\"}\n");
	*p = '\0';

	memcpy(ret_hash, hash, AU_HASH_BYTES);
	*ret_len = (size_t)(p - line);
	*ret_line = TAKE_PTR(line);
	return 0;
}

int au_read_line(FILE *in, char **buf, size_t *cap, size_t *ret_len, bool *ret_newline)
{
	size_t len = 0;
	int c;

	for (;;) {
		c = getc_unlocked(in);
		if (c == EOF || c == '\n')
			break;
		/* The newline counts toward AU_LINE_MAX, hence the - 1. Not read
		 * any further: the rest of an endless line (/dev/zero) would
		 * never come. */
		if (len >= AU_LINE_MAX - 1)
			return -EMSGSIZE;
		if (len == *cap) {
			size_t ncap = *cap ? *cap * 2 : AU_LINE_START;
			char *n;

			if (ncap > AU_LINE_MAX)
				ncap = AU_LINE_MAX;
			n = realloc(*buf, ncap);
			if (!n)
				return -ENOMEM;
			*buf = n;
			*cap = ncap;
		}
		(*buf)[len++] = (char)c;
	}
	if (ferror(in))
		return -EIO;
	if (c == EOF && len == 0)
		return 0;
	*ret_len = len;
	*ret_newline = c == '\n';
	return 1;
}

#define AU_LINES_BLOCK (128u << 10) /* the first buffer, doubled up to AU_LINE_MAX */

int au_lines_next(au_lines *l, const char **ret_line, size_t *ret_len, bool *ret_newline)
{
	for (;;) {
		char *nl = l->end > l->searched
			       ? memchr(l->buf + l->searched, '\n', l->end - l->searched)
			       : NULL;
		size_t pending, want, n;

		if (nl) {
			*ret_line = l->buf + l->start;
			*ret_len = (size_t)(nl - *ret_line);
			*ret_newline = true;
			l->start = l->searched = (size_t)(nl + 1 - l->buf);
			return 1;
		}
		l->searched = l->end;
		pending = l->end - l->start;
		/* au_read_line's rule: AU_LINE_MAX - 1 bytes and the newline */
		if (pending > AU_LINE_MAX - 1)
			return -EMSGSIZE;
		if (l->eof) {
			if (pending == 0)
				return 0;
			*ret_line = l->buf + l->start;
			*ret_len = pending;
			*ret_newline = false;
			l->start = l->searched = l->end;
			return 1;
		}
		if (l->start > 0) {
			memmove(l->buf, l->buf + l->start, pending);
			l->start = 0;
			l->end = l->searched = pending;
		}
		if (l->end == l->cap) {
			size_t ncap = l->cap ? 2 * l->cap : AU_LINES_BLOCK;
			char *b;

			if (ncap > AU_LINE_MAX)
				ncap = AU_LINE_MAX;
			b = realloc(l->buf, ncap);
			if (!b)
				return -ENOMEM;
			l->buf = b;
			l->cap = ncap;
		}
		/* Never more than AU_LINE_MAX bytes past the line's start: an
		 * endless line (/dev/zero) is read no further. */
		want = l->cap - l->end;
		if (want > AU_LINE_MAX - pending)
			want = AU_LINE_MAX - pending;
		n = fread(l->buf + l->end, 1, want, l->in);
		l->end += n;
		if (n < want) {
			if (ferror(l->in))
				return -EIO;
			l->eof = true;
		}
	}
}

void au_lines_done(au_lines *l)
{
	free(l->buf);
	*l = (au_lines){0};
}

int au_log_bound_add(au_log_bound *b, size_t len, bool newline, char *why, size_t why_len)
{
	b->lines++;
	b->bytes += len + newline;
	if (b->lines <= AU_LOG_MAX_LINES && b->bytes <= AU_LOG_MAX_BYTES)
		return 0;
	(void)snprintf(why, why_len,
		       "the log is longer than %u lines or %llu GiB, the most that is read; not "
		       "read any further",
		       AU_LOG_MAX_LINES, (unsigned long long)(AU_LOG_MAX_BYTES >> 30));
	return -EFBIG;
}

size_t au_utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

json_t *au_str(const char *bytes, size_t len, size_t max_bytes)
{
	const unsigned char *s = (const unsigned char *)bytes;
	_cleanup_free_ char *out = NULL;
	bool cut = len > max_bytes;
	size_t o = 0, cap;

	if (cut)
		len = max_bytes;
	/* Worst case every byte becomes \xNN, plus "..." and the NUL. */
	if (__builtin_mul_overflow(len, 4, &cap) || __builtin_add_overflow(cap, 4, &cap))
		return NULL;
	out = malloc(cap);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t k = s[i] ? au_utf8_seq(s + i, len - i) : 0;

		if (k == 0) {
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", s[i]);
			i++;
			continue;
		}
		memcpy(out + o, s + i, k);
		o += k;
		i += k;
	}
	if (cut) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	return json_stringn(out, o);
}

json_t *au_argv(const char *const *argv, size_t argc)
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	for (size_t i = 0; i < argc && argv[i]; i++) {
		json_t *s;

		if (i == AU_ARGV_MAX) {
			char more[48];

			(void)snprintf(more, sizeof(more), "...(%zu more)", argc - i);
			s = json_string(more);
		} else
			s = au_str(argv[i], strlen(argv[i]), AU_ARG_MAX_BYTES);
		if (!s || json_array_append_new(a, s) < 0) {
			json_decref(a);
			return NULL;
		}
		if (i == AU_ARGV_MAX)
			break;
	}
	return a;
}

/* SPDX-License-Identifier: MIT */
#include "proxy/sni.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* A cursor over [p, end): every read is checked against end. */
typedef struct rd {
	const uint8_t *p, *end;
	bool bad;
} rd;

static size_t left(const rd *r)
{
	return r->bad ? 0 : (size_t)(r->end - r->p);
}

static uint32_t get(rd *r, size_t n)
{
	uint32_t v = 0;

	if (left(r) < n) {
		r->bad = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v = (v << 8) | *r->p++;
	return v;
}

/* A sub-cursor over the next n bytes (a length-prefixed field). */
static rd take(rd *r, size_t n)
{
	rd s = {.p = r->p, .end = r->p, .bad = true};

	if (left(r) < n) {
		r->bad = true;
		return s;
	}
	s.end = r->p + n;
	s.bad = false;
	r->p += n;
	return s;
}

static int bad(const char **reason, const char *why)
{
	*reason = why;
	return -EBADMSG;
}

static int host_name(rd *list, char *name, const char **reason)
{
	while (left(list) > 0) {
		uint32_t type = get(list, 1);
		rd n = take(list, get(list, 2));
		size_t len = left(&n);

		if (list->bad || n.bad)
			return bad(reason, "malformed server_name extension");
		if (type != 0)
			continue; /* not host_name (none else is defined) */
		if (len == 0 || len > PX_MAX_HOST)
			return bad(reason, "server name empty or too long");
		for (size_t i = 0; i < len; i++) {
			uint8_t ch = n.p[i];

			if (ch >= 'A' && ch <= 'Z')
				ch = (uint8_t)(ch - 'A' + 'a');
			if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
			      ch == '_' || ch == '.'))
				return bad(reason, "server name is not a host name");
			name[i] = (char)ch;
		}
		name[len] = 0;
		return PX_SNI_FOUND;
	}
	return bad(reason, "server_name extension without a host name");
}

int px_sni_parse(const uint8_t *buf, size_t len, char *name, const char **reterr_reason)
{
	rd all = {.p = buf, .end = buf + len};
	rd rec, hs, hello, exts;
	uint32_t rlen, hlen;
	int found = PX_SNI_ABSENT;

	if (len < 5)
		return len == 0 || buf[0] == 0x16 ? PX_SNI_NEED_MORE
						  : bad(reterr_reason, "not a TLS handshake");
	if (buf[0] != 0x16 || buf[1] != 0x03)
		return bad(reterr_reason, "not a TLS handshake record");
	rlen = ((uint32_t)buf[3] << 8) | buf[4];
	if (rlen == 0 || rlen > PX_TLS_RECORD_MAX)
		return bad(reterr_reason, "TLS record length out of range");
	if (len - 5 < rlen)
		return PX_SNI_NEED_MORE;
	(void)get(&all, 5);
	rec = take(&all, rlen);
	if (get(&rec, 1) != 1)
		return bad(reterr_reason, "first handshake message is not a ClientHello");
	hlen = get(&rec, 3);
	if (rec.bad || hlen != left(&rec))
		return bad(reterr_reason, "ClientHello not in exactly one record");
	hs = take(&rec, hlen);
	(void)get(&hs, 2);	      /* legacy_version */
	(void)take(&hs, 32);	      /* random */
	(void)take(&hs, get(&hs, 1)); /* legacy_session_id */
	(void)take(&hs, get(&hs, 2)); /* cipher_suites */
	(void)take(&hs, get(&hs, 1)); /* legacy_compression_methods */
	if (hs.bad)
		return bad(reterr_reason, "malformed ClientHello");
	if (left(&hs) == 0)
		return PX_SNI_ABSENT; /* no extensions at all */
	exts = take(&hs, get(&hs, 2));
	if (hs.bad || left(&hs) != 0)
		return bad(reterr_reason, "malformed ClientHello extensions");
	hello = exts;
	while (left(&hello) > 0) {
		uint32_t type = get(&hello, 2);
		rd body = take(&hello, get(&hello, 2));

		if (hello.bad)
			return bad(reterr_reason, "malformed ClientHello extension");
		if (type != 0)
			continue;
		if (found == PX_SNI_FOUND)
			return bad(reterr_reason, "two server_name extensions");
		{
			rd list = take(&body, get(&body, 2));

			if (body.bad || left(&body) != 0)
				return bad(reterr_reason, "malformed server_name extension");
			found = host_name(&list, name, reterr_reason);
			if (found < 0)
				return found;
		}
	}
	return found;
}

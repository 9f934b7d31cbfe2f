/* SPDX-License-Identifier: MIT */
#include "proxy/origin.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "proxy/http.h"

/* The Host header's value in the header lines [p, end), trimmed, or NULL;
 * *dup when there are more than one. */
static const char *find_host(const char *p, const char *end, size_t *n, bool *dup)
{
	const char *found = NULL;

	*n = 0;
	*dup = false;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *v, *ve;

		if (!eol)
			eol = end;
		if ((size_t)(eol - p) >= 5 && strncasecmp(p, "host:", 5) == 0) {
			if (found)
				*dup = true;
			for (v = p + 5, ve = eol; v < ve && (*v == ' ' || *v == '\t'); v++)
				;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			found = v;
			*n = (size_t)(ve - v);
		}
		p = eol + 1;
	}
	return found;
}

/* Host names name, with port or without one. */
static bool host_ok(const char *v, size_t n, const char *name, uint16_t port)
{
	size_t nl = strlen(name);
	char p[8];
	int pl;

	if (n < nl || strncasecmp(v, name, nl) != 0)
		return false;
	if (n == nl)
		return true;
	pl = snprintf(p, sizeof(p), ":%u", (unsigned)port);
	return pl > 0 && n - nl == (size_t)pl && memcmp(v + nl, p, (size_t)pl) == 0;
}

int px_origin_to_absolute(char *buf, size_t *len, size_t cap, const char *name, uint16_t port,
			  const char **reterr_reason)
{
	const char *head_end = memmem(buf, *len, "\r\n\r\n", 4);
	const char *line_end, *sp, *host;
	char prefix[PX_MAX_HOST + 16];
	size_t off, hn;
	int plen;
	bool dup;

	if (!head_end)
		return 0;
	line_end = memchr(buf, '\n', (size_t)(head_end - buf) + 2);
	sp = memchr(buf, ' ', (size_t)(line_end - buf));
	if (!sp || sp + 1 >= line_end || sp[1] != '/') {
		*reterr_reason = "a transparent request's target must be a path";
		return -EBADMSG;
	}
	host = find_host(line_end + 1, head_end + 2, &hn, &dup);
	if (dup || (host && !host_ok(host, hn, name, port))) {
		*reterr_reason =
		    "the Host header names another host than the address was given for";
		return -EACCES;
	}
	plen = snprintf(prefix, sizeof(prefix), "http://%s:%u", name, (unsigned)port);
	if (plen < 0 || (size_t)plen >= sizeof(prefix) || *len + (size_t)plen > cap)
		return -EMSGSIZE;
	off = (size_t)(sp + 1 - buf);
	memmove(buf + off + plen, buf + off, *len - off);
	memcpy(buf + off, prefix, (size_t)plen);
	*len += (size_t)plen;
	return 1;
}

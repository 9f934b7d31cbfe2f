/* SPDX-License-Identifier: MIT */
#include "serve/request.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"

/*
 * Percent-decodes s[0..n) into out (NUL-terminated). A decoded NUL is
 * refused (it would cut the string short where a later check does not
 * look), and so is '/' inside a path segment (it would make one segment
 * two after decoding). '+' means a space only in a query.
 */
static int pct_decode(const char *s, size_t n, bool query, bool segment, char *out, size_t *pos,
		      size_t cap)
{
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int h, l;

			if (i + 2 >= n)
				return -EINVAL;
			h = hex_value((unsigned char)s[i + 1]);
			l = hex_value((unsigned char)s[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			c = h * 16 + l;
			i += 2;
			if (c == 0 || (segment && c == '/'))
				return -EINVAL;
		} else if (c == '+' && query)
			c = ' ';
		if (*pos + 1 >= cap)
			return -E2BIG;
		out[(*pos)++] = (char)c;
	}
	if (*pos >= cap)
		return -E2BIG;
	out[(*pos)++] = 0;
	return 0;
}

static int split_target(const char *t, size_t n, sv_request *r, const char **reason)
{
	const char *q = memchr(t, '?', n);
	size_t plen = q ? (size_t)(q - t) : n, pos = 0, i = 1;

	/* path: "/" then segments separated by single slashes */
	while (i < plen) {
		size_t s = i;

		while (i < plen && t[i] != '/')
			i++;
		if (i == s) {
			*reason = "empty path segment";
			return -404;
		}
		if (r->n_segments >= SV_MAX_SEGMENTS) {
			*reason = "too many path segments";
			return -404;
		}
		r->segments[r->n_segments] = r->decoded + pos;
		if (pct_decode(t + s, i - s, false, true, r->decoded, &pos, sizeof(r->decoded)) <
		    0) {
			*reason = "invalid percent-encoding in the path";
			return -400;
		}
		if (!strcmp(r->segments[r->n_segments], ".") ||
		    !strcmp(r->segments[r->n_segments], "..")) {
			*reason = "dot segment in the path";
			return -404;
		}
		r->n_segments++;
		i++; /* the slash */
		if (i == plen && t[plen - 1] == '/') {
			*reason = "trailing slash";
			return -404;
		}
	}
	if (!q)
		return 0;
	i = plen + 1;
	while (i < n) {
		size_t s = i, eq = 0;

		while (i < n && t[i] != '&') {
			if (t[i] == '=' && !eq)
				eq = i;
			i++;
		}
		if (i > s) {
			size_t name_end = eq ? eq : i;
			sv_param *p;

			if (r->n_query >= SV_MAX_QUERY) {
				*reason = "too many query parameters";
				return -400;
			}
			p = &r->query[r->n_query];
			p->name = r->decoded + pos;
			if (pct_decode(t + s, name_end - s, true, false, r->decoded, &pos,
				       sizeof(r->decoded)) < 0) {
				*reason = "invalid query parameter";
				return -400;
			}
			p->value = r->decoded + pos;
			if (pct_decode(t + name_end + (eq ? 1 : 0), i - name_end - (eq ? 1 : 0),
				       true, false, r->decoded, &pos, sizeof(r->decoded)) < 0) {
				*reason = "invalid query parameter";
				return -400;
			}
			r->n_query++;
		}
		i++;
	}
	return 0;
}

/* De-chunks a complete chunked body; 0 incomplete, 1 done, -EBADMSG, -EFBIG. */
static int dechunk(const char *buf, size_t len, size_t max_body, char **ret, size_t *ret_len,
		   size_t *ret_used)
{
	px_chunked ch = {0};
	size_t used = 0;
	uint64_t data = 0;
	int r;

	/* First pass: validate framing and measure, without copying. */
	r = px_chunked_feed(&ch, buf, len, &used, &data);
	if (r < 0)
		return r;
	if (data > max_body)
		return -EFBIG;
	if (r == 0)
		return 0;
	/* Second pass: copy the data of each chunk. The framing is known good. */
	_Static_assert(SV_MAX_BODY < SIZE_MAX / 2, "body size");
	char *out = malloc((size_t)data + 1);
	size_t o = 0, i = 0;

	if (!out)
		return -ENOMEM;
	while (i < used) {
		size_t size = 0;

		while (hex_value((unsigned char)buf[i]) >= 0)
			size = size * 16 + (size_t)hex_value((unsigned char)buf[i++]);
		while (buf[i] != '\n')
			i++;
		i++;
		if (size == 0)
			break;
		memcpy(out + o, buf + i, size);
		o += size;
		i += size + 2;
	}
	out[o] = 0;
	*ret = out;
	*ret_len = o;
	*ret_used = used;
	return 1;
}

static bool segment_is(const sv_request *r, size_t i, const char *s)
{
	return i < r->n_segments && !strcmp(r->segments[i], s);
}

size_t sv_request_body_limit(const sv_request *r)
{
	const char *m = r->head.method;

	if (r->n_segments == 2 && segment_is(r, 1, "sessions") && !strcmp(m, "POST"))
		return SV_MAX_CREATE_BODY;
	if (r->n_segments == 4 && segment_is(r, 1, "sessions") &&
	    ((segment_is(r, 3, "exec") && !strcmp(m, "POST")) ||
	     (segment_is(r, 3, "files") && !strcmp(m, "PUT"))))
		return SV_MAX_BODY;
	/* a command's argv and env (a create's bound); what is sent to its stdin */
	if (r->n_segments == 4 && segment_is(r, 1, "sessions") && segment_is(r, 3, "commands") &&
	    !strcmp(m, "POST"))
		return SV_MAX_CREATE_BODY;
	if (r->n_segments == 6 && segment_is(r, 1, "sessions") && segment_is(r, 3, "commands") &&
	    segment_is(r, 5, "stdin") && !strcmp(m, "POST"))
		return SV_MAX_BODY;
	return SV_MAX_OTHER_BODY;
}

int sv_request_chunked_progress(sv_body_progress *p, const char *body, size_t len, size_t max_body,
				const char **reason)
{
	size_t used = 0;
	uint64_t data = 0;
	int r;

	if (p->fed >= len)
		return 0;
	r = px_chunked_feed(&p->ch, body + p->fed, len - p->fed, &used, &data);
	if (r < 0) {
		*reason = "malformed chunked body";
		return -400;
	}
	p->fed += used;
	p->data += data;
	/* the chunk being read counts whole: its size was announced */
	if (p->data + p->ch.remaining > max_body) {
		*reason = "body too large";
		return -413;
	}
	if (p->fed - p->data > SV_MAX_CHUNK_FRAMING) {
		*reason = "chunk framing too large (chunks too small)";
		return -413;
	}
	return r;
}

int sv_request_parse(const char *buf, size_t len, size_t max_body, sv_request *r,
		     bool *want_continue, const char **reason)
{
	size_t head;
	int n;

	*want_continue = false;
	r->head_done = false;
	n = px_http_parse_server_request(buf, len, SV_MAX_HEAD, &r->head, reason);
	if (n <= 0)
		return n;
	head = (size_t)n;
	r->body = NULL;
	r->body_len = 0;
	r->n_segments = 0;
	r->n_query = 0;
	n = split_target(buf + r->head.path.off, r->head.path.len, r, reason);
	if (n < 0)
		return n;
	r->head_done = true;
	if (max_body > SV_MAX_BODY)
		max_body = SV_MAX_BODY;
	if (max_body > sv_request_body_limit(r))
		max_body = sv_request_body_limit(r);
	r->max_body = max_body;
	r->stream_body = false;
	if (r->head.has_content_length && r->n_segments == 4 && segment_is(r, 1, "sessions") &&
	    segment_is(r, 3, "files") && !strcmp(r->head.method, "PUT")) {
		if (r->head.content_length > SV_MAX_STREAM_BODY) {
			*reason = "body too large";
			return -413;
		}
		r->stream_body = true;
		r->consumed = head;
		return 1;
	}
	if (r->head.has_content_length) {
		if (r->head.content_length > max_body) {
			*reason = "body too large";
			return -413;
		}
		if (len - head < r->head.content_length) {
			*want_continue = r->head.expect_continue;
			return 0;
		}
		r->body_len = (size_t)r->head.content_length;
		r->body = malloc(r->body_len + 1);
		if (!r->body) {
			*reason = "out of memory";
			return -413;
		}
		memcpy(r->body, buf + head, r->body_len);
		r->body[r->body_len] = 0;
		r->consumed = head + r->body_len;
		return 1;
	}
	if (r->head.chunked) {
		size_t used = 0;

		n = dechunk(buf + head, len - head, max_body, &r->body, &r->body_len, &used);
		if (n == -EFBIG || n == -ENOMEM) {
			*reason = "body too large";
			return -413;
		}
		if (n < 0) {
			*reason = "malformed chunked body";
			return -400;
		}
		if (n == 0) {
			*want_continue = r->head.expect_continue;
			return 0;
		}
		r->consumed = head + used;
		return 1;
	}
	r->consumed = head;
	return 1;
}

void sv_request_done(sv_request *r)
{
	free(r->body);
	r->body = NULL;
}

const char *sv_request_query(const sv_request *r, const char *name)
{
	for (size_t i = 0; i < r->n_query; i++)
		if (!strcmp(r->query[i].name, name))
			return r->query[i].value;
	return NULL;
}

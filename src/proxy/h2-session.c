/* SPDX-License-Identifier: MIT */
/*
 * The nghttp2 server session of an inspected HTTP/2 connection (h2.h).
 *
 * Memory is bounded by the SETTINGS the session sends and enforces: at most
 * PX_H2_MAX_STREAMS streams, a header list of PX_H2_MAX_HEADER_LIST bytes
 * (counted as RFC 9113 does, 32 per field), and request bodies held only
 * until the socketpair takes them: the windows are opened again
 * (nghttp2_session_consume) only for bytes written, so a client can have at
 * most PX_H2_CONN_WINDOW bytes of bodies in the worker. Responses are read
 * from a socketpair only while its buffer has room, and frames are made
 * only while the client reads them (PX_H2_OUT_MAX).
 */
#include "proxy/h2.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/http.h"

typedef struct h2_buf {
	char *p;
	size_t len, off, cap;
} h2_buf;

typedef struct h2_stream {
	struct h2_stream *next, *prev;
	int32_t id;
	int fd; /* our end of the socketpair, -1 before the request and after */
	uint32_t events;
	bool registered;
	/* request: pseudo-headers, the other fields as HTTP/1.1 lines */
	char method[PX_MAX_METHOD + 1];
	char authority[PX_MAX_HOST + 8];
	char *path;
	h2_buf fields, cookie;
	size_t list_size; /* RFC 9113 6.5.2: name + value + 32 per field */
	bool too_large, chunked, has_length, opened, req_end, last_chunk, discard;
	const char *bad;       /* why the request cannot be an HTTP/1.1 head: refused with 400 */
	h2_buf req;	       /* bytes for the socketpair: the head, then each piece of body */
	h2_buf body;	       /* DATA payload not yet in req (at most a window) */
	size_t req_unconsumed; /* DATA payload not yet written, not yet given back to the window */
	/* response */
	h2_buf resp;
	bool head_done, no_body, is_head, chunked_resp, close_delimited, resp_eof, resp_done;
	bool deferred;
	uint64_t resp_left;
	px_chunked chunk;
} h2_stream;

struct px_h2 {
	nghttp2_session *ng;
	px_h2_open_fn *open;
	void *userdata;
	h2_stream *streams;
	size_t n_streams;
	h2_buf out;
	bool failed;
};

static int buf_add(h2_buf *b, const void *p, size_t n, size_t max)
{
	size_t need;

	if (__builtin_add_overflow(b->len, n, &need) || need > max)
		return -E2BIG;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *np;

		while (cap < need)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len = need;
	return 0;
}

static int buf_str(h2_buf *b, const char *s, size_t max)
{
	return buf_add(b, s, strlen(s), max);
}

/* Drops the bytes before b->off. */
static void buf_compact(h2_buf *b)
{
	if (b->off == 0)
		return;
	memmove(b->p, b->p + b->off, b->len - b->off);
	b->len -= b->off;
	b->off = 0;
}

static void buf_free(h2_buf *b)
{
	free(b->p);
	*b = (h2_buf){0};
}

/* The head, then a window of body with its chunk framing, stay under this. */
#define REQ_MAX	 (PX_MAX_HEAD + PX_H2_STREAM_WINDOW + 1024u)
#define BODY_MAX PX_H2_STREAM_WINDOW

static h2_stream *find(px_h2 *h, int32_t id)
{
	return nghttp2_session_get_stream_user_data(h->ng, id);
}

static void stream_free(px_h2 *h, h2_stream *s)
{
	if (s->fd >= 0)
		(void)close(s->fd); /* also leaves the epoll set */
	if (s->req_unconsumed)
		(void)nghttp2_session_consume_connection(h->ng, s->req_unconsumed);
	if (s->prev)
		s->prev->next = s->next;
	else
		h->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	h->n_streams--;
	free(s->path);
	buf_free(&s->fields);
	buf_free(&s->cookie);
	buf_free(&s->req);
	buf_free(&s->body);
	buf_free(&s->resp);
	free(s);
}

static void reset(px_h2 *h, h2_stream *s, uint32_t code)
{
	(void)nghttp2_submit_rst_stream(h->ng, NGHTTP2_FLAG_NONE, s->id, code);
}

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *frame, void *ud)
{
	px_h2 *h = ud;
	h2_stream *s;

	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if (h->n_streams >= PX_H2_MAX_STREAMS) {
		/* nghttp2 refuses these itself; a stream without data is ignored */
		(void)nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
						NGHTTP2_REFUSED_STREAM);
		return 0;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	s->id = frame->hd.stream_id;
	s->fd = -1;
	s->next = h->streams;
	if (h->streams)
		h->streams->prev = s;
	h->streams = s;
	h->n_streams++;
	if (nghttp2_session_set_stream_user_data(ng, s->id, s) != 0) {
		stream_free(h, s);
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	return 0;
}

static bool name_is(const uint8_t *name, size_t len, const char *lit)
{
	return len == strlen(lit) && memcmp(name, lit, len) == 0;
}

/* nghttp2 has checked the fields (RFC 9113 8.2.1); these are the ones
 * HTTP/1.1 frames differently or the Host line stands for. */
static int take_field(h2_stream *s, const uint8_t *name, size_t nl, const uint8_t *value, size_t vl)
{
	int r = 0;

	if (name_is(name, nl, ":method")) {
		if (vl >= sizeof(s->method))
			s->bad = "invalid method";
		(void)snprintf(s->method, sizeof(s->method), "%.*s", (int)vl, value);
	} else if (name_is(name, nl, ":path")) {
		free(s->path);
		s->path = strndup((const char *)value, vl);
		if (!s->path)
			return -ENOMEM;
	} else if (name_is(name, nl, ":authority") ||
		   (name_is(name, nl, "host") && !s->authority[0])) {
		if (vl >= sizeof(s->authority))
			s->bad = "invalid :authority";
		(void)snprintf(s->authority, sizeof(s->authority), "%.*s", (int)vl, value);
	} else if (nl > 0 && name[0] == ':')
		return 0; /* :scheme: https, as the tunnel is */
	else if (s->too_large || name_is(name, nl, "host") || name_is(name, nl, "te") ||
		 name_is(name, nl, "expect"))
		return 0;
	else if (name_is(name, nl, "cookie")) {
		/* RFC 9113 8.2.3: split cookies are one field again in HTTP/1.1 */
		if (s->cookie.len)
			r = buf_add(&s->cookie, "; ", 2, PX_H2_MAX_HEADER_LIST);
		if (r == 0)
			r = buf_add(&s->cookie, value, vl, PX_H2_MAX_HEADER_LIST);
	} else {
		if (name_is(name, nl, "content-length"))
			s->has_length = true;
		r = buf_add(&s->fields, name, nl, PX_H2_MAX_HEADER_LIST);
		if (r == 0)
			r = buf_add(&s->fields, ": ", 2, PX_H2_MAX_HEADER_LIST);
		if (r == 0)
			r = buf_add(&s->fields, value, vl, PX_H2_MAX_HEADER_LIST);
		if (r == 0)
			r = buf_add(&s->fields, "\r\n", 2, PX_H2_MAX_HEADER_LIST);
	}
	return r;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
		     size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
	h2_stream *s = find(ud, frame->hd.stream_id);

	(void)ng;
	(void)flags;
	if (!s || frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	s->list_size += nl + vl + 32;
	if (s->list_size > PX_H2_MAX_HEADER_LIST)
		s->too_large = true; /* refused with 431, as an HTTP/1.1 head of that size */
	if (frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0; /* trailers of a request: not passed on */
	/* CR, LF and NUL nghttp2 refuses already; the HTTP/1.1 head must not
	 * carry them whatever a library version lets through */
	if (memchr(name, '\r', nl) || memchr(name, '\n', nl) || memchr(value, '\r', vl) ||
	    memchr(value, '\n', vl) || memchr(value, 0, vl)) {
		s->bad = "control character in a header field";
		return 0;
	}
	switch (take_field(s, name, nl, value, vl)) {
	case 0:
		return 0;
	case -E2BIG:
		s->too_large = true;
		return 0;
	default:
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
}

/* The request as HTTP/1.1, origin-form, for the strict parser of inspected heads. */
static int build_head(h2_stream *s, bool end_stream)
{
	h2_buf *b = &s->req;
	int r;

	s->chunked = !end_stream && !s->has_length;
	r = buf_str(b, s->method, REQ_MAX);
	if (r == 0)
		r = buf_str(b, " ", REQ_MAX);
	if (r == 0)
		r = buf_str(b, s->path ? s->path : "", REQ_MAX);
	if (r == 0)
		r = buf_str(b, " HTTP/1.1\r\nHost: ", REQ_MAX);
	if (r == 0)
		r = buf_str(b, s->authority, REQ_MAX);
	if (r == 0)
		r = buf_str(b, "\r\n", REQ_MAX);
	if (r == 0 && s->fields.len)
		r = buf_add(b, s->fields.p, s->fields.len, REQ_MAX);
	if (r == 0 && s->cookie.len) {
		r = buf_str(b, "cookie: ", REQ_MAX);
		if (r == 0)
			r = buf_add(b, s->cookie.p, s->cookie.len, REQ_MAX);
		if (r == 0)
			r = buf_str(b, "\r\n", REQ_MAX);
	}
	if (r == 0 && s->chunked)
		r = buf_str(b, "transfer-encoding: chunked\r\n", REQ_MAX);
	if (r == 0)
		r = buf_str(b, "\r\n", REQ_MAX);
	buf_free(&s->fields);
	buf_free(&s->cookie);
	return r;
}

/* The stream's headers are complete: its socketpair and connection. */
static void open_stream(px_h2 *h, h2_stream *s, bool end_stream)
{
	px_h2_open o = {.stream_id = s->id,
			.method = s->method,
			.path = s->path ? s->path : "",
			.authority = s->authority};
	int sp[2], r;

	s->opened = true;
	s->is_head = strcmp(s->method, "HEAD") == 0;
	if (s->too_large || s->bad) {
		/* the statuses the HTTP/1.1 parser answers such a head with */
		o.refuse_status = s->too_large ? 431 : 400;
		o.refuse_text = s->too_large ? "header list too large" : s->bad;
		buf_free(&s->fields);
		buf_free(&s->cookie);
		s->discard = true;
	} else if (build_head(s, end_stream) < 0) {
		reset(h, s, NGHTTP2_INTERNAL_ERROR);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) < 0) {
		reset(h, s, NGHTTP2_REFUSED_STREAM);
		return;
	}
	r = h->open(h->userdata, sp[1], &o);
	if (r < 0) {
		(void)close(sp[0]);
		reset(h, s, NGHTTP2_REFUSED_STREAM);
		return;
	}
	s->fd = sp[0];
	s->req_end = end_stream;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *frame, void *ud)
{
	px_h2 *h = ud;
	h2_stream *s = find(h, frame->hd.stream_id);
	bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;

	(void)ng;
	if (!s)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
		open_stream(h, s, end);
	else if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) && end &&
		 s->opened)
		s->req_end = true;
	return 0;
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
			 size_t len, void *ud)
{
	px_h2 *h = ud;
	h2_stream *s = find(h, id);

	(void)flags;
	if (!s || s->discard || s->fd < 0) {
		(void)nghttp2_session_consume(ng, id, len);
		return 0;
	}
	if (buf_add(&s->body, data, len, BODY_MAX) < 0) {
		/* more than the window allows: the client ignores flow control */
		(void)nghttp2_session_consume(ng, id, len);
		reset(h, s, NGHTTP2_FLOW_CONTROL_ERROR);
		return 0;
	}
	s->req_unconsumed += len;
	return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *ud)
{
	h2_stream *s = find(ud, id);

	(void)code;
	if (s) {
		(void)nghttp2_session_set_stream_user_data(ng, id, NULL);
		stream_free(ud, s);
	}
	return 0;
}

/*
 * The response body for the stream, as HTTP/2 carries it: without the
 * chunked framing (checked again by the same tracker the forward path uses).
 */
static ssize_t read_body(nghttp2_session *ng, int32_t id, uint8_t *out, size_t length,
			 uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	h2_stream *s = src->ptr;
	h2_buf *b = &s->resp;
	size_t filled = 0;

	(void)ng;
	(void)id;
	(void)ud;
	while (filled < length && b->off < b->len && !s->resp_done) {
		size_t avail = b->len - b->off, take;

		if (s->chunked_resp) {
			size_t used;
			uint64_t data;
			int r;

			take = 1; /* the framing byte by byte, the data in runs */
			if (s->chunk.state == PX_CHUNK_DATA) {
				take = avail < length - filled ? avail : length - filled;
				if (take > s->chunk.remaining)
					take = (size_t)s->chunk.remaining;
			}
			r = px_chunked_feed(&s->chunk, b->p + b->off, take, &used, &data);
			if (r < 0)
				return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
			if (data) {
				memcpy(out + filled, b->p + b->off, (size_t)data);
				filled += (size_t)data;
			}
			b->off += used;
			s->resp_done = r == 1;
			continue;
		}
		take = avail < length - filled ? avail : length - filled;
		if (!s->close_delimited && take > s->resp_left)
			take = (size_t)s->resp_left;
		memcpy(out + filled, b->p + b->off, take);
		filled += take;
		b->off += take;
		if (!s->close_delimited) {
			s->resp_left -= take;
			s->resp_done = s->resp_left == 0;
		}
	}
	buf_compact(b);
	if (!s->resp_done && s->resp_eof && b->len == 0) {
		if (!s->close_delimited)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* cut short */
		s->resp_done = true;
	}
	if (s->resp_done) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		return (ssize_t)filled;
	}
	if (filled == 0) {
		s->deferred = true;
		return NGHTTP2_ERR_DEFERRED;
	}
	return (ssize_t)filled;
}

static bool hop_by_hop(const char *name, size_t n)
{
	static const char *const hop[] = {"connection",	       "keep-alive", "proxy-connection",
					  "transfer-encoding", "upgrade",    "te"};

	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (n == strlen(hop[i]) && strncasecmp(name, hop[i], n) == 0)
			return true;
	return false;
}

/*
 * The HTTP/1.1 response head (checked by px_http_parse_response) as a
 * HEADERS frame: lower-case names, no connection-specific fields.
 */
static int submit_head(px_h2 *h, h2_stream *s, const px_response *resp)
{
	nghttp2_nv nv[PX_MAX_HEADERS + 1];
	char status[12];
	char *head = strndup(s->resp.p + s->resp.off, resp->head_len);
	char *line, *end;
	size_t n = 0;
	nghttp2_data_provider prd = {.source.ptr = s, .read_callback = read_body};
	int r;

	if (!head)
		return -ENOMEM;
	(void)snprintf(status, sizeof(status), "%03d", resp->status);
	nv[n++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, 3, NGHTTP2_NV_FLAG_NONE};
	line = strstr(head, "\r\n") + 2;
	end = head + resp->head_len - 2;
	while (line < end && n < sizeof(nv) / sizeof(nv[0])) {
		char *eol = strstr(line, "\r\n");
		char *colon = memchr(line, ':', (size_t)(eol - line));
		char *v = colon + 1, *ve = eol;

		/* the parser accepted it: every line is "name:" then a value */
		for (char *p = line; p < colon; p++)
			*p = (char)((*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (!hop_by_hop(line, (size_t)(colon - line)))
			nv[n++] =
			    (nghttp2_nv){(uint8_t *)line, (uint8_t *)v, (size_t)(colon - line),
					 (size_t)(ve - v), NGHTTP2_NV_FLAG_NONE};
		line = eol + 2;
	}
	r = nghttp2_submit_response(h->ng, s->id, nv, n, s->no_body ? NULL : &prd);
	free(head);
	return r == 0 ? 0 : -EIO;
}

/* The response head, once it is complete; 1xx heads before it are skipped. */
static void take_head(px_h2 *h, h2_stream *s)
{
	px_response resp;
	const char *why;
	int r;

	for (;;) {
		r = px_http_parse_response(s->resp.p + s->resp.off, s->resp.len - s->resp.off,
					   s->is_head, &resp, &why);
		if (r == 0 && !s->resp_eof && s->resp.len < PX_H2_RESP_BUF)
			return;
		if (r <= 0) {
			reset(h, s, NGHTTP2_INTERNAL_ERROR);
			s->resp_done = true;
			return;
		}
		if (resp.status >= 200 || resp.status == 101)
			break;
		s->resp.off += (size_t)r; /* 100 Continue: HTTP/2 needs none */
	}
	if (resp.status == 101 || submit_head(h, s, &resp) < 0) {
		reset(h, s, NGHTTP2_INTERNAL_ERROR);
		s->resp_done = true;
		return;
	}
	s->resp.off += (size_t)r;
	buf_compact(&s->resp);
	s->head_done = true;
	s->no_body = resp.no_body;
	s->chunked_resp = resp.chunked;
	s->close_delimited = resp.close_delimited;
	s->resp_left = resp.content_length;
	s->resp_done = s->no_body || (!s->chunked_resp && !s->close_delimited && !s->resp_left);
}

static bool request_pending(const h2_stream *s)
{
	return !s->discard && (s->req.off < s->req.len || s->body.len ||
			       (s->req_end && s->chunked && !s->last_chunk));
}

/* The next piece for the socketpair: the body received so far, as one chunk
 * when chunked (however small the DATA frames were), then the last chunk. */
static int next_piece(h2_stream *s)
{
	char size[24];
	int r = 0;

	s->req.off = s->req.len = 0;
	if (s->body.len && s->chunked) {
		(void)snprintf(size, sizeof(size), "%zx\r\n", s->body.len);
		r = buf_str(&s->req, size, REQ_MAX);
	}
	if (r == 0 && s->body.len)
		r = buf_add(&s->req, s->body.p, s->body.len, REQ_MAX);
	if (r == 0 && s->body.len && s->chunked)
		r = buf_str(&s->req, "\r\n", REQ_MAX);
	if (r == 0 && !s->body.len && s->req_end && s->chunked && !s->last_chunk) {
		r = buf_str(&s->req, "0\r\n\r\n", REQ_MAX);
		s->last_chunk = true;
	}
	s->body.len = 0;
	return r;
}

static void write_request(px_h2 *h, h2_stream *s)
{
	while (request_pending(s)) {
		ssize_t n;

		if (s->req.off == s->req.len && next_piece(s) < 0) {
			reset(h, s, NGHTTP2_INTERNAL_ERROR);
			s->discard = true;
			break;
		}
		n = send(s->fd, s->req.p + s->req.off, s->req.len - s->req.off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return; /* the window opens again once all of it is written */
		if (n < 0) {
			/* the connection answered and closed (a refusal): the rest is dropped */
			s->discard = true;
			break;
		}
		s->req.off += (size_t)n;
	}
	s->req.off = s->req.len = s->body.len = 0;
	if (s->req_unconsumed) {
		(void)nghttp2_session_consume(h->ng, s->id, s->req_unconsumed);
		s->req_unconsumed = 0;
	}
}

static void read_response(px_h2 *h, h2_stream *s)
{
	while (!s->resp_eof && s->resp.len < PX_H2_RESP_BUF) {
		char tmp[16384];
		size_t room = PX_H2_RESP_BUF - s->resp.len;
		ssize_t n = recv(s->fd, tmp, room < sizeof(tmp) ? room : sizeof(tmp), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			s->resp_eof = true;
			break;
		}
		if (buf_add(&s->resp, tmp, (size_t)n, PX_H2_RESP_BUF) < 0) {
			reset(h, s, NGHTTP2_INTERNAL_ERROR);
			s->resp_done = true;
			return;
		}
	}
	if (!s->head_done && !s->resp_done)
		take_head(h, s);
	if (s->head_done && s->deferred && (s->resp.len > 0 || s->resp_eof)) {
		s->deferred = false;
		(void)nghttp2_session_resume_data(h->ng, s->id);
	}
	if (s->resp_eof && !s->head_done && !s->resp_done) {
		reset(h, s, NGHTTP2_INTERNAL_ERROR); /* closed without an answer */
		s->resp_done = true;
	}
}

void px_h2_service(px_h2 *h)
{
	for (h2_stream *s = h->streams; s; s = s->next) {
		if (s->fd < 0)
			continue;
		if (request_pending(s))
			write_request(h, s);
		if (!s->resp_done)
			read_response(h, s);
	}
}

int px_h2_new(px_h2_open_fn *open, void *userdata, px_h2 **ret)
{
	const nghttp2_settings_entry settings[] = {
	    {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, PX_H2_MAX_STREAMS},
	    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, PX_H2_STREAM_WINDOW},
	    {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, PX_H2_MAX_HEADER_LIST},
	    {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
	};
	nghttp2_session_callbacks *cb = NULL;
	nghttp2_option *opt = NULL;
	px_h2 *h = calloc(1, sizeof(*h));
	int r = -ENOMEM;

	if (!h || nghttp2_session_callbacks_new(&cb) != 0 || nghttp2_option_new(&opt) != 0)
		goto out;
	h->open = open;
	h->userdata = userdata;
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	/* windows open again as the socketpairs take the bytes, not on receipt */
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
	if (nghttp2_session_server_new2(&h->ng, cb, h, opt) != 0)
		goto out;
	if (nghttp2_submit_settings(h->ng, NGHTTP2_FLAG_NONE, settings,
				    sizeof(settings) / sizeof(settings[0])) != 0 ||
	    nghttp2_session_set_local_window_size(h->ng, NGHTTP2_FLAG_NONE, 0, PX_H2_CONN_WINDOW) !=
		0) {
		r = -EIO;
		goto out;
	}
	*ret = h;
	h = NULL;
	r = 0;
out:
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
	px_h2_free(h);
	return r;
}

void px_h2_free(px_h2 *h)
{
	if (!h)
		return;
	while (h->streams)
		stream_free(h, h->streams);
	nghttp2_session_del(h->ng);
	buf_free(&h->out);
	free(h);
}

int px_h2_feed(px_h2 *h, const uint8_t *buf, size_t n)
{
	ssize_t r;

	if (h->failed)
		return -EPROTO;
	r = nghttp2_session_mem_recv(h->ng, buf, n);
	if (r < 0 || (size_t)r != n) {
		h->failed = true;
		/* a GOAWAY saying why, when the library queued none */
		(void)nghttp2_session_terminate_session(h->ng, NGHTTP2_PROTOCOL_ERROR);
		return -EPROTO;
	}
	return 0;
}

size_t px_h2_out(px_h2 *h, const uint8_t **p)
{
	buf_compact(&h->out);
	while (h->out.len < PX_H2_OUT_MAX) {
		const uint8_t *data;
		ssize_t n = nghttp2_session_mem_send(h->ng, &data);

		if (n <= 0)
			break;
		if (buf_add(&h->out, data, (size_t)n, SIZE_MAX) < 0) {
			h->failed = true;
			break;
		}
	}
	*p = (const uint8_t *)h->out.p;
	return h->out.len;
}

void px_h2_sent(px_h2 *h, size_t n)
{
	h->out.off += n;
}

bool px_h2_want_read(const px_h2 *h)
{
	return !h->failed && h->out.len - h->out.off < PX_H2_OUT_MAX &&
	       nghttp2_session_want_read(h->ng);
}

bool px_h2_done(const px_h2 *h)
{
	return h->out.len == h->out.off && (h->failed || (!nghttp2_session_want_read(h->ng) &&
							  !nghttp2_session_want_write(h->ng)));
}

size_t px_h2_streams(const px_h2 *h)
{
	return h->n_streams;
}

void px_h2_goaway(px_h2 *h)
{
	(void)nghttp2_session_terminate_session(h->ng, NGHTTP2_NO_ERROR);
}

void px_h2_arm(px_h2 *h, int epfd, void *data)
{
	for (h2_stream *s = h->streams; s; s = s->next) {
		struct epoll_event ev = {.data.ptr = data};

		if (s->fd < 0)
			continue;
		ev.events = (request_pending(s) ? EPOLLOUT : 0u) |
			    (!s->resp_done && !s->resp_eof && s->resp.len < PX_H2_RESP_BUF
				 ? EPOLLIN | EPOLLRDHUP
				 : 0u);
		if (ev.events == 0) {
			if (s->registered)
				(void)epoll_ctl(epfd, EPOLL_CTL_DEL, s->fd, NULL);
			s->registered = false;
			continue;
		}
		if (s->registered && ev.events == s->events)
			continue;
		if (epoll_ctl(epfd, s->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd, &ev) ==
		    0) {
			s->registered = true;
			s->events = ev.events;
		}
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/2 session of inspected connections (src/proxy/h2-session.c),
 * against a real nghttp2 client session in memory: the HTTP/1.1 request each
 * stream writes to its socketpair, the HTTP/1.1 response read back as the
 * stream's response, the 431 for a header list over the limit, and the
 * stream limit.
 */
#include <nghttp2/nghttp2.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/h2.h"
#include "tap.h"

#define MAX_OPEN 64

typedef struct opened {
	int fd[MAX_OPEN];
	int status[MAX_OPEN];
	size_t n;
} opened;

typedef struct client {
	nghttp2_session *ng;
	char status[8], extra[256], body[4096];
	size_t body_len;
	unsigned closed, refused;
} client;

static int on_open(void *userdata, int fd, const px_h2_open *o)
{
	opened *op = userdata;

	if (op->n >= MAX_OPEN) {
		close(fd);
		return -1;
	}
	op->status[op->n] = o->refuse_status;
	op->fd[op->n++] = fd;
	return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
		     size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
	client *c = ud;
	size_t used = strlen(c->extra);

	(void)ng, (void)frame, (void)flags;
	if (nl == 7 && memcmp(name, ":status", 7) == 0)
		(void)snprintf(c->status, sizeof(c->status), "%.*s", (int)vl, value);
	else
		(void)snprintf(c->extra + used, sizeof(c->extra) - used, "%.*s=%.*s;", (int)nl,
			       name, (int)vl, value);
	return 0;
}

static int on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *ud)
{
	client *c = ud;

	(void)ng, (void)flags, (void)id;
	if (c->body_len + len <= sizeof(c->body)) {
		memcpy(c->body + c->body_len, data, len);
		c->body_len += len;
	}
	return 0;
}

static int on_close(nghttp2_session *ng, int32_t id, uint32_t code, void *ud)
{
	client *c = ud;

	(void)ng, (void)id;
	c->closed++;
	if (code == NGHTTP2_REFUSED_STREAM)
		c->refused++;
	return 0;
}

static void client_new(client *c)
{
	nghttp2_session_callbacks *cb;

	memset(c, 0, sizeof(*c));
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	nghttp2_session_client_new(&c->ng, cb, c);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, NULL, 0);
}

/* Client → session → socketpairs → client, until nothing moves. */
static void pump(client *c, px_h2 *h)
{
	for (int round = 0; round < 50; round++) {
		const uint8_t *p;
		ssize_t n;
		size_t out;

		while ((n = nghttp2_session_mem_send(c->ng, &p)) > 0)
			(void)px_h2_feed(h, p, (size_t)n);
		px_h2_service(h);
		while ((out = px_h2_out(h, &p)) > 0) {
			(void)nghttp2_session_mem_recv(c->ng, p, out);
			px_h2_sent(h, out);
		}
	}
}

static size_t peer_read(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	while (len + 1 < size && (n = recv(fd, buf + len, size - 1 - len, MSG_DONTWAIT)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	return len;
}

#define NV(n, v)                                                                                   \
	{                                                                                          \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, NGHTTP2_NV_FLAG_NONE \
	}

static ssize_t upload(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
		      nghttp2_data_source *src, void *ud)
{
	int *left = src->ptr;

	(void)ng, (void)id, (void)ud;
	if (*left == 0 || length < 5) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		return 0;
	}
	memcpy(buf, "hello", 5);
	(*left)--;
	return 5;
}

static void test_get(void)
{
	const nghttp2_nv nv[] = {
	    NV(":method", "GET"),     NV(":scheme", "https"), NV(":authority", "api.test:8443"),
	    NV(":path", "/v1/x?y=1"), NV("user-agent", "t"),  NV("cookie", "a=1"),
	    NV("cookie", "b=2"),      NV("te", "trailers")};
	static const char resp[] = "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n"
				   "Transfer-Encoding: chunked\r\nX-Answer: Yes\r\n\r\n"
				   "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
	opened op = {.n = 0};
	char head[1024];
	client c;
	px_h2 *h;

	client_new(&c);
	ok(px_h2_new(on_open, &op, &h) == 0, "a session");
	nghttp2_submit_request(c.ng, NULL, nv, sizeof(nv) / sizeof(nv[0]), NULL, NULL);
	pump(&c, h);
	ok(op.n == 1 && op.status[0] == 0, "one stream opened, not refused");
	peer_read(op.fd[0], head, sizeof(head));
	ok(strcmp(head, "GET /v1/x?y=1 HTTP/1.1\r\nHost: api.test:8443\r\nuser-agent: t\r\n"
			"cookie: a=1; b=2\r\n\r\n") == 0,
	   "the stream as an HTTP/1.1 head: Host from :authority, cookies joined, te dropped");
	if (write(op.fd[0], resp, sizeof(resp) - 1) != (ssize_t)sizeof(resp) - 1)
		tap_diag("short write");
	pump(&c, h);
	ok(strcmp(c.status, "200") == 0, "the client gets :status 200 (%s)", c.status);
	ok(strcmp(c.extra, "x-answer=Yes;") == 0,
	   "... lower-case fields without connection-specific ones (%s)", c.extra);
	ok(c.body_len == 5 && memcmp(c.body, "abcde", 5) == 0,
	   "... the body without chunked framing");
	ok(c.closed == 1 && px_h2_streams(h) == 0, "... and the stream is closed");
	px_h2_free(h);
	nghttp2_session_del(c.ng);
	close(op.fd[0]);
}

static void test_upload_chunked(void)
{
	const nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "https"),
				 NV(":authority", "api.test"), NV(":path", "/up")};
	int left = 2;
	nghttp2_data_provider prd = {.source.ptr = &left, .read_callback = upload};
	opened op = {.n = 0};
	char req[1024];
	client c;
	px_h2 *h;

	client_new(&c);
	(void)px_h2_new(on_open, &op, &h);
	nghttp2_submit_request(c.ng, NULL, nv, sizeof(nv) / sizeof(nv[0]), &prd, NULL);
	pump(&c, h);
	peer_read(op.fd[0], req, sizeof(req));
	ok(strcmp(req, "POST /up HTTP/1.1\r\nHost: api.test\r\ntransfer-encoding: chunked\r\n\r\n"
		       "a\r\nhellohello\r\n0\r\n\r\n") == 0,
	   "a body without content-length goes on chunked, the DATA read so far as one chunk");
	px_h2_free(h);
	nghttp2_session_del(c.ng);
	close(op.fd[0]);
}

static void test_limits(void)
{
	static char big[20000];
	nghttp2_nv nv[] = {
	    NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", "api.test"),
	    NV(":path", "/"),	  NV("x-a", ""),	  NV("x-b", "")};
	opened op = {.n = 0};
	client c;
	px_h2 *h;
	size_t refused = 0;

	memset(big, 'a', sizeof(big));
	nv[4].value = nv[5].value = (uint8_t *)big;
	nv[4].valuelen = nv[5].valuelen = sizeof(big);
	client_new(&c);
	(void)px_h2_new(on_open, &op, &h);
	nghttp2_submit_request(c.ng, NULL, nv, sizeof(nv) / sizeof(nv[0]), NULL, NULL);
	pump(&c, h);
	ok(op.n == 1 && op.status[0] == 431, "a header list over %u bytes is refused with 431 (%d)",
	   PX_H2_MAX_HEADER_LIST, op.n ? op.status[0] : -1);
	close(op.fd[0]);
	px_h2_free(h);
	nghttp2_session_del(c.ng);

	/* a client that sends before it has read the SETTINGS (as a hostile one
	 * ignores them): the session refuses what is over the limit */
	op.n = 0;
	client_new(&c);
	(void)px_h2_new(on_open, &op, &h);
	for (int i = 0; i < 40; i++)
		nghttp2_submit_request(c.ng, NULL, nv, 4, NULL, NULL);
	pump(&c, h);
	for (size_t i = 0; i < op.n; i++)
		close(op.fd[i]);
	refused = c.refused;
	ok(op.n == PX_H2_MAX_STREAMS && refused == 40 - PX_H2_MAX_STREAMS,
	   "40 streams at once: %u open (%zu), the others refused (%zu)", PX_H2_MAX_STREAMS, op.n,
	   refused);
	px_h2_free(h);
	nghttp2_session_del(c.ng);
}

static ssize_t endless(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t length,
		       uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	size_t *sent = src->ptr;

	(void)ng, (void)id, (void)flags, (void)ud;
	memset(buf, 'x', length);
	*sent += length;
	return (ssize_t)length;
}

/* A body the socketpair does not take: the session holds at most a window
 * of it, and the client is stopped by flow control, not the worker's memory. */
static void test_flow_control(void)
{
	const nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "https"),
				 NV(":authority", "api.test"), NV(":path", "/up")};
	size_t sent = 0, before, drained = 0;
	nghttp2_data_provider prd = {.source.ptr = &sent, .read_callback = endless};
	opened op = {.n = 0};
	char buf[65536];
	client c;
	px_h2 *h;
	int sndbuf = 0;
	socklen_t sl = sizeof(sndbuf);

	client_new(&c);
	(void)px_h2_new(on_open, &op, &h);
	nghttp2_submit_request(c.ng, NULL, nv, sizeof(nv) / sizeof(nv[0]), &prd, NULL);
	pump(&c, h);
	(void)getsockopt(op.fd[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl);
	/* what the socketpair holds (both buffers), plus one window in the session */
	ok(op.n == 1 && sent <= 2u * (size_t)sndbuf + PX_H2_STREAM_WINDOW + 65536u,
	   "an unread upload stops at the socketpair's buffers and one window (%zu bytes sent)",
	   sent);
	before = sent;
	pump(&c, h);
	ok(sent == before, "... and stays stopped (%zu)", sent);
	for (int i = 0; i < 8; i++) {
		size_t n;

		while ((n = peer_read(op.fd[0], buf, sizeof(buf))) > 0)
			drained += n;
		pump(&c, h);
	}
	ok(sent > before && drained > 0,
	   "once the connection reads it, the window opens again (%zu more, %zu read)",
	   sent - before, drained);
	px_h2_free(h);
	nghttp2_session_del(c.ng);
	close(op.fd[0]);
}

int main(void)
{
	test_get();
	test_flow_control();
	test_upload_chunked();
	test_limits();
	return tap_done();
}

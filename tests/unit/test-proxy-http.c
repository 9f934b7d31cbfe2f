/* SPDX-License-Identifier: MIT */
/* TAP tests for the strict HTTP head parser and chunked framing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/plan.h"
#include "proxy/http.h"
#include "tap.h"

static int parse(const char *s, px_request *req)
{
	const char *reason;

	return px_http_parse_request(s, strlen(s), req, &reason);
}

static void expect_status(const char *s, int status, const char *what)
{
	px_request req;
	int r = parse(s, &req);

	if (r != status)
		tap_diag("got %d, want %d", r, status);
	ok(r == status, "%s", what);
}

/* What a refused head still tells the record. */
static void test_partial(void)
{
	px_request req;
	const char *reason;
	const char *smuggle = "POST http://a.test:81/x HTTP/1.1\r\nHost: a.test:81\r\n"
			      "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n";
	int r = px_http_parse_request(smuggle, strlen(smuggle), &req, &reason);

	ok(r == -400 && req.line_ok && strcmp(req.method, "POST") == 0 &&
	       strcmp(req.host, "a.test") == 0 && req.port == 81 && req.path.len == 2,
	   "CL+TE refused with the request line kept");
	r = parse("GET nonsense HTTP/1.1\r\n\r\n", &req);
	ok(r == -400 && !req.line_ok && strcmp(req.method, "GET") == 0,
	   "bad target: the method is kept, the line is not");
	expect_status("GET http://[127.0.0.1]/ HTTP/1.1\r\nHost: [127.0.0.1]\r\n\r\n", -400,
		      "[127.0.0.1]: brackets around IPv4 refused");
	expect_status("CONNECT [127.0.0.1]:443 HTTP/1.1\r\n\r\n", -400,
		      "CONNECT [127.0.0.1]:443 refused");
	expect_status("GET http://127.0.0.1/ HTTP/1.1\r\nHost: [127.0.0.1]\r\n\r\n", -400,
		      "Host: [127.0.0.1] refused");
	expect_status(
	    "GET http://[::ffff:1.2.3.4]/ HTTP/1.1\r\nHost: [::ffff:1.2.3.4]\r\n\r\n",
	    (int)strlen("GET http://[::ffff:1.2.3.4]/ HTTP/1.1\r\nHost: [::ffff:1.2.3.4]\r\n\r\n"),
	    "an IPv6 address with a dotted tail stays valid");
	expect_status("GET http://[1.2]/ HTTP/1.1\r\nHost: [1.2]\r\n\r\n", -400, "[1.2] refused");
}

static void test_valid(void)
{
	px_request req;
	const char *s = "GET http://Example.COM:8080/a/b?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n"
			"User-Agent: t\r\nContent-Length: 5\r\n\r\nhello";
	int r = parse(s, &req);

	ok(r == (int)(strlen(s) - 5), "valid absolute-form request parses");
	ok(strcmp(req.host, "example.com") == 0, "host lower-cased");
	ok(req.port == 8080, "explicit port");
	ok(req.method_bit == HTTP_GET, "GET bit");
	ok(req.path.len == 8 && memcmp(s + req.path.off, "/a/b?x=1", 8) == 0, "origin-form path");
	ok(req.has_content_length && req.content_length == 5, "content length");
	ok(req.keep_alive, "HTTP/1.1 defaults to keep-alive");

	r = parse("CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n", &req);
	ok(r > 0 && req.target_kind == PX_TARGET_AUTHORITY && req.port == 443, "CONNECT authority");
	r = parse("GET http://h.test HTTP/1.1\r\nHost: h.test\r\n\r\n", &req);
	ok(r > 0 && req.port == 80 && req.path.len == 0, "default port 80, empty path");
	r = parse("GET http://[::1]:81/ HTTP/1.1\r\nHost: [::1]:81\r\n\r\n", &req);
	ok(r > 0 && req.host_kind == PX_HOST_IPV6 && strcmp(req.host, "::1") == 0, "IPv6 literal");
	r = parse("GET http://10.0.0.1/ HTTP/1.0\r\n\r\n", &req);
	ok(r > 0 && req.host_kind == PX_HOST_IPV4 && !req.keep_alive, "HTTP/1.0, IPv4 literal");
	r = parse(
	    "POST http://h.test/ HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\n\r\n",
	    &req);
	ok(r > 0 && req.chunked, "chunked request");
	r = parse("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n", &req);
	ok(r > 0 && !req.keep_alive, "Connection: close");
	r = parse("PROPFIND http://h.test/ HTTP/1.1\r\nHost: h.test\r\n\r\n", &req);
	ok(r > 0 && req.method_bit == 0, "extension method has no bit");
	ok(parse("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\n", &req) == 0, "incomplete head");
	ok(parse("GET http://h.test/ HTTP/1.1\r", &req) == 0, "incomplete at CR");
}

static void test_invalid(void)
{
	char *big;

	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nContent-Length: 3\r\n"
		      "Transfer-Encoding: chunked\r\n\r\n",
		      -400, "CL + TE refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nContent-Length: 3\r\n"
		      "Content-Length: 3\r\n\r\n",
		      -400, "duplicate Content-Length refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nContent-Length: 3, 3\r\n\r\n",
		      -400, "Content-Length list refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nContent-Length: -1\r\n\r\n",
		      -400, "negative Content-Length refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nContent-Length: "
		      "99999999999999999999\r\n\r\n",
		      -400, "huge Content-Length refused");
	expect_status("GET http://h.test/ HTTP/1.1\nHost: h.test\r\n\r\n", -400, "bare LF refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test\rX: y\r\n\r\n", -400,
		      "bare CR refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nX: a\r\n b\r\n\r\n", -400,
		      "obs-fold refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost : h.test\r\n\r\n", -400,
		      "space before colon refused");
	{
		const char s[] = "GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nX: a\0b\r\n\r\n";
		px_request req;
		const char *reason;

		ok(px_http_parse_request(s, sizeof(s) - 1, &req, &reason) == -400, "NUL refused");
	}
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n", -400,
		      "Host mismatch refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test:8080\r\n\r\n", -400,
		      "Host port mismatch refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nHost: h.test\r\n\r\n", -400,
		      "duplicate Host refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\n\r\n", -400, "missing Host in 1.1 refused");
	expect_status("G(T http://h.test/ HTTP/1.1\r\nHost: h.test\r\n\r\n", -400,
		      "invalid method refused");
	expect_status("GET http://h.test/ HTTP/1.2x\r\nHost: h.test\r\n\r\n", -400,
		      "invalid version refused");
	expect_status("GET http://h.test/ HTTP/2.0\r\nHost: h.test\r\n\r\n", -505,
		      "HTTP/2.0 gets 505");
	expect_status("GET /local HTTP/1.1\r\nHost: h.test\r\n\r\n", -400, "origin-form refused");
	expect_status("GET https://h.test/ HTTP/1.1\r\nHost: h.test\r\n\r\n", -400,
		      "https absolute-form refused");
	expect_status("GET http://user@h.test/ HTTP/1.1\r\nHost: h.test\r\n\r\n", -400,
		      "userinfo refused");
	expect_status("CONNECT h.test HTTP/1.1\r\n\r\n", -400, "CONNECT without port refused");
	expect_status("CONNECT h.test:0 HTTP/1.1\r\n\r\n", -400, "port 0 refused");
	expect_status("CONNECT h.test:65536 HTTP/1.1\r\n\r\n", -400, "port 65536 refused");
	expect_status("GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: gzip, "
		      "chunked\r\n\r\n",
		      -501, "TE other than chunked refused");
	expect_status("GET http://h.test/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -400,
		      "TE in HTTP/1.0 refused");
	expect_status("GET http://h.test/#frag HTTP/1.1\r\nHost: h.test\r\n\r\n", -400,
		      "fragment refused");
	expect_status("GET http://010.0.0.1/ HTTP/1.1\r\nHost: 010.0.0.1\r\n\r\n", -400,
		      "octal-looking IPv4 refused");
	expect_status("GET http://1.2.3/ HTTP/1.1\r\nHost: 1.2.3\r\n\r\n", -400,
		      "short numeric host refused");

	big = malloc(PX_MAX_REQUEST_LINE + 64);
	strcpy(big, "GET http://h.test/");
	memset(big + strlen(big), 'a', PX_MAX_REQUEST_LINE);
	big[PX_MAX_REQUEST_LINE + 10] = 0;
	expect_status(big, -414, "over-long request line: 414");
	free(big);
	big = malloc(PX_MAX_HEAD + 256);
	strcpy(big, "GET http://h.test/ HTTP/1.1\r\nHost: h.test\r\n");
	while (strlen(big) < PX_MAX_HEAD + 64)
		strcat(big, "X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	strcat(big, "\r\n");
	expect_status(big, -431, "over-long head: 431");
	free(big);
}

static void test_rewrite(void)
{
	const char *s =
	    "POST http://h.test:8080/p?q HTTP/1.1\r\nHost: h.test:8080\r\n"
	    "Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nProxy-Authorization: secret\r\n"
	    "Authorization: agent\r\nKeep-Alive: 5\r\nX-Keep: 2\r\nContent-Length: 0\r\n\r\n";
	px_request req;
	char *out = NULL;
	size_t len = 0;

	ok(parse(s, &req) > 0, "rewrite input parses");
	ok(px_http_build_upstream_head(s, &req, "Authorization", "Bearer real", &out, &len) == 0,
	   "upstream head built");
	ok(strncmp(out, "POST /p?q HTTP/1.1\r\nHost: h.test:8080\r\n", 39) == 0,
	   "origin-form request line and Host");
	ok(!strstr(out, "X-Hop") && !strstr(out, "Proxy-") && !strstr(out, "Keep-Alive"),
	   "hop-by-hop and Proxy-* stripped");
	ok(strstr(out, "X-Keep: 2\r\n") && strstr(out, "Content-Length: 0\r\n"),
	   "end-to-end headers kept");
	ok(strstr(out, "Authorization: Bearer real\r\n") && !strstr(out, "agent"),
	   "credential replaces the agent's header");
	ok(strstr(out, "Connection: keep-alive\r\n\r\n") != NULL,
	   "HTTP/1.1 upstream: Connection: keep-alive, the connection may be pooled");
	free(out);
	ok(parse("GET http://h.test/x HTTP/1.0\r\n\r\n", &req) > 0 &&
	       px_http_build_upstream_head("GET http://h.test/x HTTP/1.0\r\n\r\n", &req, NULL, NULL,
					   &out, &len) == 0 &&
	       strncmp(out, "GET /x HTTP/1.0\r\nHost: h.test\r\n", 31) == 0 &&
	       strstr(out, "Connection: close\r\n\r\n"),
	   "HTTP/1.0 client: HTTP/1.0 upstream, Connection: close");
	free(out);
}

static void test_response(void)
{
	const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\n"
			"Keep-Alive: timeout=5\r\n\r\nabc";
	px_response resp;
	const char *reason;
	char *out = NULL;
	size_t len;

	ok(px_http_parse_response(s, strlen(s), false, &resp, &reason) == (int)strlen(s) - 3,
	   "response parses");
	ok(resp.status == 200 && resp.has_content_length && resp.content_length == 3,
	   "status and length");
	ok(px_http_build_client_response_head(s, &resp, true, &out, &len) == 0 &&
	       !strstr(out, "Keep-Alive") && strstr(out, "Connection: close\r\n"),
	   "client response head rewritten");
	free(out);
	ok(!resp.conn_close, "a 1.1 response without Connection: close keeps the connection");
	s = "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n";
	ok(px_http_parse_response(s, strlen(s), false, &resp, &reason) > 0 && resp.conn_close,
	   "Connection: close (any case, in a list): the origin is done after it");
	s = "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
	ok(px_http_parse_response(s, strlen(s), false, &resp, &reason) > 0 && resp.conn_close,
	   "an HTTP/1.0 response: not reused");
	s = "HTTP/1.1 204 No Content\r\n\r\n";
	ok(px_http_parse_response(s, strlen(s), false, &resp, &reason) > 0 && resp.no_body,
	   "204 has no body");
	s = "HTTP/1.1 200 OK\r\n\r\n";
	ok(px_http_parse_response(s, strlen(s), false, &resp, &reason) > 0 && resp.close_delimited,
	   "no framing: close-delimited");
	s = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n";
	ok(px_http_parse_response(s, strlen(s), false, &resp, &reason) == -502,
	   "CL+TE response refused");
	s = "HTTP/1.1 200 OK\nContent-Length: 1\r\n\r\n";
	ok(px_http_parse_response(s, strlen(s), false, &resp, &reason) == -502,
	   "bare LF response refused");
}

static void test_chunked(void)
{
	const char *body = "5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\nNEXT";
	px_chunked st = {0};
	size_t used = 0, total = 0;
	uint64_t data = 0, d;
	int r = 0;

	/* byte by byte: framing must not depend on read boundaries */
	for (size_t i = 0; i < strlen(body) && r == 0; i++) {
		r = px_chunked_feed(&st, body + i, 1, &used, &d);
		total += used;
		data += d;
	}
	ok(r == 1 && total == strlen(body) - 4 && data == 8, "chunked body framed byte by byte");
	memset(&st, 0, sizeof(st));
	r = px_chunked_feed(&st, body, strlen(body), &used, &d);
	ok(r == 1 && used == strlen(body) - 4 && d == 8, "chunked body framed at once");
	memset(&st, 0, sizeof(st));
	ok(px_chunked_feed(&st, "5\nhello", 7, &used, &d) < 0, "bare LF in chunk size refused");
	memset(&st, 0, sizeof(st));
	ok(px_chunked_feed(&st, "x\r\n", 3, &used, &d) < 0, "non-hex size refused");
	memset(&st, 0, sizeof(st));
	ok(px_chunked_feed(&st, "1234567890abcdef0\r\n", 19, &used, &d) < 0,
	   "oversized chunk size refused");
	memset(&st, 0, sizeof(st));
	ok(px_chunked_feed(&st, "2\r\nabX\r\n", 8, &used, &d) < 0, "missing CRLF after data");
}

static void test_local_response(void)
{
	char buf[1024];
	int n = px_http_local_response(403, "host-not-allowed", "no", true, buf, sizeof(buf));

	ok(n > 0 && strstr(buf, "HTTP/1.1 403 Forbidden\r\n") &&
	       strstr(buf, "X-Sandcap-Deny: host-not-allowed\r\n") &&
	       strstr(buf, "Connection: close\r\n"),
	   "local 403 carries X-Sandcap-Deny");
}

/* The three readers of one request head, by who reads it. */
enum reader { PROXY, TUNNEL, SERVER };

static int parse_as(enum reader who, const char *s, size_t len, size_t max_head, px_request *req,
		    const char **reason)
{
	static const px_origin origin = {.host = "a.test", .host_kind = PX_HOST_NAME, .port = 443};

	if (who == PROXY)
		return px_http_parse_request(s, len, req, reason);
	if (who == TUNNEL)
		return px_http_parse_origin_request(s, len, &origin, req, reason);
	return px_http_parse_server_request(s, len, max_head, req, reason);
}

/* proxy, tunnel and server: what each answers (1: the head, whole). */
static void expect_forms(const char *s, int proxy, int tunnel, int server, const char *what)
{
	static const char *const names[] = {"proxy", "tunnel", "server"};
	int want[] = {proxy, tunnel, server};

	for (int who = PROXY; who <= SERVER; who++) {
		px_request req;
		const char *reason = NULL;
		int r = parse_as((enum reader)who, s, strlen(s), PX_MAX_HEAD, &req, &reason);
		int w = want[who] == 1 ? (int)strlen(s) : want[who];

		if (!ok(r == w, "%s (%s)", what, names[who]))
			tap_diag("got %d (%s), want %d", r, reason ? reason : "", w);
	}
}

/* A head of len bytes: a request line of line_len bytes and no end. */
static char *unended_head(size_t len, size_t line_len)
{
	char *s = malloc(len);

	if (!s)
		abort();
	memset(s, 'a', len);
	memcpy(s, "GET /", 5);
	if (line_len + 5 <= len)
		memcpy(s + line_len, "\r\nX: ", 5);
	return s;
}

/* Where the absolute-form reader (the proxy) and the origin-form ones (an
 * inspected tunnel, the API server) part. */
static void test_forms(void)
{
	static const char *const ka10 = "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
	static const char *const pc =
	    "GET /x HTTP/1.1\r\nHost: a.test\r\nProxy-Connection: close\r\n\r\n";
	const size_t long_line = PX_MAX_REQUEST_LINE + 808;
	px_request req;
	const char *reason;
	char *big;
	int r;

	expect_forms("GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n", -400, 1, 1,
		     "origin-form: only inside a tunnel or at the server");
	expect_forms("GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n", 1, -400, -400,
		     "absolute-form: only at the proxy");
	expect_forms("CONNECT a.test:443 HTTP/1.1\r\n\r\n", 1, -400, -400,
		     "CONNECT's authority-form: only at the proxy");
	expect_forms("GET /x HTTP/1.1\r\n\r\n", -400, -400, 1,
		     "HTTP/1.1 without Host: refused but by the server");
	expect_forms("GET /x HTTP/1.1\r\nHost: b.test\r\n\r\n", -400, -400, 1,
		     "a Host that is not the target's: refused but by the server");
	expect_forms("GET /x HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n", -400, -400, 1,
		     "two Host headers: refused but by the server");
	expect_forms("GET /x HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\n"
		     "Transfer-Encoding: chunked\r\n\r\n",
		     -400, -400, -400, "CL + TE refused by all three");
	expect_forms("GET /x HTTP/1.1\nHost: a.test\r\n\r\n", -400, -400, -400,
		     "a bare LF refused by all three");
	expect_forms("GET /x HTTP/2.0\r\n\r\n", -505, -505, -505,
		     "HTTP/2.0 is a 505 for all three");

	r = parse_as(TUNNEL, "GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n", 33, PX_MAX_HEAD, &req,
		     &reason);
	ok(r == 33 && req.target_kind == PX_TARGET_ORIGIN && strcmp(req.host, "a.test") == 0 &&
	       req.port == 443 && req.path.len == 2,
	   "tunnel: host and port are its CONNECT's, the path the target");
	r = parse_as(SERVER, "GET /x?q HTTP/1.1\r\n\r\n", 21, PX_MAX_HEAD, &req, &reason);
	ok(r == 21 && req.host[0] == '\0' && req.port == 0 && req.path.off == 4 &&
	       req.path.len == 4,
	   "server: no authority, the path is the whole target");
	r = parse_as(TUNNEL, "GET http://a.test/ HTTP/1.1\r\n\r\n", 31, PX_MAX_HEAD, &req, &reason);
	ok(r == -400 && strstr(reason, "inside a TLS tunnel"), "tunnel: its own reason");
	r = parse_as(SERVER, "GET http://a.test/ HTTP/1.1\r\n\r\n", 31, PX_MAX_HEAD, &req, &reason);
	ok(r == -400 && strcmp(reason, "not an origin-form target") == 0, "server: its own reason");

	/* HTTP/1.0 keep-alive is honoured by the server only; Proxy-Connection
	 * is the proxy's header (a tunnel's too), an ordinary one at the server. */
	ok(parse_as(TUNNEL, ka10, strlen(ka10), PX_MAX_HEAD, &req, &reason) > 0 && !req.keep_alive,
	   "tunnel: an HTTP/1.0 keep-alive is not kept");
	ok(parse_as(SERVER, ka10, strlen(ka10), PX_MAX_HEAD, &req, &reason) > 0 && req.keep_alive,
	   "server: an HTTP/1.0 keep-alive is kept");
	ok(parse_as(TUNNEL, pc, strlen(pc), PX_MAX_HEAD, &req, &reason) > 0 && !req.keep_alive,
	   "tunnel: Proxy-Connection: close closes");
	ok(parse_as(SERVER, pc, strlen(pc), PX_MAX_HEAD, &req, &reason) > 0 && req.keep_alive,
	   "server: Proxy-Connection is not its header");

	/* A request line longer than the bound, before the head is complete. */
	big = unended_head(long_line, long_line);
	ok(parse_as(PROXY, big, long_line, 0, &req, &reason) == -414 &&
	       parse_as(TUNNEL, big, long_line, 0, &req, &reason) == -414,
	   "proxy and tunnel: a long request line is a 414 before the head ends");
	ok(parse_as(SERVER, big, long_line, 2 * PX_MAX_REQUEST_LINE, &req, &reason) == 0,
	   "server: it waits for the head, up to its max_head");
	ok(parse_as(SERVER, big, long_line, 4096, &req, &reason) == -431,
	   "server: past its max_head a 431");
	free(big);
	/* a head that does not end: a 431 at PX_MAX_HEAD, whatever max_head */
	big = unended_head(PX_MAX_HEAD + 64, 20);
	ok(parse_as(SERVER, big, PX_MAX_HEAD + 64, 4 * PX_MAX_HEAD, &req, &reason) == -431,
	   "server: max_head is capped at PX_MAX_HEAD");
	ok(parse_as(SERVER, big, PX_MAX_HEAD - 64, 4 * PX_MAX_HEAD, &req, &reason) == 0,
	   "server: below PX_MAX_HEAD more is needed");
	free(big);
}

int main(void)
{
	test_valid();
	test_forms();
	test_partial();
	test_invalid();
	test_rewrite();
	test_response();
	test_chunked();
	test_local_response();
	return tap_done();
}

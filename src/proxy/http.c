/* SPDX-License-Identifier: MIT */
/*
 * Strict HTTP/1.x head parsing (RFC 9110, RFC 9112). See http.h for why this
 * is hand-written. Everything that RFC 9112 lets a recipient "repair" is an
 * error here: a proxy that repairs sees a different message than the origin.
 */
#include "proxy/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "policy/plan.h"

static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static bool span_ieq(const char *buf, px_span s, const char *lit)
{
	size_t n = strlen(lit);

	if (s.len != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower((unsigned char)buf[s.off + i]) != lower((unsigned char)lit[i]))
			return false;
	return true;
}

static bool mem_ieq(const char *a, size_t alen, const char *lit)
{
	size_t n = strlen(lit);

	if (alen != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)lit[i]))
			return false;
	return true;
}

static const struct {
	const char *name;
	uint32_t bit;
} known_methods[] = {
    {"GET", HTTP_GET},	       {"HEAD", HTTP_HEAD},	  {"POST", HTTP_POST},
    {"PUT", HTTP_PUT},	       {"PATCH", HTTP_PATCH},	  {"DELETE", HTTP_DELETE},
    {"OPTIONS", HTTP_OPTIONS}, {"CONNECT", HTTP_CONNECT},
};

/*
 * Scans for the end of the head. Any LF not preceded by CR, any CR not
 * followed by LF, and any NUL is an error even before the head is complete,
 * so a client cannot park a connection on a head we will reject anyway.
 */
static int find_head_end(const char *buf, size_t len, size_t max, int too_long_status,
			 size_t *ret_end, const char **reason)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (i >= max) {
			*reason = "head too large";
			return -too_long_status;
		}
		if (c == 0) {
			*reason = "NUL in head";
			return -400;
		}
		if (c == '\n') {
			if (i == 0 || buf[i - 1] != '\r') {
				*reason = "bare LF";
				return -400;
			}
			if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
				*ret_end = i + 1;
				return 1;
			}
		} else if (c == '\r') {
			if (i + 1 < len && buf[i + 1] != '\n') {
				*reason = "bare CR";
				return -400;
			}
		}
	}
	if (len >= max) {
		*reason = "head too large";
		return -too_long_status;
	}
	return 0;
}

static int parse_port(const char *s, size_t n, uint16_t *ret)
{
	unsigned v = 0;

	if (n == 0 || n > 5)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit((unsigned char)s[i]))
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

static bool valid_ipv4(const char *s, size_t n)
{
	unsigned parts = 0, val = 0, digits = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			/* no empty parts, no leading zeros (octal ambiguity) */
			if (digits == 0 || val > 255 || (digits > 1 && s[i - digits] == '0'))
				return false;
			parts++;
			val = 0;
			digits = 0;
			continue;
		}
		if (!is_digit((unsigned char)s[i]) || ++digits > 3)
			return false;
		val = val * 10 + (unsigned)(s[i] - '0');
	}
	return parts == 4;
}

static bool valid_ipv6_chars(const char *s, size_t n)
{
	if (n < 2 || n > 45)
		return false;
	for (size_t i = 0; i < n; i++)
		if (hex_value((unsigned char)s[i]) < 0 && s[i] != ':' && s[i] != '.')
			return false;
	return true;
}

static bool valid_ipv6(const char *s, size_t n)
{
	char tmp[46];
	unsigned char bin[16];

	if (n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	return inet_pton(AF_INET6, tmp, bin) == 1;
}

/* A DNS name: letters, digits, '-', '_' and dots; no empty label; not all digits. */
static bool valid_hostname(const char *s, size_t n)
{
	size_t label = 0;
	bool alpha = false;

	if (n == 0 || n > PX_MAX_HOST || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (++label > 63)
			return false;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_')
			alpha = true;
		else if (!is_digit(c))
			return false;
	}
	/* all-digit dotted names must have been valid IPv4 literals */
	return alpha;
}

int px_http_parse_host(const char *s, size_t n, px_host_kind *ret_kind)
{
	if (valid_ipv4(s, n))
		*ret_kind = PX_HOST_IPV4;
	else if (valid_ipv6_chars(s, n) && valid_ipv6(s, n))
		*ret_kind = PX_HOST_IPV6;
	else if (valid_hostname(s, n))
		*ret_kind = PX_HOST_NAME;
	else
		return -EINVAL;
	return 0;
}

/* Parses "host[:port]" or "[v6][:port]" into req->host/host_kind/port. */
static int parse_authority(const char *s, size_t n, bool port_required, uint16_t default_port,
			   char *host, px_host_kind *kind, uint16_t *port)
{
	const char *h;
	size_t hn;
	const char *p = NULL;
	size_t pn = 0;

	if (n == 0)
		return -EINVAL;
	if (memchr(s, '@', n))
		return -EINVAL; /* userinfo: a classic confusion vector */
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (!close)
			return -EINVAL;
		h = s + 1;
		hn = (size_t)(close - h);
		if ((size_t)(close - s) + 1 < n) {
			if (close[1] != ':')
				return -EINVAL;
			p = close + 2;
			pn = n - (size_t)(p - s);
		}
		if (!valid_ipv6_chars(h, hn) || !valid_ipv6(h, hn))
			return -EINVAL; /* also "[127.0.0.1]": brackets are for IPv6 only */
		*kind = PX_HOST_IPV6;
	} else {
		const char *colon = memchr(s, ':', n);

		h = s;
		hn = colon ? (size_t)(colon - s) : n;
		if (colon) {
			p = colon + 1;
			pn = n - hn - 1;
		}
		if (valid_ipv4(h, hn))
			*kind = PX_HOST_IPV4;
		else if (valid_hostname(h, hn))
			*kind = PX_HOST_NAME;
		else
			return -EINVAL;
	}
	if (hn > PX_MAX_HOST)
		return -EINVAL;
	if (p) {
		if (parse_port(p, pn, port) < 0)
			return -EINVAL;
	} else {
		if (port_required)
			return -EINVAL;
		*port = default_port;
	}
	for (size_t i = 0; i < hn; i++)
		host[i] = (char)lower((unsigned char)h[i]);
	host[hn] = 0;
	return 0;
}

static bool valid_path_char(unsigned char c)
{
	/* visible ASCII; '#' (fragment) never belongs in a request target */
	return c > 0x20 && c < 0x7f && c != '#';
}

/*
 * Method, target and version of a request line, for both parsers: the
 * target is returned as it is (non-empty, visible ASCII, no '#').
 */
static int split_request_line(const char *buf, size_t n, px_request *req, const char **ret_target,
			      size_t *ret_tlen, const char **reason)
{
	const char *sp1, *sp2, *target, *ver;
	size_t mlen, tlen;

	sp1 = memchr(buf, ' ', n);
	if (!sp1) {
		*reason = "malformed request line";
		return -400;
	}
	mlen = (size_t)(sp1 - buf);
	if (mlen == 0 || mlen > PX_MAX_METHOD) {
		*reason = "invalid method";
		return -400;
	}
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar((unsigned char)buf[i])) {
			*reason = "invalid method";
			return -400;
		}
	memcpy(req->method, buf, mlen);
	req->method[mlen] = 0;
	req->method_bit = 0;
	for (size_t i = 0; i < sizeof(known_methods) / sizeof(known_methods[0]); i++)
		if (strcmp(req->method, known_methods[i].name) == 0)
			req->method_bit = known_methods[i].bit;

	target = sp1 + 1;
	sp2 = memchr(target, ' ', n - (size_t)(target - buf));
	if (!sp2) {
		*reason = "malformed request line";
		return -400;
	}
	tlen = (size_t)(sp2 - target);
	ver = sp2 + 1;
	if ((size_t)(buf + n - ver) != 8 || memcmp(ver, "HTTP/1.", 7) != 0 ||
	    (ver[7] != '0' && ver[7] != '1')) {
		if ((size_t)(buf + n - ver) == 8 && memcmp(ver, "HTTP/", 5) == 0 &&
		    is_digit((unsigned char)ver[5]) && ver[6] == '.' &&
		    is_digit((unsigned char)ver[7])) {
			*reason = "unsupported HTTP version";
			return -505;
		}
		*reason = "invalid HTTP version";
		return -400;
	}
	req->minor = ver[7] - '0';
	if (tlen == 0) {
		*reason = "empty request target";
		return -400;
	}
	for (size_t i = 0; i < tlen; i++)
		if (!valid_path_char((unsigned char)target[i])) {
			*reason = "invalid request target";
			return -400;
		}

	*ret_target = target;
	*ret_tlen = tlen;
	return 0;
}

/*
 * Who reads a request head, which decides the form its target must have and
 * what its headers must say (RFC 9112 3.2).
 */
typedef enum req_form {
	FORM_PROXY,  /* the forward proxy: absolute-form, or authority-form for CONNECT */
	FORM_TUNNEL, /* inside an inspected tunnel: origin-form, the authority its CONNECT's */
	FORM_SERVER, /* an origin server (the API): origin-form, no authority to check */
} req_form;

static int parse_request_line(const char *buf, size_t n, req_form form, const px_origin *origin,
			      px_request *req, const char **reason)
{
	const char *target;
	size_t tlen;
	int r = split_request_line(buf, n, req, &target, &tlen, reason);

	if (r < 0)
		return r;
	if (form != FORM_PROXY) {
		if (target[0] != '/') {
			*reason = form == FORM_TUNNEL
				      ? "not an origin-form target (\"/path\") inside a TLS tunnel"
				      : "not an origin-form target";
			return -400;
		}
		if (form == FORM_TUNNEL) {
			req->target_kind = PX_TARGET_ORIGIN;
			memcpy(req->host, origin->host, sizeof(req->host));
			req->host_kind = origin->host_kind;
			req->port = origin->port;
		}
		req->path.off = (uint32_t)(target - buf);
		req->path.len = (uint32_t)tlen;
		return 0;
	}
	if (strcmp(req->method, "CONNECT") == 0) {
		req->target_kind = PX_TARGET_AUTHORITY;
		if (parse_authority(target, tlen, true, 0, req->host, &req->host_kind, &req->port) <
		    0) {
			*reason = "invalid CONNECT authority";
			return -400;
		}
		req->path.off = 0;
		req->path.len = 0;
		return 0;
	}

	static const char scheme[] = "http://";
	if (tlen < sizeof(scheme) - 1 || !mem_ieq(target, sizeof(scheme) - 1, scheme)) {
		*reason = "not an absolute http:// URI (use CONNECT for https)";
		return -400;
	}
	const char *auth = target + sizeof(scheme) - 1;
	const char *end = target + tlen;
	const char *slash = auth;

	while (slash < end && *slash != '/' && *slash != '?')
		slash++;
	req->target_kind = PX_TARGET_ABSOLUTE;
	if (parse_authority(auth, (size_t)(slash - auth), false, 80, req->host, &req->host_kind,
			    &req->port) < 0) {
		*reason = "invalid URI authority";
		return -400;
	}
	req->path.off = (uint32_t)(slash - buf);
	req->path.len = (uint32_t)(end - slash);
	return 0;
}

static int parse_content_length(const char *v, size_t n, uint64_t *ret)
{
	uint64_t x = 0;

	if (n == 0 || n > 19)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit((unsigned char)v[i]))
			return -EINVAL; /* also rejects "5, 5" lists and signs */
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	if (x > PX_MAX_CONTENT_LENGTH)
		return -ERANGE;
	*ret = x;
	return 0;
}

/* Does token (case-insensitive) appear in the comma-separated list v? */
static bool list_has_token(const char *v, size_t n, const char *token)
{
	size_t i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e > s && mem_ieq(v + s, e - s, token))
			return true;
	}
	return false;
}

/*
 * Parses header lines in [p, end) where each line ends in CRLF and the block
 * ends with an empty line. Shared by requests and responses.
 */
static int parse_header_lines(const char *buf, size_t p, size_t end, px_header *hdrs,
			      size_t max_hdrs, size_t *ret_n, int bad_status, int many_status,
			      const char **reason)
{
	size_t n = 0;

	while (p < end) {
		const char *line = buf + p;
		const char *eol = memchr(line, '\r', end - p);
		size_t ll, name_len;

		if (!eol) {
			*reason = "malformed header";
			return -bad_status;
		}
		ll = (size_t)(eol - line);
		if (ll == 0)
			break; /* the empty line */
		if (line[0] == ' ' || line[0] == '\t') {
			*reason = "obs-fold";
			return -bad_status;
		}
		name_len = 0;
		while (name_len < ll && is_tchar((unsigned char)line[name_len]))
			name_len++;
		/* RFC 9112 5.1: no whitespace between name and colon */
		if (name_len == 0 || name_len >= ll || line[name_len] != ':') {
			*reason = "invalid header name";
			return -bad_status;
		}
		size_t vs = name_len + 1, ve = ll;

		for (size_t i = vs; i < ll; i++) {
			unsigned char c = (unsigned char)line[i];

			if ((c < 0x20 && c != '\t') || c == 0x7f) {
				*reason = "control character in header value";
				return -bad_status;
			}
		}
		while (vs < ve && (line[vs] == ' ' || line[vs] == '\t'))
			vs++;
		while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
			ve--;
		if (n >= max_hdrs) {
			*reason = "too many headers";
			return -many_status;
		}
		hdrs[n].name.off = (uint32_t)p;
		hdrs[n].name.len = (uint32_t)name_len;
		hdrs[n].value.off = (uint32_t)(p + vs);
		hdrs[n].value.len = (uint32_t)(ve - vs);
		n++;
		p += ll + 2;
	}
	*ret_n = n;
	return 0;
}

/*
 * The headers that frame a request (Content-Length, Transfer-Encoding,
 * Connection, and Proxy-Connection when proxy, Expect), for both parsers.
 * Returns 1 when h was one of them, 0 when not, or a negative status.
 */
static int framing_header(const char *buf, const px_header *h, px_request *req, bool proxy,
			  bool *have_te, bool *conn_close, bool *conn_keep, const char **reason)
{
	const char *v = buf + h->value.off;

	if (span_ieq(buf, h->name, "content-length")) {
		if (req->has_content_length) {
			*reason = "duplicate Content-Length";
			return -400;
		}
		if (parse_content_length(v, h->value.len, &req->content_length) < 0) {
			*reason = "invalid Content-Length";
			return -400;
		}
		req->has_content_length = true;
	} else if (span_ieq(buf, h->name, "transfer-encoding")) {
		if (*have_te) {
			*reason = "duplicate Transfer-Encoding";
			return -400;
		}
		*have_te = true;
		if (!mem_ieq(v, h->value.len, "chunked")) {
			*reason = "unsupported Transfer-Encoding";
			return -501;
		}
		req->chunked = true;
	} else if (span_ieq(buf, h->name, "connection") ||
		   (proxy && span_ieq(buf, h->name, "proxy-connection"))) {
		if (list_has_token(v, h->value.len, "close"))
			*conn_close = true;
		if (list_has_token(v, h->value.len, "keep-alive"))
			*conn_keep = true;
	} else if (span_ieq(buf, h->name, "expect")) {
		if (!mem_ieq(v, h->value.len, "100-continue")) {
			*reason = "unsupported Expect";
			return -417;
		}
		req->expect_continue = true;
	} else
		return 0;
	return 1;
}

/*
 * A Host header must name the target (proxy and tunnel): the target comes
 * from the request line, and a Host that names anything else is refused
 * rather than ignored: an origin behind a shared IP could route on it (RFC
 * 9112 3.2.2 says to ignore it; refusing is the stricter choice and costs
 * well-behaved clients nothing).
 */
static int check_host_header(const char *buf, const px_header *h, px_request *req, bool *have_host,
			     const char **reason)
{
	char host[PX_MAX_HOST + 1];
	px_host_kind kind;
	uint16_t port;

	if (*have_host) {
		*reason = "duplicate Host";
		return -400;
	}
	*have_host = true;
	if (parse_authority(buf + h->value.off, h->value.len, false,
			    req->target_kind == PX_TARGET_ABSOLUTE ? 80 : req->port, host, &kind,
			    &port) < 0 ||
	    strcmp(host, req->host) != 0 || port != req->port) {
		*reason = "Host header disagrees with the request target";
		return -400;
	}
	return 0;
}

/*
 * The one request-head reader; form says who reads it. Only an origin
 * server (FORM_SERVER) takes a smaller max_head, lets Host and
 * Proxy-Connection be ordinary headers, says 431 rather than 414 for a long
 * request line before the head is complete, and keeps an HTTP/1.0
 * connection alive when asked ("Connection: keep-alive").
 */
static int parse_request(const char *buf, size_t len, req_form form, const px_origin *origin,
			 size_t max_head, px_request *req, const char **reason)
{
	bool proxy = form != FORM_SERVER;
	bool have_host = false, have_te = false, conn_close = false, conn_keep = false;
	size_t head_end = 0, line_end;
	const char *crlf;
	int r;

	*reason = NULL;
	r = find_head_end(buf, len, max_head, 431, &head_end, reason);
	if (r <= 0) {
		/* a request line that is already too long is a 414, not a 431 */
		crlf = memchr(buf, '\r', len < PX_MAX_REQUEST_LINE ? len : PX_MAX_REQUEST_LINE);
		if (proxy && !crlf && len >= PX_MAX_REQUEST_LINE && (r == 0 || r == -431)) {
			*reason = "request line too long";
			return -414;
		}
		return r;
	}
	crlf = memchr(buf, '\r', head_end);
	line_end = (size_t)(crlf - buf);
	if (line_end >= PX_MAX_REQUEST_LINE) {
		*reason = "request line too long";
		return -414;
	}
	memset(req, 0, sizeof(*req));
	req->head_len = head_end;
	r = parse_request_line(buf, line_end, form, origin, req, reason);
	if (r < 0)
		return r;
	req->line_ok = true;
	r = parse_header_lines(buf, line_end + 2, head_end, req->headers, PX_MAX_HEADERS,
			       &req->n_headers, 400, 431, reason);
	if (r < 0)
		return r;

	for (size_t i = 0; i < req->n_headers; i++) {
		const px_header *h = &req->headers[i];

		r = framing_header(buf, h, req, proxy, &have_te, &conn_close, &conn_keep, reason);
		if (r == 0 && proxy && span_ieq(buf, h->name, "host"))
			r = check_host_header(buf, h, req, &have_host, reason);
		if (r < 0)
			return r;
	}
	if (req->has_content_length && req->chunked) {
		*reason = "both Content-Length and Transfer-Encoding";
		return -400;
	}
	if (req->chunked && req->minor == 0) {
		*reason = "Transfer-Encoding in HTTP/1.0";
		return -400;
	}
	if (proxy && req->minor == 1 && !have_host && req->target_kind != PX_TARGET_AUTHORITY) {
		*reason = "missing Host";
		return -400;
	}
	if (req->target_kind == PX_TARGET_AUTHORITY && (req->has_content_length || req->chunked)) {
		*reason = "CONNECT with a body";
		return -400;
	}
	req->keep_alive = req->minor == 1 ? !conn_close : !proxy && conn_keep;
	return (int)head_end;
}

int px_http_parse_request(const char *buf, size_t len, px_request *req, const char **reason)
{
	return parse_request(buf, len, FORM_PROXY, NULL, PX_MAX_HEAD, req, reason);
}

int px_http_parse_origin_request(const char *buf, size_t len, const px_origin *origin,
				 px_request *req, const char **reason)
{
	return parse_request(buf, len, FORM_TUNNEL, origin, PX_MAX_HEAD, req, reason);
}

int px_http_parse_server_request(const char *buf, size_t len, size_t max_head, px_request *req,
				 const char **reason)
{
	return parse_request(buf, len, FORM_SERVER, NULL,
			     max_head < PX_MAX_HEAD ? max_head : PX_MAX_HEAD, req, reason);
}

static const char *const hop_headers[] = {
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "expect", "host",
};

static bool named_in_connection(const char *buf, const px_header *conn_hdrs[], size_t n_conn,
				const char *name, size_t len)
{
	for (size_t i = 0; i < n_conn; i++) {
		char tmp[128];

		if (len >= sizeof(tmp))
			continue;
		memcpy(tmp, name, len);
		tmp[len] = 0;
		if (list_has_token(buf + conn_hdrs[i]->value.off, conn_hdrs[i]->value.len, tmp))
			return true;
	}
	return false;
}

static bool hop_by_hop(const char *buf, const px_header *conn_hdrs[], size_t n_conn,
		       const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(hop_headers) / sizeof(hop_headers[0]); i++)
		if (mem_ieq(name, len, hop_headers[i]))
			return true;
	if (len >= 6 && mem_ieq(name, 6, "proxy-"))
		return true;
	return named_in_connection(buf, conn_hdrs, n_conn, name, len);
}

typedef struct sbuf {
	char *p;
	size_t len, cap;
	bool failed;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
	size_t need;

	if (b->failed)
		return;
	if (__builtin_add_overflow(b->len, n, &need) || need >= (size_t)4 << 20) {
		b->failed = true;
		return;
	}
	if (need + 1 > b->cap) {
		size_t ncap = b->cap ? b->cap : 512;
		char *np;

		while (ncap < need + 1)
			ncap *= 2;
		np = realloc(b->p, ncap);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, s, n);
	b->len = need;
	b->p[b->len] = 0;
}

static void sb_str(sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static int sb_finish(sbuf *b, char **ret, size_t *ret_len)
{
	if (b->failed) {
		free(b->p);
		return -ENOMEM;
	}
	*ret = b->p;
	*ret_len = b->len;
	return 0;
}

int px_http_build_upstream_head(const char *buf, const px_request *req, const char *cred_name,
				const char *cred_value, char **ret_head, size_t *ret_len)
{
	sbuf b = {0};
	const px_header *conn[PX_MAX_HEADERS];
	size_t n_conn = 0;
	char port[8];

	for (size_t i = 0; i < req->n_headers; i++)
		if (span_ieq(buf, req->headers[i].name, "connection") ||
		    span_ieq(buf, req->headers[i].name, "proxy-connection"))
			conn[n_conn++] = &req->headers[i];

	sb_str(&b, req->method);
	sb_str(&b, " ");
	if (req->path.len == 0)
		sb_str(&b, "/");
	else if (buf[req->path.off] == '?') {
		sb_str(&b, "/");
		sb_add(&b, buf + req->path.off, req->path.len);
	} else
		sb_add(&b, buf + req->path.off, req->path.len);
	/* an HTTP/1.0 client cannot read chunked responses: ask the origin in 1.0 */
	sb_str(&b, req->minor == 0 ? " HTTP/1.0\r\nHost: " : " HTTP/1.1\r\nHost: ");
	if (req->host_kind == PX_HOST_IPV6) {
		sb_str(&b, "[");
		sb_str(&b, req->host);
		sb_str(&b, "]");
	} else
		sb_str(&b, req->host);
	if (req->port != (req->target_kind == PX_TARGET_ORIGIN ? 443 : 80)) {
		(void)snprintf(port, sizeof(port), ":%u", (unsigned)req->port);
		sb_str(&b, port);
	}
	sb_str(&b, "\r\n");
	for (size_t i = 0; i < req->n_headers; i++) {
		const px_header *h = &req->headers[i];

		if (hop_by_hop(buf, conn, n_conn, buf + h->name.off, h->name.len))
			continue;
		/* the configured credential replaces, never merges with, the agent's */
		if (cred_name && mem_ieq(buf + h->name.off, h->name.len, cred_name))
			continue;
		sb_add(&b, buf + h->name.off, h->name.len);
		sb_str(&b, ": ");
		sb_add(&b, buf + h->value.off, h->value.len);
		sb_str(&b, "\r\n");
	}
	if (cred_name) {
		sb_str(&b, cred_name);
		sb_str(&b, ": ");
		sb_str(&b, cred_value);
		sb_str(&b, "\r\n");
	}
	/* a 1.1 request leaves the connection open for the next one (pool.h) */
	sb_str(&b,
	       req->minor == 0 ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n");
	return sb_finish(&b, ret_head, ret_len);
}

int px_http_parse_response(const char *buf, size_t len, bool request_was_head, px_response *resp,
			   const char **reason)
{
	size_t head_end = 0, line_end;
	px_header hdrs[PX_MAX_HEADERS];
	size_t n = 0;
	const char *crlf;
	bool have_te = false;
	int r;

	*reason = NULL;
	r = find_head_end(buf, len, PX_MAX_RESPONSE_HEAD, 502, &head_end, reason);
	if (r < 0)
		return -502;
	if (r == 0)
		return 0;
	memset(resp, 0, sizeof(*resp));
	resp->head_len = head_end;
	crlf = memchr(buf, '\r', head_end);
	line_end = (size_t)(crlf - buf);
	/* "HTTP/1.x NNN[ reason]" */
	if (line_end < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || (buf[7] != '0' && buf[7] != '1') ||
	    buf[8] != ' ' || !is_digit((unsigned char)buf[9]) ||
	    !is_digit((unsigned char)buf[10]) || !is_digit((unsigned char)buf[11]) ||
	    (line_end > 12 && buf[12] != ' ')) {
		*reason = "malformed status line";
		return -502;
	}
	resp->minor = buf[7] - '0';
	resp->conn_close = resp->minor == 0;
	resp->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	if (resp->status < 100) {
		*reason = "malformed status line";
		return -502;
	}
	r = parse_header_lines(buf, line_end + 2, head_end, hdrs, PX_MAX_HEADERS, &n, 502, 502,
			       reason);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const char *v = buf + hdrs[i].value.off;

		if (span_ieq(buf, hdrs[i].name, "content-length")) {
			if (resp->has_content_length ||
			    parse_content_length(v, hdrs[i].value.len, &resp->content_length) < 0) {
				*reason = "invalid Content-Length";
				return -502;
			}
			resp->has_content_length = true;
		} else if (span_ieq(buf, hdrs[i].name, "connection")) {
			if (list_has_token(v, hdrs[i].value.len, "close"))
				resp->conn_close = true;
		} else if (span_ieq(buf, hdrs[i].name, "transfer-encoding")) {
			if (have_te) {
				*reason = "duplicate Transfer-Encoding";
				return -502;
			}
			have_te = true;
			/* only "chunked" can be framed; anything else reads to close */
			if (mem_ieq(v, hdrs[i].value.len, "chunked"))
				resp->chunked = true;
			else
				resp->close_delimited = true;
		}
	}
	if (resp->has_content_length && have_te) {
		*reason = "both Content-Length and Transfer-Encoding";
		return -502;
	}
	if ((resp->status >= 100 && resp->status < 200) || resp->status == 204 ||
	    resp->status == 304 || request_was_head) {
		resp->no_body = true;
		resp->chunked = false;
		resp->close_delimited = false;
	} else if (!resp->has_content_length && !resp->chunked)
		resp->close_delimited = true;
	return (int)head_end;
}

int px_http_build_client_response_head(const char *buf, const px_response *resp, bool close,
				       char **ret_head, size_t *ret_len)
{
	px_header hdrs[PX_MAX_HEADERS];
	const px_header *conn[PX_MAX_HEADERS];
	size_t n = 0, n_conn = 0;
	const char *crlf = memchr(buf, '\r', resp->head_len);
	size_t line_end = (size_t)(crlf - buf);
	const char *reason;
	sbuf b = {0};

	if (parse_header_lines(buf, line_end + 2, resp->head_len, hdrs, PX_MAX_HEADERS, &n, 502,
			       502, &reason) < 0)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++)
		if (span_ieq(buf, hdrs[i].name, "connection"))
			conn[n_conn++] = &hdrs[i];
	/* we always speak HTTP/1.1 to the client */
	sb_str(&b, "HTTP/1.1");
	sb_add(&b, buf + 8, line_end - 8);
	sb_str(&b, "\r\n");
	for (size_t i = 0; i < n; i++) {
		const char *name = buf + hdrs[i].name.off;
		size_t nl = hdrs[i].name.len;

		if (mem_ieq(name, nl, "connection") || mem_ieq(name, nl, "keep-alive") ||
		    mem_ieq(name, nl, "proxy-connection") || mem_ieq(name, nl, "upgrade") ||
		    (nl >= 6 && mem_ieq(name, 6, "proxy-")))
			continue;
		if (named_in_connection(buf, conn, n_conn, name, nl))
			continue;
		sb_add(&b, name, nl);
		sb_str(&b, ": ");
		sb_add(&b, buf + hdrs[i].value.off, hdrs[i].value.len);
		sb_str(&b, "\r\n");
	}
	if (close)
		sb_str(&b, "Connection: close\r\n");
	sb_str(&b, "\r\n");
	return sb_finish(&b, ret_head, ret_len);
}

int px_chunked_feed(px_chunked *st, const char *buf, size_t len, size_t *ret_consumed,
		    uint64_t *ret_data)
{
	size_t i = 0;
	uint64_t data = 0;

	while (i < len && st->state != PX_CHUNK_DONE) {
		unsigned char c = (unsigned char)buf[i];

		switch (st->state) {
		case PX_CHUNK_SIZE: {
			int h = hex_value(c);

			if (h >= 0) {
				/* 15 hex digits bound the size below 2^60: no overflow */
				if (++st->size_digits > 15)
					return -EBADMSG;
				st->remaining = st->remaining * 16 + (uint64_t)h;
				i++;
				break;
			}
			if (st->size_digits == 0)
				return -EBADMSG;
			if (c == ';')
				st->state = PX_CHUNK_SIZE_EXT;
			else if (c == '\r')
				st->state = PX_CHUNK_SIZE_LF;
			else
				return -EBADMSG;
			i++;
			break;
		}
		case PX_CHUNK_SIZE_EXT:
			/* chunk-ext: token chars, '=', quoted strings kept simple */
			if (c == '\r')
				st->state = PX_CHUNK_SIZE_LF;
			else if (!(is_tchar(c) || c == '=' || c == ';' || c == '"' || c == ' ' ||
				   c == '\t'))
				return -EBADMSG;
			if (++st->trailer_bytes > PX_MAX_CHUNK_TRAILER)
				return -EBADMSG;
			i++;
			break;
		case PX_CHUNK_SIZE_LF:
			if (c != '\n')
				return -EBADMSG;
			i++;
			st->trailer_bytes = 0;
			if (st->remaining == 0) {
				st->last_chunk = true;
				st->state = PX_CHUNK_TRAILER_START;
			} else
				st->state = PX_CHUNK_DATA;
			break;
		case PX_CHUNK_DATA: {
			uint64_t take = len - i;

			if (take > st->remaining)
				take = st->remaining;
			st->remaining -= take;
			i += (size_t)take;
			data += take;
			if (st->remaining == 0)
				st->state = PX_CHUNK_DATA_CR;
			break;
		}
		case PX_CHUNK_DATA_CR:
			if (c != '\r')
				return -EBADMSG;
			st->state = PX_CHUNK_DATA_LF;
			i++;
			break;
		case PX_CHUNK_DATA_LF:
			if (c != '\n')
				return -EBADMSG;
			st->state = PX_CHUNK_SIZE;
			st->size_digits = 0;
			st->remaining = 0;
			i++;
			break;
		case PX_CHUNK_TRAILER_START:
			if (c == '\r')
				st->state = PX_CHUNK_FINAL_LF;
			else if (is_tchar(c))
				st->state = PX_CHUNK_TRAILER_LINE;
			else
				return -EBADMSG;
			i++;
			break;
		case PX_CHUNK_TRAILER_LINE:
			if (c == '\r')
				st->state = PX_CHUNK_TRAILER_LF;
			else if ((c < 0x20 && c != '\t') || c == 0x7f)
				return -EBADMSG;
			if (++st->trailer_bytes > PX_MAX_CHUNK_TRAILER)
				return -EBADMSG;
			i++;
			break;
		case PX_CHUNK_TRAILER_LF:
			if (c != '\n')
				return -EBADMSG;
			st->state = PX_CHUNK_TRAILER_START;
			i++;
			break;
		case PX_CHUNK_FINAL_LF:
			if (c != '\n')
				return -EBADMSG;
			st->state = PX_CHUNK_DONE;
			i++;
			break;
		case PX_CHUNK_DONE:
		case _PX_CHUNK_STATE_MAX:
		case _PX_CHUNK_STATE_INVALID:
		default:
			return -EBADMSG;
		}
	}
	*ret_consumed = i;
	*ret_data = data;
	return st->state == PX_CHUNK_DONE ? 1 : 0;
}

const char *px_http_status_text(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 417:
		return "Expectation Failed";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

int px_http_local_response(int status, const char *deny_reason, const char *text, bool close,
			   char *out, size_t out_size)
{
	char deny[128] = "";
	char body[320];
	int bl, n;

	if (deny_reason)
		(void)snprintf(deny, sizeof(deny), "X-Sandcap-Deny: %s\r\n", deny_reason);
	bl = snprintf(body, sizeof(body), "sandcap proxy: %d %s%s%s\n", status,
		      px_http_status_text(status), text ? ": " : "", text ? text : "");
	if (bl < 0)
		return -EINVAL;
	if ((size_t)bl >= sizeof(body))
		bl = (int)sizeof(body) - 1;
	n = snprintf(out, out_size,
		     "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n"
		     "%.*s",
		     status, px_http_status_text(status), deny, bl,
		     close ? "Connection: close\r\n" : "", bl, body);
	if (n < 0 || (size_t)n >= out_size)
		return -ENOBUFS;
	return n;
}

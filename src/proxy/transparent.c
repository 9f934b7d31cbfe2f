/* SPDX-License-Identifier: MIT */
/*
 * Transparent redirection (docs/proxy.md): in the sandbox's netns every
 * address is local to lo, and a listener on the wildcard address of each
 * allowed port takes the connections a client made to an address the sandbox
 * resolver gave it. getsockname() says which address, so which name; the first
 * bytes say what the client speaks:
 *
 *   a TLS ClientHello: its SNI must be that name; then a tunnel, judged as
 *     CONNECT name:port is (px_conn_judge());
 *   an HTTP request: its Host must be that name; each head is rewritten to
 *     absolute-form ("GET http://name:port/path") and forwarded as a proxy
 *     request is, credentials and all;
 *   anything else, or nothing within PX_PEEK_NS (a protocol where the server
 *     speaks first): a tunnel, as CONNECT.
 *
 * An address the sandbox resolver did not give out is refused unless an
 * IP-literal rule allows it (then a tunnel to it), or it is the loopback and
 * a rule allows localhost on that port (then it stands for localhost):
 * net.denied with "not-a-known-name".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/allow.h"
#include "proxy/origin.h"
#include "proxy/redirect.h"
#include "proxy/sni.h"

int px_redirect_new(px_loop *L, const int *fds, size_t n)
{
	px_redirect *R = calloc(1, sizeof(*R));
	int one = 1;

	if (!R)
		return -ENOMEM;
	R->dns_w.type = W_SANDBOX_RESOLVER;
	R->dns_w.fd = -1;
	for (size_t i = 0; i < n; i++) {
		struct epoll_event ev = {.events = EPOLLIN};
		union {
			struct sockaddr sa;
			struct sockaddr_in in4;
			struct sockaddr_in6 in6;
		} sa;
		socklen_t len = sizeof(sa);
		int type = 0, fam = 0;
		socklen_t tl = sizeof(type), fl = sizeof(fam);

		if (getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
		    getsockopt(fds[i], SOL_SOCKET, SO_DOMAIN, &fam, &fl) < 0 ||
		    getsockname(fds[i], &sa.sa, &len) < 0)
			goto fail;
		if (type == SOCK_DGRAM && R->dns_w.fd < 0) {
			/* answers leave from the address asked (sandbox-resolver.c) */
			if (fam == AF_INET6)
				(void)setsockopt(fds[i], IPPROTO_IPV6, IPV6_RECVPKTINFO, &one,
						 sizeof(one));
			else
				(void)setsockopt(fds[i], IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
			R->dns_w.fd = fds[i];
			ev.data.ptr = &R->dns_w;
		} else if (type == SOCK_STREAM && R->n_listeners < PX_SEED_MAX_SOCKETS) {
			px_tlisten *t = &R->listeners[R->n_listeners++];

			t->w.type = W_TRANSPARENT;
			t->fd = fds[i];
			t->port =
			    ntohs(sa.sa.sa_family == AF_INET6 ? sa.in6.sin6_port : sa.in4.sin_port);
			ev.data.ptr = &t->w;
		} else
			continue;
		if (epoll_ctl(L->epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0)
			goto fail;
	}
	L->redir = R;
	return 0;
fail:
	free(R);
	return -errno;
}

/* The destination, IPv4-mapped addresses as IPv4. */
static void dest_of(const struct sockaddr_storage *ss, px_addr *a, uint16_t *port)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)ss;

		a->family = AF_INET;
		memcpy(a->addr, &in4->sin_addr, 4);
		*port = ntohs(in4->sin_port);
		return;
	}
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)ss;

	*port = ntohs(in6->sin6_port);
	if (memcmp(&in6->sin6_addr, mapped, sizeof(mapped)) == 0) {
		a->family = AF_INET;
		memcpy(a->addr, (const uint8_t *)&in6->sin6_addr + 12, 4);
	} else {
		a->family = AF_INET6;
		memcpy(a->addr, &in6->sin6_addr, 16);
	}
}

/* At most PX_REDIR_DENIED_PER_S records a second; the rest are counted
 * and reported by px_redirect_tick(). */
static bool may_record(px_redirect *R, uint64_t now)
{
	if (now - R->denied_window_ns >= PX_REDIR_REPORT_NS) {
		R->denied_window_ns = now;
		R->denied_in_window = 0;
	}
	if (R->denied_in_window >= PX_REDIR_DENIED_PER_S) {
		R->denied_unrecorded++;
		return false;
	}
	R->denied_in_window++;
	return true;
}

static void refuse_unknown(px_loop *L, const char *addr, uint16_t port)
{
	if (!may_record(L->redir, px_now_ns()))
		return;
	(void)px_events_emit(
	    L->ev, "net.denied",
	    json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:s}", "method", "", "host", addr,
		      "port", (int)port, "path", "", "addr", addr, "protocol", "tcp", "reason",
		      "not-a-known-name", "detail",
		      "a connection to an address the sandbox resolver did not give out"));
}

/* A client that reads no proxy variable resolves localhost itself, to the
 * sandbox's loopback; a rule for localhost on this port means the host's
 * (nothing of the sandbox's own can listen on a port a rule allows: this
 * listener holds its wildcard address). */
static const char *loopback_name(px_loop *L, const px_addr *dst, uint16_t port)
{
	static const uint8_t v4[4] = {127, 0, 0, 1}, v6[16] = {[15] = 1};
	const char *reason;
	bool lo =
	    dst->family == AF_INET ? memcmp(dst->addr, v4, 4) == 0 : memcmp(dst->addr, v6, 16) == 0;

	if (!lo || px_allow_match(L->cfg, "localhost", PX_HOST_NAME, port, 0, true, &reason) < 0)
		return NULL;
	return "localhost";
}

/* c asks for host:port as "CONNECT host:port" would: the same judgement. */
static void judge_as_tunnel(conn *c, px_host_kind kind, const char *host)
{
	memset(&c->req, 0, sizeof(c->req));
	c->req.line_ok = true;
	(void)snprintf(c->req.method, sizeof(c->req.method), "CONNECT");
	c->req.method_bit = HTTP_CONNECT;
	c->req.target_kind = PX_TARGET_AUTHORITY;
	c->req.host_kind = kind;
	(void)snprintf(c->req.host, sizeof(c->req.host), "%s", host);
	c->req.port = c->tport;
	c->req.minor = 1;
	c->req.head_len = 0; /* what the client sent goes upstream, first */
	px_conn_judge(c);
}

void px_transparent_accept(px_loop *L, px_watch *w)
{
	px_tlisten *t = (px_tlisten *)(void *)w;

	for (int k = 0; k < 16; k++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		char addr[INET6_ADDRSTRLEN];
		const char *name, *reason = NULL;
		px_host_kind kind;
		px_addr dst;
		uint16_t port;
		conn *c;
		int fd = accept4(t->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
			(void)close(fd);
			continue;
		}
		dest_of(&ss, &dst, &port);
		(void)inet_ntop(dst.family, dst.addr, addr, sizeof(addr));
		name = px_synthetic_name(L->synth, &dst);
		kind = dst.family == AF_INET ? PX_HOST_IPV4 : PX_HOST_IPV6;
		if (!name && px_allow_match(L->cfg, addr, kind, port, 0, true, &reason) < 0)
			name = loopback_name(L, &dst, port);
		if (!name && px_allow_match(L->cfg, addr, kind, port, 0, true, &reason) < 0) {
			struct linger rst = {.l_onoff = 1, .l_linger = 0};

			refuse_unknown(L, addr, port);
			/* a reset, not an end of stream: the client sees a refusal */
			(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
			(void)close(fd);
			continue;
		}
		c = px_conn_new(L, fd);
		if (!c)
			continue;
		c->tport = port;
		c->tname = name;
		c->tmode = PX_T_UNKNOWN;
		c->start_ns = px_now_ns(); /* the accept, until a head is judged */
		c->deadline_ns = c->start_ns + PX_PEEK_NS;
		if (!name) {
			/* an IP-literal rule: nothing to match the first bytes against */
			c->tmode = PX_T_RAW;
			judge_as_tunnel(c, kind, addr);
		}
	}
}

/* Reads what the client has sent; false when c was closed. */
static bool read_more(conn *c)
{
	while (c->cin_len < sizeof(c->cin)) {
		ssize_t n =
		    recv(c->cfd, c->cin + c->cin_len, sizeof(c->cin) - c->cin_len, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return true;
			px_conn_close(c, "client-read");
			return false;
		}
		if (n == 0) {
			px_conn_close(c, "client-eof");
			return false;
		}
		c->cin_len += (size_t)n;
	}
	return true;
}

static bool is_tchar(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '-' || ch == '_';
}

/* TLS, HTTP (a method token and a space), other; PX_T_UNKNOWN: read more. */
static px_tmode classify(const conn *c)
{
	size_t i;

	if (c->cin_len == 0)
		return PX_T_UNKNOWN;
	if ((uint8_t)c->cin[0] == 0x16)
		return PX_T_TLS;
	for (i = 0; i < c->cin_len && i <= PX_MAX_METHOD && is_tchar(c->cin[i]); i++)
		;
	if (i == c->cin_len && i <= PX_MAX_METHOD)
		return PX_T_UNKNOWN;
	return i > 0 && i < c->cin_len && c->cin[i] == ' ' ? PX_T_HTTP : PX_T_RAW;
}

/* A refusal before any head was judged: what was asked, as the records say it. */
static void refuse(conn *c, const char *reason, const char *detail)
{
	(void)snprintf(c->method, sizeof(c->method), "%s", c->tmode == PX_T_TLS ? "CONNECT" : "");
	(void)snprintf(c->host, sizeof(c->host), "%s", c->tname);
	c->port = c->tport;
	c->path[0] = 0;
	c->start_ns = px_now_ns();
	c->keep_alive = false;
	px_conn_deny(c, c->tmode == PX_T_HTTP ? 400 : 403, reason, detail, true);
}

static void on_client_hello(conn *c)
{
	char sni[PX_MAX_HOST + 1], detail[PX_MAX_HOST + 64];
	const char *why = NULL;
	int r = px_sni_parse((const uint8_t *)c->cin, c->cin_len, sni, &why);

	if (r == PX_SNI_NEED_MORE)
		return;
	if (r < 0) {
		refuse(c, "bad-client-hello", why);
		return;
	}
	if (r == PX_SNI_ABSENT) {
		refuse(c, "sni-missing", "a TLS ClientHello without a server name");
		return;
	}
	if (strcmp(sni, c->tname) != 0) {
		(void)snprintf(detail, sizeof(detail), "the ClientHello names %s", sni);
		refuse(c, "sni-mismatch", detail);
		return;
	}
	judge_as_tunnel(c, PX_HOST_NAME, c->tname);
}

/* origin-form -> absolute-form, once the head is complete: true when c->cin
 * now holds a head for the ordinary parser. */
static bool rewrite_head(conn *c)
{
	const char *why = NULL;
	int r =
	    px_origin_to_absolute(c->cin, &c->cin_len, sizeof(c->cin), c->tname, c->tport, &why);

	if (r == 0)
		return c->cin_len >= PX_MAX_HEAD; /* the parser answers 431 */
	if (r == -EBADMSG)
		refuse(c, "bad-request", why);
	else if (r == -EACCES)
		refuse(c, "host-mismatch", why);
	return r == 1 || r == -EMSGSIZE; /* too big: the parser refuses it */
}

bool px_transparent_head(conn *c)
{
	if (c->tmode == PX_T_RAW || !read_more(c))
		return false;
	if (c->tmode == PX_T_UNKNOWN) {
		/* the client spoke: the head deadline from the accept, not the peek's */
		if (c->cin_len > 0)
			c->deadline_ns = c->start_ns + PX_HEAD_TIMEOUT_NS;
		c->tmode = classify(c);
		if (c->tmode == PX_T_UNKNOWN)
			return false;
		if (c->tmode == PX_T_RAW) {
			judge_as_tunnel(c, PX_HOST_NAME, c->tname);
			return false;
		}
	}
	if (c->tmode == PX_T_TLS) {
		on_client_hello(c);
		return false;
	}
	return rewrite_head(c);
}

bool px_transparent_timeout(conn *c)
{
	if (c->tmode != PX_T_UNKNOWN || c->cin_len > 0)
		return false;
	/* the client waits for the server to speak first (ssh does not; smtp,
	 * mysql and the like do) */
	c->tmode = PX_T_RAW;
	judge_as_tunnel(c, PX_HOST_NAME, c->tname);
	return true;
}

/* A count of what was not recorded one by one: "suppressed" as in
 * net.attempts, so that every query and refusal is accounted for. */
static void report_count(px_loop *L, const char *limit, const char *kind, const char *detail,
			 uint64_t n)
{
	(void)px_events_emit(L->ev, "limit.hit",
			     json_pack("{s:s, s:s, s:s, s:I}", "limit", limit, "kind", kind,
				       "detail", detail, "suppressed", (json_int_t)n));
}

uint64_t px_redirect_tick(px_loop *L, uint64_t now, bool now_or_never)
{
	px_redirect *R = L->redir;
	char detail[160];

	if (!R || (R->dns_over_rate == 0 && R->denied_unrecorded == 0))
		return 0;
	if (!now_or_never && now < R->report_ns)
		return R->report_ns;
	if (R->dns_over_rate) {
		(void)snprintf(
		    detail, sizeof(detail), "%llu DNS quer%s refused (REFUSED) over net.rate",
		    (unsigned long long)R->dns_over_rate, R->dns_over_rate == 1 ? "y" : "ies");
		report_count(L, "rate", "dns", detail, R->dns_over_rate);
		R->dns_over_rate = 0;
	}
	if (R->denied_unrecorded) {
		(void)snprintf(detail, sizeof(detail),
			       "%llu more connection%s to unknown addresses refused, not recorded "
			       "one by one",
			       (unsigned long long)R->denied_unrecorded,
			       R->denied_unrecorded == 1 ? "" : "s");
		report_count(L, "denied_records", "connections", detail, R->denied_unrecorded);
		R->denied_unrecorded = 0;
	}
	R->report_ns = now + PX_REDIR_REPORT_NS;
	return 0;
}

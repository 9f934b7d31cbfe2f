/* SPDX-License-Identifier: MIT */
/*
 * SOCKS5 on the proxy's listener (docs/proxy.md, "SOCKS5"). A connection
 * whose first byte is 5 speaks SOCKS5 (no HTTP method starts with that
 * byte); its CONNECT becomes the same request an HTTP CONNECT would be and
 * is judged, connected, tunnelled and recorded by the same code.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/cleanup.h"
#include "proxy/conn.h"
#include "proxy/socks5.h"

#define NO_ACCEPTABLE_METHODS 0xffu

bool px_socks_detect(const conn *c)
{
	/* a transparent connection carries the client's own protocol */
	return c->tmode == PX_T_NONE && c->n_requests == 0 && c->cin_len > 0 &&
	       (uint8_t)c->cin[0] == PX_SOCKS5_VERSION;
}

static px_socks5_rep rep_for(const conn *c, const char *reason)
{
	static const char *const failures[] = {"bad-request",  "bad-target",	 "internal",
					       "upstream-tls", "upstream-error", "bad-response"};

	if (c->socks_rep)
		return (px_socks5_rep)c->socks_rep;
	if (!reason)
		return PX_SOCKS5_GENERAL_FAILURE;
	if (strcmp(reason, "dns-failure") == 0 || strcmp(reason, "upstream-timeout") == 0)
		return PX_SOCKS5_HOST_UNREACHABLE;
	if (strcmp(reason, "connect-failed") == 0)
		return c->connect_errno == ENETUNREACH	  ? PX_SOCKS5_NET_UNREACHABLE
		       : c->connect_errno == EHOSTUNREACH ? PX_SOCKS5_HOST_UNREACHABLE
							  : PX_SOCKS5_REFUSED;
	for (size_t i = 0; i < ELEMENTSOF(failures); i++)
		if (strcmp(reason, failures[i]) == 0)
			return PX_SOCKS5_GENERAL_FAILURE;
	return PX_SOCKS5_NOT_ALLOWED; /* every refusal of the policy */
}

int px_socks_refusal(const conn *c, const char *reason, uint8_t *buf, size_t size)
{
	if (size < PX_SOCKS5_REPLY_BYTES)
		return -ENOBUFS;
	if (c->socks_stage == PX_SOCKS_GREETING) {
		buf[0] = PX_SOCKS5_VERSION;
		buf[1] = NO_ACCEPTABLE_METHODS;
		return 2;
	}
	px_socks5_reply(rep_for(c, reason), buf);
	return PX_SOCKS5_REPLY_BYTES;
}

int px_socks_success(uint8_t *buf, size_t size)
{
	if (size < PX_SOCKS5_REPLY_BYTES)
		return -ENOBUFS;
	px_socks5_reply(PX_SOCKS5_SUCCEEDED, buf);
	return PX_SOCKS5_REPLY_BYTES;
}

static void consume(conn *c, size_t n)
{
	memmove(c->cin, c->cin + n, c->cin_len - n);
	c->cin_len -= n;
}

/* A handshake that cannot go on: recorded as bad-request with the reason. */
static void refuse(conn *c, const char *detail)
{
	c->start_ns = px_now_ns();
	c->n_requests++;
	c->keep_alive = false;
	px_conn_deny(c, 400, "bad-request", detail, true);
}

static bool on_greeting(conn *c)
{
	static const uint8_t chosen[2] = {PX_SOCKS5_VERSION, 0x00};
	bool noauth;
	int r = px_socks5_parse_greeting((const uint8_t *)c->cin, c->cin_len, &noauth);
	ssize_t n;

	if (r == 0)
		return false;
	strcpy(c->method, "SOCKS5");
	if (r < 0) {
		refuse(c, "malformed SOCKS5 greeting");
		return true;
	}
	if (!noauth) {
		refuse(c, "no acceptable SOCKS5 method: only \"no authentication\" (0) is served");
		return true;
	}
	/* two bytes into an empty send buffer: anything short of that is a dead peer */
	n = send(c->cfd, chosen, sizeof(chosen), MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(chosen)) {
		px_conn_close(c, "client-write");
		return true;
	}
	consume(c, (size_t)r);
	c->socks_stage = PX_SOCKS_REQUEST;
	return false;
}

bool px_socks_read(conn *c)
{
	px_socks5_request req;
	const char *why = NULL;
	int r;

	c->socks = true;
	if (c->socks_stage == PX_SOCKS_GREETING && on_greeting(c))
		return true;
	if (c->socks_stage != PX_SOCKS_REQUEST)
		return false;
	r = px_socks5_parse_request((const uint8_t *)c->cin, c->cin_len, &req, &why);
	if (r == 0)
		return false;
	if (r < 0) {
		(void)snprintf(c->method, sizeof(c->method), "%s",
			       px_socks5_command_name(req.command));
		c->socks_rep = (uint8_t)-r;
		refuse(c, why);
		return true;
	}
	/* the CONNECT an HTTP client would have sent */
	memset(&c->req, 0, sizeof(c->req));
	c->req.head_len = req.len;
	c->req.line_ok = true;
	strcpy(c->req.method, "CONNECT");
	c->req.method_bit = HTTP_CONNECT;
	c->req.target_kind = PX_TARGET_AUTHORITY;
	c->req.host_kind = req.host_kind;
	c->req.port = req.port;
	if (req.host_kind != PX_HOST_NAME) {
		const char *name = px_loop_synthetic_name(
		    c->L, req.host_kind == PX_HOST_IPV4 ? AF_INET : AF_INET6, req.addr);

		/* an address the sandbox resolver gave out stands for its name */
		if (name && strlen(name) < sizeof(c->req.host)) {
			strcpy(req.host, name);
			c->req.host_kind = PX_HOST_NAME;
		}
	}
	strcpy(c->req.host, req.host);
	px_conn_judge(c);
	return true;
}

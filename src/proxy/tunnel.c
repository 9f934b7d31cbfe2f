/* SPDX-License-Identifier: MIT */
/*
 * CONNECT tunnels. Bytes move with splice(2) through one pipe per direction,
 * never through user space; the pipe's fill level is the only buffer, and the
 * bandwidth bucket and egress budget bound how much one splice may move.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "proxy/conn.h"
#include "proxy/placeholder.h"
#include "proxy/sni.h"

static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

int px_tunnel_start(conn *c)
{
	int r, r2, lowat;

	if (pipe2(c->c2u, O_NONBLOCK | O_CLOEXEC) < 0 || pipe2(c->u2c, O_NONBLOCK | O_CLOEXEC) < 0)
		return px_conn_reply(c, 502, "internal", "cannot create pipes", true);
	/*
	 * A bigger pipe means fewer wake-ups per byte. Past the per-user pipe
	 * quota the kernel keeps the default size, so ask what we really got.
	 * pipe_cap bounds the bytes; a pipe can also be full with fewer bytes
	 * (one page per buffer, and socket data is not page-aligned): splice
	 * then says EAGAIN, and c2u_full/u2c_full stop asking epoll about the
	 * readable socket until the pipe has drained, or level-triggered epoll
	 * would report it at once, again and again.
	 */
	(void)fcntl(c->c2u[1], F_SETPIPE_SZ, PX_PIPE_SIZE);
	(void)fcntl(c->u2c[1], F_SETPIPE_SZ, PX_PIPE_SIZE);
	r = fcntl(c->c2u[1], F_GETPIPE_SZ);
	r2 = fcntl(c->u2c[1], F_GETPIPE_SZ);
	if (r <= 0 || r2 <= 0)
		return px_conn_reply(c, 502, "internal", "cannot size pipes", true);
	c->pipe_cap = (size_t)(r < r2 ? r : r2);
	/*
	 * The client is a process on this machine. Unsent data queued in its
	 * socket is sent later, by pacing timers and by the client's own ACKs,
	 * in the client's time: megabytes of it made the client, the slowest
	 * stage of a download, do the proxy's TCP work. With a short unsent
	 * queue the worker sends the data itself, within its splice.
	 */
	lowat = PX_CLIENT_NOTSENT_LOWAT;
	(void)setsockopt(c->cfd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
	free(c->cout);
	c->cout = malloc(sizeof(established));
	if (!c->cout)
		return -ENOMEM;
	/* the answer that opens the tunnel, in the client's protocol; a
	 * transparent client did not ask a proxy: it gets no answer of one */
	if (c->inspect_declined)
		c->cout_len = 0; /* answered when it was to be inspected */
	else if (c->socks)
		c->cout_len = (size_t)px_socks_success((uint8_t *)c->cout, sizeof(established));
	else if (c->tmode != PX_T_NONE)
		c->cout_len = 0;
	else {
		memcpy(c->cout, established, sizeof(established));
		c->cout_len = strlen(established);
	}
	c->cout_off = 0;
	c->status = 200;
	/* bytes the client sent after the CONNECT head go upstream first */
	memmove(c->cin, c->cin + c->req.head_len, c->cin_len - c->req.head_len);
	c->cin_len -= c->req.head_len;
	c->req.head_len = 0;
	/* a transparent TLS tunnel's hello was checked already; one whose client
	 * was silent (PX_T_RAW) may send its hello now; an address names no host */
	c->hello_check = c->tmode != PX_T_TLS && c->req.host_kind == PX_HOST_NAME;
	c->framed = c->hello_check ? 0 : c->cin_len;
	c->state = CS_TUNNEL;
	c->c_rd = c->c_wr = c->u_rd = c->u_wr = true;
	c->deadline_ns = px_now_ns() + PX_TUNNEL_IDLE_NS;
	px_conn_emit_request(c, "allow", "", 200);
	px_tunnel_io(c);
	return 0;
}

static void tunnel_close(conn *c, const char *reason)
{
	uint64_t dur = (px_now_ns() - c->start_ns) / 1000000ull;
	json_t *d =
	    json_pack("{s:s, s:i, s:s, s:I, s:I, s:I, s:s}", "host", c->host, "port", (int)c->port,
		      "addr", c->addr_str, "bytes_out", (json_int_t)c->bytes_out, "bytes_in",
		      (json_int_t)c->bytes_in, "duration_ms", (json_int_t)dur, "reason", reason);

	if (d && c->socks)
		(void)json_object_set_new(d, "via", json_string("socks5"));
	(void)px_events_emit(c->L->ev, "net.tunnel.close", d);
	px_conn_close(c, reason);
}

void px_tunnel_end(conn *c, const char *reason)
{
	if (!c->dead && c->state == CS_TUNNEL)
		tunnel_close(c, reason);
}

static bool fatal(int err)
{
	return err != EAGAIN && err != EINTR;
}

/* The tunnel's first client bytes are a TLS ClientHello for another name. */
static void refuse_hello(conn *c, const char *reason, const char *detail)
{
	px_conn_emit_denied(c, reason, detail);
	tunnel_close(c, reason);
}

/* The first bytes, read here instead of peeked by px_inspect_tunnel_leak(),
 * carry a placeholder: refused as that would be. */
static bool leaks(conn *c)
{
	const px_cred *leak = px_placeholder_find(c->L->cfg, c->cin, c->cin_len);
	char detail[PX_MAX_HOST + 160];

	c->tunnel_peeked = true;
	if (!leak)
		return false;
	px_placeholder_tunnel_detail(leak, detail, sizeof(detail));
	refuse_hello(c, "credential-exfiltration", detail);
	return true;
}

/*
 * Domain fronting: a tunnel to an allowed host whose ClientHello names
 * another makes a shared front (a CDN) serve that other host. The first
 * client bytes are read into c->cin (one record at most, the only bytes of
 * the tunnel copied through user space); nothing goes upstream until they
 * are judged. Bytes that do not start a TLS handshake record go on as
 * before: no TLS server takes them. Returns false while waiting or closed.
 */
static bool check_hello(conn *c)
{
	char detail[PX_MAX_HOST + 64];
	const char *why = NULL;
	size_t cap = 5 + PX_TLS_RECORD_MAX;
	int r;

	while (c->cin_len == 0 || ((uint8_t)c->cin[0] == 0x16 && c->cin_len < cap)) {
		ssize_t n;

		if (c->cin_len > 0 && px_sni_parse((const uint8_t *)c->cin, c->cin_len, c->sni,
						   &why) != PX_SNI_NEED_MORE)
			break;
		if (!c->c_rd)
			return false;
		n = recv(c->cfd, c->cin + c->cin_len, cap - c->cin_len, MSG_DONTWAIT);
		if (n < 0 && fatal(errno)) {
			tunnel_close(c, "client-error");
			return false;
		}
		if (n < 0) {
			c->c_rd = false;
			return false;
		}
		if (n == 0) {
			c->c_eof = true;
			break;
		}
		c->cin_len += (size_t)n;
	}
	c->hello_check = false;
	c->framed = c->cin_len;
	if (c->cin_len == 0 || (uint8_t)c->cin[0] != 0x16) {
		c->sni[0] = 0;
		return !leaks(c);
	}
	if (c->declined_silent) {
		/* a tunnel past inspection would carry its requests unseen */
		c->sni[0] = 0;
		refuse_hello(c, "inspect-late",
			     "a TLS client of an inspected host must send its ClientHello within "
			     "200 ms of the CONNECT's answer; it was silent longer, and its "
			     "connection was taken for a server-first protocol");
		return false;
	}
	r = px_sni_parse((const uint8_t *)c->cin, c->cin_len, c->sni, &why);
	if (r == PX_SNI_FOUND && strcasecmp(c->sni, c->host) == 0) {
		c->sni[0] = 0;
		return !leaks(c);
	}
	if (r == PX_SNI_FOUND) {
		(void)snprintf(detail, sizeof(detail), "the ClientHello names %s", c->sni);
		refuse_hello(c, "sni-mismatch", detail);
	} else if (r == PX_SNI_ABSENT) {
		c->sni[0] = 0;
		refuse_hello(c, "sni-missing", "a TLS ClientHello without a server name");
	} else {
		c->sni[0] = 0;
		refuse_hello(c, "bad-client-hello",
			     r == PX_SNI_NEED_MORE ? "the ClientHello ended early" : why);
	}
	return false;
}

/*
 * Whether a splice into a pipe that moved n of the room bytes it was offered
 * left the socket drained. A pipe holds pipe_cap bytes only in whole pages,
 * and received data is not page-aligned, so a splice that nearly fills the
 * pipe stops short while the socket still holds data: that one is not
 * drained, and the next turn drains the pipe and reads again instead of
 * going back to epoll_wait(2) for a report it would get at once.
 */
static bool drained(size_t room, uint64_t asked, ssize_t n)
{
	return (uint64_t)n < asked && room - (size_t)n >= PX_PIPE_SLACK;
}

/*
 * Returns true when something moved. c_rd/c_wr/u_rd/u_wr say a socket may be
 * ready: set by epoll reports, cleared by EAGAIN or a short transfer, so an
 * idle direction costs no syscall. Clearing one wrongly only costs a round
 * trip: the loop is level-triggered and reports the socket again.
 */
static bool step(conn *c)
{
	px_loop *L = c->L;
	/* the clock is needed only for pacing */
	uint64_t now = L->sh->bw_up.unlimited && L->sh->bw_down.unlimited ? 0 : px_now_ns();
	bool moved = false;
	ssize_t n;

	/* 1. the "200" to the client */
	while (c->cout_off < c->cout_len) {
		n = send(c->cfd, c->cout + c->cout_off, c->cout_len - c->cout_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (fatal(errno)) {
				tunnel_close(c, "client-error");
				return false;
			}
			break;
		}
		c->cout_off += (size_t)n;
		moved = true;
	}
	if (c->cout_off < c->cout_len)
		return moved;

	/* 2. client -> upstream: leftover head bytes first, then the pipe */
	if (c->hello_check && !check_hello(c) && c->dead)
		return false;
	if (c->framed > 0) {
		uint64_t want = px_budget_take(L, c->framed);

		if (want == 0) {
			px_limit_hit(L, "egress_budget", c->host);
			tunnel_close(c, "egress_budget");
			return false;
		}
		n = send(c->ufd, c->cin, (size_t)want, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (L->sh->budget_left != PLAN_UNLIMITED)
				L->sh->budget_left += want;
			if (fatal(errno)) {
				tunnel_close(c, "upstream-error");
				return false;
			}
		} else {
			if (L->sh->budget_left != PLAN_UNLIMITED)
				L->sh->budget_left += want - (uint64_t)n;
			memmove(c->cin, c->cin + n, c->cin_len - (size_t)n);
			c->cin_len -= (size_t)n;
			c->framed -= (size_t)n;
			c->bytes_out += (uint64_t)n;
			moved = true;
		}
	}
	if (c->framed == 0 && !c->hello_check && c->c_rd && px_inspect_tunnel_leak(c)) {
		tunnel_close(c, "credential-exfiltration");
		return false;
	}
	if (c->framed == 0 && !c->hello_check && !c->c_eof && c->c2u_n < c->pipe_cap &&
	    !c->c2u_full && !c->throttled_up && c->c_rd) {
		uint64_t room = c->pipe_cap - c->c2u_n;
		uint64_t grant = px_bucket_take_min(&L->sh->bw_up, room, PX_BW_BURST_MIN, now);

		if (grant == 0)
			px_conn_throttle(c, &L->sh->bw_up, true, room);
		else {
			uint64_t budget = px_budget_take(L, grant);

			if (budget == 0) {
				char b;

				c->L->sh->bw_up.tokens += grant;
				/* the budget is spent: only a clean EOF may still come */
				n = recv(c->cfd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
				if (n > 0) {
					px_limit_hit(L, "egress_budget", c->host);
					tunnel_close(c, "egress_budget");
					return false;
				}
				if (n == 0) {
					c->c_eof = true;
					moved = true;
				}
			} else {
				n = splice(c->cfd, NULL, c->c2u[1], NULL, (size_t)budget,
					   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
				uint64_t used = n > 0 ? (uint64_t)n : 0;

				if (L->sh->budget_left != PLAN_UNLIMITED)
					L->sh->budget_left += budget - used;
				if (!L->sh->bw_up.unlimited)
					L->sh->bw_up.tokens += grant - used;
				if (n > 0) {
					c->c2u_n += (size_t)n;
					moved = true;
					if (drained(room, budget, n))
						c->c_rd = false;
				} else if (n == 0) {
					c->c_eof = true;
					moved = true;
				} else if (fatal(errno)) {
					tunnel_close(c, "client-error");
					return false;
				} else {
					c->c_rd = false;
					c->c2u_full = c->c2u_n > 0;
				}
			}
		}
	}
	if (c->c2u_n > 0 && c->u_wr) {
		n = splice(c->c2u[0], NULL, c->ufd, NULL, c->c2u_n,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			if ((size_t)n < c->c2u_n)
				c->u_wr = false;
			c->c2u_full = false;
			c->c2u_n -= (size_t)n;
			c->bytes_out += (uint64_t)n;
			moved = true;
		} else if (n < 0 && fatal(errno)) {
			tunnel_close(c, "upstream-error");
			return false;
		} else
			c->u_wr = false;
	}
	if (c->c_eof && c->c2u_n == 0 && c->framed == 0 && !c->u_shut) {
		(void)shutdown(c->ufd, SHUT_WR);
		c->u_shut = true;
	}

	/* 3. upstream -> client */
	if (!c->u_eof && c->u2c_n < c->pipe_cap && !c->u2c_full && !c->throttled_down && c->u_rd) {
		uint64_t room = c->pipe_cap - c->u2c_n;
		uint64_t grant = px_bucket_take_min(&L->sh->bw_down, room, PX_BW_BURST_MIN, now);

		if (grant == 0)
			px_conn_throttle(c, &L->sh->bw_down, false, room);
		else {
			n = splice(c->ufd, NULL, c->u2c[1], NULL, (size_t)grant,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			uint64_t used = n > 0 ? (uint64_t)n : 0;

			if (!L->sh->bw_down.unlimited)
				L->sh->bw_down.tokens += grant - used;
			if (n > 0) {
				c->u2c_n += (size_t)n;
				moved = true;
				if (drained(room, grant, n))
					c->u_rd = false;
			} else if (n == 0) {
				c->u_eof = true;
				moved = true;
			} else if (fatal(errno)) {
				tunnel_close(c, "upstream-error");
				return false;
			} else {
				c->u_rd = false;
				c->u2c_full = c->u2c_n > 0;
			}
		}
	}
	if (c->u2c_n > 0 && c->c_wr) {
		n = splice(c->u2c[0], NULL, c->cfd, NULL, c->u2c_n,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			if ((size_t)n < c->u2c_n)
				c->c_wr = false;
			c->u2c_full = false;
			c->u2c_n -= (size_t)n;
			c->bytes_in += (uint64_t)n;
			moved = true;
		} else if (n < 0 && fatal(errno)) {
			tunnel_close(c, "client-error");
			return false;
		} else
			c->c_wr = false;
	}
	if (c->u_eof && c->u2c_n == 0 && !c->c_shut) {
		(void)shutdown(c->cfd, SHUT_WR);
		c->c_shut = true;
	}
	if (c->c_eof && c->u_eof && c->c2u_n == 0 && c->u2c_n == 0) {
		tunnel_close(c, "eof");
		return false;
	}
	return moved;
}

void px_tunnel_io(conn *c)
{
	bool any = false;

	/* bounded: level-triggered epoll brings us back for the rest */
	for (int i = 0; i < 8 && !c->dead; i++) {
		if (!step(c))
			break;
		any = true;
	}
	if (any && !c->dead)
		c->deadline_ns = c->L->now_ns + PX_TUNNEL_IDLE_NS;
}

void px_tunnel_hup(conn *c, bool upstream)
{
	c->c_rd = c->c_wr = c->u_rd = c->u_wr = true;
	c->c2u_full = c->u2c_full = false; /* take what still fits */
	px_tunnel_io(c);
	if (c->dead)
		return;
	if (!upstream) {
		/* the client can no longer receive: nothing left to do */
		tunnel_close(c, "client-closed");
		return;
	}
	/* the origin is fully gone; deliver what is already in the pipe */
	c->u_eof = true;
	if (c->u2c_n == 0) {
		tunnel_close(c, "upstream-closed");
		return;
	}
	px_conn_drop_ufd(c);
	c->c_eof = true;
	c->c2u_n = 0;
	c->framed = 0;
}

void px_tunnel_interest(conn *c, uint32_t *cm, uint32_t *um)
{
	bool hello_sent = c->cout_off >= c->cout_len;

	*cm = 0;
	*um = 0;
	if (!hello_sent) {
		*cm = EPOLLOUT;
		return;
	}
	if (!c->c_eof && c->framed == 0 && c->c2u_n < c->pipe_cap && !c->c2u_full &&
	    !c->throttled_up)
		*cm |= EPOLLIN | EPOLLRDHUP;
	if (c->u2c_n > 0)
		*cm |= EPOLLOUT;
	if (c->ufd >= 0) {
		if (c->c2u_n > 0 || c->framed > 0)
			*um |= EPOLLOUT;
		if (!c->u_eof && c->u2c_n < c->pipe_cap && !c->u2c_full && !c->throttled_down)
			*um |= EPOLLIN | EPOLLRDHUP;
	}
}

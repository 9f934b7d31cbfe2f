/* SPDX-License-Identifier: MIT */
/*
 * An inspected connection whose client chose "h2" by ALPN (docs/proxy.md,
 * "HTTP/2"): the connection is in CS_H2, its decrypted bytes go to the
 * session of h2-session.c, and each stream's request is judged by a
 * connection of its own, made here from one end of the stream's socketpair.
 * That connection is an inspected one like any other (same CONNECT origin,
 * TLS to the origin, records marked "via": "h2"): the rules, credentials,
 * placeholders, limits and records are the HTTP/1.1 path's, not copies.
 * The session holds no pointer to those connections, only the socketpair,
 * so either side may end first.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include "proxy/conn.h"
#include "proxy/h2.h"

#define H2_READS_PER_EVENT 16 /* then the loop comes back (EV_WAKE): fairness */

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = 0;
}

static int open_stream(void *userdata, int fd, const px_h2_open *o)
{
	conn *c = userdata;
	conn *s = px_conn_new(c->L, fd); /* at the cap: counted and reported there */

	if (!s)
		return -EAGAIN;
	s->inspected = true;
	s->h2_stream = true;
	s->tunnel = c->tunnel;
	s->client_alert = -1;
	if (o->refuse_status) {
		/* what the stream asked for, as a refused HTTP/1.1 head records it */
		s->start_ns = px_now_ns();
		s->n_requests++;
		copy_str(s->method, sizeof(s->method), o->method);
		copy_str(s->host, sizeof(s->host), c->tunnel.host);
		copy_str(s->path, sizeof(s->path), o->path);
		s->port = c->tunnel.port;
		s->keep_alive = false;
		px_conn_deny(s, o->refuse_status, "bad-request", o->refuse_text, true);
	}
	return 0;
}

static void flush(conn *c)
{
	const uint8_t *p;
	size_t n;

	while ((n = px_h2_out(c->h2, &p)) > 0) {
		ssize_t w = px_client_send(c, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w < 0) {
			px_conn_close(c, "client-write");
			return;
		}
		px_h2_sent(c->h2, (size_t)w);
	}
}

static void read_client(conn *c)
{
	uint8_t buf[16384];

	for (int i = 0; i < H2_READS_PER_EVENT && px_h2_want_read(c->h2); i++) {
		ssize_t n = px_client_recv(c, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			px_conn_close(c, n == 0 ? "client-eof" : "client-read");
			return;
		}
		/* a protocol error queues a GOAWAY: sent, then the session is done */
		(void)px_h2_feed(c->h2, buf, (size_t)n);
	}
	if (px_h2_want_read(c->h2))
		c->wake_ns = px_now_ns(); /* more may be waiting in TLS: epoll cannot tell */
}

void px_h2_io(conn *c)
{
	flush(c);
	if (c->dead)
		return;
	read_client(c);
	if (c->dead)
		return;
	px_h2_service(c->h2);
	flush(c);
	if (c->dead)
		return;
	if (px_h2_done(c->h2)) {
		px_client_shutdown(c);
		px_conn_close(c, "h2-done");
		return;
	}
	/* the streams' connections keep their own deadlines */
	c->deadline_ns = px_now_ns() + (px_h2_streams(c->h2) ? PX_FWD_IDLE_NS : PX_IDLE_TIMEOUT_NS);
}

void px_h2_start(conn *c)
{
	if (px_h2_new(open_stream, c, &c->h2) < 0) {
		px_conn_close(c, "oom");
		return;
	}
	c->state = CS_H2;
	px_h2_io(c);
}

void px_h2_timeout(conn *c)
{
	px_h2_goaway(c->h2);
	flush(c);
	if (c->dead)
		return;
	px_client_shutdown(c);
	px_conn_close(c, "idle");
}

void px_h2_interest(conn *c, uint32_t *cm, uint32_t *um)
{
	const uint8_t *p;

	*um = 0;
	*cm = EPOLLRDHUP;
	if (px_h2_want_read(c->h2) || c->cssl_want_read)
		*cm |= EPOLLIN;
	if (px_h2_out(c->h2, &p) > 0 || c->cssl_want_write)
		*cm |= EPOLLOUT;
	/* the streams' socketpair ends report to this connection */
	px_h2_arm(c->h2, c->L->epfd, &c->cw);
}

void px_h2_close(conn *c)
{
	px_h2_free(c->h2);
	c->h2 = NULL;
}

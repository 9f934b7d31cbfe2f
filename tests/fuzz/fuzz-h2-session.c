/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the HTTP/2 server session of inspected connections
 * (src/proxy/h2-session.c): the input is what the agent sends after the TLS
 * handshake, fed in pieces the way reads deliver it, through nghttp2 and
 * the session's callbacks (header collection, the HTTP/1.1 head they build,
 * body framing, flow control). Each stream that opens gets a response on its
 * socketpair, as a connection of the worker would answer: one with a
 * length, one chunked, one cut short, so the response side runs too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/h2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PEERS 64

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static const char *const answers[] = {
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
    ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n"
     "Connection: keep-alive\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
    "HTTP/1.1 403 Forbidden\r\nX-Sandcap-Deny: path\r\nContent-Length: 100\r\n\r\nshort",
    "HTTP/1.1 200 OK\r\n\r\nclose-delimited",
};

typedef struct peers {
	int fd[MAX_PEERS];
	size_t n;
} peers;

static int open_peer(void *userdata, int fd, const px_h2_open *o)
{
	peers *p = userdata;
	const char *a = answers[(size_t)o->stream_id / 2 % (sizeof(answers) / sizeof(answers[0]))];

	if (p->n >= MAX_PEERS || !o->method || !o->path || !o->authority) {
		close(fd);
		return -1;
	}
	/* the request head is read and dropped: the session must not block on it */
	(void)send(fd, a, strlen(a), MSG_DONTWAIT | MSG_NOSIGNAL);
	if (o->stream_id % 3 == 0)
		(void)shutdown(fd, SHUT_WR);
	p->fd[p->n++] = fd;
	return 0;
}

static void drain_peers(peers *p)
{
	char buf[4096];

	for (size_t i = 0; i < p->n; i++)
		while (recv(p->fd[i], buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
}

static void drain_out(px_h2 *h)
{
	const uint8_t *out;
	size_t n;

	while ((n = px_h2_out(h, &out)) > 0)
		px_h2_sent(h, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	peers p = {.n = 0};
	px_h2 *h;
	size_t off = 0;

	if (size > 65536 || px_h2_new(open_peer, &p, &h) < 0)
		return 0;
	/* the preface is given, or nearly every input would end at byte one */
	if (px_h2_feed(h, (const uint8_t *)preface, sizeof(preface) - 1) < 0)
		abort();
	while (off < size) {
		/* the first byte of each piece says how long it is */
		size_t n = 1 + data[off] * 4u;

		off++;
		if (n > size - off)
			n = size - off;
		if (px_h2_feed(h, data + off, n) < 0)
			break;
		off += n;
		px_h2_service(h);
		drain_out(h);
		drain_peers(&p);
		px_h2_service(h);
		drain_out(h);
	}
	if (px_h2_streams(h) > PX_H2_MAX_STREAMS)
		abort();
	(void)px_h2_done(h);
	px_h2_free(h);
	for (size_t i = 0; i < p.n; i++)
		close(p.fd[i]);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 on an inspected connection (docs/proxy.md, "HTTP/2"): an nghttp2
 * server session on the decrypted client stream. Each stream's request
 * becomes an HTTP/1.1 request written to one end of a socketpair whose
 * other end is an ordinary connection of the worker (px_h2_open_fn): that
 * connection judges, forwards and records it exactly as a request read
 * from an HTTP/1.1 inspected tunnel, and its HTTP/1.1 response is read back
 * and sent on the stream. This file knows nothing of the loop: it is fed
 * client bytes, hands out bytes for the client, and does non-blocking I/O on
 * the socketpairs, so the fuzzer drives it alone.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/http.h"

#define PX_H2_MAX_STREAMS     32u	 /* SETTINGS_MAX_CONCURRENT_STREAMS */
#define PX_H2_STREAM_WINDOW   65535u	 /* SETTINGS_INITIAL_WINDOW_SIZE */
#define PX_H2_CONN_WINDOW     (1u << 20) /* all streams' request bytes in memory */
#define PX_H2_MAX_HEADER_LIST 32768u	 /* SETTINGS_MAX_HEADER_LIST_SIZE, = PX_MAX_HEAD */
#define PX_H2_RESP_BUF	      (PX_MAX_RESPONSE_HEAD + 16384u) /* read ahead, per stream */
#define PX_H2_OUT_MAX	      (64u * 1024) /* frames made ahead of the client reading */

typedef struct px_h2 px_h2;

/* What a stream asked for, and whether it is refused before it is judged. */
typedef struct px_h2_open {
	int32_t stream_id;
	const char *method, *path, *authority;
	int refuse_status; /* 0, or the status to refuse it with (431) */
	const char *refuse_text;
} px_h2_open;

/*
 * Takes fd (one end of the stream's socketpair; closed on failure) and
 * makes it a connection that reads the request from it. Returns 0 or -errno
 * (the stream is then refused with REFUSED_STREAM).
 */
typedef int px_h2_open_fn(void *userdata, int fd, const px_h2_open *o);

/* A server session; its SETTINGS are queued. -ENOMEM. */
int px_h2_new(px_h2_open_fn *open, void *userdata, px_h2 **ret);
/* Closes every stream's socketpair end and frees h. NULL is fine. */
void px_h2_free(px_h2 *h);
/* Client bytes. -EPROTO when the session must end (its GOAWAY is queued). */
int px_h2_feed(px_h2 *h, const uint8_t *buf, size_t n);
/* Moves request bytes to and response bytes from the streams' socketpairs. */
void px_h2_service(px_h2 *h);
/* Bytes for the client (*p valid until the next call on h), and how many went. */
size_t px_h2_out(px_h2 *h, const uint8_t **p);
void px_h2_sent(px_h2 *h, size_t n);
/* Whether more client bytes are wanted now (false while output backs up). */
bool px_h2_want_read(const px_h2 *h);
/* The session is over: nothing to read or to send. */
bool px_h2_done(const px_h2 *h);
size_t px_h2_streams(const px_h2 *h);
/* Ends the session with GOAWAY (the idle timeout). */
void px_h2_goaway(px_h2 *h);
/*
 * Registers each stream's socketpair end in epfd for what it waits for
 * (data: the pointer the reports carry); a stream waiting for nothing is
 * not in the set, so that a peer's close cannot report without end.
 */
void px_h2_arm(px_h2 *h, int epfd, void *data);

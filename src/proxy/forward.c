/* SPDX-License-Identifier: MIT */
/*
 * Absolute-form HTTP/1.1 forwarding. The request goes upstream in origin-form
 * with hop-by-hop and Proxy-* headers removed, the credential (if any) set,
 * and "Connection: keep-alive" (pool.h); its body is framed by
 * Content-Length or chunked and passed through byte for byte. The response head is re-emitted
 * without hop-by-hop headers, its body framed the same way, so the client connection can stay alive
 * for the next request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "proxy/conn.h"
#include "proxy/placeholder.h"
#include "proxy/tls.h"

static const char continue_100[] = "HTTP/1.1 100 Continue\r\n\r\n";

static void finish(conn *c, const char *reason, bool close_client)
{
	/* an origin may answer before the whole request reached it: the rest
	 * is neither the next request's nor may it go on a reused connection */
	bool unsent = c->uhead_off < c->uhead_len || c->framed > 0;

	px_conn_emit_request(c, "allow", reason, c->status);
	if (!reason[0] && !unsent)
		px_conn_pool_upstream(c);
	if (close_client || !c->keep_alive || !c->req_done || unsent) {
		px_client_shutdown(c);
		px_conn_close(c, reason);
		return;
	}
	/* keep-alive: bytes after this request's body are the next request */
	px_conn_next_request(c);
}

/* Classifies the unframed bytes in cin as request body. */
static int frame_request(conn *c)
{
	const px_config *cfg = c->L->cfg;

	if (c->req_done)
		return 0;
	if (c->req.chunked) {
		size_t used = 0;
		uint64_t data = 0;
		int r = px_chunked_feed(&c->req_chunk, c->cin + c->framed, c->cin_len - c->framed,
					&used, &data);

		if (r < 0)
			return -EBADMSG;
		c->framed += used;
		c->req_body += data;
		if (r == 1)
			c->req_done = true;
	} else {
		uint64_t avail = c->cin_len - c->framed;

		if (avail > c->req_left)
			avail = c->req_left;
		c->framed += (size_t)avail;
		c->req_left -= avail;
		c->req_body += avail;
		if (c->req_left == 0)
			c->req_done = true;
	}
	if (cfg->max_request_body != PLAN_UNLIMITED && c->req_body > cfg->max_request_body)
		return -EFBIG;
	return 0;
}

/* Classifies the unframed bytes in ubuf as response body. */
static int frame_response(conn *c)
{
	if (c->resp_done)
		return 0;
	if (c->resp.no_body) {
		c->resp_done = true;
		return 0;
	}
	if (c->resp.chunked) {
		size_t used = 0;
		uint64_t data = 0;
		int r = px_chunked_feed(&c->resp_chunk, c->ubuf + c->uframed,
					c->ubuf_len - c->uframed, &used, &data);

		if (r < 0)
			return -EBADMSG;
		c->uframed += used;
		if (r == 1)
			c->resp_done = true;
		/* bytes past the end of a framed body are garbage from the origin */
		if (c->resp_done && c->uframed < c->ubuf_len) {
			c->ubuf_len = c->uframed;
			c->up_dirty = true;
		}
		return 0;
	}
	if (c->resp.has_content_length) {
		uint64_t avail = c->ubuf_len - c->uframed;

		if (avail > c->resp_left)
			avail = c->resp_left;
		c->uframed += (size_t)avail;
		c->resp_left -= avail;
		if (c->resp_left == 0) {
			c->resp_done = true;
			c->up_dirty = c->up_dirty || c->ubuf_len > c->uframed;
			c->ubuf_len = c->uframed;
		}
		return 0;
	}
	/* close-delimited */
	c->uframed = c->ubuf_len;
	if (c->up_eof)
		c->resp_done = true;
	return 0;
}

static int append_cout(conn *c, const char *s, size_t n)
{
	char *p;

	if (c->cout_off == c->cout_len) {
		free(c->cout);
		c->cout = NULL;
		c->cout_len = c->cout_off = 0;
	}
	p = realloc(c->cout, c->cout_len + n);
	if (!p)
		return -ENOMEM;
	memcpy(p + c->cout_len, s, n);
	c->cout = p;
	c->cout_len += n;
	return 0;
}

int px_forward_build_head(const conn *c, char **ret, size_t *ret_len)
{
	const px_cred *cred = c->cred;
	int r;

	r = px_http_build_upstream_head(c->cin, &c->req, cred ? cred->header : NULL,
					cred ? cred->value : NULL, ret, ret_len);
	/* only the request's credential: the one whose limits were judged */
	if (r >= 0 && cred)
		r = px_placeholder_replace_one(cred, ret, ret_len);
	return r < 0 ? r : 0;
}

int px_forward_start(conn *c)
{
	int r;

	if (c->uhead) {
		/* px_conn_retry_fresh(): the head built before, on a new connection */
		c->state = CS_FORWARD;
		c->u_rd = false; /* a new connection: nothing to read before the request */
		c->deadline_ns = px_now_ns() + PX_FWD_IDLE_NS;
		px_forward_io(c);
		return 0;
	}
	r = px_forward_build_head(c, &c->uhead, &c->uhead_len);
	if (r < 0)
		return px_conn_reply(c, 500, "internal", "cannot build the request", true);
	c->uhead_off = 0;
	memmove(c->cin, c->cin + c->req.head_len, c->cin_len - c->req.head_len);
	c->cin_len -= c->req.head_len;
	c->req.head_len = 0;
	c->framed = 0;
	c->req_body = 0;
	if (c->req.chunked) {
		memset(&c->req_chunk, 0, sizeof(c->req_chunk));
		c->req_done = false;
	} else if (c->req.has_content_length && c->req.content_length > 0) {
		c->req_left = c->req.content_length;
		c->req_done = false;
	} else
		c->req_done = true;
	if (!c->req_done && c->req.expect_continue && c->cin_len == 0) {
		r = append_cout(c, continue_100, strlen(continue_100));
		if (r < 0)
			return r;
	}
	c->state = CS_FORWARD;
	/* epoll reports what the sockets hold from here (may_read_client()) */
	c->c_rd = c->u_rd = false;
	c->deadline_ns = px_now_ns() + PX_FWD_IDLE_NS;
	px_forward_io(c);
	return 0;
}

/* Upstream I/O, plain or TLS. n > 0, 0 = EOF, -EAGAIN, -errno. */
static ssize_t up_send(conn *c, const char *p, size_t n)
{
	if (c->ssl) {
		int r = SSL_write(c->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);

		r = px_tls_result(c->ssl, r, &c->ssl_want_read, &c->ssl_want_write);
		return r;
	}
	ssize_t w = send(c->ufd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (w < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	return w;
}

static ssize_t up_recv(conn *c, char *p, size_t n)
{
	if (c->ssl) {
		int r = SSL_read(c->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);

		r = px_tls_result(c->ssl, r, &c->ssl_want_read, &c->ssl_want_write);
		if (r == -ECONNRESET)
			return 0;
		return r;
	}
	ssize_t rd = recv(c->ufd, p, n, MSG_DONTWAIT);

	if (rd < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	return rd;
}

/*
 * Plain sockets are read only when epoll said they are readable (c_rd,
 * u_rd): a read that finds nothing costs a system call per request. TLS
 * reads are not gated: OpenSSL may hold bytes that epoll cannot see.
 */
static bool may_read_client(const conn *c)
{
	return c->inspected || c->c_rd;
}

static bool may_read_upstream(const conn *c)
{
	return c->ssl || c->u_rd;
}

/*
 * a (the response head or a local reply) and then b (body bytes) to the
 * client: one sendmsg(2) on a plain socket, so that a small response
 * leaves in one segment. Returns the bytes sent, or -1 with errno.
 */
static ssize_t client_send2(conn *c, const char *a, size_t alen, const char *b, size_t blen)
{
	struct iovec iov[2] = {{(void *)a, alen}, {(void *)b, blen}};
	struct msghdr m = {.msg_iov = alen ? iov : iov + 1, .msg_iovlen = alen && blen ? 2 : 1};
	ssize_t n, more;

	if (!c->inspected)
		return sendmsg(c->cfd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	/* TLS: one record each; the body only once the head is out */
	n = px_client_send(c, alen ? a : b, alen ? alen : blen);
	if (n < 0 || !alen || !blen || (size_t)n < alen)
		return n;
	more = px_client_send(c, b, blen);
	return more > 0 ? n + more : n;
}

static void cut_request_body(conn *c)
{
	px_limit_hit(c->L, "max_request_body", c->host);
	if (!c->resp_head_done && c->cout_off == c->cout_len) {
		c->keep_alive = false;
		c->req.has_content_length = true; /* forces close in deny path */
		px_conn_emit_denied(c, "max-request-body", "request body too large");
		px_conn_emit_request(c, "deny", "max-request-body", 413);
		if (px_conn_reply(c, 413, "max-request-body", "request body too large", true) < 0)
			px_conn_close(c, "oom");
		return;
	}
	px_conn_emit_request(c, "allow", "max-request-body", c->status);
	px_conn_close(c, "max-request-body");
}

static bool step(conn *c)
{
	px_loop *L = c->L;
	const px_config *cfg = L->cfg;
	uint64_t now = px_now_ns();
	bool moved = false;
	ssize_t n;
	int r;

	/* 1. read the request body from the client (after it, the next
	 * request's bytes: a pipelining client, or a kept-alive one whose
	 * socket stays watched so that its epoll interest does not change) */
	if (c->cin_len < sizeof(c->cin) && !c->c_eof &&
	    (c->req_done ? c->c_rd && !c->inspected : may_read_client(c))) {
		size_t room = sizeof(c->cin) - c->cin_len;

		n = px_client_recv(c, c->cin + c->cin_len, room);
		if (n < 0 || (size_t)n < room)
			c->c_rd = false; /* drained: epoll says when there is more */
		if (n == 0 && c->req_done) {
			/* no more requests; this one is answered */
			c->c_eof = true;
			n = -1;
			errno = EAGAIN;
		}
		if (n == 0) {
			px_conn_emit_request(c, "allow", "client-eof", c->status);
			px_conn_close(c, "client-eof");
			return false;
		}
		if (n > 0) {
			c->cin_len += (size_t)n;
			moved = true;
		} else if (errno != EAGAIN && errno != EINTR) {
			px_conn_close(c, "client-error");
			return false;
		}
	}
	r = frame_request(c);
	if (r == -EFBIG) {
		cut_request_body(c);
		return false;
	}
	if (r < 0) {
		/* the head went upstream already; the body that follows it is refused */
		px_conn_emit_denied(c, "bad-request", "malformed chunked request body");
		px_conn_emit_request(c, "deny", "bad-chunked-body", 400);
		if (!c->resp_head_done &&
		    px_conn_reply(c, 400, "bad-request", "malformed chunked body", true) == 0)
			return false;
		px_conn_close(c, "bad-body");
		return false;
	}

	/* 2. send head and framed body upstream */
	if (c->ufd >= 0 && !c->throttled_up && (c->uhead_off < c->uhead_len || c->framed > 0)) {
		const char *p;
		size_t len;

		if (c->uhead_off < c->uhead_len) {
			p = c->uhead + c->uhead_off;
			len = c->uhead_len - c->uhead_off;
		} else {
			p = c->cin;
			len = c->framed;
		}
		len = (size_t)px_l7_cred_room(c, len);
		if (len == 0) {
			/* a chunked body crossed the credential's max_bytes */
			px_limit_hit(L, "credential", c->cred->name);
			px_conn_emit_request(c, "allow", "credential-max-bytes", c->status);
			px_conn_close(c, "credential-max-bytes");
			return false;
		}
		uint64_t grant = px_bucket_take_min(&L->sh->bw_up, len, PX_BW_BURST_MIN, now);

		if (grant == 0)
			px_conn_throttle(c, &L->sh->bw_up, true, len);
		else {
			uint64_t allowed = px_budget_take(L, grant);

			if (allowed == 0) {
				px_limit_hit(L, "egress_budget", c->host);
				px_conn_emit_request(c, "allow", "egress_budget", c->status);
				px_conn_close(c, "egress_budget");
				return false;
			}
			n = up_send(c, p, (size_t)allowed);
			uint64_t used = n > 0 ? (uint64_t)n : 0;

			if (!L->sh->bw_up.unlimited)
				L->sh->bw_up.tokens += grant - used;
			if (L->sh->budget_left != PLAN_UNLIMITED)
				L->sh->budget_left += allowed - used;
			if (n > 0) {
				c->bytes_out += used;
				px_l7_cred_sent(c, used);
				moved = true;
				if (c->uhead_off < c->uhead_len)
					c->uhead_off += (size_t)n;
				else {
					memmove(c->cin, c->cin + n, c->cin_len - (size_t)n);
					c->cin_len -= (size_t)n;
					c->framed -= (size_t)n;
				}
			} else if (n != -EAGAIN) {
				if (px_conn_retry_fresh(c))
					return false;
				px_conn_emit_request(c, "allow", "upstream-error", 502);
				if (!c->resp_head_done && c->cout_off == c->cout_len &&
				    px_conn_reply(c, 502, "upstream-error", "origin write failed",
						  true) == 0)
					return false;
				px_conn_close(c, "upstream-error");
				return false;
			}
		}
	}

	/* 3. read the response */
	if (!c->resp_done && !c->up_eof && c->ufd >= 0 && c->ubuf_len < sizeof(c->ubuf) &&
	    may_read_upstream(c)) {
		size_t room = sizeof(c->ubuf) - c->ubuf_len;

		n = up_recv(c, c->ubuf + c->ubuf_len, room);
		if (n == -EAGAIN || (n > 0 && (size_t)n < room))
			c->u_rd = false;
		if (n > 0) {
			c->ubuf_len += (size_t)n;
			moved = true;
		} else if (n == 0 || n != -EAGAIN) {
			if (px_conn_retry_fresh(c))
				return false;
			c->up_eof = true;
			moved = true;
			/* nothing more will come; and a closed socket would keep
			 * reporting EPOLLHUP to the level-triggered loop */
			px_conn_close_upstream(c);
		}
	}
	while (!c->resp_head_done) {
		const char *reason = NULL;

		r = px_http_parse_response(c->ubuf, c->ubuf_len, strcmp(c->method, "HEAD") == 0,
					   &c->resp, &reason);
		if (r == 0 && !c->up_eof)
			break;
		if (r <= 0 || c->resp.status == 101) {
			px_conn_emit_request(c, "allow", "bad-response", 502);
			if (c->cout_off == c->cout_len &&
			    px_conn_reply(c, 502, "bad-response",
					  reason ? reason : "malformed response from the origin",
					  true) == 0)
				return false;
			px_conn_close(c, "bad-response");
			return false;
		}
		if (c->resp.status < 200) {
			/* interim responses: we answered Expect ourselves */
			memmove(c->ubuf, c->ubuf + r, c->ubuf_len - (size_t)r);
			c->ubuf_len -= (size_t)r;
			continue;
		}
		char *head = NULL;
		size_t hl = 0;
		bool close = !c->keep_alive || c->resp.close_delimited || !c->req_done;

		if (px_http_build_client_response_head(c->ubuf, &c->resp, close, &head, &hl) < 0 ||
		    append_cout(c, head, hl) < 0) {
			free(head);
			px_conn_close(c, "oom");
			return false;
		}
		free(head);
		memmove(c->ubuf, c->ubuf + r, c->ubuf_len - (size_t)r);
		c->ubuf_len -= (size_t)r;
		if (close)
			c->keep_alive = false;
		c->status = c->resp.status;
		c->resp_head_done = true;
		c->resp_left = c->resp.content_length;
		moved = true;
	}
	if (!c->resp_head_done)
		goto write_client;
	if (frame_response(c) < 0) {
		px_conn_emit_request(c, "allow", "bad-response-body", c->status);
		px_conn_close(c, "bad-response");
		return false;
	}

write_client:
	/* 4. to the client: local/rewritten bytes first, then framed body */
	if (c->cout_off < c->cout_len || (c->uframed > 0 && !c->throttled_down)) {
		size_t head = c->cout_len - c->cout_off;
		uint64_t len = c->throttled_down ? 0 : c->uframed, grant = 0;
		bool cut = false;

		if (len > 0 && cfg->max_response_body != PLAN_UNLIMITED) {
			uint64_t room = cfg->max_response_body - c->resp_body;

			if (len > room) {
				len = room;
				cut = true;
			}
		}
		if (len > 0) {
			grant = px_bucket_take_min(&L->sh->bw_down, len, PX_BW_BURST_MIN, now);
			if (grant == 0)
				px_conn_throttle(c, &L->sh->bw_down, false, len);
		}
		n = head || grant ? client_send2(c, c->cout + c->cout_off, head, c->ubuf, grant)
				  : 0;
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			px_conn_close(c, "client-error");
			return false;
		}
		size_t sent = n > 0 ? (size_t)n : 0;
		size_t to_head = sent < head ? sent : head;
		uint64_t used = sent - to_head;

		if (grant && !L->sh->bw_down.unlimited)
			L->sh->bw_down.tokens += grant - used;
		if (sent > 0) {
			c->cout_off += to_head;
			c->bytes_in += sent;
			moved = true;
		}
		if (used > 0) {
			px_resp_digest_feed(c, c->ubuf, (size_t)used);
			memmove(c->ubuf, c->ubuf + used, c->ubuf_len - (size_t)used);
			c->ubuf_len -= (size_t)used;
			c->uframed -= (size_t)used;
			c->resp_body += used;
		}
		if (cut && c->resp_body >= cfg->max_response_body && c->uframed > 0) {
			px_limit_hit(L, "max_response_body", c->host);
			px_conn_emit_request(c, "allow", "response-cut", c->status);
			px_conn_close(c, "response-cut");
			return false;
		}
	}

	/* 5. done? */
	if (c->resp_head_done && c->resp_done && c->uframed == 0 && c->cout_off == c->cout_len) {
		finish(c, "", c->resp.close_delimited);
		return false;
	}
	if (c->up_eof && c->resp_head_done && !c->resp_done && c->uframed == 0) {
		/* the origin closed before the end of a framed body */
		finish(c, "upstream-truncated", true);
		return false;
	}
	return moved;
}

void px_forward_io(conn *c)
{
	bool any = false;

	for (int i = 0; i < 8 && !c->dead && c->state == CS_FORWARD; i++) {
		if (!step(c))
			break;
		any = true;
	}
	if (c->dead)
		return;
	if (any && c->state == CS_FORWARD)
		c->deadline_ns = px_now_ns() + PX_FWD_IDLE_NS;
}

void px_forward_interest(conn *c, uint32_t *cm, uint32_t *um)
{
	*cm = 0;
	*um = 0;
	if (c->cin_len < sizeof(c->cin) && !c->c_eof && (!c->req_done || !c->inspected))
		*cm |= EPOLLIN | EPOLLRDHUP;
	if (c->cout_off < c->cout_len || (c->uframed > 0 && !c->throttled_down))
		*cm |= EPOLLOUT;
	if (c->ufd < 0)
		return;
	if (c->ssl) {
		if (c->ssl_want_read)
			*um |= EPOLLIN;
		if (c->ssl_want_write)
			*um |= EPOLLOUT;
	}
	if ((c->uhead_off < c->uhead_len || c->framed > 0) && !c->throttled_up)
		*um |= EPOLLOUT;
	if (!c->resp_done && !c->up_eof && c->ubuf_len < sizeof(c->ubuf))
		*um |= EPOLLIN | EPOLLRDHUP;
}

/* SPDX-License-Identifier: MIT */
/*
 * The worker's epoll loop: accepting, the per-connection state x event table,
 * deadlines, reading and judging the request head, resolving and connecting.
 * Forwarding and tunnelling live in forward.c and tunnel.c.
 */
#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "proxy/allow.h"
#include "proxy/conn.h"
#include "proxy/synthetic.h"
#include "proxy/placeholder.h"
#include "proxy/record.h"
#include "proxy/tls.h"

typedef void conn_action(conn *c);

uint64_t px_now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t px_budget_take(px_loop *L, uint64_t want)
{
	if (L->sh->budget_left == PLAN_UNLIMITED)
		return want;
	if (want > L->sh->budget_left)
		want = L->sh->budget_left;
	L->sh->budget_left -= want;
	return want;
}

void px_limit_hit(px_loop *L, const char *limit, const char *detail)
{
	(void)px_events_emit(L->ev, "limit.hit",
			     json_pack("{s:s, s:s}", "limit", limit, "detail", detail));
}

void px_conn_emit_denied(conn *c, const char *reason, const char *detail)
{
	json_t *d = json_pack("{s:s, s:s, s:i, s:s, s:s}", "method", c->method, "host", c->host,
			      "port", (int)c->port, "path", c->path, "reason", reason);

	if (d && detail && detail[0])
		(void)json_object_set_new(d, "detail", json_string(detail));
	if (d && c->addr_str[0])
		(void)json_object_set_new(d, "addr", json_string(c->addr_str));
	if (d && c->head_hex[0])
		(void)json_object_set_new(d, "head_hex", json_string(c->head_hex));
	if (d && c->norm_path[0])
		(void)json_object_set_new(d, "normalised_path", json_string(c->norm_path));
	if (d && c->cred_refused)
		(void)json_object_set_new(d, "credential", json_string(c->cred_refused));
	if (d && (c->socks || c->h2_stream))
		(void)json_object_set_new(d, "via", json_string(c->socks ? "socks5" : "h2"));
	if (d && c->inspected)
		(void)json_object_set_new(d, "inspected", json_true());
	if (d && c->sni[0])
		(void)json_object_set_new(d, "sni", json_string(c->sni));
	(void)px_events_emit(c->L->ev, "net.denied", d);
}

/* One per request, written straight into the datagram (record.h). */
void px_conn_emit_request(conn *c, const char *decision, const char *reason, int status)
{
	uint64_t dur = (px_now_ns() - c->start_ns) / 1000000ull, body_bytes = 0;
	char sha[2 * SHA256_BYTES + 1], buf[PX_EVENT_MAX_BYTES + 1];
	int digest = px_resp_digest_end(c, sha, &body_bytes);
	px_record r;

	px_record_start(&r, buf, sizeof(buf), "net.request");
	if (c->request_id)
		px_record_uint(&r, "id", c->request_id);
	px_record_str(&r, "method", c->method);
	px_record_str(&r, "host", c->host);
	px_record_uint(&r, "port", c->port);
	px_record_str(&r, "path", c->path);
	px_record_str(&r, "addr", c->addr_str);
	px_record_str(&r, "decision", decision);
	px_record_str(&r, "rule", c->rule);
	px_record_str(&r, "reason", reason ? reason : "");
	px_record_uint(&r, "status", status > 0 ? (uint64_t)status : 0);
	px_record_uint(&r, "bytes_out", c->bytes_out);
	px_record_uint(&r, "bytes_in", c->bytes_in);
	px_record_uint(&r, "duration_ms", dur);
	if (c->cred)
		px_record_str(&r, "credential", c->cred->name);
	if (c->socks || c->h2_stream)
		px_record_str(&r, "via", c->socks ? "socks5" : "h2");
	if (digest > 0)
		px_record_str(&r, "body_sha256", sha);
	else if (digest < 0)
		px_record_null(&r, "body_sha256");
	if (digest)
		px_record_uint(&r, "body_bytes", body_bytes);
	if (c->inspected)
		px_record_true(&r, "inspected");
	(void)px_events_emit_record(c->L->ev, &r);
}

/*
 * What the request is, queued now and in the supervisor's socket before its
 * first byte goes upstream (release_held()): a worker killed after that
 * leaves a record the supervisor completes (docs/audit.md, "A request is
 * recorded before it leaves").
 */
void px_conn_record_start(conn *c)
{
	char buf[PX_EVENT_MAX_BYTES + 1];
	px_record r;

	c->request_id = ++c->L->sh->request_ids;
	px_record_start(&r, buf, sizeof(buf), "net.request.start");
	px_record_uint(&r, "id", c->request_id);
	px_record_str(&r, "method", c->method);
	px_record_str(&r, "host", c->host);
	px_record_uint(&r, "port", c->port);
	px_record_str(&r, "path", c->path);
	px_record_str(&r, "addr", c->addr_str);
	px_record_str(&r, "rule", c->rule);
	if (c->cred)
		px_record_str(&r, "credential", c->cred->name);
	if (c->socks || c->h2_stream)
		px_record_str(&r, "via", c->socks ? "socks5" : "h2");
	if (c->inspected)
		px_record_true(&r, "inspected");
	(void)px_events_emit_record(c->L->ev, &r);
}

/* The name the sandbox resolver gave this address out for (SOCKS5 targets,
 * direct attempts), or NULL: a real address, or one no name was given yet. */
const char *px_loop_synthetic_name(px_loop *L, int family, const uint8_t *addr)
{
	px_addr a = {.family = family};

	if (!L->synth)
		return NULL;
	memcpy(a.addr, addr, family == AF_INET ? 4 : 16);
	return px_synthetic_name(L->synth, &a);
}

static void set_deadline(conn *c, uint64_t ns)
{
	c->deadline_ns = px_now_ns() + ns;
}

void px_conn_throttle(conn *c, px_bucket *b, bool up, uint64_t want)
{
	uint64_t now = px_now_ns();
	uint64_t w = px_bucket_wait_ns(b, want < PX_BW_BURST_MIN ? want : PX_BW_BURST_MIN, now);

	if (up)
		c->throttled_up = true;
	else
		c->throttled_down = true;
	if (!c->bw_reported) {
		char detail[PX_MAX_HOST + 16];

		/* once per connection: pacing is continuous, the log should not be */
		c->bw_reported = true;
		(void)snprintf(detail, sizeof(detail), "%s %s", up ? "upload" : "download",
			       c->host);
		px_limit_hit(c->L, "bandwidth", detail);
	}
	if (w == 0)
		w = 1000000; /* 1 ms: the bucket was drained by another connection */
	if (c->wake_ns == 0 || now + w < c->wake_ns)
		c->wake_ns = now + w;
}

static void free_conn(conn *c)
{
	px_loop *L = c->L;

	if (c->prev)
		c->prev->next = c->next;
	else
		L->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	L->n_conns--;
	px_resp_digest_free(c);
	free(c);
}

void px_conn_drop_ufd(conn *c)
{
	if (c->ssl) {
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->ufd >= 0) {
		/* close() removes it from the epoll set too */
		c->ufd = safe_close(c->ufd);
		c->u_registered = false;
		c->u_mask = 0;
	}
	if (c->uw) {
		/*
		 * Reports already fetched in this epoll batch may still point at
		 * this watch; the next upstream socket can get the same fd number.
		 * Orphan the watch and free it after the batch.
		 */
		c->uw->c = NULL;
		c->uw->next = c->L->graveyard;
		c->L->graveyard = c->uw;
		c->uw = NULL;
	}
}

/* The key of the connections c's request may use (pool.h). */
static px_pool_key pool_key(const conn *c)
{
	px_pool_key k = {.port = c->up_port, .tls = c->up_tls, .cred = -1};

	memcpy(k.host, c->host, sizeof(k.host));
	if (c->cred)
		k.cred = (int)(c->cred - c->L->cfg->creds);
	return k;
}

/* What an idle pooled connection is watched for; also what a forwarded
 * request's upstream socket has while its response is awaited, so that
 * moving it between the two changes nothing in the epoll set. */
#define PX_POOL_EVENTS (EPOLLIN | EPOLLRDHUP)

void px_conn_pool_upstream(conn *c)
{
	px_pool_key k = pool_key(c);
	int fd = c->ufd;
	SSL *ssl = c->ssl;
	px_watch *w = NULL;

	if (fd < 0 || c->is_connect || c->up_eof || c->up_dirty || !c->resp_done ||
	    c->resp.close_delimited || c->resp.conn_close || !c->req_done || c->req.minor == 0 ||
	    (ssl && SSL_pending(ssl) > 0))
		return; /* px_conn_reset_for_next() closes it */
	if (c->u_registered && c->uw) {
		struct epoll_event ev = {.events = PX_POOL_EVENTS, .data.ptr = c->uw};

		/* the socket stays in the epoll set, reporting to the pool */
		if (c->u_mask == PX_POOL_EVENTS ||
		    epoll_ctl(c->L->epfd, EPOLL_CTL_MOD, fd, &ev) == 0) {
			w = c->uw;
			w->type = W_POOLED;
			w->c = NULL;
			c->uw = NULL;
		} else
			(void)epoll_ctl(c->L->epfd, EPOLL_CTL_DEL, fd, NULL);
	} else if (c->u_registered)
		(void)epoll_ctl(c->L->epfd, EPOLL_CTL_DEL, fd, NULL);
	c->ssl = NULL;
	c->ufd = -1;
	c->u_registered = false;
	c->u_mask = 0;
	px_conn_drop_ufd(c); /* orphans a watch not handed on; nothing left to close */
	px_pool_put(&c->L->pool, &k, fd, ssl, &c->addr, px_now_ns(), w);
}

/* The pool closed an idle connection: its watch goes when the batch of
 * reports that may name it has been handled. */
static void pool_watch_gone(void *watch, void *userdata)
{
	px_loop *L = userdata;
	px_watch *w = watch;

	w->c = NULL;
	w->next = L->graveyard;
	L->graveyard = w;
}

/* A request without a body, on a kept connection when there is one. */
static bool take_pooled(conn *c)
{
	px_pool_key k;
	void *watch = NULL;

	if (c->is_connect || c->req.chunked ||
	    (c->req.has_content_length && c->req.content_length > 0))
		return false;
	k = pool_key(c);
	px_conn_drop_ufd(c); /* no upstream socket: a watch left from the last one goes */
	if (!px_pool_take(&c->L->pool, &k, px_now_ns(), &c->ufd, &c->ssl, &c->addr, &watch))
		return false;
	if (watch) {
		/* still in the epoll set with PX_POOL_EVENTS: now it reports to c */
		c->uw = watch;
		c->uw->type = W_UPSTREAM;
		c->uw->c = c;
		c->u_registered = true;
		c->u_mask = PX_POOL_EVENTS;
	}
	(void)inet_ntop(c->addr.family, c->addr.addr, c->addr_str, sizeof(c->addr_str));
	c->reused = true;
	return true;
}

void px_conn_close_upstream(conn *c)
{
	px_conn_drop_ufd(c);
	for (int i = 0; i < 2; i++) {
		c->c2u[i] = safe_close(c->c2u[i]);
		c->u2c[i] = safe_close(c->u2c[i]);
	}
}

void px_conn_close(conn *c, const char *reason)
{
	(void)reason;
	if (c->dead)
		return;
	c->dead = true;
	px_dns_cancel(c->query);
	c->query = NULL;
	px_conn_close_upstream(c);
	px_inspect_close(c);
	c->cfd = safe_close(c->cfd);
	free(c->cout);
	c->cout = NULL;
	free(c->uhead);
	c->uhead = NULL;
}

static void drop(conn *c)
{
	px_conn_close(c, "drop");
}

/* Queues a local response; the connection moves to CS_REPLY. */
int px_conn_reply(conn *c, int status, const char *deny_reason, const char *text, bool close)
{
	char buf[1024];
	/* a transparent tunnel's client speaks TLS or its own protocol, not HTTP */
	bool raw = c->tmode == PX_T_TLS || c->tmode == PX_T_RAW || c->inspect_declined;
	/* inside an inspected SOCKS5 tunnel the client speaks HTTP */
	bool socks = c->socks && !c->inspected && !c->inspect_declined;
	int n = socks ? px_socks_refusal(c, deny_reason, (uint8_t *)buf, sizeof(buf))
		: raw ? 0
		      : px_http_local_response(status, deny_reason, text, close, buf, sizeof(buf));
	char *p;

	if (socks)
		close = true; /* a refused SOCKS5 request ends its connection */
	if (n < 0)
		return n;
	p = realloc(c->cout, c->cout_len + (size_t)n);
	if (!p)
		return -ENOMEM;
	memcpy(p + c->cout_len, buf, (size_t)n);
	c->cout = p;
	c->cout_len += (size_t)n;
	c->close_after_reply = close || raw;
	c->status = status;
	c->wake_ns = 0;
	c->throttled_up = c->throttled_down = false;
	/* a late answer must never reach a later request on this connection */
	px_dns_cancel(c->query);
	c->query = NULL;
	px_conn_close_upstream(c);
	c->state = CS_REPLY;
	set_deadline(c, PX_REPLY_TIMEOUT_NS);
	return 0;
}

/* The refusal's answer, without its records (px_conn_deny writes them). */
static void answer_refused(conn *c, int status, const char *reason, const char *text, bool close)
{
	/* an unread request body makes the connection unusable for another request */
	if (c->req.has_content_length || c->req.chunked || !c->keep_alive)
		close = true;
	/* the request is answered: its head leaves the buffer (the forward path
	 * has already consumed it when req.head_len was reset) */
	if (c->state != CS_FORWARD && c->req.head_len > 0 && c->req.head_len <= c->cin_len) {
		memmove(c->cin, c->cin + c->req.head_len, c->cin_len - c->req.head_len);
		c->cin_len -= c->req.head_len;
		c->req.head_len = 0;
	}
	if (close)
		c->cin_len = 0;
	if (px_conn_reply(c, status, reason, text, close) < 0)
		px_conn_close(c, "oom");
}

void px_conn_deny(conn *c, int status, const char *reason, const char *text, bool close)
{
	px_conn_emit_denied(c, reason, text);
	px_conn_emit_request(c, "deny", reason, status);
	answer_refused(c, status, reason, text, close);
}

/*
 * A request over net.rate is one net.denied (reason "rate"), as long as
 * PX_RATE_RECORDS a second are not used up; past them it is counted (in the
 * counters a successor inherits) and report_rate() writes the count, one
 * limit.hit a second at most, so that a flood of refusals is not a flood
 * of records and every refusal is still accounted for (docs/audit.md,
 * "Folded records").
 */
static void refuse_over_rate(conn *c)
{
	px_loop *L = c->L;
	uint64_t now = px_now_ns();

	if (!L->rate_records_started) {
		px_bucket_init(&L->rate_records, PX_RATE_RECORDS, 1000000000ull, PX_RATE_RECORDS,
			       now);
		L->rate_records_started = true;
	}
	if (px_bucket_take_exact(&L->rate_records, 1, now))
		px_conn_emit_denied(c, "rate", "request rate limit");
	else if (L->sh->rate_refused < UINT64_MAX)
		L->sh->rate_refused++;
	answer_refused(c, 429, "rate", "request rate limit", false);
}

static void report_rate(px_loop *L, uint64_t now, bool now_or_never)
{
	uint64_t n = L->sh->rate_refused;
	char detail[128];

	if (n == 0 || (!now_or_never && now < L->rate_report_ns))
		return;
	(void)snprintf(detail, sizeof(detail),
		       "%llu more request%s refused (429) over net.rate (%llu per %llu ms), not "
		       "recorded one by one",
		       (unsigned long long)n, n == 1 ? "" : "s",
		       (unsigned long long)L->cfg->rate.count,
		       (unsigned long long)(L->cfg->rate.per_ns / 1000000ull));
	/* counted as reported only once the event is queued */
	if (px_events_emit(L->ev, "limit.hit",
			   json_pack("{s:s, s:s, s:s, s:I}", "limit", "rate", "kind", "requests",
				     "detail", detail, "suppressed", (json_int_t)n)) < 0)
		return;
	L->sh->rate_refused = 0;
	L->rate_report_ns = now + PX_CAP_REPORT_NS;
}

static void deny(conn *c, int status, const char *reason, const char *text, bool close)
{
	px_conn_deny(c, status, reason, text, close);
}

void px_conn_reset_for_next(conn *c)
{
	px_dns_cancel(c->query);
	c->query = NULL;
	px_conn_close_upstream(c);
	free(c->cout);
	c->cout = NULL;
	c->cout_len = c->cout_off = 0;
	free(c->uhead);
	c->uhead = NULL;
	c->uhead_len = c->uhead_off = 0;
	c->framed = 0;
	c->req_done = false;
	c->req_left = c->req_body = 0;
	memset(&c->req_chunk, 0, sizeof(c->req_chunk));
	c->ubuf_len = c->uframed = 0;
	c->resp_head_done = c->resp_done = c->resp_cut = c->up_eof = false;
	memset(&c->resp_chunk, 0, sizeof(c->resp_chunk));
	c->resp_left = c->resp_body = 0;
	px_resp_digest_reset(c);
	c->status = 0;
	c->bytes_in = c->bytes_out = 0;
	c->throttled_up = c->throttled_down = false;
	c->wake_ns = 0;
	c->cred = NULL;
	c->reused = c->up_dirty = false;
	c->cred_refused = NULL;
	c->norm_path[0] = 0;
	c->up_tls = false;
	c->n_addrs = 0;
	c->addr_str[0] = 0;
	c->rule[0] = 0;
	c->head_hex[0] = 0;
	memset(&c->req, 0, sizeof(c->req));
	c->state = CS_READ_HEAD;
	set_deadline(c, PX_IDLE_TIMEOUT_NS);
}

static void read_head(conn *c, bool may_read);

static void reply_write(conn *c)
{
	while (c->cout_off < c->cout_len) {
		ssize_t n = px_client_send(c, c->cout + c->cout_off, c->cout_len - c->cout_off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			px_conn_close(c, "client-write");
			return;
		}
		c->cout_off += (size_t)n;
	}
	if (c->close_after_reply) {
		/* let the client read the reply before the FIN/RST */
		px_client_shutdown(c);
		px_conn_close(c, "reply-done");
		return;
	}
	px_conn_next_request(c);
}

void px_conn_next_request(conn *c)
{
	px_conn_reset_for_next(c);
	/* bytes already read (pipelined) are parsed; the socket is read when
	 * epoll says it is readable, except by the transparent classifier */
	read_head(c, c->tmode != PX_T_NONE);
}

/*
 * The one credential a request carries, whose limits are judged and counted
 * and whose name the records give: the first of the host whose placeholder
 * the head carries, else the first of the host that sets a header. Only it
 * goes upstream (px_forward_build_head).
 */
static const px_cred *request_cred(const conn *c)
{
	const px_config *cfg = c->L->cfg;
	const px_cred *used = NULL;

	if (cfg->has_placeholders && !c->is_connect)
		used = px_placeholder_used(cfg, c->host, c->cin, c->req.head_len);
	for (size_t i = 0; i < cfg->n_creds && !used; i++)
		if (cfg->creds[i].header && strcmp(cfg->creds[i].host, c->host) == 0)
			used = &cfg->creds[i];
	return used;
}

static void start_connect(conn *c);
static void dispatch(conn *c, conn_event e);
static void after_connected(conn *c);

static const char *dns_error_text(int status)
{
	switch (status) {
	case -ENOENT:
		return "no such name in the host's /etc/hosts or in DNS";
	case -ENODATA:
		return "the name has no IPv4 or IPv6 address";
	case -ETIMEDOUT:
		return "the DNS server did not answer in time";
	case -EINVAL:
		return "not a name DNS can look up";
	default:
		return "the DNS server failed or cannot be reached";
	}
}

static void on_resolved(conn *c)
{
	if (c->dns_status < 0) {
		char text[PX_MAX_HOST + 80];

		(void)snprintf(text, sizeof(text), "%s does not resolve: %s", c->host,
			       dns_error_text(c->dns_status));
		deny(c, 502, "dns-failure", text, false);
		return;
	}
	/*
	 * Pick the first address the policy permits and connect to exactly that
	 * one: no second lookup can swap in a private address (DNS rebinding).
	 */
	for (size_t i = 0; i < c->n_addrs; i++)
		if (px_addr_permitted(c->L->cfg, c->addrs[i].family, c->addrs[i].addr)) {
			c->addr = c->addrs[i];
			(void)inet_ntop(c->addr.family, c->addr.addr, c->addr_str,
					sizeof(c->addr_str));
			start_connect(c);
			return;
		}
	(void)inet_ntop(c->addrs[0].family, c->addrs[0].addr, c->addr_str, sizeof(c->addr_str));
	deny(c, 403, "private-address", "the name resolves to a private address", false);
}

static void dns_done(void *userdata, int status, const px_addr *addrs, size_t n)
{
	conn *c = userdata;

	c->query = NULL;
	c->dns_status = status;
	c->n_addrs = 0;
	for (size_t i = 0; i < n && i < PX_DNS_MAX_ADDRS; i++)
		c->addrs[c->n_addrs++] = addrs[i];
	dispatch(c, EV_RESOLVED);
}

static void start_connect(conn *c)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in4;
		struct sockaddr_in6 in6;
	} sa = {0};
	socklen_t len;
	int one = 1, fd;

	fd = socket(c->addr.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		c->connect_errno = errno;
		deny(c, 502, "connect-failed", "cannot create a socket", false);
		return;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->addr.family == AF_INET) {
		sa.in4.sin_family = AF_INET;
		sa.in4.sin_port = htons(c->up_port);
		memcpy(&sa.in4.sin_addr, c->addr.addr, 4);
		len = sizeof(sa.in4);
	} else {
		sa.in6.sin6_family = AF_INET6;
		sa.in6.sin6_port = htons(c->up_port);
		memcpy(&sa.in6.sin6_addr, c->addr.addr, 16);
		len = sizeof(sa.in6);
	}
	c->ufd = fd;
	if (connect(fd, &sa.sa, len) < 0 && errno != EINPROGRESS) {
		c->connect_errno = errno;
		deny(c, 502, "connect-failed", "connection refused", false);
		return;
	}
	c->state = CS_CONNECTING;
	set_deadline(c, PX_CONN_TIMEOUT_NS);
}

bool px_conn_retry_fresh(conn *c)
{
	if (!c->reused || c->resp_head_done || c->ubuf_len > 0 || !c->uhead || c->dead)
		return false;
	/* only requests without a body are sent on a pooled connection: the
	 * head is all of it, and it is still in uhead */
	px_conn_drop_ufd(c);
	c->reused = false;
	c->up_eof = false;
	c->uhead_off = 0;
	c->bytes_out = 0; /* the record counts what the origin got once */
	start_connect(c);
	return true;
}

static void after_connected(conn *c)
{
	int r;

	if (!c->request_id) {
		/* the round's starts leave together, one sendmmsg; until then
		 * the connection takes no event (dispatch()) */
		px_conn_record_start(c);
		c->held = true;
		c->held_next = c->L->held;
		c->L->held = c;
		return;
	}
	if (c->is_connect)
		r = px_tunnel_start(c);
	else
		r = px_forward_start(c);
	if (r < 0 && !c->dead && c->state != CS_REPLY)
		px_conn_close(c, "start");
}

static void on_tls(conn *c)
{
	int r =
	    px_tls_result(c->ssl, SSL_do_handshake(c->ssl), &c->ssl_want_read, &c->ssl_want_write);

	if (r == -EAGAIN)
		return;
	if (r < 0) {
		char text[160];

		c->ssl_want_read = c->ssl_want_write = 0;
		px_tls_describe_failure(c->ssl, text, sizeof(text));
		deny(c, 502, "upstream-tls", text, false);
		return;
	}
	c->ssl_want_read = c->ssl_want_write = 0;
	after_connected(c);
}

/* The upstream TLS context, made at its first use (tls.h); NULL when it
 * cannot be made, and the connection is refused. */
static SSL_CTX *upstream_tls(px_loop *L)
{
	if (!L->tls && L->tls_trust)
		(void)px_tls_ctx_new(L->tls_trust, &L->tls);
	return L->tls;
}

static void on_connected(conn *c)
{
	int err = 0;
	socklen_t l = sizeof(err);

	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
		err = errno;
	if (err) {
		c->connect_errno = err;
		deny(c, 502, "connect-failed", "cannot connect to the origin", false);
		return;
	}
	if (c->up_tls) {
		SSL_CTX *ctx = upstream_tls(c->L);

		if (!ctx || px_tls_new(ctx, c->ufd, c->host, &c->ssl) < 0) {
			deny(c, 502, "upstream-tls", "cannot set up TLS", false);
			return;
		}
		c->state = CS_TLS;
		set_deadline(c, PX_CONN_TIMEOUT_NS);
		on_tls(c);
		return;
	}
	after_connected(c);
}

static void on_gateway_timeout(conn *c)
{
	deny(c, 504, "upstream-timeout", "the origin did not answer in time", true);
}

static void copy_trunc(char *dst, size_t size, const char *src, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* What the request line asked for, as the records say it. */
static void take_request_line(conn *c)
{
	copy_trunc(c->method, sizeof(c->method), c->req.method, strlen(c->req.method));
	copy_trunc(c->host, sizeof(c->host), c->req.host, strlen(c->req.host));
	if (c->req.path.len)
		copy_trunc(c->path, sizeof(c->path), c->cin + c->req.path.off, c->req.path.len);
	else
		strcpy(c->path, c->req.target_kind == PX_TARGET_ABSOLUTE ? "/" : "");
	c->port = c->req.port;
}

/*
 * A head that cannot be judged: the record keeps what was parsed (the
 * request line, or at least its method) and, without a request line, the
 * first bytes in hex, so that an attempt to smuggle a request can be told
 * from garbage. Bounded: PX_HEAD_HEX_BYTES.
 */
static void take_unparsed(conn *c)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = c->cin_len < PX_HEAD_HEX_BYTES ? c->cin_len : PX_HEAD_HEX_BYTES;

	c->method[0] = c->host[0] = c->path[0] = 0;
	c->port = 0;
	c->head_hex[0] = 0;
	if (c->req.line_ok) {
		take_request_line(c);
		return;
	}
	copy_trunc(c->method, sizeof(c->method), c->req.method, strlen(c->req.method));
	for (size_t i = 0; i < n; i++) {
		c->head_hex[2 * i] = hex[(unsigned char)c->cin[i] >> 4];
		c->head_hex[2 * i + 1] = hex[(unsigned char)c->cin[i] & 15];
	}
	c->head_hex[2 * n] = 0;
}

/* The request is complete: apply the policy in a fixed order. */
void px_conn_judge(conn *c)
{
	px_loop *L = c->L;
	const px_config *cfg = L->cfg;
	const char *reason = NULL;
	int rule;

	c->start_ns = px_now_ns();
	c->n_requests++;
	c->request_id = 0;
	take_request_line(c);
	c->up_port = c->req.port;
	c->is_connect = c->req.target_kind == PX_TARGET_AUTHORITY;
	c->keep_alive = c->req.keep_alive && !c->is_connect;
	if (c->is_connect && px_inspect_wanted(c)) {
		px_inspect_connect(c); /* its requests take the rate, not the CONNECT */
		return;
	}

	if (!px_bucket_take_exact(&L->sh->rate, 1, px_now_ns())) {
		refuse_over_rate(c);
		return;
	}
	c->cred = request_cred(c);
	if (px_inspect_placeholder_refused(c))
		return;
	c->up_tls = c->inspected; /* a decrypted request goes on in TLS */
	if (c->cred && c->is_connect && !c->inspect_declined) {
		/* an inspected host never gets here: its CONNECT is decrypted */
		deny(c, 403, "credentialed-host",
		     "this host gets credentials added by the proxy and is not inspected: send "
		     "plain http:// requests through the proxy instead of CONNECT",
		     true);
		return;
	}
	if (c->cred && c->cred->upstream_https) {
		c->up_tls = true;
		if (c->up_port == 80)
			c->up_port = 443; /* http://host/ means "the service", TLS on 443 */
	}
	rule = px_allow_match(cfg, c->host, c->req.host_kind, c->up_port, c->req.method_bit,
			      c->is_connect, &reason);
	if (rule < 0) {
		deny(c, 403, reason, "destination not in the egress allowlist", false);
		return;
	}
	if ((size_t)rule < cfg->n_egress)
		(void)snprintf(c->rule, sizeof(c->rule), "%s", cfg->egress[rule].host);
	else
		(void)snprintf(c->rule, sizeof(c->rule), "allow_private[%d]",
			       rule - (int)cfg->n_egress);
	if (c->req.has_content_length && cfg->max_request_body != PLAN_UNLIMITED &&
	    c->req.content_length > cfg->max_request_body) {
		px_limit_hit(L, "max_request_body", c->host);
		deny(c, 413, "max-request-body", "request body too large", true);
		return;
	}
	if (L->sh->budget_left == 0) {
		px_limit_hit(L, "egress_budget", c->host);
		deny(c, 403, "egress-budget", "the egress budget is spent", true);
		return;
	}
	if (px_l7_judge(c, rule) < 0)
		return; /* the rules' paths or the credential's limits refused it */
	if (take_pooled(c)) {
		after_connected(c); /* neither DNS nor connect: the address it went to stands */
		return;
	}

	if (c->req.host_kind != PX_HOST_NAME) {
		uint8_t a[16];
		int fam;

		if (px_parse_ip(c->host, &fam, a) < 0) {
			deny(c, 400, "bad-target", "invalid address", true);
			return;
		}
		c->addr.family = fam;
		memcpy(c->addr.addr, a, 16);
		(void)inet_ntop(fam, a, c->addr_str, sizeof(c->addr_str));
		if (!px_addr_permitted(cfg, fam, a)) {
			deny(c, 403, "private-address", "private address", false);
			return;
		}
		start_connect(c);
		return;
	}
	c->state = CS_RESOLVING;
	set_deadline(c, PX_DNS_TIMEOUT_NS);
	if (px_dns_resolve(L->dns, c->host, dns_done, c, &c->query) < 0) {
		deny(c, 502, "dns-failure", "cannot start name resolution", false);
		return;
	}
}

/*
 * Parses the head in c->cin, reading more while may_read: after the first
 * short read the socket is drained and epoll says when more arrives (a
 * read that finds nothing is a system call per request). Through TLS,
 * OpenSSL may hold decrypted bytes epoll cannot see: read until it wants
 * the socket.
 */
static void read_head(conn *c, bool may_read)
{
	const char *reason = NULL;
	int r;

	if (c->tmode != PX_T_NONE && !px_transparent_head(c))
		return;
	for (;;) {
		if (!c->inspected && (c->socks || px_socks_detect(c))) {
			if (px_socks_read(c))
				return;
			r = 0;
		} else {
			r = c->inspected
				? px_http_parse_origin_request(c->cin, c->cin_len, &c->tunnel,
							       &c->req, &reason)
				: px_http_parse_request(c->cin, c->cin_len, &c->req, &reason);
			if (r != 0)
				break;
		}
		if (c->cin_len >= sizeof(c->cin)) {
			/* cannot happen: the parsers refuse long before */
			px_conn_close(c, "overflow");
			return;
		}
		if (!may_read && !c->inspected)
			return;
		size_t room = sizeof(c->cin) - c->cin_len;
		ssize_t n = px_client_recv(c, c->cin + c->cin_len, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				px_conn_close(c, "client-read");
			return;
		}
		if (n == 0) {
			px_conn_close(c, "client-eof");
			return;
		}
		c->cin_len += (size_t)n;
		if ((size_t)n < room)
			may_read = false;
	}
	if (r < 0) {
		/* no usable target: log what we have */
		c->start_ns = px_now_ns();
		c->n_requests++;
		take_unparsed(c);
		c->keep_alive = false;
		deny(c, -r, "bad-request", reason ? reason : "malformed request", true);
		return;
	}
	px_conn_judge(c);
}

static void on_read_head(conn *c)
{
	read_head(c, true);
}

/*
 * No complete head in time: a client that is slow to send one (slowloris)
 * or that never sends a byte holds a connection slot, and is recorded; one
 * idle between requests on a kept-alive connection is not. At most one
 * record per connection, each after PX_HEAD_TIMEOUT_NS or more.
 */
static void head_timeout(conn *c)
{
	char detail[96];

	if (c->tmode != PX_T_NONE && px_transparent_timeout(c))
		return;
	if (c->cin_len > 0 || c->n_requests == 0) {
		c->start_ns = px_now_ns();
		take_unparsed(c);
		(void)snprintf(detail, sizeof(detail),
			       "no complete request head in time (%zu bytes received)", c->cin_len);
		px_conn_emit_denied(c, c->cin_len ? "head-timeout" : "idle-timeout", detail);
	}
	px_conn_close(c, "timeout");
}

static void tunnel_ev(conn *c)
{
	px_tunnel_io(c);
}

static void tunnel_c_in(conn *c)
{
	c->c_rd = true;
	px_tunnel_io(c);
}

static void tunnel_c_out(conn *c)
{
	c->c_wr = true;
	px_tunnel_io(c);
}

static void tunnel_u_in(conn *c)
{
	c->u_rd = true;
	px_tunnel_io(c);
}

static void tunnel_u_out(conn *c)
{
	c->u_wr = true;
	px_tunnel_io(c);
}

static void tunnel_c_hup(conn *c)
{
	px_tunnel_hup(c, false);
}

static void tunnel_u_hup(conn *c)
{
	px_tunnel_hup(c, true);
}

static void tunnel_timeout(conn *c)
{
	px_conn_close(c, "idle");
}

static void forward_ev(conn *c)
{
	px_forward_io(c);
}

static void forward_c_in(conn *c)
{
	c->c_rd = true;
	px_forward_io(c);
}

static void forward_u_in(conn *c)
{
	c->u_rd = true; /* also an EOF or an error: the read reports it */
	px_forward_io(c);
}

static void forward_timeout(conn *c)
{
	if (!c->resp_head_done) {
		on_gateway_timeout(c);
		return;
	}
	px_conn_emit_request(c, "allow", "timeout", c->status);
	px_conn_close(c, "timeout");
}

static void reply_in(conn *c)
{
	/* bytes from the client while we answer: they stay in the socket */
	(void)c;
}

/* Anything not listed here drops the connection (docs/architecture.md). */
static conn_action *const transitions[_CONN_STATE_MAX][_CONN_EVENT_MAX] = {
    [CS_READ_HEAD] = {[EV_C_IN] = on_read_head,
		      [EV_C_OUT] = on_read_head, /* TLS: a read that must write first */
		      [EV_C_HUP] = drop,
		      [EV_TIMEOUT] = head_timeout},
    [CS_RESOLVING] =
	{[EV_RESOLVED] = on_resolved, [EV_C_HUP] = drop, [EV_TIMEOUT] = on_gateway_timeout},
    [CS_CONNECTING] = {[EV_U_OUT] = on_connected,
		       [EV_U_HUP] = on_connected,
		       [EV_C_HUP] = drop,
		       [EV_TIMEOUT] = on_gateway_timeout},
    [CS_TLS] = {[EV_U_IN] = on_tls,
		[EV_U_OUT] = on_tls,
		[EV_U_HUP] = on_tls,
		[EV_C_HUP] = drop,
		[EV_TIMEOUT] = on_gateway_timeout},
    [CS_TUNNEL] = {[EV_C_IN] = tunnel_c_in,
		   [EV_C_OUT] = tunnel_c_out,
		   [EV_U_IN] = tunnel_u_in,
		   [EV_U_OUT] = tunnel_u_out,
		   [EV_WAKE] = tunnel_ev,
		   [EV_C_HUP] = tunnel_c_hup,
		   [EV_U_HUP] = tunnel_u_hup,
		   [EV_TIMEOUT] = tunnel_timeout},
    [CS_FORWARD] = {[EV_C_IN] = forward_c_in,
		    [EV_C_OUT] = forward_ev,
		    [EV_U_IN] = forward_u_in,
		    [EV_U_OUT] = forward_ev,
		    [EV_U_HUP] = forward_u_in,
		    [EV_WAKE] = forward_ev,
		    [EV_C_HUP] = drop,
		    [EV_TIMEOUT] = forward_timeout},
    [CS_REPLY] =
	{[EV_C_OUT] = reply_write, [EV_C_IN] = reply_in, [EV_C_HUP] = drop, [EV_TIMEOUT] = drop},
    [CS_CLIENT_TLS] = {[EV_C_IN] = px_inspect_io,
		       [EV_C_OUT] = px_inspect_io,
		       [EV_C_HUP] = px_inspect_io,
		       [EV_TIMEOUT] = px_inspect_timeout},
    [CS_H2] = {[EV_C_IN] = px_h2_io,
	       [EV_C_OUT] = px_h2_io,
	       [EV_C_HUP] = px_h2_io, /* the client's or a stream's socketpair */
	       [EV_WAKE] = px_h2_io,
	       [EV_TIMEOUT] = px_h2_timeout},
};

static void dispatch(conn *c, conn_event e)
{
	conn_action *act;

	if (c->dead || c->held)
		return; /* held: epoll reports it again once released */
	if ((unsigned)c->state >= _CONN_STATE_MAX || (unsigned)e >= _CONN_EVENT_MAX) {
		drop(c);
		return;
	}
	act = transitions[c->state][e];
	if (act)
		act(c);
	else
		drop(c); /* unlisted = protocol violation */
}

static void interest(conn *c, uint32_t *cm, uint32_t *um)
{
	*cm = 0;
	*um = 0;
	switch (c->state) {
	case CS_READ_HEAD:
		*cm = EPOLLIN | EPOLLRDHUP;
		break;
	case CS_RESOLVING:
		break;
	case CS_CONNECTING:
		*um = EPOLLOUT;
		break;
	case CS_TLS:
		*um = (c->ssl_want_read ? EPOLLIN : 0u) | (c->ssl_want_write ? EPOLLOUT : 0u);
		break;
	case CS_TUNNEL:
		px_tunnel_interest(c, cm, um);
		break;
	case CS_FORWARD:
		px_forward_interest(c, cm, um);
		break;
	case CS_REPLY:
		*cm = EPOLLOUT;
		break;
	case CS_CLIENT_TLS:
		px_inspect_interest(c, cm, um);
		return;
	case CS_H2:
		px_h2_interest(c, cm, um);
		return;
	case _CONN_STATE_MAX:
	case _CONN_STATE_INVALID:
	default:
		break;
	}
	/* TLS to the client: a read may have to write first, a write read first */
	if (c->inspected && c->cfd >= 0) {
		if ((*cm & EPOLLIN) && c->cssl_want_write)
			*cm |= EPOLLOUT;
		if ((*cm & EPOLLOUT) && c->cssl_want_read)
			*cm |= EPOLLIN;
	}
}

static void arm(conn *c)
{
	uint32_t cm, um;
	struct epoll_event ev = {0};

	if (c->dead)
		return;
	interest(c, &cm, &um);
	if (cm != c->c_mask && c->cfd >= 0) {
		ev.events = cm;
		ev.data.ptr = &c->cw;
		if (epoll_ctl(c->L->epfd, EPOLL_CTL_MOD, c->cfd, &ev) == 0)
			c->c_mask = cm;
	}
	if (c->ufd >= 0 && (!c->u_registered || um != c->u_mask)) {
		if (!c->uw) {
			c->uw = calloc(1, sizeof(*c->uw));
			if (!c->uw) {
				px_conn_close(c, "oom");
				return;
			}
			c->uw->type = W_UPSTREAM;
			c->uw->c = c;
		}
		ev.events = um;
		ev.data.ptr = c->uw;
		if (epoll_ctl(c->L->epfd, c->u_registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->ufd,
			      &ev) == 0) {
			c->u_registered = true;
			c->u_mask = um;
		} else
			px_conn_close(c, "epoll");
	}
}

static void accept_one(px_loop *L)
{
	int fd = accept4(L->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* level-triggered: a listener we cannot drain would spin the loop */
			struct epoll_event pause = {.events = 0, .data.ptr = &L->listen_w};

			(void)epoll_ctl(L->epfd, EPOLL_CTL_MOD, L->listen_fd, &pause);
			L->accept_resume_ns = px_now_ns() + PX_ACCEPT_PAUSE_NS;
		}
		return;
	}
	(void)px_conn_new(L, fd);
}

conn *px_conn_new(px_loop *L, int fd)
{
	struct epoll_event ev = {0};
	int one = 1;
	conn *c;

	if (L->n_conns >= L->max_conns) {
		(void)close(fd);
		L->cap_refused++;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		(void)close(fd);
		return NULL;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->L = L;
	c->cfd = fd;
	c->ufd = -1;
	c->c2u[0] = c->c2u[1] = c->u2c[0] = c->u2c[1] = -1;
	c->cw.type = W_CLIENT;
	c->cw.c = c;
	c->state = CS_READ_HEAD;
	c->deadline_ns = px_now_ns() + PX_HEAD_TIMEOUT_NS;
	c->c_mask = EPOLLIN | EPOLLRDHUP;
	ev.events = c->c_mask;
	ev.data.ptr = &c->cw;
	if (epoll_ctl(L->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		(void)close(fd);
		free(c);
		return NULL;
	}
	c->next = L->conns;
	if (L->conns)
		L->conns->prev = c;
	L->conns = c;
	L->n_conns++;
	return c;
}

/*
 * Connections refused at the cap are counted and reported at most once per
 * PX_CAP_REPORT_NS, as one limit.hit: a flood of connections must not
 * become a flood of records.
 */
static void report_refused(px_loop *L, uint64_t now, bool now_or_never)
{
	char detail[128];

	if (L->cap_refused == 0 || (!now_or_never && now < L->cap_report_ns))
		return;
	(void)snprintf(detail, sizeof(detail),
		       "%llu connection%s refused: %zu open, the most this worker serves",
		       (unsigned long long)L->cap_refused, L->cap_refused == 1 ? "" : "s",
		       L->n_conns);
	px_limit_hit(L, "connections", detail);
	L->cap_refused = 0;
	L->cap_report_ns = now + PX_CAP_REPORT_NS;
}

static void on_fd_event(px_watch *w, uint32_t e)
{
	conn *c = w->c;
	bool up = w->type == W_UPSTREAM;

	if (!c)
		return; /* the socket this was about is gone */
	/*
	 * One epoll report can carry several conditions. A handler may close
	 * the fd that reported them (e.g. EPOLLOUT|EPOLLHUP on a failed
	 * connect: the 502 closes the upstream); the rest then belong to a
	 * socket that no longer exists and must not reach the new state.
	 */
	if (e & (EPOLLIN | EPOLLRDHUP))
		dispatch(c, up ? EV_U_IN : EV_C_IN);
	if (c->dead || (up ? c->ufd : c->cfd) < 0)
		return;
	if (e & EPOLLOUT)
		dispatch(c, up ? EV_U_OUT : EV_C_OUT);
	if (c->dead || (up ? c->ufd : c->cfd) < 0)
		return;
	if (e & (EPOLLERR | EPOLLHUP))
		dispatch(c, up ? EV_U_HUP : EV_C_HUP);
}

static int timeout_ms(px_loop *L, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	int dns_ms = px_dns_timeout_ms(L->dns);
	uint64_t ms;

	for (conn *c = L->conns; c; c = c->next) {
		if (c->deadline_ns && c->deadline_ns < next)
			next = c->deadline_ns;
		if (c->wake_ns && c->wake_ns < next)
			next = c->wake_ns;
	}
	if (L->accept_resume_ns && L->accept_resume_ns < next)
		next = L->accept_resume_ns;
	if (L->cap_refused && L->cap_report_ns < next)
		next = L->cap_report_ns;
	if (L->sh->rate_refused && L->rate_report_ns < next)
		next = L->rate_report_ns;
	for (size_t i = 0; i < L->pool.n; i++)
		if (L->pool.e[i].idle_since_ns + PX_POOL_IDLE_NS < next)
			next = L->pool.e[i].idle_since_ns + PX_POOL_IDLE_NS;
	if (px_attempt_next_report_ns(&L->attempts) < next)
		next = px_attempt_next_report_ns(&L->attempts);
	if (L->redir_due_ns && L->redir_due_ns < next)
		next = L->redir_due_ns;
	if (next == UINT64_MAX)
		ms = 60000;
	else
		ms = next <= now ? 0 : (next - now + 999999) / 1000000;
	if (ms > 60000)
		ms = 60000;
	if (dns_ms >= 0 && (uint64_t)dns_ms < ms)
		ms = (uint64_t)dns_ms;
	return (int)ms;
}

static void handle_events_fd(px_loop *L, uint32_t e)
{
	char b[64];

	if (e & EPOLLIN) {
		ssize_t n = recv(L->event_fd, b, sizeof(b), MSG_DONTWAIT);

		/* the supervisor never writes: EOF (or anything) means stop */
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			L->quit = true;
	}
	if (e & (EPOLLHUP | EPOLLERR))
		L->quit = true;
	if (e & EPOLLOUT)
		(void)px_events_flush(L->ev);
}

/*
 * The supervisor shut its end when the sandbox ended: every tunnel still
 * open is closed and reported, and every queued event is delivered before
 * the worker shuts its own end, so the audit log holds the last bytes
 * counted. The supervisor bounds how long it waits for this.
 */
static void drain(px_loop *L)
{
	report_refused(L, px_now_ns(), true);
	report_rate(L, px_now_ns(), true);
	px_attempts_report(L, px_now_ns(), true);
	(void)px_redirect_tick(L, px_now_ns(), true);
	for (conn *c = L->conns; c; c = c->next)
		px_tunnel_end(c, "sandbox-ended");
	for (int i = 0; i < 50 && px_events_pending(L->ev); i++) {
		struct pollfd p = {.fd = L->event_fd, .events = POLLOUT};

		if (poll(&p, 1, 20) < 0 && errno != EINTR)
			break;
		if (px_events_flush(L->ev) < 0)
			break;
	}
	/* The end of the records, before the exit: the supervisor seals the
	 * log without waiting for our teardown (proxy.h, px_worker_stop). */
	(void)shutdown(L->event_fd, SHUT_WR);
}

/*
 * The requests held this round go upstream once their starts are in the
 * supervisor's socket (waiting for it if need be); none goes out when the
 * supervisor is gone.
 */
static void release_held(px_loop *L)
{
	int r;

	if (!L->held)
		return;
	r = px_events_sync(L->ev);
	while (L->held) {
		conn *c = L->held;

		L->held = c->held_next;
		c->held_next = NULL;
		c->held = false;
		if (c->dead)
			continue;
		if (r < 0)
			px_conn_close(c, "no-record"); /* nothing goes out unrecorded */
		else
			after_connected(c);
	}
}

/* Frees the watches of sockets closed during the batch just handled. */
static void bury(px_loop *L)
{
	while (L->graveyard) {
		px_watch *w = L->graveyard;

		L->graveyard = w->next;
		free(w);
	}
}

int px_loop_run(px_loop *L)
{
	struct epoll_event evs[64];
	struct epoll_event ev = {0};
	bool ev_out = false;

	L->listen_w.type = W_LISTEN;
	L->event_w.type = W_EVENTS;
	ev.events = EPOLLIN;
	ev.data.ptr = &L->listen_w;
	if (epoll_ctl(L->epfd, EPOLL_CTL_ADD, L->listen_fd, &ev) < 0)
		return -errno;
	ev.events = EPOLLIN | EPOLLRDHUP;
	ev.data.ptr = &L->event_w;
	if (epoll_ctl(L->epfd, EPOLL_CTL_ADD, L->event_fd, &ev) < 0)
		return -errno;
	/* records go out at the end of each round, many per system call */
	px_events_batch(L->ev, true);
	L->pool.on_drop = pool_watch_gone;
	L->pool.userdata = L;
	px_attempt_limit_init(&L->attempts, px_now_ns());
	if (L->attempt_fd >= 0) {
		L->attempt_w.type = W_ATTEMPTS;
		ev.events = EPOLLIN;
		ev.data.ptr = &L->attempt_w;
		if (epoll_ctl(L->epfd, EPOLL_CTL_ADD, L->attempt_fd, &ev) < 0)
			return -errno;
	}

	while (!L->quit) {
		uint64_t now = px_now_ns();
		int n = epoll_wait(L->epfd, evs, (int)ELEMENTSOF(evs), timeout_ms(L, now));

		L->now_ns = px_now_ns();
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			px_watch *w = evs[i].data.ptr;

			switch (w->type) {
			case W_LISTEN:
				for (int k = 0; k < 16; k++)
					accept_one(L);
				break;
			case W_EVENTS:
				handle_events_fd(L, evs[i].events);
				break;
			case W_ATTEMPTS:
				px_attempts_read(L);
				break;
			case W_DNS: {
				px_dns_watch *dw = (px_dns_watch *)(void *)w;

				px_dns_process(dw->dns, dw->fd, evs[i].events);
				break;
			}
			case W_CLIENT:
			case W_UPSTREAM:
				on_fd_event(w, evs[i].events);
				break;
			case W_SANDBOX_RESOLVER:
				px_sandbox_resolver_read(L, ((px_dns_watch *)(void *)w)->fd);
				break;
			case W_TRANSPARENT:
				px_transparent_accept(L, w);
				break;
			case W_POOLED:
				/* an EOF, an error or stray bytes on an idle connection;
				 * none when it was taken or closed since the report */
				(void)px_pool_drop_watch(&L->pool, w);
				break;
			default:
				break;
			}
		}
		if (px_dns_timeout_ms(L->dns) == 0)
			px_dns_process_timeouts(L->dns);
		now = L->now_ns = px_now_ns();
		report_refused(L, now, false);
		report_rate(L, now, false);
		px_attempts_report(L, now, false);
		L->redir_due_ns = px_redirect_tick(L, now, false);
		if (L->accept_resume_ns && L->accept_resume_ns <= now) {
			L->accept_resume_ns = 0;
			ev.events = EPOLLIN;
			ev.data.ptr = &L->listen_w;
			(void)epoll_ctl(L->epfd, EPOLL_CTL_MOD, L->listen_fd, &ev);
		}
		for (conn *c = L->conns; c; c = c->next) {
			if (c->dead)
				continue;
			if (c->wake_ns && c->wake_ns <= now) {
				c->wake_ns = 0;
				c->throttled_up = c->throttled_down = false;
				dispatch(c, EV_WAKE);
			}
			if (!c->dead && c->deadline_ns && c->deadline_ns <= now)
				dispatch(c, EV_TIMEOUT);
		}
		(void)px_pool_expire(&L->pool, now);
		release_held(L);
		bury(L);
		for (conn *c = L->conns, *next; c; c = next) {
			next = c->next;
			if (c->dead)
				free_conn(c);
			else
				arm(c);
		}
		(void)px_events_flush(L->ev);
		if (px_events_pending(L->ev) != ev_out) {
			ev_out = !ev_out;
			ev.events = EPOLLIN | EPOLLRDHUP | (ev_out ? EPOLLOUT : 0u);
			ev.data.ptr = &L->event_w;
			(void)epoll_ctl(L->epfd, EPOLL_CTL_MOD, L->event_fd, &ev);
		}
	}
	drain(L);
	px_events_batch(L->ev, false);
	px_pool_clear(&L->pool);
	bury(L);
	return 0;
}

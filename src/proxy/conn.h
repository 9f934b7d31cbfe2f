/* SPDX-License-Identifier: MIT */
/*
 * The worker's event loop and per-connection state machine (docs/architecture.md):
 * one thread, one epoll, non-blocking sockets, a deadline per connection and
 * an explicit state x event table; an unlisted transition closes the
 * connection. Internal to src/proxy/.
 */
#pragma once

#include <arpa/inet.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/sha256.h"
#include "proxy/attempt.h"
#include "proxy/dns.h"
#include "proxy/events.h"
#include "proxy/http.h"
#include "proxy/limits.h"
#include "proxy/pool.h"
#include "proxy/px.h"
#include "proxy/synthetic.h"

#define PX_MAX_CONNS		512u
#define PX_CIN_SIZE		(PX_MAX_HEAD + 16384u)
#define PX_UBUF_SIZE		65536u
#define PX_PIPE_SIZE		(1024u * 1024u)
#define PX_PIPE_SLACK		65536u /* see drained() in tunnel.c */
#define PX_CLIENT_NOTSENT_LOWAT 32768u /* see px_tunnel_start() */
#define PX_LOG_PATH		1024u
#define PX_HEAD_TIMEOUT_NS	(10ull * 1000000000ull) /* first request head */
#define PX_IDLE_TIMEOUT_NS	(30ull * 1000000000ull) /* keep-alive between requests */
#define PX_DNS_TIMEOUT_NS	(10ull * 1000000000ull)
#define PX_CONN_TIMEOUT_NS	(10ull * 1000000000ull) /* TCP connect + TLS handshake */
#define PX_FWD_IDLE_NS		(60ull * 1000000000ull) /* no progress on a forwarded request */
#define PX_TUNNEL_IDLE_NS	(300ull * 1000000000ull)
#define PX_REPLY_TIMEOUT_NS	(10ull * 1000000000ull)
#define PX_BW_BURST_MIN		16384u
#define PX_ACCEPT_PAUSE_NS	(100ull * 1000000ull)
#define PX_FDS_PER_CONN		6u /* client, upstream, two pipes */
#define PX_NOFILE		4096u
#define PX_HEAD_HEX_BYTES	32u /* of an unparsable head, in its net.denied record */
#define PX_CAP_REPORT_NS	(1000000000ull) /* connections refused at the cap */
#define PX_RATE_RECORDS		10u /* refusals over net.rate with a record each, per second */

typedef enum watch_type {
	W_LISTEN = 1,
	W_EVENTS,
	W_DNS,
	W_CLIENT,
	W_UPSTREAM,
	W_ATTEMPTS,
	W_SANDBOX_RESOLVER, /* the sandbox resolver's UDP socket (sandbox-resolver.c) */
	W_TRANSPARENT,	    /* a transparent listener (transparent.c) */
	W_POOLED,	    /* an idle upstream connection in the pool (pool.h) */
} watch_type;

typedef enum conn_state {
	CS_READ_HEAD,
	CS_RESOLVING,
	CS_CONNECTING,
	CS_TLS,
	CS_TUNNEL,
	CS_FORWARD,
	CS_REPLY,
	CS_CLIENT_TLS, /* an inspected CONNECT: "200", then the handshake with the client */
	CS_H2,	       /* an inspected connection speaking HTTP/2 (h2.c) */
	_CONN_STATE_MAX,
	_CONN_STATE_INVALID = -22,
} conn_state;

typedef enum conn_event {
	EV_C_IN,
	EV_C_OUT,
	EV_C_HUP,
	EV_U_IN,
	EV_U_OUT,
	EV_U_HUP,
	EV_TIMEOUT,
	EV_RESOLVED,
	EV_WAKE,
	_CONN_EVENT_MAX,
	_CONN_EVENT_INVALID = -22,
} conn_event;

struct conn;
typedef struct px_loop px_loop;
typedef struct px_redirect px_redirect;

typedef struct px_watch {
	int type;
	struct conn *c;	       /* NULL once the fd it watched is closed */
	struct px_watch *next; /* graveyard link */
} px_watch;

struct px_loop {
	int epfd;
	int listen_fd;
	int event_fd;
	px_config *cfg;
	px_events *ev;
	px_dns *dns;
	/* NULL unless a credential has upstream https or a host is inspected;
	 * tls is made from tls_trust at the first upstream TLS connection */
	X509_STORE *tls_trust;
	SSL_CTX *tls;
	SSL_CTX *inspect_tls; /* the client side of inspected tunnels, NULL without */
	struct px_ca *ca;     /* mints their leaves */
	px_shared *sh;	      /* rate, bandwidth, budget_left (PLAN_UNLIMITED = none) */
	struct conn *conns;
	size_t n_conns;
	struct conn *held; /* waiting for their net.request.start to be sent */
	px_watch listen_w, event_w;
	size_t max_conns;
	px_watch *graveyard; /* upstream watches freed after the current epoll batch */
	uint64_t accept_resume_ns;
	uint64_t cap_refused;	 /* connections refused at max_conns, not yet reported */
	uint64_t cap_report_ns;	 /* the next report, see report_refused() */
	uint64_t rate_report_ns; /* the next report of sh->rate_refused, see report_rate() */
	px_bucket rate_records;	 /* refusals over net.rate recorded one by one */
	bool rate_records_started;
	uint64_t now_ns; /* when the last epoll_wait(2) returned */
	px_pool pool;	 /* idle upstream connections (pool.h) */
	bool quit;
	px_synth_table *synth; /* the sandbox resolver's names, shared with a successor */
	px_redirect *redir;    /* sandbox resolver and transparent listeners, or NULL */
	uint64_t redir_due_ns; /* px_redirect_tick() wants to run, 0 = never */

	/* refused direct attempts (attempt-watch.c) */
	int attempt_fd; /* -1: none */
	px_watch attempt_w;
	px_attempt_limit attempts;
	uint64_t attempts_unseen; /* dropped by the kernel's queue, not yet reported */
};

/* How a transparent connection's first bytes were read (transparent.c). */
typedef enum px_tmode {
	PX_T_NONE,    /* not transparent: a client of the proxy listener */
	PX_T_UNKNOWN, /* nothing read yet */
	PX_T_HTTP,    /* origin-form HTTP, each head rewritten to absolute-form */
	PX_T_TLS,     /* a ClientHello whose SNI matched: a tunnel */
	PX_T_RAW,     /* other TCP, or the client said nothing: a tunnel */
} px_tmode;

typedef struct conn {
	px_loop *L;
	struct conn *next, *prev;
	conn_state state;
	bool dead;
	int cfd, ufd;
	px_watch cw;
	px_watch *uw; /* one per upstream socket: stale reports find c == NULL */
	uint32_t c_mask, u_mask;
	bool u_registered;
	uint64_t deadline_ns, wake_ns, start_ns;

	/* the request */
	char cin[PX_CIN_SIZE];
	size_t cin_len;
	px_request req;
	char method[PX_MAX_METHOD + 1];
	char host[PX_MAX_HOST + 1];
	char path[PX_LOG_PATH + 1];
	uint16_t port, up_port;
	bool is_connect, keep_alive, up_tls;
	bool reused;   /* the upstream connection came from the pool */
	bool up_dirty; /* the origin sent more than the response: not for the pool */
	const px_cred *cred;
	uint64_t request_id; /* its net.request.start, 0 before it goes upstream */
	bool held;	     /* on L->held: goes upstream once its start is sent */
	struct conn *held_next;
	const char *cred_refused;	 /* the credential a credential-limit refusal names */
	char norm_path[PX_LOG_PATH + 1]; /* the normalised path, when it normalised */
	char rule[PX_MAX_HOST + 32];
	char head_hex[2 * PX_HEAD_HEX_BYTES + 1]; /* of a head that did not parse */
	unsigned n_requests;			  /* heads received on this connection */
	bool socks;				  /* SOCKS5 (socks-conn.c), not HTTP */
	uint8_t socks_stage;			  /* PX_SOCKS_GREETING, PX_SOCKS_REQUEST */
	uint8_t socks_rep;			  /* a reply code chosen by the parser, or 0 */
	int connect_errno;			  /* why the upstream connect failed */
	px_dns_query *query;
	int dns_status;
	px_addr addrs[PX_DNS_MAX_ADDRS];
	size_t n_addrs;
	px_addr addr;
	char addr_str[INET6_ADDRSTRLEN];

	/* locally generated output to the client (errors, 100, 200, response head) */
	char *cout;
	size_t cout_len, cout_off;
	bool close_after_reply;

	/* forward: request side */
	char *uhead;
	size_t uhead_len, uhead_off;
	size_t framed; /* body bytes at the start of cin ready to go upstream */
	bool req_done;
	uint64_t req_left;
	uint64_t req_body;
	px_chunked req_chunk;

	/* forward: response side */
	char ubuf[PX_UBUF_SIZE];
	size_t ubuf_len, uframed;
	bool resp_head_done, resp_done, resp_cut, up_eof;
	px_response resp;
	px_chunked resp_chunk;
	uint64_t resp_left, resp_body;
	int status;
	/* the SHA-256 of the body bytes sent to the client (digest.c) */
	EVP_MD_CTX *resp_md; /* kept from request to request */
	uint64_t resp_md_bytes;
	bool resp_md_live; /* resp_md digests this response */
	bool resp_md_failed;

	/* upstream TLS */
	SSL *ssl;
	int ssl_want_read, ssl_want_write;

	/* TLS inspection (inspect.c): the client side of an inspected tunnel */
	SSL *cssl;
	int cssl_want_read, cssl_want_write;
	bool cssl_prefix; /* reading a transparent ClientHello already read, from memory */
	bool inspected;	  /* the handshake is done: client bytes go through cssl */
	bool sni_mismatch;
	bool tunnel_peeked;	   /* a plain tunnel's first client bytes were looked at */
	bool inspect_sniff;	   /* an inspected CONNECT: are its first bytes TLS? */
	bool inspect_declined;	   /* they were not: a plain tunnel, already answered */
	bool declined_silent;	   /* ... because it said nothing for PX_PEEK_NS */
	bool hello_check;	   /* a plain tunnel's first bytes, if TLS, must name its host */
	char sni[PX_MAX_HOST + 1]; /* the refused ClientHello's name, for the record */
	int client_alert;	   /* the last TLS alert the client sent, -1 none */
	px_origin tunnel;	   /* what its CONNECT asked for */
	struct px_h2 *h2;	   /* CS_H2: the HTTP/2 session (h2.h) */
	bool h2_stream;		   /* reads one HTTP/2 stream's request from a socketpair (h2.c) */

	/* tunnel */
	int c2u[2], u2c[2];
	size_t c2u_n, u2c_n, pipe_cap;
	bool c_eof, u_eof, c_shut, u_shut;
	bool c_rd, c_wr, u_rd, u_wr; /* readiness hints, see tunnel.c, forward.c */
	bool c2u_full, u2c_full;     /* the pipe refused more: full in pages, not bytes */

	bool throttled_up, throttled_down, bw_reported;
	uint64_t bytes_out, bytes_in;

	/* transparent redirection: the name the address was given for */
	px_tmode tmode;
	const char *tname; /* in L->synth, or NULL for an IP-literal destination */
	uint16_t tport;
} conn;

/* loop.c */
uint64_t px_now_ns(void);
/* A connection for the accepted socket fd (taken), reading its first head;
 * NULL (fd closed) at the cap or without memory. */
conn *px_conn_new(px_loop *L, int fd);
/* The policy for the head in c->req, as for every request: the one
 * judgement CONNECT, forwarded requests, SOCKS5 and transparent connections
 * share. */
void px_conn_judge(conn *c);
/* Records the refusal and answers status (a SOCKS5 reply code for SOCKS5,
 * nothing for a tunnel-only transparent connection, which is closed). */
void px_conn_deny(conn *c, int status, const char *reason, const char *text, bool close);
void px_conn_close(conn *c, const char *reason);
void px_conn_close_upstream(conn *c);
/* Closes only the upstream socket (and its TLS), keeping the tunnel pipes. */
void px_conn_drop_ufd(conn *c);
/* After a complete, properly framed response: the upstream connection goes
 * to the pool (or is closed when it cannot be reused). */
void px_conn_pool_upstream(conn *c);
/* A pooled connection the origin had closed before this request got an
 * answer: the same request again on a fresh connection to the same address.
 * False when it cannot be retried (bytes of it are lost). */
bool px_conn_retry_fresh(conn *c);
int px_conn_reply(conn *c, int status, const char *deny_reason, const char *text, bool close);
void px_conn_emit_request(conn *c, const char *decision, const char *reason, int status);
/* Queues the request's net.request.start: the caller holds the request
 * back until px_events_sync() sent it (px_loop_release_held()). */
void px_conn_record_start(conn *c);
/* net.denied for the current request; detail (may be NULL) says more than reason. */
void px_conn_emit_denied(conn *c, const char *reason, const char *detail);
void px_limit_hit(px_loop *L, const char *limit, const char *detail);
void px_conn_throttle(conn *c, px_bucket *b, bool up, uint64_t want);
void px_conn_reset_for_next(conn *c);
/* The response digest of net.request (digest.c): fed with the body bytes
 * sent to the client; added to the record (body_sha256, body_bytes) and
 * reset when it is emitted; freed with the connection. */
void px_resp_digest_feed(conn *c, const void *buf, size_t n);
/* The same for a record written by hand: 0 when the response had no head
 * yet (no digest in the record), 1 with hex and *ret_bytes, -1 when the
 * digest failed (body_sha256 null, *ret_bytes set). Resets the digest. */
int px_resp_digest_end(conn *c, char hex[2 * SHA256_BYTES + 1], uint64_t *ret_bytes);
void px_resp_digest_reset(conn *c);
void px_resp_digest_free(conn *c);
/* Resets for the next request on a kept-alive connection and parses any
 * pipelined bytes already read. */
void px_conn_next_request(conn *c);
int px_loop_run(px_loop *L);
/* Consumes n tokens of the budget; false when the budget is spent. */
uint64_t px_budget_take(px_loop *L, uint64_t want);

/* Refuses the request: net.denied and net.request records, a local reply. */
void px_conn_deny(conn *c, int status, const char *reason, const char *text, bool close);

/* l7.c */
/* After the allowlist matched rule: the rules' paths and the credential's
 * limits. 0 to go on, -EACCES when the request was refused (answered). */
int px_l7_judge(conn *c, int rule);
/* How many of want bytes may go upstream with the request's credential. */
uint64_t px_l7_cred_room(conn *c, uint64_t want);
void px_l7_cred_sent(conn *c, uint64_t n);
/* The name a synthetic address stands for, or NULL (sandbox resolver, synthetic.c). */
const char *px_loop_synthetic_name(px_loop *L, int family, const uint8_t *addr);

/* socks-conn.c */
#define PX_SOCKS_GREETING 0
#define PX_SOCKS_REQUEST  1
/* Whether a new connection's first bytes are a SOCKS5 greeting. */
bool px_socks_detect(const conn *c);
/* Goes on with the handshake in c->cin; true once the connection moved on
 * (judged, answered or closed), false when more bytes are needed. */
bool px_socks_read(conn *c);
/* The reply to a refusal: [5, 0xff] during the greeting, else the 10-byte
 * reply with the code for reason. Returns its length. */
int px_socks_refusal(const conn *c, const char *reason, uint8_t *buf, size_t size);
/* The reply that opens a tunnel. */
int px_socks_success(uint8_t *buf, size_t size);

/* attempt-watch.c */
/* Reads what the attempt socket holds and records it (rate-limited). */
void px_attempts_read(px_loop *L);
/* The limit.hit of attempts not recorded one by one, when due (or final). */
void px_attempts_report(px_loop *L, uint64_t now, bool final);

/* inspect.c */
/* The sandbox CA and the server context, when the configuration has a CA. */
int px_inspect_setup(px_loop *L);
/* Is this CONNECT to a host whose tunnel the proxy terminates? */
bool px_inspect_wanted(const conn *c);
/* Judges an inspected CONNECT and starts the handshake with the client. */
void px_inspect_connect(conn *c);
void px_inspect_io(conn *c);
void px_inspect_timeout(conn *c);
void px_inspect_interest(conn *c, uint32_t *cmask, uint32_t *umask);
void px_inspect_close(conn *c);
/* The request-side placeholder rules: true when c was refused (and answered). */
bool px_inspect_placeholder_refused(conn *c);
/* A plain tunnel whose first client bytes carry a placeholder in clear:
 * recorded; true when the caller must close it. */
bool px_inspect_tunnel_leak(conn *c);
/* recv(2)/send(2) on the client, through TLS in an inspected tunnel (errno set
 * as they set it: EAGAIN when TLS wants the socket again). */
ssize_t px_client_recv(conn *c, void *buf, size_t n);
ssize_t px_client_send(conn *c, const void *buf, size_t n);
/* shutdown(SHUT_WR), with a TLS close_notify first when inspected. */
void px_client_shutdown(conn *c);

/* h2.c */
/* The client chose "h2": the connection serves an HTTP/2 session. */
void px_h2_start(conn *c);
void px_h2_io(conn *c);
void px_h2_timeout(conn *c);
void px_h2_interest(conn *c, uint32_t *cmask, uint32_t *umask);
void px_h2_close(conn *c);

/* tunnel.c */
int px_tunnel_start(conn *c);
void px_tunnel_io(conn *c);
/* Reports and closes c if it is an open tunnel (the sandbox ended). */
void px_tunnel_end(conn *c, const char *reason);
void px_tunnel_hup(conn *c, bool upstream);
void px_tunnel_interest(conn *c, uint32_t *cmask, uint32_t *umask);

/* transparent.c */
int px_redirect_new(px_loop *L, const int *fds, size_t n);
/* on_read_head() of a transparent connection: false while it is handled
 * here (more to read, judged as a tunnel, refused); true when c->cin holds
 * an absolute-form head for the ordinary parser. */
bool px_transparent_head(conn *c);
/* The head deadline passed: true when c was turned into a tunnel (a
 * client that waits for the server to speak first). */
bool px_transparent_timeout(conn *c);
void px_transparent_accept(px_loop *L, px_watch *w);
/* Reports what was counted but not recorded; the next time it is due. */
uint64_t px_redirect_tick(px_loop *L, uint64_t now, bool now_or_never);

/* sandbox-resolver.c */
void px_sandbox_resolver_read(px_loop *L, int fd);

/* forward.c */
/* The head that goes upstream: the client's, cleaned, with the request's
 * credential (c->cred) set or swapped in. */
int px_forward_build_head(const conn *c, char **ret, size_t *ret_len);
int px_forward_start(conn *c);
void px_forward_io(conn *c);
void px_forward_interest(conn *c, uint32_t *cmask, uint32_t *umask);

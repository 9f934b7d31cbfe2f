/* SPDX-License-Identifier: MIT */
/*
 * TLS inspection (docs/proxy.md, "TLS inspection"): a CONNECT to an
 * inspected host is answered "200", then the proxy is the TLS server, with a
 * leaf the sandbox CA minted for the CONNECT host. Once the handshake is
 * done the connection goes back to CS_READ_HEAD and every decrypted request
 * takes the path of a plain http:// one (judge_request, forward.c), with TLS
 * to the origin; only the client's bytes pass through cssl (px_client_*).
 *
 * The non-blocking handshake is its own state, CS_CLIENT_TLS. Nothing here
 * parses the agent's TLS bytes: OpenSSL does, and its callbacks tell the SNI
 * and the alert with which a client refuses the certificate.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <openssl/err.h>

#include "proxy/allow.h"
#include "proxy/ca.h"
#include "proxy/conn.h"
#include "proxy/redirect.h"
#include "proxy/h2.h"
#include "proxy/placeholder.h"
#include "proxy/tls.h"

/* the agent's choice: HTTP/2 (h2.c) or HTTP/1.1 */
static const unsigned char alpn_protos[] = "\x02h2\x08http/1.1";

static int on_servername(SSL *ssl, int *alert, void *arg)
{
	conn *c = SSL_get_app_data(ssl);
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

	(void)arg;
	/* no SNI (an IP literal, an old client): the CONNECT host decides alone */
	if (!c || !sni || strcasecmp(sni, c->host) == 0)
		return SSL_TLSEXT_ERR_OK;
	c->sni_mismatch = true;
	*alert = SSL_AD_UNRECOGNIZED_NAME;
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* Our order: h2 when the client offers it; a client offering neither gets no ALPN. */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		   const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char *sel = NULL;

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto(&sel, outlen, alpn_protos, sizeof(alpn_protos) - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

static void on_info(const SSL *ssl, int where, int ret)
{
	conn *c = SSL_get_app_data(ssl);

	if (c && (where & SSL_CB_READ_ALERT))
		c->client_alert = ret & 0xff;
}

int px_inspect_setup(px_loop *L)
{
	px_config *cfg = L->cfg;
	SSL_CTX *ctx;
	int r;

	if (!cfg->ca_cert)
		return 0;
	r = px_ca_load(cfg->ca_cert, cfg->ca_key, &L->ca);
	/* the worker's copy of the key is now the parsed one only */
	explicit_bzero(cfg->ca_key, strlen(cfg->ca_key));
	if (r >= 0)
		r = px_ca_prepare(L->ca); /* before seccomp: key generation may probe */
	if (r < 0)
		return r;
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return -ENOMEM;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		SSL_CTX_free(ctx);
		return -EIO;
	}
	/* no session tickets: nothing to write after the handshake, nothing to resume */
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	(void)SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_tlsext_servername_callback(ctx, on_servername);
	SSL_CTX_set_alpn_select_cb(ctx, on_alpn, NULL);
	SSL_CTX_set_info_callback(ctx, on_info);
	L->inspect_tls = ctx;
	return 0;
}

bool px_inspect_wanted(const conn *c)
{
	const px_config *cfg = c->L->cfg;
	const char *reason = NULL;
	int rule;

	if (c->inspect_declined)
		return false;

	for (size_t i = 0; i < cfg->n_creds; i++)
		if (cfg->creds[i].placeholder && strcmp(cfg->creds[i].host, c->host) == 0)
			return true;
	/* the first rule for host and port decides, whatever its methods */
	rule = px_allow_match(cfg, c->host, c->req.host_kind, c->port, ~0u, false, &reason);
	return rule >= 0 && (size_t)rule < cfg->n_egress && cfg->egress[rule].inspect;
}

/* HTTPS's port: a client that is silent there is slow, not server-first,
 * and waits for its handshake as long as any (docs/proxy.md). */
static bool tls_port(const conn *c)
{
	return c->port == 443;
}

static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

/*
 * A transparent client's ClientHello is in c->cin already (it was read to
 * check its SNI): the handshake reads it from a memory BIO, then from the
 * socket once that is drained (switch_to_socket()).
 */
static int read_from_prefix(conn *c)
{
	BIO *mem = BIO_new(BIO_s_mem());

	if (!mem || BIO_write(mem, c->cin, (int)c->cin_len) != (int)c->cin_len) {
		BIO_free(mem);
		return -ENOMEM;
	}
	BIO_set_mem_eof_return(mem, -1); /* empty: "retry", not end of file */
	SSL_set0_rbio(c->cssl, mem);
	c->cssl_prefix = true;
	return 0;
}

static int switch_to_socket(conn *c)
{
	BIO *sock;

	if (!c->cssl_prefix || BIO_ctrl_pending(SSL_get_rbio(c->cssl)) > 0)
		return 0;
	sock = BIO_new_socket(c->cfd, BIO_NOCLOSE);
	if (!sock)
		return -ENOMEM;
	SSL_set0_rbio(c->cssl, sock);
	c->cssl_prefix = false;
	return 1;
}

void px_inspect_connect(conn *c)
{
	px_loop *L = c->L;
	const px_config *cfg = L->cfg;
	const char *reason = NULL;
	X509 *cert;
	EVP_PKEY *key;
	bool minted;
	int rule;

	/* the requests inside are judged one by one (methods, rate, bodies) */
	rule = px_allow_match(cfg, c->host, c->req.host_kind, c->port, ~0u, false, &reason);
	if (rule < 0) {
		px_conn_deny(c, 403, reason, "destination not in the egress allowlist", false);
		return;
	}
	(void)snprintf(c->rule, sizeof(c->rule), "%s",
		       (size_t)rule < cfg->n_egress ? cfg->egress[rule].host : "allow_private");
	if (L->sh->budget_left == 0) {
		px_limit_hit(L, "egress_budget", c->host);
		px_conn_deny(c, 403, "egress-budget", "the egress budget is spent", true);
		return;
	}
	if (c->tmode == PX_T_NONE && c->cin_len > c->req.head_len) {
		/* a client waits for the 200 before its ClientHello */
		px_conn_deny(c, 400, "bad-request", "bytes after CONNECT before its answer", true);
		return;
	}
	if (!L->ca || !L->inspect_tls || px_ca_leaf(L->ca, c->host, &cert, &key, &minted) < 0) {
		px_conn_deny(c, 500, "internal", "cannot make a certificate for this host", true);
		return;
	}
	c->cssl = SSL_new(L->inspect_tls);
	if (!c->cssl || SSL_set_fd(c->cssl, c->cfd) != 1 ||
	    SSL_use_certificate(c->cssl, cert) != 1 || SSL_use_PrivateKey(c->cssl, key) != 1 ||
	    SSL_set_app_data(c->cssl, c) != 1) {
		ERR_clear_error();
		px_conn_deny(c, 500, "internal", "cannot set up TLS", true);
		return;
	}
	SSL_set_accept_state(c->cssl);
	c->client_alert = -1;
	memcpy(c->tunnel.host, c->req.host, sizeof(c->tunnel.host));
	c->tunnel.host_kind = c->req.host_kind;
	c->tunnel.port = c->port;
	free(c->cout);
	c->cout = NULL;
	c->cout_len = c->cout_off = 0;
	if (c->tmode != PX_T_NONE) {
		/* transparent: no CONNECT to answer, and its ClientHello is read */
		if (read_from_prefix(c) < 0) {
			px_conn_close(c, "oom");
			return;
		}
	} else {
		/* the answer that opens the tunnel, in the client's protocol */
		c->cout = malloc(sizeof(established));
		if (!c->cout) {
			px_conn_close(c, "oom");
			return;
		}
		if (c->socks)
			c->cout_len =
			    (size_t)px_socks_success((uint8_t *)c->cout, sizeof(established));
		else {
			memcpy(c->cout, established, sizeof(established));
			c->cout_len = strlen(established);
		}
	}
	c->cin_len = 0;
	c->state = CS_CLIENT_TLS;
	/* a CONNECT client's first bytes decide: TLS is inspected, anything else
	 * (ssh, plain http, a server-first protocol) is a plain tunnel */
	c->inspect_sniff = c->tmode == PX_T_NONE;
	c->deadline_ns =
	    px_now_ns() + (c->inspect_sniff && !tls_port(c) ? PX_PEEK_NS : PX_CONN_TIMEOUT_NS);
	px_inspect_io(c);
}

/* Alerts with which a client says it does not accept our certificate. */
static bool rejects_certificate(int alert)
{
	switch (alert) {
	case SSL_AD_BAD_CERTIFICATE:
	case SSL_AD_UNSUPPORTED_CERTIFICATE:
	case SSL_AD_CERTIFICATE_REVOKED:
	case SSL_AD_CERTIFICATE_EXPIRED:
	case SSL_AD_CERTIFICATE_UNKNOWN:
	case SSL_AD_UNKNOWN_CA:
	case SSL_AD_ACCESS_DENIED:
		return true;
	default:
		return false;
	}
}

static void handshake_failed(conn *c, const char *why)
{
	char detail[256];

	if (c->sni_mismatch) {
		px_conn_emit_denied(c, "sni-mismatch",
				    "the TLS server name differs from the CONNECT host");
	} else if (c->client_alert >= 0 && rejects_certificate(c->client_alert)) {
		(void)snprintf(detail, sizeof(detail),
			       "the client refused the certificate of the sandbox CA (TLS alert "
			       "%s): it pins certificates or does not use the sandbox's trust "
			       "bundle",
			       SSL_alert_desc_string_long(c->client_alert));
		px_conn_emit_denied(c, "client-rejected-ca", detail);
	} else {
		(void)snprintf(detail, sizeof(detail), "TLS handshake with the client failed: %s",
			       why);
		px_conn_emit_denied(c, "client-tls", detail);
	}
	px_conn_close(c, "client-tls");
}

/* Not TLS after all: the CONNECT (already answered) becomes a plain
 * tunnel, judged by the rules like any other. */
static void decline(conn *c)
{
	SSL_free(c->cssl);
	c->cssl = NULL;
	c->inspect_sniff = false;
	c->inspect_declined = true;
	c->req.head_len = 0;
	px_conn_judge(c);
}

/* Whether the client's first byte starts a TLS handshake record; false
 * while it has sent nothing, or when c was handed on or closed. */
static bool sniffed_tls(conn *c)
{
	char b;
	ssize_t n = recv(c->cfd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		c->cssl_want_read = 1;
		return false;
	}
	if (n <= 0) {
		px_conn_close(c, n == 0 ? "client-eof" : "client-read");
		return false;
	}
	if ((uint8_t)b != 0x16) {
		decline(c);
		return false;
	}
	c->inspect_sniff = false;
	c->deadline_ns = px_now_ns() + PX_CONN_TIMEOUT_NS;
	return true;
}

void px_inspect_io(conn *c)
{
	const unsigned char *alpn = NULL;
	unsigned int alpn_len = 0;
	unsigned long e;
	int r, err;

	while (c->cout_off < c->cout_len) {
		ssize_t n = send(c->cfd, c->cout + c->cout_off, c->cout_len - c->cout_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			px_conn_close(c, "client-write");
			return;
		}
		c->cout_off += (size_t)n;
	}
	if (c->inspect_sniff && !sniffed_tls(c))
		return;
again:
	c->cssl_want_read = c->cssl_want_write = 0;
	r = SSL_do_handshake(c->cssl);
	if (r != 1) {
		err = SSL_get_error(c->cssl, r);
		if (err == SSL_ERROR_WANT_READ) {
			int s = switch_to_socket(c);

			if (s < 0) {
				px_conn_close(c, "oom");
				return;
			}
			if (s > 0)
				goto again;
			c->cssl_want_read = 1;
			return;
		}
		if (err == SSL_ERROR_WANT_WRITE) {
			c->cssl_want_write = 1;
			return;
		}
		e = ERR_peek_last_error();
		handshake_failed(c, e ? ERR_reason_error_string(e)
				    : err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN
					? "the client closed the connection"
					: "protocol error");
		ERR_clear_error();
		return;
	}
	c->inspected = true;
	/* from here a transparent client is an inspected tunnel like any other */
	c->tmode = PX_T_NONE;
	SSL_get0_alpn_selected(c->cssl, &alpn, &alpn_len);
	if (alpn_len == 2 && memcmp(alpn, "h2", 2) == 0) {
		px_h2_start(c);
		return;
	}
	/* the first request head, as on a kept-alive connection */
	px_conn_next_request(c);
}

void px_inspect_timeout(conn *c)
{
	if (c->inspect_sniff && c->cout_off >= c->cout_len && !tls_port(c)) {
		/* the client waits for the server to speak first; should it
		 * speak TLS after all, the tunnel refuses it (tunnel.c) */
		c->declined_silent = true;
		decline(c);
		return;
	}
	handshake_failed(c, "no handshake in time");
}

void px_inspect_interest(conn *c, uint32_t *cm, uint32_t *um)
{
	*um = 0;
	if (c->cout_off < c->cout_len)
		*cm = EPOLLOUT;
	else
		*cm = (c->cssl_want_write ? EPOLLOUT : 0u) |
		      (c->cssl_want_read || !c->cssl_want_write ? EPOLLIN | EPOLLRDHUP : 0u);
}

void px_inspect_close(conn *c)
{
	px_h2_close(c);
	if (c->cssl) {
		SSL_free(c->cssl);
		c->cssl = NULL;
	}
	c->inspected = false;
}

bool px_inspect_placeholder_refused(conn *c)
{
	const px_config *cfg = c->L->cfg;
	const px_cred *leak = NULL;
	char detail[PX_MAX_HOST * 2 + 160];

	if (!cfg->has_placeholders)
		return false;
	/* the head and the body bytes read with it: any other host's placeholder */
	for (size_t i = 0; i < cfg->n_creds && !leak; i++) {
		const px_cred *p = &cfg->creds[i];

		if (p->placeholder && (c->is_connect || strcmp(p->host, c->host) != 0) &&
		    memmem(c->cin, c->cin_len, p->placeholder, strlen(p->placeholder)))
			leak = p;
	}
	if (!leak)
		return false;
	(void)snprintf(detail, sizeof(detail),
		       "the request carries the placeholder of %s, which is only for %s",
		       leak->placeholder_env, leak->host);
	px_conn_deny(c, 403, "credential-exfiltration", detail, true);
	return true;
}

bool px_inspect_tunnel_leak(conn *c)
{
	const px_config *cfg = c->L->cfg;
	const px_cred *leak;
	char buf[8192], detail[PX_MAX_HOST + 160];
	ssize_t n;

	if (!cfg->has_placeholders || c->tunnel_peeked)
		return false;
	n = recv(c->cfd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return false;
	c->tunnel_peeked = true;
	leak = px_placeholder_find(cfg, buf, (size_t)n);
	if (!leak)
		return false;
	px_placeholder_tunnel_detail(leak, detail, sizeof(detail));
	px_conn_emit_denied(c, "credential-exfiltration", detail);
	return true;
}

ssize_t px_client_recv(conn *c, void *buf, size_t n)
{
	int r, err;

	/* an HTTP/2 stream's connection is inspected, its socketpair clear */
	if (!c->inspected || !c->cssl)
		return recv(c->cfd, buf, n, MSG_DONTWAIT);
	c->cssl_want_read = c->cssl_want_write = 0;
	r = SSL_read(c->cssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
	if (r > 0) {
		/* decrypted bytes left in OpenSSL: epoll cannot tell, so wake */
		if (SSL_pending(c->cssl) > 0 && c->state == CS_FORWARD)
			c->wake_ns = px_now_ns();
		return r;
	}
	err = SSL_get_error(c->cssl, r);
	ERR_clear_error();
	switch (err) {
	case SSL_ERROR_WANT_READ:
		c->cssl_want_read = 1;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		c->cssl_want_write = 1;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	default:
		errno = ECONNRESET;
		return -1;
	}
}

ssize_t px_client_send(conn *c, const void *buf, size_t n)
{
	int r, err;

	if (!c->inspected || !c->cssl)
		return send(c->cfd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	c->cssl_want_read = c->cssl_want_write = 0;
	r = SSL_write(c->cssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
	if (r > 0)
		return r;
	err = SSL_get_error(c->cssl, r);
	ERR_clear_error();
	if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
		if (err == SSL_ERROR_WANT_WRITE)
			c->cssl_want_write = 1;
		else
			c->cssl_want_read = 1;
		errno = EAGAIN;
		return -1;
	}
	errno = EPIPE;
	return -1;
}

void px_client_shutdown(conn *c)
{
	/* close_notify tells a close-delimited body ended, not was cut */
	if (c->inspected && c->cssl) {
		(void)SSL_shutdown(c->cssl);
		ERR_clear_error();
	}
	(void)shutdown(c->cfd, SHUT_WR);
}

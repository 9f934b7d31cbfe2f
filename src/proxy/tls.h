/* SPDX-License-Identifier: MIT */
/*
 * Upstream TLS for credentialed hosts (OpenSSL 3). The proxy originates TLS
 * itself so the credential it adds never crosses the sandbox boundary. Full
 * verification: chain against the system store plus the policy's upstream_ca,
 * host name (SSL_set1_host), SNI.
 *
 * Only a policy with an "upstream": "https" credential needs any of this, and
 * only its worker sets it up (docs/proxy.md, "Upstream TLS trust").
 */
#pragma once

#include <openssl/ssl.h>
#include <stdbool.h>
#include <limits.h>
#include <stddef.h>

#define PX_TRUST_MAX_DIRS 16u

/*
 * The trust of the client context, made while the caller can read files:
 * OpenSSL initialised with the system's configuration file (its TLS
 * settings apply to contexts made later), extra_ca (a PEM file, may be
 * NULL) loaded now, and the system store either looked up one CA at a time
 * in OpenSSL's hashed directory when a chain is verified
 * (lazy_system_store: the caller lets the sandboxed worker read
 * px_tls_trust_dirs()), or, without that, the whole bundle file parsed now.
 * -EINVAL: extra_ca cannot be loaded; -ENOMEM.
 */
int px_tls_trust_new(const char *extra_ca, bool lazy_system_store, X509_STORE **ret);
/*
 * The client context over trust (shared: a reference is taken), TLS 1.2 at
 * least, peers verified. Reads no file: made at the first upstream TLS
 * connection, after the worker's sandboxing, since OpenSSL's method tables
 * cost a millisecond of CPU that a sandbox which makes no such connection
 * need not wait for. -ENOMEM, -EIO.
 */
int px_tls_ctx_new(X509_STORE *trust, SSL_CTX **ret);
/*
 * The directories a lazily-read system store opens files in: the hashed
 * directory and every directory its links resolve into (absolute, resolved
 * paths, at most max). Returns how many, 0 when there is no such directory.
 */
int px_tls_trust_dirs(char (*dirs)[PATH_MAX], size_t max);
/* Client-side SSL over fd for host (name or IP literal). */
int px_tls_new(SSL_CTX *ctx, int fd, const char *host, SSL **ret);
/* Maps the result of an SSL_* call: >0 done, -EAGAIN with *want_read /
 * *want_write set, -ECONNRESET on clean EOF, -EPROTO on TLS or verify errors. */
int px_tls_result(SSL *ssl, int ret, int *want_read, int *want_write);
/* What a failed handshake says, for the refusal: the certificate's verify
 * error ("hostname mismatch", "self-signed certificate", ...) when there is one. */
void px_tls_describe_failure(SSL *ssl, char *buf, size_t size);

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
 * The client context. extra_ca (a PEM file, may be NULL) is loaded now. The
 * system store is either looked up one CA at a time in OpenSSL's hashed
 * directory when a chain is verified (lazy_system_store: the caller lets the
 * sandboxed worker read px_tls_trust_dirs()), or, without that, the whole
 * bundle file is parsed now. -EINVAL: extra_ca cannot be loaded.
 */
int px_tls_ctx_new(const char *extra_ca, bool lazy_system_store, SSL_CTX **ret);
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

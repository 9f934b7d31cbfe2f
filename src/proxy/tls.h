/* SPDX-License-Identifier: MIT */
/*
 * Upstream TLS for credentialed hosts (OpenSSL 3). The proxy originates TLS
 * itself so the credential it adds never crosses the sandbox boundary. Full
 * verification: chain against the system store plus the policy's upstream_ca,
 * host name (SSL_set1_host), SNI.
 */
#pragma once

#include <openssl/ssl.h>

/* Loads every CA now (the worker cannot open files once sandboxed): the
 * system bundle file, never the hashed directory that is read lazily. */
int px_tls_ctx_new(const char *extra_ca, SSL_CTX **ret);
/* Client-side SSL over fd for host (name or IP literal). */
int px_tls_new(SSL_CTX *ctx, int fd, const char *host, SSL **ret);
/* Maps the result of an SSL_* call: >0 done, -EAGAIN with *want_read /
 * *want_write set, -ECONNRESET on clean EOF, -EPROTO on TLS or verify errors. */
int px_tls_result(SSL *ssl, int ret, int *want_read, int *want_write);

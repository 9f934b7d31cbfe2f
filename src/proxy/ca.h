/* SPDX-License-Identifier: MIT */
/*
 * The per-sandbox certificate authority of TLS inspection (docs/proxy.md,
 * "TLS inspection"). The supervisor makes it before the sandbox is built
 * (the sandbox must trust it from its first process on) and hands the key
 * to the worker only through the sealed configuration memfd; the worker
 * mints one leaf per inspected host, cached. OpenSSL 3, EC P-256, SHA-256.
 */
#pragma once

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PX_CA_MAX_LEAVES 256u /* cached leaves; the oldest is minted again */

typedef struct px_ca px_ca;

/*
 * A new CA valid from a minute ago for lifetime_s seconds. names (may be
 * empty) become critical name constraints: "*.domain" permits the
 * subdomains of domain, a name itself and its subdomains; an IP literal
 * among them drops the constraints (they would need the address range).
 */
int px_ca_generate(uint64_t lifetime_s, const char *const *names, size_t n_names, px_ca **ret);
/* The certificate (PEM) for the sandbox's trust bundle. Allocates. */
int px_ca_cert_pem(const px_ca *ca, char **ret_pem);
/* The private key (PKCS#8 PEM), for the sealed configuration only. The
 * caller wipes it (explicit_bzero) before freeing it. */
int px_ca_key_pem(const px_ca *ca, char **ret_pem);
/* Worker side: the CA back from its two PEMs. -EINVAL when they do not
 * parse or the key is not the certificate's. */
int px_ca_load(const char *cert_pem, const char *key_pem, px_ca **ret);
/* Makes the one key all leaves share (once). */
int px_ca_prepare(px_ca *ca);
/*
 * The leaf for host (a name or an IP literal), minted on first use and
 * cached (SAN DNS or IP, serverAuth, valid as long as the CA). The
 * certificate and key stay owned by ca. Returns 0 with *ret_minted true when
 * this call minted it, or -ENOMEM / -EINVAL.
 */
int px_ca_leaf(px_ca *ca, const char *host, X509 **ret_cert, EVP_PKEY **ret_key, bool *ret_minted);
px_ca *px_ca_free(px_ca *ca);

/* SPDX-License-Identifier: MIT */
/*
 * Why the low-level interface: in OpenSSL 3 the first EVP digest of a
 * process fetches and builds the default provider's algorithm tables, about
 * 3.5 million instructions — more than a third of `sandcap run`'s own
 * start-up. SHA256_Init/Update/Final are the same implementation without
 * the fetch; OpenSSL 3 keeps them (deprecated, not removed).
 *
 * Why HMAC by hand: OpenSSL 3's HMAC (EVP_MAC, EVP_Q_mac, even the old
 * HMAC()) goes through that provider layer, and linking it brings about
 * 380 KiB of tables that the loader relocates, so they are private memory
 * in every supervisor for its sandbox's whole life (docs/performance.md,
 * "Density"). RFC 2104 over the hash above is a dozen lines; the unit tests
 * check it against RFC 4231's vectors and against OpenSSL's EVP_MAC.
 */
#define OPENSSL_API_COMPAT 10101
#include "base/sha256.h"

#include <openssl/sha.h>
#include <string.h>

_Static_assert(sizeof(sha256_ctx) >= sizeof(SHA256_CTX), "sha256_ctx holds a SHA256_CTX");
_Static_assert(_Alignof(sha256_ctx) >= _Alignof(SHA256_CTX), "and is aligned for it");

void sha256_init(sha256_ctx *c)
{
	SHA256_Init((SHA256_CTX *)c);
}

void sha256_update(sha256_ctx *c, const void *data, size_t len)
{
	SHA256_Update((SHA256_CTX *)c, data, len);
}

void sha256_final(sha256_ctx *c, uint8_t out[SHA256_BYTES])
{
	SHA256_Final(out, (SHA256_CTX *)c);
	explicit_bzero(c, sizeof(*c));
}

void sha256_parts(const void *a, size_t alen, const void *b, size_t blen, const void *c,
		  size_t clen, uint8_t out[SHA256_BYTES])
{
	sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, a, alen);
	sha256_update(&ctx, b, blen);
	sha256_update(&ctx, c, clen);
	sha256_final(&ctx, out);
}

#define HMAC_BLOCK 64 /* SHA-256's block size */

void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
		 uint8_t out[SHA256_BYTES])
{
	uint8_t k[HMAC_BLOCK] = {0}, pad[HMAC_BLOCK], inner[SHA256_BYTES];
	sha256_ctx c;

	if (key_len > HMAC_BLOCK)
		sha256_parts(key, key_len, "", 0, "", 0, k);
	else if (key_len)
		memcpy(k, key, key_len);
	for (size_t i = 0; i < HMAC_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&c);
	sha256_update(&c, pad, sizeof(pad));
	sha256_update(&c, msg, msg_len);
	sha256_final(&c, inner);
	for (size_t i = 0; i < HMAC_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_parts(pad, sizeof(pad), inner, sizeof(inner), "", 0, out);
	explicit_bzero(k, sizeof(k));
	explicit_bzero(pad, sizeof(pad));
	explicit_bzero(inner, sizeof(inner));
}

bool mem_equal_ct(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;

	for (size_t i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

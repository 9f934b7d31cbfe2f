/* SPDX-License-Identifier: MIT */
/*
 * Why the low-level interface: in OpenSSL 3 the first EVP digest of a
 * process fetches and builds the default provider's algorithm tables, about
 * 3.5 million instructions — more than a third of `sandcap run`'s own
 * start-up. SHA256_Init/Update/Final are the same implementation without
 * the fetch; OpenSSL 3 keeps them (deprecated, not removed). HMAC and TLS
 * still go through EVP, where they are needed.
 */
#define OPENSSL_API_COMPAT 10101
#include "base/sha256.h"

#include <openssl/sha.h>

void sha256_parts(const void *a, size_t alen, const void *b, size_t blen, const void *c,
		  size_t clen, uint8_t out[SHA256_BYTES])
{
	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, a, alen);
	SHA256_Update(&ctx, b, blen);
	SHA256_Update(&ctx, c, clen);
	SHA256_Final(out, &ctx);
}

/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 and HMAC-SHA256 with OpenSSL's low-level SHA-256 alone: no EVP,
 * no provider. Safe to call from any thread; never allocates.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32

/* OpenSSL's SHA256_CTX, whose size sha256.c checks. */
typedef struct sha256_ctx {
	uint64_t opaque[14];
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t out[SHA256_BYTES]);

void sha256_parts(const void *a, size_t alen, const void *b, size_t blen, const void *c,
		  size_t clen, uint8_t out[SHA256_BYTES]);

/* HMAC-SHA256 (RFC 2104) of msg under key (any length). */
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
		 uint8_t out[SHA256_BYTES]);

/* a and b equal, in a time that does not depend on where they differ. */
bool mem_equal_ct(const void *a, const void *b, size_t len);

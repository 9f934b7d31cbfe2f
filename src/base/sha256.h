/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 of up to three concatenated parts, with OpenSSL's SHA-256.
 * Safe to call from any thread; never allocates.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32

void sha256_parts(const void *a, size_t alen, const void *b, size_t blen, const void *c,
		  size_t clen, uint8_t out[SHA256_BYTES]);

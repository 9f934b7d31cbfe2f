/* SPDX-License-Identifier: MIT */
/*
 * Base64 (RFC 4648, with padding), for the small exec front, which links no
 * OpenSSL (src/cli/front.c); elsewhere OpenSSL's EVP_EncodeBlock() does it.
 * libc only.
 */
#pragma once

#include <stddef.h>

/* The length of len bytes encoded, without the NUL. */
#define B64_LEN(len) (4 * (((len) + 2) / 3))

/* Writes B64_LEN(len) characters and a NUL to out; returns B64_LEN(len). */
size_t b64_encode(const void *in, size_t len, char *out);

/* SPDX-License-Identifier: MIT */
/*
 * Base64 (RFC 4648) in its two forms here: the standard alphabet with
 * padding ("base64": the API's stdin and output, the exec front's
 * --ndjson, a CSP hash) and the URL alphabet without padding
 * ("base64url": tokens). The decoders are strict: only the alphabet,
 * padding only where it belongs, the unused low bits zero, so that a byte
 * string has one encoding. libc only (the exec front links it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length of len bytes encoded, without the NUL. */
#define B64_LEN(len)	((size_t)4 * (((len) + 2) / 3))
#define B64URL_LEN(len) ((len) / 3 * 4 + ((len) % 3 ? (len) % 3 + 1 : 0))

/* Writes B64_LEN(len) (B64URL_LEN(len)) characters and a NUL to out;
 * returns that length. */
size_t b64_encode(const void *in, size_t len, char *out);
size_t b64url_encode(const void *in, size_t len, char *out);

/* Whether c is of the base64url alphabet. */
bool b64url_is_char(int c);

/* Decodes in[0..len) into *ret (malloc'd, a NUL after the *ret_len
 * bytes). -EBADMSG for what is not the one encoding of some bytes,
 * -ENOMEM. */
int b64_decode(const char *in, size_t len, uint8_t **ret, size_t *ret_len);
int b64url_decode(const char *in, size_t len, uint8_t **ret, size_t *ret_len);

/* SPDX-License-Identifier: MIT */
/* Hexadecimal digits. Pure, libc only. */
#pragma once

#include <stdint.h>

/* A digit's value plus one, 0 for any other byte: a table, because the
 * audit verifier decodes 128 digits a record. */
extern const uint8_t hex_value_plus1[256];

/* The value of hex digit c (0-9, a-f, A-F), or -1; c is a byte or EOF. */
static inline int hex_value(int c)
{
	return c >= 0 && c < 256 ? hex_value_plus1[c] - 1 : -1;
}

/* SPDX-License-Identifier: MIT */
/* Hexadecimal digits. Pure, libc only. */
#pragma once

/* The value of hex digit c (0-9, a-f, A-F), or -1. */
int hex_value(int c);

/* SPDX-License-Identifier: MIT */
/*
 * Strict parsers for the policy's human units. Return 0 or -EINVAL/-ERANGE.
 * Sizes: "64M", "512K", "1G", "4096" (plain bytes); K M G T are powers of 1024.
 * Durations: "30s", "500ms", "2m", "1h". Rates: "20/s", "100/m".
 * Bandwidth: a size followed by "/s" ("1M/s").
 */
#pragma once

#include <stdint.h>

int parse_size(const char *s, uint64_t *ret);
int parse_duration_ns(const char *s, uint64_t *ret);
int parse_rate(const char *s, uint64_t *ret_count, uint64_t *ret_per_ns);
int parse_bandwidth(const char *s, uint64_t *ret_bytes_per_sec);

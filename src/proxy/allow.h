/* SPDX-License-Identifier: MIT */
/*
 * Allowlist matching and the private-address classifier. Pure: no I/O.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "proxy/http.h"
#include "proxy/px.h"

/*
 * Is the destination (host as parsed from the request target, port, method)
 * allowed by the egress rules? Returns the index of the matching rule, or
 * -EACCES with *reterr_reason one of "host-not-allowed", "port-not-allowed",
 * "method-not-allowed" (the nearest miss: a rule for the host and port that
 * refuses the method says so, whatever the other rules say), "ip-literal"
 * (an address no rule names).
 *
 * Host patterns: an exact name; "*.domain" matches strict subdomains only,
 * never "domain" itself. IP-literal targets match only a rule naming the same
 * address or a CIDR containing it. allow_private plays no part here: it only
 * lifts the private-address check, after this, for what a rule allows.
 * A rule listing methods but not CONNECT refuses CONNECT: a tunnel would hide
 * the methods it carries.
 */
int px_allow_match(const px_config *cfg, const char *host, px_host_kind kind, uint16_t port,
		   uint32_t method_bit, bool is_connect, const char **reterr_reason);
/*
 * px_allow_match() that also holds the request to the rules' paths
 * (policy/http-path.h): norm_path is the normalised path, NULL when it did not
 * normalise (then no rule with paths matches). A rule with paths refuses
 * CONNECT. The nearest miss "path-not-allowed" comes after the method's.
 */
int px_allow_match_path(const px_config *cfg, const char *host, px_host_kind kind, uint16_t port,
			uint32_t method_bit, bool is_connect, const char *norm_path,
			const char **reterr_reason);

/* May a rule let the agent reach name (a DNS name, lower-case), on some
 * port? The index of the first rule whose host pattern matches it, or
 * -EACCES. What the sandbox resolver answers (docs/proxy.md). */
int px_allow_name(const px_config *cfg, const char *name);

/* True for every address that is not globally routable: loopback, RFC 1918,
 * link-local (169.254/16, fe80::/10), CGNAT 100.64/10, multicast, unspecified,
 * broadcast and reserved 240/4, ULA fc00::/7, and the IPv4-mapped ::ffff:0:0/96,
 * IPv4-compatible ::/96, NAT64 64:ff9b::/96 and 6to4 2002::/16 forms of these.
 * addr is in network byte order (4 or 16 bytes). */
bool px_addr_is_private(int family, const uint8_t *addr);

bool px_cidr_contains(const plan_cidr *c, int family, const uint8_t *addr);

/* May the proxy connect to this resolved address? (public, or covered by allow_private) */
bool px_addr_permitted(const px_config *cfg, int family, const uint8_t *addr);

/* Parses an IPv4/IPv6 literal (no brackets). Returns 0 or -EINVAL. */
int px_parse_ip(const char *s, int *ret_family, uint8_t ret_addr[16]);

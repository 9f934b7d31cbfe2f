/* SPDX-License-Identifier: MIT */
/*
 * Synthetic addresses (docs/proxy.md, "DNS inside the sandbox"): the sandbox
 * resolver answers an allowed name with an address of its own, one per name for
 * this sandbox, so that a later connection to that address says which name it
 * is for. Nothing real is ever given to the agent. Pure: no I/O.
 *
 *   IPv4: 198.18.0.0/15 (RFC 2544 benchmarking, never globally routed);
 *         the name with index i gets 198.18.0.0 + 1 + i.
 *   IPv6: fd73:616e:6463:6170::/64 (a ULA /64: "sandcap" in its global and
 *         subnet ids); the name with index i gets that prefix + 1 + i.
 *
 * The table lives in the memfd that outlives one worker (px_seed), so a
 * restarted worker maps the same addresses to the same names.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "proxy/dns.h"
#include "proxy/http.h"

#define PX_SYNTH_MAX 4096u /* names per sandbox; more are refused */

typedef struct px_synth_entry {
	uint32_t hash; /* of name, to skip most comparisons */
	char name[PX_MAX_HOST + 1];
} px_synth_entry;

typedef struct px_synth_table {
	uint32_t n; /* entries [0, n) are complete: n is raised after an entry is written */
	uint32_t reserved;
	px_synth_entry e[PX_SYNTH_MAX];
} px_synth_table;

/* The index of name (lower-case, at most PX_MAX_HOST bytes), assigning the
 * next one when it has none yet. Returns 0, -ENOSPC when the table is full,
 * -EINVAL for an empty or too long name. */
int px_synthetic_assign(px_synth_table *t, const char *name, uint32_t *ret_index);

/* The synthetic address of index, family AF_INET or AF_INET6. */
void px_synthetic_addr(uint32_t index, int family, px_addr *ret);

/* Whether a is in one of the synthetic ranges (assigned or not). An
 * IPv4-mapped IPv6 address counts as its IPv4 address. */
bool px_synthetic_in_range(const px_addr *a);

/* The name a synthetic address was assigned to, or NULL when a is not one
 * (outside the ranges, or not assigned to any name yet). */
const char *px_synthetic_name(const px_synth_table *t, const px_addr *a);

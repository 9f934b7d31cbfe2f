/* SPDX-License-Identifier: MIT */
/*
 * Capability tokens (DESIGN.md section 7): claims + caveats, each link
 * sig_i = HMAC-SHA256(sig_{i-1}, caveat_i), sig_0 = HMAC-SHA256(key, claims).
 * The effective plan is the intersection of the claims and every caveat.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "policy/plan.h"

#define TK_KEY_LEN 32

typedef struct tk_info {
	char id[64];
	unsigned n_caveats;
	time_t iat;
	time_t exp;
} tk_info;

int tk_key_load(const char *path, uint8_t key[TK_KEY_LEN]);
/* Verifies token against key at time now and returns the effective plan
 * (limits.wall capped by the remaining lifetime). */
int tk_verify(const char *token, const uint8_t key[TK_KEY_LEN], time_t now, sc_plan **ret_plan,
	      tk_info *ret_info, sc_diag *reterr_diag);

/* SPDX-License-Identifier: MIT */
/*
 * Delegation receipts (docs/tokens.md, "Receipts"): what each spawn.start
 * carries so that an auditor can recompute, offline and without the token
 * root key, that a sub-sandbox's capability set lies within its parent's.
 */
#pragma once

#include <jansson.h>
#include <stdio.h>

#include "audit/audit.h"
#include "policy/plan.h"

/* SHA-256 of a plan object dumped compact, keys sorted, ASCII: the bytes
 * of a plan as the log holds it in sandbox.start and spawn.start. */
int au_plan_digest(json_t *plan, char ret_hex[AU_HASH_HEX + 1]);

/*
 * The receipt of a child started from child_token, which extends the
 * parent's base token (base_caveats caveats) by caveats of its own:
 * {"parent_digest", "child_digest", "caveats": [the child's own caveats,
 * decoded]}. NULL when out of memory or for a malformed token.
 */
json_t *au_receipt_build(const sc_plan *parent, const sc_plan *child, const char *child_token,
			 unsigned base_caveats);

typedef struct au_receipts_info {
	uint64_t checked;   /* spawn.start receipts recomputed */
	unsigned max_depth; /* of the tree they describe */
} au_receipts_info;

/*
 * Reads a log and checks every spawn.start's receipt: its parent's plan
 * (the root's sandbox.start, or the parent's own spawn.start) and its own
 * plan have the recorded digests, and the child's plan is within the
 * parent's (plan_check_narrower, and intersecting with the parent changes
 * nothing). The chain itself is not checked here (au_verify does that).
 * 0, -EBADMSG with the 1-based line and the reason, -ENOMEM, -EIO.
 */
int au_receipts_check(FILE *in, au_receipts_info *ret, size_t *reterr_line, char *reason,
		      size_t reason_len);

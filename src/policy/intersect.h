/* SPDX-License-Identifier: MIT */
/*
 * Intersection of capability sets: what token attenuation and delegation
 * compute (docs/tokens.md, "Intersection"). Nothing here prints.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "policy/plan.h"

/*
 * The intersection of two plans (docs/tokens.md, "Intersection"): the result
 * grants nothing that parent does not grant, whatever caveat says. caveat is
 * a complete plan (a fragment merged over parent's canonical JSON). Pure: no
 * I/O; the result is not re-validated (tk_verify does that with the policy
 * parser). -ENOMEM only.
 */
int plan_intersect(const sc_plan *parent, const sc_plan *caveat, sc_plan **ret);

/*
 * Why caveat is not a narrowing of parent: 0 when every value caveat states is
 * within parent, else -EPERM with a sentence in reason ("grant /data rw is
 * not inside the token's grants"). Pure.
 */
int plan_check_narrower(const sc_plan *parent, const sc_plan *caveat, char *reason,
			size_t reason_size);

/*
 * Builds the complete caveat plan for fragment (a JSON object following the
 * policy schema, any key omitted) over parent: the fragment's keys replace
 * parent's canonical values (objects fs, fs.tmp, net, limits, identity, audit
 * and spawn are merged key by key; everything else is replaced whole), and
 * the result goes through plan_parse(). Credentials the fragment does not
 * list are inherited only for hosts its egress still allows.
 */
int plan_apply_fragment(const sc_plan *parent, json_t *fragment, sc_plan **ret,
			sc_diag *reterr_diag);

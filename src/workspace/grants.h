/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's hooks for cow grants and rw quotas (docs/architecture.md,
 * "Workspaces"). Library code: never prints.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ns/ns.h"
#include "policy/plan.h"

typedef struct ws_run ws_run;

/*
 * Before the child exists (root: sources from ns_open_sources(), agent_uid
 * the agent's host uid and gid): every cow
 * grant's detached tree in sources is replaced by its overlay, every rw
 * grant with a quota gets project projid's limit. *ret stays NULL when the
 * plan has neither. A quota the host cannot enforce is refused unless the
 * grant says best_effort: then it is named in not_enforced. Unprivileged,
 * cow grants are refused.
 */
int ws_run_setup(const sc_plan *p, ns_source *sources, bool unpriv, uid_t agent_uid,
		 const char *sandbox_id, uint32_t projid, ws_run **ret, char *not_enforced,
		 size_t ne_len, sc_diag *reterr_diag);
/* For sandbox.start: [{path, mode, quota, quota_state}], or NULL. */
json_t *ws_run_start_json(const ws_run *w);
/* Once the sandbox is gone: quotas lifted, every cow grant's upper layer
 * kept under state_dir. ids: the workspace ids, space-separated;
 * *ret_json: [{id, files, bytes}] for sandbox.exit (NULL without w).
 * note: what a kept workspace lacks (subtrees refused), else "". */
int ws_run_finish(ws_run *w, const char *state_dir, const char *sandbox_id, const char *audit_log,
		  char *ids, size_t ids_len, char *note, size_t note_len, json_t **ret_json,
		  sc_diag *reterr_diag);
ws_run *ws_run_free(ws_run *w); /* NULL-safe; lifts quotas still set */

/* While the sandbox runs (a session): the ids of its cow workspaces, as a
 * JSON array (empty without w), and the overlay of one of them (NULL when
 * id is none of them). */
json_t *ws_run_ids_json(const ws_run *w, const char *sandbox_id);
struct ws_cow *ws_run_cow(ws_run *w, const char *sandbox_id, const char *id);

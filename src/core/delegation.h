/* SPDX-License-Identifier: MIT */
/*
 * Delegation from inside (docs/tokens.md, "Delegation"): a sandbox whose plan
 * has spawn.max_depth > 0 gets one unix socket, NS_SPAWN_SOCKET, through
 * which it asks its supervisor to run a sub-agent with a narrower capability
 * set. The supervisor appends the requested fragment as a caveat to the
 * parent's token, verifies that the result extends the parent's token and
 * runs its effective plan in a sub-supervisor (our own binary, exec'd fresh,
 * core/spawn.h) placed in the parent's cgroup, so the parent's limits bound
 * the children too. Every event of the child reaches the parent's audit log
 * through the parent supervisor. A feature of the plan in every mode: the
 * supervisor base serves it (core/supervisor.h).
 *
 * Library code: never prints; errors are -errno.
 */
#pragma once

#include <jansson.h>

#include "cgroup/cgroup.h"
#include "policy/plan.h"

#define SPAWN_MAX_REQUEST (128u << 10) /* one request message from the agent */
#define SPAWN_MAX_STDIN	  (64u << 10)  /* its "stdin" string */
#define SPAWN_MAX_ARGV	  256u
#define SPAWN_MAX_ARG	  4096u
#define SPAWN_MAX_OUTPUT  (16u << 10) /* of stdout and of stderr, in the reply */
#define SPAWN_MAX_SLOTS	  16u	      /* connections waiting or children running */
#define SPAWN_MAX_MSG	  (2u << 20)  /* supervisor <-> sub-supervisor message */

typedef struct spawn_server spawn_server;

/* Takes ownership of data (like au_emit). */
typedef void (*spawn_emit_fn)(const char *event, json_t *data, void *userdata);

/* Creates the listening socket in a fresh root-only directory under /run and
 * the token every child's token extends: token (the verified token plan
 * came from, NULL when it came from a policy) with a caveat for what plan
 * runs with, or a per-run token of plan. plan and userdata must outlive
 * the server. */
int spawn_server_new(const sc_plan *plan, const char *sandbox_id, const char *token,
		     spawn_emit_fn emit, void *userdata, spawn_server **ret, sc_diag *reterr_diag);
/* cg (may be NULL; must outlive the server) is the parent sandbox's cgroup,
 * under which every sub-supervisor is placed (cg_attach_delegate). Set
 * before the first dispatch; NULL-safe on srv. */
void spawn_server_set_cgroup(spawn_server *srv, cg_handle *cg);
/* Host path of the socket, to be bound at NS_SPAWN_SOCKET. */
const char *spawn_server_socket(const spawn_server *srv);
/* An epoll fd: readable when spawn_server_dispatch() has work. */
int spawn_server_fd(const spawn_server *srv);
/* Accepts, answers and forwards whatever is ready; never blocks for long. */
void spawn_server_dispatch(spawn_server *srv);
/* Kills every sub-supervisor still running (their sandboxes die with the
 * parent's cgroup), removes the socket. NULL-safe, returns NULL. */
spawn_server *spawn_server_free(spawn_server *srv);
/* Removes the socket directories of supervisors that were SIGKILLed (no
 * one bound to the socket, unchanged for a minute). Returns how many. */
unsigned spawn_sweep_stale(void);

/* The supervisor <-> sub-supervisor channel, a SEQPACKET pair. One whole
 * message of at most max bytes, NUL-terminated: 1; 0 with *ret NULL on EOF;
 * -EMSGSIZE (message consumed) when too large. */
int spawn_recv_msg(int fd, size_t max, char **ret, size_t *ret_len);
/* One JSON message (takes o). 0 or -errno. */
int spawn_send_json(int fd, json_t *o);

/* SPDX-License-Identifier: MIT */
/*
 * The egress proxy worker: a separate, freshly exec'd, unprivileged process
 * that accepts on a listener living in the sandbox's netns and connects out
 * from the host's. It reports every request as an event datagram (one JSON
 * object {"event": "...", "data": {...}} per SOCK_SEQPACKET message) that the
 * supervisor validates before it reaches the audit log.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy/plan.h"

#define PX_LISTEN_PORT 3128

/* Supervisor side: starts the worker with listen_fd (consumed). Returns the
 * worker pid and the event socket. Secrets (credential values) are read here,
 * in the supervisor, and passed through a sealed memfd, never via argv/env. */
int px_spawn(const sc_plan *plan, int listen_fd, pid_t *ret_pid, int *ret_event_fd);

/* Worker side: entry point of the exec'd "sandcap-proxy" process. fds 3, 4, 5
 * are the listener, the event socket and the configuration memfd. Returns an
 * exit status. */
int px_worker_main(int argc, char **argv);

#define PX_EVENT_MAX_BYTES  8192u /* one event datagram */
#define PX_EVENT_MAX_STRING 2048u /* one string field inside it */

/*
 * Supervisor side: validates one event datagram from the worker, which is less
 * trusted than the supervisor. Accepts only {"event": NAME, "data": {...}} with
 * NAME one of net.request, net.denied, net.tunnel.close, limit.hit, the data
 * an object of that event's known keys, each a bounded string or a
 * non-negative integer. On success *ret_event (malloc'd) and *ret_data (a new
 * reference) are set. Returns 0, -EBADMSG or -ENOMEM. Never logs.
 */
int px_event_parse(const char *buf, size_t len, char **ret_event, json_t **ret_data);

/* SPDX-License-Identifier: MIT */
/*
 * The agent's seccomp profile (profile.c: one readable table) and the
 * supervisor-side user-notification handler that audits execs and refused
 * dangerous syscalls. Library code: never prints; errors are -errno.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "policy/plan.h"

/* Loads the filter into the calling thread (must be last before exec; needs
 * no_new_privs). With exec or denied-syscall auditing in the plan, returns a
 * user-notification fd in *ret_notify_fd, else -1. */
int sf_apply(const sc_plan *plan, int *ret_notify_fd);

/* Called for each event the handler produces; data is owned by the callee. */
typedef void (*sf_event_cb)(const char *event, json_t *data, void *userdata);
/* Handles one pending notification on notify_fd (call when readable). */
int sf_notify_handle(int notify_fd, sf_event_cb cb, void *userdata);

/* "active", or why not, for doctor and sandbox.start. */
int sf_probe(char *reason, size_t reason_len);

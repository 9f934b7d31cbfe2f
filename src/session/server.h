/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's side of a session (docs/sessions.md): the control
 * socket clients connect to, the channel to pid 1 (core/ctl.h), the exec
 * and idle clocks, the per-command audit records: a mode of the supervisor
 * base (core/supervisor.h), whose hooks ss_serve() hands to sc_run().
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "core/supervisor.h"
#include "session/session.h"

typedef struct ss_server ss_server;

/* The session's supervisor, in the process sc_session_start() forked:
 * takes the session directory dirfd (made, locked by lock_fd) and reports
 * readiness (or why not) on ready_fd. Returns the process's exit status. */
int ss_serve(const sc_session_start_opts *o, const char *name, int dirfd, int lock_fd,
	     int ready_fd);

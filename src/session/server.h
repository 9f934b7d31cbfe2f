/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's side of a session (docs/sessions.md): the control
 * socket clients connect to, the channel to pid 1 (core/ctl.h), the exec
 * and idle clocks, the per-command audit records. Served from sc_run()'s
 * event loop (core/run.c calls ss_attach, ss_dispatch, ss_sandbox_gone).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "cgroup/cgroup.h"
#include "core/run.h"
#include "session/session.h"

typedef struct ss_server ss_server;

/* What sc_run() lends the server while the sandbox lives. */
typedef struct ss_host {
	int ep; /* its epoll loop: our fds are added with data.u64 = tag << 32 | fd */
	uint32_t tag;
	int ctl;       /* the supervisor's end of pid 1's control channel; ours from now */
	pid_t pid;     /* pid 1, in the host's pid namespace */
	cg_handle *cg; /* may be NULL */
	const char *sandbox_id, *audit_path;
	struct ws_run *ws; /* the cow workspaces, may be NULL */
	int (*emit)(void *userdata, const char *event, json_t *data); /* takes data */
	void (*start_wall)(void *userdata); /* arms limits.wall (pooled sessions) */
	void *userdata;
} ss_host;

/* Enlarges both send buffers of pid 1's channel (before the clone): each
 * side blocks in send, and a burst of results must not fill them. */
void ss_channel_room(const int pair[2]);
void ss_attach(ss_server *s, const ss_host *h);
void ss_dispatch(ss_server *s, int fd, uint32_t events);
/* pid 1 is gone: what it said last, then every request still open ends. */
void ss_sandbox_gone(ss_server *s, bool timed_out);

/* The session's supervisor, in the process sc_session_start() forked:
 * takes the session directory dirfd (made, locked by lock_fd) and reports
 * readiness (or why not) on ready_fd. Returns the process's exit status. */
int ss_serve(const sc_session_start_opts *o, const char *name, int dirfd, int lock_fd,
	     int ready_fd);

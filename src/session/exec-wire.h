/* SPDX-License-Identifier: MIT */
/*
 * The fixed form of an exec on a session's client socket (docs/sessions.md,
 * "The client protocol"): instead of JSON, a client may send its exec as
 * one core/ctl.h message, and is then answered in that form. It is what
 * the small `sandcap exec` front speaks (src/cli/front.c), which carries
 * no JSON library; the supervisor checks it as it checks the JSON form
 * (session/request.h). libc only.
 *
 *   request  CTL_EXEC    flags CTL_TTY; value rows << 16 | cols (tty);
 *                        n_argv; payload cwd\0 argv...\0 env...\0
 *                        (cwd "" for fs.workdir)
 *   later    CTL_SIGNAL  value: a signal for the command's process group
 *   answer   CTL_STARTED id, with the fds (stdin's write end, stdout's and
 *                        stderr's read ends; or the pty master); or err (a
 *                        positive errno) and the reason as payload
 *   result   CTL_EXITED  value: the exit status (as `sandcap exec`'s);
 *                        mode: the signal that ended it (0: none); flags:
 *                        SX_*; bytes: its duration in ms; err: why it could
 *                        not start (then value is 125)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ctl.h"

#define SX_EXEC_WALL	 1u /* limits.exec_wall ended it */
#define SX_WALL		 2u /* the session's limits.wall ended it */
#define SX_SESSION_ENDED 4u /* the session ended while it ran */
#define SX_MEMORY	 8u /* the memory limit OOM-killed a process while it ran */
#define SX_MAX_ENV	 256u

typedef struct sx_req {
	char *const *argv;
	const char *cwd;     /* NULL: the policy's workdir */
	char *const *env;    /* "KEY=VALUE", NULL-terminated, may be NULL */
	bool tty;	     /* a pty (opened by the supervisor) instead of pipes */
	uint16_t rows, cols; /* its first size, with tty */
} sx_req;

typedef struct sx_handle {
	int conn;		  /* the result comes on it; closing it kills the command */
	int stdin_fd;		  /* write end; close it for end of file */
	int stdout_fd, stderr_fd; /* read ends */
	int pty_fd;		  /* with tty: the master; the three above are -1 */
} sx_handle;

typedef struct sx_result {
	int exit_code;	/* as `sandcap run`'s: 128+N signal N, 124 a wall clock */
	int signal;	/* 0 when it exited */
	unsigned flags; /* SX_* */
	uint64_t duration_ms;
	int err; /* > 0: it could not be started (an errno) */
} sx_result;

/* The fds of an exec's first answer into h: 3 (stdin, stdout, stderr) or,
 * with tty, 1 (the pty master). -EPROTO (and the fds closed) for another
 * count. */
int sx_take_fds(sx_handle *h, bool tty, const int *fds, size_t n);
/* Starts req in session name: 0, or -EREMOTEIO with the supervisor's
 * reason in why (the session refused it), or -errno (-ENOENT: no such
 * session). The fds in *ret are the caller's. */
int sx_exec(const char *name, const sx_req *req, sx_handle *ret, char *why, size_t why_len);
/* Sends sig to the command's process group. */
int sx_exec_signal(const sx_handle *h, int sig);
/* Waits for the result; closes h->conn. */
int sx_exec_wait(sx_handle *h, sx_result *ret);

/* SPDX-License-Identifier: MIT */
/*
 * An exec on a session's client socket (docs/sessions.md, "The client
 * protocol"): one core/ctl.h message, answered in that form. It is the one
 * form of exec every client speaks (the CLI, sandcap-runc, a daemon that
 * links the library, and the small `sandcap exec` front, src/cli/front.c,
 * which carries no JSON library); the supervisor checks it in
 * session/request.c. The other requests on the socket are JSON. libc only.
 *
 *   request  CTL_EXEC    flags CTL_TTY, SX_HOLD, SX_DETACH; value rows << 16 | cols
 *                        (tty); n_argv; payload cwd\0 argv...\0 env...\0
 *                        (cwd "" for fs.workdir)
 *   later    CTL_SIGNAL  value: a signal for the command's process group
 *            CTL_GO      a held exec (SX_HOLD) runs now
 *   answer   CTL_STARTED id (the exec's number in the session's log), with
 *                        the fds (stdin's write end, stdout's and stderr's
 *                        read ends; or the pty master; none detached); or
 *                        err (a positive errno) and the reason as payload
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

/* CTL_EXEC's flags beside CTL_TTY: the fds now, the command on CTL_GO
 * (sandcap-runc's create and start, docs/oci.md). */
#define SX_HOLD 2u
/* The supervisor holds the command: it reads end of file, its output goes
 * to /dev/null, and it runs on once the connection closes (after
 * CTL_STARTED, which carries no fd and ends the connection). */
#define SX_DETACH 4u

/* CTL_EXITED's flags. */
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
	bool hold;	     /* the fds now, the command only on sx_exec_go() */
	bool detach;	     /* SX_DETACH: no fd, no result; ret->id names it */
	uint16_t rows, cols; /* its first size, with tty */
} sx_req;

typedef struct sx_handle {
	int conn;		  /* the result comes on it; closing it kills the command */
	int stdin_fd;		  /* write end; close it for end of file */
	int stdout_fd, stderr_fd; /* read ends */
	int pty_fd;		  /* with tty: the master; the three above are -1 */
	uint32_t id;		  /* the exec's number in the session (exec.start's id) */
} sx_handle;

typedef struct sx_result {
	int exit_code;	/* as `sandcap run`'s: 128+N signal N, 124 a wall clock */
	int signal;	/* 0 when it exited */
	unsigned flags; /* SX_* */
	uint64_t duration_ms;
	int err; /* > 0: it could not be started (an errno) */
} sx_result;

/* Starts req in session name: 0, or -EREMOTEIO with the supervisor's
 * reason in why (the session refused it; why_len may be 0), or -errno
 * (-ENOENT: no such session). The fds in *ret are the caller's. */
int sx_exec(const char *name, const sx_req *req, sx_handle *ret, char *why, size_t why_len);
/* Runs a command started with hold. */
int sx_exec_go(const sx_handle *h);
/* Sends sig to the command's process group. */
int sx_exec_signal(const sx_handle *h, int sig);
/* Waits for the result; closes h->conn. */
int sx_exec_wait(sx_handle *h, sx_result *ret);

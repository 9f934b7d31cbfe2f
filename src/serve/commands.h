/* SPDX-License-Identifier: MIT */
/*
 * The daemon's commands (docs/api.md, "Commands"): each an exec in a
 * session (session/exec-wire.h, sx_exec()) that the daemon holds, so that
 * it can outlive the request that started it (a background command), be
 * listed, killed, fed standard input and re-attached to from another
 * connection. A thread per command reads its output into a bounded
 * buffer of NDJSON lines (the lines of an exec's answer); readers follow
 * it by offset. Thread-safe (one mutex).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SV_CMD_MAX_PER_SESSION 64u	  /* running and recently ended */
#define SV_CMD_KEEP	       (1u << 20) /* output kept for readers that come later */
#define SV_CMD_LINGER_MS       60000	  /* an ended command stays this long for its result */

typedef struct sv_cmds sv_cmds;
typedef struct sv_cmd sv_cmd;

typedef struct sv_cmd_spec {
	const char *session;
	uid_t uid;
	char *const *argv;   /* NULL-terminated */
	const char *cwd;     /* NULL: the policy's workdir */
	char *const *env;    /* "K=V", NULL-terminated, may be NULL */
	json_t *info;	     /* shown by the list (borrowed: a reference is taken) */
	bool background;     /* outlives its first reader */
	bool keep_stdin;     /* standard input stays open for sv_cmd_stdin() */
	uint64_t timeout_ms; /* 0: none; then killed, "timeout" in limits_hit */
	bool pty;	     /* a pty (the session's tty exec): output "pty", input open */
	uint16_t rows, cols; /* its first size, with pty */
} sv_cmd_spec;

int sv_cmds_new(sv_cmds **ret);
void sv_cmds_free(sv_cmds *t);

/* Starts it; *ret holds a reference (sv_cmd_put()). -EREMOTEIO with the
 * session's reason in why, -EUSERS past SV_CMD_MAX_PER_SESSION, -errno. */
int sv_cmd_start(sv_cmds *t, const sv_cmd_spec *spec, sv_cmd **ret, char *why, size_t why_len);
/* The command pid of session (its owner uid), referenced; NULL if none. */
sv_cmd *sv_cmd_find(sv_cmds *t, const char *session, uid_t uid, unsigned pid);
void sv_cmd_put(sv_cmds *t, sv_cmd *c);
unsigned sv_cmd_pid(const sv_cmd *c);

/*
 * Copies into buf (at most max bytes, whole lines) what the command wrote
 * after *off, waiting up to wait_ms for some. Returns the bytes (0: none
 * yet), or -ENODATA once it ended and all was read. A primary reader (the
 * request that started it) holds the output back when it falls behind;
 * any other skips what was dropped.
 */
ssize_t sv_cmd_read(sv_cmds *t, sv_cmd *c, uint64_t *off, char *buf, size_t max, int wait_ms,
		    bool primary);
/* The primary reader went away: a command in the foreground is killed. */
void sv_cmd_leave(sv_cmds *t, sv_cmd *c);
/* Sends sig to its process group; -ESRCH when it ended. */
int sv_cmd_kill(sv_cmds *t, sv_cmd *c, int sig);
/* Writes data to its standard input (then closes it with eof); -EPIPE
 * when that is closed, -ETIMEDOUT when it does not read for 30 s. */
int sv_cmd_stdin(sv_cmds *t, sv_cmd *c, const void *data, size_t len, bool eof);
/* Sets a pty command's window size (the kernel signals it SIGWINCH);
 * -ENOTTY for a command without a pty, -EPIPE once its pty is closed. */
int sv_cmd_resize(sv_cmds *t, sv_cmd *c, uint16_t rows, uint16_t cols);
/* [{"pid", ...info, "running", "started_ms"}] of session's running commands. */
json_t *sv_cmds_list(sv_cmds *t, const char *session, uid_t uid);
/* The session ended: its commands are killed and forgotten. */
void sv_cmds_forget(sv_cmds *t, const char *session);

/* SPDX-License-Identifier: MIT */
/*
 * Sessions (docs/sessions.md): a sandbox that stays up, run by a
 * supervisor of its own in the background, and commands run in it one
 * after another or at once, each under every layer the first would have
 * had. This is the client side: start one, run a command in it, move
 * files in and out through its walls, list and stop them. Library code:
 * returns -errno, never prints; a message for the user goes in *reterr_diag
 * where one is taken.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"
#include "policy/plan.h"
#include "session/locate.h"

#define SC_SESSION_MAX_ENV 256

/* Removes what supervisors that died left behind: a session directory
 * whose lock nobody holds. Returns how many were removed. */
unsigned sc_session_sweep(void);

typedef struct sc_session_start_opts {
	const sc_plan *plan;
	const char *name; /* NULL: generated */
	const char *policy_source;
	const char *policy_digest;
	const char *audit_path; /* NULL: a new file under the state directory */
	const uint8_t *audit_key;
	size_t audit_key_len;
	/* A session started ahead of need (a warm pool): limits.wall and
	 * limits.idle start at the first sc_session_begin() (or the first
	 * other request), not at the start. */
	bool pooled;
	/* pid 1 is born the child of the supervisor's parent (CLONE_PARENT:
	 * whoever adopted the supervisor, a subreaper such as containerd's
	 * shim; sc_session_start() forks it twice), which reaps it: pid 1 ends
	 * as soon as the session's first command ends, with its status (128+N
	 * for signal N), and that ends the session; it ends with 128+SIGKILL
	 * when the supervisor dies. The OCI runtime's pid 1 (docs/oci.md). */
	bool init_adopted;
} sc_session_start_opts;

typedef struct sc_session_info {
	char name[SC_SESSION_NAME_MAX + 1];
	pid_t pid; /* the session's supervisor */
	char sandbox_id[40];
	char audit_path[4096];
	char started[32];     /* UTC, ISO 8601 */
	char workspaces[512]; /* its cow workspaces' ids, space-separated */
	char serve[512];      /* net.serve: {"PORT": "127.0.0.1:N"} as JSON, "" for none */
} sc_session_info;

/* Starts the supervisor (forked, detached: its own session, stdio on
 * /dev/null) and returns once the sandbox is ready for commands. -EEXIST
 * when the name is taken. The caller must be single-threaded. */
int sc_session_start(const sc_session_start_opts *o, sc_session_info *ret, sc_diag *reterr_diag);

/* One request on a new connection: req is sent (not consumed), *ret_reply
 * gets the first answer, fds the fds that came with it. An answer
 * {"error": {"code", "message"}} is returned as -EREMOTEIO with the reply
 * still set. */
int sc_session_request(const char *name, json_t *req, int *ret_conn, json_t **ret_reply, int *fds,
		       size_t max_fds, size_t *ret_n_fds);
/* The next message on a connection (a result, after an exec or file op). */
int sc_session_recv(int conn, json_t **ret_msg);

/* A command in a session: session/exec-wire.h (sx_exec() and the rest),
 * the one form of exec on the socket. */

/* File operations, done inside the sandbox by a process under its walls:
 * put copies data_fd to PATH (created with mode, truncated), get copies
 * PATH into out_fd. PATH relative to the policy's workdir. The kernel's
 * refusal comes back as its -errno. *ret_bytes may be NULL. */
int sc_session_put(const char *name, const char *path, unsigned mode, int data_fd,
		   uint64_t *ret_bytes);
int sc_session_get(const char *name, const char *path, int out_fd, uint64_t *ret_bytes);

typedef struct sc_dir_entry {
	char type; /* f d l c b p s ? */
	uint64_t size;
	unsigned mode;
	int64_t mtime;
	char name[256];
} sc_dir_entry;

/* Lists a directory: *ret (malloc'd) gets *ret_n entries. */
int sc_session_ls(const char *name, const char *path, sc_dir_entry **ret, size_t *ret_n);
/* Parses one "TYPE\tSIZE\tMODE\tMTIME\tNAME" record of a listing. */
int sc_dir_entry_parse(const char *rec, size_t len, sc_dir_entry *ret);

/* A live cow workspace of session name (docs/sessions.md, "Workspaces"):
 * *ret_meta its meta.json object, *ret_upper an open directory of its upper
 * layer (the caller's). -ENOENT when the session has no such workspace. */
int sc_session_workspace(const char *name, const char *id, json_t **ret_meta, int *ret_upper);
/* Tells session name that its workspace was applied: req is a
 * {"op": "workspace-applied", ...} object (docs/sessions.md). */
int sc_session_workspace_applied(const char *name, json_t *req);

/* Hands out a pooled session (sc_session_start_opts.pooled): its limits
 * start now. 0 also when they run already. */
int sc_session_begin(const char *name);
/* The commands running in session name: [{"id", "argv", "cwd", "tty",
 * "detached", "pid" (inside), "started_ms"}], exec.start's id each. */
int sc_session_commands(const char *name, json_t **ret_array);
/* Sends sig to the process group of command id of session name (recorded,
 * exec.kill). -ESRCH when no such command runs. */
int sc_session_kill(const char *name, uint32_t id, int sig);
/* Freezes every process of session name (the cgroup freezer) and stops
 * its clocks (limits.wall, exec_wall, idle), or thaws it and lets them run
 * on (session.pause, session.resume recorded). 0 also when it was so
 * already; -EOPNOTSUPP without a freezer. While paused, execs and file
 * operations are refused ("paused"). */
int sc_session_pause(const char *name, bool pause);
/* Stops a session; *ret_summary (may be NULL) gets its end: the log
 * sealed, its final hash, what it used. */
int sc_session_stop(const char *name, json_t **ret_summary);
/* Every live session's info (name, pid, sandbox, policy, audit,
 * started, age_s, memory_peak, commands, running, state), after a sweep. */
int sc_session_list(json_t **ret_array);

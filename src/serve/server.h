/* SPDX-License-Identifier: MIT */
/*
 * `sandcap serve`: the API daemon. HTTP/1.1 + JSON on a unix socket
 * (docs/api.md). One thread per connection (bounded per uid), each request
 * driving sessions through `sandcap` subcommands (serve/child.h); the
 * callers identified by SO_PEERCRED, each uid seeing only its own sessions
 * and bounded by a quota; warm pools of started sessions per policy.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SV_MAX_POLICIES 64u
#define SV_MAX_POOL	256u
/* Connections: a thread each. One uid holds at most its share, and the
 * last SV_ROOT_RESERVE places are root's, so that no caller, nor a few,
 * can take every place (docs/api.md, "Limits of a caller"). */
#define SV_MAX_CONNECTIONS	   1024u
#define SV_MAX_CONNECTIONS_PER_UID 64u
#define SV_ROOT_RESERVE		   64u
/* Bytes of request buffers one uid (root aside) may hold at once, and all. */
#define SV_MAX_BUFFERED_PER_UID (80u << 20)
#define SV_MAX_BUFFERED		(320u << 20)

typedef struct sv_policy_opt {
	const char *file;
	unsigned pool; /* sessions kept started ahead of time */
} sv_policy_opt;

typedef void (*sv_log_fn)(void *userdata, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

typedef struct sv_config {
	const char *socket_path;
	/* Socket activation (serve/activation.h): serve listen_fd, which the
	 * service manager bound at socket_path, instead of creating the
	 * socket; it is neither chowned nor removed (it is the manager's). */
	bool listen_passed;
	int listen_fd;
	gid_t gid;	   /* (gid_t)-1: the socket keeps root's group */
	unsigned quota;	   /* live sessions per uid; 0: no bound */
	bool allow_inline; /* inline policies from any caller, not only root */
	const char *exe;   /* the sandcap binary the subcommands run */
	/* The one `session start` runs, whose fork is the session's supervisor:
	 * sandcap-run where there is one (cli_session_program), else exe. */
	const char *session_exe;
	/* The one `exec` runs: the small front where there is one
	 * (cli_exec_program), else exe. */
	const char *exec_exe;
	const char *token_key; /* NULL: tokens refused */
	const sv_policy_opt *policies;
	size_t n_policies;
	sv_log_fn log;
	void *log_data;
	int ready_fd; /* >= 0: "ready\n" written here once the socket listens, then closed */
} sv_config;

/* Runs until a signal whose default would end it (SIGTERM, SIGINT, ...:
 * base/signals.h), then stops every session (sealing its log)
 * and returns 0; -errno when it could not start (log says why). */
int sv_serve(const sv_config *cfg);

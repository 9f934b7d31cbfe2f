/* SPDX-License-Identifier: MIT */
/*
 * Running `sandcap` subcommands (session start, exec, put, get, ...) as
 * child processes. The API daemon and the MCP server drive sessions this
 * way: each session is its own supervisor process, and each request its own
 * short-lived client of it, so nothing a request does can corrupt the
 * daemon's memory, and a request that dies takes only itself.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SV_MAX_CAPTURE (64u << 20) /* stdout kept from one subcommand */
#define SV_MAX_STDERR  (64u << 10)

typedef struct sv_child {
	pid_t pid;
	int in, out, err; /* our ends; -1 when not piped */
} sv_child;

/* Starts exe with argv (argv[0] included), its stdin/stdout/stderr piped
 * (stdin from /dev/null unless pipe_in), signals and mask reset. */
int sv_child_spawn(const char *exe, char *const argv[], bool pipe_in, sv_child *ret);
/* Closes our ends and reaps it; *ret_status is the waitpid() status. */
int sv_child_wait(sv_child *c, int *ret_status);
/* SIGTERM, then SIGKILL after grace_ms, then reap. */
void sv_child_kill(sv_child *c, unsigned grace_ms);

typedef struct sv_capture {
	char *out; /* NUL-terminated */
	size_t out_len;
	char *err; /* NUL-terminated, at most SV_MAX_STDERR */
	size_t err_len;
	int status; /* waitpid() status */
} sv_capture;

/* Runs it to the end, feeding in[0..in_len) to its stdin (when in is not
 * NULL) and collecting stdout (at most max_out: more is -EFBIG, the child
 * killed) and stderr. */
int sv_child_run(const char *exe, char *const argv[], const void *in, size_t in_len, size_t max_out,
		 sv_capture *ret);
void sv_capture_done(sv_capture *c);
/* The exit code, or 128+signal. */
int sv_exit_code(int status);
/* The first line of what a failed subcommand printed, without "sandcap: ". */
void sv_capture_message(const sv_capture *c, char *out, size_t size);

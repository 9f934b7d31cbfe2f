/* SPDX-License-Identifier: MIT */
/*
 * A client's request to a session's supervisor, checked (docs/sessions.md,
 * "The client protocol"): an exec and what follows it on its connection
 * as core/ctl.h messages (session/exec-wire.h), every other request as one
 * JSON object. The parsers are pure and fuzzed
 * (tests/fuzz/fuzz-session-request.c).
 */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ss_op {
	SS_OP_EXEC,   /* CTL_EXEC */
	SS_OP_SIGNAL, /* CTL_SIGNAL, on an exec's connection */
	SS_OP_PUT,
	SS_OP_GET,
	SS_OP_LS,
	SS_OP_INFO,
	SS_OP_STOP,
	SS_OP_WORKSPACE, /* a live cow workspace: its meta and its upper layer */
	SS_OP_APPLIED,	 /* a client applied it: the new epoch, for the record */
	SS_OP_GO,	 /* CTL_GO, on a held exec's connection: run it now */
	SS_OP_BEGIN,	 /* a pooled session is handed out: its limits start */
	SS_OP_STAT,	 /* one entry's record, as ls writes it */
	SS_OP_MKDIR,	 /* mode 1: with its parents */
	SS_OP_REMOVE,	 /* a file, or a directory and all it holds */
	SS_OP_RENAME,	 /* path to "to" */
	SS_OP_TIMEOUT,	 /* limits.wall ends in "seconds" from now */
	SS_OP_COMMANDS,	 /* the commands running */
	SS_OP_KILL,	 /* a signal for the process group of command "id" */
	SS_OP_PAUSE,	 /* every process frozen, the clocks stopped */
	SS_OP_RESUME,	 /* thawed, the clocks run on */
	SS_OP_WATCH,	 /* changes in directory path as lines; mode 1: recursive */
	_SS_OP_MAX,
	_SS_OP_INVALID = -EINVAL,
} ss_op;

#define SS_MAX_ARGV	    4096u
#define SS_MAX_PATH	    4096u
#define SS_MAX_WORKSPACE_ID 64u

typedef struct ss_request {
	ss_op op;
	/* exec: strings borrowed from raw */
	const char *argv[SS_MAX_ARGV + 1];
	size_t n_argv;
	const char *env[256 + 1]; /* "KEY=VALUE" */
	size_t n_env;
	const char *cwd; /* "" for the workdir */
	bool tty;
	bool hold;   /* answer with the fds now, run the command on CTL_GO */
	bool detach; /* no fds: the supervisor holds it (SX_DETACH) */
	unsigned rows, cols;
	/* signal, kill */
	int signal;
	uint32_t id; /* kill: the command's (exec.start's id) */
	/* put, get, ls */
	const char *path;
	unsigned mode;	/* put: the file's; ls: the depth (1: the directory only); mkdir: parents */
	const char *to; /* rename */
	/* timeout */
	uint64_t seconds;
	/* workspace, workspace-applied */
	const char *workspace;
	int64_t epoch_sec, epoch_nsec;
	uint64_t paths, conflicts, changed;
	bool forced;
	const char *record; /* the apply's own log */
	json_t *root;	    /* a JSON request: owns its strings */
	char *raw;	    /* a ctl message: this buffer (malloc'd) owns them */
} ss_request;

/* Checks a JSON request o and fills *ret (which takes a reference on o).
 * On error, -EINVAL and a message in err naming the member. */
int ss_request_parse(json_t *o, ss_request *ret, char *err, size_t err_len);
/* The same for an exec, signal or go (session/exec-wire.h): n bytes of
 * buf, a ctl_hdr and its payload. On success *ret owns buf (freed by
 * ss_request_done()); on error buf stays the caller's. */
int ss_request_parse_ctl(char *buf, size_t n, ss_request *ret, char *err, size_t err_len);
void ss_request_done(ss_request *r);

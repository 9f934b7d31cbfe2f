/* SPDX-License-Identifier: MIT */
/*
 * Session operations for the API daemon and the MCP server, each one a
 * `sandcap session ...` / `sandcap exec` subcommand (serve/child.h): start,
 * stop, exec, put, get, ls and the audit report. Errors come back as an
 * HTTP-ish status, a code and the subcommand's own message.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "serve/child.h"

typedef struct sv_error {
	int status;	   /* HTTP status to answer with */
	char code[32];	   /* "not_found", "session_failed", ... */
	char message[512]; /* the subcommand's first line of stderr */
	char path[256];	   /* JSON path of the offending key, or "" */
} sv_error;

int sv_fail(sv_error *e, int status, const char *code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A fresh session name: prefix + 16 random hex digits. */
int sv_new_name(const char *prefix, char *out, size_t size);

/* `session start --policy FILE --name NAME --json` (and --pooled for a
 * warm pool's: its limits start at sc_session_begin()): *ret_info is its
 * JSON. */
int sv_session_start(const char *exe, const char *policy_file, const char *name, bool pooled,
		     json_t **ret_info, sv_error *e);
/* `session stop NAME --json`: *ret_info (may be NULL) is its JSON. */
int sv_session_stop(const char *exe, const char *name, json_t **ret_info, sv_error *e);
int sv_session_put(const char *exe, const char *name, const char *path, const void *data,
		   size_t len, sv_error *e);
int sv_session_get(const char *exe, const char *name, const char *path, char **ret_data,
		   size_t *ret_len, sv_error *e);
int sv_session_ls(const char *exe, const char *name, const char *path, json_t **ret_list,
		  sv_error *e);
/* `audit report FILE --json`. */
int sv_audit_report(const char *exe, const char *audit_path, json_t **ret_report, sv_error *e);
/* `sandcap audit report --html` of the log: the page, NUL-terminated, in
 * *ret_html (free()), its length in *ret_len. A live log's page says so. */
int sv_audit_report_html(const char *exe, const char *audit_path, char **ret_html, size_t *ret_len,
			 sv_error *e);

/* The workspaces of sandbox id sandbox (`workspace list --json`, kept
 * ones) and, when live_name names a running session, its live ones
 * (`session list --json`, "state": "live"): a JSON array. */
int sv_workspace_list(const char *exe, const char *sandbox, const char *live_name,
		      json_t **ret_list, sv_error *e);
/* `workspace diff ID --json` (--stat or --patch when asked). */
int sv_workspace_diff(const char *exe, const char *id, const char *mode, json_t **ret, sv_error *e);
/* `workspace apply ID --json [--force]`: *ret is what it printed (also when
 * it failed), *ret_exit its exit code (0, 1, 2 for conflicts). */
int sv_workspace_apply(const char *exe, const char *id, bool force, json_t **ret, int *ret_exit,
		       sv_error *e);
/* `workspace discard ID`. */
int sv_workspace_discard(const char *exe, const char *id, sv_error *e);

/* What an exec request asks for: argv, cwd, env, stdin. */
typedef struct sv_exec_req {
	char **argv; /* NULL-terminated, owned */
	size_t argc;
	char *cwd;
	char **env; /* "K=V", NULL-terminated, owned */
	size_t n_env;
	unsigned char *stdin_data;
	size_t stdin_len;
	bool has_stdin;
} sv_exec_req;

#define SV_MAX_ARGV 1024u
#define SV_MAX_ENV  256u

/* Reads {"argv":[...], "cwd":S, "env":{K:V}, "stdin":BASE64 | "stdin_text":S}. */
int sv_exec_req_from_json(const json_t *o, sv_exec_req *ret, sv_error *e);
void sv_exec_req_done(sv_exec_req *r);
/* The `sandcap exec --ndjson ...` argv for it (free with free(); strings borrowed). */
char **sv_exec_argv(const char *exe, const char *name, const sv_exec_req *r);

/* The result of an exec, gathered from its NDJSON lines. */
typedef struct sv_exec_result {
	char *out, *err; /* decoded, NUL-terminated */
	size_t out_len, err_len;
	json_t *final; /* the {"exit_code",...} object, or NULL when it never came */
} sv_exec_result;

/* Feeds one NDJSON line to r. -EBADMSG for a line that is not one of ours. */
int sv_exec_result_line(sv_exec_result *r, const char *line, size_t len, size_t max);
void sv_exec_result_done(sv_exec_result *r);
/* Runs the exec to the end and gathers its result (for MCP and tests). */
int sv_exec_run(const char *exe, const char *name, const sv_exec_req *req, size_t max_out,
		sv_exec_result *ret, sv_error *e);

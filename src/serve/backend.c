/* SPDX-License-Identifier: MIT */
#include "serve/backend.h"

#include <errno.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"

int sv_fail(sv_error *e, int status, const char *code, const char *path, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -status;
	e->status = status;
	(void)snprintf(e->code, sizeof(e->code), "%s", code);
	(void)snprintf(e->path, sizeof(e->path), "%s", path ? path : "");
	va_start(ap, fmt);
	(void)vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return -status;
}

int sv_new_name(const char *prefix, char *out, size_t size)
{
	unsigned char r[8];
	int n;

	if (RAND_bytes(r, sizeof(r)) != 1)
		return -EIO;
	n = snprintf(out, size, "%s%02x%02x%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2],
		     r[3], r[4], r[5], r[6], r[7]);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The status for a failed subcommand: its message says what kind it was. */
static int subcommand_failed(const sv_capture *c, const char *what, sv_error *e)
{
	char msg[512];

	sv_capture_message(c, msg, sizeof(msg));
	if (strstr(msg, "no session") || strstr(msg, "not running") ||
	    strstr(msg, "unknown session") || strstr(msg, "no workspace"))
		return sv_fail(e, 404, "not_found", NULL, "%s", msg);
	if (strstr(msg, "No such file") || strstr(msg, "not found"))
		return sv_fail(e, 404, "no_such_path", NULL, "%s", msg);
	/* EROFS is the wall of an ro grant and of the read-only root, as EACCES
	 * is Landlock's: both are the sandbox refusing, not the daemon failing. */
	if (strstr(msg, "ermission denied") || strstr(msg, "Read-only file system") ||
	    strstr(msg, "not granted") || strstr(msg, "outside"))
		return sv_fail(e, 403, "denied", NULL, "%s", msg);
	/* the subcommand names itself already ("session put: ...") */
	if (!strncmp(msg, what, strlen(what)) && msg[strlen(what)] == ':')
		return sv_fail(e, 500, "session_failed", NULL, "%s", msg);
	return sv_fail(e, 500, "session_failed", NULL, "%s: %s", what, msg);
}

static int run_json(const char *exe, char *const argv[], const void *in, size_t in_len,
		    const char *what, json_t **ret, sv_error *e)
{
	sv_capture c;
	json_error_t je;
	json_t *o;
	int r = sv_child_run(exe, argv, in, in_len, SV_MAX_CAPTURE, &c);

	if (r < 0)
		return sv_fail(e, 500, "internal", NULL, "%s: %s", what, strerror(-r));
	if (sv_exit_code(c.status) != 0) {
		r = subcommand_failed(&c, what, e);
		sv_capture_done(&c);
		return r;
	}
	if (!ret) {
		sv_capture_done(&c);
		return 0;
	}
	o = json_loadb(c.out, c.out_len, 0, &je);
	sv_capture_done(&c);
	if (!o)
		return sv_fail(e, 500, "internal", NULL, "%s printed no JSON: %s", what, je.text);
	*ret = o;
	return 0;
}

int sv_session_start(const char *exe, const char *policy_file, const char *name, bool pooled,
		     json_t **ret_info, sv_error *e)
{
	char *argv[] = {(char *)"sandcap",
			(char *)"session",
			(char *)"start",
			(char *)"--policy",
			(char *)policy_file,
			(char *)"--name",
			(char *)name,
			(char *)"--json",
			pooled ? (char *)"--pooled" : NULL,
			NULL};

	return run_json(exe, argv, NULL, 0, "session start", ret_info, e);
}

int sv_session_stop(const char *exe, const char *name, json_t **ret_info, sv_error *e)
{
	char *argv[] = {(char *)"sandcap", (char *)"session", (char *)"stop",
			(char *)name,	   (char *)"--json",  NULL};
	json_t *o = NULL;
	int r = run_json(exe, argv, NULL, 0, "session stop", &o, e);

	if (r >= 0 && ret_info)
		*ret_info = o;
	else
		json_decref(o);
	return r;
}

int sv_session_put(const char *exe, const char *name, const char *path, const void *data,
		   size_t len, sv_error *e)
{
	char *argv[] = {(char *)"sandcap", (char *)"session", (char *)"put",
			(char *)name,	   (char *)path,      NULL};

	return run_json(exe, argv, data ? data : "", len, "session put", NULL, e);
}

int sv_session_get(const char *exe, const char *name, const char *path, char **ret_data,
		   size_t *ret_len, sv_error *e)
{
	char *argv[] = {(char *)"sandcap", (char *)"session", (char *)"get",
			(char *)name,	   (char *)path,      NULL};
	sv_capture c;
	int r = sv_child_run(exe, argv, NULL, 0, SV_MAX_CAPTURE, &c);

	if (r == -EFBIG)
		return sv_fail(e, 413, "too_large", NULL, "%s is larger than %u bytes", path,
			       SV_MAX_CAPTURE);
	if (r < 0)
		return sv_fail(e, 500, "internal", NULL, "session get: %s", strerror(-r));
	if (sv_exit_code(c.status) != 0) {
		r = subcommand_failed(&c, "session get", e);
		sv_capture_done(&c);
		return r;
	}
	*ret_data = TAKE_PTR(c.out);
	*ret_len = c.out_len;
	sv_capture_done(&c);
	return 0;
}

int sv_session_ls(const char *exe, const char *name, const char *path, json_t **ret_list,
		  sv_error *e)
{
	char *argv[] = {(char *)"sandcap", (char *)"session", (char *)"ls", (char *)name,
			(char *)path,	   (char *)"--json",  NULL};

	return run_json(exe, argv, NULL, 0, "session ls", ret_list, e);
}

int sv_workspace_list(const char *exe, const char *sandbox, const char *live_name,
		      json_t **ret_list, sv_error *e)
{
	char *kargv[] = {(char *)"sandcap", (char *)"workspace", (char *)"list", (char *)"--json",
			 NULL};
	char *sargv[] = {(char *)"sandcap", (char *)"session", (char *)"list", (char *)"--json",
			 NULL};
	_cleanup_json_ json_t *kept = NULL, *live = NULL;
	json_t *out = json_array(), *v, *w;
	size_t plen = strlen(sandbox), i, k;
	int r = run_json(exe, kargv, NULL, 0, "workspace list", &kept, e);

	if (r >= 0 && live_name)
		r = run_json(exe, sargv, NULL, 0, "session list", &live, e);
	if (r < 0 || !out) {
		json_decref(out);
		return r < 0 ? r : sv_fail(e, 500, "internal", NULL, "out of memory");
	}
	/* SANDBOX.N: the sandbox id is ours to match, N is the grant's index */
	json_array_foreach(kept, i, v)
	{
		const char *id = json_string_value(json_object_get(v, "id"));

		if (id && !strncmp(id, sandbox, plen) && id[plen] == '.')
			(void)json_array_append(out, v);
	}
	json_array_foreach(live, i, v)
	{
		if (strcmp(json_string_value(json_object_get(v, "name")) ?: "", live_name))
			continue;
		json_array_foreach(json_object_get(v, "workspaces"), k, w)
		{
			if (json_is_string(w))
				(void)json_array_append_new(
				    out, json_pack("{s:O, s:s}", "id", w, "state", "live"));
		}
	}
	*ret_list = out;
	return 0;
}

int sv_workspace_diff(const char *exe, const char *id, const char *mode, json_t **ret, sv_error *e)
{
	char *argv[] = {(char *)"sandcap",
			(char *)"workspace",
			(char *)"diff",
			(char *)id,
			(char *)"--json",
			(char *)mode,
			NULL};

	return run_json(exe, argv, NULL, 0, "workspace diff", ret, e);
}

int sv_workspace_apply(const char *exe, const char *id, bool force, json_t **ret, int *ret_exit,
		       sv_error *e)
{
	char *argv[] = {(char *)"sandcap",
			(char *)"workspace",
			(char *)"apply",
			(char *)id,
			(char *)"--json",
			force ? (char *)"--force" : NULL,
			NULL};
	char msg[512];
	sv_capture c;
	int r = sv_child_run(exe, argv, NULL, 0, SV_MAX_CAPTURE, &c);

	if (r < 0)
		return sv_fail(e, 500, "internal", NULL, "workspace apply: %s", strerror(-r));
	*ret = json_loadb(c.out, c.out_len, 0, NULL);
	*ret_exit = sv_exit_code(c.status);
	/* the CLI's exit codes: 2 conflicts, 1 anything else */
	sv_capture_message(&c, msg, sizeof(msg));
	if (*ret_exit == 2)
		r = sv_fail(e, 409, "conflicts", NULL, "%s", msg);
	else if (*ret_exit != 0 && (strstr(msg, "applied already") || strstr(msg, "being applied")))
		r = sv_fail(e, 409, strstr(msg, "being") ? "busy" : "applied_already", NULL, "%s",
			    msg);
	else if (*ret_exit != 0 && !*ret)
		r = subcommand_failed(&c, "workspace apply", e);
	else if (*ret_exit != 0)
		r = sv_fail(e, 500, "apply_failed", NULL, "%s", msg);
	sv_capture_done(&c);
	return r;
}

int sv_workspace_discard(const char *exe, const char *id, sv_error *e)
{
	char *argv[] = {(char *)"sandcap", (char *)"workspace", (char *)"discard", (char *)id,
			NULL};

	return run_json(exe, argv, NULL, 0, "workspace discard", NULL, e);
}

int sv_audit_report(const char *exe, const char *audit_path, json_t **ret_report, sv_error *e)
{
	char *argv[] = {(char *)"sandcap",  (char *)"audit",  (char *)"report",
			(char *)audit_path, (char *)"--json", NULL};
	sv_capture c;
	json_t *o;
	int r = sv_child_run(exe, argv, NULL, 0, SV_MAX_CAPTURE, &c);

	if (r < 0)
		return sv_fail(e, 500, "internal", NULL, "audit report: %s", strerror(-r));
	/* A log still being written (not sealed yet) is reported too, with a
	 * non-zero status: the JSON says what it holds. */
	o = json_loadb(c.out, c.out_len, 0, NULL);
	if (!o) {
		r = subcommand_failed(&c, "audit report", e);
		sv_capture_done(&c);
		return r;
	}
	sv_capture_done(&c);
	*ret_report = o;
	return 0;
}

int sv_audit_report_html(const char *exe, const char *audit_path, char **ret_html, size_t *ret_len,
			 sv_error *e)
{
	char *argv[] = {(char *)"sandcap", (char *)"audit",    (char *)"report",
			(char *)"--html",  (char *)audit_path, NULL};
	sv_capture c;
	int r = sv_child_run(exe, argv, NULL, 0, SV_MAX_CAPTURE, &c);

	if (r < 0)
		return sv_fail(e, 500, "internal", NULL, "audit report: %s", strerror(-r));
	/* A live or damaged log still gives a page (with a non-zero status):
	 * the page says what it holds. No page at all is a failure. */
	if (!c.out || strncmp(c.out, "<!DOCTYPE html>", 15) != 0) {
		r = subcommand_failed(&c, "audit report", e);
		sv_capture_done(&c);
		return r;
	}
	*ret_html = TAKE_PTR(c.out);
	*ret_len = c.out_len;
	sv_capture_done(&c);
	return 0;
}

static char *dup_checked(const char *s, size_t max)
{
	return strnlen(s, max + 1) > max ? NULL : strdup(s);
}

int sv_exec_req_from_json(const json_t *o, sv_exec_req *r, sv_error *e)
{
	const json_t *argv, *v, *env;
	const char *key;
	size_t i;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(o))
		return sv_fail(e, 400, "bad_request", "$", "expected a JSON object");
	json_object_foreach(
	    (json_t *)o, key,
	    v) if (strcmp(key, "argv") && strcmp(key, "cwd") && strcmp(key, "env") &&
		   strcmp(key, "stdin") &&
		   strcmp(
		       key,
		       "stdin_text")) return sv_fail(e, 400, "bad_request", "$",
						     "unknown key \"%.64s\" "
						     "(expected argv, cwd, env, stdin, stdin_text)",
						     key);
	argv = json_object_get(o, "argv");
	if (!json_is_array(argv) || json_array_size(argv) == 0 ||
	    json_array_size(argv) > SV_MAX_ARGV)
		return sv_fail(e, 400, "bad_request", "$.argv",
			       "expected an array of 1 to %u strings", SV_MAX_ARGV);
	r->argv = calloc(json_array_size(argv) + 1, sizeof(char *));
	if (!r->argv)
		return sv_fail(e, 500, "internal", NULL, "out of memory");
	json_array_foreach(argv, i, v)
	{
		char path[32];

		(void)snprintf(path, sizeof(path), "$.argv[%zu]", i);
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return sv_fail(e, 400, "bad_request", path,
				       "expected a string without NUL");
		r->argv[i] = dup_checked(json_string_value(v), 65536);
		if (!r->argv[i])
			return sv_fail(e, 400, "bad_request", path, "longer than 65536 bytes");
		r->argc++;
	}
	v = json_object_get(o, "cwd");
	if (v) {
		if (!json_is_string(v) || json_string_value(v)[0] != '/' ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return sv_fail(e, 400, "bad_request", "$.cwd", "expected an absolute path");
		r->cwd = dup_checked(json_string_value(v), 4095);
		if (!r->cwd)
			return sv_fail(e, 400, "bad_request", "$.cwd", "longer than 4095 bytes");
	}
	env = json_object_get(o, "env");
	if (env) {
		if (!json_is_object(env) || json_object_size(env) > SV_MAX_ENV)
			return sv_fail(e, 400, "bad_request", "$.env",
				       "expected an object of at most %u strings", SV_MAX_ENV);
		r->env = calloc(json_object_size(env) + 1, sizeof(char *));
		if (!r->env)
			return sv_fail(e, 500, "internal", NULL, "out of memory");
		json_object_foreach((json_t *)env, key, v)
		{
			if (!key[0] || strchr(key, '=') || !json_is_string(v) ||
			    strlen(json_string_value(v)) != json_string_length(v))
				return sv_fail(e, 400, "bad_request", "$.env",
					       "\"%.64s\": expected a name without '=' and a "
					       "string value",
					       key);
			if (asprintf(&r->env[r->n_env], "%s=%s", key, json_string_value(v)) < 0) {
				r->env[r->n_env] = NULL;
				return sv_fail(e, 500, "internal", NULL, "out of memory");
			}
			r->n_env++;
		}
	}
	v = json_object_get(o, "stdin");
	if (v) {
		if (!json_is_string(v) || b64_decode(json_string_value(v), json_string_length(v),
						     &r->stdin_data, &r->stdin_len) < 0)
			return sv_fail(e, 400, "bad_request", "$.stdin", "expected base64");
		r->has_stdin = true;
	}
	v = json_object_get(o, "stdin_text");
	if (v) {
		if (r->has_stdin || !json_is_string(v))
			return sv_fail(e, 400, "bad_request", "$.stdin_text",
				       "expected a string, and not with stdin");
		r->stdin_len = json_string_length(v);
		r->stdin_data = malloc(r->stdin_len + 1);
		if (!r->stdin_data)
			return sv_fail(e, 500, "internal", NULL, "out of memory");
		memcpy(r->stdin_data, json_string_value(v), r->stdin_len);
		r->has_stdin = true;
	}
	return 0;
}

void sv_exec_req_done(sv_exec_req *r)
{
	for (size_t i = 0; r->argv && r->argv[i]; i++)
		free(r->argv[i]);
	for (size_t i = 0; r->env && r->env[i]; i++)
		free(r->env[i]);
	free(r->argv);
	free(r->env);
	free(r->cwd);
	free(r->stdin_data);
	memset(r, 0, sizeof(*r));
}

char **sv_exec_argv(const char *exe, const char *name, const sv_exec_req *r)
{
	size_t n = 10 + r->argc + 2 * r->n_env, i = 0;
	char **a = calloc(n, sizeof(char *));

	(void)exe;
	if (!a)
		return NULL;
	a[i++] = (char *)"sandcap";
	a[i++] = (char *)"exec";
	a[i++] = (char *)"--ndjson";
	if (r->has_stdin)
		a[i++] = (char *)"-i";
	if (r->cwd) {
		a[i++] = (char *)"--cwd";
		a[i++] = r->cwd;
	}
	for (size_t k = 0; k < r->n_env; k++) {
		a[i++] = (char *)"--env";
		a[i++] = r->env[k];
	}
	a[i++] = (char *)name;
	a[i++] = (char *)"--";
	for (size_t k = 0; k < r->argc; k++)
		a[i++] = r->argv[k];
	a[i] = NULL;
	return a;
}

static int append(char **buf, size_t *len, const unsigned char *d, size_t n, size_t max)
{
	char *p;

	if (*len + n > max)
		return -EFBIG;
	p = realloc(*buf, *len + n + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p + *len, d, n);
	*len += n;
	p[*len] = 0;
	*buf = p;
	return 0;
}

int sv_exec_result_line(sv_exec_result *r, const char *line, size_t len, size_t max)
{
	_cleanup_json_ json_t *o = json_loadb(line, len, 0, NULL);
	const char *stream;
	json_t *data;

	if (!json_is_object(o))
		return -EBADMSG;
	if (json_object_get(o, "exit_code")) {
		json_decref(r->final);
		r->final = TAKE_PTR(o);
		return 0;
	}
	stream = json_string_value(json_object_get(o, "stream"));
	data = json_object_get(o, "data");
	if (!stream || !json_is_string(data))
		return -EBADMSG;
	_cleanup_free_ unsigned char *d = NULL;
	size_t n;

	if (b64_decode(json_string_value(data), json_string_length(data), &d, &n) < 0)
		return -EBADMSG;
	if (!strcmp(stream, "stdout"))
		return append(&r->out, &r->out_len, d, n, max);
	if (!strcmp(stream, "stderr"))
		return append(&r->err, &r->err_len, d, n, max);
	return -EBADMSG;
}

void sv_exec_result_done(sv_exec_result *r)
{
	free(r->out);
	free(r->err);
	json_decref(r->final);
	memset(r, 0, sizeof(*r));
}

int sv_exec_run(const char *exe, const char *name, const sv_exec_req *req, size_t max_out,
		sv_exec_result *ret, sv_error *e)
{
	_cleanup_free_ char **argv = sv_exec_argv(exe, name, req);
	sv_capture c;
	char *p;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!argv)
		return sv_fail(e, 500, "internal", NULL, "out of memory");
	r = sv_child_run(
	    exe, argv,
	    req->has_stdin ? (const void *)(req->stdin_data ? (void *)req->stdin_data : (void *)"")
			   : NULL,
	    req->stdin_len, max_out * 2 + 65536, &c);
	if (r < 0)
		return sv_fail(e, 500, "internal", NULL, "exec: %s", strerror(-r));
	p = c.out;
	while (p && *p) {
		char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n && sv_exec_result_line(ret, p, n, max_out) < 0)
			break;
		p += n + (nl ? 1 : 0);
	}
	if (!ret->final) {
		r = subcommand_failed(&c, "exec", e);
		sv_capture_done(&c);
		sv_exec_result_done(ret);
		return r;
	}
	sv_capture_done(&c);
	if (!ret->out)
		ret->out = strdup("");
	if (!ret->err)
		ret->err = strdup("");
	return 0;
}

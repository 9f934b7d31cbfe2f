/* SPDX-License-Identifier: MIT */
#include "session/request.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/ctl.h"
#include "session/exec-wire.h"

/* The requests in JSON; an exec and what follows it on its connection
 * (signal, go) are core/ctl.h messages (session/exec-wire.h). */
static const char *const op_names[_SS_OP_MAX] = {
    [SS_OP_PUT] = "put",
    [SS_OP_GET] = "get",
    [SS_OP_LS] = "ls",
    [SS_OP_INFO] = "info",
    [SS_OP_STOP] = "stop",
    [SS_OP_WORKSPACE] = "workspace",
    [SS_OP_APPLIED] = "workspace-applied",
    [SS_OP_BEGIN] = "begin",
    [SS_OP_STAT] = "stat",
    [SS_OP_MKDIR] = "mkdir",
    [SS_OP_REMOVE] = "remove",
    [SS_OP_RENAME] = "rename",
    [SS_OP_TIMEOUT] = "timeout",
    [SS_OP_COMMANDS] = "commands",
    [SS_OP_KILL] = "kill",
    [SS_OP_PAUSE] = "pause",
    [SS_OP_RESUME] = "resume",
    [SS_OP_WATCH] = "watch",
};

/* How deep one ls may go: each level is a directory pid 1's worker holds open. */
#define SS_MAX_DEPTH 16u
/* A session's wall clock set from now: ten years at most. */
#define SS_MAX_TIMEOUT_S (10ull * 366 * 86400)

static int bad(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A string of at most max bytes without NUL (jansson's default refuses
 * \u0000 already; json_stringn() could make one). */
static const char *str_member(json_t *o, const char *key, size_t max, bool required, char *err,
			      size_t len, int *r)
{
	json_t *v = json_object_get(o, key);
	const char *s;

	if (!v) {
		if (required)
			*r = bad(err, len, "\"%s\": missing", key);
		return NULL;
	}
	s = json_string_value(v);
	if (!s || strlen(s) != json_string_length(v) || json_string_length(v) > max) {
		*r = bad(err, len, "\"%s\": expected a string of at most %zu bytes", key, max);
		return NULL;
	}
	return s;
}

static int check_keys(json_t *o, const char *const *allowed, char *err, size_t len)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v)
	{
		bool ok = false;

		for (size_t i = 0; allowed[i]; i++)
			ok = ok || strcmp(k, allowed[i]) == 0;
		if (!ok)
			return bad(err, len, "unknown member \"%.64s\"", k);
	}
	return 0;
}

/* One "KEY=VALUE" of an exec's env. */
static int check_env(const char *s, size_t i, char *err, size_t len)
{
	const char *eq = strchr(s, '=');

	if (!eq || eq == s)
		return bad(err, len, "\"env\"[%zu]: expected \"KEY=VALUE\"", i);
	for (const char *c = s; c < eq; c++)
		if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (c > s && *c >= '0' && *c <= '9')))
			return bad(err, len, "\"env\"[%zu]: a name is [A-Za-z_][A-Za-z0-9_]*", i);
	return 0;
}

static int parse_path_op(json_t *o, ss_request *r, char *err, size_t len)
{
	static const char *const keys[] = {"op", "path", "mode", NULL};
	static const char *const ls_keys[] = {"op", "path", "depth", NULL};
	static const char *const mkdir_keys[] = {"op", "path", "parents", NULL};
	static const char *const rename_keys[] = {"op", "path", "to", NULL};
	static const char *const watch_keys[] = {"op", "path", "recursive", NULL};
	json_t *mode = json_object_get(o, "mode");
	int rc = check_keys(o,
			    r->op == SS_OP_LS	    ? ls_keys
			    : r->op == SS_OP_MKDIR  ? mkdir_keys
			    : r->op == SS_OP_RENAME ? rename_keys
			    : r->op == SS_OP_WATCH  ? watch_keys
						    : keys,
			    err, len);

	if (rc < 0)
		return rc;
	r->path = str_member(o, "path", SS_MAX_PATH, true, err, len, &rc);
	if (rc < 0)
		return rc;
	if (!r->path[0])
		return bad(err, len, "\"path\": empty");
	if (r->op == SS_OP_LS) {
		json_t *d = json_object_get(o, "depth");

		r->mode = 1;
		if (d && (!json_is_integer(d) || json_integer_value(d) < 1 ||
			  json_integer_value(d) > SS_MAX_DEPTH))
			return bad(err, len, "\"depth\": expected an integer from 1 to %u",
				   SS_MAX_DEPTH);
		if (d)
			r->mode = (unsigned)json_integer_value(d);
		return 0;
	}
	if (r->op == SS_OP_MKDIR) {
		json_t *pa = json_object_get(o, "parents");

		if (pa && !json_is_boolean(pa))
			return bad(err, len, "\"parents\": expected true or false");
		r->mode = json_is_true(pa);
		return 0;
	}
	if (r->op == SS_OP_WATCH) {
		json_t *re = json_object_get(o, "recursive");

		if (re && !json_is_boolean(re))
			return bad(err, len, "\"recursive\": expected true or false");
		r->mode = json_is_true(re);
		return 0;
	}
	if (r->op == SS_OP_RENAME) {
		r->to = str_member(o, "to", SS_MAX_PATH, true, err, len, &rc);
		if (rc < 0)
			return rc;
		return r->to[0] ? 0 : bad(err, len, "\"to\": empty");
	}
	r->mode = 0644;
	if (mode) {
		json_int_t m = json_integer_value(mode);

		if (r->op != SS_OP_PUT || !json_is_integer(mode) || m < 0 || m > 0777)
			return bad(err, len,
				   "\"mode\": expected a permission from 0 to 0777 (put)");
		r->mode = (unsigned)m;
	}
	return 0;
}

static int u64_member(json_t *o, const char *key, int64_t max, int64_t *ret, char *err, size_t len)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
		return bad(err, len, "\"%s\": expected an integer from 0 to %lld", key,
			   (long long)max);
	*ret = json_integer_value(v);
	return 0;
}

static int parse_workspace(json_t *o, ss_request *r, char *err, size_t len)
{
	static const char *const keys[] = {"op", "workspace", NULL};
	static const char *const applied_keys[] = {"op",     "workspace", "epoch_sec", "epoch_nsec",
						   "paths",  "conflicts", "changed",   "forced",
						   "record", NULL};
	int64_t n[3];
	int rc = check_keys(o, r->op == SS_OP_WORKSPACE ? keys : applied_keys, err, len);

	if (rc < 0)
		return rc;
	r->workspace = str_member(o, "workspace", SS_MAX_WORKSPACE_ID, true, err, len, &rc);
	if (rc < 0 || r->op == SS_OP_WORKSPACE)
		return rc;
	r->record = str_member(o, "record", SS_MAX_PATH, true, err, len, &rc);
	if (rc >= 0)
		rc = u64_member(o, "epoch_sec", INT64_MAX, &r->epoch_sec, err, len);
	if (rc >= 0)
		rc = u64_member(o, "epoch_nsec", 999999999, &r->epoch_nsec, err, len);
	if (rc >= 0)
		rc = u64_member(o, "paths", INT64_MAX, &n[0], err, len);
	if (rc >= 0)
		rc = u64_member(o, "conflicts", INT64_MAX, &n[1], err, len);
	if (rc >= 0)
		rc = u64_member(o, "changed", INT64_MAX, &n[2], err, len);
	if (rc >= 0 && !json_is_boolean(json_object_get(o, "forced")))
		rc = bad(err, len, "\"forced\": expected true or false");
	if (rc < 0)
		return rc;
	r->paths = (uint64_t)n[0];
	r->conflicts = (uint64_t)n[1];
	r->changed = (uint64_t)n[2];
	r->forced = json_is_true(json_object_get(o, "forced"));
	return 0;
}

int ss_request_parse(json_t *o, ss_request *r, char *err, size_t len)
{
	static const char *const only_op[] = {"op", NULL};
	const char *op = json_string_value(json_object_get(o, "op"));
	int rc = -EINVAL;

	memset(r, 0, sizeof(*r));
	r->op = _SS_OP_INVALID;
	if (!json_is_object(o))
		return bad(err, len, "a request is a JSON object");
	for (int i = 0; op && i < _SS_OP_MAX; i++)
		if (op_names[i] && strcmp(op, op_names[i]) == 0)
			r->op = (ss_op)i;
	if (op && (!strcmp(op, "exec") || !strcmp(op, "signal") || !strcmp(op, "go")))
		return bad(err, len,
			   "\"op\": %s is not JSON but a core/ctl.h message (docs/sessions.md, "
			   "\"The client protocol\")",
			   op);
	switch (r->op) {
	case SS_OP_PUT:
	case SS_OP_GET:
	case SS_OP_LS:
	case SS_OP_STAT:
	case SS_OP_MKDIR:
	case SS_OP_REMOVE:
	case SS_OP_RENAME:
	case SS_OP_WATCH:
		rc = parse_path_op(o, r, err, len);
		break;
	case SS_OP_TIMEOUT: {
		static const char *const keys[] = {"op", "seconds", NULL};
		int64_t sec = 0;

		rc = check_keys(o, keys, err, len);
		if (rc >= 0)
			rc = u64_member(o, "seconds", SS_MAX_TIMEOUT_S, &sec, err, len);
		if (rc >= 0 && sec == 0)
			rc = bad(err, len, "\"seconds\": at least 1");
		r->seconds = (uint64_t)sec;
		break;
	}
	case SS_OP_KILL: {
		static const char *const keys[] = {"op", "id", "signal", NULL};
		int64_t id = 0, sig = SIGKILL;

		rc = check_keys(o, keys, err, len);
		if (rc >= 0)
			rc = u64_member(o, "id", UINT32_MAX, &id, err, len);
		if (rc >= 0 && json_object_get(o, "signal"))
			rc = u64_member(o, "signal", NSIG - 1, &sig, err, len);
		if (rc >= 0 && (id == 0 || sig == 0))
			rc = bad(err, len, "\"%s\": at least 1", id == 0 ? "id" : "signal");
		r->id = (uint32_t)id;
		r->signal = (int)sig;
		break;
	}
	case SS_OP_INFO:
	case SS_OP_STOP:
	case SS_OP_BEGIN:
	case SS_OP_COMMANDS:
	case SS_OP_PAUSE:
	case SS_OP_RESUME:
		rc = check_keys(o, only_op, err, len);
		break;
	case SS_OP_WORKSPACE:
	case SS_OP_APPLIED:
		rc = parse_workspace(o, r, err, len);
		break;
	case SS_OP_EXEC:
	case SS_OP_SIGNAL:
	case SS_OP_GO:
	case _SS_OP_MAX:
	case _SS_OP_INVALID:
		rc =
		    bad(err, len,
			"\"op\": expected one of put, get, ls, stat, mkdir, remove, rename, watch, "
			"info, stop, timeout, commands, kill, pause, resume, workspace, "
			"workspace-applied, begin");
		break;
	}
	if (rc < 0)
		return rc;
	r->root = json_incref(o);
	return 0;
}

/* An exec (session/exec-wire.h): cwd, then n_argv strings of argv, then
 * env; the strings stay in buf. */
static int parse_fixed_exec(const ctl_hdr *h, char *p, ss_request *r, char *err, size_t len)
{
	size_t n = 0;

	if (h->flags & ~(CTL_TTY | SX_HOLD | SX_DETACH))
		return bad(err, len, "exec: unknown flags %#x",
			   h->flags & ~(CTL_TTY | SX_HOLD | SX_DETACH));
	if ((h->flags & SX_DETACH) && (h->flags & (CTL_TTY | SX_HOLD)))
		return bad(err, len, "exec: a detached command has no pty and is not held");
	if (h->n_argv < 1 || h->n_argv > SS_MAX_ARGV)
		return bad(err, len, "exec: expected 1 to %u strings of argv", SS_MAX_ARGV);
	if (h->len > CTL_MAX_PAYLOAD)
		return bad(err, len, "argv, env and cwd together exceed %u bytes", CTL_MAX_PAYLOAD);
	for (size_t i = 0; i < h->len; n++) {
		size_t l = strnlen(p + i, h->len - i);
		int rc;

		if (i + l >= h->len)
			return bad(err, len, "exec: the strings must each end with a NUL");
		if (n == 0) {
			if (l > SS_MAX_PATH)
				return bad(err, len, "\"cwd\": expected at most %u bytes",
					   SS_MAX_PATH);
			r->cwd = p + i;
		} else if (n <= h->n_argv) {
			r->argv[r->n_argv++] = p + i;
		} else {
			if (r->n_env >= ELEMENTSOF(r->env) - 1)
				return bad(err, len,
					   "\"env\": expected at most %zu \"KEY=VALUE\" strings",
					   ELEMENTSOF(r->env) - 1);
			rc = check_env(p + i, r->n_env, err, len);
			if (rc < 0)
				return rc;
			r->env[r->n_env++] = p + i;
		}
		i += l + 1;
	}
	if (r->n_argv != h->n_argv)
		return bad(err, len, "exec: %u strings of argv announced, %zu there", h->n_argv,
			   r->n_argv);
	if (r->argv[0][0] == '\0')
		return bad(err, len, "\"argv\"[0]: empty command");
	r->tty = h->flags & CTL_TTY;
	r->hold = h->flags & SX_HOLD;
	r->detach = h->flags & SX_DETACH;
	if (r->tty) {
		r->rows = (uint32_t)h->value >> 16;
		r->cols = (uint32_t)h->value & 0xffff;
	}
	return 0;
}

int ss_request_parse_ctl(char *buf, size_t n, ss_request *r, char *err, size_t len)
{
	ctl_hdr h;
	int rc;

	memset(r, 0, sizeof(*r));
	r->op = _SS_OP_INVALID;
	if (n < sizeof(h))
		return bad(err, len, "a request is one JSON object or one exec message");
	memcpy(&h, buf, sizeof(h));
	if (h.len != n - sizeof(h))
		return bad(err, len, "exec: %u payload bytes announced, %zu there", h.len,
			   n - sizeof(h));
	if (h.id || h.err || h.mode || h.bytes)
		return bad(err, len, "exec: id, err, mode and bytes are 0 in a request");
	if (h.type == CTL_EXEC) {
		r->op = SS_OP_EXEC;
		rc = parse_fixed_exec(&h, buf + sizeof(h), r, err, len);
	} else if (h.type == CTL_SIGNAL) {
		r->op = SS_OP_SIGNAL;
		r->signal = h.value;
		rc = h.len || h.flags || h.n_argv || h.value < 1 || h.value >= NSIG
			 ? bad(err, len, "signal: expected a signal number from 1 to %d", NSIG - 1)
			 : 0;
	} else if (h.type == CTL_GO) {
		r->op = SS_OP_GO;
		rc = h.len || h.flags || h.n_argv || h.value
			 ? bad(err, len, "go: no value, flags or payload")
			 : 0;
	} else {
		rc = bad(err, len,
			 "expected an exec (%d), signal (%d) or go (%d) message, not type %u",
			 CTL_EXEC, CTL_SIGNAL, CTL_GO, h.type);
	}
	if (rc < 0)
		return rc;
	r->raw = buf;
	return 0;
}

void ss_request_done(ss_request *r)
{
	json_decref(r->root);
	r->root = NULL;
	free(r->raw);
	r->raw = NULL;
}

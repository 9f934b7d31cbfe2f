/* SPDX-License-Identifier: MIT */
/* A session's commands over the API: an exec streamed as NDJSON, and the
 * commands the daemon holds (background, stdin, a pty, kill, reattach;
 * serve/commands.h keeps them) (docs/api.md, "Commands"). */
#include "serve/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "serve/backend.h"
#include "serve/child.h"
#include "serve/commands.h"
#include "serve/request.h"
#include "serve/table.h"

/* ---- exec: NDJSON in chunked transfer encoding ---- */

typedef struct exec_stream {
	sv_child child;
	const sv_exec_req *req;
	size_t in_off;
	char *err;
	size_t err_len, err_cap;
	bool saw_final;
	char tail[32]; /* the end of the output so far: did the last line carry exit_code? */
} exec_stream;

/*
 * Relays the exec's NDJSON to the client as it comes, feeding its stdin.
 * Returns 0 when the exec ended, -EPIPE when the client went away (the
 * exec is killed: nobody reads its output, and its sandbox stays usable).
 */
static int relay_exec(sv_conn *c, exec_stream *x)
{
	char buf[SV_READ_CHUNK];

	while (x->child.out >= 0) {
		struct pollfd p[4] = {
		    {.fd = x->child.out, .events = POLLIN},
		    {.fd = x->child.err, .events = POLLIN},
		    {.fd = x->child.in, .events = POLLOUT},
		    {.fd = c->fd, .events = POLLRDHUP},
		};

		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[3].revents & (POLLRDHUP | POLLHUP | POLLERR))
			return -EPIPE;
		if (p[2].revents) {
			ssize_t n = write(x->child.in, x->req->stdin_data + x->in_off,
					  x->req->stdin_len - x->in_off);

			if (n > 0)
				x->in_off += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
			    x->in_off == x->req->stdin_len)
				x->child.in = safe_close(x->child.in);
		}
		if (p[1].revents) {
			ssize_t n = read(x->child.err, buf, sizeof(buf));

			if (n <= 0)
				x->child.err = safe_close(x->child.err);
			else if (x->err_len + (size_t)n < SV_MAX_STDERR) {
				char *np = realloc(x->err, x->err_len + (size_t)n + 1);

				if (np) {
					memcpy(np + x->err_len, buf, (size_t)n);
					x->err_len += (size_t)n;
					np[x->err_len] = 0;
					x->err = np;
				}
			}
		}
		if (p[0].revents) {
			ssize_t n = read(x->child.out, buf, sizeof(buf));

			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				x->child.out = safe_close(x->child.out);
				break;
			}
			if (sv_send_chunk(c->fd, buf, (size_t)n) < 0)
				return -EPIPE;
			if (memmem(buf, (size_t)n, "\"exit_code\"", 11))
				x->saw_final = true;
		}
	}
	return 0;
}

int sv_handle_exec(sv_conn *c, const sv_request *req, const sv_session *s)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	_cleanup_json_ json_t *body = NULL;
	_cleanup_free_ char **argv = NULL;
	sv_exec_req er = {0};
	exec_stream x = {.child = {.pid = 0, .in = -1, .out = -1, .err = -1}};
	json_error_t je;
	sv_error e;
	int r, st = 0;

	body = json_loadb(req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!body)
		return sv_fail_reply(c, 400, "bad_json", "$", je.text);
	if (sv_exec_req_from_json(body, &er, &e) < 0) {
		sv_exec_req_done(&er);
		return sv_reply_error(c, &e);
	}
	argv = sv_exec_argv(c->d->cfg->exe, s->name, &er);
	r = argv ? sv_child_spawn(c->d->cfg->exec_exe ?: c->d->cfg->exe, argv, er.has_stdin,
				  &x.child)
		 : -ENOMEM;
	if (r < 0) {
		sv_exec_req_done(&er);
		return sv_fail_reply(c, 500, "internal", NULL, strerror(-r));
	}
	sv_table_count_exec(&c->d->table, s->name);
	if (x.child.in >= 0) {
		(void)fcntl(x.child.in, F_SETFL, O_NONBLOCK);
		if (er.stdin_len == 0)
			x.child.in = safe_close(x.child.in);
	}
	x.req = &er;
	r = sv_send_all(c->fd, head, sizeof(head) - 1);
	if (r >= 0)
		r = relay_exec(c, &x);
	if (r < 0) {
		/* the client is gone: end the command rather than let it run unread */
		LOG(c->d, "uid %u left during an exec in %s: the command is stopped",
		    (unsigned)c->uid, s->name);
		sv_child_kill(&x.child, 2000);
		c->keep_alive = false;
	} else {
		(void)sv_child_wait(&x.child, &st);
		if (!x.saw_final) {
			sv_capture cap = {.err = x.err, .err_len = x.err_len, .status = st};
			char msg[512];

			sv_capture_message(&cap, msg, sizeof(msg));
			(void)sv_fail(&e, strstr(msg, "no session") ? 404 : 500, "exec_failed",
				      NULL, "%s", msg);
			r = sv_send_error_line(c->fd, &e);
		}
		if (r >= 0)
			r = sv_send_all(c->fd, "0\r\n\r\n", 5);
		if (r < 0)
			c->keep_alive = false;
	}
	free(x.err);
	sv_exec_req_done(&er);
	return 0;
}

/* ---- commands: execs the daemon holds (serve/commands.h) ---- */

static bool client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/*
 * Streams a command's NDJSON: {"pid"} first, then its output and its end.
 * The primary reader (the request that started it) going away stops a
 * command in the foreground; a background one goes on.
 */
static int follow_command(sv_conn *c, sv_cmd *cmd, bool primary)
{
	_cleanup_free_ char *buf = malloc(SV_READ_CHUNK * 4);
	char first[64];
	uint64_t off = 0;
	int n = snprintf(first, sizeof(first), "{\"pid\":%u}\n", sv_cmd_pid(cmd));
	int r = buf ? sv_send_ndjson_head(c->fd) : -ENOMEM;

	if (r >= 0)
		r = sv_send_chunk(c->fd, first, (size_t)n);
	while (r >= 0) {
		ssize_t k =
		    sv_cmd_read(c->d->cmds, cmd, &off, buf, SV_READ_CHUNK * 4, 500, primary);

		if (k == -ENODATA)
			break;
		if (k > 0)
			r = sv_send_chunk(c->fd, buf, (size_t)k);
		else if (client_gone(c->fd))
			r = -EPIPE;
	}
	if (r >= 0)
		r = sv_send_all(c->fd, "0\r\n\r\n", 5);
	if (primary)
		sv_cmd_leave(c->d->cmds, cmd);
	if (r < 0)
		c->keep_alive = false;
	return 0;
}

/* "K=V" strings of the session's envs overlaid with the request's. */
static char **command_env(const sv_session *s, json_t *req_env, sv_error *e)
{
	_cleanup_json_ json_t *all = s->envs[0] ? json_loads(s->envs, 0, NULL) : json_object();
	const char *k;
	json_t *v;
	char **env;
	size_t i = 0;

	if (!all)
		return NULL;
	if (req_env && !json_is_null(req_env)) {
		if (!json_is_object(req_env)) {
			(void)sv_fail(e, 400, "bad_request", "$.envs",
				      "expected an object of strings");
			return NULL;
		}
		json_object_foreach(req_env, k, v)
		{
			if (!json_is_string(v) || !k[0] || strchr(k, '=') ||
			    strlen(json_string_value(v)) != json_string_length(v)) {
				(void)sv_fail(e, 400, "bad_request", "$.envs",
					      "\"%.64s\": expected a name and a string", k);
				return NULL;
			}
			(void)json_object_set(all, k, v);
		}
	}
	if (json_object_size(all) > SV_MAX_ENV) {
		(void)sv_fail(e, 400, "bad_request", "$.envs", "at most %u variables", SV_MAX_ENV);
		return NULL;
	}
	env = calloc(json_object_size(all) + 1, sizeof(*env));
	json_object_foreach(all, k, v)
	{
		if (!env || asprintf(&env[i], "%s=%s", k, json_string_value(v)) < 0) {
			for (size_t j = 0; env && j < i; j++)
				free(env[j]);
			free(env);
			(void)sv_fail(e, 500, "internal", NULL, "out of memory");
			return NULL;
		}
		i++;
	}
	return env;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* {"cols": C, "rows": R}, each 1-65535 (a struct winsize). */
static int pty_size(json_t *o, uint16_t *ret_rows, uint16_t *ret_cols)
{
	json_t *c = json_object_get(o, "cols"), *r = json_object_get(o, "rows");

	if (!json_is_object(o) || json_object_size(o) != 2 || !json_is_integer(c) ||
	    !json_is_integer(r) || json_integer_value(c) < 1 || json_integer_value(c) > 65535 ||
	    json_integer_value(r) < 1 || json_integer_value(r) > 65535)
		return -EINVAL;
	*ret_rows = (uint16_t)json_integer_value(r);
	*ret_cols = (uint16_t)json_integer_value(c);
	return 0;
}

/*
 * POST /v1/sessions/ID/commands {"argv", "cwd", "envs", "user", "timeout",
 * "background", "stdin", "tag", "pty"}: the command's NDJSON, {"pid"} first.
 * With "pty": {"cols", "rows"} it runs on a pty of the session's (the
 * tty exec of `sandcap exec -t`): its output is "pty" lines, its input
 * stays open, .../resize sets its size.
 */
int sv_handle_command_start(sv_conn *c, const sv_request *req, const sv_session *s)
{
	static const char *const keys[] = {"argv",	 "cwd",	  "envs", "user", "timeout",
					   "background", "stdin", "tag",  "pty",  NULL};
	_cleanup_json_ json_t *body = NULL, *info = NULL;
	_cleanup_free_ char **argv = NULL;
	char **env = NULL;
	json_t *a, *v, *t, *cwd, *user, *pty, *envs;
	uint16_t rows = 0, cols = 0;
	const char *k;
	sv_cmd *cmd = NULL;
	json_error_t je;
	char why[600];
	sv_error e;
	size_t n;
	int r;

	body = json_loadb(req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(body))
		return sv_fail_reply(c, 400, "bad_json", "$",
				     body ? "expected an object" : je.text);
	json_object_foreach(body, k, v)
	{
		bool ok = false;

		for (size_t i = 0; keys[i]; i++)
			ok = ok || !strcmp(k, keys[i]);
		if (!ok) {
			(void)sv_fail(&e, 400, "bad_request", "$", "unknown key \"%.64s\"", k);
			return sv_reply_error(c, &e);
		}
	}
	a = json_object_get(body, "argv");
	n = json_array_size(a);
	if (!json_is_array(a) || n < 1 || n > SV_MAX_ARGV)
		return sv_fail_reply(c, 400, "bad_request", "$.argv", "expected 1 to 1024 strings");
	argv = calloc(n + 1, sizeof(*argv));
	if (!argv)
		return sv_fail_reply(c, 500, "internal", NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		v = json_array_get(a, i);
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return sv_fail_reply(c, 400, "bad_request", "$.argv", "expected strings");
		argv[i] = (char *)json_string_value(v);
	}
	cwd = json_object_get(body, "cwd");
	if (cwd && !json_is_null(cwd) && (!json_is_string(cwd) || json_string_value(cwd)[0] != '/'))
		return sv_fail_reply(c, 400, "bad_path", "$.cwd", "expected an absolute path");
	/* One user inside: the agent (uid 1000), as every exec of the session. */
	user = json_object_get(body, "user");
	if (user && !json_is_null(user) &&
	    (!json_is_string(user) || strcmp(json_string_value(user), "user")))
		return sv_fail_reply(
		    c, 403, "forbidden", "$.user",
		    "commands run as the sandbox's one user, \"user\" (the agent, no "
		    "capability); there is no root inside");
	t = json_object_get(body, "timeout");
	if (t && !json_is_null(t) &&
	    (!json_is_number(t) || json_number_value(t) < 0 ||
	     json_number_value(t) > 10 * 366 * 86400.0))
		return sv_fail_reply(c, 400, "bad_request", "$.timeout",
				     "expected seconds, 0 for none");
	pty = json_object_get(body, "pty");
	if (pty && !json_is_null(pty) && pty_size(pty, &rows, &cols) < 0)
		return sv_fail_reply(c, 400, "bad_request", "$.pty",
				     "expected {\"cols\": N, \"rows\": N}, each from 1 to 65535");
	env = command_env(s, json_object_get(body, "envs"), &e);
	if (!env)
		return sv_reply_error(c, &e);
	envs = json_object_get(body, "envs");
	info = json_pack("{s:O, s:o, s:o}", "argv", a, "cwd",
			 json_is_string(cwd) ? json_incref(cwd) : json_null(), "envs",
			 envs ? json_incref(envs) : json_object());
	if (json_is_string(json_object_get(body, "tag")))
		(void)json_object_set(info, "tag", json_object_get(body, "tag"));
	if (json_is_object(pty))
		(void)json_object_set_new(info, "pty", json_true());
	sv_cmd_spec spec = {
	    .session = s->name,
	    .uid = c->uid,
	    .argv = argv,
	    .cwd = json_string_value(cwd),
	    .env = env,
	    .info = info,
	    .background = json_is_true(json_object_get(body, "background")),
	    .keep_stdin = json_is_true(json_object_get(body, "stdin")),
	    .timeout_ms = t ? (uint64_t)(json_number_value(t) * 1000.0) : 0,
	    .pty = json_is_object(pty),
	    .rows = rows,
	    .cols = cols,
	};
	r = sv_cmd_start(c->d->cmds, &spec, &cmd, why, sizeof(why));
	free_strv(env);
	if (r == -EUSERS)
		return sv_fail_reply(
		    c, 429, "quota_exceeded", NULL,
		    "this sandbox holds its most commands (64, running and just ended)");
	if (r == -EREMOTEIO)
		return sv_fail_reply(c, 409, "exec_failed", NULL, why);
	if (r < 0)
		return sv_fail_reply(c, r == -ENOENT ? 404 : 500, "exec_failed", NULL,
				     strerror(-r));
	sv_table_count_exec(&c->d->table, s->name);
	r = follow_command(c, cmd, true);
	sv_cmd_put(c->d->cmds, cmd);
	return r;
}

static int parse_pid(sv_conn *c, const char *s, unsigned *ret)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!s[0] || *end || v == 0 || v > UINT32_MAX) {
		(void)sv_fail_reply(c, 404, "not_found", NULL, "no such command");
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* GET/DELETE /v1/sessions/ID/commands/PID, POST .../PID/stdin and
 * .../PID/resize. */
int sv_handle_command(sv_conn *c, const sv_request *req, const sv_session *s, bool stdin_,
		      bool resize)
{
	const char *m = req->head.method;
	unsigned pid;
	sv_cmd *cmd;
	int r;

	if (parse_pid(c, req->segments[4], &pid) < 0)
		return 0;
	cmd = sv_cmd_find(c->d->cmds, s->name, c->uid, pid);
	if (!cmd)
		return sv_fail_reply(c, 404, "not_found", NULL, "no such command");
	if (resize) {
		_cleanup_json_ json_t *body = json_loadb(req->body ? req->body : "", req->body_len,
							 JSON_REJECT_DUPLICATES, NULL);
		uint16_t rows, cols;

		r = pty_size(body, &rows, &cols);
		if (r < 0)
			r = sv_fail_reply(
			    c, 400, "bad_request", "$",
			    "expected {\"cols\": N, \"rows\": N}, each from 1 to 65535");
		else if ((r = sv_cmd_resize(c->d->cmds, cmd, rows, cols)) == -ENOTTY)
			r = sv_fail_reply(c, 409, "no_pty", NULL,
					  "the command has no pty (start it with \"pty\")");
		else if (r < 0)
			r = sv_fail_reply(c, 404, "not_found", NULL, "the command has ended");
		else
			r = sv_reply_json(c, 200,
					  json_pack("{s:I, s:i, s:i}", "pid", (json_int_t)pid,
						    "cols", (int)cols, "rows", (int)rows));
	} else if (stdin_) {
		const char *eof = sv_request_query(req, "eof");

		r = sv_cmd_stdin(c->d->cmds, cmd, req->body, req->body_len,
				 eof && !strcmp(eof, "1"));
		r = r == -EPIPE	      ? sv_fail_reply(c, 409, "stdin_closed", NULL,
						      "its standard input is closed (start it with "
							    "\"stdin\": true)")
		    : r == -ETIMEDOUT ? sv_fail_reply(c, 408, "timeout", NULL,
						      "the command read nothing for 30 s")
		    : r < 0	      ? sv_fail_reply(c, 500, "internal", NULL, strerror(-r))
				      : sv_reply_json(c, 200,
						      json_pack("{s:I, s:I}", "pid", (json_int_t)pid, "bytes",
								(json_int_t)req->body_len));
	} else if (!strcmp(m, "DELETE")) {
		const char *sig = sv_request_query(req, "signal");
		int n = sig ? atoi(sig) : SIGKILL;

		if (n < 1 || n >= NSIG)
			r = sv_fail_reply(c, 400, "bad_request", "?signal",
					  "expected a signal number");
		else if (sv_cmd_kill(c->d->cmds, cmd, n) < 0)
			r = sv_fail_reply(c, 404, "not_found", NULL, "the command has ended");
		else
			r = sv_reply_json(
			    c, 200, json_pack("{s:I, s:b}", "pid", (json_int_t)pid, "killed", 1));
	} else
		r = follow_command(c, cmd, false);
	sv_cmd_put(c->d->cmds, cmd);
	return r;
}

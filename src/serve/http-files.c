/* SPDX-License-Identifier: MIT */
/* The file endpoints of a session: stat, mkdir, remove, rename, ls, watch,
 * and files streamed in and out, each done by the sandbox's pid 1 under its
 * walls (docs/api.md, "Files"). */
#include "serve/daemon.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/cleanup.h"
#include "base/io.h"
#include "session/session.h"

static int fs_fail(sv_error *e, int err, const char *path)
{
	switch (err) {
	case -ENOENT:
	case -ENOTDIR:
		return sv_fail(e, 404, "no_such_path", NULL, "%s: %s", path, strerror(-err));
	case -EACCES:
	case -EPERM:
	case -EROFS:
		return sv_fail(e, 403, "denied", NULL, "%s: %s", path, strerror(-err));
	case -EEXIST:
	case -ENOTEMPTY:
		return sv_fail(e, 409, "exists", NULL, "%s: %s", path, strerror(-err));
	case -EISDIR:
	case -EINVAL:
	case -ENAMETOOLONG:
	case -EXDEV:
		return sv_fail(e, 400, "bad_path", NULL, "%s: %s", path, strerror(-err));
	case -EAGAIN:
		return sv_fail(e, 409, "paused", NULL,
			       "%s: the sandbox is paused (resume it first)", path);
	default:
		return sv_fail(e, 500, "session_failed", NULL, "%s: %s", path, strerror(-err));
	}
}

/* -errno of an {"error": {"code": "EACCES"}} answer, or -EIO. */
static int answer_errno(json_t *reply)
{
	const char *code =
	    json_string_value(json_object_get(json_object_get(reply, "error"), "code"));

	for (int n = 1; code && n < 134; n++)
		if (strerrorname_np(n) && !strcmp(code, strerrorname_np(n)))
			return -n;
	if (code && !strcmp(code, "paused"))
		return -EAGAIN;
	return code && !strcmp(code, "stopping") ? -ESHUTDOWN : -EIO;
}

/* Starts a file operation: *ret_conn its connection, *ret_fd its pipe. */
static int fs_start(const char *name, json_t *req, int *ret_conn, int *ret_fd, sv_error *e)
{
	_cleanup_json_ json_t *reply = NULL;
	int fds[1] = {-1};
	size_t n = 0;
	int r = sc_session_request(name, req, ret_conn, &reply, fds, 1, &n);

	if (r == -EREMOTEIO)
		r = answer_errno(reply);
	if (r < 0)
		return fs_fail(e, r, json_string_value(json_object_get(req, "path")) ?: "");
	if (n != 1) {
		*ret_conn = safe_close(*ret_conn);
		return sv_fail(e, 500, "session_failed", NULL, "no pipe from the session");
	}
	*ret_fd = fds[0];
	return 0;
}

/* Its end: 0 (*ret_bytes), or e filled. */
static int fs_end(int conn, const char *path, uint64_t *ret_bytes, sv_error *e)
{
	_cleanup_json_ json_t *m = NULL;
	int r = sc_session_recv(conn, &m);

	if (r >= 0 && json_object_get(m, "error"))
		r = answer_errno(m);
	if (r < 0)
		return fs_fail(e, r, path);
	if (ret_bytes)
		*ret_bytes = (uint64_t)json_integer_value(json_object_get(m, "bytes"));
	return 0;
}

/* An operation whose pipe brings at most max bytes (stat, ls, mkdir...). */
static int fs_small(const char *name, json_t *req, char **ret_data, size_t *ret_len, size_t max,
		    sv_error *e)
{
	_cleanup_close_ int conn = -1, fd = -1;
	_cleanup_free_ char *data = NULL;
	const char *path = json_string_value(json_object_get(req, "path")) ?: "";
	size_t len = 0;
	int r = fs_start(name, req, &conn, &fd, e);

	if (r < 0)
		return r;
	r = io_read_all(fd, max, &data, &len);
	if (r < 0) {
		(void)sv_fail(e, r == -EFBIG ? 413 : 500, r == -EFBIG ? "too_large" : "internal",
			      NULL, "%s: %s", path, strerror(-r));
		return r;
	}
	r = fs_end(conn, path, NULL, e);
	if (r < 0)
		return r;
	if (ret_data) {
		*ret_data = TAKE_PTR(data);
		*ret_len = len;
	}
	return 0;
}

static const char *type_name(char t)
{
	return t == 'f' ? "file" : t == 'd' ? "dir" : t == 'l' ? "symlink" : "other";
}

/* One record into {"name", "path", "type", "size", "mode", "mtime"}. */
static json_t *entry_json(const char *rec, size_t len, const char *dir)
{
	sc_dir_entry en;
	const char *name;
	char *full = NULL;
	json_t *o;

	/* the name may be longer than sc_dir_entry's: parse the fields, take the name here */
	if (len < 2 || sc_dir_entry_parse(rec, len < 200 ? len : 200, &en) < 0)
		return NULL;
	name = rec;
	for (int i = 0; i < 4 && name; i++) {
		name = memchr(name, '\t', len - (size_t)(name - rec));
		if (name)
			name++;
	}
	if (!name)
		return NULL;
	if (dir && name[0] != '/' &&
	    asprintf(&full, "%s%s%.*s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
		     (int)(len - (size_t)(name - rec)), name) < 0)
		return NULL;
	o = json_pack("{s:s#, s:s, s:s, s:I, s:i, s:I}", "path", full ? full : name,
		      (int)(full ? strlen(full) : len - (size_t)(name - rec)), "name", "", "type",
		      type_name(en.type), "size", (json_int_t)en.size, "mode", (int)en.mode,
		      "mtime", (json_int_t)en.mtime);
	if (o) {
		const char *p = json_string_value(json_object_get(o, "path"));
		const char *slash = strrchr(p, '/');

		(void)json_object_set_new(o, "name",
					  json_string(slash && slash[1] ? slash + 1 : p));
	}
	free(full);
	return o;
}

/* GET .../stat?path=P, GET .../ls?path=P&depth=N, POST .../mkdir?path=P,
 * DELETE .../files?path=P, POST .../rename?path=P&to=Q. */
/*
 * GET /v1/sessions/ID/watch?path=P&recursive=1: the changes in directory P
 * of the sandbox, by inotify inside (the session's op "watch"), as NDJSON
 * {"type": "create"|"write"|"remove"|"rename"|"chmod"|"overflow", "name"}
 * (name relative to P), from the moment the answer's head is sent until the
 * client goes away (the watch is then killed).
 */
int sv_handle_watch(sv_conn *c, const sv_request *req, const sv_session *s)
{
	_cleanup_json_ json_t *q = NULL;
	_cleanup_close_ int conn = -1, fd = -1;
	_cleanup_free_ char *buf = malloc(SV_READ_CHUNK + 1);
	const char *path, *rec = sv_request_query(req, "recursive");
	size_t have = 0;
	bool ready = false;
	sv_error e;
	int r = 0;

	if (sv_query_path(c, req, true, &path) < 0)
		return 0;
	q = json_pack("{s:s, s:s, s:b}", "op", "watch", "path", path, "recursive",
		      rec && !strcmp(rec, "1"));
	if (!q || !buf)
		return sv_fail_reply(c, 500, "internal", NULL, "out of memory");
	if (fs_start(s->name, q, &conn, &fd, &e) < 0)
		return sv_reply_error(c, &e);
	while (r >= 0) {
		struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
				      {.fd = c->fd, .events = POLLRDHUP}};
		char *nl;
		ssize_t n;

		if (poll(p, 2, ready ? 1000 : 10000) == 0 && !ready)
			return sv_fail_reply(c, 500, "session_failed", NULL,
					     "the watch did not start");
		if (p[1].revents) {
			r = -EPIPE;
			break;
		}
		if (!p[0].revents)
			continue;
		n = read(fd, buf + have, SV_READ_CHUNK - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Its end: an error of the start, or the session ended. */
			if (!ready) {
				int er = fs_end(conn, path, NULL, &e);

				return er < 0 ? sv_reply_error(c, &e)
					      : sv_fail_reply(c, 500, "session_failed", NULL,
							      "the watch ended at its start");
			}
			break;
		}
		have += (size_t)n;
		while ((nl = memchr(buf, '\n', have))) {
			size_t len = (size_t)(nl - buf) + 1;
			char *tab = memchr(buf, '\t', len - 1);

			if (!ready) {
				ready = true;
				r = sv_send_ndjson_head(c->fd);
			} else if (tab) {
				_cleanup_json_ json_t *o = json_pack(
				    "{s:s%, s:o}", "type", buf, (size_t)(tab - buf), "name",
				    au_str(tab + 1, (size_t)(nl - tab - 1), AU_STR_MAX_BYTES));
				_cleanup_free_ char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;

				if (line) {
					size_t l = strlen(line);

					line[l] = '\n'; /* over the NUL */
					r = sv_send_chunk(c->fd, line, l + 1);
				}
			}
			memmove(buf, buf + len, have - len);
			have -= len;
			if (r < 0)
				break;
		}
		if (have == SV_READ_CHUNK)
			have = 0; /* no line is that long: not ours */
	}
	if (r >= 0)
		r = sv_send_all(c->fd, "0\r\n\r\n", 5);
	if (r < 0)
		c->keep_alive = false;
	return 0;
}

int sv_handle_fs(sv_conn *c, const sv_request *req, const sv_session *s, const char *op)
{
	_cleanup_json_ json_t *q = NULL;
	_cleanup_free_ char *data = NULL;
	const char *path, *to = sv_request_query(req, "to");
	const char *depth = sv_request_query(req, "depth");
	size_t len = 0;
	sv_error e;

	if (sv_query_path(c, req, !!strcmp(op, "ls"), &path) < 0)
		return 0;
	q = json_pack("{s:s, s:s}", "op", op, "path", path);
	if (!q)
		return sv_fail_reply(c, 500, "internal", NULL, "out of memory");
	if (!strcmp(op, "rename")) {
		if (!to || to[0] != '/' || strlen(to) >= PATH_MAX)
			return sv_fail_reply(c, 400, "bad_path", "?to",
					     "expected ?to=ABSOLUTE-PATH");
		(void)json_object_set_new(q, "to", json_string(to));
	}
	if (!strcmp(op, "mkdir"))
		(void)json_object_set_new(q, "parents", json_true());
	if (!strcmp(op, "ls") && depth) {
		int d = atoi(depth);

		if (d < 1 || d > 16)
			return sv_fail_reply(c, 400, "bad_request", "?depth", "expected 1 to 16");
		(void)json_object_set_new(q, "depth", json_integer(d));
	}
	if (!strcmp(op, "mkdir")) {
		/* made, or there already: E2B's make_dir answers which */
		_cleanup_json_ json_t *st = json_pack("{s:s, s:s}", "op", "stat", "path", path);
		bool existed = st && fs_small(s->name, st, NULL, NULL, 8192, &e) == 0;

		if (!existed && fs_small(s->name, q, NULL, NULL, 0, &e) < 0)
			return sv_reply_error(c, &e);
		return sv_reply_json(c, 200,
				     json_pack("{s:s, s:b}", "path", path, "created", !existed));
	}
	if (fs_small(s->name, q, &data, &len, 64u << 20, &e) < 0)
		return sv_reply_error(c, &e);
	if (!strcmp(op, "stat")) {
		json_t *o = entry_json(data, len ? len - 1 : 0, NULL);

		return o ? sv_reply_json(c, 200, o)
			 : sv_fail_reply(c, 500, "session_failed", NULL, "a bad record");
	}
	if (!strcmp(op, "ls")) {
		json_t *list = json_array();

		for (size_t at = 0; at < len && list;) {
			size_t l = strnlen(data + at, len - at);
			json_t *o = entry_json(data + at, l, path);

			if (o)
				(void)json_array_append_new(list, o);
			at += l + 1;
		}
		return sv_reply_json(c, 200,
				     json_pack("{s:s, s:o}", "path", path, "entries", list));
	}
	return sv_reply_json(c, 200, json_pack("{s:s}", "path", !strcmp(op, "rename") ? to : path));
}

/* GET .../files?path=P: streamed as the sandbox reads it, any size. */
int sv_handle_get_stream(sv_conn *c, const sv_request *req, const sv_session *s)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	_cleanup_json_ json_t *q = NULL;
	_cleanup_close_ int conn = -1, fd = -1;
	_cleanup_free_ char *buf = malloc(SV_READ_CHUNK);
	const char *path;
	ssize_t n;
	sv_error e;
	int r;

	if (sv_query_path(c, req, true, &path) < 0)
		return 0;
	q = json_pack("{s:s, s:s}", "op", "get", "path", path);
	if (!q || !buf)
		return sv_fail_reply(c, 500, "internal", NULL, "out of memory");
	if (fs_start(s->name, q, &conn, &fd, &e) < 0)
		return sv_reply_error(c, &e);
	/* The status waits for the first bytes, or the end: a refusal (no such
	 * file, the walls) comes before any data. */
	do
		n = read(fd, buf, SV_READ_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		if (fs_end(conn, path, NULL, &e) < 0)
			return sv_reply_error(c, &e);
		return sv_reply(c, 200, "application/octet-stream", "", 0);
	}
	r = sv_send_all(c->fd, head, sizeof(head) - 1);
	while (r >= 0 && n > 0) {
		r = sv_send_chunk(c->fd, buf, (size_t)n);
		do
			n = read(fd, buf, SV_READ_CHUNK);
		while (n < 0 && errno == EINTR);
	}
	/* A failure midway ends the answer without its last chunk: the client
	 * sees it cut, never a short file taken for whole. */
	if (r >= 0 && n == 0 && fs_end(conn, path, NULL, &e) == 0)
		r = sv_send_all(c->fd, "0\r\n\r\n", 5);
	else
		r = -EIO;
	if (r < 0)
		c->keep_alive = false;
	return 0;
}

/* PUT .../files?path=P with Content-Length: the body goes to the sandbox
 * as it arrives, never whole in the daemon (any size; the sandbox's
 * limits.fsize and its disk bound it). No progress for SV_BODY_S ends it. */
int sv_handle_put_stream(sv_conn *c, sv_request *req, const sv_session *s)
{
	_cleanup_json_ json_t *q = NULL;
	_cleanup_close_ int conn = -1, fd = -1;
	_cleanup_free_ char *buf = malloc(SV_READ_CHUNK);
	uint64_t left = req->head.content_length, bytes = 0;
	const char *path;
	int r = 0;
	sv_error e;

	c->keep_alive = false; /* unless the whole body is taken, below */
	if (sv_query_path(c, req, true, &path) < 0)
		return 0;
	q = json_pack("{s:s, s:s}", "op", "put", "path", path);
	if (!q || !buf)
		return sv_fail_reply(c, 500, "internal", NULL, "out of memory");
	if (fs_start(s->name, q, &conn, &fd, &e) < 0)
		return sv_reply_error(c, &e);
	if (req->head.expect_continue &&
	    sv_send_all(c->fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
		return 0;
	{ /* what came with the head */
		size_t have = c->len - req->consumed, take = have < left ? have : (size_t)left;

		r = io_write_all(fd, c->buf + req->consumed, take);
		req->consumed += take;
		left -= take;
	}
	while (r >= 0 && left > 0) {
		ssize_t n;

		if (sv_wait_bytes(c->fd, sv_mono_ms() + 1000 * SV_BODY_S) == 0) {
			r = -ETIMEDOUT;
			break;
		}
		n = recv(c->fd, buf, left < SV_READ_CHUNK ? (size_t)left : SV_READ_CHUNK, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = -EPIPE;
			break;
		}
		left -= (uint64_t)n;
		r = io_write_all(fd, buf, (size_t)n);
	}
	fd = safe_close(fd);
	if (r == -EPIPE && left > 0)
		return 0; /* the client went away: the sandbox's file ends where it stopped */
	if (r == -ETIMEDOUT)
		return sv_fail_reply(c, 408, "timeout", NULL, "the body made no progress for 60 s");
	if (fs_end(conn, path, &bytes, &e) < 0)
		return sv_reply_error(c, &e);
	if (r < 0)
		return sv_fail_reply(c, 500, "session_failed", NULL, strerror(-r));
	c->keep_alive = req->head.keep_alive;
	return sv_reply_json(c, 200,
			     json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)bytes));
}

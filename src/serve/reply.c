/* SPDX-License-Identifier: MIT */
/* Answering a request on the daemon's socket: whole, JSON, chunked. */
#include "serve/daemon.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"

int sv_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static const char *status_text(int status)
{
	switch (status) {
	case 201:
		return "Created";
	case 409:
		return "Conflict";
	default:
		return px_http_status_text(status);
	}
}

int sv_reply(sv_conn *c, int status, const char *ctype, const void *body, size_t len)
{
	char head[256];
	int n =
	    snprintf(head, sizeof(head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n", status,
		     status_text(status), ctype, len, c->keep_alive ? "" : "Connection: close\r\n");
	int r = sv_send_all(c->fd, head, (size_t)n);

	if (r >= 0 && len)
		r = sv_send_all(c->fd, body, len);
	if (r < 0)
		c->keep_alive = false;
	return r;
}

int sv_reply_json(sv_conn *c, int status, json_t *o)
{
	_cleanup_free_ char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	int r;

	json_decref(o);
	if (!s)
		return sv_reply(
		    c, 500, "application/json",
		    "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}\n", 58);
	size_t n = strlen(s);
	char *p = realloc(s, n + 2);

	if (!p)
		return -ENOMEM;
	s = p;
	s[n] = '\n';
	s[n + 1] = 0;
	r = sv_reply(c, status, "application/json", s, n + 1);
	return r;
}

json_t *sv_error_json(const sv_error *e)
{
	json_t *err = json_pack("{s:s, s:s}", "code", e->code, "message", e->message);

	if (err && e->path[0])
		(void)json_object_set_new(err, "path", json_string(e->path));
	return json_pack("{s:o}", "error", err);
}

int sv_reply_error(sv_conn *c, const sv_error *e)
{
	return sv_reply_json(c, e->status ? e->status : 500, sv_error_json(e));
}

int sv_fail_reply(sv_conn *c, int status, const char *code, const char *path, const char *msg)
{
	sv_error e;

	(void)sv_fail(&e, status, code, path, "%s", msg);
	return sv_reply_error(c, &e);
}

/* ---- the pool ---- */

int sv_send_chunk(int fd, const char *data, size_t len)
{
	char size[24];
	int n = snprintf(size, sizeof(size), "%zx\r\n", len);
	int r = sv_send_all(fd, size, (size_t)n);

	if (r >= 0)
		r = sv_send_all(fd, data, len);
	return r >= 0 ? sv_send_all(fd, "\r\n", 2) : r;
}

int sv_send_error_line(int fd, const sv_error *e)
{
	_cleanup_json_ json_t *o = sv_error_json(e);
	_cleanup_free_ char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	char line[1024];
	int n;

	if (!s)
		return -ENOMEM;
	n = snprintf(line, sizeof(line), "%s\n", s);
	return sv_send_chunk(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}
int64_t sv_mono_ms(void)
{
	struct timespec t;

	(void)clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}
int sv_wait_bytes(int fd, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - sv_mono_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n;

		if (left <= 0)
			return 0;
		n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		return n != 0;
	}
}

int sv_send_ndjson_head(int fd)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";

	return sv_send_all(fd, head, sizeof(head) - 1);
}

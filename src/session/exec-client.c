/* SPDX-License-Identifier: MIT */
/* The client side of exec (session/exec-wire.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdpass.h"
#include "session/exec-wire.h"
#include "session/locate.h"

/* Appends s and its NUL at *at; false when it does not fit. */
static bool put_str(char *buf, size_t *at, const char *s)
{
	size_t l = strlen(s) + 1;

	if (l > CTL_MAX_PAYLOAD - *at)
		return false;
	memcpy(buf + *at, s, l);
	*at += l;
	return true;
}

/* The fds of an exec's first answer into h: 3 (stdin, stdout, stderr) or,
 * with tty, 1 (the pty master), none detached. -EPROTO (and the fds
 * closed) for another count. */
static int take_fds(sx_handle *h, const sx_req *q, const int *fds, size_t n)
{
	bool tty = q->tty;

	if (n != (q->detach ? 0u : tty ? 1u : 3u)) {
		fdpass_close(fds, n);
		return -EPROTO;
	}
	if (q->detach) {
		return 0;
	} else if (tty) {
		h->pty_fd = fds[0];
	} else {
		h->stdin_fd = fds[0];
		h->stdout_fd = fds[1];
		h->stderr_fd = fds[2];
	}
	return 0;
}

int sx_exec(const char *name, const sx_req *q, sx_handle *ret, char *why, size_t why_len)
{
	_cleanup_free_ char *buf = malloc(CTL_MAX_PAYLOAD + 1);
	_cleanup_close_ int conn = -1;
	ctl_hdr h = {.type = CTL_EXEC,
		     .flags = (q->tty ? CTL_TTY : 0) | (q->hold ? SX_HOLD : 0) |
			      (q->detach ? SX_DETACH : 0)};
	int fds[CTL_MAX_FDS];
	size_t at = 0, n_fds = 0;
	int r;

	*ret =
	    (sx_handle){.conn = -1, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1, .pty_fd = -1};
	if (why_len)
		why[0] = '\0';
	if (!buf)
		return -ENOMEM;
	if (!put_str(buf, &at, q->cwd ? q->cwd : ""))
		return -E2BIG;
	for (; q->argv[h.n_argv]; h.n_argv++)
		if (!put_str(buf, &at, q->argv[h.n_argv]))
			return -E2BIG;
	for (size_t i = 0; q->env && q->env[i]; i++)
		if (!put_str(buf, &at, q->env[i]))
			return -E2BIG;
	h.len = (uint32_t)at;
	if (q->tty)
		h.value = (int32_t)((uint32_t)q->rows << 16 | q->cols);
	r = ss_connect(name, &conn);
	if (r < 0)
		return r;
	r = ctl_send(conn, &h, buf, NULL, 0);
	if (r < 0)
		return r == -EPIPE ? -ECONNRESET : r;
	{
		struct iovec iov = {.iov_base = buf, .iov_len = CTL_MAX_PAYLOAD};
		int mflags;
		ssize_t n = fdpass_recv(conn, &iov, 1, 0, fds, CTL_MAX_FDS, &n_fds, &mflags);

		if (n < 0)
			return (int)n;
		if (n == 0 && n_fds == 0)
			return -ECONNRESET;
		buf[n] = '\0';
		/* Refused before it read our form (too many connections): JSON. */
		if (buf[0] == '{') {
			fdpass_close(fds, n_fds);
			snprintf(why, why_len, "%s", buf);
			return -EREMOTEIO;
		}
		if ((size_t)n < sizeof(h) || (mflags & (MSG_TRUNC | MSG_CTRUNC))) {
			fdpass_close(fds, n_fds);
			return -EPROTO;
		}
		memcpy(&h, buf, sizeof(h));
		if (h.type != CTL_STARTED || h.len != (size_t)n - sizeof(h)) {
			fdpass_close(fds, n_fds);
			return -EPROTO;
		}
		if (h.err) {
			fdpass_close(fds, n_fds);
			snprintf(why, why_len, "%.*s", (int)strnlen(buf + sizeof(h), h.len),
				 buf + sizeof(h));
			return -EREMOTEIO;
		}
	}
	r = take_fds(ret, q, fds, n_fds);
	ret->id = h.id;
	if (r >= 0 && !q->detach)
		ret->conn = TAKE_FD(conn);
	return r;
}

int sx_exec_go(const sx_handle *h)
{
	ctl_hdr m = {.type = CTL_GO};

	return ctl_send(h->conn, &m, NULL, NULL, 0);
}

int sx_exec_signal(const sx_handle *h, int sig)
{
	ctl_hdr m = {.type = CTL_SIGNAL, .value = sig};

	return ctl_send(h->conn, &m, NULL, NULL, 0);
}

int sx_exec_wait(sx_handle *h, sx_result *ret)
{
	char why[600];
	int fds[CTL_MAX_FDS];
	size_t n_fds;
	ctl_hdr m;
	int r;

	memset(ret, 0, sizeof(*ret));
	/* A CTL_STARTED now is the supervisor's complaint about a later
	 * message of ours (a signal or go it refused): not the result. */
	do
		r = ctl_recv(h->conn, &m, why, sizeof(why), fds, 0, &n_fds);
	while (r >= 0 && m.type == CTL_STARTED);
	h->conn = safe_close(h->conn);
	if (r < 0)
		return r == -EPIPE ? -ECONNRESET : r;
	if (m.type != CTL_EXITED)
		return -EPROTO;
	ret->exit_code = m.value;
	ret->signal = (int)m.mode;
	ret->flags = m.flags;
	ret->duration_ms = m.bytes;
	ret->err = m.err;
	return 0;
}

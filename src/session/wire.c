/* SPDX-License-Identifier: MIT */
#include "session/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdpass.h"
#include "base/unix-addr.h"
#include "session/session.h"

int ss_send(int sock, const json_t *o, const int *fds, size_t n)
{
	_cleanup_free_ char *s = json_dumps(o, JSON_COMPACT);
	struct iovec iov;
	size_t len;
	ssize_t w;

	if (!s)
		return -ENOMEM;
	len = strlen(s);
	if (len > SS_MAX_MSG || n > SS_MAX_FDS)
		return -E2BIG;
	iov = (struct iovec){.iov_base = s, .iov_len = len};
	w = fdpass_send(sock, &iov, 1, fds, n);
	if (w < 0)
		return (int)w;
	return (size_t)w == len ? 0 : -EIO;
}

int ss_recv(int sock, int flags, json_t **ret, int *fds, size_t max, size_t *ret_n)
{
	_cleanup_free_ char *buf = malloc(SS_MAX_MSG + 1);
	struct iovec iov = {.iov_base = buf, .iov_len = SS_MAX_MSG + 1};
	size_t got = 0;
	int mflags;
	ssize_t n;
	json_t *o;

	*ret = NULL;
	*ret_n = 0;
	if (!buf)
		return -ENOMEM;
	n = fdpass_recv(sock, &iov, 1, flags, fds, max, &got, &mflags);
	if (n < 0)
		return (int)n;
	if (n == 0 && got == 0)
		return -EPIPE;
	o = (size_t)n <= SS_MAX_MSG && !(mflags & (MSG_TRUNC | MSG_CTRUNC))
		? json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL)
		: NULL;
	if (!json_is_object(o)) {
		json_decref(o);
		fdpass_close(fds, got);
		return -EBADMSG;
	}
	*ret = o;
	*ret_n = got;
	return 0;
}

int ss_connect(const char *name, int *ret_fd)
{
	char dir[4096];
	_cleanup_close_ int fd = -1;
	int r;

	if (!sc_session_name_valid(name))
		return -EINVAL;
	r = sc_session_dir(false, dir, sizeof(dir));
	if (r < 0)
		return r;
	if ((size_t)snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", name) >=
	    sizeof(dir) - strlen(dir))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = unix_connect_in(fd, dir, SS_SOCKET);
	if (r < 0)
		return r == -ECONNREFUSED ? -ENOENT : r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

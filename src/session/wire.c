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
#include "session/session.h"

int ss_send(int sock, const json_t *o, const int *fds, size_t n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SS_MAX_FDS)];
		struct cmsghdr align;
	} u;
	_cleanup_free_ char *s = json_dumps(o, JSON_COMPACT);
	struct iovec iov;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	size_t len;

	if (!s)
		return -ENOMEM;
	len = strlen(s);
	if (len > SS_MAX_MSG || n > SS_MAX_FDS)
		return -E2BIG;
	iov = (struct iovec){.iov_base = s, .iov_len = len};
	if (n > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	for (;;) {
		ssize_t w = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		return (size_t)w == len ? 0 : -EIO;
	}
}

int ss_recv(int sock, int flags, json_t **ret, int *fds, size_t max, size_t *ret_n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SS_MAX_FDS)];
		struct cmsghdr align;
	} u;
	_cleanup_free_ char *buf = malloc(SS_MAX_MSG + 1);
	struct iovec iov = {.iov_base = buf, .iov_len = SS_MAX_MSG + 1};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	size_t got = 0;
	ssize_t n;
	json_t *o;

	*ret = NULL;
	*ret_n = 0;
	if (!buf)
		return -ENOMEM;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < max)
				fds[got++] = fd;
			else
				(void)close(fd);
		}
	}
	if (n == 0 && got == 0)
		return -EPIPE;
	o = (size_t)n <= SS_MAX_MSG && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		? json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL)
		: NULL;
	if (!json_is_object(o)) {
		json_decref(o);
		for (size_t i = 0; i < got; i++)
			(void)close(fds[i]);
		return -EBADMSG;
	}
	*ret = o;
	*ret_n = got;
	return 0;
}

int ss_connect(const char *name, int *ret_fd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[4096];
	_cleanup_close_ int fd = -1;
	int r;

	if (!sc_session_name_valid(name))
		return -EINVAL;
	r = sc_session_dir(false, dir, sizeof(dir));
	if (r < 0)
		return r;
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s/" SS_SOCKET, dir, name) >=
	    sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return errno == ECONNREFUSED ? -ENOENT : -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

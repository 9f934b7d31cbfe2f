/* SPDX-License-Identifier: MIT */
#include "core/sync.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int sync_send(int sock, const sync_msg *m, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		return (size_t)n == sizeof(*m) ? 0 : -EIO;
	}
}

int sync_recv(int sock, sync_msg *m, int *ret_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	ssize_t n;

	if (ret_fd)
		*ret_fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int))) {
			int fd;

			memcpy(&fd, CMSG_DATA(c), sizeof(int));
			if (ret_fd && *ret_fd < 0)
				*ret_fd = fd;
			else
				(void)close(fd);
		}
	}
	if (n == 0)
		return -EPIPE;
	if ((size_t)n != sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || m->type <= 0 ||
	    m->type >= _SYNC_TYPE_MAX) {
		if (ret_fd && *ret_fd >= 0) {
			(void)close(*ret_fd);
			*ret_fd = -1;
		}
		return -EPROTO;
	}
	m->step[sizeof(m->step) - 1] = '\0';
	m->what[sizeof(m->what) - 1] = '\0';
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include "base/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

ssize_t fdpass_send(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = n_iov};

	if (n_fds > FDPASS_MAX_FDS)
		return -EINVAL;
	if (n_fds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : n;
	}
}

void fdpass_close(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		(void)close(fds[i]);
}

ssize_t fdpass_recv(int sock, struct iovec *iov, size_t n_iov, int flags, int *fds, size_t max,
		    size_t *ret_n, int *ret_flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = iov,
			    .msg_iovlen = n_iov,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	size_t got = 0;
	ssize_t n;

	*ret_n = 0;
	*ret_flags = 0;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	while (n < 0 && (errno == EINTR || errno == ECONNRESET));
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
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
	*ret_n = got;
	*ret_flags = mh.msg_flags;
	return n;
}

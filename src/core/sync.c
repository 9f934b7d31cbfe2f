/* SPDX-License-Identifier: MIT */
#include "core/sync.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int sync_send_fds(int sock, const sync_msg *m, const int *fds, size_t n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SYNC_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (n_fds > SYNC_MAX_FDS)
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
		if (n < 0)
			return -errno;
		return (size_t)n == sizeof(*m) ? 0 : -EIO;
	}
}

int sync_send(int sock, const sync_msg *m, int fd)
{
	return sync_send_fds(sock, m, &fd, fd >= 0 ? 1 : 0);
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		(void)close(fds[i]);
}

int sync_recv_fds(int sock, sync_msg *m, int *fds, size_t max_fds, size_t *ret_n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SYNC_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	size_t got = 0;
	ssize_t n;

	*ret_n = 0;
	/* ECONNRESET: the peer closed with a message of ours unread
	 * (net/unix/af_unix.c, unix_release_sock). The error is reported once,
	 * before what the peer had sent, which is still queued: read on. */
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && (errno == EINTR || errno == ECONNRESET));
	if (n < 0)
		return -errno;
	/* Every fd that arrived is either handed out or closed: a peer cannot
	 * make us leak descriptors by sending more than we asked for. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < max_fds)
				fds[got++] = fd;
			else
				(void)close(fd);
		}
	}
	if (n == 0) {
		close_all(fds, got);
		return -EPIPE;
	}
	if ((size_t)n != sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || m->type <= 0 ||
	    m->type >= _SYNC_TYPE_MAX) {
		close_all(fds, got);
		return -EPROTO;
	}
	m->step[sizeof(m->step) - 1] = '\0';
	m->what[sizeof(m->what) - 1] = '\0';
	*ret_n = got;
	return 0;
}

int sync_recv(int sock, sync_msg *m, int *ret_fd)
{
	int fds[1];
	size_t n;
	int r = sync_recv_fds(sock, m, fds, ret_fd ? 1 : 0, &n);

	if (ret_fd)
		*ret_fd = n > 0 ? fds[0] : -1;
	return r;
}

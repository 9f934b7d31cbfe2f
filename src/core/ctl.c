/* SPDX-License-Identifier: MIT */
#include "core/ctl.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int ctl_send(int sock, const ctl_hdr *hdr, const void *payload, const int *fds, size_t n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * CTL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = {{.iov_base = (void *)hdr, .iov_len = sizeof(*hdr)},
			       {.iov_base = (void *)payload, .iov_len = hdr->len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = hdr->len ? 2 : 1};

	if (n_fds > CTL_MAX_FDS || hdr->len > CTL_MAX_PAYLOAD)
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
		return (size_t)n == sizeof(*hdr) + hdr->len ? 0 : -EIO;
	}
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		(void)close(fds[i]);
}

int ctl_recv(int sock, ctl_hdr *hdr, char *buf, size_t buf_len, int *fds, size_t max_fds,
	     size_t *ret_n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * CTL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = {{.iov_base = hdr, .iov_len = sizeof(*hdr)},
			       {.iov_base = buf, .iov_len = buf_len > 0 ? buf_len - 1 : 0}};
	struct msghdr mh = {
	    .msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	size_t got = 0;
	ssize_t n;

	*ret_n = 0;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && (errno == EINTR || errno == ECONNRESET));
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
			if (got < max_fds)
				fds[got++] = fd;
			else
				(void)close(fd);
		}
	}
	if (n == 0 && got == 0)
		return -EPIPE;
	if ((size_t)n < sizeof(*hdr) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    hdr->len != (size_t)n - sizeof(*hdr) || hdr->len > CTL_MAX_PAYLOAD || hdr->type == 0 ||
	    hdr->type >= _CTL_TYPE_MAX) {
		close_fds(fds, got);
		return -EPROTO;
	}
	if (buf_len > 0)
		buf[hdr->len] = '\0';
	*ret_n = got;
	return 0;
}

int ctl_split(char *payload, size_t len, char **v, size_t max, size_t *ret_n)
{
	size_t n = 0;

	for (size_t i = 0; i < len;) {
		size_t l = strnlen(payload + i, len - i);

		if (i + l >= len)
			return -EPROTO; /* the last string has no NUL */
		if (n >= max)
			return -E2BIG;
		v[n++] = payload + i;
		i += l + 1;
	}
	v[n] = NULL;
	*ret_n = n;
	return 0;
}

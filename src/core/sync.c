/* SPDX-License-Identifier: MIT */
#include "core/sync.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fdpass.h"

_Static_assert(SYNC_MAX_FDS <= FDPASS_MAX_FDS, "the setup socket sends more fds than fdpass takes");

int sync_send_fds(int sock, const sync_msg *m, const int *fds, size_t n_fds)
{
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	ssize_t n;

	if (n_fds > SYNC_MAX_FDS)
		return -EINVAL;
	n = fdpass_send(sock, &iov, 1, fds, n_fds);
	if (n < 0)
		return (int)n;
	return (size_t)n == sizeof(*m) ? 0 : -EIO;
}

int sync_send(int sock, const sync_msg *m, int fd)
{
	return sync_send_fds(sock, m, &fd, fd >= 0 ? 1 : 0);
}

int sync_recv_fds(int sock, sync_msg *m, int *fds, size_t max_fds, size_t *ret_n)
{
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	size_t got = 0;
	int flags;
	/* ECONNRESET (the peer closed with a message of ours unread) is read
	 * past by fdpass_recv(): what the peer had sent is still queued. */
	ssize_t n = fdpass_recv(sock, &iov, 1, 0, fds, max_fds, &got, &flags);

	*ret_n = 0;
	if (n < 0)
		return (int)n;
	if (n == 0) {
		fdpass_close(fds, got);
		return -EPIPE;
	}
	if ((size_t)n != sizeof(*m) || (flags & (MSG_TRUNC | MSG_CTRUNC)) || m->type <= 0 ||
	    m->type >= _SYNC_TYPE_MAX) {
		fdpass_close(fds, got);
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

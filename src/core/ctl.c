/* SPDX-License-Identifier: MIT */
#include "core/ctl.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/fdpass.h"

int ctl_send(int sock, const ctl_hdr *hdr, const void *payload, const int *fds, size_t n_fds)
{
	struct iovec iov[2] = {{.iov_base = (void *)hdr, .iov_len = sizeof(*hdr)},
			       {.iov_base = (void *)payload, .iov_len = hdr->len}};
	ssize_t n;

	if (n_fds > CTL_MAX_FDS || hdr->len > CTL_MAX_PAYLOAD)
		return -EINVAL;
	n = fdpass_send(sock, iov, hdr->len ? 2 : 1, fds, n_fds);
	if (n < 0)
		return (int)n;
	return (size_t)n == sizeof(*hdr) + hdr->len ? 0 : -EIO;
}

int ctl_recv(int sock, ctl_hdr *hdr, char *buf, size_t buf_len, int *fds, size_t max_fds,
	     size_t *ret_n)
{
	struct iovec iov[2] = {{.iov_base = hdr, .iov_len = sizeof(*hdr)},
			       {.iov_base = buf, .iov_len = buf_len > 0 ? buf_len - 1 : 0}};
	size_t got = 0;
	int flags;
	ssize_t n = fdpass_recv(sock, iov, 2, 0, fds, max_fds, &got, &flags);

	*ret_n = 0;
	if (n < 0)
		return (int)n;
	if (n == 0 && got == 0)
		return -EPIPE;
	if ((size_t)n < sizeof(*hdr) || (flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    hdr->len != (size_t)n - sizeof(*hdr) || hdr->len > CTL_MAX_PAYLOAD || hdr->type == 0 ||
	    hdr->type >= _CTL_TYPE_MAX) {
		fdpass_close(fds, got);
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

void ctl_channel_room(const int pair[2])
{
	int size = CTL_CHANNEL_BUFFER;

	for (int i = 0; i < 2; i++)
		if (setsockopt(pair[i], SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
			(void)setsockopt(pair[i], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

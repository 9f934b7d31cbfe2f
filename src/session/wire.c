/* SPDX-License-Identifier: MIT */
#include "session/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

ssize_t ss_recv_raw(int sock, int flags, char *buf, int *fds, size_t max, size_t *ret_n)
{
	struct iovec iov = {.iov_base = buf, .iov_len = SS_MAX_MSG + 1};
	size_t got = 0;
	int mflags;
	ssize_t n = fdpass_recv(sock, &iov, 1, flags, fds, max, &got, &mflags);

	*ret_n = 0;
	if (n < 0)
		return n;
	if (n == 0 && got == 0)
		return -EPIPE;
	if ((size_t)n > SS_MAX_MSG || (mflags & (MSG_TRUNC | MSG_CTRUNC))) {
		fdpass_close(fds, got);
		return -EBADMSG;
	}
	buf[n] = '\0';
	*ret_n = got;
	return n;
}

int ss_recv(int sock, int flags, json_t **ret, int *fds, size_t max, size_t *ret_n)
{
	_cleanup_free_ char *buf = malloc(SS_MAX_MSG + 1);
	ssize_t n;
	json_t *o;

	*ret = NULL;
	*ret_n = 0;
	if (!buf)
		return -ENOMEM;
	n = ss_recv_raw(sock, flags, buf, fds, max, ret_n);
	if (n < 0)
		return (int)n;
	o = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		fdpass_close(fds, *ret_n);
		*ret_n = 0;
		return -EBADMSG;
	}
	*ret = o;
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include "base/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"

int io_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int io_read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int io_read_file_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	return io_read_all(fd, max, ret_buf, ret_len);
}

int io_read_all(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		if (len + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *nbuf;

			if (cap >= max + 1)
				return -EFBIG;
			if (ncap > max + 1)
				ncap = max + 1;
			nbuf = realloc(buf, ncap);
			if (!nbuf)
				return -ENOMEM;
			buf = nbuf;
			cap = ncap;
		}
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret_buf = TAKE_PTR(buf);
	return 0;
}

int io_write_file_at(int dirfd, const char *path, const char *s)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	return io_write_all(fd, s, strlen(s));
}

int io_send_fd(int sock, int fd)
{
	char c = 0;
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u = {0};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = u.buf,
	    .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int io_recv_fd(int sock)
{
	char c;
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = u.buf,
	    .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -EPROTO;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

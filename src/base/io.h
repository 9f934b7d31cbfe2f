/* SPDX-License-Identifier: MIT */
/*
 * The one place that handles EINTR and partial I/O. Never retries EAGAIN:
 * non-blocking fds belong to an event loop. Async-signal-safe, no malloc.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Writes all of buf. Returns 0, -EIO on a zero-byte write, or -errno. */
int io_write_all(int fd, const void *buf, size_t len);
/* Reads exactly len bytes. Returns 0, -EPIPE on early EOF, or -errno. */
int io_read_exact(int fd, void *buf, size_t len);
/* Reads a whole file of at most max bytes into a NUL-terminated buffer;
 * -EFBIG when it is longer. */
int io_read_file_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len);
/* The same from an open fd (a pipe, standard input), up to EOF. */
int io_read_all(int fd, size_t max, char **ret_buf, size_t *ret_len);
/* Writes a short string to a file (e.g. cgroup or /proc knobs). */
int io_write_file_at(int dirfd, const char *path, const char *s);
/* Passes one fd over a unix socket (SCM_RIGHTS, with one byte of data).
 * io_recv_fd returns the fd (O_CLOEXEC), or -EPROTO for anything but
 * exactly one byte and one fd. */
int io_send_fd(int sock, int fd);
int io_recv_fd(int sock);

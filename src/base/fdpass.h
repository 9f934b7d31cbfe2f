/* SPDX-License-Identifier: MIT */
/*
 * One datagram with fds attached (SCM_RIGHTS), for every SOCK_SEQPACKET
 * channel: the setup socket (core/sync.h), a session's channel to pid 1
 * (core/ctl.h) and its client socket (session/wire.h). libc only: it is
 * built into sandcap-init too.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#define FDPASS_MAX_FDS 64 /* the most any channel sends: the setup socket, SYNC_MAX_FDS */

/* Sends iov as one datagram (MSG_NOSIGNAL) with n_fds fds; EINTR retried.
 * Returns the bytes sent or -errno (-EINVAL above FDPASS_MAX_FDS). */
ssize_t fdpass_send(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds);
/* Receives one datagram into iov (flags: recvmsg's, MSG_CMSG_CLOEXEC is
 * added; EINTR and a peer's ECONNRESET retried: what it sent is still
 * queued, net/unix/af_unix.c). fds[0..*ret_n) get what came attached, any
 * beyond max closed: a peer cannot make us leak descriptors. *ret_flags:
 * msg_flags (MSG_TRUNC, MSG_CTRUNC). Returns the bytes read or -errno. */
ssize_t fdpass_recv(int sock, struct iovec *iov, size_t n_iov, int flags, int *fds, size_t max,
		    size_t *ret_n, int *ret_flags);
/* Closes fds[0..n). */
void fdpass_close(const int *fds, size_t n);

/* SPDX-License-Identifier: MIT */
/*
 * Between a session's clients and its supervisor (docs/sessions.md, "The
 * client protocol"): a SOCK_SEQPACKET unix socket SS_SOCKET in the
 * session's directory; one JSON object per datagram, with fds attached
 * where the protocol says so. Internal to src/session/.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "session/locate.h"

#define SS_LOCK	       "lock"
#define SS_META	       "meta.json"
#define SS_MAX_MSG     (128u * 1024u)
#define SS_MAX_FDS     3
#define SS_STALE_S     60
#define SS_MAX_CLIENTS 1024u /* connections one supervisor serves at once */

/* What a session's directory holds, for the sweep. */
static const char *const ss_files[] = {SS_SOCKET, SS_META, SS_LOCK};

/* Sends o (compact) with n fds. 0 or -errno. */
int ss_send(int sock, const json_t *o, const int *fds, size_t n);
/* Receives one message: *ret the object, fds (O_CLOEXEC) the fds that came
 * with it, any beyond max closed. -EPIPE on end of file, -EBADMSG for what
 * is not one JSON object (no fd left open then). flags: recvmsg's. */
int ss_recv(int sock, int flags, json_t **ret, int *fds, size_t max, size_t *ret_n);
/* The same without decoding: one datagram into buf (SS_MAX_MSG + 1 bytes,
 * NUL-terminated after what came). Its length, or -errno (-EBADMSG when it
 * was longer). */
ssize_t ss_recv_raw(int sock, int flags, char *buf, int *fds, size_t max, size_t *ret_n);
/* 1 when the session directory NAME (under dirfd) has its lock held by a
 * live supervisor, 0 when not, -errno. */
int ss_lock_held(int dirfd, const char *name);

/* SPDX-License-Identifier: MIT */
/*
 * The session's control channel between the supervisor and sandcap-init
 * (docs/sessions.md, "The control channel"): a SOCK_SEQPACKET pair whose
 * init end is the only fd pid 1 inherits beyond 0-2, close-on-exec in init,
 * so no command it starts holds it. One message per datagram: a fixed
 * header, a payload of NUL-terminated strings, and up to CTL_MAX_FDS fds.
 * Built into sandcap-init too: libc only, no allocation.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef enum ctl_type {
	CTL_HELLO = 1, /* init -> supervisor: the session loop runs */
	CTL_EXEC,      /* supervisor -> init: run a command; payload cwd, argv, env;
			* fds stdin, stdout, stderr, or the pty slave (CTL_TTY) */
	CTL_PUT,       /* supervisor -> init: write path (payload) from the fd, mode */
	CTL_GET,       /* supervisor -> init: copy path (payload) into the fd */
	CTL_LIST,      /* supervisor -> init: list directory path (payload) into the fd */
	CTL_SIGNAL,    /* supervisor -> init: value = signal for request id's process group */
	CTL_STARTED,   /* init -> supervisor: id runs as pid value (sandbox pid), or err */
	CTL_DONE,      /* init's file worker -> supervisor: id done, err, bytes */
	CTL_EXITED,    /* init -> supervisor: id reaped, value = wait status */
	CTL_GO,	       /* session client -> supervisor: run the held exec (exec-wire.h) */
	CTL_STAT,      /* supervisor -> init: path's record (as CTL_LIST's) into the fd */
	CTL_MKDIR,     /* supervisor -> init: make directory path; mode 1: and its parents */
	CTL_REMOVE,    /* supervisor -> init: remove path, a directory with all it holds */
	CTL_RENAME,    /* supervisor -> init: rename path (payload) to the second string */
	CTL_WATCH,     /* supervisor -> init: changes in directory path (payload) as lines
			* into the fd, until killed; mode 1: its subdirectories too */
	CTL_END,       /* init -> supervisor: pid 1 exits now, value = its exit code */
	_CTL_TYPE_MAX,
} ctl_type;

#define CTL_TTY 1u /* CTL_EXEC: one fd, the pty slave, becomes 0-2 and the ctty */
/* CTL_EXEC to a pid 1 run with INIT_SESSION_MAIN_ARG: the session's main
 * command, whose end is pid 1's (core/init.h). */
#define CTL_MAIN 2u

typedef struct ctl_hdr {
	uint32_t type;
	uint32_t id; /* the supervisor's request number */
	int32_t value;
	int32_t err; /* positive errno, 0 on success */
	uint32_t flags;
	uint32_t mode;	 /* CTL_PUT: the new file's mode; CTL_LIST: the depth */
	uint32_t n_argv; /* CTL_EXEC: strings after cwd that are argv; the rest is env */
	uint32_t len;	 /* payload bytes that follow */
	uint64_t bytes;	 /* CTL_DONE: bytes copied */
} ctl_hdr;

/* A datagram costs about 1 KiB of buffer (its skb), so this holds the
 * answers for every command pid 1 may run at once (SESSION_MAX_CHILDREN). */
#define CTL_CHANNEL_BUFFER (4 << 20)

#define CTL_MAX_FDS	3
#define CTL_MAX_PAYLOAD (96u * 1024u) /* below the default SEQPACKET send buffer */
#define CTL_MAX_ARGS	4096u

/* Sends hdr (hdr->len bytes of payload) with n_fds fds. 0 or -errno. */
int ctl_send(int sock, const ctl_hdr *hdr, const void *payload, const int *fds, size_t n_fds);
/* Receives one message: hdr, the payload into buf (NUL-terminated, at most
 * CTL_MAX_PAYLOAD + 1 bytes), fds into fds[0..*ret_n) (O_CLOEXEC; any beyond
 * max_fds closed). -EPIPE on end of file, -EPROTO for a malformed message
 * (no fd left open then). */
int ctl_recv(int sock, ctl_hdr *hdr, char *buf, size_t buf_len, int *fds, size_t max_fds,
	     size_t *ret_n);
/* Splits a payload of n NUL-terminated strings into v[0..n) (v[n] = NULL).
 * -EPROTO when it does not hold exactly n strings, -E2BIG above max. */
int ctl_split(char *payload, size_t len, char **v, size_t max, size_t *ret_n);
/* Enlarges both send buffers of a new channel (before the clone): each side
 * blocks in send, and a burst of results must not fill them. */
void ctl_channel_room(const int pair[2]);

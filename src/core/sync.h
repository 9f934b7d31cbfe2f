/* SPDX-License-Identifier: MIT */
/*
 * The supervisor <-> child protocol over a SOCK_SEQPACKET pair: one fixed-size
 * message per datagram, optionally carrying fds (SCM_RIGHTS). The
 * supervisor treats every message as hostile input: fields are checked.
 */
#pragma once

#include <stddef.h>

typedef enum sync_type {
	SYNC_GO = 1,   /* supervisor -> child (unprivileged): maps written, proceed */
	SYNC_USERNS,   /* child -> supervisor: unshared the user ns, write maps */
	SYNC_MAPPED,   /* supervisor -> child: maps written */
	SYNC_LISTENER, /* child -> supervisor: proxy listener fd attached, then the
			* sandbox resolver and transparent listeners; value 1
			* when those are there, else 0 and why in what */
	SYNC_READY,    /* child -> supervisor: every step done, about to exec pid 1;
			* layers set; the seccomp listener fd attached, if any */
	SYNC_FAILED,   /* child -> supervisor: step failed, errno, what; layers set */
	SYNC_LAYERS,   /* child -> supervisor: landlock status text in what */
	SYNC_CGROUP,   /* supervisor -> child: fds that move it into its cgroup (maybe none) */
	SYNC_PTY,      /* child -> supervisor: the master of its pty attached */
	_SYNC_TYPE_MAX,
} sync_type;

/* What the child's steps put in place, as far as they got: the facts
 * sandbox.start reports (SYNC_READY and SYNC_FAILED carry them). */
typedef enum sync_layer {
	LAYER_USERNS = 1 << 0,	       /* in a user namespace of its own */
	LAYER_MOUNTS = 1 << 1,	       /* the sandbox's root built, pivot_root done */
	LAYER_CGROUP = 1 << 2,	       /* moved itself into the sandbox cgroup */
	LAYER_CGROUPNS = 1 << 3,       /* cgroup namespace rooted there */
	LAYER_CAPS = 1 << 4,	       /* bounding set, ids and capabilities dropped */
	LAYER_NNP = 1 << 5,	       /* no_new_privs */
	LAYER_LANDLOCK = 1 << 6,       /* the ruleset applied (status in SYNC_LAYERS) */
	LAYER_SECCOMP = 1 << 7,	       /* the filter loaded */
	LAYER_SECCOMP_NOTIFY = 1 << 8, /* ... with a user-notification listener */
	LAYER_RLIMITS = 1 << 9,
} sync_layer;

typedef struct sync_msg {
	int type;
	int err;	 /* positive errno for SYNC_FAILED */
	int value;	 /* e.g. the Landlock ABI */
	unsigned layers; /* sync_layer bits, for SYNC_READY and SYNC_FAILED */
	char step[32];
	char what[256];
} sync_msg;

#define SYNC_MAX_FDS 64 /* the proxy listener and NS_TRANSPARENT_MAX_FDS */

/* Sends one message carrying fd, or none when fd < 0. */
int sync_send(int sock, const sync_msg *m, int fd);
int sync_send_fds(int sock, const sync_msg *m, const int *fds, size_t n_fds);
/* Receives one message; *ret_fd gets an attached fd or -1. -EPIPE on EOF. */
int sync_recv(int sock, sync_msg *m, int *ret_fd);
/* Receives one message and up to max_fds attached fds into fds[0..*ret_n);
 * any beyond are closed. On error no fd is left open. */
int sync_recv_fds(int sock, sync_msg *m, int *fds, size_t max_fds, size_t *ret_n);

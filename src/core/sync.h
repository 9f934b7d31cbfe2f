/* SPDX-License-Identifier: MIT */
/*
 * The supervisor <-> child protocol over a SOCK_SEQPACKET pair: one fixed-size
 * message per datagram, optionally carrying one fd (SCM_RIGHTS). The
 * supervisor treats every message as hostile input: fields are checked.
 */
#pragma once

#include <stddef.h>

typedef enum sync_type {
	SYNC_GO = 1,   /* supervisor -> child (unprivileged): maps written, proceed */
	SYNC_USERNS,   /* child -> supervisor: unshared the user ns, write maps */
	SYNC_MAPPED,   /* supervisor -> child: maps written */
	SYNC_LISTENER, /* child -> supervisor: proxy listener fd attached */
	SYNC_NOTIFY,   /* child -> supervisor: seccomp listener fd attached */
	SYNC_FAILED,   /* child -> supervisor: step failed, errno, what */
	SYNC_LAYERS,   /* child -> supervisor: landlock status text in what */
	_SYNC_TYPE_MAX,
} sync_type;

typedef struct sync_msg {
	int type;
	int err;   /* positive errno for SYNC_FAILED */
	int value; /* e.g. the Landlock ABI */
	char step[32];
	char what[256];
} sync_msg;

int sync_send(int sock, const sync_msg *m, int fd);
/* Receives one message; *ret_fd gets an attached fd or -1. -EPIPE on EOF. */
int sync_recv(int sock, sync_msg *m, int *ret_fd);

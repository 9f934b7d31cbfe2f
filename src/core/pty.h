/* SPDX-License-Identifier: MIT */
/*
 * The sandbox never gets a host terminal fd (TIOCSTI, TIOCLINUX and friends
 * act on the terminal they are given). When any of 0-2 is a terminal, the
 * child opens a pty pair in the sandbox's own devpts instance (so that
 * `tty` names it there, /dev/pts/N), keeps the slave for those fds and
 * sends the master to the supervisor, which relays bytes between it and the
 * host terminal like `ssh -t`. Non-terminal fds pass through untouched.
 */
#pragma once

#include <stdint.h>

typedef struct pty_relay pty_relay;

/* When fds 0-2 include a terminal: *ret gets a relay (no master yet) and
 * *ret_mask the bits of the fds to replace. Otherwise *ret is NULL. */
int pty_relay_new(pty_relay **ret, int *ret_mask);
/* Takes master (the child's ptmx), copies the host terminal's size to it,
 * puts the host terminal in raw mode and adds the fds to epoll with
 * data.u64 = tag << 32 | fd. A second master is refused (-EEXIST). */
int pty_relay_attach(pty_relay *p, int master, int ep, uint32_t tag);
/* Moves bytes for a readable fd; < 0 when that side is finished. */
int pty_pump(pty_relay *p, int fd);
/* Copies everything the sandbox wrote and is still buffered. NULL-safe. */
void pty_drain(pty_relay *p);
/* The host terminal's size to the sandbox's. NULL-safe. */
void pty_resize(pty_relay *p);
/* Restores the host terminal. NULL-safe, returns NULL. */
pty_relay *pty_free(pty_relay *p);

/* Child, in the sandbox's mount namespace with its devpts at /dev/pts:
 * opens a pair there. Returns 0 with both fds (O_CLOEXEC), or -errno. */
int pty_open_pair(int *ret_master, int *ret_slave);

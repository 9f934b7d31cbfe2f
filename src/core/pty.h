/* SPDX-License-Identifier: MIT */
/*
 * The sandbox never gets a host terminal fd (TIOCSTI, TIOCLINUX and friends
 * act on the terminal they are given). When any of 0-2 is a terminal, the
 * supervisor owns a fresh pty pair, gives the sandbox the slave and relays
 * bytes like `ssh -t`. Non-terminal fds pass through untouched.
 */
#pragma once

#include <stdint.h>

typedef struct pty_relay pty_relay;

/* When fds 0-2 include a terminal: *ret gets a relay, *ret_slave the slave fd
 * and *ret_mask the bits of the fds to replace. Otherwise *ret is NULL. */
int pty_open_if_tty(pty_relay **ret, int *ret_slave, int *ret_mask);
/* Adds the relay's fds to epoll with data.u64 = tag << 32 | fd. */
int pty_register(pty_relay *p, int ep, uint32_t tag);
/* Moves bytes for a readable fd; < 0 when that side is finished. */
int pty_pump(pty_relay *p, int fd);
/* Copies everything the sandbox wrote and is still buffered. */
void pty_drain(pty_relay *p);
void pty_resize(pty_relay *p);
/* Restores the host terminal. NULL-safe, returns NULL. */
pty_relay *pty_free(pty_relay *p);

/* SPDX-License-Identifier: MIT */
/*
 * The sub-supervisor of a delegated sandbox (core/delegation.h is the
 * parent's side). Library code: never prints; errors are -errno.
 */
#pragma once

/* `sandcap run --spawned-by FD`: reads one request from fd, runs it,
 * streams the events and then the result back over fd. Returns the process
 * exit status. */
int spawn_child_main(int fd);

/* SPDX-License-Identifier: MIT */
/*
 * Socket activation: the listening socket a service manager passed to
 * `sandcap serve` (systemd's sd_listen_fds(3) protocol). The manager binds
 * and listens itself, then starts the daemon with the socket at fd 3 and
 * LISTEN_PID (the daemon's pid), LISTEN_FDS (how many, from fd 3 up) and
 * optionally LISTEN_FDNAMES (their names, ':'-separated) in its
 * environment.
 *
 * Read here rather than through libsystemd: the protocol is three
 * variables and fd 3, and sandcap-main links its libraries statically
 * (docs/decisions.md), where libsystemd would bring its own dependencies
 * (liblz4, libzstd, libgcrypt, libcap) for one function.
 */
#pragma once

#include <stddef.h>

#define SV_LISTEN_FDS_START 3 /* SD_LISTEN_FDS_START */

/*
 * Takes the one socket passed: 1 with it in *ret_fd, made FD_CLOEXEC so
 * that no program the daemon runs inherits it, and the path it is bound to
 * in ret_path ("" for an unnamed or abstract one), the first name of
 * LISTEN_FDNAMES in ret_name ("" when unset); 0 when none was passed (no
 * LISTEN_PID or LISTEN_FDS, or a LISTEN_PID naming another process: the
 * variables were meant for a parent of ours). Fails with *reterr_why saying
 * why (a static string): -EBADMSG when a variable is malformed, -E2BIG when more than one
 * socket was passed, -EBADF when fd 3 is not open, -ENOTSOCK when it is
 * not a socket, -EPROTOTYPE when it is not a unix stream socket, -EINVAL
 * when it does not listen. In every case LISTEN_PID, LISTEN_FDS and
 * LISTEN_FDNAMES are removed from the environment, so that the programs
 * the daemon runs do not take them as their own. Not thread-safe (setenv).
 */
int sv_activation_socket(int *ret_fd, char *ret_path, size_t path_size, char *ret_name,
			 size_t name_size, const char **reterr_why);

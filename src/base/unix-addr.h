/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * bind() and connect() to DIR/NAME whatever DIR's length. sun_path holds
 * 107 bytes; a container runtime's state directory with a 64-character
 * container id does not fit. A longer address goes through an O_PATH
 * descriptor of DIR as /proc/self/fd/N/NAME, which the kernel resolves
 * like any path. Both return 0 or -errno.
 */
int unix_bind_in(int sock, const char *dir, const char *name);
int unix_connect_in(int sock, const char *dir, const char *name);

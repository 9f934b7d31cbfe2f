/* SPDX-License-Identifier: MIT */
/*
 * Where a session lives and how to reach it: its directory and its
 * control socket (docs/sessions.md). libc only: built into the small exec
 * front (src/cli/front.c) too.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define SC_SESSION_NAME_MAX 64
#define SS_SOCKET	    "ctl.sock" /* in the session's directory */

/* Where session state lives: /run/sandcap/sessions as root, else
 * $XDG_RUNTIME_DIR/sandcap/sessions; SANDCAP_RUNTIME_DIR overrides (for
 * tests), + /sessions. Created 0700 when create; when the base or the
 * sessions directory is not a directory of ours with mode 0700 (-EPERM) or
 * cannot be made, buf names the one that failed. */
int sc_session_dir(bool create, char *buf, size_t len);
/* A name is 1-64 of [A-Za-z0-9._-], not starting with '.' or '-'. */
bool sc_session_name_valid(const char *name);
/* A connected socket to NAME's supervisor: -EINVAL for a bad name, -ENOENT
 * when no supervisor listens there. */
int ss_connect(const char *name, int *ret_fd);

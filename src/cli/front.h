/* SPDX-License-Identifier: MIT */
/*
 * What the full command line and its small front (front.c) share: libc
 * only, so that `sandcap exec` runs without the rest (docs/sessions.md,
 * "The exec front").
 */
#pragma once

/* sandcap exec (cmd-exec.c). */
int cmd_exec(int argc, char **argv);

/* "sandcap: " + message on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

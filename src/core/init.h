/* SPDX-License-Identifier: MIT */
/*
 * pid 1 of the sandbox: exec'd fresh (never a fork of the supervisor) with
 * argv = { INIT_ARGV0, "--", COMMAND, ARGS... } and the agent's environment.
 * Starts the command, reaps every orphan, forwards every signal but SIGCHLD
 * to it and exits with the command's status (128+N when it died of signal N).
 */
#pragma once

#include <stdbool.h>

#define INIT_ARGV0 "sandcap-init"
/* argv = { INIT_ARGV0, INIT_SESSION_ARG, FD }: a session's pid 1 runs no
 * command of its own; it serves the control channel on FD (core/ctl.h). */
#define INIT_SESSION_ARG "--session"
/* The same, for a pid 1 that is not its supervisor's child (the OCI
 * runtime's, sc_run_opts.init_adopted): its parent reaps it and takes its
 * status as the container's. It exits as soon as the command sent with
 * CTL_MAIN ends, with its status (128+N for signal N), and when the channel
 * closes (its supervisor ended the session, or died) with 128+SIGKILL: the
 * kernel kills what is left, the main command among it. */
#define INIT_SESSION_MAIN_ARG "--session-main"

/* pid 1 with a command (init.c): returns its exit status. */
int init_main(int argc, char **argv);
/* The session loop (init-session.c): returns pid 1's exit status. */
int init_session_main(const char *fd_arg, bool main_exits);

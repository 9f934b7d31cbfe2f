/* SPDX-License-Identifier: MIT */
/*
 * pid 1 of the sandbox: exec'd fresh (never a fork of the supervisor) with
 * argv = { INIT_ARGV0, "--", COMMAND, ARGS... } and the agent's environment.
 * Starts the command, reaps every orphan, forwards every signal but SIGCHLD
 * to it and exits with the command's status (128+N when it died of signal N).
 */
#pragma once

#define INIT_ARGV0 "sandcap-init"

int init_main(int argc, char **argv);

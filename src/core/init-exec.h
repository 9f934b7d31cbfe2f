/* SPDX-License-Identifier: MIT */
/*
 * What pid 1 does alike with a command of its own (init.c) and in a
 * session (init-session.c). Built into sandcap-init: libc only.
 */
#pragma once

#include <signal.h>

/* Blocks every signal into *all, and makes pid 1 non-dumpable. */
void init_block_all(sigset_t *all);
/* execvp() with the rules of init-exec.c; returns only on failure, errno
 * set. */
void init_exec_command(char **argv, char **envp);

/* SPDX-License-Identifier: MIT */
/*
 * pid 1 of the sandbox. All signals stay blocked and are taken with
 * sigwaitinfo(): pid 1 of a pid namespace drops unhandled signals, but
 * blocked ones are queued (kernel/signal.c, sig_ignored()).
 */
#include "core/init.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/exit-status.h"
#include "core/init-exec.h"

static int status_to_exit(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return SC_EXIT_SIGNAL_BASE + WTERMSIG(status);
	return SC_EXIT_SETUP;
}

int init_main(int argc, char **argv)
{
	sigset_t all, none;
	pid_t child;

	if (argc < 3 || strcmp(argv[1], "--") != 0) {
		fputs("sandcap-init: internal entry point, not for direct use\n", stderr);
		return SC_EXIT_SETUP;
	}
	init_block_all(&all);
	sigemptyset(&none);

	child = fork();
	if (child < 0) {
		fprintf(stderr, "sandcap: cannot start %s: %s\n", argv[2], strerror(errno));
		return SC_EXIT_SETUP;
	}
	if (child == 0) {
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		init_exec_command(argv + 2, environ);
		int err = errno;
		fprintf(stderr, "sandcap: %s: %s\n", argv[2],
			err == ENOENT ? "command not found" : strerror(err));
		_exit(err == ENOENT ? SC_EXIT_NOTFOUND : SC_EXIT_NOEXEC);
	}

	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&all, &si);

		if (sig < 0)
			continue;
		if (sig == SIGCHLD) {
			int status;
			pid_t p;

			/* Reap every orphan; the command's end is the sandbox's end. */
			while ((p = waitpid(-1, &status, WNOHANG)) > 0)
				if (p == child)
					return status_to_exit(status);
			continue;
		}
		/* Everything else is for the command: the supervisor passes
		 * on what stops the run (SIGTERM, SIGINT, SIGHUP, ...) and
		 * SIGWINCH comes from the pty. */
		(void)kill(child, sig);
	}
}

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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static int status_to_exit(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 125;
}

int init_main(int argc, char **argv)
{
	sigset_t all, none;
	pid_t child;

	if (argc < 3 || strcmp(argv[1], "--") != 0) {
		fputs("sandcap-init: internal entry point, not for direct use\n", stderr);
		return 125;
	}
	sigfillset(&all);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);
	/* Not dumpable: the agent (same uid) cannot ptrace or read pid 1's memory. */
	(void)prctl(PR_SET_DUMPABLE, 0);

	child = fork();
	if (child < 0) {
		fprintf(stderr, "sandcap: cannot start %s: %s\n", argv[2], strerror(errno));
		return 125;
	}
	if (child == 0) {
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		execvp(argv[2], argv + 2);
		int err = errno;
		fprintf(stderr, "sandcap: %s: %s\n", argv[2],
			err == ENOENT ? "command not found" : strerror(err));
		_exit(err == ENOENT ? 127 : 126);
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
		for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
			if (sig == forwarded[i])
				(void)kill(child, sig);
	}
}

/* SPDX-License-Identifier: MIT */
/* What both kinds of pid 1 (init.c, init-session.c) do alike: take every
 * signal, and exec a command. */
#include "core/init-exec.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* A script without "#!" gets at most this many arguments through /bin/sh. */
#define INIT_SHELL_ARGS_MAX 4096

/* The default search path of execvp() when PATH is unset (glibc, musl). */
#define INIT_DEFAULT_PATH "/bin:/usr/bin"
#define INIT_PATH_MAX	  4096

/* execve(), and for a file the kernel cannot execute (no "#!"), /bin/sh
 * with the file as its script, as shells and glibc's execvp() do. Returns
 * only on failure, with errno set. */
static void exec_file(const char *file, char **argv, char **envp)
{
	char *sh_argv[INIT_SHELL_ARGS_MAX + 2];
	size_t argc = 0;

	execve(file, argv, envp);
	if (errno != ENOEXEC)
		return;
	while (argv[argc])
		argc++;
	if (argc > INIT_SHELL_ARGS_MAX) {
		errno = E2BIG;
		return;
	}
	sh_argv[0] = (char *)"sh";
	sh_argv[1] = (char *)file;
	memcpy(sh_argv + 2, argv + 1, argc * sizeof(char *)); /* with the NULL */
	execve("/bin/sh", sh_argv, envp);
	errno = ENOEXEC;
}

/*
 * execvp() written out, so that its behaviour does not depend on the libc
 * init is linked with: a name with a '/' is used as it is; otherwise each
 * PATH entry is tried in order (an empty one is the working directory); an
 * EACCES is reported if nothing else is found. Returns only on failure.
 */
void init_exec_command(char **argv, char **envp)
{
	const char *name = argv[0], *path = NULL, *p;
	size_t nlen = strlen(name);
	bool eacces = false;

	if (strchr(name, '/')) {
		exec_file(name, argv, envp);
		return;
	}
	for (char **e = envp; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	for (p = path ? path : INIT_DEFAULT_PATH;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dlen = end > p ? (size_t)(end - p) : 1;
		char file[INIT_PATH_MAX];

		if (dlen + 1 + nlen < sizeof(file)) {
			memcpy(file, end > p ? p : ".", dlen);
			file[dlen] = '/';
			memcpy(file + dlen + 1, name, nlen + 1);
			/* A name that is not there is skipped without an execve,
			 * which the audit log would record as a failed exec. */
			if (access(file, F_OK) < 0 && (errno == ENOENT || errno == ENOTDIR))
				goto next;
			exec_file(file, argv, envp);
			if (errno == EACCES)
				eacces = true;
			else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP &&
				 errno != ENAMETOOLONG)
				return;
		}
	next:
		p = end;
		if (!*p)
			break;
	}
	errno = eacces ? EACCES : ENOENT;
}

void init_block_all(sigset_t *all)
{
	/* Every signal, also those libc keeps for itself (musl's sigfillset
	 * leaves out 32-34, where glibc programs have SIGRTMIN): unblocked,
	 * pid 1 would drop them, and the command would never see them. */
	memset(all, 0xff, sizeof(*all));
	(void)sigprocmask(SIG_SETMASK, all, NULL);
	/* Not dumpable: the agent (same uid) cannot ptrace or read pid 1's memory. */
	(void)prctl(PR_SET_DUMPABLE, 0);
}

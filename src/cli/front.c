/* SPDX-License-Identifier: MIT */
/*
 * sandcap: the small front of the command line (docs/sessions.md, "The exec
 * front"). `sandcap exec` is done here, by a static binary with libc alone,
 * so that a warm exec pays no start-up for OpenSSL, c-ares, jansson and
 * libseccomp. `sandcap run` and `sandcap session` are sandcap-run, the
 * same code linked without what only other commands need, so that each
 * supervisor holds less memory (src/cli/main-run.c); every other command
 * is the full program, sandcap-main. Both are exec'd with the same arguments (base/sibling.h
 * says where they are looked up and which file is taken).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/exit-status.h"
#include "base/sibling.h"
#include "cli/front.h"

int main(int argc, char **argv)
{
	extern char **environ;
	const char *name = "sandcap-main";
	char why[PATH_MAX];
	int fd;

	if (argc > 1 && strcmp(argv[1], "exec") == 0)
		return cmd_exec(argc - 1, argv + 1);
	if (argc > 1 && (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "session") == 0))
		name = "sandcap-run";
	fd = sibling_open(name, SANDCAP_LIBEXECDIR, O_PATH);
	if (fd >= 0)
		(void)fexecve(fd, argv, environ);
	cli_error("cannot run %s: %s", name,
		  sibling_why(SANDCAP_LIBEXECDIR, fd < 0 ? fd : -errno, why, sizeof(why)));
	return SC_EXIT_SETUP;
}

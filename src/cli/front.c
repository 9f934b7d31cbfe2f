/* SPDX-License-Identifier: MIT */
/*
 * sandcap: the small front of the command line (docs/sessions.md, "The exec
 * front"). `sandcap exec` is done here, by a static binary with libc alone,
 * so that a warm exec pays no start-up for OpenSSL, c-ares, jansson and
 * libseccomp; every other command is the full program, sandcap-main, which
 * this execs with the same arguments (base/sibling.h says where it is
 * looked up and which file is taken).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/exit-status.h"
#include "base/sibling.h"
#include "cli/front.h"

#define FULL_NAME "sandcap-main"

int main(int argc, char **argv)
{
	extern char **environ;
	int fd;

	if (argc > 1 && strcmp(argv[1], "exec") == 0)
		return cmd_exec(argc - 1, argv + 1);
	fd = sibling_open(FULL_NAME, SANDCAP_LIBEXECDIR, O_PATH);
	if (fd >= 0)
		(void)fexecve(fd, argv, environ);
	cli_error(
	    "cannot run %s (next to this program or in %s): %s", FULL_NAME, SANDCAP_LIBEXECDIR,
	    fd == -EPERM ? "not a regular file of root's or ours that only its owner may write"
			 : strerror(fd < 0 ? -fd : errno));
	return SC_EXIT_SETUP;
}

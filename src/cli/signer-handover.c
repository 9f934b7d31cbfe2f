/* SPDX-License-Identifier: MIT */
/*
 * --audit-sign in sandcap-run, which links no Ed25519 code (cli.h): the
 * whole command line goes to sandcap-main, which runs it. Nothing has been
 * read from standard input yet: `--policy -` still finds the policy there.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "base/sibling.h"
#include "cli/cli.h"

/* The full program, which links the signature code (src/cli/front.c). */
#define SIGNER_PROGRAM "sandcap-main"

char **cli_argv;

int cli_signer_load(const char *file, cli_signer *ret)
{
	extern char **environ;
	int fd = sibling_open(SIGNER_PROGRAM, SANDCAP_LIBEXECDIR, O_PATH);
	char why[PATH_MAX];

	(void)ret;
	if (fd >= 0)
		(void)fexecve(fd, cli_argv, environ);
	cli_error("%s: signing needs %s: %s", file, SIGNER_PROGRAM,
		  sibling_why(SANDCAP_LIBEXECDIR, fd < 0 ? fd : -errno, why, sizeof(why)));
	return -ENOENT;
}

void cli_signer_done(cli_signer *s)
{
	(void)s;
}

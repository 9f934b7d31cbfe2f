/* SPDX-License-Identifier: MIT */
/*
 * sandcap: the small front of the command line (docs/sessions.md, "The exec
 * front"). `sandcap exec` is done here, by a static binary with libc alone,
 * so that a warm exec pays no start-up for OpenSSL, c-ares, jansson and
 * libseccomp; every other command is the full program, sandcap-main, which
 * this execs with the same arguments: next to this binary (the build tree,
 * a relocated install), else in the configured libexecdir, and only a
 * regular file that root (or we) own and nobody else may write.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/exit-status.h"
#include "cli/front.h"

#define FULL_NAME "sandcap-main"

static int open_full(void)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *dirs[2] = {NULL, SANDCAP_LIBEXECDIR};
	int err = ENOENT;

	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			dirs[0] = self;
		}
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct stat st;
		int fd;

		if (!dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/" FULL_NAME, dirs[i]);
		fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & 022))
			return fd;
		err = EPERM;
		(void)close(fd);
	}
	return -err;
}

int main(int argc, char **argv)
{
	extern char **environ;
	int fd;

	if (argc > 1 && strcmp(argv[1], "exec") == 0)
		return cmd_exec(argc - 1, argv + 1);
	fd = open_full();
	if (fd >= 0)
		(void)fexecve(fd, argv, environ);
	cli_error("cannot run %s (next to this program or in %s): %s", FULL_NAME,
		  SANDCAP_LIBEXECDIR,
		  fd == -EPERM ? "not a regular file of root's that only its owner may write"
			       : strerror(fd < 0 ? -fd : errno));
	return SC_EXIT_SETUP;
}

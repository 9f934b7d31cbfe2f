/* SPDX-License-Identifier: MIT */
#include "base/sibling.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sibling_open(const char *name, const char *dir, int flags)
{
	char self[PATH_MAX], path[PATH_MAX + 256];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *dirs[2] = {NULL, dir};
	uid_t euid = geteuid();
	int err = -ENOENT;

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
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (st.st_uid == 0 || st.st_uid == euid) && !(st.st_mode & 022))
			return fd;
		err = -EPERM;
		(void)close(fd);
	}
	return err;
}

const char *sibling_why(const char *dir, int err, char *buf, size_t size)
{
	if (err == -EPERM)
		(void)snprintf(buf, size,
			       "not a regular file of root's or ours that only its owner may write "
			       "(next to this program or in %s)",
			       dir);
	else if (err == -ENOENT)
		(void)snprintf(buf, size, "not next to this program or in %s", dir);
	else
		(void)snprintf(buf, size, "%s (next to this program or in %s)",
			       strerror(err < 0 ? -err : err), dir);
	return buf;
}

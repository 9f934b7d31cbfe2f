/* SPDX-License-Identifier: MIT */
#include "base/unix-addr.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/cleanup.h"

static int with_addr(int sock, const char *dir, const char *name, bool bind_it)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int dirfd = -1;
	int r;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name) >=
	    sizeof(sa.sun_path)) {
		dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0)
			return -errno;
		if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dirfd,
				     name) >= sizeof(sa.sun_path))
			return -ENAMETOOLONG;
	}
	r = bind_it ? bind(sock, (struct sockaddr *)&sa, sizeof(sa))
		    : connect(sock, (struct sockaddr *)&sa, sizeof(sa));
	return r < 0 ? -errno : 0;
}

int unix_bind_in(int sock, const char *dir, const char *name)
{
	return with_addr(sock, dir, name, true);
}

int unix_connect_in(int sock, const char *dir, const char *name)
{
	return with_addr(sock, dir, name, false);
}

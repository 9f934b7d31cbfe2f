/* SPDX-License-Identifier: MIT */
#include "session/locate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/unix-addr.h"

static int mkdir_0700(const char *path)
{
	struct stat st;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	/* Ours, and only ours: the control sockets below grant everything. */
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

int sc_session_dir(bool create, char *buf, size_t len)
{
	const char *over = getenv("SANDCAP_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char base[4096];
	int n, r;

	if (over && over[0] == '/')
		n = snprintf(base, sizeof(base), "%s", over);
	else if (geteuid() == 0)
		n = snprintf(base, sizeof(base), "/run/sandcap");
	else if (xdg && xdg[0] == '/')
		n = snprintf(base, sizeof(base), "%s/sandcap", xdg);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= sizeof(base))
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s/sessions", base);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (!create)
		return 0;
	r = mkdir_0700(base);
	if (r < 0) {
		/* The error is about base, which the caller names. */
		(void)snprintf(buf, len, "%s", base);
		return r;
	}
	return mkdir_0700(buf);
}

bool sc_session_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > SC_SESSION_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

int ss_connect(const char *name, int *ret_fd)
{
	char dir[4096];
	_cleanup_close_ int fd = -1;
	int r;

	if (!sc_session_name_valid(name))
		return -EINVAL;
	r = sc_session_dir(false, dir, sizeof(dir));
	if (r < 0)
		return r;
	if ((size_t)snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", name) >=
	    sizeof(dir) - strlen(dir))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = unix_connect_in(fd, dir, SS_SOCKET);
	if (r < 0)
		return r == -ECONNREFUSED ? -ENOENT : r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include "serve/activation.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A decimal number, no sign, no leading or trailing junk. */
static int act_parse(const char *s, long max, long *ret)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return -EBADMSG;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v > max)
		return -EBADMSG;
	*ret = v;
	return 0;
}

static void act_unsetenv(void)
{
	(void)unsetenv("LISTEN_PID");
	(void)unsetenv("LISTEN_FDS");
	(void)unsetenv("LISTEN_FDNAMES");
}

static int act_check(int fd, const char **reterr_why)
{
	int domain = 0, type = 0, listening = 0;
	socklen_t len = sizeof(int);
	struct stat st;

	if (fcntl(fd, F_GETFD) < 0) {
		*reterr_why = "LISTEN_FDS=1, but fd 3 is not open";
		return -EBADF;
	}
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		*reterr_why = "fd 3 is not a socket";
		return -ENOTSOCK;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || domain != AF_UNIX) {
		*reterr_why = "fd 3 is not a unix socket (ListenStream= must be a path)";
		return -EPROTOTYPE;
	}
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM) {
		*reterr_why = "fd 3 is not a stream socket (ListenStream=, not ListenDatagram= "
			      "or ListenSequentialPacket=)";
		return -EPROTOTYPE;
	}
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening) {
		*reterr_why = "fd 3 is not listening (a connection passed with Accept=yes? "
			      "the unit needs Accept=no)";
		return -EINVAL;
	}
	return 0;
}

int sv_activation_socket(int *ret_fd, char *ret_path, size_t path_size, char *ret_name,
			 size_t name_size, const char **reterr_why)
{
	const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
	const char *names = getenv("LISTEN_FDNAMES");
	struct sockaddr_un sa = {0};
	socklen_t salen = sizeof(sa);
	long pid, n;
	int r;

	*reterr_why = NULL;
	ret_path[0] = ret_name[0] = '\0';
	if (names)
		(void)snprintf(ret_name, name_size, "%.*s", (int)strcspn(names, ":"), names);
	/* Each variable is read before act_unsetenv() takes it away. */
	if (!pid_s) {
		act_unsetenv();
		return 0;
	}
	r = act_parse(pid_s, 0x7fffffffL, &pid);
	if (r == 0 && (pid != (long)getpid() || !fds_s)) {
		act_unsetenv();
		return 0;
	}
	if (r == 0)
		r = act_parse(fds_s, 0x7fffffffL - SV_LISTEN_FDS_START, &n);
	act_unsetenv();
	if (r < 0) {
		*reterr_why = "LISTEN_PID or LISTEN_FDS is not a number";
		return r;
	}
	if (n == 0)
		return 0;
	if (n > 1) {
		*reterr_why = "more than one socket passed (LISTEN_FDS > 1): the unit must "
			      "have one ListenStream=";
		return -E2BIG;
	}
	r = act_check(SV_LISTEN_FDS_START, reterr_why);
	if (r < 0)
		return r;
	if (fcntl(SV_LISTEN_FDS_START, F_SETFD, FD_CLOEXEC) < 0) {
		*reterr_why = "cannot set FD_CLOEXEC on fd 3";
		return -errno;
	}
	if (getsockname(SV_LISTEN_FDS_START, (struct sockaddr *)&sa, &salen) == 0 &&
	    salen > offsetof(struct sockaddr_un, sun_path) && sa.sun_path[0])
		(void)snprintf(ret_path, path_size, "%.*s",
			       (int)(salen - offsetof(struct sockaddr_un, sun_path)), sa.sun_path);
	*ret_fd = SV_LISTEN_FDS_START;
	return 1;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "ns/ns.h"

/* Sandboxes get host ids from 2^30 up, two per sandbox, keyed by the
 * supervisor's pid (unique among live processes); pid_max <= 2^22 keeps the
 * range below 2^31, far from ordinary users. */
uid_t ns_host_id_base(pid_t supervisor)
{
	return (uid_t)(0x40000000u + 2u * (unsigned)supervisor);
}

int ns_write_id_maps(pid_t pid, const char *uid_map, const char *gid_map)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	r = io_write_file_at(AT_FDCWD, path, uid_map);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	return io_write_file_at(AT_FDCWD, path, gid_map);
}

int ns_userns_fd(const char *uid_map, const char *gid_map)
{
	int pipefd[2];
	char path[64];
	pid_t pid;
	int r, fd;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	/* A throwaway child owns the namespace until we hold an fd to it. */
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0) {
		r = -errno;
		(void)close(pipefd[0]);
		(void)close(pipefd[1]);
		return r;
	}
	if (pid == 0) {
		char c;

		(void)close(pipefd[1]);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		(void)!read(pipefd[0], &c, 1);
		_exit(0);
	}
	(void)close(pipefd[0]);
	r = ns_write_id_maps(pid, uid_map, gid_map);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	fd = r < 0 ? r : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && r >= 0)
		r = -errno;
	(void)close(pipefd[1]); /* releases the child */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return r < 0 ? r : fd;
}

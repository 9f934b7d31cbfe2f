/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "ns/ns.h"

/* Sandboxes get host ids from 2^30 up, NS_HOST_IDS per sandbox, keyed by
 * the supervisor's pid (unique among live processes); pid_max <= 2^22 keeps
 * the range below 2^31, far from ordinary users. */
uid_t ns_host_id_base(pid_t supervisor)
{
	return (uid_t)(0x40000000u + NS_HOST_IDS * (unsigned)supervisor);
}

/* One map: 0 -> base, agent -> base + 1, nobody -> base + 2; an agent id
 * of 0 or 65534 takes that line over (then base or base + 2 is unused). */
static void id_map(unsigned agent, unsigned nobody, unsigned base, char *buf, size_t len)
{
	int n = 0;

	if (agent != 0)
		n = snprintf(buf, len, "0 %u 1\n", base);
	n += snprintf(buf + n, len - (size_t)n, "%u %u 1\n", agent, base + 1);
	if (agent != nobody)
		(void)snprintf(buf + n, len - (size_t)n, "%u %u 1\n", nobody, base + 2);
}

void ns_id_maps(const sc_plan *plan, uid_t base, char ret_uid_map[static NS_ID_MAP_MAX],
		char ret_gid_map[static NS_ID_MAP_MAX])
{
	id_map(plan->agent_uid, NS_NOBODY_UID, (unsigned)base, ret_uid_map, NS_ID_MAP_MAX);
	id_map(plan->agent_gid, NS_NOBODY_GID, (unsigned)base, ret_gid_map, NS_ID_MAP_MAX);
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

int ns_write_id_maps_unpriv(pid_t pid, uid_t inside_uid, gid_t inside_gid)
{
	char path[64], um[64], gm[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	r = io_write_file_at(AT_FDCWD, path, "deny");
	if (r < 0)
		return r;
	snprintf(um, sizeof(um), "%u %u 1\n", (unsigned)inside_uid, (unsigned)geteuid());
	snprintf(gm, sizeof(gm), "%u %u 1\n", (unsigned)inside_gid, (unsigned)getegid());
	return ns_write_id_maps(pid, um, gm);
}

/* A sysctl holding one decimal number; -ENOENT when this kernel has none. */
static int read_sysctl(const char *path, long *ret)
{
	_cleanup_free_ char *buf = NULL;
	char *end;
	int r = io_read_file_at(AT_FDCWD, path, 64, &buf, NULL);

	if (r < 0)
		return r;
	errno = 0;
	*ret = strtol(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

int ns_userns_max_check(char *why, size_t why_len)
{
	long v;

	if (why_len > 0)
		why[0] = '\0';
	if (read_sysctl("/proc/sys/user/max_user_namespaces", &v) == 0 && v == 0) {
		snprintf(
		    why, why_len,
		    "user namespaces are disabled on this host (user.max_user_namespaces = 0)");
		return -ENOSPC;
	}
	return 0;
}

int ns_unpriv_userns_check(char *why, size_t why_len)
{
	long v;
	int r;

	if (why_len > 0)
		why[0] = '\0';
	/* Debian's and Ubuntu's older kernels: off means only root may. */
	if (read_sysctl("/proc/sys/kernel/unprivileged_userns_clone", &v) == 0 && v == 0) {
		snprintf(why, why_len,
			 "unprivileged user namespaces are disabled on this host "
			 "(kernel.unprivileged_userns_clone = 0)");
		return -EPERM;
	}
	r = ns_userns_max_check(why, why_len);
	if (r < 0)
		return r;
	/* Ubuntu 23.10+: the namespace is created, but without capabilities
	 * in it unless an AppArmor profile allows it, so the first mount would
	 * fail with a bare EPERM. */
	if (read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0 &&
	    v != 0) {
		snprintf(why, why_len,
			 "AppArmor restricts unprivileged user namespaces on this host "
			 "(kernel.apparmor_restrict_unprivileged_userns = 1; an AppArmor profile "
			 "for sandcap with \"userns,\" lifts it)");
		return -EPERM;
	}
	snprintf(why, why_len, "unprivileged user namespaces are available");
	return 0;
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

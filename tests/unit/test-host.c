/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/host (TAP): the sentences that say why a layer is
 * missing, fed with what a probe would have seen (mountinfo texts, errnos),
 * and the probes themselves on this host, whose answers must agree with
 * what the kernel does.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/host.h"
#include "landlock/landlock.h"
#include "tap.h"

/* As a host shows them (the init namespace's rootfs, id 1, is hidden). */
static const char host_mi[] = "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
			      "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
			      "28 27 0:25 / /tmp rw - tmpfs tmpfs rw\n";
/* A chroot into an rbind of / at /srv/jail: a copy of the root mount (47)
 * on top of pid 1's root mount (27), which the chroot cannot see. */
static const char rbind_mi[] = "47 27 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
			       "49 47 0:21 / /proc rw,relatime - proc proc rw\n";
/* A chroot into a plain directory: the mount holding it is out of reach,
 * so no line has the mount point "/". */
static const char plain_mi[] = "60 27 0:21 / /proc rw,relatime - proc proc rw\n";
/* A process in a mount namespace of its own (a service with PrivateTmp):
 * copies with new ids, on a rootfs copy pid 1 does not see. */
static const char own_ns_mi[] = "812 811 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
				"813 812 0:21 / /proc rw - proc proc rw\n";
/* A mount point with an escaped space is not "/". */
static const char space_mi[] = "70 27 254:0 / /\\040x rw - ext4 /dev/vda rw\n";

static void test_chroot_judge(void)
{
	ok(host_chroot_judge(host_mi, host_mi) == 0, "the host's own view: not a chroot");
	ok(host_chroot_judge(rbind_mi, host_mi) == 1,
	   "a chroot into a bind mount of /: its root mount sits in pid 1's tree");
	ok(host_chroot_judge(plain_mi, host_mi) == 1, "a chroot into a directory: no / mount");
	ok(host_chroot_judge(plain_mi, NULL) == 1, "... told without pid 1's mountinfo too");
	ok(host_chroot_judge(own_ns_mi, host_mi) == 0,
	   "another mount namespace is not taken for a chroot");
	ok(host_chroot_judge(rbind_mi, NULL) == -ENODATA,
	   "a root mount without pid 1's view: cannot be told");
	ok(host_chroot_judge(space_mi, host_mi) == 1, "\"/ x\" is not the root");
	ok(host_in_chroot() == 0, "this test does not run in a chroot (got %d)", host_in_chroot());
}

static void test_landlock_explain(void)
{
	char why[512];
	int r;

	r = host_landlock_explain(-1, ENOSYS, NULL, why, sizeof(why));
	ok(r == -EOPNOTSUPP && strstr(why, "CONFIG_SECURITY_LANDLOCK"), "ENOSYS: not built in (%s)",
	   why);
	r = host_landlock_explain(-1, EOPNOTSUPP, "lockdown,capability,yama,apparmor", why,
				  sizeof(why));
	ok(r == -EOPNOTSUPP && strstr(why, "disabled at boot") && strstr(why, "lsm=") &&
	       strstr(why, "lockdown,capability,yama,apparmor"),
	   "EOPNOTSUPP: disabled at boot, with the active list (%s)", why);
	r = host_landlock_explain(-1, EOPNOTSUPP, NULL, why, sizeof(why));
	ok(r == -EOPNOTSUPP && strstr(why, "lsm="), "EOPNOTSUPP without the list (%s)", why);
	r = host_landlock_explain(7, 0, NULL, why, sizeof(why));
	ok(r == 0 && strstr(why, "ABI 7") && strstr(why, "TCP"), "ABI 7 (%s)", why);
	r = host_landlock_explain(9, 0, NULL, why, sizeof(why));
	ok(r == 0 && strstr(why, "ABI 9") && strstr(why, "pathname unix sockets") &&
	       strstr(why, "all threads"),
	   "ABI 9 (%s)", why);
	r = host_landlock_explain(12, 0, NULL, why, sizeof(why));
	ok(r == 0 && strstr(why, "ABI 12, used as ABI 9"), "a newer kernel is used at 9 (%s)", why);
	r = host_landlock_explain(-1, EPERM, NULL, why, sizeof(why));
	ok(r == -EPERM && strstr(why, "Operation not permitted"), "other errno (%s)", why);
}

static void test_seccomp_explain(void)
{
	char why[512];
	int r;

	r = host_seccomp_explain(EINVAL, 0, why, sizeof(why));
	ok(r == -EOPNOTSUPP && strstr(why, "CONFIG_SECCOMP"), "PR_GET_SECCOMP EINVAL (%s)", why);
	r = host_seccomp_explain(0, EOPNOTSUPP, why, sizeof(why));
	ok(r == -EOPNOTSUPP && strstr(why, "user notification"), "no RET_USER_NOTIF (%s)", why);
	r = host_seccomp_explain(0, EINVAL, why, sizeof(why));
	ok(r == -EOPNOTSUPP && strstr(why, "CONFIG_SECCOMP_FILTER"), "no filters (%s)", why);
	ok(host_seccomp_explain(0, 0, why, sizeof(why)) == 0, "both answered: available");
}

/* What the probes say on this host agrees with what the kernel does. */
static void test_this_host(void)
{
	char why[512];
	int abi = -1, r;
	pid_t pid;
	int status = -1;

	r = host_why_landlock(&abi, why, sizeof(why));
	ok((r == 0) == (ll_abi() > 0) && abi == (ll_abi() > 0 ? ll_abi() : 0),
	   "landlock probe agrees with the kernel: %s", why);
	r = host_why_seccomp(why, sizeof(why));
	ok(r == 0 || why[0], "seccomp probe: %s", why);

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	if (pid > 0)
		(void)waitpid(pid, &status, 0);
	r = host_why_userns(geteuid() != 0, why, sizeof(why));
	/* The probe reads /proc and /sys; an LSM can still refuse (host.h). */
	ok(r < 0 ? WEXITSTATUS(status) != 0 : true, "userns probe: %s (%s)",
	   r < 0 ? "refused" : "available", why[0] ? why : "no detail");
}

static void test_refusal(void)
{
	sc_diag d = {0};

	snprintf(d.path, sizeof(d.path), "hostname");
	snprintf(d.message, sizeof(d.message), "Operation not permitted");
	host_explain_refusal(&d, -EPERM, false);
	ok(strcmp(d.message, "Operation not permitted") == 0,
	   "a step the probes cannot explain keeps its message");
	snprintf(d.path, sizeof(d.path), "userns");
	host_explain_refusal(&d, -EPERM, false);
	ok(strncmp(d.message, "Operation not permitted", 23) == 0,
	   "userns on a host that allows it: nothing invented (%s)", d.message);
}

int main(void)
{
	test_chroot_judge();
	test_landlock_explain();
	test_seccomp_explain();
	test_this_host();
	test_refusal();
	return tap_done();
}

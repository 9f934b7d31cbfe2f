/* SPDX-License-Identifier: MIT */
/* Why a layer is missing on this host (host.h). */
#include "host/host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "cgroup/cgroup.h"
#include "compat/landlock.h"
#include "landlock/landlock.h"
#include "ns/ns.h"
#include "seccomp/seccomp.h"

#define CHROOT_WHY                                                                                 \
	"sandcap runs inside a chroot (its / is not the root of its mount namespace), and the "    \
	"kernel "                                                                                  \
	"refuses user namespaces to a chrooted process: run sandcap outside the chroot, or "       \
	"in a container with a mount namespace of its own"

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (len == 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* ---- chroot ----------------------------------------------------------- */

/*
 * The kernel's test (current_chrooted) is whether our root is the topmost
 * mount on the namespace's root. From user space, with mountinfo (whose
 * mount points are relative to the reader's root, and which leaves out what
 * that root cannot reach): a root that is no mount's root shows no "/"
 * line at all; a root that is a mount (a chroot into a bind mount of /)
 * has a parent that pid 1 sees, inside pid 1's tree. /proc/PID/mountinfo
 * needs no ptrace access, unlike /proc/1/root.
 */
typedef struct mi_root {
	bool found;
	uint64_t id, parent;
} mi_root;

/* The last line whose mount point is "/" (the topmost mount there). */
static mi_root mi_find_root(const char *mi)
{
	mi_root r = {0};

	for (const char *l = mi; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		unsigned long long id, parent;
		char mp[256];

		/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...", spaces escaped as \040 */
		if (sscanf(l, "%llu %llu %*s %*s %255s", &id, &parent, mp) == 3 &&
		    strcmp(mp, "/") == 0)
			r = (mi_root){.found = true, .id = id, .parent = parent};
	}
	return r;
}

static bool mi_has_id(const char *mi, uint64_t want)
{
	for (const char *l = mi; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		unsigned long long id;

		if (sscanf(l, "%llu", &id) == 1 && id == want)
			return true;
	}
	return false;
}

int host_chroot_judge(const char *self_mountinfo, const char *init_mountinfo)
{
	mi_root self, init;

	if (!self_mountinfo)
		return -EINVAL;
	self = mi_find_root(self_mountinfo);
	if (!self.found)
		return 1; /* our root is inside a mount, not one */
	if (!init_mountinfo)
		return -ENODATA;
	init = mi_find_root(init_mountinfo);
	if (init.found && init.id == self.id)
		return 0;
	/* Our root is mounted on something pid 1 can see: a mount inside its
	 * tree. (Another mount namespace shares no mount ids with ours.) */
	return mi_has_id(init_mountinfo, self.parent) ? 1 : 0;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *close_paren;
	_cleanup_close_ int fd = -1;
	ssize_t n;
	int ppid;

	/* "PID (COMM) STATE PPID ...": COMM may hold anything but ends at
	 * the last ')'. World-readable, like mountinfo. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');
	if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

/*
 * The mountinfo of the oldest ancestor that sees our root mount (mount id
 * root_id): one in our own mount namespace, since another namespace shares
 * no mount ids with ours. On a plain host that is pid 1; where sandcap runs
 * in a mount namespace of its own (a container, `unshare -m` and
 * pivot_root) it is the process at that namespace's root. NULL when no
 * ancestor does (we are the oldest).
 */
static char *elder_mountinfo(uint64_t root_id)
{
	_cleanup_free_ char *best = NULL;
	pid_t pid = getppid();

	for (unsigned hops = 0; pid > 0 && hops < 4096; hops++) {
		_cleanup_free_ char *mi = NULL;
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
		if (io_read_file_at(AT_FDCWD, path, 1 << 20, &mi, NULL) < 0 ||
		    !mi_has_id(mi, root_id))
			break;
		free(best);
		best = TAKE_PTR(mi);
		if (pid == 1)
			break;
		pid = parent_of(pid);
	}
	return TAKE_PTR(best);
}

int host_in_chroot(void)
{
	_cleanup_free_ char *self = NULL, *elder = NULL;
	mi_root root;
	int r;

	r = io_read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20, &self, NULL);
	if (r < 0)
		return r;
	root = mi_find_root(self);
	if (!root.found)
		return 1; /* our root is inside a mount, not one */
	elder = elder_mountinfo(root.id);
	if (!elder)
		return 0; /* the oldest of our namespace: its root is ours */
	return host_chroot_judge(self, elder);
}

/* ---- user namespaces ---------------------------------------------------- */

int host_why_userns(bool unpriv, char *why, size_t len)
{
	say(why, len, "%s", "");
	if (host_in_chroot() == 1) {
		say(why, len, "%s", CHROOT_WHY);
		return -EPERM;
	}
	/* Without root: the sysctls and AppArmor, as ns_unpriv_userns_check
	 * names them; as root only user.max_user_namespaces = 0 refuses. */
	if (unpriv)
		return ns_unpriv_userns_check(why, len);
	return ns_userns_max_check(why, len);
}

/* ---- Landlock ------------------------------------------------------------ */

int host_landlock_explain(int ret, int err, const char *lsm, char *why, size_t len)
{
	if (ret > 0) {
		int used = ll_abi_used(ret);

		if (used == ret)
			say(why, len, "ABI %d (%s)", ret, ll_abi_features(ret));
		else
			say(why, len, "ABI %d, used as ABI %d (%s): sandcap knows no newer rights",
			    ret, used, ll_abi_features(used));
		return 0;
	}
	if (err == ENOSYS) {
		say(why, len,
		    "the kernel has no Landlock syscalls (ENOSYS): built without "
		    "CONFIG_SECURITY_LANDLOCK, older than 5.13, or hidden by a container's "
		    "seccomp filter");
		return -EOPNOTSUPP;
	}
	if (err == EOPNOTSUPP) {
		if (lsm)
			say(why, len,
			    "Landlock is built in but disabled at boot (EOPNOTSUPP): the active "
			    "security modules are \"%s\"; add landlock to the lsm= boot parameter",
			    lsm);
		else
			say(why, len,
			    "Landlock is built in but disabled at boot (EOPNOTSUPP): add landlock "
			    "to the lsm= boot parameter");
		return -EOPNOTSUPP;
	}
	say(why, len, "landlock_create_ruleset(VERSION) failed: %s", strerror(err));
	return -err;
}

int host_why_landlock(int *ret_abi, char *why, size_t len)
{
	_cleanup_free_ char *lsm = NULL;
	int abi = ll_abi();

	if (ret_abi)
		*ret_abi = abi > 0 ? abi : 0;
	if (abi > 0)
		return host_landlock_explain(abi, 0, NULL, why, len);
	if (abi < 0)
		return host_landlock_explain(-1, -abi, NULL, why, len);
	/* ll_abi folds both reasons into 0: ask again for the errno. */
	errno = 0;
	if (sys_landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) >= 0)
		errno = EOPNOTSUPP;
	if (errno == EOPNOTSUPP &&
	    io_read_file_at(AT_FDCWD, "/sys/kernel/security/lsm", 4096, &lsm, NULL) >= 0)
		lsm[strcspn(lsm, "\n")] = '\0';
	return host_landlock_explain(-1, errno ? errno : ENOSYS, lsm, why, len);
}

/* ---- seccomp ------------------------------------------------------------- */

int host_seccomp_explain(int get_seccomp_err, int notif_err, char *why, size_t len)
{
	if (get_seccomp_err == EINVAL) {
		say(why, len, "this kernel was built without seccomp (CONFIG_SECCOMP)");
		return -EOPNOTSUPP;
	}
	if (get_seccomp_err) {
		say(why, len, "prctl(PR_GET_SECCOMP) failed: %s", strerror(get_seccomp_err));
		return -get_seccomp_err;
	}
	if (notif_err == EINVAL || notif_err == ENOSYS) {
		say(why, len,
		    "this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER) or is older "
		    "than 5.0");
		return -EOPNOTSUPP;
	}
	if (notif_err == EOPNOTSUPP) {
		say(why, len, "this kernel has no seccomp user notification (Linux 5.5 needed)");
		return -EOPNOTSUPP;
	}
	if (notif_err) {
		say(why, len, "seccomp(SECCOMP_GET_ACTION_AVAIL) failed: %s", strerror(notif_err));
		return -notif_err;
	}
	return 0;
}

int host_why_seccomp(char *why, size_t len)
{
	uint32_t action = SECCOMP_RET_USER_NOTIF;
	int get_err = 0, notif_err = 0, r;

	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
		get_err = errno;
	else if (syscall(__NR_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0)
		notif_err = errno;
	r = host_seccomp_explain(get_err, notif_err, why, len);
	if (r < 0)
		return r;
	/* The kernel says it can; the probe finds out whether it does here
	 * (an outer filter or listener can still refuse). */
	return sf_probe(why, len);
}

/* ---- cgroup -------------------------------------------------------------- */

int host_why_cgroup(bool unpriv, char *why, size_t len)
{
	cg_version v;
	int r = cg_detect(&v, why, len);

	if (r < 0 || !unpriv)
		return r;
	if (v == CG_V1) {
		say(why, len,
		    "this host uses cgroup v1, which is never delegated to users: without root, "
		    "limits need a delegated cgroup v2 subtree");
		return -EPERM;
	}
	return cg_delegated(why, len);
}

/* ---- refusals ------------------------------------------------------------ */

void host_explain_refusal(sc_diag *d, int err, bool unpriv)
{
	char why[320] = "";
	size_t n;

	if (!d)
		return;
	err = err < 0 ? -err : err;
	if (strcmp(d->path, "userns") == 0 || strcmp(d->path, "clone") == 0 ||
	    (strncmp(d->path, "$.fs.grants", 11) == 0 && err == EPERM)) {
		if (host_why_userns(unpriv, why, sizeof(why)) >= 0)
			return;
	} else if (strcmp(d->path, "mounts") == 0) {
		if (host_in_chroot() != 1)
			return;
		say(why, sizeof(why), "%s", CHROOT_WHY);
	} else if (strcmp(d->path, "landlock") == 0 && err == EOPNOTSUPP) {
		int abi = 0;

		if (host_why_landlock(&abi, why, sizeof(why)) >= 0) {
			/* There, but too old for what the plan needs (ll_apply). */
			if (abi >= 4)
				return;
			say(why, sizeof(why),
			    "this kernel's Landlock ABI %d cannot restrict TCP connects (ABI 4, "
			    "Linux 6.7), which a policy with net.egress needs",
			    abi);
		}
	} else if (strcmp(d->path, "seccomp") == 0) {
		if (host_why_seccomp(why, sizeof(why)) >= 0)
			return;
	} else if (strcmp(d->path, "cgroup") == 0) {
		if (host_why_cgroup(unpriv, why, sizeof(why)) >= 0)
			return;
	} else {
		return;
	}
	n = strlen(d->message);
	if (why[0] && !strstr(d->message, why) && n + 3 < sizeof(d->message))
		(void)snprintf(d->message + n, sizeof(d->message) - n, "%s%s", n ? "; " : "", why);
}

/* In the probe's netns: a connect to addr reaches a wildcard listener. */
static int probe_connect(int family, const char *addr)
{
	_cleanup_close_ int l = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	_cleanup_close_ int c = -1, a = -1;
	struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6};
	struct sockaddr_in sa4 = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa6);
	int zero = 0;

	if (l < 0)
		return -errno;
	(void)setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(l, (struct sockaddr *)&sa6, sizeof(sa6)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&sa6, &len) < 0)
		return -errno;
	c = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -errno;
	if (family == AF_INET) {
		sa4.sin_port = sa6.sin6_port;
		(void)inet_pton(AF_INET, addr, &sa4.sin_addr);
		if (connect(c, (struct sockaddr *)&sa4, sizeof(sa4)) < 0)
			return -errno;
	} else {
		(void)inet_pton(AF_INET6, addr, &sa6.sin6_addr);
		if (connect(c, (struct sockaddr *)&sa6, sizeof(sa6)) < 0)
			return -errno;
	}
	a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	return a < 0 ? -errno : 0;
}

/* The child of host_why_transparent(): its answer on fd. */
_Noreturn static void transparent_probe(int fd, bool unpriv)
{
	char why[256] = "";
	const char *what = "unshare(CLONE_NEWNET)";
	int r = unshare(CLONE_NEWNET | (unpriv ? CLONE_NEWUSER : 0)) < 0 ? -errno : 0;

	if (r >= 0) {
		what = "bringing lo up";
		r = ns_loopback_up();
	}
	if (r >= 0)
		r = ns_local_routes(&what);
	if (r >= 0) {
		what = "a connect to 198.18.0.1 on lo";
		r = probe_connect(AF_INET, "198.18.0.1");
	}
	if (r >= 0) {
		what = "a connect to fd73:616e:6463:6170::1 on lo";
		r = probe_connect(AF_INET6, "fd73:616e:6463:6170::1");
	}
	if (r < 0)
		snprintf(why, sizeof(why), "%s: %s", what, strerror(-r));
	(void)io_write_all(fd, why, strlen(why));
	_exit(r < 0 ? 1 : 0);
}

int host_why_transparent(bool unpriv, char *why, size_t len)
{
	int p[2], status = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		(void)close(p[0]);
		(void)close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		(void)close(p[0]);
		transparent_probe(p[1], unpriv);
	}
	(void)close(p[1]);
	n = read(p[0], why, len > 0 ? len - 1 : 0);
	(void)close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (len > 0)
		why[n > 0 ? (size_t)n : 0] = '\0';
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		snprintf(why, len,
			 "local routes on lo: connects to synthetic IPv4 and IPv6 addresses reach "
			 "the listeners");
		return 0;
	}
	if (n <= 0)
		snprintf(why, len, "the probe failed");
	return -EOPNOTSUPP;
}

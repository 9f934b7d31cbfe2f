/* SPDX-License-Identifier: MIT */
/* A pod's namespaces, joined by a container's supervisor (oci/pod.h). */
#include "oci/pod.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "oci/fields.h"

static const struct {
	const char *type, *proc; /* config.json's name, /proc/PID/ns's */
	int flag;
	ino_t init_ino; /* the initial namespace's inode: fixed by the kernel, or 0 */
} kinds[OCI_NS_MAX] = {
    /* PROC_NET_INIT_INO where the kernel fixes it; elsewhere the initial
     * one's is dynamic (>= 0xF0000000) and no namespace has this one */
    [OCI_NS_NET] = {"network", "net", CLONE_NEWNET, 0xEFFFFFF9U},
    /* PROC_IPC_INIT_INO and PROC_UTS_INIT_INO (linux/proc_ns.h) */
    [OCI_NS_IPC] = {"ipc", "ipc", CLONE_NEWIPC, 0xEFFFFFFFU},
    [OCI_NS_UTS] = {"uts", "uts", CLONE_NEWUTS, 0xEFFFFFFEU},
};

void oci_joins_close(int fds[OCI_NS_MAX])
{
	for (int k = 0; k < OCI_NS_MAX; k++)
		fds[k] = safe_close(fds[k]);
}

/* Whether fd names the same namespace as /proc/PID/ns/NAME. */
static bool same_ns(int fd, const char *pid, const char *name)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%s/ns/%s", pid, name);
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* The host's: the kernel's initial one (whether or not /proc/1 may be
 * read: a container's pid 1 may hide it), pid 1's, or our own. */
static bool host_ns(int fd, int k)
{
	struct stat a, self;

	if (fstat(fd, &a) < 0)
		return true;
	if (stat("/proc/self/ns/ipc", &self) == 0 && a.st_dev == self.st_dev &&
	    a.st_ino == kinds[k].init_ino)
		return true;
	return same_ns(fd, "1", kinds[k].proc) || same_ns(fd, "self", kinds[k].proc);
}

static int open_one(int k, const char *path, size_t index, int *ret, char *err, size_t len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	int type;

	if (fd < 0)
		return oci_refuse(err, len, "$.linux.namespaces[%zu].path: %.256s: %s", index, path,
				  strerror(errno));
	type = ioctl(fd, NS_GET_NSTYPE);
	if (type != kinds[k].flag)
		return oci_refuse(err, len,
				  "$.linux.namespaces[%zu].path: %.256s is not a%s %s namespace",
				  index, path, k == OCI_NS_IPC ? "n" : "", kinds[k].type);
	/* The agent shares the pod's ipc and uts namespaces: never the host's
	 * (its SysV IPC objects, its hostname). The network one is only the
	 * proxy's upstream side, which is in the host's when nothing is joined. */
	if (k != OCI_NS_NET && host_ns(fd, k))
		return oci_refuse(
		    err, len,
		    "$.linux.namespaces[%zu].path: %.256s is the host's %s namespace, "
		    "which a container never joins (a pod's is its pause "
		    "container's)",
		    index, path, kinds[k].type);
	*ret = TAKE_FD(fd);
	return 0;
}

bool oci_joins_own_net(int fds[OCI_NS_MAX])
{
	return fds[OCI_NS_NET] >= 0 && !host_ns(fds[OCI_NS_NET], OCI_NS_NET);
}

int oci_joins_open(const oci_joins *j, int fds[OCI_NS_MAX], char *err, size_t err_len)
{
	for (int k = 0; k < OCI_NS_MAX; k++)
		fds[k] = -1;
	for (int k = 0; k < OCI_NS_MAX; k++) {
		int r =
		    j->path[k] ? open_one(k, j->path[k], j->index[k], &fds[k], err, err_len) : 0;

		if (r < 0) {
			oci_joins_close(fds);
			return r;
		}
	}
	return 0;
}

int oci_joins_enter(int fds[OCI_NS_MAX], const char *hostname, bool new_net, const char **ret_what)
{
	int r = 0;

	*ret_what = "";
	for (int k = 0; k < OCI_NS_MAX && r == 0; k++) {
		*ret_what = kinds[k].type;
		if (fds[k] >= 0)
			r = setns(fds[k], kinds[k].flag);
		else if (k != OCI_NS_NET || new_net)
			r = unshare(kinds[k].flag);
		if (r == 0 && k == OCI_NS_UTS && fds[k] < 0) {
			*ret_what = "hostname";
			r = sethostname(hostname, strlen(hostname)) < 0 ||
				    setdomainname("(none)", 6) < 0
				? -1
				: 0;
		}
	}
	r = r < 0 ? -errno : 0;
	oci_joins_close(fds);
	return r;
}

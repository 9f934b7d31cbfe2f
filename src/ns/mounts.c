/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's filesystem view, built by the child while it is still host
 * root in a fresh mount namespace (so the mount namespace stays owned by the
 * initial user namespace: nothing inside can ever mount, even with caps in
 * its own user namespace). Everything is assembled in a tmpfs and entered
 * with pivot_root; the host's tree is detached afterwards.
 *
 * Unprivileged (ns_setup_root_unpriv), the child builds the same view inside
 * the user namespace it was cloned with, which owns its mount namespace:
 * device nodes become binds and grants plain binds; the agent has no
 * capability left to mount with once setup is over.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "compat/syscalls.h"
#include "ns/ns.h"

/* Assembled here, in our private mount namespace only; /tmp exists on every
 * host we support and is covered by our own tmpfs, so the host's is untouched. */
#define NEWROOT		"/tmp"
#define ROOT_TMPFS_OPTS "mode=0755,size=4m,nr_inodes=4096"

static const char *const runtime_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"};

/* The generated /etc gets read-only binds of these directories and copies of
 * these small files (a copy costs microseconds, a bind hundreds) — what
 * ordinary programs need, never passwd, shadow, hostname, ssh or anything
 * with host secrets. Links (localtime, os-release) are recreated. */
static const char *const etc_binds[] = {
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/python3",
    /* Debian's JVMs read their settings (java.security, jvm.cfg) through
     * links into these; an absent one costs an lstat. */
    "/etc/java-11-openjdk",
    "/etc/java-17-openjdk",
    "/etc/java-21-openjdk",
    "/etc/java-25-openjdk",
};
static const char *const etc_copies[] = {
    "/etc/ld.so.cache", "/etc/localtime",   "/etc/os-release", "/etc/mime.types",
    "/etc/protocols",	"/etc/services",    "/etc/ld.so.conf", "/etc/inputrc",
    "/etc/profile",	"/etc/bash.bashrc", "/etc/gitconfig",
};
#define ETC_COPY_MAX (4u << 20)

/* Created with mknod (we are still host root): cheaper than binds. */
static const struct {
	const char *name;
	unsigned major, minor;
} dev_nodes[] = {
    {"null", 1, 3},   {"zero", 1, 5},	 {"full", 1, 7},
    {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0},
};

/* Hidden from the agent's /proc: kernel memory, keys, timers and the like
 * (NULL-terminated: sandcap-runc checks a spec's maskedPaths against it). */
const char *const ns_proc_masked[] = {
    "kcore",	"keys",	      "timer_list",  "timer_stats", "sched_debug", "latency_stats",
    "kallsyms", "kpagecount", "kpageflags",  "kpagecgroup", "acpi",	   "asound",
    "scsi",	"kmsg",	      "vmallocinfo", NULL,
};
/* Made read-only in the agent's /proc. */
const char *const ns_proc_readonly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs", NULL};

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int touch(const char *path)
{
	/* Read-only: a file that is there already in a read-only image (the
	 * mount point of a file bind) opens, where O_WRONLY would be EROFS;
	 * non-blocking, so that a FIFO there cannot hold us. */
	int fd = open(path, O_RDONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0644);

	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	(void)close(fd);
	return 0;
}

/* mkdir -p the parent of path, then create path as a dir or empty file. */
static int make_mountpoint(const char *path, bool dir)
{
	char parent[4096];
	const char *slash = strrchr(path, '/');
	int r;

	if (!slash || (size_t)(slash - path) >= sizeof(parent))
		return -EINVAL;
	if (slash != path) {
		memcpy(parent, path, (size_t)(slash - path));
		parent[slash - path] = '\0';
		r = mkdir_p(parent, 0755);
		if (r < 0)
			return r;
	}
	if (dir)
		return (mkdir(path, 0755) < 0 && errno != EEXIST) ? -errno : 0;
	return touch(path);
}

static int write_file(const char *path, const char *content)
{
	_cleanup_close_ int fd =
	    open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);

	if (fd < 0)
		return -errno;
	return io_write_all(fd, content, strlen(content));
}

/* Clones the tree at src_fd (recursively), applies attributes to every mount
 * in it, and attaches it at target. Recursive read-only covers submounts. */
static int bind_tree(int src_fd, const char *target, uint64_t attr, int idmap_fd)
{
	struct sc_mount_attr ma = {.attr_set = attr};
	_cleanup_close_ int tree = sys_open_tree(
	    src_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);

	if (tree < 0)
		return -errno;
	if (idmap_fd >= 0) {
		ma.attr_set |= MOUNT_ATTR_IDMAP;
		ma.userns_fd = (uint64_t)idmap_fd;
	}
	if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma) < 0)
		return -errno;
	if (sys_move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

static int bind_host_path(const char *host, const char *target, uint64_t attr, bool *ret_skipped)
{
	struct sc_open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	*ret_skipped = false;
	if (lstat(host, &st) < 0) {
		if (errno == ENOENT) {
			*ret_skipped = true;
			return 0;
		}
		return -errno;
	}
	/* Host links such as /bin -> usr/bin are recreated, not followed. */
	if (S_ISLNK(st.st_mode)) {
		char link[4096];
		ssize_t n = readlink(host, link, sizeof(link) - 1);

		if (n < 0)
			return -errno;
		link[n] = '\0';
		if (symlink(link, target) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	}
	fd = sys_openat2(AT_FDCWD, host, &how);
	if (fd < 0)
		return -errno;
	r = make_mountpoint(target, S_ISDIR(st.st_mode));
	if (r < 0)
		return r;
	return bind_tree(fd, target, attr, -1);
}

/* Copies a small host file (or recreates a link) into the new root, in
 * the kernel (sendfile): ten of these run on every start. */
static int copy_host_file(const char *host, const char *target)
{
	_cleanup_close_ int src = -1, dst = -1;
	struct stat st;
	off_t left;

	src = open(host, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (src < 0 && errno == ELOOP) {
		char link[4096];
		ssize_t n = readlink(host, link, sizeof(link) - 1);

		if (n < 0)
			return -errno;
		link[n] = '\0';
		return symlink(link, target) < 0 && errno != EEXIST ? -errno : 0;
	}
	if (src < 0)
		return errno == ENOENT || errno == EACCES ? 0 : -errno;
	if (fstat(src, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return 0;
	if (st.st_size > (off_t)ETC_COPY_MAX)
		return -EFBIG;
	dst = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (dst < 0)
		return -errno;
	for (left = st.st_size; left > 0;) {
		ssize_t n = sendfile(dst, src, NULL, (size_t)left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* the host file shrank meanwhile: keep what was read */
		left -= n;
	}
	return 0;
}

#define RO_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

static int setup_runtime(const sc_plan *plan, const char **what)
{
	char target[4096];
	bool skipped;
	int r;

	if (plan->runtime == RUNTIME_ROOTFS)
		return 0; /* the rootfs itself was bound as / */
	for (size_t i = 0; i < ELEMENTSOF(runtime_dirs); i++) {
		*what = runtime_dirs[i];
		snprintf(target, sizeof(target), NEWROOT "%s", runtime_dirs[i]);
		r = bind_host_path(runtime_dirs[i], target, RO_ATTRS, &skipped);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Per thread: the child is cloned from the thread that runs its supervisor. */
static _Thread_local const char *sandbox_ca;

void ns_set_sandbox_ca(const char *pem)
{
	sandbox_ca = pem;
}

/*
 * The host's bundle plus the sandbox CA, bound read-only over the bundle in
 * the /etc/ssl bind: a file of the root tmpfs, unlinked once bound, so that
 * nothing else names it. Without a host bundle there is nothing to cover.
 */
static int setup_ca_bundle(void)
{
	static const char tmp[] = NEWROOT "/etc/.ca-bundle";
	_cleanup_free_ char *host = NULL;
	_cleanup_close_ int fd = -1;
	size_t len = 0;
	int r;

	if (!sandbox_ca)
		return 0;
	r = io_read_file_at(AT_FDCWD, NS_CA_BUNDLE, ETC_COPY_MAX, &host, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	r = io_write_all(fd, host, len);
	if (r >= 0 && len > 0 && host[len - 1] != '\n')
		r = io_write_all(fd, "\n", 1);
	if (r >= 0)
		r = io_write_all(fd, sandbox_ca, strlen(sandbox_ca));
	if (r < 0)
		return r;
	if (mount(tmp, NEWROOT NS_CA_BUNDLE, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, NEWROOT NS_CA_BUNDLE, NULL,
		  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		return -errno;
	return unlink(tmp) < 0 ? -errno : 0;
}

static int setup_etc(const sc_plan *plan, const char **what)
{
	char buf[1024], target[4096];
	bool skipped;
	int r;

	*what = "/etc";
	r = mkdir_p(NEWROOT "/etc", 0755);
	if (r < 0)
		return r;
	/* The agent's line unless its id is root's or nobody's (identity.uid). */
	buf[0] = '\0';
	if (plan->agent_uid != 0 && plan->agent_uid != NS_NOBODY_UID)
		snprintf(buf, sizeof(buf), "agent:x:%u:%u:agent:/tmp:/bin/sh\n",
			 (unsigned)plan->agent_uid, (unsigned)plan->agent_gid);
	snprintf(target, sizeof(target),
		 "root:x:0:0:root:/root:/usr/sbin/nologin\n%s"
		 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		 buf);
	r = write_file(NEWROOT "/etc/passwd", target);
	buf[0] = '\0';
	if (plan->agent_gid != 0 && plan->agent_gid != NS_NOBODY_GID)
		snprintf(buf, sizeof(buf), "agent:x:%u:\n", (unsigned)plan->agent_gid);
	snprintf(target, sizeof(target), "root:x:0:\n%snogroup:x:65534:\n", buf);
	if (r >= 0)
		r = write_file(NEWROOT "/etc/group", target);
	if (r >= 0)
		r = write_file(NEWROOT "/etc/nsswitch.conf",
			       "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
			       "networks: files\nprotocols: files\nservices: files\n");
	if (r >= 0) {
		snprintf(buf, sizeof(buf), "%s\n", plan->hostname);
		r = write_file(NEWROOT "/etc/hostname", buf);
	}
	if (r >= 0) {
		snprintf(buf, sizeof(buf),
			 "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n127.0.1.1\t%s\n",
			 plan->hostname);
		r = write_file(NEWROOT "/etc/hosts", buf);
	}
	/* The only resolver inside is the proxy worker's sandbox resolver,
	 * which answers allowed names with synthetic addresses (docs/proxy.md);
	 * without egress, none. */
	if (r >= 0)
		r = write_file(NEWROOT "/etc/resolv.conf",
			       plan->n_egress > 0
				   ? "# sandcap's sandbox resolver: allowed names only\n"
				     "nameserver 127.0.0.1\noptions timeout:2 attempts:2\n"
				   : "# no network: no resolver\n");
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(etc_copies); i++) {
		*what = etc_copies[i];
		snprintf(target, sizeof(target), NEWROOT "%s", etc_copies[i]);
		r = copy_host_file(etc_copies[i], target);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(etc_binds); i++) {
		*what = etc_binds[i];
		snprintf(target, sizeof(target), NEWROOT "%s", etc_binds[i]);
		r = bind_host_path(etc_binds[i], target, RO_ATTRS, &skipped);
		if (r < 0)
			return r;
	}
	*what = NS_CA_BUNDLE;
	return setup_ca_bundle();
}

/* mknod is refused in a user namespace (it needs CAP_MKNOD in the initial
 * one), so an unprivileged sandbox binds the host's node instead, after
 * checking that the host's is the device it should be and not something
 * else put at that name. nodev is left off: these binds are the devices. */
static int bind_dev_node(const char *name, unsigned major, unsigned minor, const char *target)
{
	struct sc_open_how how = {.flags = O_PATH | O_CLOEXEC,
				  .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd = -1;
	char host[64];
	struct stat st;
	int r;

	snprintf(host, sizeof(host), "/dev/%s", name);
	fd = sys_openat2(AT_FDCWD, host, &how);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(major, minor))
		return -ENODEV;
	r = touch(target);
	if (r < 0)
		return r;
	return bind_tree(fd, target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, -1);
}

static int setup_dev(bool unpriv, const char **what)
{
	char target[128];
	int r;

	*what = "/dev";
	r = mkdir_p(NEWROOT "/dev", 0755);
	if (r < 0)
		return r;
	if (mount("tmpfs", NEWROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
		  "mode=0755,size=64k,nr_inodes=64") < 0)
		return -errno;
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		snprintf(target, sizeof(target), NEWROOT "/dev/%s", dev_nodes[i].name);
		*what = dev_nodes[i].name;
		if (unpriv) {
			r = bind_dev_node(dev_nodes[i].name, dev_nodes[i].major, dev_nodes[i].minor,
					  target);
			if (r < 0)
				return r;
			continue;
		}
		if (mknod(target, S_IFCHR | 0666, makedev(dev_nodes[i].major, dev_nodes[i].minor)) <
			0 ||
		    chmod(target, 0666) < 0)
			return -errno;
	}
	*what = "/dev/pts";
	if (mkdir(NEWROOT "/dev/pts", 0755) < 0)
		return -errno;
	/* A private devpts instance: no host terminal is reachable through it. */
	if (mount("devpts", NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") < 0)
		return -errno;
	*what = "/dev/shm";
	if (mkdir(NEWROOT "/dev/shm", 01777) < 0)
		return -errno;
	if (mount("tmpfs", NEWROOT "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=1777,size=16m,nr_inodes=1024") < 0)
		return -errno;
	*what = "/dev links";
	if (symlink("pts/ptmx", NEWROOT "/dev/ptmx") < 0 ||
	    symlink("/proc/self/fd", NEWROOT "/dev/fd") < 0 ||
	    symlink("/proc/self/fd/0", NEWROOT "/dev/stdin") < 0 ||
	    symlink("/proc/self/fd/1", NEWROOT "/dev/stdout") < 0 ||
	    symlink("/proc/self/fd/2", NEWROOT "/dev/stderr") < 0)
		return -errno;
	return 0;
}

static int setup_tmp(const sc_plan *plan, const char **what)
{
	char opts[128];

	*what = "/tmp";
	if (mkdir(NEWROOT "/tmp", 01777) < 0 && errno != EEXIST)
		return -errno;
	snprintf(opts, sizeof(opts), "mode=1777,size=%llu,nr_inodes=%llu",
		 (unsigned long long)plan->tmp_size, (unsigned long long)plan->tmp_inodes);
	if (mount("tmpfs", NEWROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	return 0;
}

/* A rootfs's /run: a small tmpfs, as images expect (the root itself is
 * read-only); made in the overlay's upper layer where the image lacks it. */
static int setup_run(const char **what)
{
	*what = "/run";
	if (mkdir(NEWROOT "/run", 0755) < 0 && errno != EEXIST)
		return -errno;
	if (mount("tmpfs", NEWROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=4m,nr_inodes=1024") < 0)
		return -errno;
	return 0;
}

static int setup_proc(const char **what)
{
	char path[128];

	*what = "/proc";
	/* An image's root has its own /proc, empty: mounted over. */
	if (mkdir(NEWROOT "/proc", 0555) < 0 && errno != EEXIST)
		return -errno;
	/* hidepid is moot: the pid namespace holds only the sandbox. */
	if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
	for (size_t i = 0; ns_proc_readonly[i]; i++) {
		snprintf(path, sizeof(path), NEWROOT "/proc/%s", ns_proc_readonly[i]);
		*what = path;
		if (access(path, F_OK) < 0)
			continue;
		if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0 ||
		    mount(NULL, path, NULL,
			  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  NULL) < 0)
			return -errno;
	}
	for (size_t i = 0; ns_proc_masked[i]; i++) {
		struct stat st;

		snprintf(path, sizeof(path), NEWROOT "/proc/%s", ns_proc_masked[i]);
		*what = path;
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (mount("tmpfs", path, "tmpfs",
				  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  "size=0,nr_inodes=1") < 0)
				return -errno;
		} else if (mount("/dev/null", path, NULL, MS_BIND, NULL) < 0) {
			return -errno;
		}
	}
	return 0;
}

/*
 * An image's root: an overlay whose lower layer is the image bound
 * read-only and whose upper layer is a private tmpfs (the size of /tmp),
 * so that the mount points the image lacks (/tmp, /run, a volume's) are
 * made there and the image is never written. Staged on a tmpfs at NEWROOT
 * and moved over it; that tmpfs goes with the host's tree at pivot_root.
 * The overlay is made read-only once the tree is built (setup_root), unless
 * fs.runtime.writable: then the upper layer takes the agent's writes too,
 * bounded by that tmpfs's size. image: the supervisor's idmapped clone
 * (ns_open_sources), or -1 (unprivileged: the path is bound here).
 */
static int mount_image_root(const sc_plan *plan, int image)
{
	struct sc_open_how how = {.flags = O_PATH | O_CLOEXEC,
				  .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd = image >= 0 ? -1 : sys_openat2(AT_FDCWD, plan->rootfs, &how);
	char opts[128];
	struct stat st;
	int r;

	if (image < 0 && fd < 0)
		return -errno;
	snprintf(opts, sizeof(opts), "mode=0755,size=%llu,nr_inodes=%llu",
		 (unsigned long long)plan->tmp_size, (unsigned long long)plan->tmp_inodes);
	if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	if (mkdir(NEWROOT "/lower", 0700) < 0 || mkdir(NEWROOT "/upper", 0755) < 0 ||
	    mkdir(NEWROOT "/work", 0700) < 0 || mkdir(NEWROOT "/root", 0700) < 0)
		return -errno;
	if (image >= 0) {
		if (sys_move_mount(image, "", AT_FDCWD, NEWROOT "/lower", MOVE_MOUNT_F_EMPTY_PATH) <
		    0)
			return -errno;
	} else {
		r = bind_tree(fd, NEWROOT "/lower", RO_ATTRS, -1);
		if (r < 0)
			return r;
	}
	/* The merged root is the upper directory: it takes the image root's
	 * owner (as the idmapped lower shows it) and mode, so that "/" inside
	 * is the image's, not the tmpfs's. Unprivileged we are that owner or
	 * cannot name it. */
	if (image >= 0 &&
	    (stat(NEWROOT "/lower", &st) < 0 || chown(NEWROOT "/upper", st.st_uid, st.st_gid) < 0 ||
	     chmod(NEWROOT "/upper", st.st_mode & 01777) < 0))
		return -errno;
	if (mount("overlay", NEWROOT "/root", "overlay", MS_NOSUID | MS_NODEV,
		  "lowerdir=" NEWROOT "/lower,upperdir=" NEWROOT "/upper,workdir=" NEWROOT
		  "/work") < 0 ||
	    mount(NEWROOT "/root", NEWROOT, NULL, MS_MOVE, NULL) < 0)
		return -errno;
	return 0;
}

/* Grants sorted so that a grant appearing inside another is mounted after it. */
static int cmp_depth(const void *a, const void *b, void *arg)
{
	const sc_plan *plan = arg;
	const char *x = plan->grants[*(const size_t *)a].at,
		   *y = plan->grants[*(const size_t *)b].at;
	size_t dx = 0, dy = 0;

	for (; *x; x++)
		dx += *x == '/';
	for (; *y; y++)
		dy += *y == '/';
	return dx < dy ? -1 : dx > dy;
}

/*
 * Unprivileged: the supervisor's fd names a mount of the host's mount
 * namespace, which open_tree(2) cannot clone from ours, so the grant is
 * opened again here, in our copy of that namespace, without following any
 * symlink, and must be the very inode the supervisor opened and checked (a
 * path renamed or replaced since then is refused, -ESTALE). Done before our
 * tmpfs covers NEWROOT, where grants may lie. The grant is then a plain
 * bind: files the agent writes are the invoking user's, as they would be.
 */
static int open_grants_again(const sc_plan *plan, const ns_source *src, int *fds, const char **what)
{
	struct sc_open_how how = {.flags = O_PATH | O_CLOEXEC,
				  .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};

	for (size_t i = 0; i < plan->n_grants; i++) {
		struct stat st;

		*what = plan->grants[i].path;
		fds[i] = sys_openat2(AT_FDCWD, plan->grants[i].path, &how);
		if (fds[i] < 0)
			return -errno;
		if (fstat(fds[i], &st) < 0)
			return -errno;
		if (st.st_dev != src[i].dev || st.st_ino != src[i].ino)
			return -ESTALE;
	}
	return 0;
}

/* fds: unprivileged, the grants opened again (open_grants_again); else NULL
 * and src holds the detached trees the supervisor made. */
static int setup_grants(const sc_plan *plan, const ns_source *src, const int *fds,
			const char **what)
{
	size_t order[POLICY_MAX_GRANTS];
	char target[4096];
	int r;

	for (size_t i = 0; i < plan->n_grants; i++)
		order[i] = i;
	qsort_r(order, plan->n_grants, sizeof(order[0]), cmp_depth, (void *)plan);
	for (size_t k = 0; k < plan->n_grants; k++) {
		const plan_grant *g = &plan->grants[order[k]];
		const ns_source *s = &src[order[k]];

		*what = g->at;
		if (snprintf(target, sizeof(target), NEWROOT "%s", g->at) >= (int)sizeof(target))
			return -ENAMETOOLONG;
		r = make_mountpoint(target, s->is_dir);
		if (r < 0)
			return r;
		if (fds) {
			r = bind_tree(fds[order[k]], target,
				      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					  (g->mode == GRANT_RO ? MOUNT_ATTR_RDONLY : 0),
				      -1);
			if (r < 0)
				return r;
			continue;
		}
		if (sys_move_mount(s->fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
	}
	return 0;
}

/* The only socket from outside: the supervisor's delegation endpoint. After
 * the grants, so that no grant can cover it. A rootfs is read-only: its
 * /run (which must exist) is setup_run's tmpfs. */
static int setup_spawn_socket(const sc_plan *plan, const char *host_sock, const char **what)
{
	const char *target = NEWROOT NS_SPAWN_SOCKET;
	int r;

	*what = NS_SPAWN_SOCKET;
	if (plan->runtime == RUNTIME_ROOTFS && access(NEWROOT "/run", F_OK) < 0)
		return -errno;
	r = make_mountpoint(target, false);
	if (r < 0)
		return r;
	if (mount(host_sock, target, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, target, NULL,
		  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
	return 0;
}

static int setup_root(const sc_plan *plan, const ns_source *sources, const char *spawn_sock,
		      bool unpriv, const char **reterr_what)
{
	int grant_fds[POLICY_MAX_GRANTS];
	const char *what = "/";
	int r;

	for (size_t i = 0; i < ELEMENTSOF(grant_fds); i++)
		grant_fds[i] = -1;
	/* Nothing we mount may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		r = -errno;
		goto out;
	}
	if (unpriv) {
		r = open_grants_again(plan, sources, grant_fds, &what);
		if (r < 0)
			goto out;
	}
	if (plan->runtime == RUNTIME_ROOTFS) {
		what = plan->rootfs;
		r = mount_image_root(plan, unpriv ? -1 : sources[plan->n_grants].fd);
		if (r < 0)
			goto out;
	} else if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, ROOT_TMPFS_OPTS) < 0) {
		r = -errno;
		goto out;
	}
	r = setup_runtime(plan, &what);
	if (r >= 0 && plan->runtime == RUNTIME_HOST)
		r = setup_etc(plan, &what);
	if (r >= 0)
		r = setup_dev(unpriv, &what);
	if (r >= 0)
		r = setup_proc(&what);
	if (r >= 0)
		r = setup_tmp(plan, &what);
	if (r >= 0 && plan->runtime == RUNTIME_ROOTFS)
		r = setup_run(&what);
	if (r >= 0)
		r = setup_grants(plan, sources, unpriv ? grant_fds : NULL, &what);
	if (r >= 0 && spawn_sock)
		r = setup_spawn_socket(plan, spawn_sock, &what);
	if (r >= 0 && plan->workdir) {
		char wd[4096];

		what = plan->workdir;
		snprintf(wd, sizeof(wd), NEWROOT "%s", plan->workdir);
		if (access(wd, F_OK) < 0)
			r = mkdir_p(wd, 0755);
	}
	if (r < 0)
		goto out;

	what = "pivot_root";
	/* An image's overlay too: its mount points are made by now. A writable
	 * one stays writable (its upper layer is the bound), never setuid. */
	if (mount(NULL, NEWROOT, NULL,
		  MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV |
		      (plan->runtime == RUNTIME_ROOTFS && plan->rootfs_writable ? 0 : MS_RDONLY),
		  NULL) < 0) {
		r = -errno;
		goto out;
	}
	/* pivot_root(".", ".") stacks the old root under the new one; detaching
	 * it leaves no path back to the host (see pivot_root(2), NOTES). */
	if (chdir(NEWROOT) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
		r = -errno;
		goto out;
	}
	r = 0;
out:
	for (size_t i = 0; i < plan->n_grants; i++)
		(void)safe_close(grant_fds[i]);
	if (r < 0 && reterr_what)
		*reterr_what = what;
	return r;
}

int ns_setup_root_spawn(const sc_plan *plan, const ns_source *sources, const char *spawn_sock,
			const char **reterr_what)
{
	return setup_root(plan, sources, spawn_sock, false, reterr_what);
}

int ns_setup_root_unpriv(const sc_plan *plan, const ns_source *sources, const char **reterr_what)
{
	return setup_root(plan, sources, NULL, true, reterr_what);
}

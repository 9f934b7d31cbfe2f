/* SPDX-License-Identifier: MIT */
/*
 * The Landlock ruleset: the second, independent statement of what the mount
 * namespace already shows. If a bind mount were ever wrong (a grant mounted
 * rw, a stray host path left in the view), these rules still confine the
 * agent to the grants. Raw syscalls, no library: see landlock(7).
 */
#include "landlock/landlock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cleanup.h"
#include "compat/landlock.h"
#include "ns/ns.h"

/* The newest ABI whose rights this file knows. A newer kernel is used at this
 * level: rights we do not name stay unhandled, i.e. allowed (landlock(7),
 * "Compatibility"); the mount namespace and seccomp still cover them. */
#define LL_ABI_KNOWN 9

#define LL_FS_V1                                                                                   \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |                              \
	 LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |                          \
	 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |                              \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |                              \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |                            \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)
#define LL_FS_V3    (LL_FS_V1 | LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE)
#define LL_FS_V5    (LL_FS_V3 | LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define LL_FS_V9    (LL_FS_V5 | LANDLOCK_ACCESS_FS_RESOLVE_UNIX)
#define LL_NET_V4   (LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP)
#define LL_SCOPE_V6 (LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL)

/* Handled rights by ABI (docs/architecture.md): everything the kernel can deny. */
static const uint64_t ll_fs_handled[LL_ABI_KNOWN + 1] = {
    [1] = LL_FS_V1, [2] = LL_FS_V1 | LANDLOCK_ACCESS_FS_REFER,
    [3] = LL_FS_V3, [4] = LL_FS_V3,
    [5] = LL_FS_V5, [6] = LL_FS_V5,
    [7] = LL_FS_V5, /* ABI 7 only adds audit-logging flags */
    [8] = LL_FS_V5, /* ABI 8 only adds LANDLOCK_RESTRICT_SELF_TSYNC */
    [9] = LL_FS_V9,
};
static const uint64_t ll_net_handled[LL_ABI_KNOWN + 1] = {
    [4] = LL_NET_V4, [5] = LL_NET_V4, [6] = LL_NET_V4,
    [7] = LL_NET_V4, [8] = LL_NET_V4, [9] = LL_NET_V4,
};
static const uint64_t ll_scoped[LL_ABI_KNOWN + 1] = {
    [6] = LL_SCOPE_V6,
    [7] = LL_SCOPE_V6,
    [8] = LL_SCOPE_V6,
    [9] = LL_SCOPE_V6,
};
static const size_t ll_attr_size[LL_ABI_KNOWN + 1] = {
    [1] = SC_LANDLOCK_RULESET_ATTR_SIZE_V1, [2] = SC_LANDLOCK_RULESET_ATTR_SIZE_V1,
    [3] = SC_LANDLOCK_RULESET_ATTR_SIZE_V1, [4] = SC_LANDLOCK_RULESET_ATTR_SIZE_V4,
    [5] = SC_LANDLOCK_RULESET_ATTR_SIZE_V4, [6] = SC_LANDLOCK_RULESET_ATTR_SIZE_V6,
    [7] = SC_LANDLOCK_RULESET_ATTR_SIZE_V6, [8] = SC_LANDLOCK_RULESET_ATTR_SIZE_V6,
    [9] = SC_LANDLOCK_RULESET_ATTR_SIZE_V6,
};
/* landlock_restrict_self() flags: from ABI 8 the domain goes onto every
 * thread at once. The child is single-threaded when it restricts itself,
 * so this only closes the door on a thread we did not know of. */
static const uint32_t ll_restrict_flags[LL_ABI_KNOWN + 1] = {
    [8] = LANDLOCK_RESTRICT_SELF_TSYNC,
    [9] = LANDLOCK_RESTRICT_SELF_TSYNC,
};

/* Rights that make sense on a non-directory; the kernel rejects others
 * (EINVAL) in a rule whose parent_fd is not a directory. */
#define LL_FILE_RIGHTS                                                                             \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |                              \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV | LANDLOCK_ACCESS_FS_RESOLVE_UNIX)

/* Access sets, before being cut down to what the ABI handles. */
#define LL_RO                                                                                      \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
/* Writable trees get everything but device creation: devices are never
 * legitimate in a grant (mounts are nodev, seccomp refuses mknod of them).
 * That includes connecting to a UNIX socket found there (ABI 9): a rw grant
 * is the agent's to use whole. Read-only trees do not: a host daemon's
 * socket in a ro grant (or in the runtime) would let the agent ask that
 * daemon to act for it. Sockets the sandbox binds itself stay reachable
 * anywhere (the kernel allows those of the same domain). */
#define LL_RW (LL_FS_V9 & ~(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK))
/* The character devices: read/write, O_TRUNC on open (shells do "> /dev/null")
 * and terminal ioctls (tcgetattr on /dev/tty and the pts). */
#define LL_DEV                                                                                     \
	(LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |                            \
	 LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)
/* /proc is read-only for Landlock. Writes under /proc/self (oom_score_adj,
 * attr/, uid_map, clear_refs) are not needed by the interpreters, shells,
 * compilers and git we target, and each is a knob on kernel state; programs
 * that try get EACCES. Reopening /proc/self/fd/N is checked against the
 * object's real path, so "echo > /dev/stdout" still works on a granted file,
 * a pipe or the pty. */
#define LL_PROC (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
/* The init binary, which is outside the view: execute it and let ld.so map it. */
#define LL_EXE (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE)

typedef struct ll_path_rule {
	const char *path;
	uint64_t access;
} ll_path_rule;

/* Fixed rules of the sandbox view; each is skipped when the path does not
 * exist there (the ns module decides what exists). */
static const ll_path_rule ll_host_runtime[] = {
    {"/usr", LL_RO},
    {"/bin", LL_RO},
    {"/sbin", LL_RO},
    {"/lib", LL_RO},
    {"/lib64", LL_RO},
    {"/etc", LL_RO},
    /* Listing "/" shows only the names the mount namespace put there. */
    {"/", LANDLOCK_ACCESS_FS_READ_DIR},
};
static const ll_path_rule ll_rootfs_runtime[] = {
    {"/", LL_RO},
};
static const ll_path_rule ll_common[] = {
    {"/tmp", LL_RW},					/* the sandbox's own tmpfs */
    {"/dev", LANDLOCK_ACCESS_FS_READ_DIR},		/* ls /dev */
    {"/dev/null", LL_DEV},				/* the usual character devices */
    {"/dev/zero", LL_DEV},				/* ... */
    {"/dev/full", LL_DEV},				/* ... */
    {"/dev/random", LL_DEV},				/* ... */
    {"/dev/urandom", LL_DEV},				/* ... */
    {"/dev/tty", LL_DEV},				/* the relay's pty, when there is one */
    {"/dev/ptmx", LL_DEV},				/* new ptys (script, expect, tmux) */
    {"/dev/pts", LL_DEV | LANDLOCK_ACCESS_FS_READ_DIR}, /* their slaves */
    {"/dev/shm", LL_RW},				/* POSIX shm and semaphores */
    {"/proc", LL_PROC},					/* the sandbox's own procfs */
    /* The supervisor binds it outside the domain: connecting needs the
     * right from ABI 9 on (the only one a socket file gets here). */
    {NS_SPAWN_SOCKET, LANDLOCK_ACCESS_FS_RESOLVE_UNIX},
};

static void ll_note(ll_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ll_note(ll_status *st, const char *fmt, ...)
{
	size_t used = strlen(st->degraded);
	va_list ap;

	if (used + 3 >= sizeof(st->degraded))
		return;
	if (used > 0) {
		st->degraded[used++] = ';';
		st->degraded[used++] = ' ';
		st->degraded[used] = '\0';
	}
	va_start(ap, fmt);
	(void)vsnprintf(st->degraded + used, sizeof(st->degraded) - used, fmt, ap);
	va_end(ap);
}

int ll_abi_used(int kernel_abi)
{
	return kernel_abi > LL_ABI_KNOWN ? LL_ABI_KNOWN : kernel_abi < 0 ? 0 : kernel_abi;
}

const char *ll_abi_features(int abi)
{
	static const char *const what[LL_ABI_KNOWN + 1] = {
	    [0] = "none",
	    [1] = "fs",
	    [2] = "fs, refer",
	    [3] = "fs, truncate",
	    [4] = "fs, TCP",
	    [5] = "fs, TCP, device ioctls",
	    [6] = "fs, TCP, scoping",
	    [7] = "fs, TCP, scoping",
	    [8] = "fs, TCP, scoping, all threads",
	    [9] = "fs, TCP, scoping, all threads, pathname unix sockets",
	};

	return what[ll_abi_used(abi)];
}

uint64_t ll_handled_fs(int abi)
{
	return ll_fs_handled[ll_abi_used(abi)];
}

uint32_t ll_restrict_flags_for(int abi)
{
	return ll_restrict_flags[ll_abi_used(abi)];
}

int ll_abi(void)
{
	int abi = sys_landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (abi < 0) {
		/* ENOSYS: not built in; EOPNOTSUPP: built in but not in lsm=. */
		if (errno == ENOSYS || errno == EOPNOTSUPP)
			return 0;
		return -errno;
	}
	return abi;
}

/* Adds one path_beneath rule for fd. Rights are cut to what the ruleset
 * handles (adding an unhandled right is EINVAL) and, for a non-directory, to
 * the rights a file can carry. */
static int ll_add_fd(int ruleset_fd, int fd, uint64_t access, uint64_t handled)
{
	struct sc_landlock_path_beneath_attr pb = {.parent_fd = fd};
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	access &= handled;
	if (!S_ISDIR(st.st_mode))
		access &= LL_FILE_RIGHTS;
	if (access == 0)
		return 0;
	pb.allowed_access = access;
	if (sys_landlock_add_rule(ruleset_fd, SC_LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		return -errno;
	return 0;
}

static int ll_add_path(int ruleset_fd, const char *path, uint64_t access, uint64_t handled,
		       bool required)
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0) {
		if (!required && errno == ENOENT)
			return 0;
		return -errno;
	}
	return ll_add_fd(ruleset_fd, fd, access, handled);
}

static int ll_add_table(int ruleset_fd, const ll_path_rule *t, size_t n, uint64_t handled)
{
	for (size_t i = 0; i < n; i++) {
		int r = ll_add_path(ruleset_fd, t[i].path, t[i].access, handled, false);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * A writable image root (fs.runtime.writable): rw rules on each directory and
 * file at the top of "/" that belongs to the image's overlay. Landlock rules
 * only add, so one on "/" would reach the mounts beneath it too (/proc, /dev,
 * ro grants); the mount roots at the top are skipped and keep their own
 * rules. A ro grant nested deeper, under an image directory, stays read-only
 * by its mount (MOUNT_ATTR_RDONLY, which no capability inside can undo).
 * Not given: creating or removing names in "/" itself, and connecting to a
 * socket found in these trees (as in ro ones).
 */
static int ll_add_image_top(int ruleset_fd, uint64_t handled)
{
	_cleanup_close_ int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (root < 0)
		return -errno;
	d = fdopendir(dup(root));
	if (!d)
		return -errno;
	while (r >= 0 && (errno = 0, e = readdir(d))) {
		struct statx stx;
		int fd;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (statx(root, e->d_name, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) < 0) {
			r = -errno;
			break;
		}
		/* A link's target is covered where it lies; mounts keep theirs. */
		if (S_ISLNK(stx.stx_mode) || (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) ||
		    !(S_ISDIR(stx.stx_mode) || S_ISREG(stx.stx_mode)))
			continue;
		fd = openat(root, e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			break;
		}
		r = ll_add_fd(ruleset_fd, fd, LL_RW & ~(uint64_t)LANDLOCK_ACCESS_FS_RESOLVE_UNIX,
			      handled);
		(void)close(fd);
	}
	if (r >= 0 && errno != 0)
		r = -errno;
	(void)closedir(d);
	return r;
}

size_t ll_writable(const sc_plan *plan, const char **ret, size_t max)
{
	size_t n = 0;

	/* A writable image root: its top entries are found inside only
	 * (ll_add_image_top), so "/" stands for them here; a write Landlock
	 * refuses beside them (a new name in "/", /proc) goes to the kernel
	 * unjudged, refused without a record. */
	if (plan->runtime == RUNTIME_ROOTFS && plan->rootfs_writable && n < max)
		ret[n++] = "/";
	for (size_t i = 0; i < ELEMENTSOF(ll_common) && n < max; i++)
		if (ll_common[i].access == LL_RW)
			ret[n++] = ll_common[i].path;
	for (size_t i = 0; i < plan->n_grants && n < max; i++)
		if (plan->grants[i].mode != GRANT_RO)
			ret[n++] = plan->grants[i].at ? plan->grants[i].at : plan->grants[i].path;
	return n;
}

int ll_apply(const sc_plan *plan, int exe_fd, ll_status *ret_status)
{
	int abi = ll_abi();

	if (abi < 0)
		return abi;
	return ll_apply_abi(plan, exe_fd, abi, ret_status);
}

int ll_apply_abi(const sc_plan *plan, int exe_fd, int abi, ll_status *ret_status)
{
	struct sc_landlock_ruleset_attr attr = {0};
	_cleanup_close_ int ruleset_fd = -1;
	ll_status st = {0};
	bool net_needed;
	int r;

	if (!plan || !ret_status || abi < 0)
		return -EINVAL;
	st.abi = abi;
	/* TCP is the netns's to confine: it has nothing but the sandbox's own
	 * loopback, where the agent may serve itself (test suites, dev
	 * servers) and every connect out is refused or goes to the proxy
	 * (docs/decisions.md, "Loopback TCP is the agent's"). Only with
	 * net.listen off is TCP bind handled, beside the filter's refusal of
	 * listen(2). */
	net_needed = !plan->net_listen;

	if (abi == 0) {
		if (!plan->best_effort) {
			*ret_status = st;
			return -EOPNOTSUPP;
		}
		ll_note(&st, "landlock unavailable: filesystem and TCP rules not enforced");
		*ret_status = st;
		return 0;
	}
	if (abi > LL_ABI_KNOWN)
		abi = LL_ABI_KNOWN;
	if (ll_net_handled[abi] == 0 && net_needed && !plan->best_effort) {
		*ret_status = st;
		return -EOPNOTSUPP;
	}

	attr.handled_access_fs = ll_fs_handled[abi];
	/*
	 * TCP connects are left to the netns: a connect Landlock refused would
	 * never be a packet, and the refusal on lo is what records the attempt
	 * (docs/decisions.md, "Direct attempts are refused by the netns, and
	 * seen").
	 */
	attr.handled_access_net =
	    net_needed ? ll_net_handled[abi] & ~(uint64_t)LANDLOCK_ACCESS_NET_CONNECT_TCP : 0;
	attr.scoped = ll_scoped[abi];
	ruleset_fd = sys_landlock_create_ruleset(&attr, ll_attr_size[abi], 0);
	if (ruleset_fd < 0)
		return -errno;

	if (plan->runtime == RUNTIME_ROOTFS) {
		r = ll_add_table(ruleset_fd, ll_rootfs_runtime, ELEMENTSOF(ll_rootfs_runtime),
				 attr.handled_access_fs);
		if (r >= 0 && plan->rootfs_writable)
			r = ll_add_image_top(ruleset_fd, attr.handled_access_fs);
	} else
		r = ll_add_table(ruleset_fd, ll_host_runtime, ELEMENTSOF(ll_host_runtime),
				 attr.handled_access_fs);
	if (r < 0)
		return r;
	r = ll_add_table(ruleset_fd, ll_common, ELEMENTSOF(ll_common), attr.handled_access_fs);
	if (r < 0)
		return r;

	/* Grants must exist in the view: a missing one is a setup error, not
	 * something to skip silently. A cow grant is written like a rw one:
	 * its writes land in its private upper layer. */
	for (size_t i = 0; i < plan->n_grants; i++) {
		const plan_grant *g = &plan->grants[i];
		const char *at = g->at ? g->at : g->path;

		if (!at || at[0] != '/')
			return -EINVAL;
		r = ll_add_path(ruleset_fd, at, g->mode != GRANT_RO ? LL_RW : LL_RO,
				attr.handled_access_fs, true);
		if (r < 0)
			return r;
	}

	if (exe_fd >= 0) {
		r = ll_add_fd(ruleset_fd, exe_fd, LL_EXE, attr.handled_access_fs);
		if (r < 0)
			return r;
	}

	if (sys_landlock_restrict_self(ruleset_fd, ll_restrict_flags[abi]) < 0)
		return -errno; /* EPERM: no_new_privs not set by the caller */

	st.fs = true;
	st.net = attr.handled_access_net != 0;
	st.scoped = attr.scoped != 0;
	if (!(attr.handled_access_fs & LANDLOCK_ACCESS_FS_TRUNCATE))
		ll_note(&st, "landlock ABI %d: truncate not restricted", st.abi);
	if (!(attr.handled_access_fs & LANDLOCK_ACCESS_FS_IOCTL_DEV))
		ll_note(&st, "landlock ABI %d: device ioctls not restricted", st.abi);
	if (!st.net && net_needed)
		ll_note(&st, "landlock ABI %d: TCP bind not restricted", st.abi);
	if (!st.scoped)
		ll_note(&st, "landlock ABI %d: abstract unix sockets and signals not scoped",
			st.abi);
	st.unix_paths = (attr.handled_access_fs & LANDLOCK_ACCESS_FS_RESOLVE_UNIX) != 0;
	st.all_threads = ll_restrict_flags[abi] != 0;
	*ret_status = st;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Raw wrappers for syscalls and UAPI constants that Debian 12's glibc and
 * headers lack or declare in conflicting headers. Only this directory may
 * define kernel constants.
 */
#pragma once

#include <fcntl.h>
#include <linux/sched.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_fsopen
#define __NR_fsopen 430
#endif
#ifndef __NR_fsconfig
#define __NR_fsconfig 431
#endif
#ifndef __NR_fsmount
#define __NR_fsmount 432
#endif
#ifndef __NR_fspick
#define __NR_fspick 433
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif

/* open_tree / move_mount */
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* mount_setattr */
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV  0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef MOUNT_ATTR_SIZE_VER0
#define MOUNT_ATTR_SIZE_VER0 32
#endif

struct sc_mount_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};

/* openat2 */
struct sc_open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};
#ifndef RESOLVE_NO_XDEV
#define RESOLVE_NO_XDEV	      0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS   0x04
#define RESOLVE_BENEATH	      0x08
#define RESOLVE_IN_ROOT	      0x10
#endif

/* clone3 */
struct sc_clone_args {
	uint64_t flags;
	uint64_t pidfd;
	uint64_t child_tid;
	uint64_t parent_tid;
	uint64_t exit_signal;
	uint64_t stack;
	uint64_t stack_size;
	uint64_t tls;
	uint64_t set_tid;
	uint64_t set_tid_size;
	uint64_t cgroup;
};
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static inline int sys_open_tree(int dfd, const char *path, unsigned flags)
{
	return (int)syscall(__NR_open_tree, dfd, path, flags);
}

static inline int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to,
				 unsigned flags)
{
	return (int)syscall(__NR_move_mount, from_dfd, from, to_dfd, to, flags);
}

static inline int sys_mount_setattr(int dfd, const char *path, unsigned flags,
				    struct sc_mount_attr *attr)
{
	return (int)syscall(__NR_mount_setattr, dfd, path, flags, attr, sizeof(*attr));
}

static inline int sys_openat2(int dfd, const char *path, struct sc_open_how *how)
{
	return (int)syscall(__NR_openat2, dfd, path, how, sizeof(*how));
}

/* The new mount API's fs contexts (Debian 12's <sys/mount.h> declares them
 * but clashes with <linux/mount.h>): only the values used here. */
#define SC_FSOPEN_CLOEXEC      0x00000001
#define SC_FSMOUNT_CLOEXEC     0x00000001
#define SC_FSCONFIG_SET_FLAG   0
#define SC_FSCONFIG_SET_STRING 1
#define SC_FSCONFIG_SET_FD     5
#define SC_FSCONFIG_CMD_CREATE 6

/* Reconfiguring a mounted filesystem (fspick(2)). */
#define SC_FSCONFIG_CMD_RECONFIGURE 7
#define SC_FSPICK_CLOEXEC	    0x00000001
#define SC_FSPICK_EMPTY_PATH	    0x00000008

static inline int sys_fsopen(const char *fsname, unsigned flags)
{
	return (int)syscall(__NR_fsopen, fsname, flags);
}

static inline int sys_fsconfig(int fd, unsigned cmd, const char *key, const void *value, int aux)
{
	return (int)syscall(__NR_fsconfig, fd, cmd, key, value, aux);
}

static inline int sys_fsmount(int fd, unsigned flags, unsigned attr_flags)
{
	return (int)syscall(__NR_fsmount, fd, flags, attr_flags);
}

static inline int sys_fspick(int dfd, const char *path, unsigned flags)
{
	return (int)syscall(__NR_fspick, dfd, path, flags);
}

static inline pid_t sys_clone3(struct sc_clone_args *args)
{
	return (pid_t)syscall(__NR_clone3, args, sizeof(*args));
}

static inline int sys_close_range(unsigned first, unsigned last, unsigned flags)
{
	return (int)syscall(__NR_close_range, first, last, flags);
}

static inline int sys_pidfd_open(pid_t pid, unsigned flags)
{
	return (int)syscall(__NR_pidfd_open, pid, flags);
}

static inline int sys_pidfd_send_signal(int pidfd, int sig)
{
	return (int)syscall(__NR_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* The kernel's struct sigaction of rt_sigaction(2) (x86-64, arm64): for
 * libc's own signals, which its sigaction() refuses. */
struct sys_kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

static inline int sys_rt_sigaction(int sig, const struct sys_kernel_sigaction *sa,
				   struct sys_kernel_sigaction *old)
{
	return (int)syscall(SYS_rt_sigaction, sig, sa, old, sizeof(uint64_t));
}

/* Landlock (Debian 12's <linux/landlock.h> stops at ABI 2) */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule	     445
#define __NR_landlock_restrict_self  446
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define SC_LANDLOCK_FS_V1		       ((1ULL << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define SC_LANDLOCK_ACCESS_FS_REFER	       (1ULL << 13)
#define SC_LANDLOCK_ACCESS_FS_TRUNCATE	       (1ULL << 14)
#define SC_LANDLOCK_ACCESS_FS_IOCTL_DEV	       (1ULL << 15)
#define SC_LANDLOCK_ACCESS_NET_BIND_TCP	       (1ULL << 0)
#define SC_LANDLOCK_ACCESS_NET_CONNECT_TCP     (1ULL << 1)
#define SC_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SC_LANDLOCK_SCOPE_SIGNAL	       (1ULL << 1)

/* Field sets by ABI: 1-3 handled_access_fs; 4-5 + handled_access_net; 6+ + scoped. */
struct sc_landlock_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

static inline int sys_landlock_create_ruleset(const struct sc_landlock_ruleset_attr *attr,
					      size_t size, uint32_t flags)
{
	return (int)syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static inline int sys_landlock_restrict_self(int ruleset_fd, uint32_t flags)
{
	return (int)syscall(__NR_landlock_restrict_self, ruleset_fd, flags);
}

#ifndef __NR_execveat
#define __NR_execveat 322
#endif
static inline int sys_execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
			       int flags)
{
	return (int)syscall(__NR_execveat, dirfd, path, argv, envp, flags);
}

/* seccomp user notification: the listener's flags (Linux 6.6). */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS _IOW('!', 4, uint64_t)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

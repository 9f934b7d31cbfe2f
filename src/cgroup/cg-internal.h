/* SPDX-License-Identifier: MIT */
/*
 * Shared between cgroup.c and the two backends. Not part of the module
 * contract: only src/cgroup/ includes this.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"

#define CG_ROOT "/sys/fs/cgroup"
/* A whole cgroup path (from /proc/self/cgroup) or a list of pids. */
#define CG_MAX_FILE_BYTES (1u << 20)
#define CG_MAX_PATH_DEPTH 64u
#define CG_NAME_MAX	  255u
#define CG_MAX_NEST	  16u /* sub-sandbox cgroups nested in a sandbox's */
/* How long cg_kill_all() waits for the killed processes to leave. */
#define CG_DESTROY_WAIT_MS 2000u
#define CG_POLL_STEP_MS	   10u
/* A sandbox cgroup unchanged this long and empty was left by a supervisor
 * that was killed (cg_sweep_stale). */
#define CG_STALE_S 60u
/* cpu.max / cfs period: the kernel's default, in microseconds. */
#define CG_CPU_PERIOD_US 100000u
/* The kernel refuses quotas below 1 ms (kernel/sched/core.c, min_cfs_quota_period). */
#define CG_CPU_MIN_QUOTA_US 1000u
/* The longest period the kernel allows (max_cfs_quota_period, 1 s). */
#define CG_CPU_MAX_PERIOD_US 1000000u

/* v1: every hierarchy we use. CG_V1_CPUACCT may share the cpu hierarchy. */
typedef enum cg_v1_ctrl {
	CG_V1_MEMORY,
	CG_V1_CPU,
	CG_V1_CPUACCT,
	CG_V1_PIDS,
	_CG_V1_CTRL_MAX,
	_CG_V1_CTRL_INVALID = -EINVAL,
} cg_v1_ctrl;

/* One directory the sandbox owns: the sandbox cgroup and its parent. */
typedef struct cg_dir {
	int parentfd; /* the supervisor's own cgroup in this hierarchy */
	int dirfd;    /* <parent>/<name> */
	bool created; /* we made it, so we remove it */
} cg_dir;

typedef struct cg_ops cg_ops;

struct cg_handle {
	const cg_ops *ops;
	char *name;
	/* v2 uses dirs[0]; v1 indexes by cg_v1_ctrl. A v1 controller that
	 * shares a hierarchy with another has dirfd == -1 and alias set. */
	cg_dir dirs[_CG_V1_CTRL_MAX];
	size_t n_dirs;
	int alias[_CG_V1_CTRL_MAX]; /* index of the dir that serves this one, or -1 */
	/* v2 with delegation: <name>/agent, the leaf the sandbox's own
	 * processes live in (the children's cgroups are its siblings); -1 when
	 * the sandbox lives in <name> itself. */
	int leaffd;
	/* v1: the sandbox's cgroup in the freezer hierarchy, made by the
	 * first cg_freeze() (the freezer is not needed otherwise). */
	cg_dir freezer;
	bool frozen;
};

struct cg_ops {
	cg_version version;
	/* Is this hierarchy usable by us? Fills reason (always NUL-terminated). */
	int (*probe)(char *reason, size_t reason_len);
	/* Creates the directories in h (h->name set) and writes the limits. */
	int (*create)(cg_handle *h, const sc_plan *plan);
	int (*clone_fd)(const cg_handle *h);
	int (*attach)(cg_handle *h, pid_t pid);
	/* Places a sub-supervisor so that the cgroup it creates is nested in
	 * the sandbox's (slot: a number unique over the handle's life). */
	int (*delegate)(cg_handle *h, unsigned slot, pid_t pid);
	/* Removes what delegate made for slot, once it is empty. */
	void (*undelegate)(cg_handle *h, unsigned slot);
	/* Opens the files that move the writing thread into the cgroup. */
	int (*entry_fds)(const cg_handle *h, int *fds, size_t max);
	int (*read_stats)(cg_handle *h, cg_stats *ret);
	/* SIGKILLs everything, returns when empty or after CG_DESTROY_WAIT_MS. */
	int (*kill_all)(cg_handle *h);
	/* Opens our own cgroup in every hierarchy a sandbox may have used,
	 * whatever h's plan needed, into fds; returns how many. NULL: the
	 * handle's own parents are all there is (v2). */
	size_t (*own_dirs)(int *fds, size_t max);
	/* Freezes or thaws every process of the sandbox, returns once it is so. */
	int (*freeze)(cg_handle *h, bool frozen);
};

extern const cg_ops cg_v1_ops;
extern const cg_ops cg_v2_ops;

/* Helpers in cgroup.c. */

/* Closes fds[0..n). */
void cg_close_all(int *fds, size_t n);
/* Within one probe-and-create scope (cg_create): a probe keeps a dup of
 * the directory of our own cgroup it opened for slot (a v1 hierarchy), and
 * the create gets a dup of it back instead of opening it again; -1 outside
 * a scope or when none was kept. */
#define CG_SNAPSHOT_OWN_SLOTS _CG_V1_CTRL_MAX
void cg_snapshot_own_keep(unsigned slot, int fd);
int cg_snapshot_own_dup(unsigned slot);

/* Strict decimal u64: digits only, optional trailing newline. */
int cg_parse_u64(const char *s, size_t len, uint64_t *ret);
/* Value of "key N" in a flat keyed file (cpu.stat, memory.events...).
 * -ENOENT when the file is missing, -ENODATA when the key is. */
int cg_read_keyed(int dirfd, const char *file, const char *key, uint64_t *ret);
/* A file holding one number. */
int cg_read_u64(int dirfd, const char *file, uint64_t *ret);
int cg_write_u64(int dirfd, const char *file, uint64_t v);
/* The cgroup path of this process for a v1 controller (ctrl != NULL) or on
 * the v2 hierarchy (ctrl == NULL), e.g. "/process_api/1234". Caller frees. */
int cg_self_path(const char *ctrl, char **ret_path);
/* Opens path ("/a/b") below rootfd one component at a time: no "..",
 * no ".", no symlinks, no leaving the mount. O_DIRECTORY fd. */
int cg_open_below(int rootfd, const char *path, int *ret_fd);
/* Creates name under parentfd (EEXIST is an error: the name is ours alone)
 * and opens it. */
int cg_mkdir_open(int parentfd, const char *name, cg_dir *d);
/* Writes pid (decimal) to cgroup.procs under dirfd. */
int cg_write_procs(int dirfd, pid_t pid);
/* One pass of SIGKILL over cgroup.procs, without racing pid reuse: each pid
 * is pinned by a pidfd, then only those still listed are signalled.
 * ret_seen: how many processes were listed. Needs pidfd_open (5.3). */
int cg_procs_kill(int dirfd, size_t *ret_seen);
/* The same over dirfd and every cgroup nested in it (a sub-sandbox's
 * cgroup inside ours), at most CG_MAX_NEST levels; adds to *ret_seen. */
int cg_tree_kill(int dirfd, size_t *ret_seen);
/* Removes the (empty) cgroups nested in dirfd, deepest first. */
void cg_tree_rmdir_children(int dirfd);
/* Sleeps CG_POLL_STEP_MS. */
void cg_poll_sleep(void);
/* The mount that a directory fd lives on, from /proc/self/mountinfo:
 * its filesystem type is checked by the caller with fstatfs(); this gives
 * the mount's root inside the hierarchy ("/" unless a subtree was bound)
 * and its super options ("rw,memory"). Caller frees both. */
int cg_mount_of(int fd, char **ret_root, char **ret_super_opts);
/* path relative to the mount root, or -ENOENT if path lies outside it. */
int cg_strip_mount_root(const char *mount_root, const char *path, const char **ret);
/* Is word one of the comma- or space-separated tokens of list? */
bool cg_has_token(const char *list, const char *word);
/* cpu_millis (thousandths of a core) as a CFS quota and period in
 * microseconds. The period is CG_CPU_PERIOD_US unless the quota would fall
 * below the kernel's 1 ms minimum, then the longest period keeps the ratio
 * exact. -EINVAL for 0, -ERANGE on overflow. */
int cg_cpu_quota(uint64_t cpu_millis, uint64_t *ret_quota_us, uint64_t *ret_period_us);
/* Treats a missing file or key as "not available here": 0; other errors pass. */
static inline int cg_optional(int r)
{
	return r == -ENOENT || r == -ENODATA ? 0 : r;
}
/* Removes the directories the handle created (rmdir fails harmlessly with
 * EBUSY if processes remain) and closes every fd. Used by cg_destroy and
 * by cg_create's failure path. */
void cg_dirs_release(cg_handle *h);

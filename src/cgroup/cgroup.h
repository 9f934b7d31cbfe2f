/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's cgroup: created nested under the supervisor's own cgroup,
 * limits written before the first instruction of the sandbox runs, removed
 * at exit. cgroup v1 and v2 implement the same cg_ops (cg-v1.c, cg-v2.c);
 * cg_detect() picks one once, so no caller ever asks "is this v2?".
 * Library code: never prints; errors are -errno. Every function allocates
 * or may block briefly: not for use between fork() and exec(). Not thread
 * safe on one handle. See docs/cgroups.md for the files each version uses.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/plan.h"

typedef enum cg_version {
	CG_V1,
	CG_V2,
	_CG_VERSION_MAX,
	_CG_VERSION_INVALID = -EINVAL,
} cg_version;

/* What the kernel measured; fields the backend cannot read are UINT64_MAX. */
typedef struct cg_stats {
	uint64_t cpu_usage_ns;	  /* CPU time used by the whole sandbox */
	uint64_t throttled_ns;	  /* time throttled by the CPU quota */
	uint64_t nr_throttled;	  /* periods throttled */
	uint64_t memory_peak;	  /* bytes */
	uint64_t oom_kills;	  /* processes killed by the OOM killer in this cgroup */
	uint64_t memory_max_hits; /* times the memory limit was reached */
	uint64_t pids_max_hits;	  /* fork/clone refused by pids.max */
	uint64_t memory_current;  /* bytes charged now */
	uint64_t pids_current;	  /* tasks now */
} cg_stats;

typedef struct cg_handle cg_handle;

/* Which hierarchy run would use here and why, in words (for `doctor`).
 * reason is always NUL-terminated (when reason_len > 0) and on failure says
 * why each hierarchy was refused. -ENOENT (or the probe's -errno) when no
 * hierarchy offers memory, cpu and pids to us. */
int cg_detect(cg_version *ret_version, char *reason, size_t reason_len);
/* For a supervisor without root: 0 when our own cgroup is a cgroup v2
 * directory delegated to us (we may create cgroups in it, enable its
 * controllers and move ourselves), as systemd's Delegate=yes gives; else
 * -errno, and reason says why. Never changes anything. */
int cg_delegated(char *reason, size_t reason_len);

/* A guess, for ordering only (one statfs): whether cg_create will give a
 * cgroup clone3(CLONE_INTO_CGROUP) can place a child in, i.e. the unified
 * hierarchy alone is mounted at /sys/fs/cgroup. */
bool cg_clone_into_expected(void);
/* Creates the sandbox cgroup named `name` under the caller's own cgroup and
 * writes the plan's limits. -EPERM/-EACCES/-ENOENT/-EROFS when it cannot.
 * name: [A-Za-z0-9_-], at most 255 bytes, else -EINVAL; -EEXIST if a cgroup
 * of that name exists (never shared). v2: if our own cgroup holds us and
 * cannot distribute controllers, this process moves itself into the leaf
 * <own>/supervisor first; -EBUSY if other processes share our cgroup.
 * When the plan allows spawn, the v2 sandbox's processes live in the leaf
 * <name>/agent and its children's cgroups beside it (cg_attach_delegate);
 * limits are on <name>, so they bound parent and children together.
 * On failure nothing created is left behind. *ret is owned by the caller:
 * free with cg_destroy(). */
int cg_create(const sc_plan *plan, const char *name, cg_handle **ret);
/* v2: a directory fd for clone3(CLONE_INTO_CGROUP); -1 on v1. Owned by
 * the handle: valid until cg_destroy(), do not close. */
int cg_clone_fd(const cg_handle *h);
/* Moves pid into the cgroup (every controller on v1). Call before the
 * child runs anything of the sandbox (v1 has no CLONE_INTO_CGROUP). */
int cg_attach(cg_handle *h, pid_t pid);
/* Delegation (docs/tokens.md): moves pid, a sub-supervisor about to create
 * a child sandbox's cgroup under its own, to where that cgroup ends up
 * nested in this sandbox's, under its limits. v1: the sandbox cgroup
 * itself. v2, which forbids processes beside child cgroups with
 * controllers: <sandbox>/child-<slot>/supervisor, created here, a sibling
 * of the leaf the sandbox's own processes live in (cg_create made it when
 * the plan allows spawn). slot: unique over the handle's life. */
int cg_attach_delegate(cg_handle *h, unsigned slot, pid_t pid);
/* Removes what cg_attach_delegate made for slot once the sub-supervisor
 * has exited; what is still busy is left to cg_destroy. Never fails. */
void cg_release_delegate(cg_handle *h, unsigned slot);
/* For a sandbox whose first process moves itself into the cgroup (v1 has
 * no CLONE_INTO_CGROUP): opens, write-only, the files through which the
 * thread that writes "0" to each enters the cgroup (one per v1 hierarchy,
 * "tasks"; v2: "cgroup.procs") into fds. Returns how many, or -errno
 * (-ENOBUFS when max is too small) with none left open. The permission
 * check is the opener's: the fds may be written by another process. */
int cg_entry_fds(const cg_handle *h, int *fds, size_t max);
/*
 * Removes the sibling cgroups named prefix*, in every hierarchy a sandbox
 * may have used (not only those of h), that a supervisor killed with
 * SIGKILL left behind: those without a process in them or below, unchanged
 * for a minute (a live sandbox's cgroup is never empty once its first
 * process entered, milliseconds after the mkdir). Returns how many went.
 */
unsigned cg_sweep_stale(const cg_handle *h, const char *prefix);
/* Counters accumulate over the cgroup's life: compare two readings for an
 * interval. A file this kernel lacks leaves its field UINT64_MAX. */
int cg_read_stats(cg_handle *h, cg_stats *ret);
/* SIGKILLs every process in the cgroup (cgroup.kill on v2) and waits until
 * the cgroup is empty: 0, or -EBUSY if processes remain after 2 s. */
int cg_kill_all(cg_handle *h);
/*
 * Freezes (or thaws) every process of the sandbox and returns once the
 * kernel says it is so (at most 2 s: -EBUSY). v2: cgroup.freeze of the
 * sandbox's cgroup. v1: the freezer hierarchy, where a cgroup of the
 * sandbox's name is made (under ours) and its processes moved in, until a
 * pass finds none left behind; -EOPNOTSUPP when no freezer is mounted. A
 * frozen sandbox is thawed by cg_kill_all() first (a v1 frozen task does
 * not die of SIGKILL).
 */
int cg_freeze(cg_handle *h, bool frozen);
/* Kills what is left, removes the directories, frees. NULL-safe, returns NULL.
 * A directory that cannot be removed (a process survived 2 s) is left. */
cg_handle *cg_destroy(cg_handle *h);
cg_version cg_handle_version(const cg_handle *h);

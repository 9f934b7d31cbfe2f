/* SPDX-License-Identifier: MIT */
/*
 * The container's cgroup (linux.cgroupsPath, docs/oci.md, "cgroups"): the
 * container's supervisor moves itself there before its session starts, so
 * the sandbox's cgroup, which sandcap makes under its supervisor's own, is
 * nested in it and counted by it (what `ctr task metrics` and `docker
 * stats` read, through the --pid-file pid's cgroup). And the freezer of
 * pause and resume. cgroup v1 and v2 each implement oci_cg_ops; oci_cg()
 * picks one. Library code: -errno, never prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define OCI_CGROUP_PATH_MAX 1024

typedef struct oci_cg_ops {
	/* Moves the calling process to path (made where missing), in every
	 * hierarchy a sandbox is measured by; on v2 to its leaf
	 * path/supervisor, with memory, cpu and pids enabled down to path.
	 * Each directory made is appended to made (one a line, parents
	 * first), for oci_cgroup_remove(). */
	int (*enter)(const char *path, char *made, size_t made_len);
	/* v1: moves pids into path's freezer cgroup (made, and listed in made);
	 * v2: nothing, the sandbox's own cgroup has cgroup.freeze. */
	int (*freezer_join)(const char *path, const pid_t *pids, size_t n, char *made,
			    size_t made_len);
	/* Freezes or thaws, and waits until it is so: v1 path's freezer, v2
	 * the cgroup of pid (the sandbox's pid 1). */
	int (*freeze)(const char *path, pid_t pid, bool frozen);
	/* 1 when frozen, 0 when not, -errno when it cannot be read. */
	int (*frozen)(const char *path, pid_t pid);
} oci_cg_ops;

/* The ops of the hierarchy mounted at /sys/fs/cgroup. */
const oci_cg_ops *oci_cg(void);

/* 0 when path is a cgroupsPath sandcap-runc takes: absolute or relative
 * (from the hierarchy's root, as runc's cgroupfs driver), no "." or ".."
 * component, at most OCI_CGROUP_PATH_MAX bytes; "slice:prefix:name"
 * (systemd's) is refused with the rest. */
int oci_cgroup_path_valid(const char *path);

/* Removes the directories made lists, children first; a busy one is
 * retried for up to 2 s (the sandbox's last processes are leaving). */
void oci_cgroup_remove(const char *made);

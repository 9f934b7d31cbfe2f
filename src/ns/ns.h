/* SPDX-License-Identifier: MIT */
/*
 * The first wall: user identity, the mount tree, the network namespace.
 * Library code: never prints; errors are -errno.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "policy/plan.h"

/* Ids inside the sandbox. Nothing inside maps to host root (DESIGN.md 2). */
#define NS_ROOT_UID  0
#define NS_AGENT_UID 1000
#define NS_AGENT_GID 1000

/* A grant's host path, opened by the supervisor before the sandbox exists. */
typedef struct ns_source {
	int fd;	      /* detached, idmapped mount tree of the grant (open_tree) */
	int idmap_fd; /* user namespace mapping the grant's owner to the agent, or -1 */
	bool is_dir;
} ns_source;

/* Host uid/gid base of this sandbox: inside 0 -> base, inside 1000 -> base + 1.
 * Derived from the supervisor's pid so that live sandboxes never share ids. */
uid_t ns_host_id_base(pid_t supervisor);

/* Supervisor: opens every grant (and the rootfs) and prepares idmaps so that
 * files the agent writes keep the grant owner's uid/gid on the host.
 * On failure reterr_diag names the grant. */
int ns_open_sources(const sc_plan *plan, uid_t agent_host_uid, gid_t agent_host_gid,
		    ns_source **ret_sources, sc_diag *reterr_diag);
void ns_sources_free(ns_source *s, size_t n);

/* Creates a user namespace with the given maps and returns an fd to it. */
int ns_userns_fd(const char *uid_map, const char *gid_map);
/* Supervisor: writes /proc/PID/{uid_map,gid_map}. */
int ns_write_id_maps(pid_t pid, const char *uid_map, const char *gid_map);

/* Child (host root in a fresh mount namespace): builds the sandbox's root
 * and pivots into it. On failure *reterr_what names the mount. */
int ns_setup_root(const sc_plan *plan, const ns_source *sources, const char **reterr_what);

/* Where the delegation socket appears inside (docs/tokens.md, "Delegation"). */
#define NS_SPAWN_SOCKET "/run/sandcap/spawn.sock"
/* ns_setup_root() that also binds the host socket spawn_sock (a path only
 * root can reach) at NS_SPAWN_SOCKET, read-only, nosuid, nodev, noexec.
 * spawn_sock NULL: the same as ns_setup_root(). */
int ns_setup_root_spawn(const sc_plan *plan, const ns_source *sources, const char *spawn_sock,
			const char **reterr_what);

/* Child: brings lo up in the new network namespace. */
int ns_loopback_up(void);
/* Child: a TCP listener on 127.0.0.1:port inside the sandbox netns. */
int ns_proxy_listener(unsigned port);

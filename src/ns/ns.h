/* SPDX-License-Identifier: MIT */
/*
 * The first wall: user identity, the mount tree, the network namespace.
 * Library code: never prints; errors are -errno.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "policy/plan.h"

/* Ids inside the sandbox. Nothing inside maps to host root (docs/decisions.md,
 * "Identity: a few host ids per sandbox"). */
#define NS_ROOT_UID   0
#define NS_NOBODY_UID 65534 /* nobody and nogroup: mapped, so that setuid() to them is */
#define NS_NOBODY_GID 65534 /* EPERM for the agent, as on a host, not EINVAL */
/* Host ids per sandbox, from ns_host_id_base(): root, the agent, nobody
 * (one spare keeps the stride a power of two). */
#define NS_HOST_IDS 4u

/* A grant's host path, opened by the supervisor before the sandbox exists. */
typedef struct ns_source {
	int fd;	      /* root: detached, idmapped mount tree of the grant (open_tree);
		       * unprivileged: the grant opened O_PATH, never followed a link */
	int idmap_fd; /* user namespace mapping the grant's owner to the agent, or -1 */
	bool is_dir;
	dev_t dev; /* unprivileged: what the child must find again at the path */
	ino_t ino;
} ns_source;

/* Host uid/gid base of this sandbox: inside 0 -> base, the agent's ids
 * (identity.uid/gid, default 1000) -> base + 1, inside 65534 -> base + 2.
 * Derived from the supervisor's pid so that live sandboxes never share ids. */
uid_t ns_host_id_base(pid_t supervisor);

/* Supervisor: opens every grant and prepares idmaps so that files the agent
 * writes keep the grant owner's uid/gid on the host; and the image
 * (fs.runtime.rootfs), idmapped with the sandbox's maps from id_base, in
 * the slot after the grants' (fd -1 without an image). n_grants + 1
 * sources, freed with ns_sources_free(s, n_grants + 1). On failure
 * reterr_diag names the grant. */
int ns_open_sources(const sc_plan *plan, uid_t id_base, ns_source **ret_sources,
		    sc_diag *reterr_diag);
void ns_sources_free(ns_source *s, size_t n);

/* Unprivileged supervisor: opens every grant without following symlinks and
 * checks that the invoking user may use it as the policy says (read, and
 * write for rw). Nothing is cloned: a mount namespace we do not own cannot
 * be copied from, so the child binds the grant itself inside its own user
 * namespace and must find the same inode there (ns_setup_root_unpriv).
 * n_grants + 1 sources too, the image's slot always fd -1 (the child binds it).
 */
int ns_open_sources_unpriv(const sc_plan *plan, ns_source **ret_sources, sc_diag *reterr_diag);

/* Whether this host lets an unprivileged process create a user namespace,
 * from the sysctls that forbid or restrict it (kernel.unprivileged_userns_clone,
 * user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns):
 * 0, or -EPERM/-ENOSPC with why (always
 * NUL-terminated) naming the sysctl. Reads /proc only; a host that passes
 * can still refuse at clone time (a security module), so callers must also
 * handle that. */
int ns_unpriv_userns_check(char *why, size_t why_len);
/* user.max_user_namespaces = 0 refuses user namespaces to root too: 0, or
 * -ENOSPC with why (always NUL-terminated) naming the sysctl. */
int ns_userns_max_check(char *why, size_t why_len);

/* Creates a user namespace with the given maps and returns an fd to it. */
int ns_userns_fd(const char *uid_map, const char *gid_map);
/* The sandbox's maps from ns_host_id_base()'s base (see there): an agent
 * id of 0 or 65534 is the agent's, base + 1, and that id is mapped once. */
#define NS_ID_MAP_MAX 96
void ns_id_maps(const sc_plan *plan, uid_t base, char ret_uid_map[static NS_ID_MAP_MAX],
		char ret_gid_map[static NS_ID_MAP_MAX]);
/* Supervisor: writes /proc/PID/{uid_map,gid_map}. */
int ns_write_id_maps(pid_t pid, const char *uid_map, const char *gid_map);
/* Unprivileged supervisor: maps inside_uid/gid of PID's user namespace to
 * our own euid/egid, nothing else, after writing "deny" to
 * /proc/PID/setgroups (user_namespaces(7): required before an unprivileged
 * gid_map, and it keeps the agent from dropping groups that deny it). */
int ns_write_id_maps_unpriv(pid_t pid, uid_t inside_uid, gid_t inside_gid);

/*
 * The sandbox CA (PEM) of TLS inspection, or NULL: set by the supervisor
 * before it clones the child, which appends it to the host's CAs in the
 * generated view of NS_CA_BUNDLE (docs/proxy.md, "TLS inspection"). The
 * string is borrowed and must live until the child has built its root; set
 * per thread (the thread that clones the child).
 */
#define NS_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
void ns_set_sandbox_ca(const char *pem);

/* Where the delegation socket appears inside (docs/tokens.md, "Delegation"). */
#define NS_SPAWN_SOCKET "/run/sandcap/spawn.sock"
/* Child (host root in a fresh mount namespace): builds the sandbox's root
 * and pivots into it. With spawn_sock (a host path only root can reach) it
 * is bound at NS_SPAWN_SOCKET, read-only, nosuid, nodev, noexec. On failure
 * *reterr_what names the mount. */
int ns_setup_root_spawn(const sc_plan *plan, const ns_source *sources, const char *spawn_sock,
			const char **reterr_what);

/* Child of an unprivileged supervisor, in the user namespace it was cloned
 * with (owning its mount namespace), with the ids mapped: the same view as
 * ns_setup_root_spawn(), but /dev holds binds of the host's device nodes (mknod
 * is refused in a user namespace) and grants are plain binds, found again
 * by path without following symlinks and refused (-ESTALE) unless they are
 * the inodes the supervisor opened. */
int ns_setup_root_unpriv(const sc_plan *plan, const ns_source *sources, const char **reterr_what);

/* Child: brings lo up in the new network namespace. */
int ns_loopback_up(void);
/* Child: a TCP listener on 127.0.0.1:port inside the sandbox netns. */
int ns_proxy_listener(unsigned port);

/* Child: "local 0.0.0.0/0 dev lo" and "local ::/0 dev lo" in the local table
 * of this netns (rtnetlink), so that a connect to any address is answered on
 * lo: by a transparent listener, or at once with a RST (docs/proxy.md,
 * "Transparent redirection"), and a datagram by the sandbox resolver or an ICMP
 * port unreachable: the refusals ns_attempt_socket() sees. On failure
 * *reterr_what names the route. */
int ns_local_routes(const char **reterr_what);

/* The distinct TCP ports the egress rules allow (80 and 443 for a rule
 * without ports) into ports[0..max); returns how many there are, which may
 * be more than max. */
size_t ns_egress_ports(const sc_plan *plan, uint16_t *ports, size_t max);

#define NS_DNS_PORT	       53
#define NS_TRANSPARENT_MAX_FDS 60 /* the DNS socket and up to 59 ports */
/* Child: the sockets the proxy worker serves besides its listener, on the
 * wildcard address of this netns: fds[0] is UDP port NS_DNS_PORT (the sandbox
 * resolver), then one TCP listener per distinct port the egress rules allow
 * (IPv6 dual-stack where the netns has IPv6). proxy_port is shared with the
 * proxy listener (SO_REUSEPORT). Returns 0 with *ret_n fds, or -errno with
 * none left open (-E2BIG: more ports than max - 1) and *reterr_what. */
int ns_transparent_sockets(const sc_plan *plan, unsigned proxy_port, int *fds, size_t max,
			   size_t *ret_n, const char **reterr_what);
/*
 * Child: an AF_PACKET socket on the sandbox's lo whose classic BPF filter
 * keeps only the answers of refused attempts: TCP RST|ACK with sequence 0
 * (the kernel's reset of a SYN no listener took) and ICMP/ICMPv6 port
 * unreachable, received (not the outgoing copy). Made here, where
 * CAP_NET_RAW over this netns is ours, and read by the proxy worker
 * (docs/proxy.md, "Every attempt seen"). Returns the fd or -errno.
 */
int ns_attempt_socket(void);

/* The entries of the agent's /proc that are hidden, and those made
 * read-only (names under /proc, NULL-terminated). */
extern const char *const ns_proc_masked[];
extern const char *const ns_proc_readonly[];

/* SPDX-License-Identifier: MIT */
/*
 * The validated capability set. Produced only by the policy parser (or the
 * token verifier, which builds one and runs it through the same validator),
 * immutable afterwards, and the single input of every enforcement module.
 *
 * Conventions: absent = deny. Unlimited numeric limits are PLAN_UNLIMITED.
 * Every string is owned by the plan and freed by sc_plan_free().
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/diag.h"

typedef struct sc_plan sc_plan; /* the immutable, validated capability set */

/* Parses and validates a policy; every function returns >= 0 on success or
 * -errno on failure (reterr_diag says where and why) and never prints. */
int sc_plan_parse(const char *buf, size_t len, sc_plan **ret_plan, sc_diag *reterr_diag);
sc_plan *sc_plan_free(sc_plan *p); /* NULL-safe, returns NULL */

#define PLAN_UNLIMITED UINT64_MAX
/* Where the sandbox reaches its proxy, on 127.0.0.1 of its own netns: the
 * proxy listens there and the agent's environment names it (agent-env.c). */
#define PLAN_PROXY_PORT 3128
/* The defaults that bound how fast and how far the audit log grows
 * (docs/policy.md, "How fast the log grows"): requests and DNS queries per
 * second, the log's bytes per second and its bytes in one run. */
#define PLAN_NET_RATE_DEFAULT	     200u
#define PLAN_AUDIT_MAX_RATE_DEFAULT  (1ull << 20)
#define PLAN_AUDIT_MAX_BYTES_DEFAULT (1ull << 30)
#define AUDIT_BOUND_MIN		     65536u /* the least either may be set to */
/* audit.sample_interval: res.sample records, one per interval */
#define AUDIT_SAMPLE_DEFAULT_NS 1000000000ull
#define AUDIT_SAMPLE_MIN_NS	100000000ull

#define POLICY_MAX_BYTES       (1u << 20)
#define POLICY_MAX_GRANTS      256u
#define POLICY_MAX_EGRESS      256u
#define POLICY_MAX_PORTS       64u
#define POLICY_MAX_CIDRS       256u
#define POLICY_MAX_CREDENTIALS 64u
#define POLICY_MAX_ENV	       256u
#define POLICY_MAX_STRING      4096u
#define POLICY_MAX_PATHS       64u   /* path prefixes per egress rule or credential */
#define POLICY_MAX_PATH_PREFIX 1024u /* bytes of one prefix */
#define POLICY_MAX_SERVE       16u   /* net.serve: ports the host may reach */

/* One port of net.serve (docs/policy.md): connections to 127.0.0.1:host_port
 * (any_addr: 0.0.0.0:host_port, every address of the supervisor's netns,
 * a pod's) are relayed to 127.0.0.1:port in the sandbox's netns. */
typedef struct plan_serve {
	uint16_t port;	    /* inside */
	uint16_t host_port; /* where it listens; 0: the kernel's choice (loopback only) */
	bool any_addr;	    /* "bind": "0.0.0.0"; refused where that netns is the host's */
} plan_serve;

typedef enum grant_mode {
	GRANT_RO,
	GRANT_RW,
	GRANT_COW, /* read-write view; writes go to a private upper layer (workspace) */
	_GRANT_MODE_MAX,
	_GRANT_MODE_INVALID = -EINVAL,
} grant_mode;

typedef struct plan_grant {
	char *path; /* absolute, normalised host path (no "." "..", no trailing /) */
	char *at;   /* absolute path inside the sandbox; equals path when "at" is absent */
	grant_mode mode;
	uint64_t quota;	  /* bytes: cow the upper layer's size, rw a project quota;
			   * PLAN_UNLIMITED when absent (cow requires it) */
	uint64_t inodes;  /* files the upper layer (cow) or the project (rw) may hold;
			   * PLAN_UNLIMITED when absent */
	bool best_effort; /* rw quota: run without it where the host cannot enforce it */
} plan_grant;

typedef enum http_method {
	HTTP_GET = 1 << 0,
	HTTP_HEAD = 1 << 1,
	HTTP_POST = 1 << 2,
	HTTP_PUT = 1 << 3,
	HTTP_PATCH = 1 << 4,
	HTTP_DELETE = 1 << 5,
	HTTP_OPTIONS = 1 << 6,
	HTTP_CONNECT = 1 << 7,
} http_method;
#define HTTP_ANY_METHOD 0u /* methods absent: every method */

typedef struct plan_egress {
	char *host;    /* lower-case; exact name, IP literal, or "*.domain" */
	bool wildcard; /* host was "*.domain": subdomains only, not domain itself */
	uint16_t ports[POLICY_MAX_PORTS];
	size_t n_ports;	  /* default {80, 443} */
	uint32_t methods; /* http_method bits; HTTP_ANY_METHOD = all */
	char **paths;	  /* normalised path prefixes (policy/http-path.h); none: any path */
	size_t n_paths;
	bool inspect; /* CONNECT is terminated with the sandbox CA and decrypted */
} plan_egress;

typedef struct plan_cidr {
	int family;	  /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network byte order; first 4 bytes for AF_INET */
	unsigned prefix;
} plan_cidr;

typedef struct plan_rate {
	uint64_t count;	 /* 0 = unlimited */
	uint64_t per_ns; /* window: 1 s or 60 s */
} plan_rate;

typedef struct plan_credential {
	char *name; /* for records; default the host */
	char *host;
	char *header;	       /* e.g. "Authorization"; NULL: placeholder replacement only */
	char *value_env;       /* name of the supervisor's env var holding the secret, or NULL */
	char *value_file;      /* file holding the secret, or NULL (exactly one is set) */
	char *format;	       /* printf-like with one %s, default "%s" */
	bool upstream_https;   /* default true */
	char *placeholder_env; /* the agent gets a placeholder in this variable, or NULL */
	bool in_query;	       /* the placeholder is replaced in the query string too */
	/* what requests may carry it (docs/policy.md, "Credential limits") */
	uint64_t max_requests; /* PLAN_UNLIMITED default */
	plan_rate rate;	       /* count 0: unlimited */
	uint64_t max_bytes;    /* sent upstream with it, heads included; PLAN_UNLIMITED */
	uint32_t methods;      /* http_method bits; HTTP_ANY_METHOD = all */
	char **paths;	       /* normalised path prefixes; none: any path */
	size_t n_paths;
	uint64_t expires_ns; /* from the start of the run; PLAN_UNLIMITED default */
} plan_credential;

typedef enum fs_runtime {
	RUNTIME_HOST,	/* read-only /usr etc. of the host plus a generated /etc */
	RUNTIME_ROOTFS, /* an unpacked image at plan->rootfs */
	_FS_RUNTIME_MAX,
	_FS_RUNTIME_INVALID = -EINVAL,
} fs_runtime;

typedef enum audit_fsync {
	AUDIT_FSYNC_BOUNDARIES, /* start, exit and seal */
	AUDIT_FSYNC_ALWAYS,	/* every record */
	_AUDIT_FSYNC_MAX,
	_AUDIT_FSYNC_INVALID = -EINVAL,
} audit_fsync;

struct sc_plan {
	int version; /* 1 */
	char *name;  /* default "sandbox" */

	/* fs */
	fs_runtime runtime;
	char *rootfs;	      /* RUNTIME_ROOTFS only */
	bool rootfs_writable; /* RUNTIME_ROOTFS: a private, bounded layer over it takes writes */
	plan_grant *grants;
	size_t n_grants;
	uint64_t tmp_size;   /* bytes; default 64 MiB */
	uint64_t tmp_inodes; /* default 8192 */
	char *workdir;	     /* absolute path inside; default "/tmp" */

	/* net: egress empty = no network at all, no proxy */
	plan_egress *egress;
	size_t n_egress;
	plan_cidr *allow_private;
	size_t n_allow_private;
	plan_rate rate;
	uint64_t bandwidth;	    /* bytes/s per direction, PLAN_UNLIMITED default */
	uint64_t max_request_body;  /* bytes, PLAN_UNLIMITED default */
	uint64_t max_response_body; /* bytes, PLAN_UNLIMITED default */
	uint64_t egress_budget;	    /* bytes the agent may send in total, PLAN_UNLIMITED default */
	bool net_listen;   /* default true: sockets may listen, inside the sandbox's netns */
	plan_serve *serve; /* net.serve: ports relayed from the host's loopback; none default */
	size_t n_serve;
	plan_credential *credentials;
	size_t n_credentials;
	char *upstream_ca; /* extra CA file for upstream TLS, or NULL */
	char *dns;	   /* resolver "IP[:port]" for the proxy, or NULL = /etc/resolv.conf */

	/* limits; PLAN_UNLIMITED when absent */
	uint64_t memory;     /* bytes */
	uint64_t cpu_millis; /* thousandths of a core: 0.5 -> 500; PLAN_UNLIMITED */
	uint64_t pids;
	uint64_t wall_ns;
	uint64_t nofile; /* default 1024 */
	uint64_t fsize;	 /* bytes */
	/* A session (sandcap session): one exec's wall clock, and how long it
	 * may sit with no command running and no client talking to it. */
	uint64_t exec_wall_ns;
	uint64_t idle_ns;

	/* env: "KEY=VALUE" strings, sorted by KEY (names are unique) */
	char **env;
	size_t n_env;

	char *hostname; /* default "sandbox" */
	/* The agent's ids inside (default 1000); whatever they are, the agent
	 * is the sandbox's one unprivileged host id and holds no capability. */
	uint32_t agent_uid;
	uint32_t agent_gid;

	bool audit_exec;	    /* default true */
	bool audit_denied_syscalls; /* default true */
	audit_fsync audit_fsync;
	bool audit_reads; /* default false: fs.read of each file first opened under a grant */
	uint64_t audit_max_rate;  /* log bytes per second the exec listener paces to */
	uint64_t audit_max_bytes; /* log bytes per run; the sandbox is stopped beyond */
	uint64_t audit_sample_ns; /* res.sample interval; 0: no samples */

	bool best_effort; /* allow degraded layers (recorded in the audit log) */

	/* delegation; max_depth 0 = no spawn socket */
	unsigned spawn_max_depth;
	unsigned spawn_max_children;

	/* A second seccomp filter stacked on sandcap's (sandcap-runc: a spec's
	 * linux.seccomp, docs/oci.md), struct sock_filter[n_extra_filter],
	 * loaded with the SECCOMP_FILTER_FLAG_* in extra_filter_flags; NULL:
	 * none. Not policy JSON: set by the caller after parsing, freed with
	 * the plan. */
	void *extra_filter;
	size_t n_extra_filter;
	unsigned extra_filter_flags;
	/* The sandbox stays in its supervisor's ipc and uts namespaces instead
	 * of making its own, and sets no hostname (sandcap-runc: the pod's,
	 * which the container supervisor made or joined, docs/oci.md). Not
	 * policy JSON, as extra_filter. */
	bool shared_ipc_uts;
	/* The supervisor runs in a network namespace of the container's own
	 * (sandcap-runc: a pod's it joined, or docker's it made), not the
	 * host's: only there may net.serve listen on 0.0.0.0. Not policy
	 * JSON, as extra_filter. */
	bool own_netns;
};

/*
 * Parses and validates the JSON policy in buf (docs/policy.md), without
 * looking at the host. Diagnostics name the JSON path of the offending value
 * and say what was expected (or, for bad JSON, the line and column).
 * -EBADMSG bad JSON, -E2BIG over a limit, -EINVAL any other refusal,
 * -ENAMETOOLONG, -ENOMEM.
 */
int plan_parse_json(const char *buf, size_t len, sc_plan **ret_plan, sc_diag *reterr_diag);

/*
 * Checks a parsed plan against the host: grant paths and the rootfs exist and
 * contain no symlink, upstream_ca and secret files are regular files, and a
 * secret file does not resolve into a grant. Looks only (O_PATH, stat).
 * Returns 0, or -ENOENT, -ELOOP, -ENOTDIR, -EINVAL, -errno with the JSON path.
 */
int plan_check_host(const sc_plan *p, sc_diag *reterr_diag);

/* plan_parse_json() then plan_check_host(): what every caller wants. */
int plan_parse(const char *buf, size_t len, sc_plan **ret_plan, sc_diag *reterr_diag);

/*
 * Whether the secret of credential i is there now: its value_env variable is
 * set and not empty in this process's environment, or its value_file can be
 * read and holds more than line ends. -ENOKEY (or -errno from reading) with a
 * diagnostic naming the credential's JSON path, the variable or file, the
 * header and the host. Never reveals the value. Not part of plan_parse(): a
 * plan is valid wherever it is read; its secrets matter where it runs.
 */
int plan_check_secret(const sc_plan *p, size_t i, sc_diag *reterr_diag);

/*
 * Whether the proxy terminates TLS for some host: an egress rule with
 * "inspect", or a credential with a placeholder (docs/proxy.md, "TLS
 * inspection"). Such a sandbox gets the per-sandbox CA in its trust bundle.
 */
bool plan_inspects(const sc_plan *p);

/* Re-serialise the effective plan as canonical JSON (for the audit log, tokens, check). Caller
 * frees. */
char *plan_to_json(const sc_plan *p);

/* Prints the blast radius in plain words: every path visible and how,
 * network reach, limits. Output only; never fails on a valid plan. */
int plan_describe(const sc_plan *p, FILE *out);

/* True when a and b grant exactly the same (plan_to_json round-trips to an equal plan). */
bool plan_equal(const sc_plan *a, const sc_plan *b);

/* "ro", "rw" or "cow". */
const char *plan_grant_mode_name(grant_mode m);

/* The grant whose host path is host_path or one of its parents, or NULL. host_path must be
 * absolute and normalised (e.g. from realpath()); used to keep the audit log and secret
 * files out of the sandbox's reach. */
const plan_grant *plan_grant_containing(const sc_plan *p, const char *host_path);

static inline void sc_plan_freep(sc_plan **p)
{
	sc_plan_free(*p);
}

/* SPDX-License-Identifier: MIT */
/*
 * sc_run(): the supervisor, a base that modes plug into. The base builds
 * the sandbox a plan describes (plan, set up, supervise, finish: the walls,
 * the cgroup, the audit log, the wall clock, the proxy worker, delegation),
 * and a mode adds what its use needs through sc_mode_ops: a plain run has no
 * mode, a session (session/server.c) serves commands, a sub-supervisor
 * (core/spawn.c) hands every event to its parent. Never prints; the CLI
 * renders the result.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit/tally.h"
#include "base/diag.h"
#include "base/exit-status.h"
#include "policy/plan.h"

struct cg_handle;
struct ws_run;

/* What the base lends a mode while the sandbox lives (sc_mode_ops.on_started). */
typedef struct sc_host {
	int ep; /* its epoll loop: a mode's fds are added with data.u64 = tag << 32 | fd */
	uint32_t tag;
	int ctl;   /* command_server: our end of pid 1's control channel, the mode's from now */
	pid_t pid; /* pid 1, in the host's pid namespace */
	struct cg_handle *cg; /* may be NULL */
	const char *sandbox_id, *audit_path;
	struct ws_run *ws; /* the cow workspaces, may be NULL */
	/* net.serve: {"PORT": "127.0.0.1:HOST_PORT"}, or NULL; the base's */
	const json_t *serve;
	int (*emit)(void *userdata, const char *event, json_t *data); /* takes data */
	void (*start_wall)(void *userdata); /* arms limits.wall (sc_run_opts.defer_wall) */
	/* The wall clock ends the sandbox ns from now instead (the mode keeps
	 * it within the policy's limits.wall). */
	void (*set_wall)(void *userdata, uint64_t ns);
	/* Stops the wall clock (a paused session): returns what was left of
	 * it, for set_wall at the resume; UINT64_MAX when it was not armed. */
	uint64_t (*hold_wall)(void *userdata);
	/* pid 1 said it exits with code (CTL_END): its status where the base
	 * cannot wait for it (sc_run_opts.init_adopted). */
	void (*init_exit)(void *userdata, int code);
	void *userdata;
} sc_host;

/*
 * A mode: what one use of the supervisor adds to the base. Every hook may
 * be NULL; each gets the mode's data (sc_run_opts.mode_data) first. Called
 * from the supervisor's thread only, except sink (under the base's emit
 * lock, from the seccomp listener's thread too).
 */
typedef struct sc_mode_ops {
	/* pid 1 runs no command (argv may be NULL): it serves the commands the
	 * mode sends over a control channel (core/ctl.h), given in sc_host.ctl. */
	bool command_server;
	/* Every event instead of a log of its own (takes data): the
	 * sub-supervisor, whose parent's supervisor is the log's only writer. */
	void (*sink)(void *mode, const char *sandbox_id, const char *event, json_t *data);
	/* pid 1 exists and runs nothing of the sandbox yet: < 0 (reterr_diag
	 * says why) refuses the run. */
	int (*on_child_created)(void *mode, pid_t pid, sc_diag *reterr_diag);
	/* The sandbox is being supervised: h stays valid until on_sandbox_gone. */
	void (*on_started)(void *mode, const sc_host *h);
	/* One of the fds the mode added to h->ep with h->tag is ready. */
	void (*on_fd_ready)(void *mode, int fd, uint32_t events);
	/* pid 1 is gone (timed_out: the wall clock ended it); after this the
	 * base writes the records of the end. */
	void (*on_sandbox_gone)(void *mode, bool timed_out);
} sc_mode_ops;

typedef struct sc_run_opts {
	const sc_plan *plan;
	char *const *argv;	  /* the command; argv[0] looked up in the agent's PATH */
	const char *audit_path;	  /* NULL: a per-run file under the state directory */
	const uint8_t *audit_key; /* may be NULL */
	size_t audit_key_len;
	/* The public-key seal (docs/audit.md): signs the seal and a checkpoint
	 * every audit_checkpoint_records records or audit_checkpoint_ms
	 * (0 turns that trigger off). May be NULL. */
	const struct au_signer *audit_signer;
	uint64_t audit_checkpoint_records, audit_checkpoint_ms;
	const char *policy_source; /* file name or "token", for sandbox.start */
	const char *policy_digest; /* hex SHA-256 of the policy bytes */
	const char *token_id;	   /* NULL unless run from a token */
	unsigned token_caveats;
	/* The token the plan was verified from (the parent's, extended, for a
	 * sub-sandbox), NULL when run from a policy: a child's token extends it
	 * (docs/tokens.md, "Delegation"). */
	const char *token;
	/* The mode (NULL: a plain run) and its data, which must outlive sc_run(). */
	const sc_mode_ops *mode;
	void *mode_data;
	/* limits.wall starts when the mode says (sc_host.start_wall: a pooled
	 * session, at its hand-out), not when the sandbox does. */
	bool defer_wall;
	/* pid 1 is born the child of our parent (CLONE_PARENT: whoever adopted
	 * us, a subreaper such as containerd's shim), which reaps it. We watch
	 * it by its pidfd; its status is what it says it exits with
	 * (sc_host.init_exit), the kernel's while it is a zombie, or else a
	 * kill. It has no parent-death signal (its parent is not us): it ends
	 * when its control channel closes (command_server only). */
	bool init_adopted;
	/* net.serve: called once per port when the host's listener exists,
	 * before the sandbox does (the caller says where it is served). */
	void (*on_serve)(void *userdata, uint16_t port, uint16_t host_port);
	void *serve_userdata;
} sc_run_opts;

typedef struct sc_run_result {
	int exit_status;  /* what `sandcap run` exits with */
	int signal;	  /* signal that ended the command, 0 if none */
	bool timed_out;	  /* the wall clock ended it */
	int stop_signal;  /* the signal to the supervisor that stopped the run, 0 if none */
	bool forced_kill; /* killed: the grace after stop_signal ran out, or a second signal */
	bool oom_killed;
	bool pids_limited;
	bool cpu_throttled;
	uint64_t wall_ns;
	uint64_t cpu_ns;
	uint64_t throttled_ns;
	uint64_t memory_peak; /* UINT64_MAX when unknown */
	uint64_t oom_kills;
	unsigned proxy_restarts; /* egress proxy workers that died and were replaced */
	bool proxy_failed;	 /* the last one died too: the sandbox was stopped */
	char sandbox_id[40];
	char audit_path[4096];
	char audit_hash[65]; /* the last record's hash: the external anchor when sealed */
	/* The log's end. Sealed without audit_error: complete. With it: a
	 * record could not be written (errno audit_error, the record
	 * audit_failed_event after audit_failed_at records), and when
	 * audit_stopped the sandbox was killed for it; audit_unrecorded
	 * records were refused. Not sealed: audit_hash is the last record
	 * that was written, of a log that ends without its seal. */
	bool audit_sealed;
	bool audit_stopped;
	int audit_error;
	char audit_failed_event[64];
	uint64_t audit_failed_at, audit_records, audit_unrecorded;
	char cgroup[16];	/* "v1", "v2" or "none" */
	bool unprivileged;	/* ran without root (docs/decisions.md) */
	char not_enforced[320]; /* what best_effort let go, "" when nothing */
	/* Every event of the log, counted as `audit report` does: the run's
	 * only count of requests, bytes, refusals and files written. */
	au_tally tally;
	/* The layers put in place, as sandbox.start lists them ("namespaces
	 * mounts cgroup ..."): for a refused run, those before the refusal. */
	char layers[256];
	/* The workspaces of cow grants kept at the end, space-separated ids;
	 * workspace_error says why one could not be kept. */
	char workspaces[512];
	char workspace_error[256];
	char workspace_note[256]; /* kept, but without a subtree: which, why */
} sc_run_result;

/* The state directory whose audit/ holds the per-run logs without
 * --audit: SANDCAP_STATE_DIR, else /var/lib/sandcap for root, else the
 * user's XDG state directory + /sandcap. -ENOENT or -ENAMETOOLONG. */
int sc_state_dir(bool unpriv, char *buf, size_t len);

/* A zeroed result in pages of its own, which stay unbacked until touched: a
 * supervisor lives as long as its sandbox, and most of the result's 90 KB
 * (the tally's tables) stays zero in most runs. Touched means read too: on
 * some kernels a read fault on anonymous memory backs the page rather than
 * mapping the shared zero page (docs/performance.md, "Density"), so nothing
 * may sweep it. NULL when out of memory. */
sc_run_result *sc_run_result_new(void);
void sc_run_result_free(sc_run_result *res);
static inline void sc_run_result_freep(sc_run_result **res)
{
	sc_run_result_free(*res);
}

/* ret: from sc_run_result_new(), unused. Returns 0 when the command ran (its
 * status is in ret->exit_status), or -errno when the sandbox could not be set
 * up (reterr_diag says which step). */
int sc_run(const sc_run_opts *opts, sc_run_result *ret, sc_diag *reterr_diag);

/* SPDX-License-Identifier: MIT */
/*
 * sc_run(): the supervisor. Builds the sandbox described by a plan, runs a
 * command in it, enforces the wall clock, collects what the kernel measured
 * and writes the audit log. Never prints; the CLI renders the result.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit/tally.h"
#include "base/exit-status.h"
#include "policy/plan.h"

struct json_t;
struct ss_server;
/* Receives every event instead of a log file; owns data. */
typedef void (*sc_event_sink)(const char *sandbox_id, const char *event, struct json_t *data,
			      void *userdata);

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
	/* A sub-sandbox's supervisor (core/spawn.h): no log of its own, every
	 * event goes to its parent's supervisor, the only writer of the log. */
	sc_event_sink event_sink;
	void *event_sink_data;
	/* A sub-supervisor runs with oom_score_adj -1000 (so that it reports
	 * on its child): the sandbox gets this value back before it runs. */
	bool set_oom_score_adj;
	int oom_score_adj;
	/* The token the plan was verified from (the parent's, extended, for a
	 * sub-sandbox), NULL when run from a policy: a child's token extends it
	 * (docs/tokens.md, "Delegation"). */
	const char *token;
	/* A session (session/server.h): pid 1 runs no command (argv may be
	 * NULL) and serves the commands this server sends it until it is
	 * stopped or a limit ends it. */
	struct ss_server *session;
	/* A pooled session: limits.wall starts when the session server says
	 * (ss_host.start_wall, at its hand-out), not when the sandbox does. */
	bool defer_wall;
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
	uint64_t bytes_out, bytes_in;
	uint64_t requests_allowed, requests_denied;
	uint64_t syscalls_denied;
	uint64_t files_written;	 /* distinct paths in fs.write records: tally.files_written */
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
	au_tally tally;		/* every event of the log, counted as `audit report` does */
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

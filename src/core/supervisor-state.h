/* SPDX-License-Identifier: MIT */
/*
 * The supervisor base's own state and the calls between its files; nothing
 * outside src/core/ includes this (the interface is core/supervisor.h).
 * Each file has one job, and calls only those listed below it:
 *
 *   supervisor.c       sc_run(): plan, set up, supervise, finish; the event loop
 *   finish.c           the records of the end, the result, the teardown
 *   setup.c            before the clone, the clone, the setup child's messages
 *   sandbox-cgroup.c   the sandbox's cgroup: made, and the child placed in it
 *   proxy-worker.c     the egress proxy worker: started, heard, replaced, waited for
 *   serve-relay.c      net.serve: the host's listeners, the relay, its records
 *   start-record.c     sandbox.start: the layers in place
 *   agent-events.c     the seccomp listener and the file watches, into the log
 *   log.c              the audit log: opened, paced, every record, its failure, its fsyncs
 *   supervisor-state.c the clock, the loop's fds and timers, the sandbox killed
 *
 * One epoll loop, and the seccomp listener's thread, which emits too:
 * sv_emit() serialises the two under emit_lock.
 */
#pragma once

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit/audit.h"
#include "audit/fsread.h"
#include "audit/fswatch.h"
#include "cgroup/cgroup.h"
#include "core/delegation.h"
#include "core/denials.h"
#include "core/pty.h"
#include "core/supervisor.h"
#include "ns/ns.h"
#include "policy/agent-env.h"
#include "proxy/attempt.h"
#include "proxy/proxy.h"
#include "seccomp/seccomp.h"
#include "workspace/grants.h"

#define SV_CGROUP_PREFIX "sandcap-" /* + the sandbox id */
#define SV_MAX_ENV	 (AGENT_ENV_OWN_MAX + POLICY_MAX_ENV + POLICY_MAX_CREDENTIALS + 1)

/* What an fd in the loop is: data.u64 = tag << 32 | fd. */
enum {
	EV_SYNC = 1,
	EV_PIDFD,
	EV_SIGNAL,
	EV_WALL,
	EV_GRACE,
	EV_NOTIFY,
	EV_PROXY,
	EV_PTY,
	EV_FSWATCH,
	EV_SPAWN,
	EV_MODE, /* the mode's own fds (sc_host.tag) */
	EV_SAMPLE,
	EV_RELAY,
	EV_SYNCED /* a boundary's fsyncs are done: its thread is joined */
};

/* net.serve (serve-relay.c): the host's listeners until the relay takes
 * them, the port each got, the relay and its event socket. */
typedef struct sv_serve {
	size_t n;
	int fds[POLICY_MAX_SERVE];
	uint16_t host_port[POLICY_MAX_SERVE];
	int fd; /* -1 */
	pid_t pid;
	json_t *map; /* {"PORT": "127.0.0.1:HOST_PORT"}, or NULL */
} sv_serve;

/*
 * audit.max_rate (docs/policy.md, "How fast the log grows"): a bucket of
 * log bytes, a second's worth, that every record written draws from, into
 * debt if need be; the exec listener waits until it is out of debt before
 * it records (and so lets run) the next exec. Under the emit lock.
 */
typedef struct log_pace {
	uint64_t rate; /* bytes per second; 0: no pacing */
	int64_t tokens;
	uint64_t last_ns;
} log_pace;

/* The fsyncs of one boundary of the log, on a thread of their own (log.c). */
typedef struct sv_sync {
	pthread_t thread;
	void *stack;	   /* the thread's, unmapped once it is joined */
	int fd, dirfd;	   /* the thread's to fsync and close */
	off_t truncate_to; /* then fd truncated to it, if >= 0 */
	int done_fd;	   /* written once the thread is done, or -1 */
	int r;		   /* 0, or the first fsync's -errno */
	bool running;	   /* a thread to join */
} sv_sync;

#define SV_SYNCS 2 /* the start's boundary and the seal's */

typedef struct supervisor {
	const sc_run_opts *o;
	const sc_plan *plan;
	sc_run_result *res;
	sc_diag *diag;

	au_log *audit;
	log_pace pace;
	sv_sync syncs[SV_SYNCS];
	unsigned n_syncs;
	int synced_fd; /* eventfd of EV_SYNCED, while the loop runs */
	cg_handle *cg;
	ns_source *sources;
	pty_relay *pty;
	fw_watch *fw;
	const char *fw_mode; /* for sandbox.start; owned by fw */
	fr_watch *fr;	     /* fs.read (audit.reads) */
	const char *fr_mode; /* for sandbox.start; static */
	spawn_server *spawn; /* delegation socket, when the plan allows spawn */
	ws_run *ws;	     /* cow grants and rw quotas, when the plan has them */
	json_t *ws_exit;     /* the kept workspaces, for sandbox.exit */
	char ws_not_enforced[256];

	int ep, sync, pidfd, sigfd, wallfd, gracefd, samplefd, notify_fd, proxy_fd;
	sf_listener *listener;	   /* the seccomp listener's thread */
	pthread_mutex_t emit_lock; /* the listener thread emits too */
	pid_t pid, proxy_pid;
	px_seed proxy_seed;	 /* to start another worker on the same listener */
	json_t *px_open;	 /* net.request.start without its net.request, by id */
	px_extras *proxy_extras; /* the sandbox CA and placeholders, or NULL */
	sv_serve serve;
	uid_t id_base;
	bool unpriv;		/* no root: one user namespace mapping us to the agent */
	bool cg_early;		/* cgroup made before clone3, which places the child in it */
	char not_enforced[320]; /* what best_effort let go, for sandbox.start */
	char transparent[300];	/* "on", or "off: why" (sandbox.start); "" without egress */

	/* What the child is given: pid 1's binary, argv and environment, the
	 * terminals it gets a pty for, the child's end of the sync pair. */
	int exe_fd, tty_mask, child_sync;
	/* A command server (sc_mode_ops): the control channel to pid 1
	 * (core/ctl.h), our end and the child's, and its fd number for pid 1's
	 * argv. */
	int ctl, child_ctl;
	char ctl_arg[16];
	char **init_argv;
	char *env[SV_MAX_ENV];
	sigset_t saved_mask; /* restored once the run is over */
	bool mask_saved;

	bool started;	    /* sandbox.start written */
	bool audit_stopped; /* a record could not be written: the sandbox was stopped */
	bool start_written; /* sandbox.start and the grants are in the log */
	bool ready;	    /* the child did every setup step (SYNC_READY) */
	unsigned layers;    /* sync_layer bits: what the child put in place */
	bool cg_joined;	    /* the sandbox is in its cgroup (clone3 or cg_attach) */
	bool setup_failed;
	bool exited;
	int wait_status;
	/* init_adopted: pid 1's /proc directory (for its zombie's status), the
	 * code it said it exits with (-1: none yet), and whether wait_status
	 * is presumed (a kill: it said nothing, and was reaped before we read). */
	int init_procfd, init_code;
	bool status_presumed;
	int landlock_abi;
	char landlock[256];
	uint64_t t0;
	px_attempt_limit raw_sockets; /* raw/packet socket() attempts (attempt-raw.c) */
	/* What the listener judges writes by (seccomp.h, sf_walls). */
	sf_walls walls;
	const char *writable[SF_MAX_WRITABLE];
	dn_state denials; /* fs.denied and syscall.denied, folded (denials.h) */
} supervisor;

/* The mode's hook, or NULL: a plain run has none. */
#define SV_HOOK(s, name) ((s)->o->mode ? (s)->o->mode->name : 0)

/* supervisor-state.c */
uint64_t sv_now_ns(void);
int sv_ep_add(supervisor *s, int fd, uint32_t tag);
void sv_arm(int tfd, uint64_t ns);
void sv_kill_sandbox(supervisor *s);
/* pid 1 has ended: its status taken, once. */
bool sv_pid1_exited(supervisor *s);
/* Until pid 1 has ended (it was killed), its status taken. */
void sv_pid1_wait(supervisor *s);
/* init_adopted: wait_status from what pid 1 said, once the mode has read
 * its last messages (after on_sandbox_gone). */
void sv_pid1_settle(supervisor *s);

/* setup.c: the phases before supervision, in order; each fails with diag. */
int sv_prepare(supervisor *s);
int sv_host_setup(supervisor *s);
int sv_start_child(supervisor *s);
int sv_hand_off(supervisor *s);
/* One message of the setup child (EV_SYNC). */
void sv_handle_sync(supervisor *s);

/* sandbox-cgroup.c */
/* Before the clone: where clone3 can place the child (v2, or any cgroup
 * without root), the cgroup is made now. */
int sv_cgroup_before_clone(supervisor *s);
/* The cgroup fd clone3 places the child in, or -1. */
int sv_cgroup_clone_fd(const supervisor *s);
/* After the clone, once: the child in its cgroup before it runs anything
 * of the sandbox. */
int sv_cgroup_place(supervisor *s);

/* log.c */
int sv_audit_open(supervisor *s);
/* A run refused before its log was open still leaves one. */
void sv_audit_open_after_failure(supervisor *s);
/* 0 once the record is written (or handed on), else -errno: then the
 * sandbox has been stopped. Takes data. _locked: emit_lock held. */
int sv_emit(supervisor *s, const char *event, json_t *data);
int sv_emit_locked(supervisor *s, const char *event, json_t *data);
/* The records of the end: into the log's reserve. */
void sv_emit_final(supervisor *s, const char *event, json_t *data);
/* The exec listener waits for room in the log's bucket. */
void sv_pace_wait(supervisor *s);
/* A boundary: the fsyncs of fd and then dirfd (either may be -1; both are
 * taken) on a thread of their own, so that neither the loop nor the
 * teardown waits for the disk meanwhile; then, if truncate_to >= 0, fd is
 * truncated to it (au_close_defer()). Where no thread can be made, here
 * and now. sv_sync_wait() waits for every one and returns the last
 * one's result (the seal's, which covers every record): 0, or the -errno of
 * a failed fsync. Before sc_run() returns the caller waits. */
void sv_sync_begin(supervisor *s, int fd, int dirfd, off_t truncate_to);
int sv_sync_wait(supervisor *s);
/* EV_SYNCED: the threads that are done are joined and their stacks
 * unmapped, so that a long run keeps no page of theirs. */
void sv_sync_reap(supervisor *s);
/* -1, or when the loop must wake for a signed log's checkpoint. */
int sv_checkpoint_timeout_ms(supervisor *s);

/* start-record.c: sandbox.start and the grants (once); then the seccomp
 * listener (listener_fd, else -1) starts. */
void sv_emit_start(supervisor *s, int listener_fd);

/* agent-events.c */
/* sf_event_fn, fw/fr callbacks: an event of the agent, folded and paced. */
int sv_on_event(const char *event, json_t *data, void *userdata);
/* dn_emit_fn: a record of the listener's thread, under emit_lock. */
int sv_emit_denial(void *userdata, const char *event, json_t *data);
void sv_start_listener(supervisor *s, int fd);
/* The listener's last records, before anything of the sandbox's end. */
void sv_stop_listener(supervisor *s);
/* The sandbox is gone: the counts of what was folded, written. */
void sv_agent_events_end(supervisor *s);

/* proxy-worker.c */
/* The sandbox CA and the placeholders, before the clone. */
int sv_proxy_prepare(supervisor *s);
/* SYNC_LISTENER: the first worker, on fd with the extra sockets fds[0..n). */
int sv_proxy_start(supervisor *s, int fd, const int *fds, size_t n);
/* EV_PROXY: its events; a worker that died is replaced or the sandbox stopped. */
void sv_proxy_ready(supervisor *s);
/* The sandbox is gone: the worker's last events, then the requests it
 * left open completed with reason. */
void sv_proxy_drain(supervisor *s);
/* Teardown: the worker ended and waited for, its seed and extras freed. */
void sv_proxy_stop(supervisor *s);

/* serve-relay.c */
/* Before the clone: the host's listeners (their ports for sandbox.start). */
int sv_serve_prepare(supervisor *s);
/* After the clone: the relay, in the sandbox's netns, takes them. */
int sv_serve_start(supervisor *s);
/* EV_RELAY: its records; a relay that died is recorded. */
void sv_serve_ready(supervisor *s);
/* The sandbox is gone: its last records. */
void sv_serve_drain(supervisor *s);
void sv_serve_stop(supervisor *s);

/* finish.c */
/* The records that end the log; the run's one return value. */
int sv_finish(supervisor *s, int r);
void sv_teardown(supervisor *s);

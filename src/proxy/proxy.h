/* SPDX-License-Identifier: MIT */
/*
 * The egress proxy worker: a separate, freshly exec'd, unprivileged process
 * that accepts on a listener living in the sandbox's netns and connects out
 * from the host's. It reports every request as an event datagram (one JSON
 * object {"event": "...", "data": {...}} per SOCK_SEQPACKET message) that the
 * supervisor validates before it reaches the audit log.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/fdpass.h"
#include "policy/plan.h"

/*
 * What a worker is started from, kept by the supervisor for the whole run so
 * that a worker that died can be replaced on the same listener: the
 * configuration (a sealed memfd), the counters that outlive one worker
 * (budget, rate and bandwidth buckets; a memfd each worker maps shared,
 * size sealed) and, once the sandbox has made them, the listener (in the
 * sandbox's netns) and the other sockets the worker serves.
 */
#define PX_SEED_MAX_SOCKETS (FDPASS_MAX_FDS - 1u) /* with the listener, one message */
typedef struct px_seed {
	int listen_fd;
	int config_fd;
	int state_fd;
	/* the sandbox resolver's socket, the transparent listeners and the
	 * attempt socket (docs/proxy.md) */
	int sockets[PX_SEED_MAX_SOCKETS];
	size_t n_sockets;
} px_seed;
#define PX_SEED_NONE ((px_seed){.listen_fd = -1, .config_fd = -1, .state_fd = -1})

/* How many times a run replaces a worker that died before it gives up. */
#define PX_MAX_RESTARTS 3u

/*
 * Supervisor side: px_seed_prepare() and then px_seed_take_sockets() with
 * listen_fd, for a caller that has its listener already.
 */
int px_seed_new(const sc_plan *plan, int listen_fd, px_seed *ret);
/* Adds the listener and the sockets besides it that a worker serves,
 * created in the sandbox's netns (ns_proxy_listener(),
 * ns_transparent_sockets(), ns_attempt_socket(): the worker tells them
 * apart by their type). Always consumes them: -EBADF (they are closed)
 * when listen_fd is not a descriptor or seed has no configuration or a
 * listener already, -E2BIG past PX_SEED_MAX_SOCKETS. */
int px_seed_take_sockets(px_seed *seed, int listen_fd, const int *fds, size_t n);
/*
 * What the supervisor makes once per run, before the sandbox is built, for
 * TLS inspection and placeholder secrets (docs/proxy.md): the sandbox CA
 * (when plan_inspects()) and one random placeholder per credential with
 * "placeholder_env". The sandbox gets the CA certificate in its trust bundle
 * and the placeholders in its environment; the CA key goes only into the
 * sealed configuration of px_seed_new_run(), then is wiped here.
 */
typedef struct px_extras px_extras;
int px_extras_new(const sc_plan *plan, px_extras **ret);
px_extras *px_extras_free(px_extras *x);
/* The CA certificate (PEM), NULL when nothing is inspected. */
const char *px_extras_ca_pem(const px_extras *x);
/* The n-th "NAME=placeholder" for the agent's environment, NULL past the last. */
const char *px_extras_env(const px_extras *x, size_t n);
/* Internal to src/proxy/: the CA key (PEM, NULL once wiped) and placeholder i. */
const char *px_extras_ca_key(const px_extras *x);
const char *px_extras_placeholder(const px_extras *x, size_t i);
void px_extras_forget_key(px_extras *x);
/*
 * A seed without its sockets yet, so that a worker can start before the
 * sandbox exists (px_spawn(), px_hand_sockets()). Reads the credential
 * secrets here (value_env from this process's environment, value_file from
 * disk), formats them, and seals the net part of the plan plus the secrets
 * and x's CA key (x: the run's extras, NULL: none; the key is wiped in x)
 * into the configuration memfd: they reach a worker only through it, never
 * via argv or the environment. Errors: -ENOKEY a credential secret is
 * missing or empty, -EINVAL a secret or format that would inject headers,
 * -errno from memfd.
 */
int px_seed_prepare(const sc_plan *plan, px_extras *x, px_seed *ret);
/* Closes what px_seed_new() made; the seed is PX_SEED_NONE afterwards. */
void px_seed_done(px_seed *seed);

/*
 * Supervisor side: starts a worker from seed (borrowed), which needs its
 * configuration and counters, not yet its sockets. The worker is the
 * program px_worker_exe_open() names (proxy/programs.h) exec'd as
 * "sandcap-proxy worker" with an empty environment and only fds 0-2
 * (/dev/null), 3 (event socket), 4 (config) and 5 (shared counters); it
 * dies with the caller (PR_SET_PDEATHSIG) and exits when *ret_event_fd
 * is shut or closed. It sets itself up and gives up its privileges, then
 * waits for its sockets: sent here when seed has them (a restart), else
 * by px_hand_sockets() once the sandbox has made them.
 *
 * Returns 0 with the worker's pid (the caller reaps it, px_worker_stop())
 * and the supervisor's end of a SOCK_SEQPACKET socketpair carrying one
 * JSON event per message (validate each with px_event_parse(); ignore
 * ancillary data), or -errno from socketpair/fork/sendmsg. Not
 * async-signal-safe (allocates); safe to call from a multi-threaded process
 * (the child only uses async-signal-safe calls before exec), from the
 * thread that outlives the worker.
 */
int px_spawn(const px_seed *seed, pid_t *ret_pid, int *ret_event_fd);
/* Sends a worker started before the sandbox's network existed the seed's
 * listener and other sockets: one message, the worker's only input from
 * the supervisor besides the end. 0, -EBADF without a listener, -errno
 * from sendmsg (a worker that has died: its EOF comes next). */
int px_hand_sockets(const px_seed *seed, int event_fd);

/*
 * Supervisor side: ends a worker (SIGKILL) and reaps it if it is gone
 * already, without waiting: its exit closes the last copies of the
 * sandbox's sockets, and the packet socket's release waits for an RCU
 * grace period (synchronize_net() in net/packet/af_packet.c), tens of
 * milliseconds that the run need not spend. The worker has sent its last
 * records before that (it shuts its end of the event socket after them);
 * one not reaped here is reaped as an orphan when the caller exits, or by
 * a later waitpid of the caller's.
 */
void px_worker_stop(pid_t pid);

/*
 * Worker side: entry point of "sandcap-proxy worker" (src/cli/main-proxy.c).
 * Reads the configuration, drops every privilege (see
 * worker.c) and serves until the event socket reaches EOF or SIGTERM.
 * Returns 0 on a clean stop, 125 when setup or sandboxing failed, 1 on a
 * fatal loop error.
 */
int px_worker_main(void);

#define PX_EVENT_MAX_BYTES  8192u /* one event datagram */
#define PX_EVENT_MAX_STRING 2048u /* one string field inside it */

/*
 * Supervisor side: validates one event datagram from the worker, which is less
 * trusted than the supervisor. Accepts only {"event": NAME, "data": {...}} with
 * NAME one of net.request, net.denied, net.tunnel.close, limit.hit, the data
 * an object of that event's known keys, each a bounded string, a boolean or a
 * non-negative integer. On success *ret_event (malloc'd) and *ret_data (a new
 * reference) are set. Returns 0, -EBADMSG or -ENOMEM. Never logs.
 */
int px_event_parse(const char *buf, size_t len, char **ret_event, json_t **ret_data);

/*
 * Supervisor side: a syscall.denied of socket(2) for a raw socket
 * (AF_INET/AF_INET6 with SOCK_RAW or SOCK_PACKET) or any AF_PACKET socket
 * is recorded as net.denied "raw-socket" instead, rate-limited by l like
 * the direct attempts (docs/proxy.md, "Every attempt seen"). Returns 0 when
 * data is no such call (record it as it is), 1 when it is: then
 * *ret_denied is the net.denied to record instead (NULL when the limiter
 * counted it) and *ret_limit a limit.hit of the attempts counted so far
 * (NULL when none is due); -ENOMEM.
 */
struct px_attempt_limit;
int px_raw_socket_event(struct px_attempt_limit *l, json_t *data, uint64_t now_ns,
			json_t **ret_denied, json_t **ret_limit);
/* The limit.hit "net.attempts" of n attempts not recorded one by one. */
json_t *px_attempt_limit_record(uint64_t n, bool some_unseen);

/* SPDX-License-Identifier: MIT */
/*
 * The serve relay (net.serve, docs/proxy.md "Serving"): "sandcap-proxy
 * relay", exec'd by the supervisor (core/serve-relay.c) with an empty
 * environment, which accepts on listeners of the host's loopback (or of
 * every address of a container's own netns, a pod's) and relays
 * each connection to 127.0.0.1:PORT inside the sandbox's network namespace,
 * with splice(2), one net.inbound record per connection on its event
 * socket. It joins that namespace before it gives up its privileges, so
 * every socket it makes afterwards is born there: its connects reach only
 * the sandbox's loopback, its listeners (made by the supervisor) only the
 * supervisor's side.
 *
 * Its fds: RL_FD_EVENTS, RL_FD_NETNS (the sandbox's network namespace),
 * RL_FD_USERNS (the sandbox's user namespace, or /dev/null when it has
 * none of its own: a run as root), then one listener per port from
 * RL_FD_LISTEN on. Its arguments: the supervisor's pid, then
 * "PORT:HOST_PORT" per listener, in the same order.
 */
#pragma once

#include <stdint.h>

#define PX_RELAY_ARG "relay"
#define RL_FD_EVENTS 3
#define RL_FD_NETNS  4
#define RL_FD_USERNS 5
#define RL_FD_LISTEN 6

#define RL_MAX_CONNS	 256u /* open at once; more are refused and recorded */
#define RL_CONNECT_NS	 (10ull * 1000000000ull)
#define RL_RECORDS_PER_S 20u  /* net.inbound records; past a burst of ... */
#define RL_RECORDS_BURST 200u /* ... the rest are counted in limit.hit */
#define RL_REPORT_NS	 1000000000ull

/* The relay process: 0 at the supervisor's end, 125 when it could not set
 * itself up, 1 on a fatal loop error. */
int px_relay_main(int argc, char **argv);

/* worker.c: the worker's confinement (privileges, Landlock without any
 * file, its seccomp filter), for a process that reads no file. */
int px_confine_no_files(int64_t parent_pid);

/* SPDX-License-Identifier: MIT */
/*
 * sandcap-runc: an OCI runtime (runtime-spec 1.x) with runc's command
 * line (docs/oci.md). A container is a session (docs/sessions.md) whose
 * command is config.json's process, held from create until start, and a
 * container supervisor of its own that holds that command's connection,
 * relays its stdio, answers start and kill on ROOT/ID/oci.sock and exits
 * with the process's status. The pid in --pid-file and state is the
 * sandbox's pid 1, born the child of whoever adopted the session's
 * supervisor (containerd's shim, conmon), which reaps it: it exits with the
 * process's status as soon as the process ends (sc_session_start_opts.
 * init_adopted).
 *
 * The calls between its files; nothing outside src/cli/runc/ includes
 * this. Each file has one job:
 *
 *   main.c                  the command line: global options, each command's, usage;
 *                           spec, features, list; rc_err(), the log
 *   create.c                create and run: config.json into a plan, the state directory
 *                           made, the container supervisor forked, docker's prestart hook
 *   lifecycle.c             start, state, kill, delete: requests to the container supervisor
 *   exec.c                  exec: one more process in a running container, and its relay
 *   processes.c             the container's processes: ps, pause and resume (the freezer)
 *   container-supervisor.c  the container supervisor: the session started, the process held
 *                           until start, its stdio relayed, oci.sock answered
 *   state.c                 the state directory ROOT/ID: its files, a container's status
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "oci/cgroups.h"
#include "oci/config.h"
#include "oci/pod.h"
#include "policy/plan.h"
#include "session/exec-wire.h"
#include "session/session.h"

/* The global options (main.c): --root, --log, --log-format, --policy. */
extern const char *rc_root, *rc_log, *rc_log_format, *rc_policy;

/* The only way sandcap-runc reports an error (main.c). */
void rc_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the state directory (state.c) ---- */

/* ROOT/ID into buf: -EINVAL (said) for an id that is not a session name, or
 * -ENAMETOOLONG. */
int rc_cdir(const char *id, char *buf, size_t len);
/* rc_cdir() of a container that exists: 0, or the exit code, said (runc's
 * words and 1 for a container that does not exist). */
int rc_existing_cdir(const char *id, char *buf, size_t len);
/* DIR/NAME replaced whole (a temporary file renamed). */
int rc_write_file(const char *dir, const char *name, const char *text);
json_t *rc_read_json(const char *path);
unsigned long long rc_proc_start(pid_t pid);
void rc_read_pids(const char *dir, pid_t *ret_init, unsigned long long *ret_start, pid_t *ret_sup);
const char *rc_container_status(const char *dir, int *ret_code);
void rc_read_small(const char *dir, const char *name, char *buf, size_t len);
void rc_remove_dir(const char *dir);
int rc_make_root(void);
int rc_write_pid_file(const char *path, pid_t pid);
json_t *rc_container_state(const char *id, const char *dir);

/* ---- the container supervisor (container-supervisor.c) ---- */

typedef struct csup {
	char dir[4096], id[SC_SESSION_NAME_MAX + 1];
	sx_handle h;
	bool started;
	int listen_fd;
	int in_fd;  /* our stdin, relayed to the process's, or -1 */
	int sig_fd; /* an exec's relay: signals it gets, passed on to the process; or -1 */
	int ns_fds[OCI_NS_MAX]; /* create: the pod's namespaces it joins (oci/pod.h), or -1 */
	bool new_net; /* create: a network namespace of its own, docker's (oci/config.h) */
	char cgroup[OCI_CGROUP_PATH_MAX + 1]; /* create: linux.cgroupsPath, or "" */
} csup;

/* The pty's master to --console-socket (SCM_RIGHTS). */
int rc_send_console(const char *sock_path, int master);
/* DIR/oci.sock, listening. */
int rc_listen_ctl(const char *dir, int *ret);
/* Relays until the process ends; its exit status. */
int rc_supervise(csup *c);
/* create's forked child: says "ok" (or why not) on ready, then supervises. */
_Noreturn void rc_become_supervisor(csup *c, const sc_plan *plan, const oci_process *proc,
				    const char *console, const char *digest, int ready);

/* ---- the container's processes (processes.c) ---- */

int rc_init_pid(const char *id);
int rc_container_pids(const char *id, pid_t **ret, size_t *ret_n);
int rc_container_frozen(const char *dir, const char *id);
int rc_container_freeze(const char *dir, const char *id, bool frozen);

/* ---- the commands: each returns the program's exit status ---- */

/* create.c: create, and run without --detach waiting for the end. */
int rc_do_create(const char *id, const char *bundle_arg, const char *pid_file, const char *console,
		 bool run, bool detach);

/* lifecycle.c */
int rc_start(const char *id);
int rc_do_state(const char *id);
int rc_do_kill(const char *id, const char *sigs, bool all);
int rc_do_delete(const char *id, bool force);

/* exec.c */
typedef struct exec_opts {
	const char *process, *pid_file, *console, *cwd, *user;
	bool tty, detach;
	char *env[SC_SESSION_MAX_ENV + 1];
	size_t n_env;
} exec_opts;

int rc_do_exec(const char *id, const exec_opts *o, char **args);

/* processes.c */
int rc_do_pause(const char *id, bool pause);
int rc_do_ps(const char *id, const char *format, char **ps_args);

/* SPDX-License-Identifier: MIT */
/*
 * Setting the sandbox up, from the supervisor's side (docs/architecture.md,
 * "The setup child"): the sandbox's id and what pid 1 is given, what exists
 * on the host before the clone, the clone, what the child waits for before
 * it runs anything of the sandbox, and its messages until it is ready.
 * Every message of the child is input from a less trusted peer.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "base/sibling.h"
#include "base/signals.h"
#include "compat/syscalls.h"
#include "core/child.h"
#include "core/ctl.h"
#include "core/init.h"
#include "core/sync.h"
#include "core/supervisor-state.h"
#include "host/host.h"

/* pid 1's binary: next to ours (build tree, relocated installs), else the
 * configured libexecdir. It must be a regular file only root can change, or,
 * for an unprivileged supervisor, root or the invoking user (whose own build
 * it may be: whoever can change it can already act as that user). */
static int open_init(int *reterr)
{
	int fd = sibling_open(INIT_ARGV0, SANDCAP_LIBEXECDIR, O_RDONLY);

	*reterr = fd < 0 ? fd : 0;
	return fd;
}

/* Delegation (core/delegation.h): events of the server itself
 * (spawn.denied, spawn.error) and of every child, already tagged with its
 * id: into our log like our own. */
static void spawn_emit(const char *event, json_t *data, void *userdata)
{
	(void)sv_emit(userdata, event, data);
}

/* The socket must exist before the child binds it. */
static int start_spawn_server(supervisor *s)
{
	if (s->plan->spawn_max_depth == 0)
		return 0;
	return spawn_server_new(s->plan, s->res->sandbox_id, s->o->token, spawn_emit, s, &s->spawn,
				s->diag);
}

/* Phase 1: the sandbox's id, the mode, and what pid 1 will be given. */
int sv_prepare(supervisor *s)
{
	const sc_run_opts *o = s->o;
	sc_run_result *res = s->res;
	bool serves = SV_HOOK(s, command_server);
	uint8_t rnd[8];
	size_t argc = 0;
	int r;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return diag_fail(s->diag, -EIO, "id", "no randomness for the sandbox id");
	snprintf(res->sandbox_id, sizeof(res->sandbox_id), "sc-%02x%02x%02x%02x%02x%02x%02x%02x",
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);

	/* Orphans of our own children (a sub-supervisor's sandbox, helpers) come
	 * back to us rather than to the host's init, and are reaped at teardown. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* Not root: the unprivileged mode (docs/decisions.md), refused up front
	 * where the host forbids what it needs. */
	s->unpriv = geteuid() != 0;
	res->unprivileged = s->unpriv;
	if (s->unpriv) {
		char why[256];

		r = ns_unpriv_userns_check(why, sizeof(why));
		if (r < 0)
			return diag_fail(
			    s->diag, r, "userns",
			    "%s: sandcap run without root needs them (or run it as root)", why);
		if (s->plan->spawn_max_depth > 0)
			return diag_fail(s->diag, -EPERM, "spawn",
					 "delegation (\"spawn\") needs root: without it sandcap "
					 "cannot nest a child's cgroup or id range; drop \"spawn\" "
					 "or run as root");
	}
	while (o->argv && o->argv[argc])
		argc++;
	if (argc == 0 && !serves)
		return diag_fail(s->diag, -EINVAL, "command", "no command given");
	/* An adopted pid 1 has no parent-death signal: only its channel's end
	 * tells it that we died. */
	if (o->init_adopted && !serves)
		return diag_fail(s->diag, -EINVAL, "init",
				 "an adopted pid 1 needs a command server");
	s->init_argv = calloc(argc + 4, sizeof(char *)); /* + the channel's fd */
	if (!s->init_argv)
		return diag_fail(s->diag, -ENOMEM, "command", "out of memory");
	s->init_argv[0] = (char *)INIT_ARGV0;
	/* A command server's pid 1 serves the control channel (ctl_arg is
	 * filled in by sv_host_setup, before the clone). */
	s->init_argv[1] = (char *)(!serves	     ? "--"
				   : o->init_adopted ? INIT_SESSION_MAIN_ARG
						     : INIT_SESSION_ARG);
	if (serves)
		s->init_argv[2] = s->ctl_arg;
	else
		memcpy(s->init_argv + 2, o->argv, argc * sizeof(char *));
	r = agent_env_build(s->plan, s->env, ELEMENTSOF(s->env));
	if (r < 0)
		return diag_fail(s->diag, r, "env", "more than %zu environment variables",
				 ELEMENTSOF(s->env) - AGENT_ENV_OWN_MAX - 1);
	r = sv_proxy_prepare(s);
	if (r >= 0)
		r = sv_serve_prepare(s);
	if (r < 0)
		return r;
	s->exe_fd = open_init(&r);
	if (s->exe_fd < 0)
		return diag_fail(s->diag, r, "init", "cannot find %s next to sandcap or in %s: %s",
				 INIT_ARGV0, SANDCAP_LIBEXECDIR, strerror(-r));
	return 0;
}

/*
 * Every signal whose default would end or stop us, taken through the
 * signalfd (handle_signal), and SIGCHLD and SIGWINCH (docs/decisions.md,
 * "Signals from outside"). The kernel's own faults are forced past the
 * mask and still crash us.
 */
static void supervisor_sigset(sigset_t *set)
{
	sgn_taken_set(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGWINCH);
}

/* Before anything of the run exists on the host: a signal meanwhile
 * waits in the signalfd and stops the sandbox once there is one. */
static int take_signals(supervisor *s)
{
	sigset_t mask;

	supervisor_sigset(&mask);
	sgn_libc_own_ignore();
	sigprocmask(SIG_BLOCK, &mask, &s->saved_mask);
	s->mask_saved = true;
	s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sigfd < 0)
		return diag_fail(s->diag, -errno, "supervisor", "signalfd: %s", strerror(errno));
	return 0;
}

/* Phase 2: on the host, before the child exists. */
int sv_host_setup(supervisor *s)
{
	const sc_plan *p = s->plan;
	int pair[2], r;

	r = take_signals(s);
	if (r < 0)
		return r;
	r = sv_cgroup_before_clone(s);
	if (r < 0)
		return r;
	r = start_spawn_server(s);
	if (r < 0)
		return r;
	s->id_base = ns_host_id_base(getpid());
	r = s->unpriv ? ns_open_sources_unpriv(p, &s->sources, s->diag)
		      : ns_open_sources(p, s->id_base, &s->sources, s->diag);
	if (r < 0) {
		host_explain_refusal(s->diag, r, s->unpriv); /* an id mapping needs a userns */
		return r;
	}
	/* Project ids of sandboxes alive at once differ as their pids do. */
	r = ws_run_setup(p, s->sources, s->unpriv, s->id_base + 1, s->res->sandbox_id,
			 0x5c000000u | ((uint32_t)getpid() & 0xffffffu), &s->ws, s->ws_not_enforced,
			 sizeof(s->ws_not_enforced), s->diag);
	if (r < 0)
		return r;
	if (s->ws_not_enforced[0] && !s->res->not_enforced[0])
		snprintf(s->res->not_enforced, sizeof(s->res->not_enforced), "%s",
			 s->ws_not_enforced);
	/* Before the child exists: the listing fallback snapshots the grants now. */
	r = fw_start(p, &s->fw, &s->fw_mode);
	if (r < 0)
		return diag_fail(s->diag, r, "fswatch", "cannot watch the rw grants: %s",
				 strerror(-r));

	r = pty_relay_new(&s->pty, &s->tty_mask);
	if (r < 0)
		return diag_fail(s->diag, r, "terminal", "cannot set up the terminal relay: %s",
				 strerror(-r));

	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->wallfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	s->gracefd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->ep < 0 || s->wallfd < 0 || s->gracefd < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
		return diag_fail(s->diag, -errno, "supervisor", "%s", strerror(errno));
	s->sync = pair[0];
	s->child_sync = pair[1];
	if (SV_HOOK(s, command_server)) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
			return diag_fail(s->diag, -errno, "session", "%s", strerror(errno));
		s->ctl = pair[0];
		s->child_ctl = pair[1];
		ctl_channel_room(pair);
		snprintf(s->ctl_arg, sizeof(s->ctl_arg), "%d", s->child_ctl);
	}
	return 0;
}

/* Phase 3: clone3 into the new namespaces; the child runs child_main(). */
int sv_start_child(supervisor *s)
{
	struct sc_clone_args ca = {
	    .flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
		     CLONE_PIDFD,
	    .pidfd = (uint64_t)(uintptr_t)&s->pidfd,
	    .exit_signal = SIGCHLD,
	};
	int cfd = sv_cgroup_clone_fd(s);

	/* Unprivileged, the user namespace must come first so that it owns
	 * the others: clone(2) creates it before them. */
	if (s->unpriv)
		ca.flags |= CLONE_NEWUSER;
	if (s->plan->shared_ipc_uts)
		ca.flags &= ~(uint64_t)(CLONE_NEWIPC | CLONE_NEWUTS);
	if (cfd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cfd;
	}
	/* Our parent's child (sc_run_opts.init_adopted). clone3 takes no exit
	 * signal with CLONE_PARENT: the child gets ours, SIGCHLD (kernel/fork.c,
	 * clone3_args_valid()). clone(2)'s EINVAL for CLONE_PARENT with
	 * CLONE_NEWPID or CLONE_NEWUSER is no longer the kernel's: copy_process()
	 * refuses only CLONE_THREAD with them (commit 1f7f4dde5c94, "fork: Allow
	 * CLONE_PARENT after setns(CLONE_NEWPID)"). */
	if (s->o->init_adopted) {
		ca.flags |= CLONE_PARENT;
		ca.exit_signal = 0;
	}
	s->t0 = sv_now_ns();
	s->pid = sys_clone3(&ca);
	s->cg_joined = s->pid > 0 && cfd >= 0;
	if (s->pid < 0) {
		int r;

		if (s->unpriv && (errno == EPERM || errno == ENOSPC || errno == EUSERS))
			r = diag_fail(s->diag, -errno, "clone",
				      "this host does not let an unprivileged user create a "
				      "user namespace (%s); sandcap run without root needs one",
				      strerror(errno));
		else
			r = diag_fail(s->diag, -errno, "clone",
				      "cannot create the sandbox namespaces: %s", strerror(errno));
		host_explain_refusal(s->diag, r, s->unpriv);
		return r;
	}
	if (s->pid == 0) {
		child_ctx c = {.plan = s->plan,
			       .sources = s->sources,
			       .sync = s->child_sync,
			       .exe_fd = s->exe_fd,
			       .tty_mask = s->tty_mask,
			       .init_argv = s->init_argv,
			       .envp = s->env,
			       .spawn_sock = spawn_server_socket(s->spawn),
			       .cg_sync = !s->unpriv,
			       .unpriv = s->unpriv,
			       .adopted = s->o->init_adopted,
			       .ctl_fd = s->child_ctl};

		(void)close(s->sync);
		(void)safe_close(s->ctl);
		child_main(&c);
	}
	s->child_sync = safe_close(s->child_sync);
	s->child_ctl = safe_close(s->child_ctl);
	if (s->o->init_adopted) {
		char path[32];

		/* Its zombie's status, should its parent not have reaped it yet
		 * when we look (sv_pid1_exited()). Still running after the open:
		 * the directory is its own, not a reused pid's. */
		snprintf(path, sizeof(path), "/proc/%d", (int)s->pid);
		s->init_procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (s->init_procfd >= 0 && sys_pidfd_send_signal(s->pidfd, 0) < 0)
			s->init_procfd = safe_close(s->init_procfd);
	}
	return 0;
}

/*
 * Phase 4: what the child waits for before it runs anything of the
 * sandbox. As root it waits for its cgroup, and maps itself through
 * SYNC_USERNS later; unprivileged it waits for "go", its next step needs
 * mapped ids. The audit log is opened meanwhile.
 */
int sv_hand_off(supervisor *s)
{
	int r = sv_cgroup_place(s);

	if (r >= 0 && !SV_HOOK(s, sink))
		r = sv_audit_open(s);
	spawn_server_set_cgroup(s->spawn, s->cg);
	if (r < 0)
		return r;
	if (SV_HOOK(s, on_child_created)) {
		r = s->o->mode->on_child_created(s->o->mode_data, s->pid, s->diag);
		if (r < 0)
			return r;
	}
	if (s->unpriv) {
		sync_msg go = {.type = SYNC_GO};

		r = ns_write_id_maps_unpriv(s->pid, s->plan->agent_uid, s->plan->agent_gid);
		if (r < 0)
			return diag_fail(s->diag, r, "userns", "cannot write the id maps: %s",
					 strerror(-r));
		(void)sync_send(s->sync, &go, -1);
	}
	return sv_serve_start(s);
}

/* SYNC_USERNS, as root: the child's three ids map to ours (docs/decisions.md). */
static void map_ids(supervisor *s)
{
	sync_msg m = {.type = SYNC_MAPPED};
	char um[NS_ID_MAP_MAX], gm[NS_ID_MAP_MAX];
	int r;

	ns_id_maps(s->plan, s->id_base, um, gm);
	r = ns_write_id_maps(s->pid, um, gm);
	if (r < 0) {
		s->setup_failed = true;
		diag_fail(s->diag, r, "userns", "cannot write the id maps: %s", strerror(-r));
		sv_kill_sandbox(s);
		return;
	}
	(void)sync_send(s->sync, &m, -1);
}

void sv_handle_sync(supervisor *s)
{
	sync_msg m;
	int fds[SYNC_MAX_FDS];
	size_t n_fds = 0;
	int r = sync_recv_fds(s->sync, &m, fds, SYNC_MAX_FDS, &n_fds);
	int fd = n_fds > 0 ? fds[0] : -1;

	/* only the listener message carries more than one fd */
	for (size_t i = 1; i < n_fds && (r < 0 || m.type != SYNC_LISTENER); i++)
		fds[i] = safe_close(fds[i]);

	if (r == -EPIPE || r == -ECONNRESET) {
		/* The socket closed on exec: pid 1 is running our init. */
		(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->sync, NULL);
		s->sync = safe_close(s->sync);
		return;
	}
	if (r < 0) {
		s->setup_failed = true;
		diag_fail(s->diag, r, "protocol", "malformed message from the sandbox child");
		sv_kill_sandbox(s);
		(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->sync, NULL);
		s->sync = safe_close(s->sync);
		(void)safe_close(fd);
		return;
	}
	switch ((sync_type)m.type) {
	case SYNC_USERNS:
		if (!s->unpriv) /* mapped before "go"; a second request is not ours to grant */
			map_ids(s);
		break;
	case SYNC_LISTENER:
		if (fd < 0 || s->proxy_fd < 0 || s->proxy_seed.listen_fd >= 0) {
			for (size_t i = 1; i < n_fds; i++)
				(void)close(fds[i]);
			break;
		}
		m.what[sizeof(m.what) - 1] = 0;
		snprintf(s->transparent, sizeof(s->transparent), "%s%s",
			 m.value == 1 && n_fds > 1 ? "on" : "off: ", m.value == 1 ? "" : m.what);
		(void)sv_proxy_start(s, TAKE_FD(fd), fds + 1, n_fds - 1);
		break;
	case SYNC_LAYERS:
		/* The child's mounts are built: its /tmp is there to watch. */
		(void)fw_watch_tmp(s->fw, s->pid);
		/* Its reads too; a thread only now, after the fork of the child. */
		if (fr_start(s->plan, s->pid, sv_on_event, s, &s->fr, &s->fr_mode) < 0)
			s->fr_mode = "none (out of memory)";
		s->landlock_abi = m.value;
		snprintf(s->landlock, sizeof(s->landlock), "%s", m.what);
		break;
	case SYNC_READY:
		if (s->ready)
			break;
		s->ready = true;
		s->layers = m.layers;
		if (fd >= 0 &&
		    (!(m.layers & LAYER_SECCOMP_NOTIFY) || s->notify_fd >= 0 || s->listener))
			fd = safe_close(fd);
		/* sandbox.start goes first: pid 1's exec is the listener's
		 * first record. */
		sv_emit_start(s, TAKE_FD(fd));
		break;
	case SYNC_FAILED:
		s->setup_failed = true;
		if (!s->ready)
			s->layers = m.layers;
		m.err = m.err > 0 && m.err < 4096 ? m.err : EPROTO;
		diag_fail(s->diag, -m.err, m.step, "%s%s%s", m.what, m.what[0] ? ": " : "",
			  strerror(m.err));
		host_explain_refusal(s->diag, -m.err, s->unpriv); /* a chroot, a sysctl... */
		break;
	case SYNC_PTY:
		/* The sandbox's own pty: relayed to the host terminal. */
		if (fd >= 0 && s->pty && isatty(fd))
			(void)pty_relay_attach(s->pty, TAKE_FD(fd), s->ep, EV_PTY);
		break;
	case SYNC_GO:
	case SYNC_MAPPED:
	case SYNC_CGROUP:
	case _SYNC_TYPE_MAX:
		break;
	}
	(void)safe_close(fd);
}

/* SPDX-License-Identifier: MIT */
/*
 * Setup is an ordered table and fails closed: a failing step reports
 * {step, errno} over the sync socket and the child exits. Until the "userns"
 * step the child is host root in its new mount/pid/net/ipc/uts namespaces;
 * from there on privileges only go down. Under an unprivileged supervisor
 * the child is born in its own user namespace instead (setup_steps_unpriv).
 */
#include "core/child.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/signals.h"
#include "compat/syscalls.h"
#include "core/pty.h"
#include "core/sync.h"
#include "proxy/proxy.h"
#include "seccomp/seccomp.h"

/* Nothing of the launcher's signal state crosses into the sandbox: an
 * ignored signal stays ignored across execve (signal(7)), as nohup's SIGHUP
 * or a Python parent's SIGPIPE would, and so does the blocked mask (the
 * supervisor's blocks all it takes through its signalfd). */
static int step_signals(child_ctx *c)
{
	(void)c;
	return sgn_child_defaults();
}

static int step_wait_go(child_ctx *c)
{
	sync_msg m;
	int r = sync_recv(c->sync, &m, NULL);

	if (r < 0)
		return r;
	return m.type == SYNC_GO ? 0 : -EPROTO;
}

/*
 * The supervisor sends the files that move a thread into our cgroup, made
 * while we built the mounts (none when clone3 placed us, or best_effort let
 * the cgroup go). We move ourselves: a thread moving itself skips the
 * kernel's global threadgroup lock, whose first writer waits for an RCU
 * grace period (1-20 ms on a busy host); a move from outside would take it.
 */
static int step_cgroup(child_ctx *c)
{
	int fds[SYNC_MAX_FDS];
	size_t n;
	sync_msg m;
	int r;

	if (!c->cg_sync)
		return 0;
	r = sync_recv_fds(c->sync, &m, fds, ELEMENTSOF(fds), &n);
	if (r < 0)
		return r;
	if (m.type != SYNC_CGROUP)
		r = -EPROTO;
	for (size_t i = 0; i < n; i++) {
		if (r >= 0 && write(fds[i], "0", 1) != 1)
			r = -errno;
		(void)close(fds[i]);
	}
	if (r >= 0 && n > 0)
		c->layers |= LAYER_CGROUP;
	return r;
}

static int step_cgroupns(child_ctx *c)
{
	(void)c;
	/* In the sandbox cgroup by now: it becomes our root. */
	return unshare(CLONE_NEWCGROUP) < 0 ? -errno : 0;
}

static int step_mounts(child_ctx *c)
{
	return ns_setup_root_spawn(c->plan, c->sources, c->spawn_sock, &c->what);
}

static int step_mounts_unpriv(child_ctx *c)
{
	return ns_setup_root_unpriv(c->plan, c->sources, &c->what);
}

static int step_hostname(child_ctx *c)
{
	const char *h = c->plan->hostname;

	if (c->plan->shared_ipc_uts)
		return 0; /* the pod's uts namespace, its hostname set when made */
	if (sethostname(h, strlen(h)) < 0 || setdomainname("(none)", 6) < 0)
		return -errno;
	return 0;
}

static int step_network(child_ctx *c)
{
	sync_msg m = {.type = SYNC_LISTENER};
	int r = ns_loopback_up();
	int fds[SYNC_MAX_FDS];
	size_t n = 0;
	const char *what = "";

	if (r < 0 || c->plan->n_egress == 0)
		return r;
	/* The proxy's only door: sockets born in this netns, served from outside. */
	fds[0] = ns_proxy_listener(PLAN_PROXY_PORT);
	if (fds[0] < 0)
		return fds[0];
	/* Transparent redirection and the sandbox resolver are a convenience:
	 * where they cannot be set up, the proxy variables still work, and
	 * sandbox.start says why (m.value 0, m.what). The last slot is the
	 * attempt socket's. */
	r = ns_local_routes(&what);
	if (r >= 0)
		r = ns_transparent_sockets(c->plan, PLAN_PROXY_PORT, fds + 1, SYNC_MAX_FDS - 2, &n,
					   &what);
	m.value = r >= 0;
	if (r < 0)
		snprintf(m.what, sizeof(m.what), "%s: %s", what, strerror(-r));
	/* Every attempt to go around the proxy is refused on lo, and seen. */
	r = ns_attempt_socket();
	if (r < 0) {
		for (size_t i = 0; i <= n; i++)
			(void)close(fds[i]);
		return r;
	}
	fds[1 + n++] = r;
	r = sync_send_fds(c->sync, &m, fds, n + 1);
	for (size_t i = 0; i <= n; i++)
		(void)close(fds[i]);
	return r;
}

static int set_limit(int resource, uint64_t value)
{
	struct rlimit cur, rl;

	if (getrlimit(resource, &cur) < 0)
		return -errno;
	/* We can only lower hard limits (no CAP_SYS_RESOURCE on every host):
	 * a request above the host's hard limit keeps the stricter host value. */
	rl.rlim_max =
	    value == PLAN_UNLIMITED
		? cur.rlim_max
		: (cur.rlim_max == RLIM_INFINITY || value < cur.rlim_max ? value : cur.rlim_max);
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(resource, &rl) < 0 ? -errno : 0;
}

static int step_rlimits(child_ctx *c)
{
	int r = set_limit(RLIMIT_NOFILE, c->plan->nofile);

	if (r >= 0)
		r = set_limit(RLIMIT_FSIZE, c->plan->fsize);
	if (r >= 0)
		r = set_limit(RLIMIT_CORE, 0);
	return r;
}

static int step_terminal(child_ctx *c)
{
	sync_msg m = {.type = SYNC_PTY};
	int master, slave, r;

	/* No controlling terminal of the host; a pty of ours when one was asked. */
	if (setsid() < 0)
		return -errno;
	if (!c->tty_mask)
		return 0;
	c->what = "/dev/pts/ptmx";
	r = pty_open_pair(&master, &slave);
	if (r < 0)
		return r;
	r = sync_send(c->sync, &m, master);
	(void)close(master);
	for (int fd = 0; fd < 3 && r >= 0; fd++)
		if ((c->tty_mask & (1 << fd)) && dup2(slave, fd) < 0)
			r = -errno;
	if (r >= 0 && ioctl(slave, TIOCSCTTY, 0) < 0)
		r = -errno;
	(void)close(slave);
	return r;
}

static int step_userns(child_ctx *c)
{
	sync_msg m = {.type = SYNC_USERNS};
	int r;

	/* Our own identity from here on: the supervisor maps 0, the agent's ids
	 * and 65534 to an unprivileged host range (docs/decisions.md, "Identity: a few
	 * host ids per sandbox"). */
	if (unshare(CLONE_NEWUSER) < 0)
		return -errno;
	r = sync_send(c->sync, &m, -1);
	if (r < 0)
		return r;
	r = sync_recv(c->sync, &m, NULL);
	if (r < 0)
		return r;
	return m.type == SYNC_MAPPED ? 0 : -EPROTO;
}

static int step_bounding(child_ctx *c)
{
	(void)c;
	/* Needs CAP_SETPCAP, which we hold in the new user namespace until setuid. */
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	/* The agent may be uid 0 inside (identity.uid): an execve by uid 0
	 * gains the bounding set (capabilities(7), "Capabilities and execution
	 * of programs by root"), empty by now; and with NOROOT, locked, it
	 * gains nothing even if a set were not. KEEP_CAPS locked off: no
	 * setuid keeps what the caps step takes. Needs CAP_SETPCAP too. */
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED,
		  0, 0, 0) < 0)
		return -errno;
	return 0;
}

static int step_identity(child_ctx *c)
{
	gid_t g = c->plan->agent_gid;
	uid_t u = c->plan->agent_uid;

	/* Supplementary groups: none (additionalGids asks only for the
	 * primary one, sandcap-runc). */
	if (setgroups(0, NULL) < 0 || setresgid(g, g, g) < 0 || setresuid(u, u, u) < 0)
		return -errno;
	return 0;
}

/* Unprivileged: we already are the agent inside (the only mapped ids), and
 * with setgroups denied the supplementary groups cannot be dropped. The
 * calls still fail closed if the ids are not what the map says. */
static int step_identity_unpriv(child_ctx *c)
{
	gid_t g = c->plan->agent_gid;
	uid_t u = c->plan->agent_uid;

	if (setresgid(g, g, g) < 0 || setresuid(u, u, u) < 0)
		return -errno;
	return 0;
}

static int step_caps(child_ctx *c)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {0};

	(void)c;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

/* A sandbox must not outlive its supervisor: nothing would enforce its
 * wall clock or record what it does. When pid 1 dies the kernel kills the
 * whole pid namespace. Set after the last credential change, which clears
 * it; then the supervisor's end of the pair tells whether it died before.
 * Adopted, our parent is not the supervisor (the signal would follow the
 * wrong process): the sync pair fails every later step once it has died,
 * and pid 1 ends when its control channel closes (core/init-session.c). */
static int step_parent_death(child_ctx *c)
{
	struct pollfd pfd = {.fd = c->sync, .events = POLLIN};

	if (!c->adopted && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	if (poll(&pfd, 1, 0) < 0)
		return -errno;
	return pfd.revents & (POLLHUP | POLLERR) ? -ESRCH : 0;
}

static int step_nnp(child_ctx *c)
{
	(void)c;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
}

static int step_workdir(child_ctx *c)
{
	c->what = c->plan->workdir;
	return chdir(c->plan->workdir) < 0 ? -errno : 0;
}

static int step_landlock(child_ctx *c)
{
	sync_msg m = {.type = SYNC_LAYERS};
	ll_status st = {0};
	int r = ll_apply(c->plan, c->exe_fd, &st);

	if (r < 0) {
		c->what = st.degraded[0] ? st.degraded : "landlock";
		return r;
	}
	m.value = st.abi;
	snprintf(m.what, sizeof(m.what), "fs=%d net=%d scoped=%d%s%.200s", st.fs, st.net, st.scoped,
		 st.degraded[0] ? " degraded: " : "", st.degraded);
	return sync_send(c->sync, &m, -1);
}

static int step_fds(child_ctx *c)
{
	/* Nothing but 0-2 crosses into the sandbox (sandcap(1), "run"), and
	 * a session's control channel into pid 1, which makes it close-on-exec
	 * again before it starts any command (core/init-session.c). */
	if (sys_close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return -errno;
	if (c->ctl_fd >= 0 && fcntl(c->ctl_fd, F_SETFD, 0) < 0)
		return -errno;
	return 0;
}

static int step_seccomp(child_ctx *c)
{
	int r = sf_apply(c->plan, &c->notify_fd);

	if (r >= 0 && c->notify_fd >= 0)
		c->layers |= LAYER_SECCOMP_NOTIFY;
	if (r >= 0)
		r = sf_apply_extra(c->plan); /* on top: the stricter answer wins */
	return r;
}

static const struct setup_step {
	const char *name;
	int (*fn)(child_ctx *c);
	unsigned layer; /* the sync_layer it puts in place, when it succeeds */
} setup_steps[] = {
    {"signals", step_signals},
    {"mounts", step_mounts, LAYER_MOUNTS}, /* host root: idmapped binds need it */
    {"hostname", step_hostname},
    {"network", step_network}, /* listener must be born in this netns */
    {"rlimits", step_rlimits, LAYER_RLIMITS},
    {"terminal", step_terminal},		 /* setsid before anything can take a tty */
    {"cgroup", step_cgroup},			 /* everything of the sandbox is charged */
    {"cgroupns", step_cgroupns, LAYER_CGROUPNS}, /* after joining the cgroup, so it is our root */
    {"userns", step_userns, LAYER_USERNS},	 /* from here on nothing maps to host root */
    {"bounding", step_bounding},		 /* needs CAP_SETPCAP: before setuid */
    {"identity", step_identity},		 /* caps: the next step clears them all */
    {"caps", step_caps, LAYER_CAPS},		 /* inheritable and ambient too */
    {"parent-death", step_parent_death},	 /* after the last credential change */
    {"no-new-privs", step_nnp, LAYER_NNP},	 /* must precede Landlock and seccomp */
    {"workdir", step_workdir},
    {"landlock", step_landlock, LAYER_LANDLOCK}, /* paths are sandbox paths now */
    {"fds", step_fds},
    {"seccomp", step_seccomp, LAYER_SECCOMP}, /* last: the filter need not allow setup */
};

/*
 * Unprivileged supervisor: the child was cloned with its user namespace
 * (which therefore owns the mount, pid, net, ipc and uts namespaces) and
 * holds every capability in it, and none outside. The supervisor writes
 * the id maps before "go", so everything here runs as the agent's ids.
 */
static const struct setup_step setup_steps_unpriv[] = {
    {"signals", step_signals},
    {"wait-go", step_wait_go},			  /* maps written, cgroup joined */
    {"mounts", step_mounts_unpriv, LAYER_MOUNTS}, /* files we create need mapped ids */
    {"hostname", step_hostname},
    {"network", step_network}, /* listener must be born in this netns */
    {"rlimits", step_rlimits, LAYER_RLIMITS},
    {"terminal", step_terminal},		 /* setsid before anything can take a tty */
    {"cgroupns", step_cgroupns, LAYER_CGROUPNS}, /* after joining the cgroup, so it is our root */
    {"bounding", step_bounding},		 /* needs CAP_SETPCAP in our user namespace */
    {"identity", step_identity_unpriv},
    {"caps", step_caps, LAYER_CAPS},	   /* no uid change clears them: capset does */
    {"parent-death", step_parent_death},   /* after the last credential change */
    {"no-new-privs", step_nnp, LAYER_NNP}, /* must precede Landlock and seccomp */
    {"workdir", step_workdir},
    {"landlock", step_landlock, LAYER_LANDLOCK}, /* paths are sandbox paths now */
    {"fds", step_fds},
    {"seccomp", step_seccomp, LAYER_SECCOMP}, /* last: the filter need not allow setup */
};

_Noreturn void child_main(child_ctx *c)
{
	const struct setup_step *steps = c->unpriv ? setup_steps_unpriv : setup_steps;
	size_t n = c->unpriv ? ELEMENTSOF(setup_steps_unpriv) : ELEMENTSOF(setup_steps);
	sync_msg m = {.type = SYNC_FAILED};
	int r;

	/* Unprivileged, clone3 made our user namespace. */
	c->layers = c->unpriv ? LAYER_USERNS : 0;
	c->notify_fd = -1;
	for (size_t i = 0; i < n; i++) {
		c->what = NULL;
		r = steps[i].fn(c);
		if (r >= 0) {
			c->layers |= steps[i].layer;
		} else {
			m.err = -r;
			m.layers = c->layers;
			snprintf(m.step, sizeof(m.step), "%s", steps[i].name);
			snprintf(m.what, sizeof(m.what), "%s", c->what ? c->what : "");
			(void)sync_send(c->sync, &m, -1);
			_exit(SC_EXIT_SETUP);
		}
	}
	/* What is in place, and the listener: sandbox.start is written from
	 * this, and before pid 1's exec, the listener's first record. */
	{
		sync_msg ready = {.type = SYNC_READY, .layers = c->layers};

		if (sync_send(c->sync, &ready, c->notify_fd) < 0)
			_exit(SC_EXIT_SETUP);
		if (c->notify_fd >= 0)
			(void)close(c->notify_fd);
	}
	/* pid 1 is exec'd fresh: none of the supervisor's memory crosses. */
	syscall(SYS_execveat, c->exe_fd, "", c->init_argv, c->envp, AT_EMPTY_PATH);
	m.err = errno;
	m.layers = c->layers;
	snprintf(m.step, sizeof(m.step), "exec-init");
	(void)sync_send(c->sync, &m, -1);
	_exit(SC_EXIT_SETUP);
}

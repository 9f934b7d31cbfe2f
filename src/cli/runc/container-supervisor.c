/* SPDX-License-Identifier: MIT */
/*
 * The container supervisor: forked twice by create (adopted by
 * containerd's shim), it starts the session, holds the process until
 * start, relays its stdio, answers start and kill on ROOT/ID/oci.sock, and
 * exits with the process's status. An exec's relay runs the same loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/fdpass.h"
#include "base/io.h"
#include "base/unix-addr.h"
#include "cli/runc/runc.h"

#define ANNOT_AUDIT "org.sandcap.audit"

int rc_send_console(const char *sock_path, int master)
{
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct iovec iov = {.iov_base = (void *)"/dev/ptmx", .iov_len = 9};
	const char *slash = strrchr(sock_path, '/');
	char dir[PATH_MAX];
	int r;

	if (s < 0)
		return -errno;
	/* DIR/NAME, so that a long path still fits a socket address */
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)snprintf(dir, sizeof(dir), "%.*s", (int)(slash - sock_path), sock_path) >=
		 sizeof(dir))
		return -ENAMETOOLONG;
	r = unix_connect_in(s, slash == sock_path ? "/" : dir, slash ? slash + 1 : sock_path);
	if (r < 0)
		return r;
	return fdpass_send(s, &iov, 1, &master, 1) < 0 ? -EIO : 0;
}

int rc_listen_ctl(const char *dir, int *ret)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	char path[PATH_MAX];
	int r;

	if (fd < 0)
		return -errno;
	if ((size_t)snprintf(path, sizeof(path), "%s/oci.sock", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	r = unix_bind_in(fd, dir, "oci.sock");
	if (r < 0)
		return r;
	if (chmod(path, 0600) < 0 || listen(fd, 16) < 0)
		return -errno;
	*ret = TAKE_FD(fd);
	return 0;
}

/* One request a connection: "start", "kill SIG" or "killall SIG". */
static void serve_ctl(csup *c)
{
	_cleanup_close_ int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	char buf[64], reply[128] = "ok";
	ssize_t n;
	int sig;

	if (fd < 0)
		return;
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (strcmp(buf, "start") == 0) {
		if (c->started)
			snprintf(reply, sizeof(reply), "container %s is running already", c->id);
		else if (sx_exec_go(&c->h) < 0)
			snprintf(reply, sizeof(reply), "container %s: its sandbox is gone", c->id);
		else {
			c->started = true;
			(void)rc_write_file(c->dir, "status", "running");
		}
	} else if (sscanf(buf, "kill %d", &sig) == 1 || sscanf(buf, "killall %d", &sig) == 1) {
		/* Before start, and for --all SIGKILL: the whole sandbox goes. */
		if (!c->started || (buf[4] == 'a' && sig == SIGKILL))
			(void)sc_session_stop(c->id, NULL);
		else if (sx_exec_signal(&c->h, sig) < 0)
			snprintf(reply, sizeof(reply), "container not running: %s", c->id);
	} else {
		snprintf(reply, sizeof(reply), "unknown request");
	}
	(void)send(fd, reply, strlen(reply), MSG_NOSIGNAL);
}

/* Copies what is there from one fd to another; false at end of file. */
static bool relay(int from, int to)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n < 0 && errno == EINTR)
		return true;
	if (n <= 0)
		return false;
	(void)io_write_all(to, buf, (size_t)n);
	return true;
}

/* Copies what from holds now, without waiting for its end of file. */
static void drain(int from, int to)
{
	int fl = from >= 0 ? fcntl(from, F_GETFL) : -1;

	if (fl < 0 || fcntl(from, F_SETFL, fl | O_NONBLOCK) < 0)
		return;
	while (relay(from, to))
		;
}

/* Until the process ends: start and kill requests, its stdio. */
int rc_supervise(csup *c)
{
	sx_result res = {0};
	int r;

	for (;;) {
		struct pollfd p[6] = {{c->listen_fd, POLLIN, 0},
				      {c->h.conn, POLLIN, 0},
				      {c->h.stdout_fd, POLLIN, 0},
				      {c->h.stderr_fd, POLLIN, 0},
				      {c->started ? c->in_fd : -1, POLLIN, 0},
				      {c->sig_fd, POLLIN, 0}};

		if (poll(p, 6, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[0].revents)
			serve_ctl(c);
		if (p[2].revents && !relay(c->h.stdout_fd, STDOUT_FILENO))
			c->h.stdout_fd = safe_close(c->h.stdout_fd);
		if (p[3].revents && !relay(c->h.stderr_fd, STDERR_FILENO))
			c->h.stderr_fd = safe_close(c->h.stderr_fd);
		if (p[4].revents && !relay(c->in_fd, c->h.stdin_fd)) {
			c->in_fd = -1;
			c->h.stdin_fd = safe_close(c->h.stdin_fd);
		}
		if (p[5].revents) {
			struct signalfd_siginfo si;

			if (read(c->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				(void)sx_exec_signal(&c->h, (int)si.ssi_signo);
		}
		if (p[1].revents)
			break;
	}
	r = sx_exec_wait(&c->h, &res);
	if (r < 0)
		rc_err("container %s: its session's supervisor ended before the process did (%s): "
		       "the sandbox ended with it",
		       c->id, strerror(-r));
	/* What it wrote before its end is in the pipes now; a child it left
	 * behind may hold them open for ever, so take only what is there
	 * (runc's pid 1 ends its namespace at once; the caller stops ours). */
	drain(c->h.stdout_fd, STDOUT_FILENO);
	drain(c->h.stderr_fd, STDERR_FILENO);
	return r < 0 ? SC_EXIT_SETUP : res.exit_code;
}

/* Standard input, output and error onto /dev/null. */
static int stdio_null(void)
{
	_cleanup_close_ int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (int i = 0; i < 3; i++)
		if (dup2(fd, i) < 0)
			return -errno;
	return 0;
}

_Noreturn void rc_become_supervisor(csup *c, const sc_plan *plan, const oci_process *proc,
				    const char *console, const char *digest, int ready)
{
	sc_session_start_opts so = {.plan = plan,
				    .name = c->id,
				    .policy_source = "config.json",
				    .policy_digest = digest,
				    .init_adopted = true};
	_cleanup_free_ char **argv = calloc(json_array_size(proc->args) + 1, sizeof(char *));
	_cleanup_free_ char **env = calloc(json_array_size(proc->env) + 1, sizeof(char *));
	sx_req q = {.argv = argv,
		    .env = env,
		    .cwd = strcmp(proc->cwd, "/") == 0 ? "/" : NULL,
		    .tty = proc->terminal,
		    .hold = true,
		    .rows = (unsigned short)proc->rows,
		    .cols = (unsigned short)proc->cols};
	sc_session_info info;
	sc_diag d = {0};
	json_t *v;
	char code[32], made[4 * PATH_MAX];
	size_t i;
	int r;

	const char *what;

	(void)setsid();
	if (!argv || !env)
		_exit(SC_EXIT_SETUP);
	json_array_foreach(proc->args, i, v) argv[i] = (char *)json_string_value(v);
	json_array_foreach(proc->env, i, v) env[i] = (char *)json_string_value(v);
	/* Before the session starts: its supervisor, the proxy worker and
	 * the sandbox inherit these (oci/pod.h). */
	r = plan->shared_ipc_uts ? oci_joins_enter(c->ns_fds, plan->hostname, c->new_net, &what)
				 : 0;
	if (r >= 0 && proc->has_oom_score_adj) {
		snprintf(code, sizeof(code), "%d", proc->oom_score_adj);
		what = "oom_score_adj";
		r = io_write_file_at(AT_FDCWD, "/proc/self/oom_score_adj", code);
	}
	if (r < 0) {
		dprintf(ready, "cannot enter the container's %s namespace: %s", what, strerror(-r));
		_exit(SC_EXIT_SETUP);
	}
	/* The sandbox's cgroup is made under ours: nested in cgroupsPath. */
	made[0] = '\0';
	r = c->cgroup[0] ? oci_cg()->enter(c->cgroup, made, sizeof(made)) : 0;
	if (r >= 0)
		r = rc_write_file(c->dir, "cgroups.made", made);
	if (r < 0) {
		dprintf(ready, "$.linux.cgroupsPath: cannot place the container in %s: %s",
			c->cgroup, strerror(-r));
		oci_cgroup_remove(made);
		_exit(SC_EXIT_SETUP);
	}
	r = sc_session_start(&so, &info, &d);
	if (r < 0) {
		dprintf(ready, "%s%s%s", d.path, d.path[0] ? ": " : "",
			d.message[0] ? d.message : strerror(-r));
		_exit(SC_EXIT_SETUP);
	}
	r = sx_exec(c->id, &q, &c->h, NULL, 0);
	if (r == 0 && proc->terminal) {
		r = console ? rc_send_console(console, c->h.pty_fd) : -EINVAL;
		c->h.pty_fd = safe_close(c->h.pty_fd);
		/* The pty is the process's stdio: what create was given must
		 * reach its end of file when create returns, as runc's does
		 * (containerd's shim waits for it before it takes the console). */
		if (r == 0)
			r = stdio_null();
	}
	if (r < 0) {
		dprintf(ready, "cannot prepare the process: %s",
			r == -EINVAL ? "process.terminal needs --console-socket" : strerror(-r));
		(void)sc_session_stop(c->id, NULL);
		_exit(SC_EXIT_SETUP);
	}
	{
		char path[4200], pids[96];
		json_t *state;
		int init = rc_init_pid(c->id);

		/* pid 1, the shim's (or conmon's) child: what it waits for. */
		r = init < 0 ? init : 0;
		snprintf(pids, sizeof(pids), "%d %llu %d", init, rc_proc_start(init),
			 (int)getpid());
		if (r >= 0)
			r = rc_write_file(c->dir, "pids", pids);
		snprintf(path, sizeof(path), "%s/state.json", c->dir);
		state = rc_read_json(path);
		(void)json_object_set_new(state, "pid", json_integer(init));
		(void)json_object_set_new(json_object_get(state, "annotations"), ANNOT_AUDIT,
					  json_string(info.audit_path));
		if (r >= 0 && json_dump_file(state, path, JSON_COMPACT) < 0)
			r = -EIO;
		json_decref(state);
	}
	if (r >= 0) {
		/* The sandbox's processes (pid 1 alone yet: the command is held)
		 * into the freezer of pause; a host without one cannot pause. */
		_cleanup_free_ pid_t *pids = NULL;
		char fz[OCI_CGROUP_PATH_MAX + 64];
		size_t n = 0, used = strlen(made);

		snprintf(fz, sizeof(fz), "%s", c->cgroup[0] ? c->cgroup : "sandcap-runc");
		if (!c->cgroup[0])
			snprintf(fz + strlen(fz), sizeof(fz) - strlen(fz), "/%s", c->id);
		if (rc_container_pids(c->id, &pids, &n) >= 0 &&
		    oci_cg()->freezer_join(fz, pids, n, made + used, sizeof(made) - used) >= 0)
			(void)rc_write_file(c->dir, "freezer", fz);
		(void)rc_write_file(c->dir, "cgroups.made", made);
		r = rc_write_file(c->dir, "status", "created");
	}
	if (r < 0) {
		dprintf(ready, "%s: cannot write the state: %s", c->dir, strerror(-r));
		(void)sc_session_stop(c->id, NULL);
		_exit(SC_EXIT_SETUP);
	}
	(void)io_write_all(ready, "ok", 2);
	(void)close(ready);
	r = rc_supervise(c);
	snprintf(code, sizeof(code), "stopped %d", r);
	(void)rc_write_file(c->dir, "status", code);
	(void)sc_session_stop(c->id, NULL);
	_exit(r);
}

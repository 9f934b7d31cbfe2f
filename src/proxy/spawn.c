/* SPDX-License-Identifier: MIT */
/*
 * Supervisor side: start the proxy worker. Secrets are read here and travel
 * only through a sealed memfd that the worker reads once and closes; the
 * worker is exec'd (not just forked) with an empty environment so that
 * neither the supervisor's environment nor its heap reaches a process that
 * parses hostile input (docs/architecture.md, "Processes").
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdpass.h"
#include "base/io.h"
#include "base/signals.h"
#include "compat/syscalls.h"
#include "proxy/proxy.h"
#include "proxy/programs.h"
#include "proxy/px.h"

/* The worker's fds (worker.c). Their sources are first copied to
 * PX_HIGH_FD and up, so that no dup2() onto a slot clobbers another. */
#define PX_FD_EVENTS 3
#define PX_FD_CONFIG 4
#define PX_FD_STATE  5
#define PX_FD_EXE    6
#define PX_HIGH_FD   16

/* jansson frees strings without clearing them: the key and values first. */
static void wipe_string(json_t *v)
{
	if (json_is_string(v))
		explicit_bzero((char *)json_string_value(v), json_string_length(v));
}

static void wipe_config(json_t *j)
{
	json_t *cr;
	size_t i;

	wipe_string(json_object_get(j, "ca_key"));
	json_array_foreach(json_object_get(j, "credentials"), i, cr)
	{
		wipe_string(json_object_get(cr, "value"));
		wipe_string(json_object_get(cr, "secret"));
	}
}

static int make_config_memfd(const sc_plan *plan, const px_extras *x, int *ret_fd)
{
	_cleanup_close_ int fd = -1;
	json_t *j = NULL;
	char *s;
	size_t len;
	int r;

	r = px_config_from_run(plan, x, &j);
	if (r < 0)
		return r;
	s = json_dumps(j, JSON_COMPACT);
	wipe_config(j);
	json_decref(j);
	if (!s)
		return -ENOMEM;
	len = strlen(s);
	fd = memfd_create("sandcap-proxy-config", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = io_write_all(fd, s, len);
	if (r < 0)
		goto out;
	/* nobody, the worker included, can change what the supervisor wrote */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		r = -errno;
		goto out;
	}
	*ret_fd = TAKE_FD(fd);
	r = 0;
out:
	explicit_bzero(s, len);
	free(s);
	return r;
}

static int make_state_memfd(int *ret_fd)
{
	_cleanup_close_ int fd =
	    memfd_create("sandcap-proxy-state", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)PX_STATE_SIZE) < 0)
		return -errno;
	/* a worker may write the counters, never change the size a successor maps */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int px_seed_new(const sc_plan *plan, int listen_fd, px_seed *ret)
{
	px_extras *x = NULL;
	int r = 0;

	/* a caller without a sandbox to show them: the worker gets its own */
	if (plan->n_egress > 0 && plan_inspects(plan))
		r = px_extras_new(plan, &x);
	if (r >= 0)
		r = px_seed_prepare(plan, x, ret);
	px_extras_free(x);
	if (r < 0) {
		(void)safe_close(listen_fd);
		return r;
	}
	r = px_seed_take_sockets(ret, listen_fd, NULL, 0);
	if (r < 0)
		px_seed_done(ret);
	return r;
}

int px_seed_prepare(const sc_plan *plan, px_extras *x, px_seed *ret)
{
	px_seed s = PX_SEED_NONE;
	int r;

	r = make_config_memfd(plan, x, &s.config_fd);
	/* sealed: a restarted worker reads the key from there, nobody else */
	px_extras_forget_key(x);
	if (r >= 0)
		r = make_state_memfd(&s.state_fd);
	if (r < 0) {
		px_seed_done(&s);
		return r;
	}
	*ret = s;
	return 0;
}

/*
 * A flood of refused attempts comes faster than a worker turn: a queue of
 * PX_ATTEMPT_RCVBUF keeps most of them itemised (root only: past
 * net.core.rmem_max); what the queue still drops is counted, not lost
 * (PACKET_STATISTICS, docs/proxy.md).
 */
#define PX_ATTEMPT_RCVBUF (4 << 20)

static void size_attempt_queue(int fd)
{
	int domain = 0, size = PX_ATTEMPT_RCVBUF;
	socklen_t len = sizeof(domain);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || domain != AF_PACKET)
		return;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

int px_seed_take_sockets(px_seed *s, int listen_fd, const int *fds, size_t n)
{
	int r = 0;

	if (listen_fd < 0 || s->config_fd < 0 || s->listen_fd >= 0) {
		(void)safe_close(listen_fd);
		fdpass_close(fds, n);
		return -EBADF;
	}
	s->listen_fd = listen_fd;
	for (size_t i = 0; i < n; i++) {
		size_attempt_queue(fds[i]);
		if (s->n_sockets >= PX_SEED_MAX_SOCKETS) {
			r = -E2BIG;
			(void)close(fds[i]);
		} else {
			s->sockets[s->n_sockets++] = fds[i];
		}
	}
	return r;
}

void px_seed_done(px_seed *s)
{
	s->listen_fd = safe_close(s->listen_fd);
	s->config_fd = safe_close(s->config_fd);
	s->state_fd = safe_close(s->state_fd);
	while (s->n_sockets > 0)
		(void)close(s->sockets[--s->n_sockets]);
}

/* After fork: async-signal-safe calls only. Never returns. */
_Noreturn static void child(const px_seed *seed, int ev_fd, int exe_fd)
{
	static char *const argv[] = {(char *)PX_PROGRAM, (char *)PX_WORKER_ARG, NULL};
	static char *const envp[] = {NULL};
	int e, c, st, x, null;

	(void)sgn_child_defaults();
	/* out of the supervisor's session: terminal signals are not for us */
	(void)setsid();
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);

	/* move everything above the target slots first, so no dup2 clobbers a source */
	e = fcntl(ev_fd, F_DUPFD_CLOEXEC, PX_HIGH_FD);
	c = fcntl(seed->config_fd, F_DUPFD_CLOEXEC, PX_HIGH_FD);
	st = fcntl(seed->state_fd, F_DUPFD_CLOEXEC, PX_HIGH_FD);
	x = fcntl(exe_fd, F_DUPFD_CLOEXEC, PX_HIGH_FD);
	if (e < 0 || c < 0 || st < 0 || x < 0)
		_exit(125);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		_exit(125);
	if (dup2(e, PX_FD_EVENTS) < 0 || dup2(c, PX_FD_CONFIG) < 0 || dup2(st, PX_FD_STATE) < 0 ||
	    dup3(x, PX_FD_EXE, O_CLOEXEC) < 0)
		_exit(125);
	if (sys_close_range(PX_FD_EXE + 1, ~0U, 0) < 0) {
		for (int fd = PX_FD_EXE + 1; fd < 1024; fd++)
			(void)close(fd);
	}
	(void)sys_execveat(PX_FD_EXE, "", argv, envp, AT_EMPTY_PATH);
	_exit(125);
}

int px_hand_sockets(const px_seed *seed, int event_fd)
{
	int fds[1 + PX_SEED_MAX_SOCKETS];
	char tag = 'S';
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	ssize_t n;

	if (seed->listen_fd < 0)
		return -EBADF;
	fds[0] = seed->listen_fd;
	memcpy(fds + 1, seed->sockets, seed->n_sockets * sizeof(int));
	n = fdpass_send(event_fd, &iov, 1, fds, 1 + seed->n_sockets);
	return n < 0 ? (int)n : 0;
}

int px_spawn(const px_seed *seed, pid_t *ret_pid, int *ret_event_fd)
{
	_cleanup_close_ int exe_fd = -1, ev0 = -1, ev1 = -1;
	int sv[2];
	pid_t pid;

	if (seed->config_fd < 0 || seed->state_fd < 0)
		return -EBADF;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	ev0 = sv[0];
	ev1 = sv[1];
	exe_fd = px_worker_exe_open();
	if (exe_fd < 0)
		return exe_fd;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child(seed, ev1, exe_fd);
	/* a restart: the sockets at once (queued until the worker asks) */
	if (seed->listen_fd >= 0) {
		int r = px_hand_sockets(seed, ev0);

		if (r < 0) {
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			return r;
		}
	}
	*ret_pid = pid;
	*ret_event_fd = TAKE_FD(ev0);
	return 0;
}

void px_worker_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, WNOHANG);
}

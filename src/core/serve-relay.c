/* SPDX-License-Identifier: MIT */
/*
 * net.serve from the supervisor's side (docs/proxy.md, "Serving"): the
 * host's listeners made before the clone, on 127.0.0.1 (or, "bind"
 * "0.0.0.0", every address of a container's own netns, a pod's), so that their
 * ports are known to sandbox.start and to the caller; the relay
 * ("sandcap-proxy relay", proxy/relay.h) started once the sandbox's
 * namespaces exist, given the listeners and the namespaces to join; its
 * net.inbound records checked and written; its last ones taken at the end.
 * The relay is not restarted: one that dies is recorded (serve.exit) and
 * the ports it served are closed, the sandbox goes on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "base/signals.h"
#include "compat/syscalls.h"
#include "core/supervisor-state.h"
#include "proxy/programs.h"
#include "proxy/relay.h"

#define RELAY_BACKLOG  128
#define RELAY_DRAIN_NS (500ULL * 1000000ULL)
#define RELAY_HIGH_FD  (RL_FD_LISTEN + POLICY_MAX_SERVE + 1)

static int listen_on(bool any_addr, uint16_t port, uint16_t *ret_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(any_addr ? INADDR_ANY : INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0)
		return -errno;
	/* a fixed port of an earlier run may linger in TIME_WAIT */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, RELAY_BACKLOG) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return -errno;
	*ret_port = ntohs(a.sin_port);
	return TAKE_FD(fd);
}

/* Only the caller knows a container's netns for its own (plan->own_netns);
 * pid 1's, where it may be looked at, is refused whatever it says. */
static bool netns_is_own(const sc_plan *p)
{
	struct stat self, init;

	if (!p->own_netns || stat("/proc/self/ns/net", &self) < 0)
		return false;
	return stat("/proc/1/ns/net", &init) < 0 || self.st_dev != init.st_dev ||
	       self.st_ino != init.st_ino;
}

/* {"PORT": "127.0.0.1:HOST_PORT"}: for sandbox.start, the mode, the caller. */
static json_t *serve_map(const supervisor *s)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < s->serve.n; i++) {
		char port[8], addr[32];

		snprintf(port, sizeof(port), "%u", s->plan->serve[i].port);
		snprintf(addr, sizeof(addr), "%s:%u",
			 s->plan->serve[i].any_addr ? "0.0.0.0" : "127.0.0.1",
			 s->serve.host_port[i]);
		(void)json_object_set_new(o, port, json_string(addr));
	}
	return o;
}

int sv_serve_prepare(supervisor *s)
{
	const sc_plan *p = s->plan;

	for (size_t i = 0; i < p->n_serve && i < POLICY_MAX_SERVE; i++) {
		const char *where = p->serve[i].any_addr ? "0.0.0.0" : "127.0.0.1";
		uint16_t got = 0;
		int fd;

		/* 0.0.0.0 of the host's netns would open the port to its networks */
		if (p->serve[i].any_addr && !netns_is_own(p))
			return diag_fail(s->diag, -EPERM, "serve",
					 "net.serve port %u: \"bind\": \"0.0.0.0\" is only for a "
					 "container in a network namespace of its own (a pod's, "
					 "docker's); this sandbox's supervisor is in the host's, "
					 "whose networks it would open the port to",
					 p->serve[i].port);
		fd = listen_on(p->serve[i].any_addr, p->serve[i].host_port, &got);
		if (fd < 0) {
			char want[16] = "a free port";

			if (p->serve[i].host_port)
				snprintf(want, sizeof(want), "port %u", p->serve[i].host_port);
			return diag_fail(s->diag, fd, "serve",
					 "net.serve port %u: cannot listen on %s (%s): %s",
					 p->serve[i].port, where, want, strerror(-fd));
		}
		s->serve.fds[i] = fd;
		s->serve.host_port[i] = got;
		s->serve.n = i + 1;
		if (s->o->on_serve)
			s->o->on_serve(s->o->serve_userdata, p->serve[i].port, got);
	}
	if (s->serve.n) {
		s->serve.map = serve_map(s);
		if (!s->serve.map)
			return diag_fail(s->diag, -ENOMEM, "serve", "out of memory");
	}
	return 0;
}

/* After fork: async-signal-safe calls only. Never returns. */
_Noreturn static void relay_child(const supervisor *s, int ev, int exe, int netns, int userns,
				  char **argv)
{
	static char *const envp[] = {NULL};
	int hi[3 + POLICY_MAX_SERVE], null;
	size_t n = s->serve.n;

	(void)sgn_child_defaults();
	(void)setsid();
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* every source above the target slots first, so no dup2 clobbers one */
	hi[0] = fcntl(ev, F_DUPFD_CLOEXEC, RELAY_HIGH_FD);
	hi[1] = fcntl(netns, F_DUPFD_CLOEXEC, RELAY_HIGH_FD);
	hi[2] = fcntl(userns, F_DUPFD_CLOEXEC, RELAY_HIGH_FD);
	for (size_t i = 0; i < n; i++)
		hi[3 + i] = fcntl(s->serve.fds[i], F_DUPFD_CLOEXEC, RELAY_HIGH_FD);
	exe = fcntl(exe, F_DUPFD_CLOEXEC, RELAY_HIGH_FD);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || exe < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		_exit(125);
	for (size_t i = 0; i < 3 + n; i++)
		if (hi[i] < 0 || dup2(hi[i], RL_FD_EVENTS + (int)i) < 0)
			_exit(125);
	/* the exe stays cloexec for execveat: it goes right after the listeners */
	if (dup3(exe, RL_FD_LISTEN + (int)n, O_CLOEXEC) < 0)
		_exit(125);
	exe = RL_FD_LISTEN + (int)n;
	if (sys_close_range((unsigned)exe + 1, ~0U, 0) < 0)
		for (int fd = exe + 1; fd < 1024; fd++)
			(void)close(fd);
	(void)sys_execveat(exe, "", argv, envp, AT_EMPTY_PATH);
	_exit(125);
}

static int open_ns(pid_t pid, const char *which)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, which);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* The relay, once the sandbox's namespaces exist: it joins them, and our
 * copies of the listeners are closed (the relay's are the only ones). */
int sv_serve_start(supervisor *s)
{
	_cleanup_close_ int exe = -1, netns = -1, userns = -1, ev0 = -1, ev1 = -1;
	char pidbuf[24], ports[POLICY_MAX_SERVE][16];
	char *argv[3 + POLICY_MAX_SERVE + 1];
	int sv[2], r;
	pid_t pid;

	if (s->serve.n == 0)
		return 0;
	exe = px_worker_exe_open();
	if (exe < 0)
		return diag_fail(s->diag, exe, "serve", "cannot start the serve relay: %s%s",
				 strerror(-exe), px_program_hint(exe));
	netns = open_ns(s->pid, "net");
	/* without root the sandbox's user namespace owns its netns */
	userns = s->unpriv ? open_ns(s->pid, "user") : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (netns < 0 || userns < 0) {
		r = netns < 0 ? netns : userns < 0 ? -errno : userns;
		return diag_fail(s->diag, r, "serve", "cannot open the sandbox's namespaces: %s",
				 strerror(-r));
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return diag_fail(s->diag, -errno, "serve", "socketpair: %s", strerror(errno));
	ev0 = sv[0];
	ev1 = sv[1];
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
	argv[0] = (char *)PX_PROGRAM;
	argv[1] = (char *)PX_RELAY_ARG;
	argv[2] = pidbuf;
	for (size_t i = 0; i < s->serve.n; i++) {
		snprintf(ports[i], sizeof(ports[i]), "%u:%u", s->plan->serve[i].port,
			 s->serve.host_port[i]);
		argv[3 + i] = ports[i];
	}
	argv[3 + s->serve.n] = NULL;
	pid = fork();
	if (pid < 0)
		return diag_fail(s->diag, -errno, "serve", "fork: %s", strerror(errno));
	if (pid == 0)
		relay_child(s, ev1, exe, netns, userns, argv);
	s->serve.pid = pid;
	s->serve.fd = TAKE_FD(ev0);
	for (size_t i = 0; i < s->serve.n; i++)
		s->serve.fds[i] = safe_close(s->serve.fds[i]);
	(void)sv_ep_add(s, s->serve.fd, EV_RELAY);
	return 0;
}

/* One record: 1, 0 when none waits, -EPIPE once the relay closed its end. */
static int relay_one(supervisor *s)
{
	_noinit_ char buf[PX_EVENT_MAX_BYTES + 1];
	_cleanup_free_ char *event = NULL;
	json_t *data = NULL;
	ssize_t n = recv(s->serve.fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n <= 0)
		return n == 0 || (errno != EAGAIN && errno != EINTR) ? -EPIPE : 0;
	if (px_event_parse(buf, (size_t)n, &event, &data) < 0)
		return 1; /* never trusted: ignored */
	/* it reports connections and their folding, nothing else */
	if (strcmp(event, "net.inbound") == 0 ||
	    (strcmp(event, "limit.hit") == 0 &&
	     strcmp(json_string_value(json_object_get(data, "limit")) ?: "", "net.inbound") == 0))
		(void)sv_emit(s, event, data);
	else
		json_decref(data);
	return 1;
}

static int relay_batch(supervisor *s)
{
	for (int i = 0; i < 64; i++) {
		int r = relay_one(s);

		if (r <= 0)
			return r;
	}
	return 0;
}

/* The relay ended: reaped, and recorded unless the run is ending anyway. */
static void relay_gone(supervisor *s, bool record)
{
	int status = 0;
	pid_t dead = s->serve.pid;

	(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->serve.fd, NULL);
	s->serve.fd = safe_close(s->serve.fd);
	if (dead <= 0)
		return;
	(void)kill(dead, SIGKILL);
	while (waitpid(dead, &status, 0) < 0 && errno == EINTR)
		;
	s->serve.pid = 0;
	if (record)
		(void)sv_emit(
		    s, "serve.exit",
		    json_pack("{s:i, s:o, s:i, s:s}", "pid", (int)dead, "status",
			      WIFEXITED(status) ? json_integer(WEXITSTATUS(status)) : json_null(),
			      "signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0, "action",
			      "the served ports are closed"));
}

void sv_serve_ready(supervisor *s)
{
	if (s->serve.fd >= 0 && relay_batch(s) == -EPIPE)
		relay_gone(s, !s->exited);
}

/* The sandbox is gone: the relay records what is still open and ends on
 * our shutdown; its last records are taken, bounded. */
void sv_serve_drain(supervisor *s)
{
	uint64_t deadline = sv_now_ns() + RELAY_DRAIN_NS;

	if (s->serve.fd < 0)
		return;
	(void)shutdown(s->serve.fd, SHUT_WR);
	while (s->serve.fd >= 0) {
		uint64_t t = sv_now_ns();
		struct pollfd p = {.fd = s->serve.fd, .events = POLLIN};

		if (t >= deadline || poll(&p, 1, (int)((deadline - t) / 1000000ULL) + 1) <= 0)
			break;
		if (relay_batch(s) < 0)
			break;
	}
	relay_gone(s, false);
}

void sv_serve_stop(supervisor *s)
{
	relay_gone(s, false);
	for (size_t i = 0; i < s->serve.n; i++)
		s->serve.fds[i] = safe_close(s->serve.fds[i]);
	s->serve.n = 0;
	json_decref(s->serve.map);
	s->serve.map = NULL;
}

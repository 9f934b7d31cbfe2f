/* SPDX-License-Identifier: MIT */
/*
 * The egress proxy worker, from the supervisor's side (docs/proxy.md): its
 * seed made before the clone (the sandbox CA, the placeholders) and the
 * worker started with it, handed its sockets when the child sends the
 * listener, its events checked and written, a worker that dies replaced
 * from the same seed, and its last events taken when the sandbox is gone;
 * the run's end does not wait for its exit (px_worker_stop).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "core/supervisor-state.h"
#include "proxy/programs.h"

#define MAX_EVENT_BYTES 65536
#define PROXY_DRAIN_NS	(500ULL * 1000000ULL) /* bound on the worker's last reports */

/* A worker on the seed, its events in the loop. */
static int proxy_worker_spawn(supervisor *s)
{
	int r = px_spawn(&s->proxy_seed, &s->proxy_pid, &s->proxy_fd);

	if (r >= 0)
		(void)sv_ep_add(s, s->proxy_fd, EV_PROXY);
	return r;
}

/* The worker's end: its event socket closed, then killed (one that lives
 * on without its socket is of no use; the status of one already exiting is
 * not changed by this) and reaped. Returns its pid; *ret_status its status. */
static pid_t proxy_worker_wait(supervisor *s, int *ret_status)
{
	pid_t dead = s->proxy_pid;

	if (s->proxy_fd >= 0)
		(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->proxy_fd, NULL);
	s->proxy_fd = safe_close(s->proxy_fd);
	(void)kill(dead, SIGKILL);
	while (waitpid(dead, ret_status, 0) < 0 && errno == EINTR)
		;
	s->proxy_pid = 0;
	return dead;
}

/* The sandbox CA for its trust bundle, the placeholders for its environment. */
int sv_proxy_prepare(supervisor *s)
{
	size_t n = 0;
	int r;

	ns_set_sandbox_ca(NULL);
	if (s->plan->n_egress == 0)
		return 0;
	r = px_extras_new(s->plan, &s->proxy_extras);
	if (r < 0)
		return diag_fail(s->diag, r, "proxy",
				 "cannot make the sandbox CA or placeholders: %s%s", strerror(-r),
				 px_program_hint(r));
	/* The worker starts now, while the sandbox is built, and gets its
	 * sockets when the child has made them (SYNC_LISTENER): its start-up
	 * is not on the way to the command's, nor its end's. */
	r = px_seed_prepare(s->plan, s->proxy_extras, &s->proxy_seed);
	if (r >= 0)
		r = px_spawn(&s->proxy_seed, &s->proxy_pid, &s->proxy_fd);
	if (r < 0)
		return diag_fail(s->diag, r, "proxy", "cannot start the egress proxy: %s%s",
				 strerror(-r), px_program_hint(r));
	ns_set_sandbox_ca(px_extras_ca_pem(s->proxy_extras));
	while (s->env[n])
		n++;
	for (size_t i = 0; px_extras_env(s->proxy_extras, i); i++) {
		if (n + 1 >= ELEMENTSOF(s->env))
			return diag_fail(s->diag, -E2BIG, "env", "too many environment variables");
		s->env[n++] = (char *)px_extras_env(s->proxy_extras, i);
	}
	s->env[n] = NULL;
	return 0;
}

/* The worker started in sv_proxy_prepare() takes the listener the child
 * made in the sandbox's netns and the sockets that come with it (taken).
 * One that cannot take them (it died) is replaced, from the seed, on its
 * EOF (proxy_lost). */
int sv_proxy_start(supervisor *s, int listener, const int *more, size_t n_more)
{
	int r = px_seed_take_sockets(&s->proxy_seed, listener, more, n_more);

	if (r >= 0 && px_hand_sockets(&s->proxy_seed, s->proxy_fd) < 0)
		(void)kill(s->proxy_pid, SIGKILL);
	if (r >= 0)
		(void)sv_ep_add(s, s->proxy_fd, EV_PROXY); /* the loop exists now */
	if (r < 0) {
		s->setup_failed = true;
		diag_fail(s->diag, r, "proxy", "cannot start the egress proxy: %s%s", strerror(-r),
			  px_program_hint(r));
		sv_kill_sandbox(s);
	}
	return r;
}

/* Bounds what a worker can make the supervisor hold: more than it ever has
 * connections open (PX_MAX_CONNS, a stream each). */
#define PX_OPEN_MAX 8192u

static void request_key(const json_t *data, char *key, size_t size)
{
	json_int_t id = json_integer_value(json_object_get(data, "id"));

	snprintf(key, size, "%lld", id > 0 ? (long long)id : 0LL);
}

/* A request the worker sends upstream next: held until its completion. */
static void request_opened(supervisor *s, const json_t *data)
{
	char key[24];
	json_t *copy;

	request_key(data, key, sizeof(key));
	if (strcmp(key, "0") == 0)
		return;
	if (!s->px_open)
		s->px_open = json_object();
	if (!s->px_open || json_object_size(s->px_open) >= PX_OPEN_MAX)
		return;
	copy = json_deep_copy(data);
	if (copy)
		(void)json_object_del(copy, "events_dropped");
	(void)json_object_set_new(s->px_open, key, copy);
}

static void request_closed(supervisor *s, const json_t *data)
{
	char key[24];

	if (!s->px_open || !json_object_get(data, "id"))
		return;
	request_key(data, key, sizeof(key));
	(void)json_object_del(s->px_open, key);
}

static int by_id(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "id"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "id"));

	return (x > y) - (x < y);
}

/*
 * The requests whose worker ended before it reported them (killed, or the
 * run ended with them in flight): each gets the completion record the
 * worker could not send, from what its net.request.start said, in id order.
 */
static void complete_open_requests(supervisor *s, const char *reason)
{
	_cleanup_free_ json_t **open = NULL;
	const char *key;
	json_t *v;
	size_t n = 0;

	if (!s->px_open || json_object_size(s->px_open) == 0)
		return;
	open = calloc(json_object_size(s->px_open), sizeof(*open));
	if (!open)
		return;
	json_object_foreach(s->px_open, key, v) open[n++] = json_incref(v);
	json_object_clear(s->px_open);
	qsort(open, n, sizeof(*open), by_id);
	for (size_t i = 0; i < n; i++) {
		json_t *d = open[i];

		(void)json_object_set_new(d, "decision", json_string("allow"));
		(void)json_object_set_new(d, "reason", json_string(reason));
		(void)json_object_set_new(d, "status", json_integer(0));
		(void)json_object_set_new(d, "completed", json_false());
		(void)sv_emit(s, "net.request", d);
	}
}

/* One event: 1, 0 when none is waiting, -EPIPE once the worker has closed
 * its end. */
static int handle_proxy_one(supervisor *s)
{
	/* 64 KiB per event: recv() fills what is read, nothing else is read. */
	_noinit_ char buf[MAX_EVENT_BYTES];
	_cleanup_free_ char *event = NULL;
	json_t *data = NULL;
	ssize_t n = recv(s->proxy_fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->proxy_fd, NULL);
			return -EPIPE;
		}
		return 0;
	}
	if (px_event_parse(buf, (size_t)n, &event, &data) < 0)
		return 1; /* a worker that speaks nonsense is ignored, never trusted */
	/* Counted where every record is: the run's tally (sv_emit). */
	if (strcmp(event, "net.request") == 0)
		request_closed(s, data);
	else if (strcmp(event, "net.request.start") == 0)
		request_opened(s, data);
	(void)sv_emit(s, event, data);
	return 1;
}

/* A batch per wake-up, bounded: a worker past its queue waits for us
 * (backpressure), and one system call of epoll per record would slow it. */
static int handle_proxy(supervisor *s)
{
	for (int i = 0; i < 64; i++) {
		int r = handle_proxy_one(s);

		if (r <= 0)
			return r;
	}
	return 0;
}

/*
 * The worker closed its event socket while the sandbox runs: it died (or
 * gave up its socket, which ends it too). Record how, then start another on
 * the same listener, with the same configuration and the counters the dead
 * one left (docs/proxy.md, "A worker that dies"); after PX_MAX_RESTARTS,
 * stop the sandbox: without its proxy it has no network and no record.
 */
static void proxy_lost(supervisor *s)
{
	int status = 0, r = -ECHILD;
	pid_t dead = proxy_worker_wait(s, &status);
	bool restart;

	complete_open_requests(s, "proxy-exit");
	restart = !s->exited && s->res->proxy_restarts < PX_MAX_RESTARTS;
	if (restart)
		r = proxy_worker_spawn(s);
	sv_emit(s, "proxy.exit",
		json_pack("{s:i, s:o, s:i, s:i, s:s}", "pid", (int)dead, "status",
			  WIFEXITED(status) ? json_integer(WEXITSTATUS(status)) : json_null(),
			  "signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0, "restarts",
			  (int)s->res->proxy_restarts + (r >= 0), "action",
			  r >= 0      ? "restarted on the same listener"
			  : restart   ? "cannot start another worker: stopping the sandbox"
			  : s->exited ? "the sandbox had ended"
				      : "restart limit reached: stopping the sandbox"));
	if (r >= 0) {
		s->res->proxy_restarts++;
		return;
	}
	if (!s->exited) {
		s->res->proxy_failed = true;
		sv_kill_sandbox(s);
	}
}

/*
 * The sandbox is gone: ask the worker to close and report what is still
 * open (shutdown of our end), and take its last events before sandbox.exit,
 * bounded so that a stuck worker cannot hold the run.
 */
void sv_proxy_drain(supervisor *s)
{
	uint64_t deadline = sv_now_ns() + PROXY_DRAIN_NS;

	/* No successor now: the last copies of the sandbox's sockets are the
	 * worker's, whose exit the run does not wait for (px_worker_stop). */
	px_seed_done(&s->proxy_seed);
	if (s->proxy_fd >= 0)
		(void)shutdown(s->proxy_fd, SHUT_WR);
	while (s->proxy_fd >= 0) {
		uint64_t t = sv_now_ns();
		struct pollfd p = {.fd = s->proxy_fd, .events = POLLIN};

		if (t >= deadline || poll(&p, 1, (int)((deadline - t) / 1000000ULL) + 1) <= 0)
			break;
		if (handle_proxy(s) < 0)
			break;
	}
	complete_open_requests(s, "sandbox-ended");
}

void sv_proxy_ready(supervisor *s)
{
	if (s->proxy_fd >= 0 && handle_proxy(s) == -EPIPE)
		proxy_lost(s);
}

void sv_proxy_stop(supervisor *s)
{
	/* EOF on its event socket ends the worker; make sure, without waiting
	 * for its exit (px_worker_stop): the run's end is not the worker's. */
	if (s->proxy_pid > 0) {
		if (s->proxy_fd >= 0)
			(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->proxy_fd, NULL);
		s->proxy_fd = safe_close(s->proxy_fd);
		px_worker_stop(s->proxy_pid);
		s->proxy_pid = 0;
	}
	(void)safe_close(s->proxy_fd);
	json_decref(s->px_open);
	px_seed_done(&s->proxy_seed);
	ns_set_sandbox_ca(NULL);
	s->proxy_extras = px_extras_free(s->proxy_extras);
}

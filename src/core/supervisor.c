/* SPDX-License-Identifier: MIT */
/*
 * The supervisor base (core/supervisor.h): sc_run() plans, sets up,
 * supervises and finishes a sandbox, the mode's hooks called at their
 * moments; the other phases' files are listed in supervisor-state.h.
 * Supervision is one epoll loop in the host's namespaces: pid 1's end, the
 * signals to us, the wall clock and the grace, the samples, the setup
 * child's messages, the proxy worker, the pty, the file watch, the
 * delegation socket and the mode's own fds. Every byte from the child, the
 * seccomp listener and the proxy worker is treated as hostile.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "base/io.h"
#include "base/pages.h"
#include "base/signals.h"
#include "compat/syscalls.h"
#include "core/supervisor-state.h"

#define GRACE_NS (3ULL * 1000000000ULL) /* after SIGINT/SIGTERM, before SIGKILL */

/*
 * A signal asks the run to end: the sandbox gets it (pid 1 passes it on to
 * the command) and GRACE_NS to end, then it is killed. Another signal
 * meanwhile (a second Ctrl-C) ends it at once.
 */
static void stop_sandbox(supervisor *s, int sig)
{
	if (s->res->stop_signal) {
		if (!sv_pid1_exited(s)) {
			s->res->forced_kill = true;
			sv_kill_sandbox(s);
		}
		return;
	}
	s->res->stop_signal = sig;
	if (s->pidfd >= 0)
		(void)sys_pidfd_send_signal(s->pidfd, sig);
	sv_arm(s->gracefd, GRACE_NS);
}

static void handle_signal(supervisor *s)
{
	struct signalfd_siginfo si;

	if (io_read_exact(s->sigfd, &si, sizeof(si)) < 0)
		return;
	if (si.ssi_signo == SIGWINCH) {
		pty_resize(s->pty);
		return;
	}
	/* SIGCHLD: the pidfd tells us about pid 1; other children are
	 * reaped at exit. */
	switch (sgn_judge(&si)) {
	case SGN_STOP:
		stop_sandbox(s, (int)si.ssi_signo);
		break;
	case SGN_CRASH:
		sgn_crash((int)si.ssi_signo);
	case SGN_IGNORE:
	case _SGN_VERDICT_MAX:
	case _SGN_VERDICT_INVALID:
		break;
	}
}

/*
 * audit.sample_interval (docs/audit.md, res.sample): the cgroup's CPU
 * time, memory and tasks now, and the bytes through the proxy so far (the
 * requests and tunnels that ended), one record per tick. A field the
 * kernel does not give is left out.
 */
static void sample(supervisor *s)
{
	const au_tally *t = &s->res->tally;
	json_t *d;
	cg_stats st;

	if (!s->start_written || s->exited || s->audit_stopped)
		return;
	d = json_pack("{s:I, s:I}", "bytes_out", (json_int_t)t->bytes_out, "bytes_in",
		      (json_int_t)t->bytes_in);
	if (!d)
		return;
	if (s->cg && cg_read_stats(s->cg, &st) >= 0) {
		const struct {
			const char *name;
			uint64_t v;
		} f[] = {
		    {"cpu_ns", st.cpu_usage_ns},   {"throttled_ns", st.throttled_ns},
		    {"memory", st.memory_current}, {"pids", st.pids_current},
		    {"oom_kills", st.oom_kills},
		};

		for (size_t i = 0; i < ELEMENTSOF(f); i++)
			if (f[i].v != UINT64_MAX && f[i].v <= INT64_MAX)
				(void)json_object_set_new(d, f[i].name,
							  json_integer((json_int_t)f[i].v));
	}
	(void)sv_emit(s, "res.sample", d);
}

/* A timer's expiry count: read so that it stops waking us. */
static void timer_read(int tfd)
{
	uint64_t ticks;

	(void)!read(tfd, &ticks, sizeof(ticks));
}

static void handle_event(supervisor *s, const struct epoll_event *ev)
{
	int fd = (int)(uint32_t)ev->data.u64;

	switch ((uint32_t)(ev->data.u64 >> 32)) {
	case EV_SYNC:
		if (s->sync >= 0)
			sv_handle_sync(s);
		break;
	case EV_PIDFD:
		(void)sv_pid1_exited(s);
		break;
	case EV_SIGNAL:
		handle_signal(s);
		break;
	case EV_WALL:
		timer_read(s->wallfd);
		/* A supervisor held (SIGSTOP) past the deadline sees the timer
		 * and pid 1's end at once: a command that ended by itself is no
		 * timeout. */
		if (sv_pid1_exited(s))
			break;
		s->res->timed_out = true;
		sv_kill_sandbox(s);
		break;
	case EV_SAMPLE:
		timer_read(s->samplefd);
		sample(s);
		break;
	case EV_SYNCED:
		sv_sync_reap(s);
		break;
	case EV_GRACE:
		timer_read(s->gracefd);
		if (!sv_pid1_exited(s)) {
			s->res->forced_kill = true;
			sv_kill_sandbox(s);
		}
		break;
	case EV_NOTIFY:
		if (ev->events & EPOLLIN)
			(void)sf_notify_handle(s->notify_fd, &s->walls, sv_on_event, s);
		else if (ev->events & (EPOLLHUP | EPOLLERR))
			/* Every process under the filter is gone; the hangup
			 * would otherwise wake us until the end. */
			(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->notify_fd, NULL);
		break;
	case EV_PROXY:
		sv_proxy_ready(s);
		break;
	case EV_RELAY:
		sv_serve_ready(s);
		break;
	case EV_FSWATCH:
		if (fw_handle(s->fw, sv_on_event, s) < 0)
			(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, fw_fd(s->fw), NULL);
		break;
	case EV_SPAWN:
		spawn_server_dispatch(s->spawn);
		break;
	case EV_MODE:
		if (SV_HOOK(s, on_fd_ready))
			s->o->mode->on_fd_ready(s->o->mode_data, fd, ev->events);
		break;
	case EV_PTY:
		if (pty_pump(s->pty, fd) < 0)
			(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
		break;
	default:
		break;
	}
}

static int event_loop(supervisor *s)
{
	while (!s->exited) {
		struct epoll_event evs[16];
		int n = epoll_wait(s->ep, evs, 16, sv_checkpoint_timeout_ms(s));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++)
			handle_event(s, &evs[i]);
	}
	return 0;
}

/* A setup step the supervisor runs failed (diag says which and why): the
 * child, if there is one, dies before it runs anything of the sandbox. */
static int refused(supervisor *s, int err)
{
	s->setup_failed = true;
	sv_kill_sandbox(s);
	return err;
}

/* sc_host.emit */
static int host_emit(void *userdata, const char *event, json_t *data)
{
	return sv_emit(userdata, event, data);
}

/* sc_host.start_wall */
static void host_start_wall(void *userdata)
{
	supervisor *s = userdata;

	if (s->plan->wall_ns != PLAN_UNLIMITED)
		sv_arm(s->wallfd, s->plan->wall_ns);
}

/* sc_host.set_wall */
static void host_set_wall(void *userdata, uint64_t ns)
{
	supervisor *s = userdata;

	sv_arm(s->wallfd, ns ? ns : 1);
}

/* sc_host.hold_wall */
static uint64_t host_hold_wall(void *userdata)
{
	supervisor *s = userdata;
	struct itimerspec its = {0}, off = {0};

	if (s->wallfd < 0 || timerfd_gettime(s->wallfd, &its) < 0 ||
	    (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0))
		return UINT64_MAX;
	(void)timerfd_settime(s->wallfd, 0, &off, NULL);
	return (uint64_t)its.it_value.tv_sec * 1000000000ULL + (uint64_t)its.it_value.tv_nsec;
}

/* sc_host.init_exit */
static void host_init_exit(void *userdata, int code)
{
	supervisor *s = userdata;

	if (code >= 0 && code <= 255)
		s->init_code = code;
}

/* audit.sample_interval: without a timer the run goes on, unsampled. */
static void start_sampling(supervisor *s)
{
	uint64_t ns = s->plan->audit_sample_ns;
	struct timespec t = {.tv_sec = (time_t)(ns / 1000000000ULL),
			     .tv_nsec = (long)(ns % 1000000000ULL)};
	struct itimerspec its = {.it_value = t, .it_interval = t};

	if (!ns || ns == PLAN_UNLIMITED)
		return;
	s->samplefd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->samplefd >= 0 && (timerfd_settime(s->samplefd, 0, &its, NULL) < 0 ||
				 sv_ep_add(s, s->samplefd, EV_SAMPLE) < 0))
		s->samplefd = safe_close(s->samplefd);
}

/* What the mode is lent while the sandbox lives. */
static void start_mode(supervisor *s)
{
	sc_host h = {.ep = s->ep,
		     .tag = EV_MODE,
		     .ctl = TAKE_FD(s->ctl),
		     .pid = s->pid,
		     .cg = s->cg,
		     .sandbox_id = s->res->sandbox_id,
		     .audit_path = s->res->audit_path,
		     .ws = s->ws,
		     .serve = s->serve.map,
		     .emit = host_emit,
		     .start_wall = host_start_wall,
		     .set_wall = host_set_wall,
		     .hold_wall = host_hold_wall,
		     .init_exit = host_init_exit,
		     .userdata = s};

	if (SV_HOOK(s, on_started))
		s->o->mode->on_started(s->o->mode_data, &h);
	else
		(void)safe_close(h.ctl);
}

/* pid 1 never started and the child did not say why (killed during
 * setup): a refusal, never the status of a command that did not run. */
static void unexplained_setup_end(supervisor *s)
{
	int st = s->wait_status;

	if (s->ready || s->setup_failed)
		return;
	s->setup_failed = true;
	if (WIFSIGNALED(st))
		diag_fail(s->diag, -ECHILD, "setup",
			  "the sandbox child was killed by signal %d during setup", WTERMSIG(st));
	else
		diag_fail(s->diag, -ECHILD, "setup",
			  "the sandbox child exited with status %d during setup", WEXITSTATUS(st));
}

/* Until pid 1 is gone; then what it, the mode and the proxy said last. */
static void supervise(supervisor *s)
{
	if (s->plan->wall_ns != PLAN_UNLIMITED && !s->o->defer_wall)
		sv_arm(s->wallfd, s->plan->wall_ns);
	(void)sv_ep_add(s, s->sync, EV_SYNC);
	(void)sv_ep_add(s, s->pidfd, EV_PIDFD);
	(void)sv_ep_add(s, s->sigfd, EV_SIGNAL);
	(void)sv_ep_add(s, s->wallfd, EV_WALL);
	(void)sv_ep_add(s, s->gracefd, EV_GRACE);
	start_sampling(s);
	if (s->spawn)
		(void)sv_ep_add(s, spawn_server_fd(s->spawn), EV_SPAWN);
	start_mode(s);
	/* The sandbox runs: what setup used is not needed for the wait. */
	pages_trim();
	(void)event_loop(s);
	if (SV_HOOK(s, on_sandbox_gone))
		s->o->mode->on_sandbox_gone(s->o->mode_data, s->res->timed_out);
	sv_stop_listener(s);
	sv_pid1_settle(s); /* the mode has read what pid 1 said last */
	/* Drain what the child said before dying (e.g. SYNC_FAILED). */
	while (s->sync >= 0)
		sv_handle_sync(s);
	pty_drain(s->pty);
	sv_proxy_drain(s);
	sv_serve_drain(s);
	sv_agent_events_end(s);
	unexplained_setup_end(s);
}

int sc_run(const sc_run_opts *o, sc_run_result *res, sc_diag *diag)
{
	supervisor s = {.o = o,
			.plan = o->plan,
			.res = res,
			.diag = diag,
			.ep = -1,
			.sync = -1,
			.pidfd = -1,
			.sigfd = -1,
			.wallfd = -1,
			.gracefd = -1,
			.samplefd = -1,
			.synced_fd = -1,
			.notify_fd = -1,
			.proxy_fd = -1,
			.proxy_seed = PX_SEED_NONE,
			.serve = {.fd = -1},
			.exe_fd = -1,
			.child_sync = -1,
			.ctl = -1,
			.child_ctl = -1,
			.init_procfd = -1,
			.init_code = -1,
			.emit_lock = PTHREAD_MUTEX_INITIALIZER};
	int r;

	res->memory_peak = UINT64_MAX;
	snprintf(res->cgroup, sizeof(res->cgroup), "none");
	dn_init(&s.denials, sv_emit_denial, &s);

	/* Plan (the id, the mode, what pid 1 gets), set up on the host, clone,
	 * hand off; supervise while pid 1 lives; finish the log, tear down. */
	r = sv_prepare(&s);
	if (r >= 0)
		r = sv_host_setup(&s);
	if (r >= 0)
		r = sv_start_child(&s);
	if (r >= 0 && (r = sv_hand_off(&s)) < 0)
		(void)refused(&s, r);
	if (s.pid > 0)
		supervise(&s);
	r = sv_finish(&s, r);
	sv_teardown(&s);
	dn_done(&s.denials);
	return r;
}

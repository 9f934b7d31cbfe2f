/* SPDX-License-Identifier: MIT */
/*
 * What the kernel reports of the agent, into the log: the seccomp
 * listener's execs and refused calls (src/seccomp/notify.c, a thread of its
 * own where it can end by itself), the file watches' writes and reads. The
 * refusals are folded (core/denials.h), a raw socket is a direct network
 * attempt (attempt-raw.c), and the listener waits for room in the log's
 * pace before it records the next exec.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#include "core/supervisor-state.h"
#include "core/sync.h"
#include "landlock/landlock.h"

/* dn_emit_fn: a record of the listener's thread, under emit_lock. */
int sv_emit_denial(void *userdata, const char *event, json_t *data)
{
	return sv_emit_locked(userdata, event, data);
}

int sv_on_event(const char *event, json_t *data, void *userdata)
{
	supervisor *s = userdata;
	int r;

	sv_pace_wait(s);
	pthread_mutex_lock(&s->emit_lock);
	if (strcmp(event, "syscall.denied") == 0 && s->plan->n_egress > 0) {
		json_t *denied, *limit;

		/* a raw socket is a direct attempt: recorded as such, rate-limited */
		r = px_raw_socket_event(&s->raw_sockets, data, sv_now_ns(), &denied, &limit);
		if (r != 0) {
			json_decref(data);
			if (limit && (r = sv_emit_locked(s, "limit.hit", limit)) < 0)
				json_decref(denied);
			else if (denied)
				r = sv_emit_locked(s, "net.denied", denied);
			pthread_mutex_unlock(&s->emit_lock);
			return r < 0 ? r : 0;
		}
	}
	if (strcmp(event, "syscall.denied") == 0) {
		r = dn_syscall_denied(&s->denials, data, sv_now_ns());
	} else if (strcmp(event, "fs.denied") == 0) {
		r = dn_fs_denied(&s->denials, data, sv_now_ns());
	} else if (strcmp(event, "proc.exec") == 0 && au_exec_failed(data)) {
		r = dn_exec_failed(&s->denials, data, sv_now_ns());
	} else {
		r = sv_emit_locked(s, event, data);
	}
	pthread_mutex_unlock(&s->emit_lock);
	return r;
}

/*
 * The seccomp listener gets a thread of its own, blocked in NOTIF_RECV: a
 * notification's round trip then costs no trip through our event loop.
 * Only on Linux 6.6 and later: before, NOTIF_RECV keeps waiting after the
 * last process under the filter is gone (6.6 made it return ENOENT), so
 * the thread could never end. Otherwise the event loop serves the
 * listener, and sees the hang-up with poll.
 */
void sv_start_listener(supervisor *s, int fd)
{
	size_t n = ll_writable(s->plan, s->writable, SF_MAX_WRITABLE);

	/* Landlock's status begins "fs=1" when it confines files (child.c,
	 * step_landlock). */
	s->walls = (sf_walls){
	    .landlock = (s->layers & LAYER_LANDLOCK) && strncmp(s->landlock, "fs=1", 4) == 0,
	    .n_writable = n,
	    .writable = s->writable,
	};
	if (sf_listener_start(fd, &s->walls, sv_on_event, s, &s->listener) < 0) {
		s->notify_fd = fd;
		(void)sv_ep_add(s, s->notify_fd, EV_NOTIFY);
	}
}

/* The listener's last records go in before anything that follows the
 * sandbox's end. Its thread returns once no process carries the filter:
 * pid 1 reaped (its death took the whole pid namespace with it). */
void sv_stop_listener(supervisor *s)
{
	if (!s->listener)
		return;
	if (!s->exited) {
		sv_kill_sandbox(s);
		sv_pid1_wait(s);
	}
	(void)sf_listener_stop(s->listener);
	s->listener = NULL;
}

void sv_agent_events_end(supervisor *s)
{
	uint64_t n = px_attempt_report(&s->raw_sockets, sv_now_ns(), true);

	if (n)
		(void)sv_emit(s, "limit.hit", px_attempt_limit_record(n, false));
	pthread_mutex_lock(&s->emit_lock);
	(void)dn_flush(&s->denials, sv_now_ns(), true);
	pthread_mutex_unlock(&s->emit_lock);
}

/* SPDX-License-Identifier: MIT */
/*
 * What every phase of the supervisor does to the sandbox and its loop
 * (supervisor-state.h): the clock, an fd into the loop, a timer armed, the
 * sandbox killed, pid 1's end taken once.
 */
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>

#include "compat/syscalls.h"
#include "core/supervisor-state.h"

uint64_t sv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int sv_ep_add(supervisor *s, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)tag << 32 | (uint32_t)fd};

	return epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void sv_kill_sandbox(supervisor *s)
{
	if (s->pidfd >= 0)
		(void)sys_pidfd_send_signal(s->pidfd, SIGKILL);
	if (s->cg)
		(void)cg_kill_all(s->cg);
}

void sv_arm(int tfd, uint64_t ns)
{
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(ns / 1000000000ULL),
					      .tv_nsec = (long)(ns % 1000000000ULL)}};

	(void)timerfd_settime(tfd, 0, &its, NULL);
}

/* pid 1 has ended: its status taken, once. */
bool sv_pid1_exited(supervisor *s)
{
	siginfo_t si = {0};

	if (!s->exited && waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOHANG) == 0 &&
	    si.si_pid) {
		s->exited = true;
		s->wait_status =
		    si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : (si.si_status & 0x7f);
	}
	return s->exited;
}

/* SPDX-License-Identifier: MIT */
/*
 * What every phase of the supervisor does to the sandbox and its loop
 * (supervisor-state.h): the clock, an fd into the loop, a timer armed, the
 * sandbox killed, pid 1's end taken once.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
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

/* init_adopted: the wait status of pid 1's zombie (/proc/PID/stat's
 * exit_code, proc(5)), or -1 once its parent has reaped it. */
static int zombie_status(int procfd)
{
	char buf[1024], *p;
	ssize_t n;
	int fd = procfd >= 0 ? openat(procfd, "stat", O_RDONLY | O_CLOEXEC) : -1;
	unsigned field = 2;
	long code;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold anything */
	if (!p || p[1] != ' ' || p[2] != 'Z')
		return -1;
	for (p += 2; field < 52 && (p = strchr(p, ' ')); field++)
		p++;
	if (!p)
		return -1;
	code = strtol(p, NULL, 10);
	return code >= 0 && code <= 0xffff ? (int)code : -1;
}

/* pid 1's end, adopted: the pidfd is readable once it has exited. */
static bool adopted_exited(supervisor *s, int timeout_ms)
{
	struct pollfd p = {.fd = s->pidfd, .events = POLLIN};

	while (poll(&p, 1, timeout_ms) < 0)
		if (errno != EINTR)
			return false;
	if (!(p.revents & (POLLIN | POLLHUP)))
		return false;
	s->exited = true;
	s->wait_status = zombie_status(s->init_procfd);
	s->init_procfd = safe_close(s->init_procfd);
	return true;
}

static bool pid1_end(supervisor *s, bool block)
{
	siginfo_t si = {0};

	if (s->exited)
		return true;
	if (s->o->init_adopted)
		return adopted_exited(s, block ? -1 : 0);
	while (waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED | (block ? 0 : WNOHANG)) < 0)
		if (errno != EINTR || !block)
			return false;
	if (!si.si_pid)
		return false;
	s->exited = true;
	s->wait_status =
	    si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : (si.si_status & 0x7f);
	return true;
}

/* pid 1 has ended: its status taken, once. */
bool sv_pid1_exited(supervisor *s)
{
	return pid1_end(s, false);
}

void sv_pid1_wait(supervisor *s)
{
	(void)pid1_end(s, true);
	s->exited = true;
}

void sv_pid1_settle(supervisor *s)
{
	if (!s->o->init_adopted || !s->exited || s->wait_status >= 0)
		return;
	if (s->init_code >= 0) {
		s->wait_status = (s->init_code & 0xff) << 8;
		return;
	}
	/* Nothing said and nothing left to read: a signal it could not take. */
	s->wait_status = SIGKILL;
	s->status_presumed = true;
}

/* SPDX-License-Identifier: MIT */
#include "base/signals.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "compat/syscalls.h"

void sgn_taken_set(sigset_t *set)
{
	/* Their default ends nothing (SIGCONT's continuing cannot be held
	 * back anyway); a caller that wants SIGCHLD or SIGWINCH adds it. */
	static const int left[] = {SIGKILL, SIGSTOP, SIGCONT, SIGURG, SIGCHLD, SIGWINCH};

	/* glibc leaves out the signals it uses for threads itself. */
	sigfillset(set);
	for (size_t i = 0; i < sizeof(left) / sizeof(left[0]); i++)
		sigdelset(set, left[i]);
}

static int is_fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGTRAP || sig == SIGSYS;
}

sgn_verdict sgn_judge(const struct signalfd_siginfo *si)
{
	int sig = (int)si->ssi_signo;

	switch (sig) {
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
		/* A stopped supervisor would leave its sandbox running on,
		 * unwatched. */
	case SIGCHLD:
	case SIGWINCH:
	case SIGURG:
	case SIGCONT:
		/* systemd and timeout(1) send SIGCONT right after SIGTERM:
		 * it must not count as a second request. */
		return SGN_IGNORE;
	case SIGPIPE:
		/* Our own write to a closed pipe, which EPIPE reports. */
		if (si->ssi_code == SI_USER && si->ssi_pid == (uint32_t)getpid())
			return SGN_IGNORE;
		return SGN_STOP;
	default:
		/* Another process sends SI_USER (kill), SI_TKILL or a negative
		 * code (rt_sigqueueinfo refuses the others): a positive code
		 * is the kernel's. Its faults are mostly forced and never reach
		 * the signalfd (the kernel unblocks them and takes the
		 * default); one that does (a machine check's SIGBUS) ends us as
		 * it would have. */
		return is_fault(sig) && si->ssi_code > 0 ? SGN_CRASH : SGN_STOP;
	}
}

_Noreturn void sgn_crash(int sig)
{
	struct sigaction sa = {.sa_handler = SIG_DFL};
	sigset_t one;

	(void)sigaction(sig, &sa, NULL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	(void)sigprocmask(SIG_UNBLOCK, &one, NULL);
	(void)raise(sig);
	__builtin_trap(); /* not reached: the default of a fault ends us */
}

void sgn_libc_own_ignore(void)
{
	for (int sig = 32; sig < SIGRTMIN; sig++) {
		struct sys_kernel_sigaction old, ign = {.handler = SIG_IGN};

		/* glibc has its handler on 33 (SIGSETXID), which ignores
		 * what it did not send itself; 32 (SIGCANCEL) has one only
		 * after a pthread_cancel(), which we never call. */
		if (sys_rt_sigaction(sig, NULL, &old) == 0 && old.handler == SIG_DFL)
			(void)sys_rt_sigaction(sig, &ign, NULL);
	}
}

void sgn_libc_own_default(void)
{
	for (int sig = 32; sig < SIGRTMIN; sig++) {
		struct sys_kernel_sigaction old, dfl = {.handler = SIG_DFL};

		if (sys_rt_sigaction(sig, NULL, &old) == 0 && old.handler == SIG_IGN)
			(void)sys_rt_sigaction(sig, &dfl, NULL);
	}
}

int sgn_child_defaults(void)
{
	sigset_t none;

	for (int sig = 1; sig < _NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)signal(sig, SIG_DFL); /* EINVAL for libc's own: */
	sgn_libc_own_default();			    /* the raw call for those */
	(void)sigemptyset(&none);
	return sigprocmask(SIG_SETMASK, &none, NULL) < 0 ? -errno : 0;
}

int sgn_parse(const char *s)
{
	char *end;
	long n = strtol(s, &end, 10);

	if (*s && !*end)
		return n >= 1 && n < NSIG ? (int)n : -EINVAL;
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int i = 1; i < NSIG; i++)
		if (sigabbrev_np(i) && strcasecmp(s, sigabbrev_np(i)) == 0)
			return i;
	return -EINVAL;
}

void sgn_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else if (sig == SIGRTMIN)
		snprintf(buf, len, "SIGRTMIN");
	else if (sig == SIGRTMAX)
		snprintf(buf, len, "SIGRTMAX");
	else if (sig > SIGRTMIN && sig - SIGRTMIN <= (SIGRTMAX - SIGRTMIN) / 2)
		snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
	else if (sig > SIGRTMIN && sig < SIGRTMAX)
		snprintf(buf, len, "SIGRTMAX-%d", SIGRTMAX - sig);
	else
		snprintf(buf, len, "signal %d", sig);
}

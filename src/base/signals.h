/* SPDX-License-Identifier: MIT */
/*
 * Signals from outside, the same way in every long-lived process of ours
 * (the supervisor of a run or a session, `sandcap serve`): whatever would
 * end the process is a request to stop cleanly, what would stop it for job
 * control is ignored, and a fault the kernel raises still crashes it
 * (docs/decisions.md, "Signals from outside").
 */
#pragma once

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/signalfd.h>

typedef enum sgn_verdict {
	SGN_STOP,   /* a request to end, as SIGTERM is */
	SGN_IGNORE, /* job control, our own SIGPIPE, a signal that ends nothing */
	SGN_CRASH,  /* a fault the kernel raised: die of it (sgn_crash) */
	_SGN_VERDICT_MAX,
	_SGN_VERDICT_INVALID = -EINVAL,
} sgn_verdict;

/* The signals to block and take through a signalfd: every one whose
 * default would end or stop the process, but SIGKILL and SIGSTOP, which
 * cannot be taken, and libc's own (sgn_libc_own_ignore). */
void sgn_taken_set(sigset_t *set);

/* What a signal read from that signalfd asks for. */
sgn_verdict sgn_judge(const struct signalfd_siginfo *si);

/* Dies of sig with its default action (a core where it dumps one), as the
 * fault would have without the signalfd. */
_Noreturn void sgn_crash(int sig);

/* libc's own real-time signals (32 and 33 with glibc) can be neither
 * blocked nor handled through libc; one whose default would still end the
 * process is ignored, with the raw call. */
void sgn_libc_own_ignore(void);

/* Undoes that in a child before exec (an ignored signal stays ignored
 * across execve). Async-signal-safe. */
void sgn_libc_own_default(void);

/* A child's signals as a fresh program's: every disposition the default
 * (libc's own too) and none blocked; the supervisor blocks all it takes
 * through its signalfd, and blocked and ignored signals survive execve.
 * Async-signal-safe. Returns 0 or -errno. */
int sgn_child_defaults(void);

/* A signal from "9", "KILL" or "SIGKILL" (any case), or -EINVAL. */
int sgn_parse(const char *s);

/* "SIGTERM", "SIGRTMIN+3", "SIGRTMAX-1": the names of kill -l (bash). */
void sgn_name(int sig, char *buf, size_t len);

/* SPDX-License-Identifier: MIT */
/*
 * The agent's seccomp profile (profile.c: one readable table) and the
 * supervisor-side user-notification handler that audits execs and refused
 * dangerous syscalls. Library code: never prints; errors are -errno.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "policy/plan.h"

/*
 * Loads the filter into the calling thread (must be last before exec; needs
 * no_new_privs, which libseccomp also sets). Unknown syscalls fail with
 * ENOSYS, the dangerous ones with EPERM, foreign ABIs (i386, x32) kill the
 * process. With plan->audit_exec, execve/execveat go to the listener first
 * (CONTINUE); with plan->audit_denied_syscalls, the dangerous ones go to the
 * listener, which refuses them with EPERM itself. Then *ret_notify_fd is the
 * listener (O_CLOEXEC; pass it to the supervisor and close it before exec:
 * while nobody serves it, an exec blocks), else -1. A process can carry only
 * one listener: if an outer filter already has one, this fails with -EBUSY.
 * Returns -EOPNOTSUPP when auditing is asked for and user notification is
 * unavailable: fail closed. Under plan->best_effort the caller may retry
 * with a copy of the plan whose audit flags are off, and record that exec
 * and denial auditing is not enforced. Allocates (libseccomp): not
 * async-signal-safe.
 */
int sf_apply(const sc_plan *plan, int *ret_notify_fd);

/* Called for each event the handler produces: "proc.exec" with {pid, path,
 * argv:[...], truncated, [syscall: "execveat", dirfd_path]} or
 * "syscall.denied" with {pid, syscall, nr, args: ["0x..." x 6]}. data is
 * owned by the callee.
 * proc.exec records an attempt, taken before the kernel runs it: the exec
 * may still fail (ENOENT, EACCES), and what the target asked for is not
 * proven to be what ran (see notify.c on TOCTOU). */
typedef void (*sf_event_cb)(const char *event, json_t *data, void *userdata);

/*
 * Handles one pending notification on notify_fd (call when readable;
 * blocks otherwise). Treats the target as hostile: reads /proc/PID/mem with
 * bounds (path 4096 bytes, 256 args, 64 KiB of argv) and always answers,
 * CONTINUE for exec and -EPERM otherwise, even when reading fails. A record
 * is emitted before the answer; none when the notification went stale (the
 * target died or will retry). cb may be NULL. Returns 0, or -errno when the
 * listener itself fails (the caller should then close it: pending and future
 * notified syscalls of the sandbox fail with ENOSYS).
 */
int sf_notify_handle(int notify_fd, sf_event_cb cb, void *userdata);

/*
 * Whether seccomp filters and user notification (with CONTINUE) really
 * work here, tried end to end in a forked child. Returns 0 and "active" in
 * reason, or -EOPNOTSUPP and why not (for doctor and sandbox.start).
 * Forks; the child does not allocate.
 */
int sf_probe(char *reason, size_t reason_len);

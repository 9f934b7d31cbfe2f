/* SPDX-License-Identifier: MIT */
/*
 * fs.read: with "audit": {"reads": true}, the first open of each file
 * under a grant, with its SHA-256 (docs/audit.md, "Files read"). Used by
 * the supervisor only; root only (a fanotify filesystem mark).
 *
 * A notification-class fanotify group (the agent never waits for it) with
 * FAN_OPEN on the mount of every grant in the sandbox's mount namespace. A thread of its own reads
 * the events: each carries an fd of the file as it was opened, so the
 * digest is of that inode, read from that fd (at most FR_HASH_MAX bytes:
 * a larger file is recorded with its size and no digest). Events are kept
 * when their process is the sandbox's (fsuid, as fswatch.c judges writes)
 * and the file lies under a grant; at most FR_MAX_FILES records per run,
 * then one record {"op": "truncated", "count": N, "reason": ...}.
 */
#pragma once

#include <sys/types.h>

#include "policy/plan.h"
#include "seccomp/seccomp.h"

#define FR_MAX_FILES 4096u	 /* fs.read records per run */
#define FR_HASH_MAX  (64u << 20) /* bytes hashed of one file */

typedef struct fr_watch fr_watch;

/*
 * Once the sandbox child (pid) has built its mounts: marks every grant's
 * mount there (through /proc/PID/root) and starts the reader thread, which
 * passes each fs.read to cb (from that thread: cb must be thread-safe;
 * data ownership passes to cb; a negative return stops the recording).
 * *ret_mode: "fanotify", or "none (why)" when the watch could not be set
 * up (then *ret is NULL and nothing is recorded). 0 or -ENOMEM.
 */
int fr_start(const sc_plan *plan, pid_t pid, sf_event_cb cb, void *userdata, fr_watch **ret,
	     const char **ret_mode);

/* After the sandbox ended: reads what is still queued, stops the thread,
 * and reports what the cap or the kernel's queue left out (from the
 * calling thread, through cb). NULL-safe. */
void fr_finish(fr_watch *w);

/* Stops the thread (without records) and frees. NULL-safe, returns NULL. */
fr_watch *fr_free(fr_watch *w);

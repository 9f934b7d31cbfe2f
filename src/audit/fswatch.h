/* SPDX-License-Identifier: MIT */
/*
 * fs.write: which files the agent created, modified, renamed or deleted in
 * its read-write grants (docs/audit.md section 8). Used by the supervisor only.
 *
 * Two ways of seeing it, chosen per grant when the watch starts:
 *   fanotify  a FAN_MARK_FILESYSTEM mark with FAN_REPORT_DFID_NAME on the
 *             filesystem of the grant; events are filtered to the grant's
 *             subtree and to processes of the sandbox (fswatch.c says how,
 *             and what is left over).
 *   listing   a bounded walk of the grant before the run and one after it;
 *             the difference is reported (no timing, no intermediate states).
 * SANDCAP_FSWATCH=listing in the supervisor's environment forces the listing
 * for every grant (a test knob for the fallback; the sandbox never sees it).
 *
 * Event data: {"path": inside the sandbox, "host_path", "op", "type"} with op
 * one of "create" "modify" "attrib" "rename_from" "rename_to" "delete", type
 * "file" or "dir"; at most one modify (and one attrib) per path per
 * FW_COALESCE_NS; at most FW_MAX_EVENTS per run, then one record with op
 * "truncated" and "count" (also used, with "reason", when the kernel's queue
 * overflowed or a listing hit its caps).
 *
 * Library code: never prints; errors are -errno. Not thread-safe; one watch
 * per sandbox. Not for use after fork in the child.
 */
#pragma once

#include "policy/plan.h"
#include "seccomp/seccomp.h"

#define FW_MAX_EVENTS	    4096u		  /* fs.write records per run */
#define FW_COALESCE_NS	    (100ULL * 1000000ULL) /* one modify per path per 100 ms */
#define FW_LIST_MAX_DEPTH   64u			  /* directory levels walked */
#define FW_LIST_MAX_ENTRIES 262144u		  /* entries per snapshot, all grants */

typedef struct fw_watch fw_watch;

/*
 * Supervisor, before the sandbox child runs: watches every rw grant of the
 * plan (snapshots the listing grants now). *ret_mode is "fanotify",
 * "listing (why)", a mix of both, or "none" when no grant is writable; it
 * stays valid until fw_free(). The agent's host uid range is derived from
 * getpid() (ns_host_id_base), so call it in the supervisor process.
 * Returns 0, or -ENOMEM; a grant fanotify cannot watch falls back to the
 * listing, never to an error.
 */
int fw_start(const sc_plan *plan, fw_watch **ret, const char **ret_mode);

/* Supervisor, once the sandbox's mounts are built (pid: the child): watches
 * the sandbox's /tmp too, not for fs.write (it is gone at exit) but for
 * limit.hit: "tmp_full" when the tmpfs has no free block or inode left,
 * "fsize" when a file there, or in a rw grant, reached limits.fsize. Each
 * is emitted once per run. /tmp's writes are watched with the grants'
 * fanotify group, or a group of its own when limits.fsize is set; without
 * either, /tmp is only checked for tmp_full after the run. Returns 0 or
 * -errno (then /tmp is not watched). */
int fw_watch_tmp(fw_watch *w, pid_t pid);

/* fd to poll for EPOLLIN, or -1 when no grant uses fanotify. */
int fw_fd(const fw_watch *w);

/* When fw_fd() is readable: reads a bounded batch of events and passes each
 * fs.write to cb (data ownership passes to cb). Returns 0, or -errno when the
 * fanotify fd itself failed (the caller should stop polling it). */
int fw_handle(fw_watch *w, sf_event_cb cb, void *userdata);

/* After the sandbox ended: drains the queue, diffs the listing grants, and
 * reports what the caps left out. Returns the number of distinct paths the
 * fs.write records of the whole run named (files and directories written).
 * The fanotify group is then closed on a thread (slow in the kernel, see
 * fswatch.c), which fw_free() joins: call fw_free() as late as possible. */
int fw_finish(fw_watch *w, sf_event_cb cb, void *userdata);

fw_watch *fw_free(fw_watch *w); /* NULL-safe, returns NULL */

/* The fsuid of a process (from /proc/PID/status): what the kernel checks
 * its file accesses with, so what tells the sandbox's processes (its two
 * host ids) from the host's. 0, or -ESRCH when the process is gone. */
int fw_proc_fsuid(pid_t pid, unsigned long *ret_fsuid);

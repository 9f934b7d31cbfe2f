/* SPDX-License-Identifier: MIT */
/*
 * Landlock ruleset mirroring the grants, applied inside the sandbox after
 * pivot_root (paths are sandbox paths) and before seccomp.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/plan.h"

typedef struct ll_status {
	int abi;	    /* 0 = Landlock unavailable */
	bool fs;	    /* filesystem rules enforced */
	bool net;	    /* TCP bind refused (ABI >= 4), with net.listen off */
	bool scoped;	    /* abstract unix sockets and signals scoped (ABI >= 6) */
	bool all_threads;   /* restricted every thread at once (ABI >= 8, TSYNC) */
	bool unix_paths;    /* connects to pathname unix sockets restricted (ABI >= 9) */
	char degraded[256]; /* what was not enforced and why; empty when complete */
} ll_status;

/* The Landlock ABI of this kernel, 0 if absent (ENOSYS, or not enabled in
 * lsm=); other failures are -errno. */
int ll_abi(void);
/* The ABI sandcap uses on a kernel with kernel_abi: at most the newest it
 * knows (9); a newer kernel's extra rights stay unhandled. */
int ll_abi_used(int kernel_abi);
/* What the ABI sandcap uses on such a kernel restricts, in words. */
const char *ll_abi_features(int kernel_abi);
/* The handled filesystem rights and the restrict_self flags used at that ABI
 * (exposed for the tests: ABI 8 and 9 cannot be run on an older kernel). */
uint64_t ll_handled_fs(int kernel_abi);
uint32_t ll_restrict_flags_for(int kernel_abi);

/*
 * Restricts the calling thread (and its future children) to the plan: the
 * runtime and every grant at grant.at (ro: read+execute; rw: everything but
 * device creation), /tmp and /dev/shm rw, the character devices of /dev
 * read/write, /proc read-only, exe_fd (O_PATH, may be -1: the init binary,
 * outside the view) execute+read; TCP bind denied, and without egress TCP
 * connect too (with egress the netns refuses and records them) (ABI >= 4);
 * abstract unix sockets and signals scoped to the domain (ABI >= 6); every
 * thread restricted at once (ABI >= 8); connects to pathname unix sockets
 * only inside rw grants, /tmp and /dev/shm, or to sockets the sandbox made
 * (ABI >= 9).
 *
 * Paths are sandbox paths: call after pivot_root, with no_new_privs set,
 * before seccomp. Fails closed: -EOPNOTSUPP when Landlock is absent, or when
 * the plan has egress and the kernel cannot restrict TCP (ABI < 4), unless
 * plan->best_effort, in which case *ret_status says what was not enforced.
 * A grant missing from the view is an error (-ENOENT). *ret_status is filled
 * on success and, as far as known, on -EOPNOTSUPP. Below ABI 8 other threads
 * of the caller stay unrestricted (call it single-threaded); from ABI 8 the
 * domain is put on every thread (LANDLOCK_RESTRICT_SELF_TSYNC).
 */
int ll_apply(const sc_plan *plan, int exe_fd, ll_status *ret_status);

/* The sandbox paths the ruleset lets the agent write beneath (/tmp,
 * /dev/shm, the rw and cow grants' mount points; "/" for a writable image
 * root, whose top entries are written beneath), at most max of them in
 * ret; returns how many. For the seccomp listener, which judges a write as
 * Landlock would (src/seccomp/writes.c). */
size_t ll_writable(const sc_plan *plan, const char **ret, size_t max);

/* ll_apply() as if the kernel had Landlock ABI abi (at most the real one):
 * lets tests force the degraded paths on a current kernel. */
int ll_apply_abi(const sc_plan *plan, int exe_fd, int abi, ll_status *ret_status);

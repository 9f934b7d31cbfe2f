/* SPDX-License-Identifier: MIT */
/*
 * Landlock ruleset mirroring the grants, applied inside the sandbox after
 * pivot_root (paths are sandbox paths) and before seccomp.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy/plan.h"

typedef struct ll_status {
	int abi;              /* 0 = Landlock unavailable */
	bool fs;              /* filesystem rules enforced */
	bool net;             /* TCP bind/connect rules enforced (ABI >= 4) */
	bool scoped;          /* abstract unix sockets and signals scoped (ABI >= 6) */
	char degraded[256];   /* what was not enforced and why; empty when complete */
} ll_status;

/* The Landlock ABI of this kernel, 0 if absent. */
int ll_abi(void);
/* Restricts the calling thread. exe_fd (O_PATH, may be -1) is the init binary
 * that must stay executable. Fails closed unless plan->best_effort. */
int ll_apply(const sc_plan *plan, int exe_fd, ll_status *ret_status);

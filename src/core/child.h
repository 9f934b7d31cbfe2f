/* SPDX-License-Identifier: MIT */
/* The child side of sc_run(): from clone3() to execveat() of pid 1. */
#pragma once

#include <stdbool.h>

#include "landlock/landlock.h"
#include "ns/ns.h"
#include "policy/plan.h"

typedef struct child_ctx {
	const sc_plan *plan;
	const ns_source *sources;
	int sync;     /* our end of the SEQPACKET pair */
	int exe_fd;   /* the sandcap binary, exec'd as pid 1 */
	int tty_mask; /* bit n set: fd n is a host terminal, replaced by a pty (core/pty.h) */
	char *const *init_argv;
	char *const *envp;
	const char *spawn_sock; /* host path of the delegation socket, or NULL */
	bool cg_sync;		/* wait for SYNC_CGROUP before the "cgroup" step */
	const char *what;	/* detail of the failing step */
	bool unpriv;		/* cloned with its user namespace, ids already mapped */
	bool adopted;		/* our parent is the supervisor's (sc_run_opts.init_adopted) */
	unsigned layers;	/* sync_layer bits of the steps done so far */
	int notify_fd;		/* the seccomp listener, for SYNC_READY, or -1 */
	int ctl_fd;		/* a session's control channel, pid 1 keeps it; or -1 */
} child_ctx;

/* Runs every setup step in order; never returns. */
_Noreturn void child_main(child_ctx *c);

/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's cgroup (docs/cgroups.md): made where the policy's limits
 * need it, failing closed unless best_effort, and the child placed in it
 * before it runs anything of the sandbox, in one place: born in it
 * (clone3 CLONE_INTO_CGROUP with sv_cgroup_clone_fd(), where the cgroup
 * was made before the clone), else moved in by sv_cgroup_place() once the
 * child exists.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "core/supervisor-state.h"
#include "core/sync.h"

static bool plan_has_limits(const sc_plan *p)
{
	return p->memory != PLAN_UNLIMITED || p->cpu_millis != PLAN_UNLIMITED ||
	       p->pids != PLAN_UNLIMITED;
}

/*
 * The sandbox's cgroup: fail closed when the policy sets limits
 * (principle 4); with best_effort, run without and say what was let go.
 */
static int make_cgroup(supervisor *s)
{
	const sc_plan *p = s->plan;
	sc_run_result *res = s->res;
	char cgname[64], why[256] = "";
	cg_version cgv;
	bool v1;
	int r;

	snprintf(cgname, sizeof(cgname), SV_CGROUP_PREFIX "%s", res->sandbox_id);
	r = cg_create(p, cgname, &s->cg);
	if (r >= 0) {
		snprintf(res->cgroup, sizeof(res->cgroup), "%s",
			 cg_handle_version(s->cg) == CG_V2 ? "v2" : "v1");
		return 0;
	}
	s->cg = NULL;
	v1 = cg_detect(&cgv, why, sizeof(why)) >= 0 && cgv == CG_V1;
	if (plan_has_limits(p) && !p->best_effort) {
		if (s->unpriv)
			return diag_fail(
			    s->diag, r, "cgroup",
			    "the policy sets limits and, without root, sandcap "
			    "enforces them only in a delegated cgroup v2 subtree it may "
			    "write; there is none here (%s%s). Start sandcap in one "
			    "(e.g. systemd-run --user --scope -p Delegate=yes sandcap "
			    "run ...) or set \"best_effort\": true to run without limits",
			    strerror(-r),
			    v1 ? "; this host uses cgroup v1, which is not delegated" : "");
		return diag_fail(s->diag, r, "cgroup", "cannot create the sandbox cgroup (%s): %s",
				 strerror(-r), why);
	}
	if (plan_has_limits(p)) {
		char *q = s->not_enforced, *end = q + sizeof(s->not_enforced);

		if (p->memory != PLAN_UNLIMITED)
			q += snprintf(q, (size_t)(end - q), "limits.memory, ");
		if (p->cpu_millis != PLAN_UNLIMITED)
			q += snprintf(q, (size_t)(end - q), "limits.cpu, ");
		if (p->pids != PLAN_UNLIMITED)
			q += snprintf(q, (size_t)(end - q), "limits.pids, ");
		q -= 2; /* plan_has_limits: at least one was written */
		snprintf(q, (size_t)(end - q), ": no %scgroup (%s)", s->unpriv ? "delegated " : "",
			 strerror(-r));
		snprintf(res->not_enforced, sizeof(res->not_enforced), "%s", s->not_enforced);
	}
	return 0;
}

int sv_cgroup_before_clone(supervisor *s)
{
	/* Where clone3 can place the child in its cgroup (v2) the cgroup must
	 * exist first. Elsewhere the child moves itself in, and the cgroup is
	 * made while the child builds its mounts, like the audit log. */
	s->cg_early = s->unpriv || cg_clone_into_expected();
	return s->cg_early ? make_cgroup(s) : 0;
}

int sv_cgroup_clone_fd(const supervisor *s)
{
	return s->cg ? cg_clone_fd(s->cg) : -1;
}

/*
 * As root the child stops before its "cgroup" step until it is sent the
 * files that move it into its cgroup: none when clone3 placed it there or
 * best_effort let the cgroup go (docs/cgroups.md, "enter"). Unprivileged
 * the child waits for "go" (sv_hand_off), and a cgroup clone3 could not
 * place it in is entered from here. On failure the caller kills the child
 * before it runs anything of the sandbox.
 */
int sv_cgroup_place(supervisor *s)
{
	sync_msg m = {.type = SYNC_CGROUP};
	int fds[SYNC_MAX_FDS];
	int r = 0, n = 0;

	if (!s->cg_early)
		r = make_cgroup(s);
	if (r >= 0 && s->cg && !s->cg_joined && s->unpriv) {
		r = cg_attach(s->cg, s->pid);
		if (r < 0)
			return diag_fail(s->diag, r, "cgroup",
					 "cannot move the sandbox into its cgroup: %s",
					 strerror(-r));
		s->cg_joined = true;
	}
	if (s->unpriv)
		return r;
	if (r >= 0 && s->cg && !s->cg_joined) {
		n = cg_entry_fds(s->cg, fds, ELEMENTSOF(fds));
		if (n < 0)
			r = diag_fail(s->diag, n, "cgroup", "cannot open the sandbox cgroup: %s",
				      strerror(-n));
	}
	if (r >= 0) {
		r = sync_send_fds(s->sync, &m, fds, (size_t)n);
		if (r < 0)
			diag_fail(s->diag, r, "cgroup", "cannot hand the cgroup to the sandbox: %s",
				  strerror(-r));
	}
	for (int i = 0; i < n; i++)
		(void)close(fds[i]);
	return r;
}

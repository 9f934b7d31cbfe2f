/* SPDX-License-Identifier: MIT */
/* A policy's text to a plan: the JSON read (parse.c), then the host looked
 * at (host-check.c). Above both, so that neither calls the other. */
#include "base/cleanup.h"
#include "policy/plan.h"

static void plan_freep_local(sc_plan **p)
{
	sc_plan_free(*p);
}

int plan_parse(const char *buf, size_t len, sc_plan **ret_plan, sc_diag *reterr_diag)
{
	_cleanup_(plan_freep_local) sc_plan *p = NULL;
	int r;

	r = plan_parse_json(buf, len, ret_plan ? &p : NULL, reterr_diag);
	if (r < 0)
		return r;
	r = plan_check_host(p, reterr_diag);
	if (r < 0)
		return r;
	*ret_plan = TAKE_PTR(p);
	return 0;
}

int sc_plan_parse(const char *buf, size_t len, sc_plan **ret_plan, sc_diag *reterr_diag)
{
	return plan_parse(buf, len, ret_plan, reterr_diag);
}

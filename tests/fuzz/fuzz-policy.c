/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the policy parser. Beyond "does not crash", checks the
 * contract: plan_parse() accepts exactly what plan_parse_json() accepts and
 * plan_check_host() then passes; a policy that parses serialises to canonical
 * JSON that parses back to an equal plan and serialises to the same bytes;
 * its description can be printed; the secret check of each credential answers
 * with a terminated diagnostic. Touches the filesystem only through the host
 * check's stat-like calls and the secret check's reads of regular files;
 * output goes to a memory stream.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "policy/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Diagnostics are always terminated strings, and a refusal says why. */
static void check_diag(const sc_diag *d)
{
	if (strnlen(d->path, sizeof(d->path)) == sizeof(d->path) ||
	    strnlen(d->message, sizeof(d->message)) == sizeof(d->message) || !d->message[0])
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(sc_plan_freep) sc_plan *p = NULL;
	_cleanup_(sc_plan_freep) sc_plan *q = NULL;
	_cleanup_(sc_plan_freep) sc_plan *pure = NULL;
	_cleanup_free_ char *j1 = NULL, *j2 = NULL, *text = NULL;
	size_t text_len = 0;
	sc_diag d;
	FILE *f;
	int r, rj, rh = -1;

	/* Size cap: the parser refuses more anyway; 64 KiB keeps runs fast. */
	if (size > 65536)
		return 0;
	rj = plan_parse_json((const char *)data, size, &pure, &d);
	if (rj < 0)
		check_diag(&d);
	else if ((rh = plan_check_host(pure, &d)) < 0)
		check_diag(&d);
	r = sc_plan_parse((const char *)data, size, &p, &d);
	if ((r >= 0) != (rj >= 0 && rh >= 0))
		__builtin_trap();
	if (r < 0) {
		check_diag(&d);
		return 0;
	}
	for (size_t i = 0; i < p->n_credentials; i++)
		if (plan_check_secret(p, i, &d) < 0)
			check_diag(&d);
	j1 = plan_to_json(p);
	if (!j1)
		__builtin_trap();
	if (sc_plan_parse(j1, strlen(j1), &q, &d) < 0 || !plan_equal(p, q))
		__builtin_trap();
	j2 = plan_to_json(q);
	if (!j2 || strcmp(j1, j2) != 0)
		__builtin_trap();
	f = open_memstream(&text, &text_len);
	if (!f)
		return 0;
	if (plan_describe(p, f) < 0)
		__builtin_trap();
	(void)fclose(f);
	return 0;
}

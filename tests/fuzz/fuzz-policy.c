/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the policy parser. Beyond "does not crash", checks the
 * contract: a policy that parses serialises to canonical JSON that parses back
 * to an equal plan and serialises to the same bytes, and its description can
 * be printed. Touches the filesystem only through the parser's stat-like
 * checks; output goes to a memory stream.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "policy/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(sc_plan_freep) sc_plan *p = NULL;
	_cleanup_(sc_plan_freep) sc_plan *q = NULL;
	_cleanup_free_ char *j1 = NULL, *j2 = NULL, *text = NULL;
	size_t text_len = 0;
	sc_diag d;
	FILE *f;

	/* Size cap: the parser refuses more anyway; 64 KiB keeps runs fast. */
	if (size > 65536)
		return 0;
	if (sc_plan_parse((const char *)data, size, &p, &d) < 0) {
		/* Diagnostics are always terminated strings. */
		if (strnlen(d.path, sizeof(d.path)) == sizeof(d.path) ||
		    strnlen(d.message, sizeof(d.message)) == sizeof(d.message))
			__builtin_trap();
		return 0;
	}
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

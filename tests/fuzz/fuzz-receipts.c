/* SPDX-License-Identifier: MIT */
/*
 * Delegation receipts are read back from a log someone may have edited:
 * feed arbitrary bytes as a whole log to the receipts checker (records,
 * plans parsed from them, digests, the intersection). A log it accepts
 * must have a sandbox.start with a plan: that is checked, not just the
 * absence of crashes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/receipt.h"

#define FUZZ_RECEIPTS_MAX_BYTES (256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	au_receipts_info info;
	char reason[512];
	size_t line;
	FILE *in;

	if (size == 0 || size > FUZZ_RECEIPTS_MAX_BYTES)
		return 0;
	in = fmemopen((void *)data, size, "r");
	if (!in)
		return 0;
	if (au_receipts_check(in, &info, &line, reason, sizeof(reason)) == 0 &&
	    !memmem(data, size, "\"sandbox.start\"", 15))
		abort(); /* accepted a log without a start */
	fclose(in);
	return 0;
}

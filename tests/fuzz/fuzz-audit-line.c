/* SPDX-License-Identifier: MIT */
/*
 * The audit log is read back by verify and report, possibly after an
 * attacker with write access to the file edited it: feed arbitrary bytes
 * as a whole log to both, with and without a key.
 */
#include <stdint.h>
#include <stdio.h>

#include "audit/audit.h"

#define FUZZ_AUDIT_MAX_BYTES (256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[32] = "fuzz-audit-line key of 32 bytes";
	char reason[256];
	size_t line;
	FILE *in, *out;

	if (size == 0 || size > FUZZ_AUDIT_MAX_BYTES)
		return 0;
	out = fopen("/dev/null", "we");
	if (!out)
		return 0;
	in = fmemopen((void *)data, size, "r");
	if (in) {
		(void)au_verify(in, NULL, 0, &line, reason, sizeof(reason));
		fclose(in);
	}
	in = fmemopen((void *)data, size, "r");
	if (in) {
		(void)au_verify(in, key, sizeof(key), &line, reason, sizeof(reason));
		fclose(in);
	}
	in = fmemopen((void *)data, size, "r");
	if (in) {
		(void)au_report(in, out, false);
		fclose(in);
	}
	in = fmemopen((void *)data, size, "r");
	if (in) {
		(void)au_report(in, out, true);
		fclose(in);
	}
	fclose(out);
	return 0;
}

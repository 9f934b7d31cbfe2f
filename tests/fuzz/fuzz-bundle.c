/* SPDX-License-Identifier: MIT */
/*
 * An evidence bundle comes from whoever hands it over: feed arbitrary bytes
 * as the tar archive to its checker (libarchive's tar reader, the member
 * rules, the manifest, the log verifier and the report). Whatever it
 * accepts must hold a log that verifies on its own: that invariant is
 * checked, not just the absence of crashes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/bundle.h"

#define FUZZ_BUNDLE_MAX_BYTES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	au_bundle_result res;
	char reason[512];

	if (size > FUZZ_BUNDLE_MAX_BYTES)
		return 0;
	if (au_bundle_verify(data, size, NULL, &res, reason, sizeof(reason)) == 0 &&
	    (!res.info.sealed || res.info.records == 0))
		abort(); /* accepted a bundle whose log is not a sealed chain */
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for what the workspace commands read back: meta.json,
 * an unfinished apply's intent, and the agent's file contents through the
 * text diff (the input split in
 * two at its first NUL-free "\n---\n", or in half).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "workspace/workspace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	char why[128];
	ws_meta m;
	ws_intent t;
	size_t half = size / 2, add, del;
	FILE *null = fopen("/dev/null", "w");

	if (size > (1u << 16))
		return 0;
	if (ws_meta_parse(s, size, &m, why, sizeof(why)) == 0)
		ws_meta_done(&m);
	if (ws_intent_parse(s, size, &t) == 0) {
		(void)ws_intent_find(&t, "a");
		ws_intent_done(&t);
	}
	(void)ws_text_diff(s, half, s + half, size - half, "a", "b", null, &add, &del);
	if (null)
		fclose(null);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The verifier's fast path (src/audit/scan.c) parses hostile lines by hand:
 * whatever it takes, au_parse_record (jansson, the strict rules) must take
 * too, with the same fields; otherwise the fast path would let a line
 * through that the rules refuse. Checked, not just the absence of crashes.
 *
 * The first byte chooses the form: odd, the rest is a data object between
 * a valid envelope's head and tail (so mutations reach the data scanner
 * without first having to find a valid envelope); even, the rest is the
 * whole line. The same bytes are read as a log by au_lines and by
 * au_read_line, which must give the same lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit-internal.h"

#define FUZZ_AUDIT_SCAN_MAX_BYTES (64u << 10)

#define HEAD                                                                                       \
	"{\"schema\":2,\"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"sc-t\","  \
	"\"event\":\"net.request\",\"data\":"
#define TAIL                                                                                       \
	",\"prev\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","          \
	"\"hash\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *line, size_t len)
{
	au_record fast = {0}, strict = {0};
	au_scan_buf sb;
	char reason[256];

	if (au_scan_record(line, len, &sb, &fast) != 1)
		return;
	if (au_parse_record(line, len, &strict, reason, sizeof(reason)) != 0) {
		fprintf(stderr, "scanner took a line the strict rules refuse: %s\n", reason);
		abort();
	}
	if (fast.schema != strict.schema || fast.seq != strict.seq ||
	    strcmp(fast.ts, strict.ts) != 0 || strcmp(fast.sandbox, strict.sandbox) != 0 ||
	    strcmp(fast.event, strict.event) != 0 ||
	    memcmp(fast.prev, strict.prev, AU_HASH_BYTES) != 0 ||
	    memcmp(fast.hash, strict.hash, AU_HASH_BYTES) != 0 || fast.body_len != strict.body_len)
		abort();
	au_record_clear(&strict);
}

static void check_lines(const uint8_t *data, size_t size)
{
	FILE *a = fmemopen((void *)data, size, "r"), *b = fmemopen((void *)data, size, "r");
	au_lines l = {.in = b};
	char *buf = NULL;
	size_t cap = 0;

	while (a && b) {
		size_t alen = 0, blen = 0;
		bool anl = false, bnl = false;
		const char *line = NULL;
		int ra = au_read_line(a, &buf, &cap, &alen, &anl);
		int rb = au_lines_next(&l, &line, &blen, &bnl);

		if (ra != rb || (ra == 1 && (alen != blen || anl != bnl ||
					     (alen && memcmp(buf, line, alen) != 0))))
			abort();
		if (ra != 1)
			break;
	}
	au_lines_done(&l);
	free(buf);
	if (a)
		fclose(a);
	if (b)
		fclose(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line;
	size_t len;

	if (size == 0 || size > FUZZ_AUDIT_SCAN_MAX_BYTES)
		return 0;
	if (data[0] & 1) {
		len = sizeof(HEAD) - 1 + size - 1 + sizeof(TAIL) - 1;
		line = malloc(len);
		if (!line)
			return 0;
		memcpy(line, HEAD, sizeof(HEAD) - 1);
		memcpy(line + sizeof(HEAD) - 1, data + 1, size - 1);
		memcpy(line + sizeof(HEAD) - 1 + size - 1, TAIL, sizeof(TAIL) - 1);
	} else {
		len = size - 1;
		line = malloc(len ? len : 1);
		if (!line)
			return 0;
		memcpy(line, data + 1, len);
	}
	check_line(line, len);
	free(line);
	check_lines(data, size);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The verifier's fast path (src/audit/scan.c): it takes a line only when
 * au_parse_record takes it too, with the same fields, and is "not sure" of
 * everything au_parse_record refuses; the block reader gives the lines
 * au_read_line gives. TAP output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit-internal.h"
#include "tap.h"

#define HEAD                                                                                       \
	"{\"schema\":2,\"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"sc-t\","  \
	"\"event\":\"net.request\",\"data\":"
#define HEX_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX_U "A123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX_S "123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define TAIL  ",\"prev\":\"" HEX_A "\",\"hash\":\"" HEX_B "\"}"

/* Both parse line; the scanner must take a subset, with the same fields.
 * Returns what they said: fast (scanner took it), strict (parser did). */
static bool agree(const char *line, size_t len, bool *ret_fast, bool *ret_strict)
{
	au_record fast = {0}, strict = {0};
	au_scan_buf sb;
	char reason[256];
	bool same = true;

	*ret_fast = au_scan_record(line, len, &sb, &fast) == 1;
	*ret_strict = au_parse_record(line, len, &strict, reason, sizeof(reason)) == 0;
	if (*ret_fast)
		same = *ret_strict && fast.schema == strict.schema && fast.seq == strict.seq &&
		       strcmp(fast.ts, strict.ts) == 0 &&
		       strcmp(fast.sandbox, strict.sandbox) == 0 &&
		       strcmp(fast.event, strict.event) == 0 &&
		       memcmp(fast.prev, strict.prev, AU_HASH_BYTES) == 0 &&
		       memcmp(fast.hash, strict.hash, AU_HASH_BYTES) == 0 &&
		       fast.body_len == strict.body_len && !fast.root && !fast.data;
	au_record_clear(&strict);
	return same;
}

static const struct scan_case {
	const char *what;
	const char *head, *data, *tail; /* NULL: HEAD, TAIL */
	bool fast, strict;
} cases[] = {
    /* the writer's form: taken by both */
    {"empty data", NULL, "{}", NULL, true, true},
    {"strings and numbers", NULL, "{\"a\":1,\"b\":\"x\",\"c\":-7}", NULL, true, true},
    {"nesting", NULL, "{\"a\":{\"b\":[1,[],{\"c\":null}]},\"d\":[]}", NULL, true, true},
    {"short escapes", NULL, "{\"a\":\"q\\\"\\\\\\/\\b\\f\\n\\r\\t\"}", NULL, true, true},
    {"\\u escapes, either case", NULL, "{\"a\":\"\\u001b[31m\\u00E9\\uffff\"}", NULL, true, true},
    {"UTF-8 of 2, 3 and 4 bytes", NULL, "{\"a\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\"}",
     NULL, true, true},
    {"DEL is not a control character", NULL, "{\"a\":\"\x7f\"}", NULL, true, true},
    {"numbers", NULL, "{\"a\":-0,\"b\":0.5,\"c\":-12.25,\"d\":123456789012345678}", NULL, true,
     true},
    {"literals", NULL, "{\"a\":true,\"b\":false,\"c\":null}", NULL, true, true},
    {"a key before its extension", NULL, "{\"a\":1,\"ab\":2,\"b\":3}", NULL, true, true},
    {"empty key first", NULL, "{\"\":1,\"a\":2}", NULL, true, true},
    {"keys compared as bytes", NULL, "{\"Z\":1,\"a\":2,\"\xc3\xa9\":3}", NULL, true, true},
    {"schema 1 (no schema member)",
     "{\"seq\":0,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"A.b_c:d-9\","
     "\"event\":\"fs.write_2\",\"data\":",
     "{}", NULL, true, true},
    {"largest seq taken",
     "{\"schema\":2,\"seq\":999999999999999999,\"ts\":\"2026-11-29T08:30:00.123456789Z\","
     "\"sandbox\":\"s\",\"event\":\"e\",\"data\":",
     "{}", NULL, true, true},

    /* accepted by the strict rules, left to them */
    {"whitespace in data", NULL, "{\"a\": 1}", NULL, false, true},
    {"whitespace in the envelope",
     "{\"schema\":2, \"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"sc-t\","
     "\"event\":\"net.request\",\"data\":",
     "{}", NULL, false, true},
    {"keys not sorted", NULL, "{\"b\":1,\"a\":2}", NULL, false, true},
    {"escaped key", NULL, "{\"\\u0061\":1}", NULL, false, true},
    {"surrogate pair", NULL, "{\"a\":\"\\ud834\\udd1e\"}", NULL, false, true},
    {"exponent", NULL, "{\"a\":1e5}", NULL, false, true},
    {"19-digit integer", NULL, "{\"a\":1234567890123456789}", NULL, false, true},
    {"seq -0",
     "{\"schema\":2,\"seq\":-0,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s\","
     "\"event\":\"e\",\"data\":",
     "{}", NULL, false, true},
    {"19-digit seq",
     "{\"schema\":2,\"seq\":1000000000000000000,\"ts\":\"2026-11-29T08:30:00.123456789Z\","
     "\"sandbox\":\"s\",\"event\":\"e\",\"data\":",
     "{}", NULL, false, true},
    {"escaped ts digit",
     "{\"schema\":2,\"seq\":5,\"ts\":\"\\u0032026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s\","
     "\"event\":\"e\",\"data\":",
     "{}", NULL, false, true},
    {"audit.error (the chain reads its data)",
     "{\"schema\":2,\"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s\","
     "\"event\":\"audit.error\",\"data\":",
     "{}", NULL, false, true},
    {"audit.seal",
     "{\"schema\":2,\"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s\","
     "\"event\":\"audit.seal\",\"data\":",
     "{}", NULL, false, true},

    /* refused by both */
    {"duplicate key", NULL, "{\"a\":1,\"a\":2}", NULL, false, false},
    {"nested duplicate key", NULL, "{\"x\":{\"a\":1,\"a\":2}}", NULL, false, false},
    {"duplicate key, escaped", NULL, "{\"a\":1,\"\\u0061\":2}", NULL, false, false},
    {"\\u0000", NULL, "{\"a\":\"x\\u0000\"}", NULL, false, false},
    {"lone high surrogate", NULL, "{\"a\":\"\\ud800\"}", NULL, false, false},
    {"lone low surrogate", NULL, "{\"a\":\"\\udc00\"}", NULL, false, false},
    {"short \\u", NULL, "{\"a\":\"\\u12\"}", NULL, false, false},
    {"\\u with a non-hex digit", NULL, "{\"a\":\"\\u12g4\"}", NULL, false, false},
    {"unknown escape", NULL, "{\"a\":\"\\x41\"}", NULL, false, false},
    {"raw tab in a string", NULL, "{\"a\":\"\t\"}", NULL, false, false},
    {"invalid UTF-8 byte", NULL, "{\"a\":\"\xff\"}", NULL, false, false},
    {"overlong UTF-8", NULL, "{\"a\":\"\xc0\xaf\"}", NULL, false, false},
    {"UTF-8 surrogate", NULL, "{\"a\":\"\xed\xa0\x80\"}", NULL, false, false},
    {"UTF-8 above U+10FFFF", NULL, "{\"a\":\"\xf4\x90\x80\x80\"}", NULL, false, false},
    {"UTF-8 cut short", NULL, "{\"a\":\"\xe2\x82\"}", NULL, false, false},
    {"continuation byte first", NULL, "{\"a\":\"\x80\"}", NULL, false, false},
    {"leading zero", NULL, "{\"a\":01}", NULL, false, false},
    {"fraction without digits", NULL, "{\"a\":1.}", NULL, false, false},
    {"no integer part", NULL, "{\"a\":.5}", NULL, false, false},
    {"lone minus", NULL, "{\"a\":-}", NULL, false, false},
    {"plus sign", NULL, "{\"a\":+1}", NULL, false, false},
    {"real overflow", NULL, "{\"a\":1e999}", NULL, false, false},
    {"integer overflow", NULL, "{\"a\":99999999999999999999}", NULL, false, false},
    {"bad literal", NULL, "{\"a\":truex}", NULL, false, false},
    {"cut literal", NULL, "{\"a\":nul}", NULL, false, false},
    {"trailing comma", NULL, "{\"a\":1,}", NULL, false, false},
    {"trailing comma in array", NULL, "{\"a\":[1,]}", NULL, false, false},
    {"missing colon", NULL, "{\"a\" 1}", NULL, false, false},
    {"unclosed data", NULL, "{\"a\":1", NULL, false, false},
    {"unclosed string", NULL, "{\"a\":\"x}", NULL, false, false},
    {"non-string key", NULL, "{1:2}", NULL, false, false},
    {"data an array", NULL, "[1]", NULL, false, false},
    {"data a string", NULL, "\"{}\"", NULL, false, false},
    {"garbage after the line", NULL, "{}", TAIL "x", false, false},
    {"whitespace after the line", NULL, "{}", TAIL " ", false, false},
    {"a second object", NULL, "{}", TAIL "{}", false, false},
    {"hash member not last", NULL, "{}", ",\"hash\":\"" HEX_B "\",\"prev\":\"" HEX_A "\"}", false,
     false},
    {"upper-case hex", NULL, "{}", ",\"prev\":\"" HEX_A "\",\"hash\":\"" HEX_U "\"}", false, false},
    {"short hash", NULL, "{}", ",\"prev\":\"" HEX_A "\",\"hash\":\"" HEX_S "\"}", false, false},
    {"extra key",
     "{\"schema\":2,\"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s\","
     "\"event\":\"e\",\"x\":1,\"data\":",
     "{}", NULL, false, false},
    {"schema 3",
     "{\"schema\":3,\"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s\","
     "\"event\":\"e\",\"data\":",
     "{}", NULL, false, false},
    {"seq a string",
     "{\"schema\":2,\"seq\":\"5\",\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s\","
     "\"event\":\"e\",\"data\":",
     "{}", NULL, false, false},
    {"seq leading zero",
     "{\"schema\":2,\"seq\":05,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s\","
     "\"event\":\"e\",\"data\":",
     "{}", NULL, false, false},
    {"ts without nanoseconds",
     "{\"schema\":2,\"seq\":5,\"ts\":\"2026-11-29T08:30:00Z\",\"sandbox\":\"s\","
     "\"event\":\"e\",\"data\":",
     "{}", NULL, false, false},
    {"sandbox with a space",
     "{\"schema\":2,\"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s t\","
     "\"event\":\"e\",\"data\":",
     "{}", NULL, false, false},
    {"empty sandbox",
     "{\"schema\":2,\"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"\","
     "\"event\":\"e\",\"data\":",
     "{}", NULL, false, false},
    {"upper-case event",
     "{\"schema\":2,\"seq\":5,\"ts\":\"2026-11-29T08:30:00.123456789Z\",\"sandbox\":\"s\","
     "\"event\":\"Net\",\"data\":",
     "{}", NULL, false, false},
};

static void test_cases(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct scan_case *c = &cases[i];
		char *line = NULL;
		bool fast, strict, same;

		if (asprintf(&line, "%s%s%s", c->head ? c->head : HEAD, c->data,
			     c->tail ? c->tail : TAIL) < 0)
			abort();
		same = agree(line, strlen(line), &fast, &strict);
		ok(same && fast == c->fast && strict == c->strict,
		   "%s: scanner %s, strict rules %s", c->what, fast ? "takes it" : "not sure",
		   strict ? "accept" : "refuse");
		free(line);
	}
}

/* A sandbox id and an event at their longest, and a byte over. */
static bool limits_agree(size_t id_len, size_t ev_len, bool *ret_fast, bool *ret_strict)
{
	char id[AU_SANDBOX_ID_MAX + 2] = "", ev[AU_EVENT_MAX + 2] = "", *line = NULL;
	bool same;

	memset(id, 'i', id_len);
	memset(ev, 'e', ev_len);
	if (asprintf(&line,
		     "{\"schema\":2,\"seq\":1,\"ts\":\"2026-11-29T08:30:00.123456789Z\","
		     "\"sandbox\":\"%s\",\"event\":\"%s\",\"data\":{}" TAIL,
		     id, ev) < 0)
		abort();
	same = agree(line, strlen(line), ret_fast, ret_strict);
	free(line);
	return same;
}

static void test_limits(void)
{
	bool fast, strict;

	ok(limits_agree(AU_SANDBOX_ID_MAX, AU_EVENT_MAX, &fast, &strict) && fast && strict,
	   "sandbox id of %u bytes, event of %u: taken", AU_SANDBOX_ID_MAX, AU_EVENT_MAX);
	ok(limits_agree(AU_SANDBOX_ID_MAX + 1, AU_EVENT_MAX, &fast, &strict) && !fast && !strict,
	   "sandbox id of %u bytes: refused", AU_SANDBOX_ID_MAX + 1);
	ok(limits_agree(AU_SANDBOX_ID_MAX, AU_EVENT_MAX + 1, &fast, &strict) && !fast && !strict,
	   "event of %u bytes: refused", AU_EVENT_MAX + 1);
}

/* Nesting to the scanner's depth is taken; past it, left to jansson
 * (which takes it); past jansson's 2048, refused by both. */
static void test_nesting(void)
{
	static const unsigned depths[] = {31, 40, 2100};

	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		unsigned d = depths[i];
		size_t n = strlen(HEAD) + 2 * (d + 4) + strlen(TAIL) + 1, o = 0;
		char *line = malloc(n);
		bool fast, strict, same;

		if (!line)
			abort();
		o += (size_t)sprintf(line, "%s{\"a\":", HEAD);
		for (unsigned k = 0; k < d; k++)
			line[o++] = '[';
		for (unsigned k = 0; k < d; k++)
			line[o++] = ']';
		o += (size_t)sprintf(line + o, "}%s", TAIL);
		same = agree(line, o, &fast, &strict);
		ok(same && fast == (d < 32) && strict == (d < 2048),
		   "arrays %u deep in data: scanner %s, strict rules %s", d,
		   fast ? "takes it" : "not sure", strict ? "accept" : "refuse");
		free(line);
	}
}

/* A NUL byte: not in a string, nor between tokens. */
static void test_nul(void)
{
	char line[] = HEAD "{\"a\":\"x?\"}" TAIL;
	bool fast, strict;

	*strchr(line, '?') = '\0';
	ok(agree(line, sizeof(line) - 1, &fast, &strict) && !fast && !strict,
	   "NUL byte in a string refused");
	line[strlen(HEAD) + 7] = 'y';
	line[strlen(HEAD) + 1] = '\0';
	ok(agree(line, sizeof(line) - 1, &fast, &strict) && !fast && !strict,
	   "NUL byte in place of a key refused");
}

/* Every prefix of a good line, and the line with each byte changed to each
 * of a few others: the scanner never takes what the strict rules refuse. */
static void test_mutations(void)
{
	static const char subst[] = "\"\\{}[],:0 a\x01\x80\xff";
	const char *good = HEAD "{\"a\":[1,-2.5,true,null],\"b\":\"c\\u00e9\\n\",\"d\":{}}" TAIL;
	size_t len = strlen(good), bad = 0, taken = 0;
	char *line = strdup(good);
	bool fast, strict;

	if (!line)
		abort();
	for (size_t n = 0; n <= len; n++) {
		bad += !agree(good, n, &fast, &strict);
		taken += fast;
	}
	ok(bad == 0 && taken == 1, "prefixes: only the whole line taken (%zu taken)", taken);
	bad = taken = 0;
	for (size_t i = 0; i < len; i++) {
		for (size_t k = 0; k < sizeof(subst) - 1; k++) {
			line[i] = subst[k];
			bad += !agree(line, len, &fast, &strict);
			taken += fast;
		}
		line[i] = good[i];
	}
	ok(bad == 0, "%zu one-byte changes: the scanner took %zu, each one the strict rules take",
	   len * (sizeof(subst) - 1), taken);
	free(line);
}

/* au_lines against au_read_line on the same bytes. */
static bool same_lines(const char *data, size_t size, size_t *ret_lines, int *ret_end)
{
	FILE *a = fmemopen((void *)data, size, "r"), *b = fmemopen((void *)data, size, "r");
	au_lines l = {.in = b};
	char *buf = NULL;
	size_t cap = 0, n = 0;
	bool same = a && b;

	while (same) {
		size_t alen = 0, blen = 0;
		bool anl = false, bnl = false;
		const char *bline = NULL;
		int ra = au_read_line(a, &buf, &cap, &alen, &anl);
		int rb = au_lines_next(&l, &bline, &blen, &bnl);

		same = ra == rb && (ra != 1 || (alen == blen && anl == bnl &&
						(!alen || memcmp(buf, bline, alen) == 0)));
		if (ra != 1) {
			*ret_end = ra;
			break;
		}
		n++;
	}
	*ret_lines = n;
	au_lines_done(&l);
	free(buf);
	if (a)
		fclose(a);
	if (b)
		fclose(b);
	return same;
}

static void test_lines(void)
{
	size_t big = 3 * (size_t)AU_LINE_MAX, lines = 0;
	char *data = malloc(big);
	int end = 1;
	bool same;

	if (!data)
		abort();
	ok(same_lines("", 0, &lines, &end) && lines == 0 && end == 0, "empty input: no line");
	ok(same_lines("a\n\nb", 4, &lines, &end) && lines == 3 && end == 0,
	   "an empty line, a last line without newline");
	/* lines of every length around the block size, crossing blocks */
	for (size_t o = 0, len = 1; o < big; len = len * 7 % 300007 + 1) {
		size_t n = len < big - o ? len : big - o;

		memset(data + o, 'x', n);
		o += n;
		if (o < big)
			data[o++] = '\n';
	}
	same = same_lines(data, big, &lines, &end);
	ok(same && end == 0 && lines == 25, "%zu lines of many lengths, across blocks", lines);
	memset(data, 'x', big);
	data[AU_LINE_MAX - 1] = '\n';
	ok(same_lines(data, big, &lines, &end) && lines == 1 && end == -EMSGSIZE,
	   "a line of AU_LINE_MAX - 1 bytes and its newline, then one longer");
	data[AU_LINE_MAX - 1] = 'x';
	data[AU_LINE_MAX] = '\n';
	ok(same_lines(data, big, &lines, &end) && lines == 0 && end == -EMSGSIZE,
	   "a line of AU_LINE_MAX bytes refused");
	ok(same_lines(data, AU_LINE_MAX - 1, &lines, &end) && lines == 1 && end == 0,
	   "a last line of AU_LINE_MAX - 1 bytes without newline");
	free(data);
}

int main(void)
{
	test_cases();
	test_limits();
	test_nesting();
	test_nul();
	test_mutations();
	test_lines();
	return tap_done();
}

/* SPDX-License-Identifier: MIT */
/* Unit tests for the pure parts of src/workspace/: meta.json, text diffs, ids (TAP). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "workspace/workspace.h"

static char *diff_of(const char *a, const char *b, size_t *add, size_t *del)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)ws_text_diff(a, strlen(a), b, strlen(b), "a/f", "b/f", f, add, del);
	fclose(f);
	return buf;
}

/* An unfinished apply's intent: built, flags ranked, read back. */
static void intent_tests(void)
{
	ws_change v[] = {{.path = (char *)"a"}, {.path = (char *)"b", .from = (char *)"old"}};
	ws_changes ch = {.v = v, .n = 2};
	char *conf[] = {(char *)"a"};
	ws_intent prior = {0}, t = {0}, back = {0};
	static const char file[] = "sandcap-apply-intent-1\0/l\0wa\0pz\0",
			  bad_flag[] = "sandcap-apply-intent-1\0/l\0xa\0",
			  cut[] = "sandcap-apply-intent-1\0/l\0wa";
	int r;

	ok(ws_intent_parse(file, sizeof(file) - 1, &prior) == 0 && prior.n == 2 &&
	       strcmp(prior.log, "/l") == 0,
	   "intent: parsed");
	r = ws_intent_build(&ch, conf, 1, &prior, &t);
	ok(r == 0 && t.n == 4, "intent: built (%zu entries)", t.n);
	ok(ws_intent_find(&t, "a") == WS_INTENT_CONFLICT && ws_intent_find(&t, "b") == 'w' &&
	       ws_intent_find(&t, "old") == 'w' && ws_intent_find(&t, "z") == WS_INTENT_IN_PLACE &&
	       ws_intent_find(&t, "q") == 0,
	   "intent: a conflict outranks a listed path, what the earlier apply listed is in place");
	ok(ws_intent_parse(bad_flag, sizeof(bad_flag) - 1, &back) == -EBADMSG &&
	       ws_intent_parse(cut, sizeof(cut) - 1, &back) == -EBADMSG &&
	       ws_intent_parse("other", 5, &back) == -EBADMSG,
	   "intent: a bad flag, a cut entry, another file are refused");
	ws_intent_done(&prior);
	ws_intent_done(&t);
}

int main(void)
{
	ws_meta m = {0}, back = {0};
	char why[128], *json, *d;
	size_t add, del;

	snprintf(m.id, sizeof(m.id), "sc-0123456789abcdef.0");
	snprintf(m.sandbox, sizeof(m.sandbox), "sc-0123456789abcdef");
	snprintf(m.state, sizeof(m.state), "kept");
	m.grant_path = (char *)"/srv/p";
	m.grant_at = (char *)"/work";
	m.audit_log = (char *)"/var/lib/sandcap/audit/x.jsonl";
	m.quota = 16u << 20;
	m.inodes = UINT64_MAX;
	m.epoch.tv_sec = 1800000000;
	m.epoch.tv_nsec = 5;
	m.grant_dev = 7;
	m.grant_ino = 9;
	json = ws_meta_to_json(&m);
	ok(json && ws_meta_parse(json, strlen(json), &back, why, sizeof(why)) == 0,
	   "meta.json round-trips");
	ok(strcmp(back.grant_path, "/srv/p") == 0 && back.quota == m.quota &&
	       back.inodes == UINT64_MAX && back.epoch.tv_nsec == 5 && back.grant_ino == 9,
	   "meta.json keeps every field");
	ws_meta_done(&back);
	free(json);
	ok(ws_meta_parse("{}", 2, &back, why, sizeof(why)) == -EBADMSG, "meta.json: keys missing");
	ok(ws_meta_parse("[1", 2, &back, why, sizeof(why)) == -EBADMSG, "meta.json: not JSON");
	ok(ws_id_valid("sc-01.0") && !ws_id_valid("..") && !ws_id_valid("a/b") && !ws_id_valid(""),
	   "workspace ids: no path characters");

	d = diff_of("one\ntwo\nthree\n", "one\nTWO\nthree\nfour\n", &add, &del);
	ok(add == 2 && del == 1, "diff counts lines (+%zu -%zu)", add, del);
	ok(d && strstr(d, "@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n three\n+four\n"), "unified hunk");
	free(d);
	d = diff_of("same\n", "same\n", &add, &del);
	ok(add == 0 && del == 0 && d && !*d, "identical texts: no output");
	free(d);
	d = diff_of("a", "b", &add, &del);
	ok(d && strstr(d, "-a\n\\ No newline at end of file\n+b\n\\ No newline"),
	   "missing final newline is marked");
	free(d);
	d = diff_of("", "x\ny\n", &add, &del);
	ok(add == 2 && d && strstr(d, "@@ -0,0 +1,2 @@"), "diff from an empty file");
	free(d);
	ok(!ws_is_text("a\0b", 3) && ws_is_text("abc", 3), "NUL bytes make a file binary");
	intent_tests();
	return tap_done();
}

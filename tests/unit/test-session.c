/* SPDX-License-Identifier: MIT */
/*
 * Unit tests (TAP) for what a session's supervisor and clients parse: the
 * client requests (src/session/request.c), the strings of pid 1's channel
 * (core/ctl.c), listing records and session names (src/session/).
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctl.h"
#include "session/request.h"
#include "session/session.h"
#include "tap.h"

static ss_request q;

static bool parse(const char *json, char *err, size_t len)
{
	json_t *o = json_loads(json, JSON_REJECT_DUPLICATES, NULL);
	int r;

	err[0] = '\0';
	r = o ? ss_request_parse(o, &q, err, len) : -EINVAL;
	json_decref(o);
	return r >= 0;
}

static void good(const char *json, ss_op op)
{
	char err[256];
	bool r = parse(json, err, sizeof(err));

	ok(r && q.op == op, "accepted: %.60s", json);
	if (!r)
		tap_diag("  %s", err);
	if (r)
		ss_request_done(&q);
}

static void bad(const char *json, const char *msg)
{
	char err[256];
	bool r = parse(json, err, sizeof(err));

	ok(!r && strstr(err, msg), "refused: %.60s", json);
	if (r)
		ss_request_done(&q);
	else if (!strstr(err, msg))
		tap_diag("  got \"%s\", want \"%s\"", err, msg);
}

static void requests(void)
{
	char err[256], *big;
	size_t n;

	good("{\"op\":\"exec\",\"argv\":[\"sh\",\"-c\",\"true\"]}", SS_OP_EXEC);
	if (parse("{\"op\":\"exec\",\"argv\":[\"a\",\"b\"],\"cwd\":\"/w\",\"env\":[\"K=v=w\"],"
		  "\"tty\":true,\"rows\":24,\"cols\":80}",
		  err, sizeof(err))) {
		ok(q.n_argv == 2 && strcmp(q.argv[1], "b") == 0 && strcmp(q.cwd, "/w") == 0 &&
		       q.n_env == 1 && strcmp(q.env[0], "K=v=w") == 0 && q.tty && q.rows == 24 &&
		       q.cols == 80,
		   "exec: every member read");
		ss_request_done(&q);
	} else {
		ok(false, "exec: every member read (%s)", err);
	}
	if (parse("{\"op\":\"exec\",\"argv\":[\"x\"]}", err, sizeof(err))) {
		ok(strcmp(q.cwd, "") == 0 && !q.tty && q.n_env == 0, "exec: defaults");
		ss_request_done(&q);
	}
	good("{\"op\":\"put\",\"path\":\"/work/f\",\"mode\":384}", SS_OP_PUT);
	good("{\"op\":\"get\",\"path\":\"f\"}", SS_OP_GET);
	good("{\"op\":\"ls\",\"path\":\".\"}", SS_OP_LS);
	good("{\"op\":\"info\"}", SS_OP_INFO);
	good("{\"op\":\"stop\"}", SS_OP_STOP);
	good("{\"op\":\"signal\",\"signal\":2}", SS_OP_SIGNAL);

	bad("[1]", "a request is a JSON object");
	bad("{\"op\":\"run\"}", "\"op\": expected one of exec");
	bad("{}", "\"op\": expected one of");
	bad("{\"op\":\"exec\"}", "\"argv\": expected an array of 1 to 4096 strings");
	bad("{\"op\":\"exec\",\"argv\":[]}", "\"argv\": expected an array of 1 to 4096");
	bad("{\"op\":\"exec\",\"argv\":[\"\"]}", "\"argv\"[0]: empty command");
	bad("{\"op\":\"exec\",\"argv\":[\"a\",1]}", "\"argv\"[1]: expected a string without NUL");
	ok(!json_loads("{\"op\":\"exec\",\"argv\":[\"a\\u0000b\"]}", JSON_REJECT_DUPLICATES, NULL),
	   "a NUL in a string: not even loaded (ss_recv refuses it as no JSON object)");
	bad("{\"op\":\"exec\",\"argv\":[\"a\"],\"env\":[\"NOEQUALS\"]}",
	    "\"env\"[0]: expected \"KEY=VALUE\"");
	bad("{\"op\":\"exec\",\"argv\":[\"a\"],\"env\":[\"1X=y\"]}", "a name is [A-Za-z_]");
	bad("{\"op\":\"exec\",\"argv\":[\"a\"],\"env\":[\"=y\"]}", "\"env\"[0]");
	bad("{\"op\":\"exec\",\"argv\":[\"a\"],\"tty\":1}", "\"tty\": expected true or false");
	bad("{\"op\":\"exec\",\"argv\":[\"a\"],\"rows\":70000}", "\"rows\": expected an integer");
	bad("{\"op\":\"exec\",\"argv\":[\"a\"],\"cwd\":7}", "\"cwd\": expected a string");
	bad("{\"op\":\"exec\",\"argv\":[\"a\"],\"shell\":true}", "unknown member \"shell\"");
	bad("{\"op\":\"put\"}", "\"path\": missing");
	bad("{\"op\":\"put\",\"path\":\"\"}", "\"path\": empty");
	bad("{\"op\":\"put\",\"path\":\"f\",\"mode\":512}", "\"mode\": expected a permission");
	bad("{\"op\":\"get\",\"path\":\"f\",\"mode\":420}", "\"mode\"");
	bad("{\"op\":\"signal\",\"signal\":0}", "\"signal\": expected a signal number");
	bad("{\"op\":\"signal\",\"signal\":9999}", "\"signal\"");
	bad("{\"op\":\"info\",\"x\":1}", "unknown member \"x\"");
	good("{\"op\":\"workspace\",\"workspace\":\"sc-1.0\"}", SS_OP_WORKSPACE);
	if (parse("{\"op\":\"workspace-applied\",\"workspace\":\"sc-1.0\",\"epoch_sec\":5,"
		  "\"epoch_nsec\":6,\"paths\":3,\"conflicts\":1,\"changed\":2,\"forced\":true,"
		  "\"record\":\"/s/a.jsonl\"}",
		  err, sizeof(err))) {
		ok(q.op == SS_OP_APPLIED && strcmp(q.workspace, "sc-1.0") == 0 &&
		       q.epoch_sec == 5 && q.epoch_nsec == 6 && q.paths == 3 && q.conflicts == 1 &&
		       q.changed == 2 && q.forced && strcmp(q.record, "/s/a.jsonl") == 0,
		   "workspace-applied: every member read");
		ss_request_done(&q);
	} else {
		ok(false, "workspace-applied: every member read (%s)", err);
	}
	bad("{\"op\":\"workspace\"}", "\"workspace\": missing");
	bad("{\"op\":\"workspace\",\"workspace\":\"a\",\"path\":\"x\"}", "unknown member \"path\"");
	bad("{\"op\":\"workspace-applied\",\"workspace\":\"a\",\"record\":\"r\",\"epoch_sec\":1,"
	    "\"epoch_nsec\":1000000000,\"paths\":0,\"conflicts\":0,\"changed\":0,\"forced\":false}",
	    "\"epoch_nsec\": expected an integer from 0 to 999999999");
	bad("{\"op\":\"workspace-applied\",\"workspace\":\"a\",\"record\":\"r\",\"epoch_sec\":1,"
	    "\"epoch_nsec\":1,\"paths\":0,\"conflicts\":0,\"changed\":0,\"forced\":1}",
	    "\"forced\": expected true or false");

	/* argv and env above one control message: refused by the parser. */
	n = CTL_MAX_PAYLOAD + 16;
	big = malloc(n + 64);
	if (big) {
		static const char head[] = "{\"op\":\"exec\",\"argv\":[\"", tail[] = "\"]}";

		memcpy(big, head, sizeof(head) - 1);
		memset(big + sizeof(head) - 1, 'a', n);
		memcpy(big + sizeof(head) - 1 + n, tail, sizeof(tail));
		bad(big, "exceed");
		free(big);
	}
}

static void channel_strings(void)
{
	char buf[] = "cwd\0a\0b\0K=v";
	char *v[8];
	size_t n = 0;

	ok(ctl_split(buf, sizeof(buf), v, 7, &n) == 0 && n == 4 && strcmp(v[0], "cwd") == 0 &&
	       strcmp(v[3], "K=v") == 0 && v[4] == NULL,
	   "ctl_split: four strings");
	ok(ctl_split(buf, sizeof(buf) - 1, v, 7, &n) == -EPROTO, "ctl_split: no final NUL refused");
	ok(ctl_split(buf, sizeof(buf), v, 3, &n) == -E2BIG, "ctl_split: more than max refused");
	ok(ctl_split(buf, 0, v, 7, &n) == 0 && n == 0, "ctl_split: nothing is no string");
}

static void listing_and_names(void)
{
	static const char rec[] = "f\t12\t644\t1700000000\tname\twith tab";
	sc_dir_entry e;

	ok(sc_dir_entry_parse(rec, strlen(rec), &e) == 0 && e.type == 'f' && e.size == 12 &&
	       e.mode == 0644 && e.mtime == 1700000000 && strcmp(e.name, "name\twith tab") == 0,
	   "a listing record, a tab in the name");
	ok(sc_dir_entry_parse("f\t12\t644", 9, &e) == -EPROTO, "a short record refused");
	ok(sc_dir_entry_parse("ff\t1\t1\t1\tx", 10, &e) == -EPROTO,
	   "a type of two letters refused");
	ok(sc_dir_entry_parse("", 0, &e) == -EPROTO, "an empty record refused");

	ok(sc_session_name_valid("s-0a1b2c3d") && sc_session_name_valid("work.1_x"),
	   "session names");
	ok(!sc_session_name_valid("") && !sc_session_name_valid(".x") &&
	       !sc_session_name_valid("-x") && !sc_session_name_valid("a/b") &&
	       !sc_session_name_valid("a b") &&
	       !sc_session_name_valid(
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
	   "bad session names refused (empty, dot, dash, slash, space, 65 bytes)");
}

int main(void)
{
	requests();
	channel_strings();
	listing_and_names();
	return tap_done();
}

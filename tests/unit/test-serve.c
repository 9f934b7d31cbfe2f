/* SPDX-License-Identifier: MIT */
/* TAP tests for the API daemon's pure parts: requests, the sessions table,
 * exec requests and results, and the MCP message handling. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/backend.h"
#include "serve/mcp.h"
#include "serve/request.h"
#include "serve/table.h"
#include "tap.h"

static int parse(const char *s, sv_request *r)
{
	const char *reason;
	bool cont;
	int n = sv_request_parse(s, strlen(s), SV_MAX_BODY, r, &cont, &reason);

	if (n < 0)
		tap_diag("%.60s: %d %s", s, n, reason ? reason : "");
	return n;
}

static void expect(const char *s, int want, const char *what)
{
	sv_request r;
	int n = parse(s, &r);

	if (n == 1)
		sv_request_done(&r);
	if (!ok(n == want, "%s", what))
		tap_diag("got %d, want %d", n, want);
}

static void test_requests(void)
{
	sv_request r;
	const char *s = "POST /v1/sessions/api-1/files?path=%2Ftmp%2Fa+b&x HTTP/1.1\r\n"
			"Host: localhost\r\nContent-Length: 5\r\n\r\nhelloNEXT";

	ok(parse(s, &r) == 1 && r.n_segments == 4 && !strcmp(r.segments[0], "v1") &&
	       !strcmp(r.segments[3], "files") && r.body_len == 5 && !strcmp(r.body, "hello") &&
	       r.consumed == strlen(s) - 4,
	   "a request with a body; what follows it is left for the next one");
	ok(!strcmp(sv_request_query(&r, "path"), "/tmp/a b") && sv_request_query(&r, "x") &&
	       !sv_request_query(&r, "y"),
	   "query parameters decoded");
	sv_request_done(&r);
	s = "PUT /v1/x HTTP/1.1\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n3\r\nabc\r\n2;e=1\r\nde\r\n0\r\n\r\n";
	ok(parse(s, &r) == 1 && r.body_len == 5 && !memcmp(r.body, "abcde", 5) &&
	       r.consumed == strlen(s),
	   "a chunked body de-chunked");
	sv_request_done(&r);
	expect("PUT /v1/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab", 0,
	       "a chunked body in the middle: more is needed");
	expect("PUT /v1/x HTTP/1.1\r\nContent-Length: 10\r\n\r\nab", 0,
	       "a Content-Length body in the middle: more is needed");
	expect("GET /v1/x HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	       -400, "CL + TE refused");
	expect("GET /v1/x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", -400,
	       "two Content-Length refused");
	expect("GET /v1/x HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", -413,
	       "a body over the bound refused before it is read");
	expect("GET http://a/v1 HTTP/1.1\r\n\r\n", -400, "absolute-form refused");
	expect("GET /v1/../etc HTTP/1.1\r\n\r\n", -404, "dot segments refused");
	expect("GET /v1/a%2Fb HTTP/1.1\r\n\r\n", -400, "an encoded slash in a segment refused");
	expect("GET /v1/x?path=%00 HTTP/1.1\r\n\r\n", -400, "an encoded NUL refused");
	expect("GET /v1/x?path=%4 HTTP/1.1\r\n\r\n", -400, "a cut percent-escape refused");
	expect("GET /v1//x HTTP/1.1\r\n\r\n", -404, "an empty segment refused");
	expect("GET /v1/x HTTP/1.1\nHost: a\r\n\r\n", -400, "a bare LF refused");
	expect("GET /v1/x HTTP/2.0\r\n\r\n", -505, "HTTP/2 refused with 505");
	expect("GET /v1/x HTTP/1.1\r\n folded\r\n\r\n", -400, "obs-fold refused");
	expect("GET /a/b/c/d/e/f/g/h/i HTTP/1.1\r\n\r\n", -404, "too many segments refused");
	expect("GET / HTTP/1.1\r\n\r\n", 1, "the root parses (routes answer 404)");

	char *big = malloc(SV_MAX_HEAD + 64);

	strcpy(big, "GET /v1 HTTP/1.1\r\nX: ");
	memset(big + strlen(big), 'a', SV_MAX_HEAD);
	big[SV_MAX_HEAD + 20] = 0;
	expect(big, -431, "a head over the bound refused");
	free(big);
}

/* Feeds the body after the head of s to the chunked reader in pieces of
 * step bytes, as they would arrive; returns its last answer. */
static int feed_chunked(const char *s, size_t step, size_t max_body, sv_body_progress *p)
{
	const char *body = strstr(s, "\r\n\r\n") + 4, *reason = NULL;
	size_t len = strlen(body);
	int n = 0;

	memset(p, 0, sizeof(*p));
	for (size_t have = step < len ? step : len;; have = have + step < len ? have + step : len) {
		n = sv_request_chunked_progress(p, body, have, max_body, &reason);
		if (n != 0 || have == len)
			return n;
	}
}

static void test_body_bounds(void)
{
	sv_body_progress p;
	sv_request r;
	const char *s;

	expect("POST /v1/sessions HTTP/1.1\r\nContent-Length: 1048577\r\n\r\n", -413,
	       "a create over 1 MiB refused from its Content-Length, before its body");
	expect("POST /v1/sessions HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n{", 0,
	       "a create of 1 MiB is read");
	ok(parse("PUT /v1/sessions/x/files?path=/a HTTP/1.1\r\nContent-Length: 104857600\r\n\r\n",
		 &r) == 1 &&
	       r.stream_body && !r.body &&
	       r.consumed == strlen("PUT /v1/sessions/x/files?path=/a "
				    "HTTP/1.1\r\nContent-Length: "
				    "104857600\r\n\r\n"),
	   "a file put of 100 MB with Content-Length: complete at its head, its body streamed");
	expect("PUT /v1/sessions/x/files?path=/a HTTP/1.1\r\nContent-Length: 2199023255553\r\n\r\n",
	       -413, "a file put past 1 TiB refused from its Content-Length");
	ok(parse("PUT /v1/sessions/x/exec HTTP/1.1\r\nContent-Length: 9\r\n\r\n", &r) == 0 &&
	       !r.stream_body,
	   "only a file put is streamed");
	expect("DELETE /v1/sessions/x HTTP/1.1\r\nContent-Length: 4097\r\n\r\n", -413,
	       "a request that takes no body: at most 4 KiB");
	ok(parse("POST /v1/sessions/x/exec HTTP/1.1\r\nContent-Length: 9\r\n\r\n", &r) == 0 &&
	       r.head_done && r.max_body == SV_MAX_BODY,
	   "an exec: the head parsed, its body's bound known before the body");

	s = "PUT /v1/x HTTP/1.1\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n3\r\nabc\r\n2;e=1\r\nde\r\n0\r\n\r\n";
	ok(feed_chunked(s, 1, 100, &p) == 1 && p.data == 5 &&
	       p.fed == strlen(strstr(s, "\r\n\r\n") + 4),
	   "a chunked body followed a byte at a time: complete, 5 bytes of data");
	ok(feed_chunked(s, 1, 4, &p) == -413, "the same over a bound of 4: refused");
	s = "POST /v1/sessions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\nab";
	ok(feed_chunked(s, 3, SV_MAX_CREATE_BODY, &p) == -413 && p.data <= 2,
	   "a chunk announcing more than the bound: refused before its data");
	s = "POST /v1/sessions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n3\r\nab";
	ok(feed_chunked(s, 64, SV_MAX_CREATE_BODY, &p) == 0,
	   "an unfinished chunked body: more is needed");

	/* a 1 MiB chunk framing of 1-byte chunks: refused by its framing */
	size_t n = 6 * (SV_MAX_CHUNK_FRAMING / 5 + 1), len = 0;
	char *tiny = malloc(128 + n);

	len = (size_t)sprintf(
	    tiny, "PUT /v1/sessions/x/files HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (size_t i = 0; i + 6 <= n; i += 6)
		len += (size_t)sprintf(tiny + len, "1\r\nx\r\n");
	ok(feed_chunked(tiny, 65536, SV_MAX_BODY, &p) == -413 && p.data < SV_MAX_CHUNK_FRAMING,
	   "chunks of one byte each: refused once their framing passes 1 MiB");
	free(tiny);
}

static void test_exec_req(void)
{
	json_t *o =
	    json_loads("{\"argv\":[\"sh\",\"-c\",\"x\"],\"cwd\":\"/w\",\"env\":{\"A\":\"1\"},"
		       "\"stdin\":\"aGk=\"}",
		       0, NULL);
	sv_exec_req r;
	sv_error e;
	char **argv;

	ok(sv_exec_req_from_json(o, &r, &e) == 0 && r.argc == 3 && r.has_stdin &&
	       r.stdin_len == 2 && !strcmp(r.env[0], "A=1"),
	   "an exec request read");
	argv = sv_exec_argv("x", "s1", &r);
	ok(argv && !strcmp(argv[1], "exec") && !strcmp(argv[2], "--ndjson") &&
	       !strcmp(argv[3], "-i") && !strcmp(argv[5], "/w") && !strcmp(argv[7], "A=1") &&
	       !strcmp(argv[8], "s1") && !strcmp(argv[9], "--") && !strcmp(argv[10], "sh") &&
	       !argv[13],
	   "its sandcap exec argv");
	free(argv);
	sv_exec_req_done(&r);
	json_decref(o);

	static const struct {
		const char *json, *path;
	} bad[] = {
	    {"{\"argv\":[]}", "$.argv"},
	    {"{\"argv\":\"ls\"}", "$.argv"},
	    {"{\"argv\":[\"a\",1]}", "$.argv[1]"},
	    {"{\"argv\":[\"a\"],\"cwd\":\"rel\"}", "$.cwd"},
	    {"{\"argv\":[\"a\"],\"env\":{\"A=B\":\"1\"}}", "$.env"},
	    {"{\"argv\":[\"a\"],\"stdin\":\"***\"}", "$.stdin"},
	    {"{\"argv\":[\"a\"],\"nope\":1}", "$"},
	    {"{\"argv\":[\"a\\u0000b\"]}", "$.argv[0]"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = json_loads(bad[i].json, JSON_ALLOW_NUL, NULL);
		int rc = sv_exec_req_from_json(o, &r, &e);

		if (!ok(rc == -400 && !strcmp(e.path, bad[i].path), "%s refused at %s", bad[i].json,
			bad[i].path))
			tap_diag("got %d at %s: %s", rc, e.path, e.message);
		sv_exec_req_done(&r);
		json_decref(o);
	}
}

static void test_exec_result(void)
{
	sv_exec_result r = {0};
	const char *l1 = "{\"stream\":\"stdout\",\"data\":\"aGk=\"}";
	const char *l2 = "{\"stream\":\"stderr\",\"data\":\"eA==\"}";
	const char *l3 = "{\"exit_code\":3,\"signal\":null,\"limits_hit\":[],\"duration_ms\":1}";

	ok(sv_exec_result_line(&r, l1, strlen(l1), 100) == 0 &&
	       sv_exec_result_line(&r, l2, strlen(l2), 100) == 0 &&
	       sv_exec_result_line(&r, l3, strlen(l3), 100) == 0 && r.out_len == 2 &&
	       !strcmp(r.out, "hi") && !strcmp(r.err, "x") &&
	       json_integer_value(json_object_get(r.final, "exit_code")) == 3,
	   "NDJSON lines gathered into stdout, stderr and the end");
	ok(sv_exec_result_line(&r, l1, strlen(l1), 3) == -EFBIG, "output over the bound refused");
	ok(sv_exec_result_line(&r, "{\"stream\":\"x\",\"data\":\"\"}", 24, 100) == -EBADMSG,
	   "an unknown stream refused");
	sv_exec_result_done(&r);
}

static void test_table(void)
{
	sv_table t;
	sv_session s = {.uid = 1000}, got;
	json_t *l;

	ok(sv_table_init(&t) == 0, "table");
	strcpy(s.name, "a");
	ok(sv_table_reserve(&t, 1000, 2) == 0 && sv_table_add(&t, &s, 0) == 0, "uid 1000: one");
	strcpy(s.name, "b");
	ok(sv_table_reserve(&t, 1000, 2) == 0 && sv_table_add(&t, &s, 0) == 0, "uid 1000: two");
	ok(sv_table_reserve(&t, 1000, 2) == -EDQUOT, "uid 1000: a third is over its quota");
	ok(sv_table_reserve(&t, 1001, 2) == 0, "uid 1001 has its own quota");
	sv_table_unreserve(&t, 1001);
	ok(sv_table_get(&t, "a", 1001, &got) == -ENOENT, "uid 1001 cannot see uid 1000's session");
	ok(sv_table_remove(&t, "a", 1001, &got) == -ENOENT, "nor stop it");
	l = sv_table_list(&t, 1001);
	ok(json_array_size(l) == 0, "nor list it");
	json_decref(l);
	l = sv_table_list(&t, 1000);
	ok(json_array_size(l) == 2, "uid 1000 lists its two");
	json_decref(l);
	ok(sv_table_remove(&t, "a", 1000, &got) == 0 && sv_table_reserve(&t, 1000, 2) == 0,
	   "a stop frees a place in the quota");

	char sb[64];
	bool live = true;

	strcpy(got.sandbox, "sb-a");
	sv_table_end(&t, &got);
	ok(sv_table_owner(&t, "a", 1000, sb, sizeof(sb), &live, &s) == 0 && !live &&
	       !strcmp(sb, "sb-a"),
	   "a stopped session's workspaces stay its owner's");
	ok(sv_table_owner(&t, "a", 1001, sb, sizeof(sb), &live, &s) == -ENOENT,
	   "and no other uid's");
	ok(sv_table_owner(&t, "b", 1000, sb, sizeof(sb), &live, &s) == 0 && live,
	   "a live one is live");
	for (unsigned i = 0; i < SV_MAX_ENDED; i++) {
		snprintf(got.name, sizeof(got.name), "x%u", i);
		sv_table_end(&t, &got);
	}
	ok(sv_table_owner(&t, "a", 1000, sb, sizeof(sb), &live, &s) == -ENOENT &&
	       sv_table_owner(&t, "x0", 1000, sb, sizeof(sb), &live, &s) == 0,
	   "the oldest of more than SV_MAX_ENDED is forgotten");
	sv_table_free(&t);
}

static int fake_run(void *ud, const sv_exec_req *req, sv_exec_result *ret, sv_error *e)
{
	(void)ud;
	(void)e;
	memset(ret, 0, sizeof(*ret));
	ret->out = strdup(req->argv[req->argc - 1]);
	ret->out_len = strlen(ret->out);
	ret->err = strdup("\xff");
	ret->err_len = 1;
	ret->final = json_loads("{\"exit_code\":0,\"signal\":null,\"limits_hit\":[]}", 0, NULL);
	return 0;
}

static int fake_write(void *ud, const char *path, const void *data, size_t len, sv_error *e)
{
	(void)ud;
	(void)data;
	(void)len;
	return strcmp(path, "/ro/x") ? 0 : sv_fail(e, 403, "denied", NULL, "read-only");
}

static int fake_read(void *ud, const char *path, char **ret, size_t *ret_len, sv_error *e)
{
	(void)ud;
	(void)e;
	*ret = strdup(path);
	*ret_len = strlen(path);
	return 0;
}

static int fake_list(void *ud, const char *path, json_t **ret, sv_error *e)
{
	(void)ud;
	(void)path;
	(void)e;
	*ret = json_pack("[{s:s}]", "name", "a");
	return 0;
}

static json_t *mcp(mcp_state *st, const char *msg)
{
	mcp_ops ops = {fake_run, fake_write, fake_read, fake_list, NULL};
	char *reply = NULL;
	json_t *o;

	if (mcp_handle(st, &ops, msg, strlen(msg), &reply) < 0)
		return NULL;
	o = reply ? json_loads(reply, 0, NULL) : json_null();
	free(reply);
	return o;
}

static void test_mcp(void)
{
	mcp_state st = {.sandbox = "s", .audit = "/a"};
	json_t *r;

	r = mcp(&st, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"tools/list\"}");
	ok(json_integer_value(json_object_get(json_object_get(r, "error"), "code")) == -32600,
	   "tools/list before initialize: refused (-32600)");
	json_decref(r);
	r = mcp(&st, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}");
	ok(json_is_object(json_object_get(r, "result")), "ping before initialize: answered");
	json_decref(r);
	r = mcp(&st, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
		     "{\"protocolVersion\":\"bogus\",\"capabilities\":{}}}");
	ok(json_integer_value(json_object_get(json_object_get(r, "error"), "code")) == -32602 &&
	       json_array_size(json_object_get(json_object_get(json_object_get(r, "error"), "data"),
					       "supported")) == 3,
	   "initialize with a version that is not one: -32602 with the versions spoken");
	json_decref(r);
	ok(!strcmp(mcp_negotiate("2024-11-05") ?: "", "2024-11-05") &&
	       !strcmp(mcp_negotiate("2025-03-26") ?: "", "2025-03-26") &&
	       !strcmp(mcp_negotiate("2031-01-01") ?: "", "2025-06-18") && !mcp_negotiate(NULL) &&
	       !mcp_negotiate("2025-6-18"),
	   "versions: an older one spoken is echoed, another date gets the newest, no date none");

	r = mcp(&st, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
		     "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}}");
	ok(!strcmp(
	       json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion"))
		   ?: "",
	       "2025-06-18"),
	   "initialize answers protocol 2025-06-18");
	json_decref(r);
	r = mcp(&st, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	ok(json_is_null(r) && st.initialized, "a notification gets no reply");
	json_decref(r);
	r = mcp(&st, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/list\"}");
	ok(json_array_size(json_object_get(json_object_get(r, "result"), "tools")) == 4,
	   "tools/list has the four tools");
	{
		json_t *tools = json_object_get(json_object_get(r, "result"), "tools");
		json_t *run = json_object_get(json_array_get(tools, 0), "annotations");
		json_t *read = json_object_get(json_array_get(tools, 2), "annotations");

		ok(json_is_false(json_object_get(run, "readOnlyHint")) &&
		       json_is_true(json_object_get(run, "destructiveHint")) &&
		       json_is_true(json_object_get(run, "openWorldHint")) &&
		       json_is_true(json_object_get(read, "readOnlyHint")) &&
		       json_is_false(json_object_get(read, "openWorldHint")),
		   "each tool carries its annotations (run_command may change and reach out, "
		   "read_file only reads)");
	}
	json_decref(r);
	r = mcp(&st, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
		     "\"run_command\",\"arguments\":{\"command\":\"echo hi\"}}}");
	json_t *res = json_object_get(r, "result");
	json_t *sc = json_object_get(res, "structuredContent");

	ok(json_is_false(json_object_get(res, "isError")) &&
	       !strcmp(json_string_value(json_object_get(sc, "stdout")) ?: "", "echo hi") &&
	       !strcmp(json_string_value(json_object_get(sc, "stderr")) ?: "", "\xef\xbf\xbd"),
	   "run_command runs through sh -c; bytes that are not UTF-8 become U+FFFD");
	json_decref(r);
	r = mcp(&st, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
		     "\"write_file\",\"arguments\":{\"path\":\"/ro/x\",\"content\":\"a\"}}}");
	ok(json_is_true(json_object_get(json_object_get(r, "result"), "isError")),
	   "a tool that fails is a result with isError, not a protocol error");
	json_decref(r);
	r = mcp(&st, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
		     "\"read_file\",\"arguments\":{\"path\":\"relative\"}}}");
	ok(json_is_true(json_object_get(json_object_get(r, "result"), "isError")),
	   "a relative path is refused");
	json_decref(r);

	static const struct {
		const char *msg;
		int code;
	} bad[] = {
	    {"{not json", -32700},
	    {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600},
	    {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -32600},
	    {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", -32600},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}", -32601},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}",
	     -32602},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", -32700},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = mcp(&st, bad[i].msg);
		ok(json_integer_value(json_object_get(json_object_get(r, "error"), "code")) ==
		       bad[i].code,
		   "%s: error %d", bad[i].msg, bad[i].code);
		json_decref(r);
	}
}

int main(void)
{
	test_requests();
	test_body_bounds();
	test_exec_req();
	test_exec_result();
	test_table();
	test_mcp();
	return tap_done();
}

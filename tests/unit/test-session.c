/* SPDX-License-Identifier: MIT */
/*
 * Unit tests (TAP) for what a session's supervisor and clients parse: the
 * client requests, JSON and exec messages (src/session/request.c), the strings of
 * pid 1's channel (core/ctl.c), listing records and session names
 * (src/session/), and the exec front's base64 (base/base64.c).
 */
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "core/ctl.h"
#include "session/exec-wire.h"
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
	char err[256];

	good("{\"op\":\"put\",\"path\":\"/work/f\",\"mode\":384}", SS_OP_PUT);
	good("{\"op\":\"get\",\"path\":\"f\"}", SS_OP_GET);
	good("{\"op\":\"ls\",\"path\":\".\"}", SS_OP_LS);
	good("{\"op\":\"info\"}", SS_OP_INFO);
	good("{\"op\":\"stop\"}", SS_OP_STOP);
	good("{\"op\":\"begin\"}", SS_OP_BEGIN);
	good("{\"op\":\"commands\"}", SS_OP_COMMANDS);
	good("{\"op\":\"pause\"}", SS_OP_PAUSE);
	ok(parse("{\"op\":\"watch\",\"path\":\"/work\",\"recursive\":true}", err, sizeof(err)) &&
	       q.op == SS_OP_WATCH && q.mode == 1 && strcmp(q.path, "/work") == 0,
	   "watch: recursive");
	ss_request_done(&q);
	good("{\"op\":\"watch\",\"path\":\"/work\"}", SS_OP_WATCH);
	bad("{\"op\":\"watch\",\"path\":\"/w\",\"recursive\":1}", "\"recursive\": expected true");
	bad("{\"op\":\"watch\",\"path\":\"/w\",\"depth\":1}", "unknown member \"depth\"");
	good("{\"op\":\"resume\"}", SS_OP_RESUME);
	bad("{\"op\":\"pause\",\"seconds\":1}", "unknown member \"seconds\"");
	ok(parse("{\"op\":\"kill\",\"id\":3}", err, sizeof(err)) && q.op == SS_OP_KILL &&
	       q.id == 3 && q.signal == SIGKILL,
	   "kill: SIGKILL by default");
	ss_request_done(&q);
	ok(parse("{\"op\":\"kill\",\"id\":4,\"signal\":15}", err, sizeof(err)) && q.id == 4 &&
	       q.signal == SIGTERM,
	   "kill: a signal given");
	ss_request_done(&q);
	bad("{\"op\":\"kill\"}", "\"id\": expected an integer");
	bad("{\"op\":\"kill\",\"id\":0}", "\"id\": at least 1");
	bad("{\"op\":\"kill\",\"id\":1,\"signal\":0}", "\"signal\": at least 1");
	bad("{\"op\":\"kill\",\"id\":1,\"signal\":65}", "\"signal\": expected an integer");
	bad("{\"op\":\"kill\",\"id\":4294967296}", "\"id\": expected an integer");
	bad("{\"op\":\"commands\",\"id\":1}", "unknown member \"id\"");

	/* An exec and what follows it are core/ctl.h messages only. */
	bad("{\"op\":\"exec\",\"argv\":[\"sh\"]}", "exec is not JSON but a core/ctl.h message");
	bad("{\"op\":\"signal\",\"signal\":2}", "signal is not JSON");
	bad("{\"op\":\"go\"}", "go is not JSON");
	bad("[1]", "a request is a JSON object");
	bad("{\"op\":\"run\"}", "\"op\": expected one of put");
	bad("{}", "\"op\": expected one of");
	bad("{\"op\":\"put\"}", "\"path\": missing");
	bad("{\"op\":\"put\",\"path\":\"\"}", "\"path\": empty");
	bad("{\"op\":\"put\",\"path\":\"f\",\"mode\":512}", "\"mode\": expected a permission");
	bad("{\"op\":\"get\",\"path\":\"f\",\"mode\":420}", "\"mode\"");
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

/* An exec-side message (session/exec-wire.h) of hdr and len payload bytes,
 * parsed; err gets the message when refused. */
static bool parse_fixed(ctl_hdr h, const char *payload, size_t len, char *err, size_t elen)
{
	char *buf = malloc(sizeof(h) + len + 1);
	int r;

	h.len = (uint32_t)len;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), payload, len);
	err[0] = '\0';
	r = ss_request_parse_ctl(buf, sizeof(h) + len, &q, err, elen);
	if (r < 0)
		free(buf);
	return r >= 0;
}

static void fixed_bad(ctl_hdr h, const char *payload, size_t len, const char *msg)
{
	char err[256];
	bool r = parse_fixed(h, payload, len, err, sizeof(err));

	ok(!r && strstr(err, msg), "exec message refused: %s", msg);
	if (r)
		ss_request_done(&q);
	else if (!strstr(err, msg))
		tap_diag("  got \"%s\"", err);
}

static void fixed_form(void)
{
	static const char exec_p[] = "/w\0sh\0-c\0echo $A\0A=1\0B_2=x=y\0";
	ctl_hdr e = {.type = CTL_EXEC, .n_argv = 3};
	char err[256], *big;

	ok(parse_fixed(e, exec_p, sizeof(exec_p) - 1, err, sizeof(err)) && q.op == SS_OP_EXEC &&
	       strcmp(q.cwd, "/w") == 0 && q.n_argv == 3 && strcmp(q.argv[2], "echo $A") == 0 &&
	       !q.argv[3] && q.n_env == 2 && strcmp(q.env[1], "B_2=x=y") == 0 && !q.tty,
	   "exec: cwd, argv and env split");
	ss_request_done(&q);
	e.flags = CTL_TTY;
	e.value = 24 << 16 | 80;
	e.n_argv = 1;
	ok(parse_fixed(e, "\0sh\0", 4, err, sizeof(err)) && q.tty && q.rows == 24 && q.cols == 80 &&
	       q.cwd[0] == '\0' && q.n_env == 0,
	   "exec: a pty of 24x80, the workdir");
	ss_request_done(&q);
	e = (ctl_hdr){.type = CTL_EXEC, .n_argv = 1, .flags = SX_HOLD};
	ok(parse_fixed(e, "\0sh\0", 4, err, sizeof(err)) && q.op == SS_OP_EXEC && q.hold && !q.tty,
	   "exec: held");
	ss_request_done(&q);
	e = (ctl_hdr){.type = CTL_EXEC, .n_argv = 1, .flags = SX_DETACH};
	ok(parse_fixed(e, "\0sh\0", 4, err, sizeof(err)) && q.detach && !q.hold && !q.tty,
	   "exec: detached");
	ss_request_done(&q);
	e.flags = SX_DETACH | CTL_TTY;
	fixed_bad(e, "\0sh\0", 4, "a detached command has no pty");
	e.flags = SX_DETACH | SX_HOLD;
	fixed_bad(e, "\0sh\0", 4, "a detached command has no pty and is not held");
	e = (ctl_hdr){.type = CTL_GO};
	ok(parse_fixed(e, "", 0, err, sizeof(err)) && q.op == SS_OP_GO, "go");
	ss_request_done(&q);
	e.value = 1;
	fixed_bad(e, "", 0, "go: no value, flags or payload");
	e = (ctl_hdr){.type = CTL_EXEC, .n_argv = 1};
	fixed_bad(e, "\0\0", 2, "empty command");
	fixed_bad(e, "\0sh", 3, "end with a NUL");
	e.n_argv = 2;
	fixed_bad(e, "\0sh\0", 4, "2 strings of argv announced, 1 there");
	e.n_argv = 0;
	fixed_bad(e, "\0sh\0", 4, "1 to 4096 strings of argv");
	e.n_argv = 1;
	fixed_bad(e, "\0sh\0=x\0", 7, "\"env\"[0]: expected \"KEY=VALUE\"");
	fixed_bad(e, "\0sh\0A-B=x\0", 10, "a name is");
	e.flags = 8;
	fixed_bad(e, "\0sh\0", 4, "unknown flags");
	e.flags = 0;
	e.id = 7;
	fixed_bad(e, "\0sh\0", 4, "id, err, mode and bytes are 0");
	e.id = 0;
	big = malloc(CTL_MAX_PAYLOAD + 8);
	memset(big, 'a', CTL_MAX_PAYLOAD + 8);
	big[0] = '\0';
	big[CTL_MAX_PAYLOAD + 7] = '\0';
	fixed_bad(e, big, CTL_MAX_PAYLOAD + 8, "exceed");
	free(big);
	/* 257 env strings: one more than an exec takes. */
	{
		size_t n = 0;

		big = malloc(4 + 257 * 4);
		memcpy(big, "\0sh\0", 4);
		n = 4;
		for (int i = 0; i < 257; i++) {
			memcpy(big + n, "A=1\0", 4);
			n += 4;
		}
		fixed_bad(e, big, n, "at most 256");
		free(big);
	}
	{
		ctl_hdr h = {.type = CTL_EXEC, .n_argv = 1, .len = 9};
		char buf[sizeof(h) + 4];

		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), "\0sh\0", 4);
		ok(ss_request_parse_ctl(buf, sizeof(buf), &q, err, sizeof(err)) < 0 &&
		       strstr(err, "9 payload bytes announced, 4 there"),
		   "exec: a length that does not match is refused");
		ok(ss_request_parse_ctl(buf, 10, &q, err, sizeof(err)) < 0,
		   "exec: shorter than a header is refused");
	}
	e = (ctl_hdr){.type = CTL_SIGNAL, .value = SIGTERM};
	ok(parse_fixed(e, "", 0, err, sizeof(err)) && q.op == SS_OP_SIGNAL && q.signal == SIGTERM,
	   "a signal");
	ss_request_done(&q);
	e.value = NSIG;
	fixed_bad(e, "", 0, "expected a signal number");
	e = (ctl_hdr){.type = CTL_PUT};
	fixed_bad(e, "x\0", 2, "expected an exec (2), signal (6) or go (10) message");
}

static void base64(void)
{
	unsigned char in[64], want[100];
	char got[100];
	bool same = true, url_same = true, back = true;
	uint8_t *d = NULL;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 37 + 11);
	for (size_t k = 0; k <= sizeof(in); k++) {
		int w = EVP_EncodeBlock(want, in, (int)k);
		size_t l;

		same = same && b64_encode(in, k, got) == (size_t)w && B64_LEN(k) == (size_t)w &&
		       strcmp(got, (char *)want) == 0;
		back = back && b64_decode(got, strlen(got), &d, &n) == 0 && n == k &&
		       !memcmp(d, in, k);
		free(d);
		d = NULL;
		/* base64url: the same without padding, - and _ for + and / */
		while (w > 0 && want[w - 1] == '=')
			want[--w] = '\0';
		for (int j = 0; j < w; j++)
			want[j] = want[j] == '+' ? '-' : want[j] == '/' ? '_' : want[j];
		l = b64url_encode(in, k, got);
		url_same = url_same && l == (size_t)w && B64URL_LEN(k) == l &&
			   strcmp(got, (char *)want) == 0;
		back = back && b64url_decode(got, l, &d, &n) == 0 && n == k && !memcmp(d, in, k);
		free(d);
		d = NULL;
	}
	ok(same, "base64: as OpenSSL's EVP_EncodeBlock for 0 to 64 bytes");
	ok(url_same, "base64url: the same, unpadded, in the URL alphabet");
	ok(back, "both decode back");
	ok(b64_decode("aGk", 3, &d, &n) == -EBADMSG,
	   "base64: a length not a multiple of 4 refused");
	ok(b64_decode("a=Gk", 4, &d, &n) == -EBADMSG, "base64: padding inside refused");
	ok(b64_decode("aG*k", 4, &d, &n) == -EBADMSG, "base64: a character outside refused");
	ok(b64_decode("aGl=", 4, &d, &n) == -EBADMSG && b64_decode("aGk=", 4, &d, &n) == 0,
	   "base64: non-zero unused bits refused (one encoding per byte string)");
	free(d);
	d = NULL;
	ok(b64_decode("", 0, &d, &n) == 0 && n == 0, "base64: empty is empty");
	free(d);
	d = NULL;
	ok(b64url_decode("aGk=", 4, &d, &n) == -EBADMSG && b64url_decode("a", 1, &d, &n) < 0 &&
	       b64url_decode("a+", 2, &d, &n) < 0,
	   "base64url: padding, an impossible length and the other alphabet refused");
	ok(b64url_is_char('-') && b64url_is_char('_') && !b64url_is_char('+') &&
	       !b64url_is_char('='),
	   "base64url: its alphabet");
}

int main(void)
{
	requests();
	fixed_form();
	base64();
	channel_strings();
	listing_and_names();
	return tap_done();
}

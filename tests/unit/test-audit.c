/* SPDX-License-Identifier: MIT */
/*
 * The audit log: a written log verifies; every kind of tampering is caught
 * at the line where it becomes visible; the seal's HMAC catches a cut tail;
 * verification of a large log runs in constant memory. TAP output.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit-internal.h"
#include "audit/audit.h"
#include "audit/tally.h"
#include "base/cleanup.h"
#include "base/io.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-audit-XXXXXX";

static const uint8_t key[32] = "0123456789abcdef0123456789abcdef";
static const uint8_t other_key[32] = "fedcba9876543210fedcba9876543210";

static char *path_in_tmp(const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
		abort();
	return p;
}

static json_t *plan_json(void)
{
	return json_pack("{s:i, s:s, s:{s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}], s:s},"
			 " s:{s:[{s:s, s:[i], s:[s, s]}], s:[], s:s},"
			 " s:{s:I, s:i, s:i, s:I}}",
			 "version", 1, "name", "research-agent", "fs", "runtime", "host", "grants",
			 "path", "/data/public", "at", "/data/public", "mode", "ro", "path",
			 "/tmp/agent-work", "at", "/work", "mode", "rw", "workdir", "/work", "net",
			 "egress", "host", "api.example.com", "ports", 443, "methods", "GET",
			 "POST", "allow_private", "rate", "20/s", "limits", "memory",
			 (json_int_t)256 << 20, "cpu_millis", 500, "pids", 64, "wall_ns",
			 (json_int_t)30000000000);
}

/* A typical run: returns the number of records written (seal included). */
static int write_run(const char *path, const uint8_t *k, char last_hash[AU_HASH_HEX + 1])
{
	au_log *log = NULL;
	int r, n = 0;
	static const char bad_utf8[] = "/work/caf\xc3\xa9-\xff\xfe.txt";

	r = au_open(path, k, k ? 32 : 0, "sc-test-0001", AUDIT_FSYNC_BOUNDARIES, &log);
	if (r < 0)
		return r;
#define EMIT(ev, ...)                                                                              \
	do {                                                                                       \
		r = au_emit(log, ev, json_pack(__VA_ARGS__));                                      \
		if (r < 0)                                                                         \
			goto out;                                                                  \
		n++;                                                                               \
	} while (0)
	EMIT("sandbox.start", "{s:o, s:[s, s], s:{s:b, s:i, s:b, s:s}, s:[]}", "plan", plan_json(),
	     "command", "python3", "agent.py", "layers", "namespaces", 1, "landlock", 7, "seccomp",
	     1, "cgroup", "v1", "not_enforced");
	EMIT("fs.grant", "{s:s, s:s, s:s}", "path", "/data/public", "at", "/data/public", "mode",
	     "ro");
	EMIT("fs.grant", "{s:s, s:s, s:s}", "path", "/tmp/agent-work", "at", "/work", "mode", "rw");
	EMIT("proc.exec", "{s:i, s:s, s:[s, s]}", "pid", 2, "path", "/usr/bin/python3", "argv",
	     "python3", "agent.py");
	EMIT("net.request", "{s:s, s:s, s:i, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i}", "method",
	     "GET", "host", "api.example.com", "port", 443, "path", "/v1/items", "addr",
	     "93.184.216.34", "decision", "allow", "rule", 0, "status", 200, "bytes_out", 120,
	     "bytes_in", 4096, "duration_ms", 35);
	EMIT("net.denied", "{s:s, s:i, s:s, s:s}", "host", "evil.example", "port", 443, "method",
	     "POST", "reason", "host not allowed");
	EMIT("proc.exec", "{s:i, s:s, s:[s, s, s]}", "pid", 3, "path", "/bin/sh", "argv", "sh",
	     "-c", "curl \x1b[31mred\x1b[0m");
	EMIT("syscall.denied", "{s:i, s:s, s:i}", "pid", 3, "syscall", "ptrace", "nr", 101);
	r = au_emit(log, "fs.write",
		    json_pack("{s:o, s:s}", "path", au_str(bad_utf8, strlen(bad_utf8), 4096), "op",
			      "create"));
	if (r < 0)
		goto out;
	n++;
	EMIT("limit.hit", "{s:s, s:s}", "limit", "memory", "detail", "oom kill of pid 3");
	EMIT("proc.exec", "{s:i, s:s, s:[s]}", "pid", 4, "path", "/usr/bin/true", "argv", "true");
	EMIT("sandbox.exit", "{s:i, s:i, s:b, s:b, s:I, s:I, s:I, s:i, s:I, s:i, s:i, s:i, s:i}",
	     "status", 0, "signal", 0, "timed_out", 0, "oom_killed", 0, "cpu_ns",
	     (json_int_t)1234000000, "throttled_ns", (json_int_t)5000000, "memory_peak",
	     (json_int_t)50 << 20, "oom_kills", 1, "wall_ns", (json_int_t)2500000000, "bytes_out",
	     120, "bytes_in", 4096, "requests_allowed", 1, "requests_denied", 1);
#undef EMIT
	r = au_seal(log);
	if (r < 0)
		goto out;
	n++;
	if (last_hash)
		strcpy(last_hash, au_last_hash(log));
	r = n;
out:
	au_close(log);
	return r;
}

/* The log as an array of lines (newlines kept). */
typedef struct lines {
	char **l;
	size_t n;
} lines;

static lines read_lines(const char *path)
{
	_cleanup_free_ char *buf = NULL;
	lines ls = {0};
	size_t len;
	char *p, *nl;

	if (io_read_file_at(AT_FDCWD, path, 64u << 20, &buf, &len) < 0)
		abort();
	ls.l = calloc(len + 1, sizeof(char *));
	for (p = buf; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p) - 1;
		ls.l[ls.n++] = strndup(p, (size_t)(nl - p + 1));
	}
	return ls;
}

static void free_lines(lines *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		free(ls->l[i]);
	free(ls->l);
}

static char *join(const lines *ls)
{
	size_t total = 1;
	char *s;

	for (size_t i = 0; i < ls->n; i++)
		total += strlen(ls->l[i]);
	s = calloc(1, total);
	for (size_t i = 0; i < ls->n; i++)
		strcat(s, ls->l[i]);
	return s;
}

static int verify_buf(const char *buf, size_t len, const uint8_t *k, size_t *line, char *reason,
		      size_t reason_len)
{
	FILE *f = fmemopen((void *)buf, len ? len : 1, "r");
	int r;

	if (len == 0) {
		/* fmemopen refuses a zero-size buffer: read an empty pipe. */
		fclose(f);
		f = fopen("/dev/null", "r");
	}
	r = au_verify(f, k, k ? 32 : 0, line, reason, reason_len);
	fclose(f);
	return r;
}

static void expect_fail(const lines *ls, const uint8_t *k, size_t want_line, const char *want,
			const char *what)
{
	_cleanup_free_ char *s = join(ls);
	char reason[256] = "";
	size_t line = 0;
	int r = verify_buf(s, strlen(s), k, &line, reason, sizeof(reason));

	ok(r == -EBADMSG && line == want_line && strstr(reason, want),
	   "%s: fails at line %zu with \"%s\" (got %d, line %zu: %s)", what, want_line, want, r,
	   line, reason);
}

static lines copy_lines(const lines *ls)
{
	lines c = {.l = calloc(ls->n + 2, sizeof(char *)), .n = ls->n};

	for (size_t i = 0; i < ls->n; i++)
		c.l[i] = strdup(ls->l[i]);
	return c;
}

static void remove_line(lines *ls, size_t idx)
{
	free(ls->l[idx]);
	memmove(ls->l + idx, ls->l + idx + 1, (ls->n - idx - 1) * sizeof(char *));
	ls->n--;
}

static void insert_line(lines *ls, size_t idx, char *s)
{
	memmove(ls->l + idx + 1, ls->l + idx, (ls->n - idx) * sizeof(char *));
	ls->l[idx] = s;
	ls->n++;
}

/* A record built exactly as the writer would, chained after line idx-1. */
static char *forge(const lines *ls, size_t idx, uint64_t seq, const char *sandbox,
		   const char *event, const char *data, const uint8_t *prev_override)
{
	au_record rec = {0};
	uint8_t prev[AU_HASH_BYTES], hash[AU_HASH_BYTES];
	struct timespec ts = {.tv_sec = 1795941000};
	char *line = NULL, reason[128];
	size_t len;

	if (prev_override)
		memcpy(prev, prev_override, AU_HASH_BYTES);
	else {
		const char *pl = ls->l[idx - 1];

		if (au_parse_record(pl, strlen(pl) - 1, &rec, reason, sizeof(reason)) < 0)
			abort();
		memcpy(prev, rec.hash, AU_HASH_BYTES);
		au_record_clear(&rec);
	}
	if (au_record_build(seq, &ts, sandbox, event, data, prev, &line, &len, hash) < 0)
		abort();
	return line;
}

/* The timestamp is formatted by hand below the second and cached per
 * second: each field must still come out right, across seconds. */
static void test_timestamps(void)
{
	static const struct {
		time_t sec;
		long nsec;
		const char *want;
	} cases[] = {
	    {0, 0, "1970-01-01T00:00:00.000000000Z"},
	    {1795000000, 5, "2026-11-18T11:06:40.000000005Z"},
	    {1795000000, 999999999, "2026-11-18T11:06:40.999999999Z"},
	    {1795000001, 120000000, "2026-11-18T11:06:41.120000000Z"},
	    {951782400, 1, "2000-02-29T00:00:00.000000001Z"},
	    {1795000000, 42, "2026-11-18T11:06:40.000000042Z"},
	};
	char out[AU_TS_LEN + 1];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct timespec ts = {.tv_sec = cases[i].sec, .tv_nsec = cases[i].nsec};
		int r = au_format_ts(&ts, out);

		ok(r == 0 && strcmp(out, cases[i].want) == 0, "timestamp %lld.%09ld is %s (%s)",
		   (long long)cases[i].sec, cases[i].nsec, cases[i].want, r == 0 ? out : "error");
	}
	ok(au_format_ts(&(struct timespec){.tv_sec = 1795000000, .tv_nsec = 1000000000}, out) ==
	       -ERANGE,
	   "nanoseconds past 999999999 are refused");
	ok(au_format_ts(&(struct timespec){.tv_sec = 253402300800, .tv_nsec = 0}, out) == -ERANGE,
	   "a year past 9999 is refused");
}

static void test_roundtrip(void)
{
	_cleanup_free_ char *path = path_in_tmp("plain.log"), *kpath = path_in_tmp("keyed.log");
	char last[AU_HASH_HEX + 1], klast[AU_HASH_HEX + 1], reason[256] = "";
	au_verify_info info;
	size_t line = 99;
	struct stat st;
	FILE *f;
	int n, r;

	n = write_run(path, NULL, last);
	ok(n == 13, "a run of 12 events and a seal is written (%d)", n);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "the log is mode 0600");
	f = fopen(path, "r");
	r = au_verify_ex(f, NULL, 0, &info, &line, reason, sizeof(reason));
	fclose(f);
	ok(r == 0 && line == 0, "an untouched log verifies (%d: %s)", r, reason);
	ok(info.records == 13 && info.sealed && !info.keyed && !info.hmac_checked,
	   "info: 13 records, sealed, not keyed");
	ok(strcmp(info.last_hash, last) == 0, "verify reports the writer's last hash");
	ok(strcmp(info.sandbox, "sc-test-0001") == 0, "verify reports the sandbox id");

	n = write_run(kpath, key, klast);
	f = fopen(kpath, "r");
	r = au_verify_ex(f, key, sizeof(key), &info, &line, reason, sizeof(reason));
	fclose(f);
	ok(n == 13 && r == 0 && info.keyed && info.hmac_checked,
	   "a keyed log verifies with its key and the HMAC is checked (%d: %s)", r, reason);
	f = fopen(kpath, "r");
	r = au_verify_ex(f, NULL, 0, &info, &line, reason, sizeof(reason));
	fclose(f);
	ok(r == 0 && info.keyed && !info.hmac_checked,
	   "a keyed log verifies without the key, HMAC unchecked");
	f = fopen(kpath, "r");
	r = au_verify(f, other_key, sizeof(other_key), &line, reason, sizeof(reason));
	fclose(f);
	ok(r == -EBADMSG && line == 13 && strstr(reason, "HMAC mismatch"),
	   "the wrong key fails at the seal (line %zu: %s)", line, reason);
	f = fopen(path, "r");
	r = au_verify(f, key, sizeof(key), &line, reason, sizeof(reason));
	fclose(f);
	ok(r == -EBADMSG && line == 13 && strstr(reason, "sealed without a key"),
	   "a key given for an unkeyed log fails (line %zu: %s)", line, reason);
	f = fopen(path, "r");
	r = au_verify(f, key, 8, &line, reason, sizeof(reason));
	fclose(f);
	ok(r == -EINVAL, "a key shorter than AU_KEY_MIN is refused");
}

static void test_tamper(void)
{
	_cleanup_free_ char *path = path_in_tmp("plain.log"), *kpath = path_in_tmp("keyed.log");
	lines ls = read_lines(path), ks = read_lines(kpath), t;
	char *p;

	ok(ls.n == 13 && ks.n == 13, "13 lines each");

	/* Edit one byte of record 7 (line 7): the pid 3 becomes 4. */
	t = copy_lines(&ls);
	p = strstr(t.l[6], "\"pid\":3");
	if (p)
		p[6] = '4';
	expect_fail(&t, NULL, 7, "hash mismatch (record edited?)", "one edited byte");
	free_lines(&t);

	/* The edit with a recomputed hash moves the failure to the next line. */
	t = copy_lines(&ls);
	free(t.l[6]);
	t.l[6] =
	    forge(&t, 6, 6, "sc-test-0001", "proc.exec", "{\"argv\":[\"ls\"],\"pid\":3}", NULL);
	expect_fail(&t, NULL, 8, "prev is not the hash of the record before",
		    "an edited record with a recomputed hash");
	free_lines(&t);

	t = copy_lines(&ls);
	remove_line(&t, 3);
	expect_fail(&t, NULL, 4, "seq 4, expected 3 (record deleted or reordered?)",
		    "a deleted record");
	free_lines(&t);

	t = copy_lines(&ls);
	insert_line(&t, 3, forge(&t, 3, 3, "sc-test-0001", "proc.exec", "{\"pid\":9}", NULL));
	expect_fail(&t, NULL, 5, "seq 3, expected 4 (record inserted",
		    "a forged record inserted with a recomputed hash");
	free_lines(&t);

	t = copy_lines(&ls);
	p = t.l[3];
	t.l[3] = t.l[4];
	t.l[4] = p;
	expect_fail(&t, NULL, 4, "seq 4, expected 3", "two swapped records");
	free_lines(&t);

	t = copy_lines(&ls);
	remove_line(&t, 12);
	remove_line(&t, 11);
	expect_fail(&t, NULL, 12, "log not sealed (cut off?)", "a cut tail, no key");
	free_lines(&t);

	/* Cut and resealed by someone without the key. */
	t = copy_lines(&ks);
	remove_line(&t, 12);
	remove_line(&t, 11);
	{
		au_record rec = {0};
		char reason[128], hex[AU_HASH_HEX + 1], data[256];

		(void)au_parse_record(t.l[10], strlen(t.l[10]) - 1, &rec, reason, sizeof(reason));
		au_hex(rec.hash, AU_HASH_BYTES, hex);
		au_record_clear(&rec);
		snprintf(data, sizeof(data),
			 "{\"final_hash\":\"%s\",\"hmac\":\"%064d\",\"keyed\":true,\"records\":11}",
			 hex, 0);
		insert_line(&t, 11, forge(&t, 11, 11, "sc-test-0001", "audit.seal", data, NULL));
		expect_fail(&t, key, 12, "seal HMAC mismatch", "a cut tail resealed with a guess");
		{
			_cleanup_free_ char *j = join(&t);

			ok(verify_buf(j, strlen(j), NULL, NULL, NULL, 0) == 0,
			   "without the key, the same forgery passes: what the key is for");
		}
		free(t.l[11]);
		snprintf(data, sizeof(data),
			 "{\"final_hash\":\"%s\",\"keyed\":false,\"records\":11}", hex);
		t.l[11] = forge(&t, 11, 11, "sc-test-0001", "audit.seal", data, NULL);
		expect_fail(&t, key, 12, "sealed without a key",
			    "a cut tail resealed without the key");
	}
	free_lines(&t);

	t = copy_lines(&ks);
	remove_line(&t, 12);
	expect_fail(&t, key, 13, "log not sealed (cut off?)", "a keyed log without its seal");
	free_lines(&t);

	/* A write cut in the middle of the last record. */
	t = copy_lines(&ls);
	t.l[12][40] = '\0';
	expect_fail(&t, NULL, 13, "incomplete record at the end", "a torn last record");
	free_lines(&t);

	t = copy_lines(&ls);
	t.l[12][strlen(t.l[12]) - 1] = '\0';
	expect_fail(&t, NULL, 13, "no newline", "a last record without its newline");
	free_lines(&t);

	t = copy_lines(&ls);
	insert_line(&t, 13, forge(&t, 13, 13, "sc-test-0001", "proc.exec", "{}", NULL));
	expect_fail(&t, NULL, 14, "record after audit.seal", "a record appended after the seal");
	free_lines(&t);

	t = copy_lines(&ls);
	free(t.l[5]);
	t.l[5] = forge(&t, 5, 5, "sc-other", "proc.exec", "{}", NULL);
	expect_fail(&t, NULL, 6, "sandbox sc-other, expected sc-test-0001",
		    "a record of another sandbox");
	free_lines(&t);

	/* A whole log of another sandbox spliced in at the head. */
	t = copy_lines(&ls);
	{
		uint8_t g[AU_HASH_BYTES];

		(void)au_genesis("sc-test-0001", g);
		g[0] ^= 1;
		free(t.l[0]);
		t.l[0] = forge(&t, 0, 0, "sc-test-0001", "sandbox.start", "{}", g);
	}
	expect_fail(&t, NULL, 1, "genesis", "a first record not chained to the genesis value");
	free_lines(&t);

	t = copy_lines(&ls);
	p = strstr(t.l[2], ",\"event\"");
	if (p)
		*p = ' '; /* "sandbox":"..." "event" -> invalid JSON */
	expect_fail(&t, NULL, 3, "not valid JSON", "a line that is not JSON");
	free_lines(&t);

	t = copy_lines(&ls);
	t.l[2] = realloc(t.l[2], strlen(t.l[2]) + 2);
	p = strstr(t.l[2], ",\"hash\":");
	if (p) {
		p += 8;
		memmove(p + 1, p, strlen(p) + 1);
		*p = ' ';
	}
	expect_fail(&t, NULL, 3, "not canonical", "whitespace inside the hash member");
	free_lines(&t);

	t = copy_lines(&ls);
	free(t.l[2]);
	if (asprintf(&t.l[2], "{\"ts\":\"x\",\"seq\":2}\n") < 0)
		abort();
	expect_fail(&t, NULL, 3, "key 1 is not \"seq\"", "keys out of order");
	free_lines(&t);

	t = copy_lines(&ls);
	free(t.l[2]);
	if (asprintf(&t.l[2], "{\"seq\":2,\"seq\":2}\n") < 0)
		abort();
	expect_fail(&t, NULL, 3, "not valid JSON", "duplicate keys");
	free_lines(&t);

	t = copy_lines(&ls);
	insert_line(&t, 2, strdup("\n"));
	expect_fail(&t, NULL, 3, "empty line", "an empty line");
	free_lines(&t);

	t = (lines){.l = calloc(1, sizeof(char *)), .n = 0};
	expect_fail(&t, NULL, 1, "empty log", "an empty log");
	free_lines(&t);

	{
		char *big = malloc(AU_LINE_MAX + 16);

		memset(big, 'x', AU_LINE_MAX + 10);
		big[AU_LINE_MAX + 10] = '\n';
		big[AU_LINE_MAX + 11] = '\0';
		t = copy_lines(&ls);
		insert_line(&t, 1, big);
		expect_fail(&t, NULL, 2, "longer than", "a line over AU_LINE_MAX");
		free_lines(&t);
	}
	free_lines(&ls);
	free_lines(&ks);
}

static void test_writer_rules(void)
{
	_cleanup_free_ char *path = path_in_tmp("rules.log"), *link = path_in_tmp("link.log");
	_cleanup_free_ char *used = path_in_tmp("plain.log");
	au_log *log = NULL, *log2 = NULL;
	char reason[256];
	size_t line;
	int r;

	ok(au_open(used, NULL, 0, "sc-x", AUDIT_FSYNC_BOUNDARIES, &log) == -EEXIST,
	   "a log with content is refused (-EEXIST)");
	ok(symlink(path, link) == 0 &&
	       au_open(link, NULL, 0, "sc-x", AUDIT_FSYNC_BOUNDARIES, &log) == -ELOOP,
	   "a symlink is refused (-ELOOP)");
	ok(au_open(path, NULL, 0, "sc x", AUDIT_FSYNC_BOUNDARIES, &log) == -EINVAL,
	   "a sandbox id with a space is refused");
	ok(au_open(path, key, 4, "sc-x", AUDIT_FSYNC_BOUNDARIES, &log) == -EINVAL,
	   "a 4-byte key is refused");
	ok(au_open("/dev/null", NULL, 0, "sc-x", AUDIT_FSYNC_BOUNDARIES, &log) == -EINVAL,
	   "a non-regular file is refused");
	{
		_cleanup_free_ char *fifo = path_in_tmp("fifo");

		/* Opened for writing, a FIFO without a reader would block:
		 * the alarm ends the test if it does. */
		alarm(10);
		ok(mkfifo(fifo, 0600) == 0 &&
		       au_open(fifo, NULL, 0, "sc-x", AUDIT_FSYNC_BOUNDARIES, &log) == -EINVAL,
		   "a FIFO is refused at once, never opened for writing");
		alarm(0);
		(void)unlink(fifo);
	}
	r = au_open(path, NULL, 0, "sc-x", AUDIT_FSYNC_ALWAYS, &log);
	ok(r == 0, "open a new log (%d)", r);
	ok(au_open(path, NULL, 0, "sc-x", AUDIT_FSYNC_ALWAYS, &log2) == -EBUSY,
	   "a second writer on the same file is refused (-EBUSY)");
	ok(au_emit(log, "Bad Event", NULL) == -EINVAL, "an invalid event name is refused");
	ok(au_emit(log, "audit.seal", NULL) == -EINVAL, "audit.seal cannot be emitted");
	ok(au_emit(log, "audit.error", NULL) == -EINVAL &&
	       au_emit_final(log, "audit.error", NULL) == -EINVAL,
	   "neither can audit.error");
	ok(au_emit_failure(log, "x") == -EINVAL, "no audit.error while the log has not failed");
	ok(au_emit(log, "x.y", json_string("s")) == -EINVAL, "data must be an object");
	ok(au_emit(log, "x.y", json_stringn_nocheck("\xff", 1)) == -EINVAL,
	   "a non-object, invalid-UTF-8 data is refused");
	{
		json_t *d = json_object();

		json_object_set_new(d, "s", json_stringn_nocheck("a\xff", 2));
		ok(au_emit(log, "x.y", d) == -EINVAL,
		   "a string that is not UTF-8 is refused, not written");
		ok(au_failed(log, NULL, NULL) == -EINVAL,
		   "a record that could not be built fails the log");
		ok(au_emit(log, "x.empty", NULL) == -EINVAL, "and every later record");
		ok(au_emit_failure(log, "test") == 0 && au_seal(log) == 0,
		   "the failure and the seal are still written");
		log = au_close(log);
		(void)unlink(path);
		ok(au_open(path, NULL, 0, "sc-x", AUDIT_FSYNC_ALWAYS, &log) == 0, "open it again");
	}
	ok(au_emit(log, "x.empty", NULL) == 0, "NULL data is {}");
	{
		char *huge = malloc(AU_LINE_MAX);

		memset(huge, 'a', AU_LINE_MAX - 1);
		huge[AU_LINE_MAX - 1] = '\0';
		r = au_emit(log, "x.huge", json_pack("{s:s}", "s", huge));
		free(huge);
		ok(r == 1, "an oversized record is replaced and flagged (%d)", r);
	}
	ok(au_records(log) == 2, "two records written");
	ok(au_seal(log) == 0, "seal");
	ok(au_emit(log, "x.late", NULL) == -EBADFD, "no emit after the seal");
	ok(au_seal(log) == -EBADFD, "no second seal");
	log = au_close(log);
	{
		FILE *f = fopen(path, "r");

		r = au_verify(f, NULL, 0, &line, reason, sizeof(reason));
		fclose(f);
		ok(r == 0, "the log with the oversized record verifies (%s)", r ? reason : "");
	}
	ok(au_close(NULL) == NULL, "au_close(NULL)");
}

/* A boundary fsynced by the caller while appends go on: the dirfd is handed
 * over once, and the log stays one valid chain. */
static void test_sync_detach(void)
{
	_cleanup_free_ char *path = path_in_tmp("detach.log");
	au_log *log = NULL;
	char reason[256];
	int fd, dirfd, fd2, dirfd2, r;
	size_t line;
	struct stat a, b;
	FILE *f;

	ok(au_open(path, NULL, 0, "sc-x", AUDIT_FSYNC_BOUNDARIES, &log) == 0, "open");
	ok(au_emit(log, "sandbox.start", NULL) == 0, "a first record");
	r = au_sync_detach(log, &fd, &dirfd);
	ok(r == 0 && fd >= 0 && dirfd >= 0,
	   "the first boundary hands over the file and its directory");
	ok(fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino,
	   "the fd is the log's file");
	ok(au_emit(log, "proc.exec", NULL) == 0, "records go on before the caller's fsync");
	ok(fsync(fd) == 0 && fsync(dirfd) == 0, "the caller fsyncs both");
	close(fd);
	close(dirfd);
	r = au_sync_detach(log, &fd2, &dirfd2);
	ok(r == 0 && fd2 >= 0 && dirfd2 == -1, "a later boundary has no directory to sync");
	close(fd2);
	ok(au_sync_detach(NULL, &fd2, &dirfd2) == -EINVAL && fd2 == -1 && dirfd2 == -1,
	   "NULL log: -EINVAL, no fds");
	ok(au_seal(log) == 0, "seal");
	log = au_close(log);
	f = fopen(path, "r");
	r = au_verify(f, NULL, 0, &line, reason, sizeof(reason));
	fclose(f);
	ok(r == 0, "the log verifies (%s)", r ? reason : "");
}

/* The seal whose fsync the caller makes, and the reserve the caller gives
 * back: what a run's supervisor does on its sync thread. */
static void test_seal_detach(void)
{
	_cleanup_free_ char *path = path_in_tmp("seal-detach.log");
	au_log *log = NULL;
	char reason[256];
	int fd, dirfd, fd2, dirfd2, r;
	off_t size;
	size_t line;
	struct stat st;
	FILE *f;

	ok(au_open(path, NULL, 0, "sc-x", AUDIT_FSYNC_BOUNDARIES, &log) == 0, "open");
	ok(au_emit(log, "sandbox.exit", NULL) == 0, "a record");
	r = au_seal_detach(log, &fd, &dirfd);
	ok(r == 0 && fd >= 0 && dirfd >= 0,
	   "the seal hands over the file and, as the first boundary, its directory");
	ok(au_emit(log, "x.late", NULL) == -EBADFD, "nothing follows the seal");
	ok(au_seal_detach(log, &fd2, &dirfd2) == -EBADFD && fd2 == -1 && dirfd2 == -1,
	   "no second seal, and no fds");
	log = au_close_defer(log, &size);
	ok(stat(path, &st) == 0 && size == st.st_size, "the size to give back to is the file's");
	ok((uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size + AU_RESERVE_BYTES,
	   "the reserve is left allocated for the caller");
	ok(fsync(fd) == 0 && fsync(dirfd) == 0 && ftruncate(fd, size) == 0,
	   "the caller fsyncs and gives the reserve back");
	ok(stat(path, &st) == 0 && (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size + 8192,
	   "and the space is free (%lld bytes allocated)", (long long)st.st_blocks * 512);
	close(fd);
	close(dirfd);
	f = fopen(path, "r");
	r = au_verify(f, NULL, 0, &line, reason, sizeof(reason));
	fclose(f);
	ok(r == 0, "the sealed log verifies (%s)", r ? reason : "");
	ok(au_close_defer(NULL, &size) == NULL && size == -1, "au_close_defer(NULL)");
}

static void test_argv(void)
{
	const char *argv[100];
	char *longarg = malloc(5000);
	json_t *a;

	memset(longarg, 'a', 4999);
	longarg[4999] = '\0';
	for (size_t i = 0; i < ELEMENTSOF(argv); i++)
		argv[i] = i == 1 ? longarg : i == 2 ? "\xff\x1b" : "x";
	a = au_argv(argv, ELEMENTSOF(argv));
	ok(a && json_array_size(a) == AU_ARGV_MAX + 1 &&
	       strcmp(json_string_value(json_array_get(a, AU_ARGV_MAX)), "...(36 more)") == 0,
	   "au_argv keeps %u elements and counts the rest", AU_ARGV_MAX);
	ok(a && json_string_length(json_array_get(a, 1)) == AU_ARG_MAX_BYTES + 3,
	   "au_argv cuts a long element at AU_ARG_MAX_BYTES and marks it");
	ok(a && strcmp(json_string_value(json_array_get(a, 2)), "\\xff\x1b") == 0,
	   "invalid UTF-8 becomes \\xNN, a valid control byte is kept for JSON to escape");
	json_decref(a);
	free(longarg);
}

static void test_key_file(void)
{
	_cleanup_free_ char *kp = path_in_tmp("key");
	uint8_t k[AU_KEY_FILE_BYTES];
	int fd;

	fd = open(kp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ok(fd >= 0 && io_write_all(fd, key, 32) == 0, "write a key file");
	close(fd);
	ok(au_key_load(kp, k) == 0 && memcmp(k, key, 32) == 0, "load it");
	chmod(kp, 0640);
	ok(au_key_load(kp, k) == -EACCES, "a group-readable key is refused");
	chmod(kp, 0600);
	fd = open(kp, O_WRONLY | O_APPEND | O_CLOEXEC);
	ok(fd >= 0 && io_write_all(fd, "x", 1) == 0, "grow it to 33 bytes");
	close(fd);
	ok(au_key_load(kp, k) == -EINVAL, "a 33-byte key is refused");
	ok(au_key_load("/nonexistent/key", k) == -ENOENT, "a missing key file is -ENOENT");
}

static int last_report_rc;

static char *report_of(const char *buf, size_t len, bool json)
{
	FILE *in = fmemopen((void *)buf, len, "r");
	char *out = NULL;
	size_t outlen = 0;
	FILE *o = open_memstream(&out, &outlen);
	int r = au_report(in, o, json);

	last_report_rc = r;

	fclose(in);
	fclose(o);
	if (r < 0) {
		free(out);
		return NULL;
	}
	return out;
}

static void test_report(void)
{
	_cleanup_free_ char *path = path_in_tmp("plain.log");
	lines ls = read_lines(path);
	_cleanup_free_ char *all = join(&ls), *text = report_of(all, strlen(all), false);
	_cleanup_free_ char *js = report_of(all, strlen(all), true);
	json_t *root = js ? json_loads(js, 0, NULL) : NULL;
	const char *want[] = {
	    "sc-test-0001",
	    "Chain: intact",
	    "What it could access",
	    "/data/public",
	    "/tmp/agent-work at /work",
	    "api.example.com ports 443 methods GET,POST",
	    "What it consumed",
	    "peak 50.0 MiB of 256.0 MiB",
	    "cpu       1.23 s",
	    "What it did",
	    "processes 3 executed",
	    "/usr/bin/python3: python3 agent.py",
	    "command   python3 agent.py",
	    "memory=256.0 MiB",
	    "wall=30.00 s",
	    "api.example.com: 1 request, 120 B out, 4.0 KiB in",
	    "Where it was stopped",
	    "POST evil.example:443 (host not allowed)",
	    "ptrace x1",
	    "memory x1: oom kill",
	    "/work/caf\\xc3\\xa9-\\xff\\xfe.txt (create)",
	};
	bool all_found = text != NULL;

	for (size_t i = 0; text && i < ELEMENTSOF(want); i++)
		if (!strstr(text, want[i])) {
			tap_diag("missing: %s", want[i]);
			all_found = false;
		}
	ok(all_found && last_report_rc == 0, "the text report answers the questions");
	ok(text && !strchr(text, '\x1b'), "no terminal escape from the log reaches the output");
	if (text && getenv("AUDIT_TEST_SHOW"))
		fputs(text, stdout);
	ok(root && json_is_true(json_object_get(json_object_get(root, "log"), "intact")),
	   "the JSON report is one object, chain intact");
	ok(root && json_integer_value(json_object_get(
		       json_object_get(json_object_get(root, "did"), "processes"), "count")) == 3,
	   "JSON: 3 processes");
	ok(root && json_integer_value(json_object_get(json_object_get(root, "consumed"),
						      "memory_peak")) == 50 << 20,
	   "JSON: consumed.memory_peak");
	json_decref(root);

	/* A tampered log is reported, with the break stated. */
	{
		char *p = strstr(ls.l[6], "\"pid\":3");
		_cleanup_free_ char *bad = NULL, *btext = NULL;

		if (p)
			p[6] = '4';
		bad = join(&ls);
		btext = report_of(bad, strlen(bad), false);
		ok(btext && last_report_rc == 1 &&
		       strstr(btext, "Chain: BROKEN at line 7: hash mismatch"),
		   "a tampered log's report says where the chain breaks");
	}
	{
		const char junk[] = "not json\n{\"seq\":0}\n\n";
		_cleanup_free_ char *jt = report_of(junk, sizeof(junk) - 1, false);

		ok(jt && strstr(jt, "BROKEN at line 1") && strstr(jt, "Unreadable lines: 3"),
		   "garbage is reported, not trusted");
	}
	free_lines(&ls);
}

/*
 * The numbers the end-of-run summary shows (the supervisor's tally, fed the
 * events it writes) and those of the report (read back from the log) are
 * one definition: the same events give the same values, and failed exec
 * attempts are counted apart from programs that ran.
 */
/* What went through the proxy: the summary's and sandbox.exit's numbers. */
static void test_tally_traffic(void)
{
	static au_tally t;
	const struct {
		const char *event, *decision;
		int out, in;
	} ev[] = {
	    {"net.request", "allow", 100, 2000},
	    {"net.request", NULL, 10, 20},	   /* no decision: let through */
	    {"net.request", "deny", 5, 0},	   /* refused: counted by its net.denied */
	    {"net.tunnel.close", NULL, 300, 4000}, /* a tunnel's bytes, no request */
	    {"net.request.start", "allow", 7, 7},  /* not an end: nothing counted */
	};

	memset(&t, 0, sizeof(t));
	for (size_t i = 0; i < ELEMENTSOF(ev); i++) {
		json_t *d = json_pack("{s:s, s:i, s:i}", "host", "a.test", "bytes_out", ev[i].out,
				      "bytes_in", ev[i].in);

		if (ev[i].decision)
			(void)json_object_set_new(d, "decision", json_string(ev[i].decision));
		au_tally_event(&t, ev[i].event, d);
		json_decref(d);
	}
	ok(t.requests_allowed == 2,
	   "tally: requests allowed are net.request records not refused "
	   "(%" PRIu64 ")",
	   t.requests_allowed);
	ok(t.bytes_out == 415 && t.bytes_in == 6020,
	   "tally: bytes of requests and tunnels (%" PRIu64 " out, %" PRIu64 " in)", t.bytes_out,
	   t.bytes_in);
}

static void test_tally(void)
{
	_cleanup_free_ char *path = path_in_tmp("tally.log");
	_cleanup_free_ char *buf = NULL, *text = NULL, *js = NULL;
	static au_tally t; /* as in sc_run_result: fed what is written */
	const au_count *top[AU_TALLY_KEYS];
	json_t *root = NULL, *did;
	au_log *log = NULL;
	size_t len = 0;
	int r;

	memset(&t, 0, sizeof(t));
	r = au_open(path, NULL, 0, "sc-test-0002", AUDIT_FSYNC_BOUNDARIES, &log);
#define EMIT(ev, ...)                                                                              \
	do {                                                                                       \
		json_t *d_ = json_pack(__VA_ARGS__);                                               \
		au_tally_event(&t, ev, d_);                                                        \
		if (r >= 0)                                                                        \
			r = au_emit(log, ev, d_);                                                  \
	} while (0)
	EMIT("proc.exec", "{s:i, s:s, s:[s]}", "pid", 2, "path", "/usr/local/bin/sh", "argv", "sh");
	/* a PATH lookup that missed, as the exec record says it */
	EMIT("proc.exec", "{s:i, s:s, s:[s], s:s}", "pid", 3, "path", "/usr/local/bin/git", "argv",
	     "git", "result", "ENOENT");
	EMIT("proc.exec", "{s:i, s:s, s:[s], s:s}", "pid", 3, "path", "/usr/bin/git", "argv", "git",
	     "result", "ok");
	EMIT("proc.exec", "{s:i, s:s, s:[s], s:i}", "pid", 4, "path", "/sbin/x", "argv", "x",
	     "errno", 13);
	EMIT("fs.write", "{s:s, s:s}", "path", "/work/a", "op", "create");
	EMIT("fs.write", "{s:s, s:s}", "path", "/work/a", "op", "modify");
	EMIT("fs.write", "{s:s, s:s}", "path", "/work/b", "op", "create");
	EMIT("fs.write", "{s:s, s:I, s:s}", "op", "truncated", "count", (json_int_t)5, "reason",
	     "event cap");
	EMIT("net.denied", "{s:s, s:i, s:s}", "host", "a.test", "port", 80, "reason",
	     "host-not-allowed");
	EMIT("net.denied", "{s:s, s:i, s:s}", "host", "b.test", "port", 80, "reason",
	     "private-address");
	EMIT("net.denied", "{s:s, s:i, s:s}", "host", "b.test", "port", 80, "reason",
	     "private-address");
	EMIT("limit.hit", "{s:s, s:s}", "limit", "max_request_body", "detail", "b.test");
	EMIT("limit.hit", "{s:s, s:s}", "limit", "egress_budget", "detail", "a.test");
#undef EMIT
	if (r >= 0)
		r = au_seal(log);
	au_close(log);
	ok(r >= 0 && t.execs == 2 && t.execs_failed == 2,
	   "tally: 2 programs ran, 2 exec attempts failed (%" PRIu64 ", %" PRIu64 ")", t.execs,
	   t.execs_failed);
	ok(t.files_written == 2 && !t.files_approx,
	   "tally: files written counts distinct paths, not records or the truncation note "
	   "(%" PRIu64 ")",
	   t.files_written);
	ok(t.net_denied == 3 && au_table_sorted(&t.denied_hosts, top) == 2 &&
	       strcmp(top[0]->key, "b.test") == 0 && top[0]->count == 2 &&
	       strcmp(top[0]->detail, "private-address") == 0 && strcmp(top[1]->key, "a.test") == 0,
	   "tally: denials by host, most denied first, with the reason");
	ok(t.limits_hit == 2 && t.limits.n == 2, "tally: the network limits hit");

	r = io_read_file_at(AT_FDCWD, path, 1 << 20, &buf, &len);
	text = r >= 0 ? report_of(buf, len, false) : NULL;
	js = r >= 0 ? report_of(buf, len, true) : NULL;
	root = js ? json_loads(js, 0, NULL) : NULL;
	did = json_object_get(root, "did");
	ok(text && strstr(text, "processes 2 executed, 2 exec attempts failed (not listed)") &&
	       !strstr(text, "/usr/local/bin/git") && strstr(text, "/usr/bin/git"),
	   "report: failed attempts are counted, not listed as executed");
	ok(text && strstr(text, "files     2 written (3 fs.write records)"),
	   "report: files written is the summary's number");
	ok(json_integer_value(json_object_get(did, "files_written")) ==
		   (json_int_t)t.files_written &&
	       json_integer_value(json_object_get(json_object_get(did, "processes"), "count")) ==
		   (json_int_t)t.execs &&
	       json_integer_value(json_object_get(json_object_get(did, "exec_failed"), "count")) ==
		   (json_int_t)t.execs_failed,
	   "report JSON: files_written, processes and exec_failed equal the tally's");
	if (tap_failed && text)
		fputs(text, stdout);
	json_decref(root);
}

static long vmdata_kib(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
	char buf[256];
	long v = -1;

	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "VmData: %ld kB", &v) == 1)
			break;
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run_verify(FILE *f)
{
	char reason[256];
	size_t line;

	return au_verify(f, key, sizeof(key), &line, reason, sizeof(reason));
}

static int run_report(FILE *f)
{
	_cleanup_fclose_ FILE *devnull = fopen("/dev/null", "we");

	return devnull ? au_report(f, devnull, false) : -errno;
}

/* Exit status of fn(log) in a child allowed AU_LINE_MAX + 4 MiB more data
 * than it started with; 2 if it could still allocate a log-sized buffer. */
/* Sanitizers and valgrind reserve address space of their own: the cap
 * would measure them, not us. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifdef UNDER_ASAN
static bool data_cap_works = false;
#else
static bool data_cap_works = true;
#endif

static int in_capped_child(int (*fn)(FILE *f), const char *path, off_t size)
{
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		long base = vmdata_kib();
		struct rlimit rl;
		FILE *f;

		rl.rlim_cur = rl.rlim_max = (rlim_t)(base + 4096) * 1024 + AU_LINE_MAX;
		if (!data_cap_works)
			rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
		if (base < 0 || setrlimit(RLIMIT_DATA, &rl) < 0)
			_exit(3);
		f = fopen(path, "re");
		if (!f)
			_exit(4);
		if (fn(f) < 0)
			_exit(1);
		/* At least 64 MiB, so that a small log still shows the cap bites.
		 * volatile: compilers may elide a malloc whose result is unused. */
		void *volatile big = malloc(size > (64 << 20) ? (size_t)size : 64u << 20);
		_exit(big ? (data_cap_works ? 2 : 0) : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_big(void)
{
	_cleanup_free_ char *path = path_in_tmp("big.log");
	/* Sanitizer builds are ~10x slower: keep them within the test timeout. */
	const unsigned n = getenv("AUDIT_BIG") ? (unsigned)atoi(getenv("AUDIT_BIG"))
			   : data_cap_works    ? 200000
					       : 20000;
	au_log *log = NULL;
	struct stat st;
	double t0, t1, t2;
	int status;
	bool good = true;
	int r;

	t0 = now_s();
	r = au_open(path, key, sizeof(key), "sc-big", AUDIT_FSYNC_BOUNDARIES, &log);
	for (unsigned i = 0; r >= 0 && i < n; i++)
		r = au_emit(log, "proc.exec",
			    json_pack("{s:I, s:s, s:[s, s, I]}", "pid", (json_int_t)i, "path",
				      "/usr/bin/python3", "argv", "python3", "-c", (json_int_t)i));
	if (r >= 0)
		r = au_seal(log);
	log = au_close(log);
	t1 = now_s();
	good = r >= 0 && stat(path, &st) == 0;
	ok(good, "wrote %u records (%.0f MiB) in %.2f s: %.0f records/s", n,
	   (double)st.st_size / (1 << 20), t1 - t0, n / (t1 - t0));

	/* In a child whose data segment may grow by only AU_LINE_MAX plus a
	 * few MiB: a verifier that held the log (or even a tenth of it) would
	 * fail. The child also shows the limit bites by failing to allocate
	 * a log-sized buffer afterwards. */
	if (getenv("AUDIT_NO_CAP") ||
	    (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload")))
		data_cap_works = false;
	if (!data_cap_works)
		tap_diag("no data-segment cap under a sanitizer or valgrind: memory not measured");
	status = in_capped_child(run_verify, path, st.st_size);
	t2 = now_s();
	ok(status == 0, "verified %u records in %.2f s (%.0f records/s)%s, log %.1f MiB (exit %d)",
	   n + 1, t2 - t1, (n + 1) / (t2 - t1),
	   data_cap_works ? " with the data segment capped at +5 MiB" : "",
	   (double)st.st_size / (1 << 20), status);
	t1 = now_s();
	status = in_capped_child(run_report, path, st.st_size);
	t2 = now_s();
	ok(status == 0, "reported %u records in %.2f s under the same cap (exit %d)", n + 1,
	   t2 - t1, status);
	unlink(path);
}

/* The file keeps its reserve allocated beyond the records (fallocate with
 * KEEP_SIZE counts in st_blocks, not st_size), and gives it
 * back at close. */
static void test_reserve(void)
{
	_cleanup_free_ char *path = path_in_tmp("reserve.log");
	au_log *log = NULL;
	struct stat st;

	ok(au_open(path, NULL, 0, "sc-res", AUDIT_FSYNC_BOUNDARIES, &log) == 0 &&
	       stat(path, &st) == 0 && st.st_size == 0,
	   "open: the file is empty");
	ok((uint64_t)st.st_blocks * 512 >= AU_RESERVE_BYTES && au_reserved(log) == AU_RESERVE_BYTES,
	   "and has %u bytes allocated beyond its end (%lld)", AU_RESERVE_BYTES,
	   (long long)st.st_blocks * 512);
	ok(au_emit(log, "x.one", NULL) == 0 && au_seal(log) == 0, "a record and the seal");
	log = au_close(log);
	if (stat(path, &st) < 0)
		st = (struct stat){.st_blocks = INT32_MAX};
	ok((uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size + 8192,
	   "closed: what was allocated beyond the end is given back (%lld bytes for %lld)",
	   (long long)st.st_blocks * 512, (long long)st.st_size);
}

/* In a child with a 128 KiB tmpfs of its own (a private mount namespace),
 * filled up by another file after the log was opened: the record that
 * finds no room is not written, the log stays failed, and the failure, the
 * end and the seal still go into the reserve. The log is copied out to
 * path for the parent. */
static int fill_until_failure(const char *path)
{
	_cleanup_free_ char *mnt = path_in_tmp("tiny"), *logp = NULL, *fillp = NULL;
	char arg[1000], buf[4096];
	au_log *log = NULL;
	uint64_t before;
	const char *event = NULL;
	struct stat st;
	int r = 0, fd, fd2;
	ssize_t n;
	FILE *in, *out;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mkdir(mnt, 0700) < 0 || mount("tmpfs", mnt, "tmpfs", 0, "size=128k") < 0)
		return 10;
	if (asprintf(&logp, "%s/log", mnt) < 0 || asprintf(&fillp, "%s/fill", mnt) < 0 ||
	    au_open(logp, NULL, 0, "sc-full", AUDIT_FSYNC_BOUNDARIES, &log) < 0)
		return 11;
	memset(arg, 'a', sizeof(arg) - 1);
	arg[sizeof(arg) - 1] = '\0';
	for (unsigned i = 0; r == 0 && i < 10; i++)
		r = au_emit(log, "proc.exec", json_pack("{s:[s, s]}", "argv", "/bin/echo", arg));
	fd = open(fillp, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	memset(buf, 'x', sizeof(buf));
	while (fd >= 0 && write(fd, buf, sizeof(buf)) > 0)
		;
	if (fd < 0 || errno != ENOSPC)
		return 12;
	for (unsigned i = 0; r == 0 && i < 1000; i++)
		r = au_emit(log, "proc.exec", json_pack("{s:[s, s]}", "argv", "/bin/echo", arg));
	if (r != -ENOSPC)
		return 13;
	before = au_records(log);
	/* The record that failed left no part of itself: the file ends with
	 * the newline of the last record written. */
	fd2 = open(logp, O_RDONLY | O_CLOEXEC);
	if (fd2 < 0 || fstat(fd2, &st) < 0 || st.st_size == 0 ||
	    pread(fd2, buf, 1, st.st_size - 1) != 1 || buf[0] != '\n')
		return 14;
	(void)close(fd2);
	/* Room again: the log stays failed all the same. */
	if (unlink(fillp) < 0 || au_emit(log, "x.later", NULL) != -ENOSPC)
		return 15;
	if (au_failed(log, &event, NULL) != -ENOSPC || strcmp(event, "proc.exec") != 0)
		return 16;
	/* Full again, for the stop path. */
	while (write(fd, buf, sizeof(buf)) > 0)
		;
	if (au_emit_failure(log, "sandbox stopped") != 0 ||
	    au_emit_final(log, "sandbox.exit", json_pack("{s:i}", "status", 137)) != 0)
		return 17;
	if (au_seal(log) != 0 || au_records(log) != before + 3)
		return 18;
	log = au_close(log);
	in = fopen(logp, "re");
	out = fopen(path, "we");
	while (in && out && (n = (ssize_t)fread(buf, 1, sizeof(buf), in)) > 0)
		(void)fwrite(buf, 1, (size_t)n, out);
	if (!in || !out || fclose(out) != 0)
		return 19;
	fclose(in);
	return 0;
}

static void test_failure(void)
{
	_cleanup_free_ char *path = path_in_tmp("full.log"), *mnt = path_in_tmp("tiny");
	char reason[256] = "";
	au_verify_info info;
	size_t line;
	int status = -1, r;
	FILE *f, *out;
	pid_t pid;

	if (geteuid() != 0) {
		tap_diag("SKIP the full-filesystem test mounts a tmpfs: needs root");
		return;
	}
	pid = fork();
	if (pid == 0)
		_exit(fill_until_failure(path));
	(void)waitpid(pid, &status, 0);
	(void)rmdir(mnt); /* the child's mount point; the mount went with it */
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "on a full tmpfs, a record that finds no room fails the log for good; audit.error, "
	   "sandbox.exit and the seal still fit (child exit %d)",
	   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	f = fopen(path, "re");
	r = f ? au_verify_ex(f, NULL, 0, &info, &line, reason, sizeof(reason)) : -1;
	if (f)
		fclose(f);
	ok(r == 0 && info.failed && strcmp(info.failed_error, "ENOSPC") == 0 &&
	       strcmp(info.failed_event, "proc.exec") == 0 &&
	       info.failed_records + 3 == info.records,
	   "verify: intact, and says the log failed (ENOSPC) at proc.exec (%s)", reason);
	f = fopen(path, "re");
	out = fopen("/dev/null", "we");
	r = f && out ? au_report(f, out, false) : -1;
	if (f)
		fclose(f);
	if (out)
		fclose(out);
	ok(r == 1, "report: exit 1 for a log that records its failure");
}

/* A line that never ends (/dev/zero) is read no further than AU_LINE_MAX. */
static void test_endless_line(void)
{
	char reason[256] = "";
	size_t line = 0, big = 3 * (size_t)AU_LINE_MAX;
	char *zeros = calloc(1, big);
	FILE *f = fopen("/dev/zero", "re");
	int r = f ? au_verify(f, NULL, 0, &line, reason, sizeof(reason)) : 0;

	ok(r == -EBADMSG && line == 1 && strstr(reason, "longer than"),
	   "verify of /dev/zero ends at line 1: %s", reason);
	if (f)
		fclose(f);
	f = zeros ? fmemopen(zeros, big, "r") : NULL;
	r = f ? au_verify(f, NULL, 0, &line, reason, sizeof(reason)) : 0;
	ok(r == -EBADMSG && f && ftell(f) <= (long)AU_LINE_MAX,
	   "having read at most AU_LINE_MAX bytes of a longer line (%ld)", f ? ftell(f) : -1L);
	if (f)
		fclose(f);
	free(zeros);
}

/* A log is read to AU_LOG_MAX_LINES lines or AU_LOG_MAX_BYTES bytes, no
 * further: an endless input ends. */
static void test_log_bound(void)
{
	au_log_bound b = {0};
	char why[160] = "";
	int r = 0;

	for (uint64_t i = 0; i < AU_LOG_MAX_LINES && r == 0; i++)
		r = au_log_bound_add(&b, 0, true, why, sizeof(why));
	ok(r == 0 && b.lines == AU_LOG_MAX_LINES, "AU_LOG_MAX_LINES lines are read");
	r = au_log_bound_add(&b, 0, true, why, sizeof(why));
	ok(r == -EFBIG && strstr(why, "not read any further"), "one more is refused: %s", why);
	b = (au_log_bound){0};
	r = 0;
	for (uint64_t i = 0; i < AU_LOG_MAX_BYTES / AU_LINE_MAX && r == 0; i++)
		r = au_log_bound_add(&b, AU_LINE_MAX - 1, true, why, sizeof(why));
	ok(r == 0 && b.bytes == AU_LOG_MAX_BYTES, "AU_LOG_MAX_BYTES bytes are read");
	ok(au_log_bound_add(&b, 0, false, why, sizeof(why)) == 0,
	   "an empty last line adds nothing");
	ok(au_log_bound_add(&b, 0, true, why, sizeof(why)) == -EFBIG, "one more byte is refused");
}

/* au_set_max_bytes(): the record that would pass the bound fails the log
 * (EFBIG); the stop path's records and the seal still go in behind it. */
static void test_max_bytes(void)
{
	_cleanup_free_ char *path = path_in_tmp("bounded.log");
	char reason[256] = "";
	au_verify_info info;
	au_log *log = NULL;
	struct stat st;
	size_t line;
	int r = 0, n = 0;
	FILE *f;

	if (au_open(path, NULL, 0, "sc-bounded", AUDIT_FSYNC_BOUNDARIES, &log) < 0) {
		ok(false, "open a log to bound");
		return;
	}
	au_set_max_bytes(log, 65536);
	while (r >= 0 && n < 10000) {
		r = au_emit(log, "proc.exec",
			    json_pack("{s:[s, s]}", "argv", "/bin/true",
				      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
		n++;
	}
	ok(r == -EFBIG && au_bytes(log) <= 65536 && au_bytes(log) > 60000,
	   "past 64 KiB a record fails the log with EFBIG (%d records, %" PRIu64 " bytes)", n,
	   au_bytes(log));
	ok(au_emit(log, "proc.exec", NULL) == -EFBIG, "... and every later one");
	ok(au_emit_failure(log, "sandbox stopped") >= 0 &&
	       au_emit_final(log, "sandbox.exit", json_pack("{s:i}", "status", 137)) >= 0 &&
	       au_seal(log) == 0,
	   "... while audit.error, sandbox.exit and the seal go in behind the bound");
	au_close(log);
	f = fopen(path, "re");
	r = f ? au_verify_ex(f, NULL, 0, &info, &line, reason, sizeof(reason)) : -1;
	if (f)
		fclose(f);
	ok(r == 0 && info.failed && strcmp(info.failed_error, "EFBIG") == 0 &&
	       stat(path, &st) == 0 && st.st_size < 65536 + 4096,
	   "verify: intact, failed with EFBIG (%s)", reason);
}

static void cleanup_tmp(void)
{
	_cleanup_close_ int dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;

	if (!d)
		return;
	dfd = -1; /* owned by d now */
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			(void)unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	(void)rmdir(tmpdir);
}

/* The HTML page of a log whose strings would be markup: the data block
 * cannot be closed and nothing becomes an element (test-audit-html.sh
 * opens such a page in Chromium). */
static void test_report_html(void)
{
	static const char evil[] = "</script><script>alert(1)</script><!-- <img src=x "
				   "onerror=alert(2)> \xe2\x80\xa8\xe2\x80\xa9 & '\"";
	_cleanup_free_ char *path = path_in_tmp("html.log"), *out = NULL;
	const char *argv[] = {"/bin/echo", evil};
	au_report_opts o = {.format = AU_REPORT_HTML};
	au_log *log = NULL;
	size_t outlen = 0, n_open = 0, n_close = 0;
	FILE *in, *f;
	int r;

	r = au_open(path, NULL, 0, "sc-html", AUDIT_FSYNC_BOUNDARIES, &log);
	if (r == 0)
		r = au_emit(log, "proc.exec",
			    json_pack("{s:i, s:s, s:o}", "pid", 7, "path", "/bin/echo", "argv",
				      au_argv(argv, 2)));
	if (r == 0)
		r = au_emit(log, "fs.denied",
			    json_pack("{s:i, s:s, s:o, s:s, s:s}", "pid", 7, "op", "openat", "path",
				      au_str(evil, strlen(evil), AU_STR_MAX_BYTES), "errno",
				      "EROFS", "reason", "read-only"));
	if (r == 0)
		r = au_emit(log, "limit.hit",
			    json_pack("{s:s, s:s, s:i}", "limit", "denied_records", "kind", "files",
				      "suppressed", 40));
	if (r == 0)
		r = au_seal(log);
	au_close(log);
	ok(r == 0, "a log with hostile strings is written (%d)", r);
	in = fopen(path, "r");
	f = open_memstream(&out, &outlen);
	r = in && f ? au_report_ex(in, f, &o) : -EIO;
	if (in)
		fclose(in);
	if (f)
		fclose(f);
	ok(r == 0 && out, "report --html of it: intact (%d)", r);
	for (const char *p = out; p && (p = strstr(p, "<script")); p++)
		n_open++;
	for (const char *p = out; p && (p = strstr(p, "</script")); p++)
		n_close++;
	ok(n_open == 2 && n_close == 2, "two <script> and two </script>, the page's own (%zu, %zu)",
	   n_open, n_close);
	ok(out && !strstr(out, "<!--") && !strstr(out, "<img") && !strstr(out, "\xe2\x80\xa8") &&
	       !strstr(out, "\xe2\x80\xa9"),
	   "no <!--, <img or raw U+2028/U+2029 in the page");
	ok(out && strstr(out, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)") &&
	       strstr(out, "\\u2028\\u2029"),
	   "the strings are in the data block, escaped");
	ok(out && strstr(out, "data-state=\"intact\"") &&
	       strstr(out, "\"folded\":[{\"limit\":\"denied_records\",\"kind\":\"files\","
			   "\"suppressed\":40}]") &&
	       strstr(out, "\"files_denied\":41"),
	   "the verdict, and the folded refusals counted");
	ok(out && strstr(out, "Content-Security-Policy") && strstr(out, "default-src 'none'"),
	   "a CSP allows nothing but the page's own style and script");
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		tap_skip_all("cannot create a temporary directory");
	}
	test_timestamps();
	test_roundtrip();
	test_tamper();
	test_writer_rules();
	test_reserve();
	test_failure();
	test_endless_line();
	test_log_bound();
	test_max_bytes();
	test_sync_detach();
	test_seal_detach();
	test_argv();
	test_key_file();
	test_report();
	test_report_html();
	test_tally();
	test_tally_traffic();
	test_big();
	cleanup_tmp();
	return tap_done();
}

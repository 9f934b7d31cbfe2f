/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the policy parser (TAP). Policies are written with ' for "
 * and @ for the test's own temporary directory, which holds the grant paths:
 *   @/a @/b      directories        @/f       a regular file
 *   @/link -> a  a symbolic link    @/a/secret  a file inside a grant
 *   @/secret     a file outside any grant   @/fifo    a named pipe
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "policy/agent-env.h"
#include "policy/intersect.h"
#include "policy/parse-internal.h"
#include "policy/plan.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-policy-XXXXXX";

/* @ -> tmpdir and, when quotes, ' -> ". Caller frees. */
static char *subst(const char *s, bool quotes)
{
	size_t n = 1, tl = strlen(tmpdir), o = 0;
	char *out;

	for (const char *p = s; *p; p++)
		n += *p == '@' ? tl : 1;
	out = malloc(n);
	if (!out)
		abort();
	for (const char *p = s; *p; p++) {
		if (*p == '@') {
			memcpy(out + o, tmpdir, tl);
			o += tl;
		} else {
			out[o++] = quotes && *p == '\'' ? '"' : *p;
		}
	}
	out[o] = '\0';
	return out;
}

/* A policy template: ' for " and @ for the temporary directory. */
static char *J(const char *s)
{
	return subst(s, true);
}

/* An expected message or path: @ for the temporary directory. */
static char *M(const char *s)
{
	return subst(s, false);
}

static int parse(const char *tmpl, sc_plan **ret, sc_diag *d)
{
	_cleanup_free_ char *s = J(tmpl);

	memset(d, 0x55, sizeof(*d));
	*ret = NULL;
	return sc_plan_parse(s, strlen(s), ret, d);
}

/* Expects a refusal with exactly this error, JSON path and message. */
static void bad(const char *policy, int err, const char *path, const char *message)
{
	_cleanup_free_ char *want_path = M(path), *want_msg = M(message);
	sc_plan *p = NULL;
	sc_diag d;
	int r = parse(policy, &p, &d);

	if (!ok(r == err && p == NULL && strcmp(d.path, want_path) == 0 &&
		    strcmp(d.message, want_msg) == 0 && d.line == 0 && d.column == 0,
		"refused at %s: %s", path, message)) {
		tap_diag("  policy: %s", policy);
		tap_diag("  got r=%d path=%s message=%s", r, d.path, d.message);
	}
	sc_plan_free(p);
}

static sc_plan *good(const char *policy)
{
	sc_plan *p = NULL;
	sc_diag d;
	int r = parse(policy, &p, &d);

	if (!ok(r == 0 && p, "accepted: %.60s", policy))
		tap_diag("  got r=%d path=%s message=%s", r, d.path, d.message);
	return p;
}

static bool str_is(const char *got, const char *tmpl)
{
	_cleanup_free_ char *want = J(tmpl);

	return got && strcmp(got, want) == 0;
}

static void make_tree(void)
{
	char p[256];

	if (!mkdtemp(tmpdir))
		abort();
	snprintf(p, sizeof(p), "%s/a", tmpdir);
	if (mkdir(p, 0755) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/b", tmpdir);
	if (mkdir(p, 0755) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/f", tmpdir);
	if (close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/a/secret", tmpdir);
	if (close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/secret", tmpdir);
	if (close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/link", tmpdir);
	if (symlink("a", p) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/fifo", tmpdir);
	if (mkfifo(p, 0600) < 0)
		abort();
}

static void remove_tree(void)
{
	static const char *const files[] = {"a/secret", "secret", "f", "link", "fifo"};
	static const char *const dirs[] = {"a", "b", ""};
	char p[256];

	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		snprintf(p, sizeof(p), "%s/%s", tmpdir, files[i]);
		(void)unlink(p);
	}
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		snprintf(p, sizeof(p), "%s/%s", tmpdir, dirs[i]);
		(void)rmdir(p);
	}
}

static void test_defaults(void)
{
	sc_plan *p = good("{'version': 1}");

	if (!p)
		return;
	ok(p->version == 1, "default version");
	ok(str_is(p->name, "sandbox"), "default name");
	ok(p->runtime == RUNTIME_HOST && p->rootfs == NULL, "default runtime host");
	ok(p->n_grants == 0 && p->grants == NULL, "default no grants");
	ok(p->tmp_size == 64ull << 20, "default tmp size 64M");
	ok(p->tmp_inodes == 8192, "default tmp inodes");
	ok(str_is(p->workdir, "/tmp"), "default workdir /tmp");
	ok(p->n_egress == 0 && p->n_allow_private == 0 && p->n_credentials == 0,
	   "default no network");
	ok(p->rate.count == PLAN_NET_RATE_DEFAULT && p->rate.per_ns == 1000000000ull,
	   "default rate 200/s");
	ok(p->audit_max_rate == PLAN_AUDIT_MAX_RATE_DEFAULT &&
	       p->audit_max_bytes == PLAN_AUDIT_MAX_BYTES_DEFAULT,
	   "default log bounds 1M/s and 1G");
	ok(p->bandwidth == PLAN_UNLIMITED && p->max_request_body == PLAN_UNLIMITED &&
	       p->max_response_body == PLAN_UNLIMITED && p->egress_budget == PLAN_UNLIMITED,
	   "default net caps unlimited");
	ok(p->upstream_ca == NULL && p->dns == NULL, "default no upstream CA, no DNS override");
	ok(p->memory == PLAN_UNLIMITED && p->cpu_millis == PLAN_UNLIMITED &&
	       p->pids == PLAN_UNLIMITED && p->wall_ns == PLAN_UNLIMITED &&
	       p->fsize == PLAN_UNLIMITED,
	   "default limits unlimited");
	ok(p->nofile == 1024, "default nofile 1024");
	ok(p->n_env == 0, "default empty env");
	ok(str_is(p->hostname, "sandbox"), "default hostname");
	ok(p->audit_exec && p->audit_denied_syscalls && p->audit_fsync == AUDIT_FSYNC_BOUNDARIES,
	   "default audit");
	ok(!p->best_effort, "default strict");
	ok(p->spawn_max_depth == 0 && p->spawn_max_children == 8, "default spawn");
	sc_plan_free(p);

	p = good(
	    "{'version':1,'fs':{'grants':[{'path':'@/a'}]},'net':{'egress':[{'host':'x.org'}]}}");
	if (!p)
		return;
	ok(p->n_grants == 1 && p->grants[0].mode == GRANT_RO, "grant mode defaults to ro");
	ok(str_is(p->grants[0].at, "@/a"), "grant at defaults to path");
	ok(p->egress[0].n_ports == 2 && p->egress[0].ports[0] == 80 && p->egress[0].ports[1] == 443,
	   "ports default to 80, 443");
	ok(p->egress[0].methods == HTTP_ANY_METHOD && !p->egress[0].wildcard,
	   "methods default to any");
	sc_plan_free(p);

	p = good("{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[{'host':'x.org','"
		 "header':"
		 "'X-Key','value_env':'K'}]}}");
	if (!p)
		return;
	ok(str_is(p->credentials[0].format, "%s") && p->credentials[0].upstream_https &&
	       str_is(p->credentials[0].value_env, "K") && !p->credentials[0].value_file,
	   "credential format %%s and upstream https by default");
	sc_plan_free(p);
}

static void test_syntax(void)
{
	sc_plan *p = NULL;
	sc_diag d;
	int r;

	r = parse("{'version': 1,}", &p, &d);
	ok(r == -EBADMSG && !p && d.line == 1 && d.column > 0 && d.path[0] == '\0' && d.message[0],
	   "syntax error has line and column (%d:%d %s)", d.line, d.column, d.message);
	r = parse("{\n  'version': 1\n  'name': 'x'\n}", &p, &d);
	ok(r == -EBADMSG && d.line == 3, "syntax error on line 3 (%d:%d %s)", d.line, d.column,
	   d.message);
	r = parse("{'version': 1, 'version': 1}", &p, &d);
	ok(r == -EBADMSG && strstr(d.message, "duplicate"), "duplicate keys refused (%s)",
	   d.message);
	r = parse("{'version': 1} x", &p, &d);
	ok(r == -EBADMSG, "trailing garbage refused");
	r = parse("{'version': 1, 'name': 'a\\u0000b'}", &p, &d);
	ok(r == -EBADMSG, "NUL in a string refused");
	r = parse("", &p, &d);
	ok(r == -EBADMSG, "empty input refused");
	r = sc_plan_parse(NULL, 0, &p, &d);
	ok(r == -EBADMSG, "NULL input refused");

	{
		size_t n = POLICY_MAX_BYTES + 1;
		char *big = malloc(n);

		if (!big)
			abort();
		memset(big, ' ', n);
		memcpy(big, "{\"version\":1}", 13);
		r = sc_plan_parse(big, n, &p, &d);
		ok(r == -E2BIG && strcmp(d.path, "$") == 0 &&
		       strcmp(d.message,
			      "policy is 1048577 bytes, more than the limit of 1048576") == 0,
		   "policy over POLICY_MAX_BYTES refused");
		r = sc_plan_parse(big, n - 1, &p, &d);
		ok(r == 0, "policy of exactly POLICY_MAX_BYTES accepted");
		p = sc_plan_free(p);
		free(big);
	}
	r = sc_plan_parse("{}", 2, NULL, &d);
	ok(r == -EINVAL && strcmp(d.message, "no policy given") == 0, "no ret_plan refused");
	r = sc_plan_parse("{\"version\":1}", 13, &p, NULL);
	ok(r == 0 && p, "diag may be NULL on success");
	p = sc_plan_free(p);
	r = sc_plan_parse("{\"version\":2}", 13, &p, NULL);
	ok(r == -EINVAL && !p, "diag may be NULL on failure");
	ok(sc_plan_free(NULL) == NULL, "sc_plan_free(NULL)");
}

static void test_top(void)
{
	bad("[]", -EINVAL, "$", "expected an object, got an array");
	bad("{}", -EINVAL, "$", "missing required key \"version\" (this parser reads version 1)");
	bad("{'version': 2}", -EINVAL, "$.version",
	    "expected 1 (the only policy version this sandcap knows), got 2");
	bad("{'version': '1'}", -EINVAL, "$.version",
	    "expected 1 (the only policy version this sandcap knows), got \"1\"");
	bad("{'version': 1.0}", -EINVAL, "$.version",
	    "expected 1 (the only policy version this sandcap knows), got 1");
	bad("{'version': 1, 'nmae': 'x'}", -EINVAL, "$.nmae",
	    "unknown key \"nmae\" (expected one of: version, name, fs, net, limits, env, identity, "
	    "audit, "
	    "best_effort, spawn)");
	bad("{'version': 1, 'a b': 1}", -EINVAL, "$[\"a b\"]",
	    "unknown key \"a b\" (expected one of: version, name, fs, net, limits, env, identity, "
	    "audit, "
	    "best_effort, spawn)");
	bad("{'version': 1, 'name': 'my agent'}", -EINVAL, "$.name",
	    "expected a name of 1 to 64 letters, digits, \"-\", \"_\" and \".\", not starting with "
	    "\"-\" or "
	    "\".\", got \"my agent\"");
	bad("{'version': 1, 'name': 5}", -EINVAL, "$.name", "expected a string, got 5");
	bad("{'version': 1, 'best_effort': 1}", -EINVAL, "$.best_effort",
	    "expected true or false, got 1");
	bad("{'version': 1, 'fs': []}", -EINVAL, "$.fs", "expected an object, got an array");
	bad("{'version': 1, 'net': null}", -EINVAL, "$.net", "expected an object, got null");
	bad("{'version': 1, 'spawn': {'max_depth': 9}}", -EINVAL, "$.spawn.max_depth",
	    "expected an integer from 0 to 8, got 9");
	bad("{'version': 1, 'spawn': {'max_children': -1}}", -EINVAL, "$.spawn.max_children",
	    "expected an integer from 0 to 256, got -1");
	bad("{'version': 1, 'spawn': {'depth': 1}}", -EINVAL, "$.spawn.depth",
	    "unknown key \"depth\" (expected one of: max_depth, max_children)");

	sc_plan *p =
	    good("{'version':1,'name':'agent-1.x_y','best_effort':true,'spawn':{'max_depth':2,"
		 "'max_children':3}}");
	if (p) {
		ok(str_is(p->name, "agent-1.x_y") && p->best_effort && p->spawn_max_depth == 2 &&
		       p->spawn_max_children == 3,
		   "name, best_effort, spawn parsed");
		sc_plan_free(p);
	}
	/* A long string is refused before it is looked at. */
	{
		size_t n = 5000;
		char *s = malloc(n + 64), *q;

		if (!s)
			abort();
		q = s + sprintf(s, "{'version': 1, 'name': '");
		memset(q, 'a', n);
		strcpy(q + n, "'}");
		bad(s, -E2BIG, "$.name", "string of 5000 bytes is longer than the limit of 4096");
		free(s);
	}
}

static void test_grants(void)
{
	sc_plan *p;

	bad("{'version':1,'fs':{'grants':{}}}", -EINVAL, "$.fs.grants",
	    "expected an array of grants, got an object");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a'},{'path':'@/b','mode':'rwx'}]}}", -EINVAL,
	    "$.fs.grants[1].mode", "expected one of \"ro\", \"rw\", \"cow\", got \"rwx\"");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','mdoe':'ro'}]}}", -EINVAL,
	    "$.fs.grants[0].mdoe",
	    "unknown key \"mdoe\" (expected one of: path, mode, at, quota, inodes, best_effort)");
	bad("{'version':1,'fs':{'grants':[{'mode':'ro'}]}}", -EINVAL, "$.fs.grants[0]",
	    "missing required key \"path\"");
	bad("{'version':1,'fs':{'grants':['@/a']}}", -EINVAL, "$.fs.grants[0]",
	    "expected an object, got \"@/a\"");
	bad("{'version':1,'fs':{'grants':[{'path':'data'}]}}", -EINVAL, "$.fs.grants[0].path",
	    "expected an absolute path (starting with \"/\"), got \"data\"");
	bad("{'version':1,'fs':{'grants':[{'path':'@/nope'}]}}", -ENOENT, "$.fs.grants[0].path",
	    "\"@/nope\" does not exist");
	bad("{'version':1,'fs':{'grants':[{'path':'@/link/x'}]}}", -ELOOP, "$.fs.grants[0].path",
	    "\"@/link\" is a symbolic link; symlinks are not followed in grants, name the real "
	    "path");
	bad("{'version':1,'fs':{'grants':[{'path':'@/link'}]}}", -ELOOP, "$.fs.grants[0].path",
	    "\"@/link\" is a symbolic link; symlinks are not followed in grants, name the real "
	    "path");
	bad("{'version':1,'fs':{'grants':[{'path':'@/f/x'}]}}", -ENOTDIR, "$.fs.grants[0].path",
	    "\"@/f\" is not a directory");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a/../b'}]}}", -EINVAL, "$.fs.grants[0].path",
	    "path \"@/a/../b\" contains \"..\"; write the path it means");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a\\n'}]}}", -EINVAL, "$.fs.grants[0].path",
	    "path \"@/a\\u000a\" contains a control character");
	bad("{'version':1,'fs':{'workdir':'/w\\u001b[2J'}}", -EINVAL, "$.fs.workdir",
	    "path \"/w\\u001b[2J\" contains a control character");
	bad("{'version':1,'fs':{'grants':[{'path':'/'}]}}", -EINVAL, "$.fs.grants[0].path",
	    "granting \"/\" would expose the whole host; grant the directories needed");
	bad("{'version':1,'fs':{'grants':[{'path':'/proc/self'}]}}", -EINVAL, "$.fs.grants[0].path",
	    "\"/proc/self\" is a kernel interface of the host and cannot be granted");
	bad("{'version':1,'fs':{'grants':[{'path':'/dev/null'}]}}", -EINVAL, "$.fs.grants[0].path",
	    "\"/dev/null\" is a kernel interface of the host and cannot be granted");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'/'}]}}", -EINVAL, "$.fs.grants[0].at",
	    "\"/\" cannot replace the sandbox's root \"/\"");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'/proc/x'}]}}", -EINVAL,
	    "$.fs.grants[0].at",
	    "\"/proc/x\" may not be in /proc, /dev or /sys, which the sandbox builds itself");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'/sys'}]}}", -EINVAL,
	    "$.fs.grants[0].at",
	    "\"/sys\" may not be in /proc, /dev or /sys, which the sandbox builds itself");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'/dev/shm'}]}}", -EINVAL,
	    "$.fs.grants[0].at",
	    "\"/dev/shm\" may not be in /proc, /dev or /sys, which the sandbox builds itself");
	sc_plan_free(good("{'version':1,'fs':{'grants':[{'path':'@/f','mode':'rw','at':"
			  "'/dev/termination-log'}]}}"));
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'/dev/termination-log/x'}]}}", -EINVAL,
	    "$.fs.grants[0].at",
	    "\"/dev/termination-log/x\" may not be in /proc, /dev or /sys, which the sandbox "
	    "builds itself");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'/etc/'}]}}", -EINVAL,
	    "$.fs.grants[0].at",
	    "\"/etc\" may not replace /etc or /usr, which the runtime provides");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'/usr'}]}}", -EINVAL,
	    "$.fs.grants[0].at",
	    "\"/usr\" may not replace /etc or /usr, which the runtime provides");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'work'}]}}", -EINVAL,
	    "$.fs.grants[0].at", "expected an absolute path (starting with \"/\"), got \"work\"");
	bad("{'version':1,'fs':{'grants':[{'path':'/etc'}]}}", -EINVAL, "$.fs.grants[0].path",
	    "\"/etc\" would appear at the same path inside, where it may not replace /etc or /usr, "
	    "which "
	    "the runtime provides; add \"at\"");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a'},{'path':'@/a/'}]}}", -EINVAL,
	    "$.fs.grants[1].path", "\"@/a\" is already granted in $.fs.grants[0]");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','mode':'ro'},{'path':'@/"
	    "a','mode':'rw','at':'/w'}]}}",
	    -EINVAL, "$.fs.grants[1].path",
	    "\"@/a\" is granted \"rw\" here but \"ro\" in $.fs.grants[0]");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'/w'},{'path':'@/b','at':'/w'}]}}",
	    -EINVAL, "$.fs.grants[1].at",
	    "\"/w\" inside the sandbox is already used by $.fs.grants[0]");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a','at':'@/b'},{'path':'@/b'}]}}", -EINVAL,
	    "$.fs.grants[1].path", "\"@/b\" inside the sandbox is already used by $.fs.grants[0]");

	p = good("{'version':1,'fs':{'grants':[{'path':'@//a/./','mode':'rw','at':'/work/"
		 "'},{'path':'@/f',"
		 "'at':'/data/f'},{'path':'@/a/secret'}]}}");
	if (p) {
		ok(p->n_grants == 3 && str_is(p->grants[0].path, "@/a") &&
		       str_is(p->grants[0].at, "/work") && p->grants[0].mode == GRANT_RW,
		   "grant paths normalised");
		ok(str_is(p->grants[1].path, "@/f") && p->grants[1].mode == GRANT_RO,
		   "file grant accepted");
		{
			_cleanup_free_ char *in = J("@/a/x/y"), *at = J("@/a"), *out = J("@/ab"),
					    *f = J("@/f");

			ok(plan_grant_containing(p, in) == &p->grants[0] &&
			       plan_grant_containing(p, at) == &p->grants[0] &&
			       plan_grant_containing(p, f) == &p->grants[1] &&
			       plan_grant_containing(p, out) == NULL &&
			       plan_grant_containing(p, "/") == NULL,
			   "plan_grant_containing");
		}
		sc_plan_free(p);
	}

	/* Count limit. */
	{
		size_t n = POLICY_MAX_GRANTS + 1, o;
		char *s = malloc(n * 64 + 64);

		if (!s)
			abort();
		o = (size_t)sprintf(s, "{'version':1,'fs':{'grants':[");
		for (size_t i = 0; i < n; i++)
			o += (size_t)sprintf(s + o, "%s{'path':'@/a','at':'/g%zu'}", i ? "," : "",
					     i);
		strcpy(s + o, "]}}");
		bad(s, -E2BIG, "$.fs.grants", "257 grants, more than the limit of 256");
		free(s);
	}
}

static void test_fs(void)
{
	sc_plan *p;

	bad("{'version':1,'fs':{'workdir':'work'}}", -EINVAL, "$.fs.workdir",
	    "expected an absolute path (starting with \"/\"), got \"work\"");
	bad("{'version':1,'fs':{'runtime':'guest'}}", -EINVAL, "$.fs.runtime",
	    "expected \"host\" or {\"rootfs\": \"/path\"}, got \"guest\"");
	bad("{'version':1,'fs':{'runtime':{}}}", -EINVAL, "$.fs.runtime",
	    "missing required key \"rootfs\"");
	bad("{'version':1,'fs':{'runtime':{'rootfs':'@/f'}}}", -ENOTDIR, "$.fs.runtime.rootfs",
	    "\"@/f\" is not a directory");
	bad("{'version':1,'fs':{'runtime':{'rootfs':'@/link'}}}", -ELOOP, "$.fs.runtime.rootfs",
	    "\"@/link\" is a symbolic link; symlinks are not followed in grants, name the real "
	    "path");
	bad("{'version':1,'fs':{'runtime':{'rootfs':'/'}}}", -EINVAL, "$.fs.runtime.rootfs",
	    "the host root \"/\" cannot be the sandbox's root; use \"host\"");
	bad("{'version':1,'fs':{'runtime':{'image':'@/a'}}}", -EINVAL, "$.fs.runtime.image",
	    "unknown key \"image\" (expected one of: rootfs, writable)");
	bad("{'version':1,'fs':{'tmp':'64MB'}}", -EINVAL, "$.fs.tmp",
	    "expected a size such as \"64M\" (a number of bytes with an optional unit K, M, G or "
	    "T), got "
	    "\"64MB\"");
	bad("{'version':1,'fs':{'tmp':'0'}}", -EINVAL, "$.fs.tmp",
	    "expected a size above 0, got \"0\"");
	bad("{'version':1,'fs':{'tmp':true}}", -EINVAL, "$.fs.tmp",
	    "expected a size such as \"64M\" or {\"size\": \"64M\", \"inodes\": 8192}, got true");
	bad("{'version':1,'fs':{'tmp':{'size':'1G','inodes':5}}}", -EINVAL, "$.fs.tmp.inodes",
	    "expected an integer from 16 to 4294967296, got 5");
	bad("{'version':1,'fs':{'tmp':{'size':'99999999999T'}}}", -EINVAL, "$.fs.tmp.size",
	    "expected a size below 8E, got \"99999999999T\"");
	bad("{'version':1,'limits':{'fsize':'8388608T'}}", -EINVAL, "$.limits.fsize",
	    "expected a size below 8E, got \"8388608T\"");
	bad("{'version':1,'limits':{'fsize':'9223372036854775808'}}", -EINVAL, "$.limits.fsize",
	    "expected a size below 8E, got \"9223372036854775808\"");
	bad("{'version':1,'fs':{'tmp':{'size':-1}}}", -EINVAL, "$.fs.tmp.size",
	    "expected a size such as \"64M\" (a number of bytes with an optional unit K, M, G or "
	    "T), got -1");
	bad("{'version':1,'fs':{'tmp':{'size':null}}}", -EINVAL, "$.fs.tmp.size",
	    "expected a size such as \"64M\" (a number of bytes with an optional unit K, M, G or "
	    "T), got null");
	bad("{'version':1,'fs':{'tmpfs':'1M'}}", -EINVAL, "$.fs.tmpfs",
	    "unknown key \"tmpfs\" (expected one of: runtime, grants, tmp, workdir)");

	p = good("{'version':1,'fs':{'runtime':{'rootfs':'@/b/'},'tmp':{'size':'1G','inodes':100},"
		 "'workdir':'/work//x/'}}");
	if (p) {
		ok(p->runtime == RUNTIME_ROOTFS && str_is(p->rootfs, "@/b"), "rootfs runtime");
		ok(p->tmp_size == 1ull << 30 && p->tmp_inodes == 100, "tmp object");
		ok(str_is(p->workdir, "/work/x"), "workdir normalised");
		sc_plan_free(p);
	}
	p = good("{'version':1,'fs':{'tmp':'512K'}}");
	if (p) {
		ok(p->tmp_size == 512 * 1024 && p->tmp_inodes == 8192,
		   "tmp string keeps default inodes");
		sc_plan_free(p);
	}
}

static void test_limits(void)
{
	sc_plan *p;

	bad("{'version':1,'limits':{'memory':'1M'}}", -EINVAL, "$.limits.memory",
	    "expected a memory limit of at least \"4M\", got \"1M\"");
	bad("{'version':1,'limits':{'memory':1.5}}", -EINVAL, "$.limits.memory",
	    "expected a size such as \"64M\" (a number of bytes with an optional unit K, M, G or "
	    "T), got 1.5");
	bad("{'version':1,'limits':{'memory':'256 M'}}", -EINVAL, "$.limits.memory",
	    "expected a size such as \"64M\" (a number of bytes with an optional unit K, M, G or "
	    "T), got "
	    "\"256 M\"");
	bad("{'version':1,'limits':{'cpu':0}}", -EINVAL, "$.limits.cpu",
	    "expected a number of cores above 0 and at most 1024, got 0");
	bad("{'version':1,'limits':{'cpu':-1.5}}", -EINVAL, "$.limits.cpu",
	    "expected a number of cores above 0 and at most 1024, got -1.5");
	bad("{'version':1,'limits':{'cpu':1025}}", -EINVAL, "$.limits.cpu",
	    "expected a number of cores above 0 and at most 1024, got 1025");
	bad("{'version':1,'limits':{'cpu':'0.5'}}", -EINVAL, "$.limits.cpu",
	    "expected a number of cores such as 0.5, got \"0.5\"");
	bad("{'version':1,'limits':{'cpu':0.0001}}", -EINVAL, "$.limits.cpu",
	    "expected a number of cores of at least 0.001, got 0.0001");
	bad("{'version':1,'limits':{'pids':0}}", -EINVAL, "$.limits.pids",
	    "expected an integer from 1 to 4194304, got 0");
	bad("{'version':1,'limits':{'pids':'64'}}", -EINVAL, "$.limits.pids",
	    "expected an integer from 1 to 4194304, got \"64\"");
	bad("{'version':1,'limits':{'wall':'0s'}}", -EINVAL, "$.limits.wall",
	    "expected a duration above 0, got \"0s\"");
	bad("{'version':1,'limits':{'wall':'30'}}", -EINVAL, "$.limits.wall",
	    "expected a duration such as \"30s\" (a number with a unit ms, s, m or h), got \"30\"");
	bad("{'version':1,'limits':{'wall':30}}", -EINVAL, "$.limits.wall",
	    "expected a duration such as \"30s\" (a number with a unit ms, s, m or h), got 30");
	bad("{'version':1,'limits':{'wall':'9999999999h'}}", -EINVAL, "$.limits.wall",
	    "expected a duration below 584 years, got \"9999999999h\"");
	bad("{'version':1,'limits':{'nofile':0}}", -EINVAL, "$.limits.nofile",
	    "expected an integer from 1 to 1048576, got 0");
	bad("{'version':1,'limits':{'nofile':null}}", -EINVAL, "$.limits.nofile",
	    "expected an integer from 1 to 1048576, got null");
	bad("{'version':1,'limits':{'fsize':'0'}}", -EINVAL, "$.limits.fsize",
	    "expected a size above 0, got \"0\"");
	bad("{'version':1,'limits':{'swap':'0'}}", -EINVAL, "$.limits.swap",
	    "unknown key \"swap\" (expected one of: memory, cpu, pids, wall, nofile, fsize, "
	    "exec_wall, idle)");

	p = good(
	    "{'version':1,'limits':{'memory':'256M','cpu':0.5,'pids':64,'wall':'30s','nofile':256,"
	    "'fsize':'64M'}}");
	if (p) {
		ok(p->memory == 256ull << 20 && p->cpu_millis == 500 && p->pids == 64 &&
		       p->wall_ns == 30000000000ull && p->nofile == 256 && p->fsize == 64ull << 20,
		   "limits parsed");
		sc_plan_free(p);
	}
	p = good("{'version':1,'limits':{'exec_wall':'2s','idle':'500ms'}}");
	if (p) {
		ok(p->exec_wall_ns == 2000000000ull && p->idle_ns == 500000000ull &&
		       p->wall_ns == PLAN_UNLIMITED,
		   "session limits parsed");
		sc_plan_free(p);
	}
	bad("{'version':1,'limits':{'exec_wall':'0s'}}", -EINVAL, "$.limits.exec_wall",
	    "expected a duration above 0, got \"0s\"");
	p = good("{'version':1,'limits':{'memory':null,'cpu':2,'pids':null,'wall':'1500ms','fsize':"
		 "4096}}");
	if (p) {
		ok(p->memory == PLAN_UNLIMITED && p->cpu_millis == 2000 &&
		       p->pids == PLAN_UNLIMITED && p->wall_ns == 1500000000ull && p->fsize == 4096,
		   "null limits, integer cpu, integer size");
		sc_plan_free(p);
	}
}

#define ONLY_PROXY " (only the proxy variables can, in the case sandcap writes them)"

/* The value of name in the environment agent_env_build() gives p, or NULL. */
static const char *env_of(const sc_plan *p, const char *name)
{
	static char *env[AGENT_ENV_OWN_MAX + POLICY_MAX_ENV + 1];
	size_t n = strlen(name);

	if (agent_env_build(p, env, ELEMENTSOF(env)) < 0)
		return "E2BIG";
	for (size_t i = 0; env[i]; i++)
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

static void test_agent_proxy_env(void)
{
	sc_plan *p = good("{'version':1,'net':{'egress':[{'host':'example.com'}]}}");

	ok(p && str_is(env_of(p, "ALL_PROXY"), "http://127.0.0.1:3128") &&
	       str_is(env_of(p, "all_proxy"), "http://127.0.0.1:3128") &&
	       str_is(env_of(p, "SOCKS_PROXY"), "socks5h://127.0.0.1:3128") &&
	       str_is(env_of(p, "NO_PROXY"), "localhost,127.0.0.1"),
	   "ALL_PROXY is the HTTP proxy, SOCKS_PROXY the SOCKS5 one, NO_PROXY the loopback");
	sc_plan_free(p);
	/* a rule for any loopback destination: no NO_PROXY at all */
	static const char *const loopback_rules[] = {
	    "'127.0.0.0/8','ports':[8080]",
	    "'127.0.0.2'",
	    "'localhost'",
	    "'*.app.localhost'",
	    "'app.localhost'",
	    "'[::1]'",
	    "'::ffff:127.0.0.1'",
	    "'0.0.0.0/0'",
	    "'::/0'",
	};
	for (size_t i = 0; i < ELEMENTSOF(loopback_rules); i++) {
		char buf[256];

		snprintf(buf, sizeof(buf),
			 "{'version':1,'net':{'egress':[{'host':'example.com'},{'host':%s}]}}",
			 loopback_rules[i]);
		p = good(buf);
		ok(p && !env_of(p, "NO_PROXY") && !env_of(p, "no_proxy") &&
		       str_is(env_of(p, "HTTP_PROXY"), "http://127.0.0.1:3128"),
		   "a rule for %s, a loopback destination: no NO_PROXY", loopback_rules[i]);
		sc_plan_free(p);
	}
	static const char *const other_rules[] = {
	    "'128.0.0.0/8'",	       "'126.255.255.255'",	    "'10.0.0.0/8'",	 "'[::2]'",
	    "'localhost.example.com'", "'*.localhost.example.com'", "'::ffff:10.0.0.1'",
	};
	for (size_t i = 0; i < ELEMENTSOF(other_rules); i++) {
		char buf[256];

		snprintf(buf, sizeof(buf), "{'version':1,'net':{'egress':[{'host':%s}]}}",
			 other_rules[i]);
		p = good(buf);
		ok(p && str_is(env_of(p, "NO_PROXY"), "localhost,127.0.0.1") &&
		       str_is(env_of(p, "no_proxy"), "localhost,127.0.0.1"),
		   "a rule for %s, not loopback: NO_PROXY keeps the sandbox's loopback direct",
		   other_rules[i]);
		sc_plan_free(p);
	}
	p = good("{'version':1,'net':{'egress':[{'host':'example.com'}]},"
		 "'env':{'ALL_PROXY':'socks5h://127.0.0.1:3128','HTTP_PROXY':'','NO_PROXY':'x'}}");
	ok(p && str_is(env_of(p, "ALL_PROXY"), "socks5h://127.0.0.1:3128") &&
	       !env_of(p, "HTTP_PROXY") &&
	       str_is(env_of(p, "http_proxy"), "http://127.0.0.1:3128") &&
	       str_is(env_of(p, "NO_PROXY"), "x") &&
	       str_is(env_of(p, "no_proxy"), "localhost,127.0.0.1"),
	   "a policy's env replaces a proxy variable, or leaves it out with \"\"");
	sc_plan_free(p);
	p = good("{'version':1,'env':{'HTTPS_PROXY':'http://10.0.0.1:3128'}}");
	ok(p && str_is(env_of(p, "HTTPS_PROXY"), "http://10.0.0.1:3128") &&
	       !env_of(p, "HTTP_PROXY"),
	   "without egress only the policy's proxy variables are set");
	sc_plan_free(p);
}

static void test_env_identity_audit(void)
{
	sc_plan *p;

	bad("{'version':1,'env':[]}", -EINVAL, "$.env",
	    "expected an object of \"NAME\": \"value\" strings, got an array");
	bad("{'version':1,'env':{'HOME':'/x'}}", -EINVAL, "$.env.HOME",
	    "\"HOME\" is set by sandcap itself and cannot be overridden" ONLY_PROXY);
	bad("{'version':1,'env':{'Http_Proxy':'x'}}", -EINVAL, "$.env.Http_Proxy",
	    "\"Http_Proxy\" is set by sandcap itself and cannot be overridden" ONLY_PROXY);
	bad("{'version':1,'env':{'Path':'x'}}", -EINVAL, "$.env.Path",
	    "\"Path\" is set by sandcap itself and cannot be overridden" ONLY_PROXY);
	bad("{'version':1,'env':{'SSL_CERT_FILE':'x'}}", -EINVAL, "$.env.SSL_CERT_FILE",
	    "\"SSL_CERT_FILE\" is set by sandcap itself and cannot be overridden" ONLY_PROXY);
	bad("{'version':1,'env':{'A=B':'x'}}", -EINVAL, "$.env[\"A=B\"]",
	    "variable name \"A=B\" contains \"=\"");
	bad("{'version':1,'env':{'1X':'x'}}", -EINVAL, "$.env[\"1X\"]",
	    "\"1X\" is not a valid variable name (letters, digits and \"_\", not starting with a "
	    "digit)");
	bad("{'version':1,'env':{'':'x'}}", -EINVAL, "$.env[\"\"]",
	    "\"\" is not a valid variable name (letters, digits and \"_\", not starting with a "
	    "digit)");
	bad("{'version':1,'env':{'LANG':5}}", -EINVAL, "$.env.LANG", "expected a string, got 5");
	bad("{'version':1,'identity':{'hostname':'bad_host'}}", -EINVAL, "$.identity.hostname",
	    "hostname \"bad_host\" contains a character other than letters, digits, \"-\" and "
	    "\".\"");
	bad("{'version':1,'identity':{'hostname':'-x'}}", -EINVAL, "$.identity.hostname",
	    "hostname \"-x\" has a label starting with \"-\"");
	bad("{'version':1,'identity':{'hostname':''}}", -EINVAL, "$.identity.hostname",
	    "hostname \"\" is empty");
	bad("{'version':1,'identity':{'hostname':'"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}}",
	    -EINVAL, "$.identity.hostname",
	    "hostname \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\" is "
	    "too long");
	bad("{'version':1,'identity':{'user':'x'}}", -EINVAL, "$.identity.user",
	    "unknown key \"user\" (expected one of: hostname, uid, gid)");
	bad("{'version':1,'audit':{'fsync':'sometimes'}}", -EINVAL, "$.audit.fsync",
	    "expected \"boundaries\" or \"always\", got \"sometimes\"");
	bad("{'version':1,'audit':{'exec':'yes'}}", -EINVAL, "$.audit.exec",
	    "expected true or false, got \"yes\"");

	p = good("{'version':1,'env':{'ZED':'1','LANG':'C.UTF-8','lang_x':''},'identity':{'"
		 "hostname':'Box-1."
		 "local'},'audit':{'exec':false,'denied_syscalls':false,'fsync':'always'}}");
	if (p) {
		ok(p->n_env == 3 && strcmp(p->env[0], "LANG=C.UTF-8") == 0 &&
		       strcmp(p->env[1], "ZED=1") == 0 && strcmp(p->env[2], "lang_x=") == 0,
		   "env as sorted KEY=VALUE");
		ok(str_is(p->hostname, "Box-1.local"), "hostname");
		ok(!p->audit_exec && !p->audit_denied_syscalls &&
		       p->audit_fsync == AUDIT_FSYNC_ALWAYS,
		   "audit settings");
		sc_plan_free(p);
	}
}

static void test_serve(void)
{
	sc_plan *p, *q;

	p = good("{'version':1,'net':{'serve':[8000,{'port':9000,'host_port':18999}]}}");
	ok(p && p->n_serve == 2 && p->serve[0].port == 8000 && p->serve[0].host_port == 0 &&
	       p->serve[1].port == 9000 && p->serve[1].host_port == 18999,
	   "net.serve: a port, and a port with its host port");
	sc_plan_free(p);
	p = good("{'version':1}");
	ok(p && p->n_serve == 0 && p->serve == NULL, "net.serve: nothing served by default");
	sc_plan_free(p);
	bad("{'version':1,'net':{'listen':false,'serve':[8000]}}", -EINVAL, "$.net.serve",
	    "net.serve needs net.listen true (a served port needs a server inside), but "
	    "net.listen is false: drop net.serve or allow listening");
	bad("{'version':1,'net':{'serve':[8000,8000]}}", -EINVAL, "$.net.serve[1]",
	    "port 8000 is already served by $.net.serve[0]");
	bad("{'version':1,'net':{'serve':[{'port':1,'host_port':5},{'port':2,'host_port':5}]}}",
	    -EINVAL, "$.net.serve[1]", "host_port 5 is already taken by $.net.serve[0]");
	bad("{'version':1,'net':{'serve':[3128]}}", -EINVAL, "$.net.serve[0]",
	    "port 3128 is the egress proxy's inside the sandbox; serve another");
	bad("{'version':1,'net':{'serve':[0]}}", -EINVAL, "$.net.serve[0]",
	    "expected an integer from 1 to 65535, got 0");
	bad("{'version':1,'net':{'serve':['8000']}}", -EINVAL, "$.net.serve[0]",
	    "expected a port number or {\"port\": N, \"host_port\": M}, got \"8000\"");
	bad("{'version':1,'net':{'serve':[{'host_port':8000}]}}", -EINVAL, "$.net.serve[0]",
	    "missing required key \"port\"");
	bad("{'version':1,'net':{'serve':8000}}", -EINVAL, "$.net.serve",
	    "expected an array of ports, each a number or {\"port\", \"host_port\", \"bind\"}, "
	    "got 8000");

	/* bind: where the listener is; a pod's port keeps its number by default */
	p = good(
	    "{'version':1,'net':{'serve':[{'port':8080,'bind':'0.0.0.0'},"
	    "{'port':8081,'host_port':80,'bind':'0.0.0.0'},{'port':8082,'bind':'127.0.0.1'}]}}");
	ok(p && p->n_serve == 3 && p->serve[0].any_addr && p->serve[0].host_port == 8080 &&
	       p->serve[1].any_addr && p->serve[1].host_port == 80 && !p->serve[2].any_addr &&
	       p->serve[2].host_port == 0,
	   "net.serve bind 0.0.0.0: the same port unless host_port says; 127.0.0.1 as before");
	if (p) {
		char *j = plan_to_json(p);
		sc_plan *back = NULL;

		ok(j && plan_parse_json(j, strlen(j), &back, NULL) == 0 && plan_equal(p, back) &&
		       back->serve[0].any_addr && !back->serve[2].any_addr,
		   "net.serve bind round-trips through plan_to_json");
		if (back)
			back->serve[0].any_addr = false;
		ok(back && !plan_equal(p, back), "plan_equal sees a different bind");
		sc_plan_free(back);
		free(j);
	}
	sc_plan_free(p);
	bad("{'version':1,'net':{'serve':[{'port':8080,'bind':'10.0.0.1'}]}}", -EINVAL,
	    "$.net.serve[0].bind", "expected \"127.0.0.1\" or \"0.0.0.0\", got \"10.0.0.1\"");
	bad("{'version':1,'net':{'serve':[{'port':1,'host_port':8080},{'port':8080,'bind':'0.0.0.0'"
	    "}]}}",
	    -EINVAL, "$.net.serve[1]", "host_port 8080 is already taken by $.net.serve[0]");
	p = good("{'version':1,'net':{'serve':[{'port':8000,'bind':'0.0.0.0'},9000]}}");
	q = good("{'version':1,'net':{'serve':[8000,{'port':9000,'bind':'0.0.0.0'}]}}");
	if (p && q) {
		sc_plan *o = NULL;
		char reason[256] = "";

		ok(plan_intersect(p, q, &o) == 0 && o && o->n_serve == 2 && !o->serve[0].any_addr &&
		       !o->serve[1].any_addr,
		   "net.serve intersects: 0.0.0.0 only where both say it");
		sc_plan_free(o);
		ok(plan_check_narrower(p, q, reason, sizeof(reason)) < 0 &&
		       strcmp(reason, "net.serve port 9000: bind 0.0.0.0 is wider than the "
				      "token's 127.0.0.1") == 0,
		   "a caveat cannot widen a port's bind (%s)", reason);
	}
	sc_plan_free(p);
	sc_plan_free(q);

	/* a caveat serves only what its token serves */
	p = good("{'version':1,'net':{'serve':[8000,9000]}}");
	q = good("{'version':1,'net':{'serve':[{'port':9000,'host_port':19000}]}}");
	if (p && q) {
		sc_plan *o = NULL;
		char reason[256] = "";

		ok(plan_intersect(p, q, &o) == 0 && o && o->n_serve == 1 &&
		       o->serve[0].port == 9000 && o->serve[0].host_port == 19000,
		   "net.serve intersects: the ports both serve, the caveat's host port");
		ok(plan_check_narrower(p, q, reason, sizeof(reason)) == 0,
		   "a caveat may narrow net.serve");
		sc_plan_free(o);
		ok(plan_check_narrower(q, p, reason, sizeof(reason)) < 0 &&
		       strcmp(reason, "net.serve port 8000 is not served by the token") == 0,
		   "a caveat cannot serve a port its token does not (%s)", reason);
	}
	sc_plan_free(p);
	sc_plan_free(q);
}

static void test_net(void)
{
	sc_plan *p;

	bad("{'version':1,'net':{'egress':[{'host':'*'}]}}", -EINVAL, "$.net.egress[0].host",
	    "host \"*\": \"*\" would allow every host; name the hosts");
	bad("{'version':1,'net':{'egress':[{'host':'*.com'}]}}", -EINVAL, "$.net.egress[0].host",
	    "host \"*.com\": a wildcard must cover a domain of at least two labels, as in "
	    "\"*.example.com\"");
	bad("{'version':1,'net':{'egress':[{'host':'a.*.com'}]}}", -EINVAL, "$.net.egress[0].host",
	    "host \"a.*.com\" has \"*\" that is not the whole leftmost label (as in "
	    "\"*.example.com\")");
	bad("{'version':1,'net':{'egress':[{'host':'*x.example.com'}]}}", -EINVAL,
	    "$.net.egress[0].host",
	    "host \"*x.example.com\" has \"*\" that is not the whole leftmost label (as in "
	    "\"*.example.com\")");
	bad("{'version':1,'net':{'egress':[{'host':'a..b'}]}}", -EINVAL, "$.net.egress[0].host",
	    "host \"a..b\" has an empty label");
	bad("{'version':1,'net':{'egress':[{'host':'a_b.com'}]}}", -EINVAL, "$.net.egress[0].host",
	    "host \"a_b.com\" contains a character other than letters, digits, \"-\" and \".\"");
	bad("{'version':1,'net':{'egress':[{'host':'example.com.'}]}}", -EINVAL,
	    "$.net.egress[0].host", "host \"example.com.\" ends with \".\"");
	bad("{'version':1,'net':{'egress':[{'host':'1.2.3'}]}}", -EINVAL, "$.net.egress[0].host",
	    "host \"1.2.3\" has a numeric last label (not a valid name nor a dotted-quad IPv4 "
	    "address)");
	bad("{'version':1,'net':{'egress':[{'host':''}]}}", -EINVAL, "$.net.egress[0].host",
	    "expected a host name, got \"\"");
	bad("{'version':1,'net':{'egress':[{'host':'[::1'}]}}", -EINVAL, "$.net.egress[0].host",
	    "expected an IPv6 address in brackets, as in \"[2001:db8::1]\", got \"[::1\"");
	bad("{'version':1,'net':{'egress':[{'ports':[443]}]}}", -EINVAL, "$.net.egress[0]",
	    "missing required key \"host\"");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','port':443}]}}", -EINVAL,
	    "$.net.egress[0].port",
	    "unknown key \"port\" (expected one of: host, ports, methods, paths, inspect)");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','ports':[]}]}}", -EINVAL,
	    "$.net.egress[0].ports", "expected at least one port, got an empty array");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','ports':[0]}]}}", -EINVAL,
	    "$.net.egress[0].ports[0]", "expected an integer from 1 to 65535, got 0");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','ports':[443,65536]}]}}", -EINVAL,
	    "$.net.egress[0].ports[1]", "expected an integer from 1 to 65535, got 65536");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','ports':[443,443]}]}}", -EINVAL,
	    "$.net.egress[0].ports[1]", "port 443 is listed twice");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','ports':443}]}}", -EINVAL,
	    "$.net.egress[0].ports", "expected an array of port numbers, got 443");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','methods':['GET','get']}]}}", -EINVAL,
	    "$.net.egress[0].methods[1]",
	    "expected one of \"GET\", \"HEAD\", \"POST\", \"PUT\", \"PATCH\", \"DELETE\", "
	    "\"OPTIONS\", "
	    "\"CONNECT\", got \"get\"");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','methods':['GET','GET']}]}}", -EINVAL,
	    "$.net.egress[0].methods[1]", "method \"GET\" is listed twice");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','methods':[]}]}}", -EINVAL,
	    "$.net.egress[0].methods",
	    "expected at least one method, got an empty array (omit \"methods\" to allow any)");

	bad("{'version':1,'net':{'allow_private':['10.0.0.1/8']}}", -EINVAL,
	    "$.net.allow_private[0]",
	    "\"10.0.0.1/8\" has host bits set after the prefix; did you mean \"10.0.0.0/8\"?");
	bad("{'version':1,'net':{'allow_private':['fd00::1/8']}}", -EINVAL,
	    "$.net.allow_private[0]",
	    "\"fd00::1/8\" has host bits set after the prefix; did you mean \"fd00::/8\"?");
	bad("{'version':1,'net':{'allow_private':['10.0.0.0/33']}}", -EINVAL,
	    "$.net.allow_private[0]",
	    "prefix length /33 is longer than the 32 bits of the address");
	bad("{'version':1,'net':{'allow_private':['::/129']}}", -EINVAL, "$.net.allow_private[0]",
	    "prefix length /129 is longer than the 128 bits of the address");
	bad("{'version':1,'net':{'allow_private':['10.0.0.0']}}", -EINVAL, "$.net.allow_private[0]",
	    "expected a CIDR such as \"10.0.0.0/8\" or \"fd00::/8\", got \"10.0.0.0\"");
	bad("{'version':1,'net':{'allow_private':['10.0.0.0/08']}}", -EINVAL,
	    "$.net.allow_private[0]",
	    "expected a CIDR with a prefix length, such as \"10.0.0.0/8\", got \"10.0.0.0/08\"");
	bad("{'version':1,'net':{'allow_private':['10.0.0.0/8','10.0.0.0/8']}}", -EINVAL,
	    "$.net.allow_private[1]", "the same range is already listed in $.net.allow_private[0]");
	bad("{'version':1,'net':{'rate':'20/h'}}", -EINVAL, "$.net.rate",
	    "expected a request rate such as \"20/s\" or \"100/m\", got \"20/h\"");
	bad("{'version':1,'net':{'rate':'0/s'}}", -EINVAL, "$.net.rate",
	    "expected a request rate such as \"20/s\" or \"100/m\", got \"0/s\"");
	bad("{'version':1,'audit':{'max_rate':'1M'}}", -EINVAL, "$.audit.max_rate",
	    "expected a bandwidth such as \"1M/s\", got \"1M\"");
	bad("{'version':1,'audit':{'max_bytes':'1K'}}", -ERANGE, "$.audit.max_bytes",
	    "at least 65536 bytes: the log's own records need room");
	bad("{'version':1,'audit':{'max_bytes':true}}", -EINVAL, "$.audit.max_bytes",
	    "expected a size such as \"1G\", got true");
	{
		sc_plan *lifted = good("{'version':1,'net':{'rate':null},'audit':{'max_rate':null,"
				       "'max_bytes':null}}");
		sc_plan *set = good("{'version':1,'audit':{'max_rate':'64K/s','max_bytes':'2G'}}");

		ok(lifted && lifted->rate.count == 0 && lifted->audit_max_rate == PLAN_UNLIMITED &&
		       lifted->audit_max_bytes == PLAN_UNLIMITED,
		   "null lifts net.rate, audit.max_rate and audit.max_bytes");
		ok(set && set->audit_max_rate == 65536 && set->audit_max_bytes == (2ull << 30),
		   "audit.max_rate and audit.max_bytes set");
		sc_plan_free(lifted);
		sc_plan_free(set);
	}
	bad("{'version':1,'audit':{'sample_interval':'10ms'}}", -EINVAL, "$.audit.sample_interval",
	    "expected a duration such as \"1s\" (at least 100ms), or 0 or null for none, got "
	    "\"10ms\"");
	{
		sc_plan *off = good("{'version':1,'audit':{'sample_interval':null}}");
		sc_plan *zero = good("{'version':1,'audit':{'sample_interval':'0s'}}");
		sc_plan *set = good("{'version':1,'audit':{'sample_interval':'250ms'}}");

		ok(off && zero && set && off->audit_sample_ns == 0 && zero->audit_sample_ns == 0 &&
		       set->audit_sample_ns == 250000000ull,
		   "audit.sample_interval: null and 0 turn samples off, a duration sets them");
		sc_plan_free(off);
		sc_plan_free(zero);
		sc_plan_free(set);
	}
	bad("{'version':1,'net':{'bandwidth':'1M'}}", -EINVAL, "$.net.bandwidth",
	    "expected a bandwidth such as \"1M/s\", got \"1M\"");
	bad("{'version':1,'net':{'max_request_body':'1MB'}}", -EINVAL, "$.net.max_request_body",
	    "expected a size such as \"64M\" (a number of bytes with an optional unit K, M, G or "
	    "T), got "
	    "\"1MB\"");
	bad("{'version':1,'net':{'upstream_ca':'@/nope.pem'}}", -ENOENT, "$.net.upstream_ca",
	    "file \"@/nope.pem\" does not exist");
	bad("{'version':1,'net':{'upstream_ca':'@/a'}}", -EINVAL, "$.net.upstream_ca",
	    "\"@/a\" is not a regular file");
	bad("{'version':1,'net':{'dns':'dns.google'}}", -EINVAL, "$.net.dns",
	    "expected a resolver address \"IP\" or \"IP:port\" (IPv6 with a port as "
	    "\"[IP]:port\"), got "
	    "\"dns.google\"");
	bad("{'version':1,'net':{'dns':'1.1.1.1:0'}}", -EINVAL, "$.net.dns",
	    "expected a resolver address \"IP\" or \"IP:port\" (IPv6 with a port as "
	    "\"[IP]:port\"), got "
	    "\"1.1.1.1:0\"");
	bad("{'version':1,'net':{'dns':'1.1.1.1:65536'}}", -EINVAL, "$.net.dns",
	    "port 65536 is not between 1 and 65535");
	bad("{'version':1,'net':{'proxy':true}}", -EINVAL, "$.net.proxy",
	    "unknown key \"proxy\" (expected one of: egress, allow_private, rate, bandwidth, "
	    "max_request_body, "
	    "max_response_body, egress_budget, credentials, upstream_ca, listen, serve, dns)");

	p = good(
	    "{'version':1,'net':{'egress':[{'host':'API.Example.COM','ports':[443,8443],'methods':["
	    "'GET',"
	    "'POST']},{'host':'*.PythonHosted.org'},{'host':'[2001:DB8::1]'},{'host':'10.1.2.3'},{'"
	    "host':"
	    "'x.org','methods':['CONNECT','OPTIONS','DELETE','PATCH','PUT','POST','HEAD','GET']}],"
	    "'allow_private':['10.0.0.0/8','fd00::/8','192.168.1.7/32','0.0.0.0/0'],'rate':'100/m',"
	    "'bandwidth':'1M/"
	    "s','max_request_body':'1M','max_response_body':'64M','egress_budget':'8M',"
	    "'upstream_ca':'@/f','dns':'[::1]:5353'}}");
	if (p) {
		ok(p->n_egress == 5 && str_is(p->egress[0].host, "api.example.com") &&
		       !p->egress[0].wildcard,
		   "host lower-cased");
		ok(p->egress[0].n_ports == 2 && p->egress[0].ports[1] == 8443 &&
		       p->egress[0].methods == (HTTP_GET | HTTP_POST),
		   "ports and methods");
		ok(str_is(p->egress[1].host, "*.pythonhosted.org") && p->egress[1].wildcard,
		   "wildcard host");
		ok(str_is(p->egress[2].host, "2001:db8::1") &&
		       str_is(p->egress[3].host, "10.1.2.3"),
		   "IP literals normalised");
		ok(p->egress[4].methods == HTTP_ANY_METHOD, "every method listed means any");
		ok(p->n_allow_private == 4 && p->allow_private[0].family == AF_INET &&
		       p->allow_private[0].prefix == 8 && p->allow_private[0].addr[0] == 10 &&
		       p->allow_private[1].family == AF_INET6 &&
		       p->allow_private[1].addr[0] == 0xfd && p->allow_private[2].prefix == 32 &&
		       p->allow_private[3].prefix == 0,
		   "CIDRs");
		ok(p->rate.count == 100 && p->rate.per_ns == 60000000000ull &&
		       p->bandwidth == 1 << 20 && p->max_request_body == 1 << 20 &&
		       p->max_response_body == 64 << 20 && p->egress_budget == 8 << 20,
		   "rate, bandwidth and caps");
		ok(str_is(p->upstream_ca, "@/f") && str_is(p->dns, "[::1]:5353"),
		   "upstream_ca and dns");
		sc_plan_free(p);
	}
	p = good("{'version':1,'net':{'dns':'9.9.9.9'}}");
	sc_plan_free(p);
	p = good("{'version':1,'net':{'dns':'2001:db8::53'}}");
	sc_plan_free(p);

	/* Count limits. */
	{
		char *s = malloc(POLICY_MAX_PORTS * 8 + 128);
		size_t o;

		if (!s)
			abort();
		o = (size_t)sprintf(s, "{'version':1,'net':{'egress':[{'host':'x.org','ports':[");
		for (unsigned i = 0; i <= POLICY_MAX_PORTS; i++)
			o += (size_t)sprintf(s + o, "%s%u", i ? "," : "", i + 1);
		strcpy(s + o, "]}]}}");
		bad(s, -E2BIG, "$.net.egress[0].ports", "65 ports, more than the limit of 64");
		free(s);
	}
	{
		char *s = malloc((POLICY_MAX_ENV + 1) * 16 + 64);
		size_t o;

		if (!s)
			abort();
		o = (size_t)sprintf(s, "{'version':1,'env':{");
		for (unsigned i = 0; i <= POLICY_MAX_ENV; i++)
			o += (size_t)sprintf(s + o, "%s'V%u':''", i ? "," : "", i);
		strcpy(s + o, "}}");
		bad(s, -E2BIG, "$.env", "257 variables, more than the limit of 256");
		free(s);
	}
	{
		char *s = malloc((POLICY_MAX_EGRESS + 1) * 24 + 64);
		size_t o;

		if (!s)
			abort();
		o = (size_t)sprintf(s, "{'version':1,'net':{'egress':[");
		for (unsigned i = 0; i <= POLICY_MAX_EGRESS; i++)
			o += (size_t)sprintf(s + o, "%s{'host':'h%u.org'}", i ? "," : "", i);
		strcpy(s + o, "]}}");
		bad(s, -E2BIG, "$.net.egress", "257 egress rules, more than the limit of 256");
		free(s);
	}
}

static void test_credentials(void)
{
	sc_plan *p;

#define NET                                                                                        \
	"{'version':1,'fs':{'grants':[{'path':'@/"                                                 \
	"a'}]},'net':{'egress':[{'host':'api.x.org'},{'host':'*.y.org'}],"

	bad(NET "'credentials':[{'host':'z.org','header':'A','value_env':'K'}]}}", -EINVAL,
	    "$.net.credentials[0].host",
	    "no $.net.egress rule allows host \"z.org\", so this credential could never be used");
	bad(NET "'credentials':[{'host':'y.org','header':'A','value_env':'K'}]}}", -EINVAL,
	    "$.net.credentials[0].host",
	    "no $.net.egress rule allows host \"y.org\", so this credential could never be used");
	bad(NET "'credentials':[{'host':'*.y.org','header':'A','value_env':'K'}]}}", -EINVAL,
	    "$.net.credentials[0].host",
	    "host \"*.y.org\": a wildcard is not allowed here, name one host");
	bad(NET "'credentials':[{'host':'api.x.org','header':'Host','value_env':'K'}]}}", -EINVAL,
	    "$.net.credentials[0].header",
	    "header \"Host\" frames or routes the request and cannot be injected");
	bad(NET
	    "'credentials':[{'host':'api.x.org','header':'transfer-encoding','value_env':'K'}]}}",
	    -EINVAL, "$.net.credentials[0].header",
	    "header \"transfer-encoding\" frames or routes the request and cannot be injected");
	bad(NET "'credentials':[{'host':'api.x.org','header':'Bad Header','value_env':'K'}]}}",
	    -EINVAL, "$.net.credentials[0].header",
	    "expected an HTTP header name (letters, digits and !#$%&'*+-.^_`|~), got \"Bad "
	    "Header\"");
	bad(NET "'credentials':[{'host':'api.x.org','value_env':'K'}]}}", -EINVAL,
	    "$.net.credentials[0]",
	    "expected \"header\" (the proxy sets it) or \"placeholder_env\" (the proxy replaces a "
	    "placeholder the agent sends), got neither");
	bad(NET "'credentials':[{'host':'api.x.org','value_env':'K','placeholder_env':'A-B'}]}}",
	    -EINVAL, "$.net.credentials[0].placeholder_env",
	    "expected an environment variable name, got \"A-B\"");
	bad(NET
	    "'credentials':[{'host':'api.x.org','value_env':'K','placeholder_env':'http_proxy'}]}"
	    "}",
	    -EINVAL, "$.net.credentials[0].placeholder_env",
	    "\"http_proxy\" is set by sandcap itself");
	bad(NET "'credentials':[{'host':'api.x.org','value_env':'K','placeholder_env':'P','in':['"
		"query']}]}}",
	    -EINVAL, "$.net.credentials[0].in",
	    "a placeholder is always replaced in the headers: \"in\" must list \"header\"");
	bad(NET "'credentials':[{'host':'api.x.org','value_env':'K','placeholder_env':'P','in':['"
		"body']}]}}",
	    -EINVAL, "$.net.credentials[0].in",
	    "expected [\"header\"] or [\"header\", \"query\"], got an array");
	bad(NET
	    "'credentials':[{'host':'api.x.org','header':'A','value_env':'K','in':['header']}]}}",
	    -EINVAL, "$.net.credentials[0]",
	    "\"in\" says where a placeholder is replaced: it needs \"placeholder_env\"");
	bad(NET "'credentials':[{'host':'api.x.org','value_env':'K','placeholder_env':'P'},"
		"{'host':'api.x.org','value_env':'L','placeholder_env':'P'}]}}",
	    -EINVAL, "$.net.credentials[1]",
	    "variable \"P\" already holds the placeholder of $.net.credentials[0]");
	bad(NET "'credentials':[{'host':'api.x.org','value_env':'K','placeholder_env':'P'}]},"
		"'env':{'P':'x'}}",
	    -EINVAL, "$.env.P", "\"P\" holds the placeholder of $.net.credentials[0]");
	bad(NET "'credentials':[{'host':'api.x.org','header':'A','value_env':'K','value_file':'@/"
		"secret'}]}}",
	    -EINVAL, "$.net.credentials[0]",
	    "expected exactly one of \"value_env\" and \"value_file\", got both");
	bad(NET "'credentials':[{'host':'api.x.org','header':'A'}]}}", -EINVAL,
	    "$.net.credentials[0]",
	    "expected exactly one of \"value_env\" and \"value_file\", got neither");
	bad(NET "'credentials':[{'host':'api.x.org','header':'A','value_env':'K-1'}]}}", -EINVAL,
	    "$.net.credentials[0].value_env", "expected an environment variable name, got \"K-1\"");
	bad(NET "'credentials':[{'host':'api.x.org','header':'A','value_file':'@/a/secret'}]}}",
	    -EINVAL, "$.net.credentials[0].value_file",
	    "secret file \"@/a/secret\" lies inside a grant, where the sandbox could read it");
	bad(NET "'credentials':[{'host':'api.x.org','header':'A','value_file':'@/none'}]}}",
	    -ENOENT, "$.net.credentials[0].value_file", "file \"@/none\" does not exist");
	bad(NET
	    "'credentials':[{'host':'api.x.org','header':'A','value_env':'K','format':'Bearer'}]}}",
	    -EINVAL, "$.net.credentials[0].format",
	    "format \"Bearer\" must contain \"%s\" exactly once, where the secret goes");
	bad(NET
	    "'credentials':[{'host':'api.x.org','header':'A','value_env':'K','format':'%s %s'}]}}",
	    -EINVAL, "$.net.credentials[0].format",
	    "format \"%s %s\" must contain \"%s\" exactly once, where the secret goes");
	bad(NET
	    "'credentials':[{'host':'api.x.org','header':'A','value_env':'K','format':'%d %s'}]}}",
	    -EINVAL, "$.net.credentials[0].format",
	    "format \"%d %s\" has a conversion other than \"%s\" (write \"%%\" for a percent "
	    "sign)");
	bad(NET "'credentials':[{'host':'api.x.org','header':'A','value_env':'K','format':'%"
		"s\\r\\nX: y'}]}}",
	    -EINVAL, "$.net.credentials[0].format",
	    "format \"%s\\u000d\\u000aX: y\" contains a control character");
	bad(NET
	    "'credentials':[{'host':'api.x.org','header':'A','value_env':'K','upstream':'tls'}]}}",
	    -EINVAL, "$.net.credentials[0].upstream",
	    "expected \"https\" or \"http\", got \"tls\"");
	bad(NET "'credentials':[{'host':'api.x.org','header':'A','value_env':'K'},{'host':'api.x."
		"org','header':"
		"'a','value_env':'L'}]}}",
	    -EINVAL, "$.net.credentials[1]",
	    "header \"a\" for host \"api.x.org\" is already set by $.net.credentials[0]");
	bad(NET "'credentials':[{'host':'api.x.org','header':'A','value':'x'}]}}", -EINVAL,
	    "$.net.credentials[0].value",
	    "unknown key \"value\" (expected one of: host, header, value_env, value_file, format, "
	    "upstream, name, max_requests, rate, max_bytes, methods, paths, expires, "
	    "placeholder_env, in)");

	p = good(NET "'credentials':[{'host':'api.x.org','header':'Authorization','value_env':'"
		     "TOKEN','format':"
		     "'Bearer %s "
		     "100%%','upstream':'http'},{'host':'a.y.org','header':'X-Key','value_file':'@/"
		     "secret'}]}}");
	if (p) {
		ok(p->n_credentials == 2 && str_is(p->credentials[0].header, "Authorization") &&
		       str_is(p->credentials[0].format, "Bearer %s 100%%") &&
		       !p->credentials[0].upstream_https,
		   "credential with format and http upstream");
		ok(str_is(p->credentials[1].host, "a.y.org") &&
		       str_is(p->credentials[1].value_file, "@/secret") &&
		       !p->credentials[1].value_env,
		   "credential for a wildcard rule's subdomain, from a file");
		ok(!plan_inspects(p), "credentials that only set headers inspect nothing");
		sc_plan_free(p);
	}
	p = good(NET "'credentials':[{'host':'api.x.org','value_env':'K','placeholder_env':"
		     "'OPENAI_API_KEY','in':['query','header']}]}}");
	if (p) {
		char *j = plan_to_json(p);
		sc_plan *back = NULL;

		ok(!p->credentials[0].header &&
		       str_is(p->credentials[0].placeholder_env, "OPENAI_API_KEY") &&
		       p->credentials[0].in_query && plan_inspects(p),
		   "a placeholder credential needs no header, replaces in the query, implies "
		   "inspection");
		ok(j && plan_parse_json(j, strlen(j), &back, NULL) == 0 && plan_equal(p, back),
		   "a placeholder credential round-trips through plan_to_json");
		sc_plan_free(back);
		free(j);
		sc_plan_free(p);
	}
	p = good("{'version':1,'net':{'egress':[{'host':'a.x.org','inspect':true},{'host':'b.x.org'"
		 "}]}}");
	if (p) {
		char *j = plan_to_json(p);
		sc_plan *back = NULL;

		ok(p->egress[0].inspect && !p->egress[1].inspect && plan_inspects(p),
		   "net.egress[].inspect, false by default");
		ok(j && plan_parse_json(j, strlen(j), &back, NULL) == 0 && plan_equal(p, back) &&
		       back->egress[0].inspect,
		   "inspect round-trips through plan_to_json");
		sc_plan_free(back);
		free(j);
		sc_plan_free(p);
	}
#undef NET
}

static void round_trip(const char *tmpl)
{
	sc_plan *p = NULL, *q = NULL, *r3 = NULL;
	char *j1 = NULL, *j2 = NULL;
	sc_diag d;

	p = good(tmpl);
	if (!p)
		return;
	j1 = plan_to_json(p);
	if (ok(j1 != NULL, "plan_to_json")) {
		int r = sc_plan_parse(j1, strlen(j1), &q, &d);

		if (!ok(r == 0, "canonical JSON parses back")) {
			tap_diag("  %s: %s", d.path, d.message);
			tap_diag("  %s", j1);
		}
		ok(r == 0 && plan_equal(p, q), "round trip gives an equal plan");
		if (q) {
			j2 = plan_to_json(q);
			ok(j2 && strcmp(j1, j2) == 0, "canonical JSON is a fixed point");
			r = sc_plan_parse(j2, strlen(j2), &r3, &d);
			ok(r == 0 && plan_equal(q, r3), "second round trip");
		}
	}
	ok(!plan_equal(p, NULL) && plan_equal(p, p), "plan_equal sanity");
	free(j1);
	free(j2);
	sc_plan_free(p);
	sc_plan_free(q);
	sc_plan_free(r3);
}

static void test_l7(void)
{
	sc_plan *p;

	p = good("{'version':1,'net':{'egress':[{'host':'git.test','methods':['GET'],"
		 "'paths':['/r.git/info/refs','/v1/']}],'credentials':[{'host':'git.test',"
		 "'header':'A','value_env':'K','name':'git-key','max_requests':3,'rate':'2/m',"
		 "'max_bytes':'1K','methods':['GET','POST'],'paths':['/v1/'],'expires':'90s'}]}}");
	ok(p && p->egress[0].n_paths == 2 && strcmp(p->egress[0].paths[1], "/v1/") == 0,
	   "egress paths parsed");
	ok(p && strcmp(p->credentials[0].name, "git-key") == 0 &&
	       p->credentials[0].max_requests == 3 && p->credentials[0].rate.count == 2 &&
	       p->credentials[0].max_bytes == 1024 &&
	       p->credentials[0].methods == (HTTP_GET | HTTP_POST) &&
	       p->credentials[0].n_paths == 1 && p->credentials[0].expires_ns == 90000000000ull,
	   "credential limits parsed");
	sc_plan_free(p);
	p = good("{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[{'host':'x.org',"
		 "'header':'A','value_env':'K'}]}}");
	ok(p && strcmp(p->credentials[0].name, "x.org") == 0 &&
	       p->credentials[0].max_requests == PLAN_UNLIMITED &&
	       p->credentials[0].max_bytes == PLAN_UNLIMITED &&
	       p->credentials[0].expires_ns == PLAN_UNLIMITED &&
	       p->credentials[0].methods == HTTP_ANY_METHOD && p->credentials[0].n_paths == 0,
	   "a credential's name defaults to its host, its limits to none");
	sc_plan_free(p);
	bad("{'version':1,'net':{'egress':[{'host':'x.org','paths':['/v1/../admin']}]}}", -EINVAL,
	    "$.net.egress[0].paths[0]",
	    "path prefix \"/v1/../admin\" is not in normal form (requests are compared after "
	    "resolving \".\", \"..\", \"//\" and decoding %XX of unreserved characters); write "
	    "\"/admin\"");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','paths':['/a%2Fb']}]}}", -EINVAL,
	    "$.net.egress[0].paths[0]",
	    "path prefix \"/a%2Fb\" is refused: the path has an encoded \"/\" (%2F)");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','paths':['v1/']}]}}", -EINVAL,
	    "$.net.egress[0].paths[0]", "path prefix \"v1/\" does not start with \"/\"");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','paths':['/a?b=1']}]}}", -EINVAL,
	    "$.net.egress[0].paths[0]",
	    "path prefix \"/a?b=1\" has a query or fragment; only the path is matched");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','paths':[]}]}}", -EINVAL,
	    "$.net.egress[0].paths",
	    "expected at least one path prefix, got an empty array (omit \"paths\" to allow any "
	    "path)");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','paths':['/a','/a']}]}}", -EINVAL,
	    "$.net.egress[0].paths[1]", "path prefix \"/a\" is listed twice");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','paths':'/a'}]}}", -EINVAL,
	    "$.net.egress[0].paths", "expected an array of path prefixes, got \"/a\"");
	bad("{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[{'host':'x.org',"
	    "'header':'A','value_env':'K','methods':['GET','CONNECT']}]}}",
	    -EINVAL, "$.net.credentials[0].methods",
	    "a credential is never sent through a tunnel: \"CONNECT\" does not apply to it");
	bad("{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[{'host':'x.org',"
	    "'header':'A','value_env':'K','max_requests':0}]}}",
	    -EINVAL, "$.net.credentials[0].max_requests",
	    "expected an integer from 1 to 9007199254740992, got 0");
	bad("{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[{'host':'x.org',"
	    "'header':'A','value_env':'K','rate':'fast'}]}}",
	    -EINVAL, "$.net.credentials[0].rate",
	    "expected a request rate such as \"20/s\" or \"100/m\", got \"fast\"");
	bad("{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[{'host':'x.org',"
	    "'header':'A','value_env':'K','name':'a b'}]}}",
	    -EINVAL, "$.net.credentials[0].name",
	    "expected a name of letters, digits, \".\", \"_\" and \"-\", got \"a b\"");
	bad("{'version':1,'net':{'egress':[{'host':'x.org'},{'host':'y.org'}],'credentials':["
	    "{'host':'x.org','header':'A','value_env':'K','name':'k'},{'host':'y.org','header':"
	    "'A','value_env':'K','name':'k'}]}}",
	    -EINVAL, "$.net.credentials[1]",
	    "name \"k\" is already used by $.net.credentials[0] (a name defaults to the host)");
}

static void test_round_trip(void)
{
	round_trip("{'version':1,'net':{'egress':[{'host':'git.test','ports':[80],"
		   "'methods':['GET'],'paths':['/r.git/info/refs']},{'host':'git.test','ports':"
		   "[80],'methods':['POST'],'paths':['/r.git/git-upload-pack']}],'credentials':"
		   "[{'host':'git.test','header':'A','value_env':'K','name':'git-key',"
		   "'max_requests':3,'rate':'2/m','max_bytes':'1K','methods':['GET','POST'],"
		   "'paths':['/r.git/'],'expires':'90s'}]}}");
	sc_plan *a, *b;

	round_trip("{'version':1}");
	round_trip("{'version':1,'net':{'serve':[8000,{'port':9000,'host_port':18999}]}}");
	round_trip("{'version':1,'name':'research-agent','fs':{'runtime':'host','grants':[{'path':'"
		   "@/a','mode':"
		   "'ro'},{'path':'@/b','mode':'rw','at':'/work'}],'tmp':'64M','workdir':'/"
		   "work'},'net':{'egress':["
		   "{'host':'api.example.com','ports':[443],'methods':['GET','POST']},{'host':'*."
		   "pythonhosted.org'}"
		   "],'allow_private':['10.0.0.0/8','fd00::/8'],'rate':'20/s','bandwidth':'1M/s',"
		   "'max_request_body':'1M','max_response_body':'64M','egress_budget':'8M','"
		   "credentials':[{'host':"
		   "'api.example.com','header':'Authorization','value_env':'EXAMPLE_API_TOKEN','"
		   "format':'Bearer %s',"
		   "'upstream':'https'},{'host':'x.pythonhosted.org','header':'X-K','value_file':'@"
		   "/secret',"
		   "'upstream':'http'}],'upstream_ca':'@/"
		   "f','dns':'1.1.1.1:53'},'limits':{'memory':'256M','cpu':"
		   "0.333,'pids':64,'wall':'30s','nofile':256,'fsize':'64M'},'env':{'LANG':'C.UTF-"
		   "8','B':'x y'},"
		   "'identity':{'hostname':'box'},'audit':{'exec':false,'denied_syscalls':true,'"
		   "fsync':'always'},"
		   "'best_effort':true,'spawn':{'max_depth':2,'max_children':4}}");
	round_trip("{'version':1,'fs':{'runtime':{'rootfs':'@/"
		   "a'},'tmp':{'size':'1G','inodes':99}},'limits':"
		   "{'cpu':1024,'wall':'1h','memory':'4M'},'net':{'rate':'7/m'}}");

	/* plan_equal must see differences. */
	a = good("{'version':1,'limits':{'cpu':0.5}}");
	b = good("{'version':1,'limits':{'cpu':0.501}}");
	ok(a && b && !plan_equal(a, b), "plan_equal sees a different cpu limit");
	sc_plan_free(a);
	sc_plan_free(b);
	a = good("{'version':1,'fs':{'grants':[{'path':'@/a','mode':'ro'}]}}");
	b = good("{'version':1,'fs':{'grants':[{'path':'@/a','mode':'rw'}]}}");
	ok(a && b && !plan_equal(a, b), "plan_equal sees a different grant mode");
	sc_plan_free(a);
	sc_plan_free(b);
	a = good("{'version':1,'net':{'egress':[{'host':'x.org','methods':['GET']}]}}");
	b = good("{'version':1,'net':{'egress':[{'host':'x.org','methods':['HEAD']}]}}");
	ok(a && b && !plan_equal(a, b), "plan_equal sees different methods");
	sc_plan_free(a);
	sc_plan_free(b);

	/* Exact canonical form of the defaults: the audit log depends on it. */
	a = good("{'version':1}");
	if (a) {
		char *j = plan_to_json(a);

		ok(j && str_is(j, "{'audit':{'denied_syscalls':true,'exec':true,'fsync':'"
				  "boundaries','max_bytes':1073741824,'max_rate':'1048576/s',"
				  "'reads':false,'sample_interval':'1000ms'},'best_effort':"
				  "false,'env':{},'fs':{'grants':[],'runtime':'host','tmp':{'"
				  "inodes':8192,'size':"
				  "67108864},'workdir':'/"
				  "tmp'},'identity':{'gid':1000,'hostname':'sandbox','uid':1000},"
				  "'limits':{'cpu':null,"
				  "'exec_wall':null,'fsize':null,'idle':null,'memory':null,'nofile'"
				  ":1024,'pids':null,'wall':"
				  "null},'name':'sandbox',"
				  "'net':{'allow_private':[],'bandwidth':null,'credentials':[],'"
				  "dns':null,'egress':[],"
				  "'egress_budget':null,'listen':true,'max_request_body':null,"
				  "'max_response_body':null,'rate':'200/s',"
				  "'upstream_ca':null},'spawn':{'max_children':8,'max_depth':0},'"
				  "version':1}"),
		   "canonical JSON of the defaults");
		if (j)
			tap_diag("%s", j);
		free(j);
		sc_plan_free(a);
	}
}

static void test_describe(void)
{
	sc_plan *p;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	p = good("{'version':1,'name':'demo','fs':{'grants':[{'path':'@/a','mode':'ro'},{'path':'@/"
		 "b','mode':'rw',"
		 "'at':'/work'}],'tmp':'32M','workdir':'/"
		 "work'},'net':{'egress':[{'host':'api.example.com',"
		 "'ports':[443],'methods':['GET','POST']},{'host':'*.pythonhosted.org'}],'allow_"
		 "private':["
		 "'10.0.0.0/8'],'rate':'20/s','bandwidth':'1M/"
		 "s','credentials':[{'host':'api.example.com','header':"
		 "'Authorization','value_env':'SECRET_TOKEN_VAR','format':'Bearer "
		 "%s'}]},'limits':{'memory':'256M',"
		 "'cpu':0.5,'wall':'90s'},'env':{'LANG':'C'},'identity':{'hostname':'boxy'}}");
	if (!p)
		return;
	f = open_memstream(&out, &len);
	if (!f)
		abort();
	ok(plan_describe(p, f) == 0, "plan_describe succeeds");
	fclose(f);
	static const char *const want[] = {
	    "Policy \"demo\"",
	    "/usr                   read-only",
	    "/lib64",
	    "/etc/ssl, /etc/ca-certificates",
	    "copies of ld.so.cache",
	    "read-only (recursively), nosuid, nodev: the host's @/a",
	    "/work                  READ-WRITE, nosuid, nodev: the host's @/b",
	    "/tmp                   private tmpfs of 32 MiB, 8192 inodes",
	    "/proc",
	    "/dev                   null, zero, full, random, urandom",
	    "working directory      /work",
	    "api.example.com, port 443, methods GET, POST",
	    "*.pythonhosted.org (subdomains only), ports 80, 443, any method",
	    "refused, except 10.0.0.0/8",
	    "20 per second",
	    "1 MiB/s each way",
	    "response body:         unlimited",
	    "Authorization header for api.example.com",
	    "memory:                256 MiB (no swap)",
	    "cpu:                   0.500 cores",
	    "processes:             unlimited",
	    "wall clock:            90 s",
	    "open files:            1024",
	    "hostname:              boxy",
	    "LANG HOME PATH USER TMPDIR HTTP_PROXY",
	    "fsync:                 at start, exit and seal",
	};
	for (size_t i = 0; i < ELEMENTSOF(want); i++) {
		_cleanup_free_ char *w = M(want[i]);

		ok(out && strstr(out, w), "description mentions: %s", want[i]);
	}
	ok(out && !strstr(out, "SECRET_TOKEN_VAR") && !strstr(out, "Bearer"),
	   "description names no credential source or value");
	free(out);
	sc_plan_free(p);

	p = good("{'version':1}");
	if (!p)
		return;
	out = NULL;
	f = open_memstream(&out, &len);
	if (!f)
		abort();
	ok(plan_describe(p, f) == 0, "plan_describe of the defaults");
	fclose(f);
	ok(out && strstr(out, "none: only a loopback interface") &&
	       strstr(out, "memory:                unlimited") &&
	       strstr(out, "none: the agent cannot start sub-sandboxes") &&
	       !strstr(out, "HTTP_PROXY"),
	   "no network, unlimited memory, no delegation, no proxy variables");
	free(out);
	sc_plan_free(p);
}

/* Less common refusals, so that every error branch runs at least once. */
static void test_more_errors(void)
{
	char *s;
	size_t o;

	bad("{'version':1,'a\\'b':1}", -EINVAL, "$[\"a\\\"b\"]",
	    "unknown key \"a\\\"b\" (expected one of: version, name, fs, net, limits, env, "
	    "identity, "
	    "audit, best_effort, spawn)");
	bad("{'version':1,'net':{'egress':[{'host':'caf\\u00e9.com'}]}}", -EINVAL,
	    "$.net.egress[0].host",
	    "host \"caf\xc3\xa9.com\" contains a character other than letters, digits, \"-\" and "
	    "\".\"");
	/* A hostile value is quoted with escapes and cut with "...". */
	{
		char pol[256] = "{'version':1,'fs':{'workdir':'/", msg[256] = "path \"/";

		for (int k = 0; k < 29; k++)
			strcat(pol, "\\n");
		strcat(pol, "'}}");
		for (int k = 0; k < 25; k++)
			strcat(msg, "\\u000a");
		strcat(msg, "...\" contains a control character");
		bad(pol, -EINVAL, "$.fs.workdir", msg);
	}
	bad("{'version':1,'name':false}", -EINVAL, "$.name", "expected a string, got false");
	bad("{'version':1,'fs':{'runtime':3}}", -EINVAL, "$.fs.runtime",
	    "expected \"host\" or {\"rootfs\": \"/path\"}, got 3");
	bad("{'version':1,'fs':{'tmp':{'size':'0'}}}", -EINVAL, "$.fs.tmp.size",
	    "expected a size above 0, got \"0\"");
	bad("{'version':1,'fs':{'grants':[{'path':'@/fifo'}]}}", -EINVAL, "$.fs.grants[0].path",
	    "\"@/fifo\" is neither a directory nor a regular file");
	bad("{'version':1,'net':{'egress':{}}}", -EINVAL, "$.net.egress",
	    "expected an array of egress rules, got an object");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','methods':'GET'}]}}", -EINVAL,
	    "$.net.egress[0].methods", "expected an array of HTTP methods, got \"GET\"");
	bad("{'version':1,'net':{'egress':[{'host':'x.org','methods':['GET','HEAD','POST','PUT','"
	    "PATCH',"
	    "'DELETE','OPTIONS','CONNECT','GET']}]}}",
	    -E2BIG, "$.net.egress[0].methods", "9 methods, but there are only 8");
	bad("{'version':1,'net':{'allow_private':'10.0.0.0/8'}}", -EINVAL, "$.net.allow_private",
	    "expected an array of CIDRs, got \"10.0.0.0/8\"");
	bad("{'version':1,'net':{'allow_private':['x/8']}}", -EINVAL, "$.net.allow_private[0]",
	    "expected a CIDR such as \"10.0.0.0/8\" or \"fd00::/8\", got \"x/8\"");
	bad("{'version':1,'net':{'allow_private':['10.0.0.0/a']}}", -EINVAL,
	    "$.net.allow_private[0]",
	    "expected a CIDR with a prefix length, such as \"10.0.0.0/8\", got \"10.0.0.0/a\"");
	bad("{'version':1,'net':{'allow_private':['10.0.0.0/']}}", -EINVAL,
	    "$.net.allow_private[0]",
	    "expected a CIDR with a prefix length, such as \"10.0.0.0/8\", got \"10.0.0.0/\"");
	bad("{'version':1,'net':{'credentials':{}}}", -EINVAL, "$.net.credentials",
	    "expected an array of credentials, got an object");
	bad("{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[{'header':'A'}]}}",
	    -EINVAL, "$.net.credentials[0]", "missing required key \"host\"");
	bad("{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[{'host':'x.org','"
	    "header':''}]}}",
	    -EINVAL, "$.net.credentials[0].header", "expected an HTTP header name, got \"\"");

	static const char *const dns_bad[] = {
	    "[::1", "[::1]x", "[zz]:53", "1.1.1.1:5a", "999.1.1.1", "1.1.1.1:", "[::1]:053", "",
	};
	for (size_t i = 0; i < ELEMENTSOF(dns_bad); i++) {
		char pol[128], msg[256];

		snprintf(pol, sizeof(pol), "{'version':1,'net':{'dns':'%s'}}", dns_bad[i]);
		snprintf(msg, sizeof(msg),
			 "expected a resolver address \"IP\" or \"IP:port\" (IPv6 with a port as "
			 "\"[IP]:port\"), got \"%s\"",
			 dns_bad[i]);
		bad(pol, -EINVAL, "$.net.dns", msg);
	}

	/* Path length limits. */
	s = malloc(PATH_MAX + 64);
	if (!s)
		abort();
	o = (size_t)sprintf(s, "{'version':1,'fs':{'workdir':'");
	for (size_t i = 0; i < PATH_MAX; i += 2)
		o += (size_t)sprintf(s + o, "/a");
	strcpy(s + o, "'}}");
	bad(s, -ENAMETOOLONG, "$.fs.workdir", "path is longer than 4095 bytes");
	o = (size_t)sprintf(s, "{'version':1,'fs':{'grants':[{'path':'/");
	memset(s + o, 'x', 300);
	strcpy(s + o + 300, "'}]}}");
	bad(s, -ENAMETOOLONG, "$.fs.grants[0].path",
	    "a component of the path is longer than 255 bytes");
	free(s);

	/* Count limits of the remaining arrays. */
	s = malloc((POLICY_MAX_CIDRS + 1) * 24 + (POLICY_MAX_CREDENTIALS + 1) * 80 + 128);
	if (!s)
		abort();
	o = (size_t)sprintf(s, "{'version':1,'net':{'allow_private':[");
	for (unsigned i = 0; i <= POLICY_MAX_CIDRS; i++)
		o += (size_t)sprintf(s + o, "%s'10.%u.%u.0/24'", i ? "," : "", i / 256, i % 256);
	strcpy(s + o, "]}}");
	bad(s, -E2BIG, "$.net.allow_private", "257 CIDRs, more than the limit of 256");
	o = (size_t)sprintf(s, "{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[");
	for (unsigned i = 0; i <= POLICY_MAX_CREDENTIALS; i++)
		o += (size_t)sprintf(s + o, "%s{'host':'x.org','header':'H%u','value_env':'K'}",
				     i ? "," : "", i);
	strcpy(s + o, "]}}");
	bad(s, -E2BIG, "$.net.credentials", "65 credentials, more than the limit of 64");
	free(s);
}

static void test_describe_rootfs(void)
{
	sc_plan *p = good("{'version':1,'fs':{'runtime':{'rootfs':'@/b'}}}");
	_cleanup_free_ char *want = M("the unpacked image at @/b on the host, read-only");
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (!p)
		return;
	f = open_memstream(&out, &len);
	if (!f)
		abort();
	ok(plan_describe(p, f) == 0, "plan_describe of a rootfs plan");
	fclose(f);
	ok(out && strstr(out, want) && !strstr(out, "/lib64") &&
	       !strstr(out, "a private tmpfs, nothing"),
	   "rootfs described instead of the host runtime");
	free(out);
	sc_plan_free(p);
}

/* A file of the source tree, found from this file's path as compiled
 * (relative to the build directory meson runs tests in). */
static char *read_source_file(const char *rel, size_t *ret_len)
{
	char path[PATH_MAX];
	const char *slash = strrchr(__FILE__, '/');
	char *buf = NULL;

	snprintf(path, sizeof(path), "%.*s/../../%s", slash ? (int)(slash - __FILE__) : 1,
		 slash ? __FILE__ : ".", rel);
	if (io_read_file_at(AT_FDCWD, path, POLICY_MAX_BYTES, &buf, ret_len) < 0)
		return NULL;
	return buf;
}

/* The shipped examples must stay valid. */
static char *read_example(const char *name, size_t *ret_len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "examples/policies/%s", name);
	return read_source_file(rel, ret_len);
}

static void test_examples(void)
{
	_cleanup_free_ char *minimal = NULL, *research = NULL, *clone = NULL;
	bool made_work = false;
	struct stat st;
	sc_plan *p = NULL;
	size_t len = 0;
	sc_diag d;

	minimal = read_example("minimal.json", &len);
	if (!minimal) {
		tap_skip("examples/policies", "not found from %s", __FILE__);
		return;
	}
	ok(sc_plan_parse(minimal, len, &p, &d) == 0 && p && p->n_grants == 0 && p->n_egress == 0,
	   "examples/policies/minimal.json: no grants, no network");
	p = sc_plan_free(p);

	clone = read_example("git-clone-only.json", &len);
	if (!ok(clone && sc_plan_parse(clone, len, &p, &d) == 0 && p && p->n_egress == 3 &&
		    p->egress[0].methods == HTTP_GET && p->egress[0].n_paths == 1 &&
		    p->egress[1].methods == HTTP_POST &&
		    str_is(p->egress[1].paths[0], "/org/repo.git/git-upload-pack") &&
		    p->n_credentials == 1 && p->credentials[0].max_requests == 200,
		"examples/policies/git-clone-only.json: clone paths, a limited credential"))
		tap_diag("  %s: %s", d.path, d.message);
	p = sc_plan_free(p);

	research = read_example("research-agent.json", &len);
	if (!research || stat("/usr/share/doc", &st) < 0) {
		tap_skip("examples/policies/research-agent.json",
			 "it or /usr/share/doc is missing");
		return;
	}
	/* The demo creates the agent's work directory; so does this test. */
	if (mkdir("/tmp/agent-work", 0755) == 0)
		made_work = true;
	if (!ok(sc_plan_parse(research, len, &p, &d) == 0 && p && p->n_grants == 2 &&
		    p->grants[1].mode == GRANT_RW && str_is(p->grants[1].at, "/work") &&
		    p->n_egress == 2 && p->n_credentials == 1,
		"examples/policies/research-agent.json"))
		tap_diag("  %s: %s", d.path, d.message);
	sc_plan_free(p);
	if (made_work)
		(void)rmdir("/tmp/agent-work");
}

/* plan_parse_json() looks at nothing but its input; plan_check_host() at the
 * host; plan_check_secret() at the secrets. */
static void test_host_check(void)
{
	_cleanup_free_ char *s = NULL, *want = NULL;
	sc_plan *p = NULL;
	sc_diag d;
	int r;

	s = J("{'version':1,'fs':{'grants':[{'path':'@/a'},{'path':'@/nope','at':'/n'}]}}");
	r = plan_parse_json(s, strlen(s), &p, &d);
	ok(r == 0 && p && p->n_grants == 2, "plan_parse_json accepts a grant that does not exist");
	if (p) {
		want = M("\"@/nope\" does not exist");
		r = plan_check_host(p, &d);
		ok(r == -ENOENT && strcmp(d.path, "$.fs.grants[1].path") == 0 &&
		       strcmp(d.message, want) == 0,
		   "plan_check_host refuses it at its JSON path (%s: %s)", d.path, d.message);
		p = sc_plan_free(p);
	}
	free(s);
	s = J("{'version':1,'fs':{'runtime':{'rootfs':'@/nope'}},'net':{'upstream_ca':'@/nope'}}");
	r = plan_parse_json(s, strlen(s), &p, &d);
	if (ok(r == 0 && p, "plan_parse_json accepts a missing rootfs and CA file")) {
		r = plan_check_host(p, &d);
		ok(r == -ENOENT && strcmp(d.path, "$.fs.runtime.rootfs") == 0,
		   "the rootfs is checked first, in table order (%s)", d.path);
		p = sc_plan_free(p);
	}
	free(s);
	s = J("{'version':1,'fs':{'grants':[{'path':'@/a','mode':'rwx'}]}}");
	r = plan_parse_json(s, strlen(s), &p, &d);
	ok(r == -EINVAL && !p && strcmp(d.path, "$.fs.grants[0].mode") == 0,
	   "plan_parse_json refuses what the JSON gets wrong");
	ok(plan_check_host(NULL, &d) == -EINVAL, "plan_check_host(NULL)");

	/* A secret file named through a symlink that leads into a grant. */
	free(want);
	want = M("secret file \"@/link/secret\" is \"@/a/secret\", inside a grant, where the "
		 "sandbox could read it");
	bad("{'version':1,'fs':{'grants':[{'path':'@/a'}]},'net':{'egress':[{'host':'x.org'}],"
	    "'credentials':[{'host':'x.org','header':'K','value_file':'@/link/secret'}]}}",
	    -EINVAL, "$.net.credentials[0].value_file", want);
	free(want);
	want = NULL;

	/* Secrets. */
	free(s);
	s = J("{'version':1,'net':{'egress':[{'host':'x.org'}],'credentials':[{'host':'x.org',"
	      "'header':'Authorization','value_env':'SANDCAP_UNIT_SECRET'},{'host':'x.org',"
	      "'header':'X-File','value_file':'@/secret'}]}}");
	r = sc_plan_parse(s, strlen(s), &p, &d);
	if (!ok(r == 0 && p && p->n_credentials == 2, "a policy with two credentials"))
		return;
	unsetenv("SANDCAP_UNIT_SECRET");
	r = plan_check_secret(p, 0, &d);
	ok(r == -ENOKEY && strcmp(d.path, "$.net.credentials[0].value_env") == 0 &&
	       strcmp(d.message, "environment variable SANDCAP_UNIT_SECRET is not set; it holds "
				 "the Authorization header the proxy adds for x.org") == 0,
	   "an unset variable: -ENOKEY naming it, the header and the host (%s)", d.message);
	setenv("SANDCAP_UNIT_SECRET", "", 1);
	r = plan_check_secret(p, 0, &d);
	ok(r == -ENOKEY && strstr(d.message, "SANDCAP_UNIT_SECRET is empty;"),
	   "an empty variable: -ENOKEY (%s)", d.message);
	setenv("SANDCAP_UNIT_SECRET", "s3cret", 1);
	ok(plan_check_secret(p, 0, &d) == 0, "a set variable passes");
	unsetenv("SANDCAP_UNIT_SECRET");

	want = M("@/secret is empty; it holds the X-File header the proxy adds for x.org");
	r = plan_check_secret(p, 1, &d);
	ok(r == -ENOKEY && strcmp(d.path, "$.net.credentials[1].value_file") == 0 &&
	       strcmp(d.message, want) == 0,
	   "an empty secret file: -ENOKEY naming it (%s)", d.message);
	{
		_cleanup_free_ char *f = M("@/secret");
		int fd = open(f, O_WRONLY | O_TRUNC | O_CLOEXEC);

		ok(fd >= 0 && write(fd, "\r\n", 2) == 2 && close(fd) == 0, "line ends only");
		ok(plan_check_secret(p, 1, &d) == -ENOKEY, "a file of line ends is empty too");
		fd = open(f, O_WRONLY | O_TRUNC | O_CLOEXEC);
		ok(fd >= 0 && write(fd, "k\n", 2) == 2 && close(fd) == 0, "a secret");
		ok(plan_check_secret(p, 1, &d) == 0, "a file with a secret passes");
		fd = open(f, O_WRONLY | O_TRUNC | O_CLOEXEC);
		(void)close(fd);
		ok(unlink(f) == 0, "removed");
		r = plan_check_secret(p, 1, &d);
		ok(r == -ENOENT && strstr(d.message, "cannot read") && strstr(d.message, "X-File"),
		   "a file gone since parsing: the error, naming it (%s)", d.message);
		fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		(void)close(fd);
	}
	ok(plan_check_secret(p, 2, &d) == -EINVAL, "no such credential");
	sc_plan_free(p);
}

/* ---- docs/policy.md against the parser's key table ---- */

typedef struct doc_row {
	char key[128];
	char type[1024];
	char def[512];
	char meaning[4096];
	bool seen;
} doc_row;

#define MAX_DOC_ROWS 256

static void trim(char *s)
{
	size_t n = strlen(s), i = 0;

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	while (s[i] == ' ' || s[i] == '\t')
		i++;
	memmove(s, s + i, n - i + 1);
}

/* Table rows whose first cell is a `key`: | `key` | type | default | meaning | */
static size_t read_doc_rows(char *text, doc_row *rows, size_t max, unsigned *ret_malformed)
{
	size_t n = 0;

	*ret_malformed = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *cells[6] = {0}, *p = line + 1, *bar;
		size_t nc = 0;

		if (strncmp(line, "| `", 3) != 0)
			continue;
		while (nc < 6 && (bar = strchr(p, '|'))) {
			*bar = '\0';
			cells[nc++] = p;
			p = bar + 1;
		}
		if (nc != 4 || n >= max) {
			(*ret_malformed)++;
			tap_diag("  docs/policy.md: a key row without 4 cells: %.60s", line);
			continue;
		}
		for (size_t i = 0; i < 4; i++)
			trim(cells[i]);
		if (cells[0][0] != '`' || strlen(cells[0]) < 3 ||
		    cells[0][strlen(cells[0]) - 1] != '`' || !cells[1][0] || !cells[2][0] ||
		    !cells[3][0]) {
			(*ret_malformed)++;
			tap_diag("  docs/policy.md: a key row with an empty cell: %.60s", cells[0]);
			continue;
		}
		snprintf(rows[n].key, sizeof(rows[n].key), "%.*s", (int)strlen(cells[0]) - 2,
			 cells[0] + 1);
		snprintf(rows[n].type, sizeof(rows[n].type), "%s", cells[1]);
		snprintf(rows[n].def, sizeof(rows[n].def), "%s", cells[2]);
		snprintf(rows[n].meaning, sizeof(rows[n].meaning), "%s", cells[3]);
		n++;
	}
	return n;
}

/* The default as the reference writes it, from what the table sets. */
static void derived_default(const policy_key *k, char *buf, size_t size)
{
	static const char units[] = "TGMK";

	if (k->flags & KEY_REQUIRED) {
		snprintf(buf, size, "required");
		return;
	}
	if (k->doc_default) {
		snprintf(buf, size, "%s", k->doc_default);
		return;
	}
	switch (k->type) {
	case KT_SECTION:
		snprintf(buf, size, "{}");
		return;
	case KT_LIST:
		snprintf(buf, size, "[]");
		return;
	case KT_BOOL:
		snprintf(buf, size, "%s", k->def ? "true" : "false");
		return;
	case KT_UINT:
	case KT_DURATION:
		if (k->def == PLAN_UNLIMITED)
			snprintf(buf, size, "unlimited");
		else
			snprintf(buf, size, "%" PRIu64, k->def);
		return;
	case KT_SIZE:
		if (k->def == PLAN_UNLIMITED) {
			snprintf(buf, size, "unlimited");
			return;
		}
		for (unsigned i = 0; i < 4; i++) {
			uint64_t unit = 1ull << (10 * (4 - i));

			if (k->def && k->def % unit == 0) {
				snprintf(buf, size, "%" PRIu64 "%c", k->def / unit, units[i]);
				return;
			}
		}
		snprintf(buf, size, "%" PRIu64, k->def);
		return;
	case KT_ENUM:
		for (size_t i = 0; i < k->n_names; i++)
			if ((k->values ? (uint64_t)k->values[i] : i) == k->def) {
				snprintf(buf, size, "\"%s\"", k->names[i]);
				return;
			}
		break;
	case KT_STRING:
	case KT_PATH:
	case KT_HOST_PATH:
		if (k->def_str)
			snprintf(buf, size, "\"%s\"", k->def_str);
		else
			snprintf(buf, size, "none");
		return;
	case KT_CUSTOM:
	case _KT_MAX:
	case _KT_INVALID:
		break;
	}
	snprintf(buf, size, "(the table states no default for it)");
}

/* What the type cell must say; NULL when the table cannot tell. */
static const char *type_word(const policy_key *k)
{
	static const char *const words[_KT_MAX] = {
	    [KT_SECTION] = "object", [KT_LIST] = "array", [KT_BOOL] = "bool",
	    [KT_UINT] = "integer",   [KT_SIZE] = "size",  [KT_DURATION] = "duration",
	    [KT_STRING] = "string",  [KT_PATH] = "path",  [KT_HOST_PATH] = "path",
	};

	if (k->doc_type)
		return k->doc_type;
	return k->type >= 0 && k->type < _KT_MAX ? words[k->type] : NULL;
}

static void check_doc_key(const policy_key *k, const char *path, doc_row *rows, size_t n_rows)
{
	char want_def[128], why[2048] = "";
	doc_row *row = NULL;
	const char *word = type_word(k);

	for (size_t i = 0; i < n_rows && !row; i++)
		if (strcmp(rows[i].key, path) == 0)
			row = &rows[i];
	if (!row) {
		ok(false, "docs/policy.md documents %s", path);
		return;
	}
	row->seen = true;
	derived_default(k, want_def, sizeof(want_def));
	if (k->type == KT_ENUM) {
		for (size_t i = 0; i < k->n_names && !why[0]; i++) {
			char q[64];

			snprintf(q, sizeof(q), "\"%s\"", k->names[i]);
			if (!strstr(row->type, q))
				snprintf(why, sizeof(why), "type %s does not list %s", row->type,
					 q);
		}
	} else if (!word) {
		snprintf(why, sizeof(why), "the key table gives no doc_type for this key");
	} else if (!strstr(row->type, word)) {
		snprintf(why, sizeof(why), "type \"%s\" does not say \"%s\"", row->type, word);
	}
	if (!why[0] && !strstr(row->def, want_def))
		snprintf(why, sizeof(why), "default \"%s\" does not say \"%s\"", row->def,
			 want_def);
	if (!why[0] &&
	    !!(k->flags & (KEY_NULLABLE | KEY_NULL_LIFTS)) != !!strstr(row->type, "null"))
		snprintf(why, sizeof(why), "type \"%s\" %s \"null\"", row->type,
			 k->flags & (KEY_NULLABLE | KEY_NULL_LIFTS) ? "does not say" : "says");
	if (!ok(!why[0], "docs/policy.md documents %s with its type, default and meaning", path))
		tap_diag("  %s", why);
}

static unsigned walk_doc_keys(const key_table *t, const char *prefix, doc_row *rows, size_t n_rows)
{
	unsigned n = 0;

	for (size_t i = 0; i < t->n_keys; i++) {
		const policy_key *k = &t->keys[i];
		char path[256];

		snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "", k->name);
		check_doc_key(k, path, rows, n_rows);
		n++;
		if (k->type == KT_LIST) {
			strcat(path, "[]");
			n += walk_doc_keys(k->sub, path, rows, n_rows);
		} else if (k->sub) {
			n += walk_doc_keys(k->sub, path, rows, n_rows);
		}
	}
	return n;
}

static void test_reference_doc(void)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ doc_row *rows = calloc(MAX_DOC_ROWS, sizeof(*rows));
	unsigned malformed = 0, n_keys, extra = 0;
	size_t len = 0, n_rows;

	if (!rows)
		abort();
	text = read_source_file("docs/policy.md", &len);
	if (!text) {
		tap_skip("docs/policy.md", "not found from %s", __FILE__);
		return;
	}
	n_rows = read_doc_rows(text, rows, MAX_DOC_ROWS, &malformed);
	ok(malformed == 0, "docs/policy.md: every key row has a key, type, default and meaning");
	n_keys = walk_doc_keys(&policy_root, "", rows, n_rows);
	ok(n_keys >= 50, "the key table has every key (%u)", n_keys);
	for (size_t i = 0; i < n_rows; i++) {
		for (size_t j = 0; j < i; j++)
			if (strcmp(rows[i].key, rows[j].key) == 0) {
				tap_diag("  %s is documented twice", rows[i].key);
				extra++;
			}
		if (!rows[i].seen) {
			tap_diag("  %s is documented but the parser knows no such key",
				 rows[i].key);
			extra++;
		}
	}
	ok(extra == 0 && n_rows == n_keys,
	   "docs/policy.md documents only the parser's keys, each once (%zu rows, %u keys)", n_rows,
	   n_keys);
}

int main(void)
{
	make_tree();
	test_defaults();
	test_serve();
	test_syntax();
	test_top();
	test_grants();
	test_fs();
	test_limits();
	test_env_identity_audit();
	test_agent_proxy_env();
	test_net();
	test_credentials();
	test_l7();
	test_round_trip();
	test_describe();
	test_describe_rootfs();
	test_more_errors();
	test_examples();
	test_host_check();
	test_reference_doc();
	remove_tree();
	return tap_done();
}

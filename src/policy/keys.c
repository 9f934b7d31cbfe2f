/* SPDX-License-Identifier: MIT */
/*
 * The key table: every key a policy may hold, its type, where it goes in the
 * plan, its default and its checks. The net section is in keys-net.c. The
 * reference, docs/policy.md, documents exactly these keys (a unit test
 * compares the two). Pure: the host is looked at by host-check.c.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "base/parse-num.h"
#include "base/path.h"
#include "policy/agent-env.h"
#include "policy/parse-internal.h"
#include "policy/plan.h"

static const char *const grant_modes[] = {"ro", "rw", "cow"};
static const char *const fsync_names[] = {"boundaries", "always"};

const char *plan_grant_mode_name(grant_mode m)
{
	return m >= 0 && (size_t)m < ELEMENTSOF(grant_modes) ? grant_modes[m] : "?";
}

/* ---- top level ---- */

static int check_name(pctx *c, const json_t *v, const char *s)
{
	/* The name ends up in cgroup and log names: keep it to a safe alphabet. */
	bool ok = *s && strlen(s) <= POLICY_MAX_NAME && s[0] != '.' && s[0] != '-';

	for (const char *q = s; ok && *q; q++)
		ok = a_alnum(*q) || *q == '-' || *q == '_' || *q == '.';
	if (ok)
		return 0;
	return fail_expected(c, v,
			     "a name of 1 to 64 letters, digits, \"-\", \"_\" and \".\", not "
			     "starting with \"-\" or \".\"");
}

static int cmp_env(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strcspn(x, "="), ly = strcspn(y, "=");
	int r = strncmp(x, y, lx < ly ? lx : ly);

	if (r)
		return r;
	return lx < ly ? -1 : lx > ly;
}

/* "env": an object of variables, stored as sorted "NAME=value" strings. */
static int parse_env(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	sc_plan *p = base;
	const char *key;
	json_t *x;
	size_t n;

	(void)k;
	if (!json_is_object(v))
		return fail_expected(c, v, "an object of \"NAME\": \"value\" strings");
	n = json_object_size(v);
	if (n > POLICY_MAX_ENV)
		return fail(c, -E2BIG, "%zu variables, more than the limit of %u", n,
			    POLICY_MAX_ENV);
	if (n) {
		p->env = calloc(n, sizeof(*p->env));
		if (!p->env)
			return -ENOMEM;
	}
	json_object_foreach((json_t *)v, key, x)
	{
		size_t s = path_push_key(c, key);
		const char *val = NULL;
		char q[160];
		int r;

		quote(key, 64, q, sizeof(q));
		if (strchr(key, '='))
			return fail(c, -EINVAL, "variable name %s contains \"=\"", q);
		if (!is_ident(key) || strlen(key) > 255)
			return fail(c, -EINVAL,
				    "%s is not a valid variable name (letters, digits and \"_\", "
				    "not starting with a digit)",
				    q);
		if (agent_env_reserved(key) && !agent_env_policy_may_set(key))
			return fail(c, -EINVAL,
				    "%s is set by sandcap itself and cannot be overridden (only "
				    "the proxy variables can, in the case sandcap writes them)",
				    q);
		for (size_t i = 0; i < p->n_credentials; i++)
			if (p->credentials[i].placeholder_env &&
			    strcmp(p->credentials[i].placeholder_env, key) == 0)
				return fail(c, -EINVAL,
					    "%s holds the placeholder of $.net.credentials[%zu]", q,
					    i);
		r = want_string(c, x, &val);
		if (r < 0)
			return r;
		if (p->n_env >= n)
			return -EINVAL;
		if (asprintf(&p->env[p->n_env], "%s=%s", key, val) < 0) {
			p->env[p->n_env] = NULL;
			return -ENOMEM;
		}
		p->n_env++;
		path_pop(c, s);
	}
	/* Sorted by name: order has no meaning in an environment, and a canonical
	 * order makes plans comparable. */
	if (p->n_env > 1)
		qsort(p->env, p->n_env, sizeof(*p->env), cmp_env);
	return 0;
}

/* ---- fs ---- */

static int check_rootfs(pctx *c, const json_t *v, const char *s)
{
	(void)v;
	if (strcmp(s, "/") == 0)
		return fail(c, -EINVAL,
			    "the host root \"/\" cannot be the sandbox's root; use \"host\"");
	return 0;
}

static const policy_key runtime_keys[] = {
    {.name = "rootfs",
     .type = KT_HOST_PATH,
     FIELD(sc_plan, rootfs),
     .flags = KEY_REQUIRED,
     .host = HOST_ROOTFS,
     .check = check_rootfs},
    {.name = "writable", .type = KT_BOOL, FIELD(sc_plan, rootfs_writable), .def = false},
};
static const key_table runtime_table = {runtime_keys, ELEMENTSOF(runtime_keys)};

/* "host", or {"rootfs": "/dir"}. */
static int parse_runtime(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	sc_plan *p = base;
	int r;

	if (json_is_string(v) && strcmp(json_string_value(v), "host") == 0) {
		p->runtime = RUNTIME_HOST;
		return 0;
	}
	if (!json_is_object(v))
		return fail_expected(c, v, "\"host\" or {\"rootfs\": \"/path\"}");
	r = parse_object(c, v, k->sub, base);
	if (r < 0)
		return r;
	p->runtime = RUNTIME_ROOTFS;
	return 0;
}

static const policy_key tmp_keys[] = {
    {.name = "size", .type = KT_SIZE, FIELD(sc_plan, tmp_size), .def = 64ull << 20, .min = 1},
    {.name = "inodes",
     .type = KT_UINT,
     FIELD(sc_plan, tmp_inodes),
     .def = 8192,
     .min = 16,
     .max = POLICY_MAX_TMP_INODES},
};
static const key_table tmp_table = {tmp_keys, ELEMENTSOF(tmp_keys)};

/* A size (of the tmpfs), or {"size": ..., "inodes": ...}. */
static int parse_tmp(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	if (json_is_string(v) || json_is_integer(v))
		return parse_value(c, v, &tmp_keys[0], base);
	if (json_is_object(v))
		return parse_object(c, v, k->sub, base);
	return fail_expected(c, v,
			     "a size such as \"64M\" or {\"size\": \"64M\", \"inodes\": 8192}");
}

static int check_grant_path(pctx *c, const json_t *v, const char *s)
{
	char q[160];

	(void)v;
	quote(s, 128, q, sizeof(q));
	if (strcmp(s, "/") == 0)
		return fail(
		    c, -EINVAL,
		    "granting \"/\" would expose the whole host; grant the directories needed");
	if (path_is_under(s, "/proc") || path_is_under(s, "/sys") || path_is_under(s, "/dev"))
		return fail(c, -EINVAL,
			    "%s is a kernel interface of the host and cannot be granted", q);
	return 0;
}

/* Where grants may not appear inside: these are the sandbox's own. */
static const char *grant_at_error(const char *at)
{
	static const char *const under[] = {"/proc", "/dev", "/sys"};
	static const char *const exact[] = {"/etc", "/usr"};

	if (strcmp(at, "/") == 0)
		return "cannot replace the sandbox's root \"/\"";
	/* Kubernetes' termination message, a file every container of a pod
	 * is given (docs/oci.md, "Kubernetes"): a name in /dev at which the
	 * sandbox makes nothing. */
	if (strcmp(at, "/dev/termination-log") == 0)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(under); i++)
		if (path_is_under(at, under[i]))
			return "may not be in /proc, /dev or /sys, which the sandbox builds itself";
	for (size_t i = 0; i < ELEMENTSOF(exact); i++)
		if (strcmp(at, exact[i]) == 0)
			return "may not replace /etc or /usr, which the runtime provides";
	return NULL;
}

static int check_grant_at(pctx *c, const json_t *v, const char *s)
{
	const char *err = grant_at_error(s);
	char q[160];

	(void)v;
	if (!err)
		return 0;
	quote(s, 128, q, sizeof(q));
	return fail(c, -EINVAL, "%s %s", q, err);
}

/* "at" defaults to "path"; no host path and no place inside is used twice. */
static int grant_finish(pctx *c, const json_t *obj, void *base, size_t index)
{
	plan_grant *g = base;
	const sc_plan *p = c->plan;
	const char *err;
	char q[160];

	quote(g->path, 128, q, sizeof(q));
	if (!g->at) {
		g->at = strdup(g->path);
		if (!g->at)
			return -ENOMEM;
		err = grant_at_error(g->at);
		if (err) {
			(void)path_push_key(c, "path");
			return fail(
			    c, -EINVAL,
			    "%s would appear at the same path inside, where it %s; add \"at\"", q,
			    err);
		}
	}
	if (g->mode == GRANT_COW && g->quota == PLAN_UNLIMITED) {
		(void)path_push_key(c, "mode");
		return fail(c, -EINVAL,
			    "a \"cow\" grant needs \"quota\", the most its changes may take "
			    "(e.g. \"64M\")");
	}
	if (g->mode == GRANT_RO && (g->quota != PLAN_UNLIMITED || g->inodes != PLAN_UNLIMITED)) {
		(void)path_push_key(c, g->quota != PLAN_UNLIMITED ? "quota" : "inodes");
		return fail(c, -EINVAL, "a read-only grant cannot be written: drop the quota");
	}
	if (g->best_effort && (g->mode != GRANT_RW || g->quota == PLAN_UNLIMITED)) {
		(void)path_push_key(c, "best_effort");
		return fail(c, -EINVAL,
			    "\"best_effort\" applies only to the \"quota\" of a \"rw\" grant");
	}
	for (size_t i = 0; i < index; i++) {
		const plan_grant *o = &p->grants[i];

		if (strcmp(o->path, g->path) == 0) {
			(void)path_push_key(c, "path");
			if (o->mode != g->mode)
				return fail(
				    c, -EINVAL,
				    "%s is granted \"%s\" here but \"%s\" in $.fs.grants[%zu]", q,
				    grant_modes[g->mode], grant_modes[o->mode], i);
			return fail(c, -EINVAL, "%s is already granted in $.fs.grants[%zu]", q, i);
		}
		if (strcmp(o->at, g->at) == 0) {
			char qa[160];

			(void)path_push_key(c, json_object_get(obj, "at") ? "at" : "path");
			quote(g->at, 128, qa, sizeof(qa));
			return fail(c, -EINVAL,
				    "%s inside the sandbox is already used by $.fs.grants[%zu]", qa,
				    i);
		}
	}
	return 0;
}

static const policy_key grant_keys[] = {
    {.name = "path",
     .type = KT_HOST_PATH,
     FIELD(plan_grant, path),
     .flags = KEY_REQUIRED,
     .host = HOST_GRANT,
     .check = check_grant_path},
    {.name = "mode",
     .type = KT_ENUM,
     FIELD(plan_grant, mode),
     .def = GRANT_RO, /* least privilege when absent */
     .names = grant_modes,
     .n_names = ELEMENTSOF(grant_modes)},
    {.name = "at",
     .type = KT_PATH,
     FIELD(plan_grant, at),
     .check = check_grant_at,
     .doc_default = "path"},
    {.name = "quota",
     .type = KT_SIZE,
     FIELD(plan_grant, quota),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .min = 1},
    {.name = "inodes",
     .type = KT_UINT,
     FIELD(plan_grant, inodes),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .min = 16,
     .max = POLICY_MAX_TMP_INODES},
    {.name = "best_effort", .type = KT_BOOL, FIELD(plan_grant, best_effort), .def = false},
};
static const key_table grant_table = {grant_keys, ELEMENTSOF(grant_keys), .finish = grant_finish};

static const policy_key fs_keys[] = {
    {.name = "runtime",
     .type = KT_CUSTOM,
     FIELD(sc_plan, runtime),
     .def = RUNTIME_HOST,
     .sub = &runtime_table,
     .parse = parse_runtime,
     .doc_type = "\"host\"",
     .doc_default = "\"host\""},
    {.name = "grants",
     .type = KT_LIST,
     FIELD(sc_plan, grants),
     .count_off = offsetof(sc_plan, n_grants),
     .elem_size = sizeof(plan_grant),
     .max_items = POLICY_MAX_GRANTS,
     .items = "grants",
     .sub = &grant_table},
    {.name = "tmp",
     .type = KT_CUSTOM,
     .sub = &tmp_table,
     .parse = parse_tmp,
     .doc_type = "size",
     .doc_default = "64M"},
    {.name = "workdir", .type = KT_PATH, FIELD(sc_plan, workdir), .def_str = "/tmp"},
};
static const key_table fs_table = {fs_keys, ELEMENTSOF(fs_keys)};

/* ---- limits ---- */

static int parse_cpu(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	uint64_t millis;
	double d;

	if (!json_is_number(v))
		return fail_expected(c, v, "a number of cores such as 0.5");
	d = json_number_value(v);
	if (!(d > 0) || d > POLICY_MAX_CPU)
		return fail_expected(c, v, "a number of cores above 0 and at most 1024");
	/* Round to the nearest thousandth; d is positive, so no libm. */
	millis = (uint64_t)(d * 1000.0 + 0.5);
	if (millis == 0)
		return fail_expected(c, v, "a number of cores of at least 0.001");
	store_uint(key_field(k, base), k->width, millis);
	return 0;
}

static const policy_key limits_keys[] = {
    {.name = "memory",
     .type = KT_SIZE,
     FIELD(sc_plan, memory),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .min = POLICY_MIN_MEMORY,
     .what = "a memory limit of at least \"4M\""},
    {.name = "cpu",
     .type = KT_CUSTOM,
     FIELD(sc_plan, cpu_millis),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .parse = parse_cpu,
     .doc_type = "number",
     .doc_default = "unlimited"},
    {.name = "pids",
     .type = KT_UINT,
     FIELD(sc_plan, pids),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .min = 1,
     .max = POLICY_MAX_PIDS},
    {.name = "wall",
     .type = KT_DURATION,
     FIELD(sc_plan, wall_ns),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .min = 1},
    {.name = "nofile",
     .type = KT_UINT,
     FIELD(sc_plan, nofile),
     .def = 1024,
     .min = 1,
     .max = POLICY_MAX_NOFILE},
    {.name = "fsize",
     .type = KT_SIZE,
     FIELD(sc_plan, fsize),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .min = 1},
    {.name = "exec_wall",
     .type = KT_DURATION,
     FIELD(sc_plan, exec_wall_ns),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .min = 1},
    {.name = "idle",
     .type = KT_DURATION,
     FIELD(sc_plan, idle_ns),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .min = 1},
};
static const key_table limits_table = {limits_keys, ELEMENTSOF(limits_keys)};

/* ---- identity, audit, spawn ---- */

static int check_hostname(pctx *c, const json_t *v, const char *s)
{
	const char *err = dns_name_error(s, POLICY_MAX_HOSTNAME);
	char q[160];

	(void)v;
	if (!err)
		return 0;
	quote(s, 64, q, sizeof(q));
	return fail(c, -EINVAL, "hostname %s %s", q, err);
}

static const policy_key identity_keys[] = {
    {.name = "hostname",
     .type = KT_STRING,
     FIELD(sc_plan, hostname),
     .def_str = "sandbox",
     .check = check_hostname},
    {.name = "uid",
     .type = KT_UINT,
     FIELD(sc_plan, agent_uid),
     .def = 1000,
     .max = POLICY_MAX_AGENT_ID},
    {.name = "gid",
     .type = KT_UINT,
     FIELD(sc_plan, agent_gid),
     .def = 1000,
     .max = POLICY_MAX_AGENT_ID},
};
static const key_table identity_table = {identity_keys, ELEMENTSOF(identity_keys)};

/* audit.max_rate and audit.max_bytes: absent is the default, null lifts
 * the bound (PLAN_UNLIMITED). */
static int parse_log_bound(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	bool rate = strcmp(k->name, "max_rate") == 0;
	const char *what = rate ? "a bandwidth such as \"1M/s\"" : "a size such as \"1G\"";
	uint64_t u = 0;
	int r = -EINVAL;

	if (json_is_null(v)) {
		store_uint(key_field(k, base), k->width, PLAN_UNLIMITED);
		return 0;
	}
	if (json_is_string(v))
		r = rate ? parse_bandwidth(json_string_value(v), &u)
			 : parse_size(json_string_value(v), &u);
	else if (!rate && json_is_integer(v) && json_integer_value(v) > 0)
		r = 0, u = (uint64_t)json_integer_value(v);
	if (r < 0 || u == 0 || u == PLAN_UNLIMITED)
		return fail_expected(c, v, what);
	if (u < AUDIT_BOUND_MIN)
		return fail(c, -ERANGE, "at least %u bytes%s: the log's own records need room",
			    AUDIT_BOUND_MIN, rate ? " per second" : "");
	store_uint(key_field(k, base), k->width, u);
	return 0;
}

/* audit.sample_interval: a duration of at least AUDIT_SAMPLE_MIN_NS, or
 * 0, "0s" or null for no samples (stored as 0). */
static int parse_sample_interval(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	const char *what = "a duration such as \"1s\" (at least 100ms), or 0 or null for none";
	uint64_t u = 0;

	if (json_is_null(v) || (json_is_integer(v) && json_integer_value(v) == 0)) {
		store_uint(key_field(k, base), k->width, 0);
		return 0;
	}
	if (!json_is_string(v) || parse_duration_ns(json_string_value(v), &u) < 0 ||
	    u == PLAN_UNLIMITED || (u != 0 && u < AUDIT_SAMPLE_MIN_NS))
		return fail_expected(c, v, what);
	store_uint(key_field(k, base), k->width, u);
	return 0;
}

static const policy_key audit_keys[] = {
    {.name = "exec", .type = KT_BOOL, FIELD(sc_plan, audit_exec), .def = true},
    {.name = "denied_syscalls",
     .type = KT_BOOL,
     FIELD(sc_plan, audit_denied_syscalls),
     .def = true},
    {.name = "fsync",
     .type = KT_ENUM,
     FIELD(sc_plan, audit_fsync),
     .def = AUDIT_FSYNC_BOUNDARIES,
     .names = fsync_names,
     .n_names = ELEMENTSOF(fsync_names)},
    {.name = "reads", .type = KT_BOOL, FIELD(sc_plan, audit_reads), .def = false},
    {.name = "max_rate",
     .type = KT_CUSTOM,
     FIELD(sc_plan, audit_max_rate),
     .def = PLAN_AUDIT_MAX_RATE_DEFAULT,
     .flags = KEY_NULL_LIFTS,
     .parse = parse_log_bound,
     .doc_type = "bandwidth",
     .doc_default = "\"1M/s\""},
    {.name = "max_bytes",
     .type = KT_CUSTOM,
     FIELD(sc_plan, audit_max_bytes),
     .def = PLAN_AUDIT_MAX_BYTES_DEFAULT,
     .flags = KEY_NULL_LIFTS,
     .parse = parse_log_bound,
     .doc_type = "size",
     .doc_default = "1G"},
    {.name = "sample_interval",
     .type = KT_CUSTOM,
     FIELD(sc_plan, audit_sample_ns),
     .def = AUDIT_SAMPLE_DEFAULT_NS,
     .flags = KEY_NULL_LIFTS,
     .parse = parse_sample_interval,
     .doc_type = "duration or `null`",
     .doc_default = "\"1s\""},
};
static const key_table audit_table = {audit_keys, ELEMENTSOF(audit_keys)};

static const policy_key spawn_keys[] = {
    {.name = "max_depth",
     .type = KT_UINT,
     FIELD(sc_plan, spawn_max_depth),
     .def = 0,
     .max = POLICY_MAX_SPAWN_DEPTH},
    {.name = "max_children",
     .type = KT_UINT,
     FIELD(sc_plan, spawn_max_children),
     .def = 8,
     .max = POLICY_MAX_SPAWN_CHILDREN},
};
static const key_table spawn_table = {spawn_keys, ELEMENTSOF(spawn_keys)};

/* ---- the whole policy ---- */

/* In this order: credentials (net) refer to grants (fs). */
static const policy_key root_keys[] = {
    {.name = "version",
     .type = KT_UINT,
     FIELD(sc_plan, version),
     .flags = KEY_REQUIRED,
     .def = 1,
     .min = 1,
     .max = 1,
     .what = "1 (the only policy version this sandcap knows)",
     .missing = "(this parser reads version 1)"},
    {.name = "name",
     .type = KT_STRING,
     FIELD(sc_plan, name),
     .def_str = "sandbox",
     .check = check_name},
    {.name = "fs", .type = KT_SECTION, .sub = &fs_table},
    {.name = "net", .type = KT_SECTION, .sub = &net_section},
    {.name = "limits", .type = KT_SECTION, .sub = &limits_table},
    {.name = "env",
     .type = KT_CUSTOM,
     .parse = parse_env,
     .doc_type = "object",
     .doc_default = "{}"},
    {.name = "identity", .type = KT_SECTION, .sub = &identity_table},
    {.name = "audit", .type = KT_SECTION, .sub = &audit_table},
    {.name = "best_effort", .type = KT_BOOL, FIELD(sc_plan, best_effort), .def = false},
    {.name = "spawn", .type = KT_SECTION, .sub = &spawn_table},
};
const key_table policy_root = {root_keys, ELEMENTSOF(root_keys)};

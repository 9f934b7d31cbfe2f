/* SPDX-License-Identifier: MIT */
/*
 * Canonical JSON of an effective plan: sorted keys, every default explicit,
 * sizes as integers of bytes, durations as "<N>ms", rates as "<N>/s" or
 * "<N>/m", bandwidth as "<N>/s" (bytes), unlimited or unset as null. The
 * parser reads this form back into an equal plan (see parse.c's header for
 * the canonical input forms it accepts).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "policy/plan.h"
#include "policy/policy-internal.h"

/* Adds v under key, taking the reference; records the first failure. */
static void put(json_t *obj, const char *key, json_t *v, bool *ok)
{
	if (!v || json_object_set_new(obj, key, v) < 0)
		*ok = false;
}

static void push(json_t *arr, json_t *v, bool *ok)
{
	if (!v || json_array_append_new(arr, v) < 0)
		*ok = false;
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *size_or_null(uint64_t v)
{
	/* json_int_t is signed; sizes never reach 2^63 in practice, but keep the
	 * conversion honest. */
	if (v == PLAN_UNLIMITED)
		return json_null();
	if (v > (uint64_t)INT64_MAX)
		return NULL;
	return json_integer((json_int_t)v);
}

/* "<v><suffix>", e.g. "30000ms", "20/s". */
static json_t *num_suffix(uint64_t v, const char *suffix)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%" PRIu64 "%s", v, suffix);
	return json_string(buf);
}

static json_t *fs_json(const sc_plan *p, bool *ok)
{
	json_t *fs = json_object(), *grants = json_array(), *tmp = json_object(), *rt;

	if (!fs || !grants || !tmp) {
		json_decref(fs);
		json_decref(grants);
		json_decref(tmp);
		*ok = false;
		return NULL;
	}
	for (size_t i = 0; i < p->n_grants; i++) {
		json_t *g = json_object();

		if (!g) {
			*ok = false;
			break;
		}
		put(g, "path", json_string(p->grants[i].path), ok);
		put(g, "at", json_string(p->grants[i].at), ok);
		put(g, "mode", json_string(plan_grant_mode_name(p->grants[i].mode)), ok);
		/* Only where they can mean something: ro grants keep their old form. */
		if (p->grants[i].mode != GRANT_RO) {
			put(g, "quota", size_or_null(p->grants[i].quota), ok);
			put(g, "inodes", size_or_null(p->grants[i].inodes), ok);
			put(g, "best_effort", json_boolean(p->grants[i].best_effort), ok);
		}
		push(grants, g, ok);
	}
	put(fs, "grants", grants, ok);
	if (p->runtime == RUNTIME_ROOTFS) {
		rt = json_object();
		if (rt) {
			put(rt, "rootfs", json_string(p->rootfs), ok);
			put(rt, "writable", json_boolean(p->rootfs_writable), ok);
		}
	} else {
		rt = json_string("host");
	}
	put(fs, "runtime", rt, ok);
	put(tmp, "size", size_or_null(p->tmp_size), ok);
	put(tmp, "inodes", size_or_null(p->tmp_inodes), ok);
	put(fs, "tmp", tmp, ok);
	put(fs, "workdir", json_string(p->workdir), ok);
	return fs;
}

/* net.serve: a port alone, or {port, host_port[, bind]} when one is fixed. */
static json_t *serve_json(const sc_plan *p)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < p->n_serve; i++) {
		const plan_serve *sv = &p->serve[i];
		json_t *o;

		if (sv->host_port) {
			o = json_pack("{s:i, s:i}", "port", (int)sv->port, "host_port",
				      (int)sv->host_port);
			if (o && sv->any_addr)
				(void)json_object_set_new(o, "bind", json_string("0.0.0.0"));
			(void)json_array_append_new(a, o);
		} else
			(void)json_array_append_new(a, json_integer(sv->port));
	}
	return a;
}

static json_t *rate_json(const plan_rate *r)
{
	if (r->count == 0)
		return json_null();
	return num_suffix(r->count, r->per_ns == 60ULL * 1000000000ULL ? "/m" : "/s");
}

static json_t *paths_json(char *const *paths, size_t n, bool *ok)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		push(a, json_string(paths[i]), ok);
	return a;
}

static bool paths_eq(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

static json_t *net_json(const sc_plan *p, bool *ok)
{
	json_t *net = json_object(), *eg = json_array(), *ap = json_array(), *cr = json_array();

	if (!net || !eg || !ap || !cr) {
		json_decref(net);
		json_decref(eg);
		json_decref(ap);
		json_decref(cr);
		*ok = false;
		return NULL;
	}
	for (size_t i = 0; i < p->n_egress; i++) {
		const plan_egress *e = &p->egress[i];
		json_t *r = json_object(), *ports = json_array(), *methods = json_array();

		if (!r || !ports || !methods) {
			json_decref(r);
			json_decref(ports);
			json_decref(methods);
			*ok = false;
			break;
		}
		put(r, "host", json_string(e->host), ok);
		for (size_t j = 0; j < e->n_ports && j < POLICY_MAX_PORTS; j++)
			push(ports, json_integer(e->ports[j]), ok);
		put(r, "ports", ports, ok);
		for (unsigned m = 0; m < PLAN_N_METHODS; m++)
			if (e->methods == HTTP_ANY_METHOD || (e->methods & (1u << m)))
				push(methods, json_string(plan_method_names[m]), ok);
		put(r, "methods", methods, ok);
		if (e->n_paths)
			put(r, "paths", paths_json(e->paths, e->n_paths, ok), ok);
		put(r, "inspect", json_boolean(e->inspect), ok);
		push(eg, r, ok);
	}
	put(net, "egress", eg, ok);
	for (size_t i = 0; i < p->n_allow_private; i++) {
		char buf[64];

		plan_cidr_format(&p->allow_private[i], buf, sizeof(buf));
		push(ap, json_string(buf), ok);
	}
	put(net, "allow_private", ap, ok);
	put(net, "rate", rate_json(&p->rate), ok);
	put(net, "bandwidth",
	    p->bandwidth == PLAN_UNLIMITED ? json_null() : num_suffix(p->bandwidth, "/s"), ok);
	put(net, "max_request_body", size_or_null(p->max_request_body), ok);
	put(net, "max_response_body", size_or_null(p->max_response_body), ok);
	put(net, "egress_budget", size_or_null(p->egress_budget), ok);
	put(net, "listen", json_boolean(p->net_listen), ok);
	/* left out when empty: the canonical form of policies without it stays */
	if (p->n_serve)
		put(net, "serve", serve_json(p), ok);
	for (size_t i = 0; i < p->n_credentials; i++) {
		const plan_credential *c = &p->credentials[i];
		json_t *o = json_object();

		if (!o) {
			*ok = false;
			break;
		}
		put(o, "host", json_string(c->host), ok);
		if (c->header)
			put(o, "header", json_string(c->header), ok);
		if (c->value_env)
			put(o, "value_env", json_string(c->value_env), ok);
		else
			put(o, "value_file", json_string(c->value_file), ok);
		put(o, "format", json_string(c->format), ok);
		put(o, "upstream", json_string(c->upstream_https ? "https" : "http"), ok);
		/* the default is left out: two credentials of a host share it */
		if (c->name && strcmp(c->name, c->host) != 0)
			put(o, "name", json_string(c->name), ok);
		put(o, "max_requests",
		    c->max_requests == PLAN_UNLIMITED ? json_null()
						      : json_integer((json_int_t)c->max_requests),
		    ok);
		put(o, "rate", rate_json(&c->rate), ok);
		put(o, "max_bytes", size_or_null(c->max_bytes), ok);
		if (c->methods != HTTP_ANY_METHOD) {
			json_t *m = json_array();

			for (unsigned k = 0; m && k < PLAN_N_METHODS; k++)
				if (c->methods & (1u << k))
					push(m, json_string(plan_method_names[k]), ok);
			put(o, "methods", m, ok);
		}
		if (c->n_paths)
			put(o, "paths", paths_json(c->paths, c->n_paths, ok), ok);
		put(o, "expires",
		    c->expires_ns == PLAN_UNLIMITED ? json_null()
						    : num_suffix(c->expires_ns / 1000000ULL, "ms"),
		    ok);
		if (c->placeholder_env) {
			json_t *in = json_array();

			put(o, "placeholder_env", json_string(c->placeholder_env), ok);
			push(in, json_string("header"), ok);
			if (c->in_query)
				push(in, json_string("query"), ok);
			put(o, "in", in, ok);
		}
		push(cr, o, ok);
	}
	put(net, "credentials", cr, ok);
	put(net, "upstream_ca", str_or_null(p->upstream_ca), ok);
	put(net, "dns", str_or_null(p->dns), ok);
	return net;
}

static json_t *limits_json(const sc_plan *p, bool *ok)
{
	json_t *l = json_object();

	if (!l) {
		*ok = false;
		return NULL;
	}
	put(l, "memory", size_or_null(p->memory), ok);
	put(l, "cpu",
	    p->cpu_millis == PLAN_UNLIMITED ? json_null()
					    : json_real((double)p->cpu_millis / 1000.0),
	    ok);
	put(l, "pids", size_or_null(p->pids), ok);
	/* Every duration unit is a whole number of milliseconds. */
	put(l, "wall",
	    p->wall_ns == PLAN_UNLIMITED ? json_null() : num_suffix(p->wall_ns / 1000000ULL, "ms"),
	    ok);
	put(l, "nofile", size_or_null(p->nofile), ok);
	put(l, "fsize", size_or_null(p->fsize), ok);
	put(l, "exec_wall",
	    p->exec_wall_ns == PLAN_UNLIMITED ? json_null()
					      : num_suffix(p->exec_wall_ns / 1000000ULL, "ms"),
	    ok);
	put(l, "idle",
	    p->idle_ns == PLAN_UNLIMITED ? json_null() : num_suffix(p->idle_ns / 1000000ULL, "ms"),
	    ok);
	return l;
}

char *plan_to_json(const sc_plan *p)
{
	_cleanup_(json_decrefp) json_t *root = NULL;
	json_t *env, *o;
	bool ok = true;

	if (!p)
		return NULL;
	root = json_object();
	if (!root)
		return NULL;
	put(root, "version", json_integer(p->version), &ok);
	put(root, "name", json_string(p->name), &ok);
	put(root, "fs", fs_json(p, &ok), &ok);
	put(root, "net", net_json(p, &ok), &ok);
	put(root, "limits", limits_json(p, &ok), &ok);
	env = json_object();
	for (size_t i = 0; env && i < p->n_env; i++) {
		const char *eq = strchr(p->env[i], '=');
		_cleanup_free_ char *k = eq ? strndup(p->env[i], (size_t)(eq - p->env[i])) : NULL;

		if (!k) {
			ok = false;
			break;
		}
		put(env, k, json_string(eq + 1), &ok);
	}
	put(root, "env", env, &ok);
	o = json_object();
	if (o) {
		put(o, "hostname", json_string(p->hostname), &ok);
		put(o, "uid", json_integer(p->agent_uid), &ok);
		put(o, "gid", json_integer(p->agent_gid), &ok);
	}
	put(root, "identity", o, &ok);
	o = json_object();
	if (o) {
		put(o, "exec", json_boolean(p->audit_exec), &ok);
		put(o, "denied_syscalls", json_boolean(p->audit_denied_syscalls), &ok);
		put(o, "reads", json_boolean(p->audit_reads), &ok);
		put(o, "fsync",
		    json_string(p->audit_fsync == AUDIT_FSYNC_ALWAYS ? "always" : "boundaries"),
		    &ok);
		put(o, "max_rate",
		    p->audit_max_rate == PLAN_UNLIMITED ? json_null()
							: num_suffix(p->audit_max_rate, "/s"),
		    &ok);
		put(o, "max_bytes", size_or_null(p->audit_max_bytes), &ok);
		put(o, "sample_interval",
		    p->audit_sample_ns ? num_suffix(p->audit_sample_ns / 1000000ULL, "ms")
				       : json_null(),
		    &ok);
	}
	put(root, "audit", o, &ok);
	put(root, "best_effort", json_boolean(p->best_effort), &ok);
	o = json_object();
	if (o) {
		put(o, "max_depth", json_integer(p->spawn_max_depth), &ok);
		put(o, "max_children", json_integer(p->spawn_max_children), &ok);
	}
	put(root, "spawn", o, &ok);
	if (!ok)
		return NULL;
	/* Ten significant digits are plenty for cpu (thousandths of a core) and
	 * avoid "0.33300000000000002". */
	return json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(10));
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

bool plan_credential_limits_eq(const plan_credential *x, const plan_credential *y)
{
	return str_eq(x->name, y->name) && x->max_requests == y->max_requests &&
	       x->rate.count == y->rate.count &&
	       (!x->rate.count || x->rate.per_ns == y->rate.per_ns) &&
	       x->max_bytes == y->max_bytes && x->methods == y->methods &&
	       paths_eq(x->paths, x->n_paths, y->paths, y->n_paths) &&
	       x->expires_ns == y->expires_ns;
}

bool plan_equal(const sc_plan *a, const sc_plan *b)
{
	if (!a || !b)
		return a == b;
	if (a->version != b->version || !str_eq(a->name, b->name) || a->runtime != b->runtime ||
	    !str_eq(a->rootfs, b->rootfs) || a->rootfs_writable != b->rootfs_writable ||
	    a->n_grants != b->n_grants || a->tmp_size != b->tmp_size ||
	    a->tmp_inodes != b->tmp_inodes || !str_eq(a->workdir, b->workdir) ||
	    a->n_egress != b->n_egress || a->n_allow_private != b->n_allow_private ||
	    a->rate.count != b->rate.count || (a->rate.count && a->rate.per_ns != b->rate.per_ns) ||
	    a->bandwidth != b->bandwidth || a->max_request_body != b->max_request_body ||
	    a->max_response_body != b->max_response_body || a->egress_budget != b->egress_budget ||
	    a->net_listen != b->net_listen || a->n_serve != b->n_serve ||
	    a->n_credentials != b->n_credentials || !str_eq(a->upstream_ca, b->upstream_ca) ||
	    !str_eq(a->dns, b->dns) || a->memory != b->memory || a->cpu_millis != b->cpu_millis ||
	    a->pids != b->pids || a->wall_ns != b->wall_ns || a->nofile != b->nofile ||
	    a->fsize != b->fsize || a->exec_wall_ns != b->exec_wall_ns ||
	    a->idle_ns != b->idle_ns || a->n_env != b->n_env || !str_eq(a->hostname, b->hostname) ||
	    a->agent_uid != b->agent_uid || a->agent_gid != b->agent_gid ||
	    a->audit_exec != b->audit_exec ||
	    a->audit_denied_syscalls != b->audit_denied_syscalls ||
	    a->audit_reads != b->audit_reads || a->audit_fsync != b->audit_fsync ||
	    a->audit_max_rate != b->audit_max_rate || a->audit_max_bytes != b->audit_max_bytes ||
	    a->audit_sample_ns != b->audit_sample_ns || a->best_effort != b->best_effort ||
	    a->spawn_max_depth != b->spawn_max_depth ||
	    a->spawn_max_children != b->spawn_max_children)
		return false;
	for (size_t i = 0; i < a->n_grants; i++)
		if (!str_eq(a->grants[i].path, b->grants[i].path) ||
		    !str_eq(a->grants[i].at, b->grants[i].at) ||
		    a->grants[i].mode != b->grants[i].mode ||
		    a->grants[i].quota != b->grants[i].quota ||
		    a->grants[i].inodes != b->grants[i].inodes ||
		    a->grants[i].best_effort != b->grants[i].best_effort)
			return false;
	for (size_t i = 0; i < a->n_egress; i++) {
		const plan_egress *x = &a->egress[i], *y = &b->egress[i];

		if (!str_eq(x->host, y->host) || x->wildcard != y->wildcard ||
		    x->n_ports != y->n_ports || x->methods != y->methods ||
		    x->inspect != y->inspect || x->n_ports > POLICY_MAX_PORTS ||
		    memcmp(x->ports, y->ports, x->n_ports * sizeof(x->ports[0])) != 0 ||
		    !paths_eq(x->paths, x->n_paths, y->paths, y->n_paths))
			return false;
	}
	for (size_t i = 0; i < a->n_allow_private; i++) {
		const plan_cidr *x = &a->allow_private[i], *y = &b->allow_private[i];

		if (x->family != y->family || x->prefix != y->prefix ||
		    memcmp(x->addr, y->addr, 16) != 0)
			return false;
	}
	for (size_t i = 0; i < a->n_serve; i++)
		if (a->serve[i].port != b->serve[i].port ||
		    a->serve[i].host_port != b->serve[i].host_port ||
		    a->serve[i].any_addr != b->serve[i].any_addr)
			return false;
	for (size_t i = 0; i < a->n_credentials; i++) {
		const plan_credential *x = &a->credentials[i], *y = &b->credentials[i];

		if (!str_eq(x->host, y->host) || !str_eq(x->header, y->header) ||
		    !str_eq(x->value_env, y->value_env) || !str_eq(x->value_file, y->value_file) ||
		    !str_eq(x->format, y->format) || x->upstream_https != y->upstream_https ||
		    !plan_credential_limits_eq(x, y) ||
		    !str_eq(x->placeholder_env, y->placeholder_env) || x->in_query != y->in_query)
			return false;
	}
	for (size_t i = 0; i < a->n_env; i++)
		if (!str_eq(a->env[i], b->env[i]))
			return false;
	return true;
}

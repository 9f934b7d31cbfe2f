/* SPDX-License-Identifier: MIT */
/*
 * Intersection of capability sets, the heart of token attenuation.
 *
 * plan_intersect(parent, caveat) returns a plan that grants nothing parent
 * does not grant, whatever caveat says: it is computed at every verification
 * from the signed bytes, never trusting what "token attenuate" checked.
 * plan_check_narrower() explains, for the attenuating user, why a caveat asks
 * for more than its parent; it is advice, not enforcement.
 *
 * Every rule is written down in docs/tokens.md ("Intersection").
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/cleanup.h"
#include "base/path.h"
#include "policy/intersect.h"
#include "policy/plan.h"
#include "policy/policy-internal.h"
#include "policy/http-path.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

static int sdup(const char *s, char **ret)
{
	if (!s) {
		*ret = NULL;
		return 0;
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool path_strictly_under(const char *p, const char *prefix)
{
	return path_is_under(p, prefix) && strcmp(p, prefix) != 0;
}

/* ---- grants ---- */

/*
 * Where the parent would show host path cg_path: the parent grant pg with
 * cg_path under pg->path whose mapped location pg->at + rel is really served
 * by pg in the parent's view (no other parent grant mounted between pg->at
 * and that location, which would shadow it). Among several, the one with the
 * longest host path (the most specific). Returns the index or -1; *ret_at is
 * the mapped location (caller frees).
 */
static int grant_parent(const sc_plan *pa, const char *cg_path, char **ret_at)
{
	int best = -1;
	size_t best_len = 0;

	*ret_at = NULL;
	for (size_t i = 0; i < pa->n_grants; i++) {
		const plan_grant *pg = &pa->grants[i];
		const char *rel;
		char *at;
		bool shadowed = false;

		if (!path_is_under(cg_path, pg->path))
			continue;
		rel = cg_path + strlen(pg->path);
		if (asprintf(&at, "%s%s", pg->at, rel) < 0)
			return -ENOMEM;
		for (size_t j = 0; j < pa->n_grants && !shadowed; j++) {
			const char *qa = pa->grants[j].at;

			if (j != i && path_strictly_under(qa, pg->at) && path_is_under(at, qa))
				shadowed = true;
		}
		if (shadowed || (best >= 0 && strlen(pg->path) <= best_len)) {
			free(at);
			continue;
		}
		free(*ret_at);
		*ret_at = at;
		best = (int)i;
		best_len = strlen(pg->path);
	}
	return best;
}

typedef struct grant_cand {
	int parent; /* index in pa->grants, -1 = dropped */
	char *at;
	grant_mode mode;
	bool uncovers; /* dropped because it would uncover a parent grant mounted inside it */
} grant_cand;

static void cands_free(grant_cand *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++)
		free(c[i].at);
	free(c);
}

/*
 * One candidate per caveat grant. Then, until nothing changes, drop every
 * candidate inside whose location the parent mounts another grant q that the
 * result does not mount at the same place from the same host path: without
 * q, the sandbox would see the host directory q shadows, with the candidate's
 * (possibly rw) mode.
 */
static int grant_candidates(const sc_plan *pa, const sc_plan *cv, grant_cand **ret)
{
	grant_cand *c;
	bool changed = true;

	c = calloc(cv->n_grants ? cv->n_grants : 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < cv->n_grants; i++) {
		const plan_grant *cg = &cv->grants[i];
		int p = grant_parent(pa, cg->path, &c[i].at);

		if (p == -ENOMEM) {
			cands_free(c, cv->n_grants);
			return -ENOMEM;
		}
		c[i].parent = p;
		if (p >= 0)
			c[i].mode = cg->mode == GRANT_RW && pa->grants[p].mode == GRANT_RW
					? GRANT_RW
					: GRANT_RO;
	}
	while (changed) {
		changed = false;
		for (size_t i = 0; i < cv->n_grants; i++) {
			if (c[i].parent < 0)
				continue;
			for (size_t q = 0; q < pa->n_grants; q++) {
				const plan_grant *qg = &pa->grants[q];
				bool kept = false;

				if ((int)q == c[i].parent || !path_strictly_under(qg->at, c[i].at))
					continue;
				for (size_t k = 0; k < cv->n_grants && !kept; k++)
					kept = c[k].parent >= 0 && str_eq(c[k].at, qg->at) &&
					       str_eq(cv->grants[k].path, qg->path);
				if (!kept) {
					c[i].parent = -1;
					c[i].uncovers = true;
					changed = true;
					break;
				}
			}
		}
	}
	*ret = c;
	return 0;
}

static int intersect_grants(const sc_plan *pa, const sc_plan *cv, sc_plan *o)
{
	grant_cand *c = NULL;
	int r;

	r = grant_candidates(pa, cv, &c);
	if (r < 0)
		return r;
	if (cv->n_grants) {
		o->grants = calloc(cv->n_grants, sizeof(*o->grants));
		if (!o->grants) {
			cands_free(c, cv->n_grants);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < cv->n_grants; i++) {
		plan_grant *g;

		if (c[i].parent < 0)
			continue;
		g = &o->grants[o->n_grants++];
		g->mode = c[i].mode;
		/* A quota only narrows: the smaller of the two, on rw only. */
		g->quota = g->inodes = PLAN_UNLIMITED;
		if (g->mode == GRANT_RW) {
			const plan_grant *pg = &pa->grants[c[i].parent];

			g->quota =
			    cv->grants[i].quota < pg->quota ? cv->grants[i].quota : pg->quota;
			g->inodes =
			    cv->grants[i].inodes < pg->inodes ? cv->grants[i].inodes : pg->inodes;
			g->best_effort = cv->grants[i].best_effort && pg->best_effort;
		}
		g->at = TAKE_PTR(c[i].at);
		if (sdup(cv->grants[i].path, &g->path) < 0) {
			cands_free(c, cv->n_grants);
			return -ENOMEM;
		}
	}
	cands_free(c, cv->n_grants);
	return 0;
}

/* ---- egress ---- */

/* Every host the child pattern matches is matched by the parent rule. */
static bool host_covered(const char *host, bool wildcard, const plan_egress *pe)
{
	size_t hl, dl;
	const char *dom;

	if (!pe->wildcard)
		return !wildcard && strcmp(host, pe->host) == 0;
	dom = pe->host + 1; /* ".example.com" */
	dl = strlen(dom);
	if (wildcard)
		host += 1; /* ".sub.example.com": equal or a deeper suffix */
	hl = strlen(host);
	if (wildcard && strcmp(host, dom) == 0)
		return true;
	return hl > dl && strcmp(host + hl - dl, dom) == 0;
}

static uint32_t methods_bits(uint32_t m)
{
	return m == HTTP_ANY_METHOD ? PLAN_ALL_METHODS : m;
}

static bool has_port(const plan_egress *e, uint16_t port)
{
	for (size_t i = 0; i < e->n_ports && i < POLICY_MAX_PORTS; i++)
		if (e->ports[i] == port)
			return true;
	return false;
}

/*
 * Every path prefix a allows, b allows (no list: any path). Prefixes on
 * segment boundaries are nested or disjoint (http-path.h), so one of b's must
 * hold each of a's.
 */
static bool paths_within(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (nb == 0)
		return true;
	if (na == 0)
		return false;
	for (size_t i = 0; i < na; i++) {
		bool in = false;

		for (size_t j = 0; j < nb && !in; j++)
			in = path_is_under(a[i], b[j]);
		if (!in)
			return false;
	}
	return true;
}

/* The paths both lists allow, into *ret (n 0 with both lists: none at all,
 * *ret_none set). */
static int paths_meet(const plan_egress *a, const plan_egress *b, plan_egress *out, bool *ret_none)
{
	size_t cap = a->n_paths * b->n_paths;

	*ret_none = false;
	if (a->n_paths == 0 || b->n_paths == 0) {
		const plan_egress *s = a->n_paths ? a : b;

		return plan_paths_dup(s->paths, s->n_paths, &out->paths, &out->n_paths);
	}
	out->paths = calloc(cap, sizeof(*out->paths));
	if (!out->paths)
		return -ENOMEM;
	for (size_t i = 0; i < a->n_paths; i++)
		for (size_t j = 0; j < b->n_paths; j++) {
			const char *x = a->paths[i], *y = b->paths[j], *m = NULL;
			bool dup = false;

			if (path_is_under(x, y))
				m = x;
			else if (path_is_under(y, x))
				m = y;
			for (size_t k = 0; m && k < out->n_paths && !dup; k++)
				dup = strcmp(out->paths[k], m) == 0;
			if (!m || dup)
				continue;
			out->paths[out->n_paths] = strdup(m);
			if (!out->paths[out->n_paths])
				return -ENOMEM;
			out->n_paths++;
		}
	*ret_none = out->n_paths == 0;
	return 0;
}

/* a is allowed whenever b is: same host pattern, ports, methods and paths
 * within; and an inspected piece is never dropped for one that is not. */
static bool egress_subsumed(const plan_egress *a, const plan_egress *b)
{
	if (a->wildcard != b->wildcard || strcmp(a->host, b->host) != 0)
		return false;
	if (a->inspect && !b->inspect)
		return false;
	if (!paths_within(a->paths, a->n_paths, b->paths, b->n_paths))
		return false;
	if ((methods_bits(a->methods) & ~methods_bits(b->methods)) != 0)
		return false;
	for (size_t i = 0; i < a->n_ports; i++)
		if (!has_port(b, a->ports[i]))
			return false;
	return true;
}

/*
 * The allowlist grants (host, port, method) when any rule matches all three
 * (union semantics). Each caveat rule meets each parent rule covering its
 * host; the pieces are exact, and pieces that another piece already allows
 * are dropped so that intersecting a plan with itself changes nothing.
 */
static int intersect_egress(const sc_plan *pa, const sc_plan *cv, sc_plan *o)
{
	size_t cap, n = 0;
	plan_egress *out;
	bool *dead;

	if (__builtin_mul_overflow(cv->n_egress, pa->n_egress, &cap))
		return -EOVERFLOW;
	if (cap == 0)
		return 0;
	out = calloc(cap, sizeof(*out));
	dead = calloc(cap, sizeof(*dead));
	if (!out || !dead) {
		free(out);
		free(dead);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cv->n_egress; i++) {
		const plan_egress *ce = &cv->egress[i];

		for (size_t j = 0; j < pa->n_egress; j++) {
			const plan_egress *pe = &pa->egress[j];
			plan_egress *e = &out[n];
			bool none;
			uint32_t m;

			memset(e, 0, sizeof(*e));
			if (!host_covered(ce->host, ce->wildcard, pe))
				continue;
			m = methods_bits(ce->methods) & methods_bits(pe->methods);
			if (!m)
				continue;
			for (size_t k = 0; k < ce->n_ports && k < POLICY_MAX_PORTS; k++)
				if (has_port(pe, ce->ports[k]))
					e->ports[e->n_ports++] = ce->ports[k];
			if (!e->n_ports)
				continue;
			e->methods = m == PLAN_ALL_METHODS ? HTTP_ANY_METHOD : m;
			e->wildcard = ce->wildcard;
			/* the parent's decrypting stays: a child must not hide what it sends */
			e->inspect = pe->inspect || ce->inspect;
			e->host = strdup(ce->host);
			if (!e->host)
				goto oom;
			n++;
			if (paths_meet(ce, pe, e, &none) < 0)
				goto oom;
			if (none) {
				/* the two rules share no path: no piece */
				n--;
				free(e->host);
				plan_paths_free(e->paths, e->n_paths);
			}
		}
	}
	/* Drop pieces another piece allows; of two equal pieces keep the first. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n && !dead[i]; j++)
			if (i != j && !dead[j] && egress_subsumed(&out[i], &out[j]) &&
			    (!egress_subsumed(&out[j], &out[i]) || j < i))
				dead[i] = true;
	o->egress = calloc(n ? n : 1, sizeof(*o->egress));
	if (!o->egress)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		if (dead[i]) {
			free(out[i].host);
			plan_paths_free(out[i].paths, out[i].n_paths);
			continue;
		}
		o->egress[o->n_egress++] = out[i];
	}
	free(out);
	free(dead);
	return 0;
oom:
	for (size_t i = 0; i < n; i++) {
		free(out[i].host);
		plan_paths_free(out[i].paths, out[i].n_paths);
	}
	free(out);
	free(dead);
	return -ENOMEM;
}

/* ---- addresses ---- */

static bool cidr_inside(const plan_cidr *c, const plan_cidr *p)
{
	if (c->family != p->family || c->prefix < p->prefix)
		return false;
	for (unsigned b = 0; b < p->prefix; b++) {
		uint8_t mask = (uint8_t)(0x80u >> (b % 8));

		if ((c->addr[b / 8] & mask) != (p->addr[b / 8] & mask))
			return false;
	}
	return true;
}

static bool cidr_allowed(const plan_cidr *c, const sc_plan *pa)
{
	for (size_t i = 0; i < pa->n_allow_private; i++)
		if (cidr_inside(c, &pa->allow_private[i]))
			return true;
	return false;
}

/* ---- rates ---- */

/*
 * A rate N per window W is read as a token bucket of N requests refilled at
 * N/W: a admits no more than b when both its burst and its refill are no
 * larger. count 0 = unlimited.
 */
static bool rate_within(const plan_rate *a, const plan_rate *b)
{
	if (b->count == 0)
		return true;
	if (a->count == 0)
		return false;
	return a->count <= b->count &&
	       (unsigned __int128)a->count * b->per_ns <= (unsigned __int128)b->count * a->per_ns;
}

static plan_rate rate_min(const plan_rate *a, const plan_rate *b)
{
	const uint64_t minute = 60ULL * 1000000000ULL;
	unsigned __int128 per_min_a, per_min_b;
	plan_rate r = {.per_ns = minute};

	if (rate_within(a, b))
		return *a;
	if (rate_within(b, a))
		return *b;
	/* Neither dominates: N per minute with N no more than either burst and
	 * no more than either refill over a minute (each window is 1 s or 1 min,
	 * so N >= 1). */
	per_min_a = (unsigned __int128)a->count * minute / a->per_ns;
	per_min_b = (unsigned __int128)b->count * minute / b->per_ns;
	r.count = MIN(a->count, b->count);
	if (per_min_a < r.count)
		r.count = (uint64_t)per_min_a;
	if (per_min_b < r.count)
		r.count = (uint64_t)per_min_b;
	if (r.count == 0)
		r.count = 1;
	return r;
}

/* ---- credentials and env ---- */

static bool credential_equal(const plan_credential *a, const plan_credential *b)
{
	return str_eq(a->host, b->host) &&
	       (a->header && b->header ? strcasecmp(a->header, b->header) == 0
				       : a->header == b->header) &&
	       str_eq(a->value_env, b->value_env) && str_eq(a->value_file, b->value_file) &&
	       str_eq(a->format, b->format) && a->upstream_https == b->upstream_https &&
	       str_eq(a->placeholder_env, b->placeholder_env) && a->in_query == b->in_query &&
	       plan_credential_limits_eq(a, b);
}

static bool host_allowed(const sc_plan *p, const char *host)
{
	for (size_t i = 0; i < p->n_egress; i++)
		if (host_covered(host, false, &p->egress[i]))
			return true;
	return false;
}

static int dup_credential(const plan_credential *s, plan_credential *d)
{
	if (sdup(s->host, &d->host) < 0 || sdup(s->header, &d->header) < 0 ||
	    sdup(s->value_env, &d->value_env) < 0 || sdup(s->value_file, &d->value_file) < 0 ||
	    sdup(s->format, &d->format) < 0 || sdup(s->name, &d->name) < 0 ||
	    sdup(s->placeholder_env, &d->placeholder_env) < 0 ||
	    plan_paths_dup(s->paths, s->n_paths, &d->paths, &d->n_paths) < 0)
		return -ENOMEM;
	d->upstream_https = s->upstream_https;
	d->in_query = s->in_query;
	d->max_requests = s->max_requests;
	d->rate = s->rate;
	d->max_bytes = s->max_bytes;
	d->methods = s->methods;
	d->expires_ns = s->expires_ns;
	return 0;
}

/* The parent's credentials (never the caveat's values: a caveat naming another
 * secret would read it) that the caveat keeps, for hosts still reachable. */
static int intersect_credentials(const sc_plan *pa, const sc_plan *cv, sc_plan *o)
{
	if (!pa->n_credentials)
		return 0;
	o->credentials = calloc(pa->n_credentials, sizeof(*o->credentials));
	if (!o->credentials)
		return -ENOMEM;
	for (size_t i = 0; i < pa->n_credentials; i++) {
		const plan_credential *pc = &pa->credentials[i];
		bool keep = false;

		for (size_t j = 0; j < cv->n_credentials && !keep; j++)
			keep = credential_equal(pc, &cv->credentials[j]);
		if (!keep || !host_allowed(o, pc->host))
			continue;
		/* Count first: sc_plan_free() frees what was partly copied. */
		o->n_credentials++;
		if (dup_credential(pc, &o->credentials[o->n_credentials - 1]) < 0)
			return -ENOMEM;
	}
	return 0;
}

static bool env_has(const sc_plan *p, const char *kv)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (strcmp(p->env[i], kv) == 0)
			return true;
	return false;
}

/* A served port the parent serves, by its inside port; NULL otherwise. */
static const plan_serve *serve_find(const sc_plan *p, uint16_t port)
{
	for (size_t i = 0; i < p->n_serve; i++)
		if (p->serve[i].port == port)
			return &p->serve[i];
	return NULL;
}

/* The ports both serve; the caveat may fix the host port. */
static int intersect_serve(const sc_plan *pa, const sc_plan *cv, sc_plan *o)
{
	if (cv->n_serve == 0)
		return 0;
	o->serve = calloc(cv->n_serve, sizeof(*o->serve));
	if (!o->serve)
		return -ENOMEM;
	for (size_t i = 0; i < cv->n_serve; i++) {
		const plan_serve *x = serve_find(pa, cv->serve[i].port);

		if (!x)
			continue;
		o->serve[o->n_serve] = *x;
		if (cv->serve[i].host_port)
			o->serve[o->n_serve].host_port = cv->serve[i].host_port;
		o->serve[o->n_serve].any_addr = x->any_addr && cv->serve[i].any_addr;
		o->n_serve++;
	}
	return 0;
}

static int intersect_env(const sc_plan *pa, const sc_plan *cv, sc_plan *o)
{
	if (!pa->n_env)
		return 0;
	o->env = calloc(pa->n_env, sizeof(*o->env));
	if (!o->env)
		return -ENOMEM;
	/* Parent order is sorted by name, so the result is too. */
	for (size_t i = 0; i < pa->n_env; i++) {
		if (!env_has(cv, pa->env[i]))
			continue;
		o->env[o->n_env] = strdup(pa->env[i]);
		if (!o->env[o->n_env])
			return -ENOMEM;
		o->n_env++;
	}
	return 0;
}

int plan_intersect(const sc_plan *pa, const sc_plan *cv, sc_plan **ret)
{
	_cleanup_(sc_plan_freep) sc_plan *o = NULL;
	int r;

	if (!pa || !cv || !ret)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;

	/* Labels and the runtime are not the caveat's to change: the name names
	 * cgroups and logs, the runtime and resolver decide what the agent sees
	 * and what names resolve to. */
	o->version = pa->version;
	o->runtime = pa->runtime;
	o->rootfs_writable = pa->rootfs_writable;
	o->agent_uid = pa->agent_uid;
	o->agent_gid = pa->agent_gid;
	if (sdup(pa->name, &o->name) < 0 || sdup(pa->rootfs, &o->rootfs) < 0 ||
	    sdup(pa->hostname, &o->hostname) < 0 || sdup(pa->dns, &o->dns) < 0)
		return -ENOMEM;
	/* The working directory is a place, not a permission: what is reachable
	 * from it is decided by the grants. */
	if (sdup(cv->workdir ? cv->workdir : pa->workdir, &o->workdir) < 0)
		return -ENOMEM;
	/* An extra CA is trusted only if both trust it. */
	if (str_eq(pa->upstream_ca, cv->upstream_ca) && sdup(pa->upstream_ca, &o->upstream_ca) < 0)
		return -ENOMEM;

	r = intersect_grants(pa, cv, o);
	if (r < 0)
		return r;
	o->tmp_size = MIN(pa->tmp_size, cv->tmp_size);
	o->tmp_inodes = MIN(pa->tmp_inodes, cv->tmp_inodes);

	r = intersect_egress(pa, cv, o);
	if (r < 0)
		return r;
	if (cv->n_allow_private) {
		o->allow_private = calloc(cv->n_allow_private, sizeof(*o->allow_private));
		if (!o->allow_private)
			return -ENOMEM;
	}
	for (size_t i = 0; i < cv->n_allow_private; i++)
		if (cidr_allowed(&cv->allow_private[i], pa))
			o->allow_private[o->n_allow_private++] = cv->allow_private[i];
	o->rate = rate_min(&pa->rate, &cv->rate);
	o->bandwidth = MIN(pa->bandwidth, cv->bandwidth);
	o->max_request_body = MIN(pa->max_request_body, cv->max_request_body);
	o->max_response_body = MIN(pa->max_response_body, cv->max_response_body);
	o->egress_budget = MIN(pa->egress_budget, cv->egress_budget);
	r = intersect_credentials(pa, cv, o);
	if (r < 0)
		return r;

	o->memory = MIN(pa->memory, cv->memory);
	o->cpu_millis = MIN(pa->cpu_millis, cv->cpu_millis);
	o->pids = MIN(pa->pids, cv->pids);
	o->wall_ns = MIN(pa->wall_ns, cv->wall_ns);
	o->nofile = MIN(pa->nofile, cv->nofile);
	o->fsize = MIN(pa->fsize, cv->fsize);
	o->exec_wall_ns = MIN(pa->exec_wall_ns, cv->exec_wall_ns);
	o->idle_ns = MIN(pa->idle_ns, cv->idle_ns);

	r = intersect_env(pa, cv, o);
	if (r < 0)
		return r;

	o->net_listen = pa->net_listen && cv->net_listen;
	r = intersect_serve(pa, cv, o);
	if (r < 0)
		return r;
	/* Auditing can only be turned up, degradation only turned off. */
	o->audit_exec = pa->audit_exec || cv->audit_exec;
	o->audit_denied_syscalls = pa->audit_denied_syscalls || cv->audit_denied_syscalls;
	o->audit_reads = pa->audit_reads || cv->audit_reads;
	o->audit_fsync =
	    pa->audit_fsync == AUDIT_FSYNC_ALWAYS || cv->audit_fsync == AUDIT_FSYNC_ALWAYS
		? AUDIT_FSYNC_ALWAYS
		: AUDIT_FSYNC_BOUNDARIES;
	o->audit_max_rate = MIN(pa->audit_max_rate, cv->audit_max_rate);
	o->audit_max_bytes = MIN(pa->audit_max_bytes, cv->audit_max_bytes);
	/* Samples: the shorter interval; a caveat cannot turn them off. */
	o->audit_sample_ns = !pa->audit_sample_ns   ? cv->audit_sample_ns
			     : !cv->audit_sample_ns ? pa->audit_sample_ns
						    : MIN(pa->audit_sample_ns, cv->audit_sample_ns);
	o->best_effort = pa->best_effort && cv->best_effort;
	o->spawn_max_depth = MIN(pa->spawn_max_depth, cv->spawn_max_depth);
	o->spawn_max_children = MIN(pa->spawn_max_children, cv->spawn_max_children);

	*ret = TAKE_PTR(o);
	return 0;
}

/* ---- the attenuating user's check ---- */

static int why(char *reason, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int why(char *reason, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (reason && size) {
		va_start(ap, fmt);
		(void)vsnprintf(reason, size, fmt, ap);
		va_end(ap);
	}
	return -EPERM;
}

static const char *num(uint64_t v, char *buf, size_t size)
{
	if (v == PLAN_UNLIMITED)
		return "unlimited";
	snprintf(buf, size, "%" PRIu64, v);
	return buf;
}

static int check_grants(const sc_plan *pa, const sc_plan *cv, char *reason, size_t size)
{
	grant_cand *c = NULL;
	int r = 0;

	r = grant_candidates(pa, cv, &c);
	if (r < 0)
		return r;
	for (size_t i = 0; i < cv->n_grants && r == 0; i++) {
		const plan_grant *cg = &cv->grants[i];
		const char *m = plan_grant_mode_name(cg->mode);

		if (c[i].uncovers)
			r = why(
			    reason, size,
			    "grant %s would uncover what the token mounts inside it; list those "
			    "grants too",
			    cg->path);
		else if (c[i].parent < 0)
			r = why(reason, size, "grant %s %s is not inside the token's grants",
				cg->path, m);
		else if (cg->mode == GRANT_COW)
			r = why(reason, size,
				"grant %s: a \"cow\" grant cannot be delegated (its workspace is "
				"the parent's); use \"ro\" or \"rw\"",
				cg->path);
		else if (cg->mode == GRANT_RW && c[i].mode != GRANT_RW)
			r = why(reason, size, "grant %s rw is read-only in the token", cg->path);
		else if (!str_eq(cg->at, cg->path) && !str_eq(cg->at, c[i].at))
			r = why(
			    reason, size,
			    "grant %s: \"at\" %s differs from where the token shows it (%s); omit "
			    "\"at\"",
			    cg->path, cg->at, c[i].at);
	}
	cands_free(c, cv->n_grants);
	return r;
}

static int check_egress(const sc_plan *pa, const sc_plan *cv, char *reason, size_t size)
{
	for (size_t i = 0; i < cv->n_egress; i++) {
		const plan_egress *ce = &cv->egress[i];
		bool any = false;

		for (size_t j = 0; j < pa->n_egress; j++)
			any = any || host_covered(ce->host, ce->wildcard, &pa->egress[j]);
		if (!any)
			return why(reason, size, "egress host %s is not allowed by the token",
				   ce->host);
		for (size_t k = 0; k < ce->n_ports; k++) {
			uint32_t want = methods_bits(ce->methods), have = 0, have_paths = 0;
			bool port = false;

			for (size_t j = 0; j < pa->n_egress; j++) {
				const plan_egress *pe = &pa->egress[j];

				if (!host_covered(ce->host, ce->wildcard, pe) ||
				    !has_port(pe, ce->ports[k]))
					continue;
				port = true;
				have |= methods_bits(pe->methods);
				/* one rule must allow a method on all of the caveat's paths */
				if (paths_within(ce->paths, ce->n_paths, pe->paths, pe->n_paths))
					have_paths |= methods_bits(pe->methods);
			}
			if (!port)
				return why(reason, size,
					   "egress host %s port %u is not allowed by the token",
					   ce->host, ce->ports[k]);
			for (unsigned m = 0; m < PLAN_N_METHODS; m++) {
				if ((want & ~have) & (1u << m))
					return why(reason, size,
						   "egress host %s method %s on port %u is not "
						   "allowed by the token",
						   ce->host, plan_method_names[m], ce->ports[k]);
				if ((want & ~have_paths) & (1u << m))
					return why(reason, size,
						   "egress host %s method %s on port %u: the "
						   "token allows it on fewer paths",
						   ce->host, plan_method_names[m], ce->ports[k]);
			}
		}
	}
	return 0;
}

static int check_net(const sc_plan *pa, const sc_plan *cv, char *reason, size_t size)
{
	static const struct {
		const char *name;
		size_t off;
	} caps[] = {
	    {"net.bandwidth", offsetof(sc_plan, bandwidth)},
	    {"net.max_request_body", offsetof(sc_plan, max_request_body)},
	    {"net.max_response_body", offsetof(sc_plan, max_response_body)},
	    {"net.egress_budget", offsetof(sc_plan, egress_budget)},
	};
	char a[32], b[32];
	int r;

	r = check_egress(pa, cv, reason, size);
	if (r < 0)
		return r;
	for (size_t i = 0; i < cv->n_allow_private; i++)
		if (!cidr_allowed(&cv->allow_private[i], pa)) {
			plan_cidr_format(&cv->allow_private[i], a, sizeof(a));
			return why(reason, size,
				   "net.allow_private %s is not inside the token's allow_private",
				   a);
		}
	for (size_t i = 0; i < cv->n_serve; i++) {
		const plan_serve *x = serve_find(pa, cv->serve[i].port);

		if (!x)
			return why(reason, size, "net.serve port %u is not served by the token",
				   (unsigned)cv->serve[i].port);
		if (cv->serve[i].any_addr && !x->any_addr)
			return why(reason, size,
				   "net.serve port %u: bind 0.0.0.0 is wider than the token's "
				   "127.0.0.1",
				   (unsigned)cv->serve[i].port);
	}
	if (!rate_within(&cv->rate, &pa->rate))
		return why(reason, size, "net.rate is above the token's");
	for (size_t i = 0; i < ELEMENTSOF(caps); i++) {
		uint64_t x = *(const uint64_t *)(const void *)((const char *)cv + caps[i].off);
		uint64_t y = *(const uint64_t *)(const void *)((const char *)pa + caps[i].off);

		if (x > y)
			return why(reason, size, "%s %s is above the token's %s", caps[i].name,
				   num(x, a, sizeof(a)), num(y, b, sizeof(b)));
	}
	for (size_t i = 0; i < cv->n_credentials; i++) {
		const plan_credential *cc = &cv->credentials[i];
		bool found = false;

		for (size_t j = 0; j < pa->n_credentials && !found; j++)
			found = credential_equal(cc, &pa->credentials[j]);
		/* Without a header a credential is known by its placeholder. */
		if (!found)
			return why(reason, size,
				   "credential %s%s for %s is not one of the token's (a caveat can "
				   "only keep a credential exactly as the token has it)",
				   cc->header ? "" : "with the placeholder ",
				   cc->header		 ? cc->header
				   : cc->placeholder_env ? cc->placeholder_env
							 : "?",
				   cc->host);
	}
	if (cv->upstream_ca && !str_eq(cv->upstream_ca, pa->upstream_ca))
		return why(reason, size, "net.upstream_ca %s is not trusted by the token",
			   cv->upstream_ca);
	if (!str_eq(cv->dns, pa->dns))
		return why(reason, size, "net.dns cannot be changed by a caveat");
	return 0;
}

int plan_check_narrower(const sc_plan *pa, const sc_plan *cv, char *reason, size_t size)
{
	static const struct {
		const char *name;
		size_t off;
	} lims[] = {
	    {"fs.tmp size", offsetof(sc_plan, tmp_size)},
	    {"fs.tmp inodes", offsetof(sc_plan, tmp_inodes)},
	    {"limits.memory", offsetof(sc_plan, memory)},
	    {"limits.cpu (thousandths of a core)", offsetof(sc_plan, cpu_millis)},
	    {"limits.pids", offsetof(sc_plan, pids)},
	    {"limits.wall (ns)", offsetof(sc_plan, wall_ns)},
	    {"limits.nofile", offsetof(sc_plan, nofile)},
	    {"limits.fsize", offsetof(sc_plan, fsize)},
	    {"limits.exec_wall (ns)", offsetof(sc_plan, exec_wall_ns)},
	    {"limits.idle (ns)", offsetof(sc_plan, idle_ns)},
	};
	char a[32], b[32];
	int r;

	if (!pa || !cv)
		return -EINVAL;
	if (!str_eq(cv->name, pa->name))
		return why(reason, size, "name cannot be changed by a caveat");
	if (cv->runtime != pa->runtime || !str_eq(cv->rootfs, pa->rootfs) ||
	    cv->rootfs_writable != pa->rootfs_writable)
		return why(reason, size, "fs.runtime cannot be changed by a caveat");
	if (!str_eq(cv->hostname, pa->hostname))
		return why(reason, size, "identity.hostname cannot be changed by a caveat");
	if (cv->agent_uid != pa->agent_uid || cv->agent_gid != pa->agent_gid)
		return why(reason, size, "identity.uid and gid cannot be changed by a caveat");
	r = check_grants(pa, cv, reason, size);
	if (r < 0)
		return r;
	r = check_net(pa, cv, reason, size);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(lims); i++) {
		uint64_t x = *(const uint64_t *)(const void *)((const char *)cv + lims[i].off);
		uint64_t y = *(const uint64_t *)(const void *)((const char *)pa + lims[i].off);

		if (x > y)
			return why(reason, size, "%s %s is above the token's %s", lims[i].name,
				   num(x, a, sizeof(a)), num(y, b, sizeof(b)));
	}
	for (size_t i = 0; i < cv->n_env; i++)
		if (!env_has(pa, cv->env[i])) {
			int n = (int)strcspn(cv->env[i], "=");

			return why(
			    reason, size,
			    "env %.*s is not in the token with that value (a caveat can only "
			    "drop variables)",
			    n, cv->env[i]);
		}
	if (!pa->net_listen && cv->net_listen)
		return why(reason, size, "net.listen cannot be turned on by a caveat");
	if (pa->audit_exec && !cv->audit_exec)
		return why(reason, size, "audit.exec cannot be turned off by a caveat");
	if (pa->audit_denied_syscalls && !cv->audit_denied_syscalls)
		return why(reason, size, "audit.denied_syscalls cannot be turned off by a caveat");
	if (pa->audit_reads && !cv->audit_reads)
		return why(reason, size, "audit.reads cannot be turned off by a caveat");
	if (pa->audit_fsync == AUDIT_FSYNC_ALWAYS && cv->audit_fsync != AUDIT_FSYNC_ALWAYS)
		return why(reason, size, "audit.fsync cannot be relaxed by a caveat");
	if (pa->audit_sample_ns && !cv->audit_sample_ns)
		return why(reason, size, "audit.sample_interval cannot be turned off by a caveat");
	if (!pa->best_effort && cv->best_effort)
		return why(reason, size, "best_effort cannot be turned on by a caveat");
	if (cv->spawn_max_depth > pa->spawn_max_depth)
		return why(reason, size, "spawn.max_depth %u is above the token's %u",
			   cv->spawn_max_depth, pa->spawn_max_depth);
	if (cv->spawn_max_children > pa->spawn_max_children)
		return why(reason, size, "spawn.max_children %u is above the token's %u",
			   cv->spawn_max_children, pa->spawn_max_children);
	return 0;
}

/* ---- fragments ---- */

static void json_decrefp_local(json_t **j)
{
	json_decref(*j);
}

/* Objects merged key by key rather than replaced: the sections, and fs.tmp. */
static bool mergeable(const char *where, const char *key)
{
	static const char *const root[] = {"fs", "net", "limits", "identity", "audit", "spawn"};

	if (!where) {
		for (size_t i = 0; i < ELEMENTSOF(root); i++)
			if (strcmp(key, root[i]) == 0)
				return true;
		return false;
	}
	return strcmp(where, "fs") == 0 && strcmp(key, "tmp") == 0;
}

static int merge(json_t *base, json_t *frag, const char *where)
{
	const char *key;
	json_t *v;

	json_object_foreach(frag, key, v)
	{
		json_t *b = json_object_get(base, key);
		_cleanup_(json_decrefp_local) json_t *wrapped = NULL;

		/* "tmp": "32M" means {"size": "32M"}: the inodes stay inherited. */
		if (where && strcmp(where, "fs") == 0 && strcmp(key, "tmp") == 0 &&
		    (json_is_string(v) || json_is_integer(v))) {
			wrapped = json_pack("{sO}", "size", v);
			if (!wrapped)
				return -ENOMEM;
			v = wrapped;
		}
		if (b && json_is_object(b) && json_is_object(v) && mergeable(where, key)) {
			int r = merge(b, v, key);

			if (r < 0)
				return r;
			continue;
		}
		if (json_object_set(base, key, v) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int parse_json(json_t *root, sc_plan **ret, sc_diag *d)
{
	_cleanup_free_ char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);

	if (!s)
		return -ENOMEM;
	return plan_parse(s, strlen(s), ret, d);
}

int plan_apply_fragment(const sc_plan *pa, json_t *frag, sc_plan **ret, sc_diag *d)
{
	_cleanup_(json_decrefp_local) json_t *base = NULL, *inherited = NULL, *kept = NULL;
	_cleanup_(sc_plan_freep) sc_plan *p1 = NULL;
	_cleanup_free_ char *pj = NULL;
	json_t *fnet, *net;
	int r;

	if (!pa || !ret)
		return -EINVAL;
	if (!json_is_object(frag)) {
		if (d) {
			memset(d, 0, sizeof(*d));
			snprintf(d->path, sizeof(d->path), "$");
			snprintf(d->message, sizeof(d->message),
				 "expected a policy object (any key may be omitted)");
		}
		return -EINVAL;
	}
	pj = plan_to_json(pa);
	if (!pj)
		return -ENOMEM;
	base = json_loads(pj, 0, NULL);
	if (!base)
		return -ENOMEM;
	r = merge(base, frag, NULL);
	if (r < 0)
		return r;

	fnet = json_object_get(frag, "net");
	net = json_object_get(base, "net");
	if (json_is_object(fnet) && json_object_get(fnet, "egress") &&
	    !json_object_get(fnet, "credentials") && json_is_object(net)) {
		/* Inherit only the credentials for hosts the new egress allows:
		 * first learn that egress with no credentials at all. */
		inherited = json_incref(json_object_get(net, "credentials"));
		kept = json_array();
		if (!kept || json_object_set_new(net, "credentials", json_array()) < 0)
			return -ENOMEM;
		r = parse_json(base, &p1, d);
		if (r < 0)
			return r;
		for (size_t i = 0; i < pa->n_credentials && i < json_array_size(inherited); i++)
			if (host_allowed(p1, pa->credentials[i].host) &&
			    json_array_append(kept, json_array_get(inherited, i)) < 0)
				return -ENOMEM;
		if (json_object_set(net, "credentials", kept) < 0)
			return -ENOMEM;
	}
	return parse_json(base, ret, d);
}

/* SPDX-License-Identifier: MIT */
/*
 * The blast radius of a plan in plain words, for "sandcap check": what the
 * agent can see and how, whom it can reach, what it can consume. Secrets are
 * never printed: a credential is described by its header name and host only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "policy/plan.h"
#include "policy/agent-env.h"
#include "policy/policy-internal.h"

/* "64 MiB", "1.5 GiB", "512 bytes". */
static const char *human_size(uint64_t v, char *buf, size_t size)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	unsigned u = 0;
	uint64_t div = 1024;

	if (v < 1024) {
		snprintf(buf, size, "%" PRIu64 " byte%s", v, v == 1 ? "" : "s");
		return buf;
	}
	while (u + 1 < sizeof(units) / sizeof(units[0]) && v / div >= 1024) {
		div *= 1024;
		u++;
	}
	if (v % div == 0)
		snprintf(buf, size, "%" PRIu64 " %s", v / div, units[u]);
	else
		snprintf(buf, size, "%.1f %s", (double)v / (double)div, units[u]);
	return buf;
}

static const char *human_duration(uint64_t ns, char *buf, size_t size)
{
	const uint64_t hour = 3600000, minute = 60000, second = 1000;
	uint64_t ms = ns / 1000000;

	if (ms % hour == 0)
		snprintf(buf, size, "%" PRIu64 " h", ms / hour);
	else if (ms % minute == 0)
		snprintf(buf, size, "%" PRIu64 " min", ms / minute);
	else if (ms % second == 0)
		snprintf(buf, size, "%" PRIu64 " s", ms / second);
	else
		snprintf(buf, size, "%" PRIu64 " ms", ms);
	return buf;
}

static const char *limit_size(uint64_t v, char *buf, size_t size)
{
	if (v == PLAN_UNLIMITED)
		return "unlimited";
	return human_size(v, buf, size);
}

static void describe_fs(const sc_plan *p, FILE *out)
{
	char b[64];

	fprintf(out, "Files visible inside the sandbox:\n");
	if (p->runtime == RUNTIME_HOST) {
		static const char *const rt[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64"};

		fprintf(out, "  %-22s a private tmpfs, nothing from the host unless listed here\n",
			"/");
		for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++)
			fprintf(out, "  %-22s read-only, nosuid, nodev: the host's %s\n", rt[i],
				rt[i]);
		fprintf(
		    out,
		    "  %-22s generated (passwd and group with the agent user, hosts, "
		    "nsswitch.conf),\n"
		    "  %-22s read-only binds of the host's /etc/ssl, /etc/ca-certificates,\n"
		    "  %-22s /etc/alternatives and /etc/python3, and copies of ld.so.cache,\n"
		    "  %-22s localtime, services, protocols and a few such files; nothing else\n",
		    "/etc", "", "", "");
	} else {
		fprintf(out,
			"  %-22s the unpacked image at %s on the host, %s, nosuid, nodev;\n"
			"  %-22s nothing else from the host unless listed here\n",
			"/", p->rootfs,
			p->rootfs_writable ? "writable (its changes in a private layer, at most "
					     "the size of /tmp, dropped at the end)"
					   : "read-only",
			"");
	}
	for (size_t i = 0; i < p->n_grants; i++) {
		const plan_grant *g = &p->grants[i];

		if (g->mode == GRANT_COW) {
			fprintf(out,
				"  %-22s read-write copy-on-write of the host's %s: changes (at "
				"most %s) stay in a workspace until applied\n",
				g->at, g->path, human_size(g->quota, b, sizeof(b)));
			continue;
		}
		fprintf(out, "  %-22s %s, nosuid, nodev: the host's %s\n", g->at,
			g->mode == GRANT_RW ? "READ-WRITE" : "read-only (recursively)", g->path);
		if (g->mode == GRANT_RW && g->quota != PLAN_UNLIMITED)
			fprintf(out, "  %-22s may hold at most %s (project quota%s)\n", "",
				human_size(g->quota, b, sizeof(b)),
				g->best_effort ? ", or none where the host has none" : "");
	}
	fprintf(out, "  %-22s private tmpfs of %s, %" PRIu64 " inodes, gone at exit\n", "/tmp",
		human_size(p->tmp_size, b, sizeof(b)), p->tmp_inodes);
	fprintf(out, "  %-22s a fresh procfs of the sandbox's own processes; /proc/sys read-only\n",
		"/proc");
	fprintf(out, "  %-22s null, zero, full, random, urandom, pts (no host terminal), shm\n",
		"/dev");
	fprintf(out, "  working directory      %s\n", p->workdir);
}

/* Only a credential with upstream https or an inspected host makes the proxy
 * originate TLS. */
static bool describe_needs_tls(const sc_plan *p)
{
	if (plan_inspects(p))
		return true;
	for (size_t i = 0; i < p->n_credentials; i++)
		if (p->credentials[i].upstream_https)
			return true;
	return false;
}

static void describe_methods(uint32_t methods, FILE *out)
{
	for (unsigned m = 0, k = 0; m < PLAN_N_METHODS; m++)
		if (methods & (1u << m))
			fprintf(out, "%s%s", k++ ? ", " : "", plan_method_names[m]);
}

static void describe_paths(char *const *paths, size_t n, FILE *out)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? ", " : "", paths[i]);
}

/* A credential's limits, one line; nothing when it has none. */
static void describe_credential_limits(const plan_credential *c, FILE *out)
{
	char b[64];
	int k = 0;

	if (c->max_requests != PLAN_UNLIMITED)
		fprintf(out, "%s%" PRIu64 " request%s", k++ ? ", " : "", c->max_requests,
			c->max_requests == 1 ? "" : "s");
	if (c->rate.count)
		fprintf(out, "%s%" PRIu64 " per %s", k++ ? ", " : "", c->rate.count,
			c->rate.per_ns == 60ULL * 1000000000ULL ? "minute" : "second");
	if (c->max_bytes != PLAN_UNLIMITED)
		fprintf(out, "%s%s sent", k++ ? ", " : "", human_size(c->max_bytes, b, sizeof(b)));
	if (c->methods != HTTP_ANY_METHOD) {
		fprintf(out, "%smethods ", k++ ? ", " : "");
		describe_methods(c->methods, out);
	}
	if (c->n_paths) {
		fprintf(out, "%spaths under ", k++ ? ", " : "");
		describe_paths(c->paths, c->n_paths, out);
	}
	if (c->expires_ns != PLAN_UNLIMITED)
		fprintf(out, "%sexpires %" PRIu64 " s after the start", k++ ? ", " : "",
			(uint64_t)(c->expires_ns / 1000000000ULL));
	if (k)
		fputc('\n', out);
}

/* An inspect rule, or one naming the host of a placeholder credential. */
static bool egress_inspected(const sc_plan *p, const plan_egress *e)
{
	for (size_t i = 0; i < p->n_credentials && !e->inspect; i++)
		if (p->credentials[i].placeholder_env &&
		    strcmp(p->credentials[i].host, e->host) == 0)
			return true;
	return e->inspect;
}

static void describe_net(const sc_plan *p, FILE *out)
{
	char b[64];

	fprintf(out, "\nNetwork:\n");
	fprintf(out, "  listening: %s\n",
		p->net_listen ? "allowed, TCP and unix sockets, on the sandbox's own loopback "
				"(reachable from inside only)"
			      : "refused: no socket may listen, no TCP bind (net.listen false)");
	if (p->n_serve == 0) {
		fprintf(out, "  served to the host: nothing (no port of the sandbox is reachable "
			     "from outside)\n");
	} else {
		bool pod = false;

		fprintf(out, "  served to the host: ");
		for (size_t i = 0; i < p->n_serve; i++) {
			pod = pod || p->serve[i].any_addr;
			if (p->serve[i].host_port)
				fprintf(out, "%sport %u as %s:%u", i ? ", " : "", p->serve[i].port,
					p->serve[i].any_addr ? "0.0.0.0" : "127.0.0.1",
					p->serve[i].host_port);
			else
				fprintf(out, "%sport %u", i ? ", " : "", p->serve[i].port);
		}
		fprintf(out,
			"\n    relayed from %s (a port the kernel picks "
			"unless given),\n    each connection recorded (net.inbound); other "
			"ports stay closed\n",
			pod ? "the host's loopback, or for 0.0.0.0 every address of a "
			      "container's own\n    network namespace (a pod's; refused in the "
			      "host's)"
			    : "the host's loopback only");
	}
	if (p->n_egress == 0) {
		fprintf(out, "  none: only a loopback interface, no proxy, no route out\n");
		return;
	}
	fprintf(out, "  only through the egress proxy (HTTP_PROXY/HTTPS_PROXY), to:\n");
	for (size_t i = 0; i < p->n_egress; i++) {
		const plan_egress *e = &p->egress[i];

		fprintf(out, "    %s%s, port%s ", e->host,
			e->wildcard	       ? " (subdomains only)"
			: strchr(e->host, '/') ? " (every address in the range)"
					       : "",
			e->n_ports == 1 ? "" : "s");
		for (size_t j = 0; j < e->n_ports && j < POLICY_MAX_PORTS; j++)
			fprintf(out, "%s%u", j ? ", " : "", e->ports[j]);
		if (egress_inspected(p, e))
			fprintf(out, ", TLS inspected");
		if (e->methods == HTTP_ANY_METHOD) {
			fprintf(out, ", any method");
		} else {
			fprintf(out, ", methods ");
			describe_methods(e->methods, out);
		}
		fputc('\n', out);
		if (e->n_paths) {
			fprintf(out, "      only paths under ");
			describe_paths(e->paths, e->n_paths, out);
			fprintf(out, " (normalised first; %s)\n",
				egress_inspected(p, e) ? "also each request decrypted from a tunnel"
						       : "no CONNECT");
		}
	}
	if (p->n_allow_private == 0) {
		fprintf(out,
			"  private addresses: all refused after resolution (loopback, RFC 1918, "
			"link-local\n"
			"    and cloud metadata, CGNAT, multicast, ULA, and IPv4-mapped forms)\n");
	} else {
		/* allow_private opens nothing by itself: it only lets the
		 * destinations above reach these ranges */
		fprintf(out, "  private addresses: refused, except ");
		for (size_t i = 0; i < p->n_allow_private; i++) {
			char c[64];

			plan_cidr_format(&p->allow_private[i], c, sizeof(c));
			fprintf(out, "%s%s", i ? ", " : "", c);
		}
		fprintf(out,
			"\n    for the destinations above only (a name resolving there, an address "
			"a rule names)\n");
	}
	if (p->rate.count)
		fprintf(out, "  request rate:          %" PRIu64 " per %s\n", p->rate.count,
			p->rate.per_ns == 60ULL * 1000000000ULL ? "minute" : "second");
	else
		fprintf(out, "  request rate:          unlimited\n");
	if (p->bandwidth == PLAN_UNLIMITED)
		fprintf(out, "  bandwidth:             unlimited\n");
	else
		fprintf(out, "  bandwidth:             %s/s each way\n",
			human_size(p->bandwidth, b, sizeof(b)));
	fprintf(out, "  request body:          %s\n",
		limit_size(p->max_request_body, b, sizeof(b)));
	fprintf(out, "  response body:         %s\n",
		limit_size(p->max_response_body, b, sizeof(b)));
	fprintf(out, "  upload budget:         %s in total\n",
		limit_size(p->egress_budget, b, sizeof(b)));
	fprintf(out, "  DNS:                   %s\n",
		p->dns ? p->dns : "the host's resolvers (/etc/resolv.conf)");
	if (describe_needs_tls(p))
		fprintf(out, "  upstream TLS trust:    the system store%s%s\n",
			p->upstream_ca ? " and " : "", p->upstream_ca ? p->upstream_ca : "");
	if (p->n_credentials) {
		fprintf(out,
			"  credentials added by the proxy (the values never enter the sandbox):\n");
		for (size_t i = 0; i < p->n_credentials; i++) {
			const plan_credential *c = &p->credentials[i];

			if (c->header)
				fprintf(out, "    %s: %s header for %s, upstream %s\n",
					c->name ? c->name : c->host, c->header, c->host,
					c->upstream_https ? "https (verified TLS)" : "plain http");
			if (c->placeholder_env)
				fprintf(
				    out,
				    "    %s: %s holds a placeholder, swapped for the value only in "
				    "requests to %s%s\n",
				    c->name ? c->name : c->host, c->placeholder_env, c->host,
				    c->in_query ? " (headers and query)" : " (headers)");
			if (c->max_requests != PLAN_UNLIMITED || c->rate.count ||
			    c->max_bytes != PLAN_UNLIMITED || c->methods != HTTP_ANY_METHOD ||
			    c->n_paths || c->expires_ns != PLAN_UNLIMITED) {
				fprintf(out, "      at most: ");
				describe_credential_limits(c, out);
				fprintf(out, "      (beyond a limit the request is refused and the "
					     "credential not sent)\n");
			}
		}
	}
	if (plan_inspects(p))
		fprintf(out, "  TLS inspection: CONNECTs to inspected hosts are decrypted with a "
			     "per-sandbox CA\n"
			     "    the sandbox trusts (/etc/ssl/certs/ca-certificates.crt); its key "
			     "never enters it\n");
}

static void describe_limits(const sc_plan *p, FILE *out)
{
	char b[64];

	fprintf(out, "\nLimits:\n");
	fprintf(out, "  memory:                %s%s\n", limit_size(p->memory, b, sizeof(b)),
		p->memory == PLAN_UNLIMITED ? "" : " (no swap)");
	if (p->cpu_millis == PLAN_UNLIMITED)
		fprintf(out, "  cpu:                   unlimited\n");
	else
		fprintf(out, "  cpu:                   %" PRIu64 ".%03" PRIu64 " cores\n",
			p->cpu_millis / 1000, p->cpu_millis % 1000);
	if (p->pids == PLAN_UNLIMITED)
		fprintf(out, "  processes:             unlimited\n");
	else
		fprintf(out, "  processes:             %" PRIu64 "\n", p->pids);
	if (p->wall_ns == PLAN_UNLIMITED)
		fprintf(out, "  wall clock:            unlimited\n");
	else
		fprintf(out, "  wall clock:            %s\n",
			human_duration(p->wall_ns, b, sizeof(b)));
	fprintf(out, "  open files:            %" PRIu64 "\n", p->nofile);
	fprintf(out, "  file size:             %s\n", limit_size(p->fsize, b, sizeof(b)));
	fprintf(out, "  core dumps:            none\n");
}

static bool plan_has_any_limit(const sc_plan *p)
{
	return p->memory != PLAN_UNLIMITED || p->cpu_millis != PLAN_UNLIMITED ||
	       p->pids != PLAN_UNLIMITED;
}

int plan_describe(const sc_plan *p, FILE *out)
{
	if (!p || !out)
		return -EINVAL;
	fprintf(out, "Policy \"%s\" (version %d)\n\n", p->name, p->version);
	describe_fs(p, out);
	describe_net(p, out);
	describe_limits(p, out);

	fprintf(out, "\nIdentity:\n");
	fprintf(out,
		"  user \"agent\" (uid %u, gid %u inside, an unprivileged id outside), no "
		"capabilities, no_new_privs\n",
		(unsigned)p->agent_uid, (unsigned)p->agent_gid);
	fprintf(out, "  hostname:              %s\n", p->hostname);
	fprintf(out, "\nEnvironment (nothing else is inherited):\n  ");
	for (size_t i = 0; i < p->n_env; i++)
		if (!agent_env_left_out(p->env[i]))
			fprintf(out, "%.*s ", (int)strcspn(p->env[i], "="), p->env[i]);
	{
		const char *name;
		size_t len;

		for (size_t i = 0; agent_env_name(p, i, &name, &len); i++)
			fprintf(out, "%s%.*s", i ? " " : "", (int)len, name);
		fputc('\n', out);
	}

	fprintf(out, "\nDelegation:\n");
	if (p->spawn_max_depth == 0)
		fprintf(out, "  none: the agent cannot start sub-sandboxes\n");
	else
		fprintf(out,
			"  through /run/sandcap/spawn.sock: sub-sandboxes with at most this plan,\n"
			"  %u level%s deep, at most %u children started over its life (each child "
			"no more),\n"
			"  inside this sandbox's memory, CPU and pids limits\n",
			p->spawn_max_depth, p->spawn_max_depth == 1 ? "" : "s",
			p->spawn_max_children);

	fprintf(out, "\nAudit:\n");
	fprintf(out, "  executed programs:     %s\n", p->audit_exec ? "logged" : "not logged");
	fprintf(out, "  denied system calls:   %s\n",
		p->audit_denied_syscalls ? "logged" : "not logged");
	fprintf(out, "  refused file writes:   %s\n",
		p->audit_denied_syscalls
		    ? "logged (fs.denied), refused by the listener with the wall's errno"
		    : "not logged (refused by the kernel alone)");
	if (p->audit_sample_ns)
		fprintf(out, "  resource use:          sampled every %" PRIu64 " ms (res.sample)\n",
			(uint64_t)(p->audit_sample_ns / 1000000u));
	else
		fprintf(out, "  resource use:          not sampled\n");
	fprintf(out, "  files read in grants:  %s\n",
		p->audit_reads ? "logged, first open of each, with SHA-256" : "not logged");
	fprintf(out, "  fsync:                 %s\n",
		p->audit_fsync == AUDIT_FSYNC_ALWAYS ? "after every record"
						     : "at start, exit and seal");
	if (p->audit_max_rate == PLAN_UNLIMITED)
		fprintf(out, "  log growth:            not paced\n");
	else
		fprintf(out, "  log growth:            %" PRIu64 " bytes/s at most (execs wait)\n",
			p->audit_max_rate);
	if (p->audit_max_bytes == PLAN_UNLIMITED)
		fprintf(out, "  log size:              unbounded\n");
	else
		fprintf(out, "  log size:              %" PRIu64 " bytes at most (then stopped)\n",
			p->audit_max_bytes);
	fprintf(out, "\nEnforcement: %s\n",
		p->best_effort
		    ? "best effort: layers the host cannot provide are skipped and logged"
		    : "strict: the run fails if the host cannot enforce any layer");
	/* check runs nothing: what a run would attempt, never what was
	 * enforced (a run's sandbox.start says that, step by step). */
	fprintf(
	    out,
	    "  a run would attempt: namespaces (user mount pid net ipc uts cgroup), tmpfs "
	    "root and pivot_root, %s, capabilities dropped, no_new_privs, Landlock, seccomp%s%s\n",
	    plan_has_any_limit(p) ? "a cgroup with the limits" : "a cgroup for accounting",
	    p->audit_exec || p->audit_denied_syscalls ? " with user notification" : "",
	    p->n_egress ? ", the egress proxy" : "");
	if (ferror(out))
		return -EIO;
	return 0;
}

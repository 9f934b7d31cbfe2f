/* SPDX-License-Identifier: MIT */
/*
 * The bound that was enforced, stated from the log alone (docs/audit.md,
 * "The bound"): what could leave and what did, what was reachable, which
 * sockets and resolvers the sandbox had, which credentials it could use.
 * Built from sandbox.start (the effective plan and the layers put in
 * place, never what a policy asked for) and the traffic records.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "audit/report.h"
#include "base/parse-num.h"

/* The longest name a lookup can carry (RFC 1035, in text form). */
#define AU_DNS_NAME_MAX 253u

static json_t *net_plan(const report *rp, const char *key)
{
	return json_object_get(json_object_get(json_object_get(rp->start, "plan"), "net"), key);
}

static bool has_word(const char *words, const char *w)
{
	size_t n = strlen(w);

	for (const char *p = words; p && (p = strstr(p, w)); p += n)
		if ((p == words || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
			return true;
	return false;
}

/* The use the log records of credential name (au_tally, by name). */
static const au_count *credential_use(const report *rp, const char *name)
{
	for (size_t i = 0; name && i < rp->tally.credentials.n; i++)
		if (strcmp(rp->tally.credentials.e[i].key, name) == 0)
			return &rp->tally.credentials.e[i];
	return NULL;
}

/* Credentials as the proxy held them: name, host, header, format and
 * limits, never the value or where it came from; and how much each was
 * used (allowed requests that carried it, their bytes, refusals). */
static json_t *credentials(const report *rp)
{
	json_t *out = json_array(), *c;
	size_t i;

	json_array_foreach(net_plan(rp, "credentials"), i, c)
	{
		json_t *name = json_object_get(c, "name");
		const au_count *u;
		json_t *o;

		if (!json_is_string(name)) /* the default name is the host */
			name = json_object_get(c, "host");
		u = credential_use(rp, json_string_value(name));
		o = json_pack(
		    "{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:I, s:I, s:I, s:I}", "name", name,
		    "host", json_object_get(c, "host"), "header", json_object_get(c, "header"),
		    "format", json_object_get(c, "format"), "max_requests",
		    json_object_get(c, "max_requests"), "max_bytes",
		    json_object_get(c, "max_bytes"), "expires", json_object_get(c, "expires"),
		    "requests", (json_int_t)(u ? u->count : 0), "bytes_out",
		    (json_int_t)(u ? u->bytes_out : 0), "bytes_in",
		    (json_int_t)(u ? u->bytes_in : 0), "refused", (json_int_t)(u ? u->refused : 0));
		if (o)
			(void)json_array_append_new(out, o);
	}
	return out;
}

/*
 * What leaves outside the budget: under a wildcard rule ("*.domain") the
 * agent chooses the name, and the proxy's lookup of it reaches its DNS
 * servers before any byte is counted. Every such lookup is for a request
 * net.rate admitted, so the rate bounds the names: each at most
 * AU_DNS_NAME_MAX bytes. Null when every rule names its host exactly (or
 * by address).
 */
static json_t *outside_budget(const report *rp)
{
	json_t *rule, *rate = net_plan(rp, "rate");
	uint64_t count = 0, per_ns = 0, wall_ns = 0, per_s, run = 0;
	size_t i;
	char buf[384], total[96] = "";

	json_array_foreach(net_plan(rp, "egress"), i, rule)
	{
		const char *host = json_string_value(json_object_get(rule, "host"));

		if (!host || strncmp(host, "*.", 2) != 0)
			continue;
		if (!json_is_string(rate) ||
		    parse_rate(json_string_value(rate), &count, &per_ns) < 0 || per_ns == 0) {
			(void)snprintf(buf, sizeof(buf),
				       "names under a wildcard rule (%.64s) are the agent's choice "
				       "and reach the proxy's DNS servers when it resolves them: "
				       "unbounded (net.rate lifted)",
				       host);
			return json_string(buf);
		}
		per_s =
		    (uint64_t)((unsigned __int128)count * AU_DNS_NAME_MAX * 1000000000ull / per_ns);
		if (rp->exit && rp_get_u64(rp->exit, "wall_ns", &wall_ns) && wall_ns > 0) {
			/* the burst, then the refill over the run */
			run = count * AU_DNS_NAME_MAX +
			      (uint64_t)((unsigned __int128)wall_ns * count / per_ns) *
				  AU_DNS_NAME_MAX;
			(void)snprintf(total, sizeof(total),
				       ", at most %" PRIu64 " bytes in this run", run);
		}
		(void)snprintf(
		    buf, sizeof(buf),
		    "names under a wildcard rule (%.64s) are the agent's choice and reach "
		    "the proxy's DNS servers when it resolves them: at most net.rate %s "
		    "lookups, each a name of up to %u bytes, so up to %" PRIu64 " bytes a second%s",
		    host, json_string_value(rate), AU_DNS_NAME_MAX, per_s, total);
		return json_string(buf);
	}
	return json_null();
}

static json_t *contacted(const report *rp)
{
	json_t *out = json_array();

	for (size_t i = 0; out && i < rp->hosts.n; i++) {
		json_t *o = json_pack("{s:s, s:I, s:I}", "host", rp->hosts.e[i].key, "requests",
				      (json_int_t)rp->hosts.e[i].count, "bytes_out",
				      (json_int_t)rp->hosts.e[i].bytes_out);

		if (o)
			(void)json_array_append_new(out, o);
	}
	return out;
}

json_t *rp_bound(const report *rp)
{
	json_t *layers = json_object_get(rp->start, "layers");
	const char *ns = json_string_value(json_object_get(layers, "namespaces"));
	const char *proxy = json_string_value(json_object_get(layers, "proxy"));
	json_t *budget = net_plan(rp, "egress_budget"), *egress = net_plan(rp, "egress");
	const char *transparent = json_string_value(json_object_get(rp->start, "transparent"));
	bool own_net = has_word(ns, "net");
	bool proxied = proxy && strcmp(proxy, "active") == 0;
	/* "on": the sandbox resolver and every address local to lo are there */
	bool resolver = proxied && transparent && strcmp(transparent, "on") == 0;
	uint64_t out = rp->net_bytes_out;
	json_t *max_out;

	if (!rp->start)
		return json_null();
	/* sandbox.exit counts what the proxy forwarded, the records too; the
	 * larger is the safer statement. */
	if (rp->exit) {
		uint64_t x = 0;

		if (rp_get_u64(rp->exit, "bytes_out", &x) && x > out)
			out = x;
	}
	/* Without the proxy, a sandbox in its own network namespace has
	 * nothing to send to; with it, the budget is the most that leaves. */
	if (own_net && !proxied)
		max_out = json_integer(0);
	else if (own_net && json_is_integer(budget))
		max_out = json_incref(budget);
	else
		max_out = json_null();
	return json_pack(
	    "{s:b, s:s, s:o, s:O?, s:o, s:I, s:o, s:O?, s:O?, s:o, s:o, s:s, s:s, s:I, s:I, s:I, "
	    "s:I}",
	    "own_network_namespace", own_net, "egress",
	    !own_net  ? "the host's network (no network namespace)"
	    : proxied ? "only through the proxy, to the hosts and ports below"
		      : "none: a network namespace with loopback only",
	    "max_bytes_out", max_out, "egress_budget", budget, "outside_budget",
	    proxied && own_net ? outside_budget(rp) : json_null(), "bytes_out", (json_int_t)out,
	    "within_budget",
	    json_is_integer(max_out) ? json_boolean(out <= (uint64_t)json_integer_value(max_out))
				     : json_null(),
	    "reachable", proxied ? egress : NULL, "private_addresses",
	    proxied ? net_plan(rp, "allow_private") : NULL, "contacted", contacted(rp),
	    "credentials", proxied ? credentials(rp) : json_array(), "sockets",
	    !own_net ? "the host's: not bounded by sandcap"
	    : resolver
		? "loopback of its own network namespace, no route out: every address is local "
		  "to lo, where the proxy and its listeners for the ports the rules allow take "
		  "TCP and the sandbox resolver takes UDP port 53; any other connect or "
		  "datagram is refused by the kernel and recorded"
	    : proxied
		? "loopback of its own network namespace, where the proxy listens; no route, no "
		  "other interface"
		: "loopback of its own network namespace only; no route, no DNS resolver",
	    "dns",
	    !own_net   ? "the host's resolvers: not bounded by sandcap"
	    : resolver ? "the sandbox resolver only: a synthetic address for each name the "
			 "egress rules allow, NXDOMAIN for the others; no query leaves the "
			 "sandbox (the proxy resolves names itself)"
	    : proxied  ? "none in the sandbox (the proxy resolves names itself)"
		       : "none",
	    "dns_queries", (json_int_t)rp->tally.dns_queries, "dns_refused",
	    (json_int_t)rp->tally.dns_refused, "direct_attempts", (json_int_t)rp->direct_attempts,
	    "requests_denied", (json_int_t)rp->tally.net_denied);
}

/* SPDX-License-Identifier: MIT */
#include "policy/agent-env.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "policy/plan.h"

#define STR_(x)	  #x
#define STR(x)	  STR_(x)
#define PROXY_URL "http://127.0.0.1:" STR(PLAN_PROXY_PORT)
/* the same listener speaks SOCKS5; socks5h: names are resolved by the proxy */
#define SOCKS_URL "socks5h://127.0.0.1:" STR(PLAN_PROXY_PORT)
/* The JVM reads no proxy variable; these are its own properties. */
#define JAVA_PX(scheme)                                                                            \
	"-D" scheme ".proxyHost=127.0.0.1 -D" scheme ".proxyPort=" STR(PLAN_PROXY_PORT)
#define JAVA_PROXY                                                                                 \
	JAVA_PX("http") " " JAVA_PX("https") " -Dhttp.nonProxyHosts=localhost|127.*|[::1]"

#define CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

typedef enum var_when {
	ALWAYS,
	EGRESS,	 /* the plan lets the agent out, through the proxy */
	INSPECT, /* the proxy decrypts some host: the bundle holds the sandbox CA */
	/* NO_PROXY keeps the sandbox's own loopback direct, except a loopback
	 * name or address a rule allows: that one is the host's, through the
	 * proxy (docs/proxy.md, "The agent's environment"). */
	NO_PROXY_BOTH,	    /* no rule for either */
	NO_PROXY_LOCALHOST, /* a rule for 127.0.0.1: localhost stays direct */
	NO_PROXY_LOOPBACK,  /* a rule for localhost: 127.0.0.1 stays direct */
} var_when;

/* The lower-case proxy forms are read by curl, wget and most language
 * runtimes; Node and the JVM have knobs of their own. A client that ignores
 * all of them still gets through the sandbox resolver and transparent
 * redirection (docs/proxy.md). The CA variables are read by OpenSSL, Python,
 * curl, Node, git, pip and the AWS SDKs, which otherwise carry their own CA
 * lists. */
static const struct agent_var {
	const char *def;
	var_when when;
	bool policy_may_set; /* a policy's env may replace it, or leave it out with "" */
} agent_vars[] = {
    {"HOME=/tmp", ALWAYS},
    {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", ALWAYS},
    {"USER=agent", ALWAYS},
    {"TMPDIR=/tmp", ALWAYS},
    /* ALL_PROXY is http://: httpx refuses a socks5h:// one, and every client
     * that reads ALL_PROXY speaks HTTP proxy. SOCKS5 is SOCKS_PROXY's. */
    {"HTTP_PROXY=" PROXY_URL, EGRESS, true},
    {"HTTPS_PROXY=" PROXY_URL, EGRESS, true},
    {"ALL_PROXY=" PROXY_URL, EGRESS, true},
    {"SOCKS_PROXY=" SOCKS_URL, EGRESS, true},
    {"NO_PROXY=localhost,127.0.0.1", NO_PROXY_BOTH, true},
    {"NO_PROXY=localhost", NO_PROXY_LOCALHOST, true},
    {"NO_PROXY=127.0.0.1", NO_PROXY_LOOPBACK, true},
    {"http_proxy=" PROXY_URL, EGRESS, true},
    {"https_proxy=" PROXY_URL, EGRESS, true},
    {"all_proxy=" PROXY_URL, EGRESS, true},
    {"no_proxy=localhost,127.0.0.1", NO_PROXY_BOTH, true},
    {"no_proxy=localhost", NO_PROXY_LOCALHOST, true},
    {"no_proxy=127.0.0.1", NO_PROXY_LOOPBACK, true},
    /* Node >= 24 reads the variables above only with this (fetch, http) */
    {"NODE_USE_ENV_PROXY=1", EGRESS, true},
    {"JAVA_TOOL_OPTIONS=" JAVA_PROXY, EGRESS, true},
    {"SSL_CERT_FILE=" CA_BUNDLE, INSPECT},
    {"REQUESTS_CA_BUNDLE=" CA_BUNDLE, INSPECT},
    {"CURL_CA_BUNDLE=" CA_BUNDLE, INSPECT},
    {"NODE_EXTRA_CA_CERTS=" CA_BUNDLE, INSPECT},
    {"GIT_SSL_CAINFO=" CA_BUNDLE, INSPECT},
    {"PIP_CERT=" CA_BUNDLE, INSPECT},
    {"AWS_CA_BUNDLE=" CA_BUNDLE, INSPECT},
};

/* Does an egress rule name host "localhost", or an IPv4 address or range
 * holding 127.0.0.1? */
static bool rule_names_localhost(const sc_plan *p)
{
	for (size_t i = 0; i < p->n_egress; i++)
		if (!p->egress[i].wildcard && strcmp(p->egress[i].host, "localhost") == 0)
			return true;
	return false;
}

static bool rule_names_loopback(const sc_plan *p)
{
	for (size_t i = 0; i < p->n_egress; i++) {
		const char *h = p->egress[i].host, *slash = strchr(h, '/');
		char a[INET_ADDRSTRLEN];
		struct in_addr in;
		unsigned long prefix = 32;
		size_t n = slash ? (size_t)(slash - h) : strlen(h);

		if (p->egress[i].wildcard || n >= sizeof(a))
			continue;
		memcpy(a, h, n);
		a[n] = '\0';
		if (inet_pton(AF_INET, a, &in) != 1)
			continue;
		if (slash)
			prefix = strtoul(slash + 1, NULL, 10);
		if (prefix > 32)
			continue;
		/* the rule's range holds 127.0.0.1 when the two agree on its prefix */
		if (prefix == 0 || ((ntohl(in.s_addr) ^ INADDR_LOOPBACK) >> (32 - prefix)) == 0)
			return true;
	}
	return false;
}

static bool var_applies(const sc_plan *p, var_when when)
{
	switch (when) {
	case NO_PROXY_BOTH:
		return p->n_egress > 0 && !rule_names_localhost(p) && !rule_names_loopback(p);
	case NO_PROXY_LOCALHOST:
		return p->n_egress > 0 && !rule_names_localhost(p) && rule_names_loopback(p);
	case NO_PROXY_LOOPBACK:
		return p->n_egress > 0 && rule_names_localhost(p) && !rule_names_loopback(p);
	case EGRESS:
		return p->n_egress > 0;
	case INSPECT:
		return p->n_egress > 0 && plan_inspects(p);
	case ALWAYS:
	default:
		return true;
	}
}

_Static_assert(ELEMENTSOF(agent_vars) <= AGENT_ENV_OWN_MAX, "AGENT_ENV_OWN_MAX too small");

bool agent_env_reserved(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < ELEMENTSOF(agent_vars); i++) {
		const char *d = agent_vars[i].def;

		if (strcspn(d, "=") == n && strncasecmp(d, name, n) == 0)
			return true;
	}
	return false;
}

/* The policy's "NAME=value" for the name of d ("NAME=..."), or NULL. */
static const char *plan_value_of(const sc_plan *p, const char *d)
{
	size_t n = strcspn(d, "=");

	for (size_t i = 0; i < p->n_env; i++)
		if (strncmp(p->env[i], d, n + 1) == 0)
			return p->env[i];
	return NULL;
}

bool agent_env_policy_may_set(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < ELEMENTSOF(agent_vars); i++) {
		const char *d = agent_vars[i].def;

		if (agent_vars[i].policy_may_set && strcspn(d, "=") == n &&
		    strncmp(d, name, n) == 0)
			return true;
	}
	return false;
}

/* Is sandcap's variable i set for p: it applies and the policy did not
 * replace it? */
static bool own_var_set(const sc_plan *p, size_t i)
{
	return var_applies(p, agent_vars[i].when) &&
	       !(agent_vars[i].policy_may_set && plan_value_of(p, agent_vars[i].def));
}

bool agent_env_left_out(const char *kv)
{
	const char *eq = strchr(kv, '=');
	char name[64];
	size_t n = eq ? (size_t)(eq - kv) : 0;

	if (!eq || eq[1] != '\0' || n >= sizeof(name))
		return false;
	memcpy(name, kv, n);
	name[n] = '\0';
	return agent_env_policy_may_set(name);
}

bool agent_env_name(const sc_plan *p, size_t n, const char **ret_name, size_t *ret_len)
{
	for (size_t i = 0; i < ELEMENTSOF(agent_vars); i++) {
		if (!own_var_set(p, i))
			continue;
		if (n-- == 0) {
			*ret_name = agent_vars[i].def;
			*ret_len = strcspn(agent_vars[i].def, "=");
			return true;
		}
	}
	return false;
}

int agent_env_build(const sc_plan *p, char **env, size_t cap)
{
	size_t n = 0;

	if (p->n_env > cap || cap - p->n_env < ELEMENTSOF(agent_vars) + 1)
		return -E2BIG;
	for (size_t i = 0; i < ELEMENTSOF(agent_vars); i++)
		if (own_var_set(p, i))
			env[n++] = (char *)agent_vars[i].def;
	for (size_t i = 0; i < p->n_env; i++)
		if (!agent_env_left_out(p->env[i]))
			env[n++] = p->env[i];
	env[n] = NULL;
	return 0;
}

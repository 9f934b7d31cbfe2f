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
	/* NO_PROXY keeps the sandbox's own loopback direct, unless a rule
	 * allows a loopback name or address: that one is the host's, only the
	 * proxy reaches it, and clients disagree on what one loopback entry
	 * covers (axios: all of loopback; curl: "localhost" covers
	 * "a.localhost"), so then there is none (docs/proxy.md, "The agent's
	 * environment"). */
	NO_PROXY_LOOPBACK,
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
    {"NO_PROXY=localhost,127.0.0.1", NO_PROXY_LOOPBACK, true},
    {"http_proxy=" PROXY_URL, EGRESS, true},
    {"https_proxy=" PROXY_URL, EGRESS, true},
    {"all_proxy=" PROXY_URL, EGRESS, true},
    {"no_proxy=localhost,127.0.0.1", NO_PROXY_LOOPBACK, true},
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

/* The loopback ranges: 127.0.0.0/8, ::1 and 127.0.0.0/8 mapped into IPv6. */
static const struct loopback_net {
	int family;
	uint8_t addr[16];
	unsigned prefix;
} loopback_nets[] = {
    {AF_INET, {127}, 8},
    {AF_INET6, {[15] = 1}, 128},
    {AF_INET6, {[10] = 0xff, [11] = 0xff, [12] = 127}, 104},
};

/* Do a and b agree on their first bits bits? */
static bool prefix_agrees(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, whole) != 0)
		return false;
	return rest == 0 || ((a[whole] ^ b[whole]) >> (8 - rest)) == 0;
}

/* Does the rule's host, an address or "ADDR/PREFIX" as the parser stores
 * it, meet a loopback range? */
static bool host_meets_loopback(const char *h)
{
	const char *slash = strchr(h, '/');
	char a[INET6_ADDRSTRLEN];
	uint8_t bin[16];
	size_t n = slash ? (size_t)(slash - h) : strlen(h);
	unsigned long prefix;
	int family;

	if (n >= sizeof(a))
		return false;
	memcpy(a, h, n);
	a[n] = '\0';
	if (inet_pton(AF_INET, a, bin) == 1)
		family = AF_INET;
	else if (inet_pton(AF_INET6, a, bin) == 1)
		family = AF_INET6;
	else
		return false;
	prefix = slash ? strtoul(slash + 1, NULL, 10) : family == AF_INET ? 32 : 128;
	for (size_t i = 0; i < ELEMENTSOF(loopback_nets); i++) {
		const struct loopback_net *l = &loopback_nets[i];

		if (l->family == family &&
		    prefix_agrees(bin, l->addr, prefix < l->prefix ? (unsigned)prefix : l->prefix))
			return true;
	}
	return false;
}

/* Does an egress rule name a loopback destination: localhost or a name
 * under it (RFC 6761), or an address range meeting loopback? */
static bool rule_names_loopback(const sc_plan *p)
{
	for (size_t i = 0; i < p->n_egress; i++) {
		const char *h = p->egress[i].host;
		size_t n = strlen(h), sfx = strlen(".localhost");

		if (strcmp(h, "localhost") == 0 || host_meets_loopback(h) ||
		    (n > sfx && strcmp(h + n - sfx, ".localhost") == 0))
			return true;
	}
	return false;
}

static bool var_applies(const sc_plan *p, var_when when)
{
	switch (when) {
	case NO_PROXY_LOOPBACK:
		return p->n_egress > 0 && !rule_names_loopback(p);
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

/* SPDX-License-Identifier: MIT */
#include "policy/agent-env.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "proxy/proxy.h"

#define STR_(x)	  #x
#define STR(x)	  STR_(x)
#define PROXY_URL "http://127.0.0.1:" STR(PX_LISTEN_PORT)
/* the same listener speaks SOCKS5; socks5h: names are resolved by the proxy */
#define SOCKS_URL "socks5h://127.0.0.1:" STR(PX_LISTEN_PORT)
#define NO_PROXY  "localhost,127.0.0.1"
/* The JVM reads no proxy variable; these are its own properties. */
#define JAVA_PX(scheme)                                                                            \
	"-D" scheme ".proxyHost=127.0.0.1 -D" scheme ".proxyPort=" STR(PX_LISTEN_PORT)
#define JAVA_PROXY                                                                                 \
	JAVA_PX("http") " " JAVA_PX("https") " -Dhttp.nonProxyHosts=localhost|127.*|[::1]"

#define CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

typedef enum var_when {
	ALWAYS,
	EGRESS,	 /* the plan lets the agent out, through the proxy */
	INSPECT, /* the proxy decrypts some host: the bundle holds the sandbox CA */
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
} agent_vars[] = {
    {"HOME=/tmp", ALWAYS},
    {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", ALWAYS},
    {"USER=agent", ALWAYS},
    {"TMPDIR=/tmp", ALWAYS},
    {"HTTP_PROXY=" PROXY_URL, EGRESS},
    {"HTTPS_PROXY=" PROXY_URL, EGRESS},
    {"ALL_PROXY=" SOCKS_URL, EGRESS},
    {"NO_PROXY=" NO_PROXY, EGRESS},
    {"http_proxy=" PROXY_URL, EGRESS},
    {"https_proxy=" PROXY_URL, EGRESS},
    {"all_proxy=" SOCKS_URL, EGRESS},
    {"no_proxy=" NO_PROXY, EGRESS},
    /* Node >= 24 reads the variables above only with this (fetch, http) */
    {"NODE_USE_ENV_PROXY=1", EGRESS},
    {"JAVA_TOOL_OPTIONS=" JAVA_PROXY, EGRESS},
    {"SSL_CERT_FILE=" CA_BUNDLE, INSPECT},
    {"REQUESTS_CA_BUNDLE=" CA_BUNDLE, INSPECT},
    {"CURL_CA_BUNDLE=" CA_BUNDLE, INSPECT},
    {"NODE_EXTRA_CA_CERTS=" CA_BUNDLE, INSPECT},
    {"GIT_SSL_CAINFO=" CA_BUNDLE, INSPECT},
    {"PIP_CERT=" CA_BUNDLE, INSPECT},
    {"AWS_CA_BUNDLE=" CA_BUNDLE, INSPECT},
};

static bool var_applies(const sc_plan *p, var_when when)
{
	switch (when) {
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

bool agent_env_name(const sc_plan *p, size_t n, const char **ret_name, size_t *ret_len)
{
	for (size_t i = 0; i < ELEMENTSOF(agent_vars); i++) {
		if (!var_applies(p, agent_vars[i].when))
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
		if (var_applies(p, agent_vars[i].when))
			env[n++] = (char *)agent_vars[i].def;
	for (size_t i = 0; i < p->n_env; i++)
		env[n++] = p->env[i];
	env[n] = NULL;
	return 0;
}
